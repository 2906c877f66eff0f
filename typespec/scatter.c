/* scatter.c: assignment through integer index arrays (a[idx] = v, m[idx] = rows, m[rows, cols] = v,
 * m[idx, j] = v), as loops in the typed IR that every backend runs as it runs any loop.
 *
 * The forms: the index items are 1-D integer arrays and integers, at least one array, then full slices (or
 * nothing) for the remaining axes. The arrays broadcast together (each has the length n of the longest, or 1);
 * the result of the indexing has shape (n, the remaining axes...), and the value broadcasts to it, as NumPy's.
 * NumPy's order of events is kept: the value, the integer indices (IndexError), then the shapes (index arrays
 * that do not broadcast: IndexError; a value that does not broadcast: ValueError), then every element of the
 * index arrays checked (IndexError, the first bad element of the first array that has one), and only then any
 * write. A repeated index is written by each of its positions
 * in turn, so the last one stays, as in NumPy. The index arrays and an array value are read from copies unless
 * they are new arrays already: either may share the target's memory (a[a[:3]] = a[1:4]), and NumPy copies
 * overlapping operands too. Index arrays of more than one dimension, slices before or between the arrays, and
 * None are CompileErrors. */
#include "ts_internal.h"

static bool is_int_array(const IrType *t)
{
    return t->kind == IR_TY_ARRAY && ir_dtype_is_int(t->dtype) && t->dtype != IR_DT_BOOL;
}

static bool is_full_slice(const IrNode *s)
{
    return s->kind == IR_SLICE && !s->u.slice.start && !s->u.slice.stop && !s->u.slice.step;
}

IrNode *ts_scatter_target(Ts *ts, IrPos pos, IrNode *base, IrNode **items, int n)
{
    int last_index = -1;
    for (int i = 0; i < n; i++) {
        const IrType *t = items[i]->type;
        if (items[i]->kind == IR_SLICE) continue;
        if (t->kind == IR_TY_NONE) TS_ERR(ts, pos, "assigning through index arrays with None in the index is not supported");
        if (t->kind == IR_TY_ARRAY && !is_int_array(t))
            TS_ERR(ts, pos, "a boolean mask must be the only index of an assignment through it");
        if (t->kind == IR_TY_ARRAY && t->ndim != 1)
            TS_ERR(ts, pos, "assigning through index arrays of %d dimensions is not supported (1-D index arrays are)", t->ndim);
        last_index = i;
    }
    for (int i = 0; i < last_index; i++)
        if (items[i]->kind == IR_SLICE)
            TS_ERR(ts, pos, "assigning through index arrays is supported with the arrays (and integers) first and "
                            "full slices after them; a slice before an index array is not supported");
    for (int i = last_index + 1; i < n; i++)
        if (!is_full_slice(items[i]))
            TS_ERR(ts, pos, "assigning through index arrays is supported with full slices (:) after them, not other slices");
    IrNode *r = ir_node(ts->a, IR_INDEX, pos);
    r->u.index.base = base;
    r->u.index.items = items;
    r->u.index.n = last_index + 1; /* the full slices after the arrays are the remaining axes */
    r->type = ir_type_scalar(base->type->dtype); /* a store target only: ts_store calls ts_index_array_store */
    return r;
}

/* for k in range(stop): body, k a new int64 temporary; the body's own evaluations land in its block */
static IrNode *loop_over(Ts *ts, IrPos pos, IrNode *stop, IrVar **k)
{
    *k = ir_func_temp(ts->dst, ir_type_scalar(IR_DT_INT64));
    IrNode *loop = ir_node(ts->a, IR_FOR_RANGE, pos);
    loop->u.for_range.var = *k;
    loop->u.for_range.start = ts_i64(ts, pos, 0);
    loop->u.for_range.stop = stop;
    loop->u.for_range.step = ts_i64(ts, pos, 1);
    return loop;
}

static IrNode *row_of(Ts *ts, IrPos pos, IrNode *x, IrVar *k);

/* Every index of item i (an array, or an integer) in range for axis i of base, before anything is written: the
 * IndexError of its first element out of range, with NumPy's words (raise intrinsic, RT_ERR_INDEX). An array's
 * elements are those the n positions of the broadcast index read (none when n is 0, as NumPy checks none). */
