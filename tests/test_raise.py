"""raise and assert statements in compiled code (issue 14): the program's own exceptions, as CPython raises them.

Every function runs under CPython and compiled, and the two must raise the same class with the same args (or
return the same value), leaving the arguments in the same state. Arguments made at run time (an f-string, a
computed number) are CPython's too. What compiled code cannot do (a bare raise, keyword arguments, a class made
inside a function) is a CompileError naming the line.

PYTEST_DONT_REWRITE: the assert statements of the functions below are the program's, whose AssertionError CPython
must raise as written (pytest would rewrite their messages in the reference run)."""
import linecache
import inspect
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import lorikeet as lk
from helpers import assert_compile_error, skip_on_gpu

HERE = os.path.basename(__file__)
PYSHIM = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "pyshim")


class ShapeError(ValueError):
    """A module-level exception class of the program's own, subclassing a builtin one."""


class Outer:
    class Nested(RuntimeError):
        pass


NestedError = Outer.Nested  # raised by this name; found again by its qualified name, Outer.Nested


def outcome(f, *args):
    """('ok', value) or ('raised', class, args) of f(*args), with the arguments' state after it."""
    try:
        r = f(*args)
        return ("ok", r.tolist() if isinstance(r, np.ndarray) else r), [a.tolist() for a in args if isinstance(a, np.ndarray)]
    except Exception as e:  # noqa: BLE001 - comparing what was raised
        return ("raised", type(e), e.args), [a.tolist() for a in args if isinstance(a, np.ndarray)]


def same_as_python(f, *args):
    """f compiled and f under CPython give the same outcome on copies of args; returns the compiled outcome."""
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    want = outcome(f, *copies)
    got = outcome(lk.jit(f), *args)
    assert got == want
    return got[0]


# ---------------------------------------------------------------- raising


def check_positive(x):
    if x[0] < 0:
        raise ValueError("x must be positive")
    return x[0] * 2


def bare_class(x):
    if x[0] < 0:
        raise IndexError
    return x[0]


def empty_call(x):
    if x[0] < 0:
        raise KeyError()
    return x[0]


def several_constants(x):
    if x[0] < 0:
        raise ValueError("bad value", -3, 2.5, None, True, ("nested", 1))
    return x[0]


def own_class(x):
    if x.shape[0] != 3:
        raise ShapeError("need three elements")
    return x.sum()


def nested_class(x):
    if x[0] == 0:
        raise NestedError("nested")
    return x[0]


def numpy_class(x):
    if x[0] == 0:
        raise np.linalg.LinAlgError("Singular matrix")
    return 1.0 / x[0]


def from_none(x):
    if x[0] < 0:
        raise ValueError("hidden context") from None
    return x[0]


@pytest.mark.parametrize("f", [check_positive, bare_class, empty_call, several_constants, nested_class, numpy_class,
                               from_none])
@pytest.mark.parametrize("x", [[1.5], [-1.0], [0.0]])
def test_a_raise_gives_the_class_and_args_cpython_gives(f, x):
    same_as_python(f, np.array(x))


def test_a_raised_exception_is_exactly_the_programs():
    with pytest.raises(ValueError) as e:
        lk.jit(check_positive)(np.array([-1.0]))
    assert type(e.value) is ValueError and e.value.args == ("x must be positive",)
    assert str(e.value) == "x must be positive"
    # where it was raised: a note that tracebacks show, and lk_file/lk_line as for lorikeet's own run-time errors
    line = inspect.getsourcelines(check_positive)[1] + 2
    assert e.value.lk_file.endswith(HERE) and e.value.lk_line == line
    assert any(f"line {line}" in n and 'raise ValueError("x must be positive")' in n for n in e.value.__notes__)


def test_a_class_of_the_programs_own_is_caught_by_its_base():
    with pytest.raises(ValueError) as e:
        lk.jit(own_class)(np.ones(4))
    assert type(e.value) is ShapeError and e.value.args == ("need three elements",)
    assert lk.jit(own_class)(np.ones(3)) == 3.0


# ---------------------------------------------------------------- raise as control flow


def raise_or_return(x):
    if x[0] > 0:
        return 1.0
    raise ValueError("not positive")


def assigned_in_the_other_arm(x):
    if x[0] < 0:
        raise IndexError("negative")
    else:
        y = x[0] + 1
    return y


def first_bad_element(x):
    total = 0.0
    for i in range(x.shape[0]):
        if x[i] < 0:
            raise ValueError("negative element")
        if x[i] > 100:
            raise OverflowError("too large")
        total += x[i]
    return total


def writes_then_raises(x):
    x[0] = 5.0
    if x[1] < 0:
        raise ValueError("after the write")
    x[1] = 7.0
    return x


def callee_raises(v):
    if v < 0:
        raise ArithmeticError("negative in the callee")
    return v * 2


