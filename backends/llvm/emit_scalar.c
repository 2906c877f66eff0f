/* emit_scalar.c: LLVM types and scalar operations with NumPy/Python semantics: wrapping integer arithmetic,
 * Python's floor division and modulo (with ZeroDivisionError for integers), saturating float-to-int casts,
 * NaN-propagating min/max, IEEE float division; float16 computed in float and rounded per operation. */
#include <math.h>
#include <string.h>
#include "cg.h"

LLVMTypeRef cg_mem_type(Cg *cg, IrDtype dt)
{
    switch (dt) {
    case IR_DT_BOOL: case IR_DT_INT8: case IR_DT_UINT8: return cg->i8;
    case IR_DT_INT16: case IR_DT_UINT16: return LLVMInt16TypeInContext(cg->ctx);
    case IR_DT_INT32: case IR_DT_UINT32: return cg->i32;
    case IR_DT_INT64: case IR_DT_UINT64: return cg->i64;
    case IR_DT_FLOAT16: return cg->f16;
    case IR_DT_FLOAT32: return cg->f32;
    case IR_DT_FLOAT64: return cg->f64;
    case IR_DT_COMPLEX64: case IR_DT_COMPLEX128: return cg_complex_type(cg, dt);
    case IR_DT_COUNT: break;
    }
    return cg->i64;
}

LLVMTypeRef cg_type(Cg *cg, const IrType *t)
{
    switch (t->kind) {
    case IR_TY_SCALAR: return t->dtype == IR_DT_BOOL ? cg->i1 : cg_mem_type(cg, t->dtype);
    case IR_TY_ARRAY: {
        LLVMTypeRef dims = LLVMArrayType(cg->i64, (unsigned)t->ndim);
        LLVMTypeRef fields[4] = {cg->ptr, cg->ptr, dims, dims};
        return LLVMStructTypeInContext(cg->ctx, fields, 4, 0);
    }
    case IR_TY_TUPLE: {
        LLVMTypeRef fields[IR_MAX_TUPLE];
        for (int i = 0; i < t->nelems; i++) fields[i] = cg_type(cg, t->elems[i]);
        return LLVMStructTypeInContext(cg->ctx, fields, (unsigned)t->nelems, 0);
    }
    case IR_TY_NONE: case IR_TY_SLICE: case IR_TY_RANGE: case IR_TY_DTYPE: case IR_TY_FUNC:
        return LLVMStructTypeInContext(cg->ctx, NULL, 0, 0);
    case IR_TY_RNG: return cg->ptr; /* its RtRng */
    }
    return cg->i64;
}

LLVMValueRef cg_i64(Cg *cg, int64_t v)
{
    return LLVMConstInt(cg->i64, (unsigned long long)v, 1);
}

LLVMValueRef cg_const(Cg *cg, const IrNode *n)
{
    const IrType *t = n->type;
    if (t->kind != IR_TY_SCALAR) return LLVMConstNull(cg_type(cg, t));
    if (ir_dtype_is_float(t->dtype)) return LLVMConstReal(cg_type(cg, t), n->u.konst.f);
    if (ir_dtype_is_complex(t->dtype)) return cg_complex_const(cg, t->dtype, n->u.konst.f, n->u.konst.im);
    if (t->dtype == IR_DT_BOOL) return LLVMConstInt(cg->i1, n->u.konst.i != 0, 0);
    return LLVMConstInt(cg_type(cg, t), (unsigned long long)n->u.konst.i, 1);
}

LLVMValueRef cg_call_intrinsic(Cg *cg, const char *name, LLVMTypeRef overload, LLVMValueRef *args, int n)
{
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMTypeRef over[2] = {overload, overload};
    int nover = strncmp(name, "llvm.fpto", 9) == 0 ? 2 : 1;
    if (nover == 2) over[1] = LLVMTypeOf(args[0]);
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(cg->mod, id, over, (size_t)nover);
    LLVMTypeRef fty = LLVMIntrinsicGetType(cg->ctx, id, over, (size_t)nover);
    return LLVMBuildCall2(cg->b, fty, fn, args, (unsigned)n, "");
}

