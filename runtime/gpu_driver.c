/* gpu_driver.c: the CUDA driver API, loaded with dlopen: the device, its primary context, one stream per host
 * thread, modules, launches, and waiting for them.
 *
 * Nothing happens at import: the driver is loaded and initialised (cuInit, the primary context of device 0)
 * by the first call that needs it, once; why it could not be is kept and repeated (rt_gpu_unavailable). The
 * start has two halves of about 100 ms each on the H100 host: cuInit and the device's properties, which a
 * compile needs (the architecture), then the primary context and its memory pool, which only running needs. A
 * compile (rt_gpu_unavailable_soon, rt_gpu_info) takes the first half and leaves the second to a thread of its
 * own, so that the context is made while NVRTC and LLVM compile; whatever runs first waits for it, and so does
 * exit() (the driver's exit handlers must not run under it). Every
 * entry point makes the primary context current on its thread when another one is (CuPy, PyTorch and Numba
 * use the same primary context, so their pointers are ours). CUDA does not survive fork(): a child forked
 * after the initialisation refuses gpu work. A sticky error (an illegal address, a failed launch) leaves the
 * context unusable: the device is marked lost, every later call says so, and frees become no-ops.
 *
 * Each host thread has its own non-blocking stream and its own device block (error record and scratch,
 * gpu_internal.h); a thread's copies and launches go on its stream in order, so no thread waits for another's
 * work. When a thread exits, its state goes to a free list that the next new thread takes, so streams and
 * blocks are made a few times per process, and a stream handle given out (__cuda_array_interface__) stays a
 * valid stream.
 *
 * A launch does not wait. A module knows which of its kernels may write the error record (the backend says);
 * launching one marks the thread's errors as pending until rt_gpu_sync reads the record, and the shim waits at
 * the end of a call only then (rt_gpu_errors_pending). Work of one stream is ordered after another's with an
 * event (rt_gpu_stream_wait), without a host wait. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gpu_internal.h"

GpuDriver gpu_cu;
GpuDevice gpu_dev;

static pthread_once_t init_once = PTHREAD_ONCE_INIT, context_once = PTHREAD_ONCE_INIT,
                      context_start_once = PTHREAD_ONCE_INIT;
static char init_error[512];      /* why the driver could not be initialised; "" when it was */
static char context_error[512];   /* why the primary context could not be opened; "" when it was */
static _Atomic int forked, lost;
static char lost_message[512];
static pid_t init_pid; /* the process that initialised CUDA */
static pthread_mutex_t lost_lock = PTHREAD_MUTEX_INITIALIZER;

static void after_fork_child(void)
{
    atomic_store(&forked, 1);
}

static int load_driver(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        char first[256];
        snprintf(first, sizeof first, "%s", dlerror());
        h = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            snprintf(init_error, sizeof init_error, "no CUDA driver: libcuda.so.1 was not found (%s)", first);
            return -1;
        }
    }
