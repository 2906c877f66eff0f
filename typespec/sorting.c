/* sorting.c: NumPy functions built on a sort: np.sort, np.argsort and the methods a.sort() (in place) and
 * a.argsort(), np.median, np.percentile, np.quantile and np.unique. The sort itself is the sort intrinsic (ir.h:
 * the runtime's stable merge sort of each line, on the host); what is computed from the sorted array is index
 * maps and maps that read it, as NumPy computes it (its interpolation, its NaN rule). */
#include <string.h>
#include "ts_internal.h"

static bool is_none(const IrNode *n) { return n && n->kind == IR_CONST && n->type && n->type->kind == IR_TY_NONE; }

/* The axis argument (untyped, positional i or keyword "axis"): *flat for None, else the axis made
 * non-negative. Must be a constant. false with the CompileError set. */
static bool sort_axis(Ts *ts, Args *a, int i, const char *fname, int ndim, bool none_default, int *axis, bool *flat)
{
    IrPos pos = a->call->pos;
    const IrNode *ax = i < a->call->u.call.nargs ? a->call->u.call.args[i] : ts_kw(a, "axis");
    *flat = ax ? is_none(ax) : none_default;
    *axis = ndim - 1;
    if (!ax || *flat) return true;
    int64_t v;
    if (!ts_const_int(ax, &v)) {
        if (!ts->dry) lk_diag_set(ts->diag, LK_ERR_TYPE, ts->src->file, pos.line, pos.col, "numpy.%s(): axis must be a constant integer or None", fname);
        return false;
    }
    if (v < -ndim || v >= ndim) {
        if (!ts->dry)
            lk_diag_set(ts->diag, LK_ERR_TYPE, ts->src->file, pos.line, pos.col,
                        "numpy.%s(): axis %lld is out of bounds for array of dimension %d", fname, (long long)v, ndim);
        return false;
    }
    *axis = (int)(v < 0 ? v + ndim : v);
    return true;
}

/* sort(x, axis) or argsort: the intrinsic; x an array */
static IrNode *sort_node(Ts *ts, IrPos pos, IrNode *x, int axis, bool argsort)
{
    IrNode *args[3] = {x, ts_i64(ts, pos, axis), ts_i64(ts, pos, argsort)};
    IrDtype dt = argsort ? IR_DT_INT64 : x->type->dtype;
    return ir_intrinsic_call(ts->a, pos, IR_INTR_SORT, args, 3, ir_type_array(dt, x->type->ndim, IR_LAYOUT_C));
}

/* kind= is accepted when it names a sort NumPy has; every one gives the same (stable) answer here, except that
 * NumPy's unstable kinds may order equal values otherwise */
static bool kind_ok(Ts *ts, Args *a, int i)
{
    const IrNode *k = i < a->call->u.call.nargs ? a->call->u.call.args[i] : ts_kw(a, "kind");
    return !k || is_none(k);
}

/* np.sort(a, axis=-1), np.argsort(a, axis=-1), a.argsort(axis=-1): axis None sorts the flattened array. */
static IrNode *call_sort(Ts *ts, Args *a, const char *name, bool argsort)
{
    IrPos pos = a->call->pos;
    IrNode *x = ts_arg(a, 0, "a");
    if (!x) TS_ERR(ts, pos, "%s() needs an array", name);
    if (x->type->kind != IR_TY_ARRAY) TS_ERR(ts, pos, "%s() needs an array, not %s (NumPy's axis -1 does not exist for a scalar)", name, ts_type_name(x->type));
    if (a->npos > 3 || !kind_ok(ts, a, 2)) TS_ERR(ts, pos, "%s(): kind= and order= are not supported (the sort is always stable)", name);
    int axis;
    bool flat;
    if (!sort_axis(ts, a, 1, name, x->type->ndim, false, &axis, &flat)) return NULL;
    if (flat) {
        x = ts_ravel(ts, pos, x);
        axis = 0;
    }
    return sort_node(ts, pos, x, axis, argsort);
}

/* a.sort(axis=-1): a sorted in place; the call's value is None. */
static IrNode *sort_in_place(Ts *ts, Args *a)
{
    IrPos pos = a->call->pos;
    IrNode *x = a->pos[0];
    if (a->npos > 3 || !kind_ok(ts, a, 2)) TS_ERR(ts, pos, "sort(): kind= and order= are not supported (the sort is always stable)");
    int axis;
    bool flat;
    if (!sort_axis(ts, a, 1, "sort", x->type->ndim, false, &axis, &flat)) return NULL;
    if (flat) TS_ERR(ts, pos, "sort(): axis=None is not supported for the method (use np.sort)");
    x = ts_reuse(ts, x);
    IrNode *in[1] = {sort_node(ts, pos, x, axis, false)};
    IrNode *m = ts_make_map_into(ts, pos, x, in, 1, NULL, NULL);
    if (!m) return NULL;
    IrNode *none = ir_node(ts->a, IR_CONST, pos);
    none->type = ir_type_none();
    return ts_after_effects(ts, pos, m, none);
}

