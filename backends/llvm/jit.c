/* jit.c: the one ORC LLJIT of the process, its target machine, and the O3 pipeline.
 * Code is compiled for the target target.c chooses: the host CPU's name and features (so loops vectorise to
 * AVX2/AVX-512 where present), or the x86-64 level LORIKEET_CPU names.
 * Runtime functions are given to the JIT as absolute symbols (they are hidden in our shared object); libm is
 * found in the process. Each object file's code is added under a resource tracker of its own, so that it can be
 * freed when nothing uses it (llvm_backend.c counts the holds).
 * What only compiling needs (the target machine that optimises and emits code, LLVM's command-line options) is
 * made at the first compile, not with the JIT: a process whose code all comes from the disk cache never makes
 * it (about 0.35 ms of a cache hit's first call). The JIT itself is started on a thread of its own when lorikeet
 * is imported (be_llvm_start), so that a process's first call does not wait for it ("starting the JIT" below). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <llvm-c/Analysis.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Support.h>
#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include "cg.h"

static LLVMOrcLLJITRef jit;
static LLVMTargetRef llvm_target;
static char *target_triple; /* as LLVM gave it, which is what a target machine made from it reports */
static CgTarget target;
static LLVMTargetMachineRef target_tm; /* made once, at the first compile (compile_target_once) */
static pthread_once_t compile_target_once = PTHREAD_ONCE_INIT;

static void set_llvm_error(LkDiag *diag, const char *what, LLVMErrorRef err)
{
    char *msg = LLVMGetErrorMessage(err);
    lk_diag_set(diag, LK_ERR_INTERNAL, "", 0, 0, "%s: %s", what, msg);
    LLVMDisposeErrorMessage(msg);
}

static bool define_absolute_symbols(const RtSymbol *syms, int n, LkDiag *diag)
{
    if (n == 0) return true;
    LLVMOrcCSymbolMapPair *pairs = calloc((size_t)n, sizeof *pairs);
    for (int i = 0; i < n; i++) {
        pairs[i].Name = LLVMOrcLLJITMangleAndIntern(jit, syms[i].name);
        pairs[i].Sym.Address = (LLVMOrcExecutorAddress)(uintptr_t)syms[i].addr;
        pairs[i].Sym.Flags.GenericFlags = LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
        pairs[i].Sym.Flags.TargetFlags = 0;
    }
    LLVMOrcMaterializationUnitRef mu = LLVMOrcAbsoluteSymbols(pairs, (size_t)n);
    free(pairs);
    LLVMErrorRef err = LLVMOrcJITDylibDefine(LLVMOrcLLJITGetMainJITDylib(jit), mu);
    if (err) {
        set_llvm_error(diag, "defining runtime symbols", err);
        return false;
    }
    return true;
}

/* The runtime's functions (hidden in our shared object) and its float16 conversions under the names LLVM calls
 * (libmvec's vector math variants: start_first_half and, for a target below the host, start_second_half). */
static bool define_runtime_symbols(LkDiag *diag)
{
    int n;
    const RtSymbol *syms = rt_symbols(&n);
    if (!define_absolute_symbols(syms, n, diag)) return false;
    syms = rt_half_symbols(&n);
    return define_absolute_symbols(syms, n, diag);
}

/* InstCombine sinks an instruction into the successor that uses it, one block per iteration of its fixpoint
 * loop. Straight-line code with a check per statement (a bounds or ZeroDivisionError check branches to its
 * raise block) is a chain of N blocks whose running values all sink block by block to the end: O(N^2) work in
 * InstCombine (1,200 statements `s += a[i % n]`: 4 of its 5.5 s of O3), and every value then lives to the end,
 * which the register allocator pays for again. LLVM 16 has no per-pass switch for it, only this option of the
 * process's LLVM (read by every InstCombine run, ours only in practice: set once, before our first optimisation
 * runs, by compile_target_once). The code generator's MachineSink still moves work into the blocks that use it. */
static void set_llvm_options(void)
{
    static const char *const args[] = {"lorikeet", "-instcombine-code-sinking=false"};
    LLVMParseCommandLineOptions(2, args, "lorikeet");
}

/* What compiling needs besides the JIT, made by the first compile (pthread_once: every other waits for it). */
static void make_compile_target(void)
{
    set_llvm_options();
    target_tm = LLVMCreateTargetMachine(llvm_target, target_triple, target.cpu, target.features,
                                        LLVMCodeGenLevelAggressive, LLVMRelocDefault, LLVMCodeModelJITDefault);
}

/* ---- starting the JIT ----
 * In two halves. The first depends on nothing a process can change: LLVM's native target, the host CPU's name and
 * features, the JIT itself, the runtime's symbols, libmvec loaded and the variants of the host's ISA defined.
 * be_llvm_start runs it on a thread of its own when lorikeet is imported (about 0.9 ms of CPU on a 2-core x86
 * machine that a process's first call then need not wait for); without one, the first user runs it. The second
 * half reads the environment, at the first use as it always did: the target ($LORIKEET_CPU) and whether the
 * vector math variants are used ($LORIKEET_VECTOR_MATH, the ISA). It costs a few microseconds where the target is
 * the host (finding the variants there cost 0.12 ms of the first call). A failure of either is the process's
 * answer from then on.
 * fork() waits for a first half under way (before_fork), so that a child never inherits LLVM half made (a child
 * whose parent had not begun it begins it itself), and so does exit(): LLVM's static destructors must not run
 * under it. */
