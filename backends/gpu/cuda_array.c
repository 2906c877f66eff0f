/* cuda_array.c: arrays in the element code of a kernel: element loads and stores (negative indices wrap, checked
 * accesses raise IndexError as on the cpu), views (slices, integer items, None, transpose, reshape), and the
 * data-parallel nodes nested in element code, which run as sequential loops in the thread. Nothing here
 * allocates: a nested node that would make a new array is refused (cu_refuse), never lowered wrongly. */
#include <stdlib.h>
#include "cuda.h"

static bool is_none(const IrNode *n)
{
    return n->kind != IR_SLICE && n->type->kind == IR_TY_NONE;
}

static bool all_ints(const IrNode *n)
{
    if (n->u.index.n != n->u.index.base->type->ndim) return false;
    for (int i = 0; i < n->u.index.n; i++)
        if (n->u.index.items[i]->kind == IR_SLICE || is_none(n->u.index.items[i])) return false;
    return true;
}

/* A negative index wrapped, and checked against dim when the node asks (IndexError: index, size, axis). */
static const char *wrap_index(Cu *c, const IrNode *n, const char *v, const char *dim, int axis)
{
    if (n->u.index.proven) return v; /* in range on every iteration (a versioned loop's test said so): no wrap */
    const char *w = cu_tmp(c, ir_type_scalar(IR_DT_INT64), "(%s < 0 ? %s + %s : %s)", v, v, dim, v);
    if (n->u.index.checked)
        cu_raise(c, cu_fmt(c, "(u64)%s >= (u64)%s", w, dim), RT_ERR_INDEX, n->pos, v, dim, cu_fmt(c, "%d", axis));
    return w;
}

/* The address of the element at idx (i64 expressions) of array value arr of type t. */
static const char *elem_addr(Cu *c, const IrType *t, const char *arr, const char *const *idx)
{
    if (t->ndim == 0) return cu_fmt(c, "%s.data", arr);
    CuBuf e = {0};
    if (t->layout == IR_LAYOUT_C) {
        cu_buf_printf(&e, "%s", idx[0]);
        for (int k = 1; k < t->ndim; k++) {
            char *prev = e.s;
            e = (CuBuf){0};
            cu_buf_printf(&e, "(%s) * %s.shape[%d] + %s", prev, arr, k, idx[k]);
            free(prev);
        }
        const char *r = cu_fmt(c, "%s.data + (%s) * %d", arr, e.s, ir_dtype_size(t->dtype));
        cu_buf_free(&e);
        return r;
    }
    cu_buf_printf(&e, "%s.data", arr);
    for (int k = 0; k < t->ndim; k++) cu_buf_printf(&e, " + %s * %s.strides[%d]", idx[k], arr, k);
    const char *r = cu_fmt(c, "%s", e.s);
    cu_buf_free(&e);
    return r;
}

/* The element address of an index of integers only (base evaluated first, then the items in order). */
static const char *index_addr(Cu *c, const IrNode *n, const char *arr)
{
    const IrType *bt = n->u.index.base->type;
    const char *raw[IR_MAX_DIMS], *idx[IR_MAX_DIMS];
    for (int k = 0; k < bt->ndim; k++) {
        const IrNode *it = n->u.index.items[k];
        const char *v = cu_expr(c, it);
        if (!v) return NULL;
        raw[k] = cu_tmp(c, ir_type_scalar(IR_DT_INT64), "(i64)%s", v);
    }
    for (int k = 0; k < bt->ndim; k++) idx[k] = wrap_index(c, n, raw[k], cu_fmt(c, "%s.shape[%d]", arr, k), k);
    return elem_addr(c, bt, arr, idx);
}

