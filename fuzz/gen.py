"""gen.py: a seeded generator of random programs within lorikeet's documented subset.

generate(seed) gives a Program: a function `f` over random arguments (fuzz/inputs.py), built one statement at a
time. Each candidate statement is run at once under CPython and NumPy on the program's own inputs, after the
statements already taken: NumPy decides what is well typed (a candidate NumPy refuses is dropped), the values
tell the generator the type of every variable for the next statement, and a candidate whose reference run meets
a documented difference from NumPy (fuzz/known.py, DIFFERENCES) is dropped, so that the programs test only what
lorikeet promises. A candidate that raises (IndexError, a broadcast ValueError) is sometimes kept as the last
statement, to test that lorikeet raises the same exception.

The same seed gives the same program and inputs on every machine (random.Random, no hashing of objects).
"""
import random
import re
import warnings

import numpy as np

from . import inputs, known, refops

UFUNC1_FLOAT = ["sqrt", "exp", "log", "sin", "cos", "tanh", "arctan", "log1p", "expm1", "cbrt", "floor", "ceil",
                "trunc", "rint", "exp2", "log2", "arcsinh", "deg2rad"]
UFUNC1_ANY = ["abs", "absolute", "negative", "square", "sign", "isnan", "isinf", "isfinite", "positive",
              "logical_not"]
UFUNC1_INT = ["invert", "bitwise_not"]
UFUNC2 = ["add", "subtract", "multiply", "divide", "true_divide", "maximum", "minimum", "fmax", "fmin", "power",
          "arctan2", "hypot", "copysign", "equal", "not_equal", "less", "greater_equal", "logical_and",
          "logical_or", "logical_xor", "floor_divide", "remainder", "mod", "fmod", "logaddexp"]
UFUNC2_INT = ["bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"]
BINOPS = ["+", "-", "*", "/", "//", "%", "+", "*", "-"]
INT_BINOPS = ["&", "|", "^"]
CMPOPS = ["<", "<=", ">", ">=", "==", "!="]
REDUCTIONS = ["sum", "prod", "min", "max", "mean", "std", "var", "argmin", "argmax", "all", "any"]
NP_REDUCTIONS = ["sum", "prod", "min", "max", "mean", "amin", "amax", "nansum", "nanmin", "nanmax", "std", "var"]
MATH1 = ["sqrt", "exp", "log1p", "sin", "cos", "atan", "fabs", "floor", "ceil", "trunc", "erf", "tanh", "cbrt"]

PRELUDE = "import math\nimport numpy as np\nimport lorikeet as lk\nnan = float('nan')\ninf = float('inf')\n"


class Program:
    """A generated program: helpers (module-level functions f may call), f's parameters and body (statement
    blocks, each the source of one statement at indentation 0), the names it returns, and the source of its
    inputs."""

    def __init__(self, seed):
        self.seed = seed
        self.helpers = []
        self.params = []
        self.input_lines = []
        self.body = []
        self.returns = []

    def source(self, note=""):
        out = [f"# lorikeet fuzz program, seed {self.seed}{note}", "# python -m fuzz --replay THIS_FILE", PRELUDE]
        for h in self.helpers:
            out.append(h + "\n")
        out.append(f"def f({', '.join(self.params)}):")
        for block in self.body:
            out.extend("    " + line for line in block.splitlines())
        ret = ", ".join(self.returns)
        out.append(f"    return ({ret},)" if len(self.returns) == 1 else f"    return ({ret})")
        out.append("\n\ndef make_inputs():")
        out.extend("    " + line for line in self.input_lines)
        out.append(f"    return ({', '.join(self.params)}{',' if len(self.params) == 1 else ''})")
        return "\n".join(out) + "\n"


