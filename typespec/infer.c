/* infer.c: typing of expressions. Scalar operators get NumPy 2 result types and explicit casts of their
 * operands; operators on arrays become IR_MAP nodes whose body is the same scalar operator on elements. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "ts_internal.h"

bool ts_is_array(const IrNode *n) { return n->type && n->type->kind == IR_TY_ARRAY; }

bool ts_is_int_scalar(const IrType *t)
{
    return t && t->kind == IR_TY_SCALAR && (ir_dtype_is_int(t->dtype) || t->dtype == IR_DT_BOOL);
}

const char *ts_type_name(const IrType *t)
{
    static char bufs[4][128];
    static int next;
    char *b = bufs[next++ & 3];
    ir_type_str(t, b, 128);
    return b;
}

IrNode *ts_var(Ts *ts, IrPos pos, IrVar *v) { return ir_var_ref(ts->a, pos, v); }
IrNode *ts_i64(Ts *ts, IrPos pos, int64_t v) { return ir_const_int(ts->a, pos, ir_type_scalar(IR_DT_INT64), v); }

/* Convert a constant's value to type t, as NumPy's astype would. */
static IrNode *fold_const_cast(Ts *ts, IrNode *c, IrType *t)
{
    IrType *from = c->type;
    if (ir_dtype_is_complex(t->dtype)) { /* a number becomes the real part; a complex is rounded part by part */
        IrNode *re = c, *im = NULL;
        if (ir_dtype_is_complex(from->dtype)) {
            re = ir_const_float(ts->a, c->pos, ir_type_scalar(IR_DT_FLOAT64), c->u.konst.f);
            im = ir_const_float(ts->a, c->pos, ir_type_scalar(IR_DT_FLOAT64), c->u.konst.im);
        }
        IrType *part = ir_type_scalar(ir_complex_part(t->dtype));
        re = fold_const_cast(ts, re, part);
        im = im ? fold_const_cast(ts, im, part) : NULL;
        if (!re) return NULL;
        IrNode *z = ir_const_float(ts->a, c->pos, t, re->u.konst.f);
        z->u.konst.im = im ? im->u.konst.f : 0.0;
        return z;
    }
    if (ir_dtype_is_complex(from->dtype)) return NULL; /* to a real type: the backend takes the real part */
    bool from_float = ir_dtype_is_float(from->dtype);
    if (ir_dtype_is_float(t->dtype)) {
        double v = from_float ? c->u.konst.f : (double)c->u.konst.i;
        if (t->dtype == IR_DT_FLOAT32) v = (double)(float)v;
        if (t->dtype == IR_DT_FLOAT16) v = rt_half_to_double(rt_half_from_double(v));
        return ir_const_float(ts->a, c->pos, t, v);
    }
    if (t->dtype == IR_DT_BOOL)
        return ir_const_int(ts->a, c->pos, t, from_float ? c->u.konst.f != 0 : c->u.konst.i != 0);
    if (from_float) {
        double f = c->u.konst.f;
        if (!(f > -9.2e18 && f < 9.2e18)) return NULL; /* leave NaN/huge to the backend's conversion */
        return ir_const_int(ts->a, c->pos, t, (int64_t)f);
    }
    int64_t v = c->u.konst.i;
    switch (t->dtype) {
    case IR_DT_INT8: v = (int8_t)v; break;
    case IR_DT_INT16: v = (int16_t)v; break;
    case IR_DT_INT32: v = (int32_t)v; break;
    case IR_DT_UINT8: v = (uint8_t)v; break;
    case IR_DT_UINT16: v = (uint16_t)v; break;
    case IR_DT_UINT32: v = (uint32_t)v; break;
    default: break;
    }
    return ir_const_int(ts->a, c->pos, t, v);
}

/* NEP 50: a Python int literal that the other operand's integer type cannot hold is an error, not a wrap. */
static bool int_fits(int64_t v, IrDtype dt)
{
    switch (dt) {
    case IR_DT_INT8: return v >= -128 && v <= 127;
    case IR_DT_INT16: return v >= -32768 && v <= 32767;
    case IR_DT_INT32: return v >= INT32_MIN && v <= INT32_MAX;
    case IR_DT_UINT8: return v >= 0 && v <= 255;
    case IR_DT_UINT16: return v >= 0 && v <= 65535;
    case IR_DT_UINT32: return v >= 0 && v <= (int64_t)UINT32_MAX;
    case IR_DT_UINT64: return v >= 0;
    default: return true;
    }
}

IrNode *ts_cast(Ts *ts, IrNode *n, IrType *t)
{
    if (!n) return NULL;
    if (n->type == t) return n;
    IrType *from = n->type;
    if (from->kind == IR_TY_SCALAR && t->kind == IR_TY_SCALAR) {
        if (ir_dtype_is_complex(from->dtype) && !ir_dtype_is_complex(t->dtype))
            TS_ERR(ts, n->pos, "cannot convert %s to %s: take .real, .imag or abs() of it (NumPy discards the imaginary "
                               "part with a ComplexWarning, CPython raises TypeError)", ts_type_name(from), ts_type_name(t));
        if (from->dtype == t->dtype && n->kind != IR_CONST) {
            /* only the weak flag changes, not the representation: the node retyped, not wrapped in a cast, so
             * that the passes that look for a loop variable, a dimension or an index expression (bounds_plan,
             * version_loops, prange) see one. The copy shares n's operands, as a cast of n would. */
            IrNode *same = ir_node(ts->a, n->kind, n->pos);
            *same = *n;
            same->type = t;
            return same;
        }
        if (n->kind == IR_CONST && from->weak && from->dtype == IR_DT_INT64 && ir_dtype_is_int(t->dtype) && !t->weak &&
            !int_fits(n->u.konst.i, t->dtype))
            TS_ERR(ts, n->pos, "Python integer %lld out of bounds for %s", (long long)n->u.konst.i, ir_dtype_name(t->dtype));
        if (n->kind == IR_CONST) {
            IrNode *c = fold_const_cast(ts, n, t);
            if (c) return c;
        }
        IrNode *c = ir_node(ts->a, IR_CAST, n->pos);
        c->type = t;
        c->u.cast.value = n;
        return c;
    }
    if (from->kind == IR_TY_ARRAY && t->kind == IR_TY_ARRAY && from->ndim == t->ndim && from->dtype == t->dtype) {
        IrNode *c = ir_node(ts->a, IR_CAST, n->pos); /* a layout change only: same representation */
        c->type = t;
        c->u.cast.value = n;
        return c;
    }
    if (from->kind == IR_TY_TUPLE && t->kind == IR_TY_TUPLE && from->nelems == t->nelems) {
        IrNode *src = ts_reuse(ts, n);
        if (!src) return NULL;
        IrNode *tup = ir_node(ts->a, IR_TUPLE, n->pos);
        tup->type = t;
        tup->u.tuple.n = t->nelems;
        tup->u.tuple.items = ir_nodes(ts->a, t->nelems);
        for (int i = 0; i < t->nelems; i++) {
            if (!(tup->u.tuple.items[i] = ts_cast(ts, ir_tuple_get(ts->a, n->pos, src, i), t->elems[i]))) return NULL;
        }
        return tup;
    }
    TS_ERR(ts, n->pos, "cannot convert %s to %s", ts_type_name(from), ts_type_name(t));
}