#define SYM(field, name)                                                                                       \
    if (!(*(void **)&gpu_cu.field = dlsym(h, name))) {                                                         \
        snprintf(init_error, sizeof init_error,                                                                \
                 "the CUDA driver is too old: libcuda.so.1 lacks %s (a driver for CUDA 11.2 or newer is needed)", \
                 name);                                                                                        \
        return -1;                                                                                             \
    }
    SYM(Init, "cuInit") SYM(DriverGetVersion, "cuDriverGetVersion") SYM(GetErrorName, "cuGetErrorName")
    SYM(GetErrorString, "cuGetErrorString") SYM(DeviceGetCount, "cuDeviceGetCount") SYM(DeviceGet, "cuDeviceGet")
    SYM(DeviceGetAttribute, "cuDeviceGetAttribute") SYM(DeviceGetName, "cuDeviceGetName")
    SYM(DeviceTotalMem, "cuDeviceTotalMem_v2") SYM(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")
    SYM(CtxGetCurrent, "cuCtxGetCurrent") SYM(CtxSetCurrent, "cuCtxSetCurrent")
    SYM(CtxSynchronize, "cuCtxSynchronize") SYM(StreamCreate, "cuStreamCreate")
    SYM(StreamSynchronize, "cuStreamSynchronize") SYM(MemAlloc, "cuMemAlloc_v2") SYM(MemFree, "cuMemFree_v2")
    SYM(MemHostAlloc, "cuMemHostAlloc") SYM(MemAllocAsync, "cuMemAllocAsync") SYM(MemFreeAsync, "cuMemFreeAsync")
    SYM(DeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool") SYM(MemPoolSetAttribute, "cuMemPoolSetAttribute")
    SYM(MemPoolGetAttribute, "cuMemPoolGetAttribute") SYM(MemPoolTrimTo, "cuMemPoolTrimTo")
    SYM(MemGetInfo, "cuMemGetInfo_v2") SYM(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2")
    SYM(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2") SYM(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2")
    SYM(MemsetD8Async, "cuMemsetD8Async") SYM(ModuleLoadDataEx, "cuModuleLoadDataEx")
    SYM(ModuleGetFunction, "cuModuleGetFunction") SYM(ModuleUnload, "cuModuleUnload") SYM(LaunchKernel, "cuLaunchKernel")
    SYM(PointerGetAttribute, "cuPointerGetAttribute") SYM(EventCreate, "cuEventCreate")
    SYM(EventRecord, "cuEventRecord") SYM(EventSynchronize, "cuEventSynchronize")
    SYM(StreamWaitEvent, "cuStreamWaitEvent")
#undef SYM
    return 0;
}

static const char *err_name(CUresult r)
{
    const char *s = NULL;
    if (!gpu_cu.GetErrorName || gpu_cu.GetErrorName(r, &s) != CUDA_SUCCESS || !s) return "CUDA_ERROR_?";
    return s;
}

static const char *err_text(CUresult r)
{
    const char *s = NULL;
    if (!gpu_cu.GetErrorString || gpu_cu.GetErrorString(r, &s) != CUDA_SUCCESS || !s) return "unknown error";
    return s;
}

static void init_driver(void)
{
    if (load_driver() < 0) return;
    CUresult r = gpu_cu.Init(0);
    if (r == CUDA_ERROR_NO_DEVICE) {
        snprintf(init_error, sizeof init_error, "no CUDA device: the driver found none (cuInit: %s)", err_name(r));
        return;
    }
    if (r == CUDA_ERROR_STUB_LIBRARY) {
        snprintf(init_error, sizeof init_error,
                 "no CUDA driver: the libcuda.so found is the toolkit's stub library, not a driver");
        return;
    }
    if (r != CUDA_SUCCESS) {
        snprintf(init_error, sizeof init_error, "the CUDA driver could not be initialised: cuInit failed with %s (%s)",
                 err_name(r), err_text(r));
        return;
    }
    int count = 0, major = 0, minor = 0, pools = 0;
    gpu_cu.DriverGetVersion(&gpu_dev.info.driver_version);
    if (gpu_cu.DeviceGetCount(&count) != CUDA_SUCCESS || count < 1) {
        snprintf(init_error, sizeof init_error, "no CUDA device: the driver found none");
        return;
    }
    size_t total = 0;
    LkDiag diag = {0};
    if (gpu_check(gpu_cu.DeviceGet(&gpu_dev.dev, 0), "cuDeviceGet", LK_ERR_UNAVAILABLE, &diag) < 0 ||
        gpu_check(gpu_cu.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, gpu_dev.dev),
                  "cuDeviceGetAttribute", LK_ERR_UNAVAILABLE, &diag) < 0 ||
        gpu_check(gpu_cu.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, gpu_dev.dev),
                  "cuDeviceGetAttribute", LK_ERR_UNAVAILABLE, &diag) < 0 ||
        gpu_check(gpu_cu.DeviceGetAttribute(&gpu_dev.info.sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, gpu_dev.dev),
                  "cuDeviceGetAttribute", LK_ERR_UNAVAILABLE, &diag) < 0 ||
        gpu_check(gpu_cu.DeviceGetName(gpu_dev.info.name, (int)sizeof gpu_dev.info.name, gpu_dev.dev),
                  "cuDeviceGetName", LK_ERR_UNAVAILABLE, &diag) < 0 ||
        gpu_check(gpu_cu.DeviceTotalMem(&total, gpu_dev.dev), "cuDeviceTotalMem", LK_ERR_UNAVAILABLE, &diag) < 0) {
        snprintf(init_error, sizeof init_error, "the CUDA device could not be opened: %.400s", diag.message);
        return;
    }
    gpu_dev.info.cc = major * 10 + minor;
    gpu_dev.info.total_mem = (int64_t)total;
    gpu_cu.DeviceGetAttribute(&pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, gpu_dev.dev);
    gpu_dev.pools_supported = pools != 0;
    pthread_atfork(NULL, NULL, after_fork_child); /* CUDA is initialised from here on */
    init_pid = getpid();
    init_error[0] = 0;
}

