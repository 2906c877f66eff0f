/* ufuncs.c: the NumPy elementwise functions beyond the operators: logical and comparison ufuncs, sign,
 * reciprocal, fmin/fmax, logaddexp, where, clip, round. Each is a scalar builder; on arrays it becomes the body
 * of a map (so it fuses with its neighbours like any operator). */
#include <string.h>
#include "ts_internal.h"

/* fn on scalars, or a map of fn when any argument is an array. */
static IrNode *elementwise(Ts *ts, IrPos pos, IrNode **args, int n, TsElemFn fn, void *env)
{
    for (int i = 0; i < n; i++) {
        if (!args[i]) return NULL;
        if (ts_is_array(args[i])) return ts_make_map(ts, pos, args, n, fn, env);
        if (args[i]->type->kind != IR_TY_SCALAR) TS_ERR(ts, pos, "an elementwise function needs numbers or arrays, not %s", ts_type_name(args[i]->type));
    }
    return fn(ts, pos, args, n, env);
}

static IrNode *ifexp(Ts *ts, IrPos pos, IrNode *cond, IrNode *then, IrNode *orelse)
{
    if (!cond || !then || !orelse) return NULL;
    IrType *t = ts_promote(then->type, orelse->type);
    IrNode *r = ir_node(ts->a, IR_IFEXP, pos);
    r->type = t;
    r->u.ifexp.cond = cond;
    r->u.ifexp.then = ts_cast(ts, then, t);
    r->u.ifexp.orelse = ts_cast(ts, orelse, t);
    return (r->u.ifexp.then && r->u.ifexp.orelse) ? r : NULL;
}

static IrNode *fconst(Ts *ts, IrPos pos, IrType *t, double v)
{
    return ir_dtype_is_float(t->dtype) ? ir_const_float(ts->a, pos, t, v) : ir_const_int(ts->a, pos, t, (int64_t)v);
}

static IrNode *e_logical(Ts *ts, IrPos pos, IrNode **e, int n, void *env)
{
    const char *op = env;
    IrNode *a = ts_truth(ts, e[0]);
    if (!a) return NULL;
    if (!strcmp(op, "not")) return ts_scalar_unop(ts, pos, IR_UOP_NOT, a);
    IrNode *b = ts_truth(ts, e[1]);
    if (!b) return NULL;
    IrBinOp bop = !strcmp(op, "and") ? IR_OP_BITAND : !strcmp(op, "or") ? IR_OP_BITOR : IR_OP_BITXOR;
    return ts_scalar_binop(ts, pos, bop, a, b);
}

static IrNode *e_compare(Ts *ts, IrPos pos, IrNode **e, int n, void *env)
{
    return ts_compare(ts, pos, *(IrCmpOp *)env, e[0], e[1]);
}

static IrNode *e_binop(Ts *ts, IrPos pos, IrNode **e, int n, void *env)
{
    return ts_scalar_binop(ts, pos, *(IrBinOp *)env, e[0], e[1]);
}

static IrNode *e_sign(Ts *ts, IrPos pos, IrNode **e, int n, void *env)
{
    IrNode *x = e[0];
    IrType *t = ir_type_strong(x->type);
    if (t->dtype == IR_DT_BOOL) TS_ERR(ts, pos, "numpy.sign of booleans is not supported (NumPy refuses it too)");
    x = ts_cast(ts, x, t);
    IrNode *zero = fconst(ts, pos, t, 0);
    /* x > 0 -> 1; x < 0 -> -1; otherwise x + 0: 0 (NumPy's sign(-0.0) is 0.0), or NaN, which propagates */
    IrNode *rest = ir_dtype_is_float(t->dtype) ? ts_scalar_binop(ts, pos, IR_OP_ADD, x, zero) : x;
    IrNode *neg = ifexp(ts, pos, ts_compare(ts, pos, IR_CMP_LT, x, zero), fconst(ts, pos, t, -1), rest);
    return ifexp(ts, pos, ts_compare(ts, pos, IR_CMP_GT, x, zero), fconst(ts, pos, t, 1), neg);
}

