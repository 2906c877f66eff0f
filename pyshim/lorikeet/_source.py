"""_source.py: what the C frontend needs from Python about a function: its AST and what its free names mean.

function_ast(fn) finds and parses the function's source; resolve_env(fn, fdef) resolves every free name of the
function once, at compile time, into a tuple the frontend (frontend/pyast.c) understands. The frontend never
looks anything up itself, so everything lorikeet assumes about a global (that it is a constant, a numpy function,
another compiled function) is decided here, in one place.
"""
import ast
import builtins
import inspect
import sys
import types

# The modules whose attributes the frontend resolves by name (np.sqrt -> "numpy.sqrt").
_MODULES = ("numpy", "math", "lorikeet")
# Where a function imported by name (from math import sqrt) may come from, in the order they are tried.
_NAMED_SOURCES = ("lorikeet", "numpy", "numpy.random", "math", "builtins")


def _compile_error(message):
    from lorikeet.errors import CompileError

    return CompileError(message)


def _source_file(fn):
    """The file of a function's source: its code's co_filename, which is what inspect.getsourcefile returns for a
    function (or None, when it cannot find the file either), without the search of sys.modules it makes first for
    a file not on disk (about 30 us of a process's first call); a compiled file's name is its source's, as there."""
    name = fn.__code__.co_filename
    return name[:-1] if name.endswith(".pyc") else name


def function_ast(fn, with_source=False):
    """Returns (fdef, filename, line_offset) for a Python function (or a dispatcher with .py_func), and with
    with_source the source text the node was parsed from as a fourth item (a lambda's: its own span).

    fdef is the ast.FunctionDef (decorators are left in decorator_list; the frontend ignores them).
    line_offset is the file line of ast line 1: file line = fdef-node lineno + line_offset - 1, which is what
    fe_lower_function expects. Column offsets are the file's own: an indented def (a method, a def inside an
    if) is parsed inside an `if 1:` block rather than dedented, so that columns need no correction.
    Raises lorikeet.CompileError if the source is unavailable or is not a def.
    """
    fn = getattr(fn, "py_func", fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        raise _compile_error(f"cannot compile {fn!r}: it is not a Python function")
    name = getattr(fn, "__qualname__", code.co_name)
    if code.co_name == "<lambda>":
        node, filename, offset, source = _lambda_ast(fn, code)
        return (node, filename, offset, source) if with_source else (node, filename, offset)
    filename = _source_file(fn)
    quick = _def_lines(fn, code, filename)
    try:
        parsed = _parse_def(quick[0], filename) if quick else None
    except SyntaxError:
        parsed = None
    if parsed is None or getattr(parsed[0], "name", None) != code.co_name:
        try:
            lines, first = inspect.getsourcelines(fn)
        except (OSError, TypeError) as e:
            raise _compile_error(f"cannot compile {name}: its source code is not available ({e})") from None
        try:
            parsed = _parse_def(lines, filename)
        except SyntaxError as e:
            raise _compile_error(f"cannot compile {name}: its source does not parse ({e.msg})") from None
    else:
        first = quick[1]
    node, source, indented = parsed
    if isinstance(node, ast.AsyncFunctionDef):
        raise _compile_error(f"cannot compile {name}: async functions are not supported")
    if not isinstance(node, ast.FunctionDef):
        raise _compile_error(f"cannot compile {name}: its source is not a def statement")
    offset = first - 1 if indented else first
    return (node, filename, offset, source) if with_source else (node, filename, offset)


def _parse_def(lines, filename):
    """(the first statement, the source, whether it is indented) of a def's lines; SyntaxError if they do not parse."""
    source = "".join(lines)
    indented = source[:1] in (" ", "\t")
    tree = ast.parse("if 1:\n" + source if indented else source, filename=filename)
    body = tree.body[0].body if indented and tree.body else tree.body
    return (body[0] if body else None), source, indented


def _last_line(code):
    """The last source line any instruction of code, or of the functions nested in it, comes from."""
    last = code.co_firstlineno
    for _, end, _, _ in code.co_positions():
        if end is not None and end > last:
            last = end
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            last = max(last, _last_line(c))
    return last


def _def_lines(fn, code, filename):
    """(lines, first line) of a def, found without tokenizing: inspect.getsourcelines sets up Python's tokenizer,
    5 to 15 ms at the first compilation of a process. The def runs from co_firstlineno (its first decorator) to the
    last line its instructions come from; that is taken only if the next line of code after it is not indented
    past the def, so nothing of the body was left out (a trailing `pass`, code after a return, which the compiler
    drops): else None, and the caller asks inspect."""
    import linecache

    linecache.checkcache(filename)
    lines = linecache.getlines(filename, fn.__globals__)
    first = code.co_firstlineno
    if not 1 <= first <= len(lines):
        return None
    end = _last_line(code)
    head = lines[first - 1]
    indent = len(head) - len(head.lstrip())
    if end > len(lines) or not head.lstrip().startswith(("@", "def ", "async ")):
        return None
    for line in lines[end:]:
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        if len(line) - len(line.lstrip()) > indent:
            return None
        break
    return lines[first - 1:end], first


def _lambda_ast(fn, code):
    """The ast.Lambda of a lambda function, found in its whole file (a lambda's own lines need not parse).
    Among lambdas on its first line with its parameter names, the one whose body holds its first instruction."""
    import linecache

    filename = code.co_filename
    lines = linecache.getlines(filename)
    if not lines:
        raise _compile_error("cannot compile a lambda: its source code is not available; define it with def")
    try:
        tree = ast.parse("".join(lines), filename=filename)
    except SyntaxError as e:
        raise _compile_error(f"cannot compile a lambda: its file does not parse ({e.msg})") from None
    params = list(code.co_varnames[: code.co_argcount])
    found = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Lambda) and n.lineno == code.co_firstlineno and [a.arg for a in n.args.args] == params
    ]
    if len(found) > 1:
        # several lambdas with these parameters start on this line: the one whose source span holds every
        # instruction of fn's code (RESUME and other position-less instructions aside)
        positions = [p for p in code.co_positions()
                     if None not in p and (p[0], p[2]) != (p[1], p[3])]

        def holds(n, p):
            return (n.lineno, n.col_offset) <= (p[0], p[2]) and (p[1], p[3]) <= (n.end_lineno, n.end_col_offset)

        inside = [n for n in found if positions and all(holds(n, p) for p in positions)]
        if len(inside) != 1:
            raise _compile_error("cannot compile a lambda: several lambdas with the same parameters start on "
                                 f"line {code.co_firstlineno} and lorikeet cannot tell which this is; "
                                 "put it on a line of its own or define it with def")
        found = inside
    if not found:
        raise _compile_error("cannot compile a lambda: its source was not found; define it with def")
    node = found[0]
    span = lines[node.lineno - 1: node.end_lineno]
    return node, filename, 1, f"{node.lineno}:{node.col_offset} {node.end_lineno}:{node.end_col_offset}\n" + "".join(span)


