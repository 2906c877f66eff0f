/* pyast.c: reading Python AST objects from C, safely, and resolving names.
 *
 * This is the only file of the frontend that juggles reference counts: every object it fetches goes into
 * FeCtx.keep and is handed out borrowed. Every C-API failure becomes an LK_ERR_INTERNAL diagnostic with the
 * Python exception cleared; nothing here may leave an exception pending or crash on a malformed tree.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "lower.h"

const char *fe_kind(PyObject *node)
{
    return node ? Py_TYPE(node)->tp_name : "NULL";
}

bool fe_is(PyObject *node, const char *kind)
{
    return node && strcmp(Py_TYPE(node)->tp_name, kind) == 0;
}

bool fe_failed(const FeCtx *c)
{
    return c->diag->kind != LK_OK;
}

void *fe_error(FeCtx *c, IrPos pos, const char *fmt, ...)
{
    char msg[sizeof c->diag->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    lk_diag_set(c->diag, LK_ERR_COMPILE, c->file, pos.line, pos.col, "%s", msg);
    return NULL;
}

void *fe_py_error(FeCtx *c)
{
    if (!PyErr_Occurred()) {
        lk_diag_set(c->diag, LK_ERR_INTERNAL, c->file, c->pos.line, c->pos.col,
                    "internal error in the frontend: a C-API call failed without an exception");
        return NULL;
    }
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    const char *tname = type ? ((PyTypeObject *)type)->tp_name : "?";
    PyObject *str = value ? PyObject_Str(value) : NULL;
    const char *msg = str ? PyUnicode_AsUTF8(str) : NULL;
    lk_diag_set(c->diag, LK_ERR_INTERNAL, c->file, c->pos.line, c->pos.col, "internal error in the frontend: %s: %s",
                tname, msg ? msg : "(no message)");
    Py_XDECREF(str);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    PyErr_Clear();
    return NULL;
}

/* Takes ownership of `owned` (a new reference or NULL after an error) and returns it borrowed. */
static PyObject *keep(FeCtx *c, PyObject *owned)
{
    if (!owned) return fe_py_error(c);
    int rc = PyList_Append(c->keep, owned);
    Py_DECREF(owned);
    if (rc < 0) return fe_py_error(c);
    return owned;
}

PyObject *fe_get(FeCtx *c, PyObject *node, const char *field)
{
    if (!node) return fe_py_error(c);
    return keep(c, PyObject_GetAttrString(node, field));
}

PyObject *fe_list(FeCtx *c, PyObject *node, const char *field)
{
    PyObject *v = fe_get(c, node, field);
    if (!v) return NULL;
    if (!PyList_Check(v)) {
        lk_diag_set(c->diag, LK_ERR_INTERNAL, c->file, c->pos.line, c->pos.col,
                    "internal error in the frontend: %s.%s is a %s, not a list", fe_kind(node), field, fe_kind(v));
        return NULL;
    }
    return v;
}

const char *fe_utf8(FeCtx *c, PyObject *s)
{
    if (!PyUnicode_Check(s)) {
        lk_diag_set(c->diag, LK_ERR_INTERNAL, c->file, c->pos.line, c->pos.col,
                    "internal error in the frontend: expected a str, got %s", fe_kind(s));
        return NULL;
    }
    const char *u = PyUnicode_AsUTF8(s);
    return u ? u : fe_py_error(c);
}

const char *fe_str(FeCtx *c, PyObject *node, const char *field)
{
    PyObject *v = fe_get(c, node, field);
    return v ? fe_utf8(c, v) : NULL;
}

const char *fe_dup(FeCtx *c, const char *s)
{
    return rt_arena_strdup(c->a, s);
}

/* An int attribute of a node without going through keep (positions are read for every node). */
static bool int_attr(PyObject *node, const char *name, long *out)
{
    PyObject *v = PyObject_GetAttrString(node, name);
    if (!v) {
        PyErr_Clear();
        return false;
    }
    long x = PyLong_Check(v) ? PyLong_AsLong(v) : -1;
    bool ok = PyLong_Check(v) && !(x == -1 && PyErr_Occurred());
    PyErr_Clear();
    Py_DECREF(v);
    *out = x;
    return ok;
}

IrPos fe_pos(FeCtx *c, PyObject *node)
{
    long line, col;
    if (!node || !int_attr(node, "lineno", &line)) return c->pos;
    if (!int_attr(node, "col_offset", &col) || col < 0) col = 0;
    return (IrPos){(int)line + c->line_offset - 1, (int)col + 1};
}

