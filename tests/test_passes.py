"""The passes that see through calls (inline_calls.c): f.inspect_types(...) shows the IR after all passes,
compared as text (temporaries are numbered in order, so the text is stable); results against NumPy; allocations
counted by lk.runtime.stats().

The case that motivated it is Parakeet's regression benchmark, where covariance() is called twice."""
import re

import numpy as np
import pytest

import lorikeet as lk

RNG = np.random.default_rng(5)
_jitted = {}


def J(fn):
    d = _jitted.get(fn)
    if d is None:
        d = _jitted[fn] = lk.jit(fn)
    return d


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


def test_regression_inlines_covariance():
    x, y = RNG.standard_normal(100), RNG.standard_normal(100)
    ir = ir_of(fit_simple_regression, x, y)
    assert functions_in(ir) == ["fit_simple_regression.1"], ir  # no code is made for covariance any more
    assert "covariance" not in ir, ir


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
    return (((reduce[add](map(lambda $t2, $t3: ($t2 * $t3), a, a)) + reduce[add](map(lambda $t4, $t5: ($t4 * $t5), \
b, b))) + (sq.v * sq.v)) + sumsq_loop.2(a))

def sumsq_loop.2(a: array(float64, 1d, C)) -> float64:
    s = 0:float64  : float64
    for i in range(0:int64, (a.shape[0],)[0], 1:int64):
        sq.v = a[i]  : float64
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
    two_step.t = (reduce[add](a) * 2:float64)  : float64
    two_step.t.2 = (k * 2)  : float
    return ((two_step.t + float64(k)) + float64((two_step.t.2 + 1)))
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
