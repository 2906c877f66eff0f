/* index.c: subscripts (elements, views, tuple items), array attributes, and stores into arrays.
 * Indexing an array with integers and slices gives an element or a view that shares memory, as in NumPy. */
#include <string.h>
#include "ts_internal.h"

/* An untyped integer constant, possibly negated: what tuple indices must be. */
static bool const_int(const IrNode *n, int64_t *v)
{
    if (n->kind == IR_CONST && n->type && n->type->kind == IR_TY_SCALAR && ir_dtype_is_int(n->type->dtype)) {
        *v = n->u.konst.i;
        return true;
    }
    if (n->kind == IR_UNOP && n->u.unop.op == IR_UOP_NEG && const_int(n->u.unop.operand, v)) {
        *v = -*v;
        return true;
    }
    return false;
}

static IrNode *index_tuple(Ts *ts, const IrNode *n, IrNode *tup)
{
    int len = tup->type->nelems;
    if (n->u.index.n != 1) TS_ERR(ts, n->pos, "a tuple takes one index");
    const IrNode *item = n->u.index.items[0];
    int64_t k;
    if (const_int(item, &k)) {
        if (k < 0) k += len;
        if (k < 0 || k >= len) TS_ERR(ts, n->pos, "tuple index out of range (a tuple of %d)", len);
        return ir_tuple_get(ts->a, n->pos, tup, (int)k);
    }
    if (item->kind == IR_SLICE) {
        int64_t b[3] = {0, len, 1};
        const IrNode *parts[3] = {item->u.slice.start, item->u.slice.stop, item->u.slice.step};
        for (int i = 0; i < 3; i++)
            if (parts[i] && !const_int(parts[i], &b[i])) TS_ERR(ts, n->pos, "a tuple can only be sliced with constants");
        if (b[2] != 1) TS_ERR(ts, n->pos, "tuple slices with a step are not supported");
        for (int i = 0; i < 2; i++) {
            if (b[i] < 0) b[i] += len;
            b[i] = b[i] < 0 ? 0 : b[i] > len ? len : b[i];
        }
        IrNode *src = ts_reuse(ts, tup);
        IrNode *r = ir_node(ts->a, IR_TUPLE, n->pos);
        int cnt = b[1] > b[0] ? (int)(b[1] - b[0]) : 0;
        r->u.tuple.n = cnt;
        r->u.tuple.items = ir_nodes(ts->a, cnt);
        IrType **elems = rt_arena_alloc(ts->a, sizeof(IrType *) * (size_t)(cnt ? cnt : 1));
        for (int i = 0; i < cnt; i++) {
            r->u.tuple.items[i] = ir_tuple_get(ts->a, n->pos, src, (int)b[0] + i);
            elems[i] = r->u.tuple.items[i]->type;
        }
        r->type = ir_type_tuple(elems, cnt);
        return r;
    }
    TS_ERR(ts, n->pos, "a tuple can only be indexed with a constant integer");
}

static IrNode *typed_slice(Ts *ts, const IrNode *s)
{
    IrNode *r = ir_node(ts->a, IR_SLICE, s->pos);
    r->type = ir_type_slice();
    const IrNode *parts[3] = {s->u.slice.start, s->u.slice.stop, s->u.slice.step};
    IrNode **out[3] = {&r->u.slice.start, &r->u.slice.stop, &r->u.slice.step};
    for (int i = 0; i < 3; i++) {
        if (!parts[i]) continue;
        IrNode *p = ts_expr(ts, parts[i]);
        if (!p) return NULL;
        if (p->type->kind == IR_TY_NONE) continue;
        if (!ts_is_int_scalar(p->type)) TS_ERR(ts, p->pos, "slice indices must be integers, not %s", ts_type_name(p->type));
        *out[i] = ts_cast(ts, p, ir_type_scalar(IR_DT_INT64));
    }
    return r;
}

/* slice(stop), slice(start, stop[, step]) as a value. Of constant parts (ints or None) it has a type of its own
 * (ir_type_slice_const), so it can be held in a variable, passed to a function (which is specialised on it) and
 * used as an index there; of other parts it is an IR_SLICE usable only as an index where it is written. */
