/* split_call.c: a call whose data does not fit in device memory, run as pieces along its arguments' first axis.
 *
 * ir/split_plan.c says, once per signature (LkSpec.split), which array arguments a piece gets by rows and which
 * whole, and how the pieces' results make the call's: arrays concatenated along axis 0 (each piece's rows copied
 * straight into the result, allocated once), scalars combined with their reduction's op in piece order, values
 * the same in every piece taken from the first. The driver is the same for every backend; a Runner moves the data:
 *  - on the gpu (gpu_call.c's lk_gpu_runner), the arguments read whole go to the device once, the rows of a piece
 *    into one of two sets of device buffers, and the results' rows come back into the host result;
 *  - on the host (cpu, openmp) the same steps are memcpy into host buffers. It runs only in the test mode
 *    (LORIKEET_SPLIT_TEST=1 and LORIKEET_GPU_MEMORY_LIMIT), so the driver, its pipeline and the plans can be
 *    tested on any machine, against the unsplit call.
 * Pipeline: while piece i runs (its kernels, then its results' copy back), the call's helper thread loads piece
 * i + 1 into the other set (on the gpu: on that thread's own stream, so the copy up overlaps the kernels and the
 * copy down). A set is loaded again only after the piece that used it was collected and its stream waited for.
 * The first piece is an eighth of the others and runs alone: it measures the results before the pipeline starts.
 *
 * When a call is split: its NumPy arguments' bytes, with a guess of its results' (the plan's arrays of rows, each
 * as large per row as the widest split argument; no guess for a call that cannot be split), exceed the limit: LORIKEET_GPU_MEMORY_LIMIT (bytes, suffixes
 * K, M, G, T in powers of 1024), else on the gpu what the device has available. A piece's rows are chosen so that
 * two sets of inputs, one piece's results and the arguments read whole fit in 90% of the limit; the first piece
 * measures its results, and later pieces shrink if they were larger than guessed. A call that cannot be split
 * (the plan's reason, at its line; arguments whose first axes differ; arguments read whole that alone exceed the
 * limit) raises lorikeet.DeviceMemoryError (a MemoryError) naming the sizes and the reason. Device arrays as
 * arguments are never split (the call runs as it is). The environment is read at import and by
 * _lorikeet._split_reload_env() (tests). */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include "shim.h"

#define SETS 2

static _Atomic int64_t n_split_calls, n_pieces; /* _lorikeet._split_stats() */
static int64_t env_limit = -1; /* LORIKEET_GPU_MEMORY_LIMIT in bytes, or -1 */
static bool env_test;          /* LORIKEET_SPLIT_TEST=1: the host backends split too */
static char env_error[160];    /* the limit's text was not understood */
bool lk_split_host;            /* env_test and a limit: invoke() asks lk_split_call */

int lk_split_reload_env(void)
{
    const char *lim = getenv("LORIKEET_GPU_MEMORY_LIMIT"), *test = getenv("LORIKEET_SPLIT_TEST");
    env_limit = -1;
    env_error[0] = 0;
    if (lim && *lim) {
        char *end;
        double v = strtod(lim, &end);
        double scale = 1;
        switch (*end) {
        case 'k': case 'K': scale = 1024.0; end++; break;
        case 'm': case 'M': scale = 1024.0 * 1024; end++; break;
        case 'g': case 'G': scale = 1024.0 * 1024 * 1024; end++; break;
        case 't': case 'T': scale = 1024.0 * 1024 * 1024 * 1024; end++; break;
        default: break;
        }
        if (*end == 'b' || *end == 'B') end++;
        if (end == lim || *end || !(v > 0) || v * scale > 9e18)
            snprintf(env_error, sizeof env_error, "LORIKEET_GPU_MEMORY_LIMIT=%.60s is not a size in bytes (like 4G, "
                     "512M or 1000000)", lim);
        else env_limit = (int64_t)(v * scale);
    }
    env_test = test && strcmp(test, "1") == 0;
    lk_split_host = env_test && (env_limit > 0 || env_error[0]);
    return 0;
}

PyObject *lk_split_stats(PyObject *self, PyObject *unused)
{
    return Py_BuildValue("{sLsL}", "calls", (long long)atomic_load(&n_split_calls), "pieces",
                         (long long)atomic_load(&n_pieces));
}

PyObject *lk_split_reload_env_py(PyObject *self, PyObject *unused)
{
    lk_split_reload_env();
    Py_RETURN_NONE;
}

static void human(char *buf, size_t n, double bytes)
{
    if (bytes >= 1e9) snprintf(buf, n, "%.2f GB", bytes / 1e9);
    else if (bytes >= 1e6) snprintf(buf, n, "%.1f MB", bytes / 1e6);
    else snprintf(buf, n, "%.0f bytes", bytes);
}

/* ---- the arguments ---- */