/* Python's slice.indices() over an axis of size dim: start, length and step as i64 temporaries. */
static bool slice_bounds(Cu *c, const IrNode *s, const char *dim, const char **start, const char **len, const char **step)
{
    const IrType *i64 = ir_type_scalar(IR_DT_INT64);
    const IrNode *parts[3] = {s->u.slice.start, s->u.slice.stop, s->u.slice.step};
    const char *vals[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++) {
        if (!parts[i]) continue;
        const char *v = cu_expr(c, parts[i]);
        if (!v) return false;
        vals[i] = cu_tmp(c, i64, "(i64)%s", v);
    }
    *step = vals[2] ? vals[2] : "((i64)1)";
    if (vals[2] && !(parts[2]->kind == IR_CONST && parts[2]->u.konst.i != 0))
        cu_raise(c, cu_fmt(c, "%s == 0", *step), RT_ERR_VALUE, s->pos, cu_fmt(c, "%d", RT_VAL_SLICE_STEP_ZERO), NULL, NULL);
    const char *back = cu_tmp(c, ir_type_scalar(IR_DT_BOOL), "%s < 0", *step);
    const char *lower = cu_tmp(c, i64, "(%s ? (i64)-1 : (i64)0)", back);
    const char *upper = cu_tmp(c, i64, "(%s ? %s - 1 : %s)", back, dim, dim);
    const char *ends[2];
    for (int i = 0; i < 2; i++) {
        const char *v = vals[i];
        if (!v) {
            ends[i] = cu_tmp(c, i64, i == 0 ? "(%s ? %s : %s)" : "(%s ? %s : %s)", back, i == 0 ? upper : lower,
                             i == 0 ? lower : upper);
            continue;
        }
        ends[i] = cu_tmp(c, i64, "(%s < 0 ? (%s + %s < 0 ? %s : %s + %s) : (%s >= %s ? %s : %s))", v, v, dim, lower, v,
                         dim, v, dim, upper, v);
    }
    *start = ends[0];
    *len = cu_tmp(c, i64, "(%s ? (%s > %s ? (%s - %s - 1) / (-%s) + 1 : 0) : (%s < %s ? (%s - %s - 1) / %s + 1 : 0))",
                  back, ends[0], ends[1], ends[0], ends[1], *step, ends[0], ends[1], ends[1], ends[0], *step);
    return true;
}

static const char *view(Cu *c, const IrNode *n, const char *arr)
{
    const IrType *bt = n->u.index.base->type;
    const char *dims[IR_MAX_DIMS], *strides[IR_MAX_DIMS];
    const char *off = "(i64)0";
    int ax = 0, out = 0;
    for (int i = 0; i < n->u.index.n; i++) {
        const IrNode *it = n->u.index.items[i];
        if (is_none(it)) {
            dims[out] = "(i64)1";
            strides[out++] = "(i64)0";
            continue;
        }
        const char *dim = cu_fmt(c, "%s.shape[%d]", arr, ax), *stride = cu_fmt(c, "%s.strides[%d]", arr, ax);
        if (it->kind == IR_SLICE) {
            const char *start, *len, *step;
            if (!slice_bounds(c, it, dim, &start, &len, &step)) return NULL;
            off = cu_tmp(c, ir_type_scalar(IR_DT_INT64), "%s + %s * %s", off, start, stride);
            dims[out] = len;
            strides[out++] = cu_tmp(c, ir_type_scalar(IR_DT_INT64), "%s * %s", stride, step);
        } else {
            const char *v = cu_expr(c, it);
            if (!v) return NULL;
            v = wrap_index(c, n, cu_tmp(c, ir_type_scalar(IR_DT_INT64), "(i64)%s", v), dim, ax);
            off = cu_tmp(c, ir_type_scalar(IR_DT_INT64), "%s + %s * %s", off, v, stride);
        }
        ax++;
    }
    for (; ax < bt->ndim; ax++) {
        dims[out] = cu_fmt(c, "%s.shape[%d]", arr, ax);
        strides[out++] = cu_fmt(c, "%s.strides[%d]", arr, ax);
    }
    const char *r = cu_new_tmp(c);
    cu_line(c, "%s %s;", cu_type(c, n->type), r);
    cu_line(c, "%s.data = %s.data + %s; %s.base = %s.base;", r, arr, off, r, arr);
    for (int d = 0; d < out; d++) cu_line(c, "%s.shape[%d] = %s; %s.strides[%d] = %s;", r, d, dims[d], r, d, strides[d]);
    return r;
}

const char *cu_index(Cu *c, const IrNode *n)
{
    const IrType *bt = n->u.index.base->type;
    if (bt->kind != IR_TY_ARRAY) return cu_refuse(c, n, "this index");
    for (int i = 0; i < n->u.index.n; i++)
        if (n->u.index.items[i]->type->kind == IR_TY_ARRAY) return cu_refuse(c, n, "a boolean mask index");
    const char *arr = cu_expr(c, n->u.index.base);
    if (!arr) return NULL;
    if (!all_ints(n)) return view(c, n, arr);
    const char *addr = index_addr(c, n, arr);
    return addr ? cu_tmp(c, n->type, "%s", cu_load(c, bt->dtype, addr)) : NULL;
}

