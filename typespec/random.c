/* random.c: np.random in compiled code: np.random.default_rng(seed) and the Generator methods random, uniform,
 * integers, normal, standard_normal, exponential, standard_exponential and permutation (float32 draws where NumPy
 * has them), as the rng_new and rng_draw intrinsics (ir.h), whose runtime
 * (runtime/random.c) is NumPy's PCG64, SeedSequence and distributions: the same numbers as NumPy for the same
 * seed. Sizes are an int or a tuple of ints (None: one scalar, a Python float, or a NumPy integer as NumPy
 * gives); parameters are numbers, not arrays (NumPy's broadcasting of parameter arrays is not built: a
 * CompileError says so). Every other form is a CompileError naming the line and the supported forms; nothing
 * here ever draws another stream silently. */
#include <string.h>
#include "ts_internal.h"

#define RNG_METHODS "random, uniform, integers, normal, standard_normal, exponential, standard_exponential, permutation and shuffle"

static bool is_none(const IrNode *n) { return !n || n->type->kind == IR_TY_NONE; }

/* np.random.default_rng(seed=None): an int seed, None (the OS's entropy), or a Generator (returned as it is, as
 * NumPy does). */
static IrNode *default_rng(Ts *ts, Args *a)
{
    IrPos pos = a->call->pos;
    if (a->npos > 1) TS_ERR(ts, pos, "numpy.random.default_rng() takes one argument, the seed");
    IrNode *seed = ts_arg(a, 0, "seed");
    if (seed && seed->type->kind == IR_TY_RNG) return seed;
    if (!is_none(seed) && !ts_is_int_scalar(seed->type))
        TS_ERR(ts, pos, "numpy.random.default_rng(): the seed must be an int or None here, not %s (sequences of ints "
               "and SeedSequence objects are not supported in compiled code)", ts_type_name(seed->type));
    IrNode *args[2] = {ts_i64(ts, pos, !is_none(seed)),
                       is_none(seed) ? ts_i64(ts, pos, 0) : ts_cast(ts, seed, ir_type_scalar(IR_DT_INT64))};
    if (!args[1]) return NULL;
    return ir_intrinsic_call(ts->a, pos, IR_INTR_RNG_NEW, args, 2, ir_type_rng());
}

IrNode *ts_numpy_random(Ts *ts, Args *a, const char *name)
{
    if (!strcmp(name, "default_rng")) return default_rng(ts, a);
    TS_ERR(ts, a->call->pos, "numpy.random.%s() is not supported: NumPy's legacy global generator has no place in "
           "compiled code; use rng = np.random.default_rng(seed) and its methods (" RNG_METHODS ")", name);
}

/* A parameter (low, high, loc, scale): a number, as float64 or int64 (want). */
static IrNode *param(Ts *ts, IrPos pos, const char *method, const char *pname, IrNode *v, double dflt, IrDtype want)
{
    if (!v || v->type->kind == IR_TY_NONE) {
        if (want == IR_DT_INT64) return ts_i64(ts, pos, (int64_t)dflt);
        IrNode *c = ir_node(ts->a, IR_CONST, pos);
        c->type = ir_type_scalar(IR_DT_FLOAT64);
        c->u.konst.f = dflt;
        return c;
    }
    if (v->type->kind == IR_TY_ARRAY)
        TS_ERR(ts, pos, "Generator.%s(): %s as an array (NumPy's broadcasting of parameters) is not supported in "
               "compiled code; pass a number", method, pname);
    if (v->type->kind != IR_TY_SCALAR || ir_dtype_is_complex(v->type->dtype))
        TS_ERR(ts, pos, "Generator.%s(): %s must be a number, not %s", method, pname, ts_type_name(v->type));
    if (want == IR_DT_INT64 && !ts_is_int_scalar(v->type))
        TS_ERR(ts, pos, "Generator.%s(): %s must be an integer, not %s", method, pname, ts_type_name(v->type));
    return ts_cast(ts, v, ir_type_scalar(want));
}

