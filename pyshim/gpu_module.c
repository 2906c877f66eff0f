/* gpu_module.c: the gpu's functions in lorikeet._lorikeet: gpu_available(), gpu_stats(), and two private entry
 * points for tests and the GPU host's checks (scripts/gpu_smoke.py): _nvrtc_compile, and _gpu_selftest, which
 * runs the runtime end to end (NVRTC, module load, launches of both kinds with the parameter block by value,
 * the device error record's lowest-index protocol, the results in the scratch, device buffers of a call) with
 * a tiny kernel written by hand to backends/gpu/kernel_abi.h's conventions. gpu_stats() reads counters only:
 * it never initialises CUDA. */
#include <time.h>
#include "shim.h"

static PyObject *gpu_available(PyObject *self, PyObject *unused)
{
    const char *why;
    Py_BEGIN_ALLOW_THREADS
    why = rt_gpu_unavailable();
    Py_END_ALLOW_THREADS
    if (why) return Py_BuildValue("(Os)", Py_False, why);
    return Py_BuildValue("(OO)", Py_True, Py_None);
}

static PyObject *gpu_stats(PyObject *self, PyObject *unused)
{
    RtGpuStats s = rt_gpu_stats();
    return Py_BuildValue("{sLsLsLsLsLsLsLsLsLsLsLsLsLsL}", "h2d_copies", (long long)s.h2d_copies, "h2d_bytes",
                         (long long)s.h2d_bytes, "d2h_copies", (long long)s.d2h_copies, "d2h_bytes",
                         (long long)s.d2h_bytes, "d2d_copies", (long long)s.d2d_copies, "device_allocations",
                         (long long)s.allocations, "device_frees", (long long)s.frees, "device_live_bytes",
                         (long long)s.live_bytes, "launches", (long long)s.launches, "compiles", (long long)s.compiles,
                         "modules", (long long)s.modules, "cublas_calls", (long long)s.cublas_calls, "waits",
                         (long long)s.waits, "disk_images", (long long)s.disk_images);
}

/* cuBLAS as the runtime finds it (loading the library needs no GPU): (version, path) or (0, why not). */
static PyObject *cublas_status(PyObject *self, PyObject *unused)
{
    const char *why, *path = NULL;
    int version;
    Py_BEGIN_ALLOW_THREADS
    why = rt_cublas_unavailable();
    version = rt_cublas_version(&path);
    Py_END_ALLOW_THREADS
    if (why) return Py_BuildValue("(is)", version, why);
    return Py_BuildValue("(is)", version, path ? path : "");
}

/* _gpu_info() -> the device as `python -m lorikeet info` shows it: {name, compute_capability: (major, minor),
 * multiprocessors, memory_bytes, driver_version}, or None where rt_gpu_unavailable() (gpu_available() says why).
 * Initialises the driver, as gpu_available() does. */
static PyObject *gpu_info(PyObject *self, PyObject *unused)
{
    RtGpuInfo info;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = rt_gpu_info(&info);
    Py_END_ALLOW_THREADS
    if (rc != 0) Py_RETURN_NONE;
    return Py_BuildValue("{sss(ii)sisLsi}", "name", info.name, "compute_capability", info.cc / 10, info.cc % 10,
                         "multiprocessors", info.sms, "memory_bytes", (long long)info.total_mem, "driver_version",
                         info.driver_version);
}

/* _nvrtc_status() -> (version, None), or (0, why NVRTC cannot be used); needs no GPU. */
static PyObject *nvrtc_status(PyObject *self, PyObject *unused)
{
    const char *why;
    int version;
    Py_BEGIN_ALLOW_THREADS
    why = rt_nvrtc_unavailable();
    version = why ? 0 : rt_nvrtc_version();
    Py_END_ALLOW_THREADS
    if (why) return Py_BuildValue("(is)", 0, why);
    return Py_BuildValue("(iO)", version, Py_None);
}

