/* compile.c: the slow path of a call with a new signature. Untyped IR (made once per function by the frontend)
 * is specialised by typespec, rewritten by the IR passes and compiled by the dispatcher's backend; the result is
 * added to the dispatcher's specialisations. Everything of one compilation lives in one arena, freed at the end;
 * only the compiled code and the printed IR outlive it. */
#include "shim.h"

static void free_untyped(PyObject *cap)
{
    UntypedIR *u = PyCapsule_GetPointer(cap, "lorikeet.untyped");
    if (!u) return;
    rt_arena_free(u->arena);
    Py_XDECREF(u->env);
    PyMem_Free(u);
}

/* lower(fdef, env, file, line_offset) -> capsule holding the untyped IR */
PyObject *lk_lower(PyObject *self, PyObject *args)
{
    PyObject *fdef, *env;
    const char *file;
    int line_offset;
    if (!PyArg_ParseTuple(args, "OOsi", &fdef, &env, &file, &line_offset)) return NULL;
    LkDiag diag = {0};
    RtArena *arena = rt_arena_new();
    IrFunc *f = fe_lower_function(fdef, env, file, line_offset, arena, &diag);
    if (!f) {
        rt_arena_free(arena);
        return lk_raise_diag(&diag);
    }
    UntypedIR *u = PyMem_Calloc(1, sizeof *u);
    u->arena = arena;
    u->func = f;
    u->env = env;
    Py_INCREF(env);
    PyObject *cap = PyCapsule_New(u, "lorikeet.untyped", free_untyped);
    if (!cap) {
        rt_arena_free(arena);
        Py_DECREF(env);
        PyMem_Free(u);
    }
    return cap;
}

static const IrFunc *untyped_of(PyObject *cap)
{
    UntypedIR *u = PyCapsule_GetPointer(cap, "lorikeet.untyped");
    return u ? u->func : NULL;
}

/* typespec's callback for calls of other user functions: their untyped IR, made (once) on the Python side. */
static const IrFunc *resolve_callee(void *unused, void *handle, LkDiag *diag)
{
    PyObject *mod = PyImport_ImportModule("lorikeet");
    PyObject *cap = mod ? PyObject_CallMethod(mod, "_callee_untyped", "O", (PyObject *)handle) : NULL;
    Py_XDECREF(mod);
    if (!cap) {
        lk_diag_from_exception(diag);
        return NULL;
    }
    const IrFunc *f = untyped_of(cap);
    Py_DECREF(cap); /* the callee's dispatcher keeps its capsule */
    if (!f) lk_diag_from_exception(diag);
    return f;
}

int lk_ensure_untyped(LkDispatcher *d)
{
    if (d->untyped) return 0;
    PyObject *cap = PyObject_CallMethod((PyObject *)d, "_get_untyped", NULL);
    if (!cap) return -1;
    if (!untyped_of(cap)) {
        Py_DECREF(cap);
        return -1;
    }
    d->untyped = cap;
    d->nparams = untyped_of(cap)->nparams;
    d->varargs = untyped_of(cap)->varargs;
    return 0;
}

/* The constant arrays of a compilation of d (TsOptions), from lorikeet._const_arrays: the frozen arrays that d
 * and the functions it reaches read from outside themselves, in a fixed order. */
typedef struct Consts {
    PyObject *arrays; /* a tuple, or NULL when there are none */
    int n;
    void **handles;
    IrType **types;
    const char **names;
    PyObject *names_obj;
} Consts;

#define LK_MAX_CONSTS 32

static void consts_free(Consts *c)
{
    Py_CLEAR(c->arrays);
    Py_CLEAR(c->names_obj);
    PyMem_Free(c->handles);
    PyMem_Free(c->types);
    PyMem_Free(c->names);
    *c = (Consts){0};
}

