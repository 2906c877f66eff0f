/* map.c: construction of the data-parallel nodes. Every array operation of the user's program goes through
 * here, so the IR has one shape for it: IR_MAP over broadcast inputs with a scalar body, IR_REDUCE over an
 * array expression, IR_ALLOC for new arrays. */
#include "ts_internal.h"

IrType *ts_elem_type(IrType *t)
{
    return t->kind == IR_TY_ARRAY ? ir_type_scalar(t->dtype) : t;
}

/* Bind one scalar parameter per input and build the body over them. Inside a body nothing may be hoisted
 * (it refers to the params), hence cond_depth. */
static IrNode *build_map(Ts *ts, IrPos pos, IrNode **inputs, int n, TsElemFn fn, void *env, int *ndim_out)
{
    IrNode *m = ir_node(ts->a, IR_MAP, pos);
    m->u.map.nparams = m->u.map.ninputs = n;
    m->u.map.params = rt_arena_alloc(ts->a, sizeof(IrVar *) * (size_t)(n ? n : 1));
    m->u.map.inputs = ir_nodes(ts->a, n);
    IrNode **elems = ir_nodes(ts->a, n);
    int ndim = 0;
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (!inputs[i]) return NULL;
        IrType *t = inputs[i]->type;
        if (t->kind != IR_TY_ARRAY && t->kind != IR_TY_SCALAR)
            TS_ERR(ts, inputs[i]->pos, "an array operation cannot take %s", ts_type_name(t));
        if (t->kind == IR_TY_ARRAY && t->ndim > ndim) ndim = t->ndim;
        if (inputs[i]->kind == IR_CONST) {
            elems[i] = inputs[i]; /* a constant goes into the body itself: it folds there, and NEP 50 sees it */
            continue;
        }
        m->u.map.inputs[k] = inputs[i];
        m->u.map.params[k] = ir_func_temp(ts->dst, ts_elem_type(t));
        elems[i] = ts_var(ts, pos, m->u.map.params[k++]);
    }
    m->u.map.nparams = m->u.map.ninputs = k;
    if (k > IR_MAX_MAP_INPUTS)
        TS_ERR(ts, pos, "an array operation of more than %d operands is not supported (this one has %d that are not "
               "constants)", IR_MAX_MAP_INPUTS, k);
    ts->cond_depth++;
    IrNode *body = fn ? fn(ts, pos, elems, n, env) : elems[0];
    ts->cond_depth--;
    if (!body) return NULL;
    if (body->type->kind != IR_TY_SCALAR) TS_ERR(ts, pos, "an elementwise function must give a scalar, not %s", ts_type_name(body->type));
    m->u.map.body = body;
    *ndim_out = ndim;
    return m;
}

IrNode *ts_make_map(Ts *ts, IrPos pos, IrNode **inputs, int n, TsElemFn fn, void *env)
{
    int ndim;
    IrNode *m = build_map(ts, pos, inputs, n, fn, env, &ndim);
    if (!m) return NULL;
    m->u.map.body = ts_cast(ts, m->u.map.body, ir_type_strong(m->u.map.body->type));
    m->type = ir_type_array(m->u.map.body->type->dtype, ndim, IR_LAYOUT_C);
    if (ndim == 0) TS_ERR(ts, pos, "internal error: a map over no arrays");
    return m;
}

/* A check that dimension d of x is 1 (or, with or_empty, that x's last dimension is 0), else NumPy's ValueError
 * of an assignment whose value does not broadcast into its target; an int64 0 where it passes. */
static IrNode *dim_is_one(Ts *ts, IrPos pos, IrNode *x, int d, bool or_empty)
{
    IrNode *c = ir_node(ts->a, IR_IFEXP, pos);
    c->type = ir_type_scalar(IR_DT_INT64);
    c->u.ifexp.cond = ts_compare(ts, pos, IR_CMP_EQ, ts_dim(ts, pos, x, d), ts_i64(ts, pos, 1));
    if (or_empty)
        c->u.ifexp.cond = ts_bool2(ts, pos, false, c->u.ifexp.cond,
                                   ts_compare(ts, pos, IR_CMP_EQ, ts_dim(ts, pos, x, x->type->ndim - 1), ts_i64(ts, pos, 0)));
    c->u.ifexp.then = ts_i64(ts, pos, 0);
    c->u.ifexp.orelse = ts_raise(ts, pos, RT_ERR_SHAPE, ts_dim(ts, pos, x, d), ts_i64(ts, pos, 1),
                                 ts_i64(ts, pos, x->type->ndim - d), c->type);
    return c->u.ifexp.cond && c->u.ifexp.orelse ? c : NULL;
}

