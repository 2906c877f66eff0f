/* library.c: calls. Builtins (len, abs, min, max, int, float, bool), the math module, the NumPy functions and
 * array methods lorikeet knows, and calls of other user functions (specialised on the argument types). Each
 * library function is lowered here to IR nodes: scalar math, maps, reductions and allocations. */
#include <string.h>
#include "ts_internal.h"

/* ---------------- math ---------------- */

typedef struct MathEnv {
    IrMathFn fn;
    IrType *force;
} MathEnv;

IrNode *ts_math(Ts *ts, IrPos pos, IrMathFn fn, IrNode **args, int nargs, IrType *force);

static IrNode *elem_math(Ts *ts, IrPos pos, IrNode **e, int n, void *env)
{
    MathEnv *m = env;
    return ts_math(ts, pos, m->fn, e, n, m->force);
}

/* The type a math function of these scalars computes in: NumPy picks the first loop (e, f, d) to which every
 * operand casts safely, so integers of several dtypes give the widest of their own float types, not the float
 * type of their promotion (np.arctan2(np.uint8(3), int8_array) is float16: both cast safely to it, where their
 * promotion, int16, would give float32). A Python int (weak) counts with each of them, as NumPy 2 promotes it
 * (it lifts only a bool, to int64); where a float is among the operands, or only Python numbers are, it is the
 * promotion's. */
IrType *ts_math_type_of(IrNode **args, int nargs)
{
    IrType *t = args[0]->type;
    for (int i = 1; i < nargs; i++) t = ts_promote(t, args[i]->type);
    if (nargs == 1 || t->weak || !(ir_dtype_is_int(t->dtype) || t->dtype == IR_DT_BOOL)) return ts_math_type(t);
    IrType *widest = NULL;
    for (int i = 0; i < nargs; i++) {
        if (args[i]->type->weak) continue;
        IrType *own = args[i]->type; /* with the Python ints, which lift a bool to int64 */
        for (int j = 0; j < nargs; j++)
            if (args[j]->type->weak) own = ts_promote(own, args[j]->type);
        own = ts_math_type(own);
        widest = widest ? ts_promote(widest, own) : own;
    }
    return widest ? widest : ts_math_type(t);
}

IrNode *ts_math(Ts *ts, IrPos pos, IrMathFn fn, IrNode **args, int nargs, IrType *force)
{
    for (int i = 0; i < nargs; i++) {
        if (!args[i]) return NULL;
        if (ts_is_array(args[i])) {
            MathEnv env = {fn, force};
            return ts_make_map(ts, pos, args, nargs, elem_math, &env);
        }
        if (args[i]->type->kind != IR_TY_SCALAR)
            TS_ERR(ts, pos, "%s() needs numbers, not %s", ir_math_name(fn), ts_type_name(args[i]->type));
    }
    IrType *t = force ? force : ts_math_type_of(args, nargs);
    bool is_pred = fn == IR_MATH_ISNAN || fn == IR_MATH_ISINF || fn == IR_MATH_ISFINITE;
    if (is_pred && !ir_dtype_is_float(args[0]->type->dtype))
        return ts_after_effects(ts, pos, args[0], ir_const_int(ts->a, pos, ir_type_scalar(IR_DT_BOOL), fn == IR_MATH_ISFINITE));
    IrNode *m = ir_node(ts->a, IR_MATH, pos);
    m->u.math.fn = fn;
    m->type = is_pred ? ir_type_scalar(IR_DT_BOOL) : t;
    for (int i = 0; i < nargs; i++)
        if (!(m->u.math.args[i] = ts_cast(ts, args[i], is_pred ? args[i]->type : t))) return NULL;
    return m;
}

typedef struct MathName {
    const char *name;
    IrMathFn fn;
} MathName;

/* Names shared by the math module and NumPy, and each one's own spellings. */
static const MathName math_names[] = {
    {"sqrt", IR_MATH_SQRT}, {"exp", IR_MATH_EXP}, {"exp2", IR_MATH_EXP2}, {"expm1", IR_MATH_EXPM1},
    {"log", IR_MATH_LOG}, {"log2", IR_MATH_LOG2}, {"log10", IR_MATH_LOG10}, {"log1p", IR_MATH_LOG1P},
    {"sin", IR_MATH_SIN}, {"cos", IR_MATH_COS}, {"tan", IR_MATH_TAN}, {"asin", IR_MATH_ASIN}, {"arcsin", IR_MATH_ASIN},
    {"acos", IR_MATH_ACOS}, {"arccos", IR_MATH_ACOS}, {"atan", IR_MATH_ATAN}, {"arctan", IR_MATH_ATAN},
    {"sinh", IR_MATH_SINH}, {"cosh", IR_MATH_COSH}, {"tanh", IR_MATH_TANH}, {"asinh", IR_MATH_ASINH},
    {"arcsinh", IR_MATH_ASINH}, {"acosh", IR_MATH_ACOSH}, {"arccosh", IR_MATH_ACOSH}, {"atanh", IR_MATH_ATANH},
    {"arctanh", IR_MATH_ATANH}, {"floor", IR_MATH_FLOOR}, {"ceil", IR_MATH_CEIL}, {"trunc", IR_MATH_TRUNC},
    {"rint", IR_MATH_RINT}, {"fabs", IR_MATH_FABS}, {"cbrt", IR_MATH_CBRT}, {"isnan", IR_MATH_ISNAN},
    {"isinf", IR_MATH_ISINF}, {"isfinite", IR_MATH_ISFINITE}, {"atan2", IR_MATH_ATAN2}, {"arctan2", IR_MATH_ATAN2},
    {"hypot", IR_MATH_HYPOT}, {"pow", IR_MATH_POW}, {"fmod", IR_MATH_FMOD}, {"copysign", IR_MATH_COPYSIGN},
    {"erf", IR_MATH_ERF}, {"erfc", IR_MATH_ERFC}, {"gamma", IR_MATH_GAMMA}, {"lgamma", IR_MATH_LGAMMA},
};

static bool lookup_math(const char *name, IrMathFn *fn)
{
    for (size_t i = 0; i < sizeof math_names / sizeof math_names[0]; i++)
        if (strcmp(math_names[i].name, name) == 0) {
            *fn = math_names[i].fn;
            return true;
        }
    return false;
}

/* degrees(x) = x * (180 / pi); radians(x) = x * (pi / 180). force: the float type (math: float64). */
static IrNode *angle_convert(Ts *ts, IrPos pos, IrNode *x, bool to_degrees, IrType *force)
{
    IrType *ft = force ? force : ts_math_type(ts_elem_type(x->type)), *ct = ts_compute_type(ft);
    IrNode *k = ir_const_float(ts->a, pos, ir_type_weak(IR_DT_FLOAT64), to_degrees ? 57.29577951308232 : 0.017453292519943295);
    bool arr = ts_is_array(x);
    IrNode *r = ts_binop(ts, pos, IR_OP_MUL, arr ? ts_cast_array(ts, pos, x, ct->dtype) : ts_cast(ts, x, ct), k);
    if (ct == ft || !r) return r;
    return arr ? ts_cast_array(ts, pos, r, ft->dtype) : ts_cast(ts, r, ft); /* float16: rounded once */
}

/* math.f(x): Python floats in and out (math.floor/ceil/trunc give ints), weak in NEP 50's promotion (ts_call). */
static IrNode *call_math_module(Ts *ts, Args *a, const char *name)
{
    IrPos pos = a->call->pos;
    IrType *f64 = ir_type_scalar(IR_DT_FLOAT64);
    for (int i = 0; i < a->npos; i++)
        if (a->pos[i]->type->kind != IR_TY_SCALAR)
            TS_ERR(ts, pos, "math.%s() needs scalars, not %s (use numpy.%s for arrays)", name, ts_type_name(a->pos[i]->type), name);
    IrMathFn fn;
    if (!strcmp(name, "degrees") || !strcmp(name, "radians")) {
        if (!ts_check_args(ts, a, name, 1, 1)) return NULL;
        return angle_convert(ts, pos, a->pos[0], name[0] == 'd', f64);
    }
    if (strcmp(name, "log") == 0 && a->npos == 2) {
        IrNode *num = ts_math(ts, pos, IR_MATH_LOG, &a->pos[0], 1, f64);
        IrNode *den = ts_math(ts, pos, IR_MATH_LOG, &a->pos[1], 1, f64);
        return ts_scalar_binop(ts, pos, IR_OP_DIV, num, den);
    }
    if (!lookup_math(name, &fn) || strcmp(name, "rint") == 0 || strncmp(name, "arc", 3) == 0)
        return ts_unsupported(ts, pos, TS_LIB_MATH, "math.", name, "");
    if (!ts_check_args(ts, a, name, ir_math_arity(fn), ir_math_arity(fn))) return NULL;
    if ((fn == IR_MATH_FLOOR || fn == IR_MATH_CEIL || fn == IR_MATH_TRUNC) && ts_is_int_scalar(a->pos[0]->type))
        return ts_cast(ts, a->pos[0], ir_type_weak(IR_DT_INT64));
    IrNode *m = ts_math(ts, pos, fn, a->pos, a->npos, (fn == IR_MATH_ISNAN || fn == IR_MATH_ISINF || fn == IR_MATH_ISFINITE) ? NULL : f64);
    if (m && (fn == IR_MATH_FLOOR || fn == IR_MATH_CEIL || fn == IR_MATH_TRUNC)) return ts_cast(ts, m, ir_type_weak(IR_DT_INT64));
    return m;
}

