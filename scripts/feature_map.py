"""python scripts/feature_map.py [tests/]: which of issue 14's language features each test file exercises.

A static census: every test file is parsed (never imported) and the code that may be compiled is searched for
the constructs below: its module-level functions other than tests and fixtures (the kernels, and the helpers
that build inputs or references, which are not told apart) and the lambdas handed to lk.*. Approximate both
ways: reference helpers count, while kernels written inside a test function or reached through an alias
(`from numpy import linalg as la`) do not. Prints a Markdown table: feature, number of files, the files.
"""
import ast
import os
import sys

NUMPY_FUNCTIONS = ("tile", "flip", "roll", "histogram", "cov", "corrcoef", "sort", "argsort", "median",
                   "percentile", "unique", "searchsorted", "diff", "einsum")
LINALG = ("norm", "inv", "solve", "det", "cholesky")
RANDOM = ("default_rng", "random", "normal", "integers", "uniform", "standard_normal")
UFUNC_METHODS = ("outer", "reduce", "accumulate")


def dotted(node):
    """'np.linalg.norm' for the expression np.linalg.norm, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def kernels(tree):
    """The functions that may be compiled: module-level functions that are not tests or fixtures, and lambdas
    handed to lk.* (lk.jit, lk.map, lk.reduce ...) anywhere."""
    for st in tree.body:
        if isinstance(st, ast.FunctionDef) and not st.name.startswith("test") and \
                not any("fixture" in ast.dump(d) for d in st.decorator_list):
            yield st
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (dotted(node.func) or "").startswith("lk."):
            for arg in node.args:
                if isinstance(arg, ast.Lambda):
                    yield arg


def features_of(tree):
    """The set of feature names the module's functions use."""
    found = set()
    module_arrays = set()  # module-level names bound to np.* calls: arrays from outside a function
    for st in tree.body:
        if isinstance(st, ast.Assign) and isinstance(st.value, ast.Call):
            name = dotted(st.value.func) or ""
            if name.startswith(("np.", "numpy.")):
                module_arrays.update(t.id for t in st.targets if isinstance(t, ast.Name))
    for fn in kernels(tree):
        if isinstance(fn, ast.FunctionDef):
            a = fn.args
            if a.vararg:
                found.add("*args in a definition")
            if a.defaults or a.kw_defaults and any(d is not None for d in a.kw_defaults):
                found.add("default argument values")
        params = {p.arg for p in ast.walk(fn.args) if isinstance(p, ast.arg)}
        for node in ast.walk(fn):
            if isinstance(node, ast.Call):
                name = dotted(node.func) or ""
                head = name.split(".")[-1]
                if name in ("sum", "zip", "enumerate", "isinstance"):
                    found.add(f"builtin {name}()")
                if name == "len" and node.args and isinstance(node.args[0], ast.Call) and dotted(node.args[0].func) == "range":
                    found.add("range as a value")
                if name in ("np.array", "numpy.array") and node.args and isinstance(node.args[0], ast.Call) and \
                        dotted(node.args[0].func) == "range":
                    found.add("range as a value")
                for arg in node.args:
                    if isinstance(arg, ast.Name) and arg.id in ("min", "max", "abs"):
                        found.add("min/max/abs as values")
                    if isinstance(arg, ast.Starred):
                        found.add("*args in a call")
                if isinstance(node.func, ast.Lambda):
                    found.add("a lambda called directly")
                if isinstance(node.func, ast.Name) and node.func.id in params:
                    found.add("a function passed as an argument")
                if head in ("copy", "ravel", "flatten") and isinstance(node.func, ast.Attribute) and \
                        not name.startswith(("np.", "numpy.")):
                    found.add(".copy()/.ravel()/.flatten()")
                if name.startswith(("np.", "numpy.")):
                    rest = name.split(".", 1)[1]
                    if rest in NUMPY_FUNCTIONS:
                        found.add(f"np.{rest}")
                    if rest == "cumsum" and any(k.arg == "axis" for k in node.keywords):
                        found.add("np.cumsum with axis")
                    if rest.startswith("linalg.") and rest.split(".")[1] in LINALG:
                        found.add(f"np.{rest}")
                    if rest.startswith("random.") and head in RANDOM:
                        found.add("np.random")
                    if rest.count(".") == 1 and rest.split(".")[1] in UFUNC_METHODS and \
                            rest.split(".")[0] not in ("linalg", "random"):
                        found.add("ufunc methods (.outer/.reduce/.accumulate)")
                    if rest in ("complex64", "complex128", "conj", "conjugate"):
                        found.add("complex numbers")
            elif isinstance(node, ast.ListComp):
                found.add("list comprehension as an array")
            elif isinstance(node, ast.List) and isinstance(node.ctx, ast.Load):
                found.add("list display as an array")
            elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops) and \
                    any(isinstance(c, ast.Constant) and c.value is None for c in node.comparators):
                found.add("x is None / is not None")
            elif isinstance(node, ast.Constant) and isinstance(node.value, complex):
                found.add("complex numbers")
            elif isinstance(node, ast.Attribute) and node.attr in ("complex64", "complex128") and \
                    (dotted(node) or "").startswith(("np.", "numpy.")):
                found.add("complex numbers")
            elif isinstance(node, ast.Attribute) and node.attr in ("real", "imag"):
                found.add(".real/.imag")
            elif isinstance(node, ast.Name) and node.id in module_arrays and isinstance(node.ctx, ast.Load) and \
                    isinstance(fn, ast.FunctionDef) and not fn.name.startswith("test"):
                found.add("global arrays")
            elif isinstance(node, ast.Lambda) and node is not fn:
                found.add("lambdas")
            elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
                found.add("@ (matrix products)")
    return found


def census(folder):
    """{feature: [file, ...]} over the test files of folder."""
    table = {}
    for name in sorted(os.listdir(folder)):
        if not (name.startswith("test_") and name.endswith(".py")):
            continue
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            tree = ast.parse(f.read(), name)
        for feature in features_of(tree):
            table.setdefault(feature, []).append(name[:-3])
    return table


def main(argv):
    folder = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests")
    table = census(folder)
    print("| feature (issue 14) | test files | which |")
    print("| --- | --- | --- |")
    for feature in sorted(table, key=lambda k: (-len(table[k]), k)):
        files = table[feature]
        shown = ", ".join(files[:8]) + (f", and {len(files) - 8} more" if len(files) > 8 else "")
        print(f"| {feature} | {len(files)} | {shown} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
