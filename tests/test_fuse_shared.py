"""Fusion of intermediates with several users (issue 15, ir/fuse_shared.c and the rule in ir/cost.c).

A named array that several maps or reductions over its space read is computed again inside each of them when
cost.c's rule says that beats storing it (a few arithmetic operations, sqrt), and stays an array otherwise (exp,
log, a gather, too many users). Observed as in test_fusion.py: lk.runtime.stats()['allocations'] per call and the
IR that f.inspect_types shows; every result compared with NumPy's on the suite's backend.
"""
import re
import sys

import numpy as np
import pytest

from helpers import J, allocations

sys.path.insert(0, __file__.rsplit("/tests/", 1)[0])
from benchmarks.workloads import blackscholes, nbody  # noqa: E402

RNG = np.random.default_rng(15)


def ir_of(fn, *args):
    return J(fn).inspect_types(*args)


def n_allocs(ir):
    return len(re.findall(r"(?<![A-Za-z0-9_])alloc\b", ir))


def close(got, exp, rtol=1e-12, atol=1e-12):
    if isinstance(exp, tuple):
        assert isinstance(got, tuple) and len(got) == len(exp)
        for g, e in zip(got, exp):
            close(g, e, rtol, atol)
        return
    g, e = np.asarray(got), np.asarray(exp)
    assert g.dtype == e.dtype and g.shape == e.shape, (g.dtype, g.shape, e.dtype, e.shape)
    np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)


# ---------------------------------------------------------------- cheap intermediates are recomputed


def squared_distance_loop(image, n):
    """The issue's example: d is used twice in each iteration."""
    s = 0.0
    for t in range(n):
        d = image[1, 2, :] - image[3, 4, :]
        s += np.sum(d * d)
    return s


def test_intermediate_read_twice_by_one_reduction_allocates_nothing_in_a_loop():
    image = RNG.standard_normal((5, 6, 300))
    close(J(squared_distance_loop)(image, 4), squared_distance_loop(image, 4), rtol=1e-13)
    assert allocations(squared_distance_loop, image, 4) == 0
    assert n_allocs(ir_of(squared_distance_loop, image, 4)) == 0


def two_reductions(a, b):
    d = a - b
    return np.sum(d * d) + np.max(d)


def test_two_reductions_of_one_intermediate_allocate_nothing():
    a, b = RNG.standard_normal(1000), RNG.standard_normal(1000)
    close(J(two_reductions)(a, b), two_reductions(a, b), rtol=1e-12)
    assert allocations(two_reductions, a, b) == 0
    ir = ir_of(two_reductions, a, b)
    assert n_allocs(ir) == 0 and ir.count("reduce[") == 2, ir


def two_maps(a, b, c):
    d = a * a + b * b
    return np.sqrt(d) * c, d + 1.0


def test_two_maps_of_one_intermediate_allocate_their_results_only():
    a, b, c = (RNG.standard_normal(500) for _ in range(3))
    close(J(two_maps)(a, b, c), two_maps(a, b, c))
    assert allocations(two_maps, a, b, c) == 2
    assert n_allocs(ir_of(two_maps, a, b, c)) == 2


def mean_centred(x):
    m = x - x.mean()
    return np.sum(m * m), np.sum(np.abs(m))


def test_a_reduction_inside_the_intermediate_is_computed_once():
    # x.mean() is hoisted into a temporary read by both copies of m, never computed again per user
    x = RNG.standard_normal(800)
    close(J(mean_centred)(x), mean_centred(x), rtol=1e-12)
    ir = ir_of(mean_centred, x)
    assert len(re.findall(r"reduce\[add\]\(", ir)) == 3, ir
    assert allocations(mean_centred, x) == 0


# ---------------------------------------------------------------- what stays stored


def expensive_shared(a):
    e = np.exp(a)
    return e * 2.0, e + 1.0


def test_an_expensive_intermediate_stays_one_array():
    a = RNG.standard_normal(400)
    close(J(expensive_shared)(a), expensive_shared(a))
    ir = ir_of(expensive_shared, a)
    assert ir.count("exp(") == 1 and n_allocs(ir) == 3, ir
    assert allocations(expensive_shared, a) == 3


def broadcast_user(a, b, m):
    d = a - b
    return d + m, d * 2.0   # d + m broadcasts d over m's rows: d's elements would be computed once a row


def test_an_intermediate_broadcast_into_a_larger_space_stays_one_array():
    a, b, m = RNG.standard_normal(50), RNG.standard_normal(50), RNG.standard_normal((30, 50))
    close(J(broadcast_user)(a, b, m), broadcast_user(a, b, m))
    assert allocations(broadcast_user, a, b, m) == 3


def four_users(a, b, c):
    d = (a * b + a * c) - b * c
    return d + 1.0, d * 2.0, d - 3.0, d / 4.0


def five_users(a, b, c):
    d = (a * b + a * c) - b * c
    return d + 1.0, d * 2.0, d - 3.0, d / 4.0, d * d


