/* lower_raise.c: raise and assert statements.
 *
 * `raise E` and `raise E(a, ...)` raise the program's own exception from compiled code, as Numba's nopython mode
 * does: E is an exception class known when the function is compiled (a builtin, or a class defined at module level,
 * named by a global or closure variable or an attribute of numpy). The class is named "module:qualname"; the shim
 * makes the exception from it when the call fails (pyshim/errors.c), with exactly the arguments CPython would
 * give it. Arguments that are all constants (literals, or tuples of them) are the repr of their tuple. Others
 * (an f-string such as f"bad n={n}", or a number computed at run time) are made at run time as print() makes
 * its text: compiled code records the values and the shim formats them (the layout is lower_print.c's). `assert
 * test, message` is `if not test: raise AssertionError(message)`. A bare `raise` (re-raising the exception being
 * handled) has nothing to re-raise: compiled code has no try statement.
 */
#include <string.h>
#include "lower.h"

/* The class e names when it is an exception class (a Name, or attributes of a module name: np.linalg.LinAlgError),
 * with its "module:qualname"; NULL with diag set otherwise. */
static const char *exception_class(FeCtx *c, PyObject *e, IrPos pos)
{
    if (fe_is(e, "Name")) {
        PyObject *id = fe_get(c, e, "id");
        FeRes r;
        if (!id || !fe_resolve(c, id, pos, &r)) return NULL;
        if (r.kind == FE_RES_EXCEPTION) {
            if (strstr(r.qual, "<locals>"))
                return fe_error(c, pos, "the exception class '%s' is defined inside a function: compiled code raises "
                                "classes defined at module level (or builtins), which it can find again by name", r.name);
            return fe_dup(c, r.qual);
        }
        if (r.kind == FE_RES_UNDEFINED || r.kind == FE_RES_UNSUPPORTED) {
            if (r.kind == FE_RES_UNDEFINED) return fe_error(c, pos, "name '%s' is not defined", r.name);
            return fe_error(c, pos, "'%s' is not an exception class (%s): raise takes an exception class, such as "
                            "ValueError", r.name, r.qual);
        }
        return fe_error(c, pos, "'%s' is not an exception class: raise takes an exception class, such as ValueError",
                        r.name);
    }
    if (!fe_is(e, "Attribute"))
        return fe_error(c, pos, "raise takes an exception class by name (raise ValueError(\"...\")), not a %s "
                        "expression", fe_kind(e));
    /* attributes of a module: the object found by getattr from the module the leftmost name resolves to */
    PyObject *chain[16];
    int n = 0;
    PyObject *at = e;
    while (fe_is(at, "Attribute") && n < 16) {
        chain[n++] = at;
        if (!(at = fe_get(c, at, "value"))) return NULL;
    }
    FeRes r;
    PyObject *id = fe_is(at, "Name") ? fe_get(c, at, "id") : NULL;
    if (!id || !fe_resolve(c, id, pos, &r) || r.kind != FE_RES_MODULE) {
        if (fe_failed(c)) return NULL;
        return fe_error(c, pos, "raise takes an exception class by name, or as an attribute of numpy or math "
                        "(np.linalg.LinAlgError)");
    }
    PyObject *obj = r.obj;
    Py_INCREF(obj);
    for (int i = n - 1; i >= 0 && obj; i--) {
        const char *attr = fe_str(c, chain[i], "attr");
        PyObject *next = attr ? PyObject_GetAttrString(obj, attr) : NULL;
        Py_DECREF(obj);
        obj = next;
    }
    if (!obj) {
        PyErr_Clear();
        return fe_failed(c) ? NULL : fe_error(c, pos, "module '%s' has no such attribute", r.qual);
    }
    const char *q = NULL;
    if (PyType_Check(obj) && PyType_IsSubtype((PyTypeObject *)obj, (PyTypeObject *)PyExc_BaseException)) {
        PyObject *mod = PyObject_GetAttrString(obj, "__module__"), *qual = PyObject_GetAttrString(obj, "__qualname__");
        const char *m = mod && PyUnicode_Check(mod) ? PyUnicode_AsUTF8(mod) : NULL;
        const char *qn = qual && PyUnicode_Check(qual) ? PyUnicode_AsUTF8(qual) : NULL;
        if (m && qn) {
            size_t len = strlen(m) + strlen(qn) + 2;
            char *buf = rt_arena_alloc(c->a, len);
            snprintf(buf, len, "%s:%s", m, qn);
            q = buf;
        }
        Py_XDECREF(mod);
        Py_XDECREF(qual);
        PyErr_Clear();
    }
    Py_DECREF(obj);
    if (!q) return fe_error(c, pos, "raise takes an exception class, and this attribute is not one");
    return q;
}