/* a draw's parameter slot that its method does not read (0.0) */
static IrNode *unused_param(Ts *ts, IrPos pos)
{
    IrNode *c = ir_node(ts->a, IR_CONST, pos);
    c->type = ir_type_scalar(IR_DT_FLOAT64);
    return c;
}

/* The draw: size None is one scalar of type scalar_t, else an array of dt of that shape. */
static IrNode *draw(Ts *ts, IrPos pos, const char *method, IrNode *g, int rt_method, IrNode *pa, IrNode *pb,
                    IrNode *size, IrDtype dt, IrType *scalar_t)
{
    if (!pa || !pb) return NULL;
    IrNode **dims = NULL;
    int nd = 0;
    if (!is_none(size)) {
        nd = ts_shape_arg(ts, size, &dims);
        if (nd < 0) TS_ERR(ts, pos, "Generator.%s(): size must be an int or a tuple of ints, not %s", method, ts_type_name(size->type));
        if (nd > IR_MAX_DIMS) TS_ERR(ts, pos, "Generator.%s(): size has more than %d dimensions", method, IR_MAX_DIMS);
    }
    IrNode **args = ir_nodes(ts->a, 4 + nd);
    args[0] = g;
    args[1] = ts_i64(ts, pos, rt_method);
    args[2] = pa;
    args[3] = pb;
    for (int d = 0; d < nd; d++) args[4 + d] = dims[d];
    IrType *t = nd ? ir_type_array(dt, nd, IR_LAYOUT_C) : scalar_t;
    return ir_intrinsic_call(ts->a, pos, IR_INTR_RNG_DRAW, args, 4 + nd, t);
}

/* dtype= of random(), standard_normal() and standard_exponential(): float64 or float32 (NumPy's float32 streams:
 * other numbers than float64's, from 32-bit draws); out= is not supported. false with diag set. */
static bool float_dtype(Ts *ts, Args *a, int i, const char *method, IrDtype *dt)
{
    IrNode *d = ts_arg(a, i, "dtype");
    *dt = IR_DT_FLOAT64;
    if (d && (!ts_dtype_arg(ts, d, dt) || (*dt != IR_DT_FLOAT64 && *dt != IR_DT_FLOAT32))) {
        if (!ts->dry)
            lk_diag_set(ts->diag, LK_ERR_TYPE, ts->src->file, a->call->pos.line, a->call->pos.col,
                        "Generator.%s(): dtype must be np.float64 or np.float32", method);
        return false;
    }
    IrNode *out = ts_arg(a, i + (strcmp(method, "standard_exponential") == 0 ? 2 : 1), "out");
    if (!is_none(out)) {
        if (!ts->dry)
            lk_diag_set(ts->diag, LK_ERR_TYPE, ts->src->file, a->call->pos.line, a->call->pos.col,
                        "Generator.%s(): out= is not supported in compiled code (assign the result instead)", method);
        return false;
    }
    return true;
}

/* A draw of a float dtype: an array of dt, or one number, which NumPy returns as a Python float whatever dt is */
static IrNode *float_draw(Ts *ts, IrPos pos, const char *method, IrNode *g, int rt_method, IrNode *pa, IrNode *pb,
                          IrNode *size, IrDtype dt)
{
    IrNode *r = draw(ts, pos, method, g, rt_method, pa, pb, size, dt, ir_type_scalar(dt));
    if (r && r->type->kind == IR_TY_SCALAR) r = ts_cast(ts, r, ir_type_weak(IR_DT_FLOAT64));
    return r;
}

static IrNode *rows_permuted(Ts *ts, IrPos pos, IrNode *g, IrNode *xs);

