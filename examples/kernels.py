"""kernels.py: the functions that examples/demo.py runs, each beside the NumPy code that computes the same thing.

Each lorikeet function is ordinary Python under @lk.jit: loops, while loops, tuple assignment, array expressions
and reductions. The NumPy versions are the idiomatic vectorised way to write the same computation, and are what
the demo checks lorikeet's results against.
"""
import math

import numpy as np

import lorikeet as lk

# ---- loops ----


@lk.jit
def mandelbrot(width, height, max_iter):
    """Escape-time counts of the Mandelbrot set on a width x height grid: a while loop per pixel."""
    counts = np.zeros((height, width), dtype=np.int32)
    for j in range(height):
        ci = -1.2 + 2.4 * j / height
        for i in range(width):
            cr = -2.2 + 3.2 * i / width
            zr = 0.0
            zi = 0.0
            n = 0
            while n < max_iter and zr * zr + zi * zi <= 4.0:
                zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
                n += 1
            counts[j, i] = n
    return counts


def mandelbrot_numpy(width, height, max_iter):
    cr = np.broadcast_to(-2.2 + 3.2 * np.arange(width) / width, (height, width))
    ci = np.broadcast_to((-1.2 + 2.4 * np.arange(height) / height)[:, None], (height, width))
    zr = np.zeros((height, width))
    zi = np.zeros((height, width))
    counts = np.zeros((height, width), dtype=np.int32)
    for _ in range(max_iter):
        alive = zr * zr + zi * zi <= 4.0
        if not alive.any():
            break
        counts += alive
        zr, zi = np.where(alive, zr * zr - zi * zi + cr, zr), np.where(alive, 2.0 * zr * zi + ci, zi)
    return counts


@lk.jit
def heat_1d(u0, steps):
    """Explicit diffusion on a rod with fixed ends: a three-point stencil applied `steps` times."""
    u = u0.copy()
    nxt = u0.copy()
    n = len(u)
    for _ in range(steps):
        for i in range(1, n - 1):
            nxt[i] = 0.25 * u[i - 1] + 0.5 * u[i] + 0.25 * u[i + 1]
        u, nxt = nxt, u
    return u


def heat_1d_numpy(u0, steps):
    u = u0.copy()
    for _ in range(steps):
        u[1:-1] = 0.25 * u[:-2] + 0.5 * u[1:-1] + 0.25 * u[2:]
    return u


# ---- array expressions ----


@lk.jit
def damped_norm(a, b, c):
    """One fused loop over the three inputs: no temporaries for a*a, b*b, their sum or exp(-c)."""
    return np.sqrt(a * a + b * b) * np.exp(-c)


def damped_norm_numpy(a, b, c):
    return np.sqrt(a * a + b * b) * np.exp(-c)


# ---- reductions ----


@lk.jit
def sum_squares_loop(a):
    s = 0.0
    for x in a:
        s += x * x
    return s


@lk.jit
def sum_squares(a):
    return (a * a).sum()


def sum_squares_numpy(a):
    return (a * a).sum()


@lk.jit
def mean_std(a):
    """Two passes over a; the squared deviations are summed inside the reduction's loop, never stored."""
    m = a.mean()
    return m, math.sqrt(((a - m) ** 2).sum() / a.size)


def mean_std_numpy(a):
    return a.mean(), a.std()
