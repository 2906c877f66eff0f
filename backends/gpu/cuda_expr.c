/* cuda_expr.c: scalar expressions of the typed IR as CUDA C, with the scalar rules of ir.h (the helpers of
 * cuda_preamble.c), every operand in a temporary of its own so that the order of evaluation is ir.h's. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cuda.h"

void cu_buf_printf(CuBuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (need < 0) return;
    if (b->n + (size_t)need + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + (size_t)need + 1) cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) rt_out_of_memory(cap);
        b->s = s;
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->n, (size_t)need + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)need;
}

void cu_buf_free(CuBuf *b)
{
    free(b->s);
    *b = (CuBuf){0};
}

void cu_line(Cu *c, const char *fmt, ...)
{
    char stack[512];
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(stack, sizeof stack, fmt, ap);
    va_end(ap);
    char *text = stack;
    if (need >= (int)sizeof stack) {
        text = rt_arena_alloc(c->a, (size_t)need + 1);
        va_start(ap, fmt);
        vsnprintf(text, (size_t)need + 1, fmt, ap);
        va_end(ap);
    }
    cu_buf_printf(c->out, "%*s%s\n", 4 * c->indent, "", text);
}

const char *cu_fmt(Cu *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = rt_arena_alloc(c->a, (size_t)need + 1);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)need + 1, fmt, ap);
    va_end(ap);
    return s;
}

const char *cu_new_tmp(Cu *c)
{
    return cu_fmt(c, "t%d", c->ntmp++);
}

const char *cu_tmp(Cu *c, const IrType *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *e = rt_arena_alloc(c->a, (size_t)need + 1);
    va_start(ap, fmt);
    vsnprintf(e, (size_t)need + 1, fmt, ap);
    va_end(ap);
    const char *name = cu_new_tmp(c);
    cu_line(c, "%s %s = %s;", cu_type(c, t), name, e);
    return name;
}

const char *cu_scalar(IrDtype dt)
{
    switch (dt) {
    case IR_DT_BOOL: return "bool";
    case IR_DT_INT8: return "i8";
    case IR_DT_INT16: return "i16";
    case IR_DT_INT32: return "i32";
    case IR_DT_INT64: return "i64";
    case IR_DT_UINT8: return "u8";
    case IR_DT_UINT16: return "u16";
    case IR_DT_UINT32: return "u32";
    case IR_DT_UINT64: return "u64";
    case IR_DT_FLOAT16: return "f32"; /* a value; in memory u16 bits (cu_load, cu_store_at: cuda_preamble.c) */
    case IR_DT_FLOAT32: return "f32";
    case IR_DT_FLOAT64: return "f64";
    case IR_DT_COMPLEX64: return "c64";
    case IR_DT_COMPLEX128: return "c128";
    case IR_DT_COUNT: break;
    }
    return "i64";
}

/* the unsigned type of dt's width, and the one arithmetic that wraps is done in (at least 32 bits) */
static const char *unsigned_of(IrDtype dt)
{
    switch (ir_dtype_bits(dt)) {
    case 8: return "u8";
    case 16: return "u16";
    case 32: return "u32";
    default: return "u64";
    }
}

static const char *wide_unsigned(IrDtype dt)
{
    return ir_dtype_bits(dt) > 32 ? "u64" : "u32";
}

static void define_array(Cu *c, int nd)
{
    if (c->array_nd[nd]) return;
    c->array_nd[nd] = true;
    cu_buf_printf(&c->types, "struct lk_a%d { char *data; char *base; i64 shape[%d]; i64 strides[%d]; };\n", nd,
                  nd ? nd : 1, nd ? nd : 1);
}

const char *cu_type(Cu *c, const IrType *t)
{
    switch (t->kind) {
    case IR_TY_SCALAR: return cu_scalar(t->dtype);
    case IR_TY_ARRAY:
        define_array(c, t->ndim);
        return cu_fmt(c, "lk_a%d", t->ndim);
    case IR_TY_TUPLE: {
        for (int i = 0; i < c->ntuples; i++)
            if (c->tuples[i] == t) return cu_fmt(c, "lk_t%d", i);
        const char **elems = rt_arena_alloc(c->a, sizeof *elems * (size_t)(t->nelems + 1));
        for (int i = 0; i < t->nelems; i++) elems[i] = cu_type(c, t->elems[i]);
        if (c->ntuples == CU_MAX_TUPLES) {
            lk_diag_set(c->diag, LK_ERR_COMPILE, c->f->file, c->f->line, 0, "the gpu backend cannot run this many tuple types yet");
            return "lk_none";
        }
        int k = c->ntuples++;
        c->tuples[k] = t;
        cu_buf_printf(&c->types, "struct lk_t%d {", k);
        for (int i = 0; i < t->nelems; i++) cu_buf_printf(&c->types, " %s e%d;", elems[i], i);
        cu_buf_printf(&c->types, " };\n");
        return cu_fmt(c, "lk_t%d", k);
    }
    case IR_TY_NONE: case IR_TY_SLICE: case IR_TY_RANGE: case IR_TY_DTYPE: case IR_TY_FUNC: case IR_TY_RNG:
        return "lk_none"; /* a Generator never reaches a kernel: the host code refuses np.random first */
    }
    return "lk_none";
}

