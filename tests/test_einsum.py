"""np.einsum (issue 10, point 7): the one- and two-operand forms, compared with NumPy's own einsum on the same
inputs: value, dtype and shape, over several dtypes, non-contiguous inputs, empty axes and size-1 axes that
broadcast; the errors NumPy raises for bad sizes; the CompileErrors for what is not supported; the MNIST distance
function of the CuPy notebook as written; and that einsum reaches the IR as maps, reductions and matmul only.
"""
import numpy as np
import pytest

import lorikeet as lk
from helpers import J

RNG = np.random.default_rng(784)

# ---- the forms: each a function, since the subscripts must be a literal ----


def sum_rows(a):
    return np.einsum('ij->i', a)


def sum_all(a):
    return np.einsum('ij->', a)


def sum_cols(a):
    return np.einsum('ij->j', a)


def transpose2(a):
    return np.einsum('ij->ji', a)


def permute3(a):
    return np.einsum('ijk->kij', a)


def reverse3(a):
    return np.einsum('ijk->kji', a)


def identity(a):
    return np.einsum('ij->ij', a)


def implicit_transpose(a):
    return np.einsum('ji', a)


def diagonal(a):
    return np.einsum('ii->i', a)


def trace(a):
    return np.einsum('ii->', a)


def implicit_trace(a):
    return np.einsum('ii', a)


def diagonal_permuted(a):
    return np.einsum('iji->ji', a)


def sum_middle(a):
    return np.einsum('i j k -> i k', a)


def vector_sum(a):
    return np.einsum('i->', a)


def elementwise(a, b):
    return np.einsum('ij,ij->ij', a, b)


def rowdot(a, b):
    return np.einsum('ij,ij->i', a, b)


def inner(a, b):
    return np.einsum('i,i->', a, b)


def implicit_inner(a, b):
    return np.einsum('i,i', a, b)


def matvec(a, b):
    return np.einsum('ij,j->i', a, b)


def matmat(a, b):
    return np.einsum('ij,jk->ik', a, b)


def implicit_matmat(a, b):
    return np.einsum('ij,jk', a, b)


def matmat_bt(a, b):
    return np.einsum('ij,kj->ik', a, b)


def matmat_out_transposed(a, b):
    return np.einsum('ij,jk->ki', a, b)


def matmat_at(a, b):
    return np.einsum('ji,jk->ik', a, b)


def outer(a, b):
    return np.einsum('i,j->ij', a, b)


def batched(a, b):
    return np.einsum('bij,bjk->bik', a, b)


def frobenius(a, b):
    return np.einsum('ij,ij', a, b)


def diag_times(a, b):
    return np.einsum('ii,i->i', a, b)


def upper_lower(a, b):
    return np.einsum('iJ,Jk->ki', a, b)


def sublist_matmat(a, b):
    return np.einsum(a, [0, 1], b, [1, 2], [0, 2])


def sublist_implicit(a):
    return np.einsum(a, [1, 0])


ONE = [  # (function, subscripts for NumPy, shape)
    (sum_rows, 'ij->i', (5, 7)), (sum_all, 'ij->', (5, 7)), (sum_cols, 'ij->j', (5, 7)),
    (transpose2, 'ij->ji', (5, 7)), (permute3, 'ijk->kij', (3, 4, 5)), (reverse3, 'ijk->kji', (3, 4, 5)),
    (identity, 'ij->ij', (4, 3)), (implicit_transpose, 'ji', (4, 3)), (diagonal, 'ii->i', (6, 6)),
    (trace, 'ii->', (6, 6)), (implicit_trace, 'ii', (6, 6)), (diagonal_permuted, 'iji->ji', (4, 3, 4)),
    (sum_middle, 'ijk->ik', (3, 4, 5)), (vector_sum, 'i->', (9,)),
]
TWO = [  # (function, subscripts for NumPy, shape of a, shape of b)
    (elementwise, 'ij,ij->ij', (4, 5), (4, 5)), (rowdot, 'ij,ij->i', (6, 5), (6, 5)),
    (inner, 'i,i->', (9,), (9,)), (implicit_inner, 'i,i', (9,), (9,)), (matvec, 'ij,j->i', (4, 6), (6,)),
    (matmat, 'ij,jk->ik', (4, 6), (6, 3)), (implicit_matmat, 'ij,jk', (4, 6), (6, 3)),
    (matmat_bt, 'ij,kj->ik', (4, 6), (3, 6)), (matmat_out_transposed, 'ij,jk->ki', (4, 6), (6, 3)),
    (matmat_at, 'ji,jk->ik', (6, 4), (6, 3)), (outer, 'i,j->ij', (4,), (5,)),
    (batched, 'bij,bjk->bik', (3, 4, 5), (3, 5, 2)), (frobenius, 'ij,ij', (4, 5), (4, 5)),
    (diag_times, 'ii,i->i', (5, 5), (5,)), (upper_lower, 'iJ,Jk->ki', (3, 4), (4, 2)),
]
DTYPES = [np.float64, np.float32, np.int64, np.int32, np.bool_]


