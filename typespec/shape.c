/* shape.c: NumPy functions that make arrays of a new shape: reshape, ravel, flatten, concatenate, stack,
 * hstack, vstack, expand_dims, linspace, eye, identity. Views stay views (a reshape where NumPy's is a view);
 * everything else is an allocation filled by maps or by a backend intrinsic. */
#include <string.h>
#include "ts_internal.h"

/* x.reshape(dims): the reshape intrinsic, of the type given */
static IrNode *reshape_call(Ts *ts, IrPos pos, IrNode *x, IrNode **dims, int nd, IrType *type)
{
    IrNode **args = ir_nodes(ts->a, nd + 1);
    args[0] = x;
    for (int i = 0; i < nd; i++) args[i + 1] = dims[i];
    return ir_intrinsic_call(ts->a, pos, IR_INTR_RESHAPE, args, nd + 1, type);
}

/* x.reshape(dims) where NumPy decides at run time, from x's strides, between a view of x and a view of a copy
 * (np.ravel's rule when contiguous_only): `reshape(x) if reshape_views(x) else reshape(copy(x))`. The result
 * is typed as the view: read-only when x is, so a write through the copy of a read-only x raises where NumPy's
 * writes the copy (the user guide says so). */
static IrNode *reshape_or_copy(Ts *ts, IrPos pos, IrNode *x, IrNode **dims, int nd, bool contiguous_only)
{
    x = ts_reuse(ts, x);
    IrNode **args = ir_nodes(ts->a, nd + 2);
    args[0] = x;
    args[1] = ir_const_int(ts->a, pos, ir_type_scalar(IR_DT_BOOL), contiguous_only);
    for (int i = 0; i < nd; i++) args[i + 2] = dims[i] = ts_reuse(ts, dims[i]);
    IrNode *views = ir_intrinsic_call(ts->a, pos, IR_INTR_RESHAPE_VIEWS, args, nd + 2, ir_type_scalar(IR_DT_BOOL));
    IrType *type = ir_type_view(x->type, nd, IR_LAYOUT_ANY);
    return ts_ifexp(ts, pos, views, reshape_call(ts, pos, x, dims, nd, type),
                    reshape_call(ts, pos, ts_copy_array(ts, pos, x), dims, nd, type));
}

/* reshape(x, shape): one dimension may be -1. A view of a C-contiguous or 1-D x (NumPy's reshape views both);
 * of another x, a view where its strides allow one at run time, as NumPy's, else a view of a copy. */
IrNode *ts_reshape(Ts *ts, IrPos pos, IrNode *x, IrNode *shape)
{
    if (!x || !shape) return NULL;
    if (x->type->kind != IR_TY_ARRAY) TS_ERR(ts, pos, "reshape needs an array, not %s", ts_type_name(x->type));
    IrNode **dims;
    int nd = ts_shape_arg(ts, shape, &dims);
    if (nd <= 0) TS_ERR(ts, pos, "reshape: the shape must be an int or a non-empty tuple of ints");
    if (x->type->layout != IR_LAYOUT_C && x->type->ndim != 1) return reshape_or_copy(ts, pos, x, dims, nd, false);
    return reshape_call(ts, pos, x, dims, nd, ir_type_view(x->type, nd, x->type->layout));
}

/* ravel(x): a 1-D view of x where x is C-contiguous at run time, else of a copy (np.ravel copies where
 * reshape(-1) may view: a strided 1-D x, or a[:, ::2]) */
IrNode *ts_ravel(Ts *ts, IrPos pos, IrNode *x)
{
    if (!x) return NULL;
    IrNode *all = ts_i64(ts, pos, -1);
    if (x->type->kind == IR_TY_ARRAY && x->type->layout != IR_LAYOUT_C) return reshape_or_copy(ts, pos, x, &all, 1, true);
    return ts_reshape(ts, pos, x, all);
}

/* x with a new axis of size 1 at position axis (a view) */
static IrNode *expand(Ts *ts, IrPos pos, IrNode *x, int axis)
{
    int nd = x->type->ndim;
    IrNode *v = ir_node(ts->a, IR_INDEX, pos);
    v->u.index.base = x;
    v->u.index.n = nd + 1;
    v->u.index.items = ir_nodes(ts->a, nd + 1);
    for (int i = 0; i <= nd; i++) {
        IrNode *it = ir_node(ts->a, i == axis ? IR_CONST : IR_SLICE, pos);
        it->type = i == axis ? ir_type_none() : ir_type_slice();
        v->u.index.items[i] = it;
    }
    v->type = ir_type_view(x->type, nd + 1, IR_LAYOUT_ANY);
    return v;
}