/* np.arange(n) shuffled as NumPy's Generator.shuffle does (n >= 0, int64): a new int64 array */
static IrNode *shuffled_range(Ts *ts, IrPos pos, IrNode *g, IrNode *n)
{
    if (!n) return NULL;
    IrNode *t = ir_node(ts->a, IR_TUPLE, pos);
    IrType *elem = ir_type_scalar(IR_DT_INT64);
    t->u.tuple.n = 1;
    t->u.tuple.items = ir_nodes(ts->a, 1);
    t->u.tuple.items[0] = n;
    t->type = ir_type_tuple(&elem, 1);
    IrNode *z0 = unused_param(ts, pos), *z1 = unused_param(ts, pos);
    return draw(ts, pos, "permutation", g, RT_RNG_PERMUTATION, z0, z1, t, IR_DT_INT64, NULL);
}

/* permutation(x, axis=0): x an int n (np.arange(n) shuffled, as NumPy's shuffle draws) or an array (its rows in
 * that order: x[permutation(len(x))], a new array) */
static IrNode *permutation(Ts *ts, Args *a, IrNode *g)
{
    IrPos pos = a->call->pos;
    IrNode *x = ts_arg(a, 1, "x"), *axis = ts_arg(a, 2, "axis");
    if (a->npos > 3) TS_ERR(ts, pos, "Generator.permutation() takes x and axis");
    if (!x) TS_ERR(ts, pos, "Generator.permutation() needs x");
    if (axis && !(axis->kind == IR_CONST && axis->type->kind == IR_TY_SCALAR && ts_is_int_scalar(axis->type) && axis->u.konst.i == 0))
        TS_ERR(ts, pos, "Generator.permutation(): only axis=0 is supported in compiled code");
    if (x->type->kind == IR_TY_SCALAR && ts_is_int_scalar(x->type) && x->type->dtype != IR_DT_BOOL) {
        /* np.arange(n) of a negative n is empty */
        IrNode *n = ts_cast(ts, x, ir_type_scalar(IR_DT_INT64));
        return n ? shuffled_range(ts, pos, g, ts_scalar_binop(ts, pos, IR_OP_MAX, n, ts_i64(ts, pos, 0))) : NULL;
    }
    if (x->type->kind != IR_TY_ARRAY || x->type->ndim == 0)
        TS_ERR(ts, pos, "Generator.permutation(): x must be an int or an array, not %s", ts_type_name(x->type));
    return rows_permuted(ts, pos, g, ts_reuse(ts, x));
}

/* xs's rows in the order of a permutation of its length drawn from g (NumPy's shuffle): a new array */
static IrNode *rows_permuted(Ts *ts, IrPos pos, IrNode *g, IrNode *xs)
{
    if (!xs) return NULL;
    IrNode *perm = ts_reuse(ts, shuffled_range(ts, pos, g, ts_dim(ts, pos, xs, 0)));
    if (!perm) return NULL;
    /* x's rows in perm's order: an index map over x's shape reading x[perm[i], j, ...] */
    int nd = xs->type->ndim;
    IrNode **dims = ir_nodes(ts->a, nd);
    for (int d = 0; d < nd; d++) dims[d] = ts_dim(ts, pos, xs, d);
    IrNode *m = ts_make_imap(ts, pos, dims, nd);
    if (!m) return NULL;
    IrNode *get = ir_node(ts->a, IR_INDEX, pos);
    get->u.index.base = ir_copy(ts->a, xs, NULL);
    get->u.index.n = nd;
    get->u.index.items = ir_nodes(ts->a, nd);
    get->u.index.items[0] = ts_elem_at(ts, pos, perm, ts_var(ts, pos, m->u.imap.idx[0]), false); /* in range */
    for (int d = 1; d < nd; d++) get->u.index.items[d] = ts_var(ts, pos, m->u.imap.idx[d]);
    get->type = ir_type_scalar(xs->type->dtype);
    m->u.imap.body = get;
    m->type = ir_type_array(xs->type->dtype, nd, IR_LAYOUT_C);
    return m;
}

