/* setitem.c: a scalar stored into an integer array, converted as NumPy 2's setitem converts it (a[i] = v,
 * a[:] = v, a[idx] = v, a[mask] = v). NumPy converts a Python number and most NumPy scalars through a Python
 * int, and raises where that int does not fit the array's dtype, where a C cast would wrap:
 *  - a Python int (weak): out of the dtype's range, OverflowError "Python integer 300 out of bounds for int8";
 *  - a NumPy integer: into a signed dtype the same check (int64(300) into int8 raises); into an unsigned one
 *    it wraps (int64(-1) into uint8 is 255), NumPy's C cast;
 *  - a float, Python's or (into a signed dtype) NumPy's: NaN is ValueError, an infinity OverflowError, else it
 *    is truncated and checked as an int; beyond int64, "Python int too large to convert to C long". A NumPy
 *    float into an unsigned dtype is NumPy's C cast, which wraps (np.float64(300.0) into uint8 is 44): it is
 *    truncated to int64 and wrapped, which is that cast's value wherever C defines one (NaN, infinities and
 *    values beyond int32 are each platform's own in NumPy).
 * An index array or a mask (a[idx] = v) converts a NumPy scalar as an array, with a C cast: only Python numbers
 * are checked there. A bool, and any value stored into a float or bool array, is converted as before.
 * The check is IR: `v if lo <= v <= hi else raise(...)` (the raise intrinsic, ir.h), so every backend runs it;
 * it never changes a value that fits. */
#include <math.h>
#include "ts_internal.h"

static void int_range(IrDtype dt, long double *lo, long double *hi)
{
    int bits = ir_dtype_bits(dt);
    if (ir_dtype_is_signed(dt)) {
        *lo = -ldexpl(1.0L, bits - 1);
        *hi = ldexpl(1.0L, bits - 1) - 1.0L;
    } else {
        *lo = 0.0L;
        *hi = ldexpl(1.0L, bits) - 1.0L;
    }
}

static IrNode *ifexp(Ts *ts, IrPos pos, IrNode *cond, IrNode *then, IrNode *orelse, IrType *t)
{
    if (!cond || !then || !orelse) return NULL;
    IrNode *n = ir_node(ts->a, IR_IFEXP, pos);
    n->u.ifexp.cond = cond;
    n->u.ifexp.then = then;
    n->u.ifexp.orelse = orelse;
    n->type = t;
    return n;
}

static IrNode *both(Ts *ts, IrPos pos, IrNode *a, IrNode *b)
{
    if (!a || !b) return a ? a : b;
    return ts_bool2(ts, pos, true, a, b);
}

/* A fresh reference to v (a variable or constant: the check reads it several times). */
static IrNode *again(Ts *ts, IrNode *v)
{
    return v->kind == IR_VAR ? ts_var(ts, v->pos, v->u.var.var) : ir_copy(ts->a, v, NULL);
}

static IrNode *int_const(Ts *ts, IrPos pos, IrType *t, long double v)
{
    return ir_const_int(ts->a, pos, t, t->dtype == IR_DT_UINT64 ? (int64_t)(uint64_t)v : (int64_t)v);
}

/* v, an integer variable or constant, checked against dt's range; NULL when it always fits. */
static IrNode *check_int(Ts *ts, IrPos pos, IrNode *v, IrDtype dt, IrNode *first)
{
    IrType *vt = v->type;
    long double vlo, vhi, lo, hi;
    int_range(vt->dtype, &vlo, &vhi);
    int_range(dt, &lo, &hi);
    IrNode *ok = NULL;
    if (vlo < lo) ok = ts_compare(ts, pos, IR_CMP_GE, again(ts, v), int_const(ts, pos, ir_type_strong(vt), lo));
    if (vhi > hi) ok = both(ts, pos, ok, ts_compare(ts, pos, IR_CMP_LE, again(ts, v), int_const(ts, pos, ir_type_strong(vt), hi)));
    if (!ok) return NULL;
    IrType *i64 = ir_type_scalar(IR_DT_INT64);
    IrNode *how = ts_i64(ts, pos, RT_OVF_BOUNDS);
    if (vt->dtype == IR_DT_UINT64) /* NumPy converts through a C long first */
        how = ifexp(ts, pos, ts_compare(ts, pos, IR_CMP_LT, ts_cast(ts, again(ts, v), i64), ts_i64(ts, pos, 0)),
                    ts_i64(ts, pos, RT_OVF_TOO_LARGE), how, i64);
    IrNode *target = ts_i64(ts, pos, RT_OVF_TARGET(ir_dtype_bits(dt), !ir_dtype_is_signed(dt)));
    IrNode *raise = ts_raise(ts, pos, RT_ERR_OVERFLOW, again(ts, v), target, how, vt);
    if (first) raise = ts_after_effects(ts, pos, first, raise);
    return ifexp(ts, pos, ok, again(ts, v), raise, vt);
}

