"""_why.py: why a function's code was not found in the on-disk cache (`python -m lorikeet cache why`).

A key is the SHA-256 of a preimage (lorikeet/_key.py), so two keys say nothing about how they differ; the entries
keep their preimages, though. This compares the preimage of a function's lookup with that of the nearest entry
saved for the same function, input by input: a toolchain line (the CPU, a feature list, LLVM, lorikeet's build),
an option, the signature, and for each function of the program its source, defaults and each free name. It only
reads the cache; it never loads code.
"""
from . import _key


def items(preimage):
    """{input: value} of a preimage: 'cpu', 'options', 'signature', 'mod.f: source', 'mod.f: env K', ... in order.
    A function met again in the preimage is listed where it first appears."""
    text = preimage.decode("utf-8", "replace")
    out, pos, stack = {}, 0, []

    def line():
        nonlocal pos
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        s, pos = text[pos:end], end + 1
        return s

    first = line()
    out["format"] = first
    while pos < len(text):
        s = line()
        head, _, rest = s.partition(" ")
        if head == "function":
            stack.append(rest.partition(" ")[2] or rest)
        elif head == "end":
            if stack:
                stack.pop()
        elif head == "source" and stack and rest.isdigit():
            out[f"{stack[-1]}: source"] = text[pos:pos + int(rest)]
            pos += int(rest) + 1
        elif head == "env" and stack:
            var, _, what = rest.partition(" ")
            out[f"{stack[-1]}: env {var}"] = what
        elif stack:
            out[f"{stack[-1]}: {head}"] = rest
        else:
            out[head] = rest
    return out


def differences(old, new):
    """[(input, entry's value, this lookup's value)] of the inputs that differ (None: absent on that side)."""
    keys = list(old) + [k for k in new if k not in old]
    return [(k, old.get(k), new.get(k)) for k in keys if old.get(k) != new.get(k)]


def _short(v, width=70):
    if v is None:
        return "(absent)"
    v = v.replace("\n", "\\n")
    return v if len(v) <= width else v[:width - 3] + "..."


def _source_change(old, new):
    """The first line where two sources differ, as 'line N: old -> new'."""
    a, b = (old or "").splitlines(), (new or "").splitlines()
    for i in range(max(len(a), len(b))):
        x, y = (a[i] if i < len(a) else None), (b[i] if i < len(b) else None)
        if x != y:
            return f"line {i + 1} of the function: {_short(x and x.strip(), 50)} -> {_short(y and y.strip(), 50)}"
    return "whitespace"


def describe(diffs, limit=8):
    lines = []
    for k, old, new in diffs[:limit]:
        if k.endswith(": source"):
            lines.append(f"{k} differs: {_source_change(old, new)}")
        elif k == "features" and old and new:
            a, b = set(old.split(",")), set(new.split(","))
            lines.append(f"features differ: entry has {_short(','.join(sorted(a - b)), 60) or 'nothing more'}, "
                         f"this CPU {_short(','.join(sorted(b - a)), 60) or 'nothing more'}")
        else:
            lines.append(f"{k}: {_short(old)} in the entry, {_short(new)} now")
    if len(diffs) > limit:
        lines.append(f"... and {len(diffs) - limit} more")
    return lines


def _entries_of(st, name):
    """(preimage, meta, layer root, generation) of every readable entry saved for function name, in every folder."""
    found = []
    for layer in st.layers:
        for _, _, _, gen, pre, meta in st.describe(layer):
            m = _key.decode_meta(meta) if meta else {}
            if m is None:
                continue
            if m.get("function") == name:
                found.append((pre, m, layer.root, gen))
    return found


def explain(d, st):
    """Lines saying what the cache holds for dispatcher d and why its last lookup (in this process) missed, or,
    without one, how each saved entry of d differs from what d would look up now."""
    name = f"{d.py_func.__module__}.{d.py_func.__qualname__}"
    saved = _entries_of(st, name)
    last = _key.last_lookup(d)
    if last is not None:
        lookups = [(last.signature, last.preimage, last.reason, True)]
        if last.reason == "hit":
            via = f" (the entry compiled for {last.via})" if last.via else ""
            return [f"{name}({', '.join(last.signature)}) [{d.backend}]: its last lookup hit{via}"]
    else:  # no lookup yet: one for each signature that an entry was saved for
        lookups = []
        for _, meta, _, _ in saved:
            sig = meta.get("signature")
            if isinstance(sig, list) and all(isinstance(x, str) for x in sig) and \
                    sig not in [lk[0] for lk in lookups]:
                lookups.append((sig, None, None, False))
    if not lookups:
        return [f"{name}: no lookup in this process and no entry in the cache (it was never compiled with the "
                f"cache on, or its entries were removed)"]
    lines = []
    for sig, pre, reason, was_last in lookups:
        if pre is None:
            pre, _ = _key.preimage_and_frame(d, sig)
        digest = _key.sha256(pre).hexdigest()
        label = f"{name}({', '.join(sig)}) [{d.backend}]"
        if st.load(digest, pre, _key.generation(d.backend, d.fastmath)) is not None:
            state = f"its entry is in the cache now (the last lookup: {reason})" if was_last else \
                "its entry is in the cache"
            lines.append(f"{label}: hit: {state}")
            continue
        why = reason if was_last and reason else st.last_reason() or "absent"
        lines.append(f"{label}: miss ({why}), key {digest[:16]}")
        mine = items(pre)
        nearest = sorted(((differences(items(p), mine), root, gen) for p, _, root, gen in saved),
                         key=lambda x: len(x[0]))
        if not nearest:
            lines.append("    no entry of this function in the cache to compare with")
            continue
        diffs, root, gen = nearest[0]
        lines.append(f"    the nearest entry ({root}, {gen}) differs in {len(diffs)} input"
                     f"{'s' if len(diffs) != 1 else ''}:")
        lines.extend("    " + s for s in describe(diffs))
    return lines
