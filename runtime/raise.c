/* raise.c: errors raised by compiled code. The code writes an RtError (runtime.h) and returns non-zero; here the
 * host reads it back. rt_error_diag() holds every message of a run-time error, written as CPython and NumPy
 * word them; nothing here runs while compiled code runs, so this file may format, allocate and read the name
 * table freely. It never writes a record: that is the compiled code's (and rt_buffer_alloc's) job. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_internal.h"

LkErrKind rt_err_kind(RtErrCode code)
{
    switch (code) {
    case RT_ERR_NONE: return LK_OK;
    case RT_ERR_INDEX: case RT_ERR_MASK: case RT_ERR_INDEX_SHAPES: return LK_ERR_INDEX;
    case RT_ERR_MASK_VALUES: case RT_ERR_SHAPE: case RT_ERR_VALUE: return LK_ERR_VALUE;
    case RT_ERR_ZERODIV: return LK_ERR_ZERODIV;
    case RT_ERR_UNBOUND: return LK_ERR_UNBOUND;
    case RT_ERR_MEMORY: return LK_ERR_MEMORY;
    case RT_ERR_GPU: return LK_ERR_INTERNAL; /* the record's status says which (extra[0]) */
    case RT_ERR_OVERFLOW: return LK_ERR_OVERFLOW;
    case RT_ERR_LINALG: return LK_ERR_LINALG;
    case RT_ERR_RAISE: return LK_ERR_RAISED;
    }
    return LK_ERR_INTERNAL;
}

int rt_names_index(RtNames *t, const char *s)
{
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->names[i], s) == 0) return i;
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 8;
        char **names = realloc(t->names, sizeof *names * (size_t)cap);
        if (!names) return -1;
        t->names = names;
        t->cap = cap;
    }
    char *copy = strdup(s);
    if (!copy) return -1;
    t->names[t->n] = copy;
    return t->n++;
}

void rt_names_free(RtNames *t)
{
    for (int i = 0; i < t->n; i++) free(t->names[i]);
    free(t->names);
    *t = (RtNames){0};
}

static const char *name_at(const RtNames *t, int64_t i)
{
    return t && i >= 0 && i < t->n ? t->names[i] : NULL;
}

static const char *value_message(int64_t which)
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
        [RT_VAL_READONLY] = "assignment destination is read-only",
        [RT_VAL_READONLY_OUT] = "output array is read-only",
        [RT_VAL_FLOAT_NAN] = "cannot convert float NaN to integer",
        [RT_VAL_PERCENTILE] = "Percentiles must be in the range [0, 100]",
        [RT_VAL_QUANTILE] = "Quantiles must be in the range [0, 1]",
        [RT_VAL_HIST_BINS] = "`bins` must be positive, when an integer",
        [RT_VAL_HIST_ORDER] = "max must be larger than min in range parameter.",
        [RT_VAL_HIST_FINITE] = "the range of the histogram is not finite",
        [RT_VAL_HIST_EDGES] = "`bins` must increase monotonically, when an array",
        [RT_VAL_SOLVE_SHAPE] = "solve: Input operand 1 has a mismatch in its core dimension 0 (b's rows differ from a's)",
        [RT_VAL_SEQUENCE] = "setting an array element with a sequence.",
        [RT_VAL_RNG_SEED] = "expected non-negative integer",
        [RT_VAL_RNG_LOW_HIGH] = "low >= high",
        [RT_VAL_RNG_LOW_HIGH_CLOSED] = "low > high",
        [RT_VAL_RNG_HIGH_0] = "high <= 0",
        [RT_VAL_RNG_HIGH_0_CLOSED] = "high < 0",
        [RT_VAL_RNG_LOW_INT32] = "low is out of bounds for int32",
        [RT_VAL_RNG_HIGH_INT32] = "high is out of bounds for int32",
        [RT_VAL_RNG_SCALE] = "scale < 0",
    };
    return which > 0 && which < (int64_t)(sizeof msgs / sizeof msgs[0]) && msgs[which] ? msgs[which] : "invalid value";
}