bool cu_store(Cu *c, const IrNode *s)
{
    const IrNode *target = s->u.store.target, *value = s->u.store.value;
    if (value->type->kind == IR_TY_ARRAY || target->kind != IR_INDEX || !all_ints(target))
        return cu_refuse(c, s, "a store through a boolean mask") != NULL;
    for (int i = 0; i < target->u.index.n; i++)
        if (target->u.index.items[i]->type->kind == IR_TY_ARRAY) return cu_refuse(c, s, "a store through a boolean mask") != NULL;
    const char *v = cu_expr(c, value);
    if (!v) return false;
    const IrType *bt = target->u.index.base->type;
    v = cu_tmp(c, ir_type_scalar(bt->dtype), "%s", cu_cast(c, v, value->type, ir_type_scalar(bt->dtype)));
    const char *arr = cu_expr(c, target->u.index.base);
    const char *addr = arr ? index_addr(c, target, arr) : NULL;
    if (!addr) return false;
    cu_store_at(c, bt->dtype, addr, v);
    return true;
}

static const char *transpose(Cu *c, const IrNode *n)
{
    const char *x = cu_expr(c, n->u.call.args[0]);
    if (!x) return NULL;
    int nd = n->type->ndim;
    const char *r = cu_new_tmp(c);
    cu_line(c, "%s %s;", cu_type(c, n->type), r);
    cu_line(c, "%s.data = %s.data; %s.base = %s.base;", r, x, r, x);
    for (int d = 0; d < nd; d++)
        cu_line(c, "%s.shape[%d] = %s.shape[%d]; %s.strides[%d] = %s.strides[%d];", r, d, x, nd - 1 - d, r, d, x, nd - 1 - d);
    return r;
}

/* A reshape of another x is a view or a copy chosen at run time (ir.h's reshape_views): in a kernel the copy
 * would make a new array */
static const char *strided_reshape_refused(Cu *c, const IrNode *n)
{
    return cu_refuse(c, n, "a reshape or ravel of an array that is neither C-contiguous nor 1-D (NumPy copies "
                           "it when its strides allow no view, and a copy would make a new array)");
}

/* reshape(x, d...): a view of C-contiguous x, or of a 1-D x of any stride; one d may be -1 (not beside a 0);
 * ValueError when the sizes differ. */
static const char *reshape(Cu *c, const IrNode *n)
{
    const IrType *xt = n->u.call.args[0]->type, *i64 = ir_type_scalar(IR_DT_INT64);
    if (xt->layout != IR_LAYOUT_C && xt->ndim != 1) return strided_reshape_refused(c, n);
    const char *x = cu_expr(c, n->u.call.args[0]);
    if (!x) return NULL;
    int nd = n->type->ndim;
    const char *dims[IR_MAX_DIMS];
    for (int d = 0; d < nd; d++) {
        const char *v = cu_expr(c, n->u.call.args[d + 1]);
        if (!v) return NULL;
        dims[d] = cu_tmp(c, i64, "(i64)%s", v);
    }
    const char *total = cu_tmp(c, i64, "(i64)1");
    for (int d = 0; d < xt->ndim; d++) cu_line(c, "%s *= %s.shape[%d];", total, x, d);
    const char *known = cu_tmp(c, i64, "(i64)1"), *nneg = cu_tmp(c, i64, "(i64)0");
    const char *bad = cu_tmp(c, ir_type_scalar(IR_DT_BOOL), "false");
    for (int d = 0; d < nd; d++) {
        cu_line(c, "%s *= %s == -1 ? (i64)1 : %s; %s += %s == -1; %s = %s || %s < -1;", known, dims[d], dims[d], nneg,
                dims[d], bad, bad, dims[d]);
    }
    const char *inferred = cu_tmp(c, i64, "(%s == 0 ? (i64)0 : %s / %s)", known, total, known);
    const char *prod = cu_tmp(c, i64, "(i64)1");
    for (int d = 0; d < nd; d++) {
        dims[d] = cu_tmp(c, i64, "(%s == -1 ? %s : %s)", dims[d], inferred, dims[d]);
        cu_line(c, "%s *= %s;", prod, dims[d]);
    }
    cu_raise(c, cu_fmt(c, "%s || %s > 1 || (%s == 0 && %s) || %s != %s", bad, nneg, known, nneg, prod, total), RT_ERR_VALUE, n->pos,
             cu_fmt(c, "%d", RT_VAL_RESHAPE), NULL, NULL);
    const char *r = cu_new_tmp(c);
    cu_line(c, "%s %s;", cu_type(c, n->type), r);
    cu_line(c, "%s.data = %s.data; %s.base = %s.base;", r, x, r, x);
    /* the element step: x's own for a 1-D x of any stride (its itemsize when x is C-contiguous) */
    const char *stride = xt->ndim == 1 ? cu_tmp(c, i64, "%s.strides[0]", x) : cu_tmp(c, i64, "(i64)%d", ir_dtype_size(n->type->dtype));
    for (int d = nd - 1; d >= 0; d--) cu_line(c, "%s.shape[%d] = %s; %s.strides[%d] = %s; %s *= %s;", r, d, dims[d], r, d, stride, stride, dims[d]);
    return r;
}

