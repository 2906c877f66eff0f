/* vecmath.c: vector variants of the math functions, taken from glibc's libmvec, so that loops calling exp, log,
 * sin, erf, pow... vectorise instead of making one scalar libm call per element.
 *
 * How: a math call becomes a call of a small wrapper, `lk.vecmath.<variant>(x)`, that runs the vector variant
 * on x in every lane and returns lane 0. The call site carries the attribute "vector-function-abi-variant"
 * naming the variant in the x86 vector function ABI (`_ZGVdN4v_exp` is exp on 4 doubles for AVX2), so the loop
 * vectoriser widens the call to the variant itself; the wrapper is never inlined, so that it is still a call the
 * vectoriser can widen (what clang's -fveclib=libmvec does through TargetLibraryInfo, which the LLVM-C API does
 * not reach).
 *
 * Why the wrapper: every element must be computed by the same function, whether it falls in the vectorised part
 * of a loop or in its scalar remainder, in scalar code, or at the edge of an openmp chunk. libmvec's functions
 * differ from libm's in the last bit, so a scalar libm call for the remainder made results depend on where the
 * chunks ended, hence on the thread count. For the same reason there is one ISA a process, chosen by the target
 * (target.c), never AVX-512's 'e' variants beside AVX2's 'd': the vectoriser's choice of width would decide
 * which one computed an element, and an x86-64-v4 machine would give other bits than a v3 one. The vectoriser
 * prefers 256-bit vectors on AVX-512 machines anyway.
 *
 * Only variants that libmvec.so.1 of this process exports are used; each is given to the JIT as an absolute
 * symbol (those of the host's ISA whatever the target, so that the thread starting the JIT can do it ahead). No libmvec (older glibc, musl), a target without SSE4.1, or LORIKEET_VECTOR_MATH=0 means scalar libm
 * calls: slower, and the same within rounding. libmvec's functions are accurate to a few ulp (glibc's manual
 * lists them); NumPy's own SIMD exp/log/sin differ from libm by as much. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cg.h"

/* The C name of f if libmvec (glibc 2.35+) has vector versions of it, else NULL. Arity 2 functions take "vv". */
static const char *mvec_base(IrMathFn f)
{
    switch (f) {
    case IR_MATH_SQRT: case IR_MATH_FMOD: case IR_MATH_GAMMA: case IR_MATH_LGAMMA:
        return NULL; /* sqrt is an instruction; libmvec lacks the others */
    default:
        return ir_math_c_name(f, false);
    }
}

/* An ISA of the vector function ABI: its letter and the lanes of float64 (float32 has twice as many). */
typedef struct {
    char letter;
    int lanes64;
} MvecIsa;

/* The variants of one ISA that libmvec exports: found[f][is_f32]. */
typedef struct {
    MvecIsa isa;               /* letter 0: none looked up */
    bool found[IR_MATH_COUNT][2];
} MvecTable;

static struct {
    bool enabled;
    MvecIsa isa;               /* the process's, once chosen (cg_vecmath_choose) */
    bool found[IR_MATH_COUNT][2];
    MvecTable preloaded;       /* the host's own ISA's, found ahead (cg_vecmath_preload) */
} mvec;

static int lanes_of(MvecIsa isa, bool f32)
{
    return f32 ? isa.lanes64 * 2 : isa.lanes64;
}

static int lanes(bool f32)
{
    return lanes_of(mvec.isa, f32);
}

static void variant_name_of(char *out, size_t size, MvecIsa isa, IrMathFn f, bool f32)
{
    snprintf(out, size, "_ZGV%cN%d%s_%s%s", isa.letter, lanes_of(isa, f32), ir_math_arity(f) == 2 ? "vv" : "v",
             mvec_base(f), f32 ? "f" : "");
}

static void variant_name(char *out, size_t size, IrMathFn f, bool f32)
{
    variant_name_of(out, size, mvec.isa, f, f32);
}

/* The ISA a target's loops use: AVX2's 'd' where it has AVX2 and FMA, SSE4.1's 'b' where it has that, else none
 * (letter 0). */
static MvecIsa isa_of(const CgTarget *t)
{
    if (t->avx2_fma) return (MvecIsa){'d', 4};
    if (t->sse41) return (MvecIsa){'b', 2};
    return (MvecIsa){0, 0};
}

/* Looks up isa's variants in libmvec (loaded), fills table and syms (names and addresses for the JIT); their
 * number. */
static int find_variants(MvecIsa isa, MvecTable *table, RtSymbol *syms, int max)
{
    memset(table, 0, sizeof *table);
    table->isa = isa;
    void *lib = isa.letter ? dlopen("libmvec.so.1", RTLD_NOW | RTLD_GLOBAL) : NULL;
    if (!lib) return 0;
    int n = 0;
    for (int f = 0; f < IR_MATH_COUNT; f++) {
        if (!mvec_base((IrMathFn)f)) continue;
        for (int f32 = 0; f32 < 2; f32++) {
            char name[64];
            variant_name_of(name, sizeof name, isa, (IrMathFn)f, f32);
            void *addr = dlsym(lib, name);
            if (!addr || n >= max) continue;
            table->found[f][f32] = true;
            syms[n].name = strdup(name);
            syms[n].addr = addr;
            n++;
        }
    }
    return n;
}

/* Finding the variants (loading libmvec, a dlsym for each, and the JIT's definitions of them: about 0.2 ms) is
 * done ahead by the thread that starts the JIT (jit.c's first half), for the ISA of the host itself, which is
 * the target unless $LORIKEET_CPU names a lower level. Defining them decides nothing: cg_vecmath_choose, at the
 * first use, decides from the target and the environment whether the process's code calls them. */