/* NVRTC's failure as InternalError with the whole log (the diagnostic holds only its start). */
static PyObject *raise_compile(const LkDiag *diag, const char *name, const char *log)
{
    if (diag->kind != LK_ERR_INTERNAL || !log) return lk_raise_diag(diag);
    PyObject *mod = PyImport_ImportModule("lorikeet.errors");
    PyObject *cls = mod ? PyObject_GetAttrString(mod, "InternalError") : NULL;
    Py_XDECREF(mod);
    if (cls) PyErr_Format(cls, "NVRTC could not compile %s:\n%s", name, log);
    Py_XDECREF(cls);
    return NULL;
}

static PyObject *nvrtc_compile(PyObject *self, PyObject *args)
{
    const char *src, *name = "lorikeet_kernels.cu";
    int cc, fastmath = 0, cache = 0;
    if (!PyArg_ParseTuple(args, "si|spp", &src, &cc, &name, &fastmath, &cache)) return NULL;
    LkDiag diag = {0};
    size_t size = 0;
    int is_ptx = 0;
    char *log = NULL;
    void *image;
    Py_BEGIN_ALLOW_THREADS
    image = rt_nvrtc_compile(src, name, cc, fastmath, &size, &is_ptx, &log, cache ? &lk_image_store : NULL, &diag);
    Py_END_ALLOW_THREADS
    if (!image) {
        raise_compile(&diag, name, log);
        free(log);
        return NULL;
    }
    free(log);
    PyObject *r = Py_BuildValue("(y#O)", (const char *)image, (Py_ssize_t)size, is_ptx ? Py_True : Py_False);
    free(image);
    return r;
}

/* ---- the self-test kernel ----
 * lk_selftest_map: y[i] = 2 x[i] + 1 over [0, n) (RT_LAUNCH_ELEMENTS, a grid-stride loop); a negative x[i] raises
 * IndexError {i, n, axis 0} at line s[5], lowest failing index first. Slots: error record, scratch, n, x, y, line.
 * lk_selftest_sum: (RT_LAUNCH_REDUCE) results[0] = the sum of (long long)x[i], results[1] = n, each block's
 * partials at GPU_PARTIALS_OFFSET (1024) + 16 * block, combined in block order by the last block to take the
 * ticket, which it leaves zero. Slots: error record, scratch, n, x. */
static const char selftest_src[] =
    "struct LkErr { int status, code, line, where; long long extra[3]; unsigned long long order; unsigned lock; };\n"
    "struct LkSlots6 { long long s[6]; };\n"
    "struct LkSlots4 { long long s[4]; };\n"
    "__device__ void lk_raise_index(long long rec, long long i, long long n, int line)\n"
    "{\n"
    "    LkErr *e = (LkErr *)rec;\n"
    "    unsigned long long me = (unsigned long long)i;\n"
    "    if (atomicMin(&e->order, me) < me) return; /* a lower work item failed: its error stands */\n"
    "    while (atomicCAS(&e->lock, 0u, 1u) != 0u) {}\n"
    "    if (*(volatile unsigned long long *)&e->order == me) {\n"
    "        e->code = %d; e->line = line; e->where = -1;\n"
    "        e->extra[0] = i; e->extra[1] = n; e->extra[2] = 0;\n"
    "        e->status = %d;\n"
    "    }\n"
    "    __threadfence();\n"
    "    atomicExch(&e->lock, 0u);\n"
    "}\n"
    "extern \"C\" __global__ void __launch_bounds__(%d) lk_selftest_map(LkSlots6 p)\n"
    "{\n"
    "    long long n = p.s[2];\n"
    "    const double *x = (const double *)p.s[3];\n"
    "    double *y = (double *)p.s[4];\n"
    "    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
    "         i += (long long)gridDim.x * blockDim.x) {\n"
    "        double v = x[i];\n"
    "        if (v < 0) { lk_raise_index(p.s[0], i, n, (int)p.s[5]); return; }\n"
    "        y[i] = 2.0 * v + 1.0;\n"
    "    }\n"
    "}\n"
    "extern \"C\" __global__ void __launch_bounds__(%d) lk_selftest_sum(LkSlots4 p)\n"
    "{\n"
    "    __shared__ long long sum[%d], cnt[%d];\n"
    "    __shared__ bool last;\n"
    "    long long n = p.s[2];\n"
    "    const double *x = (const double *)p.s[3];\n"
    "    char *scratch = (char *)p.s[1];\n"
    "    long long s = 0, c = 0;\n"
    "    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
    "         i += (long long)gridDim.x * blockDim.x) { s += (long long)x[i]; c += 1; }\n"
    "    unsigned t = threadIdx.x;\n"
    "    sum[t] = s; cnt[t] = c;\n"
    "    __syncthreads();\n"
    "    for (unsigned w = blockDim.x / 2; w > 0; w >>= 1) {\n"
    "        if (t < w) { sum[t] += sum[t + w]; cnt[t] += cnt[t + w]; }\n"
    "        __syncthreads();\n"
    "    }\n"
    "    if (t == 0) {\n"
    "        long long *part = (long long *)(scratch + 1024) + 2 * blockIdx.x;\n"
    "        part[0] = sum[0]; part[1] = cnt[0];\n"
    "        __threadfence();\n"
    "        last = atomicAdd((unsigned *)scratch, 1u) == gridDim.x - 1;\n"
    "    }\n"
    "    __syncthreads();\n"
    "    if (last && t == 0) {\n"
    "        __threadfence();\n"
    "        volatile long long *part = (volatile long long *)(scratch + 1024);\n"
    "        long long S = 0, C = 0;\n"
    "        for (unsigned b = 0; b < gridDim.x; b++) { S += part[2 * b]; C += part[2 * b + 1]; }\n"
    "        long long *res = (long long *)(scratch + 16);\n"
    "        res[0] = S; res[1] = C;\n"
    "        *(volatile unsigned *)scratch = 0u;\n"
    "    }\n"
    "}\n";