static IrNode *drop_leading(Ts *ts, IrPos pos, IrNode *value, int nd, bool or_empty)
{
    if (!value || value->type->kind != IR_TY_ARRAY || value->type->ndim <= nd) return value;
    int k = value->type->ndim - nd;
    IrNode *x = ts_reuse(ts, value);
    IrNode *view = ir_node(ts->a, IR_INDEX, pos);
    view->u.index.base = x;
    view->u.index.n = k;
    view->u.index.items = ir_nodes(ts->a, k);
    for (int d = 0; d < k; d++) view->u.index.items[d] = ts_i64(ts, pos, 0);
    view->u.index.checked = false; /* each of those dimensions is 1: checked first */
    view->type = nd == 0 ? ir_type_scalar(x->type->dtype) : ir_type_view(x->type, nd, IR_LAYOUT_ANY);
    IrNode *r = view;
    for (int d = k - 1; d >= 0 && r; d--) r = ts_after_effects(ts, pos, dim_is_one(ts, pos, x, d, or_empty), r);
    return r;
}

IrNode *ts_drop_leading_ones(Ts *ts, IrPos pos, IrNode *value, int nd)
{
    return drop_leading(ts, pos, value, nd, false);
}

/* The value of an index-array store (a[idx] = value) with nd dimensions at most (the indexing result's): NumPy
 * drops a taller value's leading dimensions, which it allows when they are all 1, or when its last dimension is
 * 0 (an empty value of shape (3, 0) stores nothing into a 1-D result, where a value of shape (3, 1) raises). A
 * slice store does not: its value goes through ts_drop_leading_ones. */
IrNode *ts_index_store_value(Ts *ts, IrPos pos, IrNode *value, int nd)
{
    return drop_leading(ts, pos, value, nd, true);
}

IrNode *ts_make_map_into(Ts *ts, IrPos pos, IrNode *out, IrNode **given, int n, TsElemFn fn, void *env)
{
    int ndim;
    IrNode *inputs[IR_MAX_MAP_INPUTS + 1];
    if (n > IR_MAX_MAP_INPUTS + 1) TS_ERR(ts, pos, "an array operation of more than %d operands is not supported", IR_MAX_MAP_INPUTS);
    /* NumPy's assignment drops a value's leading dimensions of length 1, checking them after the target (its
     * IndexError first): such a value and then the target are evaluated first, into variables */
    bool taller = false;
    for (int i = 0; i < n; i++) {
        if (!(inputs[i] = given[i])) return NULL;
        if (inputs[i]->type->kind == IR_TY_ARRAY && inputs[i]->type->ndim > out->type->ndim) {
            taller = true;
            inputs[i] = ts_reuse(ts, inputs[i]);
        }
    }
    if (taller && !(out = ts_reuse(ts, out))) return NULL;
    for (int i = 0; i < n; i++)
        if (!(inputs[i] = ts_drop_leading_ones(ts, pos, inputs[i], out->type->ndim))) return NULL;
    IrNode *m = build_map(ts, pos, inputs, n, fn, env, &ndim);
    if (!m) return NULL;
    if (ndim > out->type->ndim)
        TS_ERR(ts, pos, "cannot store a %d-dimensional value into a %d-dimensional array", ndim, out->type->ndim);
    if (out->type->readonly) return ts_readonly_write(ts, pos, m->u.map.inputs, m->u.map.ninputs, out->type, true);
    ts->cond_depth++;
    m->u.map.body = ts_cast(ts, m->u.map.body, ir_type_scalar(out->type->dtype));
    ts->cond_depth--;
    if (!m->u.map.body) return NULL;
    m->u.map.out = out;
    m->type = out->type;
    return m;
}

/* A new IR_IMAP over dims[nd] (int64 nodes), with an int64 index variable per dimension; the caller builds the
 * body over them (with cond_depth raised) and sets the type. */
IrNode *ts_make_imap(Ts *ts, IrPos pos, IrNode **dims, int nd)
{
    IrNode *m = ir_node(ts->a, IR_IMAP, pos);
    m->u.imap.ndim = nd;
    m->u.imap.idx = rt_arena_alloc(ts->a, sizeof(IrVar *) * (size_t)nd);
    m->u.imap.dims = ir_nodes(ts->a, nd);
    for (int d = 0; d < nd; d++) {
        m->u.imap.idx[d] = ir_func_temp(ts->dst, ir_type_scalar(IR_DT_INT64));
        m->u.imap.dims[d] = dims[d];
    }
    return m;
}