static const char *int_literal(Cu *c, IrDtype dt, int64_t i)
{
    if (dt == IR_DT_BOOL) return i ? "true" : "false";
    if (!ir_dtype_is_signed(dt)) {
        uint64_t u = (uint64_t)i;
        int bits = ir_dtype_bits(dt);
        if (bits < 64) u &= (1ULL << bits) - 1;
        return cu_fmt(c, "((%s)%lluULL)", cu_scalar(dt), (unsigned long long)u);
    }
    if (i == INT64_MIN) return cu_fmt(c, "((%s)(-9223372036854775807LL - 1))", cu_scalar(dt));
    return cu_fmt(c, "((%s)%lldLL)", cu_scalar(dt), (long long)i);
}

static const char *float_literal(Cu *c, IrDtype dt, double f)
{
    if (dt == IR_DT_FLOAT32 || dt == IR_DT_FLOAT16) {
        float x = dt == IR_DT_FLOAT16 ? rt_half_to_float(rt_half_from_double(f)) : (float)f;
        if (isfinite(x)) return cu_fmt(c, "%af", (double)x);
        uint32_t bits;
        memcpy(&bits, &x, 4);
        return cu_fmt(c, "LK_F(0x%08x)", bits);
    }
    if (isfinite(f)) return cu_fmt(c, "%a", f);
    uint64_t bits;
    memcpy(&bits, &f, 8);
    return cu_fmt(c, "LK_D(0x%016llxLL)", (unsigned long long)bits);
}

/* A complex's suffix in the preamble's functions (lk_cmul_c64), and its part's dtype. */
static const char *csuf(IrDtype dt) { return dt == IR_DT_COMPLEX64 ? "c64" : "c128"; }

static const char *complex_literal(Cu *c, IrDtype dt, double re, double im)
{
    IrDtype part = ir_complex_part(dt);
    return cu_fmt(c, "lk_mk_%s(%s, %s)", csuf(dt), float_literal(c, part, re), float_literal(c, part, im));
}

const char *cu_konst(Cu *c, const IrType *t, int64_t i, double f)
{
    if (t->kind != IR_TY_SCALAR) return cu_fmt(c, "%s()", cu_type(c, t));
    if (ir_dtype_is_float(t->dtype)) return float_literal(c, t->dtype, f);
    if (ir_dtype_is_complex(t->dtype)) return complex_literal(c, t->dtype, f, 0.0); /* identities: f + 0j */
    return int_literal(c, t->dtype, i);
}

const char *cu_truth(Cu *c, const char *v, const IrType *t)
{
    if (t->kind != IR_TY_SCALAR) return "false";
    if (t->dtype == IR_DT_BOOL) return v;
    if (ir_dtype_is_complex(t->dtype)) return cu_fmt(c, "lk_ctruth_%s(%s)", csuf(t->dtype), v);
    return cu_fmt(c, "(%s != 0)", v);
}

/* The saturating conversion of float x (dtype from) to integer dtype to. */
static const char *float_to_int(Cu *c, const char *x, IrDtype from, IrDtype to)
{
    int bits = ir_dtype_bits(to);
    bool sg = ir_dtype_is_signed(to);
    double hi = ldexp(1.0, sg ? bits - 1 : bits), lo = sg ? -hi : -1.0;
    const char *tmin, *tmax;
    if (sg) {
        tmin = int_literal(c, to, bits == 64 ? INT64_MIN : -(1LL << (bits - 1)));
        tmax = int_literal(c, to, bits == 64 ? INT64_MAX : (1LL << (bits - 1)) - 1);
    } else {
        tmin = int_literal(c, to, 0);
        tmax = int_literal(c, to, -1);
    }
    IrDtype ft = from == IR_DT_FLOAT16 ? IR_DT_FLOAT32 : from; /* a float16 value is an f32 */
    return cu_fmt(c, "lk_f2i<%s, %s>(%s, %s, %s, %s, %s)", cu_scalar(to), cu_scalar(ft), x,
                  float_literal(c, ft, lo), float_literal(c, ft, hi), tmin, tmax);
}