def rand(shape, dtype):
    if np.dtype(dtype) == np.bool_:
        return RNG.random(shape) < 0.5
    if np.dtype(dtype).kind == "f":
        return RNG.standard_normal(shape).astype(dtype)
    return RNG.integers(-9, 10, shape).astype(dtype)


def assert_like(got, exp):
    """NumPy's value, dtype and shape: exact for integers and bools, within rounding for floats."""
    g = np.asarray(got)
    assert g.dtype == exp.dtype, f"dtype {g.dtype} != NumPy's {exp.dtype}"
    assert g.shape == exp.shape, f"shape {g.shape} != NumPy's {exp.shape}"
    if exp.dtype.kind == "f":
        tol = 1e-4 if exp.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(g, exp, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(g, exp)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("fn,subs,shape", ONE, ids=[f[1] for f in ONE])
def test_one_operand(fn, subs, shape, dtype):
    a = rand(shape, dtype)
    assert_like(J(fn)(a), np.einsum(subs, a))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("fn,subs,sa,sb", TWO, ids=[f[1] for f in TWO])
def test_two_operands(fn, subs, sa, sb, dtype):
    a, b = rand(sa, dtype), rand(sb, dtype)
    assert_like(J(fn)(a, b), np.einsum(subs, a, b))


def test_sublist_form():
    a, b = rand((4, 6), np.float64), rand((6, 3), np.float64)
    assert_like(J(sublist_matmat)(a, b), np.einsum(a, [0, 1], b, [1, 2], [0, 2]))
    assert_like(J(sublist_implicit)(a), np.einsum(a, [1, 0]))


@pytest.mark.parametrize("da,db", [(np.int8, np.int64), (np.float32, np.float64), (np.int32, np.float32),
                                   (np.bool_, np.int16), (np.uint8, np.int8)])
def test_mixed_dtypes_promote_as_numpy(da, db):
    a, b = rand((4, 6), da), rand((6, 3), db)
    assert_like(J(matmat)(a, b), np.einsum('ij,jk->ik', a, b))
    c = rand((4, 6), db)
    assert_like(J(rowdot)(a, c), np.einsum('ij,ij->i', a, c))


def test_int8_sums_wrap_in_int8_like_numpy():
    a = np.full((3, 200), 3, np.int8)
    assert_like(J(sum_rows)(a), np.einsum('ij->i', a))
    assert_like(J(rowdot)(a, a), np.einsum('ij,ij->i', a, a))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_non_contiguous_inputs(dtype):
    big = rand((12, 18), dtype)
    views = [big[::2, ::3], big[1::3, ::-2], big.T[::3, ::2], np.asfortranarray(big[:6, :6])]
    for a in views:
        for fn, subs in [(sum_rows, 'ij->i'), (transpose2, 'ij->ji'), (sum_all, 'ij->')]:
            assert_like(J(fn)(a), np.einsum(subs, a))
        b = np.ascontiguousarray(a[::-1])
        assert_like(J(rowdot)(a, b), np.einsum('ij,ij->i', a, b))
        assert_like(J(matmat_bt)(a, b), np.einsum('ij,kj->ik', a, b))
        assert_like(J(matmat)(a, b.T), np.einsum('ij,jk->ik', a, b.T))
        assert_like(J(matvec)(a, b[0]), np.einsum('ij,j->i', a, b[0]))
    sq = big[:12:2, :18:3]  # 6 x 6, strided both ways
    assert_like(J(diagonal)(sq), np.einsum('ii->i', sq))
    assert_like(J(trace)(sq.T), np.einsum('ii->', sq.T))
    c = rand((4, 6, 10), dtype)[:, ::2, ::2]
    assert_like(J(permute3)(c), np.einsum('ijk->kij', c))
    assert_like(J(batched)(c, c.transpose(0, 2, 1)), np.einsum('bij,bjk->bik', c, c.transpose(0, 2, 1)))


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_])
def test_empty_axes(dtype):
    for fn, subs, shape in [(sum_rows, 'ij->i', (0, 4)), (sum_rows, 'ij->i', (4, 0)), (sum_all, 'ij->', (0, 3)),
                            (transpose2, 'ij->ji', (0, 3)), (diagonal, 'ii->i', (0, 0)), (trace, 'ii->', (0, 0)),
                            (permute3, 'ijk->kij', (2, 0, 3))]:
        a = rand(shape, dtype)
        assert_like(J(fn)(a), np.einsum(subs, a))
    for fn, subs, sa, sb in [(rowdot, 'ij,ij->i', (0, 5), (0, 5)), (rowdot, 'ij,ij->i', (3, 0), (3, 0)),
                             (inner, 'i,i->', (0,), (0,)), (matmat, 'ij,jk->ik', (4, 0), (0, 3)),
                             (matmat, 'ij,jk->ik', (0, 5), (5, 3)), (outer, 'i,j->ij', (0,), (4,)),
                             (batched, 'bij,bjk->bik', (0, 2, 3), (0, 3, 4))]:
        a, b = rand(sa, dtype), rand(sb, dtype)
        assert_like(J(fn)(a, b), np.einsum(subs, a, b))