LLVMValueRef cg_call_rt(Cg *cg, const char *name, LLVMTypeRef ret, LLVMTypeRef *params, LLVMValueRef *args, int n)
{
    LLVMTypeRef fty = LLVMFunctionType(ret, params, (unsigned)n, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(cg->mod, name);
    if (!fn) fn = LLVMAddFunction(cg->mod, name, fty);
    return LLVMBuildCall2(cg->b, fty, fn, args, (unsigned)n, "");
}

/* float16, the IR's rule (ir.h): an operation widens its operands to float (exactly), computes, and rounds its
 * result to half once (fptrunc: round to nearest even, overflow to inf, NaN kept). */
static LLVMValueRef widen_half(Cg *cg, LLVMValueRef v)
{
    return LLVMTypeOf(v) == cg->f16 ? LLVMBuildFPExt(cg->b, v, cg->f32, "") : v;
}

static LLVMValueRef round_half(Cg *cg, LLVMValueRef v)
{
    return LLVMBuildFPTrunc(cg->b, v, cg->f16, "");
}

LLVMValueRef cg_cast(Cg *cg, LLVMValueRef v, const IrType *from, const IrType *to)
{
    if (from == to || from->kind != IR_TY_SCALAR || to->kind != IR_TY_SCALAR) return v;
    IrDtype a = from->dtype, b = to->dtype;
    LLVMTypeRef tt = cg_type(cg, to);
    if (a == b) return v;
    if (ir_dtype_is_complex(a) || ir_dtype_is_complex(b)) return cg_complex_cast(cg, v, from, to);
    if (b == IR_DT_BOOL) return cg_truth(cg, v, from);
    /* float16 from an integer goes through float: exact below 2^24, and anything larger is inf in half either
     * way; to an integer (saturating) or a wider float, from its exact float value */
    if (b == IR_DT_FLOAT16 && !ir_dtype_is_float(a))
        return round_half(cg, cg_cast(cg, v, from, ir_type_scalar(IR_DT_FLOAT32)));
    if (a == IR_DT_FLOAT16 && b != IR_DT_FLOAT32 && b != IR_DT_FLOAT64)
        return cg_cast(cg, widen_half(cg, v), ir_type_scalar(IR_DT_FLOAT32), to);
    bool af = ir_dtype_is_float(a), bf = ir_dtype_is_float(b);
    if (af && bf) return ir_dtype_size(a) < ir_dtype_size(b) ? LLVMBuildFPExt(cg->b, v, tt, "") : LLVMBuildFPTrunc(cg->b, v, tt, "");
    if (af) {
        /* out-of-range conversions saturate instead of being undefined */
        LLVMValueRef args[1] = {v};
        return cg_call_intrinsic(cg, ir_dtype_is_signed(b) ? "llvm.fptosi.sat" : "llvm.fptoui.sat", tt, args, 1);
    }
    bool asigned = ir_dtype_is_signed(a);
    if (bf) return asigned ? LLVMBuildSIToFP(cg->b, v, tt, "") : LLVMBuildUIToFP(cg->b, v, tt, "");
    int abits = ir_dtype_bits(a), bbits = ir_dtype_bits(b);
    if (abits == bbits) return v;
    if (abits > bbits) return LLVMBuildTrunc(cg->b, v, tt, "");
    return asigned ? LLVMBuildSExt(cg->b, v, tt, "") : LLVMBuildZExt(cg->b, v, tt, "");
}

LLVMValueRef cg_truth(Cg *cg, LLVMValueRef v, const IrType *t)
{
    if (t->kind != IR_TY_SCALAR) return LLVMConstInt(cg->i1, 0, 0);
    if (t->dtype == IR_DT_BOOL) return v;
    if (ir_dtype_is_complex(t->dtype)) return cg_complex_truth(cg, v);
    if (ir_dtype_is_float(t->dtype)) {
        v = widen_half(cg, v);
        return LLVMBuildFCmp(cg->b, LLVMRealUNE, v, LLVMConstNull(LLVMTypeOf(v)), "");
    }
    return LLVMBuildICmp(cg->b, LLVMIntNE, v, LLVMConstNull(LLVMTypeOf(v)), "");
}

LLVMValueRef cg_compare(Cg *cg, IrCmpOp op, IrDtype dt, LLVMValueRef l, LLVMValueRef r)
{
    if (ir_dtype_is_complex(dt)) return cg_complex_compare(cg, op, l, r);
    if (ir_dtype_is_float(dt)) {
        l = widen_half(cg, l);
        r = widen_half(cg, r);
        static const LLVMRealPredicate fp[] = {LLVMRealOEQ, LLVMRealUNE, LLVMRealOLT, LLVMRealOLE, LLVMRealOGT, LLVMRealOGE};
        return LLVMBuildFCmp(cg->b, fp[op], l, r, "");
    }
    static const LLVMIntPredicate sp[] = {LLVMIntEQ, LLVMIntNE, LLVMIntSLT, LLVMIntSLE, LLVMIntSGT, LLVMIntSGE};
    static const LLVMIntPredicate up[] = {LLVMIntEQ, LLVMIntNE, LLVMIntULT, LLVMIntULE, LLVMIntUGT, LLVMIntUGE};
    return LLVMBuildICmp(cg->b, ir_dtype_is_signed(dt) ? sp[op] : up[op], l, r, "");
}

/* Python's // and % on integers: raise on zero, floor towards -inf, and INT_MIN // -1 wraps (no trap). */
static LLVMValueRef int_divmod(Cg *cg, const IrNode *n, LLVMValueRef l, LLVMValueRef r, bool is_mod, bool is_signed)
{
    LLVMValueRef zero = LLVMConstNull(LLVMTypeOf(r));
    LLVMValueRef is_zero = LLVMBuildICmp(cg->b, LLVMIntEQ, r, zero, "");
    LLVMValueRef extra[1] = {LLVMConstInt(cg->i32, is_mod, 0)};
    cg_raise_if(cg, is_zero, RT_ERR_ZERODIV, n->pos, extra, 1);
    if (!is_signed) return is_mod ? LLVMBuildURem(cg->b, l, r, "") : LLVMBuildUDiv(cg->b, l, r, "");
    /* divide by 1 where r == -1, so sdiv cannot overflow; fix the result up afterwards */
    LLVMValueRef minus1 = LLVMConstAllOnes(LLVMTypeOf(r));
    LLVMValueRef is_m1 = LLVMBuildICmp(cg->b, LLVMIntEQ, r, minus1, "");
    LLVMValueRef safe_r = LLVMBuildSelect(cg->b, is_m1, LLVMConstInt(LLVMTypeOf(r), 1, 0), r, "");
    LLVMValueRef q = LLVMBuildSDiv(cg->b, l, safe_r, "");
    LLVMValueRef rem = LLVMBuildSRem(cg->b, l, safe_r, "");
    /* floor: if the remainder is non-zero and its sign differs from the divisor's, step down */
    LLVMValueRef rem_nz = LLVMBuildICmp(cg->b, LLVMIntNE, rem, zero, "");
    LLVMValueRef signs_differ = LLVMBuildICmp(cg->b, LLVMIntSLT, LLVMBuildXor(cg->b, rem, safe_r, ""), zero, "");
    LLVMValueRef adjust = LLVMBuildAnd(cg->b, rem_nz, signs_differ, "");
    if (is_mod) {
        LLVMValueRef m = LLVMBuildSelect(cg->b, adjust, LLVMBuildAdd(cg->b, rem, safe_r, ""), rem, "");
        return LLVMBuildSelect(cg->b, is_m1, zero, m, "");
    }
    LLVMValueRef fq = LLVMBuildSelect(cg->b, adjust, LLVMBuildSub(cg->b, q, LLVMConstInt(LLVMTypeOf(q), 1, 0), ""), q, "");
    return LLVMBuildSelect(cg->b, is_m1, LLVMBuildNeg(cg->b, l, ""), fq, "");
}

/* Python's float // and % (CPython's float_divmod), IEEE results on a zero divisor. */
static LLVMValueRef float_divmod(Cg *cg, LLVMValueRef x, LLVMValueRef y, bool want_mod)
{
    LLVMTypeRef t = LLVMTypeOf(x);
    LLVMValueRef zero = LLVMConstNull(t);
    LLVMValueRef mod = LLVMBuildFRem(cg->b, x, y, "");
    LLVMValueRef mod_nz = LLVMBuildFCmp(cg->b, LLVMRealUNE, mod, zero, "");
    LLVMValueRef y_neg = LLVMBuildFCmp(cg->b, LLVMRealOLT, y, zero, "");
    LLVMValueRef mod_neg = LLVMBuildFCmp(cg->b, LLVMRealOLT, mod, zero, "");
    LLVMValueRef fix = LLVMBuildAnd(cg->b, mod_nz, LLVMBuildXor(cg->b, y_neg, mod_neg, ""), "");
    LLVMValueRef cs_args[2] = {zero, y};
    LLVMValueRef zero_signed = cg_call_intrinsic(cg, "llvm.copysign", t, cs_args, 2);
    LLVMValueRef mod1 = LLVMBuildSelect(cg->b, fix, LLVMBuildFAdd(cg->b, mod, y, ""), mod, "");
    if (want_mod) return LLVMBuildSelect(cg->b, mod_nz, mod1, zero_signed, "");
    LLVMValueRef div = LLVMBuildFDiv(cg->b, LLVMBuildFSub(cg->b, x, mod, ""), y, "");
    div = LLVMBuildSelect(cg->b, fix, LLVMBuildFSub(cg->b, div, LLVMConstReal(t, 1.0), ""), div, "");
    LLVMValueRef fl_args[1] = {div};
    LLVMValueRef fl = cg_call_intrinsic(cg, "llvm.floor", t, fl_args, 1);
    LLVMValueRef up = LLVMBuildFCmp(cg->b, LLVMRealOGT, LLVMBuildFSub(cg->b, div, fl, ""), LLVMConstReal(t, 0.5), "");
    fl = LLVMBuildSelect(cg->b, up, LLVMBuildFAdd(cg->b, fl, LLVMConstReal(t, 1.0), ""), fl, "");
    LLVMValueRef div_nz = LLVMBuildFCmp(cg->b, LLVMRealUNE, div, zero, "");
    LLVMValueRef q0_args[2] = {zero, LLVMBuildFDiv(cg->b, x, y, "")};
    LLVMValueRef q0 = cg_call_intrinsic(cg, "llvm.copysign", t, q0_args, 2);
    LLVMValueRef res = LLVMBuildSelect(cg->b, div_nz, fl, q0, "");
    /* a zero divisor gives x / 0 (inf or nan), as NumPy does */
    LLVMValueRef y_zero = LLVMBuildFCmp(cg->b, LLVMRealOEQ, y, zero, "");
    return LLVMBuildSelect(cg->b, y_zero, LLVMBuildFDiv(cg->b, x, y, ""), res, "");
}

static LLVMValueRef int_shift(Cg *cg, LLVMValueRef l, LLVMValueRef r, bool left, bool is_signed)
{
    LLVMTypeRef t = LLVMTypeOf(l);
    unsigned bits = LLVMGetIntTypeWidth(t);
    LLVMValueRef too_big = LLVMBuildICmp(cg->b, LLVMIntUGE, r, LLVMConstInt(t, bits, 0), "");
    LLVMValueRef amt = LLVMBuildSelect(cg->b, too_big, LLVMConstNull(t), r, "");
    if (left) return LLVMBuildSelect(cg->b, too_big, LLVMConstNull(t), LLVMBuildShl(cg->b, l, amt, ""), "");
    if (!is_signed) return LLVMBuildSelect(cg->b, too_big, LLVMConstNull(t), LLVMBuildLShr(cg->b, l, amt, ""), "");
    LLVMValueRef fill = LLVMBuildAShr(cg->b, l, LLVMConstInt(t, bits - 1, 0), "");
    return LLVMBuildSelect(cg->b, too_big, fill, LLVMBuildAShr(cg->b, l, amt, ""), "");
}

static LLVMValueRef int_pow(Cg *cg, const IrNode *n, LLVMValueRef l, LLVMValueRef r, IrDtype dt)
{
    if (ir_dtype_is_signed(dt)) {
        LLVMValueRef neg = LLVMBuildICmp(cg->b, LLVMIntSLT, r, LLVMConstNull(LLVMTypeOf(r)), "");
        LLVMValueRef extra[1] = {cg_i64(cg, RT_VAL_NEG_POWER)};
        cg_raise_if(cg, neg, RT_ERR_VALUE, n->pos, extra, 1);
    }
    IrType *from = ir_type_scalar(dt), *i64 = ir_type_scalar(IR_DT_INT64);
    LLVMValueRef args[2] = {cg_cast(cg, l, from, i64), cg_cast(cg, r, from, i64)};
    if (!ir_dtype_is_signed(dt)) {
        args[0] = LLVMBuildZExtOrBitCast(cg->b, l, cg->i64, "");
        args[1] = LLVMBuildZExtOrBitCast(cg->b, r, cg->i64, "");
    }
    LLVMTypeRef params[2] = {cg->i64, cg->i64};
    LLVMValueRef p = cg_call_rt(cg, "rt_ipow", cg->i64, params, args, 2);
    return LLVMBuildTruncOrBitCast(cg->b, p, cg_mem_type(cg, dt), "");
}

/* NumPy's minimum/maximum: NaN propagates. (llvm.maximum would say this, but x86 cannot select it in LLVM 16.)
 * Equal operands (0.0 and -0.0) give r, as NumPy's float32 and float64 loops do, and l in float16, as its own. */
static LLVMValueRef minmax(Cg *cg, bool is_max, IrDtype dt, LLVMValueRef l, LLVMValueRef r)
{
    if (ir_dtype_is_float(dt)) {
        bool half = dt == IR_DT_FLOAT16;
        LLVMRealPredicate p = is_max ? (half ? LLVMRealOGE : LLVMRealOGT) : (half ? LLVMRealOLE : LLVMRealOLT);
        LLVMValueRef pick_l = LLVMBuildFCmp(cg->b, p, l, r, "");
        LLVMValueRef best = LLVMBuildSelect(cg->b, pick_l, l, r, "");
        LLVMValueRef any_nan = LLVMBuildFCmp(cg->b, LLVMRealUNO, l, r, "");
        return LLVMBuildSelect(cg->b, any_nan, LLVMBuildFAdd(cg->b, l, r, ""), best, "");
    }
    if (dt == IR_DT_BOOL) return is_max ? LLVMBuildOr(cg->b, l, r, "") : LLVMBuildAnd(cg->b, l, r, "");
    LLVMValueRef pick_l = cg_compare(cg, is_max ? IR_CMP_GE : IR_CMP_LE, dt, l, r);
    return LLVMBuildSelect(cg->b, pick_l, l, r, "");
}

static LLVMValueRef binop_value(Cg *cg, const IrNode *n, LLVMValueRef l, LLVMValueRef r);

/* True if v is the floating-point constant c. x ** 2 is emitted as x * x: the square is exact before its one
 * rounding either way (pow's result is x*x correctly rounded, as NumPy's square), and the libmvec wrapper that
 * keeps results independent of vector width (vecmath.c) is never inlined, so LLVM cannot fold pow(x, 2) itself:
 * a call a element where one multiply does (growcut's np.sum(d ** 2) spent 70% of its time in pow). */
static bool is_float_constant(LLVMValueRef v, double c)
{
    if (!LLVMIsAConstantFP(v)) return false;
    LLVMBool lost = 0;
    return LLVMConstRealGetDouble(v, &lost) == c && !lost;
}

LLVMValueRef cg_binop(Cg *cg, const IrNode *n, LLVMValueRef l, LLVMValueRef r)
{
    if (ir_dtype_is_complex(n->type->dtype)) return cg_complex_binop(cg, n, l, r);
    if (n->u.binop.lhs->type->dtype != IR_DT_FLOAT16) return binop_value(cg, n, l, r);
    return round_half(cg, binop_value(cg, n, widen_half(cg, l), widen_half(cg, r)));
}

/* The operation on l and r (float16 operands already widened to float). */
static LLVMValueRef binop_value(Cg *cg, const IrNode *n, LLVMValueRef l, LLVMValueRef r)
{
    IrDtype dt = n->u.binop.lhs->type->dtype;
    bool fl = ir_dtype_is_float(dt), sg = ir_dtype_is_signed(dt);
    switch (n->u.binop.op) {
    case IR_OP_ADD: return fl ? LLVMBuildFAdd(cg->b, l, r, "") : LLVMBuildAdd(cg->b, l, r, "");
    case IR_OP_SUB: return fl ? LLVMBuildFSub(cg->b, l, r, "") : LLVMBuildSub(cg->b, l, r, "");
    case IR_OP_MUL: return fl ? LLVMBuildFMul(cg->b, l, r, "") : LLVMBuildMul(cg->b, l, r, "");
    case IR_OP_DIV: return LLVMBuildFDiv(cg->b, l, r, "");
    case IR_OP_FLOORDIV: return fl ? float_divmod(cg, l, r, false) : int_divmod(cg, n, l, r, false, sg);
    case IR_OP_MOD: return fl ? float_divmod(cg, l, r, true) : int_divmod(cg, n, l, r, true, sg);
    case IR_OP_POW: {
        if (!fl) return int_pow(cg, n, l, r, dt);
        if (is_float_constant(r, 2.0)) return LLVMBuildFMul(cg->b, l, l, ""); /* x ** 2 */
        LLVMValueRef args[2] = {l, r};
        LLVMValueRef call = cg_vecmath_call(cg, IR_MATH_POW, LLVMTypeOf(l), args);
        return call ? call : cg_call_intrinsic(cg, "llvm.pow", LLVMTypeOf(l), args, 2);
    }
    case IR_OP_LSHIFT: return int_shift(cg, l, r, true, sg);
    case IR_OP_RSHIFT: return int_shift(cg, l, r, false, sg);
    case IR_OP_BITAND: return LLVMBuildAnd(cg->b, l, r, "");
    case IR_OP_BITOR: return LLVMBuildOr(cg->b, l, r, "");
    case IR_OP_BITXOR: return LLVMBuildXor(cg->b, l, r, "");
    case IR_OP_MIN: return minmax(cg, false, dt, l, r);
    case IR_OP_MAX: return minmax(cg, true, dt, l, r);
    case IR_OP_MATMUL: case IR_OP_COMPLEX: break; /* complex(): cg_complex_binop, by its result's type */
    }
    lk_diag_set(cg->diag, LK_ERR_INTERNAL, cg->f->file, n->pos.line, n->pos.col, "the cpu backend cannot lower this operator");
    return LLVMGetUndef(LLVMTypeOf(l));
}

static LLVMValueRef unop_value(Cg *cg, const IrNode *n, LLVMValueRef x);

LLVMValueRef cg_unop(Cg *cg, const IrNode *n, LLVMValueRef x)
{
    IrDtype dt = n->u.unop.operand->type->dtype;
    if (ir_dtype_is_complex(dt)) return cg_complex_unop(cg, n, x);
    if (dt != IR_DT_FLOAT16 || n->u.unop.op == IR_UOP_NOT) return unop_value(cg, n, x);
    return round_half(cg, unop_value(cg, n, widen_half(cg, x)));
}

static LLVMValueRef unop_value(Cg *cg, const IrNode *n, LLVMValueRef x)
{
    IrDtype dt = n->u.unop.operand->type->dtype;
    switch (n->u.unop.op) {
    case IR_UOP_NEG: return ir_dtype_is_float(dt) ? LLVMBuildFNeg(cg->b, x, "") : LLVMBuildNeg(cg->b, x, "");
    case IR_UOP_POS: return x;
    case IR_UOP_INVERT: return LLVMBuildNot(cg->b, x, "");
    case IR_UOP_NOT: return LLVMBuildXor(cg->b, x, LLVMConstInt(cg->i1, 1, 0), "");
    case IR_UOP_REAL: case IR_UOP_CONJ: return x; /* of a real value: typespec keeps these for complex */
    case IR_UOP_IMAG: return LLVMConstNull(LLVMTypeOf(x));
    case IR_UOP_ABS: {
        if (ir_dtype_is_float(dt)) {
            LLVMValueRef args[1] = {x};
            return cg_call_intrinsic(cg, "llvm.fabs", LLVMTypeOf(x), args, 1);
        }
        if (!ir_dtype_is_signed(dt)) return x;
        LLVMValueRef neg = LLVMBuildICmp(cg->b, LLVMIntSLT, x, LLVMConstNull(LLVMTypeOf(x)), "");
        return LLVMBuildSelect(cg->b, neg, LLVMBuildNeg(cg->b, x, ""), x, "");
    }
    }
    return x;
}

/* A call of an external function declared as touching no memory, so that LLVM may hoist it out of loops, merge
 * repeated calls and vectorise loops that make it: libm's functions (errno is never read back) and the runtime's
 * getters of settings that cannot change during a call. */
LLVMValueRef cg_call_pure(Cg *cg, const char *name, LLVMTypeRef ret, LLVMTypeRef *params, LLVMValueRef *args, int n)
{
    bool declared = LLVMGetNamedFunction(cg->mod, name) != NULL;
    LLVMValueRef call = cg_call_rt(cg, name, ret, params, args, n);
    if (declared) return call;
    LLVMValueRef fn = LLVMGetNamedFunction(cg->mod, name);
    static const char *const flags[] = {"nounwind", "willreturn", "nosync", "nofree", "speculatable"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        unsigned kind = LLVMGetEnumAttributeKindForName(flags[i], strlen(flags[i]));
        LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(cg->ctx, kind, 0));
    }
    unsigned memory = LLVMGetEnumAttributeKindForName("memory", 6);
    if (memory) /* memory(none): the encoded MemoryEffects of no access is 0 */
        LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(cg->ctx, memory, 0));
    return call;
}

