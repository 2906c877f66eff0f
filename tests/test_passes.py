"""The passes that see through calls and share repeated work (inline_calls.c, cse.c): f.inspect_types(...) shows
the IR after all passes, compared as text (temporaries are numbered in order, so the text is stable); results
against NumPy; allocations counted by lk.runtime.stats().

The case that motivated them is Parakeet's regression benchmark: two calls of covariance() and two more means
made 9 passes over the arrays, where 4 will do (x.mean, y.mean, and the two sums of products)."""
import re

import numpy as np
import pytest

import lorikeet as lk
from helpers import J

RNG = np.random.default_rng(5)


def allocations(fn, *args):
    """Buffers allocated by one call of the compiled fn (compiled, and run once, beforehand)."""
    J(fn)(*args)
    before = lk.runtime.stats()["allocations"]
    J(fn)(*args)
    return lk.runtime.stats()["allocations"] - before


def ir_of(fn, *args):
    return J(fn).inspect_types(*args)


def functions_in(ir):
    return re.findall(r"^def ([^(]+)\(", ir, flags=re.M)


def close(got, exp, rtol=1e-12):
    np.testing.assert_allclose(np.asarray(got), np.asarray(exp), rtol=rtol, atol=0)


# ---------------------------------------------------------------- the regression benchmark


def covariance(x, y):
    return ((x - x.mean()) * (y - y.mean())).mean()


def fit_simple_regression(x, y):
    slope = covariance(x, y) / covariance(x, x)
    offset = y.mean() - slope * x.mean()
    return slope, offset


FIT_IR = """\
def fit_simple_regression.1(x: array(float64, 1d, C), y: array(float64, 1d, C)) -> (float64, float64):
    $t22 = one_pass (parallel reduce[add](x), parallel reduce[add](y))  : (float64, float64)
    $t17 = ($t22[0] / float64(x.shape[0]))  : float64
    $t19 = ($t22[1] / float64(y.shape[0]))  : float64
    $t23 = one_pass (parallel reduce[add](map(lambda $t6, $t7, $t8, $t9: (($t6 - $t7) * ($t8 - $t9)), x, $t17, y, \
$t19)), parallel reduce[add](map(lambda $t12, $t13: (($t12 - $t13) * ($t12 - $t13)), x, $t17)))  : (float64, float64)
    slope = (($t23[0] / float64(bcast_shape[0](x, y))) / ($t23[1] / float64(bcast_shape[0](x, x))))  : float64
    offset = ($t19 - (slope * $t17))  : float64
    return (slope, offset)
"""


def test_regression_computes_each_mean_once():
    x, y = RNG.standard_normal(100), RNG.standard_normal(100)
    ir = ir_of(fit_simple_regression, x, y)
    assert ir == FIT_IR, ir
    # 4 reductions in 2 passes over the arrays: x.mean with y.mean, then the two fused sums of products
    assert len(re.findall(r"reduce\[add\]\(", ir)) == 4
    assert len(re.findall(r"one_pass \(", ir)) == 2
    assert functions_in(ir) == ["fit_simple_regression.1"]  # covariance was inlined: no code is made for it


def test_regression_fuses_and_agrees_with_numpy():
    x = RNG.standard_normal(10_000)
    y = 3.5 * x + 1.0 + RNG.standard_normal(10_000)
    slope, offset = J(fit_simple_regression)(x, y)
    es, eo = fit_simple_regression(x, y)
    close(slope, es, 1e-10)
    close(offset, eo, 1e-10)
    assert allocations(fit_simple_regression, x, y) == 0  # the maps fuse into their reductions


# ---------------------------------------------------------------- inline_calls.c


def sq(v):
    return v * v


def norm2(a):
    return sq(a).sum()


