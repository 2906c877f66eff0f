"""The scalar semantics of the typed IR (ir/ir.h, "Scalars: what differs from C"), one row of a table each, run on
every backend, on scalars and elementwise over arrays, against the reference the rule names: NumPy's fixed-width
scalars, CPython's objects, or, where neither defines the result (float to int conversion out of range), the
rule as ir.h states it. A new backend joins BACKENDS and must pass every row."""
import math
import warnings

import numpy as np
import pytest

import lorikeet as lk

BACKENDS = ["cpu", "openmp"]
I64_MIN, I64_MAX = -2**63, 2**63 - 1
NAN, INF = float("nan"), float("inf")


def add(a, b): return a + b
def sub(a, b): return a - b
def mul(a, b): return a * b
def floordiv(a, b): return a // b
def mod(a, b): return a % b
def truediv(a, b): return a / b
def power(a, b): return a ** b
def lshift(a, b): return a << b
def rshift(a, b): return a >> b
def neg(a): return -a
def absolute(a): return abs(a)
def to_int(x): return int(x)
def to_bool(x): return bool(x)
def np_max(a, b): return np.maximum(a, b)
def np_min(a, b): return np.minimum(a, b)
def py_max(a, b): return max(a, b)
def py_min(a, b): return min(a, b)
def less(a, b): return a < b
def not_equal(a, b): return a != b


def saturating_int(x):
    """ir.h: truncate towards zero, saturate to int64's range, NaN gives 0."""
    if math.isnan(x):
        return 0
    if x >= 2.0**63:
        return I64_MAX
    if x < -2.0**63:
        return I64_MIN
    return int(x)


# (rule, function, argument dtype, cases, reference): reference is "numpy" (the function on NumPy scalars of
# the dtype), "python" (on Python objects), or a Python function giving the expected result of the rule.
ROWS = [
    ("integers wrap on +", add, np.int64, [(I64_MAX, 1), (I64_MIN, -1), (5, 7)], "numpy"),
    ("integers wrap on -", sub, np.int64, [(I64_MIN, 1), (3, 10)], "numpy"),
    ("integers wrap on *", mul, np.int64, [(2**62, 4), (-(2**40), 2**40), (-3, 7)], "numpy"),
    ("int32 wraps at its own width", add, np.int32, [(2**31 - 1, 1), (-(2**31), -1)], "numpy"),
    ("uint8 wraps", sub, np.uint8, [(0, 1), (200, 100)], "numpy"),
    ("unary - of the minimum wraps", neg, np.int64, [(I64_MIN,), (5,)], "numpy"),
    ("abs of the minimum wraps", absolute, np.int64, [(I64_MIN,), (-5,)], "numpy"),
    ("// rounds towards -inf", floordiv, np.int64, [(-7, 2), (7, -2), (-7, -2), (7, 2), (0, -3)], "python"),
    ("% takes the divisor's sign", mod, np.int64, [(-7, 2), (7, -2), (-7, -2), (7, 2), (0, -3)], "python"),
    ("integer // 0 raises ZeroDivisionError", floordiv, np.int64, [(5, 0), (0, 0)], "python"),
    ("integer % 0 raises ZeroDivisionError", mod, np.int64, [(5, 0)], "python"),
    ("INT_MIN // -1 wraps", floordiv, np.int64, [(I64_MIN, -1)], "numpy"),
    ("INT_MIN % -1 is 0", mod, np.int64, [(I64_MIN, -1)], "numpy"),
    ("unsigned // and %", floordiv, np.uint64, [(2**64 - 1, 3), (7, 2)], "numpy"),
    ("float // is CPython's", floordiv, np.float64, [(-7.5, 2.0), (7.5, -2.0), (-0.5, 1.0), (1e300, 1e-300),
                                                     (5.0, INF), (-5.0, INF)], "python"),
    ("float % is CPython's", mod, np.float64, [(-7.5, 2.0), (7.5, -2.0), (-0.0, 5.0), (5.0, INF), (-5.0, INF),
                                               (INF, 2.0)], "numpy"),
    ("float // 0.0 is NumPy's inf or nan", floordiv, np.float64, [(5.0, 0.0), (-5.0, 0.0), (0.0, 0.0)], "numpy"),
    ("float % 0.0 is NumPy's nan", mod, np.float64, [(5.0, 0.0)], "numpy"),
    ("/ is IEEE", truediv, np.float64, [(1.0, 0.0), (-1.0, 0.0), (0.0, 0.0), (1.0, 3.0)], "numpy"),
    ("integer / is float64 true division", truediv, np.int64, [(7, 2), (1, 0), (-1, 0)], "numpy"),
    ("<< by the bit width or more gives 0", lshift, np.int64, [(1, 63), (1, 64), (1, 100), (3, -1)], "numpy"),
    (">> by the bit width or more gives the sign", rshift, np.int64, [(-1, 70), (-8, 64), (8, 64), (-8, 1)], "numpy"),
    ("unsigned >> by the width gives 0", rshift, np.uint32, [(2**32 - 1, 32), (2**32 - 1, 31)], "numpy"),
    ("integer ** wraps", power, np.int64, [(3, 45), (-2, 63), (7, 0), (0, 0)], "numpy"),
    ("integer ** negative raises ValueError", power, np.int64, [(2, -1), (1, -5)], "numpy"),
    ("float ** is C's pow", power, np.float64, [(2.0, -1.0), (-8.0, 1.0 / 3.0), (0.0, -1.0), (NAN, 0.0)], "numpy"),
    ("float to int truncates towards zero", to_int, np.float64, [(-3.9,), (3.9,), (-0.5,)], "python"),
    ("float to int saturates, NaN gives 0", to_int, np.float64, [(1e300,), (-1e300,), (NAN,), (INF,), (-INF,),
                                                                (2.0**63,), (-(2.0**63),)], saturating_int),
    ("anything to bool is != 0, NaN is true", to_bool, np.float64, [(NAN,), (0.0,), (-0.0,), (1e-300,)], "python"),
    ("np.maximum propagates NaN", np_max, np.float64, [(1.0, NAN), (NAN, 1.0), (2.0, 1.0)], "numpy"),
    ("np.minimum propagates NaN", np_min, np.float64, [(1.0, NAN), (NAN, 1.0), (2.0, 1.0)], "numpy"),
    ("np.maximum of equal values is the second", np_max, np.float64, [(-0.0, 0.0), (0.0, -0.0)], "numpy"),
    ("np.minimum of equal values is the second", np_min, np.float64, [(-0.0, 0.0), (0.0, -0.0)], "numpy"),
    ("builtin max depends on argument order", py_max, np.float64, [(1.0, NAN), (NAN, 1.0), (2.0, 3.0)], "python"),
    ("builtin min depends on argument order", py_min, np.float64, [(1.0, NAN), (NAN, 1.0), (2.0, 3.0)], "python"),
    ("float < is ordered (NaN compares false)", less, np.float64, [(NAN, 1.0), (1.0, NAN), (1.0, 2.0)], "python"),
    ("float != is true for NaN", not_equal, np.float64, [(NAN, NAN), (1.0, 1.0)], "python"),
    ("unsigned against a large value compares exactly", less, np.uint64, [(2**64 - 1, 2**63), (5, 2**63)], "python"),
    ("unsigned against a negative Python int compares exactly", less, np.uint64, [(0, -1), (7, -3)], "python"),
]


