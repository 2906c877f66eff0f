/* vecmath.c: vector variants of the math functions, taken from glibc's libmvec, so that loops calling exp, log,
 * sin, erf, pow... vectorise instead of making one scalar libm call per element.
 *
 * How: each scalar math call gets the call-site attribute "vector-function-abi-variant" naming its vector
 * variants in the x86 vector function ABI (`_ZGVdN4v_exp` is exp on 4 doubles for AVX2, `_ZGVeN8v_exp` on 8
 * for AVX-512); the loop vectoriser then widens the call to one of them. The variants must be declared in the
 * module and kept alive through @llvm.compiler.used until the vectoriser has run (what clang's
 * -fveclib=libmvec does through TargetLibraryInfo, which the LLVM-C API does not reach).
 *
 * Only variants that libmvec.so.1 of this process exports and that this CPU can run are named; each is given to
 * the JIT as an absolute symbol. No libmvec (older glibc, musl) means scalar calls, as before: slower, same
 * results within rounding. libmvec's functions are accurate to a few ulp (glibc's manual lists them); NumPy's own
 * SIMD exp/log/sin differ from libm by as much. LORIKEET_VECTOR_MATH=0 turns this off for bit-for-bit libm
 * results. */
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
        return cg_libm_name(f);
    }
}

/* An ISA of the vector function ABI: its letter and the lanes of float64 (float32 has twice as many). */
typedef struct {
    char letter;
    int lanes64;
} MvecIsa;

#define MAX_ISAS 2

static struct {
    bool ready, enabled;
    MvecIsa isas[MAX_ISAS];
    int nisas;
    /* found[f][is_f32][isa]: the variant exists in libmvec */
    bool found[IR_MATH_COUNT][2][MAX_ISAS];
} mvec;

static void variant_name(char *out, size_t size, MvecIsa isa, IrMathFn f, bool f32)
{
    int arity = ir_math_arity(f);
    snprintf(out, size, "_ZGV%cN%d%s_%s%s", isa.letter, f32 ? isa.lanes64 * 2 : isa.lanes64,
             arity == 2 ? "vv" : "v", mvec_base(f), f32 ? "f" : "");
}

static void pick_isas(void)
{
    __builtin_cpu_init();
    /* 'd' (AVX2) first: the vectoriser prefers 256-bit vectors on AVX-512 machines too */
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        mvec.isas[mvec.nisas++] = (MvecIsa){'d', 4};
    if (__builtin_cpu_supports("avx512f")) mvec.isas[mvec.nisas++] = (MvecIsa){'e', 8};
    if (mvec.nisas == 0 && __builtin_cpu_supports("sse4.1")) mvec.isas[mvec.nisas++] = (MvecIsa){'b', 2};
}

/* Finds the variants (once per process) and fills syms with their names and addresses for the JIT. */
int cg_vecmath_symbols(RtSymbol *syms, int max)
{
    if (mvec.ready) return 0;
    mvec.ready = true;
    const char *env = getenv("LORIKEET_VECTOR_MATH");
    if (env && strcmp(env, "0") == 0) return 0;
    void *lib = dlopen("libmvec.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!lib) return 0;
    pick_isas();
    int n = 0;
    for (int f = 0; f < IR_MATH_COUNT; f++) {
        if (!mvec_base((IrMathFn)f)) continue;
        for (int f32 = 0; f32 < 2; f32++)
            for (int k = 0; k < mvec.nisas; k++) {
                char name[64];
                variant_name(name, sizeof name, mvec.isas[k], (IrMathFn)f, f32);
                void *addr = dlsym(lib, name);
                if (!addr || n >= max) continue;
                mvec.found[f][f32][k] = true;
                syms[n].name = strdup(name);
                syms[n].addr = addr;
                n++;
            }
    }
    mvec.enabled = n > 0;
    return n;
}

bool cg_vecmath_has(IrMathFn f)
{
    if (!mvec.enabled || !mvec_base(f)) return false;
    for (int k = 0; k < mvec.nisas; k++)
        if (mvec.found[f][0][k]) return true;
    return false;
}

/* Declares the variant and remembers it for @llvm.compiler.used. */
static void declare_variant(Cg *cg, const char *name, LLVMTypeRef elem, int lanes, int arity)
{
    if (LLVMGetNamedFunction(cg->mod, name)) return;
    LLVMTypeRef vt = LLVMVectorType(elem, (unsigned)lanes);
    LLVMTypeRef params[2] = {vt, vt};
    LLVMValueRef fn = LLVMAddFunction(cg->mod, name, LLVMFunctionType(vt, params, (unsigned)arity, 0));
    if (cg->nvariants < CG_MAX_VARIANTS) cg->variants[cg->nvariants++] = fn;
}

void cg_vecmath_annotate(Cg *cg, LLVMValueRef call, IrMathFn f, LLVMTypeRef elem)
{
    if (!mvec.enabled || !mvec_base(f) || (elem != cg->f32 && elem != cg->f64)) return;
    bool f32 = elem == cg->f32;
    size_t len;
    const char *scalar = LLVMGetValueName2(LLVMGetCalledValue(call), &len);
    char value[1024];
    size_t used = 0;
    value[0] = '\0';
    for (int k = 0; k < mvec.nisas; k++) {
        if (!mvec.found[f][f32][k]) continue;
        char name[64];
        variant_name(name, sizeof name, mvec.isas[k], f, f32);
        int lanes = f32 ? mvec.isas[k].lanes64 * 2 : mvec.isas[k].lanes64;
        int arity = ir_math_arity(f);
        declare_variant(cg, name, elem, lanes, arity);
        used += (size_t)snprintf(value + used, sizeof value - used, "%s_ZGV_LLVM_N%d%s_%.*s(%s)", used ? "," : "",
                                 lanes, arity == 2 ? "vv" : "v", (int)len, scalar, name);
        if (used >= sizeof value) return;
    }
    if (!used) return;
    static const char key[] = "vector-function-abi-variant";
    LLVMAttributeRef attr = LLVMCreateStringAttribute(cg->ctx, key, sizeof key - 1, value, (unsigned)used);
    LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, attr);
}

/* Keeps the declared variants alive until the vectoriser has looked for them. */
void cg_vecmath_finish(Cg *cg)
{
    if (cg->nvariants == 0) return;
    LLVMTypeRef at = LLVMArrayType(cg->ptr, (unsigned)cg->nvariants);
    LLVMValueRef used = LLVMAddGlobal(cg->mod, at, "llvm.compiler.used");
    LLVMSetLinkage(used, LLVMAppendingLinkage);
    LLVMSetSection(used, "llvm.metadata");
    LLVMSetInitializer(used, LLVMConstArray(cg->ptr, cg->variants, (unsigned)cg->nvariants));
}