/* ir.h's core_dim: a matrix product's summed sizes must be equal (RT_ERR_SHAPE with dimension 0 is matmul's) */
static const char *core_dim(Cu *c, const IrNode *n)
{
    const char *k = cu_expr(c, n->u.call.args[0]);
    const char *kb = k ? cu_expr(c, n->u.call.args[1]) : NULL;
    if (!kb) return NULL;
    const char *r = cu_tmp(c, ir_type_scalar(IR_DT_INT64), "(i64)%s", k);
    cu_raise(c, cu_fmt(c, "%s != (i64)%s", r, kb), RT_ERR_SHAPE, n->pos, r, kb, "0");
    return r;
}

/* raise(code, e0, e1, e2): the error, always; the value after it is never read, a declared temporary */
static const char *raise_error(Cu *c, const IrNode *n)
{
    const char *e[3];
    RtErrCode code = (RtErrCode)n->u.call.args[0]->u.konst.i;
    if (ir_raise_recorded(n))
        return cu_refuse(c, n, "an exception whose arguments are made at run time (an f-string, a computed value): "
                               "its message cannot be written from a kernel; give it constant arguments");
    for (int i = 0; i < 3; i++)
        if (!(e[i] = cu_expr(c, n->u.call.args[1 + i]))) return NULL;
    if (code == RT_ERR_RAISE) { /* a raise statement: its class and arguments, as strings of the names table */
        e[0] = cu_fmt(c, "%d", rt_names_index(c->names, n->u.call.name));
        e[1] = cu_fmt(c, "%d", n->u.call.text ? rt_names_index(c->names, n->u.call.text) : -1);
    }
    cu_raise(c, NULL, code, n->pos, e[0], e[1], e[2]);
    const char *r = cu_new_tmp(c);
    cu_line(c, "%s %s = {};", cu_type(c, n->type), r);
    return r;
}

/* search(a, v, right): bisection in the thread (ir.h); NumPy's order, NaN after everything (float16 values are
 * f32 here, exactly) */
static const char *search(Cu *c, const IrNode *n)
{
    const IrType *at = n->u.call.args[0]->type, *i64 = ir_type_scalar(IR_DT_INT64);
    const char *a = cu_expr(c, n->u.call.args[0]);
    const char *v = a ? cu_expr(c, n->u.call.args[1]) : NULL;
    if (!v) return NULL;
    v = cu_tmp(c, n->u.call.args[1]->type, "%s", v);
    const char *lo = cu_tmp(c, i64, "0"), *hi = cu_tmp(c, i64, "%s.shape[0]", a);
    const char *mid = cu_new_tmp(c);
    cu_line(c, "while (%s < %s) {", lo, hi);
    cu_line(c, "i64 %s = %s + ((%s - %s) >> 1);", mid, lo, hi, lo);
    const char *idx[1] = {mid};
    const char *x = cu_tmp(c, ir_type_scalar(at->dtype), "%s", cu_load(c, at->dtype, elem_addr(c, at, a, idx)));
    const char *go;
    if (ir_dtype_is_float(at->dtype))
        go = n->u.call.args[2]->u.konst.i ? cu_fmt(c, "!(%s < %s || (%s != %s && %s == %s))", v, x, x, x, v, v)
                                          : cu_fmt(c, "(%s < %s || (%s != %s && %s == %s))", x, v, v, v, x, x);
    else
        go = n->u.call.args[2]->u.konst.i ? cu_fmt(c, "!(%s < %s)", v, x) : cu_fmt(c, "(%s < %s)", x, v);
    cu_line(c, "if (%s) %s = %s + 1; else %s = %s;", go, lo, mid, hi, mid);
    cu_line(c, "}");
    return lo;
}