/* ---------------- order statistics ---------------- */

/* Reads of a sorted array s along `axis` at the position an index map over the other axes stands at (idx, or
 * nothing when s is 1-D and the result a scalar). */
typedef struct Picker {
    IrNode *s;
    int axis;
    IrVar **idx;
    bool checked;
} Picker;

static IrNode *pick(Ts *ts, IrPos pos, const Picker *p, IrNode *j)
{
    int nd = p->s->type->ndim;
    IrNode *r = ir_node(ts->a, IR_INDEX, pos);
    r->u.index.base = p->s;
    r->u.index.n = nd;
    r->u.index.items = ir_nodes(ts->a, nd);
    for (int d = 0, k = 0; d < nd; d++)
        r->u.index.items[d] = d == p->axis ? j : ts_var(ts, pos, p->idx[k++]);
    r->u.index.checked = p->checked;
    r->type = ir_type_scalar(p->s->type->dtype);
    return r;
}

typedef IrNode *(*StatFn)(Ts *ts, IrPos pos, const Picker *p, IrNode *n, void *env);

/* stat(sorted line) for each line of x along axis (axis None: the flattened x, a scalar result): sorts x, then
 * an index map over the other axes whose body is fn's expression of reads of the sorted line. */
static IrNode *over_lines(Ts *ts, IrPos pos, IrNode *x, int axis, bool flat, IrType *rt, StatFn fn, void *env)
{
    if (flat) {
        x = ts_ravel(ts, pos, x);
        axis = 0;
    }
    IrNode *s = ts_reuse(ts, sort_node(ts, pos, x, axis, false));
    if (!s) return NULL;
    int nd = s->type->ndim;
    IrNode *n = ts_reuse(ts, ts_dim(ts, pos, s, axis));
    Picker p = {.s = s, .axis = axis, .checked = true};
    if (nd == 1) return fn(ts, pos, &p, n, env);
    IrNode **dims = ir_nodes(ts->a, nd - 1);
    for (int d = 0, k = 0; d < nd; d++)
        if (d != axis) dims[k++] = ts_dim(ts, pos, s, d);
    IrNode *m = ts_make_imap(ts, pos, dims, nd - 1);
    p.idx = m->u.imap.idx;
    ts->cond_depth++;
    IrNode *body = fn(ts, pos, &p, n, env);
    ts->cond_depth--;
    if (!body) return NULL;
    m->u.imap.body = ts_cast(ts, body, rt);
    m->type = ir_type_array(rt->dtype, nd - 1, IR_LAYOUT_C);
    return m;
}

static IrNode *ifexp(Ts *ts, IrPos pos, IrNode *cond, IrNode *then, IrNode *orelse)
{
    if (!cond || !then || !orelse) return NULL;
    IrNode *r = ir_node(ts->a, IR_IFEXP, pos);
    r->type = then->type;
    r->u.ifexp.cond = cond;
    r->u.ifexp.then = then;
    r->u.ifexp.orelse = ts_cast(ts, orelse, then->type);
    return r;
}

/* s[n - 1] is NaN: a line holding a NaN sorts it last, and its statistic is NaN (NumPy's rule) */
static IrNode *nan_guard(Ts *ts, IrPos pos, const Picker *p, IrNode *n, IrNode *value)
{
    if (!value || !ir_dtype_is_float(p->s->type->dtype)) return value;
    IrNode *last = pick(ts, pos, p, ts_scalar_binop(ts, pos, IR_OP_SUB, n, ts_i64(ts, pos, 1)));
    IrNode *isnan = ts_math(ts, pos, IR_MATH_ISNAN, &last, 1, NULL);
    return ifexp(ts, pos, isnan, ts_cast(ts, last, value->type), value);
}

/* A second use of the scalar expression e: a copy (a node has one parent; inside an index map's body nothing can
 * be put in a variable). */
static IrNode *again(Ts *ts, IrNode *e) { return e ? ir_copy(ts->a, e, NULL) : NULL; }

typedef struct MedianEnv {
    IrType *acc, *rt;
} MedianEnv;

/* NumPy's median is the mean of the middle one or two: summed in the mean's type (float64 for integers,
 * float32 for float16), divided by their count, rounded to the result type; an empty line gives NaN. */
