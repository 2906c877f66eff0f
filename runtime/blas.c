/* blas.c: float32/float64 matrix products through the BLAS that NumPy has already loaded into the process, with
 * gemm.c's own kernel as the fallback (no BLAS found, LORIKEET_BLAS=0, sizes an LP64 BLAS cannot take, tiny
 * products). Compiled code calls rt_matmul by name and never holds an address of the BLAS, so a cached object
 * works in a process whose BLAS is another or absent.
 *
 * Finding it: NumPy is imported before any compiled call, so its BLAS is mapped. The first product walks the
 * loaded objects (dl_iterate_phdr), reopens each with RTLD_NOLOAD and takes the first that exports a cblas_dgemm
 * under one of the name schemes below (NumPy 2.x wheels: scipy_cblas_dgemm64_, ILP64; distro and older builds:
 * cblas_dgemm, LP64). dladdr names the object that really defines it (dlsym on a handle also searches its
 * dependencies).
 *
 * The calls are NumPy's own (numpy/_core/src/umath/matmul.c.src): the same routine (gemm, syrk for a @ a.T,
 * gemv), the same order and transposition flags, the same copies of operands a BLAS cannot take, so a product
 * equals NumPy's a @ b made with the BLAS on one thread, bit for bit.
 *
 * Threads: the bits of OpenBLAS's gemm and gemv depend on its thread count (its split moves the kernels' edge
 * tiles; measured with 0.3.31 on SkylakeX), so every call here runs on one BLAS thread, and the openmp backend
 * puts tiles of the result starting at multiples of 192 rows and columns on its team, a one-thread call each: the cpu and openmp
 * backends agree bit for bit. The BLAS's count is process-wide: it is set to 1 when the first product in flight
 * enters and restored when the last leaves (a count of users under a mutex, so concurrent products, those of a
 * prange body included, neither wait for each other nor restore a count another set). A NumPy call in another
 * Python thread meanwhile runs on one BLAS thread: slower, and with the bits of a one-thread call.
 *
 * Never fails: where a copy cannot be allocated it falls back to the own kernel, which needs no memory. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime.h"

enum { ROW_MAJOR = 101, COL_MAJOR = 102, NO_TRANS = 111, TRANS = 112, UPPER = 121 };

/* The products below this many multiply-adds stay on the own path. Measured on the 2-core machine (AMD EPYC,
 * AVX-512, OpenBLAS 0.3.31), a call costs about 0.4 us whatever its size (the call, its argument checks, the
 * thread count set and restored): more than an 8 x 8 matrix-vector product on the own path (0.3 us), less than
 * a 16 x 16 one, and less than the own GEMM from 4 x 4 x 4 on (whose packing buffers cost more). */
#define MIN_WORK 128

/* One BLAS, its integer width hidden behind the wrappers below (ilp64: 64-bit ints, else 32-bit). */
typedef struct Blas {
    int ilp64;
    void *dgemm, *sgemm, *dgemv, *sgemv, *dsyrk, *ssyrk;
    int (*get_threads)(void);
    void (*set_threads)(int);
    char library[512], scheme[64];
} Blas;

static Blas blas;
static int blas_found;
static char why_not[256] = "not looked for yet";
static pthread_once_t find_once = PTHREAD_ONCE_INIT;
static _Atomic int enabled = -1; /* -1: LORIKEET_BLAS not read yet */
static _Atomic int64_t blas_calls;

/* name schemes: symbol = prefix + name + suffix */
static const struct { const char *prefix, *suffix; int ilp64; } schemes[] = {
    {"scipy_", "64_", 1}, /* NumPy 2.x wheels: scipy-openblas64 */
    {"", "64_", 1},       /* OpenBLAS built with INTERFACE64 and the 64_ suffix (Debian's libopenblas64) */
    {"scipy_", "", 0},    /* scipy-openblas32 */
    {"", "", 0},          /* libopenblas, libblas/cblas, MKL's LP64 interface */
};

static void *sym(void *h, int s, const char *name)
{
    char full[128];
    snprintf(full, sizeof full, "%s%s%s", schemes[s].prefix, name, schemes[s].suffix);
    return dlsym(h, full);
}

