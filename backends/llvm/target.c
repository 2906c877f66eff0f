/* target.c: which CPU the llvm backends compile for. By default the host, by its LLVM name and features, so that
 * loops use every vector instruction it has. `LORIKEET_CPU` names a narrower x86-64 level instead (x86-64,
 * x86-64-v2, -v3, -v4), for results that must not change with the machine: the vector math variants follow the
 * level (vecmath.c), so two machines compiling for the same level run the same instructions and get the same bits.
 *
 * Only the levels are accepted, not LLVM's CPU names: the LLVM-C API cannot tell which features a named CPU
 * implies, so a name this machine cannot run could not be refused, and its code would die of an illegal
 * instruction. A level this machine cannot run is refused here, with the feature it lacks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cg.h"

/* Whether this machine runs code for an x86-64 level; else *missing names a feature it lacks (those that matter
 * for the code LLVM emits, in __builtin_cpu_supports's names, which must be literals). */
#define NEED(feature)                         \
    if (!__builtin_cpu_supports(feature)) {   \
        *missing = feature;                   \
        return false;                         \
    }
static bool host_has_level(int level, const char **missing)
{
    __builtin_cpu_init();
    if (level >= 2) { NEED("popcnt") NEED("sse4.2") NEED("ssse3") }
    if (level >= 3) { NEED("avx") NEED("avx2") NEED("fma") NEED("bmi") NEED("bmi2") }
    if (level >= 4) { NEED("avx512f") NEED("avx512bw") NEED("avx512cd") NEED("avx512dq") NEED("avx512vl") }
    return true;
}
#undef NEED

void cg_target_host(CgTarget *t)
{
    memset(t, 0, sizeof *t);
    char *cpu = LLVMGetHostCPUName(), *features = LLVMGetHostCPUFeatures();
    snprintf(t->cpu, sizeof t->cpu, "%s", cpu);
    snprintf(t->features, sizeof t->features, "%s", features);
    LLVMDisposeMessage(cpu);
    LLVMDisposeMessage(features);
    __builtin_cpu_init();
    t->avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    t->sse41 = __builtin_cpu_supports("sse4.1");
}

bool cg_target_choose(CgTarget *t, const CgTarget *host, LkDiag *diag)
{
    static const char *const level_names[] = {"x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4"};
    const char *env = getenv("LORIKEET_CPU");
    if (!env || !*env || strcmp(env, "host") == 0) {
        *t = *host;
        return true;
    }
    memset(t, 0, sizeof *t);
    for (int level = 1; level <= 4; level++) {
        if (strcmp(env, level_names[level - 1]) != 0) continue;
        const char *missing = NULL;
        if (!host_has_level(level, &missing)) {
            lk_diag_set(diag, LK_ERR_UNAVAILABLE, "", 0, 0,
                        "LORIKEET_CPU=%s needs the CPU feature %s, which this machine lacks", env, missing);
            return false;
        }
        snprintf(t->cpu, sizeof t->cpu, "%s", env);
        t->features[0] = '\0'; /* the level's own features */
        t->avx2_fma = level >= 3;
        t->sse41 = level >= 2;
        return true;
    }
    lk_diag_set(diag, LK_ERR_UNAVAILABLE, "", 0, 0,
                "LORIKEET_CPU=%s is not a target lorikeet knows: use host, x86-64, x86-64-v2, x86-64-v3 or x86-64-v4",
                env);
    return false;
}