const char *cu_cast(Cu *c, const char *v, const IrType *from, const IrType *to)
{
    if (from == to || from->kind != IR_TY_SCALAR || to->kind != IR_TY_SCALAR) return v;
    IrDtype a = from->dtype, b = to->dtype;
    if (a == b) return v;
    if (b == IR_DT_BOOL) return cu_truth(c, v, from);
    if (ir_dtype_is_complex(a) || ir_dtype_is_complex(b)) { /* ir.h: the real part, or a real value and +0 */
        IrType *pa = ir_dtype_is_complex(a) ? ir_type_scalar(ir_complex_part(a)) : NULL;
        if (!ir_dtype_is_complex(b)) return cu_cast(c, cu_fmt(c, "(%s).re", v), pa, to);
        IrType *pb = ir_type_scalar(ir_complex_part(b));
        if (!pa) return cu_fmt(c, "lk_mk_%s(%s, %s)", csuf(b), cu_cast(c, v, from, pb), float_literal(c, pb->dtype, 0.0));
        return cu_fmt(c, "lk_mk_%s(%s, %s)", csuf(b), cu_cast(c, cu_fmt(c, "(%s).re", v), pa, pb),
                      cu_cast(c, cu_fmt(c, "(%s).im", v), pa, pb));
    }
    if (ir_dtype_is_float(a) && !ir_dtype_is_float(b)) return float_to_int(c, v, a, b);
    if (b == IR_DT_FLOAT16) { /* rounded once from the value: float64 directly, an integer through f32 as on the cpu */
        if (a == IR_DT_FLOAT64) return cu_fmt(c, "lk_rhd(%s)", v);
        return a == IR_DT_BOOL ? cu_fmt(c, "((f32)%s)", v) : cu_fmt(c, "lk_rh((f32)%s)", v);
    }
    return cu_fmt(c, "((%s)%s)", cu_scalar(b), v);
}

void cu_raise(Cu *c, const char *cond, RtErrCode code, IrPos pos, const char *e0, const char *e1, const char *e2)
{
    int where = rt_names_index(c->names, pos.file ? pos.file : c->f->file);
    c->nraises++;
    const char *call = cu_fmt(c, "lk_raise(lk_err, lk_order, %d, %d, %d, %d, (i64)(%s), (i64)(%s), (i64)(%s)); %s",
                              (int)rt_err_kind(code), (int)code, pos.line, where, e0 ? e0 : "0", e1 ? e1 : "0",
                              e2 ? e2 : "0", c->fail);
    if (cond) cu_line(c, "if (%s) { %s }", cond, call);
    else cu_line(c, "{ %s }", call);
}

const char *cu_refuse(Cu *c, const IrNode *n, const char *what)
{
    if (c->diag->kind == LK_OK)
        lk_diag_set(c->diag, LK_ERR_COMPILE, n->pos.file ? n->pos.file : c->f->file, n->pos.line, n->pos.col,
                    "the gpu backend cannot run %s inside a kernel yet", what);
    return NULL;
}

/* Whether n's right operand is a constant that is not zero in dt (the divisor of x // 3): no check then. */
static bool nonzero_divisor(const IrNode *n, IrDtype dt)
{
    if (n->kind != IR_BINOP || n->u.binop.rhs->kind != IR_CONST || n->u.binop.rhs->type->kind != IR_TY_SCALAR ||
        ir_dtype_is_float(n->u.binop.rhs->type->dtype))
        return false;
    int bits = ir_dtype_bits(dt);
    uint64_t v = (uint64_t)n->u.binop.rhs->u.konst.i;
    return (bits >= 64 ? v : v & ((1ull << bits) - 1)) != 0;
}

/* Python's // and % on integers: ZeroDivisionError first (unless the divisor is a non-zero constant). */
static const char *int_divmod(Cu *c, const IrNode *n, IrDtype dt, const char *l, const char *r, bool is_mod)
{
    if (!nonzero_divisor(n, dt))
        cu_raise(c, cu_fmt(c, "%s == 0", r), RT_ERR_ZERODIV, n->pos, is_mod ? "1" : "0", NULL, NULL);
    const char *T = cu_scalar(dt);
    if (!ir_dtype_is_signed(dt)) return cu_fmt(c, "((%s)(%s %s %s))", T, l, is_mod ? "%" : "/", r);
    if (is_mod) return cu_fmt(c, "lk_mod<%s>(%s, %s)", T, l, r);
    return cu_fmt(c, "lk_floordiv<%s, %s>(%s, %s)", T, wide_unsigned(dt), l, r);
}

static const char *int_pow(Cu *c, const IrNode *n, IrDtype dt, const char *l, const char *r)
{
    if (ir_dtype_is_signed(dt)) {
        cu_raise(c, cu_fmt(c, "%s < 0", r), RT_ERR_VALUE, n->pos, cu_fmt(c, "%d", RT_VAL_NEG_POWER), NULL, NULL);
        return cu_fmt(c, "((%s)lk_ipow((u64)(i64)%s, (u64)(i64)%s))", cu_scalar(dt), l, r);
    }
    return cu_fmt(c, "((%s)lk_ipow((u64)%s, (u64)%s))", cu_scalar(dt), l, r);
}

