"""The openmp backend: the same results as cpu (exactly for integers, within rounding for floats) with the
outermost data-parallel loops and lk.prange loops run on a team of threads; thread count control; Python
threads; errors raised inside a parallel loop; fork safety."""
import itertools
import os
import threading

import numpy as np
import pytest

import lorikeet as lk

N = 300_000  # above the fork threshold
RNG = np.random.default_rng(7)
A = RNG.random(N)
B = RNG.random(N)
M = RNG.random((600, 500))
I = RNG.integers(-1000, 1000, N)


def both(f, *args):
    return lk.jit(f, backend="cpu")(*args), lk.jit(f, backend="openmp")(*args)


def fused(a, b):
    return np.sqrt(a * a + b * b) * np.exp(-a)


def reductions(a, i):
    return a.sum(), np.max(a), np.min(a), (a * 2).prod() > 0, i.sum(), i.max(), np.mean(a)


def two_d(m):
    return m * 2 + 1, m.sum(), np.array([[x * 2 for x in row] for row in m])


def imaps(n):
    return lk.imap(lambda i: i * i, n), np.arange(n) * 3


def prange_reductions(a, i):
    s = 0.0
    p = 1.0
    hi = -1e300
    lo = 1e300
    n = 0
    for k in lk.prange(len(a)):
        x = a[k]
        s += x
        p *= 1.0 + x * 1e-7
        hi = max(hi, x)
        lo = min(lo, x)
        n += i[k]
    return s, p, hi, lo, n, k


def prange_writes(out, a):
    for k in lk.prange(len(a)):
        out[k] = a[k] * a[k] + k
    return out


def test_maps_match_cpu():
    c, o = both(fused, A, B)
    np.testing.assert_array_equal(c, o)  # elementwise: every element by the same function (vecmath.c), so equal


def test_reductions_match_cpu():
    c, o = both(reductions, A, I)
    for x, y in zip(c, o):
        assert x == pytest.approx(y, rel=1e-12)
    assert c[4] == o[4] and c[5] == o[5]  # integers: exact


def test_two_d_and_comprehensions_match_cpu():
    for x, y in zip(*both(two_d, M)):
        np.testing.assert_allclose(x, y, rtol=1e-12)


def test_imaps_match_cpu():
    for x, y in zip(*both(imaps, N)):
        np.testing.assert_array_equal(x, y)


def test_prange_reductions_match_sequential_python():
    c, o = both(prange_reductions, A, I)
    ref = prange_reductions(A, I)
    for x, y in zip(ref, o):
        assert y == pytest.approx(x, rel=1e-9)
    assert o[4] == ref[4] and o[5] == ref[5] == N - 1


def test_prange_reductions_are_recorded_in_the_typed_ir_of_every_backend():
    # found once in ir/ (not by one backend): inspect_types shows them, the same text on cpu and openmp
    ir = lk.jit(prange_reductions, backend="cpu").inspect_types(A, I)
    assert "reducing s add, p mul, hi max, lo min, n add" in ir, ir
    assert lk.jit(prange_reductions, backend="openmp").inspect_types(A, I) == ir
    assert "reducing" not in lk.jit(prange_writes, backend="cpu").inspect_types(np.zeros(N), A)


def test_prange_writes_arrays():
    out = lk.jit(prange_writes, backend="openmp")(np.zeros(N), A)
    np.testing.assert_allclose(out, A * A + np.arange(N), rtol=1e-15)


def prange_with_break(a):
    s = 0.0
    for k in lk.prange(len(a)):
        if a[k] > 0.5:
            break
        s += a[k]
    return s


def prange_with_return(a):
    for k in lk.prange(len(a)):
        if a[k] > 0.5:
            return k
    return -1


def prange_breaking_an_inner_loop(a, m):
    total = 0.0
    for k in lk.prange(len(a)):
        for j in range(m):
            if j * a[k] > 2.0:
                break
            total += a[k] * j
    return total


def source_line(f, text):
    """The file line of the first statement of f that starts with text."""
    import inspect
    lines, first = inspect.getsourcelines(f)
    return first + next(i for i, line in enumerate(lines) if line.strip().startswith(text))


