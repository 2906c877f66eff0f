/* dispatcher.c: the Dispatcher type and the module lorikeet._lorikeet.
 *
 * The call path is the hot path: it builds a signature key from the arguments' types (a few bytes each),
 * finds the specialisation by comparing keys, unboxes into slots on the stack, calls the native entry with the
 * GIL released, and boxes the result. It allocates nothing of its own. Anything unusual (keyword arguments,
 * lists, a new signature) goes to the slow path in Python or compile.c. */
#define LK_IMPORT_ARRAY
#include "shim.h"
#include <structmember.h>

PyTypeObject *lk_dispatcher_type;

static LkSpec *find_spec(LkDispatcher *d, const unsigned char *key, int len)
{
    for (int i = d->nspecs - 1; i >= 0; i--) {
        LkSpec *s = d->specs[i];
        if (s->keylen == len && memcmp(s->key, key, (size_t)len) == 0) return s;
    }
    return NULL;
}

/* One argument's key at key[*i] (lk_key_arg's format), advancing *i; the declared key accepts the call's when
 * they are equal but for an array the declared key has any layout and the call's is C-contiguous (same
 * readonly bit). Device arrays ('D') are matched exactly. */
static bool accepts_arg(const unsigned char *decl, const unsigned char *call, int len, int *i)
{
    if (*i >= len) return false;
    unsigned char tag = decl[*i];
    if (tag != call[*i]) return false;
    switch (tag) {
    case 'A':
        if (*i + 3 >= len || decl[*i + 1] != call[*i + 1] || decl[*i + 2] != call[*i + 2]) return false;
        if (decl[*i + 3] != call[*i + 3] && !(decl[*i + 3] == call[*i + 3] - ('C' - 'A') && (call[*i + 3] | 32) == 'c'))
            return false;
        *i += 4;
        return true;
    case 'D':
        if (*i + 3 >= len || memcmp(decl + *i, call + *i, 4) != 0) return false;
        *i += 4;
        return true;
    case 's':
    case 'd':
        if (*i + 1 >= len || decl[*i + 1] != call[*i + 1]) return false;
        *i += 2;
        return true;
    case 'S':
        if (*i + 25 >= len || memcmp(decl + *i, call + *i, 26) != 0) return false;
        *i += 26;
        return true;
    case 'F':
        if (*i + 8 >= len || memcmp(decl + *i, call + *i, 9) != 0) return false;
        *i += 9;
        return true;
    case 'T': {
        if (*i + 1 >= len || decl[*i + 1] != call[*i + 1]) return false;
        int n = decl[*i + 1];
        *i += 2;
        for (int k = 0; k < n; k++)
            if (!accepts_arg(decl, call, len, i)) return false;
        if (*i >= len || decl[*i] != ')' || call[*i] != ')') return false;
        (*i)++;
        return true;
    }
    default: /* 'i', 'f', 'b', 'N': one byte */
        (*i)++;
        return true;
    }
}

/* A specialisation compiled for a declared signature that takes a call whose exact key has none: warm-up
 * compiles float64[:] once, and C-contiguous arrays then use it rather than compiling again. */
static LkSpec *find_declared(LkDispatcher *d, const unsigned char *key, int len)
{
    for (int i = d->nspecs - 1; i >= 0; i--) {
        LkSpec *s = d->specs[i];
        if (!s->declared || s->keylen != len) continue;
        int at = 0;
        while (at < len && accepts_arg(s->key, key, len, &at)) {}
        if (at == len) return s;
    }
    return NULL;
}

static int add_spec(LkDispatcher *d, LkSpec *s)
{
    if (d->nspecs == d->cap_specs) {
        int cap = d->cap_specs ? d->cap_specs * 2 : 4;
        LkSpec **specs = PyMem_Realloc(d->specs, sizeof *specs * (size_t)cap);
        if (!specs) {
            PyErr_NoMemory();
            return -1;
        }
        d->specs = specs;
        d->cap_specs = cap;
    }
    d->specs[d->nspecs++] = s;
    return 0;
}