static const char *wrap(Cu *c, IrDtype dt, const char *l, const char *op, const char *r)
{
    const char *W = wide_unsigned(dt);
    return cu_fmt(c, "((%s)((%s)%s %s (%s)%s))", cu_scalar(dt), W, l, op, W, r);
}

static const char *binop_value(Cu *c, const IrNode *n, IrBinOp op, IrDtype dt, const char *l, const char *r);

/* x ** 2 with a literal float 2: x * x, exact as in the cpu backend (emit_scalar.c); pow(x, 2.0) is ~400 lines of
 * PTX that NVRTC does not fold. */
static bool is_square(const IrNode *n)
{
    if (!n || n->kind != IR_BINOP) return false;
    const IrNode *e = n->u.binop.rhs;
    return e->kind == IR_CONST && ir_dtype_is_float(e->type->dtype) && e->u.konst.f == 2.0;
}

/* float16 operands are computed on as f32 and the result rounded once (ir.h); comparisons never reach here. */
static const char *complex_binop(Cu *c, const IrNode *n, IrBinOp op, IrDtype dt, const char *l, const char *r)
{
    const char *sfx = csuf(dt);
    switch (op) {
    case IR_OP_ADD: return cu_fmt(c, "lk_cadd_%s(%s, %s)", sfx, l, r);
    case IR_OP_SUB: return cu_fmt(c, "lk_csub_%s(%s, %s)", sfx, l, r);
    case IR_OP_MUL: return cu_fmt(c, "lk_cmul_%s(%s, %s)", sfx, l, r);
    case IR_OP_DIV: return cu_fmt(c, "lk_cdiv%s_%s(%s, %s)", n && n->type->weak ? "py" : "", sfx, l, r);
    case IR_OP_POW: return cu_fmt(c, "lk_cpow_%s(%s, %s)", sfx, l, r);
    case IR_OP_FLOORDIV: case IR_OP_MOD: case IR_OP_MATMUL: case IR_OP_LSHIFT: case IR_OP_RSHIFT: case IR_OP_BITAND:
    case IR_OP_BITOR: case IR_OP_BITXOR: case IR_OP_MIN: case IR_OP_MAX: case IR_OP_COMPLEX:
        break;
    }
    return cu_refuse(c, n, "this operator on complex numbers");
}

const char *cu_binop(Cu *c, const IrNode *n, IrBinOp op, IrDtype dt, const char *l, const char *r)
{
    if (n && n->kind == IR_BINOP && op == IR_OP_COMPLEX) return cu_fmt(c, "lk_mk_%s(%s, %s)", csuf(n->type->dtype), l, r);
    if (ir_dtype_is_complex(dt)) return complex_binop(c, n, op, dt, l, r);
    const char *v = binop_value(c, n, op, dt, l, r);
    return v && dt == IR_DT_FLOAT16 ? cu_fmt(c, "lk_rh(%s)", v) : v;
}

static const char *binop_value(Cu *c, const IrNode *n, IrBinOp op, IrDtype dt, const char *l, const char *r)
{
    bool fl = ir_dtype_is_float(dt), bl = dt == IR_DT_BOOL, single = dt != IR_DT_FLOAT64;
    const char *T = cu_scalar(dt), *sfx = single ? "f32" : "f64";
    switch (op) {
    case IR_OP_ADD:
        if (bl) return cu_fmt(c, "((bool)(%s ^ %s))", l, r);
        return fl ? cu_fmt(c, "(%s + %s)", l, r) : wrap(c, dt, l, "+", r);
    case IR_OP_SUB:
        if (bl) return cu_fmt(c, "((bool)(%s ^ %s))", l, r);
        return fl ? cu_fmt(c, "(%s - %s)", l, r) : wrap(c, dt, l, "-", r);
    case IR_OP_MUL:
        if (bl) return cu_fmt(c, "((bool)(%s & %s))", l, r);
        return fl ? cu_fmt(c, "(%s * %s)", l, r) : wrap(c, dt, l, "*", r);
    case IR_OP_DIV: return cu_fmt(c, "(%s / %s)", l, r);
    case IR_OP_FLOORDIV: return fl ? cu_fmt(c, "lk_ffloordiv_%s(%s, %s)", sfx, l, r) : int_divmod(c, n, dt, l, r, false);
    case IR_OP_MOD: return fl ? cu_fmt(c, "lk_fmod_%s(%s, %s)", sfx, l, r) : int_divmod(c, n, dt, l, r, true);
    case IR_OP_POW:
        if (fl && is_square(n)) return cu_fmt(c, "lk_sq(%s)", l);
        if (fl) return cu_fmt(c, "%s(%s, %s)", single ? "powf" : "pow", l, r);
        return int_pow(c, n, dt, l, r);
    case IR_OP_LSHIFT:
        return cu_fmt(c, "lk_shl<%s, %s, %d>(%s, %s)", T, unsigned_of(dt), ir_dtype_bits(dt), l, r);
    case IR_OP_RSHIFT:
        return cu_fmt(c, "lk_shr<%s, %s, %d>(%s, %s)", T, unsigned_of(dt), ir_dtype_bits(dt), l, r);
    case IR_OP_BITAND: return cu_fmt(c, "((%s)(%s & %s))", T, l, r);
    case IR_OP_BITOR: return cu_fmt(c, "((%s)(%s | %s))", T, l, r);
    case IR_OP_BITXOR: return cu_fmt(c, "((%s)(%s ^ %s))", T, l, r);
    case IR_OP_MIN:
        if (dt == IR_DT_FLOAT16) return cu_fmt(c, "lk_minh(%s, %s)", l, r);
        if (fl) return cu_fmt(c, "lk_minnp<%s>(%s, %s)", T, l, r);
        if (bl) return cu_fmt(c, "((bool)(%s & %s))", l, r);
        return cu_fmt(c, "(%s <= %s ? %s : %s)", l, r, l, r);
    case IR_OP_MAX:
        if (dt == IR_DT_FLOAT16) return cu_fmt(c, "lk_maxh(%s, %s)", l, r);
        if (fl) return cu_fmt(c, "lk_maxnp<%s>(%s, %s)", T, l, r);
        if (bl) return cu_fmt(c, "((bool)(%s | %s))", l, r);
        return cu_fmt(c, "(%s >= %s ? %s : %s)", l, r, l, r);
    case IR_OP_MATMUL: break;
    case IR_OP_COMPLEX: break; /* cu_binop */
    }
    return cu_refuse(c, n, "the @ operator on scalars");
}

