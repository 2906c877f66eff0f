/* loops.c: counted loop nests for the data-parallel nodes, and the hints a loop's latch can carry. The index of
 * each level is an i64 from 0 to its dim; the innermost latch may carry llvm.loop.vectorize.enable, which lets
 * LLVM reorder a float reduction (NumPy's own sums are pairwise, not sequential, so this is no loss of fidelity). */
#include <llvm-c/DebugInfo.h>
#include "cg.h"

void cg_mark_loop(Cg *cg, LLVMValueRef latch_br, bool vectorize, bool no_runtime_unroll)
{
    if (!vectorize && !no_runtime_unroll) return;
    LLVMMetadataRef tmp = LLVMTemporaryMDNode(cg->ctx, NULL, 0);
    LLVMMetadataRef loop_ops[3] = {tmp};
    unsigned n = 1;
    if (vectorize) {
        LLVMMetadataRef enable_ops[2] = {LLVMMDStringInContext2(cg->ctx, "llvm.loop.vectorize.enable", 26),
                                         LLVMValueAsMetadata(LLVMConstInt(cg->i1, 1, 0))};
        loop_ops[n++] = LLVMMDNodeInContext2(cg->ctx, enable_ops, 2);
    }
    if (no_runtime_unroll) {
        LLVMMetadataRef off = LLVMMDStringInContext2(cg->ctx, "llvm.loop.unroll.runtime.disable", 32);
        loop_ops[n++] = LLVMMDNodeInContext2(cg->ctx, &off, 1);
    }
    LLVMMetadataRef loop = LLVMMDNodeInContext2(cg->ctx, loop_ops, n);
    LLVMMetadataReplaceAllUsesWith(tmp, loop); /* the loop id refers to itself */
    LLVMSetMetadata(latch_br, LLVMGetMDKindIDInContext(cg->ctx, "llvm.loop", 9), LLVMMetadataAsValue(cg->ctx, loop));
}

void cg_mark_vectorize(Cg *cg, LLVMValueRef latch_br)
{
    cg_mark_loop(cg, latch_br, true, false);
}

/* llvm.loop.vectorize.width 1: the loop stays scalar (interleaving and unrolling may still apply). */
static void mark_scalar(Cg *cg, LLVMValueRef latch_br)
{
    LLVMMetadataRef tmp = LLVMTemporaryMDNode(cg->ctx, NULL, 0);
    LLVMMetadataRef width[2] = {LLVMMDStringInContext2(cg->ctx, "llvm.loop.vectorize.width", 25),
                                LLVMValueAsMetadata(LLVMConstInt(cg->i32, 1, 0))};
    LLVMMetadataRef ops[2] = {tmp, LLVMMDNodeInContext2(cg->ctx, width, 2)};
    LLVMMetadataRef loop = LLVMMDNodeInContext2(cg->ctx, ops, 2);
    LLVMMetadataReplaceAllUsesWith(tmp, loop); /* the loop id refers to itself */
    LLVMSetMetadata(latch_br, LLVMGetMDKindIDInContext(cg->ctx, "llvm.loop", 9), LLVMMetadataAsValue(cg->ctx, loop));
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
    if (cg->scalar_nest && level == ndim - 1) mark_scalar(cg, br);
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