# prange's rules are the same on every backend, so that one program has one meaning: cpu, which runs prange as
# range, rejects what openmp cannot run in parallel
@pytest.mark.parametrize("backend", ["cpu", "openmp"])
@pytest.mark.parametrize("f, exit_stmt", [(prange_with_break, "break"), (prange_with_return, "return k")])
def test_leaving_a_prange_loop_is_a_compile_error_naming_the_line(backend, f, exit_stmt):
    with pytest.raises(lk.CompileError, match="break and return are not allowed in a prange loop") as e:
        lk.jit(f, backend=backend)(A)
    assert f"line {source_line(f, exit_stmt)}" in str(e.value)


@pytest.mark.parametrize("backend", ["cpu", "openmp"])
def test_a_break_of_a_loop_inside_prange_is_allowed(backend):
    a = A[:5000]
    assert lk.jit(prange_breaking_an_inner_loop, backend=backend)(a, 7) == pytest.approx(
        prange_breaking_an_inner_loop(a, 7), rel=1e-12)


def prange_private_used_after(a):
    last = 0.0
    for k in lk.prange(len(a)):
        last = a[k]
    return last


@pytest.mark.parametrize("backend", ["cpu", "openmp"])
def test_prange_private_variable_used_after_the_loop_is_a_compile_error(backend):
    with pytest.raises(lk.CompileError, match="variable 'last' is assigned in a prange loop") as e:
        lk.jit(prange_private_used_after, backend=backend)(A)
    assert f"line {source_line(prange_private_used_after, 'for k in lk.prange')}" in str(e.value)


def many_reductions_source(n):
    """A function with n `+=` reductions in one prange loop (each a different weight of the element)."""
    names = [f"s{i}" for i in range(n)]
    body = "".join(f"    {v} = 0.0\n" for v in names)
    body += "    for k in lk.prange(len(a)):\n        x = a[k]\n"
    body += "".join(f"        {v} += x * {i + 1}\n" for i, v in enumerate(names))
    body += "".join(f"    out[{i}] = {v}\n" for i, v in enumerate(names))
    return f"def many_reductions(a, out):\n{body}    return out\n"


@pytest.mark.parametrize("backend", ["cpu", "openmp"])
def test_prange_with_more_reductions_than_ever_before(backend, tmp_path, monkeypatch):
    # openmp once kept only the first 64 reductions of a loop and returned the others' initial values
    import importlib
    (tmp_path / "many_reductions_mod.py").write_text("import lorikeet as lk\n\n\n" + many_reductions_source(100))
    monkeypatch.syspath_prepend(str(tmp_path))
    f = importlib.import_module("many_reductions_mod").many_reductions
    lk.set_parallel_threshold(0)
    try:
        got = lk.jit(f, backend=backend)(A, np.zeros(100))
    finally:
        lk.set_parallel_threshold(int(os.environ.get("LORIKEET_PARALLEL_THRESHOLD", 300000)))
    np.testing.assert_allclose(got, f(A, np.zeros(100)), rtol=1e-9)


def test_index_error_inside_a_parallel_loop():
    def f(a):
        s = 0.0
        for k in lk.prange(len(a) + 1):
            s += a[k]
        return s

    with pytest.raises(IndexError, match=f"index {N} is out of bounds"):
        lk.jit(f, backend="openmp")(A)


def two_bad_reads(a, idx):
    s = 0.0
    for k in lk.prange(len(idx)):
        if k % 2 == 0:
            s += a[idx[k]]
        else:
            s += a[idx[k]] * 2.0
    return s


