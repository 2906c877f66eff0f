"""known.py: the one list of what the fuzzer does not count as a failure, each entry with its reason.

DIFFERENCES are lorikeet's documented differences from CPython and NumPy (docs/USERGUIDE.md, "Differences from
CPython and NumPy" and "Not supported"). The generator drops a candidate statement whose reference run shows one
(reference_verdict), so no program tests behaviour lorikeet does not promise; the comparison itself applies the
documented result conventions (NORMALISATIONS, in fuzz/check.py).

KNOWN_BUGS are defects already reported, each naming its issue and reproducer in ../shared/repros. A mismatch is
put down to a known bug only when its kind is one the bug causes and its minimal program (after shrinking)
matches the bug's pattern; every such mismatch is still reported, as known, with the entry's id. Remove an
entry when its fix lands: the fuzzer then counts those mismatches as failures again.
"""
import re

import numpy as np


class Difference:
    def __init__(self, ident, doc, test):
        self.ident, self.doc, self.test = ident, doc, test


def _python_ints(v):
    if isinstance(v, bool):
        return
    if isinstance(v, int):
        yield v
    elif isinstance(v, tuple):
        for x in v:
            yield from _python_ints(x)


def _exc_says(*parts):
    return lambda out, names, block: out.exc is not None and any(p in str(out.exc) for p in parts)


def _warns(*parts):
    return lambda out, names, block: any(p in w for w in out.warns for p in parts)


def _big_python_int(out, names, block):
    return any(abs(i) >= 2**63 for n in names for i in _python_ints(out.ns.get(n)))


def _complex(out, names, block):
    return any(isinstance(out.ns.get(n), complex) or getattr(out.ns.get(n), "dtype", None) == np.complex128
               for n in names)


def _empty_comprehension(out, names, block):
    return " for " in block and "np.array([" in block and any(
        isinstance(out.ns.get(n), np.ndarray) and out.ns[n].size == 0 for n in names)


def _zero_d_view(out, names, block):
    """An index that takes every axis by an integer beside a `...` (`a[1, 0, ...]`): NumPy's result is a 0-d
    array viewing `a`, lorikeet's the element's value, as every 0-d array is a scalar there."""
    return "..." in block and any(isinstance(out.ns.get(n), np.ndarray) and out.ns[n].ndim == 0 for n in names)


def _array_condition(out, names, block):
    """A condition (of if, elif, while, assert) that is an array, of one element too: NumPy takes its truth,
    lorikeet's take scalars (a CompileError). Each condition is evaluated again in the namespace after the block
    (the generator's conditions read no variable the block assigns)."""
    conds = re.findall(r"^\s*(?:if|elif|while)\s+(.+):\s*$", block, re.M)
    conds += re.findall(r"^\s*assert\s+(.+?)(?:,\s*f?['\"].*)?\s*$", block, re.M)
    for cond in conds:
        try:
            with np.errstate(all="ignore"):
                if isinstance(eval(cond, dict(out.ns)), np.ndarray):
                    return True
        except Exception:  # a name the namespace lacks (a shrunk program's): the compile error still decides
            pass
    return False


DIFFERENCES = [
    Difference("int64", "USERGUIDE Differences/Integers: Python ints are 64-bit and wrap", _big_python_int),
    Difference("int-div-zero", "USERGUIDE Differences/Integers: integer // and % by zero raise on arrays too "
               "(NumPy warns and gives 0); float // and % by zero are left out with them",
               lambda out, names, block: any(re.search(r"(divide by zero|invalid value) encountered in "
                                                       r"(scalar )?(floor_divide|remainder|fmod|divmod)", w)
                                             for w in out.warns)),
    Difference("zero-division", "USERGUIDE Differences/Floats: float division by zero follows IEEE on scalars",
               lambda out, names, block: isinstance(out.exc, ZeroDivisionError)),
    Difference("math-domain", "USERGUIDE Differences/Floats: math functions outside their domain give NaN/inf",
               _exc_says("math domain error", "math range error")),
    Difference("float-to-int", "USERGUIDE Differences/Floats: float to int conversion saturates, NaN gives 0",
               lambda out, names, block: _warns("invalid value encountered in cast")(out, names, block) or
               _exc_says("cannot convert float")(out, names, block)),
    Difference("overflow-error", "USERGUIDE Differences/Integers: out-of-range Python int literals (a "
               "CompileError) and float overflow of Python floats (inf, no OverflowError)",
               lambda out, names, block: isinstance(out.exc, OverflowError)),
    Difference("negative-shift", "USERGUIDE Differences/Integers: shifting by a negative count gives 0",
               _exc_says("negative shift count")),
    Difference("complex", "USERGUIDE Not supported: complex numbers (a negative float ** 0.5 in Python)",
               _complex),
    Difference("empty-comprehension", "USERGUIDE Functions as values: an empty comprehension has its item's "
               "type (NumPy: float64)", _empty_comprehension),
    Difference("zero-d-view", "USERGUIDE Arrays: an index taking every axis by an integer beside `...` gives the "
               "element's value, where NumPy gives a 0-d array that views it", _zero_d_view),
    Difference("truth-of-array", "USERGUIDE: if/while/assert/and/or/not take scalars (NumPy takes the truth of an "
               "array of one element)",
               lambda out, names, block: _exc_says("truth value of an array")(out, names, block) or
               _array_condition(out, names, block)),
]