static PyObject *invoke(LkSpec *s, PyObject *args)
{
    int64_t stack_slots[256], stack_ret[64];
    int64_t *slots = s->arg_slots <= 256 ? stack_slots : PyMem_Malloc(sizeof(int64_t) * (size_t)s->arg_slots);
    int64_t *ret = s->ret_slots <= 64 ? stack_ret : PyMem_Malloc(sizeof(int64_t) * (size_t)s->ret_slots);
    PyObject *arrays[LK_MAX_ARRAYS], *owners[LK_MAX_ARRAYS];
    PyObject *result = NULL;
    if (!slots || !ret) {
        PyErr_NoMemory();
        goto done;
    }
    if (s->device_data) {
        result = lk_invoke_device(s, args, slots, ret); /* gpu_call.c */
        goto done;
    }
    int nslot = 0, narrays = 0, nowners = 0;
    for (int i = 0; i < s->nargs + s->nconsts; i++)
        lk_unbox_arg(lk_spec_arg(s, args, i), s->arg_types[i], slots, &nslot, arrays, &narrays);
    if (PyErr_Occurred()) goto done;
    if (lk_split_host) { /* the test mode of split_call.c: LORIKEET_SPLIT_TEST=1 and a memory limit */
        bool handled;
        result = lk_split_call(s, &lk_host_runner, arrays, narrays, slots, ret, &handled);
        if (handled) goto done;
    }
    RtCtx ctx;
    ctx.err.status = LK_OK;
    ctx.err.code = RT_ERR_NONE;
    ctx.buffers = NULL;
    ctx.printed = NULL;
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = s->entry(&ctx, slots, ret);
    Py_END_ALLOW_THREADS
    /* a Generator argument continues where the call's draws left it, whether the call returned or raised */
    if (lk_spec_has_generator(s) && lk_generators_out(s, args, slots) < 0) {
        rt_ctx_release(&ctx);
        goto done;
    }
    PyObject *raised = NULL;
    if (ctx.printed && lk_print_flush(&ctx, &s->names, lk_raised_recorded(&ctx, status) ? &raised : NULL) < 0) {
        /* writing the call's output raised (sys.stdout closed): that exception, as print() would raise it */
    } else if (status != 0) {
        LkDiag diag;
        if (s->posmap) lk_cache_rebase(s->posmap, &ctx.err);
        rt_error_diag(&ctx.err, &s->names, &diag);
        diag.raised_values = raised;
        lk_raise_diag(&diag);
        Py_XDECREF(raised);
    } else {
        nslot = 0;
        result = lk_box_result(s->ret_type, ret, &nslot, &ctx, arrays, owners, &nowners);
    }
    rt_ctx_release(&ctx);
done:
    if (slots != stack_slots) PyMem_Free(slots);
    if (ret != stack_ret) PyMem_Free(ret);
    return result;
}

static PyObject *call_args(LkDispatcher *d, PyObject *self, PyObject *args, PyObject *kwargs, PyObject *given);

/* A function with *args: the positional arguments after the others become one tuple, the last argument (a new
 * tuple of its own, so such functions' calls allocate). Keywords go to the slow path, which binds them first. */
static PyObject *dispatcher_call(PyObject *self, PyObject *args, PyObject *kwargs)
{
    LkDispatcher *d = (LkDispatcher *)self;
    if (!d->untyped && lk_ensure_untyped(d) < 0) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(args), nfixed = d->nparams - 1;
    if (!d->varargs || (kwargs && PyDict_GET_SIZE(kwargs)) || n < nfixed) return call_args(d, self, args, kwargs, args);
    PyObject *rest = PyTuple_GetSlice(args, nfixed, n);
    PyObject *packed = rest ? PyTuple_New(nfixed + 1) : NULL;
    if (!packed) {
        Py_XDECREF(rest);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nfixed; i++) PyTuple_SET_ITEM(packed, i, Py_NewRef(PyTuple_GET_ITEM(args, i)));
    PyTuple_SET_ITEM(packed, nfixed, rest);
    PyObject *r = call_args(d, self, packed, NULL, args);
    Py_DECREF(packed);
    return r;
}