def describe(v):
    """The type of a reference value, as the generator needs it: ('array', dtype, ndim), ('scalar', dtype, weak)
    or ('tuple', n)."""
    if isinstance(v, np.ndarray):
        if v.ndim == 0:
            return ("scalar", str(v.dtype), False)
        return ("array", str(v.dtype), v.ndim)
    if isinstance(v, np.generic):
        return ("scalar", str(v.dtype), False)
    if isinstance(v, bool):
        return ("scalar", "bool", True)
    if isinstance(v, int):
        return ("scalar", "int64", True)
    if isinstance(v, float):
        return ("scalar", "float64", True)
    if isinstance(v, tuple):
        return ("tuple", len(v))
    return ("other",)


class Outcome:
    """What running a candidate under CPython/NumPy did: the exception (or None), warning messages, and the
    namespace afterwards."""

    def __init__(self, exc, warns, ns):
        self.exc, self.warns, self.ns = exc, warns, ns


def run_reference(prog, extra=()):
    """Runs the program's inputs and body (plus the blocks in extra) at module level in a fresh namespace."""
    ns = {"__name__": "fuzz_ref"}
    src = PRELUDE + "\n".join(prog.helpers) + "\n" + "\n".join(prog.input_lines) + "\n"
    exc = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            exec(compile(src, "<fuzz-inputs>", "exec"), ns)
            ns["lk"] = refops
            for block in list(prog.body) + list(extra):
                exec(compile(block, "<fuzz>", "exec"), ns)
        except Exception as e:  # the candidate's exception is data here
            exc = e
    return Outcome(exc, [str(w.message) for w in caught], ns)


