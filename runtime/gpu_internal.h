/* gpu_internal.h: what gpu_driver.c, gpu_memory.c, nvrtc.c and raise.c share, internal to runtime/ (the rest of
 * lorikeet sees the gpu through runtime.h alone). The CUDA types and values declared here are the few the
 * runtime uses, copied from the driver API's documented ABI: no CUDA header is included, and nothing links
 * against CUDA. */
#ifndef LK_GPU_INTERNAL_H
#define LK_GPU_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include "runtime.h"

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef struct CUevent_st *CUevent;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_STUB_LIBRARY = 34,
    CUDA_ERROR_NO_DEVICE = 100,
    CU_STREAM_NON_BLOCKING = 1,
    CU_EVENT_DISABLE_TIMING = 2,
    CUDA_ERROR_NOT_READY = 600,
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115,
    CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4,
    CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT = 5,
    CU_MEMPOOL_ATTR_USED_MEM_CURRENT = 7,
    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
    CU_JIT_ERROR_LOG_BUFFER = 5,
    CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};

/* The driver entry points, bound at their ABI versions (the _v2 names where the plain name is a macro in
 * cuda.h), so that a newer driver keeps the behaviour this code was written for. */
typedef struct GpuDriver {
    CUresult (*Init)(unsigned);
    CUresult (*DriverGetVersion)(int *);
    CUresult (*GetErrorName)(CUresult, const char **);
    CUresult (*GetErrorString)(CUresult, const char **);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DeviceTotalMem)(size_t *, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxGetCurrent)(CUcontext *);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxSynchronize)(void);
    CUresult (*StreamCreate)(CUstream *, unsigned);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemHostAlloc)(void **, size_t, unsigned);
    CUresult (*MemAllocAsync)(CUdeviceptr *, size_t, CUstream);
    CUresult (*MemFreeAsync)(CUdeviceptr, CUstream);
    CUresult (*DeviceGetDefaultMemPool)(CUmemoryPool *, CUdevice);
    CUresult (*MemPoolSetAttribute)(CUmemoryPool, int, void *);
    CUresult (*MemPoolGetAttribute)(CUmemoryPool, int, void *);
    CUresult (*MemPoolTrimTo)(CUmemoryPool, size_t);
    CUresult (*MemGetInfo)(size_t *, size_t *);
    CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*MemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
    CUresult (*MemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
    CUresult (*ModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *, void **);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void **, void **);
    CUresult (*PointerGetAttribute)(void *, int, CUdeviceptr);
    CUresult (*EventCreate)(CUevent *, unsigned);
    CUresult (*EventRecord)(CUevent, CUstream);
    CUresult (*EventSynchronize)(CUevent);
    CUresult (*StreamWaitEvent)(CUstream, CUevent, unsigned);
} GpuDriver;

extern GpuDriver gpu_cu;

/* The device, once gpu_enter() succeeded. */
typedef struct GpuDevice {
    CUdevice dev;
    CUcontext ctx;
    CUmemoryPool pool; /* NULL: the device has no memory pools (cuMemAlloc/cuMemFree then) */
    bool pools_supported;
    RtGpuInfo info;
} GpuDevice;
extern GpuDevice gpu_dev;

/* A host thread's own: its stream, and the device block that its launches' slots 0 and 1 point at (the error
 * record at offset 0, the scratch at GPU_SCRATCH_AT), with a pinned host mirror of the record and of the
 * scratch's first bytes (its results) that rt_gpu_sync fills with the same wait. */
#define GPU_RECORD_BYTES 64
#define GPU_SCRATCH_AT 256
#define GPU_RESULTS_MAX 64       /* result slots: kernel_abi.h's GPU_RESULTS */
#define GPU_RESULTS_AT 16        /* their offset in the scratch: kernel_abi.h's GPU_RESULTS_OFFSET */
#define GPU_MIRROR_BYTES (GPU_SCRATCH_AT + GPU_RESULTS_AT + 8 * GPU_RESULTS_MAX)
typedef struct GpuThread {
    CUstream stream;
    CUdeviceptr block;
    unsigned char *mirror;
    struct cublasContext *blas; /* cublas.c's handle bound to stream, made on the first product (NULL until) */
    int errors_pending;  /* a kernel that may raise was launched since the last rt_gpu_sync */
    CUevent event;       /* for ordering this stream after another's work (rt_gpu_stream_wait); made on first use */
    struct GpuThread *next_free;
} GpuThread;

/* The device made ready for this thread (driver loaded, not forked or lost, the primary context current): 0,
 * or -1 with diag set (LK_ERR_UNAVAILABLE, the reason). */
int gpu_enter(LkDiag *diag);
/* gpu_enter, then this thread's state (made on first use): NULL with diag set. */
GpuThread *gpu_thread(LkDiag *diag);
/* r == CUDA_SUCCESS: 0. Else -1 with diag naming the call and CUDA's error name and text; a sticky error marks
 * the device lost. kind: the diagnostic's kind for a plain failure. */
int gpu_check(CUresult r, const char *call, LkErrKind kind, LkDiag *diag);
/* A failed gpu call of compiled code: ctx->err becomes an RT_ERR_GPU record whose message is diag (kept for
 * this thread, see gpu_last_diag). Returns 1. */
int gpu_fail(RtCtx *ctx, const LkDiag *diag);
/* The diagnostic of this thread's last RT_ERR_GPU record (raise.c words such records with it). */
void gpu_last_diag(LkDiag *out);

/* Whether the process may use the device now (driver state only, no init): for destructors. */
int gpu_usable(void);
int gpu_memory_init(LkDiag *diag); /* gpu_memory.c: the pool, at the driver's init */
int gpu_nvrtc_target(int cc, int *is_ptx); /* nvrtc.c: the architecture compiled for (0: none) */
int64_t gpu_nvrtc_compiles(void);
int64_t gpu_nvrtc_disk_images(void); /* nvrtc.c: images its RtImageStore gave instead of NVRTC */
void gpu_count_launch(void);
void gpu_count_module(void);
int64_t gpu_cublas_calls(void); /* cublas.c */

/* cuda_libs.c: a CUDA toolkit library to dlopen. names: its versioned file names, newest first, NULL-terminated;
 * unversioned: a development name tried in folders only (NULL: none); env: the variable naming its file or folder,
 * searched first; env_only: when that variable is set, its library or none. path receives the file opened. */
typedef struct GpuLibrary {
    const char *const *names;
    const char *unversioned;
    const char *env;
    bool env_only;
} GpuLibrary;
void *gpu_find_library(const GpuLibrary *lib, char *path, size_t size);
void *gpu_open_in_dir(const GpuLibrary *lib, const char *dir, char *path, size_t size);
void gpu_count_wait(void);

#endif