/* v, a float variable or constant, checked as NumPy converts it through a Python int. */
static IrNode *check_float(Ts *ts, IrPos pos, IrNode *v, IrDtype dt, IrNode *first)
{
    IrType *f64 = ir_type_scalar(IR_DT_FLOAT64), *i64 = ir_type_scalar(IR_DT_INT64);
    long double lo, hi;
    int_range(dt, &lo, &hi);
    /* trunc(v) in float64 (exact for every float dtype), compared with bounds exact in float64 */
#define TRUNC() ts_math(ts, pos, IR_MATH_TRUNC, (IrNode *[]){ts_cast(ts, again(ts, v), f64)}, 1, f64)
    IrNode *ok = both(ts, pos, ts_compare(ts, pos, IR_CMP_GE, TRUNC(), ir_const_float(ts->a, pos, f64, (double)lo)),
                      ts_compare(ts, pos, IR_CMP_LT, TRUNC(), ir_const_float(ts->a, pos, f64, (double)(hi + 1.0L))));
    IrNode *in_int64 = both(ts, pos, ts_compare(ts, pos, IR_CMP_GE, TRUNC(), ir_const_float(ts->a, pos, f64, -0x1p63)),
                            ts_compare(ts, pos, IR_CMP_LT, TRUNC(), ir_const_float(ts->a, pos, f64, 0x1p63)));
    IrNode *how = ifexp(ts, pos, ts_math(ts, pos, IR_MATH_ISINF, (IrNode *[]){ts_cast(ts, again(ts, v), f64)}, 1, NULL),
                        ts_i64(ts, pos, RT_OVF_INFINITY),
                        ifexp(ts, pos, in_int64, ts_i64(ts, pos, RT_OVF_BOUNDS), ts_i64(ts, pos, RT_OVF_TOO_LARGE), i64), i64);
    IrNode *target = ts_i64(ts, pos, RT_OVF_TARGET(ir_dtype_bits(dt), !ir_dtype_is_signed(dt)));
    IrNode *overflow = ts_raise(ts, pos, RT_ERR_OVERFLOW, ts_cast(ts, TRUNC(), i64), target, how, v->type);
    IrNode *nan = ts_raise(ts, pos, RT_ERR_VALUE, ts_i64(ts, pos, RT_VAL_FLOAT_NAN), NULL, NULL, v->type);
#undef TRUNC
    IrNode *raise = ifexp(ts, pos, ts_compare(ts, pos, IR_CMP_NE, again(ts, v), again(ts, v)), nan, overflow, v->type);
    if (first) raise = ts_after_effects(ts, pos, first, raise);
    return ifexp(ts, pos, ok, again(ts, v), raise, v->type);
}

/* value (a scalar) converted to dt for a store, as above. numpy_checked: a NumPy scalar is checked too (a[i] = v,
 * a[:] = v; false for a[idx] = v and a[mask] = v). first, when not NULL, is evaluated before an error is raised
 * (a checked read of the element the store writes: NumPy raises its IndexError before converting). */
IrNode *ts_setitem_value(Ts *ts, IrPos pos, IrNode *value, IrDtype dt, IrNode *first, bool numpy_checked)
{
    IrType *to = ir_type_scalar(dt);
    if (!value || value->type->kind != IR_TY_SCALAR) return ts_cast(ts, value, to);
    IrType *vt = value->type;
    bool weak = vt->weak, is_float = ir_dtype_is_float(vt->dtype);
    if (!ir_dtype_is_int(dt) || vt->dtype == IR_DT_BOOL || (value->kind == IR_CONST && weak && !is_float))
        return ts_cast(ts, value, to); /* a weak int literal out of range is a CompileError there */
    if (!weak && !numpy_checked) return ts_cast(ts, value, to);
    if (!weak && !ir_dtype_is_signed(dt)) /* NumPy's C cast: wraps; a float through int64 */
        return ts_cast(ts, is_float ? ts_cast(ts, value, ir_type_scalar(IR_DT_INT64)) : value, to);
    IrNode *v = ts_reuse(ts, value);
    if (!v || (v->kind != IR_VAR && v->kind != IR_CONST)) return ts_cast(ts, v, to); /* not reached: stores hoist */
    IrNode *checked = is_float ? check_float(ts, pos, v, dt, first) : check_int(ts, pos, v, dt, first);
    return ts_cast(ts, checked ? checked : v, to);
}

/* A Python int (weak int64) as an operand of an integer dtype dt's operation, as NumPy 2 takes it (NEP 50): an
 * OverflowError where it does not fit dt, "Python integer 300 out of bounds for int8". clamp_low (clamp_high)
 * instead gives dt's least (greatest) value for one below (above) dt's range: np.clip's bounds. A constant is
 * decided here (one that does not fit is a CompileError where it is converted); a value still weak int64. */
IrNode *ts_python_int_operand(Ts *ts, IrPos pos, IrNode *v, IrDtype dt, bool clamp_low, bool clamp_high)
{
    if (!v || v->type->kind != IR_TY_SCALAR || !v->type->weak || v->type->dtype != IR_DT_INT64 || !ir_dtype_is_int(dt) ||
        dt == IR_DT_INT64)
        return v;
    long double lo, hi;
    int_range(dt, &lo, &hi);
    IrType *i64 = ir_type_scalar(IR_DT_INT64);
    IrNode *least = int_const(ts, pos, i64, lo);
    IrNode *greatest = dt == IR_DT_UINT64 ? NULL : int_const(ts, pos, i64, hi);
    if (v->kind == IR_CONST) {
        if (clamp_low && (long double)v->u.konst.i < lo) return ts_cast(ts, least, v->type);
        if (clamp_high && greatest && (long double)v->u.konst.i > hi) return ts_cast(ts, greatest, v->type);
        return v;
    }
    v = ts_reuse(ts, v);
    if (!v || (v->kind != IR_VAR && v->kind != IR_CONST)) return v; /* not reached: hoisted, or a map's parameter */
    IrNode *checked = check_int(ts, pos, v, dt, NULL);
    if (!checked) return v;
    if (clamp_low) checked = ifexp(ts, pos, ts_compare(ts, pos, IR_CMP_LT, again(ts, v), ts_cast(ts, least, v->type)),
                                   ts_cast(ts, least, v->type), checked, v->type);
    if (clamp_high && greatest)
        checked = ifexp(ts, pos, ts_compare(ts, pos, IR_CMP_GT, again(ts, v), ts_cast(ts, greatest, v->type)),
                        ts_cast(ts, greatest, v->type), checked, v->type);
    return checked;
}
