"""Parakeet's simple linear regression via covariance (benchmarks/simple_regression.py of iskandr/parakeet),
on 10M float64 points. Array expressions and means, through a helper function."""
import numpy as np

from ..spec import Workload


def covariance(x, y):
    return ((x - x.mean()) * (y - y.mean())).mean()


def fit_simple_regression(x, y):
    slope = covariance(x, y) / covariance(x, x)
    offset = y.mean() - slope * x.mean()
    return slope, offset


def regression_numpy(x, y):
    xm = x.mean()
    ym = y.mean()
    xc = x - xm
    slope = np.dot(xc, y - ym) / np.dot(xc, xc)
    return slope, ym - slope * xm


def make_inputs(n):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(n)
    y = 903.29 * x + 102.1 + rng.standard_normal(n)
    return x, y


WORKLOAD = Workload(
    name="regression", title="Parakeet simple regression (covariance)", kernel=fit_simple_regression,
    helpers=(covariance,), reference=regression_numpy, make_inputs=make_inputs,
    sizes={"quick": 10_000_000, "full": 10_000_000}, describe=lambda n: f"{n:,} float64 x2",
    bytes_moved=lambda n: 16 * n, python_modes=("quick", "full"), rtol=1e-8)