/* A constant the shim can make again from its repr: str, int, float, bool, None, bytes and tuples of them. */
static bool plain_constant(PyObject *v)
{
    if (v == Py_None || PyBool_Check(v) || PyLong_Check(v) || PyFloat_Check(v) || PyUnicode_Check(v) || PyBytes_Check(v))
        return true;
    if (!PyTuple_Check(v)) return false;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(v); i++)
        if (!plain_constant(PyTuple_GET_ITEM(v, i))) return false;
    return true;
}

/* The value of a constant argument (a literal, or tuples of them), a new reference; NULL (no error set) when arg
 * is not one. */
static PyObject *constant_of(PyObject *eval, PyObject *arg)
{
    PyObject *v = PyObject_CallOneArg(eval, arg);
    if (v && plain_constant(v)) return v;
    PyErr_Clear();
    Py_XDECREF(v);
    return NULL;
}

/* The exception's arguments, checked. All constants: the repr of their tuple, as the text (no values). Otherwise
 * (an f-string, or a value computed at run time, among them) the repr of a list with one entry per argument:
 * ('c', constant), ('f', pieces) for an f-string (print's layout: its text and slots), or ('v',) for a value
 * shown as it is; the values the slots and ('v',) entries take, in order, go to *values. NULL for no arguments
 * (*none set) or with diag set. */
static const char *exception_args(FeCtx *c, PyObject *call, IrPos pos, bool *none, FeLayout *values)
{
    *none = false;
    PyObject *args = fe_list(c, call, "args"), *kws = args ? fe_list(c, call, "keywords") : NULL;
    if (!kws) return NULL;
    if (PyList_GET_SIZE(kws) > 0)
        return fe_error(c, fe_pos(c, PyList_GET_ITEM(kws, 0)), "the exception raised by compiled code takes positional "
                        "arguments only");
    Py_ssize_t n = PyList_GET_SIZE(args);
    if (n == 0) {
        *none = true;
        return NULL;
    }
    PyObject *ast = PyImport_ImportModule("ast"), *eval = ast ? PyObject_GetAttrString(ast, "literal_eval") : NULL;
    Py_XDECREF(ast);
    PyObject *consts = eval ? PyTuple_New(n) : NULL, *specs = consts ? PyList_New(0) : NULL;
    if (!specs) {
        Py_XDECREF(eval);
        Py_XDECREF(consts);
        return fe_py_error(c);
    }
    const char *text = NULL;
    bool all_constant = true, ok = true;
    for (Py_ssize_t i = 0; ok && i < n; i++) {
        PyObject *arg = PyList_GET_ITEM(args, i), *v = constant_of(eval, arg), *spec = NULL;
        if (v) {
            PyTuple_SET_ITEM(consts, i, v);
            spec = Py_BuildValue("(sO)", "c", v);
        } else if (fe_is(arg, "Starred")) {
            fe_error(c, fe_pos(c, arg), "raise E(*args) is not supported in compiled code");
            ok = false;
        } else if (fe_is(arg, "JoinedStr")) {
            /* an f-string: made at run time from its values, as print() makes its text */
            all_constant = false;
            FeLayout one = {PyList_New(0), values->values, values->nvalues, values->cap};
            ok = one.pieces && fe_layout_fstring(c, &one, arg);
            if (ok) {
                values->values = one.values;
                values->nvalues = one.nvalues;
                values->cap = one.cap;
                spec = Py_BuildValue("(sO)", "f", one.pieces);
            }
            Py_XDECREF(one.pieces);
        } else {
            /* a value computed at run time: the exception takes it as it is (ValueError(n)) */
            all_constant = false;
            PyObject *empty = PyUnicode_FromString("");
            FeLayout one = {PyList_New(0), values->values, values->nvalues, values->cap};
            ok = one.pieces && empty && fe_layout_value(c, &one, arg, "", empty);
            Py_XDECREF(empty);
            Py_XDECREF(one.pieces);
            if (ok) {
                values->values = one.values;
                values->nvalues = one.nvalues;
                values->cap = one.cap;
                spec = Py_BuildValue("(s)", "v");
            }
        }
        if (ok && (!spec || PyList_Append(specs, spec) < 0)) {
            fe_py_error(c);
            ok = false;
        }
        Py_XDECREF(spec);
    }
    PyObject *lit = ok ? (all_constant ? consts : specs) : NULL;
    if (lit) {
        /* the shim evaluates this text again (ast.literal_eval): it must give the same values (not inf, nan) */
        PyObject *repr = PyObject_Repr(lit), *back = repr ? PyObject_CallOneArg(eval, repr) : NULL;
        int same = back ? PyObject_RichCompareBool(back, lit, Py_EQ) : -1;
        PyErr_Clear();
        if (same == 1) text = fe_dup(c, PyUnicode_AsUTF8(repr));
        else fe_error(c, pos, "the constant arguments of an exception raised by compiled code must be ones Python can "
                      "read back from their repr (not inf or nan)");
        PyErr_Clear();
        Py_XDECREF(repr);
        Py_XDECREF(back);
    }
    Py_DECREF(consts);
    Py_DECREF(specs);
    Py_DECREF(eval);
    return text;
}