IrNode *ts_make_alloc(Ts *ts, IrPos pos, IrDtype dt, IrNode **dims, int ndim)
{
    IrNode *a = ir_node(ts->a, IR_ALLOC, pos);
    a->type = ir_type_array(dt, ndim, IR_LAYOUT_C);
    a->u.alloc.ndim = ndim;
    a->u.alloc.dims = ir_nodes(ts->a, ndim);
    for (int i = 0; i < ndim; i++)
        if (!(a->u.alloc.dims[i] = ts_cast(ts, dims[i], ir_type_scalar(IR_DT_INT64)))) return NULL;
    return a;
}

IrNode *ts_make_fill(Ts *ts, IrPos pos, IrNode *alloc, IrNode *value)
{
    IrNode *in[1] = {value};
    return ts_make_map_into(ts, pos, alloc, in, 1, NULL, NULL);
}

IrNode *ts_dim(Ts *ts, IrPos pos, IrNode *arr, int axis)
{
    IrNode *d = ir_node(ts->a, IR_ARRAY_DIM, pos);
    d->type = ir_type_scalar(IR_DT_INT64);
    d->u.array_dim.array = arr;
    d->u.array_dim.axis = axis;
    return d;
}

/* Dimension `axis` of x's shape without computing x: for a map, the broadcast of its inputs (which become
 * variables, evaluated once); for an index map, its dims; otherwise x is kept in a variable. *x may change. */
/* The array leaves of a tree of maps, each made a variable (in place), so a shape can be computed from them
 * while the maps stay expressions (to be fused). */
static int map_leaves(Ts *ts, IrNode *m, IrNode **leaves, int n, int cap)
{
    for (int i = 0; i < m->u.map.ninputs && n < cap; i++) {
        IrNode *in = m->u.map.inputs[i];
        if (in->kind == IR_MAP && !in->u.map.out) {
            n = map_leaves(ts, in, leaves, n, cap);
        } else if (in->type->kind == IR_TY_ARRAY) {
            m->u.map.inputs[i] = ts_reuse(ts, in);
            leaves[n++] = m->u.map.inputs[i];
        }
    }
    return n;
}

IrNode *ts_shape_dim(Ts *ts, IrPos pos, IrNode **x, int axis)
{
    IrNode *n = *x;
    if (n->kind == IR_MAP && !n->u.map.out && ts->cond_depth == 0) {
        IrNode **leaves = ir_nodes(ts->a, 64);
        int nl = map_leaves(ts, n, leaves, 0, 64);
        if (nl >= 64) { /* too many leaves to list: compute the array */
            *x = ts_reuse(ts, n);
            return ts_dim(ts, pos, *x, axis);
        }
        IrNode *d = ir_node(ts->a, IR_BCAST_SHAPE, pos);
        d->type = ir_type_scalar(IR_DT_INT64);
        d->u.bcast_shape.args = leaves;
        d->u.bcast_shape.n = nl;
        d->u.bcast_shape.axis = axis;
        d->u.bcast_shape.ndim = n->type->ndim;
        return d;
    }
    if (n->kind == IR_IMAP && !n->u.imap.out && ts->cond_depth == 0) {
        n->u.imap.dims[axis] = ts_reuse(ts, n->u.imap.dims[axis]);
        return n->u.imap.dims[axis];
    }
    *x = ts_reuse(ts, n);
    return ts_dim(ts, pos, *x, axis);
}

IrNode *ts_array_size(Ts *ts, IrPos pos, IrNode *arr)
{
    IrNode *size = ts_i64(ts, pos, 1);
    for (int i = 0; i < arr->type->ndim; i++) {
        IrNode *d = ir_node(ts->a, IR_ARRAY_DIM, pos);
        d->type = ir_type_scalar(IR_DT_INT64);
        d->u.array_dim.array = arr;
        d->u.array_dim.axis = i;
        size = i == 0 ? d : ts_scalar_binop(ts, pos, IR_OP_MUL, size, d);
    }
    return size;
}

static IrNode *elem_cast(Ts *ts, IrPos pos, IrNode **e, int n, void *env)
{
    return ts_cast(ts, e[0], (IrType *)env);
}

IrNode *ts_cast_array(Ts *ts, IrPos pos, IrNode *x, IrDtype dt)
{
    if (!x || x->type->dtype == dt) return x;
    IrNode *in[1] = {x};
    return ts_make_map(ts, pos, in, 1, elem_cast, ir_type_scalar(dt));
}

/* A new C-contiguous copy of x. */
IrNode *ts_copy_array(Ts *ts, IrPos pos, IrNode *x)
{
    IrNode *in[1] = {x};
    return ts_make_map(ts, pos, in, 1, NULL, NULL);
}