class Gen:
    def __init__(self, seed, size=None):
        self.rng = random.Random(seed)
        self.prog = Program(seed)
        self.size = size if size is not None else self.rng.randint(2, 8)
        self.nvars = 0
        self.ns = {}
        self.raising = False

    # -- variables ------------------------------------------------------------------------------------------
    def vars_of(self, kind=None, pred=None):
        out = []
        for name in self.prog.params + self.defined:
            d = describe(self.ns.get(name))
            if (kind is None or d[0] == kind) and (pred is None or pred(d, self.ns[name])):
                out.append(name)
        return out

    def new_name(self):
        self.nvars += 1
        return f"v{self.nvars}"

    # -- inputs ---------------------------------------------------------------------------------------------
    def make_inputs(self):
        rng = self.rng
        base = inputs.random_shape(rng, 2)
        for i in range(rng.randint(1, 3)):
            dtype = rng.choice(inputs.DTYPES)
            ndim = rng.choice([1, 1, 2, 2])
            shape = inputs.random_shape(rng, ndim, base if rng.random() < 0.8 else None)
            self.prog.params.append(f"a{i}")
            self.prog.input_lines.append(f"a{i} = {inputs.array_source(rng, dtype, shape)}")
        for i in range(rng.choice([0, 1, 1, 2])):
            r = rng.random()
            if r < 0.55:
                src = inputs.python_scalar_source(rng, rng.choice(["int", "float", "float", "bool"]))
            else:
                src = inputs.numpy_scalar_source(rng, rng.choice(inputs.DTYPES))
            self.prog.params.append(f"s{i}")
            self.prog.input_lines.append(f"s{i} = {src}")

    # -- expressions ----------------------------------------------------------------------------------------
    def literal(self, kind=None):
        rng = self.rng
        kind = kind or rng.choice(["int", "int", "float", "bool", "np"])
        if kind == "int":
            return str(rng.choice([0, 1, 2, 3, 5, 7, -1, -3, 100]))
        if kind == "float":
            return rng.choice(["0.5", "2.0", "-1.5", "3.25", "1e-3", "0.0", "math.pi", "np.inf", "np.nan"])
        if kind == "bool":
            return rng.choice(["True", "False"])
        dt = rng.choice(inputs.DTYPES)
        val = {"bool": "True"}.get(dt, rng.choice(["1", "2", "3", "0"]) if dt not in inputs.FLOAT_DTYPES
                                   else rng.choice(["0.5", "2.0", "-1.25"]))
        return f"np.{dt}({val})"

    def leaf(self, want=None):
        rng = self.rng
        r = rng.random()
        if r < 0.15:
            return self.literal()
        if r < 0.22:
            arrs = self.vars_of("array")
            if arrs:
                a = rng.choice(arrs)
                return rng.choice([f"len({a})", f"{a}.shape[0]", f"{a}.size", f"{a}.ndim", f"{a}.shape[-1]"])
        names = self.vars_of(want) if want else self.vars_of(pred=lambda d, v: d[0] in ("array", "scalar"))
        if not names:
            names = [self.literal()] if want == "scalar" else \
                self.vars_of(pred=lambda d, v: d[0] in ("array", "scalar")) or [self.literal()]
        return rng.choice(names)

    def expr(self, depth=0, want=None):
        rng = self.rng
        if depth >= 3 or rng.random() < 0.3 + 0.15 * depth:
            return self.leaf(want)
        r = rng.random()
        sub = lambda: self.expr(depth + 1, want)
        if r < 0.3:
            return f"({sub()} {rng.choice(BINOPS)} {sub()})"
        if r < 0.36:
            return f"({sub()} {rng.choice(INT_BINOPS)} {sub()})"
        if r < 0.4:
            return f"({sub()} {rng.choice(['<<', '>>'])} {rng.randint(0, 5)})"
        if r < 0.44:
            return f"({sub()} ** {rng.choice(['0', '1', '2', '3', '0.5', '2.0'])})"
        if r < 0.52:
            return f"({sub()} {rng.choice(CMPOPS)} {sub()})"
        if r < 0.56:
            return f"{rng.choice(['-', '~', '+', 'not '])}{sub()}" if want == "scalar" else \
                f"{rng.choice(['-', '~', '+'])}{sub()}"
        if r < 0.66:
            fn = rng.choice(UFUNC1_FLOAT + UFUNC1_ANY + UFUNC1_INT)
            return f"np.{fn}({sub()})"
        if r < 0.76:
            fn = rng.choice(UFUNC2 + UFUNC2_INT)
            return f"np.{fn}({sub()}, {sub()})"
        if r < 0.8:
            return f"np.where({self.expr(depth + 1, want)} > 0, {sub()}, {sub()})"
        if r < 0.84:
            return f"{sub()}.astype(np.{rng.choice(inputs.DTYPES)})"
        if r < 0.87:
            return f"np.{rng.choice(inputs.DTYPES)}({sub()})"
        if r < 0.9:
            return f"np.clip({sub()}, {self.literal('int')}, {rng.choice(['5', '9', '100'])})"
        if want == "scalar" or r < 0.95:
            s = self.vars_of("scalar")
            if s:
                x, c = rng.choice(s), rng.choice(s)
                # the two sides of and/or/if-else and min/max get one common type in lorikeet (documented):
                # the other side is a scalar of x's own type
                y = rng.choice([n for n in s if describe(self.ns[n]) == describe(self.ns[x])])
                return rng.choice([f"({x} if {c} > 0 else {y})", f"min({x}, {y})", f"max({x}, {y})",
                                   f"abs({x})", f"({x} and {y})", f"({x} or {y})", f"math.{rng.choice(MATH1)}({x})",
                                   f"int({x})", f"float({x})", f"bool({x})", f"math.floor({x})"])
        arrs = self.vars_of("array")
        if arrs:
            return self.index_expr(rng.choice(arrs))
        return self.leaf(want)

    def index_expr(self, a):
        rng = self.rng
        nd = describe(self.ns[a])[2]
        def one():
            r = rng.random()
            if r < 0.3:
                return str(rng.choice([0, 1, -1, 2, -2]))
            if r < 0.45:
                return ":"
            lo = rng.choice(["", "1", "-1", "2", "-3"])
            hi = rng.choice(["", "3", "-1", "4"])
            st = rng.choice(["", "", "2", "-1", "-2", "3"])
            return f"{lo}:{hi}" + (f":{st}" if st else "")
        items = [one() for _ in range(rng.randint(1, nd))]
        if rng.random() < 0.1:
            items.insert(rng.randint(0, len(items)), "None")
        if rng.random() < 0.1:  # the axes the other items leave
            items.insert(rng.randint(0, len(items)), "...")
        return f"{a}[{', '.join(items)}]"

    # -- statements -----------------------------------------------------------------------------------------
    def stmt_assign(self):
        v = self.new_name()
        return f"{v} = {self.expr()}", [v]

    def stmt_reduce(self):
        rng = self.rng
        arrs = self.vars_of("array")
        if not arrs:
            return self.stmt_assign()
        a = rng.choice(arrs)
        nd = describe(self.ns[a])[2]
        v = self.new_name()
        kw = []
        if rng.random() < 0.5:
            kw.append(f"axis={rng.randint(-nd, nd - 1)}")
            if rng.random() < 0.3:
                kw.append("keepdims=True")
        r = rng.random()
        if r < 0.45:
            m = rng.choice(REDUCTIONS)
            if m in ("std", "var") and rng.random() < 0.3:
                kw.append("ddof=1")
            if m in ("argmin", "argmax"):
                kw = [k for k in kw if not k.startswith("keepdims")]
            return f"{v} = {a}.{m}({', '.join(kw)})", [v]
        if r < 0.75:
            m = rng.choice(NP_REDUCTIONS)
            if m in ("std", "var") and rng.random() < 0.3:
                kw.append("ddof=1")
            return f"{v} = np.{m}({a}{''.join(', ' + k for k in kw)})", [v]
        kw = [k for k in kw if k.startswith("axis")]
        m = rng.choice(["cumsum", "cumprod"])
        return f"{v} = np.{m}({a}{''.join(', ' + k for k in kw)})", [v]

    def stmt_view(self):
        arrs = self.vars_of("array")
        if not arrs:
            return self.stmt_assign()
        v = self.new_name()
        a = self.rng.choice(arrs)
        r = self.rng.random()
        if r < 0.7:
            return f"{v} = {self.index_expr(a)}", [v]
        if r < 0.85:
            return f"{v} = {a}.T", [v]
        return f"{v} = {a}.reshape(-1)" if self.rng.random() < 0.5 else f"{v} = {a}.ravel()", [v]

    def stmt_write(self):
        rng = self.rng
        arrs = self.vars_of("array")
        if not arrs:
            return self.stmt_assign()
        a = rng.choice(arrs)
        r = rng.random()
        if r < 0.4:
            return f"{self.index_expr(a)} = {self.expr(1)}", []
        if r < 0.6:
            return f"{a}[{a} {rng.choice(CMPOPS)} {self.literal('int')}] = {self.literal(rng.choice(['int', 'float']))}", []
        if r < 0.8:
            return f"{a} {rng.choice(['+', '-', '*', '//', '&', '|'])}= {self.expr(1)}", []
        idx = rng.choice(self.vars_of("array", lambda d, v: d[1].startswith(("int", "uint")) and d[2] == 1)
                         or [None])
        if idx is None:
            return f"{a}[:] = {self.expr(1)}", []
        nd = describe(self.ns[a])[2]
        if nd == 1:
            return f"{a}[{idx}] = {self.expr(1)}", []
        # an index array into an array of more dimensions: rows, rows with full slices, a column, elements
        k = rng.randint(-2, 2)
        form = rng.choice([f"{a}[{idx}]", f"{a}[{idx}, :]", f"{a}[{idx}, {k}]", f"{a}[{idx}, {idx}]"])
        return f"{form} = {self.expr(1)}", []

    def stmt_if(self):
        rng = self.rng
        v = self.new_name()
        sc = self.vars_of("scalar") or ["1"]
        cond = rng.choice([f"{rng.choice(sc)} > {self.literal('int')}", f"{self.expr(1, 'scalar')}",
                           f"{rng.choice(sc)} != {rng.choice(sc)}"])
        e1, e2 = self.expr(1), self.expr(1)
        if rng.random() < 0.3:
            return f"if {cond}:\n    {v} = {e1}\nelif {rng.choice(sc)} < 0:\n    {v} = {e2}\nelse:\n    {v} = {self.expr(1)}", [v]
        return f"if {cond}:\n    {v} = {e1}\nelse:\n    {v} = {e2}", [v]

    def stmt_loop(self):
        rng = self.rng
        arrs1 = self.vars_of("array", lambda d, v: d[2] == 1)
        arrs = self.vars_of("array")
        if not arrs:
            return self.stmt_assign()
        v = self.new_name()
        r = rng.random()
        if r < 0.3 and arrs1:
            a = rng.choice(arrs1)
            init, conv = rng.choice([("0.0", "float"), ("0", "int")])
            op = rng.choice(["+", "-", "*"]) if conv == "int" else rng.choice(["+", "-", "*", "max", "min"])
            body = f"{v} = {op}({v}, {conv}({a}[i]))" if op in ("max", "min") else f"{v} = {v} {op} {conv}({a}[i])"
            step = rng.choice(["range(len({a}))", "range({a}.shape[0] - 1, -1, -1)", "range(0, len({a}), 2)"])
            return f"{v} = {init}\nfor i in {step.format(a=a)}:\n    {body}", [v]
        if r < 0.5 and arrs1:
            a = rng.choice(arrs1)
            return (f"{v} = 0.0\nfor x in {a}:\n    if x > {self.literal('int')}:\n        continue\n"
                    f"    {v} = {v} + float(x)\n    if {v} > 50.0:\n        break"), [v]
        if r < 0.7:
            a = rng.choice(arrs)
            dt = describe(self.ns[a])[1]
            e = f"{a}[i] * 2"
            if self.ns[a].shape[0] > 0 and rng.random() < 0.6:
                # a body the reference never runs would be typed by nobody: probe it at i = 0
                e = re.sub(rf"\b{a}\b", f"{a}[i]", self.expr(1))
                probe = run_reference(self.prog, [f"i = 0\n__probe = np.zeros_like({a})\n__probe[i] = {e}"])
                if known.reference_verdict(probe, [], e) != "ok":
                    e = f"{a}[i] * 2"
            rng_ = rng.choice(["range", "lk.prange"])
            return f"{v} = np.zeros_like({a})\nfor i in {rng_}({a}.shape[0]):\n    {v}[i] = {e}", [v]
        if r < 0.85:
            n = rng.choice(self.vars_of("scalar", lambda d, x: d[1].startswith("int") and d[2]) or ["3"])
            return (f"{v} = 0\nj = 0\nwhile j < {n} and j < 20:\n    {v} = {v} + j * j\n    j += 1"), [v]
        a = rng.choice(arrs)
        return f"{v} = 0\nfor i in range({a}.shape[0]):\n    for j in range({a}.shape[-1]):\n        {v} = {v} + i * j", [v]

    def stmt_tuple(self):
        rng = self.rng
        v, p, q = self.new_name(), self.new_name(), self.new_name()
        e1, e2 = self.expr(1), self.expr(1)
        r = rng.random()
        if r < 0.5:
            return f"{v} = ({e1}, {e2})\n{p}, {q} = {v}", [v, p, q]
        return f"{p}, {q} = {e2}, {e1}\n{v} = ({q}, ({p}, {q}))[{rng.choice(['0', '1', '-1'])}]", [v, p, q]

    def stmt_comprehension(self):
        rng = self.rng
        arrs1 = self.vars_of("array", lambda d, v: d[2] == 1)
        v = self.new_name()
        body = lambda x: rng.choice([f"{x} * 2", f"{x} + 1", f"abs({x})", f"{x} * {x}",
                                     f"{x} - {self.leaf('scalar')}"])
        if arrs1 and rng.random() < 0.6:
            a = rng.choice(arrs1)
            cond = f" if x > {self.literal('int')}" if rng.random() < 0.3 else ""
            return f"{v} = np.array([{body('x')} for x in {a}{cond}])", [v]
        n = rng.randint(0, 5)
        if rng.random() < 0.3:
            return f"{v} = np.array([[i * j + {self.literal('int')} for j in range(3)] for i in range({n})])", [v]
        return f"{v} = np.array([{body('i')} for i in range({n})])", [v]

    def stmt_operator(self):
        rng = self.rng
        arrs = self.vars_of("array")
        if not arrs:
            return self.stmt_assign()
        a = rng.choice(arrs)
        v = self.new_name()
        r = rng.random()
        lam1 = rng.choice(["lambda x: x * 2", "lambda x: x + 1", "lambda x: abs(x)", "lambda x: x * x",
                           "lambda x: np.sqrt(x)", "lambda x: x > 0", "lambda x: -x", "lambda x: x / 2"])
        lam2s = ["lambda x, y: x + y", "lambda x, y: x * y", "lambda x, y: x - y"]
        nd = describe(self.ns[a])[2]
        if r >= 0.25 and r < 0.35:
            b = rng.choice(arrs + self.vars_of("scalar"))
            if describe(self.ns[b])[:2] == describe(self.ns[a])[:2]:
                # max/min of two types: lorikeet gives their common type (documented), Python one of them
                lam2s += ["lambda x, y: max(x, y)", "lambda x, y: min(x, y)"]
            return f"{v} = lk.map({rng.choice(lam2s)}, {a}, {b})", [v]
        # reduce and scan assume fn associative (documented): no subtraction; max/min only of integers (with a
        # NaN, Python's max and min are not associative)
        lam2 = rng.choice(["lambda x, y: x + y", "lambda x, y: x * y"] + (
            ["lambda x, y: max(x, y)", "lambda x, y: min(x, y)"] if describe(self.ns[a])[1] not in
            inputs.FLOAT_DTYPES else []))
        if r < 0.25:
            return f"{v} = lk.map({lam1}, {a})", [v]
        if r < 0.55:
            ax = f", axis={rng.randint(0, nd - 1)}" if rng.random() < 0.4 else ""
            # an init of the elements' type: the type of a fold from another type is lorikeet's own rule
            dt = describe(self.ns[a])[1]
            init = f", init={self.literal({'int64': 'int', 'float64': 'float'}[dt])}" \
                if dt in ("int64", "float64") and rng.random() < 0.5 else ""
            return f"{v} = lk.reduce({lam2}, {a}{init}{ax})", [v]
        if r < 0.7:
            ax = f", axis={rng.randint(0, nd - 1)}" if rng.random() < 0.4 else ""
            return f"{v} = lk.scan({lam2}, {a}{ax})", [v]
        if r < 0.8:
            return f"{v} = lk.imap(lambda i: i * {self.literal('int')} + 1, {a}.shape[0])", [v]
        if r < 0.88:
            return f"{v} = lk.ireduce(lambda i: i * i, lambda x, y: x + y, {a}.shape[0], 0)", [v]
        if r < 0.94 and nd >= 1:
            b = rng.choice(arrs)
            if describe(self.ns[b])[2] == 1 and nd == 1:
                return f"{v} = lk.outer_map({lam2}, {a}, {b})", [v]
        return f"{v} = lk.map(lambda r: r.sum(), {a}, axis=0)", [v]

    def stmt_helper(self):
        rng = self.rng
        h = f"h{len(self.prog.helpers)}"
        v = self.new_name()
        x = self.leaf()
        y = self.leaf()
        bodies = ['x * y + 1', 'x - y', 'x + y * 2', '(x, y)', 'x / 2']
        if describe(self.ns.get(x, 0))[0] == "scalar" and describe(self.ns.get(x, 0)) == describe(self.ns.get(y, 0)):
            bodies.append('max(x, y)')  # the builtin takes scalars (USERGUIDE, Builtins)
        self.prog.helpers.append(f"def {h}(x, y):\n    return {rng.choice(bodies)}")
        return f"{v} = {h}({x}, {y})", [v]

    def stmt_check(self):
        """The program's own checks: assert, or raise with a message made at run time."""
        rng = self.rng
        sc = self.vars_of("scalar") or ["1"]
        x = rng.choice(sc)
        cond = rng.choice([f"{x} > {self.literal('int')}", f"{x} != {rng.choice(sc)}", f"{self.expr(1, 'scalar')}"])
        msg = rng.choice([f'"{x} is out of range"', f'f"bad value {{{x}}}"', f'f"{{{x}:.3g}} and {{{rng.choice(sc)}}}"'])
        if rng.random() < 0.5:
            return f"assert {cond}, {msg}", []
        exc = rng.choice(["ValueError", "IndexError", "ArithmeticError", "RuntimeError"])
        return f"if not ({cond}):\n    raise {exc}({msg})", []

    STATEMENTS = [(stmt_assign, 30), (stmt_reduce, 12), (stmt_view, 8), (stmt_write, 10), (stmt_if, 8),
                  (stmt_loop, 10), (stmt_tuple, 5), (stmt_comprehension, 6), (stmt_operator, 10), (stmt_helper, 3),
                  (stmt_check, 3)]

    # -- acceptance -----------------------------------------------------------------------------------------
    def accept(self, block, names, kind):
        """Runs the candidate after the program so far; returns 'ok', 'raises' or None (dropped)."""
        helpers_before = len(self.prog.helpers)
        out = run_reference(self.prog, [block])
        verdict = known.reference_verdict(out, names, block)
        if verdict is None or (verdict == "raises" and self.rng.random() > 0.25):
            del self.prog.helpers[helpers_before:]
            return None
        if not branch_types_agree(self, block, names):
            return None
        self.ns = out.ns
        return verdict

    def generate(self):
        self.defined = []
        self.make_inputs()
        self.ns = run_reference(self.prog).ns
        stmts, weights = zip(*self.STATEMENTS)
        tries = 0
        while len(self.prog.body) < self.size and tries < self.size * 12:
            tries += 1
            nv = self.nvars
            kind = self.rng.choices(stmts, weights)[0]
            block, names = kind(self)
            verdict = self.accept(block, names, kind.__name__)
            if verdict is None:
                self.nvars = nv
                continue
            self.prog.body.append(block)
            self.defined.extend(n for n in names if n not in self.defined)
            if verdict == "raises":
                break
        rets = [n for n in self.defined if describe(self.ns.get(n))[0] in ("array", "scalar", "tuple")]
        self.rng.shuffle(rets)
        self.prog.returns = rets[:self.rng.randint(1, 4)] if rets else ["0"]
        # arguments written by the body come back in the comparison of the arguments' state afterwards
        return self.prog


def branch_types_agree(gen, block, names):
    """An if/elif/else block gives its variable one type on every path (lorikeet's rule, documented): each
    branch's assignment is run alone and must give the same type."""
    if not block.startswith("if ") or not names:  # a check (stmt_check) assigns nothing
        return True
    v = names[0]
    exprs = [line.split("=", 1)[1].strip() for line in block.splitlines() if line.strip().startswith(f"{v} =")]
    types = set()
    for e in exprs:
        out = run_reference(gen.prog, [f"{v} = {e}"])
        if out.exc is not None or known.reference_verdict(out, [v], f"{v} = {e}") != "ok":
            return False
        val = out.ns[v]
        types.add(describe(val) + ((np.shape(val),) if isinstance(val, np.ndarray) else ()))
    return len(types) == 1


def generate(seed, size=None):
    return Gen(seed, size).generate()
