"""Assignment through integer index arrays into arrays of any dimension (a[idx] = v, a[idx, :] = rows,
a[rows, cols] = v, a[idx, j] = v, a[idx] += 1): the values and exceptions NumPy gives, the target's state after
an error included (NumPy writes nothing when it raises), on every backend."""

import linecache

import numpy as np
import pytest

import lorikeet as lk


def rows(a, idx, v):
    a[idx] = v
    return a


def rows_sliced(a, idx, v):
    a[idx, :] = v
    return a


def column(a, idx, j, v):
    a[idx, j] = v
    return a


def elements(a, r, c, v):
    a[r, c] = v
    return a


def elements_3d(a, r, c, v):
    a[r, 1, c] = v
    return a


def increment(a, idx):
    a[idx] += 1
    return a


def outcome(f, *args):
    args = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
    try:
        r = f(*args)
        return ("ok", r.dtype.str, r.tolist())
    except Exception as e:  # noqa: BLE001 - comparing what was raised, and the target after it
        return ("raised", type(e).__name__, args[0].tolist())


def same_as_numpy(f, *args):
    want = outcome(f, *args)
    got = outcome(lk.jit(f), *args)
    assert got == want
    return got


A = np.arange(12.0).reshape(4, 3)
A3 = np.arange(24.0).reshape(4, 3, 2)


@pytest.mark.parametrize("idx", [[0, 2], [3, -1, 0], [1, 1], [], [0], [4], [-5], [0, 9]])
@pytest.mark.parametrize("v", [7.0, [1.0, 2.0, 3.0], [[1.0, 2.0, 3.0]], [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]],
                               [1.0, 2.0], [[[1.0, 2.0, 3.0]]]])
@pytest.mark.parametrize("f", [rows, rows_sliced])
def test_rows_through_an_index_array(f, idx, v):
    same_as_numpy(f, A, np.array(idx, dtype=np.int64), np.array(v) if isinstance(v, list) else v)


@pytest.mark.parametrize("idx, j", [([0, 2], 1), ([3, -1], -1), ([0], 2), ([1, 2], 3), ([5], 0), ([], 0)])
@pytest.mark.parametrize("v", [4.5, [8.0, 9.0], [8.0], [8.0, 9.0, 10.0]])
def test_a_column_through_an_index_array(idx, j, v):
    same_as_numpy(column, A, np.array(idx, dtype=np.int32), j, np.array(v) if isinstance(v, list) else v)


@pytest.mark.parametrize("r, c", [([0, 2, 3], [1, 1, 2]), ([0, 2, 3], [2]), ([1], [0, 1, 2]), ([0, 2], [0, 1, 2]),
                                  ([3, -4], [-1, 0]), ([4, 0], [0, 0]), ([0, 0], [1, 3]), ([2, 2, 2], [1, 1, 1])])
@pytest.mark.parametrize("v", [1.5, [5.0, 6.0, 7.0], [5.0]])
def test_elements_through_two_index_arrays(r, c, v):
    same_as_numpy(elements, A, np.array(r), np.array(c), np.array(v) if isinstance(v, list) else v)


@pytest.mark.parametrize("r, c", [([0, 3], [1, 0]), ([2], [1, 1]), ([1, 9], [0, 0])])
def test_elements_with_an_integer_between_the_arrays(r, c):
    same_as_numpy(elements_3d, A3, np.array(r), np.array(c), np.array([-1.0, -2.0]))


@pytest.mark.parametrize("idx", [[0, 2, 0], [3, 3, 3], [-1, 1]])
def test_an_increment_through_repeated_indices_adds_once_as_numpy(idx):
    same_as_numpy(increment, A, np.array(idx))
    same_as_numpy(increment, A3, np.array(idx))


def test_values_are_converted_and_checked_as_numpy_converts_them():
    a8 = np.zeros((3, 2), dtype=np.int8)
    same_as_numpy(rows, a8, np.array([0, 2]), 100)
    same_as_numpy(rows, a8, np.array([0, 2]), 300)            # OverflowError: a Python int out of int8's range
    same_as_numpy(rows, a8, np.array([0, 2]), np.array([1.9, -2.7]))
    same_as_numpy(rows, A, np.array([1]), np.array([[True, False, True]]))


def overlapping(a):
    a[np.array([2, 0])] = a[0:2]          # the value is a view of the rows being written
    return a


def indices_from_the_target(a):
    a[a[:, 0].astype(np.int64) % 4, 1] = a[:, 2]
    return a


@pytest.mark.parametrize("f", [overlapping, indices_from_the_target])
def test_an_index_or_value_sharing_the_targets_memory_is_read_before_any_write(f):
    same_as_numpy(f, A)