/* The BLAS of the loaded object at path under scheme s, or 0. */
static int try_object(const char *path, int s)
{
    void *h = dlopen(path, RTLD_NOLOAD | RTLD_LAZY);
    if (!h) return 0;
    Blas b = {.ilp64 = schemes[s].ilp64};
    b.dgemm = sym(h, s, "cblas_dgemm");
    b.sgemm = sym(h, s, "cblas_sgemm");
    b.dgemv = sym(h, s, "cblas_dgemv");
    b.sgemv = sym(h, s, "cblas_sgemv");
    b.dsyrk = sym(h, s, "cblas_dsyrk");
    b.ssyrk = sym(h, s, "cblas_ssyrk");
    if (!(b.dgemm && b.sgemm && b.dgemv && b.sgemv && b.dsyrk && b.ssyrk)) {
        dlclose(h);
        return 0;
    }
    b.get_threads = (int (*)(void))sym(h, s, "openblas_get_num_threads");
    b.set_threads = (void (*)(int))sym(h, s, "openblas_set_num_threads");
    if (!b.get_threads || !b.set_threads) { /* MKL's LP64 interface */
        b.get_threads = (int (*)(void))dlsym(h, "MKL_Get_Max_Threads");
        b.set_threads = (void (*)(int))dlsym(h, "MKL_Set_Num_Threads");
    }
    if (!b.get_threads || !b.set_threads) b.get_threads = NULL, b.set_threads = NULL;
    Dl_info info;
    snprintf(b.library, sizeof b.library, "%s", dladdr(b.dgemm, &info) && info.dli_fname ? info.dli_fname : path);
    snprintf(b.scheme, sizeof b.scheme, "%scblas_dgemm%s", schemes[s].prefix, schemes[s].suffix);
    blas = b; /* the handle stays open: the object is NumPy's and stays loaded while the process runs */
    return 1;
}

/* The loaded objects' paths, gathered first and opened after: dl_iterate_phdr holds the loader's lock while it
 * calls back, and dlopen is not called under it. */
typedef struct Loaded {
    char **paths;
    int n, cap;
} Loaded;

static int gather_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    Loaded *l = data;
    if (!info->dlpi_name || !*info->dlpi_name) return 0; /* the program itself, the vDSO */
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        char **p = realloc(l->paths, sizeof *p * (size_t)cap);
        if (!p) return 1;
        l->paths = p, l->cap = cap;
    }
    if ((l->paths[l->n] = strdup(info->dlpi_name))) l->n++;
    return 0;
}

static void find_blas(void)
{
    Loaded l = {0};
    dl_iterate_phdr(gather_object, &l);
    for (int s = 0; s < (int)(sizeof schemes / sizeof schemes[0]) && !blas_found; s++)
        for (int i = 0; i < l.n && !blas_found; i++) blas_found = try_object(l.paths[i], s);
    for (int i = 0; i < l.n; i++) free(l.paths[i]);
    free(l.paths);
    if (!blas_found)
        snprintf(why_not, sizeof why_not, "no loaded library exports cblas_dgemm (import numpy first)");
    else
        why_not[0] = 0;
}

static int is_enabled(void)
{
    int e = atomic_load(&enabled);
    if (e < 0) {
        const char *env = getenv("LORIKEET_BLAS");
        e = !(env && strcmp(env, "0") == 0);
        atomic_store(&enabled, e);
    }
    return e;
}

void rt_blas_set_enabled(int on)
{
    atomic_store(&enabled, on != 0);
}

RtBlasInfo rt_blas_info(void)
{
    pthread_once(&find_once, find_blas);
    RtBlasInfo r = {NULL, NULL, 0, 0, is_enabled(), atomic_load(&blas_calls), NULL};
    if (blas_found) {
        r.library = blas.library;
        r.symbol = blas.scheme;
        r.ilp64 = blas.ilp64;
        r.threads_control = blas.set_threads != NULL;
    } else {
        r.why_not = why_not;
    }
    return r;
}

/* ---- the thread count, process-wide: set on entry, restored when the last product in flight leaves ---- */