static IrNode *median_of(Ts *ts, IrPos pos, const Picker *p, IrNode *n, void *env)
{
    MedianEnv *e = env;
    IrNode *half = ts_scalar_binop(ts, pos, IR_OP_FLOORDIV, n, ts_i64(ts, pos, 2));
    IrNode *hi = ts_cast(ts, pick(ts, pos, p, half), e->acc);
    IrNode *hi2 = ts_cast(ts, pick(ts, pos, p, again(ts, half)), e->acc);
    IrNode *lo = ts_cast(ts, pick(ts, pos, p, ts_scalar_binop(ts, pos, IR_OP_SUB, again(ts, half), ts_i64(ts, pos, 1))), e->acc);
    IrNode *two = ir_const_float(ts->a, pos, e->acc, 2.0);
    IrNode *even = ts_scalar_binop(ts, pos, IR_OP_DIV, ts_scalar_binop(ts, pos, IR_OP_ADD, lo, hi2), two);
    IrNode *is_odd = ts_compare(ts, pos, IR_CMP_EQ, ts_scalar_binop(ts, pos, IR_OP_MOD, n, ts_i64(ts, pos, 2)), ts_i64(ts, pos, 1));
    IrNode *m = ts_cast(ts, ifexp(ts, pos, is_odd, hi, even), e->rt);
    m = nan_guard(ts, pos, p, n, m);
    IrNode *empty = ts_compare(ts, pos, IR_CMP_EQ, n, ts_i64(ts, pos, 0));
    return ifexp(ts, pos, empty, ir_const_float(ts->a, pos, e->rt, __builtin_nan("")), m);
}

typedef struct QuantileEnv {
    IrNode *q;      /* the quantile in [0, 1], float64 (a variable) */
    IrType *rt;     /* the result's type */
    IrType *t;      /* gamma's type in the interpolation (weak float64 for a Python q) */
} QuantileEnv;

/* NumPy's 'linear' method: v = (n - 1) * q, i = floor(v) (both i and i + 1 the last index when v >= n - 1),
 * gamma = v - i, and _lerp(s[i], s[i+1], gamma): a + (b - a) * gamma, or b - (b - a) * (1 - gamma) when
 * gamma >= 0.5, with b - a in s's dtype. */
static IrNode *quantile_of(Ts *ts, IrPos pos, const Picker *p, IrNode *n, void *env)
{
    QuantileEnv *e = env;
    IrType *f64 = ir_type_scalar(IR_DT_FLOAT64), *i64 = ir_type_scalar(IR_DT_INT64);
    IrNode *nm1 = ts_scalar_binop(ts, pos, IR_OP_SUB, n, ts_i64(ts, pos, 1));
    IrNode *v = ts_scalar_binop(ts, pos, IR_OP_MUL, ts_cast(ts, nm1, f64), e->q);
    IrNode *fl = ts_math(ts, pos, IR_MATH_FLOOR, (IrNode *[]){again(ts, v)}, 1, f64);
    IrNode *above = ts_compare(ts, pos, IR_CMP_GE, again(ts, v), ts_cast(ts, again(ts, nm1), f64));
    IrNode *prev = ifexp(ts, pos, above, ts_i64(ts, pos, -1), ts_cast(ts, fl, i64));
    IrNode *next = ifexp(ts, pos, again(ts, above), ts_i64(ts, pos, -1),
                         ts_scalar_binop(ts, pos, IR_OP_ADD, ts_cast(ts, again(ts, fl), i64), ts_i64(ts, pos, 1)));
    IrNode *gamma = ts_cast(ts, ts_scalar_binop(ts, pos, IR_OP_SUB, v, ts_cast(ts, again(ts, prev), f64)), e->t);
    IrNode *a = pick(ts, pos, p, prev), *b = pick(ts, pos, p, next);
    IrNode *diff = ts_scalar_binop(ts, pos, IR_OP_SUB, b, a);
    IrNode *lo = ts_scalar_binop(ts, pos, IR_OP_ADD, again(ts, a), ts_scalar_binop(ts, pos, IR_OP_MUL, diff, gamma));
    IrNode *one_minus = ts_scalar_binop(ts, pos, IR_OP_SUB, ir_const_float(ts->a, pos, e->t, 1.0), again(ts, gamma));
    IrNode *hi = ts_scalar_binop(ts, pos, IR_OP_SUB, again(ts, b), ts_scalar_binop(ts, pos, IR_OP_MUL, again(ts, diff), one_minus));
    IrNode *r = ifexp(ts, pos, ts_compare(ts, pos, IR_CMP_GE, again(ts, gamma), ir_const_float(ts->a, pos, e->t, 0.5)),
                      ts_cast(ts, hi, e->rt), ts_cast(ts, lo, e->rt));
    return nan_guard(ts, pos, p, n, r);
}

static IrType *float_result(IrDtype dt)
{
    return ir_type_scalar(ir_dtype_is_float(dt) ? dt : IR_DT_FLOAT64);
}

