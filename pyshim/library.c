/* library.c: typespec's library registry as Python data (lorikeet._lorikeet.library()), for the user guide's
 * coverage table (python -m lorikeet coverage) and its test. Nothing here decides what compiles. */
#include "shim.h"

static const char *kind_name(TsLibKind k)
{
    switch (k) {
    case TS_LIB_BUILTIN: return "builtin";
    case TS_LIB_MATH: return "math";
    case TS_LIB_NUMPY: return "numpy";
    case TS_LIB_METHOD: return "method";
    case TS_LIB_ATTRIBUTE: return "attribute";
    case TS_LIB_LORIKEET: return "lorikeet";
    }
    return "?";
}

/* [(kind, name, group, note, {backend: why it refuses, or None}), ...] in the registry's order; name is as the user
 * writes it after the module ("sum", "linalg.solve", "add.reduce"). */
PyObject *lk_library(PyObject *self, PyObject *unused)
{
    static const char *backends[] = {"cpu", "openmp", "gpu"};
    const TsLibEntry *e;
    int n = ts_library(&e);
    PyObject *out = PyList_New(n);
    if (!out) return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *refusals = PyDict_New();
        if (!refusals) goto fail;
        for (size_t b = 0; b < sizeof backends / sizeof backends[0]; b++) {
            const char *why = ts_library_refusal(&e[i], backends[b]);
            PyObject *v = why ? PyUnicode_FromString(why) : Py_NewRef(Py_None);
            if (!v || PyDict_SetItemString(refusals, backends[b], v) < 0) {
                Py_XDECREF(v);
                Py_DECREF(refusals);
                goto fail;
            }
            Py_DECREF(v);
        }
        PyObject *row = Py_BuildValue("(ssszN)", kind_name(e[i].kind), e[i].name, e[i].group, e[i].note, refusals);
        if (!row) goto fail;
        PyList_SET_ITEM(out, i, row);
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}