static pthread_mutex_t threads_lock = PTHREAD_MUTEX_INITIALIZER;
static int users, saved_threads, current_threads;

static void threads_enter(int want)
{
    if (!blas.set_threads) return;
    pthread_mutex_lock(&threads_lock);
    if (users++ == 0) saved_threads = current_threads = blas.get_threads();
    if (current_threads != want) blas.set_threads(current_threads = want);
    pthread_mutex_unlock(&threads_lock);
}

static void threads_leave(void)
{
    if (!blas.set_threads) return;
    pthread_mutex_lock(&threads_lock);
    if (--users == 0 && current_threads != saved_threads) blas.set_threads(saved_threads);
    pthread_mutex_unlock(&threads_lock);
}

/* ---- the calls, in either integer width ---- */

typedef void (*Gemm64)(int, int, int, int64_t, int64_t, int64_t, double, const void *, int64_t, const void *, int64_t,
                       double, void *, int64_t);
typedef void (*Gemm32)(int, int, int, int32_t, int32_t, int32_t, double, const void *, int32_t, const void *, int32_t,
                       double, void *, int32_t);
typedef void (*Gemm64f)(int, int, int, int64_t, int64_t, int64_t, float, const void *, int64_t, const void *, int64_t,
                        float, void *, int64_t);
typedef void (*Gemm32f)(int, int, int, int32_t, int32_t, int32_t, float, const void *, int32_t, const void *, int32_t,
                        float, void *, int32_t);
typedef void (*Gemv64)(int, int, int64_t, int64_t, double, const void *, int64_t, const void *, int64_t, double, void *,
                       int64_t);
typedef void (*Gemv32)(int, int, int32_t, int32_t, double, const void *, int32_t, const void *, int32_t, double, void *,
                       int32_t);
typedef void (*Gemv64f)(int, int, int64_t, int64_t, float, const void *, int64_t, const void *, int64_t, float, void *,
                        int64_t);
typedef void (*Gemv32f)(int, int, int32_t, int32_t, float, const void *, int32_t, const void *, int32_t, float, void *,
                        int32_t);
typedef void (*Syrk64)(int, int, int, int64_t, int64_t, double, const void *, int64_t, double, void *, int64_t);
typedef void (*Syrk32)(int, int, int, int32_t, int32_t, double, const void *, int32_t, double, void *, int32_t);
typedef void (*Syrk64f)(int, int, int, int64_t, int64_t, float, const void *, int64_t, float, void *, int64_t);
typedef void (*Syrk32f)(int, int, int, int32_t, int32_t, float, const void *, int32_t, float, void *, int32_t);

static void call_gemm(int f32, int ta, int tb, int64_t m, int64_t n, int64_t k, const void *A, int64_t lda,
                      const void *B, int64_t ldb, void *C, int64_t ldc)
{
    if (f32 && blas.ilp64) ((Gemm64f)blas.sgemm)(ROW_MAJOR, ta, tb, m, n, k, 1.f, A, lda, B, ldb, 0.f, C, ldc);
    else if (f32) ((Gemm32f)blas.sgemm)(ROW_MAJOR, ta, tb, (int32_t)m, (int32_t)n, (int32_t)k, 1.f, A, (int32_t)lda, B, (int32_t)ldb, 0.f, C, (int32_t)ldc);
    else if (blas.ilp64) ((Gemm64)blas.dgemm)(ROW_MAJOR, ta, tb, m, n, k, 1., A, lda, B, ldb, 0., C, ldc);
    else ((Gemm32)blas.dgemm)(ROW_MAJOR, ta, tb, (int32_t)m, (int32_t)n, (int32_t)k, 1., A, (int32_t)lda, B, (int32_t)ldb, 0., C, (int32_t)ldc);
}