/* NEP 50's two kinds of scalar. A Python int, float or bool is weak: it takes the other operand's dtype when
 * that is of its kind or higher. CPython makes them in many places besides literals and arguments: len(),
 * a.shape[k], a.size, range's loop variable, int(), float(), bool(), comparisons of two of them, the math
 * module, .item(), and the functions that return one. NumPy's functions return NumPy scalars, which are
 * strong (np.square(300) is an int64 however it is used). */
IrType *ts_python_type(IrDtype dt)
{
    return ir_type_weak(ir_dtype_is_complex(dt) ? IR_DT_COMPLEX128 : ir_dtype_is_float(dt) ? IR_DT_FLOAT64
                        : dt == IR_DT_BOOL ? IR_DT_BOOL : IR_DT_INT64);
}

IrNode *ts_python_scalar(Ts *ts, IrNode *n)
{
    if (!n || n->type->kind != IR_TY_SCALAR) return n;
    return ts_cast(ts, n, ts_python_type(n->type->dtype));
}

IrNode *ts_numpy_scalar(Ts *ts, IrNode *n)
{
    if (!n || n->type->kind != IR_TY_SCALAR) return n;
    return ts_cast(ts, n, ir_type_strong(n->type));
}

/* A node that may be referenced more than once. Outside conditional expressions a non-trivial value is stored
 * in a temporary first; inside them it is shared (evaluated again), which is safe for our pure expressions. */
IrNode *ts_reuse(Ts *ts, IrNode *n)
{
    if (!n) return NULL;
    if (n->kind == IR_VAR || n->kind == IR_CONST || ts->cond_depth > 0 || !ts->pre) return n;
    IrVar *t = ir_func_temp(ts->dst, n->type);
    IrNode *as = ir_node(ts->a, IR_ASSIGN, n->pos);
    as->u.assign.var = t;
    as->u.assign.value = n;
    ir_block_push(ts->a, ts->pre, as);
    return ts_var(ts, n->pos, t);
}

IrNode *ts_ifexp(Ts *ts, IrPos pos, IrNode *cond, IrNode *then, IrNode *orelse)
{
    if (!cond || !then || !orelse) return NULL;
    IrNode *r = ir_node(ts->a, IR_IFEXP, pos);
    r->type = then->type;
    r->u.ifexp.cond = cond;
    r->u.ifexp.then = then;
    r->u.ifexp.orelse = orelse;
    return r;
}

IrNode *ts_bool2(Ts *ts, IrPos pos, bool is_and, IrNode *a, IrNode *b)
{
    if (!a || !b) return NULL;
    IrNode *n = ir_node(ts->a, IR_BOOLOP, pos);
    n->u.boolop.is_and = is_and;
    n->u.boolop.n = 2;
    n->u.boolop.values = ir_nodes(ts->a, 2);
    n->u.boolop.values[0] = a;
    n->u.boolop.values[1] = b;
    n->type = ir_type_scalar(IR_DT_BOOL);
    return n;
}

/* `value`, after evaluating `first` for what it may do: a result typespec folds to a constant (np.isnan of an
 * integer, len of a tuple) still evaluates an operand that may raise or write, as CPython does (np.isnan(a // 0)
 * raises ZeroDivisionError). The pair is a tuple, whose items a backend evaluates in order. */
IrNode *ts_after_effects(Ts *ts, IrPos pos, IrNode *first, IrNode *value)
{
    if (!first || !value) return NULL;
    if (!(ir_effects(first) & (IR_FX_RAISE | IR_FX_WRITE))) return value;
    return ir_tuple_get(ts->a, pos, ts_pair(ts, pos, first, value), 1);
}

IrNode *ts_pair(Ts *ts, IrPos pos, IrNode *x, IrNode *y)
{
    if (!x || !y) return NULL;
    IrNode *t = ir_node(ts->a, IR_TUPLE, pos);
    t->u.tuple.n = 2;
    t->u.tuple.items = ir_nodes(ts->a, 2);
    t->u.tuple.items[0] = x;
    t->u.tuple.items[1] = y;
    IrType *elems[2] = {x->type, y->type};
    t->type = ir_type_tuple(elems, 2); /* interned: the type keeps a copy of elems */
    return t;
}

/* The raise intrinsic (ir.h): the error `code` with int64 extras (NULL: 0) at pos, typed t where it stands. */
IrNode *ts_raise(Ts *ts, IrPos pos, RtErrCode code, IrNode *e0, IrNode *e1, IrNode *e2, IrType *t)
{
    IrNode *args[4] = {ts_i64(ts, pos, code), e0, e1, e2};
    for (int i = 1; i < 4; i++)
        if (!(args[i] = args[i] ? ts_cast(ts, args[i], ir_type_scalar(IR_DT_INT64)) : ts_i64(ts, pos, 0))) return NULL;
    return ir_intrinsic_call(ts->a, pos, IR_INTR_RAISE, args, 4, t);
}

/* A write into a read-only array is NumPy's ValueError where the write runs (never at entry: a path that does
 * not run does not raise), after what CPython evaluates before it: `before[n]` (the value, the target's base
 * and indices; those that cannot raise or write are left out). Typed t. NumPy's words differ for an assignment
 * (a[i] = v) and a ufunc's output (a += 1): `output`. */