/* Functions with an LLVM intrinsic; the others are libm calls (ir_math_c_name). */
static const char *math_intrinsic(IrMathFn f)
{
    switch (f) {
    case IR_MATH_SQRT: return "llvm.sqrt";
    case IR_MATH_EXP: return "llvm.exp";
    case IR_MATH_EXP2: return "llvm.exp2";
    case IR_MATH_LOG: return "llvm.log";
    case IR_MATH_LOG2: return "llvm.log2";
    case IR_MATH_LOG10: return "llvm.log10";
    case IR_MATH_SIN: return "llvm.sin";
    case IR_MATH_COS: return "llvm.cos";
    case IR_MATH_FLOOR: return "llvm.floor";
    case IR_MATH_CEIL: return "llvm.ceil";
    case IR_MATH_TRUNC: return "llvm.trunc";
    case IR_MATH_RINT: return "llvm.rint";
    case IR_MATH_FABS: return "llvm.fabs";
    case IR_MATH_POW: return "llvm.pow";
    case IR_MATH_COPYSIGN: return "llvm.copysign";
    case IR_MATH_FMIN: return "llvm.minnum";
    case IR_MATH_FMAX: return "llvm.maxnum";
    default: return NULL;
    }
}

static LLVMValueRef math_value(Cg *cg, const IrNode *n, LLVMValueRef *args);

