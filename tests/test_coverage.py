"""The coverage table (issue 14 item 7): the user guide's table of what compiles by name is generated from the
library's registry (typespec/registry.c), the registry is exactly what the compiler takes, and a name it does not
take is refused with the nearest names that it does."""
import builtins
import importlib.util
import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import lorikeet as lk
from lorikeet import _coverage

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
GUIDE = os.path.join(ROOT, "docs", "USERGUIDE.md")

# the CompileErrors that refuse a call or an attribute by its name (registry.c's ts_unsupported, the frontend's
# unknown module attribute, lorikeet's Python-side functions): any other error means the lowering took the name
# and objected to the probe's argument
REFUSED_BY_NAME = re.compile(
    r"^((numpy|math)\.[\w.]+(\(\))? is not supported"
    r"|array method \w+\(\) is not supported"
    r"|array attribute \.\w+ is not supported"
    r"|the builtin \w+\(\) is not supported"
    r"|lorikeet\.\w+(\(\))? is not (supported inside compiled code|callable)"
    r"|module '[\w.]+' has no attribute"
    r"|module [\w.]+ is not supported"
    r"|name '\w+' refers to an unsupported object)")


# what compiles by name is typespec's to say, the same for every backend (the gpu's refusals of some are the
# registry's `needs`, checked below on the typed IR): the probes compile for the cpu under any LORIKEET_BACKEND
PROBE_BACKEND = "cpu"


def registry_names():
    return {(kind, name) for kind, name, *_ in _coverage.entries()}


def public(obj, callables=True):
    out = []
    for name in dir(obj):
        if name.startswith("_"):
            continue
        value = getattr(obj, name, None)
        if callables != callable(value) or (callables and isinstance(value, type(np))):
            continue
        out.append(name)
    return out


def probes():
    """(kind, name, source of a function f(a, m, x), ...): a call of every public name lorikeet could be asked
    for. a is a 1-D float array, m a 2-D one, x a float."""
    cases = []
    for name in public(np):
        value = getattr(np, name)
        if isinstance(value, type) and not issubclass(value, np.generic):
            continue  # classes other than the scalar types (np.ndarray, np.dtype, ...)
        cases.append(("numpy", name, f"np.{name}(a)"))
        if isinstance(value, np.ufunc):
            for method in ("reduce", "accumulate", "outer", "reduceat", "at"):
                cases.append(("numpy", f"{name}.{method}", f"np.{name}.{method}(a)"))
    for sub in ("linalg", "random", "fft"):
        cases += [("numpy", f"{sub}.{name}", f"np.{sub}.{name}(m)") for name in public(getattr(np, sub))]
    cases += [("method", name, f"a.{name}()") for name in public(np.ndarray)]
    cases += [("attribute", name, f"y = a.{name}") for name in public(np.ndarray, callables=False)]
    cases += [("math", name, f"math.{name}(x)") for name in public(math)]
    cases += [("builtin", name, f"{name}(a)") for name in public(builtins) if name[0].islower()]
    cases += [("lorikeet", name, f"lk.{name}(a)") for name in public(lk)]
    return cases