/* The second half of the start: the primary context (current on the thread that opens it; gpu_enter makes it
 * current on the others) and the memory pool. */
static void open_context(void)
{
    LkDiag diag = {0};
    CUcontext ctx = NULL;
    if (gpu_check(gpu_cu.DevicePrimaryCtxRetain(&ctx, gpu_dev.dev), "cuDevicePrimaryCtxRetain", LK_ERR_UNAVAILABLE,
                  &diag) < 0 ||
        gpu_check(gpu_cu.CtxSetCurrent(ctx), "cuCtxSetCurrent", LK_ERR_UNAVAILABLE, &diag) < 0) {
        snprintf(context_error, sizeof context_error, "the CUDA device could not be opened: %.400s", diag.message);
        return;
    }
    gpu_dev.ctx = ctx;
    if (gpu_dev.pools_supported && gpu_memory_init(&diag) < 0) {
        snprintf(context_error, sizeof context_error, "the CUDA device's memory pool could not be set up: %.400s",
                 diag.message);
        return;
    }
    context_error[0] = 0;
}

/* The context thread and exit(). The driver's own exit handlers tear it down; a thread still inside
 * cuDevicePrimaryCtxRetain then crashes the process (a process that only asked about the device, such as
 * `python -m lorikeet info`, and exited at once: 2 runs in 200 on the H100 host, in libcuda under that call).
 * So exit waits for an opening under way, and a thread that has not begun by then does not begin. The handler is
 * registered after cuInit, so it runs before the driver's. */
typedef enum { OPENER_NOT_BEGUN, OPENER_OPENING, OPENER_DONE, OPENER_EXITING } OpenerState;
static pthread_mutex_t opener_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t opener_done = PTHREAD_COND_INITIALIZER;
static OpenerState opener_state;

static void *context_thread(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&opener_lock);
    bool begin = opener_state == OPENER_NOT_BEGUN;
    if (begin) opener_state = OPENER_OPENING;
    pthread_mutex_unlock(&opener_lock);
    if (!begin) return NULL; /* the process is exiting: whoever needs the context (nobody, likely) opens it */
    pthread_once(&context_once, open_context);
    pthread_mutex_lock(&opener_lock);
    opener_state = OPENER_DONE;
    pthread_cond_broadcast(&opener_done);
    pthread_mutex_unlock(&opener_lock);
    return NULL;
}

static void wait_for_opener(void)
{
    pthread_mutex_lock(&opener_lock);
    while (opener_state == OPENER_OPENING) pthread_cond_wait(&opener_done, &opener_lock);
    if (opener_state == OPENER_NOT_BEGUN) opener_state = OPENER_EXITING;
    pthread_mutex_unlock(&opener_lock);
}

