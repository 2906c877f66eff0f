"""report.py: turns results JSON into the console table, docs/benchmarks.md and the PNG plots in docs/img/.

Reads only benchmarks/results/*.json (never re-measures), so `python -m benchmarks --report` rebuilds the docs
from stored results. Every figure shown comes from one run's JSON: ratios compare tools of the same run.
"""
import glob
import json
import os

from .harness import NUMBA, NUMBA_PAR, NUMPY, PYTHON, fmt_time
from .workloads import SWEEP_BY_NAME, WORKLOADS

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(REPO, "docs", "benchmarks.md")
IMG_DIR = os.path.join(REPO, "docs", "img")

LABELS = {NUMPY: "NumPy", PYTHON: "Python", NUMBA: "Numba", NUMBA_PAR: "Numba par"}


def label(tool):
    if tool.startswith("lorikeet:"):
        return "lorikeet " + tool.split(":", 1)[1]
    return LABELS.get(tool, tool)


def metric(wl):
    """Which time a workload is judged by: the first call for compile time, the steady state otherwise."""
    return "first_s" if wl["kind"] == "compile" else "steady_s"


def value(wl, tool):
    rec = wl["results"].get(tool)
    return rec.get(metric(wl)) if rec and rec.get("status") == "ok" else None


def cell(wl, tool, key=None):
    rec = wl["results"].get(tool)
    if rec is None:
        return "—"
    if rec["status"] != "ok":
        return "" if key == "first_s" else rec["status"]
    text = fmt_time(rec.get(key or metric(wl)))
    return text + " (1 run)" if rec.get("note") == "single run" else text


def ratio(a, b):
    return f"{a / b:.2f}×" if a is not None and b is not None and b > 0 else "—"


def lorikeet_tools(record):
    return [f"lorikeet:{b}" for b in record.get("backends_run", [])]


def table_rows(record):
    """Header and rows of the main results table (strings), shared by the console and Markdown renderers."""
    lk = lorikeet_tools(record)
    head = ["workload", "input", "NumPy", "Python", "Numba", "Numba first call", "Numba par"]
    for t in lk:
        head += [f"{label(t)} first call", label(t), f"{label(t)}/NumPy", f"{label(t)}/Numba"]
    head.append("other load")
    rows = []
    for wl in record["workloads"]:
        if "_job" in wl["results"]:
            rows.append([wl["name"], wl["input"], wl["results"]["_job"]["status"]] + [""] * (len(head) - 3))
            continue
        row = [wl["name"], wl["input"], cell(wl, NUMPY), cell(wl, PYTHON), cell(wl, NUMBA),
               cell(wl, NUMBA, "first_s"), cell(wl, NUMBA_PAR)]
        for t in lk:
            row += [cell(wl, t, "first_s"), cell(wl, t), ratio(value(wl, t), value(wl, NUMPY)),
                    ratio(value(wl, t), value(wl, NUMBA))]
        bg = wl.get("background_cores")
        rows.append(row + ["?" if bg is None else f"{bg:.1f}"])
    return head, rows