typedef enum { START_IDLE, START_RUNNING, START_DONE, START_CLOSED } StartState;

static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t start_cond = PTHREAD_COND_INITIALIZER;
static StartState start_state;      /* the first half's, under start_lock as everything below */
static bool first_ok, second_done, second_ok;
static LkDiag start_failure;        /* why the JIT cannot be used, for every caller */
static CgTarget host;               /* the host CPU, as cg_target_choose takes it */
static int jit_ready;               /* both halves done: read without the lock (__atomic) */

static bool start_first_half(LkDiag *diag)
{
    if (LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter()) {
        lk_diag_set(diag, LK_ERR_UNAVAILABLE, "", 0, 0, "LLVM has no native target for this machine");
        return false;
    }
    cg_target_host(&host);
    char *triple = LLVMGetDefaultTargetTriple();
    char *msg = NULL;
    if (LLVMGetTargetFromTriple(triple, &llvm_target, &msg)) {
        lk_diag_set(diag, LK_ERR_UNAVAILABLE, "", 0, 0, "LLVM target: %s", msg);
        LLVMDisposeMessage(msg);
        LLVMDisposeMessage(triple);
        return false;
    }
    target_triple = triple;
    /* The JIT only links the object files compile_module emits with target_tm (it is never given IR), so its own
     * target machine is the triple's generic one: LLJIT makes two of it (for its data layout, the same for every
     * CPU of the triple, and for an IR compiler never used), and a host CPU's name and features cost each of the
     * three several times what the triple alone does (the feature list is parsed and its implications closed). */
    LLVMTargetMachineRef jit_tm = LLVMCreateTargetMachine(llvm_target, triple, "", "", LLVMCodeGenLevelNone,
                                                          LLVMRelocDefault, LLVMCodeModelJITDefault);
    LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
    LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(builder, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(jit_tm));
    LLVMErrorRef err = LLVMOrcCreateLLJIT(&jit, builder);
    if (err) {
        jit = NULL;
        set_llvm_error(diag, "creating the JIT", err);
        return false;
    }
    LLVMOrcDefinitionGeneratorRef gen;
    err = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(jit), NULL, NULL);
    if (err) {
        set_llvm_error(diag, "searching the process for symbols", err);
        return false;
    }
    LLVMOrcJITDylibAddGenerator(LLVMOrcLLJITGetMainJITDylib(jit), gen);
    static RtSymbol variants[CG_MAX_VARIANTS * 2];
    int nvariants = cg_vecmath_preload(&host, variants, CG_MAX_VARIANTS * 2);
    return define_runtime_symbols(diag) && define_absolute_symbols(variants, nvariants, diag);
}

static bool start_second_half(LkDiag *diag)
{
    if (!cg_target_choose(&target, &host, diag)) return false;
    static RtSymbol variants[CG_MAX_VARIANTS * 2];
    int nvariants = cg_vecmath_choose(&target, variants, CG_MAX_VARIANTS * 2);
    return define_absolute_symbols(variants, nvariants, diag);
}

/* The first half, once: run by the caller if nobody began it, else waited for. With start_lock held. */
static bool first_half_locked(void)
{
    while (start_state == START_RUNNING) pthread_cond_wait(&start_cond, &start_lock);
    if (start_state == START_IDLE) {
        start_state = START_RUNNING;
        pthread_mutex_unlock(&start_lock);
        LkDiag diag = {0};
        bool ok = start_first_half(&diag);
        pthread_mutex_lock(&start_lock);
        if (!ok) start_failure = diag;
        first_ok = ok;
        start_state = START_DONE;
        pthread_cond_broadcast(&start_cond);
    }
    return start_state == START_DONE && first_ok;
}

bool cg_jit_init(LkDiag *diag)
{
    if (__atomic_load_n(&jit_ready, __ATOMIC_ACQUIRE)) return true;
    pthread_mutex_lock(&start_lock);
    bool ok = first_half_locked();
    if (ok && !second_done) {
        LkDiag why = {0};
        second_ok = start_second_half(&why);
        if (!second_ok) start_failure = why;
        second_done = true;
        if (second_ok) __atomic_store_n(&jit_ready, 1, __ATOMIC_RELEASE);
    }
    ok = ok && second_ok;
    if (!ok) *diag = start_failure;
    pthread_mutex_unlock(&start_lock);
    return ok;
}

static void *start_thread(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&start_lock);
    first_half_locked();
    pthread_mutex_unlock(&start_lock);
    return NULL;
}

/* fork(): no first half under way from here until after_fork (start_lock is held across the fork) */
static void before_fork(void)
{
    pthread_mutex_lock(&start_lock);
    while (start_state == START_RUNNING) pthread_cond_wait(&start_cond, &start_lock);
}

