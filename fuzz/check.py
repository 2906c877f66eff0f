"""check.py: runs one program file under CPython+NumPy and under lorikeet on each backend, and compares.

Compared: the result (values, dtypes, shapes, tuple structure), the arguments' state afterwards (a program may
write into its arguments), and the exception class when the reference raises. Values: integers and bools
exactly; floats NaN-aware (NaN where NumPy has NaN, infinities of the same sign), finite values within RTOL of
the dtype relative to the larger of the two values and of the largest magnitude in the array (float sums add in
another order than NumPy's pairwise sum, and transcendental functions differ by a few ulp: USERGUIDE,
Differences/Floats).

The documented result conventions (USERGUIDE, Differences/Results) are applied first, as NORMALISATIONS: int64,
float64 and bool scalars may come back as Python or NumPy scalars, and a 0-d array is a scalar of its dtype.
"""
import importlib.util
import itertools
import os
import re
import warnings

import numpy as np

from . import refops

RTOL = {"float16": 2e-3, "float32": 2e-5, "float64": 1e-9}
# NumPy's transcendental ufuncs, whose results may differ by an ulp or two between libraries (USERGUIDE,
# Differences/Floats); sqrt and the arithmetic are correctly rounded everywhere, and math.* works in float64.
TRANSCENDENTAL = re.compile(r"\bnp\.(sin|cos|tan|arcsin|arccos|arctan|arctan2|sinh|cosh|tanh|arcsinh|arccosh|"
                            r"arctanh|exp|exp2|expm1|log|log2|log10|log1p|cbrt|power|float_power|hypot|logaddexp|"
                            r"logaddexp2|deg2rad|rad2deg)\(")
# The float type NumPy computes such a function in for each narrow type (a small integer goes to the smallest float
# that holds it: np.log2 of int16 is float32, np.sin of uint8 is float16).
NARROW_FLOAT = {"float16": "float16", "int8": "float16", "uint8": "float16",
                "float32": "float32", "int16": "float32", "uint16": "float32"}
NORMALISATIONS = ("Python int/float/bool and np.int64/np.float64/np.bool_ are the same result",
                  "a 0-d array is the scalar of its dtype")
BACKENDS = ("cpu", "openmp")
_counter = itertools.count()


def available_backends():
    import lorikeet as lk
    out = list(BACKENDS)
    if lk.gpu_available()[0]:
        out.append("gpu")
    return out


def load(path, ref):
    """The program file as a fresh module; for the reference its `lk` is fuzz/refops.py."""
    name = f"fuzz_prog_{os.getpid()}_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if ref:
        mod.lk = refops
    return mod


class Run:
    def __init__(self, result=None, exc=None, args=None, warns=()):
        self.result, self.exc, self.args, self.warns = result, exc, args, list(warns)


def run_reference(mod):
    args = mod.make_inputs()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result, exc = mod.f(*args), None
        except Exception as e:
            result, exc = None, e
    return Run(result, exc, args, [str(w.message) for w in caught])


def within_subset(ref, source):
    """Does the reference run stay clear of the documented differences (fuzz/known.py)? A shrunk program must,
    or it tests something lorikeet does not promise."""
    from . import gen, known
    out = gen.Outcome(ref.exc, ref.warns, {"__result": ref.result})
    return known.reference_verdict(out, ["__result"], source) is not None


def documented_difference(path):
    """The documented difference (fuzz/known.py) the reference run of the program at path shows with the NumPy
    of this process, or None. A program saved under one NumPy can leave the subset under another: NumPy 2.5's
    np.where raises OverflowError for a Python int that 2.4 cast, and an out-of-range literal is lorikeet's
    CompileError (USERGUIDE, Differences). Such a replay compares nothing."""
    from . import gen, known
    ref = run_reference(load(path, ref=True))
    out = gen.Outcome(ref.exc, ref.warns, {"__result": ref.result})
    with open(path) as fh:
        source = fh.read()
    return next((d for d in known.DIFFERENCES if d.test(out, ["__result"], source)), None)


