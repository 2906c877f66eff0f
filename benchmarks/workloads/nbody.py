"""One n-body acceleration step: for every body, the softened gravitational pull of all the others
(a[i] = sum_j m_j (x_j - x_i) / (|x_j - x_i|^2 + eps^2)^1.5), written as the double loop over pairs."""
import math

import numpy as np

from ..spec import Workload

SOFTENING = 0.01


def nbody_accel(pos, mass):
    n = pos.shape[0]
    acc = np.zeros((n, 3))
    eps2 = SOFTENING * SOFTENING
    for i in range(n):
        xi = pos[i, 0]
        yi = pos[i, 1]
        zi = pos[i, 2]
        ax = 0.0
        ay = 0.0
        az = 0.0
        for j in range(n):
            dx = pos[j, 0] - xi
            dy = pos[j, 1] - yi
            dz = pos[j, 2] - zi
            r2 = dx * dx + dy * dy + dz * dz + eps2
            w = mass[j] / (r2 * math.sqrt(r2))
            ax += w * dx
            ay += w * dy
            az += w * dz
        acc[i, 0] = ax
        acc[i, 1] = ay
        acc[i, 2] = az
    return acc


def nbody_numpy(pos, mass):
    d = pos[None, :, :] - pos[:, None, :]
    r2 = (d * d).sum(axis=2) + SOFTENING * SOFTENING
    w = mass[None, :] / (r2 * np.sqrt(r2))
    return (w[:, :, None] * d).sum(axis=1)


def make_inputs(n):
    rng = np.random.default_rng(13)
    return rng.standard_normal((n, 3)), rng.uniform(0.5, 1.5, n)


WORKLOAD = Workload(
    name="nbody", title="n-body acceleration step (all pairs)", kernel=nbody_accel, reference=nbody_numpy,
    make_inputs=make_inputs, sizes={"quick": 1000, "full": 3000}, describe=lambda n: f"{n} bodies float64",
    python_modes=(), rtol=1e-7, atol=1e-7)


ARRAY_WORKLOAD = Workload(
    name="nbody_array", title="n-body acceleration step, NumPy array form (Numba: the loop form)",
    kernel=nbody_numpy, reference=nbody_numpy, make_inputs=make_inputs, sizes={"quick": 1000, "full": 3000},
    describe=lambda n: f"{n} bodies float64", python_modes=(), rtol=1e-7, atol=1e-7, peer_kernel=nbody_accel,
    note="lorikeet compiles the NumPy form (`d` and `r2` each used twice); Numba runs the loop form of `nbody` "
         "(issue 15's comparison).")