IrNode *ts_readonly_write(Ts *ts, IrPos pos, IrNode **before, int n, IrType *t, bool output)
{
    IrNode *which = ts_i64(ts, pos, output ? RT_VAL_READONLY_OUT : RT_VAL_READONLY);
    IrNode *r = ts_raise(ts, pos, RT_ERR_VALUE, which, NULL, NULL, t);
    for (int i = n - 1; i >= 0 && r; i--) {
        IrTypeKind k = before[i] ? before[i]->type->kind : IR_TY_NONE;
        if (k == IR_TY_SCALAR || k == IR_TY_ARRAY) r = ts_after_effects(ts, pos, before[i], r);
    }
    return r;
}

IrNode *ts_truth(Ts *ts, IrNode *n)
{
    IrType *t = n->type;
    if (t->kind == IR_TY_NONE) return ir_const_int(ts->a, n->pos, ir_type_scalar(IR_DT_BOOL), 0);
    if (t->kind == IR_TY_ARRAY)
        TS_ERR(ts, n->pos, "the truth value of an array is ambiguous: use a.any() or a.all()");
    if (t->kind != IR_TY_SCALAR) TS_ERR(ts, n->pos, "%s cannot be used as a condition", ts_type_name(t));
    if (t->dtype == IR_DT_BOOL) return ts_cast(ts, n, ir_type_scalar(IR_DT_BOOL));
    IrNode *zero = ir_const_int(ts->a, n->pos, t, 0);
    if (ir_dtype_is_float(t->dtype)) zero = ir_const_float(ts->a, n->pos, t, 0.0);
    return ts_compare(ts, n->pos, IR_CMP_NE, n, zero);
}

static bool is_weak_bool(const IrType *t) { return t->weak && t->dtype == IR_DT_BOOL; }

IrNode *ts_scalar_binop(Ts *ts, IrPos pos, IrBinOp op, IrNode *l, IrNode *r)
{
    if (!l || !r) return NULL;
    if (l->type->kind != IR_TY_SCALAR || r->type->kind != IR_TY_SCALAR)
        TS_ERR(ts, pos, "unsupported operand types for an arithmetic operator: %s and %s", ts_type_name(l->type),
               ts_type_name(r->type));
    IrType *t = ts_promote(l->type, r->type);
    IrType *res = t;
    bool both_weak_bool = is_weak_bool(l->type) && is_weak_bool(r->type);
    if (ir_dtype_is_complex(t->dtype) && op != IR_OP_ADD && op != IR_OP_SUB && op != IR_OP_MUL && op != IR_OP_DIV &&
        op != IR_OP_POW && op != IR_OP_COMPLEX)
        TS_ERR(ts, pos, "%s is not defined for complex numbers (%s)",
               op == IR_OP_FLOORDIV ? "//" : op == IR_OP_MOD ? "%" : op == IR_OP_MIN || op == IR_OP_MAX ? "an ordering" : "a bitwise operator",
               ts_type_name(t));
    if (op != IR_OP_DIV && !t->weak && ir_dtype_is_int(t->dtype)) { /* int8(1) + k: k must fit int8 */
        if (!(l = ts_python_int_operand(ts, pos, l, t->dtype, false, false))) return NULL;
        if (!(r = ts_python_int_operand(ts, pos, r, t->dtype, false, false))) return NULL;
    }
    switch (op) {
    case IR_OP_COMPLEX: {
        /* complex(re, im): both parts in the float type that holds them, the result its complex */
        IrType *part = ts_math_type(t);
        if (ir_dtype_is_complex(part->dtype)) TS_ERR(ts, pos, "complex() of complex parts is not supported");
        t = part;
        res = l->type->weak && r->type->weak ? ir_type_weak(IR_DT_COMPLEX128) : ir_type_scalar(ir_complex_of(part->dtype));
        if (part->dtype == IR_DT_FLOAT16) t = ir_type_scalar(IR_DT_FLOAT32); /* complex64's parts */
        break;
    }
    case IR_OP_DIV:
        if (!ir_dtype_is_float(t->dtype) && !ir_dtype_is_complex(t->dtype)) t = res = t->weak ? ir_type_weak(IR_DT_FLOAT64) : ir_type_scalar(IR_DT_FLOAT64);
        break;
    case IR_OP_ADD: case IR_OP_SUB: case IR_OP_MUL: case IR_OP_FLOORDIV: case IR_OP_MOD: case IR_OP_POW:
        if (t->dtype == IR_DT_BOOL) {
            if (!both_weak_bool && op == IR_OP_SUB)
                TS_ERR(ts, pos, "numpy boolean subtract, the - operator, is not supported: use ^ or np.logical_xor");
            if (both_weak_bool) t = res = ir_type_weak(IR_DT_INT64);       /* Python: True + True == 2 */
            else if (op == IR_OP_ADD || op == IR_OP_MUL) op = op == IR_OP_ADD ? IR_OP_BITOR : IR_OP_BITAND;
            else t = res = ir_type_scalar(IR_DT_INT8);                   /* NumPy: bool // bool is int8 */
        }
        break;
    case IR_OP_LSHIFT: case IR_OP_RSHIFT: case IR_OP_BITAND: case IR_OP_BITOR: case IR_OP_BITXOR:
        if (ir_dtype_is_float(t->dtype))
            TS_ERR(ts, pos, "bitwise operators need integers or booleans, not %s", ts_type_name(t));
        if (t->dtype == IR_DT_BOOL && (op == IR_OP_LSHIFT || op == IR_OP_RSHIFT))
            t = res = both_weak_bool ? ir_type_weak(IR_DT_INT64) : ir_type_scalar(IR_DT_INT8);
        break;
    case IR_OP_MIN: case IR_OP_MAX: break;
    case IR_OP_MATMUL: TS_ERR(ts, pos, "the @ operator needs arrays");
    }
    IrNode *b = ir_node(ts->a, IR_BINOP, pos);
    b->type = res;
    b->u.binop.op = op;
    b->u.binop.lhs = ts_cast(ts, l, t);
    b->u.binop.rhs = ts_cast(ts, r, t);
    return (b->u.binop.lhs && b->u.binop.rhs) ? b : NULL;
}

static IrNode *elem_binop(Ts *ts, IrPos pos, IrNode **e, int n, void *env)
{
    return ts_scalar_binop(ts, pos, *(IrBinOp *)env, e[0], e[1]);
}

