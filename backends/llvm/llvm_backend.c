/* llvm_backend.c: the `cpu` and `openmp` backends. Typed IR -> LLVM module -> verify -> O3 for the JIT's target
 * -> an object file -> ORC JIT. The object file is what save() keeps and load() adds again, in any process. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include <llvm-c/Analysis.h>
#include <llvm-c/IRReader.h>
#include "cg.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static bool cpu_available(LkDiag *why)
{
    return cg_jit_init(why);
}

static void init_types(Cg *cg)
{
    cg->i1 = LLVMInt1TypeInContext(cg->ctx);
    cg->i8 = LLVMInt8TypeInContext(cg->ctx);
    cg->i32 = LLVMInt32TypeInContext(cg->ctx);
    cg->i64 = LLVMInt64TypeInContext(cg->ctx);
    cg->f16 = LLVMHalfTypeInContext(cg->ctx);
    cg->f32 = LLVMFloatTypeInContext(cg->ctx);
    cg->f64 = LLVMDoubleTypeInContext(cg->ctx);
    cg->ptr = LLVMPointerTypeInContext(cg->ctx, 0);
    cg->void_t = LLVMVoidTypeInContext(cg->ctx);
}

/* fastmath: the function attributes LLVM's code generator and vectoriser read in place of per-instruction
 * flags, which the C API of LLVM 16 cannot set. */
static void add_fastmath(Cg *cg)
{
    static const char *attrs[] = {"unsafe-fp-math", "no-infs-fp-math", "no-nans-fp-math", "no-signed-zeros-fp-math",
                                  "approx-func-fp-math"};
    for (LLVMValueRef fn = LLVMGetFirstFunction(cg->mod); fn; fn = LLVMGetNextFunction(fn)) {
        if (LLVMIsDeclaration(fn)) continue;
        for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
            LLVMAttributeRef a = LLVMCreateStringAttribute(cg->ctx, attrs[i], (unsigned)strlen(attrs[i]), "true", 4);
            LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, a);
        }
    }
}

/* LLVM's remarks and warnings (a loop it chose not to vectorise) are not the user's business: drop them.
 * Errors still surface through the verifier and the JIT's own error values. */
static void quiet_diagnostics(LLVMDiagnosticInfoRef info, void *unused)
{
    (void)info;
}

/* LLVM-C 16 cannot set fast-math flags on instructions, so fastmath rewrites the module's text: every
 * floating-point operation and call of an LLVM float intrinsic gets the `fast` flag, and the text is parsed
 * back. Only fastmath compilations pay for the round trip. Returns the new module, or NULL with diag set. */
static char *add_fast_flags(const char *text)
{
    static const char *ops[] = {"= fadd ", "= fsub ", "= fmul ", "= fdiv ", "= frem ", "= fneg ", "= fcmp ",
                                "call float @llvm.", "call double @llvm."};
    size_t n = strlen(text), cap = n + n / 4 + 64, len = 0;
    char *out = malloc(cap);
    for (size_t i = 0; i < n;) {
        size_t k;
        for (k = 0; k < sizeof ops / sizeof ops[0]; k++)
            if (strncmp(text + i, ops[k], strlen(ops[k])) == 0) break;
        if (k < sizeof ops / sizeof ops[0]) {
            const char *op = ops[k];
            bool is_call = op[0] == 'c';
            size_t head = is_call ? 5 : strlen(op); /* "call " or "= fadd " */
            if (len + head + 8 >= cap) out = realloc(out, cap = cap * 2 + head + 8);
            memcpy(out + len, text + i, head);
            len += head;
            memcpy(out + len, "fast ", 5);
            len += 5;
            i += head;
            continue;
        }
        if (len + 2 >= cap) out = realloc(out, cap = cap * 2);
        out[len++] = text[i++];
    }
    out[len] = 0;
    return out;
}

