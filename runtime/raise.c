/* raise.c: errors raised by compiled code. Each sets the call's status and message and returns the status,
 * which the compiled code passes up to the shim; the shim raises the Python exception. */
#include <stdio.h>
#include "runtime.h"

int rt_raise_index(RtCtx *ctx, const char *file, int line, int64_t index, int64_t size, int64_t axis)
{
    ctx->status = LK_ERR_INDEX;
    lk_diag_set(&ctx->diag, LK_ERR_INDEX, file, line, 0, "index %lld is out of bounds for axis %lld with size %lld",
                (long long)index, (long long)axis, (long long)size);
    return ctx->status;
}

int rt_raise_mask(RtCtx *ctx, const char *file, int line, int64_t mask_size, int64_t size, int64_t axis)
{
    ctx->status = LK_ERR_INDEX;
    lk_diag_set(&ctx->diag, LK_ERR_INDEX, file, line, 0,
                "boolean index did not match indexed array along axis %lld; size of axis is %lld but size of "
                "corresponding boolean axis is %lld", (long long)axis, (long long)size, (long long)mask_size);
    return ctx->status;
}

int rt_raise_mask_values(RtCtx *ctx, const char *file, int line, int64_t nvalues, int64_t ntrue)
{
    ctx->status = LK_ERR_VALUE;
    lk_diag_set(&ctx->diag, LK_ERR_VALUE, file, line, 0,
                "NumPy boolean array indexing assignment cannot assign %lld input values to the %lld output values "
                "where the mask is true", (long long)nvalues, (long long)ntrue);
    return ctx->status;
}

int rt_raise_zerodiv(RtCtx *ctx, const char *file, int line, int is_mod)
{
    ctx->status = LK_ERR_ZERODIV;
    lk_diag_set(&ctx->diag, LK_ERR_ZERODIV, file, line, 0, "%s", is_mod ? "integer modulo by zero" : "integer division by zero");
    return ctx->status;
}

int rt_raise_shape(RtCtx *ctx, const char *file, int line, int64_t a, int64_t b, int64_t axis)
{
    ctx->status = LK_ERR_VALUE;
    lk_diag_set(&ctx->diag, LK_ERR_VALUE, file, line, 0,
                "operands could not be broadcast together: size %lld against size %lld (dimension %lld from the right)",
                (long long)a, (long long)b, (long long)axis);
    return ctx->status;
}

int rt_raise_value(RtCtx *ctx, const char *file, int line, int64_t which)
{
    static const char *msgs[] = {
        [RT_VAL_RANGE_STEP_ZERO] = "range() arg 3 must not be zero",
        [RT_VAL_NEGATIVE_DIM] = "negative dimensions are not allowed",
        [RT_VAL_EMPTY_REDUCE] = "zero-size array to reduction operation which has no identity",
        [RT_VAL_UNPACK] = "wrong number of values to unpack",
        [RT_VAL_SLICE_STEP_ZERO] = "slice step cannot be zero",
        [RT_VAL_TOO_BIG] = "array is too big",
        [RT_VAL_NEG_POWER] = "Integers to negative integer powers are not allowed.",
        [RT_VAL_RESHAPE] = "cannot reshape the array into the requested shape (the sizes differ)",
        [RT_VAL_MASK_SHAPE] = "boolean index did not match the indexed array's shape",
        [RT_VAL_CONCAT] = "all the input array dimensions except for the concatenation axis must match exactly",
    };
    const char *m = which > 0 && which < (int64_t)(sizeof msgs / sizeof msgs[0]) && msgs[which] ? msgs[which] : "invalid value";
    ctx->status = LK_ERR_VALUE;
    lk_diag_set(&ctx->diag, LK_ERR_VALUE, file, line, 0, "%s", m);
    return ctx->status;
}

int rt_raise_unbound(RtCtx *ctx, const char *file, int line, const char *name)
{
    ctx->status = LK_ERR_UNBOUND;
    lk_diag_set(&ctx->diag, LK_ERR_UNBOUND, file, line, 0, "cannot access local variable '%s' where it is not associated with a value", name);
    return ctx->status;
}

/* Integer power by squaring, wrapping like NumPy's integer arithmetic. The exponent is >= 0 (checked by the
 * caller, which raises for negative ones). */
static int64_t rt_ipow(int64_t base, int64_t exp)
{
    uint64_t result = 1, b = (uint64_t)base;
    uint64_t e = (uint64_t)exp;
    while (e) {
        if (e & 1) result *= b;
        b *= b;
        e >>= 1;
    }
    return (int64_t)result;
}

const RtSymbol *rt_symbols(int *count)
{
    static const RtSymbol syms[] = {
        {"rt_buffer_alloc", (void *)rt_buffer_alloc}, {"rt_raise_index", (void *)rt_raise_index},
        {"rt_raise_mask", (void *)rt_raise_mask}, {"rt_raise_mask_values", (void *)rt_raise_mask_values},
        {"rt_raise_zerodiv", (void *)rt_raise_zerodiv}, {"rt_raise_shape", (void *)rt_raise_shape},
        {"rt_raise_value", (void *)rt_raise_value}, {"rt_ipow", (void *)rt_ipow},
        {"rt_raise_unbound", (void *)rt_raise_unbound}, {"rt_parallel_for", (void *)rt_parallel_for},
        {"rt_parallel_threads", (void *)rt_parallel_threads},
        {"rt_get_num_threads", (void *)rt_get_num_threads}, {"rt_get_parallel_threshold", (void *)rt_get_parallel_threshold},
        {"rt_gemm_f64", (void *)rt_gemm_f64}, {"rt_gemm_f32", (void *)rt_gemm_f32},
        {"rt_gemm_parallel", (void *)rt_gemm_parallel},
    };
    *count = (int)(sizeof syms / sizeof syms[0]);
    return syms;
}
