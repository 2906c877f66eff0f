"""Parallel regions (ir/parallel_regions.c): which nodes may run their elements at once is decided in the IR, the
same for every backend, and printed: the outermost map, imap, reduce, scan, prange loop and matmul, never one
nested in another's per-element code; each with the variables that code uses."""
import re

import numpy as np
import pytest

import lorikeet as lk


def mixed(a, k):
    s = 0.0
    for i in lk.prange(a.shape[0]):
        s += a[i:].sum() * k
    t = np.cumsum(a * 2)
    m = lk.imap(lambda i: a[i:].sum() + k, a.shape[0])
    n = 0
    while n < 3:
        n += 1
        t = t + a.max()
    return s, t, m, a.reshape((2, -1)) @ a.reshape((-1, 2))


A = np.arange(4.0)


def ir_lines(f, *args, backend="cpu"):
    return lk.jit(f, backend=backend).inspect_types(*args).splitlines()


def line_with(lines, text):
    found = [l for l in lines if text in l]
    assert len(found) == 1, f"{text!r} in {found}"
    return found[0]


def test_each_outermost_data_parallel_node_is_a_region():
    lines = ir_lines(mixed, A, 2.0)
    assert "parallel[a, k, s, i]" in line_with(lines, "prange(")
    assert "parallel scan[add](map(" in line_with(lines, "scan[")
    assert "parallel[a, k] imap(" in line_with(lines, "imap(")
    assert "parallel reduce[max](a)" in line_with(lines, "reduce[max]")
    assert any(l.strip().startswith("parallel map(lambda") and "out=" in l for l in lines)  # t + a.max()
    assert "parallel matmul(" in line_with(lines, "matmul(")


def test_nothing_nested_in_a_region_is_one():
    """A reduction in a prange body or in an imap's body runs on the element's thread."""
    lines = ir_lines(mixed, A, 2.0)
    body = line_with(lines, "s = (s + ")
    assert "reduce[add]" in body and "parallel" not in body
    imap = line_with(lines, "imap(")
    assert imap.count("parallel") == 1 and imap.index("parallel") < imap.index("imap(")
    # a map fused into a scan or reduction is part of that region, not a region of its own
    assert "parallel map(" not in line_with(lines, "scan[")


def test_every_backend_sees_the_same_regions():
    assert ir_lines(mixed, A, 2.0, backend="cpu") == ir_lines(mixed, A, 2.0, backend="openmp")


def prange_uses(a, b, scale):
    total = 0.0
    unused = 5.0
    for i in lk.prange(a.shape[0]):
        x = a[i] * scale
        total += x + b[i]
    return total + unused


def test_a_region_uses_what_its_body_reads_and_assigns_only():
    # the loop is versioned on its bounds (b may be shorter than a): each copy is a region
    lines = [l for l in ir_lines(prange_uses, A, A, 3.0) if "prange(" in l]
    assert len(lines) == 2
    for line in lines:
        uses = re.search(r"parallel\[([^\]]*)\]", line).group(1).split(", ")
        assert set(uses) == {"a", "b", "scale", "total", "i", "x"}
        assert "unused" not in uses


def map_params_are_the_elements_own(a, k):
    return lk.map(lambda x: x * k + 1.0, a)


def test_a_maps_parameters_are_not_uses():
    line = line_with(ir_lines(map_params_are_the_elements_own, A, 2.0), "map(lambda")
    assert re.search(r"parallel\[k\] map\(lambda", line), line


@pytest.mark.parametrize("backend", ["cpu", "openmp"])
def test_marking_changes_no_result(backend):
    def g(a, k):
        s = 0.0
        for i in lk.prange(a.shape[0]):
            s += a[i:].sum() * k
        t = np.cumsum(a * 2)
        for _ in range(3):
            t = t + a.max()
        return s, t, a.reshape((2, -1)) @ a.reshape((-1, 2))
    got, want = lk.jit(g, backend=backend)(A, 2.0), g(A, 2.0)
    for x, y in zip(got, want):
        np.testing.assert_allclose(x, y)