/* ---------------- reductions ---------------- */

static IrType *sum_type(IrDtype dt)
{
    if (dt == IR_DT_BOOL || (ir_dtype_is_signed(dt))) return ir_type_scalar(IR_DT_INT64);
    if (ir_dtype_is_int(dt)) return ir_type_scalar(IR_DT_UINT64);
    return ir_type_scalar(dt);
}

static IrNode *elem_truth(Ts *ts, IrPos pos, IrNode **e, int n, void *env) { return ts_truth(ts, e[0]); }

static IrNode *elem_nan_to_zero(Ts *ts, IrPos pos, IrNode **e, int n, void *env)
{
    IrNode *isnan = ts_math(ts, pos, IR_MATH_ISNAN, e, 1, NULL);
    IrNode *r = ir_node(ts->a, IR_IFEXP, pos);
    r->type = e[0]->type;
    r->u.ifexp.cond = isnan;
    r->u.ifexp.then = ir_const_float(ts->a, pos, e[0]->type, 0.0);
    r->u.ifexp.orelse = e[0];
    return isnan ? r : NULL;
}

static bool int_operands(IrNode **x, int n)
{
    for (int i = 0; i < n; i++) {
        IrType *t = x[i]->type;
        if ((t->kind != IR_TY_ARRAY && t->kind != IR_TY_SCALAR) || ir_dtype_is_float(t->dtype)) return false;
    }
    return true;
}

/* np.fmod of integers (and bools) is an integer: C's remainder, with the dividend's sign (np.fmod(-7, 3) is
 * -1), from the floor remainder `%` (the divisor's sign, its ZeroDivisionError for 0) moved by b where the
 * signs differ. */
static IrNode *elem_int_fmod(Ts *ts, IrPos pos, IrNode **e, int n, void *env)
{
    IrNode *x = ts_reuse(ts, e[0]), *y = ts_reuse(ts, e[1]);
    IrNode *r = ts_reuse(ts, ts_scalar_binop(ts, pos, IR_OP_MOD, x, y));
    if (!r || !ir_dtype_is_signed(r->type->dtype)) return r;
    IrType *t = r->type;
    IrNode *zero = ir_const_int(ts->a, pos, t, 0);
    IrNode *x_neg = ts_compare(ts, pos, IR_CMP_LT, ts_cast(ts, x, t), zero);
    IrNode *y_neg = ts_compare(ts, pos, IR_CMP_LT, ts_cast(ts, y, t), zero);
    IrNode *differ = ts_scalar_binop(ts, pos, IR_OP_BITXOR, x_neg, y_neg);
    IrNode *move = ts_scalar_binop(ts, pos, IR_OP_BITAND, differ, ts_compare(ts, pos, IR_CMP_NE, r, zero));
    IrNode *f = ir_node(ts->a, IR_IFEXP, pos);
    f->type = t;
    f->u.ifexp.cond = move;
    f->u.ifexp.then = ts_scalar_binop(ts, pos, IR_OP_SUB, r, ts_cast(ts, y, t));
    f->u.ifexp.orelse = r;
    return move && f->u.ifexp.then ? f : NULL;
}

static IrNode *elem_sqdiff(Ts *ts, IrPos pos, IrNode **e, int n, void *env)
{
    IrNode *d = ts_scalar_binop(ts, pos, IR_OP_SUB, e[0], e[1]);
    return ts_scalar_binop(ts, pos, IR_OP_MUL, d, d);
}

/* s / count in the result type rt. NumPy divides a float16 sum by the count (an intp) in float64 and rounds once;
 * a division in float16 would round the count too (65504 is the largest float16). */
static IrNode *divide_by_count(Ts *ts, IrPos pos, IrNode *s, IrNode *count, IrType *rt)
{
    if (!s) return NULL;
    if (rt->dtype != IR_DT_FLOAT16) return ts_binop(ts, pos, IR_OP_DIV, s, ts_cast(ts, count, rt));
    IrType *f64 = ir_type_scalar(IR_DT_FLOAT64);
    bool arr = ts_is_array(s);
    IrNode *q = ts_binop(ts, pos, IR_OP_DIV, arr ? ts_cast_array(ts, pos, s, IR_DT_FLOAT64) : ts_cast(ts, s, f64),
                         ts_cast(ts, count, f64));
    if (!q) return NULL;
    return arr ? ts_cast_array(ts, pos, q, IR_DT_FLOAT16) : ts_cast(ts, q, rt);
}

/* A reduction of a scalar x: NumPy's answer for the 0-d array x would be. x is evaluated once (for its effects,
 * where the answer does not need its value). NULL for the reductions that return x itself. */
static IrNode *scalar_reduction(Ts *ts, Args *a, const char *name, IrNode *x)
{
    IrPos pos = a->call->pos;
    IrType *f64 = ir_type_scalar(IR_DT_FLOAT64);
    if (!strcmp(name, "argmin") || !strcmp(name, "argmax")) {
        /* the index 0, as int64: x * 0.0 is 0 or NaN, which both convert to 0 */
        IrNode *zero = ts_scalar_binop(ts, pos, IR_OP_MUL, ts_cast(ts, x, f64), ir_const_float(ts->a, pos, f64, 0.0));
        return ts_cast(ts, zero, ir_type_scalar(IR_DT_INT64));
    }
    if (!strcmp(name, "var") || !strcmp(name, "std")) {
        IrNode *ddof = ts_arg(a, 4, "ddof"); /* any number known at run time, as for arrays */
        if (ddof && ddof->type->kind != IR_TY_SCALAR)
            TS_ERR(ts, pos, "%s(): ddof must be a number, not %s", name, ts_type_name(ddof->type));
        IrDtype dt = ir_type_strong(x->type)->dtype;
        IrType *acc = ir_type_scalar(ir_dtype_is_float(dt) ? dt : IR_DT_FLOAT64);
        /* the squared deviation from the mean, |x * 0|: 0, or NaN for a NaN or infinite x (inf - inf), over
         * max(1 - ddof, 0) */
        IrNode *dev = ts_scalar_binop(ts, pos, IR_OP_MUL, ts_cast(ts, x, acc), ir_const_float(ts->a, pos, acc, 0.0));
        IrNode *dof = ddof ? ts_scalar_binop(ts, pos, IR_OP_SUB, ts_i64(ts, pos, 1), ddof) : ts_i64(ts, pos, 1);
        dof = dof ? ts_scalar_binop(ts, pos, IR_OP_MAX, dof, ts_i64(ts, pos, 0)) : NULL;
        IrNode *var = dof ? divide_by_count(ts, pos, ts_scalar_unop(ts, pos, IR_UOP_ABS, dev), dof, acc) : NULL;
        if (!var || name[0] == 'v') return var;
        return ts_math(ts, pos, IR_MATH_SQRT, &var, 1, acc);
    }
    return NULL;
}

static IrNode *reduction_along(Ts *ts, Args *a, const char *name, IrNode *x, int64_t axis, bool keepdims);

/* np.sum(x, axis=None, keepdims=False) and friends; x may be a method's receiver. The axis is a constant, or a
 * variable whose value picks one of the reductions along each axis at run time. */
static IrNode *call_reduction(Ts *ts, Args *a, const char *name)
{
    IrPos pos = a->call->pos;
    IrNode *x = ts_arg(a, 0, "a");
    if (!x) TS_ERR(ts, pos, "%s() needs an array", name);
    int64_t axis = -1;
    bool keepdims = false;
    const IrNode *axis_node = a->call->u.call.nargs > 1 ? a->call->u.call.args[1] : ts_kw(a, "axis");
    bool axis_at_run_time = false;
    if (axis_node && !(axis_node->kind == IR_CONST && axis_node->type->kind == IR_TY_NONE)) {
        if (!ts_const_int(axis_node, &axis)) {
            axis_at_run_time = true;
        } else {
            if (x->type->kind == IR_TY_ARRAY && axis < 0) axis += x->type->ndim;
            if (axis < 0) TS_ERR(ts, pos, "%s(): axis is out of bounds", name);
        }
    }
    const IrNode *kd = ts_kw(a, "keepdims");
    if (kd) {
        int64_t v;
        if (!ts_const_int(kd, &v)) TS_ERR(ts, pos, "%s(): keepdims must be True or False", name);
        keepdims = v != 0;
    }
    if (axis_at_run_time) {
        IrNode *given = a->call->u.call.nargs > 1 ? a->pos[1] : ts_arg(a, -1, "axis");
        if (given && given->type->kind == IR_TY_NONE) /* axis=None passed on (`def f(m, axis=None)`) */
            return reduction_along(ts, a, name, x, -1, keepdims);
        return ts_run_time_axis(ts, a, name, x, given, keepdims, reduction_along);
    }
    return reduction_along(ts, a, name, x, axis, keepdims);
}