static IrNode *e_reciprocal(Ts *ts, IrPos pos, IrNode **e, int n, void *env)
{
    IrType *t = ir_type_strong(e[0]->type);
    if (t->dtype == IR_DT_BOOL) TS_ERR(ts, pos, "numpy.reciprocal of booleans is not supported");
    if (ir_dtype_is_float(t->dtype)) return ts_scalar_binop(ts, pos, IR_OP_DIV, fconst(ts, pos, t, 1.0), ts_cast(ts, e[0], t));
    /* integers: 1/x truncated (1 and -1 stay, others give 0); 1/0 raises as integer division does */
    IrNode *x = ts_cast(ts, e[0], t);
    IrNode *unit = ts_scalar_binop(ts, pos, IR_OP_BITOR, ts_compare(ts, pos, IR_CMP_EQ, x, fconst(ts, pos, t, 1)),
                                   ts_compare(ts, pos, IR_CMP_EQ, x, fconst(ts, pos, t, -1)));
    IrNode *zero_or_raise = ts_scalar_binop(ts, pos, IR_OP_MUL, fconst(ts, pos, t, 0), ts_scalar_binop(ts, pos, IR_OP_FLOORDIV, fconst(ts, pos, t, 1), x));
    return ifexp(ts, pos, unit, x, zero_or_raise);
}

static IrNode *e_fminmax(Ts *ts, IrPos pos, IrNode **e, int n, void *env)
{
    bool is_max = *(bool *)env;
    IrType *t = ts_promote(e[0]->type, e[1]->type);
    if (!ir_dtype_is_float(t->dtype)) return ts_scalar_binop(ts, pos, is_max ? IR_OP_MAX : IR_OP_MIN, e[0], e[1]);
    IrNode *args[2] = {e[0], e[1]};
    return ts_math(ts, pos, is_max ? IR_MATH_FMAX : IR_MATH_FMIN, args, 2, ir_type_strong(t));
}

/* numpy's logaddexp: x == y gives x + log(2); else the larger plus log1p(exp(-|x - y|)). base2: logaddexp2. */
static IrNode *e_logaddexp(Ts *ts, IrPos pos, IrNode **e, int n, void *env)
{
    bool base2 = *(bool *)env;
    IrType *rt = ts_math_type_of(e, 2), *t = ts_compute_type(rt); /* NumPy's loop; float16 computes in float32 */
    IrNode *x = ts_cast(ts, e[0], t), *y = ts_cast(ts, e[1], t);
    IrNode *d = ts_scalar_binop(ts, pos, IR_OP_SUB, x, y);
    IrNode *absd = ts_scalar_unop(ts, pos, IR_UOP_ABS, d);
    IrNode *negabs = ts_scalar_unop(ts, pos, IR_UOP_NEG, absd);
    IrNode *tail;
    if (base2) {
        IrNode *p = ts_math(ts, pos, IR_MATH_EXP2, &negabs, 1, t);
        IrNode *l = ts_math(ts, pos, IR_MATH_LOG1P, &p, 1, t);
        tail = ts_scalar_binop(ts, pos, IR_OP_MUL, l, fconst(ts, pos, t, 1.4426950408889634));
    } else {
        IrNode *p = ts_math(ts, pos, IR_MATH_EXP, &negabs, 1, t);
        tail = ts_math(ts, pos, IR_MATH_LOG1P, &p, 1, t);
    }
    IrNode *big = ts_scalar_binop(ts, pos, IR_OP_MAX, x, y);
    IrNode *general = ts_scalar_binop(ts, pos, IR_OP_ADD, big, tail);
    IrNode *same = ts_scalar_binop(ts, pos, IR_OP_ADD, x, fconst(ts, pos, t, base2 ? 1.0 : 0.6931471805599453));
    return ts_cast(ts, ifexp(ts, pos, ts_compare(ts, pos, IR_CMP_EQ, x, y), same, general), rt);
}

/* A Python int constant as NumPy 2.4's np.where converts it to an integer dtype t: with a C cast, which wraps
 * (np.where(c, uint8_array, -1) holds 255), where an operator would raise (and NumPy 2.5's np.where does). */
static IrNode *where_item(Ts *ts, IrNode *v, IrType *t)
{
    if (v->kind != IR_CONST || !v->type->weak || v->type->dtype != IR_DT_INT64 || !ir_dtype_is_int(t->dtype) || t->weak)
        return v;
    int bits = ir_dtype_bits(t->dtype);
    uint64_t u = (uint64_t)v->u.konst.i;
    if (bits < 64) {
        u &= (UINT64_C(1) << bits) - 1;
        if (ir_dtype_is_signed(t->dtype) && u >> (bits - 1)) u |= ~UINT64_C(0) << bits;
    }
    return ir_const_int(ts->a, v->pos, ir_type_strong(t), (int64_t)u);
}