def test_a_random_corpus_of_forms_and_shapes_agrees_with_numpy():
    rng = np.random.default_rng(5)
    for case in range(150):
        shape = tuple(int(s) for s in rng.integers(1, 5, size=int(rng.integers(2, 4))))
        a = rng.random(shape)
        k = int(rng.integers(0, 5))
        narrays = int(rng.integers(1, len(shape) + 1))
        idx = [rng.integers(-shape[d] - 1, shape[d] + 1, size=k if rng.random() < 0.8 else 1) for d in range(narrays)]
        result = (max([len(i) for i in idx]),) + shape[narrays:]
        vshape = result[int(rng.integers(0, len(result) + 1)):]
        v = rng.random(vshape) if vshape and rng.random() < 0.8 else 2.5
        src = "def f(a, i0, i1, i2, v):\n    a[" + ", ".join(f"i{d}" for d in range(narrays)) + "] = v\n    return a\n"
        ns = {}
        exec(compile(src, f"<scatter-{case}>", "exec"), ns)
        linecache.cache[f"<scatter-{case}>"] = (len(src), None, src.splitlines(True), f"<scatter-{case}>")
        args = (a, *(idx + [np.zeros(1, dtype=np.int64)] * (3 - narrays)), v)
        same_as_numpy(ns["f"], *args)


def value_raises(a, idx, k):
    a[idx, 7] = 10 // k          # the value raises first, then the integer 7 (out of range), then the shapes
    return a


def integer_before_value_shape(a, idx):
    a[idx, 5] = a                # the integer's IndexError comes before the value's shape (fuzz seed 198)
    return a


def test_the_value_then_the_integers_then_the_shapes_raise_in_numpys_order():
    same_as_numpy(value_raises, A, np.array([0, 1]), 0)
    same_as_numpy(value_raises, A, np.array([0, 1]), 2)
    same_as_numpy(integer_before_value_shape, A, np.array([0, 1]))


def add_float_through_index(a, idx):
    a[idx] += 1.5
    return a


def add_float_to_a_row(a, idx):
    a[0] += 1.5
    return a


def add_float_to_an_element(a, idx):
    a[idx[0]] += 1.5
    return a


def add_float_through_mask(a, idx):
    a[a > 0] += 1.5
    return a


@pytest.mark.parametrize("f, a", [
    (add_float_through_index, np.zeros((3, 2), np.int64)), (add_float_through_index, np.zeros(3, np.int64)),
    (add_float_to_a_row, np.zeros((3, 2), np.int64)), (add_float_through_mask, np.ones(3, np.int64)),
    (increment, np.zeros((3, 2), bool)),
])
def test_an_augmented_store_into_an_array_target_keeps_numpys_same_kind_rule(f, a):
    # NumPy updates the selection (a view, a fancy index's result) in place: UFuncTypeError, a TypeError;
    # lorikeet's CompileError is one too
    with pytest.raises(TypeError):
        f(a.copy(), np.array([0, 1]))
    with pytest.raises(lk.CompileError, match="same_kind"):
        lk.jit(f)(a.copy(), np.array([0, 1]))


def test_an_augmented_store_into_an_element_converts_as_numpy():
    same_as_numpy(add_float_to_an_element, np.zeros(3, np.int64), np.array([1]))
    same_as_numpy(add_float_through_index, np.zeros((3, 2)), np.array([0, 0, 2]))


def test_without_boundscheck_in_range_indices_store_the_same():
    f = lk.jit(elements, boundscheck=False)
    got = f(A.copy(), np.array([0, -1]), np.array([2, 0]), np.array([1.0, 2.0]))
    assert got.tolist() == elements(A.copy(), np.array([0, -1]), np.array([2, 0]), np.array([1.0, 2.0])).tolist()


def two_d_index(a, idx):
    a[idx] = 0.0
    return a


def slice_first(a, idx):
    a[:, idx] = 0.0
    return a


def float_index(a, idx):
    a[idx] = 0.0
    return a


@pytest.mark.parametrize("f, idx, words", [
    (two_d_index, np.array([[0, 1]]), "index arrays of 2 dimensions is not supported"),
    (slice_first, np.array([0, 1]), "a slice before an index array is not supported"),
    (float_index, np.array([0.0, 1.0]), "arrays used as indices must be of integer (or boolean) type"),
])
def test_forms_not_supported_are_a_compile_error_saying_so(f, idx, words):
    with pytest.raises(lk.CompileError, match=words.replace("(", r"\(").replace(")", r"\)")):
        lk.jit(f)(A.copy(), idx)


def test_the_index_arrays_shape_mismatch_is_numpys_index_error():
    with pytest.raises(IndexError, match=r"shape mismatch: indexing arrays could not be broadcast together with shapes \(3,\) \(2,\)"):
        lk.jit(elements)(A.copy(), np.array([0, 1, 2]), np.array([0, 1]), 1.0)