/* given: the positional arguments as the caller gave them (args before *args' packing), for the slow path */
static PyObject *call_args(LkDispatcher *d, PyObject *self, PyObject *args, PyObject *kwargs, PyObject *given)
{
    unsigned char key[LK_KEY_MAX];
    int len = 0;
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    bool slow = (kwargs && PyDict_GET_SIZE(kwargs)) || n != d->nparams;
    for (Py_ssize_t i = 0; i < n && !slow; i++)
        if (lk_key_arg(PyTuple_GET_ITEM(args, i), key, &len) < 0) slow = true;
    if (slow) {
        /* keywords, defaults, lists to convert, or a type to name in a TypeError: the slow path does these */
        PyObject *slow_path = PyObject_GetAttrString(self, "_call_slow");
        if (!slow_path) return NULL;
        PyObject *r = PyObject_Call(slow_path, given, kwargs);
        Py_DECREF(slow_path);
        return r;
    }
    if (d->auto_state) return lk_auto_call(d, args, key, len); /* the backend is chosen per call */
    LkSpec *s = find_spec(d, key, len);
    if (!s) s = find_declared(d, key, len);
    if (!s && !d->declared_warmed) {
        /* the first miss compiles the declared signatures (from the disk cache when warmed): one may take
         * this call, whose exact key differs (a C-contiguous array for a float64[:]) */
        d->declared_warmed = true;
        PyObject *r = PyObject_CallMethod(self, "_warm_declared", NULL);
        if (!r) return NULL;
        Py_DECREF(r);
        s = find_spec(d, key, len);
        if (!s) s = find_declared(d, key, len);
    }
    if (!s) {
        s = lk_compile(d, args, NULL);
        if (!s) return NULL;
        if (add_spec(d, s) < 0) {
            lk_free_spec(s);
            return NULL;
        }
    }
    return invoke(s, args);
}

static PyObject *spec_info(const LkSpec *s)
{
    PyObject *llvm = s->llvm_ir ? PyUnicode_FromString(s->llvm_ir) : (Py_INCREF(Py_None), Py_None);
    return Py_BuildValue("(sNdss)", s->typed_ir, llvm, s->compile_ms, s->ir_hash,
                         s->parallel_report ? s->parallel_report : "");
}

/* The signature key of args, or false (then no compiled code can be for them) */
static bool key_of(PyObject *args, unsigned char *key, int *len)
{
    bool keyed = true;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); i++)
        if (lk_key_arg(PyTuple_GET_ITEM(args, i), key, len) < 0) keyed = false;
    return keyed;
}

/* _compile(args): compile for these arguments (if not yet) and raise what compiling raises. */
static PyObject *dispatcher_compile(PyObject *self, PyObject *args)
{
    LkDispatcher *d = (LkDispatcher *)self;
    PyObject *call_args;
    int keep_llvm = 0, declared = 0;
    if (!PyArg_ParseTuple(args, "O!|pp", &PyTuple_Type, &call_args, &keep_llvm, &declared)) return NULL;
    unsigned char key[LK_KEY_MAX];
    int len = 0;
    bool keyed = key_of(call_args, key, &len);
    LkSpec *old = keyed ? find_spec(d, key, len) : NULL;
    if (old && (!keep_llvm || old->llvm_ir)) {
        if (declared) old->declared = true;
        return spec_info(old);
    }
    LkCodeIo io = {.keep_llvm = keep_llvm != 0};
    LkSpec *s = lk_compile(d, call_args, &io);
    if (!s) return NULL;
    s->declared = declared != 0;
    if (!keyed) {
        /* arguments that key_arg refuses (they raised in lk_compile); never reached with a spec */
        lk_free_spec(s);
        Py_RETURN_NONE;
    }
    if (add_spec(d, s) < 0) {
        lk_free_spec(s);
        return NULL;
    }
    return spec_info(s);
}

/* _save(args) -> bytes: the code for these arguments, compiled again (the process keeps one copy of it) as
 * bytes that _load accepts in any process with the same key_extras. For tests, until the cache (issue 11). */