/* The context is opened on a thread of its own; where none can be made, by whoever needs it first. */
static void start_context(void)
{
    if (atexit(wait_for_opener) != 0) return; /* without the wait, no thread: the first user opens it */
    pthread_t th;
    if (pthread_create(&th, NULL, context_thread, NULL) == 0) pthread_detach(th);
}

static const char *forked_message(void)
{
    return atomic_load(&forked)
               ? "CUDA was initialised in this process's parent before fork(), and CUDA does not survive fork(): "
                 "start worker processes with the 'spawn' or 'forkserver' method"
               : NULL;
}

/* The first half of the start done (and the second begun): what a compile needs. */
static const char *device_unavailable(void)
{
    const char *why = forked_message();
    if (why) return why;
    pthread_once(&init_once, init_driver);
    if (init_error[0]) return init_error;
    pthread_once(&context_start_once, start_context);
    if (atomic_load(&lost)) return lost_message;
    return NULL;
}

/* Both halves done: what running needs. */
static const char *driver_unavailable(void)
{
    const char *why = device_unavailable();
    if (why) return why;
    pthread_once(&context_once, open_context);
    if (context_error[0]) return context_error;
    return NULL;
}

int gpu_usable(void)
{
    return !atomic_load(&forked) && !atomic_load(&lost) && gpu_dev.ctx != NULL;
}

/* NVRTC's side: found, and making code this driver loads. Decided once (neither changes in a process). */
static pthread_once_t nvrtc_check_once = PTHREAD_ONCE_INIT;
static char nvrtc_check_error[512];

static void check_nvrtc(void)
{
    const char *why = rt_nvrtc_unavailable();
    if (why) {
        snprintf(nvrtc_check_error, sizeof nvrtc_check_error, "no NVRTC: %.480s", why);
        return;
    }
    int nvrtc = rt_nvrtc_version(), driver = gpu_dev.info.driver_version, is_ptx = 0;
    int arch = gpu_nvrtc_target(gpu_dev.info.cc, &is_ptx);
    if (!arch)
        snprintf(nvrtc_check_error, sizeof nvrtc_check_error,
                 "NVRTC %d.%d cannot compile for this device's compute capability %d.%d", nvrtc / 1000,
                 nvrtc % 1000 / 10, gpu_dev.info.cc / 10, gpu_dev.info.cc % 10);
    else if (driver / 1000 < nvrtc / 1000 || (is_ptx && driver < nvrtc))
        snprintf(nvrtc_check_error, sizeof nvrtc_check_error,
                 "the CUDA driver is too old for this NVRTC: the driver supports CUDA %d.%d and NVRTC %d.%d makes %s "
                 "that only CUDA %d.%d drivers load (update the driver, or point LORIKEET_NVRTC at an older NVRTC)",
                 driver / 1000, driver % 1000 / 10, nvrtc / 1000, nvrtc % 1000 / 10, is_ptx ? "PTX" : "cubins",
                 nvrtc / 1000, is_ptx ? nvrtc % 1000 / 10 : 0);
}

static const char *unavailable(bool soon)
{
    /* a child made without fork() (clone, vfork) runs no atfork handler: its pid tells (not on the hot paths) */
    if (init_pid && getpid() != init_pid) atomic_store(&forked, 1);
    const char *why = soon ? device_unavailable() : driver_unavailable();
    if (why) return why;
    pthread_once(&nvrtc_check_once, check_nvrtc);
    return nvrtc_check_error[0] ? nvrtc_check_error : NULL;
}

const char *rt_gpu_unavailable(void)
{
    return unavailable(false);
}

const char *rt_gpu_unavailable_soon(void)
{
    return unavailable(true);
}

int rt_gpu_info(RtGpuInfo *info)
{
    if (device_unavailable()) return -1;
    *info = gpu_dev.info;
    return 0;
}