LLVMValueRef cg_math(Cg *cg, const IrNode *n, LLVMValueRef *args)
{
    if (ir_dtype_is_complex(n->u.math.args[0]->type->dtype)) return cg_complex_math(cg, n, args);
    if (LLVMTypeOf(args[0]) != cg->f16) return math_value(cg, n, args);
    IrMathFn f = n->u.math.fn;
    LLVMValueRef wide[2] = {widen_half(cg, args[0]), ir_math_arity(f) == 2 ? widen_half(cg, args[1]) : NULL};
    if (f == IR_MATH_FMIN || f == IR_MATH_FMAX) { /* NumPy's float16 fmax: a if a >= b or b is NaN, else b */
        LLVMValueRef keep = LLVMBuildFCmp(cg->b, f == IR_MATH_FMAX ? LLVMRealOGE : LLVMRealOLE, wide[0], wide[1], "");
        keep = LLVMBuildOr(cg->b, keep, LLVMBuildFCmp(cg->b, LLVMRealUNO, wide[1], wide[1], ""), "");
        return LLVMBuildSelect(cg->b, keep, args[0], args[1], "");
    }
    LLVMValueRef v = math_value(cg, n, wide); /* the float function (expf, ...) */
    return LLVMTypeOf(v) == cg->f32 ? round_half(cg, v) : v; /* isnan and friends give a bool */
}

