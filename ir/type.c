/* type.c: interned types. Equal types are the same pointer, for the life of the process, so that type
 * comparison is pointer comparison and signatures can hold types without owning them.
 * The intern table is touched only while compiling, which the Python shim serialises under the GIL. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ir.h"

typedef struct TypeNode {
    IrType t;
    struct TypeNode *next;
} TypeNode;

static TypeNode *interned;

static bool same_type(const IrType *a, const IrType *b)
{
    if (a->kind != b->kind || a->dtype != b->dtype || a->weak != b->weak || a->ndim != b->ndim ||
        a->layout != b->layout || a->nelems != b->nelems || a->func != b->func || a->readonly != b->readonly ||
        a->slice_const != b->slice_const || a->slice_has != b->slice_has ||
        memcmp(a->slice_at, b->slice_at, sizeof a->slice_at) != 0)
        return false;
    for (int i = 0; i < a->nelems; i++)
        if (a->elems[i] != b->elems[i]) return false;
    return true;
}

static IrType *intern(IrType proto)
{
    for (TypeNode *n = interned; n; n = n->next)
        if (same_type(&n->t, &proto)) return &n->t;
    TypeNode *n = calloc(1, sizeof *n);
    n->t = proto;
    if (proto.nelems) {
        n->t.elems = malloc(sizeof(IrType *) * (size_t)proto.nelems);
        memcpy(n->t.elems, proto.elems, sizeof(IrType *) * (size_t)proto.nelems);
    }
    n->next = interned;
    interned = n;
    return &n->t;
}

IrType *ir_type_scalar(IrDtype dt) { return intern((IrType){.kind = IR_TY_SCALAR, .dtype = dt}); }
IrType *ir_type_weak(IrDtype dt) { return intern((IrType){.kind = IR_TY_SCALAR, .dtype = dt, .weak = true}); }
IrType *ir_type_none(void) { return intern((IrType){.kind = IR_TY_NONE}); }
IrType *ir_type_slice(void) { return intern((IrType){.kind = IR_TY_SLICE}); }
IrType *ir_type_slice_const(unsigned has, const int64_t at[3])
{
    IrType t = {.kind = IR_TY_SLICE, .slice_const = true, .slice_has = (uint8_t)(has & 7)};
    for (int k = 0; k < 3; k++) t.slice_at[k] = (has >> k & 1) ? at[k] : 0;
    return intern(t);
}
IrType *ir_type_range(void) { return intern((IrType){.kind = IR_TY_RANGE}); }
IrType *ir_type_dtype(IrDtype dt) { return intern((IrType){.kind = IR_TY_DTYPE, .dtype = dt}); }
IrType *ir_type_func(const void *func) { return intern((IrType){.kind = IR_TY_FUNC, .func = func}); }
IrType *ir_type_rng(void) { return intern((IrType){.kind = IR_TY_RNG}); }

IrType *ir_type_array(IrDtype dt, int ndim, IrLayout layout)
{
    return ir_type_array_ro(dt, ndim, layout, false);
}

IrType *ir_type_array_ro(IrDtype dt, int ndim, IrLayout layout, bool readonly)
{
    if (ndim == 0) return ir_type_scalar(dt);
    return intern((IrType){.kind = IR_TY_ARRAY, .dtype = dt, .ndim = ndim, .layout = layout, .readonly = readonly});
}

IrType *ir_type_view(const IrType *of, int ndim, IrLayout layout)
{
    return ir_type_array_ro(of->dtype, ndim, layout, of->kind == IR_TY_ARRAY && of->readonly);
}

IrType *ir_type_tuple(IrType **elems, int n)
{
    return intern((IrType){.kind = IR_TY_TUPLE, .nelems = n, .elems = elems});
}

IrType *ir_type_strong(IrType *t)
{
    if (t->kind != IR_TY_SCALAR || !t->weak) return t;
    return ir_type_scalar(t->dtype);
}

bool ir_dtype_is_int(IrDtype dt) { return dt >= IR_DT_INT8 && dt <= IR_DT_UINT64; }
bool ir_dtype_is_signed(IrDtype dt) { return dt >= IR_DT_INT8 && dt <= IR_DT_INT64; }
bool ir_dtype_is_float(IrDtype dt) { return dt == IR_DT_FLOAT16 || dt == IR_DT_FLOAT32 || dt == IR_DT_FLOAT64; }
bool ir_dtype_is_complex(IrDtype dt) { return dt == IR_DT_COMPLEX64 || dt == IR_DT_COMPLEX128; }
IrDtype ir_complex_part(IrDtype dt) { return dt == IR_DT_COMPLEX64 ? IR_DT_FLOAT32 : IR_DT_FLOAT64; }
IrDtype ir_complex_of(IrDtype dt) { return dt == IR_DT_FLOAT64 ? IR_DT_COMPLEX128 : IR_DT_COMPLEX64; }

int ir_dtype_size(IrDtype dt)
{
    static const int sizes[IR_DT_COUNT] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 8, 8, 16};
    return sizes[dt];
}

int ir_dtype_bits(IrDtype dt)
{
    return dt == IR_DT_BOOL ? 1 : ir_dtype_size(dt) * 8;
}

static const char *dtype_names[IR_DT_COUNT] = {
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32", "float64",
    "complex64", "complex128",
};

const char *ir_dtype_name(IrDtype dt) { return dtype_names[dt]; }

bool ir_dtype_from_name(const char *name, IrDtype *out)
{
    for (int i = 0; i < IR_DT_COUNT; i++)
        if (strcmp(name, dtype_names[i]) == 0) {
            *out = (IrDtype)i;
            return true;
        }
    if (strcmp(name, "bool_") == 0) { *out = IR_DT_BOOL; return true; }
    if (strcmp(name, "float") == 0 || strcmp(name, "double") == 0) { *out = IR_DT_FLOAT64; return true; }
    if (strcmp(name, "int") == 0 || strcmp(name, "intp") == 0) { *out = IR_DT_INT64; return true; }
    if (strcmp(name, "single") == 0) { *out = IR_DT_FLOAT32; return true; }
    if (strcmp(name, "half") == 0) { *out = IR_DT_FLOAT16; return true; }
    if (strcmp(name, "complex") == 0 || strcmp(name, "complex_") == 0 || strcmp(name, "cdouble") == 0) {
        *out = IR_DT_COMPLEX128;
        return true;
    }
    if (strcmp(name, "csingle") == 0) { *out = IR_DT_COMPLEX64; return true; }
    return false;
}

void ir_type_str(const IrType *t, char *buf, size_t n)
{
    if (!t) { snprintf(buf, n, "?"); return; }
    switch (t->kind) {
    case IR_TY_SCALAR:
        if (t->weak)
            snprintf(buf, n, "%s", t->dtype == IR_DT_BOOL ? "bool" : t->dtype == IR_DT_INT64 ? "int"
                                   : t->dtype == IR_DT_COMPLEX128 ? "complex" : "float");
        else snprintf(buf, n, "%s", ir_dtype_name(t->dtype));
        return;
    case IR_TY_ARRAY:
        snprintf(buf, n, "array(%s, %dd, %s%s)", ir_dtype_name(t->dtype), t->ndim, t->layout == IR_LAYOUT_C ? "C" : "A",
                 t->readonly ? ", readonly" : "");
        return;
    case IR_TY_TUPLE: {
        size_t used = (size_t)snprintf(buf, n, "(");
        for (int i = 0; i < t->nelems && used < n; i++) {
            ir_type_str(t->elems[i], buf + used, n - used);
            used = strlen(buf);
            if (i + 1 < t->nelems || t->nelems == 1) used += (size_t)snprintf(buf + used, n - used, i + 1 < t->nelems ? ", " : ",");
        }
        if (used < n) snprintf(buf + used, n - used, ")");
        return;
    }
    case IR_TY_NONE: snprintf(buf, n, "none"); return;
    case IR_TY_SLICE:
        if (!t->slice_const) {
            snprintf(buf, n, "slice");
            return;
        }
        {
            char part[3][24];
            for (int k = 0; k < 3; k++) {
                if (t->slice_has >> k & 1) snprintf(part[k], sizeof part[k], "%lld", (long long)t->slice_at[k]);
                else snprintf(part[k], sizeof part[k], "None");
            }
            snprintf(buf, n, "slice(%s, %s, %s)", part[0], part[1], part[2]);
        }
        return;
    case IR_TY_RANGE: snprintf(buf, n, "range"); return;
    case IR_TY_DTYPE: snprintf(buf, n, "dtype(%s)", ir_dtype_name(t->dtype)); return;
    case IR_TY_FUNC: snprintf(buf, n, "function"); return;
    case IR_TY_RNG: snprintf(buf, n, "Generator(PCG64)"); return;
    }
    snprintf(buf, n, "?");
}

int ir_abi_slots(const IrType *t)
{
    switch (t->kind) {
    case IR_TY_SCALAR: return ir_dtype_is_complex(t->dtype) ? 2 : 1;
    case IR_TY_ARRAY: return 2 + 2 * t->ndim;
    case IR_TY_TUPLE: {
        int n = 0;
        for (int i = 0; i < t->nelems; i++) n += ir_abi_slots(t->elems[i]);
        return n;
    }
    case IR_TY_NONE: case IR_TY_SLICE: case IR_TY_RANGE: case IR_TY_DTYPE: case IR_TY_FUNC: return 0;
    case IR_TY_RNG: return 6; /* its RtRng, updated in place */
    }
    return 0;
}