typedef struct SplitArg {
    IrSplitArgKind kind;
    int param;
    IrDtype dtype;
    PyArrayObject *a;
    int64_t *slot;          /* its slots: data, base, shape[ndim], strides[ndim] */
    int ndim;
    char *data;             /* its data (the slots are changed per piece) */
    int64_t stride0;
    int64_t lo_other, hi_other; /* the bytes one row spans about its start: [lo_other, hi_other) */
    int64_t row_c_bytes;    /* a row's elements times their size (what a result row of its shape holds) */
    uint64_t set[SETS];     /* ROWS: a piece's rows, per set; WHOLE: set[0], all of it (when copied) */
} SplitArg;

/* Rows [r0, r0 + rows) of a: the lowest byte they touch and how many bytes from there. */
static void rows_span(const SplitArg *x, int64_t r0, int64_t rows, char **lo, int64_t *nbytes)
{
    if (rows <= 0 || x->hi_other <= x->lo_other) {
        *lo = x->data;
        *nbytes = 0;
        return;
    }
    int64_t last = (rows - 1) * x->stride0;
    char *start = x->data + r0 * x->stride0;
    *lo = start + x->lo_other + (last < 0 ? last : 0);
    *nbytes = (x->hi_other - x->lo_other) + (last < 0 ? -last : last);
}

static void describe_arg(SplitArg *x)
{
    PyArrayObject *a = x->a;
    x->ndim = PyArray_NDIM(a);
    x->data = PyArray_DATA(a);
    x->stride0 = x->ndim ? PyArray_STRIDE(a, 0) : 0;
    int64_t neg = 0, pos = PyArray_ITEMSIZE(a), elems = 1;
    bool empty = false;
    for (int d = 1; d < x->ndim; d++) {
        npy_intp dim = PyArray_DIM(a, d);
        if (dim == 0) empty = true;
        elems *= dim;
        int64_t span = (dim > 0 ? dim - 1 : 0) * PyArray_STRIDE(a, d);
        if (span < 0) neg += span;
        else pos += span;
    }
    x->lo_other = empty ? 0 : neg;
    x->hi_other = empty ? 0 : pos;
    x->row_c_bytes = elems * PyArray_ITEMSIZE(a);
}

/* ---- combining scalars (ir.h's reductions, on the slot representation: int64, or a double's bits) ---- */

static double as_f(int64_t v)
{
    double f;
    memcpy(&f, &v, sizeof f);
    return f;
}

static int64_t of_f(double f, IrDtype dt)
{
    if (dt == IR_DT_FLOAT32) f = (float)f;
    if (dt == IR_DT_FLOAT16) f = rt_half_to_double(rt_half_from_double(f));
    int64_t v;
    memcpy(&v, &f, sizeof v);
    return v;
}

/* An integer of dt's width, extended back to the slot's int64 as compiled code leaves it. */
static int64_t wrap_int(uint64_t v, IrDtype dt)
{
    int bits = ir_dtype_bits(dt);
    if (bits >= 64) return (int64_t)v;
    uint64_t mask = ((uint64_t)1 << bits) - 1;
    v &= mask;
    if (ir_dtype_is_signed(dt) && (v >> (bits - 1))) v |= ~mask;
    return (int64_t)v;
}

static bool less(int64_t a, int64_t b, IrDtype dt)
{
    return ir_dtype_is_signed(dt) ? a < b : (uint64_t)a < (uint64_t)b;
}

static int64_t combine(int64_t acc, int64_t x, IrReduceOp op, IrDtype dt)
{
    if (dt == IR_DT_BOOL) {
        switch (op) {
        case IR_RED_AND: case IR_RED_MUL: case IR_RED_MIN: return acc && x;
        case IR_RED_OR: case IR_RED_ADD: case IR_RED_MAX: case IR_RED_NANMAX: return acc || x;
        case IR_RED_NANMIN: return acc && x;
        case IR_RED_ARGMIN: case IR_RED_ARGMAX: case IR_RED_FUNC: return acc;
        }
    }
    if (ir_dtype_is_float(dt)) {
        double a = as_f(acc), b = as_f(x);
        bool first = dt == IR_DT_FLOAT16; /* float16 gives the first operand of equal ones, the others the second */
        switch (op) {
        case IR_RED_ADD: return of_f(a + b, dt);
        case IR_RED_MUL: return of_f(a * b, dt);
        case IR_RED_MIN: return isnan(a) ? acc : isnan(b) ? x : (b < a || (b == a && !first)) ? x : acc;
        case IR_RED_MAX: return isnan(a) ? acc : isnan(b) ? x : (b > a || (b == a && !first)) ? x : acc;
        case IR_RED_NANMIN: return isnan(b) ? acc : isnan(a) ? x : (b < a || (b == a && !first)) ? x : acc;
        case IR_RED_NANMAX: return isnan(b) ? acc : isnan(a) ? x : (b > a || (b == a && !first)) ? x : acc;
        case IR_RED_AND: return of_f((a != 0 && b != 0) ? 1.0 : 0.0, dt);
        case IR_RED_OR: return of_f((a != 0 || b != 0) ? 1.0 : 0.0, dt);
        case IR_RED_ARGMIN: case IR_RED_ARGMAX: case IR_RED_FUNC: return acc;
        }
        return acc;
    }
    switch (op) {
    case IR_RED_ADD: return wrap_int((uint64_t)acc + (uint64_t)x, dt);
    case IR_RED_MUL: return wrap_int((uint64_t)acc * (uint64_t)x, dt);
    case IR_RED_MIN: case IR_RED_NANMIN: return less(x, acc, dt) ? x : acc;
    case IR_RED_MAX: case IR_RED_NANMAX: return less(acc, x, dt) ? x : acc;
    case IR_RED_AND: return acc && x;
    case IR_RED_OR: return acc || x;
    case IR_RED_ARGMIN: case IR_RED_ARGMAX: case IR_RED_FUNC: return acc;
    }
    return acc;
}