static void call_gemv(int f32, int order, int64_t rows, int64_t cols, const void *A, int64_t lda, const void *x,
                      int64_t incx, void *y)
{
    if (f32 && blas.ilp64) ((Gemv64f)blas.sgemv)(order, TRANS, rows, cols, 1.f, A, lda, x, incx, 0.f, y, 1);
    else if (f32) ((Gemv32f)blas.sgemv)(order, TRANS, (int32_t)rows, (int32_t)cols, 1.f, A, (int32_t)lda, x, (int32_t)incx, 0.f, y, 1);
    else if (blas.ilp64) ((Gemv64)blas.dgemv)(order, TRANS, rows, cols, 1., A, lda, x, incx, 0., y, 1);
    else ((Gemv32)blas.dgemv)(order, TRANS, (int32_t)rows, (int32_t)cols, 1., A, (int32_t)lda, x, (int32_t)incx, 0., y, 1);
}

static void call_syrk(int f32, int trans, int64_t n, int64_t k, const void *A, int64_t lda, void *C, int64_t ldc)
{
    if (f32 && blas.ilp64) ((Syrk64f)blas.ssyrk)(ROW_MAJOR, UPPER, trans, n, k, 1.f, A, lda, 0.f, C, ldc);
    else if (f32) ((Syrk32f)blas.ssyrk)(ROW_MAJOR, UPPER, trans, (int32_t)n, (int32_t)k, 1.f, A, (int32_t)lda, 0.f, C, (int32_t)ldc);
    else if (blas.ilp64) ((Syrk64)blas.dsyrk)(ROW_MAJOR, UPPER, trans, n, k, 1., A, lda, 0., C, ldc);
    else ((Syrk32)blas.dsyrk)(ROW_MAJOR, UPPER, trans, (int32_t)n, (int32_t)k, 1., A, (int32_t)lda, 0., C, (int32_t)ldc);
}

/* ---- NumPy's choices (matmul.c.src) ---- */

/* A BLAS takes a d1 x d2 matrix with these byte strides: the second is the element, the first a whole row. */
static int blasable(int64_t s1, int64_t s2, int64_t d1, int64_t d2, int64_t sz, int64_t maxsize)
{
    return s2 == sz && s1 % sz == 0 && s1 / sz >= d2 && s1 / sz <= maxsize;
}

/* The r x c matrix at X (byte strides s0, s1) copied C-ordered (or F-ordered when f_order) into dst. */
static void copy_matrix(int f32, const char *X, int64_t s0, int64_t s1, int64_t r, int64_t c, int f_order, char *dst)
{
    int64_t sz = f32 ? 4 : 8;
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < c; j++)
            memcpy(dst + (f_order ? j * r + i : i * c + j) * sz, X + i * s0 + j * s1, (size_t)sz);
}

typedef struct Operand {
    const char *p;
    int64_t s0, s1; /* byte strides */
} Operand;

/* An operand's trans flag and leading dimension, copied first into *copy where no BLAS can take it (NumPy's
 * orientation: F order where its column stride is the smaller). 0, or -1 when the copy cannot be allocated. */
static int prepare(int f32, Operand *x, int64_t r, int64_t c, int64_t maxsize, int *trans, int64_t *ld, char **copy)
{
    int64_t sz = f32 ? 4 : 8;
    if (!blasable(x->s0, x->s1, r, c, sz, maxsize) && !blasable(x->s1, x->s0, c, r, sz, maxsize)) {
        int f_order = llabs(x->s0) < llabs(x->s1);
        if (!(*copy = malloc((size_t)(r * c * sz)))) return -1;
        copy_matrix(f32, x->p, x->s0, x->s1, r, c, f_order, *copy);
        x->p = *copy;
        x->s0 = f_order ? sz : c * sz;
        x->s1 = f_order ? r * sz : sz;
    }
    if (blasable(x->s0, x->s1, r, c, sz, maxsize)) {
        *trans = NO_TRANS;
        *ld = x->s0 / sz;
    } else {
        *trans = TRANS;
        *ld = x->s1 / sz;
    }
    return 0;
}