static IrNode *e_where(Ts *ts, IrPos pos, IrNode **e, int n, void *env)
{
    IrType *t = ts_promote(e[1]->type, e[2]->type);
    return ifexp(ts, pos, ts_truth(ts, e[0]), where_item(ts, e[1], t), where_item(ts, e[2], t));
}

/* NumPy 2.5's np.where takes a Python int x or y as an operator's operand (TsOptions): it must fit the integer
 * dtype of the result, checked once before the selection (NumPy raises before it broadcasts); a constant that
 * does not fit is a CompileError at its line, as with operators. The checked value has that dtype, so
 * where_item has nothing left to wrap. */
static bool where_python_ints(Ts *ts, IrPos pos, IrNode **args)
{
    if (!ts->sess->opts->where_checks_python_ints) return true;
    IrType *t = ts_promote(ts_elem_type(args[1]->type), ts_elem_type(args[2]->type));
    if (t->weak || !ir_dtype_is_int(t->dtype) || t->dtype == IR_DT_INT64) return true;
    for (int k = 1; k <= 2; k++) {
        IrNode *x = args[k];
        if (ts_is_array(x) || x->type->kind != IR_TY_SCALAR || !x->type->weak || x->type->dtype != IR_DT_INT64) continue;
        if (!(x = ts_python_int_operand(ts, pos, x, t->dtype, false, false))) return false;
        if (!(args[k] = ts_cast(ts, x, ir_type_scalar(t->dtype)))) return false;
    }
    return true;
}

/* NumPy's clip of integers by Python ints: a lower bound below the dtype's range and an upper one above it
 * stand for the range's own ends (np.clip(uint8_array, -1, 300) is the array); the other way round they raise
 * OverflowError, as operators do. */
static IrNode *e_clip(Ts *ts, IrPos pos, IrNode **e, int n, void *env)
{
    IrType *t = ts_promote(ts_promote(e[0]->type, e[1]->type), e[2]->type);
    IrNode *low = e[1], *high = e[2];
    if (!t->weak && ir_dtype_is_int(t->dtype)) {
        low = ts_python_int_operand(ts, pos, low, t->dtype, true, false);
        high = ts_python_int_operand(ts, pos, high, t->dtype, false, true);
    }
    IrNode *lo = ts_scalar_binop(ts, pos, IR_OP_MAX, e[0], low);
    return lo ? ts_scalar_binop(ts, pos, IR_OP_MIN, lo, high) : NULL;
}

typedef struct Rounding {
    int64_t decimals;
    bool rint;
} Rounding;

/* np.round/np.around(x, decimals) and np.rint(x). NumPy's round keeps an integer x (rounding it in float64 for
 * decimals < 0, then converting back), makes a bool float16 (decimals 0 only); rint gives an integer or bool
 * its float type, as sqrt does. */
static IrNode *e_round(Ts *ts, IrPos pos, IrNode **e, int n, void *env)
{
    const Rounding *how = env;
    int64_t decimals = how->decimals;
    IrType *t = ir_type_strong(e[0]->type);
    if (!ir_dtype_is_float(t->dtype)) {
        if (how->rint || t->dtype == IR_DT_BOOL) {
            if (t->dtype == IR_DT_BOOL && decimals != 0)
                TS_ERR(ts, pos, "numpy.round of booleans with decimals is not supported (NumPy refuses it too)");
            return ts_cast(ts, e[0], ts_math_type(e[0]->type)); /* already a whole number */
        }
        if (decimals >= 0) return ts_cast(ts, e[0], t);
        IrType *f64 = ir_type_scalar(IR_DT_FLOAT64);
        Rounding in_float = {decimals, false};
        IrNode *x = ts_cast(ts, e[0], f64);
        IrNode *r = e_round(ts, pos, &x, 1, &in_float);
        return r ? ts_cast(ts, ts_cast(ts, r, ir_type_scalar(IR_DT_INT64)), t) : NULL;
    }
    IrNode *x = ts_cast(ts, e[0], t);
    if (decimals == 0) return ts_math(ts, pos, IR_MATH_RINT, &x, 1, t);
    double scale = 1;
    for (int64_t i = 0; i < (decimals < 0 ? -decimals : decimals); i++) scale *= 10;
    if (decimals < 0) scale = 1 / scale;
    IrNode *scaled = ts_scalar_binop(ts, pos, IR_OP_MUL, x, fconst(ts, pos, t, scale));
    IrNode *r = ts_math(ts, pos, IR_MATH_RINT, &scaled, 1, t);
    return ts_scalar_binop(ts, pos, IR_OP_DIV, r, fconst(ts, pos, t, scale));
}