/* NumPy 2's words for a number its setitem cannot store into an integer array (RT_ERR_OVERFLOW). */
static void overflow_message(const RtError *e, const char *file, LkDiag *out)
{
    int64_t target = e->extra[1];
    const char *sign = target & 256 ? "u" : "";
    int bits = (int)(target & 255);
    switch (e->extra[2]) {
    case RT_OVF_BOUNDS_UNSIGNED:
        lk_diag_set(out, LK_ERR_OVERFLOW, file, e->line, 0, "Python integer %llu out of bounds for %sint%d",
                    (unsigned long long)e->extra[0], sign, bits);
        return;
    case RT_OVF_TOO_LARGE:
        lk_diag_set(out, LK_ERR_OVERFLOW, file, e->line, 0, "Python int too large to convert to C long");
        return;
    case RT_OVF_INFINITY:
        lk_diag_set(out, LK_ERR_OVERFLOW, file, e->line, 0, "cannot convert float infinity to integer");
        return;
    case RT_OVF_RNG_RANGE:
        lk_diag_set(out, LK_ERR_OVERFLOW, file, e->line, 0, "high - low range exceeds valid bounds");
        return;
    }
    lk_diag_set(out, LK_ERR_OVERFLOW, file, e->line, 0, "Python integer %lld out of bounds for %sint%d",
                (long long)e->extra[0], sign, bits);
}

