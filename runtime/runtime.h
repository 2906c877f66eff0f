/* runtime.h: the C support that every layer and the compiled code share.
 *
 * - LkDiag: a diagnostic as a value (kind, message, file, line, col). Layers return it up; only pyshim/
 *   turns it into a Python exception.
 * - RtArena: bump allocation for one compilation; everything in it is freed at once.
 * - RtError: an error raised by compiled code, as a record of plain numbers that any device can write;
 *   RtNames: the strings those records name by index, kept on the host.
 * - RtCtx: the per-call context that compiled code receives. It carries the error record of the call and
 *   the list of buffers the call allocated, so that temporaries are freed when the call returns.
 * - RtBuffer: a heap block holding array data. Compiled code allocates through rt_buffer_alloc().
 *
 * This layer depends on nothing but libc. It must never call exit() or abort() on bad user input.
 */
#ifndef LK_RUNTIME_H
#define LK_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- diagnostics ---- */
typedef enum {
    LK_OK = 0,
    LK_ERR_COMPILE,       /* unsupported syntax, unresolved name (CompileError) */
    LK_ERR_TYPE,          /* typing failed (CompileError) or a bad argument type at call (TypeError) */
    LK_ERR_INDEX,         /* IndexError raised by compiled code */
    LK_ERR_ZERODIV,       /* ZeroDivisionError raised by compiled code */
    LK_ERR_VALUE,         /* ValueError: shapes that do not broadcast, bad sizes */
    LK_ERR_MEMORY,        /* MemoryError */
    LK_ERR_INTERNAL,      /* a bug in lorikeet: reported, never a crash */
    LK_ERR_UNAVAILABLE,   /* a backend that cannot run here (no GPU, no OpenMP runtime) */
    LK_ERR_UNBOUND,       /* UnboundLocalError raised by compiled code */
    LK_ERR_OVERFLOW,      /* OverflowError raised by compiled code */
    LK_ERR_LINALG,        /* numpy.linalg.LinAlgError (a ValueError) raised by compiled code */
    LK_ERR_RAISED,        /* a raise (or assert) statement of the program: raised_class(*raised_args) */
} LkErrKind;

typedef struct LkDiag {
    LkErrKind kind;
    char message[512];
    char file[256];
    int line;
    int col;
    /* LK_ERR_RAISED only (rt_error_diag sets them; lk_diag_set clears them): the exception class as
     * "module:qualname" and the repr of its arguments' tuple (NULL: none), pointing into the RtNames table of
     * the code that raised, so valid while that code is; raised_recorded: the arguments were made at run time,
     * and are the call's last printed record (the shim made them: raised_values, its tuple, when it could) */
    const char *raised_class, *raised_args;
    bool raised_recorded;
    void *raised_values;
} LkDiag;