/* The reduction `name` of x along axis (-1: everything), x already typed. */
static IrNode *reduction_along(Ts *ts, Args *a, const char *name, IrNode *x, int64_t axis, bool keepdims)
{
    IrPos pos = a->call->pos;
    if (x->type->kind == IR_TY_SCALAR) {
        if (strcmp(name, "mean") == 0) return ts_cast(ts, x, ir_dtype_is_float(x->type->dtype) || ir_dtype_is_complex(x->type->dtype)
                                                             ? ir_type_strong(x->type) : ir_type_scalar(IR_DT_FLOAT64));
        if (strcmp(name, "all") == 0 || strcmp(name, "any") == 0) return ts_truth(ts, x);
        if (strcmp(name, "sum") == 0 || strcmp(name, "prod") == 0) return ts_cast(ts, x, sum_type(ir_type_strong(x->type)->dtype));
        if (!strcmp(name, "cumsum") || !strcmp(name, "cumprod")) TS_ERR(ts, pos, "%s() of a scalar is not supported", name);
        if (!strcmp(name, "argmin") || !strcmp(name, "argmax") || !strcmp(name, "var") || !strcmp(name, "std"))
            return scalar_reduction(ts, a, name, x);
        return x;
    }
    if (x->type->kind != IR_TY_ARRAY) TS_ERR(ts, pos, "%s() needs an array, not %s", name, ts_type_name(x->type));
    IrDtype dt = x->type->dtype;
    if (strcmp(name, "sum") == 0) return ts_make_reduce(ts, pos, IR_RED_ADD, x, (int)axis, keepdims, sum_type(dt));
    if (strcmp(name, "prod") == 0) return ts_make_reduce(ts, pos, IR_RED_MUL, x, (int)axis, keepdims, sum_type(dt));
    if (strcmp(name, "min") == 0 || strcmp(name, "amin") == 0)
        return ts_make_reduce(ts, pos, IR_RED_MIN, x, (int)axis, keepdims, ir_type_scalar(dt));
    if (strcmp(name, "max") == 0 || strcmp(name, "amax") == 0)
        return ts_make_reduce(ts, pos, IR_RED_MAX, x, (int)axis, keepdims, ir_type_scalar(dt));
    if (strcmp(name, "all") == 0 || strcmp(name, "any") == 0) {
        IrNode *in[1] = {x};
        IrNode *t = dt == IR_DT_BOOL ? x : ts_make_map(ts, pos, in, 1, elem_truth, NULL);
        return ts_make_reduce(ts, pos, name[1] == 'l' ? IR_RED_AND : IR_RED_OR, t, (int)axis, keepdims, ir_type_scalar(IR_DT_BOOL));
    }
    if (!strcmp(name, "cumsum") || !strcmp(name, "cumprod")) {
        IrType *acc = sum_type(dt);
        return ts_make_scan(ts, pos, name[3] == 's' ? IR_RED_ADD : IR_RED_MUL, x, (int)axis, acc);
    }
    if (!strcmp(name, "argmin") || !strcmp(name, "argmax")) {
        return ts_make_reduce(ts, pos, name[3] == 'm' && name[4] == 'i' ? IR_RED_ARGMIN : IR_RED_ARGMAX, x, (int)axis, keepdims, ir_type_scalar(dt));
    }
    if (!strcmp(name, "nanmin") || !strcmp(name, "nanmax")) {
        bool is_max = name[4] == 'a';
        if (!ir_dtype_is_float(dt)) return ts_make_reduce(ts, pos, is_max ? IR_RED_MAX : IR_RED_MIN, x, (int)axis, keepdims, ir_type_scalar(dt));
        return ts_make_reduce(ts, pos, is_max ? IR_RED_NANMAX : IR_RED_NANMIN, x, (int)axis, keepdims, ir_type_scalar(dt));
    }
    if (!strcmp(name, "nansum")) {
        if (!ir_dtype_is_float(dt)) return ts_make_reduce(ts, pos, IR_RED_ADD, x, (int)axis, keepdims, sum_type(dt));
        IrNode *in[1] = {x};
        IrNode *zeroed = ts_make_map(ts, pos, in, 1, elem_nan_to_zero, NULL);
        return ts_make_reduce(ts, pos, IR_RED_ADD, zeroed, (int)axis, keepdims, ir_type_scalar(dt));
    }
    if (!strcmp(name, "var") || !strcmp(name, "std")) {
        /* NumPy's (a, axis, dtype, out, ddof): ddof is any number, known at run time (an int or a float) */
        for (int i = 2; i < 4 && i < a->npos; i++)
            if (a->pos[i]->type->kind != IR_TY_NONE)
                TS_ERR(ts, pos, "%s(): the %s argument is not supported", name, i == 2 ? "dtype" : "out");
        if (a->npos > 5) TS_ERR(ts, pos, "%s(): give keepdims by keyword", name);
        IrNode *ddof = ts_arg(a, 4, "ddof");
        if (ddof && (ddof->type->kind != IR_TY_SCALAR))
            TS_ERR(ts, pos, "%s(): ddof must be a number, not %s", name, ts_type_name(ddof->type));
        IrType *acc = ir_type_scalar(ir_dtype_is_float(dt) ? dt : IR_DT_FLOAT64);
        x = ts_reuse(ts, ts_cast_array(ts, pos, x, acc->dtype));
        /* mean with keepdims, so it broadcasts against x */
        IrNode *count = axis < 0 ? ts_array_size(ts, pos, x) : ts_dim(ts, pos, x, (int)axis);
        count = ts_reuse(ts, count);
        IrNode *m = divide_by_count(ts, pos, ts_make_reduce(ts, pos, IR_RED_ADD, x, (int)axis, true, acc), count, acc);
        m = ts_reuse(ts, m);
        IrNode *in[2] = {x, m};
        IrNode *sq = ts_make_map(ts, pos, in, 2, elem_sqdiff, NULL);
        IrNode *ss = ts_make_reduce(ts, pos, IR_RED_ADD, sq, (int)axis, keepdims, acc);
        IrNode *dof = ddof ? ts_scalar_binop(ts, pos, IR_OP_SUB, count, ddof) : count;
        /* NumPy divides by max(n - ddof, 0): with ddof >= n the variance is nan (0 / 0) or inf, never negative */
        dof = dof ? ts_scalar_binop(ts, pos, IR_OP_MAX, dof, ts_i64(ts, pos, 0)) : NULL;
        IrNode *var = divide_by_count(ts, pos, ss, dof, acc);
        if (name[0] == 'v') return var;
        return ts_math(ts, pos, IR_MATH_SQRT, &var, 1, acc);
    }
    if (strcmp(name, "mean") == 0) {
        IrType *rt = ir_type_scalar(ir_dtype_is_float(dt) || ir_dtype_is_complex(dt) ? dt : IR_DT_FLOAT64); /* NumPy: mean of ints is float64 */
        IrType *acc = ts_compute_type(rt); /* and of float16 sums in float32 */
        IrNode *count;
        if (axis >= 0) {
            count = ts_shape_dim(ts, pos, &x, (int)axis);
        } else {
            count = ts_shape_dim(ts, pos, &x, 0);
            for (int d = 1; d < x->type->ndim; d++)
                count = ts_scalar_binop(ts, pos, IR_OP_MUL, count, ts_shape_dim(ts, pos, &x, d));
        }
        return divide_by_count(ts, pos, ts_make_reduce(ts, pos, IR_RED_ADD, x, (int)axis, keepdims, acc), count, rt);
    }
    TS_ERR(ts, pos, "internal error: reduction %s", name);
}

IrNode *ts_numpy_reduction(Ts *ts, Args *a, const char *name) { return call_reduction(ts, a, name); }

static bool is_reduction(const char *name)
{
    static const char *names[] = {"sum", "prod", "min", "max", "amin", "amax", "mean", "all", "any", "argmin", "argmax",
                                  "nanmin", "nanmax", "nansum", "var", "std", "cumsum", "cumprod"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(names[i], name) == 0) return true;
    return false;
}

/* ---------------- constructors ---------------- */