static PyObject *dispatcher_save(PyObject *self, PyObject *args)
{
    LkDispatcher *d = (LkDispatcher *)self;
    PyObject *call_args;
    if (!PyArg_ParseTuple(args, "O!", &PyTuple_Type, &call_args)) return NULL;
    unsigned char key[LK_KEY_MAX];
    int len = 0;
    bool keyed = key_of(call_args, key, &len);
    LkCodeIo io = {.save = true};
    LkSpec *s = lk_compile(d, call_args, &io);
    if (!s) return NULL;
    if (keyed && !find_spec(d, key, len) && add_spec(d, s) == 0) s = NULL;
    lk_free_spec(s);
    PyObject *bytes = PyBytes_FromStringAndSize(io.saved, (Py_ssize_t)io.saved_size);
    free(io.saved);
    return bytes;
}

/* _load(args, saved): these arguments' code is the saved code (made by _save, in this process or another),
 * instead of a compilation; ValueError if code for them exists already, CompileError-family errors if the
 * bytes are of another compilation. */
static PyObject *dispatcher_load(PyObject *self, PyObject *args)
{
    LkDispatcher *d = (LkDispatcher *)self;
    PyObject *call_args;
    Py_buffer saved;
    if (!PyArg_ParseTuple(args, "O!y*", &PyTuple_Type, &call_args, &saved)) return NULL;
    unsigned char key[LK_KEY_MAX];
    int len = 0;
    PyObject *r = NULL;
    if (!key_of(call_args, key, &len) || find_spec(d, key, len)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "code for these arguments exists already");
        goto done;
    }
    LkCodeIo io = {.load = saved.buf, .load_size = (size_t)saved.len};
    LkSpec *s = lk_compile(d, call_args, &io);
    if (!s) goto done;
    if (add_spec(d, s) < 0) {
        lk_free_spec(s);
        goto done;
    }
    r = Py_None;
    Py_INCREF(r);
done:
    PyBuffer_Release(&saved);
    return r;
}

/* _split_plan(args) -> what ir_split_plan says of the specialisation for args (compiled if not yet) */
static PyObject *dispatcher_split_plan(PyObject *self, PyObject *args)
{
    LkDispatcher *d = (LkDispatcher *)self;
    PyObject *call_args;
    if (!PyArg_ParseTuple(args, "O!", &PyTuple_Type, &call_args)) return NULL;
    unsigned char key[LK_KEY_MAX];
    int len = 0;
    if (!key_of(call_args, key, &len)) {
        PyErr_SetString(PyExc_TypeError, "inspect_split: arguments of a type lorikeet does not take");
        return NULL;
    }
    LkSpec *s = find_spec(d, key, len);
    if (!s) {
        if (!(s = lk_compile(d, call_args, NULL))) return NULL;
        if (add_spec(d, s) < 0) {
            lk_free_spec(s);
            return NULL;
        }
    }
    return lk_split_plan_dict(s);
}

static PyObject *dispatcher_untyped(PyObject *self, PyObject *unused)
{
    LkDispatcher *d = (LkDispatcher *)self;
    if (lk_ensure_untyped(d) < 0) return NULL;
    Py_INCREF(d->untyped);
    return d->untyped;
}

static PyObject *dispatcher_signatures(PyObject *self, PyObject *unused)
{
    LkDispatcher *d = (LkDispatcher *)self;
    PyObject *list = PyList_New(0);
    for (int i = 0; list && i < d->nspecs; i++) {
        LkSpec *s = d->specs[i];
        PyObject *tup = PyTuple_New(s->nargs);
        for (int k = 0; k < s->nargs; k++) {
            char buf[256];
            ir_type_str(s->arg_types[k], buf, sizeof buf);
            PyTuple_SET_ITEM(tup, k, PyUnicode_FromString(buf));
        }
        PyList_Append(list, tup);
        Py_DECREF(tup);
    }
    return list;
}