void lk_diag_set(LkDiag *d, LkErrKind kind, const char *file, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* ---- arena ---- */
typedef struct RtArenaChunk RtArenaChunk;
typedef struct RtArena {
    RtArenaChunk *chunks;
} RtArena;

RtArena *rt_arena_new(void);
void rt_arena_free(RtArena *a);
void *rt_arena_alloc(RtArena *a, size_t n); /* zeroed, 16-byte aligned; never NULL (see rt_out_of_memory) */
char *rt_arena_strdup(RtArena *a, const char *s);
void *rt_arena_dup(RtArena *a, const void *p, size_t n);
void rt_out_of_memory(size_t n); /* the compiler's allocation of n bytes failed: a message, then abort() */

/* ---- buffers ---- */
#define RT_BUFFER_MAGIC 0x4c4b4255u /* "LKBU" */

typedef struct RtBuffer {
    uint32_t magic;
    uint32_t flags;        /* RT_BUFFER_DEVICE: data is a device address (gpu) */
    struct RtBuffer *next; /* the owning call's list; NULL once detached */
    void *data;            /* 64-byte aligned */
    int64_t nbytes;
    size_t capacity;       /* bytes of the whole block, header included */
} RtBuffer;

/* The argument-array tag: an array passed in by the caller has base = RT_ARG_BASE(i), i being the index of the
 * array among the flattened arguments, so that a view returned to Python can keep the right object alive. */
#define RT_ARG_BASE(i) ((void *)(uintptr_t)((i) + 1))
#define RT_ARG_BASE_MAX 4096
#define RT_IS_ARG_BASE(p) ((uintptr_t)(p) >= 1 && (uintptr_t)(p) <= RT_ARG_BASE_MAX)

/* ---- errors raised by compiled code ----
 * Who writes: compiled code, wherever it runs (the calling thread, an openmp chunk, a GPU thread), fills in the
 * RtError at the start of its context with plain stores and returns non-zero; it calls nothing and formats
 * nothing, and the record holds no pointers, so device code can write it. rt_buffer_alloc() (host) writes
 * RT_ERR_MEMORY the same way. A function stops at its first error, so a context holds one record.
 * Who reads: the host, after the call. rt_error_diag() turns a record into the LkDiag with the message CPython
 * or NumPy would give, and pyshim/ that into the Python exception. Strings (the source file, the name of an
 * unbound variable) are indices into the RtNames table that the backend builds while it compiles and keeps
 * with the code on the host.
 * Several contexts at once (the chunks of rt_parallel_for, each with its own): the record of the lowest chunk
 * that failed becomes the call's. Chunks cover ascending iterations and each stops at its first error, so this
 * is the error of the first failing iteration, as on one thread: it does not depend on the thread count or on
 * which thread finished first. */
typedef enum {
    RT_ERR_NONE = 0,
    RT_ERR_INDEX,       /* IndexError: extra = {index, size of the axis, axis} */
    RT_ERR_MASK,        /* IndexError, a boolean index of the wrong size: {mask's size, array's size, axis} */
    RT_ERR_MASK_VALUES, /* ValueError, a[mask] = values of the wrong length: {values, set elements of the mask} */
    RT_ERR_ZERODIV,     /* ZeroDivisionError: {1 for %, 0 for //} */
    RT_ERR_SHAPE,       /* ValueError, sizes that do not broadcast: {size, size, dimension from the right}; dimension
                         * 0: a matrix product's summed sizes differ: {a's, b's, 0} */
    RT_ERR_VALUE,       /* ValueError: {RT_VAL_* below, which message} */
    RT_ERR_UNBOUND,     /* UnboundLocalError: {the variable's name, an index into RtNames} */
    RT_ERR_MEMORY,      /* MemoryError: {bytes asked for, 1 when too many to try, 1 for device memory} */
    RT_ERR_GPU,         /* a gpu runtime call of host code failed (runtime.h's gpu section): {its LkErrKind}; the
                         * message is the calling thread's last gpu diagnostic (rt_error_diag reads it there) */
    RT_ERR_OVERFLOW,    /* OverflowError, a number stored into an integer array that cannot hold it: {the value
                         * (an int64), the target (RT_OVF_TARGET), which message (RT_OVF_* below)} */
    RT_ERR_LINALG,      /* numpy.linalg.LinAlgError: {which (RT_LINALG_* below: singular, not positive definite,
                         * not square)} */
    RT_ERR_RAISE,       /* a raise statement of the program: {its class as "module:qualname", the repr of the tuple of
                         * its constant arguments or -1 for none}, both indices into RtNames */
    RT_ERR_INDEX_SHAPES,/* IndexError, index arrays of lengths that do not broadcast: {one's length, another's} */
} RtErrCode;

/* RT_ERR_OVERFLOW: the target is an integer dtype's bits, plus 256 when unsigned (RT_OVF_TARGET(8, true) is
 * uint8); the message, by extra[2]: the value out of the target's bounds (as a signed or an unsigned 64-bit
 * integer), beyond int64 (NumPy converts through a C long), or an infinite float. */
#define RT_OVF_TARGET(bits, is_unsigned) ((bits) + ((is_unsigned) ? 256 : 0))
enum { RT_OVF_BOUNDS = 0, RT_OVF_BOUNDS_UNSIGNED, RT_OVF_TOO_LARGE, RT_OVF_INFINITY,
       RT_OVF_RNG_RANGE /* Generator.uniform: high - low is not finite */ };

/* Messages of RT_ERR_VALUE, by extra[0]. */
enum { RT_VAL_RANGE_STEP_ZERO = 1, RT_VAL_NEGATIVE_DIM, RT_VAL_EMPTY_REDUCE, RT_VAL_UNPACK, RT_VAL_SLICE_STEP_ZERO,
       RT_VAL_TOO_BIG, RT_VAL_NEG_POWER, RT_VAL_RESHAPE, RT_VAL_CONCAT, RT_VAL_MASK_SHAPE, RT_VAL_READONLY,
       RT_VAL_READONLY_OUT, RT_VAL_FLOAT_NAN,
       RT_VAL_AXIS, /* NumPy's AxisError (a ValueError): extra {RT_VAL_AXIS, the axis given, the array's ndim} */
       RT_VAL_PERCENTILE, RT_VAL_QUANTILE, RT_VAL_HIST_BINS, RT_VAL_HIST_ORDER, RT_VAL_HIST_FINITE, RT_VAL_HIST_EDGES,
       RT_VAL_SOLVE_SHAPE, RT_VAL_SEQUENCE,
       /* np.random (random.c), in NumPy's words: a negative seed, integers' bounds, normal's scale */
       RT_VAL_RNG_SEED, RT_VAL_RNG_LOW_HIGH, RT_VAL_RNG_LOW_HIGH_CLOSED, RT_VAL_RNG_HIGH_0, RT_VAL_RNG_HIGH_0_CLOSED,
       RT_VAL_RNG_LOW_INT32, RT_VAL_RNG_HIGH_INT32, RT_VAL_RNG_SCALE };

/* The layout is part of the contract with compiled code (offsets 0, 4, 8, 12, 16; 40 bytes). */
typedef struct RtError {
    int32_t status;   /* LkErrKind (rt_err_kind(code)); LK_OK while nothing failed */
    int32_t code;     /* RtErrCode */
    int32_t line;     /* the source line; 0: none */
    int32_t where;    /* the source file, an index into RtNames; -1: none */
    int64_t extra[3]; /* what the message needs, by code (above) */
} RtError;
_Static_assert(sizeof(RtError) == 40 && offsetof(RtError, extra) == 16, "RtError's layout is fixed");

/* The status a code reports. */
LkErrKind rt_err_kind(RtErrCode code);

/* The strings that error records name, by index (the same string, the same index). Built by a backend as it
 * emits code, owned by whoever keeps the code. */
typedef struct RtNames {
    char **names;
    int n, cap;
} RtNames;
int rt_names_index(RtNames *t, const char *s); /* -1 when out of memory */
void rt_names_free(RtNames *t);
/* The diagnostic that e stands for (names: the table of the code that wrote it). The one place where the
 * messages of run-time errors are written. */
void rt_error_diag(const RtError *e, const RtNames *names, LkDiag *out);

/* ---- the per-call context ---- */
typedef struct RtText RtText;
typedef struct RtCtx {
    RtError err;         /* first: compiled code writes the record at the context's address */
    RtBuffer *buffers;   /* every buffer this call allocated and still owns */
    RtText *printed;     /* what the call's print() calls wrote (print.c), or NULL; freed by rt_ctx_release */
} RtCtx;

/* ---- print() (print.c) ----
 * Compiled code makes no strings: a print call appends a record to its context's `printed` bytes, the index in
 * RtNames of the call's layout text (ir.h's IR_INTR_PRINT), then its values, each an 8-byte slot (an integer or
 * bool as int64, a float as a double, a complex as two) or an array (its ndim, shape and elements in C order, in
 * their own bytes, padded to 8). The shim formats them with Python's str() after the call (pyshim/print.c), so
 * the text is CPython's and goes to sys.stdout, and whatever ran in parallel printed in the order of a sequential
 * run: the chunks' records join the call's in chunk order (parallel.c). A record that cannot be stored (no
 * memory) is dropped, and the shim says so. */
struct RtText {
    char *data;
    int64_t n, cap;
    int64_t dropped; /* records lost for want of memory */
};
void rt_print_begin(RtCtx *ctx, int64_t layout);
void rt_print_i64(RtCtx *ctx, int64_t v);
void rt_print_f64(RtCtx *ctx, double v);
void rt_print_array(RtCtx *ctx, const char *data, int64_t ndim, const int64_t *shape, const int64_t *strides,
                    int64_t itemsize);
void rt_print_end(RtCtx *ctx);
/* Appends src's records to dst's (src emptied): the chunks of a parallel loop in chunk order. */
void rt_text_join(RtCtx *dst, RtCtx *src);
void rt_text_free(RtCtx *ctx);

/* Called from compiled code; NULL with ctx->err set (RT_ERR_MEMORY) when the memory cannot be had. */
RtBuffer *rt_buffer_alloc(RtCtx *ctx, int64_t nbytes);

/* C (m x n, C-contiguous, overwritten) = A (m x k) @ B (k x n), strides of A and B in bytes (gemm.c). */
void rt_gemm_f64(const void *A, int64_t sa0, int64_t sa1, const void *B, int64_t sb0, int64_t sb1, double *C,
                 int64_t m, int64_t n, int64_t k);
void rt_gemm_f32(const void *A, int64_t sa0, int64_t sa1, const void *B, int64_t sb0, int64_t sb1, float *C,
                 int64_t m, int64_t n, int64_t k);

/* The same on the openmp backend's team, blocks of rows of C a thread. */
int rt_gemm_parallel(RtCtx *ctx, int is_f32, const void *A, int64_t sa0, int64_t sa1, const void *B, int64_t sb0,
                     int64_t sb1, void *C, int64_t m, int64_t n, int64_t k);

/* float16 (bits) operands and result, as NumPy's float16 matmul: the operands widened to float32, their product
 * in float32 (on the team when on_team), each element rounded once to float16 into C (C-contiguous). 0, or
 * non-zero with ctx->err set when the float32 copies cannot be had. */
int rt_gemm_f16(RtCtx *ctx, int on_team, const void *A, int64_t sa0, int64_t sa1, const void *B, int64_t sb0,
                int64_t sb1, uint16_t *C, int64_t m, int64_t n, int64_t k);

/* C (m x n, C-contiguous, overwritten) = A (m x k) @ B (k x n) for float32 (is_f32) or float64, strides in bytes
 * (blas.c): through the BLAS that NumPy loaded, with NumPy's own calls (so equal to its a @ b bit for bit), on
 * one BLAS thread, or the team's count when on_team; the own kernel above where there is no BLAS, it is off, the
 * sizes are too big for its integers, or the product is tiny. m or n may be 1 (a matrix-vector product: A's row
 * or B's column may then have any stride). 0, or an error status with ctx's record set. */
int rt_matmul(RtCtx *ctx, int on_team, int is_f32, const void *A, int64_t sa0, int64_t sa1, const void *B,
              int64_t sb0, int64_t sb1, void *C, int64_t m, int64_t n, int64_t k);
/* The same where the caller has a loop of its own (a matrix-vector product written as a reduction): *taken is 1
 * when the BLAS computed C, 0 when the caller must (no BLAS, off, tiny, or operands it cannot take). */
int rt_blas_matmul(RtCtx *ctx, int on_team, int is_f32, const void *A, int64_t sa0, int64_t sa1, const void *B,
                   int64_t sb0, int64_t sb1, void *C, int64_t m, int64_t n, int64_t k, int32_t *taken);
typedef struct RtBlasInfo {
    const char *library;  /* the file that defines it, or NULL where none was found */
    const char *symbol;   /* its dgemm's symbol, which names the scheme: scipy_cblas_dgemm64_, cblas_dgemm, ... */
    int ilp64;            /* 64-bit integers (else 32-bit: larger sizes take the own kernel) */
    int threads_control;  /* its thread count can be set (OpenBLAS, MKL) */
    int enabled;          /* LORIKEET_BLAS is not 0 and rt_blas_set_enabled did not turn it off */
    int64_t calls;        /* products it computed */
    const char *why_not;  /* where library is NULL: why */
} RtBlasInfo;
RtBlasInfo rt_blas_info(void); /* looks for the BLAS if no product did yet */
void rt_blas_set_enabled(int on);

/* Sorting along an axis (sort.c), for np.sort and np.argsort: each line of src (shape[ndim], byte strides) along
 * axis sorted, stably, NaN last, into dst, a C-contiguous array of that shape holding the values (argsort 0) or
 * their int64 indices along the axis (argsort 1). key says how to compare an element: RT_SORT_KEY(kind, bytes).
 * Returns 0, or non-zero with ctx->err set (RT_ERR_MEMORY: scratch of a line could not be had). */
enum { RT_SORT_UNSIGNED = 0, RT_SORT_SIGNED = 1, RT_SORT_FLOAT = 2 }; /* bool sorts as unsigned, float16 as float */
#define RT_SORT_KEY(kind, bytes) ((kind) * 16 + (bytes))
#define RT_SORT_MAX_DIMS 32
int rt_sort(RtCtx *ctx, int32_t key, int32_t argsort, const char *src, const int64_t *shape, const int64_t *strides,
            int32_t ndim, int32_t axis, char *dst);

/* NumPy's reshape of an array (nd axes of shape, byte strides, itemsize) to new_shape (new_nd axes, no -1 left):
 * 1 when it is a view of the array, with its byte strides in new_strides; 0 when NumPy copies (the strides do not
 * allow a view, or contiguous_only and the array is not C-contiguous by NumPy's flag: np.ravel's rule) or when
 * the sizes differ (reshape.c). */
int32_t rt_reshape_view(int64_t nd, const int64_t *shape, const int64_t *strides, int64_t itemsize, int64_t new_nd,
                        const int64_t *new_shape, int64_t *new_strides, int32_t contiguous_only);

/* Small dense linear algebra (linalg.c), for np.linalg: op RT_LINALG_DET (*det), INV (out = a^-1), SOLVE (out =
 * a^-1 b, b brows x bcols, a 1-D b given as bcols 1) or CHOLESKY (out = L, lower, from a's lower triangle); a
 * rows x cols with byte strides as0, as1 (b likewise), float32 (is_f32) or float64, computed in double; out a
 * C-contiguous array of a's dtype. Returns RT_LINALG_OK, another RT_LINALG_* (nothing written), or -1 with
 * ctx->err set (RT_ERR_MEMORY). */
enum { RT_LINALG_DET = 0, RT_LINALG_INV, RT_LINALG_SOLVE, RT_LINALG_CHOLESKY };
enum { RT_LINALG_OK = 0, RT_LINALG_SINGULAR, RT_LINALG_NOT_POSDEF, RT_LINALG_NOT_SQUARE, RT_LINALG_SHAPE };
int rt_linalg(RtCtx *ctx, int32_t op, int32_t is_f32, const char *a, int64_t as0, int64_t as1, int64_t rows,
              int64_t cols, const char *b, int64_t bs0, int64_t bs1, int64_t brows, int64_t bcols, char *out,
              double *det);

/* rt_sort and rt_linalg for the gpu backend's host code (gpu_host.c): the same arguments, src, a, b and the
 * output device memory; the operands are copied to the host and the result back. The same returns, and -1 with
 * ctx->err set when a copy fails (RT_ERR_GPU) or host memory runs out. */
int rt_gpu_sort(RtCtx *ctx, int32_t key, int32_t argsort, const char *src, const int64_t *shape, const int64_t *strides,
                int32_t ndim, int32_t axis, char *dst);
int rt_gpu_linalg(RtCtx *ctx, int32_t op, int32_t is_f32, const char *a, int64_t as0, int64_t as1, int64_t rows,
                  int64_t cols, const char *b, int64_t bs0, int64_t bs1, int64_t brows, int64_t bcols, char *out,
                  double *det);

/* np.random's Generator (random.c): NumPy's default_rng, PCG64 seeded through SeedSequence, and its draws, the same
 * numbers as NumPy's for the same seed. RtRng is PCG64's whole state as NumPy's PCG64.state holds it (the 128-bit
 * state and increment as high and low words, and the buffered upper half of a 64-bit draw that 32-bit draws use):
 * six 8-byte words, which are also a Generator argument's ABI slots (ir_abi_slots), updated in place by the call. */
typedef struct RtRng {
    uint64_t state_hi, state_lo, inc_hi, inc_lo;
    int64_t has_uint32;
    uint64_t uinteger;
} RtRng;
_Static_assert(sizeof(RtRng) == 48, "RtRng is six slots");
/* default_rng(seed) (has_seed) or default_rng() (128 bits of the OS's entropy). 0, or RT_VAL_RNG_SEED for a
 * negative seed (nothing written). */
int rt_rng_seed(RtRng *g, int32_t has_seed, int64_t seed);
/* The draws, by method: random(), standard_normal() and standard_exponential() take no parameter; uniform(a, b),
 * normal(a = loc, b = scale), exponential(b = scale); integers(lo, hi) with hi excluded (RT_RNG_INTEGERS) or
 * included (_CLOSED) into int64 (elsize 8) or int32 (elsize 4) elements; random, standard_normal and
 * standard_exponential into float32 (elsize 4: NumPy's float32 streams, other numbers than float64's) or float64;
 * everything else float64. out: the C-contiguous elements of shape[ndim] (ndim 0: one
 * scalar). NumPy's checks in NumPy's order first: 0, an RT_VAL_* message of RT_ERR_VALUE (RT_VAL_NEGATIVE_DIM for
 * a negative size), or RT_RNG_OVERFLOW (uniform's OverflowError); nothing is drawn when a check fails. */
enum { RT_RNG_RANDOM = 0, RT_RNG_UNIFORM, RT_RNG_NORMAL, RT_RNG_STANDARD_NORMAL, RT_RNG_INTEGERS, RT_RNG_INTEGERS_CLOSED,
       RT_RNG_STANDARD_EXPONENTIAL, RT_RNG_STANDARD_EXPONENTIAL_INV, /* method='zig' (the default), 'inv' */
       RT_RNG_EXPONENTIAL,  /* b * standard_exponential(), b the scale (ValueError RT_VAL_RNG_SCALE when b < 0) */
       RT_RNG_PERMUTATION   /* int64: np.arange(n) shuffled (n the size), as Generator.permutation(n) */ };
#define RT_RNG_OVERFLOW (-1)
#define RT_RNG_COPY_FAILED (-2) /* rt_gpu_rng_fill: the copy to the device failed, ctx->err set */
int rt_rng_fill(RtRng *g, int32_t method, int32_t elsize, double a, double b, int64_t lo, int64_t hi,
                const int64_t *shape, int32_t ndim, void *out);
/* rt_rng_fill for the gpu backend's host code (gpu_host.c): out is device memory; the draws are made into host
 * memory, with the same stream, and copied over. Its returns, or RT_RNG_COPY_FAILED with ctx->err set. */
int rt_gpu_rng_fill(RtRng *g, int32_t method, int32_t elsize, double a, double b, int64_t lo, int64_t hi,
                    const int64_t *shape, int32_t ndim, void *out, RtCtx *ctx);

/* After a call: free every buffer still owned by ctx (temporaries, or everything after an error). */
void rt_ctx_release(RtCtx *ctx);
/* Take a returned buffer out of ctx's list; the caller now owns it and frees it with rt_buffer_free(). */
void rt_buffer_detach(RtCtx *ctx, RtBuffer *b);
void rt_buffer_free(RtBuffer *b);
/* Freed large blocks are kept for reuse (a bounded cache, see buffer.c); these empty it and measure it. */
void rt_buffer_cache_clear(void);
int64_t rt_buffer_cache_bytes(void);
int64_t rt_buffer_cache_limit(void); /* the most it keeps, in bytes */
int rt_is_buffer_of(RtCtx *ctx, const void *base);

typedef struct RtStats {
    int64_t allocations;  /* buffers allocated since start */
    int64_t frees;
    int64_t live_bytes;
} RtStats;
RtStats rt_stats(void);

/* ---- parallel loops (parallel.c), for the openmp backend ---- */
#define RT_MAX_THREADS 256
#define RT_MAX_CHUNKS RT_MAX_THREADS /* the most chunks one rt_parallel_for runs: what per-chunk buffers hold */
/* Runs iterations [lo, hi) of a loop as chunk number tid, with a context of its own; returns 0 or an error
 * status. Chunk c always covers the same iterations, whichever thread runs it. */
typedef int (*RtChunkFn)(RtCtx *ctx, void *data, int64_t lo, int64_t hi, int tid);
/* Iterations [0, n) on the team (or on this thread when work is below the threshold, or no OpenMP runtime),
 * in *nchunks chunks (1 .. RT_MAX_CHUNKS), numbered in iteration order, every one of them run: per-chunk
 * partial results are combined over exactly [0, *nchunks), in that order. A failed chunk's error record, the
 * lowest chunk's when several fail, becomes ctx's. */
int rt_parallel_for(RtCtx *ctx, RtChunkFn fn, void *data, int64_t n, int64_t work, int64_t *nchunks);
/* The same with per_thread chunks per thread (rt_parallel_for takes a few, for balance): 1 for work whose
 * chunks each pay a set-up cost that a bigger chunk shares, such as GEMM's packing of B. */
int rt_parallel_for_chunks(RtCtx *ctx, RtChunkFn fn, void *data, int64_t n, int64_t work, int per_thread);
/* How many threads rt_parallel_for(n, work) would run now (1: on this thread). A later call may decide otherwise
 * (another Python thread may change the thread count or the threshold in between). */
int rt_parallel_threads(int64_t n, int64_t work);
int rt_get_num_threads(void);
void rt_set_num_threads(int n);
void rt_set_parallel_threshold(int64_t work);
int64_t rt_get_parallel_threshold(void);
const char *rt_parallel_unavailable(void); /* NULL, or why loops run on one thread */

/* ---- the gpu (gpu_driver.c, gpu_memory.c, nvrtc.c, cublas.c): the CUDA driver API and NVRTC, loaded with dlopen ----
 * Nothing here links against CUDA: libcuda.so.1 and libnvrtc.so.13 (or .12) are opened on first use, never at
 * import, so lorikeet builds, imports and runs cpu and openmp where there is no CUDA at all. The driver is
 * initialised (cuInit, the primary context of device 0) on the first call that needs it; a process that forks
 * after that refuses gpu work in the child (CUDA does not survive fork).
 * Streams: one non-blocking stream per host thread; every copy and launch of a thread goes on its stream, in
 * order, so a thread never waits for another's work. Device memory comes from the driver's stream-ordered pool
 * (cuMemAllocAsync / cuMemFreeAsync, release threshold raised so that freed blocks are reused).
 * Errors: every failure is a diagnostic naming the driver call and CUDA's error name and text; a sticky error
 * (an illegal address, a launch failure) marks the device lost, and every later gpu call says so at once. */

/* NULL when gpu calls can run in this process; else why not, one sentence naming which it is: no CUDA driver
 * (libcuda.so.1 not found), no CUDA device, a driver too old for this NVRTC, no NVRTC, CUDA initialised before
 * fork(), the device lost after an error. Initialises the driver the first time. */
const char *rt_gpu_unavailable(void);
/* The same, for a compile: the device and NVRTC checked, the primary context still being opened on a thread of
 * its own (a failure there is reported by the first call that runs, as rt_gpu_unavailable would have). */
const char *rt_gpu_unavailable_soon(void);
/* NULL when NVRTC can be loaded (it needs no GPU: CUDA C can be compiled on any machine); else why not. */
const char *rt_nvrtc_unavailable(void);
int rt_nvrtc_version(void); /* major * 1000 + minor * 10 (13000), 0 when unavailable */
/* A folder where pip may have put NVRTC (the shim passes Python's sys.path: this layer cannot ask Python); its
 * nvidia/cu13/lib and nvidia/cuda_nvrtc/lib are searched after the system's places. Before the first compile. */
void rt_nvrtc_add_search_dir(const char *dir);

typedef struct RtGpuInfo {
    int cc;              /* compute capability, major * 10 + minor: 90 for an H100 */
    int sms;             /* multiprocessors */
    int driver_version;  /* cuDriverGetVersion's: 13000 */
    int64_t total_mem;
    char name[128];
} RtGpuInfo;
int rt_gpu_info(RtGpuInfo *info); /* 0, or -1 when rt_gpu_unavailable_soon() */

/* A persistent layer under rt_nvrtc_compile's memo in the process (the shim's on-disk cache). key (key_len bytes)
 * is everything the image depends on: the source without its comments, NVRTC's version, its options and the
 * target. load returns a malloc'd image for key (*size bytes, *is_ptx) whose entry's checksum it verified, or
 * NULL; save keeps one. Neither ever fails a compile, and rt_nvrtc_compile checks what load gives (the kind the
 * key's target asks for, an ELF header or NUL-terminated PTX) before the driver may see it. */
typedef struct RtImageStore {
    void *(*load)(const char *key, size_t key_len, size_t *size, int *is_ptx);
    void (*save)(const char *key, size_t key_len, const void *image, size_t size, int is_ptx);
} RtImageStore;

/* CUDA C to device code for compute capability cc (90): a cubin for sm_<cc> when this NVRTC can make one, else
 * PTX for the newest architecture it knows that the device can run (the driver compiles it). Options: C++17,
 * --fmad=false, no flush-to-zero; fastmath adds --fmad=true --use_fast_math. An image made before in the process,
 * or found in disk (when not NULL), is used without running NVRTC. Returns the malloc'd image (*size bytes,
 * *is_ptx says which), or NULL with diag set (LK_ERR_INTERNAL: NVRTC's log in the message, as much as fits;
 * the whole log in *log when log is not NULL, malloc'd). Needs no GPU. */
void *rt_nvrtc_compile(const char *src, const char *name, int cc, int fastmath, size_t *size, int *is_ptx,
                       char **log, const RtImageStore *disk, LkDiag *diag);
/* The same compile beside other work: rt_nvrtc_start reads the memo and disk in the caller's thread (a hit is
 * ready at once), else starts NVRTC on a thread of its own; rt_nvrtc_finish waits for it, writes the disk layer
 * in the caller's thread and returns what rt_nvrtc_compile would (no log). finish with diag NULL abandons the job
 * (waiting for its thread). NULL from start: diag set (NVRTC unavailable, no target, out of memory). */
typedef struct RtNvrtcJob RtNvrtcJob;
RtNvrtcJob *rt_nvrtc_start(const char *src, const char *name, int cc, int fastmath, const RtImageStore *disk,
                           LkDiag *diag);
void *rt_nvrtc_finish(RtNvrtcJob *job, size_t *size, int *is_ptx, LkDiag *diag);

/* A module of kernels loaded on the device, unloaded (after waiting for the device) when the host code that
 * launches them is freed. */
typedef struct RtGpuModule RtGpuModule;
RtGpuModule *rt_gpu_module_load(const void *image, size_t size, int is_ptx, const char *const *kernels, int nkernels,
                                LkDiag *diag);
void rt_gpu_module_unload(RtGpuModule *m);
/* Whether kernel k of m can write the device error record (the backend knows which checks it emitted; a kernel
 * not told about may). Launching one marks this thread's stream as holding errors not read yet
 * (rt_gpu_errors_pending) until the next rt_gpu_sync. */
void rt_gpu_module_set_may_raise(RtGpuModule *m, int k, int may_raise);

/* How a kernel is launched (backends/gpu/kernel_abi.h says what each kind of kernel does with its grid). */
typedef enum {
    RT_LAUNCH_ELEMENTS, /* work items [0, n) spread over the grid, any grid: one per thread where they fit */
    RT_LAUNCH_REDUCE,   /* the same, and the blocks combine partial results in the scratch: at most
                         * RT_GPU_MAX_REDUCE_BLOCKS blocks, and at least one even when n is 0 */
} RtLaunchKind;
#define RT_GPU_BLOCK 256              /* threads of a block, for every kernel */
#define RT_GPU_MAX_REDUCE_BLOCKS 1024
#define RT_GPU_SCRATCH_BYTES (64 << 10) /* the scratch every launch gets: see kernel_abi.h for its layout */

/* Launches kernel k of m on this thread's stream with the parameter block slots[0 .. nslots) (one struct of
 * int64 passed by value), after filling in slots[0] (the device error record) and slots[1] (the scratch), over
 * n work items. Does not wait for the kernel. Returns 0, or non-zero with ctx->err set (a failed launch). */
int rt_gpu_launch(RtCtx *ctx, RtGpuModule *m, int k, int64_t *slots, int nslots, int64_t n, RtLaunchKind kind);
/* Waits for this thread's stream, then reports the first error its kernels raised since the last wait (the
 * device error record, copied into ctx->err and cleared): 0, or non-zero with ctx->err set. */
int rt_gpu_sync(RtCtx *ctx);
/* Whether this thread launched a kernel that may raise since its last rt_gpu_sync (or LORIKEET_GPU_SYNC=1 is
 * set, which makes every call wait): then a call must wait for its kernels before it returns, so that their
 * errors are raised at the call that caused them. Else nothing of the call can fail on the device. */
int rt_gpu_errors_pending(void);
/* The first n 8-byte results that a reduce kernel left in the scratch (kernel_abi.h), after rt_gpu_sync: 0, or
 * non-zero with ctx->err set. */
int rt_gpu_results(RtCtx *ctx, int64_t *out, int n);

/* ---- matrix products through cuBLAS (cublas.c): libcublas.so.13 (or .12, .11) loaded with dlopen on first use;
 * LORIKEET_CUBLAS names the file or its folder, LORIKEET_GPU_CUBLAS=0 refuses it. */
/* NULL when cuBLAS can be used (loading it needs no GPU); else why not, one sentence. */
const char *rt_cublas_unavailable(void);
/* The version loaded (major * 10000 + minor * 100 + patch), and its path in *path when path is not NULL; 0 when
 * none was loaded. */
int rt_cublas_version(const char **path);
enum { RT_GEMM_OTHER, RT_GEMM_F32, RT_GEMM_F64, RT_GEMM_F16 };
/* C (m x n, byte strides cs0, cs1) = A (m x k, strides as0, as1) @ B (k x n, strides bs0, bs1), device addresses,
 * elements of dtype (RT_GEMM_*), queued on this thread's stream through cuBLAS (GEMM, or GEMV when m or n is 1;
 * float16 by GemmEx with float32 sums, each element rounded once)
 * when cuBLAS is present and not refused and can read the operands in place (see cublas.c): then *taken = 1.
 * Else *taken = 0 and nothing was queued: the caller launches its own kernel. Returns 0, or non-zero with
 * ctx->err set (a cuBLAS failure, naming its status). */
int rt_gpu_gemm(RtCtx *ctx, int32_t dtype, const void *a, int64_t as0, int64_t as1, const void *b, int64_t bs0,
                int64_t bs1, void *c, int64_t cs0, int64_t cs1, int64_t m, int64_t n, int64_t k, int32_t *taken);

/* Device memory for compiled code, as rt_buffer_alloc gives host memory: an RtBuffer of the call whose data is
 * a device address (flags RT_BUFFER_DEVICE), freed (stream-ordered) with the call's other buffers. NULL with
 * ctx->err set (RT_ERR_MEMORY, the size) when the device cannot hold it, after the pool was trimmed. */
#define RT_BUFFER_DEVICE 1u
RtBuffer *rt_gpu_buffer_alloc(RtCtx *ctx, int64_t nbytes);
/* Device memory outside any call (lk.DeviceArray's, the staging of arguments): a device address, or 0 with diag
 * set (LK_ERR_MEMORY, the size, what the pool holds and what the device has free). */
uint64_t rt_gpu_malloc(int64_t nbytes, LkDiag *diag);
void rt_gpu_free(uint64_t dptr); /* stream-ordered on this thread's stream; nothing once the device is lost */
/* What may still be allocated (the driver's free memory and the pool's unused blocks) and the device's total:
 * 0, or -1 with diag set. For a caller deciding whether its data fits (the shim's split_call.c). */
int rt_gpu_memory_available(int64_t *avail, int64_t *total, LkDiag *diag);
/* Copies on this thread's stream that return when done: 0, or -1 with diag set. Counted in rt_gpu_stats. Host
 * memory is pageable (NumPy's): copies of a few hundred KB or more go through page-locked staging buffers that
 * the runtime keeps (gpu_memory.c says how many); smaller ones, and those that find no free buffer, do not. */
int rt_gpu_copy_to_device(uint64_t dst, const void *src, int64_t nbytes, LkDiag *diag);
int rt_gpu_copy_to_host(void *dst, uint64_t src, int64_t nbytes, LkDiag *diag);
int rt_gpu_copy_on_device(uint64_t dst, uint64_t src, int64_t nbytes, LkDiag *diag);
/* One element read or written by host code (a scalar access outside every kernel): size bytes, 0 or non-zero
 * with ctx->err set. Correct, and slow: a round trip each. */
int rt_gpu_read_elem(RtCtx *ctx, const void *dptr, void *dst, int64_t size);
int rt_gpu_write_elem(RtCtx *ctx, void *dptr, const void *src, int64_t size);

/* Streams, for exchanging arrays with other CUDA libraries (__cuda_array_interface__, DLPack):
 * this thread's stream (made on first use), as a CUstream handle; 0 with diag set when the gpu is unavailable. */
uint64_t rt_gpu_stream(LkDiag *diag);
/* This thread's stream if it has one already (0 if not), without initialising anything. */
uint64_t rt_gpu_stream_if_made(void);
/* Waits for another stream's work (a CUstream handle; 1 and 2 are CUDA's legacy and per-thread default streams). */
int rt_gpu_stream_sync(uint64_t stream, LkDiag *diag);
/* Orders this thread's stream after the work queued so far on another stream, without waiting on the host (an
 * event recorded there, waited for here): 0, or -1 with diag set. Nothing when stream is this thread's or 0. */
int rt_gpu_stream_wait(uint64_t stream, LkDiag *diag);
/* The device ordinal that device address dptr belongs to, or -1 with diag set (not a device address). */
int rt_gpu_pointer_device(uint64_t dptr, LkDiag *diag);

typedef struct RtGpuStats {
    int64_t h2d_copies, h2d_bytes, d2h_copies, d2h_bytes, d2d_copies;
    int64_t allocations, frees, live_bytes; /* device memory */
    int64_t launches, compiles, modules;   /* compiles: NVRTC runs (a memo or disk hit is none) */
    int64_t cublas_calls;                   /* matrix products that cuBLAS computed (cublas.c) */
    int64_t waits;            /* rt_gpu_sync: a host thread waited for its kernels (their errors, their results) */
    int64_t disk_images;      /* images rt_nvrtc_compile took from its RtImageStore instead of running NVRTC */
} RtGpuStats;
RtGpuStats rt_gpu_stats(void);
/* The staging of host copies: the bytes of one buffer, the smallest copy staged, the most bytes ever pinned, and
 * those pinned now. Initialises nothing. */
void rt_gpu_staging(int64_t *chunk, int64_t *min, int64_t *cap, int64_t *held);

/* Every runtime entry point that compiled code may call, by name, for the JIT's symbol table. */
typedef struct RtSymbol {
    const char *name;
    void *addr;
} RtSymbol;
const RtSymbol *rt_symbols(int *count);

/* ---- float16 (half.c): IEEE binary16 as bits, rounding to nearest even (overflow to inf, NaN kept) ---- */
uint16_t rt_half_from_double(double d);
uint16_t rt_half_from_float(float f);
double rt_half_to_double(uint16_t h);
float rt_half_to_float(uint16_t h);
/* The conversion routines LLVM calls where the CPU has no instruction (__extendhfsf2, __truncdfhf2, ...), for
 * the JIT's symbol table: the process may not have them, and these give the instructions' results. */
const RtSymbol *rt_half_symbols(int *count);

/* ---- complex (complex.c): what compiled code calls for ir.h's complex rules, the result's parts in out[2] ---- */
void rt_csqrt_f64(double re, double im, double *out);
void rt_cexp_f64(double re, double im, double *out);
void rt_clog_f64(double re, double im, double *out);
void rt_cpow_f64(double ar, double ai, double br, double bi, double *out); /* NumPy's complex power */
void rt_csqrt_f32(float re, float im, float *out);
void rt_cexp_f32(float re, float im, float *out);
void rt_clog_f32(float re, float im, float *out);
void rt_cpow_f32(float ar, float ai, float br, float bi, float *out);

#endif