static IrNode *call_constructor(Ts *ts, Args *a, const char *name)
{
    IrPos pos = a->call->pos;
    bool like = strstr(name, "_like") != NULL;
    bool full = strncmp(name, "full", 4) == 0;
    IrNode *src = ts_arg(a, 0, like ? "a" : "shape");
    if (!src) TS_ERR(ts, pos, "numpy.%s() needs a %s", name, like ? "prototype array" : "shape");
    IrNode *fill = full ? ts_arg(a, 1, "fill_value") : NULL;
    if (full && (!fill || fill->type->kind != IR_TY_SCALAR)) TS_ERR(ts, pos, "numpy.%s() needs a scalar fill_value", name);
    IrDtype dt = IR_DT_FLOAT64;
    IrNode **dims;
    int ndim;
    if (like) {
        if (src->type->kind != IR_TY_ARRAY) TS_ERR(ts, pos, "numpy.%s() needs an array", name);
        dt = src->type->dtype;
        src = ts_reuse(ts, src);
        ndim = src->type->ndim;
        dims = ir_nodes(ts->a, ndim);
        for (int i = 0; i < ndim; i++) {
            dims[i] = ir_node(ts->a, IR_ARRAY_DIM, pos);
            dims[i]->type = ir_type_scalar(IR_DT_INT64);
            dims[i]->u.array_dim.array = src;
            dims[i]->u.array_dim.axis = i;
        }
    } else {
        ndim = ts_shape_arg(ts, src, &dims);
        if (ndim < 0) TS_ERR(ts, pos, "numpy.%s(): the shape must be an int or a tuple of ints, not %s", name, ts_type_name(src->type));
        if (ndim == 0) TS_ERR(ts, pos, "numpy.%s(): 0-dimensional arrays are not supported", name);
        if (full) dt = ir_type_strong(fill->type)->dtype;
    }
    if (!ts_dtype_arg(ts, ts_arg(a, full ? 2 : 1, "dtype"), &dt)) TS_ERR(ts, pos, "numpy.%s(): dtype must be a NumPy type such as np.float32", name);
    IrNode *alloc = ts_make_alloc(ts, pos, dt, dims, ndim);
    if (!alloc) return NULL;
    if (strncmp(name, "empty", 5) == 0) return alloc;
    IrNode *value = full ? ts_python_int_operand(ts, pos, fill, dt, false, false)
                         : ir_const_int(ts->a, pos, ir_type_weak(IR_DT_INT64), strncmp(name, "ones", 4) == 0);
    return ts_make_fill(ts, pos, alloc, value);
}

/* np.arange(stop), (start, stop), (start, stop, step): an imap of start + i*step over ceil((stop-start)/step). */
static IrNode *call_arange(Ts *ts, Args *a)
{
    IrPos pos = a->call->pos;
    IrNode *dtype_pos = NULL;
    if (a->npos == 4) dtype_pos = a->pos[--a->npos]; /* arange(start, stop, step, dtype) */
    if (!ts_check_args(ts, a, "numpy.arange", 1, 3)) return NULL;
    for (int i = 0; i < a->npos; i++)
        if (a->pos[i]->type->kind != IR_TY_SCALAR)
            TS_ERR(ts, pos, "numpy.arange() needs numbers, not %s", ts_type_name(a->pos[i]->type));
    IrNode *start = a->npos >= 2 ? a->pos[0] : ir_const_int(ts->a, pos, ir_type_weak(IR_DT_INT64), 0);
    IrNode *stop = a->npos >= 2 ? a->pos[1] : a->pos[0];
    IrNode *step = a->npos == 3 ? a->pos[2] : ir_const_int(ts->a, pos, ir_type_weak(IR_DT_INT64), 1);
    IrType *t = ts_promote(ts_promote(start->type, stop->type), step->type);
    if (!t) TS_ERR(ts, pos, "numpy.arange() needs numbers");
    IrType *st = ir_type_strong(t);
    IrDtype dt = st->dtype == IR_DT_BOOL ? IR_DT_INT64 : st->dtype;
    if (!ts_dtype_arg(ts, dtype_pos ? dtype_pos : ts_arg(a, -1, "dtype"), &dt)) TS_ERR(ts, pos, "numpy.arange(): bad dtype");
    start = ts_reuse(ts, start);
    step = ts_reuse(ts, step);
    IrNode *len;
    IrType *f64 = ir_type_scalar(IR_DT_FLOAT64);
    if (ir_dtype_is_float(st->dtype)) {
        IrNode *span = ts_scalar_binop(ts, pos, IR_OP_SUB, ts_cast(ts, stop, f64), ts_cast(ts, start, f64));
        IrNode *q = ts_scalar_binop(ts, pos, IR_OP_DIV, span, ts_cast(ts, step, f64));
        IrNode *c = ts_math(ts, pos, IR_MATH_CEIL, &q, 1, f64);
        len = ts_cast(ts, c, ir_type_scalar(IR_DT_INT64));
        /* a zero step is a ZeroDivisionError, as in NumPy: 0 // (step != 0) raises exactly then */
        IrNode *nonzero = ts_cast(ts, ts_compare(ts, pos, IR_CMP_NE, ts_cast(ts, step, f64), ir_const_float(ts->a, pos, f64, 0.0)),
                                  ir_type_scalar(IR_DT_INT64));
        len = ts_scalar_binop(ts, pos, IR_OP_ADD, len, ts_scalar_binop(ts, pos, IR_OP_FLOORDIV, ts_i64(ts, pos, 0), nonzero));
    } else {
        /* -((start - stop) // step) is ceil((stop - start) / step) in integers */
        IrType *i64 = ir_type_scalar(IR_DT_INT64);
        IrNode *d = ts_scalar_binop(ts, pos, IR_OP_SUB, ts_cast(ts, start, i64), ts_cast(ts, stop, i64));
        len = ts_scalar_unop(ts, pos, IR_UOP_NEG, ts_scalar_binop(ts, pos, IR_OP_FLOORDIV, d, ts_cast(ts, step, i64)));
    }
    len = ts_scalar_binop(ts, pos, IR_OP_MAX, len, ts_i64(ts, pos, 0));
    if (!len) return NULL;
    IrNode *m = ts_make_imap(ts, pos, &len, 1);
    ts->cond_depth++;
    IrNode *i = ts_var(ts, pos, m->u.imap.idx[0]);
    IrType *ct = ir_dtype_is_float(dt) || ir_dtype_is_float(st->dtype) ? f64 : ir_type_scalar(IR_DT_INT64);
    IrNode *body = ts_scalar_binop(ts, pos, IR_OP_ADD, ts_cast(ts, start, ct),
                                   ts_scalar_binop(ts, pos, IR_OP_MUL, ts_cast(ts, i, ct), ts_cast(ts, step, ct)));
    m->u.imap.body = ts_cast(ts, body, ir_type_scalar(dt));
    ts->cond_depth--;
    if (!m->u.imap.body) return NULL;
    m->type = ir_type_array(dt, 1, IR_LAYOUT_C);
    return m;
}

/* ---------------- builtins ---------------- */

/* Python's min(a, b) is a unless b < a (max: unless b > a): with a NaN the first argument wins. */
static IrNode *python_minmax(Ts *ts, IrPos pos, bool is_max, IrNode *a, IrNode *b)
{
    if (a->type->kind != IR_TY_SCALAR || b->type->kind != IR_TY_SCALAR)
        TS_ERR(ts, pos, "%s() needs numbers, not %s and %s", is_max ? "max" : "min", ts_type_name(a->type), ts_type_name(b->type));
    IrType *t = ts_promote(a->type, b->type);
    a = ts_reuse(ts, ts_cast(ts, a, t));
    b = ts_reuse(ts, ts_cast(ts, b, t));
    IrNode *r = ir_node(ts->a, IR_IFEXP, pos);
    r->type = t;
    r->u.ifexp.cond = ts_compare(ts, pos, is_max ? IR_CMP_GT : IR_CMP_LT, b, a);
    r->u.ifexp.then = b;
    r->u.ifexp.orelse = a;
    return r->u.ifexp.cond ? r : NULL;
}