/* np.median(a, axis=None) */
static IrNode *call_median(Ts *ts, Args *a)
{
    IrPos pos = a->call->pos;
    IrNode *x = ts_arg(a, 0, "a");
    if (!x) TS_ERR(ts, pos, "numpy.median() needs an array");
    if (x->type->kind == IR_TY_SCALAR) return ts_cast(ts, x, float_result(ir_type_strong(x->type)->dtype));
    if (x->type->kind != IR_TY_ARRAY) TS_ERR(ts, pos, "numpy.median() needs an array, not %s", ts_type_name(x->type));
    if (a->npos > 2) TS_ERR(ts, pos, "numpy.median(): out= and overwrite_input= are not supported");
    int axis;
    bool flat;
    if (!sort_axis(ts, a, 1, "median", x->type->ndim, true, &axis, &flat)) return NULL;
    IrDtype dt = x->type->dtype;
    MedianEnv env = {.rt = float_result(dt)};
    env.acc = ts_compute_type(env.rt);
    return over_lines(ts, pos, x, axis, flat, env.rt, median_of, &env);
}

/* np.percentile(a, q, axis=None) (q in [0, 100]) and np.quantile(a, q, axis=None) (q in [0, 1]); q a number,
 * a variable too. A q out of range is NumPy's ValueError. */
static IrNode *call_quantile(Ts *ts, Args *a, bool percent)
{
    IrPos pos = a->call->pos;
    const char *name = percent ? "percentile" : "quantile";
    IrNode *x = ts_arg(a, 0, "a"), *q = ts_arg(a, 1, "q");
    if (!x || !q) TS_ERR(ts, pos, "numpy.%s() needs an array and q", name);
    if (x->type->kind != IR_TY_ARRAY) TS_ERR(ts, pos, "numpy.%s() needs an array, not %s", name, ts_type_name(x->type));
    if (q->type->kind != IR_TY_SCALAR || q->type->dtype == IR_DT_BOOL)
        TS_ERR(ts, pos, "numpy.%s(): q must be a number (several quantiles at once are not supported yet), not %s", name, ts_type_name(q->type));
    if (a->npos > 3) TS_ERR(ts, pos, "numpy.%s(): out= and the arguments after it are not supported", name);
    int axis;
    bool flat;
    if (!sort_axis(ts, a, 2, name, x->type->ndim, true, &axis, &flat)) return NULL;
    IrType *f64 = ir_type_scalar(IR_DT_FLOAT64);
    IrNode *qf = ts_cast(ts, q, f64);
    if (percent) qf = ts_scalar_binop(ts, pos, IR_OP_DIV, qf, ir_const_float(ts->a, pos, f64, 100.0));
    qf = ts_reuse(ts, qf);
    /* NumPy's check: 0 <= q <= 1 (NaN fails it), before it reads the array */
    IrNode *ok = ts_scalar_binop(ts, pos, IR_OP_BITAND, ts_compare(ts, pos, IR_CMP_GE, qf, ir_const_float(ts->a, pos, f64, 0.0)),
                                 ts_compare(ts, pos, IR_CMP_LE, qf, ir_const_float(ts->a, pos, f64, 1.0)));
    IrNode *bad = ts_raise(ts, pos, RT_ERR_VALUE, ts_i64(ts, pos, percent ? RT_VAL_PERCENTILE : RT_VAL_QUANTILE), NULL, NULL, f64);
    qf = ts_reuse(ts, ifexp(ts, pos, ok, qf, bad));
    if (!qf) return NULL;
    /* gamma takes q's place in NEP 50's promotion: a Python number is weak (float32 data gives float32) */
    bool weak = q->type->weak;
    IrType *t = weak ? ir_type_weak(IR_DT_FLOAT64) : f64;
    IrDtype dt = x->type->dtype;
    IrType *rt = ir_dtype_is_float(dt) ? ts_promote(ir_type_scalar(dt), t) : f64;
    QuantileEnv env = {.q = qf, .rt = ir_type_strong(rt), .t = t};
    return over_lines(ts, pos, x, axis, flat, env.rt, quantile_of, &env);
}

/* ---------------- unique ---------------- */

