/* generator.c: a NumPy random Generator passed to compiled code. Supported when its bit generator is PCG64 (what
 * np.random.default_rng makes): its state is read in at the call into the argument's 6 slots (an RtRng, which
 * the compiled code's draws update in place) and written back after the call, whether it returned or raised, so
 * the caller's Generator continues exactly where NumPy's would after the same draws. Other bit generators are a
 * TypeError naming the supported one. Only the type is part of a signature (and of the disk cache's key): the
 * state is a value of the call. */
#include "shim.h"

static PyObject *generator_type; /* numpy.random.Generator, once numpy.random is imported */
static PyObject *pcg64_type;     /* numpy.random.PCG64 */

bool lk_is_generator(PyObject *o)
{
    if (!generator_type) {
        PyObject *name = PyUnicode_FromString("numpy.random");
        PyObject *mod = name ? PyImport_GetModule(name) : NULL;
        Py_XDECREF(name);
        if (!mod) {
            PyErr_Clear();
            return false; /* not imported: no Generator exists yet */
        }
        generator_type = PyObject_GetAttrString(mod, "Generator");
        pcg64_type = PyObject_GetAttrString(mod, "PCG64");
        Py_DECREF(mod);
        if (!generator_type || !PyType_Check(generator_type) || !pcg64_type || !PyType_Check(pcg64_type)) {
            Py_CLEAR(generator_type);
            Py_CLEAR(pcg64_type);
            PyErr_Clear();
            return false;
        }
    }
    return PyObject_TypeCheck(o, (PyTypeObject *)generator_type);
}

bool lk_is_pcg64_generator(PyObject *gen)
{
    PyObject *bg = PyObject_GetAttrString(gen, "bit_generator");
    bool ok = bg && pcg64_type && Py_TYPE(bg) == (PyTypeObject *)pcg64_type;
    Py_XDECREF(bg);
    PyErr_Clear();
    return ok;
}

/* gen.bit_generator.state, a new reference, or NULL with a TypeError when it is not PCG64's. */
static PyObject *pcg64_state(PyObject *gen, const char *param)
{
    PyObject *bg = PyObject_GetAttrString(gen, "bit_generator");
    PyObject *state = bg ? PyObject_GetAttrString(bg, "state") : NULL;
    PyObject *kind = state && PyDict_Check(state) ? PyDict_GetItemString(state, "bit_generator") : NULL;
    if (!kind || !PyUnicode_Check(kind) || PyUnicode_CompareWithASCIIString(kind, "PCG64") != 0) {
        if (bg && !PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "argument '%s': a numpy Generator is supported when its bit generator is "
                         "PCG64 (np.random.default_rng's), not %.100s", param, Py_TYPE(bg)->tp_name);
        Py_XDECREF(bg);
        Py_XDECREF(state);
        return NULL;
    }
    Py_DECREF(bg);
    return state;
}

bool lk_generator_supported(PyObject *gen, const char *param)
{
    PyObject *state = pcg64_state(gen, param);
    Py_XDECREF(state);
    return state != NULL;
}

/* A 128-bit Python int as its high and low words. */
static int split128(PyObject *v, uint64_t *hi, uint64_t *lo)
{
    if (!v || !PyLong_Check(v)) return -1;
    *lo = PyLong_AsUnsignedLongLongMask(v);
    PyObject *sixty_four = PyLong_FromLong(64);
    PyObject *high = sixty_four ? PyNumber_Rshift(v, sixty_four) : NULL;
    Py_XDECREF(sixty_four);
    if (!high) return -1;
    *hi = PyLong_AsUnsignedLongLongMask(high);
    Py_DECREF(high);
    return PyErr_Occurred() ? -1 : 0;
}