const char *cu_intrinsic(Cu *c, const IrNode *n)
{
    switch (n->u.call.intrinsic) {
    case IR_INTR_TRANSPOSE: return transpose(c, n);
    case IR_INTR_RESHAPE: return reshape(c, n);
    case IR_INTR_RESHAPE_VIEWS: return strided_reshape_refused(c, n);
    case IR_INTR_CONCATENATE: return cu_refuse(c, n, "concatenate (it makes a new array)");
    case IR_INTR_MATMUL: return cu_refuse(c, n, "a matrix product (it makes a new array)");
    case IR_INTR_MASK_SELECT: return cu_refuse(c, n, "a[mask] (it makes a new array)");
    case IR_INTR_CORE_DIM: return core_dim(c, n);
    case IR_INTR_RAISE: return raise_error(c, n);
    case IR_INTR_SEARCH: return search(c, n);
    case IR_INTR_LINALG: return cu_refuse(c, n, "np.linalg's det, inv, solve and cholesky (host code)");
    case IR_INTR_SORT: return cu_refuse(c, n, "a sort (np.sort, np.argsort, np.median, ...: it makes a new array)");
    case IR_INTR_RNG_NEW: case IR_INTR_RNG_DRAW: return cu_refuse(c, n, "np.random (draws run in host code)");
    case IR_INTR_PRINT: return cu_refuse(c, n, "print() (a kernel's threads run in any order: print after the loop, "
                                        "or use the cpu or openmp backend)");
    case IR_INTR_COUNT: break;
    }
    return cu_refuse(c, n, "this intrinsic");
}

const char *cu_bcast_shape(Cu *c, const IrNode *n)
{
    const char *s = cu_tmp(c, ir_type_scalar(IR_DT_INT64), "(i64)1");
    int nd = n->u.bcast_shape.ndim, axis = n->u.bcast_shape.axis;
    for (int i = 0; i < n->u.bcast_shape.n; i++) {
        const IrNode *arg = n->u.bcast_shape.args[i];
        const char *v = cu_expr(c, arg);
        if (!v) return NULL;
        if (arg->type->kind != IR_TY_ARRAY || axis < nd - arg->type->ndim) continue;
        const char *in = cu_fmt(c, "%s.shape[%d]", v, axis - (nd - arg->type->ndim));
        cu_raise(c, cu_fmt(c, "!(%s == 1 || %s == 1 || %s == %s)", in, s, in, s), RT_ERR_SHAPE, n->pos, in, s,
                 cu_fmt(c, "%d", nd - axis));
        cu_line(c, "%s = %s == 1 ? %s : %s;", s, in, s, in);
    }
    return s;
}

/* ---------------- maps inside element code: sequential loops ---------------- */

const char *cu_map_value_at(Cu *c, const CuMapSrc *m, const char *flat, const char *const *idx)
{
    const IrNode *map = m->map;
    for (int i = 0; i < map->u.map.ninputs; i++) {
        const IrType *t = map->u.map.inputs[i]->type;
        const char *v = m->val[i];
        if (t->kind == IR_TY_ARRAY) {
            const char *addr;
            if (flat) {
                addr = cu_fmt(c, "%s + %s * %d", v, flat, ir_dtype_size(t->dtype));
            } else {
                CuBuf e = {0};
                cu_buf_printf(&e, "%s", v);
                for (int k = 0; k < t->ndim; k++) cu_buf_printf(&e, " + %s * %s", idx[m->ndim - t->ndim + k], m->stride[i][k]);
                addr = cu_fmt(c, "%s", e.s);
                cu_buf_free(&e);
            }
            v = cu_load(c, t->dtype, addr);
        }
        const IrVar *p = i < map->u.map.nparams ? map->u.map.params[i] : NULL;
        if (p) cu_line(c, "v%d = %s;", p->id, cu_cast(c, v, t->kind == IR_TY_ARRAY ? ir_type_scalar(t->dtype) : t, p->type));
    }
    return cu_expr(c, map->u.map.body);
}