/* integers(low, high=None, size=None, dtype=np.int64, endpoint=False) */
static IrNode *integers(Ts *ts, Args *a, IrNode *g)
{
    IrPos pos = a->call->pos;
    IrNode *low = ts_arg(a, 1, "low"), *high = ts_arg(a, 2, "high");
    if (!low) TS_ERR(ts, pos, "Generator.integers() needs low (or high)");
    if (is_none(high)) { /* integers(n) draws from [0, n) */
        high = low;
        low = NULL;
    }
    IrDtype dt = IR_DT_INT64;
    IrNode *d = ts_arg(a, 4, "dtype");
    if (d && (!ts_dtype_arg(ts, d, &dt) || (dt != IR_DT_INT64 && dt != IR_DT_INT32)))
        TS_ERR(ts, pos, "Generator.integers(): dtype must be np.int64 (the default) or np.int32 in compiled code");
    IrNode *e = ts_arg(a, 5, "endpoint");
    bool closed = false;
    if (e) {
        if (e->kind != IR_CONST || e->type->kind != IR_TY_SCALAR || e->type->dtype != IR_DT_BOOL)
            TS_ERR(ts, pos, "Generator.integers(): endpoint must be True or False written in the call");
        closed = e->u.konst.i != 0;
    }
    IrNode *lo = param(ts, pos, "integers", "low", low, 0, IR_DT_INT64);
    IrNode *hi = param(ts, pos, "integers", "high", high, 0, IR_DT_INT64);
    return draw(ts, pos, "integers", g, closed ? RT_RNG_INTEGERS_CLOSED : RT_RNG_INTEGERS, lo, hi, ts_arg(a, 3, "size"),
                dt, ir_type_scalar(dt));
}

/* shuffle(x, axis=0): x's rows in place, in the order NumPy's shuffle leaves them (the permutation above: the
 * same swaps); None. The rows are gathered into a new array first, then copied back into x. */
static IrNode *shuffle(Ts *ts, Args *a, IrNode *g)
{
    IrPos pos = a->call->pos;
    IrNode *x = ts_arg(a, 1, "x"), *axis = ts_arg(a, 2, "axis");
    if (a->npos > 3) TS_ERR(ts, pos, "Generator.shuffle() takes x and axis");
    if (!x) TS_ERR(ts, pos, "Generator.shuffle() needs x");
    if (axis && !(axis->kind == IR_CONST && axis->type->kind == IR_TY_SCALAR && ts_is_int_scalar(axis->type) && axis->u.konst.i == 0))
        TS_ERR(ts, pos, "Generator.shuffle(): only axis=0 is supported in compiled code");
    if (x->type->kind != IR_TY_ARRAY || x->type->ndim == 0)
        TS_ERR(ts, pos, "Generator.shuffle(): x must be an array, not %s", ts_type_name(x->type));
    IrNode *xs = ts_reuse(ts, x);
    IrNode *rows = xs ? ts_reuse(ts, rows_permuted(ts, pos, g, xs)) : NULL;
    if (!rows) return NULL;
    IrNode *none = ir_node(ts->a, IR_CONST, pos);
    none->type = ir_type_none();
    IrNode *st = ir_node(ts->a, IR_EXPR_STMT, pos);
    if (x->type->readonly) {
        IrNode *before[1] = {rows};
        st->u.expr_stmt.value = ts_readonly_write(ts, pos, before, 1, ir_type_none(), false);
    } else {
        IrNode *in[1] = {rows};
        st->u.expr_stmt.value = ts_make_map_into(ts, pos, ir_copy(ts->a, xs, NULL), in, 1, NULL, NULL);
    }
    if (!st->u.expr_stmt.value) return NULL;
    ir_block_push(ts->a, ts->pre, st);
    return none;
}