static int dispatcher_init(PyObject *self, PyObject *args, PyObject *kwargs)
{
    LkDispatcher *d = (LkDispatcher *)self;
    static char *kwlist[] = {"py_func", "backend", "boundscheck", "fastmath", "cache", NULL};
    PyObject *fn;
    const char *backend = "cpu";
    int boundscheck = 1, fastmath = 0, cache = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|sppp", kwlist, &fn, &backend, &boundscheck, &fastmath, &cache))
        return -1;
    Py_INCREF(fn);
    Py_XSETREF(d->py_func, fn);
    snprintf(d->backend, sizeof d->backend, "%s", backend);
    if (strcmp(backend, "auto") == 0 && !d->auto_state && !(d->auto_state = lk_auto_new())) return -1;
    d->boundscheck = boundscheck;
    d->fastmath = fastmath;
    d->cache = cache;
    return 0;
}

static int dispatcher_traverse(PyObject *self, visitproc visit, void *arg)
{
    LkDispatcher *d = (LkDispatcher *)self;
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(d->py_func);
    Py_VISIT(d->untyped);
    return lk_auto_traverse(d->auto_state, visit, arg);
}

static int dispatcher_clear(PyObject *self)
{
    LkDispatcher *d = (LkDispatcher *)self;
    Py_CLEAR(d->py_func);
    Py_CLEAR(d->untyped);
    lk_auto_clear(d->auto_state);
    return 0;
}

static void dispatcher_dealloc(PyObject *self)
{
    LkDispatcher *d = (LkDispatcher *)self;
    PyObject_GC_UnTrack(self);
    if (d->weakreflist) PyObject_ClearWeakRefs(self);
    dispatcher_clear(self);
    for (int i = 0; i < d->nspecs; i++) lk_free_spec(d->specs[i]);
    PyMem_Free(d->specs);
    lk_auto_free(d->auto_state);
    PyTypeObject *tp = Py_TYPE(self);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyObject *dispatcher_get_backend(PyObject *self, void *unused)
{
    return PyUnicode_FromString(((LkDispatcher *)self)->backend);
}

/* The backend that ran the last call: the one chosen for it under "auto", else the dispatcher's own. */
static PyObject *dispatcher_get_last_backend(PyObject *self, void *unused)
{
    LkDispatcher *d = (LkDispatcher *)self;
    if (!d->auto_state) return PyUnicode_FromString(d->backend);
    const char *last = lk_auto_last(d->auto_state);
    if (!last) Py_RETURN_NONE;
    return PyUnicode_FromString(last);
}

static PyMethodDef dispatcher_methods[] = {
    {"_auto_estimate", lk_auto_estimate, METH_VARARGS,
     "_auto_estimate(args) -> what backend=\"auto\" predicts for a call with args (lk.explain)"},
    {"_compile", dispatcher_compile, METH_VARARGS,
     "_compile(args, keep_llvm=False, declared=False) -> (typed_ir, llvm_ir, compile_ms, ir_hash, parallel_report); declared: "
     "a warm-up's signature, whose any-layout arrays also take C-contiguous ones"},
    {"_save", dispatcher_save, METH_VARARGS, "_save(args) -> the compiled code for args as bytes"},
    {"_load", dispatcher_load, METH_VARARGS, "_load(args, saved): the code for args is saved code, not compiled"},
    {"_untyped", dispatcher_untyped, METH_NOARGS, "the untyped IR capsule, made once"},
    {"_split_plan", dispatcher_split_plan, METH_VARARGS, "_split_plan(args) -> whether a call may run in pieces"},
    {"signatures", dispatcher_signatures, METH_NOARGS, "the argument types of every compiled specialisation"},
    {NULL},
};

static PyMemberDef dispatcher_members[] = {
    {"py_func", T_OBJECT, offsetof(LkDispatcher, py_func), READONLY, "the Python function"},
    {"boundscheck", T_INT, offsetof(LkDispatcher, boundscheck), READONLY, NULL},
    {"fastmath", T_INT, offsetof(LkDispatcher, fastmath), READONLY, NULL},
    {"cache", T_INT, offsetof(LkDispatcher, cache), READONLY, "whether compiled code goes to the disk cache"},
    {"_cache_hits", T_PYSSIZET, offsetof(LkDispatcher, cache_hits), READONLY, NULL},
    {"_cache_misses", T_PYSSIZET, offsetof(LkDispatcher, cache_misses), READONLY, NULL},
    {"_compiles", T_PYSSIZET, offsetof(LkDispatcher, compiles), READONLY, NULL},
    {"_cache_ms", T_DOUBLE, offsetof(LkDispatcher, cache_ms), READONLY, "ms spent in the disk cache's lookups and saves"},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(LkDispatcher, weakreflist), READONLY, NULL},
    {NULL},
};