static int is_sticky(CUresult r)
{
    switch (r) {
    case 214: case 220: case 226: /* ECC uncorrectable, NVLink uncorrectable, contained */
    case 700: case 702: case 710: case 714: case 715: case 716: case 717: case 718: case 719: case 721:
    case 911: case 999: /* illegal address .. launch failed, tensor memory leak, external device, unknown */
        return 1;
    default: return 0;
    }
}

int gpu_check(CUresult r, const char *call, LkErrKind kind, LkDiag *diag)
{
    if (r == CUDA_SUCCESS) return 0;
    if (r == CUDA_ERROR_OUT_OF_MEMORY && kind == LK_ERR_INTERNAL) kind = LK_ERR_MEMORY;
    if (is_sticky(r)) {
        pthread_mutex_lock(&lost_lock);
        if (!atomic_load(&lost)) {
            snprintf(lost_message, sizeof lost_message,
                     "the CUDA device was lost after %s in %s (%s): device arrays are invalid, restart the process",
                     err_name(r), call, err_text(r));
            atomic_store(&lost, 1);
        }
        pthread_mutex_unlock(&lost_lock);
        lk_diag_set(diag, LK_ERR_INTERNAL, "", 0, 0, "%s", lost_message);
        return -1;
    }
    lk_diag_set(diag, kind, "", 0, 0, "CUDA call %s failed: %s (%s)", call, err_name(r), err_text(r));
    return -1;
}

int gpu_enter(LkDiag *diag)
{
    const char *why = driver_unavailable();
    if (why) {
        lk_diag_set(diag, LK_ERR_UNAVAILABLE, "", 0, 0, "%s", why);
        return -1;
    }
    CUcontext cur = NULL;
    if (gpu_cu.CtxGetCurrent(&cur) != CUDA_SUCCESS || cur != gpu_dev.ctx)
        return gpu_check(gpu_cu.CtxSetCurrent(gpu_dev.ctx), "cuCtxSetCurrent", LK_ERR_INTERNAL, diag);
    return 0;
}

/* ---- per-thread state ---- */

static _Thread_local GpuThread *this_thread;
static GpuThread *free_threads;
static pthread_mutex_t threads_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t thread_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

/* What the device error record holds while no work item failed: an empty RtError, order = ULLONG_MAX (offset 40),
 * lock 0. */
static const unsigned char clean_record[GPU_RECORD_BYTES] = {[40] = 0xff, [41] = 0xff, [42] = 0xff, [43] = 0xff,
                                                              [44] = 0xff, [45] = 0xff, [46] = 0xff, [47] = 0xff};

static void thread_exit(void *p)
{
    GpuThread *t = p;
    pthread_mutex_lock(&threads_lock);
    t->next_free = free_threads;
    free_threads = t;
    pthread_mutex_unlock(&threads_lock);
}

static void make_key(void)
{
    pthread_key_create(&thread_key, thread_exit);
}

/* The device record made clean and the scratch's ticket zeroed, on t's stream. */
static int reset_block(GpuThread *t, LkDiag *diag)
{
    if (gpu_check(gpu_cu.MemcpyHtoDAsync(t->block, clean_record, GPU_RECORD_BYTES, t->stream), "cuMemcpyHtoDAsync",
                  LK_ERR_INTERNAL, diag) < 0)
        return -1;
    return gpu_check(gpu_cu.MemsetD8Async(t->block + GPU_SCRATCH_AT, 0, 16, t->stream), "cuMemsetD8Async",
                     LK_ERR_INTERNAL, diag);
}

