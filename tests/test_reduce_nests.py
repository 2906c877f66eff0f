"""A reduction over the middle axis that reads a 2-D intermediate broadcast along the last axis, as one loop nest
(issue 15, ir/reduce_nests.c): n-body's array form, kernel regression, a weighted sum of neighbours.

When the shapes are plain (every axis of an input is the space's extent or a None of its view, no extent 0), the
intermediates are computed element by element in one nest over (i, j) and never stored: a call allocates its
result only. Other shapes run the statements as written, with NumPy's results and errors. Observed through
lk.runtime.stats()['allocations'] per call and the results, compared with NumPy's on the suite's backend.
"""
import sys

import numpy as np
import pytest

import lorikeet as lk
from helpers import J, allocations

sys.path.insert(0, __file__.rsplit("/tests/", 1)[0])
from benchmarks.workloads import nbody  # noqa: E402

RNG = np.random.default_rng(19)


def close(got, exp, rtol=1e-12, atol=1e-12):
    g, e = np.asarray(got), np.asarray(exp)
    assert g.dtype == e.dtype and g.shape == e.shape, (g.dtype, g.shape, e.dtype, e.shape)
    np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)


def kernel_regression(x, y, h):
    """Nadaraya-Watson: a Gaussian kernel's weights over all pairs, then the weighted sum of y's rows."""
    k = np.exp(-((x[:, None, :] - x[None, :, :]) ** 2).sum(axis=2) / h)
    return (k[:, :, None] * y[None, :, :]).sum(axis=1)


def weighted_rows(w, z):
    """No reduction feeds the weights: a map of an argument."""
    s = np.sqrt(w) + 1.0
    return (s[:, :, None] * z[None, :, :]).sum(axis=1)


def nbody_and_r2(pos, mass):
    """r2 is returned too, so it must be stored: the statements stay as written."""
    d = pos[None, :, :] - pos[:, None, :]
    r2 = (d * d).sum(axis=2) + 0.0001
    w = mass[None, :] / (r2 * np.sqrt(r2))
    return (w[:, :, None] * d).sum(axis=1), r2


def pair_max(x, y):
    d = x[None, :, :] * x[:, None, :]
    m = d.max(axis=2)
    w = m * 2.0
    return (w[:, :, None] + y[None, :, :]).max(axis=1)


def int_pairs(a, b):
    d = a[None, :, :] - a[:, None, :]
    s = (d * d).sum(axis=2)
    w = s + 1
    return (w[:, :, None] * b[None, :, :]).sum(axis=1)


# ---------------------------------------------------------------- the nest: results and allocations


@pytest.mark.parametrize("n", [1, 2, 7, 40])
def test_nbody_array_form_matches_numpy(n):
    pos, mass = nbody.make_inputs(n)
    close(J(nbody.nbody_numpy)(pos, mass), nbody.nbody_numpy(pos, mass), rtol=1e-10, atol=1e-10)


def test_nbody_array_form_allocates_its_result_only():
    pos, mass = nbody.make_inputs(40)
    # d, r2 and w are computed per pair inside the nest: the (40, 40) intermediates are gone
    assert allocations(nbody.nbody_numpy, pos, mass) == 1


@pytest.mark.parametrize("k", [1, 2, 5])
def test_other_widths_of_the_last_axis(k):
    pos, mass = RNG.standard_normal((9, k)), RNG.uniform(0.5, 1.5, 9)
    close(J(nbody.nbody_numpy)(pos, mass), nbody.nbody_numpy(pos, mass), rtol=1e-10, atol=1e-10)


def test_kernel_regression_runs_as_one_nest():
    x, y = RNG.standard_normal((30, 4)), RNG.standard_normal((30, 2))
    close(J(kernel_regression)(x, y, 0.7), kernel_regression(x, y, 0.7), rtol=1e-10, atol=1e-10)
    assert allocations(kernel_regression, x, y, 0.7) == 1


def test_weights_from_a_map_of_an_argument():
    w, z = RNG.uniform(0, 2, (6, 8)), RNG.standard_normal((8, 3))
    close(J(weighted_rows)(w, z), weighted_rows(w, z))
    assert allocations(weighted_rows, w, z) == 1


def test_max_along_both_axes():
    x, y = RNG.standard_normal((7, 3)), RNG.standard_normal((7, 3))
    y[2, 1] = np.nan  # max propagates it down its column
    close(J(pair_max)(x, y), pair_max(x, y))
    assert allocations(pair_max, x, y) == 1


def test_integers_stay_exact():
    a, b = RNG.integers(-50, 50, (12, 3)), RNG.integers(-9, 9, (12, 2))
    got = J(int_pairs)(a, b)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, int_pairs(a, b))
    assert allocations(int_pairs, a, b) == 1