/* The inputs of a nested map evaluated, in order, into src (arrays[i]: the array value of input i, or NULL). */
static bool prepare(Cu *c, CuMapSrc *src, const IrNode *map, int ndim, const char **arrays)
{
    src->map = map;
    src->ndim = ndim;
    for (int i = 0; i < map->u.map.ninputs; i++) {
        const char *v = cu_expr(c, map->u.map.inputs[i]);
        if (!v) return false;
        const IrType *t = map->u.map.inputs[i]->type;
        arrays[i] = t->kind == IR_TY_ARRAY ? v : NULL;
        src->val[i] = t->kind == IR_TY_ARRAY ? cu_fmt(c, "%s.data", v) : cu_tmp(c, t, "%s", v);
    }
    return true;
}

/* The space (given in src->dims, or the broadcast of the inputs), every input checked against it (a shape error
 * as on the cpu), and the inputs' strides with 0 on broadcast axes. */
static void shape_checks(Cu *c, CuMapSrc *src, const char **arrays, bool broadcast)
{
    const IrNode *map = src->map;
    const IrType *i64 = ir_type_scalar(IR_DT_INT64);
    if (broadcast) {
        for (int d = 0; d < src->ndim; d++) src->dims[d] = cu_tmp(c, i64, "(i64)1");
        for (int i = 0; i < map->u.map.ninputs; i++) {
            const IrType *t = map->u.map.inputs[i]->type;
            for (int k = 0; arrays[i] && k < t->ndim; k++) {
                int d = src->ndim - t->ndim + k;
                cu_line(c, "if (%s.shape[%d] != 1) %s = %s.shape[%d];", arrays[i], k, src->dims[d], arrays[i], k);
            }
        }
    }
    for (int i = 0; i < map->u.map.ninputs; i++) {
        const IrType *t = map->u.map.inputs[i]->type;
        for (int k = 0; arrays[i] && k < t->ndim; k++) {
            int d = src->ndim - t->ndim + k;
            const char *in = cu_fmt(c, "%s.shape[%d]", arrays[i], k);
            cu_raise(c, cu_fmt(c, "!(%s == %s || %s == 1)", in, src->dims[d], in), RT_ERR_SHAPE, map->pos, in,
                     src->dims[d], cu_fmt(c, "%d", t->ndim - k));
            src->stride[i][k] = cu_tmp(c, i64, "(%s == 1 && %s != 1) ? (i64)0 : %s.strides[%d]", in, src->dims[d],
                                       arrays[i], k);
        }
    }
}

/* for (i64 iN = 0; iN < dims[d]; iN++) for every d: the loop names in idx; returns how many braces to close */
static int open_nest(Cu *c, int ndim, const char *const *dims, const char **idx)
{
    for (int d = 0; d < ndim; d++) {
        idx[d] = cu_new_tmp(c);
        cu_line(c, "for (i64 %s = 0; %s < %s; %s++) {", idx[d], idx[d], dims[d], idx[d]);
        c->indent++;
    }
    return ndim;
}

static void close_nest(Cu *c, int n)
{
    while (n--) {
        c->indent--;
        cu_line(c, "}");
    }
}

/* An input that overlaps out other than element for element would need the copy the cpu backend makes first,
 * and a kernel cannot allocate: such a call raises (an internal error record naming the line), never computes
 * a wrong result. Code 100 is no RtErrCode: rt_error_diag reports it as an internal error. */
#define CU_ERR_OVERLAP 100