/* concatenate / stack / hstack / vstack of a tuple of arrays */
static IrNode *join(Ts *ts, IrPos pos, const char *name, IrNode *seq, int64_t axis)
{
    if (!seq) return NULL;
    if (seq->type->kind != IR_TY_TUPLE || seq->type->nelems == 0)
        TS_ERR(ts, pos, "numpy.%s() needs a non-empty tuple (or list display) of arrays", name);
    int n = seq->type->nelems;
    seq = ts_reuse(ts, seq);
    IrNode **parts = ir_nodes(ts->a, n + 1);
    IrType *t = NULL;
    for (int i = 0; i < n; i++) {
        IrType *et = seq->type->elems[i];
        if (et->kind != IR_TY_ARRAY) TS_ERR(ts, pos, "numpy.%s(): item %d is %s, not an array", name, i, ts_type_name(et));
        t = t ? ts_promote(t, ir_type_scalar(et->dtype)) : ir_type_scalar(et->dtype);
        parts[i] = ir_tuple_get(ts->a, pos, seq, i);
    }
    int nd = seq->type->elems[0]->ndim;
    bool stack = !strcmp(name, "stack");
    if (!strcmp(name, "vstack") && nd == 1) stack = true, axis = 0;
    if (!strcmp(name, "hstack")) axis = nd == 1 ? 0 : 1;
    if (!strcmp(name, "vstack") && nd > 1) axis = 0;
    int rnd = stack ? nd + 1 : nd;
    if (axis < 0) axis += rnd;
    if (axis < 0 || axis >= rnd) TS_ERR(ts, pos, "numpy.%s(): axis is out of bounds for the result's %d dimensions", name, rnd);
    for (int i = 0; i < n; i++) {
        if (seq->type->elems[i]->ndim != nd)
            TS_ERR(ts, pos, "numpy.%s(): all the input arrays must have the same number of dimensions", name);
        parts[i] = ts_cast_array(ts, pos, parts[i], t->dtype);
        if (stack) parts[i] = expand(ts, pos, parts[i], (int)axis);
    }
    parts[n] = ts_i64(ts, pos, axis);
    return ir_intrinsic_call(ts->a, pos, IR_INTR_CONCATENATE, parts, n + 1, ir_type_array(t->dtype, rnd, IR_LAYOUT_C));
}

IrNode *ts_stack(Ts *ts, IrPos pos, IrNode *seq) { return join(ts, pos, "stack", seq, 0); }
IrNode *ts_concatenate(Ts *ts, IrPos pos, IrNode *seq) { return join(ts, pos, "concatenate", seq, 0); }

/* linspace(start, stop, num=50, endpoint=True): start + i*step, and exactly stop at the end */
static IrNode *linspace(Ts *ts, Args *a)
{
    IrPos pos = a->call->pos;
    IrNode *start = ts_arg(a, 0, "start"), *stop = ts_arg(a, 1, "stop"), *num = ts_arg(a, 2, "num");
    if (!start || !stop) TS_ERR(ts, pos, "numpy.linspace() needs start and stop");
    int64_t endpoint = 1;
    const IrNode *ep = ts_kw(a, "endpoint");
    if (ep && !ts_const_int(ep, &endpoint)) TS_ERR(ts, pos, "numpy.linspace(): endpoint must be True or False");
    IrDtype dt = IR_DT_FLOAT64;
    if (!ts_dtype_arg(ts, ts_arg(a, -1, "dtype"), &dt)) TS_ERR(ts, pos, "numpy.linspace(): bad dtype");
    IrType *f64 = ir_type_scalar(IR_DT_FLOAT64), *i64 = ir_type_scalar(IR_DT_INT64);
    if (!num) num = ts_i64(ts, pos, 50);
    if (!ts_is_int_scalar(num->type)) TS_ERR(ts, pos, "numpy.linspace(): num must be an integer");
    start = ts_reuse(ts, ts_cast(ts, start, f64));
    stop = ts_reuse(ts, ts_cast(ts, stop, f64));
    num = ts_reuse(ts, ts_scalar_binop(ts, pos, IR_OP_MAX, ts_cast(ts, num, i64), ts_i64(ts, pos, 0)));
    IrNode *div = endpoint ? ts_scalar_binop(ts, pos, IR_OP_SUB, num, ts_i64(ts, pos, 1)) : num;
    div = ts_scalar_binop(ts, pos, IR_OP_MAX, div, ts_i64(ts, pos, 1));
    IrNode *step = ts_reuse(ts, ts_scalar_binop(ts, pos, IR_OP_DIV, ts_scalar_binop(ts, pos, IR_OP_SUB, stop, start), ts_cast(ts, div, f64)));
    IrNode *m = ts_make_imap(ts, pos, &num, 1);
    ts->cond_depth++;
    IrNode *i = ts_var(ts, pos, m->u.imap.idx[0]);
    IrNode *v = ts_scalar_binop(ts, pos, IR_OP_ADD, start, ts_scalar_binop(ts, pos, IR_OP_MUL, ts_cast(ts, i, f64), step));
    if (endpoint) {
        IrNode *last = ir_node(ts->a, IR_IFEXP, pos);
        last->type = f64;
        /* the last of two or more is exactly stop (one point is start, as NumPy has it) */
        IrNode *is_last = ts_compare(ts, pos, IR_CMP_EQ, i, ts_scalar_binop(ts, pos, IR_OP_SUB, num, ts_i64(ts, pos, 1)));
        IrNode *several = ts_compare(ts, pos, IR_CMP_GT, num, ts_i64(ts, pos, 1));
        last->u.ifexp.cond = ts_scalar_binop(ts, pos, IR_OP_BITAND, is_last, several);
        last->u.ifexp.then = stop;
        last->u.ifexp.orelse = v;
        v = last;
    }
    m->u.imap.body = ts_cast(ts, v, ir_type_scalar(dt));
    ts->cond_depth--;
    if (!m->u.imap.body) return NULL;
    m->type = ir_type_array(dt, 1, IR_LAYOUT_C);
    return m;
}

