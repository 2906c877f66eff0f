"""GrowCut cellular-automaton segmentation step (benchmarks/growcut.py of iskandr/parakeet, after Faggian, van
der Walt, Ahmadia, Grisel): every pixel is attacked by its neighbours in a window; the strongest attack wins.
As in Parakeet, the colour difference is a slice expression inside the innermost loop. Here the kernel allocates
the next state and returns it with the number of changes (Parakeet took state_next as an argument)."""
import numpy as np

from ..spec import Workload


def growcut(image, state, window_radius):
    changes = 0
    height = image.shape[0]
    width = image.shape[1]
    state_next = np.empty_like(state)
    for j in range(width):
        for i in range(height):
            winning_colony = state[i, j, 0]
            defense_strength = state[i, j, 1]
            for jj in range(max(j - window_radius, 0), min(j + window_radius + 1, width)):
                for ii in range(max(i - window_radius, 0), min(i + window_radius + 1, height)):
                    if ii != i or jj != j:
                        d = image[i, j, :] - image[ii, jj, :]
                        s = np.sum(d ** 2)
                        gval = 1.0 - np.sqrt(s) / np.sqrt(3)
                        attack_strength = gval * state[ii, jj, 1]
                        if attack_strength > defense_strength:
                            defense_strength = attack_strength
                            winning_colony = state[ii, jj, 0]
                            changes += 1
            state_next[i, j, 0] = winning_colony
            state_next[i, j, 1] = defense_strength
    return state_next, changes


def growcut_numpy(image, state, window_radius):
    """The same automaton, one window offset at a time in the loop's order (jj outer, ii inner)."""
    h, w = image.shape[:2]
    colony = state[:, :, 0].copy()
    defense = state[:, :, 1].copy()
    changes = 0
    r = window_radius
    for dj in range(-r, r + 1):
        for di in range(-r, r + 1):
            if di == 0 and dj == 0:
                continue
            i0, i1 = max(0, -di), min(h, h - di)   # pixels (i, j) whose neighbour (i+di, j+dj) is inside
            j0, j1 = max(0, -dj), min(w, w - dj)
            if i0 >= i1 or j0 >= j1:
                continue
            here = image[i0:i1, j0:j1]
            there = image[i0 + di:i1 + di, j0 + dj:j1 + dj]
            d = here - there
            s = d[:, :, 0] ** 2 + d[:, :, 1] ** 2 + d[:, :, 2] ** 2
            attack = (1.0 - np.sqrt(s) / np.sqrt(3)) * state[i0 + di:i1 + di, j0 + dj:j1 + dj, 1]
            win = attack > defense[i0:i1, j0:j1]
            changes += int(win.sum())
            defense[i0:i1, j0:j1] = np.where(win, attack, defense[i0:i1, j0:j1])
            colony[i0:i1, j0:j1] = np.where(win, state[i0 + di:i1 + di, j0 + dj:j1 + dj, 0], colony[i0:i1, j0:j1])
    return np.stack([colony, defense], axis=2), changes


def make_inputs(size):
    n, radius = size
    rng = np.random.default_rng(14)
    image = rng.random((n, n, 3))
    state = np.zeros((n, n, 2))
    seeds = rng.random((n, n)) < 0.05
    state[:, :, 0] = np.where(seeds, rng.integers(1, 4, (n, n)), 0)
    state[:, :, 1] = np.where(seeds, 1.0, 0.0)
    return image, state, radius


WORKLOAD = Workload(
    name="growcut", title="GrowCut automaton step", kernel=growcut, reference=growcut_numpy,
    make_inputs=make_inputs, sizes={"quick": (60, 5), "full": (100, 10)},
    describe=lambda s: f"{s[0]}x{s[0]}x3 float64, window radius {s[1]}", python_modes=("quick",),
    rtol=1e-12, atol=1e-12)
