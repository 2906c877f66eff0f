/* parallel.c: running a loop's iterations on a team of threads, for the openmp backend.
 *
 * The OpenMP runtime is GCC's libgomp, loaded once with dlopen at the first parallel loop, so lorikeet builds and
 * runs where it is missing (loops then run on one thread). Compiled code calls rt_parallel_for with an outlined
 * chunk function; the threads take contiguous chunks of the iterations from a shared counter (a few chunks per
 * thread, see run_member), each chunk with a context of its own (its errors and its allocations), merged into
 * the caller's in chunk order when the team joins. Loops with too little
 * work to pay for waking the team run on the calling thread.
 *
 * Fork safety: a child process made by fork() while a team exists cannot use libgomp's threads; after fork the
 * child runs every loop on one thread. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "runtime.h"

typedef void (*GompParallel)(void (*fn)(void *), void *data, unsigned num_threads, unsigned flags);

static GompParallel gomp_parallel;
static _Thread_local int in_team; /* this thread is running a chunk: a loop it reaches runs on it alone */
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_error[256];
static _Atomic int num_threads;       /* 0: not decided yet */
static _Atomic int64_t threshold = 300000; /* work (elements x cost, see backends/llvm/outline.c) below which a
                                              * loop stays on one thread: the measured break-even */
static _Atomic int forked;

static void after_fork_child(void)
{
    atomic_store(&forked, 1);
}

static void load_gomp(void)
{
    const char *thr = getenv("LORIKEET_PARALLEL_THRESHOLD");
    if (thr && *thr) atomic_store(&threshold, atoll(thr));
    void *h = dlopen("libgomp.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(load_error, sizeof load_error, "libgomp.so.1 could not be loaded: %s", dlerror());
        return;
    }
    gomp_parallel = (GompParallel)dlsym(h, "GOMP_parallel");
    if (!gomp_parallel) {
        gomp_parallel = NULL;
        snprintf(load_error, sizeof load_error, "libgomp.so.1 lacks GOMP_parallel");
    }
    pthread_atfork(NULL, NULL, after_fork_child);
}

static int default_threads(void)
{
    const char *env = getenv("LORIKEET_NUM_THREADS");
    if (!env || !*env) env = getenv("OMP_NUM_THREADS");
    int n = env ? atoi(env) : 0;
    if (n <= 0) n = (int)sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > RT_MAX_THREADS ? RT_MAX_THREADS : n;
}

int rt_get_num_threads(void)
{
    int n = atomic_load(&num_threads);
    if (n == 0) {
        n = default_threads();
        atomic_store(&num_threads, n);
    }
    return n;
}

void rt_set_num_threads(int n)
{
    atomic_store(&num_threads, n < 1 ? 1 : n > RT_MAX_THREADS ? RT_MAX_THREADS : n);
}

void rt_set_parallel_threshold(int64_t work)
{
    pthread_once(&load_once, load_gomp); /* so that $LORIKEET_PARALLEL_THRESHOLD, read there, cannot undo this */
    atomic_store(&threshold, work < 0 ? 0 : work);
}

int64_t rt_get_parallel_threshold(void)
{
    pthread_once(&load_once, load_gomp); /* reads $LORIKEET_PARALLEL_THRESHOLD once */
    return atomic_load(&threshold);
}

const char *rt_parallel_unavailable(void)
{
    pthread_once(&load_once, load_gomp);
    return gomp_parallel ? NULL : load_error;
}

typedef struct Team {
    RtChunkFn fn;
    void *data;
    int64_t n;
    int nchunks;
    RtCtx *ctxs;
    int *status;
    _Atomic int next; /* the next chunk nobody has taken */
} Team;