/* NumPy's reciprocal of a complex: the smaller part over the larger, then one division for each part. */
static IrNode *elem_complex_reciprocal(Ts *ts, IrPos pos, IrNode **e, int n, void *env)
{
    IrNode *z = e[0], *re = ts_scalar_unop(ts, pos, IR_UOP_REAL, z), *im = ts_scalar_unop(ts, pos, IR_UOP_IMAG, z);
    IrType *t = re->type;
    IrNode *one = ir_const_float(ts->a, pos, t, 1.0), *mone = ir_const_float(ts->a, pos, t, -1.0);
    ts->cond_depth++; /* the parts are shared by both arms, which are pure */
    IrNode *r1 = ts_scalar_binop(ts, pos, IR_OP_DIV, im, re);
    IrNode *d1 = ts_scalar_binop(ts, pos, IR_OP_ADD, re, ts_scalar_binop(ts, pos, IR_OP_MUL, im, r1));
    IrNode *small_im = ts_scalar_binop(ts, pos, IR_OP_COMPLEX, ts_scalar_binop(ts, pos, IR_OP_DIV, one, d1),
                                       ts_scalar_binop(ts, pos, IR_OP_DIV, ts_scalar_unop(ts, pos, IR_UOP_NEG, r1), d1));
    IrNode *r2 = ts_scalar_binop(ts, pos, IR_OP_DIV, re, im);
    IrNode *d2 = ts_scalar_binop(ts, pos, IR_OP_ADD, ts_scalar_binop(ts, pos, IR_OP_MUL, re, r2), im);
    IrNode *small_re = ts_scalar_binop(ts, pos, IR_OP_COMPLEX, ts_scalar_binop(ts, pos, IR_OP_DIV, r2, d2),
                                       ts_scalar_binop(ts, pos, IR_OP_DIV, mone, d2));
    ts->cond_depth--;
    IrNode *cond = ts_compare(ts, pos, IR_CMP_LE, ts_scalar_unop(ts, pos, IR_UOP_ABS, im), ts_scalar_unop(ts, pos, IR_UOP_ABS, re));
    if (!cond || !small_im || !small_re) return NULL;
    IrNode *r = ir_node(ts->a, IR_IFEXP, pos);
    r->type = z->type;
    r->u.ifexp.cond = cond;
    r->u.ifexp.then = small_im;
    r->u.ifexp.orelse = small_re;
    return r;
}

static IrNode *elem_complex_sqrt(Ts *ts, IrPos pos, IrNode **e, int n, void *env)
{
    return ts_math(ts, pos, IR_MATH_SQRT, e, 1, NULL);
}

/* NumPy's ndarray ** a Python -1, 2 or 0.5 (fast_scalar_power): reciprocal, square and sqrt instead of the power
 * loop, for complex arrays here (square is the power loop's product already); NULL for any other power. */
static IrNode *complex_array_power(Ts *ts, IrPos pos, IrNode *l, IrNode *r)
{
    if (!ts_is_array(l) || !ir_dtype_is_complex(l->type->dtype) || r->kind != IR_CONST || !r->type->weak) return NULL;
    bool minus_one = r->type->dtype == IR_DT_INT64 && r->u.konst.i == -1;
    bool half = r->type->dtype == IR_DT_FLOAT64 && r->u.konst.f == 0.5;
    if (!minus_one && !half) return NULL;
    return ts_make_map(ts, pos, &l, 1, minus_one ? elem_complex_reciprocal : elem_complex_sqrt, NULL);
}

/* NumPy's ** of an array by a Python int takes np.square for 2, so a bool array ** 2 is int8 where any other
 * Python int exponent gives int64 (np.power and NumPy scalars' ** never do). For an exponent that is not a
 * literal the dtype would depend on its value: refused. The base to use (int8 where np.square applies). */
static IrNode *bool_power_base(Ts *ts, IrPos pos, IrNode *l, IrNode *r)
{
    if (!ts_is_array(l) || l->type->dtype != IR_DT_BOOL || ts_is_array(r) || !r->type->weak || r->type->dtype != IR_DT_INT64)
        return l;
    if (r->kind != IR_CONST)
        TS_ERR(ts, pos, "the dtype of a bool array ** a Python int depends on the int's value in NumPy (int8 for 2, "
               "int64 for others): write a.astype(np.int64) ** n or np.square(a)");
    return r->u.konst.i == 2 ? ts_cast_array(ts, pos, l, IR_DT_INT8) : l;
}

/* NumPy's float32 and float64 power loops take an exponent of 0.5 that is the same for every element as sqrt,
 * and the ** operator takes a Python float 0.5 as np.sqrt for every float array: they differ from pow at -inf
 * (nan) and -0.0 (-0.0). `p` is base ** exponent already built; the exponent may be a variable, so the choice
 * is made when it runs unless it is a constant. */
static IrNode *sqrt_if_half(Ts *ts, IrPos pos, IrNode *base, IrNode *exponent, IrNode *p)
{
    if (!p || !ir_dtype_is_float(exponent->type->dtype)) return p;
    IrNode *x = ts_cast(ts, base, p->type);
    IrNode *root = x ? ts_math(ts, pos, IR_MATH_SQRT, &x, 1, p->type) : NULL;
    if (exponent->kind == IR_CONST) return exponent->u.konst.f == 0.5 ? root : p;
    IrNode *half = ir_const_float(ts->a, pos, ir_type_strong(exponent->type), 0.5);
    IrNode *r = ir_node(ts->a, IR_IFEXP, pos);
    r->type = p->type;
    r->u.ifexp.cond = ts_compare(ts, pos, IR_CMP_EQ, exponent, half);
    r->u.ifexp.then = root;
    r->u.ifexp.orelse = p;
    return r->u.ifexp.cond && root ? r : NULL;
}

typedef struct PowerEnv {
    bool sqrt16; /* float16 results too (the operator with a Python float) */
} PowerEnv;

/* base ** exponent of one element, the exponent the same for all */
static IrNode *elem_power(Ts *ts, IrPos pos, IrNode **e, int n, void *env)
{
    IrNode *p = ts_scalar_binop(ts, pos, IR_OP_POW, e[0], e[1]);
    if (!p || (p->type->dtype == IR_DT_FLOAT16 && !((PowerEnv *)env)->sqrt16)) return p;
    return sqrt_if_half(ts, pos, e[0], e[1], p);
}

/* A Python int x beside an integer array `other` (NEP 50: it must fit the array's dtype, ts_python_int_operand),
 * checked once before the map and given that dtype, so the map's body has nothing left to check. Where the
 * array's evaluation may raise or write, the check stays in the body, after it, as in NumPy. */
