"""Compilation is deterministic and content-addressed: the same function and argument types give the same typed
IR and the same IR hash in any process, whatever was compiled before; the hash sees every position, file, flag
and type in full."""
import importlib.util
import itertools
import json
import linecache
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import lorikeet as lk

HERE = os.path.dirname(os.path.abspath(__file__))
PYSHIM = os.path.join(HERE, "..", "pyshim")
_modules = itertools.count()


def load_source(path, src):
    """The module of src written to path (a fresh module each call, so a path can be rewritten)."""
    with open(path, "w") as fh:
        fh.write(src)
    linecache.checkcache(str(path))
    spec = importlib.util.spec_from_file_location(f"lk_content_probe_{next(_modules)}", str(path))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_python(script, *argv):
    """Runs a script file in a fresh process (a file: lambdas need their source); its stdout."""
    path = os.pathsep.join([PYSHIM, os.path.dirname(script), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path)
    out = subprocess.run([sys.executable, script, *argv], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


# ---------------------------------------------------------------- the same in every process

PROBES = '''
import numpy as np
import lorikeet as lk


def helper(x, n):
    s = 0.0
    for k in range(n):
        if x[k] > 0:
            s += x[k]
    return s


def uses_helper(x):
    return helper(x, x.shape[0]) + helper(x * 2.0, 3)


def indexed(a, i):
    return a[i] * 2.0 + a.sum()


def parallel(a):
    t = 0.0
    for i in lk.prange(a.shape[0]):
        t += np.sqrt(a[i])
    return np.exp(a).sum() + t


def mapped(a):
    return lk.map(lambda v: v * 3.0 + 1.0, a)
'''

REPORT = '''
import json, sys
import numpy as np
import lorikeet as lk
import cap_probes as p

a = np.arange(1.0, 9.0)
order = sys.argv[1]
if order == "reversed":
    # unrelated compilations first, and the wrappers of lk.map in another order
    lk.jit(lambda x: x - 1)(a)
    lk.jit(lambda x: (x * 2.0).sum(), backend="openmp")(a)
    lk.map(lambda v: v - 1.0, a)
    lk.map(lambda v: v * v, a)
cases = [("indexed", lk.jit(p.indexed), (a, 3)), ("uses_helper", lk.jit(p.uses_helper), (a,)),
         ("parallel", lk.jit(p.parallel, backend="openmp"), (a,)), ("mapped", lk.jit(p.mapped), (a,))]
if order == "reversed":
    cases.reverse()
out = {}
for name, f, args in cases:
    f(*args)
    out[name] = [f.inspect_types(*args), f.ir_hash(*args), f.inspect_llvm(*args)]
# the wrapper that lk.map compiles from Python
lk.map(lambda v: v + 0.5, a)
wrapper = [d for d in lk._op_wrappers.values() if not isinstance(d, tuple)][-1]
out["wrapper"] = [wrapper.inspect_types(a), wrapper.ir_hash(a), wrapper.py_func.__code__.co_filename]
print(json.dumps(out))
'''


@pytest.fixture(scope="module")
def probes_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("cap")
    (d / "cap_probes.py").write_text(PROBES)
    (d / "cap_report.py").write_text(REPORT)
    return d


def report(probes_dir, order):
    return json.loads(run_python(str(probes_dir / "cap_report.py"), order))


def test_same_ir_hash_and_symbols_in_two_processes_whatever_came_first(probes_dir):
    first, second = report(probes_dir, "plain"), report(probes_dir, "reversed")
    assert first.keys() == second.keys()
    for name in first:
        typed, ir_hash, llvm = first[name]
        assert second[name][0] == typed, name
        assert second[name][1] == ir_hash, name
    assert first["wrapper"][2] == second["wrapper"][2]


# ---------------------------------------------------------------- what the hash sees

def test_the_same_source_twice_has_the_same_hash(tmp_path):
    src = "def f(n):\n    return n * 2 + 1\n"
    one = load_source(tmp_path / "m.py", src)
    two = load_source(tmp_path / "m.py", src)
    assert lk.jit(one.f).ir_hash(3) == lk.jit(two.f).ir_hash(3)
    assert lk.jit(one.f).ir_hash(3) != lk.jit(one.f).ir_hash(3.0)


def test_a_different_line_only_is_a_different_hash(tmp_path):
    # (a function's source is read when it is first compiled: each is compiled before its file is rewritten)
    src = "def f(a, i):\n    return a[i] + 1.0\n"
    a = np.ones(3)
    here = lk.jit(load_source(tmp_path / "m.py", src).f)
    here_text, here_hash = here.inspect_types(a, 1), here.ir_hash(a, 1)
    lower = lk.jit(load_source(tmp_path / "m.py", "\n" + src).f)
    # the printed form shows no positions: it cannot tell them apart, the hash (and the IndexError) can
    assert lower.inspect_types(a, 1) == here_text
    assert lower.ir_hash(a, 1) != here_hash
    with pytest.raises(IndexError) as e:
        lower(a, 5)
    assert 'm.py", line 3\n' in str(e.value)


def test_a_different_file_only_is_a_different_hash(tmp_path):
    src = "def f(n):\n    return n * 2 + 1\n"
    one = lk.jit(load_source(tmp_path / "one.py", src).f)
    two = lk.jit(load_source(tmp_path / "two.py", src).f)
    assert one.inspect_types(3) == two.inspect_types(3)
    assert one.ir_hash(3) != two.ir_hash(3)


def test_a_constants_kind_changes_the_hash(tmp_path):
    hashes, same_ir = set(), set()
    for src in ("def f(n):\n    return n // 2.0\n", "def f(n):\n    return n // 2\n",
                "def f(n):\n    return n // np.float64(2.0)\nimport numpy as np\n"):
        mod = load_source(tmp_path / "m.py", src)
        f = lk.jit(mod.f)
        assert f(7) == mod.f(7)
        hashes.add(f.ir_hash(7))  # a weak float, an int, a float64 constant
        if "np." not in src:
            same_ir.add(f.ir_hash(7.5))  # with a float n, typespec makes both constants the weak float 2.0
    assert len(hashes) == 3
    assert len(same_ir) == 1


def test_one_flag_changes_the_hash():
    def f(a, i):
        return a[i]

    a = np.arange(4.0)
    checked, unchecked = lk.jit(f), lk.jit(f, boundscheck=False)
    assert checked.ir_hash(a, 1) != unchecked.ir_hash(a, 1)
    # fastmath changes the code, not the IR
    assert lk.jit(f, fastmath=True).ir_hash(a, 1) == checked.ir_hash(a, 1)


def test_long_tuple_types_are_hashed_in_full():
    def first(t):
        return t[0].sum()

    f = lk.jit(first)
    twelve = tuple(np.ones(2) for _ in range(12))
    thirteen = twelve + (np.ones(2),)
    assert f(twelve) == f(thirteen) == 2.0
    assert f.ir_hash(twelve) != f.ir_hash(thirteen)