def bandwidth_rows(record):
    """Achieved GB/s of the memory-bound workloads, and lorikeet's as a share of a copy measured in the same run:
    a serial backend against one thread's copy, a parallel one (openmp) against all cores copying at once; each
    copy of the workload's own footprint where the run measured it (else of 80 MiB arrays)."""
    bw = record["copy_bandwidth"]["gbs"]
    bw_all = record.get("copy_bandwidth_all_cores", {}).get("gbs")
    lk = lorikeet_tools(record)
    tools = [NUMPY, NUMBA, NUMBA_PAR] + lk
    matched = any(wl.get("copy_gbs") for wl in record["workloads"])
    head = ["workload", "bytes moved"]
    if matched:
        head += ["copy GB/s, 1 thread", "copy GB/s, all cores"]
    head += [f"{label(t)} GB/s" for t in tools]
    head += [f"{label(t)} % of {'all-cores ' if t.endswith('openmp') else ''}copy" for t in lk]
    rows = []
    for wl in record["workloads"]:
        if not wl["memory_bound"] or "_job" in wl["results"]:
            continue
        one, every = wl.get("copy_gbs", bw), wl.get("copy_all_cores_gbs", bw_all or bw)
        gbs = [wl["results"].get(t, {}).get("gbs") for t in tools]
        row = [wl["name"], f"{wl['bytes_moved'] / 1e6:,.0f} MB"]
        if matched:
            row += [f"{one:.1f}", f"{every:.1f}"]
        row += ["—" if g is None else f"{g:.1f}" for g in gbs]
        row += ["—" if g is None else f"{100 * g / (every if t.endswith('openmp') else one):.0f}%"
                for t, g in zip(lk, gbs[len(tools) - len(lk):])]
        rows.append(row)
    if not matched:
        head[1] += f" (copy: {bw:.1f} GB/s" + (f"; all cores: {bw_all:.1f} GB/s)" if bw_all else ")")
    return head, rows


def text_table(head, rows):
    clip = [[c if len(c) <= 60 else c[:57] + "..." for c in r] for r in [head] + rows]
    widths = [max(len(r[k]) for r in clip) for k in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in clip]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def console_table(record):
    m = record["machine"]
    title = (f"lorikeet benchmarks, {record['mode']} mode, {record['date']}, {m['cpu']} ({m['cores']} cores); "
             f"times are medians of the steady state; ratios are time/time (< 1: lorikeet faster)")
    return "\n\n".join([title, text_table(*table_rows(record)), text_table(*bandwidth_rows(record))])


# ---- Markdown ----

