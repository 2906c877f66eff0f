/* registry.c: the backends lorikeet knows, by name. */
#include <string.h>
#include "backend.h"
#include "gpu/kernel_abi.h"

extern const BeBackend be_llvm_cpu, be_llvm_openmp, be_gpu;

const BeBackend *be_find(const char *name, LkDiag *diag)
{
    if (strcmp(name, "cpu") == 0) return &be_llvm_cpu;
    if (strcmp(name, "openmp") == 0) return &be_llvm_openmp;
    if (strcmp(name, "gpu") == 0) return &be_gpu;
    lk_diag_set(diag, LK_ERR_UNAVAILABLE, "", 0, 0, "unknown backend '%s' (known: cpu, openmp, gpu)", name);
    return NULL;
}

const char *be_refusal(const char *backend, IrIntrinsic k)
{
    if (strcmp(backend, "gpu") != 0) return NULL;
    const GpuHostRefusal *r = gpu_host_refusal(k);
    return r ? r->what : NULL;
}
