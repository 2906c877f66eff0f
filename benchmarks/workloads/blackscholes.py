"""Black-Scholes call and put prices of 10M options (the classic Numba/NumbaPro example): a loop over options
calling a scalar cumulative-normal helper (the Abramowitz-Stegun polynomial), beside NumPy's array version."""
import math

import numpy as np

from ..spec import Workload

RISKFREE = 0.02
VOLATILITY = 0.30
A1 = 0.31938153
A2 = -0.356563782
A3 = 1.781477937
A4 = -1.821255978
A5 = 1.330274429
RSQRT2PI = 0.39894228040143267794


def cnd(d):
    K = 1.0 / (1.0 + 0.2316419 * abs(d))
    ret_val = RSQRT2PI * math.exp(-0.5 * d * d) * (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5)))))
    if d > 0:
        ret_val = 1.0 - ret_val
    return ret_val


def black_scholes(S, X, T, R, V):
    n = S.shape[0]
    call = np.empty(n)
    put = np.empty(n)
    for i in range(n):
        sqrt_t = math.sqrt(T[i])
        d1 = (math.log(S[i] / X[i]) + (R + 0.5 * V * V) * T[i]) / (V * sqrt_t)
        d2 = d1 - V * sqrt_t
        cnd_d1 = cnd(d1)
        cnd_d2 = cnd(d2)
        exp_rt = math.exp(-R * T[i])
        call[i] = S[i] * cnd_d1 - X[i] * exp_rt * cnd_d2
        put[i] = X[i] * exp_rt * (1.0 - cnd_d2) - S[i] * (1.0 - cnd_d1)
    return call, put


def cnd_numpy(d):
    K = 1.0 / (1.0 + 0.2316419 * np.abs(d))
    ret_val = RSQRT2PI * np.exp(-0.5 * d * d) * (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5)))))
    return np.where(d > 0, 1.0 - ret_val, ret_val)


def black_scholes_numpy(S, X, T, R, V):
    sqrt_t = np.sqrt(T)
    d1 = (np.log(S / X) + (R + 0.5 * V * V) * T) / (V * sqrt_t)
    d2 = d1 - V * sqrt_t
    cnd_d1 = cnd_numpy(d1)
    cnd_d2 = cnd_numpy(d2)
    exp_rt = np.exp(-R * T)
    call = S * cnd_d1 - X * exp_rt * cnd_d2
    put = X * exp_rt * (1.0 - cnd_d2) - S * (1.0 - cnd_d1)
    return call, put


def make_inputs(n):
    rng = np.random.default_rng(12)
    S = rng.uniform(5.0, 30.0, n)
    X = rng.uniform(1.0, 100.0, n)
    T = rng.uniform(0.25, 10.0, n)
    return S, X, T, RISKFREE, VOLATILITY


WORKLOAD = Workload(
    name="black_scholes", title="Black-Scholes, loop with a scalar helper", kernel=black_scholes, helpers=(cnd,),
    reference=black_scholes_numpy, make_inputs=make_inputs, sizes={"quick": 2_000_000, "full": 10_000_000},
    describe=lambda n: f"{n:,} options float64", bytes_moved=lambda n: 40 * n, python_modes=(),
    rtol=1e-9, atol=1e-9)


ARRAY_WORKLOAD = Workload(
    name="black_scholes_array", title="Black-Scholes, NumPy array form (Numba: the loop form)",
    kernel=black_scholes_numpy, helpers=(cnd_numpy,), reference=black_scholes_numpy, make_inputs=make_inputs,
    sizes={"quick": 2_000_000, "full": 10_000_000}, describe=lambda n: f"{n:,} options float64",
    bytes_moved=lambda n: 40 * n, python_modes=(), rtol=1e-9, atol=1e-9,
    peer_kernel=black_scholes, peer_helpers=(cnd,),
    note="lorikeet compiles the NumPy form (intermediates d1, d2, cnd_d1, ... each used twice); Numba runs the "
         "loop form of `black_scholes` (issue 15's comparison).")