static const char *unop(Cu *c, const IrNode *n, const char *x)
{
    IrDtype dt = n->u.unop.operand->type->dtype;
    const char *T = cu_scalar(dt);
    if (ir_dtype_is_complex(dt)) {
        switch (n->u.unop.op) {
        case IR_UOP_NEG: return cu_fmt(c, "lk_cneg_%s(%s)", csuf(dt), x);
        case IR_UOP_POS: return x;
        case IR_UOP_REAL: return cu_fmt(c, "%s.re", x);
        case IR_UOP_IMAG: return cu_fmt(c, "%s.im", x);
        case IR_UOP_CONJ: return cu_fmt(c, "lk_cconj_%s(%s)", csuf(dt), x);
        case IR_UOP_ABS: return cu_fmt(c, "lk_cabs_%s(%s)", csuf(dt), x);
        case IR_UOP_NOT: return cu_fmt(c, "(!lk_ctruth_%s(%s))", csuf(dt), x);
        case IR_UOP_INVERT: break;
        }
        return cu_refuse(c, n, "~ of a complex number");
    }
    switch (n->u.unop.op) {
    case IR_UOP_NEG:
        if (ir_dtype_is_float(dt)) return cu_fmt(c, "(-%s)", x);
        if (dt == IR_DT_BOOL) return x;
        return wrap(c, dt, "0", "-", x);
    case IR_UOP_POS: return x;
    case IR_UOP_INVERT:
        if (dt == IR_DT_BOOL) return cu_fmt(c, "(!%s)", x);
        return cu_fmt(c, "((%s)~%s)", T, x);
    case IR_UOP_NOT: return cu_fmt(c, "(!%s)", x);
    case IR_UOP_REAL: case IR_UOP_CONJ: return x; /* of a real value: typespec keeps these for complex */
    case IR_UOP_IMAG: return cu_fmt(c, "((%s)0)", T);
    case IR_UOP_ABS:
        if (ir_dtype_is_float(dt)) return cu_fmt(c, "%s(%s)", dt == IR_DT_FLOAT64 ? "fabs" : "fabsf", x);
        if (!ir_dtype_is_signed(dt)) return x;
        return cu_fmt(c, "(%s < 0 ? %s : %s)", x, wrap(c, dt, "0", "-", x), x);
    }
    return x;
}

