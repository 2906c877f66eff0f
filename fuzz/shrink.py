"""shrink.py: reduces a failing program to a small one that still fails the same way (delta debugging).

The function f of the program is reduced, keeping its inputs: statements are removed (in halves, then quarters,
... then one at a time), the returned tuple is cut to one item, an if is replaced by one of its branches, and
every expression is replaced by one of its operands, as long as the program still shows a difference of the
same kind on the same backend. The reference must still run without NameError (a removed assignment whose
variable is still used makes another program, not a smaller one).
"""
import ast
import copy
import os
import subprocess
import sys
import tempfile

from . import check


def _f(tree):
    return next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "f")


def _expr_slots(node):
    """(parent, field, index) of every expression inside node, index None for a single field."""
    out = []
    for parent in ast.walk(node):
        for field, value in ast.iter_fields(parent):
            if isinstance(value, ast.expr) and field not in ("ctx",):
                out.append((parent, field, None))
            elif isinstance(value, list):
                out += [(parent, field, i) for i, v in enumerate(value) if isinstance(v, ast.expr)]
    return out


def _get(slot):
    parent, field, i = slot
    v = getattr(parent, field)
    return v if i is None else v[i]


def _set(slot, new):
    parent, field, i = slot
    if i is None:
        setattr(parent, field, new)
    else:
        getattr(parent, field)[i] = new


def _candidates(tree):
    f = _f(tree)
    body = f.body[:-1]
    n = len(body)
    chunk = n
    while chunk >= 1:  # remove statements, big chunks first
        for start in range(0, n, chunk):
            t = copy.deepcopy(tree)
            tf = _f(t)
            tf.body = tf.body[:start] + tf.body[start + chunk:-1] + tf.body[-1:]
            yield t
        chunk //= 2
    ret = f.body[-1]
    if isinstance(ret, ast.Return) and isinstance(ret.value, ast.Tuple) and len(ret.value.elts) > 1:
        for i in range(len(ret.value.elts)):
            t = copy.deepcopy(tree)
            _f(t).body[-1].value.elts = [_f(t).body[-1].value.elts[i]]
            yield t
    for i, st in enumerate(body):  # an if becomes one of its branches; a loop its body once
        if isinstance(st, (ast.If, ast.For, ast.While)):
            for branch in ("body", "orelse"):
                if getattr(st, branch):
                    t = copy.deepcopy(tree)
                    tb = _f(t).body
                    tb[i:i + 1] = getattr(tb[i], branch)
                    yield t
    slots = _expr_slots(ast.Module(body=body, type_ignores=[]))
    for k in range(len(slots)):
        node = _get(slots[k])
        if isinstance(getattr(node, "ctx", None), ast.Store) or isinstance(node, ast.Lambda):
            continue  # a target stays a target; a lambda stays a function
        for child in [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)]:
            if isinstance(node, (ast.Call, ast.Attribute)) and child is getattr(node, "func", None) or \
                    isinstance(child, ast.Lambda):
                continue
            t = copy.deepcopy(tree)
            tslots = _expr_slots(ast.Module(body=_f(t).body[:-1], type_ignores=[]))
            tnode = _get(tslots[k])
            tchild = [c for c in ast.iter_child_nodes(tnode) if isinstance(c, ast.expr)][
                [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)].index(child)]
            _set(tslots[k], tchild)
            yield t


def _write(tree, path):
    with open(path, "w") as fh:
        fh.write(ast.unparse(tree) + "\n")


def _gist(msg):
    """The part of a difference's message that names what went wrong, without backend, values or location."""
    msg = msg.split(":", 1)[1] if ":" in msg else msg
    return msg.split("(the reference")[0].split(" where the reference")[0].strip()


def still_fails(path, kind, backend, gist=None):
    """Does the program at path still show a difference of this kind on this backend (with the same message,
    for an exception: a smaller program must fail for the same reason, not another)?"""
    if kind in ("crash", "hang"):
        try:
            r = subprocess.run([sys.executable, "-m", "fuzz", "--replay", path, "--backends", backend, "--quiet"],
                               capture_output=True, timeout=60, cwd=os.path.dirname(os.path.dirname(__file__)))
        except subprocess.TimeoutExpired:
            return kind == "hang"
        return kind == "crash" and r.returncode < 0
    try:
        ref = check.run_reference(check.load(path, ref=True))
        if isinstance(ref.exc, (NameError, AttributeError, SyntaxError)):
            return False
        with open(path) as fh:
            if not check.within_subset(ref, fh.read()):
                return False
        diffs = check.check_file(path, [backend])
    except Exception:
        return False
    exact = kind in ("compile-error", "exception", "internal")
    return any(k == kind and (not exact or gist is None or _gist(m) == gist) for k, m in diffs)


def shrink(src, kind, backend, budget=300, message=None):
    """The smallest program found, within budget runs, that still shows a difference of kind on backend."""
    tree = ast.parse(src)
    fd, tmp = tempfile.mkstemp(suffix=".py", prefix="fuzz_shrink_")
    os.close(fd)
    runs = 0
    try:
        progress = True
        while progress and runs < budget:
            progress = False
            for cand in _candidates(tree):
                runs += 1
                if runs > budget:
                    break
                _write(cand, tmp)
                if still_fails(tmp, kind, backend, _gist(message) if message else None):
                    tree = cand
                    progress = True
                    break
    finally:
        os.unlink(tmp)
    return ast.unparse(tree) + "\n", runs