# ---- free names ----


def _scan(fdef):
    """(bound, loaded): the names the function binds (Python's rule: bound anywhere means local) and the names
    its body reads, in order of first appearance."""
    a = fdef.args
    bound = {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs}
    bound.update(p.arg for p in (a.vararg, a.kwarg) if p is not None)
    declared_global = set()
    loaded = {}
    body = fdef.body if isinstance(fdef.body, list) else [fdef.body]  # a lambda's body is one expression
    body = list(a.defaults) + body  # default values are read too (and must turn out to be constants)
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name):
                if isinstance(node.ctx, ast.Load):
                    loaded.setdefault(node.id, None)
                else:
                    bound.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                bound.update((al.asname or al.name).split(".")[0] for al in node.names)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                bound.add(node.name)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                declared_global.update(node.names)
    return bound - declared_global, list(loaded)


_NOT_CONST = object()


def _const(v):
    """v as a Python bool/int/float/complex/None or a tuple of those (NumPy scalars become Python's), else
    _NOT_CONST."""
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        return float(v)
    if isinstance(v, complex):
        return complex(v)
    if isinstance(v, tuple):
        items = tuple(_const(x) for x in v)
        return _NOT_CONST if any(x is _NOT_CONST for x in items) else items
    np = sys.modules.get("numpy")
    if np is not None and isinstance(v, np.generic):
        if isinstance(v, np.bool_):
            return bool(v)
        if isinstance(v, np.integer):
            return int(v)
        if isinstance(v, np.floating):
            return float(v)
        if isinstance(v, np.complexfloating):
            return complex(v)
    return _NOT_CONST


def _named(local, v):
    """"module.name" if v is an attribute of numpy, math, lorikeet or builtins, found by identity under the name
    it was imported as or its own __name__ (from numpy import abs -> "numpy.abs"), else None."""
    candidates = [local]
    own = getattr(v, "__name__", None)
    if isinstance(own, str) and own != local:
        candidates.append(own)
    for cand in candidates:
        for modname in _NAMED_SOURCES:
            mod = sys.modules.get(modname)
            try:
                found = mod is not None and getattr(mod, cand, None) is v
            except Exception:  # a module __getattr__ that raises something odd
                found = False
            if found:
                return f"{modname}.{cand}"
    return None