static RtGpuModule *selftest_module;

static RtGpuModule *load_selftest(LkDiag *diag, char **log)
{
    if (selftest_module) return selftest_module;
    RtGpuInfo info;
    if (rt_gpu_info(&info) < 0) {
        lk_diag_set(diag, LK_ERR_UNAVAILABLE, "", 0, 0, "%s", rt_gpu_unavailable());
        return NULL;
    }
    char src[sizeof selftest_src + 64];
    snprintf(src, sizeof src, selftest_src, RT_ERR_INDEX, LK_ERR_INDEX, RT_GPU_BLOCK, RT_GPU_BLOCK, RT_GPU_BLOCK,
             RT_GPU_BLOCK);
    size_t size = 0;
    int is_ptx = 0;
    void *image = rt_nvrtc_compile(src, "lk_selftest.cu", info.cc, 0, &size, &is_ptx, log, NULL, diag);
    if (!image) return NULL;
    const char *kernels[] = {"lk_selftest_map", "lk_selftest_sum"};
    selftest_module = rt_gpu_module_load(image, size, is_ptx, kernels, 2, diag);
    free(image);
    return selftest_module;
}

/* _gpu_selftest(x, line=7) -> (y, [sum, count], error, last): x a 1-D float64 array; error None, or (exception
 * name, message, [extra...], line) of the record the map kernel reported; last: y[n-1] read with
 * rt_gpu_read_elem, after which y[0] = -last was written with rt_gpu_write_elem (when n > 0). */