static LLVMModuleRef with_fast_flags(LLVMContextRef ctx, LLVMModuleRef mod, LkDiag *diag)
{
    char *text = LLVMPrintModuleToString(mod);
    char *fast = add_fast_flags(text);
    LLVMDisposeMessage(text);
    LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(fast, strlen(fast), "fastmath");
    free(fast);
    LLVMModuleRef out = NULL;
    char *msg = NULL;
    if (LLVMParseIRInContext(ctx, buf, &out, &msg)) { /* takes the buffer */
        lk_diag_set(diag, LK_ERR_INTERNAL, "", 0, 0, "fastmath: the rewritten module does not parse: %.300s", msg ? msg : "");
        LLVMDisposeMessage(msg);
        return NULL;
    }
    LLVMDisposeModule(mod);
    return out;
}

/* Every function the module defines for other modules takes the compilation's name as a prefix: the IR's
 * symbols (f.0, its callees g.1...) are unique within one compilation only. Internal functions (chunks) need
 * none. The IrFunc is not touched: the names are the backend's. */
static void name_symbols(LLVMModuleRef mod, const char *module)
{
    for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
        LLVMLinkage linkage = LLVMGetLinkage(fn);
        if (LLVMIsDeclaration(fn) || linkage == LLVMInternalLinkage || linkage == LLVMPrivateLinkage) continue;
        size_t n;
        const char *name = LLVMGetValueName2(fn, &n);
        size_t len = strlen(module) + 1 + n;
        char *sym = malloc(len + 1);
        snprintf(sym, len + 1, "%s.%.*s", module, (int)n, name);
        LLVMSetValueName2(fn, sym, len);
        free(sym);
    }
}

/* The table of the strings the code's error records name (RtNames: files, variables), as data of the module
 * named `<module>.error_names`: the strings in index order, each ended by NUL, then an empty one. The code
 * carries its table: compiled here, reused in this process or loaded from saved bytes, the table is read back
 * from the code (read_names), so it always matches the indices compiled in. */
static bool emit_names(Cg *cg, const char *module, LkDiag *diag)
{
    size_t len = 1;
    for (int i = 0; i < cg->names->n; i++) len += strlen(cg->names->names[i]) + 1;
    char *blob = malloc(len), *sym = malloc(strlen(module) + sizeof ".error_names");
    if (!blob || !sym) {
        free(blob);
        free(sym);
        lk_diag_set(diag, LK_ERR_MEMORY, "", 0, 0, "out of memory naming the errors of compiled code");
        return false;
    }
    char *p = blob;
    for (int i = 0; i < cg->names->n; i++) p = stpcpy(p, cg->names->names[i]) + 1;
    *p = 0;
    LLVMValueRef init = LLVMConstStringInContext(cg->ctx, blob, (unsigned)len, 1);
    sprintf(sym, "%s.error_names", module);
    LLVMValueRef g = LLVMAddGlobal(cg->mod, LLVMTypeOf(init), sym);
    LLVMSetInitializer(g, init);
    LLVMSetGlobalConstant(g, 1);
    free(blob);
    free(sym);
    return true;
}

static bool read_names(const char *module, RtNames *names, LkDiag *diag)
{
    char sym[512];
    snprintf(sym, sizeof sym, "%s.error_names", module);
    const char *p = cg_jit_find(sym, diag);
    if (!p) return false;
    for (; *p; p += strlen(p) + 1)
        if (rt_names_index(names, p) < 0) {
            lk_diag_set(diag, LK_ERR_MEMORY, "", 0, 0, "out of memory naming the errors of compiled code");
            return false;
        }
    return true;
}

/* What save() writes and load() reads: this header, the entry's symbol, then the object file. */
#define SAVED_MAGIC "lorikeet llvm object 1\n"

static bool keep_object(BeCompiled *out, const char *entry, LLVMMemoryBufferRef obj)
{
    size_t magic = sizeof SAVED_MAGIC - 1, name = strlen(entry) + 1, size = LLVMGetBufferSize(obj);
    out->object_size = magic + name + size;
    out->object = malloc(out->object_size);
    if (!out->object) return false;
    memcpy(out->object, SAVED_MAGIC, magic);
    memcpy((char *)out->object + magic, entry, name);
    memcpy((char *)out->object + magic + name, LLVMGetBufferStart(obj), size);
    return true;
}

