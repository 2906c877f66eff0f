"""The differential fuzzer (fuzz/): a fixed set of generated programs agrees with CPython+NumPy on the suite's
backend, apart from the known bugs fuzz/known.py lists (each printed); and the fuzzer's own parts work: the same
seed gives the same program, the comparison catches what it must, a saved program replays, a crashing worker is
caught and its program saved."""
import glob
import os
import subprocess
import sys

import numpy as np
import pytest

import lorikeet as lk

ROOT = os.path.join(os.path.dirname(__file__), "..")
sys.path.insert(0, ROOT)

from fuzz import __main__ as fuzz_main  # noqa: E402
from fuzz import check, gen, known  # noqa: E402

SEEDS = range(0, 200)  # `make test`: a fixed seed set, about 30 s on an idle core
SHRINK_RUNS = 40  # enough to put a mismatch down to its known bug; `make fuzz` shrinks further


def test_generated_programs_agree_with_numpy(tmp_path):
    lk.set_parallel_threshold(0)
    backend = lk.get_backend()
    new, known_hits = [], []
    for seed in SEEDS:
        rec = fuzz_main.check_seed(seed, [backend], str(tmp_path / "findings"), str(tmp_path), budget=SHRINK_RUNS)
        if rec.get("ok"):
            continue
        (known_hits if rec["known"] else new).append(rec)
    for rec in known_hits:
        print(f"seed {rec['seed']}: known bug {rec['known']}: {rec['diffs'][0][1][:200]}")
    assert not new, "\n".join(f"seed {r['seed']}: {r['kind']}: {r['diffs'][0][1]} (minimal program: {r['file']})"
                              for r in new)


def test_same_seed_same_program():
    assert gen.generate(1234).source() == gen.generate(1234).source()
    assert gen.generate(1234).source() != gen.generate(1235).source()


def test_comparison_is_nan_aware_exact_for_ints_and_checks_dtypes():
    f64 = np.array([1.0, np.nan, np.inf])
    assert check.compare_value(f64.copy(), f64, "r") == []
    assert check.compare_value(np.array([1.0, 0.0, np.inf]), f64, "r")[0][0] == "value"
    assert check.compare_value(np.array([1.0, np.nan, -np.inf]), f64, "r")[0][0] == "value"
    assert check.compare_value(np.array([1.0 + 1e-12, np.nan, np.inf]), f64, "r") == []
    assert check.compare_value(np.array([2**62 + 1]), np.array([2**62]), "r")[0][0] == "value"
    assert check.compare_value(np.array([1], np.int32), np.array([1], np.int64), "r")[0][0] == "dtype"
    assert check.compare_value(np.ones((1, 2)), np.ones(2), "r")[0][0] == "shape"
    assert check.compare_value((1.0, 2), (np.float64(1.0), np.int64(2)), "r") == []  # documented conventions
    assert check.compare_value(np.int8(3), 3, "r")[0][0] == "dtype"


def test_a_float64_result_of_a_narrow_transcendental_is_compared_at_the_narrow_tolerance():
    # np.log2 of int16 values is float32 (1 ulp: 6e-8 relative); the sum with an int64 is float64
    src = "v = a + np.log2(b)"
    assert check.precision_floor(src, (np.int64(1), np.array([3], np.int16))) == "float32"
    assert check.precision_floor(src, (np.int64(1), np.array([3], np.uint8))) == "float16"
    assert check.precision_floor(src, (np.int64(1), np.array([3], np.int32))) is None  # float64 throughout
    assert check.precision_floor("v = a * b", (np.array([3], np.int16),)) is None  # arithmetic rounds exactly
    want, got = np.array([-6.41503763]), np.array([-6.41503739])
    assert check.compare_value(got, want, "r")[0][0] == "value"
    assert check.compare_value(got, want, "r", "float32") == []
    assert check.compare_value(np.array([-6.42]), want, "r", "float32")[0][0] == "value"


def _program(tmp_path, body, inputs):
    p = tmp_path / "prog.py"
    p.write_text(gen.PRELUDE + f"\ndef f(a):\n    {body}\n\ndef make_inputs():\n    return ({inputs},)\n")
    return str(p)