static void after_fork(void)
{
    pthread_mutex_unlock(&start_lock);
}

/* exit(): a first half under way is finished, one not begun never begins */
static void before_exit(void)
{
    pthread_mutex_lock(&start_lock);
    while (start_state == START_RUNNING) pthread_cond_wait(&start_cond, &start_lock);
    if (start_state == START_IDLE) {
        start_state = START_CLOSED;
        lk_diag_set(&start_failure, LK_ERR_UNAVAILABLE, "", 0, 0, "the JIT cannot start: the process is exiting");
    }
    pthread_mutex_unlock(&start_lock);
}

void be_llvm_start(void)
{
    static bool asked; /* under the GIL: the extension's module init */
    const char *env = getenv("LORIKEET_JIT_THREAD");
    if (asked || (env && strcmp(env, "0") == 0)) return; /* then the first use starts it */
    asked = true;
    if (pthread_atfork(before_fork, after_fork, after_fork) != 0 || atexit(before_exit) != 0) return;
    pthread_t th;
    if (pthread_create(&th, NULL, start_thread, NULL) == 0) pthread_detach(th);
}

LLVMTargetMachineRef cg_jit_target_machine(void)
{
    pthread_once(&compile_target_once, make_compile_target);
    return target_tm;
}

void cg_jit_target_describe(const char **triple, const char **cpu, const char **features)
{
    *triple = target_triple;
    *cpu = target.cpu;
    *features = target.features;
}

bool cg_jit_optimize(LLVMModuleRef mod, LkDiag *diag)
{
    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    LLVMPassBuilderOptionsSetLoopVectorization(po, 1);
    LLVMPassBuilderOptionsSetSLPVectorization(po, 1);
    LLVMPassBuilderOptionsSetLoopInterleaving(po, 1);
    LLVMPassBuilderOptionsSetLoopUnrolling(po, 1);
    LLVMErrorRef err = LLVMRunPasses(mod, "default<O3>", cg_jit_target_machine(), po);
    LLVMDisposePassBuilderOptions(po);
    if (err) {
        set_llvm_error(diag, "optimising", err);
        return false;
    }
    return true;
}

/* ---- compiled code as an object file: what a module becomes, what is saved and loaded again ---- */

/* The module (optimised) compiled to an object file for the JIT's target machine; NULL with diag set. */
LLVMMemoryBufferRef cg_jit_emit_object(LLVMModuleRef mod, LkDiag *diag)
{
    char *msg = NULL;
    LLVMMemoryBufferRef obj = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(cg_jit_target_machine(), mod, LLVMObjectFile, &msg, &obj)) {
        lk_diag_set(diag, LK_ERR_INTERNAL, "", 0, 0, "emitting machine code: %.300s", msg ? msg : "");
        LLVMDisposeMessage(msg);
        return NULL;
    }
    return obj;
}

/* Adds an object file's code to the process (taking the buffer) under a resource tracker of its own, which
 * cg_jit_remove gives back to free that code; NULL with diag set. Its symbols must not be defined yet
 * (cg_jit_find first). */
LLVMOrcResourceTrackerRef cg_jit_add_object(LLVMMemoryBufferRef obj, LkDiag *diag)
{
    LLVMOrcResourceTrackerRef tracker = LLVMOrcJITDylibCreateResourceTracker(LLVMOrcLLJITGetMainJITDylib(jit));
    LLVMErrorRef err = LLVMOrcLLJITAddObjectFileWithRT(jit, tracker, obj);
    if (err) {
        set_llvm_error(diag, "adding machine code to the JIT", err);
        LLVMOrcReleaseResourceTracker(tracker);
        return NULL;
    }
    return tracker;
}

/* Frees the code and symbols added under tracker (its memory goes back to the process) and the tracker. Nothing
 * may run that code or look up its symbols any more. A failure (LLVM found nothing to free) leaves the code. */
void cg_jit_remove(LLVMOrcResourceTrackerRef tracker)
{
    LLVMErrorRef err = LLVMOrcResourceTrackerRemove(tracker);
    if (err) LLVMConsumeError(err);
    LLVMOrcReleaseResourceTracker(tracker);
    /* the names of its symbols (and those looked up and not found) stay interned until the pool is swept */
    LLVMOrcSymbolStringPoolClearDeadEntries(LLVMOrcExecutionSessionGetSymbolStringPool(LLVMOrcLLJITGetExecutionSession(jit)));
}

/* The address of a symbol of compiled code, or NULL when no module defines it (or it fails to link: then
 * diag, when not NULL, says why). */
void *cg_jit_find(const char *name, LkDiag *diag)
{
    LLVMOrcExecutorAddress addr = 0;
    LLVMErrorRef err = LLVMOrcLLJITLookup(jit, &addr, name);
    if (err) {
        if (diag) set_llvm_error(diag, "looking up compiled code", err);
        else LLVMConsumeError(err);
        return NULL;
    }
    return (void *)(uintptr_t)addr;
}