def test_an_intermediate_used_elsewhere_stays_an_array():
    pos, mass = nbody.make_inputs(10)
    got, r2 = J(nbody_and_r2)(pos, mass)
    want, want_r2 = nbody_and_r2(pos, mass)
    close(got, want, rtol=1e-10, atol=1e-10)
    close(r2, want_r2)
    assert allocations(nbody_and_r2, pos, mass) == 3


# ---------------------------------------------------------------- other shapes: the statements as written


def test_empty_inputs_give_numpy_shapes():
    for shape in [(0, 3), (5, 0), (0, 0)]:
        pos, mass = np.zeros(shape), np.ones(shape[0])
        close(J(nbody.nbody_numpy)(pos, mass), nbody.nbody_numpy(pos, mass))


def test_a_real_axis_of_one_broadcasts():
    # z has one row: broadcast against w's 5 columns, which the nest does not do, so the arrays run
    w, z = RNG.uniform(0, 2, (4, 5)), RNG.standard_normal((1, 3))
    close(J(weighted_rows)(w, z), weighted_rows(w, z))


def test_mismatched_shapes_raise_numpys_error():
    pos, mass = nbody.make_inputs(6)
    with pytest.raises(ValueError):
        nbody.nbody_numpy(pos, mass[:5])
    with pytest.raises(ValueError, match="broadcast"):
        J(nbody.nbody_numpy)(pos, mass[:5])
    w, z = RNG.uniform(0, 2, (4, 5)), RNG.standard_normal((6, 3))
    with pytest.raises(ValueError):
        weighted_rows(w, z)
    with pytest.raises(ValueError, match="broadcast"):
        J(weighted_rows)(w, z)


def test_strided_inputs():
    big = RNG.standard_normal((20, 6))
    pos, mass = big[::2, ::2], RNG.uniform(0.5, 1.5, 20)[::2]
    close(J(nbody.nbody_numpy)(pos, mass), nbody.nbody_numpy(pos, mass), rtol=1e-10, atol=1e-10)


def test_the_user_sees_no_loops_of_the_nest():
    pos, mass = nbody.make_inputs(5)
    assert J(nbody.nbody_numpy).inspect_parallel(pos, mass) == []


def test_the_gpu_runs_the_arrays_kernels():
    # one thread per row of the result (3000 for 3000 bodies) leaves most of a GPU idle: the gpu backend compiles
    # the else arm, the three kernels of the arrays (this needs NVRTC's source only, no GPU)
    pos, mass = nbody.make_inputs(5)
    src = lk.jit(nbody.nbody_numpy, backend="gpu").inspect_cuda(pos, mass)
    assert src.count("__global__") == 3


# ---------------------------------------------------------------- lanes and remainders, dtypes, ops


def two_producers(x, y, c):
    d = x[None, :, :] - x[:, None, :]
    s = (d * d).sum(axis=2)
    t = np.abs(d).max(axis=2)
    w = s * c + t
    return (w[:, :, None] * y[None, :, :]).sum(axis=1)


def float32_chain(x, y):
    d = x[None, :, :] - x[:, None, :]
    r = (d * d).sum(axis=2)
    w = np.sqrt(r + np.float32(1.0))
    return (w[:, :, None] * y[None, :, :]).sum(axis=1)


def prod_chain(x, y):
    d = x[None, :, :] * x[:, None, :]
    r = d.prod(axis=2)
    w = r * 0.5 + 1.0
    return (w[:, :, None] * y[None, :, :]).prod(axis=1)


def min_chain(x, y):
    d = x[None, :, :] + x[:, None, :]
    r = d.min(axis=2)
    w = r - 1.0
    return (w[:, :, None] - y[None, :, :]).min(axis=1)


def bool_chain(a, b):
    d = a[None, :, :] & a[:, None, :]
    r = d.any(axis=2)
    w = r | True
    return (w[:, :, None] & b[None, :, :]).any(axis=1)


@pytest.mark.parametrize("n", [1, 3, 6])
@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 9])
def test_lanes_and_remainders(n, k):
    # the last axis: fewer positions than the four lanes, exactly four, and more (the remainder loops)
    x, y = RNG.standard_normal((n, k)), RNG.standard_normal((n, k + 2))
    close(J(two_producers)(x, y, 0.25), two_producers(x, y, 0.25), rtol=1e-10, atol=1e-10)
    close(J(prod_chain)(x, y), prod_chain(x, y), rtol=1e-10, atol=1e-10)
    close(J(min_chain)(x, y), min_chain(x, y))
    xf, yf = x.astype(np.float32), y.astype(np.float32)
    close(J(float32_chain)(xf, yf), float32_chain(xf, yf), rtol=1e-5, atol=1e-5)
    a, b = x > 0.3, y > -0.2
    got = J(bool_chain)(a, b)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, bool_chain(a, b))