static PyGetSetDef dispatcher_getset[] = {
    {"backend", dispatcher_get_backend, NULL, "the backend this dispatcher compiles for", NULL},
    {"last_backend", dispatcher_get_last_backend, NULL,
     "the backend that ran the last call (under \"auto\": the one chosen for it; None before any call)", NULL},
    {NULL},
};

static PyType_Slot dispatcher_slots[] = {
    {Py_tp_call, dispatcher_call},
    {Py_tp_init, dispatcher_init},
    {Py_tp_dealloc, dispatcher_dealloc},
    {Py_tp_traverse, dispatcher_traverse},
    {Py_tp_clear, dispatcher_clear},
    {Py_tp_methods, dispatcher_methods},
    {Py_tp_members, dispatcher_members},
    {Py_tp_getset, dispatcher_getset},
    {Py_tp_new, PyType_GenericNew},
    {0, NULL},
};

static PyType_Spec dispatcher_spec = {
    .name = "lorikeet._lorikeet.Dispatcher",
    .basicsize = sizeof(LkDispatcher),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .slots = dispatcher_slots,
};

static PyObject *runtime_stats(PyObject *self, PyObject *unused)
{
    RtStats s = rt_stats();
    return Py_BuildValue("{sLsLsLsLsL}", "allocations", (long long)s.allocations, "frees", (long long)s.frees,
                         "live_bytes", (long long)s.live_bytes, "cached_bytes", (long long)rt_buffer_cache_bytes(),
                         "cache_limit_bytes", (long long)rt_buffer_cache_limit());
}

/* the BLAS that matrix products call (runtime.h's RtBlasInfo) */
static PyObject *blas_info(PyObject *self, PyObject *unused)
{
    RtBlasInfo b = rt_blas_info();
    return Py_BuildValue("{szszsOsOsOsLsz}", "library", b.library, "symbol", b.symbol, "ilp64", b.ilp64 ? Py_True : Py_False,
                         "threads_control", b.threads_control ? Py_True : Py_False, "enabled",
                         b.enabled ? Py_True : Py_False, "calls", (long long)b.calls, "why_not", b.why_not);
}

static PyObject *blas_set_enabled(PyObject *self, PyObject *arg)
{
    int on = PyObject_IsTrue(arg);
    if (on < 0) return NULL;
    rt_blas_set_enabled(on);
    Py_RETURN_NONE;
}

static PyObject *release_cached_memory(PyObject *self, PyObject *unused)
{
    rt_buffer_cache_clear();
    Py_RETURN_NONE;
}

static PyObject *backend_available(PyObject *self, PyObject *args)
{
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
    LkDiag diag = {0};
    const BeBackend *be = be_find(name, &diag);
    if (be && be->available(&diag)) Py_RETURN_TRUE;
    return Py_BuildValue("(Os)", Py_False, diag.message);
}

static PyObject *set_num_threads(PyObject *self, PyObject *args)
{
    int n;
    if (!PyArg_ParseTuple(args, "i", &n)) return NULL;
    if (n < 1) {
        PyErr_SetString(PyExc_ValueError, "the number of threads must be at least 1");
        return NULL;
    }
    rt_set_num_threads(n);
    Py_RETURN_NONE;
}

static PyObject *get_num_threads(PyObject *self, PyObject *unused)
{
    return PyLong_FromLong(rt_get_num_threads());
}

static PyObject *get_parallel_threshold(PyObject *self, PyObject *unused)
{
    return PyLong_FromLongLong((long long)rt_get_parallel_threshold());
}