@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_size_one_axes_broadcast_like_numpy(dtype):
    for fn, subs, sa, sb in [(rowdot, 'ij,ij->i', (3, 4), (1, 4)), (rowdot, 'ij,ij->i', (3, 1), (3, 4)),
                             (elementwise, 'ij,ij->ij', (1, 4), (3, 1)), (inner, 'i,i->', (1,), (5,)),
                             (matmat, 'ij,jk->ik', (3, 1), (4, 5)), (matmat, 'ij,jk->ik', (3, 4), (1, 5)),
                             (matmat_bt, 'ij,kj->ik', (3, 4), (2, 1)), (batched, 'bij,bjk->bik', (1, 2, 3), (4, 3, 2))]:
        a, b = rand(sa, dtype), rand(sb, dtype)
        assert_like(J(fn)(a, b), np.einsum(subs, a, b))


# ---- the MNIST distance function of the CuPy notebook, as written ----


def mnist_distance(q, p):
    return np.sqrt(np.einsum('ij,ij->i', q, q)[:, np.newaxis] - 2 * q @ p.T + np.einsum('ij,ij->i', p, p))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_mnist_distance(dtype):
    q = RNG.random((50, 784)).astype(dtype)
    p = RNG.random((40, 784)).astype(dtype)
    got = np.asarray(J(mnist_distance)(q, p))
    exp = mnist_distance(q, p)
    assert got.dtype == exp.dtype and got.shape == (50, 40)
    # a distance of about 11.4 from sums of 784 products: float32 keeps about 5 digits of it
    np.testing.assert_allclose(got, exp, rtol=2e-5 if dtype == np.float32 else 1e-12)
    # and they are distances
    np.testing.assert_allclose(got[3, 7], np.linalg.norm(q[3] - p[7]), rtol=1e-3 if dtype == np.float32 else 1e-10)


def test_inspect_types_shows_only_maps_reductions_and_matmul():
    a, b = rand((4, 6), np.float64), rand((6, 3), np.float64)
    text = J(mnist_distance).inspect_types(a, a)
    assert "einsum" not in text
    assert "reduce[add](map(" in text and "matmul(" in text
    text = J(matmat).inspect_types(a, b)
    assert "einsum" not in text and "matmul(" in text and "reduce[add](map(" in text
    text = J(diagonal).inspect_types(rand((4, 4), np.float64))
    assert "einsum" not in text and "imap" in text
    text = J(permute3).inspect_types(rand((2, 3, 4), np.int32))
    assert "einsum" not in text and "imap" in text


def weighted_rows(w, d):
    return np.einsum('ij,ijk->ik', w, d)


def int_matmat(a, b):
    return np.einsum('ij,jk->ik', a, b)


def test_operands_in_their_own_order_are_not_copied():
    # 'ij,ijk->ik' sums j where it is, as (w[:, :, None] * d).sum(axis=1): no transposed copy of d
    w, d = rand((5, 6), np.float64), rand((5, 6, 3), np.float64)
    np.testing.assert_allclose(J(weighted_rows)(w, d), weighted_rows(w, d), rtol=1e-12)
    text = J(weighted_rows).inspect_types(w, d)
    assert "imap" not in text and "axis=1" in text
    a, b = RNG.integers(-9, 9, (4, 5)), RNG.integers(-9, 9, (5, 3))
    np.testing.assert_array_equal(J(int_matmat)(a, b), int_matmat(a, b))
    assert "imap" not in J(int_matmat).inspect_types(a, b)
    J(weighted_rows)(w, d)
    before = lk.runtime.stats()["allocations"]
    J(weighted_rows)(w, d)
    if lk.get_backend() != "gpu":
        assert lk.runtime.stats()["allocations"] - before == 1  # the result


# ---- errors ----