static IrNode *call_minmax(Ts *ts, Args *a, bool is_max, bool numpy_elementwise)
{
    IrPos pos = a->call->pos;
    if (a->npos == 1 && !numpy_elementwise) {
        IrNode *x = a->pos[0];
        if (x->type->kind == IR_TY_ARRAY) {
            if (x->type->ndim != 1) TS_ERR(ts, pos, "%s() of a %d-D array is ambiguous: use np.%s", is_max ? "max" : "min", x->type->ndim, is_max ? "max" : "min");
            return ts_make_reduce(ts, pos, is_max ? IR_RED_MAX : IR_RED_MIN, x, -1, false, ir_type_scalar(x->type->dtype));
        }
        if (x->type->kind == IR_TY_TUPLE && x->type->nelems > 0) {
            x = ts_reuse(ts, x);
            IrNode *acc = NULL;
            for (int i = 0; i < x->type->nelems; i++) {
                IrNode *g = ir_tuple_get(ts->a, pos, x, i);
                acc = acc ? python_minmax(ts, pos, is_max, acc, g) : g;
            }
            return acc;
        }
        TS_ERR(ts, pos, "%s() of %s is not supported", is_max ? "max" : "min", ts_type_name(x->type));
    }
    if (a->npos < 2) TS_ERR(ts, pos, "%s() needs at least two arguments or one array", is_max ? "max" : "min");
    IrNode *acc = a->pos[0];
    for (int i = 1; i < a->npos; i++) {
        if (ts_is_array(acc) || ts_is_array(a->pos[i])) {
            if (!numpy_elementwise) TS_ERR(ts, pos, "%s() of arrays is ambiguous: use np.%simum", is_max ? "max" : "min", is_max ? "max" : "min");
        }
        acc = numpy_elementwise ? ts_binop(ts, pos, is_max ? IR_OP_MAX : IR_OP_MIN, acc, a->pos[i])
                                : python_minmax(ts, pos, is_max, acc, a->pos[i]);
        if (!acc) return NULL;
    }
    return acc;
}

/* ---------------- complex numbers ---------------- */

/* complex(), complex(x), complex(re, im): a Python complex (weak complex128), whatever the arguments' types. */
static IrNode *call_complex(Ts *ts, Args *a)
{
    IrPos pos = a->call->pos;
    IrType *wc = ir_type_weak(IR_DT_COMPLEX128), *wf = ir_type_weak(IR_DT_FLOAT64);
    IrNode *re = ts_arg(a, 0, "real"), *im = ts_arg(a, 1, "imag");
    if (a->npos > 2) TS_ERR(ts, pos, "complex() takes at most 2 arguments (%d given)", a->npos);
    if (!re && !im) return ts_cast(ts, ir_const_float(ts->a, pos, wf, 0.0), wc);
    for (int i = 0; i < 2; i++) {
        IrNode *x = i ? im : re;
        if (x && x->type->kind != IR_TY_SCALAR) TS_ERR(ts, pos, "complex() needs numbers, not %s", ts_type_name(x->type));
    }
    if (!im) return ts_cast(ts, re, wc);
    if (!re) re = ir_const_float(ts->a, pos, wf, 0.0);
    if (ir_dtype_is_complex(re->type->dtype) || ir_dtype_is_complex(im->type->dtype))
        TS_ERR(ts, pos, "complex(re, im) with a complex re or im is not supported (write re + im * 1j)");
    return ts_scalar_binop(ts, pos, IR_OP_COMPLEX, ts_cast(ts, re, wf), ts_cast(ts, im, wf));
}

static IrNode *elem_part(Ts *ts, IrPos pos, IrNode **e, int n, void *env)
{
    return ts_scalar_unop(ts, pos, *(IrUnOp *)env, e[0]);
}

/* x.real, x.imag, x.conj() and NumPy's real, imag, conj: of a real array, real and conj give the array itself and
 * imag zeros; of a complex array, a new array (not a view, as NumPy's .real and .imag are: it is read-only, so that
 * writing through it is an error instead of a write that does not reach x). */
IrNode *ts_complex_part(Ts *ts, IrPos pos, IrNode *x, IrUnOp op)
{
    if (!x) return NULL;
    IrType *t = x->type;
    if (t->kind != IR_TY_ARRAY && t->kind != IR_TY_SCALAR)
        TS_ERR(ts, pos, "%s has no %s", ts_type_name(t), op == IR_UOP_REAL ? "real part" : op == IR_UOP_IMAG ? "imaginary part" : "conjugate");
    if (t->kind == IR_TY_SCALAR) return ts_scalar_unop(ts, pos, op, x);
    if (!ir_dtype_is_complex(t->dtype) && op != IR_UOP_IMAG) return x;
    IrNode *in[1] = {x};
    IrNode *m = ts_make_map(ts, pos, in, 1, elem_part, &op);
    if (!m || op == IR_UOP_CONJ) return m;
    return ts_cast(ts, m, ir_type_array_ro(m->type->dtype, m->type->ndim, m->type->layout, true));
}

static IrNode *elem_angle(Ts *ts, IrPos pos, IrNode **e, int n, void *env)
{
    IrNode *z = e[0];
    if (ir_dtype_is_complex(z->type->dtype)) {
        z = ts_reuse(ts, z);
        IrNode *args[2] = {ts_scalar_unop(ts, pos, IR_UOP_IMAG, z), ts_scalar_unop(ts, pos, IR_UOP_REAL, z)};
        return ts_math(ts, pos, IR_MATH_ATAN2, args, 2, NULL);
    }
    IrNode *args[2] = {ir_const_int(ts->a, pos, ir_type_weak(IR_DT_INT64), 0), z}; /* NumPy: arctan2(0, x) */
    return ts_math(ts, pos, IR_MATH_ATAN2, args, 2, NULL);
}

/* What lorikeet computes on complex numbers (ir.h's rule): a NumPy function, method or builtin outside these
 * lists, given a complex argument, is a CompileError instead of code that would treat it as a real number. */
static bool takes_complex(const char *qual, const char *name)
{
    static const char *numpy_ok[] = {
        "complex64", "complex128", "csingle", "cdouble", "sum", "prod", "mean", "cumsum", "cumprod", "all", "any",
        "abs", "absolute", "conj", "conjugate", "real", "imag", "angle", "exp", "log", "sqrt", "add", "subtract",
        "multiply", "divide", "true_divide", "power", "negative", "positive", "square", "equal", "not_equal",
        "where", "copy", "transpose", "empty_like", "zeros_like", "ones_like", "full_like", "full", "reshape", "ravel",
        "concatenate", "zeros", "ones", "empty", "logical_not", "logical_and", "logical_or", "logical_xor", "shape",
        "size", "ndim",
    };
    static const char *method_ok[] = {
        "sum", "prod", "mean", "cumsum", "cumprod", "all", "any", "conj", "conjugate", "copy", "astype", "reshape",
        "ravel", "flatten", "transpose", "item",
    };
    static const char *builtin_ok[] = {"abs", "complex", "len", "bool"};
    const char *const *ok = !strcmp(qual, "numpy") ? numpy_ok : !strcmp(qual, "method") ? method_ok
                          : !strcmp(qual, "builtins") ? builtin_ok : NULL;
    size_t n = !strcmp(qual, "numpy") ? sizeof numpy_ok / sizeof *ok : !strcmp(qual, "method") ? sizeof method_ok / sizeof *ok
             : !strcmp(qual, "builtins") ? sizeof builtin_ok / sizeof *ok : 0;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(ok[i], name)) return true;
    return false;
}

static bool has_complex(const Args *a)
{
    for (int i = 0; i < a->npos; i++)
        if ((a->pos[i]->type->kind == IR_TY_SCALAR || a->pos[i]->type->kind == IR_TY_ARRAY || a->pos[i]->type->kind == IR_TY_DTYPE) &&
            ir_dtype_is_complex(a->pos[i]->type->dtype))
            return true;
    for (int i = 0; i < a->call->u.call.nkw; i++)
        if ((a->kw[i]->type->kind == IR_TY_SCALAR || a->kw[i]->type->kind == IR_TY_ARRAY || a->kw[i]->type->kind == IR_TY_DTYPE) &&
            ir_dtype_is_complex(a->kw[i]->type->dtype))
            return true;
    return false;
}

static IrNode *call_builtin(Ts *ts, Args *a, const char *name)
{
    IrPos pos = a->call->pos;
    if (strcmp(name, "len") == 0) {
        if (!ts_check_args(ts, a, "len", 1, 1)) return NULL;
        IrNode *x = a->pos[0];
        if (x->type->kind == IR_TY_TUPLE) /* a Python int; x still evaluated for its effects */
            return ts_after_effects(ts, pos, x, ir_const_int(ts->a, pos, ir_type_weak(IR_DT_INT64), x->type->nelems));
        if (x->type->kind != IR_TY_ARRAY) TS_ERR(ts, pos, "object of type %s has no len()", ts_type_name(x->type));
        IrNode *d = ir_node(ts->a, IR_ARRAY_DIM, pos);
        d->type = ir_type_weak(IR_DT_INT64); /* a Python int */
        d->u.array_dim.array = x;
        return d;
    }
    if (strcmp(name, "abs") == 0) {
        if (!ts_check_args(ts, a, "abs", 1, 1)) return NULL;
        return ts_unop(ts, pos, IR_UOP_ABS, a->pos[0]);
    }
    if (strcmp(name, "min") == 0 || strcmp(name, "max") == 0) return call_minmax(ts, a, name[1] == 'a', false);
    if (strcmp(name, "int") == 0 || strcmp(name, "float") == 0 || strcmp(name, "bool") == 0) {
        if (!ts_check_args(ts, a, name, 1, 1)) return NULL;
        IrNode *x = a->pos[0];
        if (x->type->kind != IR_TY_SCALAR) TS_ERR(ts, pos, "%s() needs a scalar, not %s", name, ts_type_name(x->type));
        if (name[0] == 'b') return ts_python_scalar(ts, ts_truth(ts, x));
        return ts_cast(ts, x, ir_type_weak(name[0] == 'i' ? IR_DT_INT64 : IR_DT_FLOAT64));
    }
    if (strcmp(name, "complex") == 0) return call_complex(ts, a);
    if (strcmp(name, "slice") == 0) return ts_slice_value(ts, a);
    if (strcmp(name, "any") == 0 || strcmp(name, "all") == 0) return ts_any_all(ts, a, name[1] == 'l');
    return ts_unsupported(ts, pos, TS_LIB_BUILTIN, "the builtin ", name, "()");
}

