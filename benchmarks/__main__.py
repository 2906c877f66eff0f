"""python -m benchmarks [--quick | --full] [--only NAME[,NAME]] [--backends cpu,openmp,gpu] [--report]

Runs every workload (benchmarks/workloads/) with NumPy, Numba @njit and @njit(parallel=True), pure Python where
it finishes in seconds, and each lorikeet backend; writes benchmarks/results/<mode>-<machine>.json and
regenerates docs/benchmarks.md with its plots. Progress goes to stderr, the final table to stdout.

Each workload runs in a worker process of its own (`--worker NAME`, internal), so that a compiler crash or hang
costs one tool of one workload, reported as such, and never the run.
"""
import argparse
import datetime
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from . import harness, machine, report
from .workloads import BY_NAME, SWEEP_BY_NAME, SWEEPS, WORKLOADS

RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
ALL_BACKENDS = ("cpu", "openmp", "gpu")
JOB_TIMEOUT_S = {"quick": 240, "full": 900}
TOOL_TIMEOUT_S = {"quick": 60, "full": 180}   # one tool on one workload: first call, checks and repeats


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[1])
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_const", dest="mode", const="quick", help="small inputs (default)")
    mode.add_argument("--full", action="store_const", dest="mode", const="full", help="the published sizes")
    p.add_argument("--only", action="append", default=[],
                   help="run only these workloads or sweeps (sweep:fused, sweep:matmult); comma-separated or "
                        "repeated. Results go to results/partial-*.json and the docs are left alone")
    p.add_argument("--backends", help="lorikeet backends to run (default: those of cpu,openmp,gpu that work "
                                      "here; the others are reported as unavailable)")
    p.add_argument("--report", action="store_true", help="only regenerate docs/benchmarks.md from results/")
    p.add_argument("--no-docs", action="store_true", help="write the JSON but leave docs/ alone")
    p.add_argument("--combine", nargs="+", metavar="PARTIAL_JSON",
                   help="join results of --only runs made on one machine in one mode (each command has a time "
                        "limit somewhere) into that machine's results file, and regenerate the docs")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--skip", default="", help=argparse.SUPPRESS)
    p.add_argument("--state", help=argparse.SUPPRESS)
    p.add_argument("--t0", type=float, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.mode = args.mode or "quick"
    return args


def log(t0, msg):
    el = time.time() - t0
    print(f"[{int(el) // 60:02d}:{int(el) % 60:02d}] {msg}", file=sys.stderr, flush=True)


def _probe(a):
    return a[0] + 1.0


def probe_backends(requested):
    """(backends to run, {backend: 'ok' | 'unavailable: ...' | 'error: ...'})."""
    import numpy as np

    names = requested or list(ALL_BACKENDS)
    status = {}
    try:
        import lorikeet as lk
    except Exception as e:
        return (list(requested) if requested else []), {b: f"unavailable: lorikeet does not import ({e})" for b in names}
    for b in names:
        try:
            lk.jit(_probe, backend=b)(np.ones(2))
            status[b] = "ok"
        except Exception as e:
            status[b] = harness.classify_error(harness.lorikeet_tool(b), e)
    run = list(requested) if requested else [b for b in names if status[b] == "ok"]
    return run, status


def select_jobs(only):
    if not only:
        return [w.name for w in WORKLOADS] + [f"sweep:{s.name}" for s in SWEEPS]
    jobs = []
    for name in (n.strip() for item in only for n in item.split(",") if n.strip()):
        if name in BY_NAME:
            jobs.append(name)
        elif name.removeprefix("sweep:") in SWEEP_BY_NAME:
            jobs.append("sweep:" + name.removeprefix("sweep:"))
        else:
            sys.exit(f"unknown workload {name!r}; known: {', '.join(list(BY_NAME) + ['sweep:' + s for s in SWEEP_BY_NAME])}")
    return jobs


def job_tools(job, backends, mode):
    if job.startswith("sweep:"):
        return [harness.NUMPY] + [harness.lorikeet_tool(b) for b in backends] + [harness.NUMBA, harness.NUMBA_PAR]
    return harness.tools_for(BY_NAME[job], backends, mode)


def describe_exit(rc):
    if rc < 0:
        try:
            return f"crashed: killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"crashed: killed by signal {-rc}"
    return f"crashed: worker exited with status {rc}"


def run_job(job, backends, mode, t0):
    """Runs one job in worker processes until every tool has a result; a tool that kills or hangs its worker
    is recorded as crashed/timeout and skipped by the next worker."""
    results, skip = {}, []
    is_sweep = job.startswith("sweep:")
    env = dict(os.environ, NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING="1")
    for _attempt in range(len(job_tools(job, backends, mode)) + 1):
        fd, state_path = tempfile.mkstemp(prefix="lk-bench-", suffix=".json")
        os.close(fd)
        cmd = [sys.executable, "-m", "benchmarks", "--worker", job, f"--{mode}", "--backends", ",".join(backends),
               "--skip", ",".join(skip), "--state", state_path, "--t0", str(t0)]
        failure = watch_worker(subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL), state_path, mode)
        state = read_state(state_path)
        os.unlink(state_path)
        results.update({k: v for k, v in state["results"].items() if k not in skip})
        if failure is None:
            return results
        running = state.get("running")
        log(t0, f"  {job}: {running or 'the worker'}: {failure}")
        if running is None:   # died outside any tool (making inputs, the reference): nothing to skip
            results["_job"] = {"status": failure}
            return results
        if is_sweep:
            series = results.setdefault(running, {"sizes": [], "steady_s": [], "status": []})
            series["status"].append(failure)
            series["sizes"].append(None)
            series["steady_s"].append(None)
            skip = [k for k, v in results.items() if any(s != "ok" for s in v["status"])]
        else:
            results[running] = {"status": failure}
            skip = list(results)
    return results