static IrNode *raise_stmt(FeCtx *c, IrPos pos, const char *cls, const char *args, const FeLayout *values)
{
    IrNode *call = ir_node(c->a, IR_CALL, pos);
    call->u.call.ckind = IR_CALLEE_INTRINSIC;
    call->u.call.intrinsic = IR_INTR_RAISE;
    call->u.call.name = cls;
    call->u.call.text = args;
    call->u.call.args = values && values->nvalues ? values->values : NULL;
    call->u.call.nargs = values ? values->nvalues : 0;
    IrNode *s = ir_node(c->a, IR_EXPR_STMT, pos);
    s->u.expr_stmt.value = call;
    return s;
}

bool fe_lower_raise(FeCtx *c, PyObject *s, IrPos pos, IrBlock *out)
{
    PyObject *exc = fe_get(c, s, "exc"), *cause = exc ? fe_get(c, s, "cause") : NULL;
    if (!cause) return false;
    if (exc == Py_None)
        return fe_error(c, pos, "a bare raise re-raises the exception being handled, and compiled code handles none "
                        "(it has no try statement): raise an exception class") != NULL;
    if (cause != Py_None) {
        PyObject *v = fe_is(cause, "Constant") ? fe_get(c, cause, "value") : NULL;
        if (v != Py_None) /* `from None` only hides a context, and compiled code's exceptions have none */
            return fe_error(c, fe_pos(c, cause), "raise ... from an exception is not supported in compiled code "
                            "(only 'from None')") != NULL;
    }
    bool call = fe_is(exc, "Call"), none = true;
    PyObject *func = call ? fe_get(c, exc, "func") : exc;
    const char *cls = func ? exception_class(c, func, pos) : NULL;
    if (!cls) return false;
    FeLayout values = {0};
    const char *args = call ? exception_args(c, exc, pos, &none, &values) : NULL;
    if (call && !args && !none) return false;
    ir_block_push(c->a, out, raise_stmt(c, pos, cls, args, &values));
    return true;
}

bool fe_lower_assert(FeCtx *c, PyObject *s, IrPos pos, IrBlock *out)
{
    PyObject *test = fe_get(c, s, "test"), *msg = test ? fe_get(c, s, "msg") : NULL;
    if (!msg) return false;
    IrNode *cond = fe_lower_expr(c, test);
    if (!cond) return false;
    const char *args = NULL;
    FeLayout values = {0};
    if (msg != Py_None) {
        /* the message as the one argument of AssertionError: the same rule as a raise's arguments */
        PyObject *ast = PyImport_ImportModule("ast");
        PyObject *call = ast ? PyObject_CallMethod(ast, "Call", "O[O][]", Py_None, msg) : NULL;
        Py_XDECREF(ast);
        if (!call) return fe_py_error(c) != NULL;
        bool none;
        args = exception_args(c, call, fe_pos(c, msg), &none, &values);
        Py_DECREF(call);
        if (!args) return false;
    }
    IrNode *not = ir_node(c->a, IR_UNOP, pos);
    not->u.unop.op = IR_UOP_NOT;
    not->u.unop.operand = cond;
    IrNode *iff = ir_node(c->a, IR_IF, pos);
    iff->u.if_.cond = not;
    ir_block_push(c->a, &iff->u.if_.then, raise_stmt(c, pos, "builtins:AssertionError", args, &values));
    ir_block_push(c->a, out, iff);
    return true;
}