/* The iterations are cut into CHUNKS_PER_THREAD contiguous chunks per thread, which the members take in order
 * from a shared counter (dynamic scheduling): a thread that the OS or the hypervisor preempts, or one whose
 * core is shared with another process, delays only the chunk it holds, and the others take the rest. Chunk c
 * always covers the same iterations and writes slot c of per-chunk results (partial sums, scan totals,
 * contexts), which are combined in chunk order: results do not depend on which thread ran what. */
#define CHUNKS_PER_THREAD 4

static void run_member(void *arg)
{
    Team *t = arg;
    in_team = 1;
    int64_t per = t->n / t->nchunks, extra = t->n % t->nchunks;
    for (int c = atomic_fetch_add(&t->next, 1); c < t->nchunks; c = atomic_fetch_add(&t->next, 1)) {
        int64_t lo = c * per + (c < extra ? c : extra);
        int64_t hi = lo + per + (c < extra ? 1 : 0);
        t->status[c] = lo < hi ? t->fn(&t->ctxs[c], t->data, lo, hi, c) : 0;
    }
    in_team = 0;
}

int rt_parallel_threads(int64_t n, int64_t work)
{
    int nthreads = rt_get_num_threads();
    if (n < nthreads) nthreads = (int)(n > 0 ? n : 1);
    if (nthreads <= 1 || in_team || work < atomic_load(&threshold) || atomic_load(&forked) || rt_parallel_unavailable())
        return 1;
    return nthreads;
}

/* Every chunk 0 .. *count-1 runs (none is empty, except the one chunk of an empty loop), so compiled code may
 * combine exactly the slots the chunks wrote. */
static int run_chunks(RtCtx *ctx, RtChunkFn fn, void *data, int64_t n, int64_t work, int per_thread, int64_t *count)
{
    int nthreads = rt_parallel_threads(n, work);
    if (nthreads == 1) {
        *count = 1;
        return fn(ctx, data, 0, n, 0);
    }
    int64_t nchunks = (int64_t)nthreads * (per_thread < 1 ? 1 : per_thread);
    if (nchunks > RT_MAX_CHUNKS) nchunks = RT_MAX_CHUNKS;
    if (nchunks > n) nchunks = n;
    *count = nchunks;
    RtCtx ctxs[RT_MAX_CHUNKS];
    int status[RT_MAX_CHUNKS];
    for (int i = 0; i < nchunks; i++) {
        ctxs[i].err.status = LK_OK;
        ctxs[i].buffers = NULL;
        ctxs[i].printed = NULL;
        status[i] = 0;
    }
    Team team = {fn, data, n, (int)nchunks, ctxs, status, 0};
    gomp_parallel(run_member, &team, (unsigned)nthreads, 0);
    /* the chunks' allocations join the call's list; the lowest failed chunk's error record becomes the call's
     * (chunk c covers iterations before chunk c + 1's, and stops at its first error: so this is the first error
     * in iteration order, whatever the thread count and whichever thread failed first). What the chunks
     * printed joins in chunk order, up to that chunk's: what a sequential run prints before its error. */
    int result = 0;
    for (int i = 0; i < nchunks; i++) {
        if (!result) rt_text_join(ctx, &ctxs[i]);
        else rt_text_free(&ctxs[i]);
        RtBuffer *b = ctxs[i].buffers;
        while (b) {
            RtBuffer *next = b->next;
            b->next = ctx->buffers;
            ctx->buffers = b;
            b = next;
        }
        if (status[i] && !result) {
            result = status[i];
            ctx->err = ctxs[i].err;
        }
    }
    return result;
}

int rt_parallel_for(RtCtx *ctx, RtChunkFn fn, void *data, int64_t n, int64_t work, int64_t *nchunks)
{
    return run_chunks(ctx, fn, data, n, work, CHUNKS_PER_THREAD, nchunks);
}

int rt_parallel_for_chunks(RtCtx *ctx, RtChunkFn fn, void *data, int64_t n, int64_t work, int per_thread)
{
    int64_t nchunks;
    return run_chunks(ctx, fn, data, n, work, per_thread, &nchunks);
}
