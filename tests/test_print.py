"""print() in compiled code: the text CPython prints for the same function, to sys.stdout (so capsys, Jupyter and
redirections see it), in program order (parallel loops included), and before an exception the call raises.
What compiled code cannot print is a CompileError naming the line."""
import inspect

import numpy as np
import pytest

import lorikeet as lk
from helpers import skip_on_gpu


def printed(capsys, f, *args):
    """(what f(*args) printed, its result or the class of what it raised)"""
    capsys.readouterr()
    try:
        r = f(*args)
        r = r.tolist() if isinstance(r, np.ndarray) else r
    except Exception as e:  # noqa: BLE001 - compared with CPython's
        r = type(e)
    return capsys.readouterr().out, r


def same_as_python(capsys, f, *args):
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    want = printed(capsys, f, *copies)
    got = printed(capsys, lk.jit(f), *args)
    assert got == want
    return got[0]


def scalars(i, x, b, big):
    print(i, x, b, None, -7, 2.5, True, 1e300, -0.0, 3 + 4j)
    print(np.int8(i), np.uint8(200), np.int16(-3), np.uint16(7), np.int32(i), np.uint32(4000000000))
    print(np.int64(-2**63), big[0], big[1], np.float16(0.1), np.float32(0.1), np.float64(0.1))
    print(np.complex64(1 - 2j), np.complex128(0.5j), np.bool_(b), np.inf if x > 1e9 else -np.inf, np.nan)
    return i


def texts(n, x):
    print("n =", n, "and x =", x)
    print("a", "b", "c", sep="")
    print("no newline", end="")
    print(" then one", end="!\n")
    print(n, x, sep=", ", end=" <-\n")
    print()
    print("", "")
    return n


def fstrings(n, x):
    print(f"n={n} x={x}")
    print(f"{x:.3f}|{n:5d}|{n:<4}|{x:e}|{n:x}|{x!r}|{n!s}|{x:>10.2f}")
    print(f"{np.float32(x)} {np.float32(x)!s} {np.float32(x):.2f} {np.int16(n)!r}")
    print(f"{{braces}} {n}%")
    return n


def containers(a, b):
    print(a)
    print(b, b[::2], b.T)
    print((1, a[0], (True, None)), (a[1],))
    print(a.astype(np.float16), a > 1, a.astype(np.int32), (a * 1j)[:2])
    print(np.empty((0, 3)), np.zeros(3, dtype=np.uint64))
    return a.sum()


@pytest.mark.parametrize("f, args", [
    (scalars, (3, 1.5, True, np.array([2**64 - 1, 7], dtype=np.uint64))),
    (scalars, (-1, 2e10, False, np.array([0, 2**63], dtype=np.uint64))),
    (texts, (4, -0.5)),
    (fstrings, (42, 3.14159)), (fstrings, (-7, 1e-7)),
    (containers, (np.arange(4.0), np.arange(6).reshape(2, 3))),
])
def test_print_shows_what_cpython_shows(capsys, f, args):
    if f is containers:
        skip_on_gpu("an array's data is on the device, and print() of an array is a CompileError there")
    same_as_python(capsys, f, *args)