static GpuThread *new_thread_state(LkDiag *diag)
{
    pthread_mutex_lock(&threads_lock);
    GpuThread *t = free_threads;
    if (t) free_threads = t->next_free;
    pthread_mutex_unlock(&threads_lock);
    if (t) { /* a dead thread's: its work may be unfinished and its record set */
        if (gpu_check(gpu_cu.StreamSynchronize(t->stream), "cuStreamSynchronize", LK_ERR_INTERNAL, diag) < 0 ||
            reset_block(t, diag) < 0)
            return NULL;
    } else {
        t = calloc(1, sizeof *t);
        if (!t) {
            lk_diag_set(diag, LK_ERR_MEMORY, "", 0, 0, "out of host memory for a thread's gpu state");
            return NULL;
        }
        if (gpu_check(gpu_cu.StreamCreate(&t->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate", LK_ERR_INTERNAL,
                      diag) < 0 ||
            gpu_check(gpu_cu.MemAlloc(&t->block, GPU_SCRATCH_AT + RT_GPU_SCRATCH_BYTES), "cuMemAlloc", LK_ERR_INTERNAL,
                      diag) < 0 ||
            gpu_check(gpu_cu.MemHostAlloc((void **)&t->mirror, GPU_MIRROR_BYTES, 0), "cuMemHostAlloc", LK_ERR_INTERNAL,
                      diag) < 0 ||
            reset_block(t, diag) < 0 ||
            gpu_check(gpu_cu.StreamSynchronize(t->stream), "cuStreamSynchronize", LK_ERR_INTERNAL, diag) < 0) {
            free(t); /* what was made of it is lost with the device, or a few bytes of it leak */
            return NULL;
        }
    }
    memset(t->mirror, 0, GPU_MIRROR_BYTES);
    t->errors_pending = 0;
    pthread_once(&key_once, make_key);
    pthread_setspecific(thread_key, t);
    return t;
}

GpuThread *gpu_thread(LkDiag *diag)
{
    if (gpu_enter(diag) < 0) return NULL;
    if (!this_thread) this_thread = new_thread_state(diag);
    return this_thread;
}

uint64_t rt_gpu_stream(LkDiag *diag)
{
    GpuThread *t = gpu_thread(diag);
    return t ? (uint64_t)(uintptr_t)t->stream : 0;
}

uint64_t rt_gpu_stream_if_made(void)
{
    return this_thread && gpu_usable() ? (uint64_t)(uintptr_t)this_thread->stream : 0;
}

int rt_gpu_stream_sync(uint64_t stream, LkDiag *diag)
{
    if (gpu_enter(diag) < 0) return -1;
    return gpu_check(gpu_cu.StreamSynchronize((CUstream)(uintptr_t)stream), "cuStreamSynchronize", LK_ERR_INTERNAL,
                     diag);
}

int rt_gpu_stream_wait(uint64_t stream, LkDiag *diag)
{
    GpuThread *t = gpu_thread(diag);
    if (!t) return -1;
    if (!stream || (CUstream)(uintptr_t)stream == t->stream) return 0;
    if (!t->event &&
        gpu_check(gpu_cu.EventCreate(&t->event, CU_EVENT_DISABLE_TIMING), "cuEventCreate", LK_ERR_INTERNAL, diag) < 0)
        return -1;
    /* the wait captures the event's latest record, so one event a thread serves every such wait */
    if (gpu_check(gpu_cu.EventRecord(t->event, (CUstream)(uintptr_t)stream), "cuEventRecord", LK_ERR_INTERNAL, diag) < 0)
        return -1;
    return gpu_check(gpu_cu.StreamWaitEvent(t->stream, t->event, 0), "cuStreamWaitEvent", LK_ERR_INTERNAL, diag);
}

int rt_gpu_pointer_device(uint64_t dptr, LkDiag *diag)
{
    if (gpu_enter(diag) < 0) return -1;
    int ordinal = -1;
    if (gpu_check(gpu_cu.PointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, (CUdeviceptr)dptr),
                  "cuPointerGetAttribute", LK_ERR_VALUE, diag) < 0)
        return -1;
    return ordinal;
}

/* ---- errors of compiled code's gpu calls ---- */

static _Thread_local LkDiag last_diag;

int gpu_fail(RtCtx *ctx, const LkDiag *diag)
{
    last_diag = *diag;
    ctx->err = (RtError){(int32_t)diag->kind, RT_ERR_GPU, 0, -1, {diag->kind, 0, 0}};
    return 1;
}

