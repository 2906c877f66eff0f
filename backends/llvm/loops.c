/* loops.c: counted loop nests for the data-parallel nodes, and the hints a loop's latch can carry. The index of
 * each level is an i64 from 0 to its dim; the innermost latch may carry llvm.loop.vectorize.enable, which lets
 * LLVM reorder a float reduction (NumPy's own sums are pairwise, not sequential, so this is no loss of fidelity). */
#include <string.h>
#include <llvm-c/DebugInfo.h>
#include "cg.h"

/* A loop id carrying the given properties (llvm.loop's operands: each a name, with its value where it has
 * one), on the loop whose latch branch this is. */
typedef struct LoopProp {
    const char *name;
    int value;  /* -1: the property has no value */
    bool flag;  /* the value is an i1 (llvm.loop.vectorize.enable's form), else an i32 */
} LoopProp;

static void set_loop_md(Cg *cg, LLVMValueRef latch_br, const LoopProp *props, unsigned nprops)
{
    LLVMMetadataRef tmp = LLVMTemporaryMDNode(cg->ctx, NULL, 0);
    LLVMMetadataRef ops[5] = {tmp};
    for (unsigned k = 0; k < nprops; k++) {
        LLVMMetadataRef prop[2] = {LLVMMDStringInContext2(cg->ctx, props[k].name, strlen(props[k].name)), NULL};
        if (props[k].value >= 0)
            prop[1] = LLVMValueAsMetadata(LLVMConstInt(props[k].flag ? cg->i1 : cg->i32, (unsigned)props[k].value, 0));
        ops[k + 1] = LLVMMDNodeInContext2(cg->ctx, prop, props[k].value >= 0 ? 2 : 1);
    }
    LLVMMetadataRef loop = LLVMMDNodeInContext2(cg->ctx, ops, nprops + 1);
    LLVMMetadataReplaceAllUsesWith(tmp, loop); /* the loop id refers to itself */
    LLVMSetMetadata(latch_br, LLVMGetMDKindIDInContext(cg->ctx, "llvm.loop", 9), LLVMMetadataAsValue(cg->ctx, loop));
}

/* A loop of cold code (cg->cold) stays as written: no vectorising, interleaving or unrolling. */
static void mark_plain(Cg *cg, LLVMValueRef latch_br)
{
    const LoopProp plain[3] = {{"llvm.loop.vectorize.width", 1, false},
                               {"llvm.loop.interleave.count", 1, false},
                               {"llvm.loop.unroll.disable", -1, false}};
    set_loop_md(cg, latch_br, plain, 3);
}

void cg_mark_loop(Cg *cg, LLVMValueRef latch_br, bool vectorize, bool no_runtime_unroll)
{
    if (cg->cold) {
        mark_plain(cg, latch_br);
        return;
    }
    LoopProp props[2];
    unsigned n = 0;
    if (vectorize) props[n++] = (LoopProp){"llvm.loop.vectorize.enable", 1, true};
    if (no_runtime_unroll) props[n++] = (LoopProp){"llvm.loop.unroll.runtime.disable", -1, false};
    if (n) set_loop_md(cg, latch_br, props, n);
}

void cg_mark_vectorize(Cg *cg, LLVMValueRef latch_br)
{
    cg_mark_loop(cg, latch_br, true, false);
}

/* llvm.loop.vectorize.width 1: the loop stays scalar (interleaving and unrolling may still apply). */
static void mark_scalar(Cg *cg, LLVMValueRef latch_br)
{
    const LoopProp scalar = {"llvm.loop.vectorize.width", 1, false};
    set_loop_md(cg, latch_br, &scalar, 1);
}

static void nest(Cg *cg, int level, int ndim, LLVMValueRef *dims, LLVMValueRef *idx, CgLoopBody body, void *env,
                 bool vectorize, LLVMValueRef lo0, LLVMValueRef hi0)
{
    if (level == ndim) {
        bool scalar = cg->scalar_nest; /* this nest's own innermost loop, not the loops of its element */
        cg->scalar_nest = false;
        body(cg, idx, env);
        cg->scalar_nest = scalar;
        return;
    }
    LLVMValueRef counter = cg_alloca(cg, cg->i64, "idx");
    bool chunked = lo0 && level == cg->chunk_level; /* the level a thread's chunk restricts */
    LLVMBuildStore(cg->b, chunked ? lo0 : cg_i64(cg, 0), counter);
    LLVMValueRef limit = chunked ? hi0 : dims[level];
    LLVMBasicBlockRef head = cg_new_bb(cg, "loop"), inner = cg_new_bb(cg, "loop_body"), done = cg_new_bb(cg, "loop_end");
    LLVMBuildBr(cg->b, head);
    LLVMPositionBuilderAtEnd(cg->b, head);
    LLVMValueRef i = LLVMBuildLoad2(cg->b, cg->i64, counter, "");
    LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntSLT, i, limit, ""), inner, done);
    LLVMPositionBuilderAtEnd(cg->b, inner);
    idx[level] = i;
    nest(cg, level + 1, ndim, dims, idx, body, env, vectorize, lo0, hi0);
    LLVMValueRef next = LLVMBuildAdd(cg->b, LLVMBuildLoad2(cg->b, cg->i64, counter, ""), cg_i64(cg, 1), "");
    LLVMBuildStore(cg->b, next, counter);
    LLVMValueRef br = LLVMBuildBr(cg->b, head);
    if (cg->cold) mark_plain(cg, br);
    else if (cg->scalar_nest && level == ndim - 1) mark_scalar(cg, br);
    else if (vectorize && level == ndim - 1) cg_mark_vectorize(cg, br);
    LLVMPositionBuilderAtEnd(cg->b, done);
}

void cg_loop_nest(Cg *cg, int ndim, LLVMValueRef *dims, CgLoopBody body, void *env, bool vectorize)
{
    LLVMValueRef idx[IR_MAX_DIMS];
    nest(cg, 0, ndim, dims, idx, body, env, vectorize, NULL, NULL);
}

/* The same nest with one level (cg->chunk_level, normally the outermost) running over [lo0, hi0) only: one
 * thread's chunk. */
void cg_loop_nest_from(Cg *cg, int ndim, LLVMValueRef *dims, LLVMValueRef lo0, LLVMValueRef hi0, CgLoopBody body,
                       void *env, bool vectorize)
{
    LLVMValueRef idx[IR_MAX_DIMS];
    nest(cg, 0, ndim, dims, idx, body, env, vectorize, lo0, hi0);
}