IrNode *ts_slice_value(Ts *ts, Args *a)
{
    IrPos pos = a->call->pos;
    if (!ts_check_args(ts, a, "slice", 1, 3)) return NULL;
    const IrNode *raw[3] = {NULL, a->call->u.call.args[0], NULL};
    IrNode *typed[3] = {NULL, a->pos[0], NULL};
    if (a->npos > 1) {
        raw[0] = raw[1], typed[0] = typed[1];
        raw[1] = a->call->u.call.args[1], typed[1] = a->pos[1];
        if (a->npos > 2) raw[2] = a->call->u.call.args[2], typed[2] = a->pos[2];
    }
    IrNode *r = ir_node(ts->a, IR_SLICE, pos);
    IrNode **out[3] = {&r->u.slice.start, &r->u.slice.stop, &r->u.slice.step};
    unsigned has = 0;
    int64_t at[3] = {0, 0, 0};
    bool constant = true;
    for (int k = 0; k < 3; k++) {
        if (!typed[k] || typed[k]->type->kind == IR_TY_NONE) continue;
        if (!ts_is_int_scalar(typed[k]->type) || typed[k]->type->dtype == IR_DT_BOOL)
            TS_ERR(ts, typed[k]->pos, "slice indices must be integers or None, not %s", ts_type_name(typed[k]->type));
        if (ts_const_int(raw[k], &at[k])) has |= 1u << k;
        else constant = false;
        *out[k] = ts_cast(ts, typed[k], ir_type_scalar(IR_DT_INT64));
    }
    if (constant && (has >> 2 & 1) && at[2] == 0) TS_ERR(ts, pos, "slice step cannot be zero");
    if (!constant) {
        r->type = ir_type_slice();
        return r;
    }
    IrNode *c = ir_node(ts->a, IR_CONST, pos); /* a value whose type says everything, as a dtype's */
    c->type = ir_type_slice_const(has, at);
    return c;
}

static bool holds_varying_slice(const IrType *t)
{
    if (t->kind == IR_TY_SLICE) return !t->slice_const;
    for (int i = 0; t->kind == IR_TY_TUPLE && i < t->nelems; i++)
        if (holds_varying_slice(t->elems[i])) return true;
    return false;
}

IrNode *ts_no_slice_value(Ts *ts, IrNode *v)
{
    if (v && holds_varying_slice(v->type))
        TS_ERR(ts, v->pos, "a slice whose parts are not constants can only be used as an index where it is written "
               "(a[slice(i, j)]): pass i and j instead");
    return v;
}

/* An index item that is a slice value of constant parts (a variable, a parameter): the IR_SLICE it stands for. */
static IrNode *slice_of_value(Ts *ts, IrNode *t)
{
    const IrType *st = t->type;
    IrNode *r = ir_node(ts->a, IR_SLICE, t->pos);
    r->type = ir_type_slice();
    IrNode **out[3] = {&r->u.slice.start, &r->u.slice.stop, &r->u.slice.step};
    for (int k = 0; k < 3; k++)
        if (st->slice_has >> k & 1) *out[k] = ts_i64(ts, t->pos, st->slice_at[k]);
    return r;
}

static bool is_full_slice(const IrNode *s)
{
    return s->kind == IR_SLICE && !s->u.slice.start && !s->u.slice.stop && !s->u.slice.step;
}

static bool is_unit_slice(const IrNode *s)
{
    if (s->kind != IR_SLICE) return false;
    const IrNode *st = s->u.slice.step;
    return !st || (st->kind == IR_CONST && st->u.konst.i == 1);
}

/* The view keeps C layout when it is a block of whole rows: integers first, then at most one slice of unit
 * step, then only full slices, and no new axes. */
