"""Jitted functions travel to worker processes (issue #11, item 7): pickled by reference to their module and name
with their jit options, shipped by multiprocessing, concurrent.futures and Dask, and the workers load the compiled
code from the shared on-disk cache instead of compiling."""
import concurrent.futures
import multiprocessing
import os
import pickle

import numpy as np
import pytest

import lorikeet as lk
from lorikeet import _cache

import workers_helper as wh
from helpers import skip_on_gpu

TESTS = os.path.dirname(os.path.abspath(__file__))
PYSHIM = os.path.join(os.path.dirname(TESTS), "pyshim")


def _chunks(n=4, size=1000):
    rng = np.random.default_rng(11)
    return [rng.standard_normal(size) for _ in range(n)]


def _worker_path(monkeypatch):
    # a worker imports workers_helper and lorikeet again: spawned processes get this process's sys.path, and
    # PYTHONPATH covers processes started otherwise (Dask's nannies)
    paths = [TESTS, PYSHIM] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))


def test_pickle_round_trip_is_the_same_function():
    x = _chunks(1)[0]
    back = pickle.loads(pickle.dumps(wh.kernel))
    assert back is wh.kernel
    np.testing.assert_allclose(back(x), wh.kernel_reference(x))


def test_pickle_round_trip_keeps_the_jit_options():
    x = _chunks(1)[0]
    back = pickle.loads(pickle.dumps(wh.affine_fast, protocol=pickle.HIGHEST_PROTOCOL))
    assert isinstance(back, lk.Dispatcher)
    assert back.py_func is wh.affine
    assert (back.backend, back.fastmath, back.boundscheck, back.cache) == \
        (wh.affine_fast.backend, wh.affine_fast.fastmath, wh.affine_fast.boundscheck, wh.affine_fast.cache)
    assert back.fastmath and not back.boundscheck
    assert pickle.loads(pickle.dumps(wh.affine_fast)) is back  # one dispatcher per function and options
    np.testing.assert_allclose(back(x), wh.affine(x))
    np.testing.assert_allclose(back(x), wh.affine_fast(x))


def test_unpicklable_functions_say_why():
    lam = lk.jit(lambda x: x + 1.0)
    with pytest.raises(pickle.PicklingError, match="it is a lambda"):
        pickle.dumps(lam)

    def nested(x):
        return x * 2.0

    with pytest.raises(pickle.PicklingError, match="nested function or closure"):
        pickle.dumps(lk.jit(nested))
    # the reference is checked when pickling: a function whose module holds something else under its name
    def kernel(x):
        return x

    kernel.__module__, kernel.__qualname__ = wh.__name__, "kernel"
    with pytest.raises(pickle.PicklingError, match="workers_helper.kernel is another object"):
        pickle.dumps(lk.jit(kernel))
    # a plain function of a module, jitted under no name of its own: found by its function's name
    assert pickle.loads(pickle.dumps(lk.jit(wh.kernel_reference))).py_func is wh.kernel_reference


def test_unpickling_a_function_missing_in_the_worker_says_why():
    blob = pickle.dumps(wh.kernel).replace(b"kernel", b"kernal")  # as if the worker's module lacked it
    with pytest.raises(pickle.UnpicklingError, match="workers_helper.kernal cannot be found in this process"):
        pickle.loads(blob)


def test_process_pool_spawn_matches_numpy(monkeypatch):
    _worker_path(monkeypatch)
    chunks = _chunks()
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=2, mp_context=ctx) as ex:
        got = list(ex.map(wh.kernel, chunks))
        fast = list(ex.map(wh.affine_fast, chunks))
    for c, g, f in zip(chunks, got, fast):
        np.testing.assert_allclose(g, wh.kernel_reference(c))
        np.testing.assert_allclose(f, wh.affine(c))


def test_multiprocessing_fork_matches_numpy():
    skip_on_gpu("CUDA does not survive fork(): gpu calls need spawn")
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork start method on this platform")
    chunks = _chunks()
    with multiprocessing.get_context("fork").Pool(2) as pool:
        got = pool.map(wh.kernel, chunks)
    for c, g in zip(chunks, got):
        np.testing.assert_allclose(g, wh.kernel_reference(c))


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """A temporary LORIKEET_CACHE_DIR, empty, for this process and the workers it starts."""
    skip_on_gpu("the disk cache of this item holds cpu and openmp code")
    if os.environ.get("LORIKEET_CACHE", "1").strip() == "0":
        pytest.skip("LORIKEET_CACHE=0 turns the disk cache off")
    monkeypatch.setenv("LORIKEET_CACHE_DIR", str(tmp_path / "cache"))
    _cache._reset()
    yield tmp_path / "cache"
    monkeypatch.undo()
    _cache._reset()


def test_spawned_worker_loads_from_the_cache_the_parent_filled(fresh_cache, monkeypatch):
    _worker_path(monkeypatch)
    x = _chunks(1)[0]
    # a dispatcher of its own, so that this process compiles here (into the fresh cache) whatever ran before
    parent = lk.jit(wh.kernel.py_func)
    np.testing.assert_allclose(parent(x), wh.kernel_reference(x))
    assert parent.cache_info() == {"hits": 0, "misses": 1, "compiles": 1}
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=ctx) as ex:
        y, info = ex.submit(wh.call_with_cache_info, parent, x).result()
    np.testing.assert_allclose(y, wh.kernel_reference(x))
    assert info == {"hits": 1, "misses": 0, "compiles": 0}, "the worker compiled instead of loading the parent's code"


def test_spawned_worker_on_a_cold_cache_compiles(fresh_cache, monkeypatch):
    # the other side of the test above: with nothing in the cache, the worker's first call compiles
    _worker_path(monkeypatch)
    x = _chunks(1)[0]
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=ctx) as ex:
        y, info = ex.submit(wh.call_with_cache_info, wh.kernel, x).result()
    np.testing.assert_allclose(y, wh.kernel_reference(x))
    assert info == {"hits": 0, "misses": 1, "compiles": 1}


def test_dask_local_cluster_map_blocks(fresh_cache, monkeypatch):
    da = pytest.importorskip("dask.array", reason="dask is not installed (scripts/setup.sh installs dask[distributed])")
    distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed "
                                      "(scripts/setup.sh installs dask[distributed])")
    _worker_path(monkeypatch)
    x_np = np.random.default_rng(7).standard_normal(40_000)
    parent = lk.jit(wh.kernel.py_func)
    parent(x_np[:10_000])  # compiled here once, into the cache the workers share
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cl, \
            distributed.Client(cl) as client:
        x = da.from_array(x_np, chunks=10_000)
        # Dask hands a worker the chunks it was sent as views of its message buffers, at any byte offset: lorikeet
        # copies one that is not aligned for the call, as the user's code is written
        y = x.map_blocks(wh.kernel, dtype=np.float64, meta=np.empty((0,), np.float64)).compute()
        infos = client.run(wh.kernel.cache_info)  # a bound method of the dispatcher travels too
    np.testing.assert_allclose(y, wh.kernel_reference(x_np))
    assert len(infos) == 2
    assert sum(i["compiles"] for i in infos.values()) == 0, infos
    assert sum(i["hits"] for i in infos.values()) >= 1, infos
