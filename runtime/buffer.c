/* buffer.c: array memory. Every buffer compiled code allocates is linked into the call's RtCtx; when the call
 * returns, the shim detaches the buffers that the result refers to (they become NumPy arrays' memory) and
 * rt_ctx_release() frees the rest. So temporaries never outlive a call, and nothing leaks on errors. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "runtime.h"

static _Atomic int64_t n_allocations, n_frees, n_live_bytes;

RtBuffer *rt_buffer_alloc(RtCtx *ctx, int64_t nbytes)
{
    if (nbytes < 0 || nbytes > ((int64_t)1 << 48)) {
        ctx->status = LK_ERR_MEMORY;
        lk_diag_set(&ctx->diag, LK_ERR_MEMORY, "", 0, 0, "cannot allocate an array of %lld bytes", (long long)nbytes);
        return NULL;
    }
    /* header and data in one block; data aligned to 64 bytes for vector loads */
    size_t total = (size_t)nbytes + 128;
    unsigned char *mem = aligned_alloc(64, (total + 63) & ~(size_t)63);
    if (!mem) {
        ctx->status = LK_ERR_MEMORY;
        lk_diag_set(&ctx->diag, LK_ERR_MEMORY, "", 0, 0, "out of memory allocating an array of %lld bytes", (long long)nbytes);
        return NULL;
    }
    RtBuffer *b = (RtBuffer *)mem;
    b->magic = RT_BUFFER_MAGIC;
    b->data = mem + 64;
    b->nbytes = nbytes;
    b->next = ctx->buffers;
    ctx->buffers = b;
    atomic_fetch_add(&n_allocations, 1);
    atomic_fetch_add(&n_live_bytes, nbytes);
    return b;
}

void rt_buffer_free(RtBuffer *b)
{
    if (!b) return;
    atomic_fetch_add(&n_frees, 1);
    atomic_fetch_sub(&n_live_bytes, b->nbytes);
    b->magic = 0;
    free(b);
}

void rt_ctx_release(RtCtx *ctx)
{
    RtBuffer *b = ctx->buffers;
    while (b) {
        RtBuffer *next = b->next;
        rt_buffer_free(b);
        b = next;
    }
    ctx->buffers = NULL;
}

int rt_is_buffer_of(RtCtx *ctx, const void *base)
{
    for (RtBuffer *b = ctx->buffers; b; b = b->next)
        if (b == base) return 1;
    return 0;
}

void rt_buffer_detach(RtCtx *ctx, RtBuffer *target)
{
    for (RtBuffer **p = &ctx->buffers; *p; p = &(*p)->next)
        if (*p == target) {
            *p = target->next;
            target->next = NULL;
            return;
        }
}

RtStats rt_stats(void)
{
    RtStats s = {atomic_load(&n_allocations), atomic_load(&n_frees), atomic_load(&n_live_bytes)};
    return s;
}