static IrLayout view_layout(IrNode *base, IrNode **items, int n)
{
    if (base->type->layout != IR_LAYOUT_C) return IR_LAYOUT_ANY;
    int i = 0;
    while (i < n && items[i]->kind != IR_SLICE && items[i]->type->kind != IR_TY_NONE) i++;
    if (i < n && items[i]->kind == IR_SLICE) {
        if (!is_unit_slice(items[i])) return IR_LAYOUT_ANY;
        i++;
    }
    for (; i < n; i++)
        if (!is_full_slice(items[i])) return IR_LAYOUT_ANY;
    return IR_LAYOUT_C;
}

/* base[item], one index into a 1-D array (or a mask's element-wise store target): an element of base's dtype */
IrNode *ts_elem_at(Ts *ts, IrPos pos, IrNode *base, IrNode *item, bool checked)
{
    IrNode *r = ir_node(ts->a, IR_INDEX, pos);
    r->u.index.base = base;
    r->u.index.n = 1;
    r->u.index.items = ir_nodes(ts->a, 1);
    r->u.index.items[0] = item;
    r->u.index.checked = checked;
    r->type = ir_type_scalar(base->type->dtype);
    return r;
}

/* base[mask], mask a boolean array of base's shape: the selected elements in C order, a new 1-D array */
IrNode *ts_mask_select(Ts *ts, IrPos pos, IrNode *base, IrNode *mask)
{
    IrNode *args[2] = {base, mask};
    return ir_intrinsic_call(ts->a, pos, IR_INTR_MASK_SELECT, args, 2, ir_type_array(base->type->dtype, 1, IR_LAYOUT_C));
}

static IrNode *elem_gather(Ts *ts, IrPos pos, IrNode **e, int n, void *env)
{
    IrNode *base = env;
    IrNode *r = ir_node(ts->a, IR_INDEX, pos);
    r->u.index.base = base;
    r->u.index.n = n;
    r->u.index.items = ir_nodes(ts->a, n);
    for (int i = 0; i < n; i++)
        if (!(r->u.index.items[i] = ts_cast(ts, e[i], ir_type_scalar(IR_DT_INT64)))) return NULL;
    r->u.index.checked = ts->sess->opts->boundscheck;
    r->type = ir_type_scalar(base->type->dtype);
    return r;
}

/* a[mask] (a boolean array of a's shape: the selected elements, 1-D) and a[i, j, ...] with integer arrays
 * (broadcast together: a map whose body reads a at those indices). Reading only. */
static IrNode *fancy_index(Ts *ts, IrPos pos, IrNode *base, IrNode **items, int n)
{
    int ndim = base->type->ndim;
    if (n == 1 && items[0]->type->kind == IR_TY_ARRAY && items[0]->type->dtype == IR_DT_BOOL) {
        if (items[0]->type->ndim != ndim)
            TS_ERR(ts, pos, "a boolean index must have the indexed array's %d dimensions", ndim);
        return ts_mask_select(ts, pos, base, items[0]);
    }
    if (n == 1 && items[0]->type->kind == IR_TY_ARRAY && items[0]->type->ndim == 1 && ir_dtype_is_int(items[0]->type->dtype) && ndim > 1) {
        /* m[rows]: an index map over (len(rows), m.shape[1], ...) reading m[rows[i], j, ...] */
        IrNode *b = ts_reuse(ts, base), *rows = ts_reuse(ts, items[0]);
        IrNode **dims = ir_nodes(ts->a, ndim);
        for (int d = 0; d < ndim; d++) dims[d] = ts_dim(ts, pos, d == 0 ? rows : b, d);
        IrNode *m = ts_make_imap(ts, pos, dims, ndim);
        IrNode *row = ts_elem_at(ts, pos, rows, ts_var(ts, pos, m->u.imap.idx[0]), false);
        IrNode *get = ir_node(ts->a, IR_INDEX, pos);
        get->u.index.base = b;
        get->u.index.n = ndim;
        get->u.index.items = ir_nodes(ts->a, ndim);
        get->u.index.items[0] = ts_cast(ts, row, ir_type_scalar(IR_DT_INT64));
        for (int d = 1; d < ndim; d++) get->u.index.items[d] = ts_var(ts, pos, m->u.imap.idx[d]);
        get->u.index.checked = ts->sess->opts->boundscheck;
        get->type = ir_type_scalar(base->type->dtype);
        m->u.imap.body = get;
        m->type = ir_type_array(base->type->dtype, ndim, IR_LAYOUT_C);
        return m;
    }
    if (n != ndim)
        TS_ERR(ts, pos, "indexing with integer arrays needs one index per dimension (%d), or one 1-D array of rows; mixing them with slices is not supported yet", ndim);
    for (int i = 0; i < n; i++) {
        IrType *t = items[i]->type;
        if (!((t->kind == IR_TY_ARRAY && ir_dtype_is_int(t->dtype)) || (t->kind == IR_TY_SCALAR && ts_is_int_scalar(t) && t->dtype != IR_DT_BOOL)))
            TS_ERR(ts, pos, "index %d: only integer arrays, integers or one boolean mask can index an array this way", i);
    }
    IrNode *b = ts_reuse(ts, base);
    return ts_make_map(ts, pos, items, n, elem_gather, b);
}