def py_value(x, dtype):
    return float(x) if np.dtype(dtype).kind == "f" else int(x)


def reference(fn, dtype, case, ref):
    """The expected result, or the type of the exception expected."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            if callable(ref):
                return ref(*case)
            if ref == "numpy":
                return fn(*lk_args(case, dtype))
            return fn(*(py_value(x, dtype) for x in case))
        except Exception as e:  # noqa: BLE001 - the exception is the expected result
            return type(e)


def same(got, want):
    if isinstance(want, type):
        return False
    if isinstance(want, float) or isinstance(got, float) or isinstance(want, np.floating):
        got, want = float(got), float(want)
        return (math.isnan(got) and math.isnan(want)) or (got == want and math.copysign(1, got) == math.copysign(1, want))
    return got == want


def lk_args(case, dtype):
    """Scalars of the row's dtype (a Python int stays a weak int where the dtype cannot hold it)."""
    out = []
    for x in case:
        if isinstance(x, int) and np.dtype(dtype).kind == "u" and x < 0:
            out.append(x)
        else:
            out.append(np.array(x).astype(dtype)[()])
    return out


def run(jitted, args):
    try:
        return jitted(*args)
    except Exception as e:  # noqa: BLE001 - compared with the reference's
        return type(e)


def row_id(row):
    return row[0].replace(" ", "_")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("row", ROWS, ids=row_id)
def test_scalar_rule(row, backend):
    rule, fn, dtype, cases, ref = row
    jitted = lk.jit(fn, backend=backend)
    for case in cases:
        want = reference(fn, dtype, case, ref)
        got = run(jitted, lk_args(case, dtype))
        if isinstance(want, type):
            assert got is want or (isinstance(got, type) and issubclass(got, want)), \
                f"{rule}: {fn.__name__}{case} gave {got!r}, expected {want.__name__}"
        else:
            assert same(got, want), f"{rule}: {fn.__name__}{case} gave {got!r}, expected {want!r}"


def elementwise(row):
    """Rows whose function is a map over arrays of the cases: not the builtins of scalars, not a negative
    Python int beside an unsigned array (a question of promotion, not of the rule)."""
    _, fn, dtype, cases, _ = row.values[0] if hasattr(row, "values") else row
    negative_beside_unsigned = np.dtype(dtype).kind == "u" and any(x < 0 for case in cases for x in case)
    return fn not in (to_int, to_bool, py_max, py_min) and not negative_beside_unsigned


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("row", [r for r in ROWS if elementwise(r)], ids=row_id)
def test_the_same_rule_elementwise(row, backend):
    """The same function over arrays of the cases is a map: each element follows the scalar rule, and an
    element that raises makes the whole call raise the same exception."""
    rule, fn, dtype, cases, ref = row
    wants = [reference(fn, dtype, case, ref) for case in cases]
    columns = [np.array([lk_args(case, dtype)[k] for case in cases], dtype=dtype) for k in range(len(cases[0]))]
    got = run(lk.jit(fn, backend=backend), columns)
    errors = [w for w in wants if isinstance(w, type)]
    if errors:
        assert got in errors or (isinstance(got, type) and issubclass(got, errors[0])), \
            f"{rule}: elementwise gave {got!r}, expected {errors[0].__name__}"
        return
    for k, want in enumerate(wants):
        assert same(got[k], want), f"{rule}: element {k} {cases[k]} gave {got[k]!r}, expected {want!r}"
