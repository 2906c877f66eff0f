"""The sizes lorikeet holds (ir.h's IR_MAX_DIMS, IR_MAX_TUPLE, IR_MAX_MAP_INPUTS) and what happens past them:
a CompileError naming the file and the line, never a crash or a wrong answer. Where lorikeet has no reason for a
limit (the operands of and/or, the values a parallel loop reads), any number works, as in CPython. And a
matrix product written as an lk.imap keeps the shape the imap asked for.

Programs of a size no one writes by hand are generated into a module in tmp_path (lorikeet reads the source).
Those that crashed the interpreter before the limits were enforced run in a child interpreter, so that a crash
is a failure of the test, not of the test run."""
import importlib.util
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import lorikeet as lk

IR_MAX_DIMS, IR_MAX_TUPLE, IR_MAX_MAP_INPUTS = 32, 64, 16
PYSHIM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pyshim")


def load(tmp_path, src, name="generated"):
    """The module of source src, written to tmp_path/name.py (so that lorikeet can read the source)."""
    path = tmp_path / f"{name}.py"
    path.write_text("import numpy as np\nimport lorikeet as lk\n\n" + src)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


CHILD = """
import sys
sys.path.insert(0, {pyshim!r})
sys.path.insert(0, {here!r})
import numpy as np
import lorikeet as lk
import generated
try:
    r = lk.jit(generated.f{backend})({args})
    print("RESULT", repr(r))
except Exception as e:
    print("RAISED", type(e).__name__)
    print(str(e))
"""


def run_child(tmp_path, src, args, backend=""):
    """Compiles and calls generated.f(args) in a fresh interpreter: (return code, stdout)."""
    (tmp_path / "generated.py").write_text("import numpy as np\nimport lorikeet as lk\n\n" + src)
    code = CHILD.format(pyshim=PYSHIM, here=str(tmp_path), args=args,
                        backend=f", backend={backend!r}" if backend else "")
    env = dict(os.environ, LORIKEET_PARALLEL_THRESHOLD="0")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    return p.returncode, p.stdout


def line_of(src, snippet):
    """The line number of snippet in the generated module (3 lines of imports come first)."""
    lines = ("import numpy as np\nimport lorikeet as lk\n\n" + src).splitlines()
    return next(i + 1 for i, line in enumerate(lines) if snippet in line)


def assert_compile_error_in_child(tmp_path, src, args, message, snippet):
    rc, out = run_child(tmp_path, src, args)
    assert rc == 0, f"the interpreter died (return code {rc}):\n{out}"
    assert out.startswith("RAISED CompileError"), out
    assert re.search(message, out), out
    assert f'generated.py", line {line_of(src, snippet)}' in out, out


# ---------------------------------------------------------------- tuples: IR_MAX_TUPLE items


def returns_tuple(n):
    return "def f(x):\n    return (" + ", ".join(f"x + {i}" for i in range(n)) + ")\n"


def test_a_tuple_of_the_largest_size_is_returned(tmp_path):
    mod = load(tmp_path, returns_tuple(IR_MAX_TUPLE))
    assert lk.jit(mod.f)(1.5) == mod.f(1.5)


def test_a_longer_tuple_is_a_compile_error_not_a_crash(tmp_path):
    n = IR_MAX_TUPLE + 1
    assert_compile_error_in_child(tmp_path, returns_tuple(n), "1.5",
                                  rf"tuples of more than {IR_MAX_TUPLE} items are not supported \(this one has {n}\)",
                                  "return (")


def test_a_longer_tuple_argument_is_a_type_error():
    f = lk.jit(lambda t: t[0])
    assert f(tuple(range(IR_MAX_TUPLE))) == 0
    with pytest.raises(TypeError, match=rf"argument 't': tuples of more than {IR_MAX_TUPLE} items"):
        f(tuple(range(IR_MAX_TUPLE + 1)))


# ---------------------------------------------------------------- arrays: IR_MAX_DIMS dimensions


def reshapes_to(nd):
    return "def f(a):\n    b = a * 2.0\n    return b.reshape((" + "1, " * nd + "))\n"


def test_a_reshape_to_the_most_dimensions_works(tmp_path):
    mod = load(tmp_path, reshapes_to(IR_MAX_DIMS))
    a = np.arange(1.0, 2.0)
    np.testing.assert_array_equal(lk.jit(mod.f)(a), mod.f(a))