/* The target of a[mask] = value: an element store whose one index is the boolean array (the backend stores the
 * value wherever the mask is set, and raises IndexError for a mask of another shape, as NumPy does). */
static IrNode *mask_target(Ts *ts, IrPos pos, IrNode *base, IrNode *mask, int nitems)
{
    if (mask->type->dtype != IR_DT_BOOL)
        TS_ERR(ts, pos, "arrays used as indices must be of integer (or boolean) type, not %s", ir_dtype_name(mask->type->dtype));
    if (nitems != 1) TS_ERR(ts, pos, "a boolean mask must be the only index of an assignment through it");
    /* a mask that may share a's memory (a view of a itself, for a bool or 8-bit a) is copied first, as NumPy
     * reads the whole mask before it writes */
    if (ir_dtype_size(base->type->dtype) == 1 && mask->kind != IR_MAP && mask->kind != IR_IMAP) {
        mask = ts_make_map(ts, pos, &mask, 1, NULL, NULL);
        if (!mask) return NULL;
    }
    if (mask->type->ndim != base->type->ndim)
        TS_ERR(ts, pos, "a boolean index must have the indexed array's %d dimensions", base->type->ndim);
    return ts_elem_at(ts, pos, base, mask, false); /* the mask's shape is checked instead */
}

/* items[at], an ellipsis, as the `count` full slices it stands for (none when the other items take every axis) */
static IrNode **expand_ellipsis(Ts *ts, IrNode **items, int *n, int at, int count, IrPos pos)
{
    if (count < 0) count = 0;
    IrNode **out = ir_nodes(ts->a, *n - 1 + count);
    int k = 0;
    for (int i = 0; i < *n; i++) {
        if (i != at) {
            out[k++] = items[i];
            continue;
        }
        for (int j = 0; j < count; j++) {
            IrNode *s = ir_node(ts->a, IR_SLICE, pos);
            s->type = ir_type_slice();
            out[k++] = s;
        }
    }
    *n = k;
    return out;
}

