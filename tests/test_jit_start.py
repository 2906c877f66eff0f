"""The JIT is started on a thread of its own when lorikeet is imported (backends/llvm/jit.c, be_llvm_start), so that
a process's first call finds it made. A process that forks, exits or changes its environment while it starts gets
what one that started it at its first call got: the same answers (NumPy's), the environment read at the first
use, a refusal named the same way. Each case runs in fresh processes against a temporary disk cache."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PYSHIM = os.path.join(os.path.dirname(HERE), "pyshim")


def run(tmp_path, code, env=None):
    path = tmp_path / "prog.py"  # a file: lorikeet reads the source of what it compiles
    path.write_text(textwrap.dedent(code))
    e = {k: v for k, v in os.environ.items() if not k.startswith("LORIKEET_")}
    e.update({"PYTHONPATH": PYSHIM, "LORIKEET_CACHE_DIR": str(tmp_path / "cache")})
    e.update(env or {})
    return subprocess.run([sys.executable, str(path)], env=e, capture_output=True, text=True, timeout=120)


FORK_AT_ONCE = """
    import json, os
    import numpy as np
    import lorikeet as lk  # the JIT's start is under way from here
    pid = os.fork()  # at once: the parent's start may be half done

    @lk.jit
    def f(a, b):
        return np.sqrt(a * a + b * b).sum(), np.exp(a).max()

    a, b = np.linspace(0.0, 1.0, 37), np.linspace(2.0, 3.0, 37)
    got = f(a, b)
    want = (np.sqrt(a * a + b * b).sum(), np.exp(a).max())
    ok = all(abs(g - w) <= 1e-12 * abs(w) for g, w in zip(got, want))
    if pid == 0:
        os._exit(0 if ok else 3)
    _, status = os.waitpid(pid, 0)
    print(json.dumps({"parent": ok, "child": os.waitstatus_to_exitcode(status), "info": f.cache_info()}))
"""


def test_a_process_forked_while_the_jit_starts_computes_in_parent_and_child(tmp_path):
    """fork() waits for a start under way, so the child never holds a half-made JIT; a child whose parent had not
    begun starts its own. The first round compiles (parent and child both), the later ones load from the cache."""
    for round in range(6):
        r = run(tmp_path, FORK_AT_ONCE)
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout.strip().splitlines()[-1])
        assert out["parent"] and out["child"] == 0, (round, out, r.stderr)
        if round:
            assert out["info"]["hits"] == 1 and out["info"]["compiles"] == 0, out


# The extension alone (its module init starts the JIT's thread), then a fork every 100 us or so for 8 ms and more, so that some
# children are made while the thread is inside LLVM, wherever the scheduler put its start: without fork() waiting
# for it, such a child inherits a start marked under way that no thread of its own finishes, and waits for ever.
FORK_DURING_START = """
    import glob, importlib.util, json, os, signal, sys, time
    path = glob.glob(os.path.join(os.environ["PYTHONPATH"], "lorikeet", "_lorikeet*.so"))[0]
    spec = importlib.util.spec_from_file_location("lorikeet._lorikeet", path)
    ext = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ext)  # the JIT's start begins here
    children = []
    for _ in range(80):
        time.sleep(1e-4)  # a core for the thread, where the machine has none other free
        pid = os.fork()
        if pid == 0:  # the JIT, finished by the parent's thread before the fork or started here
            os._exit(0 if ";cpu=" in ext.key_extras("cpu") else 3)
        children.append(pid)
    done, deadline = {}, time.monotonic() + 30
    while len(done) < len(children) and time.monotonic() < deadline:
        for pid in children:
            if pid not in done and os.waitpid(pid, os.WNOHANG)[0]:
                done[pid] = True
        time.sleep(0.01)
    hung = [pid for pid in children if pid not in done]
    for pid in hung:
        os.kill(pid, signal.SIGKILL)
    print(json.dumps({"children": len(children), "hung": len(hung), "parent": ";cpu=" in ext.key_extras("cpu")}))
"""


def test_children_forked_while_the_jit_starts_find_it_whole_or_start_it(tmp_path):
    path = tmp_path / "fork.py"
    path.write_text(textwrap.dedent(FORK_DURING_START))
    e = {k: v for k, v in os.environ.items() if not k.startswith("LORIKEET_")}
    e.update({"PYTHONPATH": PYSHIM, "LORIKEET_CACHE": "0"})
    for _ in range(3):
        r = subprocess.run([sys.executable, str(path)], env=e, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout.strip().splitlines()[-1]) == {"children": 80, "hung": 0, "parent": True}


EXIT_DURING_START = """
    import glob, importlib.util, os, sys, time
    path = glob.glob(os.path.join(os.environ["PYTHONPATH"], "lorikeet", "_lorikeet*.so"))[0]
    spec = importlib.util.spec_from_file_location("lorikeet._lorikeet", path)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))  # the JIT's start begins here
    time.sleep(float(sys.argv[1]) * 1e-6)