static IrNode *python_int_beside(Ts *ts, IrPos pos, IrBinOp op, IrNode *x, IrNode *other)
{
    if (op == IR_OP_DIV || ts_is_array(x) || x->kind == IR_CONST || !x->type->weak || x->type->dtype != IR_DT_INT64 ||
        !ts_is_array(other) || (ir_effects(other) & (IR_FX_RAISE | IR_FX_WRITE)))
        return x;
    IrType *t = ts_promote(x->type, ts_elem_type(other->type));
    if (t->weak || !ir_dtype_is_int(t->dtype) || t->dtype == IR_DT_INT64) return x;
    return ts_cast(ts, ts_python_int_operand(ts, pos, x, t->dtype, false, false), ir_type_scalar(t->dtype));
}

static IrNode *binop(Ts *ts, IrPos pos, IrBinOp op, IrNode *l, IrNode *r, bool ufunc)
{
    if (!l || !r) return NULL;
    if (op == IR_OP_MATMUL) return ts_matmul(ts, pos, l, r, false);
    if (ts_is_array(l) || ts_is_array(r)) {
        if ((l->type->kind != IR_TY_ARRAY && l->type->kind != IR_TY_SCALAR) ||
            (r->type->kind != IR_TY_ARRAY && r->type->kind != IR_TY_SCALAR))
            TS_ERR(ts, pos, "unsupported operand types: %s and %s", ts_type_name(l->type), ts_type_name(r->type));
        IrNode *fast = op == IR_OP_POW && !ufunc ? complex_array_power(ts, pos, l, r) : NULL;
        if (fast) return fast;
        if (op == IR_OP_POW && !ufunc && !(l = bool_power_base(ts, pos, l, r))) return NULL;
        if (!(l = python_int_beside(ts, pos, op, l, r)) || !(r = python_int_beside(ts, pos, op, r, l))) return NULL;
        IrNode *in[2] = {l, r};
        if (op == IR_OP_POW && !ts_is_array(r)) {
            PowerEnv env = {!ufunc && r->type->weak};
            return ts_make_map(ts, pos, in, 2, elem_power, &env);
        }
        return ts_make_map(ts, pos, in, 2, elem_binop, &op);
    }
    if (op == IR_OP_POW && ufunc && l && r && l->type->kind == IR_TY_SCALAR && r->type->kind == IR_TY_SCALAR) {
        /* np.power of scalars runs NumPy's loop (sqrt for 0.5); Python's and NumPy scalars' ** are pow */
        l = ts_reuse(ts, l);
        r = ts_reuse(ts, r);
        IrNode *p = ts_scalar_binop(ts, pos, op, l, r);
        return p && p->type->dtype != IR_DT_FLOAT16 ? sqrt_if_half(ts, pos, l, r, p) : p;
    }
    return ts_scalar_binop(ts, pos, op, l, r);
}

IrNode *ts_binop(Ts *ts, IrPos pos, IrBinOp op, IrNode *l, IrNode *r) { return binop(ts, pos, op, l, r, false); }

/* A NumPy ufunc of two operands (np.add, np.power): as the operator, but without the fast paths NumPy's
 * operators take (a ** 2 is np.square). */
IrNode *ts_ufunc_binop(Ts *ts, IrPos pos, IrBinOp op, IrNode *l, IrNode *r) { return binop(ts, pos, op, l, r, true); }

IrNode *ts_scalar_unop(Ts *ts, IrPos pos, IrUnOp op, IrNode *x)
{
    if (!x) return NULL;
    if (op == IR_UOP_NOT) {
        IrNode *t = ts_truth(ts, x);
        if (!t) return NULL;
        IrNode *u = ir_node(ts->a, IR_UNOP, pos);
        u->type = ir_type_weak(IR_DT_BOOL); /* Python's `not` gives a Python bool, of a NumPy value too */
        u->u.unop.op = IR_UOP_NOT;
        u->u.unop.operand = t;
        return u;
    }
    if (x->type->kind != IR_TY_SCALAR) TS_ERR(ts, pos, "bad operand type for a unary operator: %s", ts_type_name(x->type));
    IrType *t = x->type;
    if (t->dtype == IR_DT_BOOL) {
        if (op == IR_UOP_NEG && !t->weak)
            TS_ERR(ts, pos, "numpy boolean negative, the - operator, is not supported: use ~ or np.logical_not");
        if (op == IR_UOP_INVERT && !t->weak) op = IR_UOP_NOT;  /* NumPy: ~True is False */
        else if (op == IR_UOP_ABS || op == IR_UOP_POS) t = t->weak ? ir_type_weak(IR_DT_INT64) : t;
        else t = t->weak ? ir_type_weak(IR_DT_INT64) : ir_type_scalar(IR_DT_INT8);
    }
    if (op == IR_UOP_INVERT && (ir_dtype_is_float(t->dtype) || ir_dtype_is_complex(t->dtype)))
        TS_ERR(ts, pos, "~ needs an integer, not %s", ts_type_name(t));
    if (op == IR_UOP_REAL || op == IR_UOP_IMAG || op == IR_UOP_CONJ) {
        /* of a real number: itself, 0 and itself (x.imag of an int is an int 0, as NumPy's) */
        if (!ir_dtype_is_complex(t->dtype)) {
            if (op != IR_UOP_IMAG) return x;
            return ts_after_effects(ts, pos, x, ir_dtype_is_float(t->dtype) ? ir_const_float(ts->a, pos, t, 0.0)
                                                                           : ir_const_int(ts->a, pos, t, 0));
        }
    }
    if (ir_dtype_is_complex(t->dtype) && op != IR_UOP_NEG && op != IR_UOP_POS && op != IR_UOP_CONJ) {
        /* abs, .real and .imag give the part's float type (of a Python complex: a Python float) */
        IrNode *u = ir_node(ts->a, IR_UNOP, pos);
        IrDtype part = ir_complex_part(t->dtype);
        u->type = t->weak ? ir_type_weak(part) : ir_type_scalar(part);
        u->u.unop.op = op;
        u->u.unop.operand = x;
        return u;
    }
    if (op == IR_UOP_POS) return ts_cast(ts, x, t);
    if (op == IR_UOP_NEG && x->kind == IR_CONST && x->type == t) {
        /* -1 is a constant (so NEP 50's range rule sees it), folded as the type would compute it: wrapped to
         * its width (-np.uint8(10) is 246, -np.int8(-128) is -128) */
        if (ir_dtype_is_float(t->dtype)) return ir_const_float(ts->a, pos, t, -x->u.konst.f);
        if (ir_dtype_is_complex(t->dtype)) {
            IrNode *z = ir_const_float(ts->a, pos, t, -x->u.konst.f);
            z->u.konst.im = -x->u.konst.im;
            return z;
        }
        uint64_t neg = 0 - (uint64_t)x->u.konst.i;
        int bits = 8 * ir_dtype_size(t->dtype);
        if (bits < 64) {
            neg &= (UINT64_C(1) << bits) - 1;
            if (ir_dtype_is_signed(t->dtype) && neg >> (bits - 1)) neg |= ~UINT64_C(0) << bits;
        }
        return ir_const_int(ts->a, pos, t, (int64_t)neg);
    }
    IrNode *u = ir_node(ts->a, IR_UNOP, pos);
    u->type = op == IR_UOP_NOT ? ir_type_scalar(IR_DT_BOOL) : t;
    u->u.unop.op = op;
    u->u.unop.operand = ts_cast(ts, x, op == IR_UOP_NOT ? ir_type_scalar(IR_DT_BOOL) : t);
    return u->u.unop.operand ? u : NULL;
}

