"""Helpers the test files share."""
import lorikeet as lk

_jitted = {}


def J(fn):
    """One dispatcher per Python function, so that signatures compiled once are reused across tests."""
    d = _jitted.get(fn)
    if d is None:
        d = _jitted[fn] = lk.jit(fn)
    return d