/* The openmp backend's gemm: tiles of C on the team, each a single-threaded gemm. OpenBLAS's own threading
 * changes the bits of a dgemm (its edge tiles move with the split: measured with OpenBLAS 0.3.31 on SkylakeX),
 * while calls on tiles whose rows and columns start at multiples of 192 (a multiple of every kernel's unroll)
 * give each element the sums it gets in one call (checked on both splits, float32 and float64, 17 to 4000 wide).
 * Each call is kept above 2^21 multiply-adds, as OpenBLAS's small-matrix kernels (a different order) take
 * products below 100^3, and the last tile of a row or column takes what is left over. Tiles are blocks of whole
 * rows, or 192 columns wide where rows alone would leave threads idle (plan_tiles); 192 tall where k allows,
 * taller where k is small. */
#define TILE 192
#define MIN_TILE_WORK (1 << 21)

typedef struct TilesJob {
    int f32, ta, tb;
    Operand a, b;
    int64_t lda, ldb, m, n, k, rows, cols, row_tiles, col_tiles;
    char *C;
} TilesJob;

static int gemm_tiles(RtCtx *ctx, void *data, int64_t lo, int64_t hi, int tid)
{
    (void)ctx, (void)tid;
    TilesJob *j = data;
    int64_t sz = j->f32 ? 4 : 8;
    for (int64_t t = lo; t < hi; t++) {
        int64_t ti = t / j->col_tiles, tj = t % j->col_tiles;
        int64_t r0 = ti * j->rows, r1 = ti == j->row_tiles - 1 ? j->m : r0 + j->rows;
        int64_t c0 = tj * j->cols, c1 = tj == j->col_tiles - 1 ? j->n : c0 + j->cols;
        call_gemm(j->f32, j->ta, j->tb, r1 - r0, c1 - c0, j->k, j->a.p + r0 * j->a.s0, j->lda, j->b.p + c0 * j->b.s1,
                  j->ldb, j->C + (r0 * j->n + c0) * sz, j->n);
    }
    return 0;
}

/* How C is cut for the team: blocks of whole rows where there are at least as many as threads (each call packs
 * all of b once; tiles would pack a and b once per tile column and row: 4000 x 4000 on 16 threads ran 1.4x
 * slower as 400 tiles than as 21 row blocks), else tiles of TILE columns too (1000 x 1000 is 5 row blocks:
 * 5 threads busy of 16). The number of calls, 1 where a call would fall under MIN_TILE_WORK. */
static int64_t plan_tiles(TilesJob *job, int threads)
{
    int64_t m = job->m, n = job->n, k = job->k;
    job->cols = n;
    job->col_tiles = 1;
    job->rows = TILE * ((MIN_TILE_WORK + TILE * n * k - 1) / (TILE * n * k));
    job->row_tiles = m / job->rows > 1 ? m / job->rows : 1;
    if (job->row_tiles < threads && n / TILE > 1) {
        job->cols = TILE;
        job->col_tiles = n / TILE;
        job->rows = TILE * ((MIN_TILE_WORK + TILE * TILE * k - 1) / (TILE * TILE * k));
        job->row_tiles = m / job->rows > 1 ? m / job->rows : 1;
    }
    int64_t lowest = (job->row_tiles == 1 ? m : job->rows) * job->cols * k; /* the smallest call's work */
    return lowest >= MIN_TILE_WORK ? job->row_tiles * job->col_tiles : 1;
}

/* m x n = (m x k) @ (k x n), m, n > 1, k > 0: gemm, or syrk where b is a's transpose (on one thread: its split
 * is not the same as gemm's). 1 when done, 0 when the copies cannot be allocated, or an error status < 0. */
