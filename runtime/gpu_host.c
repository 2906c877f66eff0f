/* gpu_host.c: the intrinsics the gpu backend's host code runs on the host, the data moved each way: a sort along
 * an axis (rt_sort: np.sort, argsort, median, percentile, unique, histogram, a searchsorted's sorter) and
 * np.linalg's factorisations (rt_linalg), and np.random's draws into an array (rt_rng_fill: the generator's
 * state is host memory, and draws run in host code only, in program order). Each copies the bytes its device operands span (any strides: the span
 * from the lowest to the highest element) to host memory, runs the host function there, and copies the result,
 * C-contiguous, into its device output; the copies wait, so the output is complete when they return, and later
 * kernels on the thread's stream read it. Small dense problems, as NumPy's own are: the copies are the price of
 * not refusing them. The results are the cpu backend's, bit for bit. */
#include <stdlib.h>
#include "gpu_internal.h"

/* the bytes [lo, hi) around a view's data pointer that its elements occupy; false when it has none */
static bool span_of(int nd, const int64_t *shape, const int64_t *strides, int64_t itemsize, int64_t *lo, int64_t *hi)
{
    *lo = 0;
    *hi = itemsize;
    for (int d = 0; d < nd; d++) {
        if (shape[d] <= 0) return false;
        int64_t ext = (shape[d] - 1) * strides[d];
        if (ext < 0) *lo += ext;
        else *hi += ext;
    }
    return true;
}

static int memory_error(RtCtx *ctx, int64_t need)
{
    ctx->err = (RtError){.status = LK_ERR_MEMORY, .code = RT_ERR_MEMORY, .where = -1, .extra = {need, 0, 0}};
    return -1;
}

/* A host copy of a device view: the host address of its data pointer, inside *block (malloc'ed; NULL when the
 * view is empty). NULL with ctx->err set when it fails. */
static char *view_to_host(RtCtx *ctx, const char *dev, int nd, const int64_t *shape, const int64_t *strides,
                          int64_t itemsize, void **block)
{
    static char empty;
    int64_t lo, hi;
    *block = NULL;
    if (!dev || !span_of(nd, shape, strides, itemsize, &lo, &hi)) return &empty;
    if (!(*block = malloc((size_t)(hi - lo)))) {
        memory_error(ctx, hi - lo);
        return NULL;
    }
    LkDiag diag = {0};
    if (rt_gpu_copy_to_host(*block, (uint64_t)(uintptr_t)(dev + lo), hi - lo, &diag) < 0) {
        free(*block);
        *block = NULL;
        gpu_fail(ctx, &diag);
        return NULL;
    }
    return (char *)*block - lo;
}

static int to_device(RtCtx *ctx, char *dev, const void *host, int64_t nbytes)
{
    LkDiag diag = {0};
    if (rt_gpu_copy_to_device((uint64_t)(uintptr_t)dev, host, nbytes, &diag) == 0) return 0;
    gpu_fail(ctx, &diag);
    return -1;
}

int rt_gpu_sort(RtCtx *ctx, int32_t key, int32_t argsort, const char *src, const int64_t *shape, const int64_t *strides,
                int32_t ndim, int32_t axis, char *dst)
{
    int64_t itemsize = key % 16, n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    int64_t out_bytes = n * (argsort ? 8 : itemsize);
    void *block;
    const char *host_src = view_to_host(ctx, src, ndim, shape, strides, itemsize, &block);
    if (!host_src) return -1;
    char *host_dst = malloc(out_bytes > 0 ? (size_t)out_bytes : 1);
    if (!host_dst) {
        free(block);
        return memory_error(ctx, out_bytes);
    }
    int rc = rt_sort(ctx, key, argsort, host_src, shape, strides, ndim, axis, host_dst);
    if (rc == 0 && out_bytes > 0 && to_device(ctx, dst, host_dst, out_bytes) < 0) rc = -1;
    free(host_dst);
    free(block);
    return rc;
}

int rt_gpu_linalg(RtCtx *ctx, int32_t op, int32_t is_f32, const char *a, int64_t as0, int64_t as1, int64_t rows,
                  int64_t cols, const char *b, int64_t bs0, int64_t bs1, int64_t brows, int64_t bcols, char *out,
                  double *det)
{
    int64_t itemsize = is_f32 ? 4 : 8;
    int64_t ashape[2] = {rows, cols}, astrides[2] = {as0, as1}, bshape[2] = {brows, bcols}, bstrides[2] = {bs0, bs1};
    void *ablock = NULL, *bblock = NULL;
    const char *ha = view_to_host(ctx, a, 2, ashape, astrides, itemsize, &ablock);
    const char *hb = ha && b ? view_to_host(ctx, b, 2, bshape, bstrides, itemsize, &bblock) : NULL;
    int64_t out_bytes = !out ? 0 : (op == RT_LINALG_SOLVE ? brows * bcols : rows * cols) * itemsize;
    char *hout = ha && (hb || !b) && out ? malloc(out_bytes > 0 ? (size_t)out_bytes : 1) : NULL;
    int rc = -1;
    if (!ha || (b && !hb)) {
        rc = -1;
    } else if (out && !hout) {
        rc = memory_error(ctx, out_bytes);
    } else {
        rc = rt_linalg(ctx, op, is_f32, ha, as0, as1, rows, cols, b ? hb : NULL, bs0, bs1, brows, bcols, hout, det);
        if (rc == RT_LINALG_OK && out && out_bytes > 0 && to_device(ctx, out, hout, out_bytes) < 0) rc = -1;
    }
    free(hout);
    free(bblock);
    free(ablock);
    return rc;
}

int rt_gpu_rng_fill(RtRng *g, int32_t method, int32_t elsize, double a, double b, int64_t lo, int64_t hi,
                    const int64_t *shape, int32_t ndim, void *out, RtCtx *ctx)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d] > 0 ? shape[d] : 0;
    void *host = malloc(n * elsize > 0 ? (size_t)(n * elsize) : 1);
    if (!host) {
        memory_error(ctx, n * elsize);
        return RT_RNG_COPY_FAILED;
    }
    int rc = rt_rng_fill(g, method, elsize, a, b, lo, hi, shape, ndim, host);
    if (rc == 0 && n > 0 && to_device(ctx, out, host, n * elsize) < 0) rc = RT_RNG_COPY_FAILED;
    free(host);
    return rc;
}