static void overlap_checks(Cu *c, const CuMapSrc *src, const char **arrays, const char *out, const IrType *ot)
{
    const IrNode *map = src->map;
    for (int i = 0; i < map->u.map.ninputs; i++) {
        const IrType *t = map->u.map.inputs[i]->type;
        if (!arrays[i]) continue;
        CuBuf same = {0};
        cu_buf_printf(&same, "%s.data == %s.data", arrays[i], out);
        for (int k = 0; k < t->ndim; k++) cu_buf_printf(&same, " && %s == %s.strides[%d]", src->stride[i][k], out, src->ndim - t->ndim + k);
        for (int d = 0; d < src->ndim - t->ndim; d++) cu_buf_printf(&same, " && %s.shape[%d] <= 1", out, d);
        /* byte ranges [lo, hi) of both */
        const char *r[2][2];
        const char *arrs[2] = {arrays[i], out};
        const IrType *ts[2] = {t, ot};
        for (int a = 0; a < 2; a++) {
            const char *lo = cu_tmp(c, ir_type_scalar(IR_DT_INT64), "(i64)%s.data", arrs[a]);
            const char *hi = cu_tmp(c, ir_type_scalar(IR_DT_INT64), "%s + %d", lo, ir_dtype_size(ts[a]->dtype));
            const char *empty = cu_tmp(c, ir_type_scalar(IR_DT_BOOL), "false");
            for (int d = 0; d < ts[a]->ndim; d++) {
                cu_line(c, "{ i64 span = (%s.shape[%d] - 1) * %s.strides[%d]; if (span < 0) %s += span; else %s += span; %s = %s || %s.shape[%d] == 0; }",
                        arrs[a], d, arrs[a], d, lo, hi, empty, empty, arrs[a], d);
            }
            cu_line(c, "if (%s) %s = %s;", empty, hi, lo);
            r[a][0] = lo;
            r[a][1] = hi;
        }
        cu_raise(c, cu_fmt(c, "%s < %s && %s < %s && !(%s)", r[0][0], r[1][1], r[1][0], r[0][1], same.s),
                 (RtErrCode)CU_ERR_OVERLAP, map->pos, NULL, NULL, NULL);
        cu_buf_free(&same);
    }
}

const char *cu_nested_map(Cu *c, const IrNode *n)
{
    if (!n->u.map.out) return cu_refuse(c, n, "an array expression that makes a new array");
    const IrType *ot = n->type;
    CuMapSrc src = {0};
    const char *arrays[IR_MAX_MAP_INPUTS];
    if (!prepare(c, &src, n, ot->ndim, arrays)) return NULL;
    int narrays = 0;
    for (int i = 0; i < n->u.map.ninputs; i++) narrays += arrays[i] != NULL;
    if (narrays > 1) { /* the inputs against their own broadcast before out is evaluated, as the cpu does (ir.h) */
        CuMapSrc probe = src;
        shape_checks(c, &probe, arrays, true);
    }
    const char *out = cu_expr(c, n->u.map.out);
    if (!out) return NULL;
    for (int d = 0; d < ot->ndim; d++) src.dims[d] = cu_fmt(c, "%s.shape[%d]", out, d);
    shape_checks(c, &src, arrays, false);
    if (!n->u.map.out_is_fresh) overlap_checks(c, &src, arrays, out, ot);
    const char *idx[IR_MAX_DIMS];
    int open = open_nest(c, ot->ndim, src.dims, idx);
    const char *v = cu_map_value_at(c, &src, ot->ndim ? NULL : "0", idx);
    if (!v) return NULL;
    CuBuf addr = {0};
    cu_buf_printf(&addr, "%s.data", out);
    for (int d = 0; d < ot->ndim; d++) cu_buf_printf(&addr, " + %s * %s.strides[%d]", idx[d], out, d);
    cu_store_at(c, ot->dtype, addr.s, cu_cast(c, v, n->u.map.body->type, ir_type_scalar(ot->dtype)));
    cu_buf_free(&addr);
    close_nest(c, open);
    return out;
}

const char *cu_nested_imap(Cu *c, const IrNode *n)
{
    if (!n->u.imap.out) return cu_refuse(c, n, "an index map that makes a new array");
    const char *out = cu_expr(c, n->u.imap.out);
    if (!out) return NULL;
    int nd = n->u.imap.ndim;
    const char *dims[IR_MAX_DIMS], *idx[IR_MAX_DIMS];
    for (int d = 0; d < nd; d++) dims[d] = cu_fmt(c, "%s.shape[%d]", out, d);
    int open = open_nest(c, nd, dims, idx);
    for (int d = 0; d < nd; d++) cu_line(c, "v%d = %s;", n->u.imap.idx[d]->id, idx[d]);
    const char *v = cu_expr(c, n->u.imap.body);
    if (!v) return NULL;
    CuBuf addr = {0};
    cu_buf_printf(&addr, "%s.data", out);
    for (int d = 0; d < nd; d++) cu_buf_printf(&addr, " + %s * %s.strides[%d]", idx[d], out, d);
    cu_store_at(c, n->type->dtype, addr.s, cu_cast(c, v, n->u.imap.body->type, ir_type_scalar(n->type->dtype)));
    cu_buf_free(&addr);
    close_nest(c, open);
    return out;
}