static IrNode *index_array(Ts *ts, IrPos pos, IrNode *base, IrNode *const *src_items, int nsrc, bool for_store)
{
    int ndim = base->type->ndim, used = 0, nints = 0, nnew = 0, ellipsis = -1;
    bool fancy = false;
    IrNode **items = ir_nodes(ts->a, nsrc);
    for (int i = 0; i < nsrc; i++) {
        const IrNode *it = src_items[i];
        IrNode *t;
        if (it->kind == IR_SLICE && it->u.slice.ellipsis) {
            if (ellipsis >= 0) TS_ERR(ts, it->pos, "an index can only have a single ellipsis ('...')");
            ellipsis = i;
            t = items[i] = NULL; /* its slices, once the other items have said how many axes they take */
            continue;
        } else if (it->kind == IR_SLICE) {
            t = typed_slice(ts, it);
            used++;
        } else {
            t = ts_expr(ts, it);
            if (!t) return NULL;
            if (t->type->kind == IR_TY_SLICE) {
                t = t->kind == IR_SLICE ? t : slice_of_value(ts, t); /* slice(...) here, or a slice value */
                used++;
            } else if (t->type->kind == IR_TY_NONE) {
                nnew++;
            } else if (ts_is_int_scalar(t->type) && t->type->dtype != IR_DT_BOOL) {
                t = ts_cast(ts, t, ir_type_scalar(IR_DT_INT64));
                used++;
                nints++;
            } else if (t->type->kind == IR_TY_ARRAY) {
                bool int_index = ir_dtype_is_int(t->type->dtype) && t->type->dtype != IR_DT_BOOL;
                if (for_store && !int_index) return mask_target(ts, pos, base, t, nsrc);
                fancy = true;
                used++;
            } else {
                TS_ERR(ts, it->pos, "array indices must be integers or slices, not %s", ts_type_name(t->type));
            }
        }
        if (!t) return NULL;
        items[i] = t;
    }
    if (ellipsis >= 0 && !(items = expand_ellipsis(ts, items, &nsrc, ellipsis, ndim - used, src_items[ellipsis]->pos)))
        return NULL;
    if (ellipsis >= 0 && used < ndim) used = ndim;
    if (used > ndim)
        TS_ERR(ts, pos, "too many indices for array: array is %d-dimensional, but %d were indexed", ndim, used);
    if (fancy && for_store) return ts_scatter_target(ts, pos, base, items, nsrc); /* scatter.c */
    if (fancy) {
        for (int i = 0; i < nsrc; i++)
            if (items[i]->kind == IR_SLICE || items[i]->type->kind == IR_TY_NONE)
                TS_ERR(ts, pos, "mixing index arrays with slices or None is not supported yet");
        return fancy_index(ts, pos, base, items, nsrc);
    }
    IrNode *r = ir_node(ts->a, IR_INDEX, pos);
    r->u.index.base = base;
    r->u.index.items = items;
    r->u.index.n = nsrc;
    r->u.index.checked = ts->sess->opts->boundscheck;
    int rdim = ndim - nints + nnew;
    r->type = (nints == ndim && nnew == 0) ? ir_type_scalar(base->type->dtype)
                                           : ir_type_view(base->type, rdim, view_layout(base, items, nsrc));
    if (rdim == 0 && r->type->kind == IR_TY_ARRAY) TS_ERR(ts, pos, "0-dimensional array views are not supported");
    return r;
}

IrNode *ts_index(Ts *ts, const IrNode *n)
{
    IrNode *base = ts_expr(ts, n->u.index.base);
    if (!base) return NULL;
    if (base->type->kind == IR_TY_TUPLE) return index_tuple(ts, n, base);
    if (base->type->kind != IR_TY_ARRAY) TS_ERR(ts, n->pos, "%s cannot be indexed", ts_type_name(base->type));
    return index_array(ts, n->pos, base, n->u.index.items, n->u.index.n, false);
}

IrNode *ts_transpose(Ts *ts, IrPos pos, IrNode *x)
{
    if (x->type->ndim == 1) return x;
    return ir_intrinsic_call(ts->a, pos, IR_INTR_TRANSPOSE, &x, 1, ir_type_view(x->type, x->type->ndim, IR_LAYOUT_ANY));
}

/* 0 (False for bool) of scalar type t */
static IrNode *zero_of(Ts *ts, IrPos pos, IrType *t)
{
    return ir_dtype_is_float(t->dtype) ? ir_const_float(ts->a, pos, t, 0.0) : ir_const_int(ts->a, pos, t, 0);
}

static IrNode *zero_elem(Ts *ts, IrPos pos, IrNode **elems, int n, void *env)
{
    (void)n, (void)env;
    return zero_of(ts, pos, ir_type_strong(elems[0]->type));
}

/* The sizes an array's attributes give are Python ints: weak (NEP 50), so an int8 array plus a.ndim is int8. */
static IrNode *python_int(Ts *ts, IrPos pos, int64_t v) { return ir_const_int(ts->a, pos, ir_type_weak(IR_DT_INT64), v); }

