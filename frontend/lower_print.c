/* lower_print.c: print(...) in compiled code.
 *
 * Compiled code has no strings, so a print call is split here into its text and its values: the string literals
 * and f-strings' literal parts, sep and end become the pieces of a layout, and each value (a positional argument,
 * or an f-string's {expression}) a slot in it, with its conversion (!r, !s, !a) and format spec (:.3f). The call
 * becomes the print intrinsic (ir.h's IR_INTR_PRINT) whose arguments are the values and whose text is the layout
 * as a Python literal: a list of str pieces and (conversion, spec) slots, "('s', '')" for a plain argument, whose
 * str() is what print shows (an f-string's {v} is format(v, ''), which differs for NumPy scalars). The shim formats each value with Python's format() and writes the text to
 * sys.stdout after the call (pyshim/print.c). sep and end must be string literals (or None), file is not
 * supported (compiled code writes to sys.stdout), flush is accepted. */
#include <string.h>
#include "lower.h"

typedef FeLayout Layout;

static bool add_text(FeCtx *c, Layout *l, PyObject *text)
{
    if (PyUnicode_GET_LENGTH(text) == 0) return true;
    Py_ssize_t n = PyList_GET_SIZE(l->pieces);
    PyObject *last = n ? PyList_GET_ITEM(l->pieces, n - 1) : NULL;
    if (last && PyUnicode_Check(last)) { /* one piece for adjacent texts */
        PyObject *joined = PyUnicode_Concat(last, text);
        if (!joined) return fe_py_error(c) != NULL;
        PyList_SET_ITEM(l->pieces, n - 1, joined); /* steals; drops last */
        Py_DECREF(last);
        return true;
    }
    return PyList_Append(l->pieces, text) == 0 || fe_py_error(c) != NULL;
}

bool fe_layout_value(FeCtx *c, Layout *l, PyObject *expr, const char *conversion, PyObject *spec)
{
    IrNode *v = fe_lower_expr(c, expr);
    if (!v) return false;
    if (l->nvalues == l->cap) {
        int cap = l->cap ? 2 * l->cap : 8;
        IrNode **values = ir_nodes(c->a, cap);
        for (int i = 0; i < l->nvalues; i++) values[i] = l->values[i];
        l->values = values;
        l->cap = cap;
    }
    l->values[l->nvalues++] = v;
    PyObject *slot = Py_BuildValue("(sO)", conversion, spec);
    bool ok = slot && PyList_Append(l->pieces, slot) == 0;
    Py_XDECREF(slot);
    return ok || fe_py_error(c) != NULL;
}

/* An f-string: its literal parts as text, each {expression} as a slot with its conversion and constant spec. */
bool fe_layout_fstring(FeCtx *c, Layout *l, PyObject *js)
{
    PyObject *parts = fe_list(c, js, "values");
    if (!parts) return false;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(parts); i++) {
        PyObject *p = PyList_GET_ITEM(parts, i);
        if (fe_is(p, "Constant")) {
            PyObject *v = fe_get(c, p, "value");
            if (!v || !add_text(c, l, v)) return false;
            continue;
        }
        PyObject *value = fe_get(c, p, "value"), *conv = value ? fe_get(c, p, "conversion") : NULL;
        PyObject *spec = conv ? fe_get(c, p, "format_spec") : NULL;
        if (!spec) return false;
        long k = PyLong_AsLong(conv);
        const char *conversion = k == 'r' ? "r" : k == 'a' ? "a" : k == 's' ? "s" : "";
        PyObject *spec_text = NULL;
        if (spec == Py_None) {
            spec_text = PyUnicode_FromString("");
        } else { /* a JoinedStr of constants only: {x:.3f}, not {x:.{n}f} */
            PyObject *sparts = fe_list(c, spec, "values");
            if (!sparts) return false;
            spec_text = PyUnicode_FromString("");
            for (Py_ssize_t j = 0; spec_text && j < PyList_GET_SIZE(sparts); j++) {
                PyObject *sp = PyList_GET_ITEM(sparts, j), *sv = fe_is(sp, "Constant") ? fe_get(c, sp, "value") : NULL;
                if (!sv || !PyUnicode_Check(sv)) {
                    Py_DECREF(spec_text);
                    return fe_failed(c) ? false : fe_error(c, fe_pos(c, sp), "a format spec that is computed at run time "
                                                           "({x:{width}}) is not supported in compiled code") != NULL;
                }
                PyObject *joined = PyUnicode_Concat(spec_text, sv);
                Py_DECREF(spec_text);
                spec_text = joined;
            }
        }
        if (!spec_text) return fe_py_error(c) != NULL;
        bool ok = fe_layout_value(c, l, value, conversion, spec_text);
        Py_DECREF(spec_text);
        if (!ok) return false;
    }
    return true;
}