/* ---------------- numpy ---------------- */

/* x.astype(t) and np.<dtype>(x): a complex to a real type keeps the real part, as NumPy's astype does (with a
 * ComplexWarning), where an implicit conversion is an error. */
static IrNode *convert(Ts *ts, IrPos pos, IrNode *x, IrType *t)
{
    if (x && ir_dtype_is_complex(x->type->dtype) && !ir_dtype_is_complex(t->dtype)) x = ts_scalar_unop(ts, pos, IR_UOP_REAL, x);
    return ts_cast(ts, x, t);
}

static IrNode *elem_astype(Ts *ts, IrPos pos, IrNode **e, int n, void *env) { return convert(ts, pos, e[0], env); }

static IrNode *astype(Ts *ts, IrPos pos, IrNode *x, IrDtype dt)
{
    if (x->type->kind == IR_TY_SCALAR) return convert(ts, pos, x, ir_type_scalar(dt));
    if (x->type->kind != IR_TY_ARRAY) TS_ERR(ts, pos, "cannot convert %s to %s", ts_type_name(x->type), ir_dtype_name(dt));
    IrNode *in[1] = {x};
    return ts_make_map(ts, pos, in, 1, elem_astype, ir_type_scalar(dt));
}

/* A ufunc given only Python scalars converts them to NumPy's default dtypes first (np.add(True, True) is
 * np.True_, np.sqrt(True) a float16); given a NumPy operand, the Python ones stay weak (np.add(np.int8(1), 2) is
 * an int8). The dtype constructors, reductions and array constructors before this point keep their arguments'
 * weakness (np.int8(300) is out of bounds, np.full(3, 300, np.int8) too). */
static void numpy_operands(Ts *ts, Args *a)
{
    for (int i = 0; i < a->npos; i++) {
        IrType *t = a->pos[i]->type;
        if (t->kind == IR_TY_ARRAY || (t->kind == IR_TY_SCALAR && !t->weak)) return;
    }
    for (int i = 0; i < a->npos; i++) a->pos[i] = ts_numpy_scalar(ts, a->pos[i]);
}

static IrNode *call_numpy(Ts *ts, Args *a, const char *name)
{
    IrPos pos = a->call->pos;
    IrDtype dt;
    IrMathFn fn;
    if (ir_dtype_from_name(name, &dt) && strcmp(name, "float") && strcmp(name, "int")) {
        if (!ts_check_args(ts, a, name, 1, 1)) return NULL; /* np.int8(k): k must fit (OverflowError) */
        return astype(ts, pos, ts_python_int_operand(ts, pos, a->pos[0], dt, false, false), dt);
    }
    if (is_reduction(name)) return call_reduction(ts, a, name);
    if (!strcmp(name, "empty") || !strcmp(name, "zeros") || !strcmp(name, "ones") || !strcmp(name, "full") ||
        !strcmp(name, "empty_like") || !strcmp(name, "zeros_like") || !strcmp(name, "ones_like") || !strcmp(name, "full_like"))
        return call_constructor(ts, a, name);
    if (!strcmp(name, "arange")) return call_arange(ts, a);
    if (!strcmp(name, "dot") || !strcmp(name, "matmul")) {
        if (!ts_check_args(ts, a, name, 2, 2)) return NULL;
        return ts_matmul(ts, pos, a->pos[0], a->pos[1], name[0] == 'd');
    }
    if (!strcmp(name, "transpose")) {
        if (!ts_check_args(ts, a, name, 1, 1)) return NULL;
        if (a->pos[0]->type->kind != IR_TY_ARRAY) return a->pos[0];
        return ts_transpose(ts, pos, a->pos[0]);
    }
    if (!strcmp(name, "einsum")) return ts_einsum(ts, a);
    if (!strcmp(name, "outer")) {
        if (!ts_check_args(ts, a, name, 2, 2)) return NULL;
        return ts_outer(ts, pos, a->pos[0], a->pos[1]);
    }
    if (!strcmp(name, "copy")) {
        if (!ts_check_args(ts, a, name, 1, 1)) return NULL;
        if (a->pos[0]->type->kind != IR_TY_ARRAY) return a->pos[0];
        return astype(ts, pos, a->pos[0], a->pos[0]->type->dtype);
    }
    if (!strcmp(name, "real") || !strcmp(name, "imag")) { /* x.real: of a Python number, a Python number */
        if (!ts_check_args(ts, a, name, 1, 1)) return NULL;
        return ts_complex_part(ts, pos, a->pos[0], name[0] == 'r' ? IR_UOP_REAL : IR_UOP_IMAG);
    }
    numpy_operands(ts, a);
    if (!strcmp(name, "conj") || !strcmp(name, "conjugate")) {
        if (!ts_check_args(ts, a, name, 1, 1)) return NULL;
        IrNode *x = a->pos[0];
        /* the ufunc makes a new array of a real one too (x.conj() is x itself, as NumPy's method is) */
        if (x->type->kind == IR_TY_ARRAY && !ir_dtype_is_complex(x->type->dtype)) return ts_copy_array(ts, pos, x);
        return ts_complex_part(ts, pos, x, IR_UOP_CONJ);
    }
    if (!strcmp(name, "angle")) {
        if (!ts_check_args(ts, a, name, 1, 1)) return NULL;
        IrNode *x = a->pos[0];
        if (x->type->kind == IR_TY_ARRAY) return ts_make_map(ts, pos, &x, 1, elem_angle, NULL);
        if (x->type->kind != IR_TY_SCALAR) TS_ERR(ts, pos, "numpy.angle() needs a number or an array, not %s", ts_type_name(x->type));
        return elem_angle(ts, pos, &x, 1, NULL);
    }
    if (!strcmp(name, "abs") || !strcmp(name, "absolute")) {
        if (!ts_check_args(ts, a, name, 1, 1)) return NULL;
        return ts_unop(ts, pos, IR_UOP_ABS, a->pos[0]);
    }
    if (!strcmp(name, "degrees") || !strcmp(name, "radians") || !strcmp(name, "deg2rad") || !strcmp(name, "rad2deg")) {
        if (!ts_check_args(ts, a, name, 1, 1)) return NULL;
        return angle_convert(ts, pos, a->pos[0], !strcmp(name, "degrees") || !strcmp(name, "rad2deg"), NULL);
    }
    if (!strcmp(name, "negative")) {
        if (!ts_check_args(ts, a, name, 1, 1)) return NULL;
        return ts_unop(ts, pos, IR_UOP_NEG, a->pos[0]);
    }
    if (!strcmp(name, "square")) {
        if (!ts_check_args(ts, a, name, 1, 1)) return NULL;
        IrNode *x = a->pos[0];
        if ((x->type->kind == IR_TY_ARRAY || x->type->kind == IR_TY_SCALAR) && x->type->dtype == IR_DT_BOOL)
            x = x->type->kind == IR_TY_ARRAY ? ts_cast_array(ts, pos, x, IR_DT_INT8) : ts_cast(ts, x, ir_type_scalar(IR_DT_INT8));
        x = ts_reuse(ts, x);
        return ts_binop(ts, pos, IR_OP_MUL, x, x);
    }
    if (!strcmp(name, "maximum") || !strcmp(name, "minimum")) {
        if (!ts_check_args(ts, a, name, 2, 2)) return NULL;
        return call_minmax(ts, a, name[1] == 'a', true);
    }
    static const struct { const char *name; IrBinOp op; } binops[] = {
        {"add", IR_OP_ADD}, {"subtract", IR_OP_SUB}, {"multiply", IR_OP_MUL}, {"divide", IR_OP_DIV},
        {"true_divide", IR_OP_DIV}, {"floor_divide", IR_OP_FLOORDIV}, {"mod", IR_OP_MOD}, {"remainder", IR_OP_MOD},
        {"power", IR_OP_POW},
    };
    for (size_t i = 0; i < sizeof binops / sizeof binops[0]; i++)
        if (!strcmp(name, binops[i].name)) {
            if (!ts_check_args(ts, a, name, 2, 2)) return NULL;
            return ts_ufunc_binop(ts, pos, binops[i].op, a->pos[0], a->pos[1]);
        }
    if (!strcmp(name, "fmod") && a->npos == 2 && int_operands(a->pos, 2)) {
        IrNode *in[2] = {a->pos[0], a->pos[1]};
        if (ts_is_array(in[0]) || ts_is_array(in[1])) return ts_make_map(ts, pos, in, 2, elem_int_fmod, NULL);
        return elem_int_fmod(ts, pos, in, 2, NULL);
    }
    if (lookup_math(name, &fn) && strcmp(name, "pow") && strcmp(name, "asin") && strcmp(name, "acos") &&
        strcmp(name, "atan") && strcmp(name, "asinh") && strcmp(name, "acosh") && strcmp(name, "atanh") && strcmp(name, "atan2")) {
        if (!ts_check_args(ts, a, name, ir_math_arity(fn), ir_math_arity(fn))) return NULL;
        /* NumPy 2 keeps integer dtypes for floor, ceil and trunc (rint still gives floats): the values, in a new
         * array (the argument itself was returned, so that writing into the result wrote into the argument) */
        IrType *t0 = a->pos[0]->type;
        bool int_in = (t0->kind == IR_TY_ARRAY || t0->kind == IR_TY_SCALAR) && (ir_dtype_is_int(t0->dtype) || t0->dtype == IR_DT_BOOL);
        if ((fn == IR_MATH_FLOOR || fn == IR_MATH_CEIL || fn == IR_MATH_TRUNC) && int_in)
            return t0->kind == IR_TY_SCALAR ? ts_cast(ts, a->pos[0], ir_type_strong(t0)) : ts_copy_array(ts, pos, a->pos[0]);
        return ts_math(ts, pos, fn, a->pos, a->npos, NULL);
    }
    bool handled;
    IrNode *shaped = ts_numpy_shape(ts, a, name, &handled);
    if (handled) return shaped;
    IrNode *arranged = ts_numpy_arrange(ts, a, name, &handled);
    if (handled) return arranged;
    IrNode *sorted = ts_numpy_sort(ts, a, name, &handled);
    if (handled) return sorted;
    IrNode *stat = ts_numpy_stats(ts, a, name, &handled);
    if (handled) return stat;
    const IrNode *decimals = a->call->u.call.nargs > 1 ? a->call->u.call.args[1] : ts_kw(a, "decimals");
    IrNode *r = ts_numpy_elementwise(ts, pos, name, a->pos, a->npos, decimals, &handled);
    if (handled) return r;
    return ts_unsupported(ts, pos, TS_LIB_NUMPY, "numpy.", name, "");
}