/* Fills c and topts' constants; -1 with an exception (a CompileError for an array lorikeet cannot take). */
static int consts_of(LkDispatcher *d, PyObject *args, Consts *c, TsOptions *topts)
{
    *c = (Consts){0};
    PyObject *mod = PyImport_ImportModule("lorikeet");
    PyObject *r = mod ? PyObject_CallMethod(mod, "_const_arrays", "OO", (PyObject *)d, args) : NULL;
    Py_XDECREF(mod);
    if (!r) return -1;
    if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 2 || !PyTuple_Check(PyTuple_GET_ITEM(r, 0)) ||
        !PyTuple_Check(PyTuple_GET_ITEM(r, 1))) {
        Py_DECREF(r);
        PyErr_SetString(PyExc_SystemError, "lorikeet._const_arrays returned a malformed table");
        return -1;
    }
    c->names_obj = Py_NewRef(PyTuple_GET_ITEM(r, 0));
    c->arrays = Py_NewRef(PyTuple_GET_ITEM(r, 1));
    Py_DECREF(r);
    c->n = (int)PyTuple_GET_SIZE(c->arrays);
    if (c->n == 0) {
        consts_free(c);
        return 0;
    }
    if (c->n > LK_MAX_CONSTS || PyTuple_GET_SIZE(c->names_obj) != c->n) {
        PyObject *errors = PyImport_ImportModule("lorikeet.errors");
        PyObject *ce = errors ? PyObject_GetAttrString(errors, "CompileError") : NULL;
        if (ce) PyErr_Format(ce, "%R reads %d arrays from outside itself and the functions it calls; at most %d are "
                             "supported: pass the others as arguments", d->py_func, c->n, LK_MAX_CONSTS);
        Py_XDECREF(ce);
        Py_XDECREF(errors);
        consts_free(c);
        return -1;
    }
    c->handles = PyMem_Calloc((size_t)c->n, sizeof *c->handles);
    c->types = PyMem_Calloc((size_t)c->n, sizeof *c->types);
    c->names = PyMem_Calloc((size_t)c->n, sizeof *c->names);
    if (!c->handles || !c->types || !c->names) {
        consts_free(c);
        PyErr_NoMemory();
        return -1;
    }
    for (int k = 0; k < c->n; k++) {
        PyObject *a = PyTuple_GET_ITEM(c->arrays, k);
        c->handles[k] = a;
        c->names[k] = PyUnicode_AsUTF8(PyTuple_GET_ITEM(c->names_obj, k));
        if (!c->names[k] || !(c->types[k] = lk_type_of_arg(a, c->names[k]))) {
            consts_free(c);
            return -1;
        }
    }
    topts->nconsts = c->n;
    topts->const_handles = c->handles;
    topts->const_types = c->types;
    topts->const_names = c->names;
    return 0;
}

const IrFunc *lk_untyped_func(LkDispatcher *d)
{
    return untyped_of(d->untyped);
}

void lk_free_spec(LkSpec *s)
{
    if (!s) return;
    Py_XDECREF(s->consts);
    Py_XDECREF(s->held);
    if (s->backend) s->backend->release(s->module); /* the last spec of a compilation frees its code */
    free(s->typed_ir);
    free(s->parallel_report);
    free(s->llvm_ir);
    rt_names_free(&s->names);
    PyMem_Free(s->arg_types);
    PyMem_Free(s->posmap);
    ir_split_plan_free(&s->split);
    PyMem_Free(s);
}

/* A compilation's key and name: SHA-256 of the IR's hash, the pipeline's version, the backend's name and what
 * key_extras says (target, CPU, versions, options); the name is "lk" and the first 128 bits in hex. The disk
 * cache (issue 11) files code under the key; the backend prefixes every symbol with the name. */
static bool compilation_key(const BeBackend *be, const BeOptions *bopts, const unsigned char ir_hash[IR_HASH_BYTES],
                            char module[LK_MODULE_CHARS], LkDiag *diag)
{
    char *extras = be->key_extras(bopts, diag);
    if (!extras) return false;
    char ir_hex[2 * IR_HASH_BYTES + 1];
    ir_hash_hex(ir_hash, ir_hex);
    size_t n = strlen(extras) + 256;
    char *text = malloc(n);
    snprintf(text, n, "lorikeet compilation\npipeline=%d\nbackend=%s\nir=%s\n%s\n", IR_PIPELINE_VERSION, be->name,
             ir_hex, extras);
    unsigned char key[IR_HASH_BYTES];
    ir_sha256(text, strlen(text), key);
    free(text);
    free(extras);
    char hex[2 * IR_HASH_BYTES + 1];
    ir_hash_hex(key, hex);
    snprintf(module, LK_MODULE_CHARS, "lk%.32s", hex);
    return true;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Code that no spec will hold: its hold is given back (the last frees it). */
static void drop_code(const BeBackend *be, const char *module, BeCompiled *code)
{
    be->release(module);
    rt_names_free(&code->names);
    free(code->ir_text);
    free(code->object);
    free(code);
}

/* The functions (dispatchers) among args, whose addresses the signature key holds: a tuple the spec keeps, so
 * that no other object takes their address while it lives; NULL when there are none (or on a memory error, then
 * the spec keeps nothing: the key can be matched by a later object at the same address only after an error). The
 * disk cache's key does not describe them (their code is not in it): such specialisations are not cached. */
static bool has_func_args(PyObject *args)
{
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); i++)
        if (lk_is_dispatcher(PyTuple_GET_ITEM(args, i))) return true;
    return false;
}