@pytest.mark.parametrize("nd", [IR_MAX_DIMS + 1, 40])
def test_a_reshape_to_more_dimensions_is_a_compile_error_not_a_crash(tmp_path, nd):
    assert_compile_error_in_child(tmp_path, reshapes_to(nd), "np.ones(1)",
                                  rf"arrays of more than {IR_MAX_DIMS} dimensions are not supported "
                                  rf"\(this one has {nd}\)", "return b.reshape")


def test_new_axes_beyond_the_most_dimensions_are_a_compile_error(tmp_path):
    src = "def f(a):\n    return a[" + "None, " * IR_MAX_DIMS + "]\n"
    assert_compile_error_in_child(tmp_path, src, "np.ones(3)",
                                  rf"arrays of more than {IR_MAX_DIMS} dimensions are not supported "
                                  rf"\(this one has {IR_MAX_DIMS + 1}\)", "return a[None")


def test_an_argument_with_more_dimensions_is_a_type_error():
    f = lk.jit(lambda a: a.sum())
    assert f(np.ones((1,) * IR_MAX_DIMS)) == 1.0
    with pytest.raises(TypeError, match=rf"argument 'a': the array is not aligned or has more than {IR_MAX_DIMS} "
                                        "dimensions"):
        f(np.ones((1,) * (IR_MAX_DIMS + 1)))


def unaligned(n, dtype=np.float64, offset=1):
    """n elements of dtype at an odd byte offset into a buffer, as Dask hands chunks to its workers"""
    a = np.frombuffer(bytearray(n * np.dtype(dtype).itemsize + offset), dtype, n, offset=offset)
    assert not a.flags.aligned
    return a


def double_in_place(x):
    x *= 2.0
    return x.sum()


def add_arrays(x, y):
    return x + y


def test_an_unaligned_argument_is_copied_for_the_call_and_its_writes_come_back():
    a = unaligned(10)
    a[:] = np.arange(10.0)
    assert lk.jit(double_in_place)(a) == 90.0
    np.testing.assert_array_equal(a, np.arange(10.0) * 2)  # the write reached the caller's array
    np.testing.assert_array_equal(lk.jit(add_arrays)(a, a), a + a)  # one copy for an argument given twice
    m = unaligned(12, np.int32, 2).reshape(3, 4)
    m[:] = np.arange(12, dtype=np.int32).reshape(3, 4)
    np.testing.assert_array_equal(lk.jit(add_arrays)(m.T, np.int32(1)), m.T + 1)


def test_an_unaligned_argument_sharing_memory_with_another_is_a_type_error():
    a = unaligned(10)
    with pytest.raises(TypeError, match="argument 'x': the array is not aligned and shares memory with argument 'y'"):
        lk.jit(add_arrays)(a[:5], a[5:] if False else a[2:7])


# ---------------------------------------------------------------- one array operation: IR_MAX_MAP_INPUTS operands


def maps_over(n):
    names = ", ".join(f"a{i}" for i in range(n))
    return f"def f({names}):\n    return lk.map(lambda {names}: {' + '.join(f'a{i}' for i in range(n))}, {names})\n"


def test_a_map_of_the_most_operands_works(tmp_path):
    mod = load(tmp_path, maps_over(IR_MAX_MAP_INPUTS))
    xs = [np.arange(4.0) * i for i in range(IR_MAX_MAP_INPUTS)]
    np.testing.assert_array_equal(lk.jit(mod.f)(*xs), sum(xs))


def test_a_map_of_more_operands_is_a_compile_error_naming_the_line(tmp_path):
    mod = load(tmp_path, maps_over(IR_MAX_MAP_INPUTS + 1))
    xs = [np.arange(4.0) * i for i in range(IR_MAX_MAP_INPUTS + 1)]
    with pytest.raises(lk.CompileError) as e:
        lk.jit(mod.f)(*xs)
    msg = str(e.value)
    assert f"an array operation of more than {IR_MAX_MAP_INPUTS} operands is not supported" in msg, msg
    assert f'generated.py", line {line_of(maps_over(IR_MAX_MAP_INPUTS + 1), "return lk.map")}' in msg, msg