static PyObject *gpu_selftest(PyObject *self, PyObject *args)
{
    PyObject *xobj;
    long long line = 7;
    if (!PyArg_ParseTuple(args, "O|L", &xobj, &line)) return NULL;
    PyArrayObject *x = (PyArrayObject *)PyArray_FROMANY(xobj, NPY_FLOAT64, 1, 1, NPY_ARRAY_IN_ARRAY);
    if (!x) return NULL;
    LkDiag diag = {0};
    char *log = NULL;
    RtGpuModule *m;
    Py_BEGIN_ALLOW_THREADS
    m = rt_gpu_unavailable() ? NULL : load_selftest(&diag, &log);
    Py_END_ALLOW_THREADS
    if (!m) {
        Py_DECREF(x);
        if (diag.kind == LK_OK) lk_diag_set(&diag, LK_ERR_UNAVAILABLE, "", 0, 0, "%s", rt_gpu_unavailable());
        raise_compile(&diag, "lk_selftest.cu", log);
        free(log);
        return NULL;
    }
    free(log);
    int64_t n = PyArray_DIM(x, 0), nbytes = n * 8;
    npy_intp dims[1] = {(npy_intp)n};
    PyArrayObject *y = (PyArrayObject *)PyArray_ZEROS(1, dims, NPY_FLOAT64, 0);
    if (!y) {
        Py_DECREF(x);
        return NULL;
    }
    RtCtx ctx = {0};
    int64_t results[2] = {0, 0};
    double last = 0;
    int failed = 0, alloc_failed = 0, copy_failed = 0;
    Py_BEGIN_ALLOW_THREADS
    RtBuffer *bx = rt_gpu_buffer_alloc(&ctx, nbytes), *by = bx ? rt_gpu_buffer_alloc(&ctx, nbytes) : NULL;
    if (!by) {
        alloc_failed = 1;
    } else if (rt_gpu_copy_to_device((uint64_t)(uintptr_t)bx->data, PyArray_DATA(x), nbytes, &diag) < 0) {
        copy_failed = 1;
    } else {
        int64_t map_slots[6] = {0, 0, n, (int64_t)(uintptr_t)bx->data, (int64_t)(uintptr_t)by->data, line};
        int64_t sum_slots[4] = {0, 0, n, (int64_t)(uintptr_t)bx->data};
        failed = rt_gpu_launch(&ctx, m, 0, map_slots, 6, n, RT_LAUNCH_ELEMENTS) ||
                 rt_gpu_launch(&ctx, m, 1, sum_slots, 4, n, RT_LAUNCH_REDUCE);
        if (!failed) failed = rt_gpu_sync(&ctx);
        if (ctx.err.code != RT_ERR_GPU) {
            RtCtx probe = {0};
            rt_gpu_results(&probe, results, 2);
            /* host code's scalar access: y[n-1] read, y[0] = -y[n-1] written */
            if (n > 0 && rt_gpu_read_elem(&probe, (char *)by->data + 8 * (n - 1), &last, 8) == 0) {
                double neg = -last;
                rt_gpu_write_elem(&probe, by->data, &neg, 8);
            }
            if (probe.err.status) ctx.err = probe.err;
            if (rt_gpu_copy_to_host(PyArray_DATA(y), (uint64_t)(uintptr_t)by->data, nbytes, &diag) < 0) copy_failed = 1;
        }
    }
    Py_END_ALLOW_THREADS
    PyObject *error = NULL;
    if (alloc_failed || copy_failed || ctx.err.code == RT_ERR_GPU) {
        LkDiag d = diag;
        if (!copy_failed) rt_error_diag(&ctx.err, NULL, &d);
        rt_ctx_release(&ctx);
        Py_DECREF(x);
        Py_DECREF(y);
        if (d.kind != LK_ERR_MEMORY) d.kind = LK_ERR_UNAVAILABLE;
        return lk_raise_diag(&d);
    }
    if (failed) {
        LkDiag d = {0};
        rt_error_diag(&ctx.err, NULL, &d);
        const char *kind = d.kind == LK_ERR_INDEX ? "IndexError" : d.kind == LK_ERR_ZERODIV ? "ZeroDivisionError"
                                                                                             : "RuntimeError";
        error = Py_BuildValue("(ss[LLL]i)", kind, d.message, (long long)ctx.err.extra[0], (long long)ctx.err.extra[1],
                              (long long)ctx.err.extra[2], (int)ctx.err.line);
    } else {
        error = Py_NewRef(Py_None);
    }
    rt_ctx_release(&ctx); /* the two device buffers go back, stream-ordered */
    Py_DECREF(x);
    if (!error) {
        Py_DECREF(y);
        return NULL;
    }
    return Py_BuildValue("(N[LL]Nd)", (PyObject *)y, (long long)results[0], (long long)results[1], error, last);
}