static PyObject *func_args(PyObject *args)
{
    PyObject *held = NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); i++) {
        PyObject *a = PyTuple_GET_ITEM(args, i);
        if (!lk_is_dispatcher(a)) continue;
        if (!held && !(held = PyList_New(0))) break;
        if (PyList_Append(held, a) < 0) break;
    }
    PyObject *t = held ? PyList_AsTuple(held) : NULL;
    Py_XDECREF(held);
    PyErr_Clear();
    return t;
}

static LkSpec *compile_failed(PyObject *const_arrays, RtArena *arena, IrType **types, char *typed_text,
                              const LkDiag *diag)
{
    Py_XDECREF(const_arrays);
    free(typed_text);
    rt_arena_free(arena);
    PyMem_Free(types);
    if (diag) lk_raise_diag(diag);
    return NULL;
}

/* The untyped function of d and the IrType of each of args (PyMem_Malloc'd), or NULL with a TypeError naming the
 * wrong count or the parameter whose argument has no type lorikeet takes. */
static IrType **arg_types(LkDispatcher *d, PyObject *args, const IrFunc **uf_out)
{
    if (lk_ensure_untyped(d) < 0) return NULL;
    const IrFunc *uf = untyped_of(d->untyped);
    Py_ssize_t nargs = PyTuple_GET_SIZE(args);
    if (nargs != uf->nparams) {
        PyErr_Format(PyExc_TypeError, "%s() takes %d positional argument%s but %zd %s given", uf->name, uf->nparams,
                     uf->nparams == 1 ? "" : "s", nargs, nargs == 1 ? "was" : "were");
        return NULL;
    }
    IrType **types = PyMem_Calloc((size_t)(nargs ? nargs : 1), sizeof *types);
    for (Py_ssize_t i = 0; i < nargs; i++)
        if (!(types[i] = lk_type_of_arg(PyTuple_GET_ITEM(args, i), uf->params[i]->name))) {
            PyMem_Free(types);
            return NULL;
        }
    *uf_out = uf;
    return types;
}

int lk_cache_probe(LkDispatcher *d, PyObject *args)
{
    const IrFunc *uf;
    IrType **types = arg_types(d, args, &uf);
    PyObject *sig = types ? lk_cache_signature(types, (int)PyTuple_GET_SIZE(args), false) : NULL;
    PyMem_Free(types);
    int found = sig ? lk_cache_has_entry(d, sig) : -1;
    Py_XDECREF(sig);
    PyErr_Clear();
    return found;
}