/* float16: the float32 function on the exact operands, rounded once; NumPy's own fmin/fmax (cpu: cg_math). */
const char *cu_math(Cu *c, IrMathFn fn, IrDtype dt, const char *a0, const char *a1)
{
    if (ir_dtype_is_complex(dt)) {
        const char *f = fn == IR_MATH_SQRT ? "lk_csqrt" : fn == IR_MATH_EXP ? "lk_cexp" : fn == IR_MATH_LOG ? "lk_clog" : NULL;
        if (f) return cu_fmt(c, "%s_%s(%s)", f, csuf(dt), a0);
        lk_diag_set(c->diag, LK_ERR_INTERNAL, c->f->file, c->f->line, 0, "the gpu backend has no complex %s", ir_math_name(fn));
        return NULL;
    }
    bool f32 = dt != IR_DT_FLOAT64, half = dt == IR_DT_FLOAT16;
    switch (fn) {
    case IR_MATH_ISNAN: return cu_fmt(c, "(%s != %s)", a0, a0);
    case IR_MATH_ISINF: return cu_fmt(c, "(%s(%s) == %s)", f32 ? "fabsf" : "fabs", a0, f32 ? "LK_INF32" : "LK_INF64");
    case IR_MATH_ISFINITE: return cu_fmt(c, "(%s(%s) < %s)", f32 ? "fabsf" : "fabs", a0, f32 ? "LK_INF32" : "LK_INF64");
    case IR_MATH_FMIN: case IR_MATH_FMAX:
        if (half) return cu_fmt(c, "%s(%s, %s)", fn == IR_MATH_FMIN ? "lk_fminh" : "lk_fmaxh", a0, a1);
        break;
    default: break;
    }
    const char *name = ir_math_c_name(fn, f32);
    const char *v = ir_math_arity(fn) == 2 ? cu_fmt(c, "%s(%s, %s)", name, a0, a1) : cu_fmt(c, "%s(%s)", name, a0);
    return half ? cu_fmt(c, "lk_rh(%s)", v) : v;
}

int cu_dev_index(const Cu *c, const IrFunc *f)
{
    for (int i = 0; i < c->ndev; i++)
        if (c->dev[i] == f) return i;
    return -1;
}

static const char *call_user(Cu *c, const IrNode *n)
{
    const IrFunc *callee = n->u.call.callee;
    int k = cu_dev_index(c, callee);
    if (k < 0 || !callee) return cu_refuse(c, n, "this call");
    const char **args = rt_arena_alloc(c->a, sizeof *args * (size_t)(n->u.call.nargs + 1));
    for (int i = 0; i < n->u.call.nargs; i++) {
        const char *v = cu_expr(c, n->u.call.args[i]);
        if (!v) return NULL;
        v = cu_cast(c, v, n->u.call.args[i]->type, callee->params[i]->type);
        args[i] = cu_tmp(c, callee->params[i]->type, "%s", v);
    }
    const char *ret = cu_new_tmp(c);
    cu_line(c, "%s %s;", cu_type(c, callee->ret_type), ret);
    CuBuf call = {0};
    c->ndevcalls++;
    cu_buf_printf(&call, "lk_f%d(lk_err, lk_order, &%s", k, ret);
    for (int i = 0; i < n->u.call.nargs; i++) cu_buf_printf(&call, ", %s", args[i]);
    cu_buf_printf(&call, ")");
    cu_line(c, "if (%s) %s", call.s, c->fail);
    cu_buf_free(&call);
    return ret;
}

static const char *boolop(Cu *c, const IrNode *n)
{
    const char *res = cu_new_tmp(c);
    cu_line(c, "%s %s;", cu_type(c, n->type), res);
    int opened = 0;
    for (int i = 0; i < n->u.boolop.n; i++) {
        const IrNode *v = n->u.boolop.values[i];
        const char *x = cu_expr(c, v);
        if (!x) return NULL;
        cu_line(c, "%s = %s;", res, cu_cast(c, x, v->type, n->type));
        if (i + 1 == n->u.boolop.n) break;
        const char *t = cu_truth(c, res, n->type);
        cu_line(c, "if (%s%s) {", n->u.boolop.is_and ? "" : "!", t);
        c->indent++;
        opened++;
    }
    while (opened--) {
        c->indent--;
        cu_line(c, "}");
    }
    return res;
}

static const char *ifexp(Cu *c, const IrNode *n)
{
    const char *cond = cu_expr(c, n->u.ifexp.cond);
    if (!cond) return NULL;
    const char *res = cu_new_tmp(c);
    cu_line(c, "%s %s;", cu_type(c, n->type), res);
    cu_line(c, "if (%s) {", cu_truth(c, cond, n->u.ifexp.cond->type));
    c->indent++;
    const char *a = cu_expr(c, n->u.ifexp.then);
    if (!a) return NULL;
    cu_line(c, "%s = %s;", res, cu_cast(c, a, n->u.ifexp.then->type, n->type));
    c->indent--;
    cu_line(c, "} else {");
    c->indent++;
    const char *b = cu_expr(c, n->u.ifexp.orelse);
    if (!b) return NULL;
    cu_line(c, "%s = %s;", res, cu_cast(c, b, n->u.ifexp.orelse->type, n->type));
    c->indent--;
    cu_line(c, "}");
    return res;
}

static const char *var(Cu *c, const IrNode *n)
{
    IrVar *v = n->u.var.var;
    if (n->u.var.check_bound && v->maybe_unbound) {
        int name = rt_names_index(c->names, v->name);
        cu_raise(c, cu_fmt(c, "!b%d", v->id), RT_ERR_UNBOUND, n->pos, cu_fmt(c, "%d", name), NULL, NULL);
    }
    if (v->type->kind != IR_TY_SCALAR && v->type->kind != IR_TY_ARRAY && v->type->kind != IR_TY_TUPLE)
        return cu_fmt(c, "%s()", cu_type(c, v->type));
    return cu_fmt(c, "v%d", v->id);
}

