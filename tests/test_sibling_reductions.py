"""Sibling reductions in one pass (issue 15, ir/sibling_reductions.c).

Reductions of everything over the same space in a run of statements (`x.mean()` and `y.mean()`, or the two
covariances of a regression) are evaluated together as a tuple marked one_pass, which the cpu and openmp backends
run as one loop with an accumulator each: the data is read once instead of once per reduction. What is observed:
the IR that f.inspect_types shows (how many passes over the data a call makes), every result compared with
NumPy's or CPython's on the suite's backend, and the first error being the one the program raises first.
"""
import re
import sys

import numpy as np
import pytest

from helpers import J

sys.path.insert(0, __file__.rsplit("/tests/", 1)[0])
from benchmarks.workloads import regression  # noqa: E402

RNG = np.random.default_rng(17)


def ir_of(fn, *args):
    return J(fn).inspect_types(*args)


def groups(ir):
    """The one_pass tuples of the IR, each as the list of its reductions' operations."""
    out = []
    for line in ir.splitlines():
        if "one_pass (" in line:
            out.append(re.findall(r"reduce\[(\w+)\]", line))
    return out


def passes(ir):
    """Loops over data a call runs for its reductions of everything: a one_pass tuple is one."""
    lone = sum(len(re.findall(r"reduce\[\w+\]\((?!.*axis=)", line)) for line in ir.splitlines()
               if "one_pass (" not in line)
    return lone + len(groups(ir))


def close(got, exp, rtol=1e-12):
    assert isinstance(got, tuple) and len(got) == len(exp)
    for g, e in zip(got, exp):
        assert np.asarray(g).dtype == np.asarray(e).dtype, (g, e)
        np.testing.assert_allclose(g, e, rtol=rtol)


# ---------------------------------------------------------------- the regression reads each input twice


def test_parakeet_regression_reads_each_input_twice():
    x, y = regression.make_inputs(100_001)
    ir = ir_of(regression.fit_simple_regression, x, y)
    # the means (x and y), then both covariances (x and y, x and x): two passes where there were four
    assert groups(ir) == [["add", "add"], ["add", "add"]]
    assert passes(ir) == 2
    close(J(regression.fit_simple_regression)(x, y), regression.fit_simple_regression(x, y), rtol=1e-9)


def test_numpy_form_regression_shares_its_passes_too():
    x, y = regression.make_inputs(50_000)
    ir = ir_of(regression.regression_numpy, x, y)
    assert len(groups(ir)) == 2
    close(J(regression.regression_numpy)(x, y), regression.regression_numpy(x, y), rtol=1e-9)


def stats(a, b):
    return a.sum(), b.max(), a.min(), (a * b).sum()


@pytest.mark.parametrize("n", [1, 2, 7, 1000, 100_003])
def test_several_operations_in_one_pass(n):
    a, b = RNG.standard_normal(n), RNG.standard_normal(n)
    assert groups(ir_of(stats, a, b)) == [["add", "max", "min", "add"]]
    close(J(stats)(a, b), stats(a, b))


def test_integer_and_float_reductions_keep_their_types():
    a = RNG.integers(-1000, 1000, 9999).astype(np.int32)
    b = RNG.standard_normal(9999).astype(np.float32)

    def f(a, b):
        return a.sum(), b.sum(), a.max(), b.min()

    close(J(f)(a, b), f(a, b), rtol=1e-5)


def test_two_dimensional_inputs_of_any_layout():
    a = RNG.standard_normal((301, 17))
    b = np.asfortranarray(RNG.standard_normal((301, 17)))

    def f(a, b):
        return a.sum(), (a * b).sum(), b.max()

    assert len(groups(ir_of(f, a, b))) == 1
    close(J(f)(a, b), f(a, b))
    close(J(f)(a[::2], b[::2]), f(a[::2], b[::2]))


def test_spaces_that_differ_at_run_time_are_reduced_apart():
    """The grouping is decided on ranks; lengths that differ are each reduced in its own loop."""
    a, b = RNG.standard_normal(1001), RNG.standard_normal(17)

    def f(a, b):
        return a.sum(), b.sum(), b.min()

    close(J(f)(a, b), f(a, b))
    close(J(f)(b, a), f(b, a))


def test_broadcast_inputs_in_a_group():
    a = RNG.standard_normal((40, 30))
    r = RNG.standard_normal(30)

    def f(a, r):
        return (a * r).sum(), (a - r).max()

    close(J(f)(a, r), f(a, r))


# ---------------------------------------------------------------- what must not move


def test_a_write_between_keeps_the_reductions_apart():
    def f(x):
        s = x.sum()
        x[0] = 100.0
        t = x.sum()
        return s, t

    x = RNG.standard_normal(100)
    assert groups(ir_of(f, x.copy())) == []
    close(J(f)(x.copy()), f(x.copy()))


def test_a_reassigned_input_is_read_after_its_assignment():
    def f(x, y):
        s = x.sum()
        x = y
        t = x.sum()
        return s, t

    x, y = RNG.standard_normal(50), RNG.standard_normal(50)
    assert groups(ir_of(f, x, y)) == []
    close(J(f)(x, y), f(x, y))


def test_a_reduction_in_one_arm_is_not_moved():
    def f(x, y, c):
        s = x.sum()
        t = y.sum() if c else 0.0
        return s, t

    x, y = RNG.standard_normal(50), RNG.standard_normal(50)
    assert groups(ir_of(f, x, y, True)) == []
    close(J(f)(x, y, True), f(x, y, True))
    close(J(f)(x, y, False), f(x, y, False))


def test_a_reduction_that_reads_an_earlier_result_starts_the_next_pass():
    def f(x):
        m = x.mean()
        v = ((x - m) * (x - m)).mean()
        return m, v

    x = RNG.standard_normal(1000)
    ir = ir_of(f, x)
    assert groups(ir) == []
    assert passes(ir) == 2
    close(J(f)(x), (x.mean(), x.var()))


# ---------------------------------------------------------------- the first error stays the first


def test_the_first_members_error_comes_first():
    def f(a, b, c):
        return (a + b).sum(), c.max()

    a, b, c = np.ones(3), np.ones(4), np.ones(0)
    assert len(groups(ir_of(f, a, b, c))) == 1
    with pytest.raises(ValueError, match="broadcast"):
        J(f)(a, b, c)
    with pytest.raises(ValueError, match="zero-size"):
        J(f)(a, a, c)


def test_a_reduction_that_may_raise_is_not_moved_before_an_earlier_error():
    def f(x, y, n, d):
        s = x.sum()
        q = n // d
        m = y.max()
        return s, q, m

    x, y = RNG.standard_normal(10), np.ones(0)
    assert groups(ir_of(f, x, y, 7, 0)) == []
    with pytest.raises(ZeroDivisionError):
        J(f)(x, y, 7, 0)
    with pytest.raises(ValueError, match="zero-size"):
        J(f)(x, y, 7, 2)


def test_a_reduction_that_cannot_raise_moves_past_one_that_may():
    def f(x, y, n, d):
        s = x.sum()
        q = n // d
        t = y.sum()
        return s, q, t

    x, y = RNG.standard_normal(10), RNG.standard_normal(10)
    assert groups(ir_of(f, x, y, 7, 2)) == [["add", "add"]]
    assert J(f)(x, y, 7, 2) == pytest.approx(f(x, y, 7, 2), rel=1e-12)
    with pytest.raises(ZeroDivisionError):
        J(f)(x, y, 7, 0)
