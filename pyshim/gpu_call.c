/* gpu_call.c: calling code whose arrays live in device memory (BeCompiled.device_data: the gpu backend).
 *
 * NumPy arguments are copied to the device once before the call: arrays whose memory overlaps (a and a view of
 * it, two views of one buffer) share one copy, so that a write through one is seen through the other, as on the
 * host. If the code may write its arguments, each copy goes back once after the call. Results come back as
 * NumPy arrays, one copy per device buffer they use (so several results viewing one buffer still share it
 * on the host); a result that views an argument is a view of that NumPy argument. Scalars come back as on the
 * cpu.
 *
 * When a call waits: a launch does not wait for its kernel. A call waits for its kernels at its end only when
 * it must (run_entry): when it launched a kernel that may raise (backends/gpu knows which checks each kernel
 * kept: a bounds check not proven away, a division by a value not known non-zero, ...), so that the error is
 * raised at the call that caused it, naming its source line; when another library's array was an argument;
 * and, through the copies themselves, when NumPy arrays come back. Host code waits for itself where it needs
 * a value from a kernel (a reduction to a scalar). A call on lorikeet's device arrays whose kernels cannot
 * raise returns once they are queued on this thread's stream: its results record that stream, and everything
 * that reads them later (copy_to_host, np.asarray, another thread's call, __cuda_array_interface__'s consumer,
 * __dlpack__) waits for it or orders its own stream after it; frees are stream-ordered. */
#include "shim.h"

typedef struct HostRange {
    char *lo, *hi;       /* the host bytes of one or more arguments that overlap */
    uint64_t dev;        /* their copy on the device */
    bool writable;
} HostRange;

typedef struct ArgArray {
    PyObject *obj;
    PyArrayObject *a;    /* a NumPy argument (copied in), or NULL: a device array, passed as it is */
    int64_t *data_slot;  /* where its data address is, in the argument slots */
    char *lo, *hi;       /* the bytes it spans */
    int range;           /* its HostRange */
} ArgArray;

/* The lowest and one-past-highest byte an array touches (equal when empty). */
static void span_of(PyArrayObject *a, char **lo, char **hi)
{
    char *base = PyArray_DATA(a);
    npy_intp neg = 0, pos = PyArray_ITEMSIZE(a);
    for (int d = 0; d < PyArray_NDIM(a); d++) {
        npy_intp dim = PyArray_DIM(a, d);
        if (dim == 0) {
            *lo = *hi = base;
            return;
        }
        npy_intp span = (dim - 1) * PyArray_STRIDE(a, d);
        if (span < 0) neg += span;
        else pos += span;
    }
    *lo = base + neg;
    *hi = base + pos;
}

/* Finds the data slot of every array argument, in the order lk_unbox_arg recorded them. */
static void find_arrays(const IrType *t, int64_t *slots, int *pos, ArgArray *arrays, int *n, PyObject **objs)
{
    switch (t->kind) {
    case IR_TY_SCALAR: *pos += ir_abi_slots(t); return; /* a complex is two slots */
    case IR_TY_ARRAY:
        arrays[*n].obj = objs[*n];
        arrays[*n].a = PyArray_Check(objs[*n]) ? (PyArrayObject *)objs[*n] : NULL;
        arrays[*n].range = -1;
        arrays[*n].data_slot = &slots[*pos];
        (*n)++;
        *pos += 2 + 2 * t->ndim;
        return;
    case IR_TY_TUPLE:
        for (int i = 0; i < t->nelems; i++) find_arrays(t->elems[i], slots, pos, arrays, n, objs);
        return;
    case IR_TY_NONE: case IR_TY_SLICE: case IR_TY_RANGE: case IR_TY_DTYPE: case IR_TY_FUNC: return;
    case IR_TY_RNG: *pos += ir_abi_slots(t); return; /* its state: host memory, which host code draws from */
    }
}