/* _gpu_launch_roundtrip(iters, sync_each=True) -> seconds per launch of the one-element map kernel and wait for
 * it (host time); with sync_each False, per launch of iters launches and one wait. */
static PyObject *gpu_launch_roundtrip(PyObject *self, PyObject *args)
{
    int iters, sync_each = 1;
    if (!PyArg_ParseTuple(args, "i|p", &iters, &sync_each)) return NULL;
    LkDiag diag = {0};
    char *log = NULL;
    RtGpuModule *m;
    Py_BEGIN_ALLOW_THREADS
    m = rt_gpu_unavailable() ? NULL : load_selftest(&diag, &log);
    Py_END_ALLOW_THREADS
    if (!m) {
        if (diag.kind == LK_OK) lk_diag_set(&diag, LK_ERR_UNAVAILABLE, "", 0, 0, "%s", rt_gpu_unavailable());
        raise_compile(&diag, "lk_selftest.cu", log);
        free(log);
        return NULL;
    }
    free(log);
    RtCtx ctx = {0};
    double seconds = -1;
    Py_BEGIN_ALLOW_THREADS
    RtBuffer *b = rt_gpu_buffer_alloc(&ctx, 16);
    double one[2] = {1.0, 1.0};
    if (b && rt_gpu_copy_to_device((uint64_t)(uintptr_t)b->data, one, 16, &diag) == 0) {
        int64_t slots[6] = {0, 0, 1, (int64_t)(uintptr_t)b->data, (int64_t)(uintptr_t)b->data + 8, 0};
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int failed = 0;
        for (int i = 0; i < iters && !failed; i++)
            failed = rt_gpu_launch(&ctx, m, 0, slots, 6, 1, RT_LAUNCH_ELEMENTS) || (sync_each && rt_gpu_sync(&ctx));
        if (!sync_each && !failed) failed = rt_gpu_sync(&ctx);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (!failed && iters > 0)
            seconds = ((double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec)) / iters;
    }
    Py_END_ALLOW_THREADS
    int had_error = ctx.err.status != 0;
    if (had_error) rt_error_diag(&ctx.err, NULL, &diag);
    rt_ctx_release(&ctx);
    if (seconds < 0) {
        if (diag.kind == LK_OK) lk_diag_set(&diag, LK_ERR_INTERNAL, "", 0, 0, "the launch round trip failed");
        return lk_raise_diag(&diag);
    }
    return PyFloat_FromDouble(seconds);
}

/* _device_empty(nbytes) -> an uninitialised uint8 DeviceArray made as a call's device buffer is
 * (rt_gpu_buffer_alloc, detached, lk_device_array_from_buffer). */
static PyObject *device_empty(PyObject *self, PyObject *args)
{
    long long nbytes;
    if (!PyArg_ParseTuple(args, "L", &nbytes)) return NULL;
    RtCtx ctx = {0};
    RtBuffer *b;
    Py_BEGIN_ALLOW_THREADS
    b = rt_gpu_buffer_alloc(&ctx, nbytes);
    Py_END_ALLOW_THREADS
    if (!b) {
        LkDiag d = {0};
        rt_error_diag(&ctx.err, NULL, &d);
        if (d.kind != LK_ERR_MEMORY) d.kind = LK_ERR_UNAVAILABLE;
        return lk_raise_diag(&d);
    }
    rt_buffer_detach(&ctx, b);
    int64_t shape[1] = {nbytes};
    return lk_device_array_from_buffer(b, (uint64_t)(uintptr_t)b->data, NPY_UINT8, 1, shape, NULL);
}