"""


def test_a_process_that_exits_while_the_jit_starts_exits_cleanly(tmp_path):
    """exit() waits for a start under way (LLVM's static destructors must not run under it), whenever it comes:
    a sweep of exits from at once to past the start, and the plain ways out."""
    path = tmp_path / "exit.py"
    path.write_text(textwrap.dedent(EXIT_DURING_START))
    e = {k: v for k, v in os.environ.items() if not k.startswith("LORIKEET_")}
    e.update({"PYTHONPATH": PYSHIM, "LORIKEET_CACHE": "0"})
    for wait_us in range(0, 3000, 150):
        r = subprocess.run([sys.executable, str(path), str(wait_us)], env=e, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and r.stderr == "", (wait_us, r.returncode, r.stderr)
    for code in ("import lorikeet", "import lorikeet, sys; sys.exit(0)", "import lorikeet, os; os._exit(0)"):
        r = run(tmp_path, code)
        assert r.returncode == 0 and r.stderr == "", (code, r.returncode, r.stderr)


def test_the_environment_is_read_at_the_first_use_not_at_import(tmp_path):
    """LORIKEET_CPU and LORIKEET_VECTOR_MATH set after `import lorikeet` and before the first compilation choose the
    target and the vector math, as they did when the JIT started at the first call."""
    r = run(tmp_path, """
        import json, os
        import numpy as np
        import lorikeet as lk
        os.environ["LORIKEET_CPU"] = "x86-64-v2"
        os.environ["LORIKEET_VECTOR_MATH"] = "0"
        extras = lk._lorikeet.key_extras("cpu")
        f = lk.jit(lambda a: np.exp(a).sum())
        a = np.linspace(0.0, 1.0, 101)
        print(json.dumps({"extras": extras, "got": f(a), "want": float(np.exp(a).sum())}))
    """)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert ";cpu=x86-64-v2;features=;" in out["extras"] and ";vecmath=0;" in out["extras"], out["extras"]
    assert out["got"] == pytest.approx(out["want"], rel=1e-13)


def test_a_lower_level_named_after_import_calls_its_own_vector_math(tmp_path):
    """The thread that starts the JIT defines the vector math variants of the host's own ISA ahead; a level below
    the host named after import (x86-64-v2: SSE4.1's 2-lane variants) still gets its own variants, defined at the
    first use, and never the host's."""
    r = run(tmp_path, """
        import json, os, re
        import numpy as np
        import lorikeet as lk
        os.environ["LORIKEET_CPU"] = "x86-64-v2"
        f = lk.jit(lambda a: np.exp(a) + np.sin(a))
        a = np.linspace(0.0, 1.0, 1001)
        called = sorted(set(re.findall(r"_ZGV[a-z]N[0-9]+v_[a-z]+", f.inspect_llvm(a))))
        got = f(a)
        print(json.dumps({"extras": lk._lorikeet.key_extras("cpu"), "called": called,
                          "err": float(np.abs(got - (np.exp(a) + np.sin(a))).max())}))
    """, env={"LORIKEET_CACHE": "0"})
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert ";cpu=x86-64-v2;" in out["extras"], out["extras"]
    # where libmvec is absent (glibc before 2.35) the key says so and the code makes scalar libm calls instead
    want = [] if ";vecmath=0;" in out["extras"] else ["_ZGVbN2v_exp", "_ZGVbN2v_sin"]
    assert out["called"] == want, out["called"]
    assert out["err"] <= 2e-15, out["err"]  # a few ulp of values up to 3.6


def test_a_target_named_after_import_is_refused_by_name_at_every_call(tmp_path):
    r = run(tmp_path, """
        import os
        import numpy as np
        import lorikeet as lk
        os.environ["LORIKEET_CPU"] = "pentium-9000"
        for _ in range(2):
            try:
                lk.jit(lambda a: a + 1)(np.ones(3))
            except lk.BackendUnavailable as e:
                print("refused:", e)
    """)
    assert r.returncode == 0, r.stderr
    said = r.stdout.strip().splitlines()
    assert len(said) == 2 and said[0] == said[1], said
    assert "LORIKEET_CPU=pentium-9000" in said[0] and "x86-64-v3" in said[0], said