/* Reduce x with op. axis -1 reduces everything to a scalar of type acc; otherwise the result is an array
 * without that axis (keepdims: with it, of size 1). The input is converted to acc elementwise first, a map the
 * backend fuses into the reduction's loop. */
IrNode *ts_make_reduce(Ts *ts, IrPos pos, IrReduceOp op, IrNode *x, int axis, bool keepdims, IrType *acc)
{
    if (!x) return NULL;
    if (x->type->kind != IR_TY_ARRAY) TS_ERR(ts, pos, "a reduction needs an array, not %s", ts_type_name(x->type));
    int ndim = x->type->ndim;
    if (axis < -1 || axis >= ndim) TS_ERR(ts, pos, "axis %d is out of bounds for an array of dimension %d", axis, ndim);
    if ((op == IR_RED_ADD || op == IR_RED_MUL) && acc->dtype == IR_DT_FLOAT16) {
        /* NumPy's float16 add and multiply reductions accumulate in float32 and round once, at the end */
        IrNode *r = ts_make_reduce(ts, pos, op, x, axis, keepdims, ir_type_scalar(IR_DT_FLOAT32));
        if (!r) return NULL;
        return ts_is_array(r) ? ts_cast_array(ts, pos, r, IR_DT_FLOAT16) : ts_cast(ts, r, acc);
    }
    bool is_arg = op == IR_RED_ARGMIN || op == IR_RED_ARGMAX;
    if (!is_arg && op != IR_RED_FUNC && x->type->dtype != acc->dtype) {
        IrNode *in[1] = {x};
        x = ts_make_map(ts, pos, in, 1, elem_cast, acc);
        if (!x) return NULL;
    }
    IrNode *r = ir_node(ts->a, IR_REDUCE, pos);
    r->u.reduce.op = op;
    r->u.reduce.input = x;
    r->u.reduce.axis = (axis >= 0 && ndim == 1) ? -1 : axis;
    IrDtype rdt = is_arg ? IR_DT_INT64 : acc->dtype;
    if (r->u.reduce.axis < 0) {
        r->type = ir_type_scalar(rdt);
        if (!keepdims) return r;
        /* keepdims on a full reduction: an array of ndim ones */
        IrNode **dims = ir_nodes(ts->a, ndim);
        for (int i = 0; i < ndim; i++) dims[i] = ts_i64(ts, pos, 1);
        return ts_make_fill(ts, pos, ts_make_alloc(ts, pos, rdt, dims, ndim), r);
    }
    r->type = ir_type_array(rdt, ndim - 1, IR_LAYOUT_C);
    if (!keepdims) return r;
    /* keepdims: view the result with a new axis of size 1 where the reduced one was */
    IrNode *red = ts_reuse(ts, r);
    IrNode *v = ir_node(ts->a, IR_INDEX, pos);
    v->u.index.base = red;
    v->u.index.n = axis + 1;
    v->u.index.items = ir_nodes(ts->a, axis + 1);
    for (int i = 0; i < axis; i++) {
        IrNode *s = ir_node(ts->a, IR_SLICE, pos);
        s->type = ir_type_slice();
        v->u.index.items[i] = s;
    }
    IrNode *none = ir_node(ts->a, IR_CONST, pos);
    none->type = ir_type_none();
    v->u.index.items[axis] = none;
    v->type = ir_type_array(rdt, ndim, IR_LAYOUT_ANY);
    return v;
}

/* Inclusive scan (cumsum: IR_RED_ADD, cumprod: IR_RED_MUL) of x converted to acc; axis -1 flattens. */
IrNode *ts_make_scan(Ts *ts, IrPos pos, IrReduceOp op, IrNode *x, int axis, IrType *acc)
{
    if (!x) return NULL;
    if (x->type->kind != IR_TY_ARRAY) TS_ERR(ts, pos, "a scan needs an array, not %s", ts_type_name(x->type));
    int ndim = x->type->ndim;
    if (axis < -1 || axis >= ndim) TS_ERR(ts, pos, "axis %d is out of bounds for an array of dimension %d", axis, ndim);
    if (op != IR_RED_FUNC) x = ts_cast_array(ts, pos, x, acc->dtype);
    IrNode *s = ir_node(ts->a, IR_SCAN, pos);
    s->u.scan.op = op;
    s->u.scan.input = x;
    s->u.scan.axis = (axis >= 0 && ndim == 1) ? -1 : axis;
    s->type = ir_type_array(acc->dtype, s->u.scan.axis < 0 ? 1 : ndim, IR_LAYOUT_C);
    return s;
}