/* ---- names ---- */

static bool bad_env(FeCtx *c, IrPos pos, const char *name)
{
    lk_diag_set(c->diag, LK_ERR_INTERNAL, c->file, pos.line, pos.col,
                "internal error in the frontend: malformed environment entry for name '%s'", name);
    return false;
}

/* The str item k of a resolution tuple, or NULL. */
static const char *tuple_str(FeCtx *c, PyObject *t, Py_ssize_t k)
{
    if (PyTuple_GET_SIZE(t) <= k || !PyUnicode_Check(PyTuple_GET_ITEM(t, k))) return NULL;
    return fe_utf8(c, PyTuple_GET_ITEM(t, k));
}

bool fe_resolve(FeCtx *c, PyObject *id, IrPos pos, FeRes *out)
{
    const char *name = fe_utf8(c, id);
    if (!name) return false;
    *out = (FeRes){FE_RES_UNDEFINED, name, NULL, NULL, NULL};
    for (int i = c->ncomp - 1; i >= 0; i--)
        if (strcmp(c->comp_names[i], name) == 0) {
            out->kind = FE_RES_LOCAL;
            out->var = c->comp_vars[i];
            return true;
        }
    int local = PySet_Contains(c->locals, id);
    if (local < 0) {
        fe_py_error(c);
        return false;
    }
    if (local) {
        out->kind = FE_RES_LOCAL;
        return true;
    }
    if (c->outer) {
        /* a nested function: the enclosing function's variables are captured, other names resolve as there */
        if (!fe_resolve(c->outer, id, pos, out)) return false;
        if (out->kind != FE_RES_LOCAL) return true;
        IrVar *outer_var = out->var ? out->var : ir_func_var(c->outer->f, name);
        for (int i = 0; i < c->ncap; i++)
            if (c->cap_outer[i] == outer_var) {
                out->var = c->cap_inner[i];
                return true;
            }
        if (c->ncap == 64) return fe_error(c, pos, "a nested function may capture at most 64 variables") != NULL;
        c->cap_outer[c->ncap] = outer_var;
        out->var = c->cap_inner[c->ncap++] = ir_func_new_var(c->f, name);
        return true;
    }
    if (!c->env) return true;
    PyObject *r = PyDict_GetItemWithError(c->env, id); /* borrowed; env outlives the lowering */
    if (!r) {
        if (PyErr_Occurred()) fe_py_error(c);
        return !fe_failed(c);
    }
    if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) < 2) return bad_env(c, pos, name);
    const char *tag = tuple_str(c, r, 0);
    if (!tag) return fe_failed(c) ? false : bad_env(c, pos, name);
    PyObject *arg = PyTuple_GET_ITEM(r, 1);
    if (strcmp(tag, "const") == 0) {
        *out = (FeRes){FE_RES_CONST, name, NULL, arg, NULL};
    } else if (strcmp(tag, "module") == 0) {
        const char *mod = tuple_str(c, r, 1);
        if (!mod || PyTuple_GET_SIZE(r) < 3) return fe_failed(c) ? false : bad_env(c, pos, name);
        *out = (FeRes){FE_RES_MODULE, name, mod, PyTuple_GET_ITEM(r, 2), NULL};
    } else if (strcmp(tag, "named") == 0 || strcmp(tag, "unsupported") == 0) {
        const char *q = tuple_str(c, r, 1);
        if (!q) return fe_failed(c) ? false : bad_env(c, pos, name);
        *out = (FeRes){tag[0] == 'n' ? FE_RES_NAMED : FE_RES_UNSUPPORTED, name, q, NULL, NULL};
    } else if (strcmp(tag, "exception") == 0) {
        const char *q = tuple_str(c, r, 1);
        if (!q || PyTuple_GET_SIZE(r) < 3) return fe_failed(c) ? false : bad_env(c, pos, name);
        *out = (FeRes){FE_RES_EXCEPTION, name, q, PyTuple_GET_ITEM(r, 2), NULL};
    } else if (strcmp(tag, "func") == 0) {
        *out = (FeRes){FE_RES_FUNC, name, NULL, arg, NULL};
    } else if (strcmp(tag, "array") == 0) {
        *out = (FeRes){FE_RES_ARRAY, name, NULL, arg, NULL};
    } else {
        return bad_env(c, pos, name);
    }
    return true;
}
