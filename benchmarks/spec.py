"""spec.py: what a benchmark workload is — the plain function every tool runs, its NumPy reference, its inputs.

A workload never times anything and never imports a JIT: it only says what to run and how to check it. The
harness (harness.py) decides how each tool (NumPy, pure Python, Numba, lorikeet backends) runs it.
"""
from dataclasses import dataclass, field
from typing import Any, Callable, Optional


@dataclass
class Workload:
    name: str                                # the id used by --only and in the JSON
    title: str                               # one line for the docs
    kernel: Callable                         # the plain Python function the JITs compile (and CPython runs)
    reference: Callable                      # the NumPy way to compute the same result (same arguments)
    make_inputs: Callable[[Any], tuple]      # size -> the argument tuple (deterministic: seeded)
    sizes: dict                              # mode ("quick"/"full") -> size parameter
    describe: Callable[[Any], str]           # size -> human-readable input description
    helpers: tuple = ()                      # module-level functions the kernel calls (Numba needs them jitted)
    bytes_moved: Optional[Callable[[Any], int]] = None   # minimal DRAM traffic, for memory-bound workloads
    python_modes: tuple = ("quick",)         # modes in which pure Python is run (it must finish in seconds)
    rtol: float = 1e-9
    atol: float = 0.0
    check: Optional[Callable[[Any, Any], Optional[str]]] = None  # custom check: None if ok, else what differs
    kind: str = "kernel"                     # "kernel", "dispatch" (per-call overhead) or "compile" (first call)
    tools: Optional[tuple] = None            # restrict the non-lorikeet tools (e.g. no NumPy for compile time)
    note: str = ""                           # caveats shown under the table
    peer_kernel: Optional[Callable] = None   # what Numba runs instead of kernel: the loop form of an array-form
                                             # kernel (its row compares lorikeet's array form with Numba's loops)
    peer_helpers: tuple = ()                 # the module-level functions peer_kernel calls


@dataclass
class Sweep:
    """Time vs input size of a few workloads that share a size parameter (one plot in the docs)."""
    name: str
    title: str
    workloads: list                          # Workloads run at every size (the first one's reference is NumPy)
    sizes: dict                              # mode -> list of size parameters
    x_of: Callable[[Any], float]             # size parameter -> x coordinate of the plot
    x_label: str
    extra: dict = field(default_factory=dict)