/* numpy.x.y(...): a ufunc's method (np.add.reduce) */
static IrNode *call_numpy_dotted(Ts *ts, Args *a, const char *q)
{
    const char *dot = strchr(q + 6, '.');
    char first[64];
    bool handled;
    if (!strncmp(q, "numpy.random.", 13)) return ts_numpy_random(ts, a, q + 13);
    if (!strncmp(q, "numpy.linalg.", 13)) {
        IrNode *r = ts_numpy_linalg(ts, a, q + 13, &handled);
        if (handled) return r;
    }
    size_t n = (size_t)(dot - (q + 6));
    if (n < sizeof first && !strchr(dot + 1, '.')) {
        memcpy(first, q + 6, n);
        first[n] = 0;
        IrNode *r = ts_ufunc_method(ts, a, first, dot + 1, &handled);
        if (handled) return r;
    }
    return ts_unsupported(ts, a->call->pos, TS_LIB_NUMPY, "numpy.", q + 6, "");
}

static IrNode *call_method(Ts *ts, Args *a, const char *name)
{
    IrPos pos = a->call->pos;
    IrNode *recv = a->pos[0];
    if (recv->type->kind == IR_TY_RNG) return ts_rng_method(ts, a, name);
    bool handled;
    IrNode *refused = ts_list_method(ts, pos, name, &handled);
    if (handled) return refused;
    bool numpy_scalar_copy = !recv->type->weak && (!strcmp(name, "copy") || !strcmp(name, "ravel") ||
                                                   !strcmp(name, "flatten")); /* a Python number has none */
    bool scalar_ok = recv->type->kind == IR_TY_SCALAR && (is_reduction(name) || !strcmp(name, "astype") ||
                                                          !strcmp(name, "item") || numpy_scalar_copy ||
                                                          !strcmp(name, "conj") || !strcmp(name, "conjugate"));
    if (recv->type->kind != IR_TY_ARRAY && !scalar_ok) TS_ERR(ts, pos, "%s has no method %s()", ts_type_name(recv->type), name);
    if (!strcmp(name, "item") && recv->type->kind == IR_TY_SCALAR) return ts_python_scalar(ts, recv);
    if (is_reduction(name) && strcmp(name, "amin") && strcmp(name, "amax")) return call_reduction(ts, a, name);
    if (!strcmp(name, "astype")) {
        IrDtype dt;
        IrNode *d = ts_arg(a, 1, "dtype");
        if (!d || !ts_dtype_arg(ts, d, &dt) || d->type->kind == IR_TY_NONE) TS_ERR(ts, pos, "astype() needs a NumPy dtype such as np.float32");
        return astype(ts, pos, recv, dt);
    }
    if (!strcmp(name, "copy")) return astype(ts, pos, recv, recv->type->dtype);
    if (!strcmp(name, "conj") || !strcmp(name, "conjugate")) {
        if (!ts_check_args(ts, a, name, 1, 1)) return NULL;
        if (recv->type->weak && name[4] == 0) TS_ERR(ts, pos, "a Python complex has no method conj() (it has conjugate())");
        return ts_complex_part(ts, pos, recv, IR_UOP_CONJ);
    }
    if (!strcmp(name, "dot")) {
        if (!ts_check_args(ts, a, name, 2, 2)) return NULL;
        return ts_matmul(ts, pos, recv, a->pos[1], true);
    }
    if (!strcmp(name, "reshape")) {
        if (a->npos < 2) TS_ERR(ts, pos, "reshape() needs a shape");
        IrNode *shape = a->pos[1];
        if (a->npos > 2) { /* a.reshape(2, 3) */
            IrNode *t = ir_node(ts->a, IR_TUPLE, pos);
            t->u.tuple.n = a->npos - 1;
            t->u.tuple.items = &a->pos[1];
            IrType **elems = rt_arena_alloc(ts->a, sizeof(IrType *) * (size_t)(a->npos - 1));
            for (int i = 1; i < a->npos; i++) elems[i - 1] = a->pos[i]->type;
            t->type = ir_type_tuple(elems, a->npos - 1);
            shape = t;
        }
        return ts_reshape(ts, pos, recv, shape);
    }
    if ((!strcmp(name, "ravel") || !strcmp(name, "flatten")) && recv->type->kind == IR_TY_SCALAR) {
        IrNode *one = ts_i64(ts, pos, 1); /* a NumPy scalar's: a new 1-element array */
        IrNode *alloc = ts_make_alloc(ts, pos, recv->type->dtype, &one, 1);
        return alloc ? ts_make_fill(ts, pos, alloc, recv) : NULL;
    }
    if (!strcmp(name, "ravel")) return ts_ravel(ts, pos, recv);
    if (!strcmp(name, "flatten")) return ts_reshape(ts, pos, ts_copy_array(ts, pos, recv), ts_i64(ts, pos, -1));
    if (!strcmp(name, "clip") || !strcmp(name, "round")) {
        bool handled;
        const IrNode *decimals = a->call->u.call.nargs > 1 ? a->call->u.call.args[1] : ts_kw(a, "decimals");
        return ts_numpy_elementwise(ts, pos, name, a->pos, a->npos, decimals, &handled);
    }
    if (!strcmp(name, "transpose") && a->npos == 1) return ts_transpose(ts, pos, recv);
    IrNode *sorted = ts_method_sort(ts, a, name, &handled);
    if (handled) return sorted;
    return ts_unsupported(ts, pos, TS_LIB_METHOD, "array method ", name, "()");
}

static IrNode *call_user(Ts *ts, Args *a)
{
    const IrNode *n = a->call;
    const IrFunc *callee = ts_resolve_handle(ts, n->pos, n->u.call.func_handle);
    if (!callee) return NULL;
    return ts_call_func(ts, n->pos, callee, a->pos, a->npos, n->u.call.kwnames, a->kw, n->u.call.nkw);
}

/* A keyword argument that the function's lowering did not read would be silently ignored (np.sum(a, where=m)
 * computing a plain sum): refuse it instead. */