static const struct { const char *name; IrCmpOp op; } compares[] = {
    {"equal", IR_CMP_EQ}, {"not_equal", IR_CMP_NE}, {"less", IR_CMP_LT}, {"less_equal", IR_CMP_LE},
    {"greater", IR_CMP_GT}, {"greater_equal", IR_CMP_GE},
};

static const struct { const char *name; IrBinOp op; } bitops[] = {
    {"bitwise_and", IR_OP_BITAND}, {"bitwise_or", IR_OP_BITOR}, {"bitwise_xor", IR_OP_BITXOR},
    {"left_shift", IR_OP_LSHIFT}, {"right_shift", IR_OP_RSHIFT},
};

IrNode *ts_numpy_elementwise(Ts *ts, IrPos pos, const char *name, IrNode **args, int n, const IrNode *decimals_node,
                             bool *handled)
{
    *handled = true;
#define ARITY(k)                                                                                                 \
    do {                                                                                                         \
        if (n != (k)) TS_ERR(ts, pos, "numpy.%s() takes %d argument%s, %d given", name, (k), (k) == 1 ? "" : "s", n); \
    } while (0)
    if (!strcmp(name, "logical_and") || !strcmp(name, "logical_or") || !strcmp(name, "logical_xor")) {
        ARITY(2);
        return elementwise(ts, pos, args, 2, e_logical, (void *)(name + 8));
    }
    if (!strcmp(name, "logical_not")) {
        ARITY(1);
        return elementwise(ts, pos, args, 1, e_logical, "not");
    }
    for (size_t i = 0; i < sizeof compares / sizeof compares[0]; i++)
        if (!strcmp(name, compares[i].name)) {
            ARITY(2);
            IrCmpOp op = compares[i].op;
            return elementwise(ts, pos, args, 2, e_compare, &op);
        }
    for (size_t i = 0; i < sizeof bitops / sizeof bitops[0]; i++)
        if (!strcmp(name, bitops[i].name)) {
            ARITY(2);
            IrBinOp op = bitops[i].op;
            return elementwise(ts, pos, args, 2, e_binop, &op);
        }
    if (!strcmp(name, "invert") || !strcmp(name, "bitwise_not")) {
        ARITY(1);
        return ts_unop(ts, pos, IR_UOP_INVERT, args[0]);
    }
    if (!strcmp(name, "positive")) {
        ARITY(1);
        return ts_unop(ts, pos, IR_UOP_POS, args[0]);
    }
    if (!strcmp(name, "sign")) {
        ARITY(1);
        return elementwise(ts, pos, args, 1, e_sign, NULL);
    }
    if (!strcmp(name, "reciprocal")) {
        ARITY(1);
        return elementwise(ts, pos, args, 1, e_reciprocal, NULL);
    }
    if (!strcmp(name, "fmin") || !strcmp(name, "fmax")) {
        ARITY(2);
        bool is_max = name[2] == 'a';
        return elementwise(ts, pos, args, 2, e_fminmax, &is_max);
    }
    if (!strcmp(name, "logaddexp") || !strcmp(name, "logaddexp2")) {
        ARITY(2);
        bool base2 = name[9] == '2';
        return elementwise(ts, pos, args, 2, e_logaddexp, &base2);
    }
    if (!strcmp(name, "where")) {
        if (n != 3) TS_ERR(ts, pos, "numpy.where() with one argument (the indices) is not supported; pass three");
        if (!where_python_ints(ts, pos, args)) return NULL;
        return elementwise(ts, pos, args, 3, e_where, NULL);
    }
    if (!strcmp(name, "clip")) {
        ARITY(3);
        return elementwise(ts, pos, args, 3, e_clip, NULL);
    }
    if (!strcmp(name, "round") || !strcmp(name, "around") || !strcmp(name, "rint")) {
        int64_t decimals = 0;
        if (n == 2) {
            if (!decimals_node || !ts_const_int(decimals_node, &decimals)) TS_ERR(ts, pos, "numpy.%s(): decimals must be a constant", name);
        } else {
            ARITY(1);
        }
        Rounding how = {decimals, name[1] == 'i'};
        return elementwise(ts, pos, args, 1, e_round, &how);
    }
#undef ARITY
    *handled = false;
    return NULL;
}