def _array_value(a):
    """A frozen array as the cache key sees it (pyshim/cache_key.c writes it): dtype (with byte order), shape,
    layout and the SHA-256 of its bytes in C order (its values, whatever its strides)."""
    import numpy

    from . import _lorikeet

    layout = "C" if a.flags.c_contiguous else "F" if a.flags.f_contiguous else "A"
    data = numpy.ascontiguousarray(a).view(numpy.uint8).reshape(-1)
    return f"array {a.dtype.str} {a.shape} {layout} sha256 {_lorikeet.sha256(data).hex()}"


def _describe(v):
    t = type(v)
    tname = t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
    mod, qual = getattr(v, "__module__", None), getattr(v, "__qualname__", None)
    if isinstance(mod, str) and isinstance(qual, str) and not isinstance(v, type):
        return f"{tname} {mod}.{qual}"
    if isinstance(v, type):
        return f"class {v.__module__}.{v.__qualname__}"
    return tname


def _frozen_array(v):
    """('array', a read-only copy of v) for a NumPy array (not a subclass: a matrix or a masked array means
    something else), else None. The copy is the constant: later writes into v, or a new value bound to its name,
    are not seen by code compiled from it (Numba's rule). Whether lorikeet takes its dtype is the shim's question
    (an array argument's rule), asked when a compilation needs it."""
    np = sys.modules.get("numpy")
    if np is None or type(v) is not np.ndarray:
        return None
    frozen = v.copy(order="K")
    frozen.flags.writeable = False
    return ("array", frozen)


def _resolve(name, v):
    c = _const(v)
    if c is not _NOT_CONST:
        return ("const", c)
    a = _frozen_array(v)
    if a is not None:
        return a
    if isinstance(v, types.ModuleType):
        if v.__name__ in _MODULES:
            return ("module", v.__name__, v)
        return ("unsupported", f"module {v.__name__}")
    if isinstance(v, type) and issubclass(v, BaseException):
        # what a raise statement raises: found again by module and qualified name when compiled code raises it
        return ("exception", f"{v.__module__}:{v.__qualname__}", v)
    q = _named(name, v)
    if q is not None:
        return ("named", q)
    if hasattr(v, "py_func"):
        return ("func", v)
    if isinstance(v, types.FunctionType):
        if str(getattr(v, "__module__", "")).split(".")[0] in ("numpy", "math"):  # numpy.linalg.norm: not ours
            return ("unsupported", _describe(v))
        return ("func", v)
    return ("unsupported", _describe(v))


def _namespaces(fn):
    """The closure cells (those that hold a value), the globals and the builtins of fn."""
    code = fn.__code__
    closure = {}
    for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            closure[name] = cell.cell_contents
        except ValueError:  # an empty cell: the enclosing variable is not assigned yet
            pass
    globs = fn.__globals__
    bi = globs.get("__builtins__", builtins)
    if isinstance(bi, types.ModuleType):
        bi = vars(bi)
    return closure, globs, bi


def resolve_env(fn, fdef):
    """{name: resolution} for every name the body of fdef reads but the function never binds.

    Resolutions: ('const', v) for bool/int/float/None and tuples of them; ('array', a read-only copy) for a
    NumPy array (frozen now: see _frozen_array); ('module', 'numpy'|'math'|'lorikeet', module); ('named',
    'numpy.sqrt') for functions, ufuncs, dtypes and builtins of those modules; ('exception', 'module:qualname',
    cls) for an exception class (builtins:ValueError); ('func', obj) for a Python function
    or a dispatcher (anything with .py_func); ('unsupported', description) for anything else (an error only where
    the name is used). Names found nowhere are left out: the frontend reports "name 'x' is not defined" at the
    use. Lookup order is Python's: closure, globals, builtins.
    The values the def computed for its defaults are under "<default k>" (k counts __defaults__), when they are
    constants or arrays: `w=G * 2` is the array Python computed, frozen as a global array is.
    """
    fn = getattr(fn, "py_func", fn)
    bound, loaded = _scan(fdef)
    closure, globs, bi = _namespaces(fn)
    env = {}
    for name in loaded:
        if name in bound:
            continue
        for ns in (closure, globs, bi):
            if name in ns:
                try:
                    env[name] = _resolve(name, ns[name])
                except Exception as e:  # an object whose attributes raise: describe it, do not fail here
                    env[name] = ("unsupported", f"{type(ns[name]).__name__} ({type(e).__name__})")
                break
    for k, v in enumerate(getattr(fn, "__defaults__", None) or ()):
        c = _const(v)
        r = ("const", c) if c is not _NOT_CONST else _frozen_array(v)
        if r is not None:
            env[f"<default {k}>"] = r
    return env