static PyObject *set_parallel_threshold(PyObject *self, PyObject *args)
{
    long long work;
    if (!PyArg_ParseTuple(args, "L", &work)) return NULL;
    rt_set_parallel_threshold(work);
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"set_num_threads", set_num_threads, METH_VARARGS, "threads of the openmp backend's team"},
    {"get_num_threads", get_num_threads, METH_NOARGS, "threads of the openmp backend's team"},
    {"set_parallel_threshold", set_parallel_threshold, METH_VARARGS, "work below which a loop stays on one thread"},
    {"get_parallel_threshold", get_parallel_threshold, METH_NOARGS, "work below which a loop stays on one thread"},
    {"lower", lk_lower, METH_VARARGS, "lower(fdef, env, file, line_offset) -> untyped IR capsule"},
    {"cuda_source", lk_cuda_source, METH_VARARGS, "cuda_source(dispatcher, args) -> the gpu backend's CUDA C"},
    {"runtime_stats", runtime_stats, METH_NOARGS, "allocation counters of the runtime"},
    {"blas_info", blas_info, METH_NOARGS, "the BLAS that float matrix products call"},
    {"blas_set_enabled", blas_set_enabled, METH_O, "turn the BLAS of matrix products on or off"},
    {"release_cached_memory", release_cached_memory, METH_NOARGS, "free the cached blocks of freed arrays"},
    {"backend_available", backend_available, METH_VARARGS, "True, or (False, reason)"},
    {"build_id", lk_build_id, METH_NOARGS, "the linker's build id of this extension, in hex"},
    {"set_auto_costs", lk_set_auto_costs, METH_VARARGS, "the costs backend=\"auto\" predicts with"},
    {"library", lk_library, METH_NOARGS, "library() -> [(kind, name, group, note, {backend: refusal})]: what compiles by name"},
    {"sha256", lk_sha256, METH_O, "sha256(data) -> the SHA-256 of a bytes-like object (32 bytes)"},
    {"key_extras", lk_key_extras, METH_VARARGS, "key_extras(backend, fastmath) -> the backend's inputs of a key"},
    {"_split_reload_env", lk_split_reload_env_py, METH_NOARGS,
     "read LORIKEET_GPU_MEMORY_LIMIT and LORIKEET_SPLIT_TEST again (read at import)"},
    {"_split_stats", lk_split_stats, METH_NOARGS, "{calls, pieces}: calls run in pieces, and their pieces"},
    {"cache_toolchain", lk_py_cache_toolchain, METH_VARARGS, "cache_toolchain(backend, fastmath) -> the key's toolchain"},
    {"cache_program", lk_py_cache_program, METH_VARARGS, "cache_program(d, signature) -> (the key's program, frame)"},
    {"cache_header", lk_py_cache_header, METH_O, "cache_header(toolchain) -> the key's first lines"},
    {"cache_key", lk_py_cache_key, METH_VARARGS, "cache_key(d, signature) -> (digest, preimage, generation) as a lookup makes it"},
    {"cache_generation", lk_py_cache_generation, METH_VARARGS, "cache_generation(backend, toolchain) -> subfolder"},
    {NULL},
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_lorikeet", "lorikeet's C core", -1, module_methods};

__attribute__((visibility("default"))) PyMODINIT_FUNC PyInit__lorikeet(void)
{
    import_array();
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    PyObject *type = PyType_FromSpec(&dispatcher_spec);
    lk_dispatcher_type = (PyTypeObject *)type; /* the module holds it for the life of the process */
    if (!type || PyModule_AddObject(m, "Dispatcher", type) < 0) {
        lk_dispatcher_type = NULL;
        Py_XDECREF(type);
        Py_DECREF(m);
        return NULL;
    }
    lk_dispatcher_type = (PyTypeObject *)type; /* the module holds it */
    if (lk_gpu_module_init(m) < 0) { Py_DECREF(m); return NULL; }
    if (PyModule_AddIntConstant(m, "pipeline_version", IR_PIPELINE_VERSION) < 0) { Py_DECREF(m); return NULL; }
    lk_split_reload_env();
    if (lk_cache_key_module_init(m) < 0) { Py_DECREF(m); return NULL; }
    be_llvm_start(); /* while the rest of lorikeet is imported and the caller's code runs */
    return m;
}