def compile_probes(tmp_path, cases):
    """{(kind, name): the first line of the CompileError, or None where it compiled}."""
    path = tmp_path / "coverage_probes.py"
    with open(path, "w") as fh:
        fh.write("import math\nimport numpy as np\nimport lorikeet as lk\n\n")
        for i, (_, _, src) in enumerate(cases):
            fh.write(f"def f{i}(a, m, x):\n    {src}\n    return 0\n\n")
    spec = importlib.util.spec_from_file_location("coverage_probes", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = {}
    for i, (kind, name, _) in enumerate(cases):
        try:
            lk.jit(getattr(mod, f"f{i}"), backend=PROBE_BACKEND).inspect_types(np.ones(4), np.eye(3), 1.5)
            out[kind, name] = None
        except lk.CompileError as e:
            out[kind, name] = str(e).splitlines()[0]
    return out


@pytest.mark.filterwarnings("ignore::FutureWarning")  # dir(np) reaches np.bytes, np.object, np.str
def test_the_registry_is_what_the_compiler_takes(tmp_path):
    # every public name of numpy (its ufuncs' methods, numpy.linalg, numpy.random, numpy.fft), ndarray, math,
    # builtins and lorikeet is compiled; the registry lists a name exactly when the lowering takes it
    cases = probes()
    results = compile_probes(tmp_path, cases)
    taken = {key for key, msg in results.items() if msg is None or not REFUSED_BY_NAME.search(msg)}
    listed = registry_names()
    probed = set(results)
    assert not (taken - listed), f"compiled but not in the registry: {sorted(taken - listed)}"
    missing = (listed & probed) - taken
    assert not missing, f"in the registry but refused by name: {[(k, results[k]) for k in sorted(missing)]}"
    # what the probes cannot name (np.array's spellings are all public, so nothing should be left)
    assert listed - probed == set(), sorted(listed - probed)


# a call of each name whose lowering makes (or, for the last ones, does not make) an intrinsic a backend may refuse
NEEDS_PROBES = {
    ("numpy", "sort"): "np.sort(a)", ("numpy", "argsort"): "np.argsort(a)", ("numpy", "median"): "np.median(a)",
    ("numpy", "percentile"): "np.percentile(a, 50.0)", ("numpy", "quantile"): "np.quantile(a, 0.5)",
    ("numpy", "unique"): "np.unique(a)", ("numpy", "histogram"): "np.histogram(a)[0]",
    ("method", "sort"): "a.sort()", ("method", "argsort"): "a.argsort()",
    ("numpy", "linalg.inv"): "np.linalg.inv(m)", ("numpy", "linalg.det"): "np.linalg.det(m)",
    ("numpy", "linalg.solve"): "np.linalg.solve(m, a[:3])", ("numpy", "linalg.cholesky"): "np.linalg.cholesky(m)",
    ("numpy", "linalg.norm"): "np.linalg.norm(m)", ("numpy", "searchsorted"): "np.searchsorted(a, 0.5)",
    ("numpy", "cov"): "np.cov(m)", ("numpy", "corrcoef"): "np.corrcoef(m)", ("numpy", "sum"): "np.sum(m)",
    ("numpy", "cumsum"): "np.cumsum(a)",
}


SORTS = {("numpy", "sort"), ("numpy", "argsort"), ("numpy", "median"), ("numpy", "percentile"), ("numpy", "quantile"),
         ("numpy", "unique"), ("numpy", "histogram"), ("method", "sort"), ("method", "argsort")}
FACTORISES = {("numpy", "linalg.inv"), ("numpy", "linalg.det"), ("numpy", "linalg.solve"), ("numpy", "linalg.cholesky")}


def test_what_each_name_needs_is_what_its_lowering_makes(tmp_path):
    # the names that lower to a host intrinsic (sort, linalg: runtime/gpu_host.c on the gpu) make it, and their
    # neighbours do not; the gpu column refuses none of them
    needs = {key: "sort" if key in SORTS else "linalg" if key in FACTORISES else None for key in NEEDS_PROBES}
    refused = {(kind, name) for kind, name, _, _, r in _coverage.entries() if r["gpu"]}
    assert not refused, sorted(refused)
    path = tmp_path / "needs_probes.py"
    keys = sorted(NEEDS_PROBES)
    with open(path, "w") as fh:
        fh.write("import numpy as np\n\n")
        for i, key in enumerate(keys):
            fh.write(f"def f{i}(a, m):\n    return {NEEDS_PROBES[key]}\n\n")
    spec = importlib.util.spec_from_file_location("needs_probes", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for i, key in enumerate(keys):
        f = lk.jit(getattr(mod, f"f{i}"), backend=PROBE_BACKEND)
        ir = f.inspect_types(np.linspace(0.0, 1.0, 5), 2 * np.eye(3) + 0.5)
        made = {w for w in ("sort", "linalg") if re.search(rf"\b{w}\(", ir)}
        assert made == ({needs[key]} if needs[key] else set()), (key, made)


def guide_table():
    text = open(GUIDE, encoding="utf-8").read()
    start, end = text.find(_coverage.BEGIN), text.find(_coverage.END)
    assert 0 <= start < end, "the coverage markers are missing from docs/USERGUIDE.md"
    return text[start + len(_coverage.BEGIN) + 1:end]


def test_the_guides_table_is_the_registrys():
    assert guide_table() == _coverage.markdown(), (
        "docs/USERGUIDE.md's coverage table is stale: run `PYTHONPATH=pyshim python -m lorikeet coverage --write "
        "docs/USERGUIDE.md`")


def test_the_table_names_every_entry_and_the_gpus_refusals():
    table = _coverage.markdown()
    for kind, name, _, _, refusals in _coverage.entries():
        form = dict((k, f) for k, _, f in _coverage.SECTIONS)[kind]
        assert "`" + form.format(name) + "`" in table, name
    # sorts, factorisations and draws run on the host on the gpu (runtime/gpu_host.c)
    assert re.search(r"`np\.random\.default_rng`.*\| yes \| yes \| yes \|", table)
    assert re.search(r"`np\.sort`.*\| yes \| yes \| yes \|", table)
    assert re.search(r"`np\.linalg\.inv`.*\| yes \| yes \| yes \|", table)
    assert re.search(r"`np\.sum`.*\| yes \| yes \| yes \|", table)


def test_the_command_line_prints_the_table(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "pyshim"))
    p = subprocess.run([sys.executable, "-m", "lorikeet", "coverage"], capture_output=True, text=True, env=env,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout == _coverage.markdown()
    copy = tmp_path / "guide.md"
    copy.write_text("before\n" + _coverage.BEGIN + "\nold\n" + _coverage.END + "\nafter\n")
    p = subprocess.run([sys.executable, "-m", "lorikeet", "coverage", "--write", str(copy)], capture_output=True,
                       text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    assert copy.read_text() == "before\n" + _coverage.BEGIN + "\n" + _coverage.markdown() + _coverage.END + "\nafter\n"


# ---- did you mean: a refused name gets the nearest that compile ----

def misspelt_sin(a):
    return np.sinn(a)


def misspelt_cumsum(a):
    return np.cumsum2(a)


def misspelt_method(a):
    return a.summ()


def missing_linalg(a):
    return np.linalg.eig(a)


def misspelt_builtin(a):
    return summ(a)  # noqa: F821


def misspelt_math(a):
    return math.sqr(a[0])


def misspelt_operator(a):
    return lk.mapp(abs, a)


def misspelt_ufunc_method(a):
    return np.add.reducee(a)


def numpy2_alias(a):
    return np.asin(a)


def math_alias(a):
    return math.arcsin(a[0])


def misspelt_attribute(a):
    return a.sizes


def far_from_everything(a):
    return np.fft.fft(a)


@pytest.mark.parametrize("f, expected", [
    (misspelt_sin, "module 'numpy' has no attribute 'sinn'; did you mean numpy.sin, numpy.sinh or numpy.sign?"),
    (misspelt_cumsum, "module 'numpy' has no attribute 'cumsum2'; did you mean numpy.cumsum?"),
    (misspelt_method, "array method summ() is not supported; did you mean .sum()?"),
    (missing_linalg, "numpy.linalg.eig is not supported (lorikeet has numpy.linalg.cholesky, det, inv, norm, solve)"),
    (misspelt_builtin, "name 'summ' is not defined; did you mean sum()?"),
    (misspelt_math, "module 'math' has no attribute 'sqr'; did you mean math.sqrt?"),
    (misspelt_operator, "module 'lorikeet' has no attribute 'mapp'; did you mean lorikeet.map?"),
    (misspelt_ufunc_method, "numpy.add.reducee is not supported; did you mean numpy.add.reduce?"),
    (numpy2_alias, "numpy.asin is not supported; did you mean numpy.arcsin (the same function)?"),
    (math_alias, "module 'math' has no attribute 'arcsin'; did you mean math.asin (the same function)?"),
    (misspelt_attribute, "array attribute .sizes is not supported; did you mean .size?"),
    (far_from_everything, "numpy.fft.fft is not supported"),
], ids=lambda v: v.__name__ if callable(v) else "")
def test_a_refused_name_suggests_the_nearest_that_compile(f, expected):
    with pytest.raises(lk.CompileError) as e:
        lk.jit(f)(np.eye(3))
    first = str(e.value).splitlines()[0]
    assert first == expected
    assert f"line {f.__code__.co_firstlineno + 1}" in str(e.value)  # the call's line, as for any CompileError


def sorted_builtin(a):
    return sorted(a[0])


def squeezed(a):
    return np.squeeze(a)


def filled(a):
    a.fill(0.0)
    return a


def searched_by_method(a):
    return a[0].searchsorted(0.5)


@pytest.mark.parametrize("f, expected", [
    (sorted_builtin, "the builtin sorted() is not supported; write np.sort(x) (lists are arrays in lorikeet) instead"),
    (squeezed, "numpy.squeeze is not supported; write a.reshape(...) or an index (a[:, 0]) instead"),
    (filled, "array method fill() is not supported; write a[:] = v instead"),
    (searched_by_method, "array method searchsorted() is not supported; write np.searchsorted(a, v) instead"),
], ids=lambda v: v.__name__ if callable(v) else "")
def test_a_refused_name_with_an_equivalent_names_the_form_that_compiles(f, expected):
    """Not the nearest spelling (np.squeeze's is np.square): the form that does the same work."""
    with pytest.raises(lk.CompileError) as e:
        lk.jit(f)(np.eye(3))
    assert str(e.value).splitlines()[0] == expected


def equivalents_written(a):
    v = np.sort(a[0])
    a[1][:] = 2.0
    return v, np.searchsorted(a[0], 0.5), a.reshape(9), np.mean(a, 0), np.sum(a != 0), a[::-1], a[0] ** 2


def test_the_equivalents_named_compile():
    got = lk.jit(equivalents_written)(np.eye(3))
    want = equivalents_written(np.eye(3))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_every_suggestion_compiles(tmp_path):
    # the names suggested are the registry's: each compiles where the misspelt one did not
    cases = [("numpy", "sinn", "np.sin(a)"), ("numpy", "sinh", "np.sinh(a)"), ("numpy", "sign", "np.sign(a)"),
             ("method", "sum", "a.sum()"), ("numpy", "arcsin", "np.arcsin(a)"),
             ("numpy", "add.reduce", "np.add.reduce(a)")]
    assert all(msg is None for msg in compile_probes(tmp_path, cases).values())
