/* print.c: what a call's print() calls left in its context (runtime.h's print section), written to sys.stdout by
 * lorikeet._print after the call, whether it returned or raised; when it raised the program's own exception
 * with arguments made at run time, its last record holds them (frontend/lower_raise.c). */
#include "shim.h"

int lk_print_flush(RtCtx *ctx, const RtNames *names, PyObject **raised_args)
{
    RtText *t = ctx->printed;
    if (raised_args) *raised_args = NULL;
    if (!t || (t->n == 0 && t->dropped == 0)) return 0;
    static PyObject *show;
    if (!show) {
        PyObject *mod = PyImport_ImportModule("lorikeet._print");
        show = mod ? PyObject_GetAttrString(mod, "show") : NULL;
        Py_XDECREF(mod);
        if (!show) return -1;
    }
    PyObject *data = PyBytes_FromStringAndSize(t->data, (Py_ssize_t)t->n);
    PyObject *table = PyTuple_New(names ? names->n : 0);
    for (int i = 0; table && names && i < names->n; i++) {
        PyObject *s = PyUnicode_DecodeUTF8(names->names[i], (Py_ssize_t)strlen(names->names[i]), "replace");
        if (!s) {
            Py_CLEAR(table);
            break;
        }
        PyTuple_SET_ITEM(table, i, s);
    }
    PyObject *r = data && table ? PyObject_CallFunction(show, "OOLO", data, table, (long long)t->dropped,
                                                         raised_args ? Py_True : Py_False) : NULL;
    Py_XDECREF(data);
    Py_XDECREF(table);
    rt_text_free(ctx);
    if (!r) return -1;
    if (raised_args && PyTuple_Check(r)) *raised_args = r;
    else Py_DECREF(r);
    return 0;
}