/* eye(N, M=None, k=0, dtype=float64): ones on the k-th diagonal */
static IrNode *eye(Ts *ts, Args *a, bool identity)
{
    IrPos pos = a->call->pos;
    IrType *i64 = ir_type_scalar(IR_DT_INT64);
    IrNode *rows = ts_arg(a, 0, "N"), *cols = identity ? NULL : ts_arg(a, 1, "M"), *k = identity ? NULL : ts_arg(a, 2, "k");
    if (!rows || !ts_is_int_scalar(rows->type)) TS_ERR(ts, pos, "numpy.%s() needs an integer size", identity ? "identity" : "eye");
    rows = ts_reuse(ts, ts_cast(ts, rows, i64));
    if (!cols || cols->type->kind == IR_TY_NONE) cols = rows;
    if (!k) k = ts_i64(ts, pos, 0);
    IrDtype dt = IR_DT_FLOAT64;
    if (!ts_dtype_arg(ts, ts_arg(a, identity ? 1 : 3, "dtype"), &dt)) TS_ERR(ts, pos, "numpy.eye(): bad dtype");
    IrNode *dims[2] = {rows, ts_cast(ts, cols, i64)};
    k = ts_reuse(ts, ts_cast(ts, k, i64));
    IrNode *m = ts_make_imap(ts, pos, dims, 2);
    ts->cond_depth++;
    IrNode *diff = ts_scalar_binop(ts, pos, IR_OP_SUB, ts_var(ts, pos, m->u.imap.idx[1]), ts_var(ts, pos, m->u.imap.idx[0]));
    m->u.imap.body = ts_cast(ts, ts_compare(ts, pos, IR_CMP_EQ, diff, k), ir_type_scalar(dt));
    ts->cond_depth--;
    if (!m->u.imap.body) return NULL;
    m->type = ir_type_array(dt, 2, IR_LAYOUT_C);
    return m;
}

IrNode *ts_numpy_shape(Ts *ts, Args *a, const char *name, bool *handled)
{
    IrPos pos = a->call->pos;
    *handled = true;
    if (!strcmp(name, "reshape")) return ts_reshape(ts, pos, ts_arg(a, 0, "a"), ts_arg(a, 1, "newshape"));
    if (!strcmp(name, "ravel")) {
        if (!ts_check_args(ts, a, name, 1, 1)) return NULL;
        return ts_ravel(ts, pos, a->pos[0]);
    }
    if (!strcmp(name, "concatenate") || !strcmp(name, "stack") || !strcmp(name, "hstack") || !strcmp(name, "vstack")) {
        int64_t axis = 0;
        const IrNode *ax = a->call->u.call.nargs > 1 ? a->call->u.call.args[1] : ts_kw(a, "axis");
        if (ax && !ts_const_int(ax, &axis)) TS_ERR(ts, pos, "numpy.%s(): axis must be a constant integer", name);
        return join(ts, pos, name, ts_arg(a, 0, "arrays"), axis);
    }
    if (!strcmp(name, "expand_dims")) {
        int64_t axis;
        IrNode *x = ts_arg(a, 0, "a");
        const IrNode *ax = a->call->u.call.nargs > 1 ? a->call->u.call.args[1] : ts_kw(a, "axis");
        if (!x || x->type->kind != IR_TY_ARRAY || !ax || !ts_const_int(ax, &axis))
            TS_ERR(ts, pos, "numpy.expand_dims() needs an array and a constant axis");
        if (axis < 0) axis += x->type->ndim + 1;
        if (axis < 0 || axis > x->type->ndim) TS_ERR(ts, pos, "numpy.expand_dims(): axis is out of bounds");
        return expand(ts, pos, x, (int)axis);
    }
    if (!strcmp(name, "linspace")) return linspace(ts, a);
    if (!strcmp(name, "eye") || !strcmp(name, "identity")) return eye(ts, a, name[0] == 'i');
    *handled = false;
    return NULL;
}
