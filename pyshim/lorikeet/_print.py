"""_print.py: the text of compiled code's print() calls, made after the call from the records it left.

Compiled code makes no strings: each print call appends a record (runtime.h's print section), the index of its
layout in the code's names table and then its values as raw 8-byte slots or arrays. Here each value becomes the
Python object it stands for (a Python number for a weak value, a NumPy scalar of its dtype otherwise, a NumPy
array, None, a tuple), so that format() gives what CPython prints, and the call's text goes to sys.stdout in one
write: the order of the program's prints, parallel loops included (the runtime joins their records in chunk
order). Called by pyshim/print.c."""
import ast
import struct
import sys

import numpy as np

_layouts = {}


def _layout(text):
    got = _layouts.get(text)
    if got is None:
        got = _layouts[text] = ast.literal_eval(text)
    return got


def _scalar(kind, data, pos):
    weak = kind.endswith("w")
    name = kind[:-1] if weak else kind
    if name.startswith("complex"):
        re, im = struct.unpack_from("<dd", data, pos)
        return (complex(re, im) if weak else np.dtype(name).type(complex(re, im))), pos + 16
    if name.startswith("float"):
        (v,) = struct.unpack_from("<d", data, pos)
        return (v if weak else np.dtype(name).type(v)), pos + 8
    (v,) = struct.unpack_from("<Q" if name.startswith("uint") else "<q", data, pos)
    if name == "bool":
        return (bool(v) if weak else np.bool_(bool(v))), pos + 8
    return (int(v) if weak else np.dtype(name).type(v)), pos + 8


def _value(kind, data, pos):
    if isinstance(kind, list):
        items = []
        for k in kind:
            v, pos = _value(k, data, pos)
            items.append(v)
        return tuple(items), pos
    if kind == "none":
        return None, pos
    if kind.startswith("a:"):
        dtype = np.dtype(kind[2:])
        (ndim,) = struct.unpack_from("<q", data, pos)
        shape = struct.unpack_from(f"<{ndim}q", data, pos + 8)
        pos += 8 + 8 * ndim
        count = 1
        for s in shape:
            count *= s
        nbytes = count * dtype.itemsize
        a = np.frombuffer(data, dtype=dtype, count=count, offset=pos).reshape(shape).copy()
        return a, pos + ((nbytes + 7) & ~7)
    return _scalar(kind, data, pos)


def _piece(slot, value):
    conversion, spec = slot
    if conversion == "r":
        value = repr(value)
    elif conversion == "a":
        value = ascii(value)
    elif conversion == "s":
        value = str(value)
    return format(value, spec)


def _records(data, names):
    """(layout, values) of each record in data, in order."""
    pos = 0
    while pos < len(data):
        (index,) = struct.unpack_from("<q", data, pos)
        pos += 8
        layout, kinds = _layout(names[index])
        values = []
        for kind in kinds:
            v, pos = _value(kind, data, pos)
            values.append(v)
        yield layout, values


def _text(layout, values):
    it = iter(values)
    return "".join(p if isinstance(p, str) else _piece(p, next(it)) for p in layout)


def _exception_args(specs, values):
    """The arguments of a raise statement whose arguments were made at run time (frontend/lower_raise.c): each
    a constant, an f-string's text, or a value as it is."""
    it = iter(values)
    args = []
    for spec in specs:
        if spec[0] == "c":
            args.append(spec[1])
        elif spec[0] == "f":
            pieces = spec[1]
            args.append(_text(pieces, [next(it) for p in pieces if not isinstance(p, str)]))
        else:
            args.append(next(it))
    return tuple(args)


def show(data, names, dropped, raised):
    """Writes the text of the records in data (bytes) to sys.stdout; names: the code's names table. raised: the
    last record holds the arguments of the exception the call raised, returned as a tuple (None when it was
    lost), not printed."""
    records = list(_records(data, names))
    args = None
    if raised and records and not dropped:
        specs, values = records.pop()
        args = _exception_args(specs, values)
    out = [_text(layout, values) for layout, values in records]
    if dropped:
        out.append(f"[lorikeet: {dropped} print() output(s) of this call were lost: out of memory]\n")
    if out:
        sys.stdout.write("".join(out))
    return args