def test_mismatched_lengths_raise_value_error_with_the_sizes():
    # (function, shapes, the two lengths of the letter that differ)
    cases = [(rowdot, (3, 4), (3, 5), (4, 5)), (inner, (3,), (4,), (3, 4)), (matmat, (3, 4), (5, 6), (4, 5)),
             (matvec, (3, 4), (5,), (4, 5)), (batched, (2, 3, 4), (3, 4, 5), (2, 3)), (outer, (3,), (4,), None),
             (matmat_bt, (3, 4), (2, 7), (4, 7)), (elementwise, (2, 3), (3, 2), (2, 3))]
    for fn, sa, sb, sizes in cases:
        for dtype in (np.float64, np.int64):
            a, b = rand(sa, dtype), rand(sb, dtype)
            if sizes is None:  # no letter is shared: not an error
                assert_like(J(fn)(a, b), fn(a, b))
                continue
            with pytest.raises(ValueError):
                fn(a, b)  # NumPy refuses them too
            with pytest.raises(ValueError) as e:
                J(fn)(a, b)
            msg = str(e.value)
            assert all(str(s) in msg for s in sizes), msg


def test_diagonal_of_unequal_axes_raises():
    for shape in [(3, 4), (4, 3), (1, 3), (3, 1)]:
        a = rand(shape, np.float64)
        with pytest.raises(ValueError):
            np.einsum('ii->i', a)
        # lorikeet: an IndexError naming the lengths (NumPy: ValueError); never a result
        with pytest.raises(IndexError):
            J(diagonal)(a)
        with pytest.raises(IndexError):
            J(trace)(a)
    # NumPy 2.4 returns uninitialised memory for 'ii->i' of a (0, 2) array; lorikeet raises
    with pytest.raises(IndexError):
        J(diagonal)(np.zeros((0, 2)))
    # the check is einsum's own, not the user's indexing: boundscheck=False keeps it
    unchecked = lk.jit(diagonal, boundscheck=False)
    assert_like(unchecked(np.eye(3)), np.ones(3))
    with pytest.raises(IndexError):
        unchecked(np.zeros((3, 4)))


def three_operands(a, b, c):
    return np.einsum('ij,jk,kl->il', a, b, c)


def ellipsis(a):
    return np.einsum('...ij->...ji', a)


def output_letter_not_in_inputs(a):
    return np.einsum('ij->ik', a)


def output_letter_twice(a):
    return np.einsum('ij->ii', a)


def with_out(a, b):
    return np.einsum('ij,ij->i', a, b, out=b[:, 0])


def with_dtype(a):
    return np.einsum('ij->i', a, dtype=np.float32)


def too_many_subscripts(a):
    return np.einsum('ijk->i', a)


def operand_count(a, b):
    return np.einsum('ij->i', a, b)


def bad_character(a):
    return np.einsum('i1->i', a)


def two_arrows(a):
    return np.einsum('ij->i->j', a)


SUBSCRIPTS = 'ij->i'


def global_subscripts(a):
    return np.einsum(SUBSCRIPTS, a)


def scalar_operand(a, s):
    return np.einsum('ij,->ij', a, s)


def optimize_true(a, b):
    return np.einsum('ij,jk->ik', a, b, optimize=True)


def optimize_greedy(a, b):
    return np.einsum('ij,jk->ik', a, b, optimize='greedy')


@pytest.mark.parametrize("fn,nargs,words", [
    (three_operands, 3, "only one or two"), (ellipsis, 1, "ellipsis"), (output_letter_not_in_inputs, 1, "'k'"),
    (output_letter_twice, 1, "more than once"), (with_out, 2, "'out'"), (with_dtype, 1, "'dtype'"),
    (too_many_subscripts, 1, "2 dimensions"), (operand_count, 2, "1 operand"), (bad_character, 1, "'1'"),
    (two_arrows, 1, "'->'"), (global_subscripts, 1, "string literal"), (scalar_operand, 2, "only arrays"),
])
def test_unsupported_forms_are_compile_errors_naming_the_line(fn, nargs, words):
    args = [rand((3, 3), np.float64) for _ in range(nargs)]
    if fn is scalar_operand:
        args[1] = 2.0
    with pytest.raises(lk.CompileError) as e:
        lk.jit(fn)(*args)
    msg = str(e.value)
    assert "einsum" in msg and words in msg, msg
    assert __file__ in msg or "test_einsum.py" in msg, msg
    import inspect
    line = inspect.getsourcelines(fn)[1] + 1
    assert f"line {line}" in msg, msg


def test_optimize_is_accepted():
    a, b = rand((4, 6), np.float64), rand((6, 3), np.float64)
    assert_like(J(optimize_true)(a, b), np.einsum('ij,jk->ik', a, b, optimize=True))
    assert_like(J(optimize_greedy)(a, b), np.einsum('ij,jk->ik', a, b, optimize='greedy'))


def test_result_is_a_new_array():
    # NumPy returns a view for 'ij->ji' and 'ii->i'; lorikeet always returns a new array (docs/USERGUIDE.md)
    a = rand((3, 3), np.float64)
    for fn in (transpose2, identity, diagonal):
        r = np.asarray(J(fn)(a))
        r[...] = 7.0
        assert not (a == 7.0).any()
