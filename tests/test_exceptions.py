"""Exceptions where CPython and NumPy raise them (issue 12, item 3): every test runs the same function under
CPython + NumPy and compiled, and compares the result, the exception's class and the state of the arguments."""
import inspect
import os

import numpy as np
import pytest

import lorikeet as lk

HERE = os.path.basename(__file__)


def assert_compile_error(f, snippet, *args):
    """lk.jit(f)(*args) raises lk.CompileError naming this file and the number and text of the line holding
    snippet; returns the message."""
    lines, first = inspect.getsourcelines(f)
    hits = [i for i, line in enumerate(lines) if snippet in line]
    assert hits, f"test bug: {snippet!r} not in the source of {f.__name__}"
    with pytest.raises(lk.CompileError) as e:
        lk.jit(f)(*args)
    msg = str(e.value)
    assert HERE in msg and f"line {first + hits[0]}" in msg and lines[hits[0]].strip() in msg, msg
    return msg


# ---------------------------------------------------------------- returning a function value (r06)


def square(y):
    return y * y


def returns_lambda(x):
    return lambda y: y + x


def returns_global_function(x):
    return square


def returns_nested_def(x):
    def inner(y):
        return y * x
    return inner


def returns_function_in_tuple(x):
    return (x, (square, 1))


def calls_a_returned_function(x):
    f = picks_square(x)
    return f(x)


def picks_square(x):
    return square


@pytest.mark.parametrize("f, line", [(returns_lambda, "return lambda y: y + x"),
                                     (returns_global_function, "return square"),
                                     (returns_nested_def, "return inner"),
                                     (returns_function_in_tuple, "return (x, (square, 1))")])
def test_returning_a_function_is_a_compile_error_naming_the_line(f, line):
    assert callable(f(3)) or callable(f(3)[1][0])  # CPython returns a function, which lorikeet cannot box
    msg = assert_compile_error(f, line, 3)
    assert "returns a function" in msg


def test_a_callee_may_return_a_function_to_its_caller():
    assert lk.jit(calls_a_returned_function)(3) == calls_a_returned_function(3) == 9