def watch_worker(proc, state_path, mode):
    """Waits for a worker; kills it when one tool (or sweep point) runs past TOOL_TIMEOUT_S or the whole job
    past JOB_TIMEOUT_S. Returns None on success, else what went wrong."""
    start = time.time()
    running, since = (None, None), start
    while True:
        try:
            rc = proc.wait(timeout=0.5)
            return None if rc == 0 else describe_exit(rc)
        except subprocess.TimeoutExpired:
            pass
        now = time.time()
        state = read_state(state_path)
        current = (state.get("running"), state.get("step"))
        if current != running:
            running, since = current, now
        limit = None
        if running[0] is not None and now - since > TOOL_TIMEOUT_S[mode]:
            limit = f"timeout: no result in {TOOL_TIMEOUT_S[mode]} s"
        elif now - start > JOB_TIMEOUT_S[mode]:
            limit = f"timeout: the workload took over {JOB_TIMEOUT_S[mode]} s"
        if limit:
            proc.kill()
            proc.wait()
            return limit


def read_state(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {"results": {}, "running": None}


def workload_record(w, mode, results):
    size = w.sizes[mode]
    return {"name": w.name, "title": w.title, "input": w.describe(size), "kind": w.kind,
            "memory_bound": w.bytes_moved is not None,
            "bytes_moved": w.bytes_moved(size) if w.bytes_moved else None, "note": w.note, "results": results}


def sweep_record(s, mode, results):
    return {"name": s.name, "title": s.title, "x_label": s.x_label,
            "sizes": [s.x_of(z) for z in s.sizes[mode]], "series": results}


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.worker:
        backends = [b for b in (args.backends or "").split(",") if b]
        tools = job_tools(args.worker, backends, args.mode)
        skip = set(s for s in args.skip.split(",") if s)
        harness.worker_main(args.worker, args.mode, tools, skip, args.state, args.t0 or time.time())
        return
    if args.report:
        report.regenerate_docs(RESULTS_DIR)
        return
    if args.combine:
        combine(args.combine)
        return

    t0 = time.time()
    jobs = select_jobs(args.only)
    log(t0, f"lorikeet benchmarks, {args.mode} mode: {len(jobs)} jobs")
    info = machine.describe()
    log(t0, f"machine: {info['cpu']}, {info['cores']} cores; measuring copy bandwidth")
    bandwidth = machine.copy_bandwidth()
    dram_bandwidth = machine.copy_bandwidth(2 ** 30, repeats=4)
    all_cores_bandwidth = machine.copy_bandwidth(threads=info["cores"]) if info["cores"] > 1 else bandwidth
    log(t0, f"copy bandwidth: {bandwidth['gbs']:.1f} GB/s at 80 MiB, {dram_bandwidth['gbs']:.1f} GB/s at 1 GiB, "
            f"{all_cores_bandwidth['gbs']:.1f} GB/s at 80 MiB with {info['cores']} threads")
    requested = [b.strip() for b in args.backends.split(",") if b.strip()] if args.backends else None
    backends, backend_status = probe_backends(requested)
    log(t0, "lorikeet backends: " + "; ".join(f"{b}: {s}" for b, s in backend_status.items()))

    record = {"schema": 1, "mode": args.mode, "command": "python -m benchmarks " + " ".join(sys.argv[1:]),
              "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
              "machine": info, "versions": machine.versions(), "copy_bandwidth": bandwidth,
              "copy_bandwidth_dram": dram_bandwidth, "copy_bandwidth_all_cores": all_cores_bandwidth,
              "load_average_before": os.getloadavg(), "backends": backend_status, "backends_run": backends, "workloads": [], "sweeps": []}
    for k, job in enumerate(jobs, 1):
        label = job if job.startswith("sweep:") else f"{job} ({BY_NAME[job].describe(BY_NAME[job].sizes[args.mode])})"
        log(t0, f"({k}/{len(jobs)}) {label}")
        load, build = machine.BackgroundLoad(), machine.lorikeet_build()
        results = run_job(job, backends, args.mode, t0)
        if job.startswith("sweep:"):
            record["sweeps"].append(sweep_record(SWEEP_BY_NAME[job[6:]], args.mode, results))
        else:
            record["workloads"].append(workload_record(BY_NAME[job], args.mode, results))
        job_record = (record["sweeps"] if job.startswith("sweep:") else record["workloads"])[-1]
        job_record.update(background_cores=load.cores(), lorikeet_build=build)
        if job_record.get("bytes_moved"):
            # the copy of the same footprint (src + dst = the workload's traffic), by one thread and by all cores:
            # the physical limit the workload's own memory (L3 or DRAM) allows
            half = job_record["bytes_moved"] // 2
            job_record["copy_gbs"] = machine.copy_bandwidth(half, repeats=10)["gbs"]
            job_record["copy_all_cores_gbs"] = machine.copy_bandwidth(half, repeats=10, threads=info["cores"])["gbs"]
        if machine.lorikeet_build() != build:
            job_record["lorikeet_rebuilt_during_job"] = True
    record["elapsed_s"] = round(time.time() - t0, 1)
    record["load_average_after"] = os.getloadavg()
    jobs_done = record["workloads"] + record["sweeps"]
    record["lorikeet_builds"] = sorted({j["lorikeet_build"] for j in jobs_done if j.get("lorikeet_build")})
    record["lorikeet_rebuilt"] = len(record["lorikeet_builds"]) > 1 or any(
        j.get("lorikeet_rebuilt_during_job") for j in jobs_done)

    os.makedirs(RESULTS_DIR, exist_ok=True)
    prefix = "partial-" if args.only else ""
    path = os.path.join(RESULTS_DIR, f"{prefix}{args.mode}-{machine.slug(info)}.json")
    with open(path, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    print(report.console_table(record))
    log(t0, f"results: {os.path.relpath(path)}")
    if not args.only and not args.no_docs:
        doc = report.regenerate_docs(RESULTS_DIR)
        log(t0, f"docs: {os.path.relpath(doc)}")
    log(t0, f"done in {record['elapsed_s']:.0f} s")


def combine(paths):
    """One results record from partial ones of the same machine and mode: the newest gives the machine, the
    versions and the copy bandwidth; workloads and sweeps come in the suite's order, a later run's replacing an
    earlier one's."""
    records = []
    for path in paths:
        with open(path) as f:
            records.append(json.load(f))
    records.sort(key=lambda r: r["date"])
    base = dict(records[-1])
    for r in records:
        if r["mode"] != base["mode"] or machine.slug(r["machine"]) != machine.slug(base["machine"]):
            sys.exit(f"--combine: the runs of {r['date']} and {base['date']} are of other machines or modes")
    order = {name: k for k, name in enumerate([w.name for w in WORKLOADS] + ["sweep:" + s.name for s in SWEEPS])}
    workloads, sweeps = {}, {}
    for r in records:
        workloads.update({w["name"]: w for w in r["workloads"]})
        sweeps.update({s["name"]: s for s in r["sweeps"]})
    base["workloads"] = sorted(workloads.values(), key=lambda w: order.get(w["name"], 999))
    base["sweeps"] = sorted(sweeps.values(), key=lambda s: order.get("sweep:" + s["name"], 999))
    base["command"] = " + ".join(r["command"].strip() for r in records)
    base["elapsed_s"] = round(sum(r.get("elapsed_s", 0) for r in records), 1)
    base["date"] = records[0]["date"]
    builds = sorted({b for r in records for b in r.get("lorikeet_builds", [])})
    base["lorikeet_builds"] = builds
    base["lorikeet_rebuilt"] = len(builds) > 1 or any(r.get("lorikeet_rebuilt") for r in records)
    path = os.path.join(RESULTS_DIR, f"{base['mode']}-{machine.slug(base['machine'])}.json")
    with open(path, "w") as f:
        json.dump(base, f, indent=1)
        f.write("\n")
    print(f"combined {len(records)} runs into {os.path.relpath(path)}; docs: {report.regenerate_docs(RESULTS_DIR)}")


if __name__ == "__main__":
    main()