LkSpec *lk_compile(LkDispatcher *d, PyObject *args, LkCodeIo *io)
{
    LkCodeIo plain = {0};
    if (!io) io = &plain;
    const IrFunc *uf;
    IrType **types = arg_types(d, args, &uf);
    if (!types) return NULL;
    Py_ssize_t nargs = PyTuple_GET_SIZE(args);
    /* device arrays (keyed 'D') are for the gpu backend's code only */
    unsigned char akey[LK_KEY_MAX];
    bool device_arg = false;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        int len = 0;
        if (lk_key_arg(PyTuple_GET_ITEM(args, i), akey, &len) == 0 && len && akey[0] == 'D') device_arg = true;
    }
    if (device_arg && strcmp(d->backend, "gpu") != 0) {
        PyMem_Free(types);
        PyErr_Format(PyExc_TypeError, "%s(): a device array was passed to a function compiled for the %s backend, which "
                     "takes NumPy arrays (copy it with .copy_to_host(), or compile for backend=\"gpu\")", uf->name, d->backend);
        return NULL;
    }
    LkDiag diag = {0};
    const BeBackend *be = be_find(d->backend, &diag);
    if (!be || !be->available(&diag)) return compile_failed(NULL, NULL, types, NULL, &diag);
    TsOptions topts = {.boundscheck = d->boundscheck != 0, .resolve = resolve_callee,
                       .where_checks_python_ints = lk_numpy_where_checks_python_ints()};
    Consts consts;
    if (consts_of(d, args, &consts, &topts) < 0) {
        PyMem_Free(types);
        return NULL;
    }
    if (consts.n) { /* the constants' types follow the arguments' (LkSpec.arg_types) */
        IrType **all = PyMem_Realloc(types, sizeof *types * (size_t)(nargs + consts.n));
        if (!all) {
            consts_free(&consts);
            PyMem_Free(types);
            return (LkSpec *)PyErr_NoMemory();
        }
        types = all;
        for (int k = 0; k < consts.n; k++) types[nargs + k] = consts.types[k];
    }
    RtArena *arena = rt_arena_new();
    IrFunc *typed = ts_specialize(uf, types, (int)nargs, &topts, arena, &diag);
    if (PyErr_Occurred()) PyErr_Clear();
    if (!typed || !ir_optimize(typed, &diag)) { /* ir_optimize: prange's rules */
        consts_free(&consts);
        return compile_failed(NULL, arena, types, NULL, &diag);
    }
    PyObject *const_arrays = Py_XNewRef(consts.arrays);
    consts_free(&consts);
    char module[LK_MODULE_CHARS];
    BeOptions bopts = {.fastmath = d->fastmath != 0, .keep_ir_text = io->keep_llvm, .keep_object = io->save,
                       .module = module, .device_args = device_arg, .images = lk_cache_images(d)};
    unsigned char ir_hash[IR_HASH_BYTES];
    ir_hash_func(typed, ir_hash);
    if (!compilation_key(be, &bopts, ir_hash, module, &diag))
        return compile_failed(const_arrays, arena, types, NULL, &diag);
    char *typed_text = ir_print_func(typed);
    PyObject *ticket = NULL; /* the disk cache's key for this compilation's code, when it is to be saved */
    LkPosMap *posmap = NULL;
    BeCompiled *code = NULL;
    if (io->load) code = be->load(io->load, io->load_size, &bopts, &diag);
    else {
        if (lk_cache_wanted(d, be, io) && !has_func_args(args)) {
            unsigned char unplaced[IR_HASH_BYTES];
            char unplaced_hex[2 * IR_HASH_BYTES + 1];
            ir_hash_func_unplaced(typed, unplaced);
            ir_hash_hex(unplaced, unplaced_hex);
            char loaded_as[LK_MODULE_CHARS];
            double t0 = now_ms();
            code = lk_cache_fetch(d, types, (int)nargs, typed, be, &bopts, unplaced_hex, &ticket, &posmap, loaded_as);
            d->cache_ms += now_ms() - t0;
            if (code) memcpy(module, loaded_as, sizeof module); /* held under that name: released under it */
        }
        if (!code) {
            bopts.keep_object = io->save || ticket;
            code = be->compile(typed, &bopts, &diag);
            d->compiles++;
        }
    }
    if (!code) {
        lk_cache_done(ticket, NULL, be); /* a failure is never cached */
        return compile_failed(const_arrays, arena, types, typed_text, &diag);
    }
    /* the key was taken before the backend ran: it must not have changed what it lowered */
    char *after = ir_print_func(typed);
    bool changed = strcmp(after, typed_text) != 0;
    free(after);
    if (changed) {
        lk_diag_set(&diag, LK_ERR_INTERNAL, typed->file, typed->line, 0, "the %s backend changed the IR it compiled",
                    be->name);
        lk_cache_done(ticket, NULL, be);
        PyMem_Free(posmap);
        drop_code(be, module, code);
        return compile_failed(const_arrays, arena, types, typed_text, &diag);
    }
    double t_save = now_ms();
    lk_cache_done(ticket, code, be); /* the code is loaded and its entry found: now it may be saved */
    if (ticket) d->cache_ms += now_ms() - t_save;
    if (io->save) {
        io->saved = be->save(code, &io->saved_size, &diag);
        if (!io->saved) {
            drop_code(be, module, code);
            return compile_failed(const_arrays, arena, types, typed_text, &diag);
        }
    }
    LkSpec *s = PyMem_Calloc(1, sizeof *s);
    for (Py_ssize_t i = 0; i < nargs; i++) lk_key_arg(PyTuple_GET_ITEM(args, i), s->key, &s->keylen);
    s->entry = code->entry;
    s->backend = be;
    memcpy(s->module, module, sizeof s->module);
    s->names = code->names;
    s->posmap = posmap;
    s->arg_types = types;
    s->nargs = (int)nargs;
    s->consts = const_arrays;
    s->held = func_args(args);
    s->nconsts = const_arrays ? (int)PyTuple_GET_SIZE(const_arrays) : 0;
    s->ret_type = typed->ret_type;
    s->ret_slots = ir_abi_slots(typed->ret_type);
    for (Py_ssize_t i = 0; i < nargs + s->nconsts; i++) s->arg_slots += ir_abi_slots(types[i]);
    s->typed_ir = typed_text;
    s->parallel_report = ir_parallel_report(typed);
    s->llvm_ir = code->ir_text;
    s->compile_ms = code->compile_ms;
    s->device_data = code->device_data;
    s->writes_args = code->writes_args;
    ir_split_plan(typed, &s->split); /* on the IR the backend lowered: which calls may run in pieces */
    snprintf(s->func_name, sizeof s->func_name, "%s", uf->name);
    ir_hash_hex(ir_hash, s->ir_hash);
    free(code->object);
    free(code);
    rt_arena_free(arena);
    return s;
}