/* ---- the code in the process: one object per compilation name, held by every BeCompiled made of it ----
 *
 * The JIT's symbol table is the process's one table from compilation names to code. Each compilation's object is
 * added under a resource tracker of its own and counted here: every BeCompiled that compile() or load() returns
 * holds its code once (two dispatchers of one function, or a compilation loaded from the disk cache under
 * another source key, share one object), and release() drops a hold; the last frees the code. A module only
 * calls its own symbols (every function it defines is named after it, its callees are compiled into it) and
 * the runtime's, so freeing one never breaks another. The lock makes looking a name up, adding its object and
 * removing it one step each, so that two threads installing one compilation never add it twice (LLVM refuses
 * a duplicate definition), and a name being freed is never found half gone. */
typedef struct Installed {
    char module[64];
    LLVMOrcResourceTrackerRef tracker;
    int holds;
    bool gpu;  /* host code of a gpu compilation: its global holds the loaded RtGpuModule */
} Installed;

static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;
static Installed *installs;
static int ninstalls, cap_installs;

static Installed *find_installed(const char *module)
{
    for (int i = 0; i < ninstalls; i++)
        if (strcmp(installs[i].module, module) == 0) return &installs[i];
    return NULL;
}

/* The entry of the compilation's code: the one already in the process (a compilation with the same key made the
 * same code: compiled again, or loaded from the disk cache under another source key), else the object's, added
 * now. Either way the caller holds the code once more. Takes obj. */
static BeEntry install(const char *module, const char *entry, LLVMMemoryBufferRef obj, bool gpu, LkDiag *diag)
{
    void *addr = NULL;
    pthread_mutex_lock(&install_lock);
    Installed *in = find_installed(module);
    if (in) {
        LLVMDisposeMemoryBuffer(obj);
        if ((addr = cg_jit_find(entry, diag))) in->holds++;
    } else if (ninstalls == cap_installs &&
               !(installs = realloc(installs, sizeof *installs * (size_t)(cap_installs = cap_installs * 2 + 16)))) {
        LLVMDisposeMemoryBuffer(obj);
        lk_diag_set(diag, LK_ERR_MEMORY, "", 0, 0, "out of memory adding compiled code");
    } else {
        LLVMOrcResourceTrackerRef tracker = cg_jit_add_object(obj, diag);
        if (tracker && !(addr = cg_jit_find(entry, diag))) cg_jit_remove(tracker); /* it did not link */
        if (addr) {
            in = &installs[ninstalls++];
            snprintf(in->module, sizeof in->module, "%s", module);
            in->tracker = tracker;
            in->holds = 1;
            in->gpu = gpu;
        }
    }
    pthread_mutex_unlock(&install_lock);
    return (BeEntry)addr;
}

/* The entry of a compilation already in the process, held once more; NULL when it is not there. */
static BeEntry acquire(const char *module, const char *entry)
{
    void *addr = NULL;
    pthread_mutex_lock(&install_lock);
    Installed *in = find_installed(module);
    if (in && (addr = cg_jit_find(entry, NULL))) in->holds++;
    pthread_mutex_unlock(&install_lock);
    return (BeEntry)addr;
}

void *be_llvm_release(const char *module)
{
    void *gpu_module = NULL;
    pthread_mutex_lock(&install_lock);
    Installed *in = find_installed(module);
    if (in && --in->holds == 0) {
        if (in->gpu) {
            char sym[512];
            snprintf(sym, sizeof sym, "%s.gpu_module", module);
            void **slot = cg_jit_find(sym, NULL);
            gpu_module = slot ? *slot : NULL;
        }
        cg_jit_remove(in->tracker);
        *in = installs[--ninstalls];
    }
    pthread_mutex_unlock(&install_lock);
    return gpu_module;
}

