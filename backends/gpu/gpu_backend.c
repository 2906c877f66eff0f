/* gpu_backend.c: the "gpu" backend. A compilation is two parts made from the same typed IR, after the same
 * passes as every backend: the kernels (one per parallel region, CUDA C from cuda_*.c, compiled by NVRTC for the
 * device's architecture and loaded through the driver API: runtime/gpu_*.c, all dlopen'ed), and the host code
 * that launches them (backends/llvm in its gpu mode: gpu_launch.c), which does everything else as the cpu
 * backend would: scalar code, control flow, allocation (of device memory), the loops around regions.
 * A function with no parallel region runs on the host entirely: it is the cpu backend's code, on host memory.
 * This file decides nothing about what a program means; it puts the parts together. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernel_abi.h"

extern const BeBackend be_llvm_cpu;

static bool gpu_available(LkDiag *why)
{
    const char *no = rt_gpu_unavailable();
    if (!no) return true;
    lk_diag_set(why, LK_ERR_UNAVAILABLE, "", 0, 0, "the gpu backend cannot run here: %s", no);
    return false;
}

typedef struct Found {
    bool any;
} Found;

static void find_child(IrNode **child, void *env)
{
    if ((*child)->region) ((Found *)env)->any = true;
    else ir_each_child(*child, find_child, env);
}

static bool has_region_in(IrBlock *b)
{
    for (int i = 0; i < b->n; i++) {
        IrNode *s = b->stmts[i];
        if (s->region) return true; /* a prange loop */
        Found found = {false};
        ir_each_child(s, find_child, &found);
        if (found.any) return true;
        IrBlock *blocks[2];
        int nb = ir_stmt_blocks(s, blocks);
        for (int k = 0; k < nb; k++)
            if (has_region_in(blocks[k])) return true;
    }
    return false;
}

/* Whether f or a function it calls has a parallel region: else it all runs on the host. */
static bool has_regions(IrFunc *f)
{
    if (has_region_in(&f->body)) return true;
    for (int i = 0; i < f->ncallees; i++)
        if (has_region_in(&f->callees[i]->body)) return true;
    return false;
}

static BeCompiled *gpu_compile(IrFunc *f, const BeOptions *opts, LkDiag *diag)
{
    if (!has_regions(f) && !opts->device_args) return be_llvm_cpu.compile(f, opts, diag);
    RtGpuInfo info;
    if (rt_gpu_info(&info) != 0) {
        gpu_available(diag);
        return NULL;
    }
    void **done = be_llvm_gpu_module_slot(opts->module);
    if (done && !opts->keep_ir_text && !opts->keep_object) {
        /* the same compilation made earlier in this process (for device arrays instead of NumPy's, or another
         * dispatcher of the same function): its kernels are loaded, its host code is in the JIT */
        GpuHost none = {NULL, 0, &(RtNames){0}};
        void **slot = NULL;
        BeCompiled *code = be_llvm_compile_gpu_host(f, opts, &none, &slot, diag);
        if (code) {
            code->device_data = true;
            code->writes_args = ir_may_write_args(f);
        }
        return code;
    }
    GpuKernelLayout *kernels = NULL;
    int nkernels = 0;
    if (!gpu_collect_kernels(f, f->arena, &kernels, &nkernels, diag)) return NULL;
    RtNames names = {0};
    BeCompiled *code = NULL;
    char *src = NULL;
    RtGpuModule *module = NULL;
    bool *may_raise = NULL;
    if (nkernels == 0) goto host; /* host code on device arrays, launching nothing */
    may_raise = calloc((size_t)nkernels, sizeof *may_raise);
    if (!may_raise) {
        lk_diag_set(diag, LK_ERR_MEMORY, "", 0, 0, "out of host memory compiling for the gpu");
        goto done;
    }
    src = gpu_emit_cuda(f, kernels, nkernels, opts->fastmath, &names, may_raise, diag);
    if (!src) goto done;
    size_t size = 0;
    int is_ptx = 0;
    void *image = rt_nvrtc_compile(src, opts->module, info.cc, opts->fastmath, &size, &is_ptx, NULL, diag);
    if (!image) goto done;
    const char **knames = calloc((size_t)nkernels + 1, sizeof *knames);
    char (*kname)[32] = calloc((size_t)nkernels + 1, sizeof *kname);
    for (int i = 0; i < nkernels; i++) {
        snprintf(kname[i], sizeof kname[i], "lk_k%d", i);
        knames[i] = kname[i];
    }
    module = rt_gpu_module_load(image, size, is_ptx, knames, nkernels, diag);
    free(image);
    free(knames);
    free(kname);
    if (!module) goto done;
    for (int i = 0; i < nkernels; i++) rt_gpu_module_set_may_raise(module, i, may_raise[i]);
host:;
    GpuHost host = {kernels, nkernels, &names};
    void **module_slot = NULL;
    code = be_llvm_compile_gpu_host(f, opts, &host, &module_slot, diag);
    if (!code) goto done;
    *module_slot = module;
    code->device_data = true;
    code->writes_args = ir_may_write_args(f);
done:
    free(may_raise);
    free(src);
    rt_names_free(&names);
    return code;
}

static char *gpu_key_extras(const BeOptions *opts, LkDiag *diag)
{
    RtGpuInfo info;
    if (rt_gpu_info(&info) != 0) {
        gpu_available(diag);
        return NULL;
    }
    char *host = be_llvm_cpu_key_extras(opts, diag);
    if (!host) return NULL;
    size_t n = strlen(host) + 256;
    char *text = malloc(n);
    snprintf(text, n, "%sgpu=sm_%d\nnvrtc=%d\ndriver=%d\ndevice_args=%d\n", host, info.cc, rt_nvrtc_version(),
             info.driver_version, opts->device_args);
    free(host);
    return text;
}

static void *gpu_save(const BeCompiled *code, size_t *size, LkDiag *diag)
{
    lk_diag_set(diag, LK_ERR_UNAVAILABLE, "", 0, 0, "gpu code cannot be saved yet (the code cache is issue 11)");
    return NULL;
}

static BeCompiled *gpu_load(const void *bytes, size_t size, const BeOptions *opts, LkDiag *diag)
{
    lk_diag_set(diag, LK_ERR_UNAVAILABLE, "", 0, 0, "gpu code cannot be loaded yet (the code cache is issue 11)");
    return NULL;
}

/* The last hold on a compilation frees its host code and unloads its kernels. */
static void gpu_release(const char *module)
{
    rt_gpu_module_unload(be_llvm_release(module));
}

const BeBackend be_gpu = {
    .name = "gpu",
    .available = gpu_available,
    .compile = gpu_compile,
    .key_extras = gpu_key_extras,
    .save = gpu_save,
    .release = gpu_release,
    .load = gpu_load,
};
