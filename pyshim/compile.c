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
    return 0;
}

void lk_free_spec(LkSpec *s)
{
    if (!s) return;
    free(s->typed_ir);
    free(s->llvm_ir);
    PyMem_Free(s->arg_types);
    PyMem_Free(s);
}

LkSpec *lk_compile(LkDispatcher *d, PyObject *args, int keep_llvm)
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
    LkDiag diag = {0};
    const BeBackend *be = be_find(d->backend, &diag);
    if (!be || !be->available(&diag)) {
        PyMem_Free(types);
        lk_raise_diag(&diag);
        return NULL;
    }
    RtArena *arena = rt_arena_new();
    TsOptions topts = {.boundscheck = d->boundscheck != 0, .resolve = resolve_callee};
    IrFunc *typed = ts_specialize(uf, types, (int)nargs, &topts, arena, &diag);
    if (PyErr_Occurred()) PyErr_Clear();
    if (!typed) {
        rt_arena_free(arena);
        PyMem_Free(types);
        lk_raise_diag(&diag);
        return NULL;
    }
    ir_optimize(typed);
    BeOptions bopts = {.fastmath = d->fastmath != 0, .keep_ir_text = keep_llvm != 0};
    unsigned char ir_hash[IR_HASH_BYTES];
    ir_hash_func(typed, ir_hash);
    char *typed_text = ir_print_func(typed);
    BeCompiled *code = be->compile(typed, &bopts, &diag);
    if (!code) {
        free(typed_text);
        rt_arena_free(arena);
        PyMem_Free(types);
        lk_raise_diag(&diag);
        return NULL;
    }
    LkSpec *s = PyMem_Calloc(1, sizeof *s);
    for (Py_ssize_t i = 0; i < nargs; i++) lk_key_arg(PyTuple_GET_ITEM(args, i), s->key, &s->keylen);
    s->entry = code->entry;
    s->arg_types = types;
    s->nargs = (int)nargs;
    s->ret_type = typed->ret_type;
    s->ret_slots = ir_abi_slots(typed->ret_type);
    for (Py_ssize_t i = 0; i < nargs; i++) s->arg_slots += ir_abi_slots(types[i]);
    s->typed_ir = typed_text;
    s->llvm_ir = code->ir_text;
    s->compile_ms = code->compile_ms;
    ir_hash_hex(ir_hash, s->ir_hash);
    free(code);
    rt_arena_free(arena);
    return s;
}