/* sep= or end=: a string literal, or None for print's default */
static bool string_keyword(FeCtx *c, PyObject *value, const char *name, PyObject **out)
{
    PyObject *v = fe_is(value, "Constant") ? fe_get(c, value, "value") : NULL;
    if (v == Py_None) return true;
    if (v && PyUnicode_Check(v)) {
        *out = v;
        return true;
    }
    return fe_failed(c) ? false : fe_error(c, fe_pos(c, value), "print(%s=...) must be a string literal in compiled code", name) != NULL;
}

IrNode *fe_lower_print(FeCtx *c, IrNode *n, PyObject *args, PyObject *keywords)
{
    PyObject *sep = NULL, *end = NULL;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(keywords); k++) {
        PyObject *kw = PyList_GET_ITEM(keywords, k), *arg = fe_get(c, kw, "arg"), *value = arg ? fe_get(c, kw, "value") : NULL;
        if (!value) return NULL;
        const char *name = arg == Py_None ? "**" : fe_utf8(c, arg);
        if (!name) return NULL;
        if (!strcmp(name, "sep")) {
            if (!string_keyword(c, value, "sep", &sep)) return NULL;
        } else if (!strcmp(name, "end")) {
            if (!string_keyword(c, value, "end", &end)) return NULL;
        } else if (strcmp(name, "flush") != 0) {
            return fe_error(c, fe_pos(c, kw), "print(%s=...) is not supported in compiled code%s", name,
                            !strcmp(name, "file") ? " (it prints to sys.stdout)" : "");
        }
    }
    Layout l = {PyList_New(0), NULL, 0, 0};
    PyObject *space = PyUnicode_FromString(" "), *newline = PyUnicode_FromString("\n");
    bool ok = l.pieces && space && newline;
    for (Py_ssize_t k = 0; ok && k < PyList_GET_SIZE(args); k++) {
        PyObject *arg = PyList_GET_ITEM(args, k);
        if (k > 0) ok = add_text(c, &l, sep ? sep : space);
        if (!ok) break;
        PyObject *v = fe_is(arg, "Constant") ? fe_get(c, arg, "value") : NULL;
        if (fe_is(arg, "Starred")) {
            fe_error(c, fe_pos(c, arg), "print(*args) is not supported in compiled code");
            ok = false;
        } else if (v && PyUnicode_Check(v)) {
            /* print("a") shows the text itself: a piece of the layout */
            ok = add_text(c, &l, v);
        } else if (fe_is(arg, "JoinedStr")) {
            ok = fe_layout_fstring(c, &l, arg);
        } else {
            PyObject *empty = PyUnicode_FromString("");
            ok = empty && fe_layout_value(c, &l, arg, "s", empty); /* print shows str(v); an f-string's {v} is format(v, '') */
            Py_XDECREF(empty);
        }
    }
    if (ok) ok = add_text(c, &l, end ? end : newline);
    PyObject *repr = ok ? PyObject_Repr(l.pieces) : NULL;
    if (ok && !repr) fe_py_error(c);
    const char *text = repr ? fe_dup(c, PyUnicode_AsUTF8(repr)) : NULL;
    Py_XDECREF(repr);
    Py_XDECREF(l.pieces);
    Py_XDECREF(space);
    Py_XDECREF(newline);
    if (!text) {
        if (!fe_failed(c)) fe_py_error(c);
        return NULL;
    }
    n->u.call.ckind = IR_CALLEE_INTRINSIC;
    n->u.call.intrinsic = IR_INTR_PRINT;
    n->u.call.name = NULL;
    n->u.call.text = text;
    n->u.call.args = l.values ? l.values : ir_nodes(c->a, 1);
    n->u.call.nargs = l.nvalues;
    return n;
}