static bool check_item(Ts *ts, IrPos pos, IrNode *base, IrNode *item, int axis, IrNode *n)
{
    IrNode *size = ts_dim(ts, pos, base, axis);
    IrVar *k = NULL;
    IrNode *loop = NULL, *at = item;
    if (item->type->kind == IR_TY_ARRAY) {
        loop = loop_over(ts, pos, ir_copy(ts->a, n, NULL), &k);
        if (!(at = row_of(ts, pos, item, k))) return false;
    }
    IrType *i64 = ir_type_scalar(IR_DT_INT64);
    IrNode *v = ts_cast(ts, at, i64);
    IrNode *bad = v ? ts_bool2(ts, pos, false, ts_compare(ts, pos, IR_CMP_LT, v, ts_scalar_binop(ts, pos, IR_OP_SUB, ts_i64(ts, pos, 0), size)),
                             ts_compare(ts, pos, IR_CMP_GE, ir_copy(ts->a, v, NULL), ir_copy(ts->a, size, NULL))) : NULL;
    IrNode *raise = v ? ts_raise(ts, pos, RT_ERR_INDEX, ir_copy(ts->a, v, NULL), ir_copy(ts->a, size, NULL), ts_i64(ts, pos, axis),
                                 ir_type_none()) : NULL;
    if (!bad || !raise) return false;
    IrNode *iff = ir_node(ts->a, IR_IF, pos), *st = ir_node(ts->a, IR_EXPR_STMT, pos);
    iff->u.if_.cond = bad;
    st->u.expr_stmt.value = raise;
    ir_block_push(ts->a, &iff->u.if_.then, st);
    ir_block_push(ts->a, loop ? &loop->u.for_range.body : ts->pre, iff);
    if (loop) ir_block_push(ts->a, ts->pre, loop);
    return true;
}

/* x[k], or x[0] where x has length 1 (broadcast): a scalar of a 1-D x, a view of its other axes otherwise */
static IrNode *row_of(Ts *ts, IrPos pos, IrNode *x, IrVar *k)
{
    IrNode *sel = ts_ifexp(ts, pos, ts_compare(ts, pos, IR_CMP_EQ, ts_dim(ts, pos, x, 0), ts_i64(ts, pos, 1)), ts_i64(ts, pos, 0),
                        ts_var(ts, pos, k));
    if (!sel) return NULL;
    if (x->type->ndim == 1) return ts_elem_at(ts, pos, x, sel, false);
    IrNode *r = ir_node(ts->a, IR_INDEX, pos);
    r->u.index.base = x;
    r->u.index.n = 1;
    r->u.index.items = ir_nodes(ts->a, 1);
    r->u.index.items[0] = sel;
    r->type = ir_type_view(x->type, x->type->ndim - 1, x->type->layout);
    return r;
}