static IrNode *elem_unop(Ts *ts, IrPos pos, IrNode **e, int n, void *env)
{
    return ts_scalar_unop(ts, pos, *(IrUnOp *)env, e[0]);
}

IrNode *ts_unop(Ts *ts, IrPos pos, IrUnOp op, IrNode *x)
{
    if (!x) return NULL;
    if (ts_is_array(x)) {
        if (op == IR_UOP_NOT) TS_ERR(ts, pos, "the truth value of an array is ambiguous: use np.logical_not(a)");
        if (op == IR_UOP_INVERT && x->type->dtype == IR_DT_BOOL) op = IR_UOP_NOT;
        IrNode *in[1] = {x};
        return ts_make_map(ts, pos, in, 1, elem_unop, &op);
    }
    return ts_scalar_unop(ts, pos, op, x);
}

static bool is_weak_int(const IrType *t) { return t->weak && t->dtype == IR_DT_INT64; }
static bool is_strong_int(const IrType *t) { return !t->weak && ir_dtype_is_int(t->dtype); }

static IrNode *one_compare(Ts *ts, IrPos pos, IrCmpOp op, IrNode *l, IrNode *r, IrType *t)
{
    IrNode *c = ir_node(ts->a, IR_COMPARE, pos);
    c->type = ir_type_scalar(IR_DT_BOOL);
    c->u.compare.nops = 1;
    c->u.compare.ops = rt_arena_alloc(ts->a, sizeof(IrCmpOp));
    c->u.compare.ops[0] = op;
    c->u.compare.operands = ir_nodes(ts->a, 2);
    c->u.compare.operands[0] = ts_cast(ts, l, t);
    c->u.compare.operands[1] = ts_cast(ts, r, t);
    return (c->u.compare.operands[0] && c->u.compare.operands[1]) ? c : NULL;
}

/* NumPy 2 compares an integer of any dtype with a Python int by value, never converting the int to the dtype:
 * np.uint8(3) < 300 and np.uint64(3) > -1 are both True. Every dtype but uint64 fits in int64, where the
 * comparison is exact; a uint64 is greater than any negative int. */
static IrNode *compare_by_value(Ts *ts, IrPos pos, IrCmpOp op, IrNode *l, IrNode *r)
{
    IrType *i64 = ir_type_scalar(IR_DT_INT64), *u64 = ir_type_scalar(IR_DT_UINT64);
    bool strong_left = !l->type->weak;
    IrNode *s = strong_left ? l : r, *w = strong_left ? r : l;
    if (w->kind == IR_CONST && int_fits(w->u.konst.i, s->type->dtype)) return one_compare(ts, pos, op, l, r, s->type);
    if (s->type->dtype != IR_DT_UINT64) return one_compare(ts, pos, op, l, r, i64);
    /* s op w with w < 0 (s >= 0 > w): true for !=, > and >= with s on the left, !=, < and <= with s on the right.
     * Both operands are evaluated (for their effects) in every case. */
    bool s_greater = op == IR_CMP_NE || (strong_left ? (op == IR_CMP_GT || op == IR_CMP_GE) : (op == IR_CMP_LT || op == IR_CMP_LE));
    if (w->kind == IR_CONST && w->u.konst.i < 0) /* s >= 0 is always true, s < 0 always false */
        return one_compare(ts, pos, s_greater ? IR_CMP_GE : IR_CMP_LT, s, ir_const_int(ts->a, pos, u64, 0), u64);
    if (w->kind == IR_CONST) return one_compare(ts, pos, op, l, r, u64);
    w = ts_reuse(ts, w);
    if (!w) return NULL;
    if (strong_left) r = w;
    else l = w;
    /* s_greater: w < 0 | s op w; else: w >= 0 & s op w (no short circuit) */
    IrNode *sign = one_compare(ts, pos, s_greater ? IR_CMP_LT : IR_CMP_GE, w, ir_const_int(ts->a, pos, i64, 0), i64);
    IrNode *by_u64 = one_compare(ts, pos, op, l, r, u64);
    return sign && by_u64 ? ts_scalar_binop(ts, pos, s_greater ? IR_OP_BITOR : IR_OP_BITAND, sign, by_u64) : NULL;
}