static PyObject *join128(uint64_t hi, uint64_t lo)
{
    PyObject *h = PyLong_FromUnsignedLongLong(hi), *l = PyLong_FromUnsignedLongLong(lo);
    PyObject *sixty_four = PyLong_FromLong(64);
    PyObject *shifted = h && sixty_four ? PyNumber_Lshift(h, sixty_four) : NULL;
    PyObject *v = shifted && l ? PyNumber_Or(shifted, l) : NULL;
    Py_XDECREF(h);
    Py_XDECREF(l);
    Py_XDECREF(sixty_four);
    Py_XDECREF(shifted);
    return v;
}

void lk_generator_in(PyObject *gen, int64_t *slots)
{
    PyObject *state = pcg64_state(gen, "?");
    if (!state) return;
    PyObject *inner = PyDict_GetItemString(state, "state");
    RtRng g = {0};
    PyObject *has = PyDict_GetItemString(state, "has_uint32"), *u = PyDict_GetItemString(state, "uinteger");
    if (!inner || !PyDict_Check(inner) || split128(PyDict_GetItemString(inner, "state"), &g.state_hi, &g.state_lo) < 0 ||
        split128(PyDict_GetItemString(inner, "inc"), &g.inc_hi, &g.inc_lo) < 0 || !has || !u) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "a PCG64 state of an unknown form");
        Py_DECREF(state);
        return;
    }
    g.has_uint32 = PyLong_AsLongLong(has);
    g.uinteger = PyLong_AsUnsignedLongLongMask(u);
    Py_DECREF(state);
    memcpy(slots, &g, sizeof g);
}

/* The state in slots back into gen (PCG64's state setter, which checks it). -1 with an exception. */
static int generator_out(PyObject *gen, const int64_t *slots)
{
    RtRng g;
    memcpy(&g, slots, sizeof g);
    PyObject *s = join128(g.state_hi, g.state_lo), *inc = join128(g.inc_hi, g.inc_lo);
    PyObject *inner = s && inc ? Py_BuildValue("{sOsO}", "state", s, "inc", inc) : NULL;
    PyObject *state = inner ? Py_BuildValue("{sssOsLsK}", "bit_generator", "PCG64", "state", inner, "has_uint32",
                                            (long long)g.has_uint32, "uinteger", (unsigned long long)g.uinteger) : NULL;
    PyObject *bg = state ? PyObject_GetAttrString(gen, "bit_generator") : NULL;
    int rc = bg ? PyObject_SetAttrString(bg, "state", state) : -1;
    Py_XDECREF(s);
    Py_XDECREF(inc);
    Py_XDECREF(inner);
    Py_XDECREF(state);
    Py_XDECREF(bg);
    return rc;
}

static bool has_generator(const IrType *t)
{
    if (t->kind == IR_TY_RNG) return true;
    if (t->kind == IR_TY_TUPLE)
        for (int i = 0; i < t->nelems; i++)
            if (has_generator(t->elems[i])) return true;
    return false;
}

static int write_back(PyObject *arg, const IrType *t, const int64_t *slots, int *nslot)
{
    if (t->kind == IR_TY_RNG) {
        int rc = generator_out(arg, slots + *nslot);
        *nslot += ir_abi_slots(t);
        return rc;
    }
    if (t->kind == IR_TY_TUPLE && has_generator(t)) {
        for (int i = 0; i < t->nelems; i++)
            if (write_back(PyTuple_GET_ITEM(arg, i), t->elems[i], slots, nslot) < 0) return -1;
        return 0;
    }
    *nslot += ir_abi_slots(t);
    return 0;
}

int lk_generators_out(const LkSpec *s, PyObject *args, const int64_t *slots)
{
    int nslot = 0;
    for (int i = 0; i < s->nargs; i++)
        if (write_back(PyTuple_GET_ITEM(args, i), s->arg_types[i], slots, &nslot) < 0) return -1;
    return 0;
}

bool lk_spec_has_generator(const LkSpec *s)
{
    for (int i = 0; i < s->nargs; i++)
        if (has_generator(s->arg_types[i])) return true;
    return false;
}