void gpu_last_diag(LkDiag *out)
{
    out->kind = LK_OK;
    if (last_diag.kind == LK_OK) lk_diag_set(out, LK_ERR_INTERNAL, "", 0, 0, "a gpu call failed");
    else *out = last_diag;
}

/* ---- modules and launches ---- */

struct RtGpuModule {
    CUmodule module;
    int nkernels;
    unsigned char *may_raise; /* per kernel: it may write the error record (1 until the loader says otherwise) */
    CUfunction kernels[];
};

void rt_gpu_module_set_may_raise(RtGpuModule *m, int k, int may_raise)
{
    if (m && k >= 0 && k < m->nkernels) m->may_raise[k] = may_raise != 0;
}

RtGpuModule *rt_gpu_module_load(const void *image, size_t size, int is_ptx, const char *const *kernels, int nkernels,
                                LkDiag *diag)
{
    if (gpu_enter(diag) < 0) return NULL;
    char log[4096] = "";
    int opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[] = {log, (void *)(uintptr_t)sizeof log};
    CUmodule module = NULL;
    CUresult r = gpu_cu.ModuleLoadDataEx(&module, image, 2, opts, vals);
    if (r != CUDA_SUCCESS) {
        gpu_check(r, "cuModuleLoadDataEx", LK_ERR_INTERNAL, diag);
        if (log[0]) {
            size_t used = strlen(diag->message);
            snprintf(diag->message + used, sizeof diag->message - used, " loading %s: %s", is_ptx ? "PTX" : "a cubin",
                     log);
        }
        return NULL;
    }
    size_t nk = (size_t)(nkernels > 0 ? nkernels : 1);
    RtGpuModule *m = calloc(1, sizeof *m + sizeof(CUfunction) * nk + nk);
    if (!m) {
        lk_diag_set(diag, LK_ERR_MEMORY, "", 0, 0, "out of host memory loading a gpu module");
        return NULL;
    }
    m->module = module;
    m->nkernels = nkernels;
    m->may_raise = (unsigned char *)&m->kernels[nk];
    memset(m->may_raise, 1, nk);
    for (int i = 0; i < nkernels; i++) {
        if (gpu_check(gpu_cu.ModuleGetFunction(&m->kernels[i], module, kernels[i]), "cuModuleGetFunction",
                      LK_ERR_INTERNAL, diag) < 0) {
            size_t used = strlen(diag->message);
            snprintf(diag->message + used, sizeof diag->message - used, " for kernel %s", kernels[i]);
            gpu_cu.ModuleUnload(module);
            free(m);
            return NULL;
        }
    }
    gpu_count_module();
    return m;
}

void rt_gpu_module_unload(RtGpuModule *m)
{
    if (!m) return;
    LkDiag diag = {0};
    /* its kernels may still be queued on any thread's stream (launches are asynchronous): wait for the device.
     * A device that cannot be waited for (lost, or CUDA unusable after fork) keeps the module. */
    if (gpu_enter(&diag) == 0 && gpu_cu.CtxSynchronize() == CUDA_SUCCESS) gpu_cu.ModuleUnload(m->module);
    free(m);
}

/* Blocks for n work items. ELEMENTS: one item per thread up to ELEMENT_BLOCKS_PER_SM blocks an SM (so work
 * larger than about 35M items on an H100 loops in each thread, which the kernels' grid-stride loops do);
 * REDUCE: at most 4 blocks an SM and RT_GPU_MAX_REDUCE_BLOCKS, at least one. */
#define ELEMENT_BLOCKS_PER_SM 1024
static unsigned grid_for(int64_t n, RtLaunchKind kind)
{
    int64_t blocks = (n + RT_GPU_BLOCK - 1) / RT_GPU_BLOCK, sms = gpu_dev.info.sms > 0 ? gpu_dev.info.sms : 1;
    int64_t cap = kind == RT_LAUNCH_REDUCE ? 4 * sms : ELEMENT_BLOCKS_PER_SM * sms;
    if (kind == RT_LAUNCH_REDUCE && cap > RT_GPU_MAX_REDUCE_BLOCKS) cap = RT_GPU_MAX_REDUCE_BLOCKS;
    if (cap > 0x7fffffff) cap = 0x7fffffff;
    if (blocks > cap) blocks = cap;
    return (unsigned)(blocks < 1 ? 1 : blocks);
}