static IrNode *kwargs_all_used(Ts *ts, Args *a, IrNode *result)
{
    if (!result) return NULL;
    for (int k = 0; k < a->call->u.call.nkw; k++)
        if (!(a->kw_used & (1u << (k & 31))))
            TS_ERR(ts, a->call->pos, "%s%s(): the keyword argument '%s' is not supported", a->call->u.call.ckind == IR_CALLEE_METHOD ? "." : "",
                   a->call->u.call.name, a->call->u.call.kwnames[k]);
    return result;
}

/* np.array(x) / np.asarray(x): a comprehension becomes an imap; an array is copied (array) or not (asarray);
 * a tuple of numbers (a list display) becomes a new 1-D array. */
static IrNode *call_array(Ts *ts, const IrNode *n, bool copy)
{
    IrPos pos = n->pos;
    if (n->u.call.nargs < 1) TS_ERR(ts, pos, "numpy.array() needs an argument");
    IrDtype dt = IR_DT_FLOAT64;
    bool have_dt = false;
    const IrNode *dn = n->u.call.nargs > 1 ? n->u.call.args[1] : ts_raw_kw(n, "dtype");
    for (int k = 0; k < n->u.call.nkw; k++)
        if (strcmp(n->u.call.kwnames[k], "dtype") != 0)
            TS_ERR(ts, pos, "numpy.array(): the keyword argument '%s' is not supported", n->u.call.kwnames[k]);
    if (dn) {
        IrNode *d = ts_expr(ts, dn);
        if (!d || !ts_dtype_arg(ts, d, &dt)) TS_ERR(ts, pos, "numpy.array(): dtype must be a NumPy type such as np.float32");
        have_dt = d->type->kind != IR_TY_NONE;
    }
    if (n->u.call.args[0]->kind == IR_COMPREHENSION) return ts_comprehension_array(ts, n->u.call.args[0], have_dt ? &dt : NULL);
    IrNode *x = ts_expr_arg(ts, n, n->u.call.args[0]);
    if (!x) return NULL;
    if (x->type->kind == IR_TY_ARRAY) {
        if (have_dt && dt != x->type->dtype) return ts_cast_array(ts, pos, x, dt);
        return copy ? ts_copy_array(ts, pos, x) : x;
    }
    if (x->type->kind == IR_TY_TUPLE && x->type->nelems > 0) return ts_sequence_array(ts, pos, x, have_dt ? &dt : NULL);
    TS_ERR(ts, pos, "numpy.array() of %s is not supported", ts_type_name(x->type));
}

/* f(x, *t): the items of each starred tuple become positional arguments of their own (a user function's call). */
static bool unpack_starred(Ts *ts, Args *a)
{
    const IrNode *n = a->call;
    int total = 0;
    for (int i = 0; i < a->npos; i++) {
        bool star = i < 64 && (n->u.call.starred >> i & 1);
        if (star && a->pos[i]->type->kind != IR_TY_TUPLE) {
            if (!ts->dry)
                lk_diag_set(ts->diag, LK_ERR_TYPE, ts->src->file, a->pos[i]->pos.line, a->pos[i]->pos.col,
                            "*%s in a call: only tuples can be unpacked into arguments", ts_type_name(a->pos[i]->type));
            return false;
        }
        total += star ? a->pos[i]->type->nelems : 1;
    }
    IrNode **pos = ir_nodes(ts->a, total);
    int at = 0;
    for (int i = 0; i < a->npos; i++) {
        if (!(i < 64 && (n->u.call.starred >> i & 1))) {
            pos[at++] = a->pos[i];
            continue;
        }
        IrNode *t = ts_reuse(ts, a->pos[i]);
        if (!t) return false;
        for (int k = 0; k < t->type->nelems; k++) pos[at++] = ir_tuple_get(ts->a, t->pos, t, k);
    }
    a->pos = pos;
    a->npos = total;
    return true;
}

IrNode *ts_call(Ts *ts, const IrNode *n)
{
    if (n->u.call.ckind == IR_CALLEE_INTRINSIC && n->u.call.intrinsic == IR_INTR_PRINT) return ts_print(ts, n);
    if (n->u.call.ckind == IR_CALLEE_INTRINSIC && n->u.call.intrinsic == IR_INTR_RAISE) {
        /* a raise statement (frontend/lower_raise.c): the raise intrinsic with RT_ERR_RAISE, its strings kept */
        IrNode *r = ts_raise(ts, n->pos, RT_ERR_RAISE, NULL, NULL, NULL, ir_type_none());
        if (!r) return NULL;
        r->u.call.name = n->u.call.name;
        r->u.call.text = n->u.call.text;
        if (n->u.call.nargs > 0) { /* arguments made at run time: their values follow the record's four */
            IrNode **vals;
            int nv;
            if (!(r->u.call.text = ts_record_values(ts, n->pos, n->u.call.args, n->u.call.nargs, n->u.call.text, &vals, &nv)))
                return NULL;
            IrNode **all = ir_nodes(ts->a, 4 + nv);
            for (int i = 0; i < 3; i++) all[i] = r->u.call.args[i];
            all[3] = ts_i64(ts, n->pos, 1); /* recorded: a record even when no value takes a slot (None, ()) */
            for (int i = 0; i < nv; i++) all[4 + i] = vals[i];
            r->u.call.args = all;
            r->u.call.nargs = 4 + nv;
        }
        return r;
    }
    if (n->u.call.ckind == IR_CALLEE_NAMED &&
        (!strcmp(n->u.call.name, "numpy.array") || !strcmp(n->u.call.name, "numpy.asarray")))
        return call_array(ts, n, n->u.call.name[6] == 'a' && n->u.call.name[7] == 'r');
    Args a = {.call = n, .npos = n->u.call.nargs};
    a.pos = ir_nodes(ts->a, a.npos);
    a.kw = ir_nodes(ts->a, n->u.call.nkw);
    if (n->u.call.ckind == IR_CALLEE_NAMED) {
        bool handled;
        IrNode *r = ts_builtin_raw(ts, n, &handled);
        if (handled) return r;
    }
    for (int i = 0; i < a.npos; i++)
        if (!(a.pos[i] = ts_expr_arg(ts, n, n->u.call.args[i]))) return NULL;
    if (n->u.call.starred && !unpack_starred(ts, &a)) return NULL;
    for (int i = 0; i < n->u.call.nkw; i++)
        if (!(a.kw[i] = ts_expr_arg(ts, n, n->u.call.kwargs[i]))) return NULL;
    switch (n->u.call.ckind) {
    case IR_CALLEE_FUNC: return call_user(ts, &a);
    case IR_CALLEE_VALUE:
        return ts_apply_kw(ts, n->pos, a.pos[0], a.pos + 1, a.npos - 1, (const char **)n->u.call.kwnames, a.kw,
                           n->u.call.nkw);
    case IR_CALLEE_METHOD:
        if (has_complex(&a) && !takes_complex("method", n->u.call.name))
            TS_ERR(ts, n->pos, "the method %s() of complex numbers is not supported", n->u.call.name);
        return kwargs_all_used(ts, &a, call_method(ts, &a, n->u.call.name));
    case IR_CALLEE_NAMED: {
        const char *q = n->u.call.name;
        if (has_complex(&a) && strncmp(q, "lorikeet.", 9) != 0 &&
            !takes_complex(!strncmp(q, "numpy.", 6) ? "numpy" : !strncmp(q, "builtins.", 9) ? "builtins" : "other", strchr(q, '.') + 1))
            TS_ERR(ts, n->pos, "%s() of complex numbers is not supported", q);
        if (strncmp(q, "builtins.", 9) == 0) return kwargs_all_used(ts, &a, call_builtin(ts, &a, q + 9));
        if (strncmp(q, "math.", 5) == 0) return ts_python_scalar(ts, kwargs_all_used(ts, &a, call_math_module(ts, &a, q + 5)));
        if (!strcmp(q, "numpy.real") || !strcmp(q, "numpy.imag")) return kwargs_all_used(ts, &a, call_numpy(ts, &a, q + 6));
        if (strncmp(q, "numpy.", 6) == 0 && strchr(q + 6, '.')) return ts_numpy_scalar(ts, kwargs_all_used(ts, &a, call_numpy_dotted(ts, &a, q)));
        if (strncmp(q, "numpy.", 6) == 0) return ts_numpy_scalar(ts, kwargs_all_used(ts, &a, call_numpy(ts, &a, q + 6)));
        if (ts_name_is(q, "lorikeet.", "prange")) TS_ERR(ts, n->pos, "lorikeet.prange() can only be used as the iterable of a for loop");
        if (strncmp(q, "lorikeet.", 9) == 0) return kwargs_all_used(ts, &a, ts_operator(ts, &a, q + 9));
        TS_ERR(ts, n->pos, "%s() is not supported", q);
    }
    case IR_CALLEE_INTRINSIC: break;
    }
    TS_ERR(ts, n->pos, "internal error: unexpected call");
}