int cg_vecmath_preload(const CgTarget *host, RtSymbol *syms, int max)
{
    return find_variants(isa_of(host), &mvec.preloaded, syms, max);
}

int cg_vecmath_choose(const CgTarget *target, RtSymbol *syms, int max)
{
    const char *env = getenv("LORIKEET_VECTOR_MATH");
    if (env && strcmp(env, "0") == 0) return 0;
    MvecIsa isa = isa_of(target);
    if (!isa.letter) return 0;
    MvecTable lower; /* a target below the host (LORIKEET_CPU=x86-64-v2 on an AVX2 host): its own variants */
    const MvecTable *table = &mvec.preloaded;
    int n = 0;
    if (isa.letter != mvec.preloaded.isa.letter) {
        n = find_variants(isa, &lower, syms, max);
        table = &lower;
    }
    mvec.isa = isa;
    memcpy(mvec.found, table->found, sizeof mvec.found);
    for (int f = 0; f < IR_MATH_COUNT; f++) mvec.enabled |= mvec.found[f][0] || mvec.found[f][1];
    return n;
}

bool cg_vecmath_has(IrMathFn f)
{
    return mvec.enabled && mvec_base(f) && mvec.found[f][0];
}

static void add_fn_attr(Cg *cg, LLVMValueRef fn, const char *name, uint64_t value)
{
    unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
    if (kind) LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(cg->ctx, kind, value));
}

/* Touches no memory (errno is never read back), so calls hoist out of loops and loops with them vectorise. */
static void mark_pure(Cg *cg, LLVMValueRef fn)
{
    static const char *const flags[] = {"nounwind", "willreturn", "nosync", "nofree", "speculatable"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) add_fn_attr(cg, fn, flags[i], 0);
    add_fn_attr(cg, fn, "memory", 0); /* memory(none): the encoded MemoryEffects of no access is 0 */
}

/* `elem wname(elem x[, elem y])`: the variant vname on x (and y) in every lane, lane 0 of its result. */
static LLVMValueRef define_wrapper(Cg *cg, const char *wname, const char *vname, LLVMTypeRef elem, int nlanes,
                                   int arity)
{
    LLVMTypeRef vt = LLVMVectorType(elem, (unsigned)nlanes);
    LLVMTypeRef vparams[2] = {vt, vt}, sparams[2] = {elem, elem};
    LLVMTypeRef vfty = LLVMFunctionType(vt, vparams, (unsigned)arity, 0);
    LLVMValueRef variant = LLVMGetNamedFunction(cg->mod, vname);
    if (!variant) {
        variant = LLVMAddFunction(cg->mod, vname, vfty);
        mark_pure(cg, variant);
    }
    LLVMValueRef fn = LLVMAddFunction(cg->mod, wname, LLVMFunctionType(elem, sparams, (unsigned)arity, 0));
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    mark_pure(cg, fn);
    add_fn_attr(cg, fn, "noinline", 0);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(cg->ctx);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(cg->ctx, fn, "entry"));
    LLVMValueRef vargs[2];
    LLVMValueRef zero = LLVMConstInt(cg->i64, 0, 0);
    LLVMValueRef splat_mask = LLVMConstNull(LLVMVectorType(cg->i32, (unsigned)nlanes));
    for (int i = 0; i < arity; i++) {
        LLVMValueRef one = LLVMBuildInsertElement(b, LLVMGetPoison(vt), LLVMGetParam(fn, (unsigned)i), zero, "");
        vargs[i] = LLVMBuildShuffleVector(b, one, LLVMGetPoison(vt), splat_mask, "");
    }
    LLVMValueRef r = LLVMBuildCall2(b, vfty, variant, vargs, (unsigned)arity, "");
    LLVMBuildRet(b, LLVMBuildExtractElement(b, r, zero, ""));
    LLVMDisposeBuilder(b);
    return fn;
}

LLVMValueRef cg_vecmath_call(Cg *cg, IrMathFn f, LLVMTypeRef elem, LLVMValueRef *args)
{
    if (!mvec.enabled || !mvec_base(f) || (elem != cg->f32 && elem != cg->f64)) return NULL;
    bool f32 = elem == cg->f32;
    if (!mvec.found[f][f32]) return NULL;
    int arity = ir_math_arity(f), nlanes = lanes(f32);
    char vname[64], wname[80];
    variant_name(vname, sizeof vname, f, f32);
    snprintf(wname, sizeof wname, "lk.vecmath.%s", vname);
    LLVMValueRef wrapper = LLVMGetNamedFunction(cg->mod, wname);
    if (!wrapper) wrapper = define_wrapper(cg, wname, vname, elem, nlanes, arity);
    LLVMTypeRef params[2] = {elem, elem};
    LLVMValueRef call = LLVMBuildCall2(cg->b, LLVMFunctionType(elem, params, (unsigned)arity, 0), wrapper, args,
                                       (unsigned)arity, "");
    char value[192];
    int used = snprintf(value, sizeof value, "_ZGV_LLVM_N%d%s_%s(%s)", nlanes, arity == 2 ? "vv" : "v", wname, vname);
    static const char key[] = "vector-function-abi-variant";
    LLVMAttributeRef attr = LLVMCreateStringAttribute(cg->ctx, key, sizeof key - 1, value, (unsigned)used);
    LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, attr);
    return call;
}