IrNode *ts_attr(Ts *ts, const IrNode *n)
{
    IrNode *v = ts_expr(ts, n->u.attr.value);
    if (!v) return NULL;
    const char *name = n->u.attr.name;
    if ((v->type->kind == IR_TY_SCALAR || v->type->kind == IR_TY_ARRAY) && ir_dtype_is_complex(v->type->dtype) &&
        (!strcmp(name, "real") || !strcmp(name, "imag")))
        return ts_complex_part(ts, n->pos, v, name[0] == 'r' ? IR_UOP_REAL : IR_UOP_IMAG);
    if (v->type->kind == IR_TY_SCALAR) {
        /* NumPy scalars (and 0-d arrays, which arrive as scalars) answer the array attributes */
        IrType *st = ir_type_strong(v->type);
        if (!strcmp(name, "ndim")) return python_int(ts, n->pos, 0);
        if (!strcmp(name, "size")) return python_int(ts, n->pos, 1);
        if (!strcmp(name, "itemsize") || !strcmp(name, "nbytes")) return python_int(ts, n->pos, ir_dtype_size(st->dtype));
        if (!strcmp(name, "shape")) {
            IrNode *t = ir_node(ts->a, IR_TUPLE, n->pos);
            t->type = ir_type_tuple(NULL, 0);
            return t;
        }
        if (!strcmp(name, "dtype")) {
            IrNode *c = ir_node(ts->a, IR_CONST, n->pos);
            c->type = ir_type_dtype(st->dtype);
            return c;
        }
        if (!strcmp(name, "T")) return v;
        if (!strcmp(name, "real")) /* a Python bool's real part is an int (True.real is 1); NumPy's bool stays */
            return v->type->weak && st->dtype == IR_DT_BOOL ? ts_cast(ts, v, ir_type_weak(IR_DT_INT64)) : v;
        if (!strcmp(name, "imag")) { /* of a real number: its type's zero (Python's bool: the int 0) */
            IrType *zt = v->type->weak && st->dtype == IR_DT_BOOL ? ir_type_weak(IR_DT_INT64) : v->type;
            return ts_after_effects(ts, n->pos, v, zero_of(ts, n->pos, zt));
        }
    }
    if (v->type->kind != IR_TY_ARRAY)
        TS_ERR(ts, n->pos, "%s has no attribute '%s'", ts_type_name(v->type), name);
    int ndim = v->type->ndim;
    if (strcmp(name, "ndim") == 0) return python_int(ts, n->pos, ndim);
    if (strcmp(name, "itemsize") == 0) return python_int(ts, n->pos, ir_dtype_size(v->type->dtype));
    if (strcmp(name, "dtype") == 0) {
        IrNode *c = ir_node(ts->a, IR_CONST, n->pos);
        c->type = ir_type_dtype(v->type->dtype);
        return c;
    }
    if (strcmp(name, "T") == 0) return ts_transpose(ts, n->pos, v);
    if (strcmp(name, "real") == 0) return v; /* of a real array: the array itself (NumPy's is a view of it) */
    if (strcmp(name, "imag") == 0) /* of a real array: a new array of zeros of its dtype and shape */
        return ts_make_map(ts, n->pos, &v, 1, zero_elem, NULL);
    v = ts_reuse(ts, v);
    if (strcmp(name, "size") == 0) return ts_python_scalar(ts, ts_array_size(ts, n->pos, v));
    if (strcmp(name, "nbytes") == 0)
        return ts_python_scalar(ts, ts_scalar_binop(ts, n->pos, IR_OP_MUL, ts_array_size(ts, n->pos, v), ts_i64(ts, n->pos, ir_dtype_size(v->type->dtype))));
    if (strcmp(name, "shape") == 0) {
        IrNode *t = ir_node(ts->a, IR_TUPLE, n->pos);
        t->u.tuple.n = ndim;
        t->u.tuple.items = ir_nodes(ts->a, ndim);
        IrType **elems = rt_arena_alloc(ts->a, sizeof(IrType *) * (size_t)ndim);
        for (int i = 0; i < ndim; i++) {
            IrNode *d = ir_node(ts->a, IR_ARRAY_DIM, n->pos);
            d->type = elems[i] = ir_type_weak(IR_DT_INT64); /* Python ints */
            d->u.array_dim.array = v;
            d->u.array_dim.axis = i;
            t->u.tuple.items[i] = d;
        }
        t->type = ir_type_tuple(elems, ndim);
        return t;
    }
    return ts_unsupported(ts, n->pos, TS_LIB_ATTRIBUTE, "array attribute .", name, "");
}