static LLVMValueRef math_value(Cg *cg, const IrNode *n, LLVMValueRef *args)
{
    IrMathFn f = n->u.math.fn;
    LLVMTypeRef t = LLVMTypeOf(args[0]);
    int arity = ir_math_arity(f);
    if (f == IR_MATH_ISNAN) return LLVMBuildFCmp(cg->b, LLVMRealUNO, args[0], args[0], "");
    if (f == IR_MATH_ISINF || f == IR_MATH_ISFINITE) {
        LLVMValueRef a[1] = {args[0]};
        LLVMValueRef ab = cg_call_intrinsic(cg, "llvm.fabs", t, a, 1);
        LLVMValueRef inf = LLVMConstReal(t, INFINITY);
        return LLVMBuildFCmp(cg->b, f == IR_MATH_ISINF ? LLVMRealOEQ : LLVMRealOLT, ab, inf, "");
    }
    LLVMValueRef vector_math = cg_vecmath_call(cg, f, t, args);
    if (vector_math) return vector_math;
    const char *intr = math_intrinsic(f);
    if (intr) return cg_call_intrinsic(cg, intr, t, args, arity);
    LLVMTypeRef params[2] = {t, t};
    return cg_call_pure(cg, ir_math_c_name(f, t == cg->f32), t, params, args, arity);
}