def test_long_sums_of_arrays_still_fuse_and_compute(tmp_path):
    # a + a*1 + ... : fusion stops at IR_MAX_MAP_INPUTS operands and the rest stays separate maps
    src = "def f(a):\n    return " + " + ".join(f"a * {i}.0" for i in range(3 * IR_MAX_MAP_INPUTS)) + "\n"
    mod = load(tmp_path, src)
    a = np.arange(5.0)
    np.testing.assert_allclose(lk.jit(mod.f)(a), mod.f(a), rtol=1e-15)


# ---------------------------------------------------------------- and/or: any number of operands


def boolop(op, n):
    return f"def f(x):\n    return " + f" {op} ".join(f"x == {i}" for i in range(n)) + "\n"


@pytest.mark.parametrize("n", [2, 32, 33, 40, 200])
@pytest.mark.parametrize("op", ["or", "and"])
def test_and_or_of_any_number_of_operands(tmp_path, op, n):
    mod = load(tmp_path, boolop(op, n))
    f = lk.jit(mod.f)
    for x in [0, 1, n - 1, n, -1]:
        assert f(x) == mod.f(x), (op, n, x)


def test_a_long_comparison_chain(tmp_path):
    src = "def f(x, y):\n    return " + " < ".join(["x", "y"] * 25) + "\n"
    mod = load(tmp_path, src)
    f = lk.jit(mod.f)
    for x, y in [(0, 1), (1, 0), (1, 1)]:
        assert f(x, y) == mod.f(x, y)


# ---------------------------------------------------------------- a parallel loop reading many variables


def prange_reading(nv):
    defs = "\n".join(f"    v{i} = x + {i}" for i in range(nv))
    adds = "\n".join(f"        s += v{i}" for i in range(nv))
    return (f"def f(x, out):\n{defs}\n    for i in lk.prange(out.shape[0]):\n        s = 0.0\n{adds}\n"
            "        out[i] = i * s\n    return out\n")


@pytest.mark.parametrize("nv", [10, 600])
def test_a_prange_loop_reads_any_number_of_variables_on_openmp(tmp_path, nv):
    src = prange_reading(nv)
    rc, out = run_child(tmp_path, src, "1.5, np.zeros(50)", backend="openmp")
    assert rc == 0, f"the interpreter died (return code {rc}):\n{out}"
    assert out.startswith("RESULT"), out
    mod = load(tmp_path, src, "reference")
    got = eval(out[len("RESULT "):], {"array": np.array})
    np.testing.assert_array_equal(got, mod.f(1.5, np.zeros(50)))


# ---------------------------------------------------------------- a matrix product written as an imap


def imap_product(A, B, shape):
    return lk.imap(lambda i, j: (A[i] * B[j]).sum(), shape)


def imap_product_own_rows(A, B):
    return lk.imap(lambda i, j: (A[i] * B[j]).sum(), (A.shape[0], B.shape[0]))


def python_imap_product(A, B, shape):
    """What the imap means: body(i, j) over shape, in plain Python and NumPy."""
    return np.array([[(A[i] * B[j]).sum() for j in range(shape[1])] for i in range(shape[0])]).reshape(shape)


AB = (np.arange(20.0).reshape(5, 4) - 3.0, np.arange(12.0).reshape(3, 4) * 0.5)


@pytest.mark.parametrize("shape", [(2, 2), (5, 3), (1, 3), (5, 1), (0, 3), (3, 0)], ids=str)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_an_imap_product_has_the_shape_it_asks_for(shape, dtype):
    A, B = (x.astype(dtype) for x in AB)
    got = lk.jit(imap_product)(A, B, shape)
    exp = python_imap_product(A, B, shape)
    assert got.shape == shape
    np.testing.assert_allclose(got, exp, rtol=1e-6)


@pytest.mark.parametrize("shape", [(7, 3), (5, 4), (6, 1)], ids=str)
def test_an_imap_product_past_the_rows_raises_index_error(shape):
    A, B = AB
    with pytest.raises(IndexError):
        python_imap_product(A, B, shape)
    with pytest.raises(IndexError):
        lk.jit(imap_product)(A, B, shape)


def test_an_imap_product_over_the_rows_is_the_gemm():
    A, B = AB
    f = lk.jit(imap_product_own_rows)
    assert "matmul(" in f.inspect_types(A, B)
    np.testing.assert_allclose(f(A, B), A @ B.T, rtol=1e-15)
    with pytest.raises(ValueError):  # rows of different lengths: as (A[i] * B[j]) cannot broadcast
        f(A, np.ones((3, 5)))
