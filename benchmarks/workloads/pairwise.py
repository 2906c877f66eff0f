"""Pairwise Euclidean distances sqrt(|q|^2 - 2 q p^T + |p|^2) between two sets of MNIST-shaped vectors
(784 features, float64): a matrix product plus row norms broadcast against each other."""
import numpy as np

from ..spec import Workload


def pairwise_dist(q, p):
    qq = (q * q).sum(axis=1)
    pp = (p * p).sum(axis=1)
    return np.sqrt(qq[:, None] - 2.0 * np.dot(q, p.T) + pp[None, :])


def pairwise_numpy(q, p):
    qq = np.einsum("ij,ij->i", q, q)
    pp = np.einsum("ij,ij->i", p, p)
    d2 = qq[:, None] - 2.0 * (q @ p.T) + pp[None, :]
    return np.sqrt(d2)


def make_inputs(n):
    rng = np.random.default_rng(784)
    return rng.random((n, 784)), rng.random((n, 784))


WORKLOAD = Workload(
    name="pairwise_dist", title="pairwise distances, MNIST-shaped", kernel=pairwise_dist,
    reference=pairwise_numpy, make_inputs=make_inputs, sizes={"quick": 1000, "full": 2000},
    describe=lambda n: f"{n}x784 vs {n}x784 float64", python_modes=("quick", "full"), rtol=1e-9, atol=1e-9)
