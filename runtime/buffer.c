/* buffer.c: array memory. Every buffer compiled code allocates is linked into the call's RtCtx; when the call
 * returns, the shim detaches the buffers that the result refers to (they become NumPy arrays' memory) and
 * rt_ctx_release() frees the rest. So temporaries never outlive a call, and nothing leaks on errors. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "runtime.h"

static _Atomic int64_t n_allocations, n_frees, n_live_bytes;

/* A small cache of freed large blocks. A block of many MiB comes from mmap and goes back on free, so a function
 * that returns a fresh 80 MB array pays for 20 000 page faults on every call (about 30 ms here, more than the
 * arithmetic). Keeping the last few freed large blocks lets the next call of the same shape reuse memory whose
 * pages are already mapped, as CuPy's and PyTorch's memory pools do. Bounded: at most CACHE_SLOTS blocks and
 * cache_limit bytes (LORIKEET_BUFFER_CACHE_MB; 0 turns it off), the oldest evicted first. The default is a
 * sixteenth of the machine's memory, at least 256 MiB and at most 2 GiB: the MNIST distance's 400 MB result
 * (10000 x 10000 float32) was over a fixed 256 MiB, and its fresh pages cost 60 of the call's 79 ms on the H100
 * host (17 ms with the block reused). A block is reused only for a request of at least half its size, so
 * little is wasted. Buffers are freed from any thread, so it is under a mutex. */
#define CACHE_MIN_BYTES ((size_t)1 << 20)
#define CACHE_SLOTS 4
static struct {
    pthread_mutex_t lock;
    void *blocks[CACHE_SLOTS];
    size_t sizes[CACHE_SLOTS];
    uint64_t ages[CACHE_SLOTS], clock; /* when each block was given: the oldest is evicted first */
    size_t bytes;
    int64_t limit; /* -1: not read yet */
} cache = {PTHREAD_MUTEX_INITIALIZER, {0}, {0}, {0}, 0, 0, -1};

static int64_t default_cache_limit(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    int64_t sixteenth = pages > 0 && page > 0 ? (int64_t)pages * page / 16 : 0;
    int64_t lo = (int64_t)256 << 20, hi = (int64_t)2 << 30;
    return sixteenth < lo ? lo : sixteenth > hi ? hi : sixteenth;
}

static size_t cache_limit(void)
{
    if (cache.limit < 0) {
        const char *env = getenv("LORIKEET_BUFFER_CACHE_MB");
        long long mb = env && *env ? atoll(env) : -1;
        cache.limit = mb < 0 ? default_cache_limit() : mb > 0 ? (int64_t)mb << 20 : 0;
    }
    return (size_t)cache.limit;
}

/* A cached block of between size and 2 * size bytes, or NULL. */
static void *cache_take(size_t size)
{
    void *mem = NULL;
    pthread_mutex_lock(&cache.lock);
    int best = -1;
    for (int i = 0; i < CACHE_SLOTS; i++)
        if (cache.blocks[i] && cache.sizes[i] >= size && cache.sizes[i] / 2 <= size &&
            (best < 0 || cache.sizes[i] < cache.sizes[best]))
            best = i;
    if (best >= 0) {
        mem = cache.blocks[best];
        cache.blocks[best] = NULL;
        cache.bytes -= cache.sizes[best];
    }
    pthread_mutex_unlock(&cache.lock);
    return mem;
}

/* Keeps mem (of size bytes), evicting the least recently given blocks to make room (the newest block is the
 * likeliest to be asked for next: the same function called again); a block larger than the whole cache is freed. */
static void cache_give(void *mem, size_t size)
{
    void *evicted[CACHE_SLOTS];
    int nevicted = 0;
    pthread_mutex_lock(&cache.lock);
    if (size >= CACHE_MIN_BYTES && size <= cache_limit()) {
        for (;;) {
            int free_slot = -1, oldest = -1;
            for (int i = 0; i < CACHE_SLOTS; i++) {
                if (!cache.blocks[i]) free_slot = i;
                else if (oldest < 0 || cache.ages[i] < cache.ages[oldest]) oldest = i;
            }
            if (free_slot >= 0 && cache.bytes + size <= cache_limit()) {
                cache.blocks[free_slot] = mem;
                cache.sizes[free_slot] = size;
                cache.ages[free_slot] = ++cache.clock;
                cache.bytes += size;
                mem = NULL;
                break;
            }
            evicted[nevicted++] = cache.blocks[oldest];
            cache.bytes -= cache.sizes[oldest];
            cache.blocks[oldest] = NULL;
        }
    }
    pthread_mutex_unlock(&cache.lock);
    for (int i = 0; i < nevicted; i++) free(evicted[i]);
    free(mem);
}

void rt_buffer_cache_clear(void)
{
    pthread_mutex_lock(&cache.lock);
    for (int i = 0; i < CACHE_SLOTS; i++) {
        free(cache.blocks[i]);
        cache.blocks[i] = NULL;
    }
    cache.bytes = 0;
    pthread_mutex_unlock(&cache.lock);
}

int64_t rt_buffer_cache_limit(void)
{
    pthread_mutex_lock(&cache.lock);
    int64_t limit = (int64_t)cache_limit();
    pthread_mutex_unlock(&cache.lock);
    return limit;
}

int64_t rt_buffer_cache_bytes(void)
{
    pthread_mutex_lock(&cache.lock);
    int64_t bytes = (int64_t)cache.bytes;
    pthread_mutex_unlock(&cache.lock);
    return bytes;
}

RtBuffer *rt_buffer_alloc(RtCtx *ctx, int64_t nbytes)
{
    if (nbytes < 0 || nbytes > ((int64_t)1 << 48)) {
        ctx->err = (RtError){LK_ERR_MEMORY, RT_ERR_MEMORY, 0, -1, {nbytes, 1, 0}};
        return NULL;
    }
    /* header and data in one block; data aligned to 64 bytes for vector loads */
    size_t total = ((size_t)nbytes + 128 + 63) & ~(size_t)63;
    unsigned char *mem = total >= CACHE_MIN_BYTES ? cache_take(total) : NULL;
    if (mem) total = ((RtBuffer *)mem)->capacity;
    else mem = aligned_alloc(64, total);
    if (!mem) {
        ctx->err = (RtError){LK_ERR_MEMORY, RT_ERR_MEMORY, 0, -1, {nbytes, 0, 0}};
        return NULL;
    }
    RtBuffer *b = (RtBuffer *)mem;
    b->magic = RT_BUFFER_MAGIC;
    b->flags = 0; /* host memory (the block may be a reused one: every field is written) */
    b->data = mem + 64;
    b->nbytes = nbytes;
    b->capacity = total;
    b->next = ctx->buffers;
    ctx->buffers = b;
    atomic_fetch_add(&n_allocations, 1);
    atomic_fetch_add(&n_live_bytes, nbytes);
    return b;
}

void rt_buffer_free(RtBuffer *b)
{
    if (!b) return;
    if (b->flags & RT_BUFFER_DEVICE) { /* a header of its own; the data is device memory (gpu_memory.c counts it) */
        rt_gpu_free((uint64_t)(uintptr_t)b->data);
        b->magic = 0;
        free(b);
        return;
    }
    atomic_fetch_add(&n_frees, 1);
    atomic_fetch_sub(&n_live_bytes, b->nbytes);
    b->magic = 0;
    if (b->capacity >= CACHE_MIN_BYTES) cache_give(b, b->capacity);
    else free(b);
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
    rt_text_free(ctx);
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