int rt_gpu_launch(RtCtx *ctx, RtGpuModule *m, int k, int64_t *slots, int nslots, int64_t n, RtLaunchKind kind)
{
    LkDiag diag = {0};
    GpuThread *t = gpu_thread(&diag);
    if (!t) return gpu_fail(ctx, &diag);
    if (k < 0 || k >= m->nkernels || nslots < 2) {
        lk_diag_set(&diag, LK_ERR_INTERNAL, "", 0, 0, "rt_gpu_launch: kernel %d of %d, %d slots", k, m->nkernels, nslots);
        return gpu_fail(ctx, &diag);
    }
    if (kind == RT_LAUNCH_ELEMENTS && n <= 0) return 0;
    slots[0] = (int64_t)t->block;
    slots[1] = (int64_t)(t->block + GPU_SCRATCH_AT);
    void *params[] = {slots};
    CUresult r = gpu_cu.LaunchKernel(m->kernels[k], grid_for(n, kind), 1, 1, RT_GPU_BLOCK, 1, 1, 0, t->stream, params,
                                     NULL);
    if (gpu_check(r, "cuLaunchKernel", LK_ERR_INTERNAL, &diag) < 0) return gpu_fail(ctx, &diag);
    t->errors_pending |= m->may_raise[k];
    gpu_count_launch();
    return 0;
}

static int sync_every_call = -1; /* LORIKEET_GPU_SYNC=1: every call waits for its kernels (debugging) */

int rt_gpu_errors_pending(void)
{
    if (sync_every_call < 0) {
        const char *env = getenv("LORIKEET_GPU_SYNC");
        sync_every_call = env && *env && strcmp(env, "0") != 0;
    }
    return sync_every_call || (this_thread && this_thread->errors_pending);
}

int rt_gpu_sync(RtCtx *ctx)
{
    LkDiag diag = {0};
    GpuThread *t = gpu_thread(&diag);
    if (!t) return gpu_fail(ctx, &diag);
    /* the record and the results come back with the wait itself: one copy queued behind the kernels */
    if (gpu_check(gpu_cu.MemcpyDtoHAsync(t->mirror, t->block, GPU_MIRROR_BYTES, t->stream), "cuMemcpyDtoHAsync",
                  LK_ERR_INTERNAL, &diag) < 0 ||
        gpu_check(gpu_cu.StreamSynchronize(t->stream), "cuStreamSynchronize", LK_ERR_INTERNAL, &diag) < 0)
        return gpu_fail(ctx, &diag);
    t->errors_pending = 0;
    gpu_count_wait();
    RtError rec;
    memcpy(&rec, t->mirror, sizeof rec);
    if (rec.status == LK_OK) return 0;
    ctx->err = rec;
    if (reset_block(t, &diag) < 0) return 1; /* the kernel's error is the one to report */
    return 1;
}

int rt_gpu_results(RtCtx *ctx, int64_t *out, int n)
{
    LkDiag diag = {0};
    GpuThread *t = gpu_thread(&diag);
    if (!t) return gpu_fail(ctx, &diag);
    if (n < 0 || n > GPU_RESULTS_MAX) {
        lk_diag_set(&diag, LK_ERR_INTERNAL, "", 0, 0, "rt_gpu_results: %d results (at most %d)", n, GPU_RESULTS_MAX);
        return gpu_fail(ctx, &diag);
    }
    memcpy(out, t->mirror + GPU_SCRATCH_AT + GPU_RESULTS_AT, sizeof(int64_t) * (size_t)n);
    return 0;
}