static const char *tuple(Cu *c, const IrNode *n)
{
    const char **items = rt_arena_alloc(c->a, sizeof *items * (size_t)(n->u.tuple.n + 1));
    for (int i = 0; i < n->u.tuple.n; i++) {
        items[i] = cu_expr(c, n->u.tuple.items[i]);
        if (!items[i]) return NULL;
        items[i] = cu_cast(c, items[i], n->u.tuple.items[i]->type, n->type->elems[i]);
    }
    const char *t = cu_new_tmp(c);
    cu_line(c, "%s %s;", cu_type(c, n->type), t);
    for (int i = 0; i < n->u.tuple.n; i++) cu_line(c, "%s.e%d = %s;", t, i, items[i]);
    return t;
}

const char *cu_expr(Cu *c, const IrNode *n)
{
    if (c->diag->kind != LK_OK) return NULL;
    switch (n->kind) {
    case IR_CONST:
        if (n->type->kind == IR_TY_SCALAR && ir_dtype_is_complex(n->type->dtype))
            return complex_literal(c, n->type->dtype, n->u.konst.f, n->u.konst.im);
        return cu_konst(c, n->type, n->u.konst.i, n->u.konst.f);
    case IR_VAR: return var(c, n);
    case IR_BINOP: {
        const char *l = cu_expr(c, n->u.binop.lhs);
        const char *r = l ? cu_expr(c, n->u.binop.rhs) : NULL;
        if (!r) return NULL;
        const char *v = cu_binop(c, n, n->u.binop.op, n->u.binop.lhs->type->dtype, l, r);
        return v ? cu_tmp(c, n->type, "%s", v) : NULL;
    }
    case IR_UNOP: {
        const char *x = cu_expr(c, n->u.unop.operand);
        return x ? cu_tmp(c, n->type, "%s", unop(c, n, x)) : NULL;
    }
    case IR_COMPARE: {
        static const char *ops[] = {"==", "!=", "<", "<=", ">", ">="};
        const char *l = cu_expr(c, n->u.compare.operands[0]);
        const char *r = l ? cu_expr(c, n->u.compare.operands[1]) : NULL;
        if (!r) return NULL;
        IrDtype dt = n->u.compare.operands[0]->type->dtype;
        if (ir_dtype_is_complex(dt)) /* == and != only (typespec) */
            return cu_tmp(c, n->type, "(%slk_ceq_%s(%s, %s))", n->u.compare.ops[0] == IR_CMP_NE ? "!" : "", csuf(dt), l, r);
        return cu_tmp(c, n->type, "(%s %s %s)", l, ops[n->u.compare.ops[0]], r);
    }
    case IR_BOOLOP: return boolop(c, n);
    case IR_IFEXP: return ifexp(c, n);
    case IR_CALL:
        if (n->u.call.ckind == IR_CALLEE_FUNC) return call_user(c, n);
        if (n->u.call.ckind == IR_CALLEE_INTRINSIC) return cu_intrinsic(c, n);
        return cu_refuse(c, n, "this call");
    case IR_INDEX: return cu_index(c, n);
    case IR_TUPLE: return tuple(c, n);
    case IR_TUPLE_GET: {
        const char *t = cu_expr(c, n->u.tuple_get.tuple);
        return t ? cu_fmt(c, "%s.e%d", t, n->u.tuple_get.k) : NULL;
    }
    case IR_CAST: {
        const char *v = cu_expr(c, n->u.cast.value);
        return v ? cu_tmp(c, n->type, "%s", cu_cast(c, v, n->u.cast.value->type, n->type)) : NULL;
    }
    case IR_MATH: {
        const char *a[2] = {NULL, NULL};
        for (int i = 0; i < ir_math_arity(n->u.math.fn); i++)
            if (!(a[i] = cu_expr(c, n->u.math.args[i]))) return NULL;
        return cu_tmp(c, n->type, "%s", cu_math(c, n->u.math.fn, n->u.math.args[0]->type->dtype, a[0], a[1]));
    }
    case IR_ARRAY_DIM: {
        const char *a = cu_expr(c, n->u.array_dim.array);
        return a ? cu_fmt(c, "%s.shape[%d]", a, n->u.array_dim.axis) : NULL;
    }
    case IR_ALLOC: return cu_refuse(c, n, "an allocation of a new array");
    case IR_MAP: return cu_nested_map(c, n);
    case IR_IMAP: return cu_nested_imap(c, n);
    case IR_REDUCE: return cu_nested_reduce(c, n);
    case IR_SCAN: return cu_refuse(c, n, "a scan (it makes a new array)");
    case IR_BCAST_SHAPE: return cu_bcast_shape(c, n);
    case IR_LAMBDA: return "lk_none()";
    case IR_COMPREHENSION: case IR_NAMEREF: case IR_SLICE: case IR_ATTR:
    case IR_ASSIGN: case IR_AUGASSIGN: case IR_STORE: case IR_IF: case IR_WHILE: case IR_FOR_RANGE: case IR_FOR_ITER:
    case IR_BREAK: case IR_CONTINUE: case IR_RETURN: case IR_EXPR_STMT: case IR_PASS: case IR_KIND_COUNT:
        break;
    }
    lk_diag_set(c->diag, LK_ERR_INTERNAL, c->f->file, n->pos.line, n->pos.col,
                "the gpu backend cannot lower a %s expression here", ir_kind_name(n->kind));
    return NULL;
}