/* np.unique(a): the sorted distinct values of the flattened a; NaNs count as one (NumPy 2's equal_nan=True). */
static IrNode *call_unique(Ts *ts, Args *a)
{
    IrPos pos = a->call->pos;
    if (!ts_check_args(ts, a, "numpy.unique", 1, 1)) return NULL;
    IrNode *x = a->pos[0];
    if (x->type->kind != IR_TY_ARRAY) TS_ERR(ts, pos, "numpy.unique() needs an array, not %s", ts_type_name(x->type));
    IrNode *s = ts_reuse(ts, sort_node(ts, pos, ts_ravel(ts, pos, x), 0, false));
    if (!s) return NULL;
    IrNode *n = ts_dim(ts, pos, s, 0);
    IrNode *m = ts_make_imap(ts, pos, &n, 1);
    ts->cond_depth++;
    IrNode *i = ts_var(ts, pos, m->u.imap.idx[0]);
    IrNode *first = ts_compare(ts, pos, IR_CMP_EQ, i, ts_i64(ts, pos, 0));
    IrNode *im1 = ts_scalar_binop(ts, pos, IR_OP_SUB, ts_var(ts, pos, m->u.imap.idx[0]), ts_i64(ts, pos, 1));
    /* the previous index read only when i > 0: max(i - 1, 0) */
    IrNode *prev_i = ts_scalar_binop(ts, pos, IR_OP_MAX, im1, ts_i64(ts, pos, 0));
    IrNode *cur = ts_elem_at(ts, pos, s, ts_var(ts, pos, m->u.imap.idx[0]), false), *prev = ts_elem_at(ts, pos, s, prev_i, false);
    IrNode *differs = ts_compare(ts, pos, IR_CMP_NE, cur, prev);
    if (ir_dtype_is_float(s->type->dtype)) {
        IrNode *nan_now = ts_math(ts, pos, IR_MATH_ISNAN, (IrNode *[]){again(ts, cur)}, 1, NULL);
        IrNode *nan_before = ts_math(ts, pos, IR_MATH_ISNAN, (IrNode *[]){again(ts, prev)}, 1, NULL);
        IrNode *both_nan = ts_scalar_binop(ts, pos, IR_OP_BITAND, nan_now, nan_before);
        differs = ts_scalar_binop(ts, pos, IR_OP_BITAND, differs, ts_unop(ts, pos, IR_UOP_NOT, both_nan));
    }
    m->u.imap.body = ts_scalar_binop(ts, pos, IR_OP_BITOR, first, differs);
    ts->cond_depth--;
    if (!m->u.imap.body) return NULL;
    m->type = ir_type_array(IR_DT_BOOL, 1, IR_LAYOUT_C);
    return ts_mask_select(ts, pos, s, m);
}

/* ---------------- searchsorted ---------------- */

typedef struct SearchEnv {
    IrNode *a;      /* the sorted array, a variable of the common dtype */
    int right;
} SearchEnv;

static IrNode *search(Ts *ts, IrPos pos, IrNode *a, IrNode *v, int right)
{
    IrNode *args[3] = {a, ts_cast(ts, v, ir_type_scalar(a->type->dtype)), ts_i64(ts, pos, right)};
    if (!args[1]) return NULL;
    return ir_intrinsic_call(ts->a, pos, IR_INTR_SEARCH, args, 3, ir_type_scalar(IR_DT_INT64));
}

static IrNode *elem_search(Ts *ts, IrPos pos, IrNode **e, int n, void *env)
{
    SearchEnv *s = env;
    return search(ts, pos, s->a, e[0], s->right);
}

/* np.searchsorted(a, v, side='left'): a 1-D and sorted; v a number or an array (the result has its shape); both
 * compared in their common dtype, as NumPy does. */
static IrNode *call_searchsorted(Ts *ts, Args *a)
{
    IrPos pos = a->call->pos;
    IrNode *sorted = ts_arg(a, 0, "a"), *v = ts_arg(a, 1, "v");
    if (!sorted || !v) TS_ERR(ts, pos, "numpy.searchsorted() needs an array and values");
    if (sorted->type->kind != IR_TY_ARRAY || sorted->type->ndim != 1)
        TS_ERR(ts, pos, "numpy.searchsorted(): the sorted array must be 1-D, not %s", ts_type_name(sorted->type));
    if (v->type->kind != IR_TY_ARRAY && v->type->kind != IR_TY_SCALAR)
        TS_ERR(ts, pos, "numpy.searchsorted(): v must be a number or an array, not %s", ts_type_name(v->type));
    if (a->npos > 2) TS_ERR(ts, pos, "numpy.searchsorted(): give side= by keyword ('left' or 'right'); sorter= is not supported");
    int64_t right = 0;
    const IrNode *side = ts_kw(a, "side");
    if (side && !ts_const_int(side, &right)) TS_ERR(ts, pos, "numpy.searchsorted(): side must be 'left' or 'right'");
    IrType *t = ir_type_strong(ts_promote(ir_type_scalar(sorted->type->dtype), ts_elem_type(v->type)));
    SearchEnv env = {.a = ts_reuse(ts, ts_cast_array(ts, pos, sorted, t->dtype)), .right = (int)right};
    if (!env.a) return NULL;
    if (v->type->kind == IR_TY_SCALAR) return search(ts, pos, env.a, v, env.right);
    IrNode *in[1] = {v};
    return ts_make_map(ts, pos, in, 1, elem_search, &env);
}