/* a[mask] = values, values 1-D: the k-th set element of the mask (in C order) gets values[k]. The values are
 * read from a copy unless they are a new array already (they may be a view of a itself). */
static IrNode *mask_values_store(Ts *ts, const IrNode *s, IrNode *dst, IrNode *value)
{
    if (value->type->ndim != 1)
        TS_ERR(ts, s->pos, "the values assigned through a boolean mask must be a scalar or a 1-D array");
    if (value->kind != IR_MAP && value->kind != IR_IMAP && !(value->kind == IR_CALL && value->u.call.ckind == IR_CALLEE_INTRINSIC &&
                                                             value->u.call.intrinsic == IR_INTR_MASK_SELECT))
        value = ts_make_map(ts, s->pos, &value, 1, NULL, NULL);
    if (!value) return NULL;
    IrNode *st = ir_node(ts->a, IR_STORE, s->pos);
    st->u.store.target = dst;
    st->u.store.value = value;
    return st;
}

/* The target of a store indexed again (the element it writes, or the view: a[2, None, 2] = v, a[1:3] = v), for
 * an error of converting its value to come after the store's IndexError, as in NumPy, which converts after
 * indexing; NULL when indexing again could do more than raise. */
static IrNode *view_made(Ts *ts, IrNode *dst)
{
    if (dst->kind != IR_INDEX || (ir_effects(dst->u.index.base) & (IR_FX_RAISE | IR_FX_WRITE))) return NULL;
    for (int i = 0; i < dst->u.index.n; i++)
        if (ir_effects(dst->u.index.items[i]) & (IR_FX_RAISE | IR_FX_WRITE)) return NULL;
    return ir_copy(ts->a, dst, NULL);
}

/* A checked read of the element a store writes (view_made); NULL when its index is not checked. */
static IrNode *element_read(Ts *ts, IrNode *dst)
{
    return dst->kind == IR_INDEX && dst->u.index.checked ? view_made(ts, dst) : NULL;
}

/* The untyped subscript has a `...` (NumPy: every axis indexed by an integer leaves a 0-d view, not an element) */
static bool has_ellipsis(const IrNode *target)
{
    for (int i = 0; i < target->u.index.n; i++)
        if (target->u.index.items[i]->kind == IR_SLICE && target->u.index.items[i]->u.slice.ellipsis) return true;
    return false;
}