def steps(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
        if s > 3:
            print("passed 3 at", i, "with", s)
            break
        print("step", i, s)
    return s


def helper(v):
    print("helper got", v)
    return v + 1


def calls_helper(x):
    t = 0.0
    for v in x:
        t += helper(v)
    return t


def prints_then_raises(x):
    print("start")
    for i in range(x.shape[0]):
        print("check", i)
        if x[i] < 0:
            raise ValueError("negative")
    print("unreached")
    return x


def value_raises(n, m):
    print("first", n)
    print("second", n // m)  # a value that raises: nothing of this print is written
    return n


def test_a_print_whose_value_raises_prints_nothing_of_itself(capsys):
    same_as_python(capsys, value_raises, 7, 0)
    same_as_python(capsys, value_raises, 7, 2)


@pytest.mark.parametrize("f, x", [(steps, [1.0, 1.5, 0.25, 2.0, 5.0]), (calls_helper, [1.0, 2.0]),
                                  (prints_then_raises, [1.0, 2.0, -1.0, 3.0]), (prints_then_raises, [1.0])])
def test_prints_in_loops_and_callees_and_before_an_error(capsys, f, x):
    same_as_python(capsys, f, np.array(x))


def prange_prints(x):
    for i in lk.prange(x.shape[0]):
        if i % 1000 == 0:
            print("row", i, x[i])
        x[i] = x[i] * 2
    return x


def test_a_prange_loop_prints_in_iteration_order_on_every_thread_count(capsys):
    skip_on_gpu("a prange loop is a kernel, where print() is a CompileError (test_a_gpu_kernel_refuses_print...)")
    # the chunks' output is joined in chunk order: the sequential loop's text, whichever thread ran what
    x = np.arange(20_000.0)
    out = printed(capsys, lk.jit(prange_prints), x)[0]
    assert out == "".join(f"row {i} {float(i)}\n" for i in range(0, 20_000, 1000))


def prange_prints_then_raises(x):
    for i in lk.prange(x.shape[0]):
        if i % 1000 == 0:
            print("row", i)
        if x[i] < 0:
            raise ValueError("negative")
    return x


def test_a_raising_prange_loop_prints_what_the_sequential_loop_printed_before_the_error(capsys):
    skip_on_gpu("a prange loop is a kernel, where print() is a CompileError (test_a_gpu_kernel_refuses_print...)")
    x = np.ones(20_000)
    x[4500] = -1.0
    out, r = printed(capsys, lk.jit(prange_prints_then_raises), x)
    assert r is ValueError
    assert out == "".join(f"row {i}\n" for i in range(0, 5000, 1000))


def test_print_goes_through_sys_stdout(monkeypatch):
    import io
    buf = io.StringIO()
    monkeypatch.setattr("sys.stdout", buf)
    lk.jit(texts)(1, 2.0)
    assert buf.getvalue().startswith("n = 1 and x = 2.0\n")


# ---------------------------------------------------------------- what compiled code cannot print


def in_a_comprehension(x):
    return np.array([helper(v) for v in x])


def to_a_file(x):
    print(x, file=None)
    return x


def computed_sep(x):
    print(x, x, sep=x[0])
    return x


def starred(x):
    t = (1, 2)
    print(*t)
    return x


def computed_spec(x):
    w = 5
    print(f"{x[0]:{w}}")
    return x


def a_dtype(x):
    print(x.dtype)
    return x


@pytest.mark.parametrize("f, snippet, words", [
    (in_a_comprehension, "np.array([helper(v)", "print() in element code"),
    (to_a_file, "print(x, file", "print(file=...) is not supported"),
    (computed_sep, "print(x, x, sep", "must be a string literal"),
    (starred, "print(*t)", "print(*args) is not supported"),
    (computed_spec, "print(f", "a format spec that is computed at run time"),
    (a_dtype, "print(x.dtype)", "print() of dtype"),
])
def test_what_compiled_code_cannot_print_is_a_compile_error_naming_the_line(f, snippet, words):
    with pytest.raises(lk.CompileError) as e:
        lk.jit(f)(np.arange(3.0))
    msg = str(e.value)
    assert words in msg and snippet in msg, msg


def kernel_prints(x):
    for i in lk.prange(x.shape[0]):
        print(i)
        x[i] = 0.0
    return x


def test_a_gpu_kernel_refuses_print_naming_the_line():
    with pytest.raises(lk.CompileError, match=r"print\(\)") as e:
        lk.jit(kernel_prints, backend="gpu").inspect_cuda(np.ones(4))
    assert f"line {inspect.getsourcelines(kernel_prints)[1] + 2}" in str(e.value)
