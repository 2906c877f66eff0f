/* jit.c: the one ORC LLJIT of the process, its target machine, and the O3 pipeline.
 * Code is compiled for the target target.c chooses: the host CPU's name and features (so loops vectorise to
 * AVX2/AVX-512 where present), or the x86-64 level LORIKEET_CPU names.
 * Runtime functions are given to the JIT as absolute symbols (they are hidden in our shared object); libm is
 * found in the process. Each object file's code is added under a resource tracker of its own, so that it can be
 * freed when nothing uses it (llvm_backend.c counts the holds).
 * What only compiling needs (the target machine that optimises and emits code, LLVM's command-line options) is
 * made at the first compile, not with the JIT: a process whose code all comes from the disk cache never makes
 * it (about 0.35 ms of a cache hit's first call). */
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
static char init_error[512];
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

/* The runtime's functions (hidden in our shared object), its float16 conversions under the names LLVM calls, and
 * libmvec's vector math variants. */
static bool define_runtime_symbols(LkDiag *diag)
{
    int n;
    const RtSymbol *syms = rt_symbols(&n);
    if (!define_absolute_symbols(syms, n, diag)) return false;
    syms = rt_half_symbols(&n);
    if (!define_absolute_symbols(syms, n, diag)) return false;
    static RtSymbol variants[CG_MAX_VARIANTS * 2];
    int nvariants = cg_vecmath_symbols(&target, variants, CG_MAX_VARIANTS * 2);
    return define_absolute_symbols(variants, nvariants, diag);
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

bool cg_jit_init(LkDiag *diag)
{
    if (jit) return true;
    if (init_error[0]) {
        lk_diag_set(diag, LK_ERR_UNAVAILABLE, "", 0, 0, "%s", init_error);
        return false;
    }
    if (LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter()) {
        snprintf(init_error, sizeof init_error, "LLVM has no native target for this machine");
        lk_diag_set(diag, LK_ERR_UNAVAILABLE, "", 0, 0, "%s", init_error);
        return false;
    }
    if (!cg_target_choose(&target, diag)) {
        snprintf(init_error, sizeof init_error, "%s", diag->message);
        return false;
    }
    char *triple = LLVMGetDefaultTargetTriple();
    char *msg = NULL;
    if (LLVMGetTargetFromTriple(triple, &llvm_target, &msg)) {
        snprintf(init_error, sizeof init_error, "LLVM target: %s", msg);
        LLVMDisposeMessage(msg);
        LLVMDisposeMessage(triple);
        lk_diag_set(diag, LK_ERR_UNAVAILABLE, "", 0, 0, "%s", init_error);
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
        snprintf(init_error, sizeof init_error, "%s", diag->message);
        return false;
    }
    LLVMOrcDefinitionGeneratorRef gen;
    err = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(jit), NULL, NULL);
    if (err) {
        set_llvm_error(diag, "searching the process for symbols", err);
        return false;
    }
    LLVMOrcJITDylibAddGenerator(LLVMOrcLLJITGetMainJITDylib(jit), gen);
    return define_runtime_symbols(diag);
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