def sumsq_loop(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += sq(a[i])
    return s


def several_sites(a, b):
    return norm2(a) + norm2(b) + sq(a[0]) + sumsq_loop(a)


SEVERAL_SITES_IR = """\
def several_sites.1(a: array(float64, 1d, C), b: array(float64, 1d, C)) -> float64:
    sq.v = a[0:int64]  : float64
    $t7 = one_pass (parallel reduce[add](map(lambda $t2: ($t2 * $t2), a)), parallel reduce[add](map(lambda $t4: ($t4 * $t4), \
b)))  : (float64, float64)
    return ((($t7[0] + $t7[1]) + (sq.v * sq.v)) + sumsq_loop.5(a))

def sumsq_loop.5(a: array(float64, 1d, C)) -> float64:
    s = 0:float64  : float64
    for i in range(0, (a.shape[0],)[0], 1) proven:
        sq.v = a[i]!proven  : float64
        s = (s + (sq.v * sq.v))  : float64
    return s
"""


def test_small_callees_are_inlined_where_called_and_others_stay_calls():
    # norm2 (and sq inside it) is inlined; sumsq_loop has a loop and stays a call, with sq inlined into it; sq's
    # argument a[0] may raise, so it is bound to a variable assigned before the statement
    a, b = RNG.standard_normal(50), RNG.standard_normal(7)
    ir = ir_of(several_sites, a, b)
    assert ir == SEVERAL_SITES_IR, ir
    close(J(several_sites)(a, b), several_sites(a, b))


def two_step(u, v):
    t = u * 2.0
    return t + v


def uses_two_step(a, k):
    return two_step(a.sum(), k) + two_step(k, 1.0)


USES_TWO_STEP_IR = """\
def uses_two_step.1(a: array(float64, 1d, C), k: float) -> float64:
    two_step.t = (parallel reduce[add](a) * 2:float64)  : float64
    two_step.t.2 = (k * 2)  : float
    return ((two_step.t + k) + float64((two_step.t.2 + 1)))
"""


def test_straight_line_callee_is_copied_before_the_statement():
    a = RNG.standard_normal(20)
    ir = ir_of(uses_two_step, a, 1.5)
    assert ir == USES_TWO_STEP_IR, ir
    close(J(uses_two_step)(a, 1.5), uses_two_step(a, 1.5))


def map_of_helper(x):
    return lk.map(lambda v: sq(v) + 1.0, x)


def test_calls_in_a_map_body_are_inlined():
    x = RNG.standard_normal(30)
    ir = ir_of(map_of_helper, x)
    assert functions_in(ir) == ["map_of_helper.1"], ir
    assert "map(lambda $t3: (($t3 * $t3) + 1:float64), x, out=$t4)" in ir, ir
    close(J(map_of_helper)(x), x * x + 1.0)


def has_loop(a):
    s = 0.0
    for v in a:
        s += v
    return s


def calls_has_loop(a):
    return has_loop(a) * 2.0


def test_callee_with_a_loop_stays_a_call():
    a = RNG.standard_normal(10)
    ir = ir_of(calls_has_loop, a)
    assert "has_loop.2(a)" in ir and functions_in(ir) == ["calls_has_loop.1", "has_loop.2"], ir
    close(J(calls_has_loop)(a), calls_has_loop(a))


# ---------------------------------------------------------------- cse.c


def normalise(x):
    return (x - x.min()) / (x.max() - x.min())


NORMALISE_IR = """\
def normalise.1(x: array(float64, 1d, C)) -> array(float64, 1d, C):
    $t18 = one_pass (parallel reduce[min](x), parallel reduce[max](x))  : (float64, float64)
    $t13 = $t18[0]  : float64
    $t14 = ($t18[1] - $t13)  : float64
    $t15 = alloc array(float64, 1d, C) (bcast_shape[0](x, $t13, $t14))  : array(float64, 1d, C)
    parallel map(lambda $t9, $t10, $t12: (($t9 - $t10) / $t12), x, $t13, $t14, out=$t15)
    return $t15
"""


def test_repeated_min_is_computed_once():
    x = RNG.standard_normal(40)
    ir = ir_of(normalise, x)
    assert ir == NORMALISE_IR, ir
    close(J(normalise)(x), normalise(x))
    assert allocations(normalise, x) == 1  # only the result


def mean_named_then_repeated(x):
    m = x.mean()
    return (x - x.mean()) * m


def test_a_variable_holding_the_value_is_reused():
    x = RNG.standard_normal(40)
    ir = ir_of(mean_named_then_repeated, x)
    assert len(re.findall(r"reduce\[add\]\(x\)", ir)) == 1, ir
    close(J(mean_named_then_repeated)(x), mean_named_then_repeated(x))


def written_between(a):
    s1 = a.sum()
    a[0] = 5.0
    s2 = a.sum()
    return s1 + s2 + a.sum()


WRITTEN_BETWEEN_IR = """\
def written_between.1(a: array(float64, 1d, C)) -> float64:
    s1 = parallel reduce[add](a)  : float64
    a[0:int64] = 5:float64
    s2 = parallel reduce[add](a)  : float64
    return ((s1 + s2) + s2)
"""


def test_a_store_between_two_sums_keeps_both():
    a = RNG.standard_normal(10)
    ir = ir_of(written_between, a.copy())
    assert ir == WRITTEN_BETWEEN_IR, ir
    b, c = a.copy(), a.copy()
    close(J(written_between)(b), written_between(c))


def zeros_twice(n):
    a = np.zeros(n)
    b = np.zeros(n)
    a[0] = 1.0
    return a, b


def test_two_allocations_stay_two_arrays():
    ir = ir_of(zeros_twice, 3)
    assert len(re.findall(r"\balloc\b", ir)) == 2, ir
    a, b = J(zeros_twice)(3)
    assert a is not b and a[0] == 1.0 and b[0] == 0.0
    assert allocations(zeros_twice, 3) == 2


def sums_in_branches(a, k):
    if k > 0:
        s = a.sum() * 2.0
    else:
        s = a.sum() * 3.0
    return s + a.sum()


def test_nothing_is_shared_between_branches():
    a = RNG.standard_normal(10)
    ir = ir_of(sums_in_branches, a, 1)
    assert len(re.findall(r"reduce\[add\]\(a\)", ir)) == 3, ir
    for k in (1, -1):
        close(J(sums_in_branches)(a, k), sums_in_branches(a, k))


def sum_in_one_arm(a, k):
    return (a.sum() if k > 0 else 0.0) + a.sum()


def test_an_occurrence_in_one_arm_is_not_moved_out_of_it():
    # the first occurrence is evaluated on some paths only: it cannot be the one computed for both
    a = RNG.standard_normal(10)
    ir = ir_of(sum_in_one_arm, a, 1)
    assert len(re.findall(r"reduce\[add\]\(a\)", ir)) == 2, ir
    assert not re.search(r"^\s+\$t\d+ = ", ir, flags=re.M), ir
    for k in (1, -1):
        close(J(sum_in_one_arm)(a, k), sum_in_one_arm(a, k))


def sum_then_in_one_arm(a, k):
    return a.sum() + (a.sum() if k > 0 else 0.0)


def test_a_later_occurrence_in_one_arm_reads_the_value():
    a = RNG.standard_normal(10)
    ir = ir_of(sum_then_in_one_arm, a, 1)
    assert len(re.findall(r"reduce\[add\]\(a\)", ir)) == 1, ir
    for k in (1, -1):
        close(J(sum_then_in_one_arm)(a, k), sum_then_in_one_arm(a, k))


# ---------------------------------------------------------------- version_loops.c


def shifted_products(a, b, n):
    s = 0.0
    for i in range(1, n):
        s += a[i - 1] * b[i + 1]
    return s


# The bounds test is ordinary int64 IR: the atom n in the range where n - 2 cannot wrap, then the highest index
# of each array below its length (the lowest, 0 for a, is a constant); the copy run when it holds has both
# accesses proven (no wrap, no check), the other is the loop as written.
SHIFTED_IR = """\
def shifted_products.1(a: array(float64, 1d, C), b: array(float64, 1d, C), n: int) -> float64:
    s = 0:float64  : float64
    if versioned ((n >= -9223372036854775806) and ((n - 2) < a.shape[0]) and (n < b.shape[0])):
        for i in range(1, n, 1) proven:
            s = (s + (a[(i - 1)]!proven * b[(i + 1)]!proven))  : float64
    else:
        for i in range(1, n, 1):
            s = (s + (a[(i - 1)] * b[(i + 1)]))  : float64
    return s
"""


def test_a_loop_is_versioned_on_its_bounds_in_the_ir():
    a, b = RNG.standard_normal(8), RNG.standard_normal(8)
    ir = ir_of(shifted_products, a, b, 7)
    assert ir == SHIFTED_IR, ir
    for n in (0, 1, 2, 7):  # the test holds
        close(J(shifted_products)(a, b, n), shifted_products(a, b, n))


def neighbour_products(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i - 1] * x[i]
    return s


def test_accesses_that_need_no_test_are_proven_without_a_second_copy():
    # x[i] for i in range(len(x)) holds whatever x is; x[i - 1] is x[-1] at i = 0 and keeps its check and wrap
    x = RNG.standard_normal(9)
    ir = ir_of(neighbour_products, x)
    assert "if versioned" not in ir
    assert "for i in range(0, (x.shape[0],)[0], 1) proven:" in ir
    assert "s = (s + (x[(i - 1)] * x[i]!proven))  : float64" in ir
    close(J(neighbour_products)(x), neighbour_products(x))


def read_in_dead_code(a, n):
    s = 0.0
    for i in range(n):
        s += a[i + 1]
        continue
        s += a[i + k]  # never runs: k has no value before the loop
    k = 1
    return s + k


def test_the_bounds_test_reads_no_variable_of_code_that_cannot_run():
    a = RNG.standard_normal(8)
    ir = ir_of(read_in_dead_code, a, 7)
    test = line_with_prefix(ir, "if versioned ")
    assert test == "if versioned (n < a.shape[0]):", test
    assert "s = (s + a[(i + k)])  : float64" in ir  # checked in both copies
    close(J(read_in_dead_code)(a, 7), read_in_dead_code(a, 7))


def line_with_prefix(ir, prefix):
    lines = [l.strip() for l in ir.splitlines() if l.strip().startswith(prefix)]
    assert len(lines) == 1, lines
    return lines[0]


def rows_scaled(out, x, n):
    for i in range(n):
        for j in range(x.shape[1]):
            out[i, j] = x[i, j] * 2.0


def test_nested_loops_are_versioned_once_at_the_outer_loop():
    out, x = np.zeros((4, 3)), RNG.standard_normal((4, 3))
    ir = ir_of(rows_scaled, out, x, 4)
    assert ir.count("if versioned") == 1
    assert ir.count(") proven:") == 2  # both loops of the copy
    assert ir.count("]!proven") == 2
    J(rows_scaled)(out, x, 4)
    close(out, x * 2.0)