/* ---- the results ---- */

typedef struct Leaf {
    IrSplitResult r;
    int slot;             /* its first slot in ret */
    RtBuffer *full;       /* IR_SPLIT_CONCAT: the whole result, on the host */
    int64_t shape[IR_MAX_DIMS];
    int64_t row_bytes;
    int64_t value;        /* scalars: combined so far (argmin, argmax: the index in the whole call) */
    const SplitArg *arg;  /* argmin, argmax: the argument they compare */
    double best_f;        /* argmin, argmax: the element at value */
    int64_t best_i;
    bool best_nan;
} Leaf;

static void find_leaves(const IrType *t, int *slot, Leaf *leaves, int *n, int max)
{
    switch (t->kind) {
    case IR_TY_SCALAR: case IR_TY_ARRAY:
        if (*n < max) leaves[*n].slot = *slot;
        (*n)++;
        *slot += ir_abi_slots(t);
        return;
    case IR_TY_TUPLE:
        for (int i = 0; i < t->nelems; i++) find_leaves(t->elems[i], slot, leaves, n, max);
        return;
    case IR_TY_NONE: case IR_TY_SLICE: case IR_TY_RANGE: case IR_TY_DTYPE: case IR_TY_FUNC: case IR_TY_RNG:
        *slot += ir_abi_slots(t);
        return;
    }
}

/* ---- the driver ---- */

typedef struct LkSplit {
    LkSpec *s;
    const LkRunner *run;
    int64_t *slots, *ret;
    SplitArg args[LK_MAX_ARRAYS];
    int nargs;
    Leaf leaves[LK_MAX_ARRAYS];
    int nleaves;
    int64_t n;             /* the rows */
    int64_t rows;          /* rows of a piece */
    int64_t set_bytes[LK_MAX_ARRAYS]; /* per arg: the bytes of a set */
    RtCtx out;             /* owns the whole results */
} LkSplit;


/* Points the slots of every ROWS argument at set `set` for rows [r0, r0 + rows). */
static void aim(LkSplit *sp, int set, int64_t r0, int64_t rows)
{
    for (int i = 0; i < sp->nargs; i++) {
        SplitArg *x = &sp->args[i];
        if (x->kind != IR_SPLIT_ARG_ROWS) continue;
        char *lo;
        int64_t nbytes;
        rows_span(x, r0, rows, &lo, &nbytes);
        x->slot[0] = (int64_t)(x->set[set] + (uint64_t)((x->data + r0 * x->stride0) - lo));
        x->slot[2] = rows;
    }
}

/* The helper thread of a call: it loads the pieces it is given, one at a time, while the calling thread runs the
 * one before. One thread for the whole call (a thread of its own has its own gpu stream, and its own team for
 * the staging copies' memcpy, made once). Without a thread the loads run on the caller, in turn. */
typedef struct Loader {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    enum { LOADER_IDLE, LOADER_JOB, LOADER_DONE, LOADER_QUIT } state;
    LkSplit *sp;
    int set;
    int64_t r0, rows;
    int rc;
    LkDiag diag;
    pthread_t thread;
    bool started;
} Loader;

static int load_piece(LkSplit *sp, int set, int64_t r0, int64_t rows, LkDiag *diag)
{
    for (int i = 0; i < sp->nargs; i++) {
        SplitArg *x = &sp->args[i];
        if (x->kind != IR_SPLIT_ARG_ROWS) continue;
        char *lo;
        int64_t nbytes;
        rows_span(x, r0, rows, &lo, &nbytes);
        if (nbytes && sp->run->up(x->set[set], lo, nbytes, diag) < 0) return -1;
    }
    return 0;
}

