"""lorikeet's benchmark suite: `python -m benchmarks --quick | --full` (see __main__.py and docs/benchmarks.md).

Layout: spec.py (what a workload is), workloads/ (one module per workload: the plain function, its NumPy
reference, its inputs), harness.py (checking and timing one workload with every tool, in a worker process),
machine.py (machine, versions, copy bandwidth), report.py (JSON -> table, docs/benchmarks.md, plots).
"""