static void llvm_release(const char *module)
{
    be_llvm_release(module);
}

/* A BeCompiled whose code could not be completed: its hold on the code is given back. */
static void drop_compiled(BeCompiled *out, const char *module)
{
    if (out->entry) be_llvm_release(module);
    free(out->ir_text);
    free(out->object);
    rt_names_free(&out->names);
    free(out);
}

/* Code already in the JIT (reused, or loaded from bytes) as a BeCompiled: its entry and its module's names. */
static BeCompiled *installed(BeEntry entry, const char *module, double t0, LkDiag *diag)
{
    BeCompiled *out = calloc(1, sizeof *out);
    out->entry = entry;
    if (!read_names(module, &out->names, diag)) {
        drop_compiled(out, module);
        return NULL;
    }
    out->compile_ms = now_ms() - t0;
    return out;
}

static bool entry_name(char *buf, size_t n, const IrFunc *f, const BeOptions *opts, LkDiag *diag)
{
    if (!opts->module) {
        lk_diag_set(diag, LK_ERR_INTERNAL, f->file, f->line, 0, "a compilation without a module name");
        return false;
    }
    if ((size_t)snprintf(buf, n, "%s.%s.entry", opts->module, f->symbol) >= n) {
        lk_diag_set(diag, LK_ERR_INTERNAL, f->file, f->line, 0, "symbol name too long: %s", f->symbol);
        return false;
    }
    return true;
}

/* The global that holds a gpu compilation's loaded module (gpu_launch.c reads it before each launch). */
static LLVMValueRef add_gpu_module_global(Cg *cg, const char *module)
{
    char sym[512];
    snprintf(sym, sizeof sym, "%s.gpu_module", module);
    LLVMValueRef g = LLVMAddGlobal(cg->mod, cg->ptr, sym);
    LLVMSetInitializer(g, LLVMConstNull(cg->ptr));
    return g;
}

/* gpu: the host code of a gpu compilation (NULL for cpu and openmp) */
static BeCompiled *compile_module(IrFunc *f, const BeOptions *opts, bool parallel, const GpuHost *gpu, LkDiag *diag)
{
    double t0 = now_ms();
    if (!cg_jit_init(diag)) return NULL;
    char entry[512];
    if (!entry_name(entry, sizeof entry, f, opts, diag)) return NULL;
    if (!opts->keep_ir_text && !opts->keep_object) {
        /* the same compilation made earlier in this process (another dispatcher of the same function) */
        BeEntry done = acquire(opts->module, entry);
        if (done) return installed(done, opts->module, t0, diag);
    }

    LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
    RtNames names = {0};
    for (int i = 0; gpu && i < gpu->names->n; i++) rt_names_index(&names, gpu->names->names[i]);
    Cg cg = {.ctx = LLVMOrcThreadSafeContextGetContext(tsc), .diag = diag, .opts = opts, .parallel = parallel,
             .names = &names, .gpu = gpu};
    LLVMContextSetDiagnosticHandler(cg.ctx, quiet_diagnostics, NULL);
    cg.mod = LLVMModuleCreateWithNameInContext(opts->module, cg.ctx);
    LLVMTargetMachineRef tm = cg_jit_target_machine();
    char *triple = LLVMGetTargetMachineTriple(tm);
    LLVMSetTarget(cg.mod, triple);
    LLVMDisposeMessage(triple);
    LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
    LLVMSetModuleDataLayout(cg.mod, td);
    LLVMDisposeTargetData(td);
    cg.b = LLVMCreateBuilderInContext(cg.ctx);
    init_types(&cg);
    if (gpu) cg.gpu_module = add_gpu_module_global(&cg, opts->module);

    bool ok = cg_emit_module(&cg, f);
    LLVMDisposeBuilder(cg.b);
    if (ok) name_symbols(cg.mod, opts->module);
    if (ok) ok = emit_names(&cg, opts->module, diag);
    rt_names_free(&names);
    char *msg = NULL;
    if (ok && LLVMVerifyModule(cg.mod, LLVMReturnStatusAction, &msg)) {
        lk_diag_set(diag, LK_ERR_INTERNAL, f->file, f->line, 0, "lorikeet produced invalid LLVM IR: %.400s", msg);
        ok = false;
    }
    if (msg) LLVMDisposeMessage(msg);
    if (ok && opts->fastmath) {
        LLVMModuleRef fast = with_fast_flags(cg.ctx, cg.mod, diag);
        if (fast) cg.mod = fast;
        ok = fast != NULL;
        if (ok) add_fastmath(&cg);
    }
    if (ok) ok = cg_jit_optimize(cg.mod, diag);
    LLVMMemoryBufferRef obj = ok ? cg_jit_emit_object(cg.mod, diag) : NULL;
    BeCompiled *out = NULL;
    if (obj) {
        out = calloc(1, sizeof *out);
        if (opts->keep_ir_text) {
            char *text = LLVMPrintModuleToString(cg.mod);
            out->ir_text = strdup(text);
            LLVMDisposeMessage(text);
        }
        if (opts->keep_object) keep_object(out, entry, obj);
        out->entry = install(opts->module, entry, obj, gpu != NULL, diag);
        if (!out->entry || !read_names(opts->module, &out->names, diag)) {
            drop_compiled(out, opts->module);
            out = NULL;
        }
    }
    LLVMDisposeModule(cg.mod);
    LLVMOrcDisposeThreadSafeContext(tsc);
    if (out) out->compile_ms = now_ms() - t0;
    return out;
}