/* The CUDA C that the gpu backend makes of the specialisation of d for args: typed and optimised as lk_compile
 * does it, then be_gpu_cuda_source. Compiles nothing and needs no GPU (inspect_cuda). */
PyObject *lk_cuda_source(PyObject *self, PyObject *args)
{
    PyObject *dobj, *call_args;
    if (!PyArg_ParseTuple(args, "OO!", &dobj, &PyTuple_Type, &call_args)) return NULL;
    LkDispatcher *d = (LkDispatcher *)dobj;
    const IrFunc *uf;
    IrType **types = arg_types(d, call_args, &uf);
    if (!types) return NULL;
    Py_ssize_t nargs = PyTuple_GET_SIZE(call_args);
    LkDiag diag = {0};
    TsOptions topts = {.boundscheck = d->boundscheck != 0, .resolve = resolve_callee,
                       .where_checks_python_ints = lk_numpy_where_checks_python_ints()};
    Consts consts;
    if (consts_of(d, call_args, &consts, &topts) < 0) {
        PyMem_Free(types);
        return NULL;
    }
    RtArena *arena = rt_arena_new();
    IrFunc *typed = ts_specialize(uf, types, (int)nargs, &topts, arena, &diag);
    if (PyErr_Occurred()) PyErr_Clear();
    PyMem_Free(types);
    consts_free(&consts);
    char *src = NULL;
    if (typed && ir_optimize(typed, &diag)) {
        BeOptions bopts = {.fastmath = d->fastmath != 0, .module = "lk_inspect"};
        src = be_gpu_cuda_source(typed, &bopts, &diag);
    }
    rt_arena_free(arena);
    if (!src) return lk_raise_diag(&diag);
    PyObject *text = PyUnicode_FromString(src);
    free(src);
    return text;
}

/* The work model of the specialisation of d for args (backend="auto"): typed and optimised as lk_compile does
 * it, then ir_work_model; nothing is compiled for a backend. *ret_array: the result is an array; *writes: the
 * function may write an argument array. False with an exception when typing fails. */
bool lk_work_model(LkDispatcher *d, PyObject *args, IrWorkModel *model, bool *ret_array, bool *writes)
{
    const IrFunc *uf;
    IrType **types = arg_types(d, args, &uf);
    if (!types) return false;
    LkDiag diag = {0};
    TsOptions topts = {.boundscheck = d->boundscheck != 0, .resolve = resolve_callee,
                       .where_checks_python_ints = lk_numpy_where_checks_python_ints()};
    Consts consts;
    if (consts_of(d, args, &consts, &topts) < 0) {
        PyMem_Free(types);
        return false;
    }
    RtArena *arena = rt_arena_new();
    IrFunc *typed = ts_specialize(uf, types, (int)PyTuple_GET_SIZE(args), &topts, arena, &diag);
    if (PyErr_Occurred()) PyErr_Clear();
    PyMem_Free(types);
    consts_free(&consts);
    bool ok = typed && ir_optimize(typed, &diag);
    if (ok) {
        /* the llvm backend's weights for the team threshold (backends/llvm/outline.c), vector math assumed */
        IrCostWeights w = {.op = 1, .user_call = 150, .nested_data_parallel = 1000, .nested_trips = 100};
        for (int f = 0; f < IR_MATH_COUNT; f++) w.math[f] = 20;
        ir_work_model(typed, &w, model);
        *ret_array = typed->ret_type && typed->ret_type->kind == IR_TY_ARRAY;
        *writes = ir_may_write_args(typed);
    }
    rt_arena_free(arena);
    if (!ok) lk_raise_diag(&diag);
    return ok;
}