void rt_error_diag(const RtError *e, const RtNames *names, LkDiag *out)
{
    const char *file = name_at(names, e->where);
    if (!file) file = "";
    const long long x[3] = {e->extra[0], e->extra[1], e->extra[2]};
    LkErrKind kind = rt_err_kind((RtErrCode)e->code);
    out->kind = LK_OK; /* out is written, whatever it held */
    switch ((RtErrCode)e->code) {
    case RT_ERR_NONE:
        lk_diag_set(out, LK_ERR_INTERNAL, "", 0, 0, "compiled code failed without a message");
        return;
    case RT_ERR_INDEX:
        lk_diag_set(out, kind, file, e->line, 0, "index %lld is out of bounds for axis %lld with size %lld", x[0], x[2],
                    x[1]);
        return;
    case RT_ERR_MASK:
        lk_diag_set(out, kind, file, e->line, 0,
                    "boolean index did not match indexed array along axis %lld; size of axis is %lld but size of "
                    "corresponding boolean axis is %lld", x[2], x[1], x[0]);
        return;
    case RT_ERR_INDEX_SHAPES:
        lk_diag_set(out, kind, file, e->line, 0, "shape mismatch: indexing arrays could not be broadcast together with "
                    "shapes (%lld,) (%lld,)", x[0], x[1]);
        return;
    case RT_ERR_MASK_VALUES:
        lk_diag_set(out, kind, file, e->line, 0,
                    "NumPy boolean array indexing assignment cannot assign %lld input values to the %lld output values "
                    "where the mask is true", x[0], x[1]);
        return;
    case RT_ERR_ZERODIV:
        lk_diag_set(out, kind, file, e->line, 0, "%s", x[0] ? "integer modulo by zero" : "integer division by zero");
        return;
    case RT_ERR_SHAPE:
        if (x[2] == 0) { /* a matrix product's summed dimension: {a's size, b's size}, in NumPy's words */
            lk_diag_set(out, kind, file, e->line, 0,
                        "matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature "
                        "(n?,k),(k,m?)->(n?,m?) (size %lld is different from %lld)", x[1], x[0]);
            return;
        }
        lk_diag_set(out, kind, file, e->line, 0,
                    "operands could not be broadcast together: size %lld against size %lld (dimension %lld from the right)",
                    x[0], x[1], x[2]);
        return;
    case RT_ERR_VALUE:
        if (x[0] == RT_VAL_AXIS) {
            lk_diag_set(out, kind, file, e->line, 0, "axis %lld is out of bounds for array of dimension %lld", x[1], x[2]);
            return;
        }
        lk_diag_set(out, kind, file, e->line, 0, "%s", value_message(x[0]));
        return;
    case RT_ERR_UNBOUND: {
        const char *var = name_at(names, x[0]);
        lk_diag_set(out, kind, file, e->line, 0, "cannot access local variable '%s' where it is not associated with a value",
                    var ? var : "?");
        return;
    }
    case RT_ERR_MEMORY:
        if (x[2] == 1) { /* device memory (rt_gpu_buffer_alloc): the message it kept says what the device has */
            LkDiag gpu = {0};
            gpu_last_diag(&gpu);
            lk_diag_set(out, kind, file, e->line, 0, "%s", gpu.message);
            return;
        }
        lk_diag_set(out, kind, file, e->line, 0, x[1] ? "cannot allocate an array of %lld bytes"
                                                       : "out of memory allocating an array of %lld bytes", x[0]);
        return;
    case RT_ERR_GPU: {
        LkDiag gpu = {0};
        gpu_last_diag(&gpu);
        lk_diag_set(out, gpu.kind, file, e->line, 0, "%s", gpu.message);
        return;
    }
    case RT_ERR_OVERFLOW:
        overflow_message(e, file, out);
        return;
    case RT_ERR_LINALG:
        lk_diag_set(out, kind, file, e->line, 0, "%s",
                    x[0] == RT_LINALG_NOT_POSDEF ? "Matrix is not positive definite"
                    : x[0] == RT_LINALG_NOT_SQUARE ? "Last 2 dimensions of the array must be square" : "Singular matrix");
        return;
    case RT_ERR_RAISE: {
        /* the program's own exception: the shim makes it from the class and arguments (the message here is for
         * whoever prints the diagnostic instead) */
        const char *cls = name_at(names, x[0]), *args = x[1] >= 0 ? name_at(names, x[1]) : NULL;
        if (!cls || (x[1] >= 0 && !args)) break; /* a record that names no string of this code: internal */
        lk_diag_set(out, kind, file, e->line, 0, "%s%s", cls, args ? args : x[1] == -2 ? "(...)" : "()");
        out->raised_class = cls;
        out->raised_args = args;
        out->raised_recorded = x[1] == -2;
        return;
    }
    }
    lk_diag_set(out, LK_ERR_INTERNAL, file, e->line, 0, "compiled code failed with error record %d (status %d)", e->code,
                e->status);
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
        {"rt_buffer_alloc", (void *)rt_buffer_alloc}, {"rt_ipow", (void *)rt_ipow},
        {"rt_parallel_for", (void *)rt_parallel_for},
        {"rt_parallel_threads", (void *)rt_parallel_threads},
        {"rt_get_num_threads", (void *)rt_get_num_threads}, {"rt_get_parallel_threshold", (void *)rt_get_parallel_threshold},
        {"rt_gemm_f64", (void *)rt_gemm_f64}, {"rt_gemm_f32", (void *)rt_gemm_f32},
        {"rt_gemm_parallel", (void *)rt_gemm_parallel}, {"rt_gemm_f16", (void *)rt_gemm_f16},
        {"rt_matmul", (void *)rt_matmul}, {"rt_blas_matmul", (void *)rt_blas_matmul},
        {"rt_sort", (void *)rt_sort}, {"rt_linalg", (void *)rt_linalg},
        {"rt_reshape_view", (void *)rt_reshape_view},
        {"rt_gpu_sort", (void *)rt_gpu_sort}, {"rt_gpu_linalg", (void *)rt_gpu_linalg},
        {"rt_gpu_rng_fill", (void *)rt_gpu_rng_fill},
        {"rt_print_begin", (void *)rt_print_begin}, {"rt_print_i64", (void *)rt_print_i64},
        {"rt_print_f64", (void *)rt_print_f64}, {"rt_print_array", (void *)rt_print_array},
        {"rt_print_end", (void *)rt_print_end},
        {"rt_rng_seed", (void *)rt_rng_seed}, {"rt_rng_fill", (void *)rt_rng_fill},
        {"rt_gpu_launch", (void *)rt_gpu_launch}, {"rt_gpu_sync", (void *)rt_gpu_sync},
        {"rt_gpu_results", (void *)rt_gpu_results}, {"rt_gpu_buffer_alloc", (void *)rt_gpu_buffer_alloc},
        {"rt_gpu_read_elem", (void *)rt_gpu_read_elem}, {"rt_gpu_write_elem", (void *)rt_gpu_write_elem},
        {"rt_gpu_gemm", (void *)rt_gpu_gemm},
        {"rt_csqrt_f64", (void *)rt_csqrt_f64}, {"rt_cexp_f64", (void *)rt_cexp_f64},
        {"rt_clog_f64", (void *)rt_clog_f64}, {"rt_cpow_f64", (void *)rt_cpow_f64},
        {"rt_csqrt_f32", (void *)rt_csqrt_f32}, {"rt_cexp_f32", (void *)rt_cexp_f32},
        {"rt_clog_f32", (void *)rt_clog_f32}, {"rt_cpow_f32", (void *)rt_cpow_f32},
    };
    *count = (int)(sizeof syms / sizeof syms[0]);
    return syms;
}