static void *llvm_save(const BeCompiled *code, size_t *size, LkDiag *diag)
{
    if (!code->object) {
        lk_diag_set(diag, LK_ERR_INTERNAL, "", 0, 0, "this code was compiled without keeping its object file");
        return NULL;
    }
    void *bytes = malloc(code->object_size);
    if (bytes) memcpy(bytes, code->object, code->object_size);
    *size = code->object_size;
    return bytes;
}

static BeCompiled *llvm_load(const void *bytes, size_t size, const BeOptions *opts, LkDiag *diag)
{
    double t0 = now_ms();
    if (!cg_jit_init(diag)) return NULL;
    size_t magic = sizeof SAVED_MAGIC - 1;
    const char *p = bytes, *entry = p + magic;
    const char *end = size > magic ? memchr(entry, 0, size - magic) : NULL;
    size_t prefix = opts->module ? strlen(opts->module) : 0;
    if (size <= magic || memcmp(p, SAVED_MAGIC, magic) != 0 || !end) {
        lk_diag_set(diag, LK_ERR_INTERNAL, "", 0, 0, "not code saved by the llvm backends");
        return NULL;
    }
    if (!opts->module || strncmp(entry, opts->module, prefix) != 0 || entry[prefix] != '.') {
        lk_diag_set(diag, LK_ERR_INTERNAL, "", 0, 0, "saved code of another compilation (%.60s, not %.60s)", entry,
                    opts->module ? opts->module : "?");
        return NULL;
    }
    const char *obj_start = end + 1;
    LLVMMemoryBufferRef obj =
        LLVMCreateMemoryBufferWithMemoryRangeCopy(obj_start, size - (size_t)(obj_start - p), opts->module);
    BeEntry fn = install(opts->module, entry, obj, false, diag);
    if (!fn) return NULL;
    return installed(fn, opts->module, t0, diag);
}

/* The llvm backends' share of a compilation's key. The target is the JIT's own target machine (its CPU and
 * features, not necessarily the host's); vecmath lists the math functions that have a libmvec variant here (none
 * without libmvec or with LORIKEET_VECTOR_MATH=0), since those loops call it. CG_CODEGEN_VERSION changes with
 * what this backend makes of the IR; RT_MAX_THREADS and RtCtx's size are compiled into the code. */