def caller(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += callee_raises(x[i])
    return s


@pytest.mark.parametrize("f, x", [
    (raise_or_return, [1.0]), (raise_or_return, [-1.0]),
    (assigned_in_the_other_arm, [1.0]), (assigned_in_the_other_arm, [-1.0]),
    (first_bad_element, [1.0, 2.0, 3.0]), (first_bad_element, [1.0, 200.0, -1.0]), (first_bad_element, [1.0, -2.0, 300.0]),
    (writes_then_raises, [1.0, 2.0]), (writes_then_raises, [1.0, -2.0]),
    (caller, [1.0, 2.0]), (caller, [1.0, -2.0]),
])
def test_raise_ends_the_path_it_is_on(f, x):
    same_as_python(f, np.array(x))


def test_a_function_that_returns_or_raises_returns_its_values_type():
    r = lk.jit(raise_or_return)(np.array([2.0]))
    assert type(r) is float and r == 1.0


def test_a_variable_assigned_on_every_path_that_does_not_raise_needs_no_unbound_check():
    text = lk.jit(assigned_in_the_other_arm).inspect_types(np.array([1.0]))
    assert "raise(" in text and "builtins:IndexError('negative',)" in text
    with pytest.raises(IndexError, match="negative"):
        lk.jit(assigned_in_the_other_arm)(np.array([-1.0]))


def prange_raises(x):
    for i in lk.prange(x.shape[0]):
        if x[i] < 0:
            raise ValueError("negative element")
        if x[i] > 100:
            raise KeyError("large element")
        x[i] = x[i] * 2
    return x


def test_a_prange_loop_raises_the_first_failing_iterations_exception():
    # whichever thread runs it, the exception is the first failing iteration's, as in the sequential loop
    f = lk.jit(prange_raises)
    for bad, late, want in ((7, 90_000, ValueError), (7, 90_000, KeyError)):
        x = np.ones(100_000)
        if want is ValueError:
            x[bad], x[late] = -1.0, 1000.0
        else:
            x[bad], x[late] = 1000.0, -1.0
        with pytest.raises(want):
            f(x)
    assert f(np.ones(5)).tolist() == [2.0] * 5


def with_message(msg):
    """f raising msg, compiled from a source at one made-up file name whatever msg is (its lines served by
    linecache, as for code typed into a notebook)."""
    src = textwrap.dedent(f"""\
        def f(x):
            if x[0] < 0:
                raise ValueError({msg!r})
            return x[0]
        """)
    name = "<raise-messages>"
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)
    ns = {}
    exec(compile(src, name, "exec"), ns)
    f = lk.jit(ns["f"])
    f.warmup(np.array([1.0]))  # compiled now, while linecache holds this source
    return f


def test_functions_that_differ_only_in_their_message_raise_their_own():
    # the message is part of the code's content address, so the second does not reuse the first's code
    f1 = with_message("first")
    f2 = with_message("second")
    for f, msg in ((f1, "first"), (f2, "second"), (f1, "first")):
        with pytest.raises(ValueError) as e:
            f(np.array([-1.0]))
        assert e.value.args == (msg,)


# ---------------------------------------------------------------- arguments made at run time


def fstring_message(x, n):
    for i in range(x.shape[0]):
        if x[i] < 0:
            raise ValueError(f"element {i} of {x.shape[0]} is negative: {x[i]:.3f} ({x[i]!r})")
    if n > 2:
        raise IndexError(f"n={n:04d} too large", n, x[0] * 2, "constant", (n, -1.5))
    return x.sum()


def numpy_scalars(x, k):
    if k < 0:
        raise RuntimeError(np.float32(x[0]), np.int16(k), x[0] > 0, 1 + 2j, None)
    return k


def assert_formatted(x, n):
    assert n < x.shape[0], f"index {n} out of range for {x.shape[0]} elements"
    return x[n]


def raise_value(x, v):
    if x[0] < 0:
        raise ValueError(v)
    return x[0]


def fstring_of_none(x, v):
    if x[0] < 0:
        raise ValueError(f"got {v!r}")
    return x[0]


def assert_message_none(x, v):
    assert x[0] > 0, v
    return x[0]


@pytest.mark.parametrize("f", [raise_value, fstring_of_none, assert_message_none])
@pytest.mark.parametrize("v", [None, (), (None, None), (None, 2.5)])
def test_run_time_arguments_that_hold_no_number_are_cpythons(f, v):
    # None and empty tuples take no slot in the record: the record is still written (review finding)
    same_as_python(f, np.array([-1.0]), v)