IrNode *ts_rng_method(Ts *ts, Args *a, const char *name)
{
    IrPos pos = a->call->pos;
    IrNode *g = a->pos[0];
    IrType *f64 = ir_type_weak(IR_DT_FLOAT64); /* a scalar draw is a Python float, as NumPy returns */
    IrDtype dt;
    if (!strcmp(name, "random") || !strcmp(name, "standard_normal")) {
        if (a->npos > 4 || !float_dtype(ts, a, 2, name, &dt)) return NULL;
        IrNode *z0 = unused_param(ts, pos), *z1 = unused_param(ts, pos);
        return float_draw(ts, pos, name, g, name[0] == 'r' ? RT_RNG_RANDOM : RT_RNG_STANDARD_NORMAL, z0, z1,
                          ts_arg(a, 1, "size"), dt);
    }
    if (!strcmp(name, "standard_exponential")) {
        /* standard_exponential(size=None, dtype=np.float64, method='zig', out=None): 'inv' is the inverse CDF */
        if (a->npos > 5 || !float_dtype(ts, a, 2, name, &dt)) return NULL;
        int how = RT_RNG_STANDARD_EXPONENTIAL;
        IrNode *m = ts_arg(a, 3, "method");
        if (m) { /* the frontend made 'zig' 0 and 'inv' 1 (lower_einsum.c) */
            if (m->kind != IR_CONST || m->type->kind != IR_TY_SCALAR || !ts_is_int_scalar(m->type))
                TS_ERR(ts, pos, "Generator.standard_exponential(): method must be 'zig' or 'inv' written in the call");
            if (m->u.konst.i) how = RT_RNG_STANDARD_EXPONENTIAL_INV;
        }
        IrNode *z0 = unused_param(ts, pos), *z1 = unused_param(ts, pos);
        return float_draw(ts, pos, name, g, how, z0, z1, ts_arg(a, 1, "size"), dt);
    }
    if (!strcmp(name, "exponential")) {
        if (a->npos > 3) TS_ERR(ts, pos, "Generator.exponential() takes scale and size");
        IrNode *z0 = unused_param(ts, pos);
        IrNode *scale = param(ts, pos, name, "scale", ts_arg(a, 1, "scale"), 1.0, IR_DT_FLOAT64);
        return draw(ts, pos, name, g, RT_RNG_EXPONENTIAL, z0, scale, ts_arg(a, 2, "size"), IR_DT_FLOAT64, f64);
    }
    if (!strcmp(name, "permutation")) return permutation(ts, a, g);
    if (!strcmp(name, "shuffle")) return shuffle(ts, a, g);
    if (!strcmp(name, "uniform")) {
        if (a->npos > 4) TS_ERR(ts, pos, "Generator.uniform() takes low, high and size");
        IrNode *lo = param(ts, pos, name, "low", ts_arg(a, 1, "low"), 0.0, IR_DT_FLOAT64);
        IrNode *hi = param(ts, pos, name, "high", ts_arg(a, 2, "high"), 1.0, IR_DT_FLOAT64);
        return draw(ts, pos, name, g, RT_RNG_UNIFORM, lo, hi, ts_arg(a, 3, "size"), IR_DT_FLOAT64, f64);
    }
    if (!strcmp(name, "normal")) {
        if (a->npos > 4) TS_ERR(ts, pos, "Generator.normal() takes loc, scale and size");
        IrNode *loc = param(ts, pos, name, "loc", ts_arg(a, 1, "loc"), 0.0, IR_DT_FLOAT64);
        IrNode *scale = param(ts, pos, name, "scale", ts_arg(a, 2, "scale"), 1.0, IR_DT_FLOAT64);
        return draw(ts, pos, name, g, RT_RNG_NORMAL, loc, scale, ts_arg(a, 3, "size"), IR_DT_FLOAT64, f64);
    }
    if (!strcmp(name, "integers")) {
        if (a->npos > 6) TS_ERR(ts, pos, "Generator.integers() takes low, high, size, dtype and endpoint");
        return integers(ts, a, g);
    }
    TS_ERR(ts, pos, "Generator.%s() is not supported in compiled code: the supported methods are " RNG_METHODS, name);
}