#define CG_CODEGEN_VERSION 5 /* 2: errors as a record, and the table of names as data; 3: loops are versioned
                              * in the IR (ir/version_loops.c), no longer here; 4: InstCombine sinks no code
                              * (jit.c); 5: the loops of a versioned if's general arm stay plain (cg->cold) */
_Static_assert(IR_MATH_COUNT <= 64, "key_extras lists the math functions with a vector variant in 64 bits");
static char *key_extras(const char *backend, const BeOptions *opts, LkDiag *diag)
{
    if (!cg_jit_init(diag)) return NULL;
    const char *triple, *cpu, *features; /* what cg_jit_target_machine() would report, without making it */
    cg_jit_target_describe(&triple, &cpu, &features);
    unsigned major, minor, patch;
    LLVMGetVersion(&major, &minor, &patch);
    uint64_t vecmath = 0;
    for (int f = 0; f < IR_MATH_COUNT; f++)
        if (cg_vecmath_has((IrMathFn)f)) vecmath |= 1ull << f;
    size_t n = strlen(triple) + strlen(cpu) + strlen(features) + 512;
    char *text = malloc(n);
    snprintf(text, n,
             "backend=%s;codegen=%d;triple=%s;cpu=%s;features=%s;llvm=%u.%u.%u;vecmath=%llx;fastmath=%d;"
             "rt_max_threads=%d;rtctx=%zu",
             backend, CG_CODEGEN_VERSION, triple, cpu, features, major, minor, patch, (unsigned long long)vecmath,
             opts->fastmath, RT_MAX_THREADS, sizeof(RtCtx));
    return text;
}

static char *cpu_key_extras(const BeOptions *opts, LkDiag *diag)
{
    return key_extras("cpu", opts, diag);
}

static char *openmp_key_extras(const BeOptions *opts, LkDiag *diag)
{
    return key_extras("openmp", opts, diag);
}

static BeCompiled *cpu_compile(IrFunc *f, const BeOptions *opts, LkDiag *diag)
{
    return compile_module(f, opts, false, NULL, diag);
}

/* openmp: the same code, with the outermost data-parallel loops and prange loops run by the OpenMP team */
static bool openmp_available(LkDiag *why)
{
    if (!cg_jit_init(why)) return false;
    const char *no = rt_parallel_unavailable();
    if (no) lk_diag_set(why, LK_ERR_UNAVAILABLE, "", 0, 0, "the openmp backend cannot run here: %s", no);
    return no == NULL;
}

static BeCompiled *openmp_compile(IrFunc *f, const BeOptions *opts, LkDiag *diag)
{
    return compile_module(f, opts, true, NULL, diag);
}

const BeBackend be_llvm_openmp = {
    .name = "openmp",
    .available = openmp_available,
    .compile = openmp_compile,
    .key_extras = openmp_key_extras,
    .save = llvm_save,
    .load = llvm_load,
    .release = llvm_release,
};

const BeBackend be_llvm_cpu = {
    .name = "cpu",
    .available = cpu_available,
    .compile = cpu_compile,
    .key_extras = cpu_key_extras,
    .save = llvm_save,
    .load = llvm_load,
    .release = llvm_release,
};

char *be_llvm_cpu_key_extras(const BeOptions *opts, LkDiag *diag)
{
    return key_extras("cpu", opts, diag);
}

BeCompiled *be_llvm_compile_gpu_host(IrFunc *f, const BeOptions *opts, const GpuHost *host, void ***module_slot,
                                     LkDiag *diag)
{
    BeCompiled *code = compile_module(f, opts, false, host, diag);
    if (!code) return NULL;
    char sym[512];
    snprintf(sym, sizeof sym, "%s.gpu_module", opts->module);
    *module_slot = cg_jit_find(sym, diag);
    if (!*module_slot) {
        drop_compiled(code, opts->module);
        return NULL;
    }
    return code;
}

void **be_llvm_gpu_module_slot(const char *module)
{
    char sym[512];
    snprintf(sym, sizeof sym, "%s.gpu_module", module);
    return cg_jit_find(sym, NULL);
}