/* _device_view(obj) -> None, or (data, dtype, shape, strides, readonly, stream, owner) as lk_device_view sees obj. */
static PyObject *device_view(PyObject *self, PyObject *obj)
{
    LkDeviceView v;
    int rc = lk_device_view(obj, &v);
    if (rc <= 0) return rc < 0 ? NULL : Py_NewRef(Py_None);
    PyObject *shape = PyTuple_New(v.ndim), *strides = PyTuple_New(v.ndim);
    for (int i = 0; shape && strides && i < v.ndim; i++) {
        PyTuple_SET_ITEM(shape, i, PyLong_FromLongLong((long long)v.shape[i]));
        PyTuple_SET_ITEM(strides, i, PyLong_FromLongLong((long long)v.strides[i]));
    }
    PyObject *r = shape && strides ? Py_BuildValue("(KONNOKO)", (unsigned long long)v.data, (PyObject *)v.dtype, shape,
                                                   strides, v.readonly ? Py_True : Py_False,
                                                   (unsigned long long)v.stream, v.owner)
                                   : NULL;
    if (!r) {
        Py_XDECREF(shape);
        Py_XDECREF(strides);
    }
    lk_device_view_release(&v);
    return r;
}

/* _gpu_staging_info() -> the pinned staging of host copies (runtime/gpu_memory.c): its buffer size, the smallest
 * copy it takes, the most it pins, and what is pinned now. Initialises nothing. */
static PyObject *gpu_staging_info(PyObject *self, PyObject *unused)
{
    int64_t chunk, min, cap, held;
    rt_gpu_staging(&chunk, &min, &cap, &held);
    return Py_BuildValue("{sLsLsLsL}", "chunk_bytes", (long long)chunk, "min_bytes", (long long)min, "cap_bytes",
                         (long long)cap, "pinned_bytes", (long long)held);
}

static PyMethodDef gpu_functions[] = {
    {"_gpu_staging_info", gpu_staging_info, METH_NOARGS, "_gpu_staging_info() -> the pinned staging's sizes"},
    {"_device_empty", device_empty, METH_VARARGS, "_device_empty(nbytes) -> an uninitialised uint8 DeviceArray"},
    {"_device_view", device_view, METH_O, "_device_view(obj) -> how the call path sees a device array, or None"},
    {"gpu_available", gpu_available, METH_NOARGS, "gpu_available() -> (True, None) or (False, why not)"},
    {"gpu_stats", gpu_stats, METH_NOARGS, "the gpu's counters (copies, device memory, launches, compiles)"},
    {"_gpu_info", gpu_info, METH_NOARGS, "_gpu_info() -> the device's name, compute capability, driver; or None"},
    {"_nvrtc_status", nvrtc_status, METH_NOARGS, "_nvrtc_status() -> (version, None), or (0, why not)"},
    {"_cublas_status", cublas_status, METH_NOARGS, "_cublas_status() -> (version, path), or (0, why cuBLAS is not used)"},
    {"_nvrtc_compile", nvrtc_compile, METH_VARARGS,
     "_nvrtc_compile(src, cc, name=..., fastmath=False, cache=False) -> (image bytes, is_ptx); InternalError with "
     "NVRTC's log. cache: through the disk cache's layer of images, as gpu compilations do"},
    {"_gpu_selftest", gpu_selftest, METH_VARARGS, "_gpu_selftest(x, line=7) -> (y, [sum, count], error or None, y[-1])"},
    {"_gpu_launch_roundtrip", gpu_launch_roundtrip, METH_VARARGS, "_gpu_launch_roundtrip(iters, sync_each=True) -> seconds each"},
    {NULL},
};

/* Python's sys.path, for NVRTC from pip wheels (site-packages/nvidia/...): names only, no file is opened. */
static void nvrtc_search_dirs(void)
{
    PyObject *path = PySys_GetObject("path"); /* borrowed */
    if (!path || !PyList_Check(path)) return;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(path); i++) {
        PyObject *dir = PyList_GET_ITEM(path, i);
        const char *s = PyUnicode_Check(dir) ? PyUnicode_AsUTF8(dir) : NULL;
        if (!s) {
            PyErr_Clear();
            continue;
        }
        if (strstr(s, "-packages")) rt_nvrtc_add_search_dir(s);
    }
}

int lk_gpu_module_init(PyObject *m)
{
    nvrtc_search_dirs();
    if (lk_device_array_init(m) < 0) return -1;
    return PyModule_AddFunctions(m, gpu_functions);
}