@pytest.mark.parametrize("f, args", [
    (fstring_message, ([1.0, -2.25, 3.0], 1)), (fstring_message, ([1.0, 2.0], 7)), (fstring_message, ([1.0], 0)),
    (numpy_scalars, ([1.5], -3)), (numpy_scalars, ([1.5], 3)),
    (assert_formatted, ([1.0, 2.0], 5)), (assert_formatted, ([1.0, 2.0], 1)),
])
def test_arguments_made_at_run_time_are_cpythons(f, args):
    same_as_python(f, np.array(args[0]), args[1])


def prange_fstring(x):
    for i in lk.prange(x.shape[0]):
        if x[i] < 0:
            raise ValueError(f"negative at {i}")
        x[i] = x[i] + 1
    return x


def test_a_prange_loop_raises_the_first_failing_iterations_formatted_message():
    skip_on_gpu("a kernel cannot write a formatted message (test_gpu_codegen checks the refusal)")
    x = np.ones(100_000)
    x[[777, 50_000, 99_999]] = -1.0
    with pytest.raises(ValueError) as e:
        lk.jit(prange_fstring)(x)
    assert e.value.args == ("negative at 777",)


# ---------------------------------------------------------------- assert


def assert_with_message(x):
    assert x[0] > 0, "x[0] must be positive"
    return x[0]


def assert_plain(x):
    assert x.shape[0] == 2
    return x[1]


def assert_tuple_message(x):
    assert x[0] != 0, ("zero", 0)
    return 1.0 / x[0]


@pytest.mark.parametrize("f", [assert_with_message, assert_plain, assert_tuple_message])
@pytest.mark.parametrize("x", [[1.0, 2.0], [-1.0, 2.0], [0.0], [3.0]])
def test_assert_raises_assertion_error_as_cpython(f, x):
    same_as_python(f, np.array(x))


# ---------------------------------------------------------------- what compiled code cannot raise


def reraise(x):
    if x[0] < 0:
        raise
    return x[0]


def keyword_argument(x):
    if x[0] < 0:
        raise ValueError(message="no")
    return x[0]


def raise_a_number(x):
    if x[0] < 0:
        raise 5
    return x[0]


def raise_a_function(x):
    if x[0] < 0:
        raise len
    return x[0]


def from_a_cause(x):
    if x[0] < 0:
        raise ValueError("x") from KeyError("y")
    return x[0]


def infinite_constant(x):
    if x[0] < 0:
        raise ValueError(1e999)
    return x[0]


def attribute_of_a_class(x):
    if x[0] < 0:
        raise Outer.Nested("nested")
    return x[0]


def class_as_value(x):
    e = ValueError
    return x[0]


def constructed_not_raised(x):
    ValueError("never raised")
    return x[0]


def made_inside():
    class Local(Exception):
        pass

    def f(x):
        if x[0] < 0:
            raise Local("local")
        return x[0]
    return f


@pytest.mark.parametrize("f, snippet, words", [
    (reraise, "    raise\n", "a bare raise re-raises the exception being handled"),
    (keyword_argument, "raise ValueError(message", "positional arguments only"),
    (raise_a_number, "raise 5", "raise takes an exception class"),
    (raise_a_function, "raise len", "'len' is not an exception class"),
    (from_a_cause, "raise ValueError", "only 'from None'"),
    (infinite_constant, "raise ValueError(1e999)", "read back from their repr"),
    (attribute_of_a_class, "raise Outer.Nested", "raise takes an exception class by name"),
    (class_as_value, "e = ValueError", "'ValueError' is an exception class"),
    (constructed_not_raised, "ValueError(\"never", "'ValueError' is an exception class"),
    (made_inside(), "raise Local", "defined inside a function"),
])
def test_what_compiled_code_cannot_raise_is_a_compile_error_naming_the_line(f, snippet, words):
    assert words in assert_compile_error(f, snippet, np.array([1.0]))


# ---------------------------------------------------------------- the on-disk cache


PROGRAM = """\
import sys
import numpy as np
import lorikeet as lk

class BadInput(Exception):
    pass

@lk.jit
def f(x):
    if x[0] < 0:
        raise BadInput("bad input", 7)
    return x[0]

try:
    f(np.array([-1.0]))
except BadInput as e:
    print(type(e).__module__, e.args, e.lk_line, f.cache_info()["hits"])
"""


def test_code_loaded_from_the_disk_cache_raises_the_same_exception(tmp_path):
    script = tmp_path / "raiser.py"
    script.write_text(PROGRAM)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LORIKEET_")}
    env.update(PYTHONPATH=PYSHIM, LORIKEET_CACHE_DIR=str(tmp_path / "cache"), PYTHONDONTWRITEBYTECODE="1")
    outs = []
    for _ in range(2):
        p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        outs.append(p.stdout.split())
    assert outs[0][:-1] == outs[1][:-1] == ["__main__", "('bad", "input',", "7)", "11"]
    assert (outs[0][-1], outs[1][-1]) == ("0", "1")  # the second process loaded the first's code
