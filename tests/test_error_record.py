"""Errors raised by compiled code travel as a record (runtime.h's RtError: status, code, line, file, a few
integers) that the code fills in with plain stores and the host turns into the exception. So the code calls
nothing to raise (a gpu kernel or an openmp chunk can raise the same way), and the exception is the one CPython
raises, at the file and line CPython names."""
import inspect
import re
import traceback

import numpy as np
import pytest

import lorikeet as lk

HERE = __file__


def python_error(f, *args):
    """The exception CPython raises for f(*args), and the file and line of the frame that raised it."""
    with pytest.raises(Exception) as e:
        f(*args)
    frame = traceback.extract_tb(e.value.__traceback__)[-1]
    return e.value, frame.filename, frame.lineno


def assert_raises_as_python(g, f, *args, message=None):
    """lk's g(*args) raises what CPython's f(*args) raises: same type, NumPy's or CPython's message as the first
    line (or the message given), and the file and line CPython raised at."""
    exp, file, line = python_error(f, *args)
    with pytest.raises(type(exp)) as got:
        g(*args)
    assert str(got.value).splitlines()[0] == (message or str(exp))
    assert (got.value.lk_file, got.value.lk_line) == (file, line)
    return got.value


# ---------------------------------------------------------------- raising calls nothing


def read_past_the_end(a, i):
    return a[i] + 1.0


def floor_divide(n, k):
    return n // k + 1


def modulo(n, k):
    return n % k


def range_step(n, step):
    s = 0
    for i in range(0, n, step):
        s += i
    return s


def maybe_unbound(n):
    if n > 0:
        y = n
    return y


@pytest.mark.parametrize("f,args,message", [
    (read_past_the_end, (np.arange(4.0), 4), None),
    (read_past_the_end, (np.arange(4.0), -5), None),
    (floor_divide, (7, 0), "integer division by zero"),  # NumPy's words (CPython's vary by version)
    (modulo, (7, 0), "integer modulo by zero"),
    (range_step, (5, 0), None),
    (maybe_unbound, (0,), None),
], ids=["index", "negative-index", "floordiv", "mod", "range-step", "unbound"])
def test_raising_code_calls_nothing(f, args, message):
    g = lk.jit(f)
    assert_raises_as_python(g, f, *args, message=message)
    # the error is stores into the record and a return: no function is called or declared (LLVM's own
    # intrinsics, which are instructions, aside)
    llvm = g.inspect_llvm(*args)
    assert not re.search(r"\b(call|declare)\b[^@\n]*@(?!llvm\.)", llvm), llvm


def test_the_record_of_one_call_does_not_leak_into_the_next():
    g = lk.jit(floor_divide)
    for _ in range(3):
        assert_raises_as_python(g, floor_divide, 7, 0, message="integer division by zero")
        assert g(7, 2) == floor_divide(7, 2)
    h = lk.jit(maybe_unbound)
    e = assert_raises_as_python(h, maybe_unbound, -1)
    assert isinstance(e, UnboundLocalError) and "'y'" in str(e)
    assert h(3) == 3


def zeros(n):
    return np.zeros(n)


def test_an_allocation_too_big_raises_memory_error_with_its_size():
    # written by the runtime's allocator into the same record; NumPy raises MemoryError too, in other words (not
    # asked here: its attempt to allocate 8 PB would abort a sanitised run)
    with pytest.raises(MemoryError, match=r"^cannot allocate an array of 8000000000000000 bytes$"):
        lk.jit(zeros)(10 ** 15)
    assert lk.jit(zeros)(3).tolist() == [0.0, 0.0, 0.0]
