"""Pairwise Euclidean distances sqrt(|q|^2 - 2 q p^T + |p|^2) between MNIST-shaped vectors (784 features,
float32), a set against itself: a matrix product plus row norms broadcast against each other. The squared
distance is clipped at 0 before the square root (as scikit-learn's euclidean_distances does): on the diagonal
it is 0 up to rounding, and a rounding below 0 would make a NaN that depends on the order of the sums."""
import numpy as np

from ..spec import Workload


def pairwise_dist(q, p):
    qq = (q * q).sum(axis=1)
    pp = (p * p).sum(axis=1)
    return np.sqrt(np.maximum(qq[:, None] - 2.0 * np.dot(q, p.T) + pp[None, :], 0.0))


def pairwise_numpy(q, p):
    qq = np.einsum("ij,ij->i", q, q)
    pp = np.einsum("ij,ij->i", p, p)
    d2 = qq[:, None] - 2.0 * (q @ p.T) + pp[None, :]
    return np.sqrt(np.maximum(d2, 0.0))


def make_inputs(n):
    q = np.random.default_rng(784).random((n, 784), dtype=np.float32)
    return q, q


WORKLOAD = Workload(
    name="pairwise_dist", title="pairwise distances, MNIST-shaped", kernel=pairwise_dist,
    reference=pairwise_numpy, make_inputs=make_inputs, sizes={"quick": 1000, "full": 2000},
    describe=lambda n: f"{n}x784 float32 against itself", python_modes=("quick", "full"), rtol=1e-3, atol=5e-2)