def md_escape(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def md_table(head, rows):
    out = ["| " + " | ".join(md_escape(h) for h in head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(md_escape(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def _dram(record):
    dram, l3 = record.get("copy_bandwidth_dram"), record["machine"].get("l3_cache_mb")
    if not dram:
        return ""
    return (f"; {dram['gbs']:.1f} GB/s with 1 GiB arrays (larger than the {l3:.0f} MiB L3)" if l3
            else f"; {dram['gbs']:.1f} GB/s with 1 GiB arrays")


def _all_cores(record):
    every = record.get("copy_bandwidth_all_cores")
    if not every or every.get("threads", 1) == 1:
        return ""
    return f"; **{every['gbs']:.1f} GB/s** with {every['threads']} threads copying at once (80 MiB in all)"


def _load(record, when):
    load = record.get(f"load_average_{when}")
    return ", ".join(f"{x:.1f}" for x in load) if load else "?"


def md_section(record, path, images):
    m, v = record["machine"], record["versions"]
    lk = v.get("lorikeet", {})
    commit = lk.get("commit", "?") + (" + uncommitted changes" if lk.get("uncommitted_changes") else "")
    gpu = f", GPU: {', '.join(m['gpus'])}" if m.get("gpus") else ""
    out = [f"### {m['cpu']}, {m['cores']} cores{gpu} — {record['mode']} mode, {record['date']}", ""]
    if record["mode"] == "quick":
        out += ["> **Quick-mode figures**: smaller inputs than the published sizes for the loop kernels "
                "(the input column gives each size), fewer repeats. `make bench` runs the full sizes.", ""]
    if record.get("lorikeet_rebuilt"):
        out += ["> **The lorikeet extension was rebuilt while this run went on** (builds of "
                f"{', '.join(record.get('lorikeet_builds', []))}): rows may come from different compiler states.", ""]
    out += [f"- Machine: {m['cpu']} ({', '.join(m.get('simd', [])) or 'no AVX2'}), {m['cores']} cores, "
            f"{m.get('memory_gb')} GiB, {m.get('os')}{gpu}",
            f"- Versions: Python {v['python']}, NumPy {v['numpy']}, Numba {v.get('numba') or 'not installed'}"
            f" (llvmlite {v.get('llvmlite') or '—'}), lorikeet {commit} (extension built {v.get('lorikeet_build', '?')})",
            f"- Copy bandwidth (STREAM-like): **{record['copy_bandwidth']['gbs']:.1f} GB/s** "
            f"({record['copy_bandwidth']['method']}){_dram(record)}{_all_cores(record)}",
            "- lorikeet backends: " + "; ".join(f"`{b}`: {s}" for b, s in record["backends"].items()),
            f"- Load average (1, 5, 15 min) before / after the run: {_load(record, 'before')} / "
            f"{_load(record, 'after')} (other work on the machine makes times noisier)",
            f"- Command: `{record['command'].strip()}`, {record.get('elapsed_s', 0):.0f} s; "
            f"raw results: [{os.path.relpath(path, os.path.dirname(DOC))}]({os.path.relpath(path, os.path.dirname(DOC))})",
            ""]
    out += [md_table(*table_rows(record)), "", "Memory-bound workloads: achieved bandwidth (minimal traffic / steady "
            "time) against the copy bandwidth measured in the same run.", "", md_table(*bandwidth_rows(record)), ""]
    notes = [f"- `{wl['name']}`: {wl['note']}" for wl in record["workloads"] if wl.get("note")]
    if notes:
        out += ["Notes:", ""] + notes + [""]
    for title, img in images:
        out += [f"![{title}]({os.path.relpath(img, os.path.dirname(DOC))})", ""]
    return "\n".join(out)


INTRO = """# Benchmarks

Generated by `python -m benchmarks` (`make bench`, `make bench-quick`) from `benchmarks/results/*.json`;
do not edit by hand (`python -m benchmarks --report` regenerates it from the stored results).

## What is measured

Each workload is a plain Python function (`benchmarks/workloads/`), written the way a scientist writes it for
lorikeet (loops and/or NumPy array expressions), with a NumPy reference and a seeded input maker. Every tool runs
the *same* function: CPython ("Python"), Numba `@njit` and `@njit(parallel=True)` (helpers the function calls are
`njit`-ed too), and `lorikeet.jit(f, backend=...)` for each backend. "NumPy" is the reference implementation.
The exception is a row whose workload names a `peer_kernel` (`black_scholes_array`, `nbody_array`): lorikeet runs
the NumPy array form and Numba the loop form of the same computation, its note says which.

- **Checked before timed.** Each tool's first result is compared with NumPy's (tolerance per workload) and its
  inputs are checked to be unmodified; a wrong result is reported as `MISMATCH: ...` and never timed.
- **First call** (compile + one run, in a process where the JIT has already compiled one throwaway function, so
  its start-up is not counted) is reported apart from the **steady state**: the median of repeats after one
  warm-up call.
- A construct lorikeet cannot compile yet is reported as `not supported yet: <first line of the CompileError>`;
  Numba's refusals as `not supported: ...`. Nothing is substituted.
- **Ratios** are lorikeet's time divided by the other tool's, measured in the same run: below 1, lorikeet is faster.
  Numba means `@njit` (serial).
- **GB/s** (memory-bound workloads): the minimal traffic (each input read once, each output written once) over
  the steady time, beside the copy bandwidth measured in the same run: how close to the physical limit. Each
  memory-bound workload is followed by a copy of its own footprint (source + destination = its traffic, so the
  copy sits in the same level of the memory hierarchy), by one thread and by all cores at once (each thread
  copying its own part); "% of copy" compares a serial backend with the first and openmp with the second.
  Copy counts read + write bytes as STREAM does, so a read-only workload such as a sum can exceed 100%.
- **Numba par** is the same function under `@njit(parallel=True)`: Numba parallelises its array expressions and
  reductions, not its `range` loops (that would need `prange`, i.e. a different function).
- **dispatch**: time per call of `f(a, b)` on two 4-element arrays from a Python loop. **compile_time**: first
  call of a fresh 10-line loop function (a new function object in a new module each repeat), median.
- Each workload runs in its own worker process; a tool that crashes or hangs it is reported as `crashed`/`timeout`.
- **other load**: cores kept busy by *other* processes while the row was measured (from /proc/stat, minus the
  suite's own CPU time). On a shared machine, rows with other load > 0 are noisier, and multi-threaded NumPy
  (OpenBLAS's `np.dot`) suffers most: its threads wait for a sibling preempted by another process.
"""


BOUND = """## Compute-bound or memory-bound

What limits each workload decides what a second core can give (the openmp backend's targets: 1.8x on two cores
when compute-bound, 90% of the copy bandwidth when memory-bound):

| workload | bound by | why |
|---|---|---|
| `fused_expr` | memory | `exp` is libmvec's vector function (about 1.5 ns per element with AVX2), so one core streams its 4 arrays at about the copy bandwidth; without libmvec it is a scalar call (about 5 ns) and the workload is compute-bound |
| `black_scholes` | compute | `log`, `exp` and `sqrt` per option, and a branchy helper |
| `sum_array`, `sum_loop` | memory | one add per 8-byte load; at these sizes the data sits in the 260 MiB L3 here, so "memory" is L3 bandwidth per core |
| `regression` | memory | a few flops per element over two 80 MB arrays, read several times |
| `matmult_*`, `pairwise_dist` | compute | O(n^3) flops on O(n^2) data (the blocked GEMM keeps operands in cache) |
| `conv_3x3_trim*` | compute at these sizes | 9 multiply-adds per element of a 11-35 MB image that stays in L3 |
| `nbody`, `mandelbrot`, `mandelbrot_complex`, `growcut` | compute | arithmetic in loops over small data |
| `crc16_bits`, `crc16_table` | latency | a chain of dependent integer operations per byte (each step needs the last) |

`python -m benchmarks.scaling` shows how a sum and a map scale with threads on the machine at hand.
"""


def workload_list():
    out = ["## Workloads", "", "| name | what | quick input | full input |", "|---|---|---|---|"]
    for w in WORKLOADS:
        out.append(f"| `{w.name}` | {md_escape(w.title)} | {md_escape(w.describe(w.sizes['quick']))} | "
                   f"{md_escape(w.describe(w.sizes['full']))} |")
    return "\n".join(out) + "\n"


def _gpu_ms(rec, key):
    if key in rec:
        return f"{rec[key] * 1e3:.3f} ms"
    err = rec.get(key.split("_")[0] + "_error")
    return err or "—"


def gpu_md_section(record):
    """The gpu backend against CuPy, from one `python -m benchmarks.gpu` run: each workload's call time with
    device-resident inputs and with NumPy inputs (copies included), lorikeet's / CuPy's ratio, the host time of a
    one-kernel call, the first calls of new kernels (NVRTC included) and the copy bandwidth, all measured together."""
    m, v = record["machine"], record.get("versions", {})
    commit = v.get("lorikeet", {}).get("commit", "?")
    out = [f"### gpu backend against CuPy: {', '.join(m.get('gpus', [])) or 'GPU'}, {m['cpu']} — "
           f"{record['mode']} mode, {record['date']}", "",
           f"- lorikeet {commit}, CuPy {record.get('cupy') or 'not installed'}; times are medians of the wall clock "
           "of a call until its work is done (`python -m benchmarks.gpu`).", ""]
    rows = []
    for r in record.get("rows", []):
        dev = ratio(r.get("lorikeet_device_s"), r.get("cupy_device_s"))
        host = ratio(r.get("lorikeet_numpy_in_s"), r.get("cupy_numpy_in_s"))
        tbs = f" ({r['lorikeet_device_tbs']:.2f} TB/s)" if "lorikeet_device_tbs" in r else ""
        rows.append([r["workload"], _gpu_ms(r, "lorikeet_device_s") + tbs, _gpu_ms(r, "cupy_device_s"),
                     dev, _gpu_ms(r, "lorikeet_numpy_in_s"), _gpu_ms(r, "cupy_numpy_in_s"), host])
    if rows:
        out += md_table(["workload", "lorikeet, device arrays", "CuPy, device arrays", "ratio",
                         "lorikeet, NumPy in/out", "CuPy, NumPy in/out", "ratio"], rows).splitlines()
    launch, copies, first = record.get("launch", {}), record.get("copies", {}), record.get("first_calls_s", [])
    out.append("")
    if launch:
        cupy_host = launch.get("cupy_elementwise_host_s")
        out.append(f"- Host time of a call that launches one kernel: {launch['lorikeet_host_s'] * 1e6:.1f} µs"
                   + (f" (CuPy's elementwise kernel: {cupy_host * 1e6:.1f} µs)" if cupy_host else ""))
    plain = record.get("plain_sum", {})
    if "wall_s" in plain:
        out.append(f"- np.sum of {plain['n']:,} float64 by the plain kernel of issue 10's table (one launch, the last "
                   f"block combining), launched through CuPy, its result copied back: {plain['wall_s'] * 1e6:.1f} µs "
                   f"a call, {plain['kernel_s'] * 1e6:.1f} µs in the kernel (the floor of the np.sum row above)")
    if first:
        out.append("- First calls of new kernels, NVRTC included: "
                   + ", ".join(f"{t * 1e3:.0f} ms" for t in first) + " (the first in the process, then others)")
    if copies:
        out.append("- Copies, GB/s: " + ", ".join(f"{k.replace('_gbs', '')} {val:.1f}" for k, val in copies.items()))
    big = record.get("larger_than_device", {})
    if "gbs" in big:
        out.append(f"- Data larger than the device: {big['workload']}, {big['pieces']} pieces: "
                   f"{big['lorikeet_numpy_in_s']:.2f} s, {big['gbs']:.1f} GB/s moved"
                   + (f", {big['fraction_of_pinned']:.0%} of the pinned copy rate ({big['pinned_h2d_gbs']:.1f} GB/s)"
                      if "fraction_of_pinned" in big else "") + " (`python -m benchmarks.gpu --split-only`)")
    gemm = record.get("gemm", {})
    if "own_kernel_percent_of_cublas" in gemm:
        out.append(f"- Matrix product {gemm['n']}² float32, device arrays: cuBLAS {gemm['cublas_tflops']:.1f} TFLOP/s, "
                   f"lorikeet's own kernel (`LORIKEET_GPU_CUBLAS=0`) {gemm['own_kernel_tflops']:.1f} TFLOP/s, "
                   f"{gemm['own_kernel_percent_of_cublas']:.0f}% of cuBLAS"
                   + (f" (CuPy's matmul {gemm['cupy_tflops']:.1f})" if "cupy_tflops" in gemm else ""))
    return "\n".join(out) + "\n"


def auto_md_section(record):
    """backend="auto" against each backend, from one `python -m benchmarks.auto_choice` run: per workload and
    size, every backend's time, auto's time and choice, and auto's time over the best backend's."""
    m, v = record["machine"], record.get("versions", {})
    commit = v.get("lorikeet", {}).get("commit", "?")
    cal = record.get("calibration") or {}
    out = [f"### backend=\"auto\" against each backend: {', '.join(m.get('gpus', [])) or 'no GPU'}, {m['cpu']} — "
           f"{record['mode']} mode, {record['date']}", "",
           f"- lorikeet {commit}; host arrays in and out; best of a few calls each, auto after its tiering settled "
           f"(`python -m benchmarks.auto_choice`); costs {'calibrated ' + cal.get('measured_at', '') if cal else 'by default (not calibrated)'}.",
           ""]
    backends = record["backends"]
    rows = [[r["workload"], f"{r['size']:,}"] + [f"{r['times'][b] * 1e3:.3f}" for b in backends]
            + [f"{r['auto'] * 1e3:.3f} ({r['chosen']}" + (f", steady {r['steady']}" if r.get("steady", r["chosen"]) != r["chosen"] else "") + ")",
               f"{r['ratio']:.2f}"] for r in record["rows"]]
    out += md_table(["workload", "size"] + [f"{b} ms" for b in backends] + ["auto ms (chose)", "auto / best"],
                    rows).splitlines()
    right = sum(r["chosen"] == r["best"] for r in record["rows"])
    out += ["", f"- auto / best backend: geometric mean {record['geomean']:.3f}; the best backend chosen in {right} of "
                f"{len(record['rows'])} rows."]
    return "\n".join(out) + "\n"


def crossover_md_section(record, path):
    """Where the GPU pays, from one `python -m benchmarks.crossover` run: per workload, every contender's time
    at each size, the crossovers, and a plot."""
    m, v = record["machine"], record.get("versions", {})
    commit = v.get("lorikeet", {}).get("commit", "?")
    tag = os.path.splitext(os.path.basename(path))[0]
    out = [f"### Where the GPU pays: {', '.join(m.get('gpus', [])) or 'no GPU'}, {m['cpu']}, {m['cores']} cores — "
           f"{record['mode']} mode, {record['date']}", "",
           f"- lorikeet {commit}, CuPy {record.get('cupy') or 'absent'}; best of a few calls until the work is done "
           f"(`python -m benchmarks.crossover`); NumPy's BLAS uses every core, its element-wise code one. A crossover "
           f"is the smallest size from which the first contender beats the others at that size and every larger one.",
           ""]
    for sw in record["sweeps"]:
        names = list(sw["times_s"])
        rows = [[f"{n:,}"] + ["—" if sw["times_s"][k][i] is None else f"{sw['times_s'][k][i] * 1e3:.3f}"
                             for k in names] for i, n in enumerate(sw["sizes"])]
        out += [f"**{sw['title']}** (ms; size: {sw['x_label']})", ""]
        out += md_table(["size"] + names, rows).splitlines()
        out += ["", "- crossovers: " + "; ".join(f"{k}: {'never' if c is None else f'{c:,}'}"
                                                  for k, c in sw["crossovers"].items())]
        img = plot_crossover(sw, os.path.join(IMG_DIR, f"{tag}-{sw['name']}.png"))
        out += ["", f"![{sw['title']}](img/{os.path.basename(img)})", ""]
    return "\n".join(out) + "\n"


def regenerate_docs(results_dir):
    """Rewrites docs/benchmarks.md (and its plots) from every non-partial results file, newest first."""
    records = []
    for path in glob.glob(os.path.join(results_dir, "*.json")):
        if os.path.basename(path).startswith("partial-"):
            continue
        with open(path) as f:
            records.append((json.load(f), path))
    records.sort(key=lambda rp: rp[0]["date"], reverse=True)
    sections = []
    for record, path in records:
        if record.get("kind") == "gpu":
            sections.append(gpu_md_section(record))
            continue
        if record.get("kind") == "auto":
            sections.append(auto_md_section(record))
            continue
        if record.get("kind") == "crossover":
            sections.append(crossover_md_section(record, path))
            continue
        tag = os.path.splitext(os.path.basename(path))[0]
        sections.append(md_section(record, path, plot_all(record, tag)))
    body = [INTRO, workload_list(), BOUND, "## Results", ""]
    body += sections or ["No results yet: run `make bench-quick`."]
    os.makedirs(os.path.dirname(DOC), exist_ok=True)
    with open(DOC, "w") as f:
        f.write("\n".join(body).rstrip() + "\n")
    return DOC


# ---- plots ----

def plot_all(record, tag):
    """[(title, png path)] for one results file."""
    import matplotlib
    matplotlib.use("Agg")
    os.makedirs(IMG_DIR, exist_ok=True)
    images = [("time per workload", plot_workloads(record, os.path.join(IMG_DIR, f"bench-{tag}-workloads.png")))]
    for sweep in record["sweeps"]:
        path = os.path.join(IMG_DIR, f"bench-{tag}-sweep-{sweep['name']}.png")
        images.append((sweep["title"], plot_sweep(sweep, path)))
    return images


COLORS = {NUMPY: "#4c72b0", PYTHON: "#8c8c8c", NUMBA: "#dd8452", NUMBA_PAR: "#c44e52"}
LK_COLORS = ["#55a868", "#2d6a3e", "#9bd39f"]


def color(tool, lk_tools):
    return COLORS.get(tool) or LK_COLORS[lk_tools.index(tool) % len(LK_COLORS)]


def plot_workloads(record, path):
    import matplotlib.pyplot as plt

    lk = lorikeet_tools(record)
    tools = [NUMPY, PYTHON, NUMBA, NUMBA_PAR] + lk
    wls = record["workloads"]
    fig, ax = plt.subplots(figsize=(10, 0.62 * len(wls) * (len(tools) / 6) + 1.8))
    bar = 0.8 / len(tools)
    for k, tool in enumerate(tools):
        ys = [i + k * bar for i in range(len(wls))]
        vals = [value(wl, tool) or 0 for wl in wls]
        ax.barh(ys, vals, height=bar, color=color(tool, lk), label=label(tool))
        for y, wl in zip(ys, wls):
            rec = wl["results"].get(tool)
            if rec and rec["status"] != "ok" and not rec["status"].startswith("skipped"):
                ax.text(0.005, y, f"{label(tool)}: {rec['status'].split(':')[0]}", va="center", fontsize=6.5,
                        color=color(tool, lk), transform=ax.get_yaxis_transform())
    ax.set_xscale("log")
    names = {"compile": " (first call)", "dispatch": " (per call)"}
    ax.set_yticks([i + 0.4 - bar / 2 for i in range(len(wls))])
    ax.set_yticklabels([wl["name"] + names.get(wl["kind"], "") for wl in wls], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("seconds (log scale; shorter is better)")
    m = record["machine"]
    ax.set_title(f"{record['mode']} mode, {m['cpu']}, {m['cores']} cores, {record['date'][:10]}", fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(axis="x", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def plot_sweep(sweep, path):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    lk_tools = sorted({k.split("|")[0] for k in sweep["series"] if k.startswith("lorikeet:")})
    for key, series in sorted(sweep["series"].items()):
        tool, _, wname = key.partition("|")
        pts = [(x, t) for x, t, s in zip(series["sizes"], series["steady_s"], series["status"])
               if s == "ok" and x is not None]
        variant = wname.split("_")[-1] if wname and len(SWEEP_BY_NAME[sweep["name"]].workloads) > 1 else ""
        name = label(tool) + (f" ({variant})" if variant else "")
        failed = [s for s in series["status"] if s != "ok"]
        if not pts:
            name += f": {failed[0].split(':')[0]}" if failed else ""
            ax.plot([], [], label=name, color=color(tool, lk_tools), linestyle=":")
            continue
        xs, ts = zip(*pts)
        ax.plot(xs, ts, marker="o", markersize=3, label=name, color=color(tool, lk_tools),
                linestyle="--" if variant == "comprehension" else "-")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(sweep["x_label"])
    ax.set_ylabel("seconds (steady state)")
    ax.set_title(sweep["title"], fontsize=10)
    ax.grid(which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_crossover(sw, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(IMG_DIR, exist_ok=True)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for k, series in sw["times_s"].items():
        pts = [(n, t) for n, t in zip(sw["sizes"], series) if t is not None]
        if not pts:
            continue
        xs, ts = zip(*pts)
        ax.plot(xs, ts, marker="o", markersize=3, label=k, linestyle="--" if "device" in k else "-")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(sw["x_label"])
    ax.set_ylabel("seconds (best of a few calls)")
    ax.set_title(sw["title"], fontsize=10)
    ax.grid(which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