static void *loader_main(void *p)
{
    Loader *l = p;
    pthread_mutex_lock(&l->mu);
    for (;;) {
        while (l->state != LOADER_JOB && l->state != LOADER_QUIT) pthread_cond_wait(&l->cv, &l->mu);
        if (l->state == LOADER_QUIT) break;
        pthread_mutex_unlock(&l->mu);
        int rc = load_piece(l->sp, l->set, l->r0, l->rows, &l->diag);
        pthread_mutex_lock(&l->mu);
        l->rc = rc;
        l->state = LOADER_DONE;
        pthread_cond_broadcast(&l->cv);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

static void loader_init(Loader *l, LkSplit *sp)
{
    memset(l, 0, sizeof *l);
    l->sp = sp;
    l->state = LOADER_IDLE;
    if (pthread_mutex_init(&l->mu, NULL) != 0) return;
    if (pthread_cond_init(&l->cv, NULL) != 0) {
        pthread_mutex_destroy(&l->mu);
        return;
    }
    l->started = pthread_create(&l->thread, NULL, loader_main, l) == 0;
    if (!l->started) {
        pthread_cond_destroy(&l->cv);
        pthread_mutex_destroy(&l->mu);
    }
}

/* Rows [r0, r0 + rows) into set `set`, on the helper (or here, when there is none, at load_wait). */
static void load_start(Loader *l, int set, int64_t r0, int64_t rows)
{
    if (!l->started) {
        l->set = set, l->r0 = r0, l->rows = rows;
        l->state = LOADER_JOB;
        return;
    }
    pthread_mutex_lock(&l->mu);
    l->set = set, l->r0 = r0, l->rows = rows;
    l->state = LOADER_JOB;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

/* The load started last is done: 0, or -1 with diag set. */
static int load_wait(Loader *l, LkDiag *diag)
{
    if (!l->started) {
        if (l->state != LOADER_JOB) return 0;
        l->state = LOADER_IDLE;
        return load_piece(l->sp, l->set, l->r0, l->rows, diag);
    }
    pthread_mutex_lock(&l->mu);
    while (l->state == LOADER_JOB) pthread_cond_wait(&l->cv, &l->mu);
    int rc = l->state == LOADER_DONE ? l->rc : 0;
    if (rc < 0) *diag = l->diag;
    l->state = LOADER_IDLE;
    pthread_mutex_unlock(&l->mu);
    return rc;
}

/* Waits for a load under way, then ends the helper. */
static void loader_end(Loader *l)
{
    if (!l->started) return;
    LkDiag ignored;
    load_wait(l, &ignored);
    pthread_mutex_lock(&l->mu);
    l->state = LOADER_QUIT;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->thread, NULL);
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
    l->started = false;
}

/* argmin and argmax: the element of x at flattened index k of the piece starting at row r0, and whether it
 * replaces the best so far (ir.h: strictly better, or NaN where the best is not; earlier pieces first). */
static int arg_combine(Leaf *lf, int64_t r0, int64_t rows, int64_t k, bool first, LkDiag *diag)
{
    const SplitArg *x = lf->arg;
    int64_t itemsize = PyArray_ITEMSIZE(x->a), row_elems = x->row_c_bytes / (itemsize ? itemsize : 1);
    if (row_elems < 1) row_elems = 1;
    if (k < 0 || k >= rows * row_elems) {
        lk_diag_set(diag, LK_ERR_INTERNAL, "", 0, 0, "a piece's argmin or argmax is out of its rows");
        return -1;
    }
    int64_t row = r0 + k / row_elems, within = k % row_elems;
    const char *p = x->data + row * x->stride0;
    for (int d = x->ndim - 1; d >= 1; d--) {
        npy_intp dim = PyArray_DIM(x->a, d);
        p += (within % dim) * PyArray_STRIDE(x->a, d);
        within /= dim;
    }
    double f = 0;
    int64_t i = 0;
    switch (x->dtype) {
    case IR_DT_BOOL: i = *(const uint8_t *)p != 0; break;
    case IR_DT_INT8: i = *(const int8_t *)p; break;
    case IR_DT_INT16: i = *(const int16_t *)p; break;
    case IR_DT_INT32: i = *(const int32_t *)p; break;
    case IR_DT_INT64: i = *(const int64_t *)p; break;
    case IR_DT_UINT8: i = *(const uint8_t *)p; break;
    case IR_DT_UINT16: i = *(const uint16_t *)p; break;
    case IR_DT_UINT32: i = *(const uint32_t *)p; break;
    case IR_DT_UINT64: i = (int64_t) * (const uint64_t *)p; break;
    case IR_DT_FLOAT16: f = rt_half_to_double(*(const uint16_t *)p); break;
    case IR_DT_FLOAT32: f = *(const float *)p; break;
    case IR_DT_FLOAT64: f = *(const double *)p; break;
    case IR_DT_COMPLEX64: case IR_DT_COMPLEX128: /* unordered: no argmin or argmax reaches here */
    case IR_DT_COUNT: break;
    }
    bool is_float = ir_dtype_is_float(x->dtype), nan = is_float && isnan(f), is_min = lf->r.op == IR_RED_ARGMIN;
    bool better;
    if (first) better = true;
    else if (is_float) better = !lf->best_nan && (nan || (is_min ? f < lf->best_f : f > lf->best_f));
    else if (x->dtype == IR_DT_UINT64) better = is_min ? (uint64_t)i < (uint64_t)lf->best_i : (uint64_t)i > (uint64_t)lf->best_i;
    else better = is_min ? i < lf->best_i : i > lf->best_i;
    if (better) {
        lf->value = r0 * row_elems + k;
        lf->best_f = f;
        lf->best_i = i;
        lf->best_nan = nan;
    }
    return 0;
}

/* Piece results into the whole ones: rows of arrays copied to their place, scalars combined. */
static int collect(LkSplit *sp, RtCtx *ctx, int64_t r0, int64_t rows, bool first, LkDiag *diag)
{
    for (int k = 0; k < sp->nleaves; k++) {
        Leaf *lf = &sp->leaves[k];
        int64_t *v = &sp->ret[lf->slot];
        if (lf->r.kind == IR_SPLIT_COMBINE && lf->arg) {
            if (arg_combine(lf, r0, rows, v[0], first, diag) < 0) return -1;
            continue;
        }
        if (lf->r.kind == IR_SPLIT_COMBINE) {
            lf->value = first ? v[0] : combine(lf->value, v[0], lf->r.op, lf->r.dtype);
            continue;
        }
        if (lf->r.kind == IR_SPLIT_SAME) {
            if (first) lf->value = v[0];
            continue;
        }
        int nd = lf->r.ndim;
        const int64_t *shape = &v[2], *strides = &v[2 + nd];
        int64_t step = ir_dtype_size(lf->r.dtype);
        bool c_order = true;
        for (int d = nd - 1; d >= 0; d--) {
            if (shape[d] != 1 && strides[d] != step) c_order = false;
            step *= shape[d];
        }
        if (first) {
            lf->row_bytes = ir_dtype_size(lf->r.dtype);
            for (int d = 1; d < nd; d++) lf->row_bytes *= shape[d];
            memcpy(lf->shape, shape, sizeof *shape * (size_t)nd);
            lf->shape[0] = sp->n;
            if (!(lf->full = rt_buffer_alloc(&sp->out, sp->n * lf->row_bytes))) {
                lk_diag_set(diag, LK_ERR_MEMORY, "", 0, 0, "cannot allocate a result of %lld bytes on the host",
                            (long long)(sp->n * lf->row_bytes));
                return -1;
            }
        }
        bool same = shape[0] == rows && c_order;
        for (int d = 1; d < nd; d++) same &= shape[d] == lf->shape[d];
        if (!same) {
            lk_diag_set(diag, LK_ERR_INTERNAL, "", 0, 0, "a piece of a split call made a result of another shape "
                        "(%lld rows where %lld were split)", (long long)shape[0], (long long)rows);
            return -1;
        }
        char *dst = (char *)lf->full->data + r0 * lf->row_bytes;
        int64_t nbytes = rows * lf->row_bytes;
        if (nbytes > 0 && sp->run->down(dst, (uint64_t)v[0], nbytes, diag) < 0) return -1;
    }
    return 0;
}

/* One piece: its rows loaded in `set` already. 0, or -1 with diag set (the piece's error). */
static int run_piece(LkSplit *sp, int set, int64_t r0, int64_t rows, bool first, LkDiag *diag)
{
    aim(sp, set, r0, rows);
    atomic_fetch_add(&n_pieces, 1);
    RtCtx ctx = {.err = {.status = LK_OK}};
    int status = sp->run->call(sp->s, &ctx, sp->slots, sp->ret);
    if (status != 0) {
        if (sp->s->posmap) lk_cache_rebase(sp->s->posmap, &ctx.err);
        rt_error_diag(&ctx.err, &sp->s->names, diag);
        rt_ctx_release(&ctx);
        return -1;
    }
    int rc = collect(sp, &ctx, r0, rows, first, diag);
    rt_ctx_release(&ctx);
    if (rc == 0 && sp->run->sync && sp->run->sync(diag) < 0) rc = -1; /* the set is free again */
    return rc;
}

/* The buffer sets of the arguments read by rows, and on a device the arguments read whole, copied once. */
static int begin(LkSplit *sp, LkDiag *diag)
{
    for (int i = 0; i < sp->nargs; i++) {
        SplitArg *x = &sp->args[i];
        if (x->kind == IR_SPLIT_ARG_ROWS) {
            for (int k = 0; k < SETS; k++)
                if (!(x->set[k] = sp->run->alloc(sp->set_bytes[i], diag))) return -1;
        } else if (sp->run->device) {
            char *lo;
            int64_t nbytes;
            rows_span(x, 0, x->ndim ? PyArray_DIM(x->a, 0) : 1, &lo, &nbytes);
            if (!(x->set[0] = sp->run->alloc(nbytes, diag))) return -1;
            if (nbytes && sp->run->up(x->set[0], lo, nbytes, diag) < 0) return -1;
            x->slot[0] = (int64_t)(x->set[0] + (uint64_t)(x->data - lo));
        }
    }
    /* the helper thread's copies may use the sets only once they exist */
    return sp->run->sync ? sp->run->sync(diag) : 0;
}

static void end(LkSplit *sp)
{
    for (int i = 0; i < sp->nargs; i++)
        for (int k = 0; k < SETS; k++)
            if (sp->args[i].set[k]) sp->run->release(sp->args[i].set[k]);
}

/* Every piece, in order, piece i + 1 loading while piece i runs. */
static int run_pieces(LkSplit *sp, int64_t est_out_row, int64_t budget, LkDiag *diag)
{
    /* the first piece is small: it runs before the pipeline starts (nothing overlaps its copies) and measures */
    int64_t first_rows = sp->rows / 8 > 1 ? sp->rows / 8 : 1;
    if (first_rows > sp->n) first_rows = sp->n;
    if (load_piece(sp, 0, 0, first_rows, diag) < 0) return -1;
    if (run_piece(sp, 0, 0, first_rows, true, diag) < 0) return -1;
    /* the first piece measured the results: a later piece is smaller when they were larger than guessed */
    int64_t out_row = 0, widest = 0;
    for (int k = 0; k < sp->nleaves; k++)
        if (sp->leaves[k].r.kind == IR_SPLIT_CONCAT) {
            out_row += sp->leaves[k].row_bytes;
            if (sp->leaves[k].row_bytes > widest) widest = sp->leaves[k].row_bytes;
        }
    int nconcat = 0;
    for (int k = 0; k < sp->nleaves; k++) nconcat += sp->leaves[k].r.kind == IR_SPLIT_CONCAT;
    out_row += (int64_t)(sp->s->split.nrow_temps - nconcat) * widest;
    if (out_row > est_out_row) {
        int64_t in_row = 0;
        for (int i = 0; i < sp->nargs; i++)
            if (sp->args[i].kind == IR_SPLIT_ARG_ROWS) in_row += sp->args[i].stride0 < 0 ? -sp->args[i].stride0 : sp->args[i].stride0;
        int64_t rows = budget / (SETS * in_row + out_row + 1);
        if (rows < 1) rows = 1;
        if (rows < sp->rows) sp->rows = rows;
    }
    int64_t r0 = first_rows;
    if (r0 >= sp->n) return 0;
    Loader *load = malloc(sizeof *load);
    if (!load) {
        lk_diag_set(diag, LK_ERR_MEMORY, "", 0, 0, "cannot allocate the helper of a split call");
        return -1;
    }
    loader_init(load, sp);
    int64_t rows = sp->n - r0 < sp->rows ? sp->n - r0 : sp->rows;
    int set = 1, rc = 0;
    load_start(load, set, r0, rows);
    while (r0 < sp->n && rc == 0) {
        if ((rc = load_wait(load, diag)) < 0) break;
        int64_t next = r0 + rows, next_rows = sp->n - next < sp->rows ? sp->n - next : sp->rows;
        if (next < sp->n) load_start(load, 1 - set, next, next_rows); /* into the set the last piece used */
        rc = run_piece(sp, set, r0, rows, false, diag);
        r0 = next;
        rows = next_rows;
        set = 1 - set;
    }
    loader_end(load); /* waits for a load under way: its set is freed after */
    free(load);
    return rc;
}

/* The error of a call that does not fit and cannot be split: lorikeet.DeviceMemoryError naming the sizes, the
 * limit and why. */
static PyObject *refuse_call(LkSpec *s, const char *fname, int64_t need, int64_t limit, const char *file, int line,
                             const char *why)
{
    char need_s[64], limit_s[64];
    human(need_s, sizeof need_s, (double)need);
    human(limit_s, sizeof limit_s, (double)limit);
    if (need >= 1000000) snprintf(need_s + strlen(need_s), sizeof need_s - strlen(need_s), " (%lld bytes)", (long long)need);
    if (limit >= 1000000) snprintf(limit_s + strlen(limit_s), sizeof limit_s - strlen(limit_s), " (%lld bytes)", (long long)limit);
    LkDiag d = {0};
    lk_diag_set(&d, LK_ERR_MEMORY, file ? file : "", line, 0,
                "%s(): its arrays need about %s of device memory, more than the %s %s, and it cannot run in pieces "
                "along their first axis: %s", fname, need_s, limit_s,
                env_limit > 0 ? "that LORIKEET_GPU_MEMORY_LIMIT allows" : "the device has available", why);
    return lk_raise_diag_as(&d, "DeviceMemoryError");
}


static int tuple_arrays(const IrType *t)
{
    if (t->kind == IR_TY_ARRAY) return 1;
    int n = 0;
    for (int i = 0; t->kind == IR_TY_TUPLE && i < t->nelems; i++) n += tuple_arrays(t->elems[i]);
    return n;
}

/* What the call's arrays need, measured without allocating (every gpu call passes here). */
typedef struct Need {
    int64_t total;      /* bytes of the NumPy arguments */
    int64_t whole;      /* of those read whole */
    int64_t row_in;     /* per row, of those read by rows */
    int64_t widest_row; /* the largest row (C layout) of an argument read by rows */
    int64_t n;          /* the rows (the longest first axis of those read by rows) */
    bool rows_differ, other; /* other: a device array or a tuple of arrays: never split */
} Need;

static void measure(const LkSpec *s, PyObject **objs, int nobjs, Need *need)
{
    *need = (Need){.n = -1};
    int k = 0;
    for (int p = 0; p < s->nargs; p++) {
        const IrType *t = s->arg_types[p];
        if (t->kind == IR_TY_TUPLE && tuple_arrays(t) > 0) need->other = true;
        if (t->kind != IR_TY_ARRAY) continue;
        if (k >= nobjs || !PyArray_Check(objs[k])) {
            need->other = true;
            k++;
            continue;
        }
        PyArrayObject *a = (PyArrayObject *)objs[k++];
        int64_t nbytes = (int64_t)PyArray_NBYTES(a);
        need->total += nbytes;
        if (s->split.ok && s->split.args[p] == IR_SPLIT_ARG_ROWS && PyArray_NDIM(a) == 0) need->other = true;
        if (!s->split.ok || s->split.args[p] != IR_SPLIT_ARG_ROWS || PyArray_NDIM(a) == 0) {
            need->whole += nbytes;
            continue;
        }
        int64_t dim0 = PyArray_DIM(a, 0), stride0 = PyArray_STRIDE(a, 0);
        if (need->n >= 0 && dim0 != need->n) need->rows_differ = true;
        if (dim0 > need->n) need->n = dim0;
        need->row_in += stride0 < 0 ? -stride0 : stride0;
        int64_t row = dim0 ? nbytes / dim0 : 0;
        if (row > need->widest_row) need->widest_row = row;
    }
}

/* Whether this call must run in pieces, and if so runs it. *handled false: the caller runs it whole (nothing was
 * done). slots and ret: the spec's, the arguments already unboxed into slots (objs: the arrays, in order). */
PyObject *lk_split_call(LkSpec *s, const LkRunner *run, PyObject **objs, int nobjs, int64_t *slots, int64_t *ret,
                        bool *handled)
{
    *handled = false;
    if (env_error[0]) {
        *handled = true;
        PyErr_SetString(PyExc_ValueError, env_error);
        return NULL;
    }
    Need m;
    measure(s, objs, nobjs, &m);
    if (m.other) return NULL; /* device arrays are where they are: the call runs as it is */
    /* a guess of the results counts only where it decides between a whole call and pieces (a wrong guess costs
     * time); a call that cannot be split is refused on its arguments alone */
    int64_t est_out_row = s->split.ok ? (int64_t)s->split.nrow_temps * m.widest_row : 0;
    int64_t need = m.total + (m.n > 0 ? m.n * est_out_row : 0);
    int64_t limit = env_limit;
    /* below 1 GiB no device is asked: a call that small fits, or fails as it would anyway */
    if (limit <= 0 && run->available && need >= ((int64_t)1 << 30) && run->available(&limit) < 0) limit = -1;
    if (limit <= 0 || need <= limit) return NULL; /* it fits */
    *handled = true;
    if (!s->split.ok)
        return refuse_call(s, s->func_name, need, limit, s->split.file, s->split.line, s->split.why);
    if (m.rows_differ || m.n <= 0)
        return refuse_call(s, s->func_name, need, limit, NULL, 0,
                           m.n <= 0 ? "its arrays have no rows"
                                    : "the arguments read by rows have first axes of different lengths");
    int64_t budget = (limit - m.whole) / 10 * 9;
    if (budget <= 0)
        return refuse_call(s, s->func_name, need, limit, NULL, 0, "the arguments it reads whole alone take that much");
    LkSplit *sp = PyMem_Calloc(1, sizeof *sp);
    if (!sp) return PyErr_NoMemory();
    PyObject *result = NULL;
    sp->s = s;
    sp->run = run;
    sp->slots = slots;
    sp->ret = ret;
    sp->out = (RtCtx){.err = {.status = LK_OK}};
    sp->n = m.n;
    sp->rows = budget / (SETS * m.row_in + est_out_row + 1);
    if (sp->rows < 1) sp->rows = 1;
    if (sp->rows > m.n) sp->rows = m.n;
    int pos = 0, k = 0;
    for (int p = 0; p < s->nargs; p++) {
        const IrType *t = s->arg_types[p];
        if (t->kind == IR_TY_ARRAY) {
            SplitArg *x = &sp->args[sp->nargs++];
            x->kind = s->split.args[p];
            x->param = p;
            x->dtype = t->dtype;
            x->slot = &slots[pos];
            x->a = (PyArrayObject *)objs[k++];
            describe_arg(x);
            char *lo;
            if (x->kind == IR_SPLIT_ARG_ROWS) rows_span(x, 0, sp->rows, &lo, &sp->set_bytes[sp->nargs - 1]);
        }
        pos += ir_abi_slots(t);
    }
    /* the result leaves, as the plan made them */
    int slot = 0;
    find_leaves(s->ret_type, &slot, sp->leaves, &sp->nleaves, LK_MAX_ARRAYS);
    if (sp->nleaves != s->split.nresults || sp->nleaves > LK_MAX_ARRAYS) {
        PyErr_SetString(PyExc_SystemError, "lorikeet: a split plan does not match its return type (internal error)");
        goto done;
    }
    for (int i = 0; i < sp->nleaves; i++) {
        Leaf *lf = &sp->leaves[i];
        lf->r = s->split.results[i];
        bool arg_op = lf->r.kind == IR_SPLIT_COMBINE && (lf->r.op == IR_RED_ARGMIN || lf->r.op == IR_RED_ARGMAX);
        for (int k = 0; k < sp->nargs && arg_op; k++)
            if (sp->args[k].param == lf->r.arg) lf->arg = &sp->args[k];
        if (arg_op && !lf->arg) {
            PyErr_SetString(PyExc_SystemError, "lorikeet: a split argmin has no argument to compare (internal error)");
            goto done;
        }
    }
    LkDiag diag = {0};
    int rc;
    atomic_fetch_add(&n_split_calls, 1);
    Py_BEGIN_ALLOW_THREADS
    rc = begin(sp, &diag);
    if (rc == 0) rc = run_pieces(sp, est_out_row, budget, &diag);
    end(sp);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        lk_raise_diag(&diag);
        goto done;
    }
    /* the results' slots: the whole arrays and the combined scalars */
    for (int i = 0; i < sp->nleaves; i++) {
        Leaf *lf = &sp->leaves[i];
        int64_t *v = &ret[lf->slot];
        if (lf->r.kind != IR_SPLIT_CONCAT) {
            v[0] = lf->value;
            continue;
        }
        int nd = lf->r.ndim;
        v[0] = (int64_t)(intptr_t)lf->full->data;
        v[1] = (int64_t)(intptr_t)lf->full;
        int64_t step = ir_dtype_size(lf->r.dtype);
        for (int d = nd - 1; d >= 0; d--) {
            v[2 + d] = lf->shape[d];
            v[2 + nd + d] = step;
            step *= lf->shape[d];
        }
    }
    PyObject *owners[LK_MAX_ARRAYS];
    int nowners = 0;
    pos = 0;
    result = lk_box_result(s->ret_type, ret, &pos, &sp->out, objs, owners, &nowners);
done:
    rt_ctx_release(&sp->out);
    PyMem_Free(sp);
    return result;
}

/* ---- the host runner: the test mode's, on the cpu and openmp backends ---- */

static uint64_t host_alloc(int64_t nbytes, LkDiag *diag)
{
    void *p = malloc((size_t)(nbytes > 0 ? nbytes : 1));
    if (!p) lk_diag_set(diag, LK_ERR_MEMORY, "", 0, 0, "cannot allocate %lld bytes for a piece", (long long)nbytes);
    return (uint64_t)(uintptr_t)p;
}

static void host_release(uint64_t p)
{
    free((void *)(uintptr_t)p);
}

static int host_up(uint64_t dst, const char *src, int64_t nbytes, LkDiag *diag)
{
    memcpy((void *)(uintptr_t)dst, src, (size_t)nbytes);
    return 0;
}

static int host_down(char *dst, uint64_t src, int64_t nbytes, LkDiag *diag)
{
    memcpy(dst, (const void *)(uintptr_t)src, (size_t)nbytes);
    return 0;
}

static int host_call(LkSpec *s, RtCtx *ctx, int64_t *slots, int64_t *ret)
{
    return s->entry(ctx, slots, ret);
}

const LkRunner lk_host_runner = {
    .device = false,
    .alloc = host_alloc,
    .release = host_release,
    .up = host_up,
    .down = host_down,
    .call = host_call,
    .sync = NULL,
    .available = NULL,
};

/* ---- what the plan says, for f.inspect_split ---- */

PyObject *lk_split_plan_dict(const LkSpec *s)
{
    static const char *const arg_kind[] = {"scalar", "rows", "whole"};
    static const char *const res_kind[] = {"concatenate", "combine", "same"};
    static const char *const op_name[] = {"add", "mul", "min", "max", "and", "or", "argmin", "argmax", "nanmin",
                                          "nanmax", "func"};
    const IrSplitPlan *p = &s->split;
    PyObject *args = PyList_New(0), *results = PyList_New(0);
    for (int i = 0; args && i < p->nargs; i++) {
        PyObject *k = PyUnicode_FromString(p->ok || p->args[i] != IR_SPLIT_ARG_NONE ? arg_kind[p->args[i]] : "?");
        PyList_Append(args, k);
        Py_XDECREF(k);
    }
    for (int i = 0; results && p->ok && i < p->nresults; i++) {
        const IrSplitResult *r = &p->results[i];
        PyObject *k = r->kind == IR_SPLIT_COMBINE
                          ? PyUnicode_FromFormat("%s %s", res_kind[r->kind], op_name[r->op])
                          : PyUnicode_FromString(res_kind[r->kind]);
        PyList_Append(results, k);
        Py_XDECREF(k);
    }
    if (!args || !results) {
        Py_XDECREF(args);
        Py_XDECREF(results);
        return NULL;
    }
    if (p->ok)
        return Py_BuildValue("{sOsNsNsOsOsO}", "splittable", Py_True, "args", args, "results", results, "reason",
                             Py_None, "file", Py_None, "line", Py_None);
    Py_DECREF(results);
    return Py_BuildValue("{sOsNsOsssssi}", "splittable", Py_False, "args", args, "results", Py_None, "reason", p->why,
                         "file", p->file, "line", p->line);
}