static int blas_matrix_matrix(RtCtx *ctx, int on_team, int f32, Operand a, Operand b, void *C, int64_t m, int64_t n,
                              int64_t k, int64_t maxsize)
{
    int ta, tb, rc = 1;
    int64_t lda, ldb;
    char *ca = NULL, *cb = NULL;
    if (prepare(f32, &a, m, k, maxsize, &ta, &lda, &ca) || prepare(f32, &b, k, n, maxsize, &tb, &ldb, &cb)) {
        rc = 0;
    } else if (a.p == b.p && m == n && a.s0 == b.s1 && a.s1 == b.s0 && ta != tb) {
        call_syrk(f32, ta, n, k, a.p, ta == NO_TRANS ? lda : ldb, C, n);
        int64_t sz = f32 ? 4 : 8;
        for (int64_t i = 0; i < n; i++) /* the lower triangle from the upper */
            for (int64_t j = i + 1; j < n; j++) memcpy((char *)C + (j * n + i) * sz, (char *)C + (i * n + j) * sz, (size_t)sz);
    } else {
        TilesJob job = {f32, ta, tb, a, b, lda, ldb, m, n, k, 0, 0, 0, 0, C};
        int64_t tiles = plan_tiles(&job, on_team ? rt_get_num_threads() : 1);
        if (on_team && tiles >= 2) {
            int status = rt_parallel_for_chunks(ctx, gemm_tiles, &job, tiles, 2 * m * n * k, 1);
            if (status) rc = -status;
        } else {
            call_gemm(f32, ta, tb, m, n, k, a.p, lda, b.p, ldb, C, n);
        }
    }
    free(ca);
    free(cb);
    return rc;
}

/* y (rows, contiguous) = M (rows x cols, byte strides s0, s1) @ x (byte stride sx), NumPy's gemv. OpenBLAS's own
 * gemv threads change the bits too (999 x 500 on three threads). float64: on the team, blocks of TILE
 * elements of y a one-thread call each, which keeps them (checked on products up to 4000 x 4000). float32: one
 * call on one thread, as sgemv's bits change with any split of y (measured: blocks of 64 to 1024). */
typedef struct GemvJob {
    int f32, order;
    const char *M, *x;
    int64_t s0, ld, incx, rows, cols;
    char *y;
} GemvJob;

static int gemv_rows(RtCtx *ctx, void *data, int64_t lo, int64_t hi, int tid)
{
    (void)ctx, (void)tid;
    GemvJob *j = data;
    int64_t blocks = j->rows / TILE, r0 = lo * TILE, r1 = hi == blocks ? j->rows : hi * TILE;
    call_gemv(j->f32, j->order, j->cols, r1 - r0, j->M + r0 * j->s0, j->ld, j->x, j->incx, j->y + r0 * (j->f32 ? 4 : 8));
    return 0;
}

/* 1 when done, 0 where NumPy takes another path, or an error status < 0. */
static int blas_gemv(RtCtx *ctx, int on_team, int f32, const char *M, int64_t s0, int64_t s1, const char *x, int64_t sx,
                     void *y, int64_t rows, int64_t cols, int64_t maxsize)
{
    int64_t sz = f32 ? 4 : 8;
    if (!blasable(sx, sz, cols, 1, sz, maxsize)) return 0;
    GemvJob job = {f32, COL_MAJOR, M, x, s0, s0 / sz, sx / sz, rows, cols, y};
    if (!blasable(s0, s1, rows, cols, sz, maxsize)) {
        if (!blasable(s1, s0, cols, rows, sz, maxsize)) return 0;
        job.order = ROW_MAJOR;
        job.ld = s1 / sz;
    }
    int64_t blocks = rows / TILE;
    if (on_team && !f32 && blocks >= 2) {
        int status = rt_parallel_for_chunks(ctx, gemv_rows, &job, blocks, 2 * rows * cols, 1);
        return status ? -status : 1;
    }
    call_gemv(f32, job.order, cols, rows, M, job.ld, x, job.incx, y);
    return 1;
}

/* 1: C computed by the BLAS; 0: the caller computes it; < 0: an error status with ctx's record set. */
static int try_blas(RtCtx *ctx, int on_team, int f32, Operand a, Operand b, void *C, int64_t m, int64_t n, int64_t k)
{
    if (!is_enabled() || m * n * k < MIN_WORK) return 0; /* an empty product, too: NumPy's own loop */
    pthread_once(&find_once, find_blas);
    if (!blas_found) return 0;
    int64_t maxsize = blas.ilp64 ? INT64_MAX - 1 : INT32_MAX - 1;
    if (m > maxsize || n > maxsize || k > maxsize) return 0;
    int special = m == 1 || n == 1 || k == 1;
    if (special && (k == 1 || (m == 1 && n == 1))) return 0; /* NumPy's own loops: products or one dot product */
    /* one BLAS thread a call on both backends; the openmp backend's team takes tiles or blocks of rows */
    threads_enter(1);
    int done;
    if (m == 1) /* a row times b: b's transpose times the row */
        done = blas_gemv(ctx, on_team, f32, b.p, b.s1, b.s0, a.p, a.s1, C, n, k, maxsize);
    else if (n == 1)
        done = blas_gemv(ctx, on_team, f32, a.p, a.s0, a.s1, b.p, b.s0, C, m, k, maxsize);
    else
        done = blas_matrix_matrix(ctx, on_team, f32, a, b, C, m, n, k, maxsize);
    threads_leave();
    if (done > 0) atomic_fetch_add(&blas_calls, 1);
    return done;
}