def test_replay_reports_a_difference_and_an_agreement(tmp_path):
    good = _program(tmp_path, "return (a[::-1] * 2).sum(axis=0)", "np.arange(6.0).reshape(2, 3)")
    assert check.check_file(good, [lk.get_backend()]) == []
    # a wrong exception class is a difference: the reference raises IndexError, so must lorikeet
    bad = _program(tmp_path, "return a[5]", "np.arange(3.0)")
    r = subprocess.run([sys.executable, "-m", "fuzz", "--replay", bad, "--backends", lk.get_backend()],
                       cwd=ROOT, capture_output=True, text=True, env=_env())
    assert r.returncode == 0, r.stdout + r.stderr  # lorikeet raises IndexError too
    assert "agrees" in r.stdout


def test_a_known_bug_is_attributed_and_a_new_difference_is_not():
    assert known.known_bug("dtype", "v = a + (x if c else 1.5)", "cpu: result[0]: dtype float64 where the "
                           "reference has int8").ident == "r08-r10"
    assert known.known_bug("dtype", "v = a + len(a)", "cpu: result[0]: dtype int64 where the reference has "
                           "int8") is None  # NEP 50's rules have landed: a new finding
    assert known.known_bug("value", "v = a.sum()", "cpu: result[0]: 3 where the reference has 4 (int64)") is None
    assert known.known_bug("crash", "v = a.sum()", "cpu: the worker died (crash)") is None


def _env():
    return dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "pyshim"), os.environ.get("PYTHONPATH", "")]))


def test_a_crashing_worker_is_caught_and_its_program_saved(tmp_path):
    if "libasan" in os.environ.get("LD_PRELOAD", ""):
        # the worker's SIGSEGV is AddressSanitizer's to report there (it aborts the worker as a harness failure)
        pytest.skip("a deliberate SIGSEGV under AddressSanitizer (make asan)")
    out = tmp_path / "findings"
    env = dict(_env(), LKFUZZ_SELFTEST_CRASH_SEED="3")
    r = subprocess.run([sys.executable, "-m", "fuzz", "-n", "5", "--seed", "1", "--jobs", "1", "--no-shrink",
                        "--backends", "cpu", "--out", str(out)], cwd=ROOT, capture_output=True, text=True, env=env,
                       timeout=300)
    assert "seed 3: crash (NEW)" in r.stdout, r.stdout + r.stderr
    assert "5 programs" in r.stdout  # the programs after the crash ran in a new worker
    saved = out / "crash-cpu-seed3.py"
    assert saved.exists()
    assert "def make_inputs" in saved.read_text()
    assert r.returncode == 1


KINDS = {"value", "dtype", "shape", "args", "compile-error", "exception", "missing-exception", "internal", "crash",
         "hang", "harness"}


def test_every_known_entry_is_well_formed_and_its_files_exist():
    import re
    for bug in known.KNOWN_BUGS:
        assert bug.kinds and bug.kinds <= KINDS, bug.ident
        for path in re.findall(r"[\w-]+-seed\d+\.py", bug.ref):
            assert os.path.exists(os.path.join(ROOT, "fuzz", "findings", path)), (bug.ident, path)
    for d in known.DIFFERENCES:
        assert d.doc and callable(d.test)


def test_saved_findings_are_attributed_to_known_entries():
    """Each program in fuzz/findings/ is put down to an entry of fuzz/known.py (a finding and its entry go together;
    `make fuzz REPLAY=...` shows whether it still differs)."""
    folder = os.path.join(ROOT, "fuzz", "findings")
    r = subprocess.run([sys.executable, "-m", "fuzz", "--triage", folder, "--backends", lk.get_backend()],
                       cwd=ROOT, capture_output=True, text=True, env=_env())
    assert r.returncode == 0 and "no new findings" in r.stdout, r.stdout + r.stderr


FIXED = sorted(glob.glob(os.path.join(ROOT, "fuzz", "fixed", "*.py")))


@pytest.mark.parametrize("path", FIXED, ids=[os.path.basename(p) for p in FIXED])
def test_programs_the_fuzzer_found_before_their_fix_agree_now(path):
    """fuzz/fixed/ keeps the minimal programs of findings whose fix landed (their known entry removed): each runs
    again, on the suite's backend, and must agree with CPython+NumPy, unless the NumPy of this run takes the
    program out of the subset (a documented difference: seed 171's np.where raises OverflowError in NumPy 2.5)."""
    r = subprocess.run([sys.executable, "-m", "fuzz", "--replay", path, "--backends", lk.get_backend()], cwd=ROOT,
                       capture_output=True, text=True, env=_env(), timeout=300)
    assert r.returncode == 0 and ("agrees" in r.stdout or "not compared" in r.stdout), r.stdout + r.stderr
