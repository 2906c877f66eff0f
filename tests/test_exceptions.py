"""Exceptions where CPython and NumPy raise them (issue 12, item 3): every test runs the same function under
CPython + NumPy and compiled, and compares the result, the exception's class and the state of the arguments."""
import inspect
import math
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


# ---------------------------------------------------------------- folded results keep what may raise (r05)


def isnan_of_floordiv(a, b):
    return np.isnan(a // b)


def isfinite_of_mod(a, b):
    return np.isfinite(a % b)


def isinf_of_floordiv(a, b):
    return np.isinf(a // b)


def math_isnan_of_mod(a, b):
    return math.isnan(a % b)


def len_of_tuple_with_division(a, b):
    return len((a // b, a))


def outcome(f, *args):
    """What f(*args) gives: ('value', v) or ('raises', the exception's class)."""
    try:
        return "value", f(*args)
    except Exception as e:  # noqa: BLE001 - the class is what is compared
        return "raises", type(e)


@pytest.mark.parametrize("f", [isnan_of_floordiv, isfinite_of_mod, isinf_of_floordiv, math_isnan_of_mod,
                               len_of_tuple_with_division])
@pytest.mark.parametrize("b", [0, 3, -2])
def test_a_folded_result_still_raises_as_cpython_does(f, b):
    want = outcome(f, 7, b)
    assert outcome(lk.jit(f), 7, b) == want
    assert (want[0] == "raises") == (b == 0)


def test_an_array_division_feeding_isnan_raises_as_the_division_alone_does():
    # integer // by zero raises on arrays too (a documented difference from NumPy, docs/USERGUIDE.md): fusing
    # np.isnan's constant result must not drop the division
    a, b = np.array([5, 6]), np.array([1, 0])
    with pytest.raises(ZeroDivisionError):
        lk.jit(lambda_free_floordiv)(a, b)
    with pytest.raises(ZeroDivisionError):
        lk.jit(isnan_of_floordiv)(a, b)
    b[1] = 2
    np.testing.assert_array_equal(lk.jit(isnan_of_floordiv)(a, b), isnan_of_floordiv(a, b))


def lambda_free_floordiv(a, b):
    return a // b