static int by_lo(const void *x, const void *y)
{
    const ArgArray *a = *(const ArgArray *const *)x, *b = *(const ArgArray *const *)y;
    return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* Merges the arrays' byte spans into ranges (overlapping spans: one range), copies each range to the device
 * and points each array's data slot into its range's copy. -1 with an exception set. */
static int copy_in(ArgArray *arrays, int n, HostRange *ranges, int *nranges)
{
    ArgArray *order[LK_MAX_ARRAYS];
    int nhost = 0;
    for (int i = 0; i < n; i++) {
        if (!arrays[i].a) continue; /* on the device already */
        span_of(arrays[i].a, &arrays[i].lo, &arrays[i].hi);
        order[nhost++] = &arrays[i];
    }
    qsort(order, (size_t)nhost, sizeof *order, by_lo);
    *nranges = 0;
    for (int i = 0; i < nhost; i++) {
        ArgArray *x = order[i];
        HostRange *last = *nranges ? &ranges[*nranges - 1] : NULL;
        if (last && x->lo < last->hi) {
            if (x->hi > last->hi) last->hi = x->hi;
        } else {
            ranges[(*nranges)++] = (HostRange){x->lo, x->hi, 0, false};
        }
        x->range = *nranges - 1;
        if (PyArray_ISWRITEABLE(x->a)) ranges[x->range].writable = true;
    }
    for (int r = 0; r < *nranges; r++) {
        LkDiag diag = {0};
        int64_t nbytes = ranges[r].hi - ranges[r].lo;
        ranges[r].dev = rt_gpu_malloc(nbytes ? nbytes : 1, &diag);
        if (!ranges[r].dev || (nbytes && rt_gpu_copy_to_device(ranges[r].dev, ranges[r].lo, nbytes, &diag) < 0)) {
            lk_raise_diag(&diag);
            return -1;
        }
    }
    for (int i = 0; i < n; i++) {
        if (arrays[i].range < 0) continue;
        HostRange *r = &ranges[arrays[i].range];
        *arrays[i].data_slot = (int64_t)(r->dev + (uint64_t)((char *)PyArray_DATA(arrays[i].a) - r->lo));
    }
    return 0;
}

static int copy_back(HostRange *ranges, int n)
{
    for (int r = 0; r < n; r++) {
        int64_t nbytes = ranges[r].hi - ranges[r].lo;
        if (!ranges[r].writable || !nbytes) continue;
        LkDiag diag = {0};
        if (rt_gpu_copy_to_host(ranges[r].lo, ranges[r].dev, nbytes, &diag) < 0) {
            lk_raise_diag(&diag);
            return -1;
        }
    }
    return 0;
}

/* The host copy of device buffer b (made once per call, in hctx). */
typedef struct BufferCopy {
    RtBuffer *dev, *host;
} BufferCopy;

/* Rewrites the returned arrays' slots to host memory: views of an argument point into that NumPy argument,
 * buffers of the call are copied to host buffers of hctx. -1 with an exception set. */
static int results_to_host(const IrType *t, int64_t *slots, int *pos, RtCtx *ctx, RtCtx *hctx, ArgArray *arrays,
                           HostRange *ranges, BufferCopy *copies, int *ncopies)
{
    switch (t->kind) {
    case IR_TY_SCALAR: *pos += ir_abi_slots(t); return 0; /* a complex is two slots */
    case IR_TY_ARRAY: {
        uint64_t data = (uint64_t)slots[*pos];
        void *base = (void *)(intptr_t)slots[*pos + 1];
        *pos += 2 + 2 * t->ndim;
        if (RT_IS_ARG_BASE(base)) {
            ArgArray *arg = &arrays[(uintptr_t)base - 1];
            HostRange *r = &ranges[arg->range];
            slots[*pos - 2 - 2 * t->ndim] = (int64_t)(intptr_t)(r->lo + (data - r->dev));
            return 0;
        }
        if (!rt_is_buffer_of(ctx, base)) {
            PyErr_SetString(PyExc_SystemError, "lorikeet: a returned device array has no known owner (internal error)");
            return -1;
        }
        RtBuffer *dev = base, *host = NULL;
        for (int i = 0; i < *ncopies; i++)
            if (copies[i].dev == dev) host = copies[i].host;
        if (!host) {
            host = rt_buffer_alloc(hctx, dev->nbytes);
            LkDiag diag = {0};
            if (!host) {
                RtNames none = {0};
                rt_error_diag(&hctx->err, &none, &diag);
                lk_raise_diag(&diag);
                return -1;
            }
            if (dev->nbytes && rt_gpu_copy_to_host(host->data, (uint64_t)(uintptr_t)dev->data, dev->nbytes, &diag) < 0) {
                lk_raise_diag(&diag);
                return -1;
            }
            copies[(*ncopies)++] = (BufferCopy){dev, host};
        }
        slots[*pos - 2 - 2 * t->ndim] = (int64_t)(intptr_t)((char *)host->data + (data - (uint64_t)(uintptr_t)dev->data));
        slots[*pos - 1 - 2 * t->ndim] = (int64_t)(intptr_t)host;
        return 0;
    }
    case IR_TY_TUPLE:
        for (int i = 0; i < t->nelems; i++)
            if (results_to_host(t->elems[i], slots, pos, ctx, hctx, arrays, ranges, copies, ncopies) < 0) return -1;
        return 0;
    case IR_TY_NONE: case IR_TY_SLICE: case IR_TY_RANGE: case IR_TY_DTYPE: case IR_TY_FUNC: return 0;
    case IR_TY_RNG: *pos += ir_abi_slots(t); return 0; /* not a result (typespec refuses returning one) */
    }
    return 0;
}

/* The Python value of a result when some argument was a device array: arrays stay on the device (a DeviceArray
 * owning the call's buffer, or viewing the device argument it views); a view of a NumPy argument is a view of
 * that argument (copied back); other values as on the cpu. */
typedef struct DeviceOwner {
    RtBuffer *buf;
    PyObject *array; /* the DeviceArray that owns buf (borrowed: the results hold it) */
} DeviceOwner;

static PyObject *box_on_device(const IrType *t, int64_t *slots, int *pos, RtCtx *ctx, ArgArray *arrays,
                               HostRange *ranges, PyObject **objs, DeviceOwner *owners, int *nowners)
{
    if (t->kind == IR_TY_TUPLE) {
        PyObject *tup = PyTuple_New(t->nelems);
        for (int i = 0; tup && i < t->nelems; i++) {
            PyObject *v = box_on_device(t->elems[i], slots, pos, ctx, arrays, ranges, objs, owners, nowners);
            if (!v) Py_CLEAR(tup);
            else PyTuple_SET_ITEM(tup, i, v);
        }
        return tup;
    }
    if (t->kind != IR_TY_ARRAY) {
        PyObject *none[1];
        int n = 0;
        return lk_box_result(t, slots, pos, ctx, none, none, &n);
    }
    int at = *pos;
    *pos += 2 + 2 * t->ndim;
    uint64_t data = (uint64_t)slots[at];
    void *base = (void *)(intptr_t)slots[at + 1];
    const int64_t *shape = &slots[at + 2], *strides = &slots[at + 2 + t->ndim];
    int type_num = lk_npy_type(t->dtype);
    if (RT_IS_ARG_BASE(base)) {
        ArgArray *arg = &arrays[(uintptr_t)base - 1];
        if (!arg->a) return lk_device_array_view(arg->obj, data, type_num, t->ndim, shape, strides);
        HostRange *r = &ranges[arg->range]; /* a view of a NumPy argument: of it, on the host */
        slots[at] = (int64_t)(intptr_t)(r->lo + (data - r->dev));
        int p = at, nown = 0;
        PyObject *own[LK_MAX_ARRAYS];
        return lk_box_result(t, slots, &p, ctx, objs, own, &nown);
    }
    for (int i = 0; i < *nowners; i++)
        if (owners[i].buf == base) return lk_device_array_view(owners[i].array, data, type_num, t->ndim, shape, strides);
    if (!rt_is_buffer_of(ctx, base) || *nowners >= LK_MAX_ARRAYS) {
        PyErr_SetString(PyExc_SystemError, "lorikeet: a returned device array has no known owner (internal error)");
        return NULL;
    }
    rt_buffer_detach(ctx, base);
    PyObject *arr = lk_device_array_from_buffer(base, data, type_num, t->ndim, shape, strides);
    if (arr) owners[(*nowners)++] = (DeviceOwner){base, arr};
    return arr;
}

/* Orders this thread's stream after the queued work of every lorikeet DeviceArray argument made or used on
 * another thread's stream (an event: nothing waits on the host). *foreign: whether some device argument is
 * another library's. -1 with an exception set. */
static int order_after_arguments(ArgArray *arrays, int n, bool *foreign)
{
    *foreign = false;
    uint64_t mine = rt_gpu_stream_if_made();
    for (int i = 0; i < n; i++) {
        if (arrays[i].a) continue;
        if (!lk_is_device_array(arrays[i].obj)) {
            *foreign = true;
            continue;
        }
        uint64_t stream = lk_device_array_stream(arrays[i].obj);
        LkDiag diag = {0};
        if (stream && stream != mine && rt_gpu_stream_wait(stream, &diag) < 0) {
            if (diag.kind != LK_ERR_MEMORY) diag.kind = LK_ERR_UNAVAILABLE;
            lk_raise_diag(&diag);
            return -1;
        }
    }
    return 0;
}

/* Runs the entry, and waits for its kernels when it must: when one that may raise was launched (its errors are
 * this call's, raised here with their source line), or when another library's array was an argument (lorikeet
 * cannot tell that library when its kernels are done with the memory). A call of kernels that cannot raise,
 * on lorikeet's arrays, returns right after queuing them; whatever reads its results later (a copy to the
 * host, another thread's stream, another library) waits for this thread's stream first. */
static int run_entry(LkSpec *s, RtCtx *ctx, int64_t *slots, int64_t *ret, bool foreign)
{
    int status = s->entry(ctx, slots, ret);
    if (!rt_gpu_errors_pending() && !foreign) return status;
    if (status == 0) return rt_gpu_sync(ctx);
    /* the host code failed after launching kernels that may raise: their errors came first in program order */
    RtCtx kernels = {.err = {.status = LK_OK}};
    if (rt_gpu_sync(&kernels) != 0 && kernels.err.code != RT_ERR_GPU) ctx->err = kernels.err;
    rt_ctx_release(&kernels);
    return status;
}

/* ---- the runner of split_call.c on the device: pieces of rows through device memory ---- */

static uint64_t gpu_alloc(int64_t nbytes, LkDiag *diag)
{
    return rt_gpu_malloc(nbytes > 0 ? nbytes : 1, diag);
}

static int gpu_up(uint64_t dst, const char *src, int64_t nbytes, LkDiag *diag)
{
    return rt_gpu_copy_to_device(dst, src, nbytes, diag);
}

static int gpu_down(char *dst, uint64_t src, int64_t nbytes, LkDiag *diag)
{
    return rt_gpu_copy_to_host(dst, src, nbytes, diag);
}

static int gpu_call(LkSpec *s, RtCtx *ctx, int64_t *slots, int64_t *ret)
{
    return run_entry(s, ctx, slots, ret, false);
}

/* This thread's stream has done everything queued on it (a piece's kernels read their buffers no longer). */
static int gpu_sync(LkDiag *diag)
{
    uint64_t stream = rt_gpu_stream(diag);
    return stream ? rt_gpu_stream_sync(stream, diag) : -1;
}

static int gpu_available(int64_t *bytes)
{
    LkDiag diag = {0};
    int64_t total;
    return rt_gpu_memory_available(bytes, &total, &diag);
}

const LkRunner lk_gpu_runner = {
    .device = true,
    .alloc = gpu_alloc,
    .release = rt_gpu_free,
    .up = gpu_up,
    .down = gpu_down,
    .call = gpu_call,
    .sync = gpu_sync,
    .available = gpu_available,
};

PyObject *lk_invoke_device(LkSpec *s, PyObject *args, int64_t *slots, int64_t *ret)
{
    PyObject *objs[LK_MAX_ARRAYS], *owners[LK_MAX_ARRAYS];
    ArgArray arrays[LK_MAX_ARRAYS];
    HostRange ranges[LK_MAX_ARRAYS];
    BufferCopy copies[LK_MAX_ARRAYS];
    int nslot = 0, nobjs = 0, narrays = 0, nranges = 0, ncopies = 0, nowners = 0;
    for (int i = 0; i < s->nargs + s->nconsts; i++)
        lk_unbox_arg(lk_spec_arg(s, args, i), s->arg_types[i], slots, &nslot, objs, &nobjs);
    if (PyErr_Occurred()) return NULL;
    int pos = 0;
    for (int i = 0; i < s->nargs + s->nconsts; i++) find_arrays(s->arg_types[i], slots, &pos, arrays, &narrays, objs);
    PyObject *result = NULL;
    bool any_device = false, foreign = false; /* any_device: then results stay on the device */
    for (int i = 0; i < narrays; i++) any_device |= arrays[i].a == NULL;
    if (any_device && order_after_arguments(arrays, narrays, &foreign) < 0) return NULL;
    if (!any_device) { /* NumPy arguments that may not fit: split_call.c runs them in pieces */
        bool handled;
        PyObject *r = lk_split_call(s, &lk_gpu_runner, objs, nobjs, slots, ret, &handled);
        if (handled) return r;
    }
    if (copy_in(arrays, narrays, ranges, &nranges) < 0) goto free_ranges;
    RtCtx ctx = {.err = {.status = LK_OK}}, hctx = {.err = {.status = LK_OK}};
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = run_entry(s, &ctx, slots, ret, foreign);
    Py_END_ALLOW_THREADS
    /* a Generator argument continues where the call's draws (host code's) left it, returned or raised, as on the
     * host */
    if (lk_spec_has_generator(s) && lk_generators_out(s, args, slots) < 0) {
        rt_ctx_release(&ctx);
        goto free_ranges;
    }
    if (any_device) {
        /* the call's queued work uses its device arguments: later readers and frees on other streams wait */
        uint64_t stream = rt_gpu_stream_if_made();
        for (int i = 0; i < narrays; i++)
            if (!arrays[i].a && lk_is_device_array(arrays[i].obj)) lk_device_array_used_on(arrays[i].obj, stream);
    }
    PyObject *raised = NULL;
    if (ctx.printed && lk_print_flush(&ctx, &s->names, lk_raised_recorded(&ctx, status) ? &raised : NULL) < 0) {
        if (s->writes_args && copy_back(ranges, nranges) < 0) PyErr_Clear(); /* the print's exception stays */
    } else if (status != 0) {
        LkDiag diag;
        if (s->posmap) lk_cache_rebase(s->posmap, &ctx.err); /* code cached from another place in the source */
        rt_error_diag(&ctx.err, &s->names, &diag);
        diag.raised_values = raised; /* the reference stays raised's, dropped after the raise below */
        /* what ran before the error stays done, as on the host: the NumPy arguments it wrote get those writes
         * (b[0] = 5 before a failing write of a read-only a); a copy that fails too leaves the first error */
        if (s->writes_args && copy_back(ranges, nranges) < 0) PyErr_Clear();
        lk_raise_diag(&diag);
        Py_XDECREF(raised);
    } else if (s->writes_args && copy_back(ranges, nranges) < 0) {
        /* the exception is set */
    } else if (any_device) {
        DeviceOwner downers[LK_MAX_ARRAYS];
        int ndowners = 0;
        pos = 0;
        result = box_on_device(s->ret_type, ret, &pos, &ctx, arrays, ranges, objs, downers, &ndowners);
    } else {
        pos = 0;
        if (results_to_host(s->ret_type, ret, &pos, &ctx, &hctx, arrays, ranges, copies, &ncopies) == 0) {
            pos = 0;
            result = lk_box_result(s->ret_type, ret, &pos, &hctx, objs, owners, &nowners);
        }
    }
    rt_ctx_release(&hctx);
    rt_ctx_release(&ctx); /* the device buffers not returned go back stream-ordered, after the kernels using them */
free_ranges:
    for (int r = 0; r < nranges; r++)
        if (ranges[r].dev) rt_gpu_free(ranges[r].dev);
    return result;
}
