"""errors.py: the exceptions lorikeet raises (besides Python's own IndexError, ZeroDivisionError, ValueError,
TypeError and MemoryError, which compiled code raises exactly where Python or NumPy would)."""


class CompileError(TypeError):
    """A function cannot be compiled: unsupported syntax, an unresolved name, or a typing failure.

    A subclass of TypeError, as Numba's TypingError is: code that catches TypeError around a call keeps working.
    The message names the file and line and shows the offending source line."""


class BackendUnavailable(RuntimeError):
    """The requested backend cannot run on this machine (no GPU or CUDA driver, no NVRTC, no OpenMP runtime)."""


class InternalError(RuntimeError):
    """A bug in lorikeet. Please report it with the function that triggered it."""