const char *cu_load(Cu *c, IrDtype dt, const char *addr)
{
    if (dt == IR_DT_BOOL) return cu_fmt(c, "(*(const u8 *)(%s) != 0)", addr);
    if (dt == IR_DT_FLOAT16) return cu_fmt(c, "lk_h2f(*(const u16 *)(%s))", addr);
    return cu_fmt(c, "(*(const %s *)(%s))", cu_scalar(dt), addr);
}

void cu_store_at(Cu *c, IrDtype dt, const char *addr, const char *v)
{
    if (dt == IR_DT_BOOL) cu_line(c, "*(u8 *)(%s) = (u8)(%s);", addr, v);
    else if (dt == IR_DT_FLOAT16) cu_line(c, "*(u16 *)(%s) = lk_f2h(%s);", addr, v); /* exact: v is a float16 value */
    else cu_line(c, "*(%s *)(%s) = %s;", cu_scalar(dt), addr, v);
}

static const char *slot_value(Cu *c, const IrType *t, int slot)
{
    if (ir_dtype_is_complex(t->dtype)) /* two slots: the parts as doubles (ir_abi_slots) */
        return cu_fmt(c, "lk_mk_%s((%s)__longlong_as_double(p.s[%d]), (%s)__longlong_as_double(p.s[%d]))", csuf(t->dtype),
                      cu_scalar(ir_complex_part(t->dtype)), slot, cu_scalar(ir_complex_part(t->dtype)), slot + 1);
    if (ir_dtype_is_float(t->dtype)) {
        if (t->dtype != IR_DT_FLOAT64) return cu_fmt(c, "((f32)__longlong_as_double(p.s[%d]))", slot);
        return cu_fmt(c, "__longlong_as_double(p.s[%d])", slot);
    }
    if (t->dtype == IR_DT_BOOL) return cu_fmt(c, "(p.s[%d] != 0)", slot);
    return cu_fmt(c, "((%s)p.s[%d])", cu_scalar(t->dtype), slot);
}

void cu_fill_slots(Cu *c, const char *dst, const IrType *t, int *slot)
{
    switch (t->kind) {
    case IR_TY_SCALAR:
        cu_line(c, "%s = %s;", dst, slot_value(c, t, *slot));
        *slot += ir_abi_slots(t);
        return;
    case IR_TY_ARRAY:
        cu_line(c, "%s.data = (char *)p.s[%d];", dst, (*slot)++);
        cu_line(c, "%s.base = (char *)p.s[%d];", dst, (*slot)++);
        for (int d = 0; d < t->ndim; d++) cu_line(c, "%s.shape[%d] = p.s[%d];", dst, d, (*slot)++);
        for (int d = 0; d < t->ndim; d++) cu_line(c, "%s.strides[%d] = p.s[%d];", dst, d, (*slot)++);
        return;
    case IR_TY_TUPLE:
        for (int i = 0; i < t->nelems; i++) cu_fill_slots(c, cu_fmt(c, "%s.e%d", dst, i), t->elems[i], slot);
        return;
    case IR_TY_NONE: case IR_TY_SLICE: case IR_TY_RANGE: case IR_TY_DTYPE: case IR_TY_FUNC: return;
    case IR_TY_RNG: *slot += ir_abi_slots(t); return;
    }
}

const char *cu_from_slots(Cu *c, const IrType *t, int slot)
{
    if (t->kind == IR_TY_SCALAR) return slot_value(c, t, slot);
    const char *name = cu_new_tmp(c);
    cu_line(c, "%s %s;", cu_type(c, t), name);
    cu_fill_slots(c, name, t, &slot);
    return name;
}

const char *cu_to_slot(Cu *c, const char *v, const IrType *t)
{
    if (t->dtype == IR_DT_FLOAT32 || t->dtype == IR_DT_FLOAT16) return cu_fmt(c, "__double_as_longlong((f64)%s)", v);
    if (t->dtype == IR_DT_FLOAT64) return cu_fmt(c, "__double_as_longlong(%s)", v);
    return cu_fmt(c, "((i64)%s)", v);
}
