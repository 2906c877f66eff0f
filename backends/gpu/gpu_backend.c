/* gpu_backend.c: the "gpu" backend. A compilation is two parts made from the same typed IR, after the same
 * passes as every backend: the kernels (one per parallel region, CUDA C from cuda_*.c, compiled by NVRTC for the
 * device's architecture and loaded through the driver API: runtime/gpu_*.c, all dlopen'ed), and the host code
 * that launches them (backends/llvm in its gpu mode: gpu_launch.c), which does everything else as the cpu
 * backend would: scalar code, control flow, allocation (of device memory), the loops around regions.
 * A function with no parallel region runs on the host entirely: it is the cpu backend's code, on host memory.
 * This file decides nothing about what a program means; it puts the parts together. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include "kernel_abi.h"

extern const BeBackend be_llvm_cpu;

/* For a compile: the device found and NVRTC usable; its context may still be opening (runtime.h). */
static bool gpu_available(LkDiag *why)
{
    const char *no = rt_gpu_unavailable_soon();
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

/* ---- saved code (the disk cache): the host code's object and the kernels' image in one entry ----
 * What save() writes and load() reads: SAVED_MAGIC, then device (u8: 0 when the code is the cpu backend's on host
 * memory, a function without parallel regions), writes_args (u8), is_ptx (u8), a zero byte, nkernels (u32),
 * image_size (u64), may_raise (nkernels bytes), the image, then the llvm backends' saved code of the host part.
 * Host byte order: an entry is only loaded where key_extras (the triple among them) are the same. Nothing in it
 * is an address of the process that wrote it: the host code finds its module global, and the runtime its kernels
 * (lk_k<i>), by name when it is loaded. */
#define SAVED_MAGIC "lorikeet gpu code 1\n"
#define SAVED_HEAD (sizeof SAVED_MAGIC - 1 + 4 + 4 + 8)

typedef struct SavedGpu {
    bool device, writes_args;
    int is_ptx, nkernels;
    const bool *may_raise;      /* nkernels of them, or NULL */
    const void *image;
    size_t image_size;
    const void *host;           /* the llvm backends' saved code */
    size_t host_size;
} SavedGpu;

/* Replaces code->object (the host part, as the llvm backend kept it) by the whole saved form of g; on failure
 * (no memory) the code keeps no object, so it is not saved: it still runs. */
static void keep_saved(BeCompiled *code, const SavedGpu *g)
{
    if (!code->object) return;
    size_t magic = sizeof SAVED_MAGIC - 1, n = SAVED_HEAD + (size_t)g->nkernels + g->image_size + code->object_size;
    unsigned char *out = malloc(n), *p = out;
    if (out) {
        uint32_t nk = (uint32_t)g->nkernels;
        uint64_t isz = g->image_size;
        memcpy(p, SAVED_MAGIC, magic);
        p += magic;
        *p++ = g->device;
        *p++ = g->writes_args;
        *p++ = (unsigned char)g->is_ptx;
        *p++ = 0;
        memcpy(p, &nk, 4);
        memcpy(p + 4, &isz, 8);
        p += 12;
        for (int i = 0; i < g->nkernels; i++) *p++ = g->may_raise[i];
        if (g->image_size) memcpy(p, g->image, g->image_size);
        p += g->image_size;
        memcpy(p, code->object, code->object_size);
    }
    free(code->object);
    code->object = out;
    code->object_size = out ? n : 0;
}

/* bytes as a SavedGpu pointing into them; false with diag set when they are not gpu code saved by this format,
 * or when the image is not the kind its header says (the store verified the checksum; this is a second guard
 * before the driver sees a byte). */
static bool read_saved(const unsigned char *bytes, size_t size, SavedGpu *g, LkDiag *diag)
{
    size_t magic = sizeof SAVED_MAGIC - 1;
    if (size < SAVED_HEAD || memcmp(bytes, SAVED_MAGIC, magic) != 0) goto bad;
    const unsigned char *h = bytes + magic;
    uint32_t nk;
    uint64_t isz;
    memcpy(&nk, h + 4, 4);
    memcpy(&isz, h + 8, 8);
    size_t rest = size - SAVED_HEAD;
    if (h[0] > 1 || h[1] > 1 || h[2] > 1 || h[3] || nk > rest || isz > rest - nk) goto bad;
    if (h[0] ? nk && isz < 4 : nk || isz) goto bad; /* kernels need an image; host-only code has neither */
    for (uint32_t i = 0; i < nk; i++)
        if (bytes[SAVED_HEAD + i] > 1) goto bad;
    const unsigned char *image = bytes + SAVED_HEAD + nk;
    *g = (SavedGpu){h[0], h[1], h[2], (int)nk, (const bool *)(bytes + SAVED_HEAD), image, (size_t)isz,
                    image + isz, rest - nk - (size_t)isz};
    bool plausible = !nk || (g->is_ptx ? image[isz - 1] == 0 && memchr(image, 0, isz) == image + isz - 1
                                       : memcmp(image, "\x7f" "ELF", 4) == 0);
    if (!plausible) lk_diag_set(diag, LK_ERR_INTERNAL, "", 0, 0, "saved gpu code whose image is not a %s",
                                g->is_ptx ? "PTX text" : "cubin");
    return plausible;
bad:
    lk_diag_set(diag, LK_ERR_INTERNAL, "", 0, 0, "not code saved by the gpu backend");
    return false;
}

/* The kernels lk_k0..lk_k<n-1> of image loaded on the device, each told whether it may raise. */
static RtGpuModule *load_kernels(const void *image, size_t size, int is_ptx, int n, const bool *may_raise,
                                 LkDiag *diag)
{
    const char **knames = calloc((size_t)n + 1, sizeof *knames);
    char (*kname)[32] = calloc((size_t)n + 1, sizeof *kname);
    RtGpuModule *module = NULL;
    if (!knames || !kname) lk_diag_set(diag, LK_ERR_MEMORY, "", 0, 0, "out of host memory loading gpu kernels");
    else {
        for (int i = 0; i < n; i++) {
            snprintf(kname[i], sizeof kname[i], "lk_k%d", i);
            knames[i] = kname[i];
        }
        module = rt_gpu_module_load(image, size, is_ptx, knames, n, diag);
    }
    for (int i = 0; module && i < n; i++) rt_gpu_module_set_may_raise(module, i, may_raise[i]);
    free(knames);
    free(kname);
    return module;
}

static BeCompiled *host_only(BeCompiled *code)
{
    if (code) keep_saved(code, &(SavedGpu){0});
    return code;
}

static void free_compiled(BeCompiled *code);

static BeCompiled *gpu_compile(IrFunc *f, const BeOptions *opts, LkDiag *diag)
{
    if (!has_regions(f) && !opts->device_args) return host_only(be_llvm_cpu.compile(f, opts, diag));
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
    void *image = NULL;
    size_t size = 0;
    int is_ptx = 0;
    RtNvrtcJob *job = NULL;
    if (nkernels == 0) goto host; /* host code on device arrays, launching nothing */
    may_raise = calloc((size_t)nkernels, sizeof *may_raise);
    if (!may_raise) {
        lk_diag_set(diag, LK_ERR_MEMORY, "", 0, 0, "out of host memory compiling for the gpu");
        goto done;
    }
    src = gpu_emit_cuda(f, kernels, nkernels, opts->fastmath, &names, may_raise, diag);
    if (!src) goto done;
    /* NVRTC runs on a thread of its own while LLVM compiles the host code here (a new kernel's first call on the
     * H100 host: about 90 ms of NVRTC and 35 of LLVM, one after the other before) */
    job = rt_nvrtc_start(src, opts->module, info.cc, opts->fastmath, opts->images, diag);
    if (!job) goto done;
host:;
    GpuHost host = {kernels, nkernels, &names};
    void **module_slot = NULL;
    code = be_llvm_compile_gpu_host(f, opts, &host, &module_slot, diag);
    if (nkernels > 0) {
        LkDiag kdiag = {0};
        image = rt_nvrtc_finish(job, &size, &is_ptx, code ? diag : &kdiag);
        job = NULL;
        /* compiled again only to keep its object (for the disk cache): the kernels loaded before serve */
        if (image && code) module = done ? *done : load_kernels(image, size, is_ptx, nkernels, may_raise, diag);
        if (code && !module) {
            /* a host part in the process says its kernels are loaded (gpu_compile's `done`): it goes too */
            be_llvm_release(opts->module);
            free_compiled(code);
            code = NULL;
        }
    }
    if (!code) goto done;
    *module_slot = module;
    code->device_data = true;
    code->writes_args = ir_may_write_args(f);
    keep_saved(code, &(SavedGpu){true, code->writes_args, is_ptx, nkernels, may_raise, image, size});
done:
    rt_nvrtc_finish(job, NULL, NULL, NULL);
    free(image);
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
    /* the host part's items (backend=cpu;...) with this backend's name, then the device's: name=value;... */
    const char *rest = strncmp(host, "backend=cpu;", 12) == 0 ? host + 12 : host;
    size_t n = strlen(host) + 256;
    char *text = malloc(n);
    if (!text) {
        free(host);
        lk_diag_set(diag, LK_ERR_MEMORY, "", 0, 0, "out of host memory");
        return NULL;
    }
    snprintf(text, n, "backend=gpu;%s;gpu=sm_%d;nvrtc=%d;driver=%d;device_args=%d", rest, info.cc, rt_nvrtc_version(),
             info.driver_version, opts->device_args);
    free(host);
    return text;
}

static void *gpu_save(const BeCompiled *code, size_t *size, LkDiag *diag)
{
    if (!code->object) {
        lk_diag_set(diag, LK_ERR_INTERNAL, "", 0, 0, "this code was compiled without keeping its object file");
        return NULL;
    }
    void *bytes = malloc(code->object_size);
    if (!bytes) {
        lk_diag_set(diag, LK_ERR_MEMORY, "", 0, 0, "out of host memory saving gpu code");
        return NULL;
    }
    memcpy(bytes, code->object, code->object_size);
    *size = code->object_size;
    return bytes;
}

static void free_compiled(BeCompiled *code)
{
    rt_names_free(&code->names);
    free(code->ir_text);
    free(code->object);
    free(code);
}

/* The kernels are loaded before the host code is added to the JIT: a host part in the process is what
 * gpu_compile takes as "this compilation's kernels are loaded" (be_llvm_gpu_module_slot), so it must never be
 * there without them. The same compilation already in the process keeps the kernels it has. */
static BeCompiled *gpu_load(const void *bytes, size_t size, const BeOptions *opts, LkDiag *diag)
{
    SavedGpu g;
    if (!read_saved(bytes, size, &g, diag)) return NULL;
    if (!g.device) return be_llvm_cpu.load(g.host, g.host_size, opts, diag);
    RtGpuInfo info;
    if (rt_gpu_info(&info) != 0) {
        gpu_available(diag);
        return NULL;
    }
    void **slot = be_llvm_gpu_module_slot(opts->module);
    RtGpuModule *module = NULL;
    if (!slot && g.nkernels && !(module = load_kernels(g.image, g.image_size, g.is_ptx, g.nkernels, g.may_raise, diag)))
        return NULL;
    BeCompiled *code = be_llvm_cpu.load(g.host, g.host_size, opts, diag);
    if (!code) return NULL;
    if (!slot) {
        slot = be_llvm_gpu_module_slot(opts->module);
        if (!slot) {
            lk_diag_set(diag, LK_ERR_INTERNAL, "", 0, 0, "saved gpu code of %s has no module global", opts->module);
            free_compiled(code);
            return NULL;
        }
        *slot = module;
    }
    code->device_data = true;
    code->writes_args = g.writes_args;
    return code;
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