# The exceptions a program may end with: the reference raises one of these at run time and lorikeet must
# raise the same class. Anything else the reference raises (TypeError: NumPy refuses the types; NameError,
# AttributeError, AxisError: not a program of the subset) drops the candidate.
RAISES = [
    (IndexError, ("out of bounds", "boolean index did not match")),
    (ValueError, ("could not be broadcast", "could not broadcast", "shape mismatch", "cannot reshape",
                  "zero-size array to reduction", "empty sequence", "negative integer powers",
                  "read-only", "cannot assign", "reduce of an empty")),
]


def reference_verdict(out, names, block):
    """'ok' (keep), 'raises' (keep as the program's last statement) or None (drop) for a candidate's reference
    run."""
    for d in DIFFERENCES:
        if d.test(out, names, block):
            return None
    if out.exc is None:
        return "ok"
    if type(out.exc).__name__ == "AxisError":
        return None
    for cls, says in RAISES:
        if type(out.exc) is cls and any(s in str(out.exc) for s in says):
            return "raises"
    return None


class KnownBug:
    """A reported defect: the kinds of difference it causes, a pattern its minimal program's body matches, and
    optionally a pattern the difference's message matches."""

    def __init__(self, ident, ref, text, kinds, pattern, message=None):
        self.ident, self.ref, self.text = ident, ref, text
        self.kinds = set(kinds)
        self.pattern = re.compile(pattern)
        self.message = re.compile(message) if message else None

    def matches(self, kind, body, message):
        message = " ".join(message.split())  # printed arrays span lines; the saved headers join them
        return (kind in self.kinds and self.pattern.search(body) is not None
                and (self.message is None or self.message.search(message) is not None))


# What the one-type rule (USERGUIDE, Typing rules) touches: and/or, if-else expressions, min/max of scalars, and a
# variable assigned on several paths (which needs an if, for or while statement); a helper h0..hN may hold them
# (only f's body is matched). The weak/strong rules of NEP 50 themselves have landed: a dtype difference
# elsewhere is a new finding.
_ONE_TYPE = r"(?m)\band\b|\bor\b| if .+ else |\bmin\(|\bmax\(|^\s*(if|for|while)\b|\bh\d+\("

_INT_LIMITS = (r"127|128|255|32767|32768|65535|2147483647|2147483648|4294967295|9223372036854775807|"
               r"9223372036854775808|18446744073709551615|"
               r"9\.22337\d*e\+18|1\.84467\d*e\+19|2\.14748\d*e\+09|4\.29496\d*e\+09")  # as floats print them

KNOWN_BUGS = [
    KnownBug("ulp-amplified", "documented: USERGUIDE, Vector math (math functions accurate to a few ulp, as "
             "NumPy's own SIMD ones; fuzz seed 801407: np.log(100) one ulp from NumPy's)",
             "a math function's last-bit difference from NumPy's, made large by np.fmod, % or // of a large "
             "dividend by it", {"value"},
             r"(np\.fmod\(|%|//).*np\.(exp\w*|log\w*|sin\w*|cos\w*|tan\w*|arc\w+|cbrt|power)\(|"
             r"np\.(exp\w*|log\w*|sin\w*|cos\w*|tan\w*|arc\w+|cbrt|power)\(.*(np\.fmod\(|%|//)",
             r"where the reference has .*\(float\d+\)$"),
    KnownBug("float-to-int", "documented: USERGUIDE, Differences from CPython and NumPy, Floats",
             "float to integer conversion saturates where NumPy's C cast gives another value without a warning (out-of-range floats stored into an "
             "int array, negative floats to unsigned)", {"value", "args"},
             r"astype\(np\.u?int|np\.u?int\d+\(|\bint\(|\]\s*=|\w\s*[-+*|&/]?=",
             # the converted value may have been stored back into a float array (a view of the result)
             rf"(result(\[\d+\])*|afterwards): .*\b(0|{_INT_LIMITS})\.?\b.* where the reference has .*"
             rf"\((u?int\d+|float\d+)\)$"),
    KnownBug("scan-regrouped", "documented: USERGUIDE, The openmp backend (a flattened scan runs in parts, each "
             "part's values added to the running total of the parts before it; fuzz seed 981306)",
             "a float cumsum or cumprod on the openmp team rounds in another grouping than NumPy's sequential one: "
             "within rounding of the partial sums, which cancellation makes large against a small element "
             "(float16 most)", {"value"},
             r"\bcumsum\(|\bcumprod\(|\.accumulate\(|lk\.scan\(",
             r"openmp: .* where the reference has .*\(float(16|32|64)\)$"),
    KnownBug("types-first", "by design: lorikeet types the whole function before it runs",
             "an operation NumPy refuses for its dtypes (a CompileError, a TypeError) whose operands also do not "
             "broadcast or whose index is out of range: NumPy raises the ValueError of the shapes or the IndexError "
             "first, when that line runs (or the ValueError of an earlier line: a negative integer power, a reshape)",
             {"compile-error"}, r".",
             r"CompileError: .* where the reference raises (ValueError|IndexError)"),
    # the broad ones last: a mismatch goes to a specific entry first
    KnownBug("r08-r10", "issue 12 item 1, repros/r08_shape_len_not_weak.py, r10_weak_strong_scalars.py",
             "what remains of NEP 50 after its rules landed, as documented (USERGUIDE, Typing rules, A variable has "
             "one type): and/or/if-else of scalars and a variable assigned on several paths give their values "
             "one type",
             {"dtype", "value", "compile-error"}, _ONE_TYPE,
             r"dtype|where the reference has|same_kind|incompatible types|bitwise operators need|needs an integer"),
]


def known_bug(kind, body, message=""):
    """The first known bug that explains a difference of this kind and message in this (minimal) function body,
    or None."""
    for bug in KNOWN_BUGS:
        if bug.matches(kind, body, message):
            return bug
    return None