/* A reduction of everything inside element code: one loop over the input in C order, as on the cpu. */
const char *cu_nested_reduce(Cu *c, const IrNode *n)
{
    if (n->u.reduce.axis >= 0 || n->u.reduce.out) return cu_refuse(c, n, "a reduction along an axis (it makes a new array)");
    const IrNode *map = n->u.reduce.input;
    if (map->kind != IR_MAP) return cu_refuse(c, n, "a reduction whose input is not a map");
    IrReduceOp op = n->u.reduce.op;
    const IrCombine *cb = &n->u.reduce.combine;
    IrDtype dt = map->u.map.body->type->dtype;
    const IrType *i64 = ir_type_scalar(IR_DT_INT64), *bt = ir_type_scalar(IR_DT_BOOL);
    CuMapSrc src = {0};
    const char *arrays[IR_MAX_MAP_INPUTS];
    int nd = map->type->ndim;
    if (!prepare(c, &src, map, nd, arrays)) return NULL;
    shape_checks(c, &src, arrays, true);
    bool is_arg = op == IR_RED_ARGMIN || op == IR_RED_ARGMAX;
    const char *empty = cu_tmp(c, bt, "false");
    for (int d = 0; d < nd; d++) cu_line(c, "%s = %s || %s == 0;", empty, empty, src.dims[d]);
    const char *acc, *best_i = NULL, *started = NULL, *lin = NULL;
    const IrType *acc_t = op == IR_RED_FUNC ? cb->acc_param->type : ir_type_scalar(dt);
    if (op == IR_RED_FUNC) {
        if (cb->init) {
            const char *init = cu_expr(c, cb->init);
            if (!init) return NULL;
            acc = cu_tmp(c, acc_t, "%s", cu_cast(c, init, cb->init->type, acc_t));
        } else {
            acc = cu_new_tmp(c);
            cu_line(c, "%s %s = %s;", cu_type(c, acc_t), acc, cu_konst(c, acc_t, 0, 0.0));
            started = cu_tmp(c, bt, "false");
        }
    } else {
        if (ir_reduce_needs_items(op, cb))
            cu_raise(c, empty, RT_ERR_VALUE, n->pos, cu_fmt(c, "%d", RT_VAL_EMPTY_REDUCE), NULL, NULL);
        acc = cu_tmp(c, acc_t, "%s", cu_red_identity(c, op, dt));
        if (is_arg) {
            best_i = cu_tmp(c, i64, "(i64)0");
            lin = cu_tmp(c, i64, "(i64)0");
        }
    }
    const char *idx[IR_MAX_DIMS];
    int open = open_nest(c, nd, src.dims, idx);
    const char *v = cu_map_value_at(c, &src, nd ? NULL : "0", idx);
    if (!v) return NULL;
    v = cu_tmp(c, ir_type_scalar(dt), "%s", v);
    if (is_arg) {
        const char *better = cu_arg_better(c, op, dt, v, lin, acc, best_i);
        cu_line(c, "if (%s) { %s = %s; %s = %s; }", better, acc, v, best_i, lin);
        cu_line(c, "%s++;", lin);
    } else if (op == IR_RED_FUNC && started) {
        cu_line(c, "if (%s) {", started);
        c->indent++;
        const char *r = cu_apply_combine(c, cb, acc, v);
        if (!r) return NULL;
        cu_line(c, "%s = %s;", acc, cu_cast(c, r, cb->body->type, acc_t));
        c->indent--;
        cu_line(c, "} else { %s = %s; %s = true; }", acc, cu_cast(c, v, ir_type_scalar(dt), acc_t), started);
    } else if (op == IR_RED_FUNC) {
        const char *r = cu_apply_combine(c, cb, acc, v);
        if (!r) return NULL;
        cu_line(c, "%s = %s;", acc, cu_cast(c, r, cb->body->type, acc_t));
    } else {
        const char *r = cu_red_combine(c, op, dt, acc, v, n->pos);
        if (!r) return NULL;
        cu_line(c, "%s = %s;", acc, r);
    }
    close_nest(c, open);
    if (started) cu_raise(c, cu_fmt(c, "!%s", started), RT_ERR_VALUE, n->pos, cu_fmt(c, "%d", RT_VAL_EMPTY_REDUCE), NULL, NULL);
    if (is_arg) return cu_tmp(c, n->type, "%s", cu_cast(c, best_i, i64, n->type));
    return cu_tmp(c, n->type, "%s", cu_cast(c, acc, acc_t, n->type));
}