static IrNode *scalar_compare(Ts *ts, IrPos pos, IrCmpOp op, IrNode *l, IrNode *r)
{
    if (l->type->kind != IR_TY_SCALAR || r->type->kind != IR_TY_SCALAR) {
        if (l->type->kind == IR_TY_DTYPE && r->type->kind == IR_TY_DTYPE && (op == IR_CMP_EQ || op == IR_CMP_NE)) {
            bool eq = l->type->dtype == r->type->dtype; /* a.dtype == np.float32: known when compiling */
            return ir_const_int(ts->a, pos, ir_type_scalar(IR_DT_BOOL), op == IR_CMP_EQ ? eq : !eq);
        }
        if (l->type->kind == IR_TY_NONE || r->type->kind == IR_TY_NONE) {
            if (op != IR_CMP_EQ && op != IR_CMP_NE) TS_ERR(ts, pos, "None can only be compared with == or !=");
            bool eq = l->type->kind == r->type->kind;
            return ir_const_int(ts->a, pos, ir_type_scalar(IR_DT_BOOL), op == IR_CMP_EQ ? eq : !eq);
        }
        TS_ERR(ts, pos, "cannot compare %s with %s", ts_type_name(l->type), ts_type_name(r->type));
    }
    if (is_weak_int(l->type) != is_weak_int(r->type) && is_strong_int(is_weak_int(l->type) ? r->type : l->type))
        return compare_by_value(ts, pos, op, l, r);
    IrType *ct = ts_promote(l->type, r->type);
    if (ir_dtype_is_complex(ct->dtype) && op != IR_CMP_EQ && op != IR_CMP_NE)
        TS_ERR(ts, pos, "complex numbers have no order: only == and != compare them (CPython raises TypeError)");
    IrNode *c = one_compare(ts, pos, op, l, r, ct);
    /* two Python numbers compare to a Python bool ((x > 0) + (x > 1) is 2); a NumPy operand gives np.bool_ */
    if (c && l->type->weak && r->type->weak) c->type = ir_type_weak(IR_DT_BOOL);
    return c;
}

static IrNode *elem_compare(Ts *ts, IrPos pos, IrNode **e, int n, void *env)
{
    return scalar_compare(ts, pos, *(IrCmpOp *)env, e[0], e[1]);
}

IrNode *ts_compare(Ts *ts, IrPos pos, IrCmpOp op, IrNode *l, IrNode *r)
{
    if (!l || !r) return NULL;
    if (ts_is_array(l) || ts_is_array(r)) {
        IrNode *in[2] = {l, r};
        return ts_make_map(ts, pos, in, 2, elem_compare, &op);
    }
    return scalar_compare(ts, pos, op, l, r);
}

/* a < b < c  ->  a < b and b < c, b evaluated once */
static IrNode *type_compare(Ts *ts, const IrNode *n)
{
    int nops = n->u.compare.nops;
    IrNode *prev = ts_expr(ts, n->u.compare.operands[0]);
    if (!prev) return NULL;
    if (nops == 1) return ts_compare(ts, n->pos, n->u.compare.ops[0], prev, ts_expr(ts, n->u.compare.operands[1]));
    IrNode *chain = ir_node(ts->a, IR_BOOLOP, n->pos);
    chain->type = ir_type_weak(IR_DT_BOOL); /* np.bool_ if any part is (a and b gives one of them) */
    chain->u.boolop.is_and = true;
    chain->u.boolop.n = nops;
    chain->u.boolop.values = ir_nodes(ts->a, nops);
    for (int i = 0; i < nops; i++) {
        IrNode *next = ts_expr(ts, n->u.compare.operands[i + 1]);
        if (!next) return NULL;
        if (ts_is_array(prev) || ts_is_array(next))
            TS_ERR(ts, n->pos, "chained comparisons of arrays are ambiguous: compare two at a time");
        if (i + 1 < nops) next = ts_reuse(ts, next);
        IrNode *c = ts_compare(ts, n->pos, n->u.compare.ops[i], prev, next);
        if (!c) return NULL;
        chain->u.boolop.values[i] = c;
        chain->type = ts_promote(chain->type, c->type);
        prev = next;
    }
    for (int i = 0; i < nops; i++)
        if (!(chain->u.boolop.values[i] = ts_cast(ts, chain->u.boolop.values[i], chain->type))) return NULL;
    return chain;
}

static IrNode *type_boolop(Ts *ts, const IrNode *n)
{
    IrNode *b = ir_node(ts->a, IR_BOOLOP, n->pos);
    b->u.boolop.is_and = n->u.boolop.is_and;
    b->u.boolop.n = n->u.boolop.n;
    b->u.boolop.values = ir_nodes(ts->a, n->u.boolop.n);
    IrType *t = NULL;
    for (int i = 0; i < n->u.boolop.n; i++) {
        if (i) ts->cond_depth++;
        IrNode *v = ts_expr(ts, n->u.boolop.values[i]);
        if (i) ts->cond_depth--;
        if (!v) return NULL;
        if (v->type->kind != IR_TY_SCALAR)
            TS_ERR(ts, v->pos, "'and'/'or' need scalars, not %s (for arrays use np.logical_and/or)", ts_type_name(v->type));
        t = t ? ts_promote(t, v->type) : v->type;
        b->u.boolop.values[i] = v;
    }
    for (int i = 0; i < n->u.boolop.n; i++)
        if (!(b->u.boolop.values[i] = ts_cast(ts, b->u.boolop.values[i], t))) return NULL;
    b->type = t;
    return b;
}

static IrNode *type_ifexp(Ts *ts, const IrNode *n)
{
    IrNode *c = ts_expr(ts, n->u.ifexp.cond);
    if (c) c = ts_truth(ts, c);
    /* decided in this specialisation (`k if k is not None else len(a)`): only the branch taken is typed, as an
     * if statement's, so the other may be of a type this signature could not have (None) */
    int decided = c ? ts_const_truth(c) : -1;
    if (decided >= 0) return ts_expr(ts, decided ? n->u.ifexp.then : n->u.ifexp.orelse);
    ts->cond_depth++;
    IrNode *a = ts_expr(ts, n->u.ifexp.then);
    IrNode *b = a ? ts_expr(ts, n->u.ifexp.orelse) : NULL;
    ts->cond_depth--;
    if (!c || !a || !b) return NULL;
    IrType *t = a->type;
    if (a->type != b->type) {
        if (a->type->kind == IR_TY_SCALAR && b->type->kind == IR_TY_SCALAR) t = ts_promote(a->type, b->type);
        else if (a->type->kind == IR_TY_ARRAY && b->type->kind == IR_TY_ARRAY && a->type->dtype == b->type->dtype &&
                 a->type->ndim == b->type->ndim) t = ir_type_array_ro(a->type->dtype, a->type->ndim, IR_LAYOUT_ANY, a->type->readonly || b->type->readonly);
        else TS_ERR(ts, n->pos, "the two branches give incompatible types %s and %s", ts_type_name(a->type), ts_type_name(b->type));
    }
    IrNode *r = ir_node(ts->a, IR_IFEXP, n->pos);
    r->type = t;
    r->u.ifexp.cond = c;
    r->u.ifexp.then = ts_cast(ts, a, t);
    r->u.ifexp.orelse = ts_cast(ts, b, t);
    return (r->u.ifexp.then && r->u.ifexp.orelse) ? r : NULL;
}