def test_the_first_failing_chunk_raises_whatever_the_threads(every_loop_on_the_team):
    """Two chunks fail with different IndexErrors (other index, other line): the one raised is the one CPython
    raises, the first in iteration order, every time and on any number of threads, although the later chunk fails
    first (after one iteration; the earlier one after all of its own)."""
    import traceback

    n = 2 * 3 * 4 * 5 * 7 * 40  # a chunk boundary at n // 2 for 1 to 16 threads (4 chunks each)
    a = np.arange(10.0)
    idx = np.zeros(n, dtype=np.int64)
    idx[n // 2 - 1] = 11  # last iteration of the lower half: odd k, the `* 2.0` line
    idx[n // 2] = 12      # first iteration of the upper half: even k, the other line
    with pytest.raises(IndexError) as ref:
        two_bad_reads(a, idx)
    ref_line = traceback.extract_tb(ref.value.__traceback__)[-1].lineno
    f = lk.jit(two_bad_reads, backend="openmp")
    for threads in (1, 2, 3, 4, 16):
        lk.set_num_threads(threads)
        for _ in range(20):
            with pytest.raises(IndexError) as got:
                f(a, idx)
            assert str(got.value).splitlines()[0] == str(ref.value) == "index 11 is out of bounds for axis 0 with size 10"
            assert got.value.lk_line == ref_line


def test_small_loops_below_the_threshold_give_the_same_results():
    c, o = both(reductions, A[:100], I[:100])
    for x, y in zip(c, o):
        assert x == pytest.approx(y, rel=1e-12)


def test_thread_count_can_be_set():
    before = lk.get_num_threads()
    try:
        lk.set_num_threads(1)
        assert lk.get_num_threads() == 1
        one = lk.jit(reductions, backend="openmp")(A, I)
        lk.set_num_threads(2)
        two = lk.jit(reductions, backend="openmp")(A, I)
        assert one[4] == two[4]
        assert one[0] == pytest.approx(two[0], rel=1e-12)
    finally:
        lk.set_num_threads(before)
    with pytest.raises(ValueError):
        lk.set_num_threads(0)


def test_per_call_backend_argument():
    f = lk.jit(fused, backend="cpu")
    np.testing.assert_array_equal(f(A, B, _backend="openmp"), f(A, B))
    np.testing.assert_allclose(f(A, B, _backend="openmp"), fused(A, B), rtol=1e-14)


def test_python_threads_calling_at_once_get_correct_results():
    f = lk.jit(prange_reductions, backend="openmp")
    expected = f(A, I)
    results, errors = [], []

    def worker():
        try:
            for _ in range(10):
                results.append(f(A, I))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 40
    for r in results:
        assert r[4] == expected[4]
        assert r[0] == pytest.approx(expected[0], rel=1e-12)


def matmul_and_sum(x, y):
    return (x @ y).sum(), np.sum(x * 2.0)


BLAS_SCRIPT = r"""
import sys, threading
import numpy as np
import lorikeet as lk
sys.path.insert(0, sys.argv[1])
import test_openmp as t
rng = np.random.default_rng(1)
x, y = rng.random((300, 200)), rng.random((200, 300))
f = lk.jit(t.matmul_and_sum, backend="openmp")
expected = ((x @ y).sum(), np.sum(x * 2.0))
bad = []
def blas():
    for _ in range(40):
        if not np.allclose(np.dot(x, y), x @ y):
            bad.append("blas")
def ours():
    for _ in range(40):
        got = f(x, y)
        if abs(got[0] - expected[0]) > 1e-9 * abs(expected[0]) or abs(got[1] - expected[1]) > 1e-9 * abs(expected[1]):
            bad.append(("lorikeet", got, expected))
threads = [threading.Thread(target=g) for g in (blas, ours, blas, ours)]
for th in threads: th.start()
for th in threads: th.join()
print("bad:", bad)
sys.exit(1 if bad else 0)
"""


def test_next_to_numpys_blas_threads_no_deadlock_and_right_results():
    """NumPy's BLAS (OpenBLAS, with threads of its own) and lorikeet's team used at once from Python threads, in a
    fresh process: both give right results and the process finishes (a deadlock would hit the timeout)."""
    import subprocess
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    path = os.pathsep.join([os.path.join(here, "..", "pyshim"), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path, LORIKEET_PARALLEL_THRESHOLD="0")
    r = subprocess.run([sys.executable, "-c", BLAS_SCRIPT, here], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_runs_parallel_code():
    f = lk.jit(reductions, backend="openmp")
    expected = f(A, I)[4]
    pid = os.fork()
    if pid == 0:  # the child: one thread now, the same answer, no hang
        try:
            os._exit(0 if f(A, I)[4] == expected else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


def axis_work(m):
    return (m.sum(axis=1), np.argmax(m, axis=1), np.cumsum(m, axis=1), lk.reduce(lambda x, y: x + y, m, axis=1),
            m.max(axis=0), np.cumsum(m, axis=0))


def test_axis_reductions_and_scans_match_cpu():
    c, o = both(axis_work, M)
    for x, y in zip(c, o):
        np.testing.assert_allclose(x, y, rtol=1e-12)
        assert x.dtype == y.dtype and x.shape == y.shape


def special_reductions(a, i):
    return (np.argmax(a), np.argmin(i), lk.reduce(lambda x, y: x + y, i), lk.reduce(lambda x, y: max(x, y), a, init=0.25),
            np.argmax(np.where(a > 0.5, a, np.nan)))


def test_argmin_argmax_and_user_reductions_match_cpu():
    c, o = both(special_reductions, A, I)
    ref = (np.argmax(A), np.argmin(I), int(I.sum()), max(0.25, A.max()), int(np.argmax(np.where(A > 0.5, A, np.nan))))
    assert c == o
    assert o[0] == ref[0] and o[1] == ref[1] and o[2] == ref[2] and o[4] == ref[4]
    assert o[3] == pytest.approx(ref[3])


def wider_init_reductions(a, i):
    return lk.reduce(lambda x, y: x + y, i, init=0.5), lk.reduce(lambda x, y: max(x, y), i, init=-1e300)


def test_user_reduction_with_an_init_of_a_wider_type():
    # fn is typed for (float, int): it cannot merge two threads' float results, so these stay on one thread
    c, o = both(wider_init_reductions, A, I)
    assert c == o == (int(I.sum()) + 0.5, float(I.max()))


def test_user_reduction_of_nothing_raises_on_the_team():
    def f(a):
        return lk.reduce(lambda x, y: x + y, a)

    with pytest.raises(ValueError):
        lk.jit(f, backend="openmp")(np.zeros(0))


def scans(a, i, m):
    return np.cumsum(a), np.cumsum(i), np.cumprod(1.0 + a * 1e-7), np.cumsum(m)


def test_flattened_scans_match_cpu():
    c, o = both(scans, A, I, M)
    np.testing.assert_allclose(c[0], o[0], rtol=1e-10)
    np.testing.assert_array_equal(c[1], o[1])  # integers: exact
    np.testing.assert_allclose(c[2], o[2], rtol=1e-12)
    np.testing.assert_allclose(c[3], o[3], rtol=1e-10)
    np.testing.assert_array_equal(o[1], np.cumsum(I))


# Each kind of data-parallel node, outermost in its function, is outlined and handed to the team
# (rt_parallel_for in the optimised LLVM IR); the cpu backend never calls it.
NODE_KINDS = {
    "map": (lambda a: a * 2.0 + 1.0, (A,)),
    "imap": (lambda n: lk.imap(lambda i: i * 3, n), (N,)),
    "outer_map": (lambda a: lk.outer_map(lambda x, y: x * y, a[:600], a[:600]), (A,)),
    "reduce": (lambda a: np.sum(a * a), (A,)),
    "user_reduce": (lambda a: lk.reduce(lambda x, y: max(x, y), a), (A,)),
    "ireduce": (lambda n: lk.ireduce(lambda i: i * 2, lambda x, y: x + y, n, 0), (N,)),
    "argmax": (lambda a: np.argmax(a), (A,)),
    "scan": (lambda a: np.cumsum(a), (A,)),
    "axis_reduce": (lambda m: m.sum(axis=1), (M,)),
    "prange": (prange_writes, (np.empty(N), A)),
}


@pytest.mark.parametrize("kind", sorted(NODE_KINDS))
def test_each_data_parallel_node_runs_on_the_team(kind):
    fn, args = NODE_KINDS[kind]
    assert "rt_parallel_for" in lk.jit(fn, backend="openmp").inspect_llvm(*args)
    assert "rt_parallel_for" not in lk.jit(fn, backend="cpu").inspect_llvm(*args)
    np.testing.assert_allclose(lk.jit(fn, backend="openmp")(*args), lk.jit(fn, backend="cpu")(*args), rtol=1e-12)


def test_float_results_do_not_depend_on_which_thread_ran_what():
    """Threads take chunks dynamically, but each chunk's partial result has its slot and the slots are combined
    in order: the same call gives the same bits every time, from several Python threads at once too."""
    f = lk.jit(lambda a: (np.sum(a * 1.1), np.cumsum(a)[-1], lk.reduce(lambda x, y: x + y, a)), backend="openmp")
    first = f(A)
    results = []

    def worker():
        for _ in range(10):
            results.append(f(A))

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 30 and all(r == first for r in results)

@pytest.fixture
def every_loop_on_the_team():
    """Threshold 0 (every loop on the team, however small), the thread count restored afterwards."""
    threads = lk.get_num_threads()
    lk.set_parallel_threshold(0)
    try:
        yield
    finally:
        lk.set_parallel_threshold(int(os.environ.get("LORIKEET_PARALLEL_THRESHOLD") or 300_000))
        lk.set_num_threads(threads)


def test_cumsum_on_any_number_of_threads(every_loop_on_the_team):
    # one thread: one pass; more: the second pass adds each chunk's offset (none for the first chunk)
    f = lk.jit(lambda i, m: (np.cumsum(i), np.cumprod(np.where(m > 0, 1, -1))), backend="openmp")
    m = RNG.integers(-1000, 1000, (601, 7))
    for threads in (1, 2, 3, 4):
        lk.set_num_threads(threads)
        for n in (0, 1, 2, 3, 5, 1000, N):
            got = f(I[:n], m[: n % 602])
            assert got[0].tolist() == np.cumsum(I[:n]).tolist()
            assert got[1].tolist() == np.cumprod(np.where(m[: n % 602] > 0, 1, -1)).tolist()


# ---- lk.scan with a user function on the team: pass 1 reduces each thread's chunk, the carries are combined in
# chunk order, pass 2 scans each chunk again from its carry. fn must be associative, not commutative.

def add(x, y):
    return x + y


USER_SCANS = {  # name: (fn, init)
    "add": (add, None),
    "add_init": (add, 5),
    "max": (lambda x, y: max(x, y), None),
    "min_init": (lambda x, y: min(x, y), 7),
    "first": (lambda x, y: x, None),  # associative, not commutative
    "last": (lambda x, y: y, None),
    "last_init": (lambda x, y: y, 3),
}


def user_scan(fn, init):
    if init is None:
        return lambda a: lk.scan(fn, a)
    return lambda a: lk.scan(fn, a, init=init)


def accumulate(fn, init, x):
    if init is None:
        return list(itertools.accumulate(x, fn))
    return list(itertools.accumulate(x, fn, initial=init))[1:]


@pytest.mark.parametrize("name", sorted(USER_SCANS))
def test_user_scans_match_itertools_accumulate(every_loop_on_the_team, name):
    fn, init = USER_SCANS[name]
    f = user_scan(fn, init)
    cpu, omp = lk.jit(f, backend="cpu"), lk.jit(f, backend="openmp")
    for threads in (2, 3, 4):
        lk.set_num_threads(threads)
        for n in (0, 1, 2, 3, 5, 1000, N):  # fewer elements than threads too
            i, a = I[:n], A[:n]
            got = omp(i)
            assert got.dtype == cpu(i).dtype == np.int64
            assert got.tolist() == accumulate(fn, init, i.tolist()) == cpu(i).tolist()  # integers: exact
            got, ref = omp(a), accumulate(fn, init, a.tolist())
            assert got.dtype == np.float64 and len(got) == n
            if name.startswith("add"):
                np.testing.assert_allclose(got, ref, rtol=1e-12)  # the grouping of the sum changes
                np.testing.assert_allclose(got, cpu(a), rtol=1e-12)
            else:
                assert got.tolist() == ref == cpu(a).tolist()


def test_user_scan_runs_in_two_passes_on_the_team():
    ir = lk.jit(user_scan(add, None), backend="openmp").inspect_llvm(I)
    assert ir.count("call i32 @rt_parallel_for(") == 2


def user_scans_2d(m):
    return (lk.scan(lambda x, y: x + y, m), lk.scan(lambda x, y: max(x, y), m.T, init=-5),
            lk.scan(lambda x, y: y, m[::2, ::-3]), lk.scan(lambda x, y: x + y, m * 2 + 1, init=1))


def test_user_scans_of_2d_views_and_maps(every_loop_on_the_team):
    m = RNG.integers(-1000, 1000, (601, 37))
    f, cpu = lk.jit(user_scans_2d, backend="openmp"), lk.jit(user_scans_2d, backend="cpu")
    for threads in (2, 3):
        lk.set_num_threads(threads)
        got = f(m)
        assert got[0].tolist() == np.cumsum(m).tolist()
        assert got[1].tolist() == accumulate(max, -5, m.T.ravel().tolist())
        assert got[2].tolist() == m[::2, ::-3].ravel().tolist()
        assert got[3].tolist() == (np.cumsum(m * 2 + 1) + 1).tolist()
        for rows in (0, 1, 2, 5):  # no elements at all, or fewer rows than threads
            for shape in ((rows, 37), (37, rows)):
                e = m[: shape[0], : shape[1]]
                assert [x.tolist() for x in f(e)] == [x.tolist() for x in cpu(e)]


def test_user_scan_of_nothing_is_empty_as_on_cpu(every_loop_on_the_team):
    for init in (None, 5):
        f = user_scan(add, init)
        for x in (np.zeros(0, np.int64), np.zeros((0, 4)), np.zeros((4, 0))):
            c, o = lk.jit(f, backend="cpu")(x), lk.jit(f, backend="openmp")(x)
            assert o.shape == c.shape == (0,) and o.dtype == c.dtype


def test_user_scan_with_an_init_of_a_wider_type(every_loop_on_the_team):
    # fn is typed for (float, int): it cannot merge chunks' float results, so this scan stays on one thread
    f = user_scan(add, 0.5)
    got = lk.jit(f, backend="openmp")(I)
    assert got.dtype == np.float64
    assert got.tolist() == (np.cumsum(I) + 0.5).tolist()


def test_user_scan_error_raised_on_the_team(every_loop_on_the_team):
    def f(i):
        return lk.scan(lambda x, y: x // y, i)  # not associative: only the error is checked

    i = I.copy()
    i[N // 2] = 0
    for backend in ("cpu", "openmp"):
        with pytest.raises(ZeroDivisionError):
            lk.jit(f, backend=backend)(i)


def user_axis_scans(m):
    return (lk.scan(lambda x, y: x + y, m, axis=0), lk.scan(lambda x, y: x + y, m, axis=1, init=3),
            lk.scan(lambda x, y: max(x, y), m, axis=0, init=0), lk.scan(lambda x, y: y, m, axis=1))


def test_user_axis_scans_match_cpu(every_loop_on_the_team):
    # along an axis each thread owns lines of the result: no carries between threads
    m = RNG.integers(-1000, 1000, (601, 37))
    ref = (np.cumsum(m, axis=0), np.cumsum(m, axis=1) + 3, np.maximum.accumulate(np.maximum(m, 0), axis=0), m)
    for threads in (2, 3):
        lk.set_num_threads(threads)
        for x, y, r in zip(lk.jit(user_axis_scans, backend="openmp")(m), lk.jit(user_axis_scans, backend="cpu")(m), ref):
            assert x.tolist() == y.tolist() == r.tolist()


def test_parallel_threshold_set_before_any_loop_is_not_undone_by_the_environment():
    import subprocess
    import sys

    code = ("import lorikeet as lk\n"
            "lk.set_parallel_threshold(123456)\n"

            "print(lk.get_parallel_threshold())\n")
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.pathsep.join([os.path.join(here, "..", "pyshim"), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path, LORIKEET_PARALLEL_THRESHOLD="5")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "123456"