/* ---------------- histogram ---------------- */

/* x[start:] (stop 0) or x[start:stop] of a 1-D x, a view */
static IrNode *slice_view(Ts *ts, IrPos pos, IrNode *x, int64_t start, int64_t stop)
{
    IrNode *v = ir_node(ts->a, IR_INDEX, pos);
    IrNode *sl = ir_node(ts->a, IR_SLICE, pos);
    sl->type = ir_type_slice();
    sl->u.slice.start = start ? ts_i64(ts, pos, start) : NULL;
    sl->u.slice.stop = stop ? ts_i64(ts, pos, stop) : NULL;
    v->u.index.base = x;
    v->u.index.n = 1;
    v->u.index.items = ir_nodes(ts->a, 1);
    v->u.index.items[0] = sl;
    v->u.index.checked = ts->sess->opts->boundscheck;
    v->type = ir_type_view(x->type, 1, IR_LAYOUT_ANY);
    return v;
}

/* value if ok else raise(ValueError, which) */
static IrNode *check(Ts *ts, IrPos pos, IrNode *ok, IrNode *value, int which)
{
    IrNode *bad = ts_raise(ts, pos, RT_ERR_VALUE, ts_i64(ts, pos, which), NULL, NULL, value ? value->type : NULL);
    return value && bad ? ifexp(ts, pos, ok, value, bad) : NULL;
}

/* The edges of `bins` equal bins over [first, last] as NumPy's histogram makes them: np.linspace(first, last,
 * bins + 1) computed in ct (first's and last's type; y = i * step + first, or i / bins * delta when the step
 * underflows to 0; the last exactly last), then converted to bt. */
static IrNode *uniform_edges(Ts *ts, IrPos pos, IrNode *first, IrNode *last, IrNode *nbins, IrType *ct, IrType *bt)
{
    IrNode *delta = ts_reuse(ts, ts_scalar_binop(ts, pos, IR_OP_SUB, last, first));
    IrNode *div = ts_reuse(ts, ts_cast(ts, nbins, ct));
    IrNode *step = ts_reuse(ts, ts_scalar_binop(ts, pos, IR_OP_DIV, delta, div));
    IrNode *len = ts_scalar_binop(ts, pos, IR_OP_ADD, nbins, ts_i64(ts, pos, 1));
    if (!step || !len) return NULL;
    IrNode *m = ts_make_imap(ts, pos, &len, 1);
    ts->cond_depth++;
    IrNode *i = ts_cast(ts, ts_var(ts, pos, m->u.imap.idx[0]), ct);
    IrNode *y = ts_scalar_binop(ts, pos, IR_OP_ADD, ts_scalar_binop(ts, pos, IR_OP_MUL, i, step), first);
    IrNode *i2 = ts_cast(ts, ts_var(ts, pos, m->u.imap.idx[0]), ct);
    IrNode *tiny = ts_scalar_binop(ts, pos, IR_OP_ADD, ts_scalar_binop(ts, pos, IR_OP_MUL, ts_scalar_binop(ts, pos, IR_OP_DIV, i2, div), delta), first);
    IrNode *zero_step = ts_compare(ts, pos, IR_CMP_EQ, step, ir_const_float(ts->a, pos, ct, 0.0));
    IrNode *v = ifexp(ts, pos, zero_step, tiny, y);
    IrNode *is_last = ts_compare(ts, pos, IR_CMP_EQ, ts_var(ts, pos, m->u.imap.idx[0]), nbins);
    m->u.imap.body = ts_cast(ts, ifexp(ts, pos, is_last, last, v), bt);
    ts->cond_depth--;
    if (!m->u.imap.body) return NULL;
    m->type = ir_type_array(bt->dtype, 1, IR_LAYOUT_C);
    return m;
}

/* counts[i]: the sorted values s in [e[i], e[i+1]), the last bin [e[n-1], e[n]] */
static IrNode *bin_counts(Ts *ts, IrPos pos, IrNode *s, IrNode *e)
{
    IrNode *n = ts_reuse(ts, ts_scalar_binop(ts, pos, IR_OP_SUB, ts_dim(ts, pos, e, 0), ts_i64(ts, pos, 1)));
    IrNode *len = ts_scalar_binop(ts, pos, IR_OP_MAX, n, ts_i64(ts, pos, 0));
    IrNode *m = ts_make_imap(ts, pos, &len, 1);
    ts->cond_depth++;
    IrNode *i = ts_var(ts, pos, m->u.imap.idx[0]);
    IrNode *next = ts_scalar_binop(ts, pos, IR_OP_ADD, ts_var(ts, pos, m->u.imap.idx[0]), ts_i64(ts, pos, 1));
    IrNode *below_next = search(ts, pos, s, ts_elem_at(ts, pos, e, next, false), 0);
    IrNode *upto_last = search(ts, pos, s, ts_elem_at(ts, pos, e, again(ts, next), false), 1);
    IrNode *is_last = ts_compare(ts, pos, IR_CMP_EQ, again(ts, next), n);
    IrNode *hi = ifexp(ts, pos, is_last, upto_last, below_next);
    IrNode *lo = search(ts, pos, s, ts_elem_at(ts, pos, e, i, false), 0);
    m->u.imap.body = ts_scalar_binop(ts, pos, IR_OP_SUB, hi, lo);
    ts->cond_depth--;
    if (!m->u.imap.body) return NULL;
    m->type = ir_type_array(IR_DT_INT64, 1, IR_LAYOUT_C);
    return m;
}