def test_each_chain_runs_as_one_nest():
    x, y = RNG.standard_normal((8, 3)), RNG.standard_normal((8, 2))
    assert allocations(two_producers, x, y, 0.25) == 1
    assert allocations(float32_chain, x.astype(np.float32), y.astype(np.float32)) == 1
    assert allocations(prod_chain, x, y) == 1
    assert allocations(min_chain, x, y) == 1
    assert allocations(bool_chain, x > 0, y > 0) == 1


# ---------------------------------------------------------------- what the pass leaves as written


def steps_reading_r2_again(pos, mass, steps):
    """The consumer reads r2 itself besides w (broadcast over (j, k): pos is square): r2 must be stored, and each
    step's must be its own (the nest would read the array it never fills, the last step's)."""
    for t in range(steps):
        d = pos[None, :, :] - pos[:, None, :]
        r2 = (d * d).sum(axis=2)
        w = mass[None, :] / (r2 + 1.0)
        a = (w[:, :, None] * d * r2).sum(axis=1)
        pos = pos + 0.1 * a
    return pos


def maybe_unassigned(a, b, y, mass, flag):
    if flag:
        y3 = y
    d = a[None, :, :] - b[:, None, :]
    r2 = (d * d).sum(axis=2) + 0.01
    w = mass[None, :] / (r2 * np.sqrt(r2))
    return (w[:, :, None] * y3).sum(axis=1)


def test_an_intermediate_read_twice_in_a_loop_is_stored_each_time():
    pos, mass = RNG.standard_normal((4, 4)), np.ones(4)
    for steps in (1, 2, 3):
        close(J(steps_reading_r2_again)(pos, mass, steps), steps_reading_r2_again(pos, mass, steps), rtol=1e-10,
              atol=1e-10)


def test_the_first_error_stays_first():
    # d's shapes clash before y3 is read: NumPy's ValueError, not the UnboundLocalError of y3
    args = (np.ones((5, 3)), np.ones((5, 2)), np.ones((5, 5, 3)), np.ones(5), False)
    with pytest.raises(ValueError):
        maybe_unassigned(*args)
    with pytest.raises(ValueError, match="broadcast"):
        J(maybe_unassigned)(*args)
    args = (np.ones((5, 3)), np.ones((5, 3)), np.ones((5, 5, 3)), np.ones(5), True)
    close(J(maybe_unassigned)(*args), maybe_unassigned(*args))


def ir_of(fn, *args):
    return J(fn).inspect_types(*args)


def test_the_printed_ir_shows_the_nest_and_the_statements_it_stands_for():
    pos, mass = nbody.make_inputs(5)
    ir = ir_of(nbody.nbody_numpy, pos, mass)
    nest, general = ir.split("if versioned nest ", 1)[1].split("\n    else:\n", 1)
    assert "prange(" in nest and nest.count("alloc") == 1  # the result only
    assert "for " in nest and "!proven" in nest
    assert general.count("alloc") == 3 and "reduce[add]" in general and "axis=2" in general and "axis=1" in general


def test_the_printed_ir_has_no_nest_where_the_pass_declines():
    pos, mass = RNG.standard_normal((4, 4)), np.ones(4)
    assert "versioned nest" not in ir_of(steps_reading_r2_again, pos, mass, 2)
    args = (np.ones((5, 3)), np.ones((5, 3)), np.ones((5, 5, 3)), np.ones(5), True)
    assert "versioned nest" not in ir_of(maybe_unassigned, *args)


def nbody_other_spelling(pos, mass):
    d = pos[np.newaxis, :, :] - pos[:, np.newaxis, :]
    r2 = np.sum(d ** 2, axis=-1) + 0.01
    w = mass / (r2 * np.sqrt(r2))
    return np.sum(w[..., None] * d, axis=1)


def test_the_same_chain_spelled_with_newaxis_ellipsis_and_np_sum():
    pos, mass = nbody.make_inputs(12)
    close(J(nbody_other_spelling)(pos, mass), nbody_other_spelling(pos, mass), rtol=1e-10, atol=1e-10)
    assert "if versioned nest" in ir_of(nbody_other_spelling, pos, mass)


def nbody_einsum(pos, mass):
    d = pos[None, :, :] - pos[:, None, :]
    r2 = np.einsum('ijk,ijk->ij', d, d) + 0.01
    w = mass[None, :] / (r2 * np.sqrt(r2))
    return np.einsum('ij,ijk->ik', w, d)


def test_the_same_chain_spelled_with_einsum():
    pos, mass = nbody.make_inputs(12)
    close(J(nbody_einsum)(pos, mass), nbody_einsum(pos, mass), rtol=1e-10, atol=1e-10)
    assert "if versioned nest" in ir_of(nbody_einsum, pos, mass)
