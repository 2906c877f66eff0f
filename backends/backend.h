/* backend.h: the interface every backend implements. A backend takes a typed IrFunc (after the IR passes) and
 * produces native code reachable through one entry point with the slot calling convention of ir_abi_slots():
 *
 *     int entry(RtCtx *ctx, const int64_t *arg_slots, int64_t *ret_slots);   // 0, or non-zero with ctx->err set
 *
 * The code reports an error by filling in the RtError record at the start of ctx (runtime.h) with stores, never
 * by calling the host; strings it names are indices into BeCompiled.names, which compile() and load() fill.
 *
 * cpu (LLVM, one core), openmp and gpu (backends/gpu: CUDA C kernels, host code from the llvm backend) implement it. A backend never sees Python.
 * A compilation is content-addressed: key_extras, save and load are the seam of the code cache.
 */
#ifndef LK_BACKEND_H
#define LK_BACKEND_H

#include "../ir/ir.h"

typedef int (*BeEntry)(RtCtx *ctx, const int64_t *args, int64_t *ret);

typedef struct BeOptions {
    bool fastmath;
    bool keep_ir_text;  /* keep the optimised IR text for inspection */
    bool keep_object;   /* keep the compiled code as bytes for save() */
    /* The compilation's name, made from its key (the IR's hash and key_extras; see pyshim/compile.c): every
     * symbol the backend defines starts with it, so that two compilations in one process never clash, and one
     * compilation has the same symbols in every process (its saved code can be loaded in another). Compiling
     * or loading a module whose code is already in the process may reuse that code: same name, same code. */
    const char *module;
    /* gpu: the arguments' arrays are device arrays (else NumPy's): a function with no parallel region then runs
     * its host code on device memory instead of being the cpu backend's code on host memory */
    bool device_args;
    /* gpu: the persistent layer under NVRTC's memo (the disk cache; NULL: compile without it) */
    const RtImageStore *images;
} BeOptions;

typedef struct BeCompiled {
    BeEntry entry;
    RtNames names;      /* the strings its error records name by index (runtime.h): the holder of entry keeps them */
    char *ir_text;      /* malloc'd optimised IR (LLVM) or source (CUDA) when asked for, else NULL */
    double compile_ms;  /* time spent in the backend */
    void *object;       /* keep_object: the backend's malloc'd compiled code (an object file for llvm), else NULL */
    size_t object_size;
    bool device_data;   /* gpu: the entry takes and returns arrays in device memory (the shim moves NumPy's) */
    bool writes_args;   /* device_data: the code may write its array arguments (copied back to NumPy's) */
} BeCompiled;

/* A backend never writes into the IrFunc it compiles: the IR's hash is the key of the code made from it. */
typedef struct BeBackend {
    const char *name;
    /* false with `why` set when the backend cannot run on this machine */
    bool (*available)(LkDiag *why);
    /* NULL with diag set on failure. The result holds the code of the compilation opts->module once (code the
     * process already has is shared, not compiled again): its holder gives the hold back with release(). */
    BeCompiled *(*compile)(IrFunc *typed, const BeOptions *opts, LkDiag *diag);
    /* The inputs of a compilation's key that only the backend knows, as malloc'd text: whatever besides the IR
     * changes the code it makes (target, CPU name and features, its compiler's version, math libraries, the
     * options). Two processes whose texts are equal make interchangeable code from the same IR. */
    char *(*key_extras)(const BeOptions *opts, LkDiag *diag);
    /* Code compiled with keep_object as malloc'd bytes (*size of them) that load() accepts in any process whose
     * key_extras are the same; NULL with diag set when the code was not kept. */
    void *(*save)(const BeCompiled *code, size_t *size, LkDiag *diag);
    /* Saved code made runnable, for a compilation named opts->module (bytes of another compilation are
     * refused); NULL with diag set on failure. Like compile()'s result, it holds the code once. */
    BeCompiled *(*load)(const void *bytes, size_t size, const BeOptions *opts, LkDiag *diag);
    /* Gives back one hold that compile() or load() returned on the code of compilation `module`; the last frees
     * the code (and what it alone uses: a gpu compilation's kernels). Its entry must not be running or be
     * called again. The BeCompiled itself is the caller's to free. */
    void (*release)(const char *module);
} BeBackend;

/* The CUDA C the gpu backend makes of typed (after ir_optimize, as every backend gets it): every kernel of the
 * compilation and the device functions they call, as malloc'd text (f.inspect_cuda). Needs no GPU and no NVRTC;
 * NULL with diag set (a CompileError naming the line for a form the gpu backend cannot run yet). */
char *be_gpu_cuda_source(IrFunc *typed, const BeOptions *opts, LkDiag *diag);

/* Why the backend of that name refuses every call that lowers to intrinsic k (a CompileError where one is
 * compiled), or NULL where it runs it: the gpu's table of host refusals (gpu_host_refusal); the cpu and openmp
 * backends refuse none. For the user guide's coverage table (typespec's library registry). */
const char *be_refusal(const char *backend, IrIntrinsic k);

/* The backend of that name ("cpu", "openmp", "gpu"), or NULL with diag set. */
const BeBackend *be_find(const char *name, LkDiag *diag);

/* Starts the llvm backends' JIT (every backend's host code runs in it) on a thread of its own, so that the first
 * compile or cache load of the process finds it made, or waits only for what is left; called once, when the
 * extension is loaded. What the environment chooses ($LORIKEET_CPU, $LORIKEET_VECTOR_MATH) is still read at the
 * first use. Where no thread can be made, or with LORIKEET_JIT_THREAD=0, the first use starts it. */
void be_llvm_start(void);

#endif