def test_the_rule_weighs_the_body_against_its_users():
    # d's body is 5 operations of cost.c's rule: recomputed for 4 users (3 x 5 <= 16), stored for 5 (4 x 5 > 16)
    a, b, c = (RNG.standard_normal(300) for _ in range(3))
    close(J(four_users)(a, b, c), four_users(a, b, c))
    close(J(five_users)(a, b, c), five_users(a, b, c))
    assert allocations(four_users, a, b, c) == 4
    assert allocations(five_users, a, b, c) == 6


def read_elsewhere(a, b):
    d = a - b
    return d * 2.0, d[0]


def test_an_intermediate_read_other_than_by_a_loop_stays_one_array():
    a, b = RNG.standard_normal(40), RNG.standard_normal(40)
    close(J(read_elsewhere)(a, b), read_elsewhere(a, b))
    assert allocations(read_elsewhere, a, b) == 2


# ---------------------------------------------------------------- the order of effects is kept


def written_in_between(a, b):
    d = a + b
    a[0] = 100.0
    return d * 2.0, d * 3.0


def test_a_write_to_an_input_after_the_intermediate_is_not_seen_by_it():
    a, b = RNG.standard_normal(20), RNG.standard_normal(20)
    a1, a2 = a.copy(), a.copy()
    close(J(written_in_between)(a1, b), written_in_between(a2, b))
    np.testing.assert_array_equal(a1, a2)


def shape_error_first(a, b, i, j):
    d = a - b                # raises ValueError when a and b do not broadcast
    q = i // j               # raises ZeroDivisionError when j == 0
    return d * q, d + 1.0


def test_the_intermediates_error_comes_before_what_follows_it():
    a, b = RNG.standard_normal(5), RNG.standard_normal(4)
    with pytest.raises(ValueError):
        shape_error_first(a, b, 1, 0)
    with pytest.raises(ValueError):
        J(shape_error_first)(a, b, 1, 0)
    ir = ir_of(shape_error_first, a, b, 1, 0)
    assert "bcast_shape[0](a, b)\n" in ir, ir  # the check stays where d was assigned
    a, b = RNG.standard_normal(5), RNG.standard_normal(5)
    close(J(shape_error_first)(a, b, 7, 2), shape_error_first(a, b, 7, 2))


def test_the_kept_check_lets_the_call_run_in_pieces():
    # ir/split_plan.c: the check takes each piece's rows, so a call too large for a device may still be split
    a, b = RNG.standard_normal((8, 3)), RNG.standard_normal((8, 3))
    p = J(shape_error_first).inspect_split(a, b, 7, 2)
    assert p["splittable"] and p["args"][:2] == ["rows", "rows"], p


def reassigned_input(a, b):
    d = a * b
    a = a + 1.0
    return d + a, d - a


def test_an_input_reassigned_after_the_intermediate_keeps_the_old_value():
    a, b = RNG.standard_normal(30), RNG.standard_normal(30)
    close(J(reassigned_input)(a, b), reassigned_input(a, b))


# ---------------------------------------------------------------- the benchmarks' array forms


def test_nbody_array_form_keeps_only_the_pair_sums():
    pos, mass = nbody.make_inputs(40)
    close(J(nbody.nbody_numpy)(pos, mass), nbody.nbody_numpy(pos, mass), rtol=1e-10, atol=1e-10)
    # d (n, n, 3) is recomputed in its two users; test_reduce_nests.py: the result is all that remains
    assert allocations(nbody.nbody_numpy, pos, mass) == 1  # and reduce_nests.c keeps r2 and w per pair


def test_black_scholes_array_form_stores_only_what_is_expensive():
    args = blackscholes.make_inputs(1000)
    close(J(blackscholes.black_scholes_numpy)(*args), blackscholes.black_scholes_numpy(*args), rtol=1e-10,
          atol=1e-10)
    # sqrt_t (sqrt, read by 4 loops), d1 (log), the two polynomials (exp), exp_rt (exp), call, put; d2 and
    # cnd_d1, cnd_d2 are recomputed
    assert allocations(blackscholes.black_scholes_numpy, *args) == 7


def clash_then_empty(a, b, e):
    d = (a - b) * e.max(axis=0)   # the reduction is a leaf after a check that may raise: not hoisted before it
    return d + 1.0, d * 2.0


def test_a_reduction_after_a_shape_check_is_not_hoisted_before_it():
    # (NumPy checks a - b first; fuse.c already checks it with the product's shapes, after e.max: the same class)
    a, b, e = RNG.standard_normal(5), RNG.standard_normal(4), np.zeros((0, 5))
    with pytest.raises(ValueError):
        clash_then_empty(a, b, e)
    with pytest.raises(ValueError):
        J(clash_then_empty)(a, b, e)
    assert "    d = " in ir_of(clash_then_empty, a, b, e)
    e = RNG.standard_normal((3, 5))
    close(J(clash_then_empty)(a, a, e), clash_then_empty(a, a, e))