/* np.histogram(a, bins=10, range=None): (counts, edges), bins a count (equal bins over range, or over the data's
 * min and max) or an array of increasing edges. Counted from the sorted data by bisection at each edge, which is
 * NumPy's rule: [e[i], e[i+1]) and the last bin closed, values outside the range and NaN not counted. */
static IrNode *call_histogram(Ts *ts, Args *a)
{
    IrPos pos = a->call->pos;
    IrNode *x = ts_arg(a, 0, "a"), *bins = ts_arg(a, 1, "bins"), *range = ts_arg(a, 2, "range");
    if (!x || x->type->kind != IR_TY_ARRAY) TS_ERR(ts, pos, "numpy.histogram() needs an array");
    if (a->npos > 3) TS_ERR(ts, pos, "numpy.histogram(): density= and weights= are not supported");
    if (range && range->type->kind == IR_TY_NONE) range = NULL;
    IrType *f64 = ir_type_scalar(IR_DT_FLOAT64);
    IrNode *flat = ts_ravel(ts, pos, x);
    if (bins && bins->type->kind == IR_TY_ARRAY) {
        if (bins->type->ndim != 1) TS_ERR(ts, pos, "numpy.histogram(): bins must be 1d, when an array");
        if (range) TS_ERR(ts, pos, "numpy.histogram(): range= with an array of bins is not supported");
        IrNode *e = ts_reuse(ts, bins);
        /* NumPy's check: the edges increase (equal neighbours allowed) */
        IrNode *hi = slice_view(ts, pos, e, 1, 0), *lo = slice_view(ts, pos, e, 0, -1);
        IrNode *dec = ts_make_reduce(ts, pos, IR_RED_OR, ts_compare(ts, pos, IR_CMP_GT, lo, hi), -1, false, ir_type_scalar(IR_DT_BOOL));
        IrNode *ok = ts_reuse(ts, check(ts, pos, ts_unop(ts, pos, IR_UOP_NOT, dec), ts_i64(ts, pos, 0), RT_VAL_HIST_EDGES));
        if (!ok) return NULL;
        IrType *t = ir_type_strong(ts_promote(ir_type_scalar(x->type->dtype), ir_type_scalar(e->type->dtype)));
        IrNode *s = ts_reuse(ts, sort_node(ts, pos, ts_cast_array(ts, pos, flat, t->dtype), 0, false));
        IrNode *et = ts_reuse(ts, ts_cast_array(ts, pos, e, t->dtype));
        return ts_pair(ts, pos, bin_counts(ts, pos, s, et), e);
    }
    if (bins && !ts_is_int_scalar(bins->type)) TS_ERR(ts, pos, "numpy.histogram(): bins must be an integer or an array, not %s", ts_type_name(bins->type));
    IrNode *nbins = bins ? ts_cast(ts, bins, ir_type_scalar(IR_DT_INT64)) : ts_i64(ts, pos, 10);
    nbins = ts_reuse(ts, check(ts, pos, ts_compare(ts, pos, IR_CMP_GE, nbins, ts_i64(ts, pos, 1)), nbins, RT_VAL_HIST_BINS));
    IrDtype dt = x->type->dtype;
    IrType *bt = ir_dtype_is_float(dt) ? ir_type_scalar(dt) : f64;
    IrNode *first, *last, *empty = NULL;
    IrType *ct;
    if (range) {
        if (range->type->kind != IR_TY_TUPLE || range->type->nelems != 2 || range->type->elems[0]->kind != IR_TY_SCALAR ||
            range->type->elems[1]->kind != IR_TY_SCALAR)
            TS_ERR(ts, pos, "numpy.histogram(): range must be a tuple of two numbers");
        range = ts_reuse(ts, range);
        first = ir_tuple_get(ts->a, pos, range, 0);
        last = ir_tuple_get(ts->a, pos, range, 1);
        IrType *rt = ts_promote(first->type, last->type);
        /* NumPy's bin type: the range's and the data's, a float */
        ct = rt->weak ? f64 : ir_dtype_is_float(rt->dtype) ? ir_type_strong(rt) : f64;
        bt = ir_type_strong(ts_promote(ir_type_scalar(dt), ir_dtype_is_float(rt->dtype) ? rt : ir_type_weak(IR_DT_FLOAT64)));
        if (!ir_dtype_is_float(bt->dtype)) bt = f64;
        first = ts_reuse(ts, ts_cast(ts, first, ct));
        last = ts_reuse(ts, ts_cast(ts, last, ct));
        IrNode *ordered = ts_compare(ts, pos, IR_CMP_LE, first, last);
        first = ts_reuse(ts, check(ts, pos, ordered, first, RT_VAL_HIST_ORDER));
    } else {
        ct = bt;
        flat = ts_reuse(ts, flat);
        IrNode *size = ts_reuse(ts, ts_dim(ts, pos, flat, 0));
        empty = ts_reuse(ts, ts_compare(ts, pos, IR_CMP_EQ, size, ts_i64(ts, pos, 0)));
        ts->cond_depth++; /* the min and max only of a non-empty array */
        first = ifexp(ts, pos, empty, ir_const_float(ts->a, pos, ct, 0.0),
                      ts_cast(ts, ts_make_reduce(ts, pos, IR_RED_MIN, flat, -1, false, ir_type_scalar(dt)), ct));
        last = ifexp(ts, pos, again(ts, empty), ir_const_float(ts->a, pos, ct, 1.0),
                     ts_cast(ts, ts_make_reduce(ts, pos, IR_RED_MAX, flat, -1, false, ir_type_scalar(dt)), ct));
        ts->cond_depth--;
        first = ts_reuse(ts, first);
        last = ts_reuse(ts, last);
    }
    if (!first || !last) return NULL;
    IrNode *fin[2] = {first, last};
    IrNode *finite = ts_scalar_binop(ts, pos, IR_OP_BITAND, ts_math(ts, pos, IR_MATH_ISFINITE, &fin[0], 1, NULL),
                                     ts_math(ts, pos, IR_MATH_ISFINITE, &fin[1], 1, NULL));
    first = ts_reuse(ts, check(ts, pos, finite, first, RT_VAL_HIST_FINITE));
    /* equal ends widen by a half each way */
    IrNode *same_ends = ts_reuse(ts, ts_compare(ts, pos, IR_CMP_EQ, first, last));
    IrNode *half = ir_const_float(ts->a, pos, ir_type_weak(IR_DT_FLOAT64), 0.5);
    first = ts_reuse(ts, ifexp(ts, pos, same_ends, ts_cast(ts, ts_scalar_binop(ts, pos, IR_OP_SUB, first, half), ct), first));
    last = ts_reuse(ts, ifexp(ts, pos, same_ends, ts_cast(ts, ts_scalar_binop(ts, pos, IR_OP_ADD, last, again(ts, half)), ct), last));
    IrNode *e = uniform_edges(ts, pos, first, last, nbins, ct, bt);
    if (empty && ct != f64) {
        /* an empty array's range is NumPy's Python ints 0 and 1, whose linspace computes in float64 */
        IrNode *e64 = uniform_edges(ts, pos, ir_const_float(ts->a, pos, f64, 0.0), ir_const_float(ts->a, pos, f64, 1.0), nbins, f64, bt);
        e = ifexp(ts, pos, empty, e64, e);
    }
    e = ts_reuse(ts, e);
    IrNode *s = ts_reuse(ts, sort_node(ts, pos, ts_cast_array(ts, pos, flat, bt->dtype), 0, false));
    if (!e || !s) return NULL;
    return ts_pair(ts, pos, bin_counts(ts, pos, s, e), e);
}

IrNode *ts_numpy_sort(Ts *ts, Args *a, const char *name, bool *handled)
{
    *handled = true;
    if (!strcmp(name, "sort") || !strcmp(name, "argsort")) return call_sort(ts, a, name, name[0] == 'a');
    if (!strcmp(name, "median")) return call_median(ts, a);
    if (!strcmp(name, "percentile") || !strcmp(name, "quantile")) return call_quantile(ts, a, name[0] == 'p');
    if (!strcmp(name, "unique")) return call_unique(ts, a);
    if (!strcmp(name, "searchsorted")) return call_searchsorted(ts, a);
    if (!strcmp(name, "histogram")) return call_histogram(ts, a);
    *handled = false;
    return NULL;
}

IrNode *ts_method_sort(Ts *ts, Args *a, const char *name, bool *handled)
{
    *handled = true;
    if (!strcmp(name, "sort")) return sort_in_place(ts, a);
    if (!strcmp(name, "argsort")) return call_sort(ts, a, "argsort", true);
    *handled = false;
    return NULL;
}