static IrNode *type_nameref(Ts *ts, const IrNode *n)
{
    if (n->u.name.handle) return ts_const_array(ts, n);
    const char *q = n->u.name.name;
    const char *dot = strrchr(q, '.');
    IrDtype dt;
    if (dot && strncmp(q, "numpy.", 6) == 0 && ir_dtype_from_name(dot + 1, &dt)) {
        IrNode *c = ir_node(ts->a, IR_CONST, n->pos);
        c->type = ir_type_dtype(dt);
        return c;
    }
    if (strcmp(q, "builtins.float") == 0 || strcmp(q, "builtins.int") == 0 || strcmp(q, "builtins.bool") == 0 ||
        strcmp(q, "builtins.complex") == 0) {
        IrNode *c = ir_node(ts->a, IR_CONST, n->pos);
        c->type = ir_type_dtype(q[9] == 'f' ? IR_DT_FLOAT64 : q[9] == 'i' ? IR_DT_INT64 : q[9] == 'c' ? IR_DT_COMPLEX128 : IR_DT_BOOL);
        return c;
    }
    IrNode *fn = ts_builtin_value(ts, n);
    if (fn) return fn;
    TS_ERR(ts, n->pos, "'%s' cannot be used as a value here", q);
}

IrNode *ts_tuple(Ts *ts, const IrNode *n)
{
    IrNode *t = ir_node(ts->a, IR_TUPLE, n->pos);
    int k = n->u.tuple.n;
    t->u.tuple.n = k;
    t->u.tuple.items = ir_nodes(ts->a, k);
    IrType **elems = rt_arena_alloc(ts->a, sizeof(IrType *) * (size_t)(k ? k : 1));
    for (int i = 0; i < k; i++) {
        if (!(t->u.tuple.items[i] = ts_expr(ts, n->u.tuple.items[i]))) return NULL;
        elems[i] = t->u.tuple.items[i]->type;
    }
    t->type = ir_type_tuple(elems, k);
    return t;
}

static IrNode *type_expr(Ts *ts, const IrNode *n)
{
    switch (n->kind) {
    case IR_CONST: {
        IrNode *c = ir_node(ts->a, IR_CONST, n->pos);
        c->type = n->type;
        c->u.konst = n->u.konst;
        return c;
    }
    case IR_VAR: {
        for (int i = ts->nsubst - 1; i >= 0; i--)
            if (ts->subst_from[i] == n->u.var.var) return ts->subst_to[i];
        IrVar *v = ts->varmap[n->u.var.var->id];
        if (!v->type) {
            if (!ts->dry) TS_ERR(ts, n->pos, "local variable '%s' is used before it is assigned", v->name);
            return NULL;
        }
        return ts_var(ts, n->pos, v);
    }
    case IR_NAMEREF: return type_nameref(ts, n);
    case IR_BINOP: return ts_binop_node(ts, n);
    case IR_UNOP:
        if ((ts_holds(ts, n->u.unop.operand) & TS_HOLDS_LIST) && n->u.unop.op != IR_UOP_NOT)
            TS_ERR(ts, n->pos, "bad operand type for a unary operator: a list (Python raises TypeError; lorikeet makes "
                               "a list an array: write np.array([...]))");
        return ts_unop(ts, n->pos, n->u.unop.op, ts_expr(ts, n->u.unop.operand));
    case IR_COMPARE: return type_compare(ts, n);
    case IR_BOOLOP: return type_boolop(ts, n);
    case IR_IFEXP: return type_ifexp(ts, n);
    case IR_CALL: return ts_call(ts, n);
    case IR_INDEX: return ts_index(ts, n);
    case IR_ATTR: return ts_attr(ts, n);
    case IR_TUPLE: {
        IrNode *t = ts_tuple(ts, n);
        return n->u.tuple.is_list ? ts_sequence_array(ts, n->pos, t, NULL) : t;
    }
    case IR_TUPLE_GET: {
        IrNode *tup = ts_expr(ts, n->u.tuple_get.tuple);
        if (!tup) return NULL;
        if (tup->type->kind != IR_TY_TUPLE)
            TS_ERR(ts, n->pos, "cannot unpack %s (only tuples can be unpacked)", ts_type_name(tup->type));
        int want = n->u.tuple_get.unpack_n;
        if (want && want != tup->type->nelems)
            TS_ERR(ts, n->pos, "cannot unpack a tuple of %d values into %d targets", tup->type->nelems, want);
        if (n->u.tuple_get.k >= tup->type->nelems)
            TS_ERR(ts, n->pos, "not enough values to unpack (a tuple of %d)", tup->type->nelems);
        return ir_tuple_get(ts->a, n->pos, tup, n->u.tuple_get.k);
    }
    case IR_SLICE: TS_ERR(ts, n->pos, "a slice can only be used inside [ ]");
    case IR_LAMBDA: return ts_lambda(ts, n);
    case IR_COMPREHENSION:
        if (n->u.comprehension.is_generator)
            TS_ERR(ts, n->pos, "a generator expression is supported only as the argument of sum(), min(), max(), any() "
                               "or all() (a list comprehension [...] makes an array)");
        return ts_comprehension_array(ts, n, NULL); /* a list is an array in lorikeet */
    default: TS_ERR(ts, n->pos, "internal error: unexpected %s expression", ir_kind_name(n->kind));
    }
}

/* The sizes the typed IR holds (ir.h's limits), so that no backend meets a larger one. Writes the complaint. */
static bool within_limits(const IrType *t, char *why, size_t n)
{
    if (t->kind == IR_TY_ARRAY && t->ndim > IR_MAX_DIMS) {
        snprintf(why, n, "arrays of more than %d dimensions are not supported (this one has %d)", IR_MAX_DIMS, t->ndim);
        return false;
    }
    if (t->kind != IR_TY_TUPLE) return true;
    if (t->nelems > IR_MAX_TUPLE) {
        snprintf(why, n, "tuples of more than %d items are not supported (this one has %d)", IR_MAX_TUPLE, t->nelems);
        return false;
    }
    for (int i = 0; i < t->nelems; i++)
        if (!within_limits(t->elems[i], why, n)) return false;
    return true;
}

IrNode *ts_expr(Ts *ts, const IrNode *n)
{
    IrNode *r = type_expr(ts, n);
    char why[128];
    if (r && r->type && !within_limits(r->type, why, sizeof why)) TS_ERR(ts, n->pos, "%s", why);
    return r;
}