IrNode *ts_store(Ts *ts, const IrNode *s)
{
    const IrNode *target = s->u.store.target;
    if (target->kind != IR_INDEX) TS_ERR(ts, s->pos, "unsupported assignment target");
    IrNode *base = ts_expr(ts, target->u.index.base);
    if (!base) return NULL;
    if (base->type->kind == IR_TY_TUPLE) TS_ERR(ts, s->pos, "a tuple cannot be changed (tuples are immutable)");
    if (base->type->kind != IR_TY_ARRAY) TS_ERR(ts, s->pos, "%s does not support item assignment", ts_type_name(base->type));
    IrNode *value = ts_expr(ts, s->u.store.value);
    if (!value) return NULL;
    if (!ts_list_store_fits(ts, s->pos, target->u.index.base, base->type, value->type)) return NULL;
    IrNode *dst = index_array(ts, s->pos, base, target->u.index.items, target->u.index.n, true);
    if (!dst) return NULL;
    if (value->type->kind != IR_TY_SCALAR && value->type->kind != IR_TY_ARRAY)
        TS_ERR(ts, s->pos, "cannot store %s into an array", ts_type_name(value->type));
    if (s->u.store.augmented) {
        /* a[idx] += v and m[0] += v update an array (a fancy index's, a view) in place: NumPy's same_kind rule, as
         * for an array variable; an element (a[i] += v of a 1-D a) is converted as any assignment */
        bool array_target = dst->type->kind == IR_TY_ARRAY;
        for (int i = 0; dst->kind == IR_INDEX && i < dst->u.index.n; i++)
            array_target |= dst->u.index.items[i]->type->kind == IR_TY_ARRAY;
        if (array_target && !ts_same_kind(value->type->dtype, base->type->dtype))
            TS_ERR(ts, s->pos, "cannot update %s in place with a result of type %s (NumPy's same_kind rule)",
                   ts_type_name(ir_type_array(base->type->dtype, base->type->ndim, base->type->layout)),
                   ts_type_name(value->type));
    }
    if (base->type->readonly) {
        IrNode *before[2 + IR_MAX_DIMS] = {value, base};
        int n = 2;
        for (int i = 0; dst->kind == IR_INDEX && i < dst->u.index.n && n < 2 + IR_MAX_DIMS; i++) before[n++] = dst->u.index.items[i];
        IrNode *st = ir_node(ts->a, IR_EXPR_STMT, s->pos);
        st->u.expr_stmt.value = ts_readonly_write(ts, s->pos, before, n, ir_type_none(), false);
        return st->u.expr_stmt.value ? st : NULL;
    }
    if (dst->type->kind == IR_TY_SCALAR) {
        for (int i = 0; i < dst->u.index.n; i++)
            if (dst->u.index.items[i]->type->kind == IR_TY_ARRAY && dst->u.index.items[i]->type->dtype != IR_DT_BOOL)
                return ts_index_array_store(ts, s, dst, value); /* scatter.c */
        bool masked = dst->u.index.n == 1 && dst->u.index.items[0]->type->kind == IR_TY_ARRAY;
        if (masked && value->type->kind == IR_TY_ARRAY) return mask_values_store(ts, s, dst, value);
        if (value->type->kind == IR_TY_ARRAY) {
            /* NumPy 2's ValueError when it runs, after the value and the element's IndexError; a bool element
             * takes the truth of an array of one element (NumPy converts with bool(v)) */
            IrNode *read = masked ? NULL : element_read(ts, dst), *r;
            if (dst->type->dtype == IR_DT_BOOL || has_ellipsis(target))
                r = ts_drop_leading_ones(ts, s->pos, value, 0); /* a[i, ...] is a 0-d view: a value of one element
                                                                  * broadcasts into it */
            else
                r = ts_after_effects(ts, s->pos, value, ts_raise(ts, s->pos, RT_ERR_VALUE, ts_i64(ts, s->pos, RT_VAL_SEQUENCE),
                                                                 NULL, NULL, dst->type));
            if (r && read) r = ts_after_effects(ts, s->pos, read, r);
            if (!(value = r)) return NULL;
        }
        IrNode *st = ir_node(ts->a, IR_STORE, s->pos);
        st->u.store.target = dst;
        st->u.store.value = ts_setitem_value(ts, s->pos, value, dst->type->dtype, masked ? NULL : element_read(ts, dst), !masked);
        return st->u.store.value ? st : NULL;
    }
    if (value->type->kind == IR_TY_SCALAR &&
        !(value = ts_setitem_value(ts, s->pos, value, dst->type->dtype, view_made(ts, dst), true)))
        return NULL;
    IrNode *in[1] = {value};
    IrNode *m = ts_make_map_into(ts, s->pos, dst, in, 1, NULL, NULL);
    if (!m) return NULL;
    IrNode *st = ir_node(ts->a, IR_EXPR_STMT, s->pos);
    st->u.expr_stmt.value = m;
    return st;
}