/* ---- the own path ---- */

/* y = M (rows x cols) @ x, sums in order: what the own GEMM would do with a single column, without its padding. */
static void own_gemv(int f32, const char *M, int64_t s0, int64_t s1, const char *x, int64_t sx, void *y, int64_t rows,
                     int64_t cols)
{
    for (int64_t i = 0; i < rows; i++) {
        const char *row = M + i * s0;
        if (f32) {
            float acc = 0;
            for (int64_t j = 0; j < cols; j++) acc += *(const float *)(row + j * s1) * *(const float *)(x + j * sx);
            ((float *)y)[i] = acc;
        } else {
            double acc = 0;
            for (int64_t j = 0; j < cols; j++) acc += *(const double *)(row + j * s1) * *(const double *)(x + j * sx);
            ((double *)y)[i] = acc;
        }
    }
}

/* y (cols) = x (rows) @ M (rows x cols): rows of M scaled and summed, each element's sum in order of rows. */
static void own_vecmat(int f32, const char *x, int64_t sx, const char *M, int64_t s0, int64_t s1, void *y, int64_t rows,
                       int64_t cols)
{
    memset(y, 0, (size_t)(cols * (f32 ? 4 : 8)));
    for (int64_t i = 0; i < rows; i++) {
        const char *row = M + i * s0;
        if (f32) {
            float xi = *(const float *)(x + i * sx);
            for (int64_t j = 0; j < cols; j++) ((float *)y)[j] += xi * *(const float *)(row + j * s1);
        } else {
            double xi = *(const double *)(x + i * sx);
            for (int64_t j = 0; j < cols; j++) ((double *)y)[j] += xi * *(const double *)(row + j * s1);
        }
    }
}

int rt_matmul(RtCtx *ctx, int on_team, int is_f32, const void *A, int64_t sa0, int64_t sa1, const void *B,
              int64_t sb0, int64_t sb1, void *C, int64_t m, int64_t n, int64_t k)
{
    Operand a = {A, sa0, sa1}, b = {B, sb0, sb1};
    int done = try_blas(ctx, on_team, is_f32, a, b, C, m, n, k);
    if (done) return done < 0 ? -done : 0;
    if (k > 0 && (m == 1 || n == 1)) {
        if (m == 1) own_vecmat(is_f32, A, sa1, B, sb0, sb1, C, k, n);
        else own_gemv(is_f32, A, sa0, sa1, B, sb0, C, m, k);
        return 0;
    }
    if (on_team) return rt_gemm_parallel(ctx, is_f32, A, sa0, sa1, B, sb0, sb1, C, m, n, k);
    if (is_f32) rt_gemm_f32(A, sa0, sa1, B, sb0, sb1, C, m, n, k);
    else rt_gemm_f64(A, sa0, sa1, B, sb0, sb1, C, m, n, k);
    return 0;
}

int rt_blas_matmul(RtCtx *ctx, int on_team, int is_f32, const void *A, int64_t sa0, int64_t sa1, const void *B,
                   int64_t sb0, int64_t sb1, void *C, int64_t m, int64_t n, int64_t k, int32_t *taken)
{
    Operand a = {A, sa0, sa1}, b = {B, sb0, sb1};
    int done = try_blas(ctx, on_team, is_f32, a, b, C, m, n, k);
    *taken = done > 0;
    return done < 0 ? -done : 0;
}