def run_lorikeet(mod, backend):
    import lorikeet as lk
    args = mod.make_inputs()
    d = lk.jit(mod.f, backend=backend, cache=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return Run(d(*args), None, args)
        except Exception as e:
            return Run(None, e, args)


def _norm(v):
    """(kind, dtype, shape, array) of a result, after the documented normalisations."""
    if isinstance(v, tuple):
        return ("tuple", len(v), None, None)
    if v is None:
        return ("none", None, None, None)
    if isinstance(v, bool):
        return ("value", "bool", (), np.asarray(v))
    if isinstance(v, int):
        return ("value", "int64", (), np.asarray(v, dtype=np.int64) if -2**63 <= v < 2**63 else np.asarray(v, object))
    if isinstance(v, float):
        return ("value", "float64", (), np.asarray(v))
    if isinstance(v, (np.generic, np.ndarray)):
        a = np.asarray(v)
        return ("value", str(a.dtype), a.shape, a)
    return ("other", type(v).__name__, None, None)


def precision_floor(source, args):
    """The float type of the least precise transcendental result the program at source may compute from its
    arguments' and literals' narrow types, or None. A float64 result that adds np.log2(int16 values) (float32) holds
    float32's ulp differences, and is compared at float32's tolerance."""
    if not TRANSCENDENTAL.search(source):
        return None
    names = {str(a.dtype) for a in args if isinstance(a, (np.ndarray, np.generic))}
    names |= set(re.findall(r"\b(float16|float32|u?int8|u?int16)\b", source))
    floats = {NARROW_FLOAT[n] for n in names if n in NARROW_FLOAT}
    return "float16" if "float16" in floats else "float32" if floats else None


def values_equal(x, y, dtype, floor=None):
    """x (lorikeet) against y (reference), arrays of one dtype and shape; floor: precision_floor's float type."""
    if dtype in RTOL:
        rtol = max(RTOL[dtype], RTOL[floor]) if floor else RTOL[dtype]
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
        nx, ny = np.isnan(x64), np.isnan(y64)
        if not np.array_equal(nx, ny):
            return False
        x64, y64 = x64[~nx], y64[~ny]
        inf = np.isinf(y64) | np.isinf(x64)
        if not np.array_equal(x64[inf], y64[inf]):
            return False
        x64, y64 = x64[~inf], y64[~inf]
        if y64.size == 0:
            return True
        scale = np.max(np.abs(y64))
        return bool(np.all(np.abs(x64 - y64) <= rtol * np.maximum(np.maximum(np.abs(x64), np.abs(y64)),
                                                                            scale * 1e-3)))
    return np.array_equal(x, y)


def compare_value(got, want, where, floor=None):
    """A list of (kind, message) differences between a lorikeet value and the reference's (floor: see
    precision_floor)."""
    g, w = _norm(got), _norm(want)
    if g[0] != w[0]:
        return [("shape", f"{where}: {g[0]} {type(got).__name__} where the reference has {w[0]} "
                          f"{type(want).__name__}")]
    if g[0] == "tuple":
        if g[1] != w[1]:
            return [("shape", f"{where}: a tuple of {g[1]} where the reference has {w[1]}")]
        out = []
        for i, (a, b) in enumerate(zip(got, want)):
            out += compare_value(a, b, f"{where}[{i}]", floor)
        return out
    if g[0] != "value":
        return [] if g[1] == w[1] else [("shape", f"{where}: {g[1]} where the reference has {w[1]}")]
    if g[2] != w[2]:
        return [("shape", f"{where}: shape {g[2]} where the reference has {w[2]}")]
    if g[1] != w[1]:
        return [("dtype", f"{where}: dtype {g[1]} where the reference has {w[1]} "
                          f"(values {_show(g[3])} and {_show(w[3])})")]
    if not values_equal(g[3], w[3], g[1], floor):
        return [("value", f"{where}: {_show(g[3])} where the reference has {_show(w[3])} ({g[1]})")]
    return []


def _show(a):
    s = np.array2string(np.asarray(a), threshold=20, max_line_width=200) if isinstance(a, np.ndarray) else repr(a)
    return s if len(s) < 300 else s[:300] + "..."


def _base_class(e):
    """The builtin exception class a reference exception stands for (NumPy's subclasses mapped to theirs)."""
    for c in type(e).__mro__:
        if c.__module__ == "builtins":
            return c
    return Exception


def compare_runs(got, want, backend, floor=None):
    """(kind, message) differences of one lorikeet run against the reference run (floor: see precision_floor)."""
    import lorikeet as lk
    if got.exc is not None and isinstance(got.exc, lk.InternalError):
        return [("internal", f"{backend}: InternalError: {_first_line(got.exc)}")]
    if want.exc is None and got.exc is not None:
        kind = "compile-error" if isinstance(got.exc, lk.CompileError) else "exception"
        return [(kind, f"{backend}: {type(got.exc).__name__}: {_first_line(got.exc)} (the reference returns)")]
    if want.exc is not None:
        base = _base_class(want.exc)
        if got.exc is None:
            return [("missing-exception", f"{backend}: returns where the reference raises "
                                          f"{type(want.exc).__name__}: {_first_line(want.exc)}")]
        if not isinstance(got.exc, base):
            kind = "compile-error" if isinstance(got.exc, lk.CompileError) else "exception"
            return [(kind, f"{backend}: {type(got.exc).__name__}: {_first_line(got.exc)} where the reference "
                           f"raises {type(want.exc).__name__}: {_first_line(want.exc)}")]
        diffs = []
    else:
        diffs = compare_value(got.result, want.result, f"{backend}: result", floor)
    for i, (a, b) in enumerate(zip(got.args, want.args)):
        if isinstance(b, np.ndarray):
            diffs += [("args", m) for _, m in compare_value(a, b, f"{backend}: argument {i} afterwards", floor)]
    return diffs


def _first_line(e):
    s = str(e).splitlines()
    return s[0] if s else ""


def check_file(path, backends=None):
    """All differences of the program at path, as (kind, message) pairs (empty: lorikeet agrees)."""
    want = run_reference(load(path, ref=True))
    mod = load(path, ref=False)
    with open(path) as fh:
        floor = precision_floor(fh.read(), mod.make_inputs())
    diffs = []
    for be in backends or available_backends():
        diffs += compare_runs(run_lorikeet(mod, be), want, be, floor)
    return diffs