IrNode *ts_index_array_store(Ts *ts, const IrNode *s, IrNode *dst, IrNode *value)
{
    IrPos pos = s->pos;
    IrNode *base = ts_reuse(ts, dst->u.index.base);
    int m = dst->u.index.n, nd = base->type->ndim, rest = nd - m;
    if (!base || !(value = ts_reuse(ts, value))) return NULL; /* Python evaluates the value first */
    IrNode **items = ir_nodes(ts->a, m);
    for (int i = 0; i < m; i++) {
        IrNode *it = dst->u.index.items[i];
        if (it->type->kind == IR_TY_ARRAY && it->kind != IR_MAP && it->kind != IR_IMAP) it = ts_make_map(ts, pos, &it, 1, NULL, NULL);
        if (!it || !(items[i] = ts_reuse(ts, it))) return NULL;
    }
    /* NumPy checks integer indices first, as it reads the index: before the value's shape */
    if (ts->sess->opts->boundscheck)
        for (int i = 0; i < m; i++)
            if (items[i]->type->kind != IR_TY_ARRAY && !check_item(ts, pos, base, items[i], i, NULL)) return NULL;
    if (!(value = ts_index_store_value(ts, pos, value, 1 + rest))) return NULL; /* (1, n) values are (n,) */
    if (value->type->kind == IR_TY_ARRAY && value->kind != IR_MAP && value->kind != IR_IMAP)
        value = ts_make_map(ts, pos, &value, 1, NULL, NULL);
    else if (value->type->kind == IR_TY_SCALAR)
        value = ts_setitem_value(ts, pos, value, base->type->dtype, NULL, false);
    if (!value || !(value = ts_reuse(ts, value))) return NULL;

    /* n, the arrays' broadcast length: each has n or 1 (NumPy's IndexError otherwise) */
    IrNode *n = NULL;
    for (int i = 0; i < m; i++) {
        if (items[i]->type->kind != IR_TY_ARRAY) continue;
        IrNode *len = ts_dim(ts, pos, items[i], 0);
        if (!n) {
            n = ts_reuse(ts, len);
            continue;
        }
        IrNode *fits = ts_bool2(ts, pos, false, ts_compare(ts, pos, IR_CMP_EQ, len, n), ts_compare(ts, pos, IR_CMP_EQ, ir_copy(ts->a, len, NULL), ts_i64(ts, pos, 1)));
        IrNode *grow = ts_ifexp(ts, pos, ts_compare(ts, pos, IR_CMP_EQ, ir_copy(ts->a, n, NULL), ts_i64(ts, pos, 1)), ir_copy(ts->a, len, NULL),
                             ts_raise(ts, pos, RT_ERR_INDEX_SHAPES, ir_copy(ts->a, n, NULL), ir_copy(ts->a, len, NULL), NULL,
                                      ir_type_scalar(IR_DT_INT64)));
        if (!(n = ts_reuse(ts, ts_ifexp(ts, pos, fits, ir_copy(ts->a, n, NULL), grow)))) return NULL;
    }
    /* the value broadcasts to (n, base's remaining axes...): NumPy's ValueError otherwise */
    if (value->type->kind == IR_TY_ARRAY) {
        int vd = value->type->ndim;
        for (int d = 0; d < vd; d++) {
            bool lead = vd == 1 + rest && d == 0;
            IrNode *want = lead ? ir_copy(ts->a, n, NULL) : ts_dim(ts, pos, base, nd - (vd - d));
            IrNode *have = ts_dim(ts, pos, value, d);
            IrNode *fits = ts_bool2(ts, pos, false, ts_compare(ts, pos, IR_CMP_EQ, have, want),
                                  ts_compare(ts, pos, IR_CMP_EQ, ir_copy(ts->a, have, NULL), ts_i64(ts, pos, 1)));
            IrNode *r = ts_raise(ts, pos, RT_ERR_SHAPE, ir_copy(ts->a, have, NULL), ir_copy(ts->a, want, NULL), ts_i64(ts, pos, vd - d),
                                 ir_type_scalar(IR_DT_INT64));
            if (!(n = ts_reuse(ts, ts_ifexp(ts, pos, fits, ir_copy(ts->a, n, NULL), r)))) return NULL;
        }
    }
    if (ts->sess->opts->boundscheck)
        for (int i = 0; i < m; i++)
            if (items[i]->type->kind == IR_TY_ARRAY && !check_item(ts, pos, base, items[i], i, n)) return NULL;

    /* for k in range(n): base[item0(k), item1(k), ..., :, ...] = value's row k */
    IrVar *k;
    IrNode *loop = loop_over(ts, pos, ir_copy(ts->a, n, NULL), &k);
    IrBlock *outer = ts->pre;
    ts->pre = &loop->u.for_range.body; /* what the body evaluates first stays in the loop */
    IrNode *tgt = ir_node(ts->a, IR_INDEX, pos);
    tgt->u.index.base = base;
    tgt->u.index.n = nd;
    tgt->u.index.items = ir_nodes(ts->a, nd);
    tgt->u.index.checked = ts->sess->opts->boundscheck;
    for (int i = 0; i < m; i++) {
        IrNode *at = items[i]->type->kind == IR_TY_ARRAY ? row_of(ts, pos, items[i], k) : ir_copy(ts->a, items[i], NULL);
        if (!at || !(tgt->u.index.items[i] = ts_cast(ts, at, ir_type_scalar(IR_DT_INT64)))) goto fail;
    }
    for (int d = m; d < nd; d++) {
        IrNode *all = ir_node(ts->a, IR_SLICE, pos);
        all->type = ir_type_slice();
        tgt->u.index.items[d] = all;
    }
    IrNode *v = value;
    if (value->type->kind == IR_TY_ARRAY && value->type->ndim == 1 + rest && !(v = row_of(ts, pos, value, k))) goto fail;
    IrNode *st;
    if (rest == 0) {
        tgt->u.index.n = m;
        tgt->type = ir_type_scalar(base->type->dtype);
        st = ir_node(ts->a, IR_STORE, pos);
        st->u.store.target = tgt;
        if (!(st->u.store.value = ts_cast(ts, v, tgt->type))) goto fail;
    } else {
        tgt->type = ir_type_view(base->type, rest, base->type->layout);
        IrNode *map = ts_make_map_into(ts, pos, tgt, &v, 1, NULL, NULL);
        if (!map) goto fail;
        st = ir_node(ts->a, IR_EXPR_STMT, pos);
        st->u.expr_stmt.value = map;
    }
    ir_block_push(ts->a, &loop->u.for_range.body, st);
    ts->pre = outer;
    return loop;
fail:
    ts->pre = outer;
    return NULL;
}
