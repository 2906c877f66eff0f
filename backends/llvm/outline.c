/* outline.c: moving a loop into a function of its own that the OpenMP team runs, for the openmp backend.
 *
 * The outlined "chunk" function is  i32 chunk(ptr ctx, ptr env, i64 lo, i64 hi, i32 tid): it runs iterations
 * [lo, hi) of the loop as thread tid, with that thread's RtCtx. Everything the loop needs from the enclosing
 * function travels in env, a struct the enclosing function fills: values it computed (arrays, shapes, the
 * partial-result buffer) and the current values of the variables the loop's code uses (its region's uses, as
 * ir/parallel_regions.c recorded them), which the chunk copies
 * into variables of its own (so each thread has private parameters and temporaries, and mem2reg sees plain
 * locals). Loops never write the enclosing function's variables, except through the reductions their callers
 * combine explicitly.
 *
 * Use: cg_capture() the parent's values, cg_outline_begin() (the builder is then in the chunk, at its start),
 * emit the chunk's loop with cg_outline_get() for the captured values and o->lo/o->hi/o->tid, then
 * cg_outline_end(), which returns to the parent and emits the call of rt_parallel_for. There is no limit on
 * the number of captures (a loop reading 600 variables captures 600); cg_outline_end frees their list. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cg.h"

int cg_capture(CgOutline *o, LLVMValueRef v)
{
    if (o->n == o->cap) {
        int cap = o->cap ? 2 * o->cap : 64;
        LLVMValueRef *vals = realloc(o->vals, sizeof *vals * (size_t)cap);
        if (!vals) rt_out_of_memory(sizeof *vals * (size_t)cap);
        o->vals = vals;
        o->cap = cap;
    }
    o->vals[o->n] = v;
    return o->n++;
}

void cg_outline_begin(Cg *cg, CgOutline *o, const IrRegion *region)
{
    IrFunc *f = cg->f;
    /* the variables the region's element code uses (ir/parallel_regions.c): their current values travel in env */
    o->var_cap = rt_arena_alloc(f->arena, sizeof(int) * (size_t)(f->nvars + 1));
    for (int v = 0; v < f->nvars; v++) o->var_cap[v] = -1;
    for (int i = 0; region && i < region->nuses; i++) {
        const IrVar *v = region->uses[i];
        if (v->type)
            o->var_cap[v->id] = cg_capture(o, LLVMBuildLoad2(cg->b, cg_type(cg, v->type), cg->var_slots[v->id], ""));
    }
    o->tys = rt_arena_alloc(f->arena, sizeof *o->tys * (size_t)(o->n + 1));
    o->child_vals = rt_arena_alloc(f->arena, sizeof *o->child_vals * (size_t)(o->n + 1));
    for (int i = 0; i < o->n; i++) o->tys[i] = LLVMTypeOf(o->vals[i]);
    o->env_ty = LLVMStructTypeInContext(cg->ctx, o->tys, (unsigned)o->n, 0);

    /* leave the parent */
    o->p_fn = cg->fn;
    o->p_rtctx = cg->rtctx;
    o->p_slots = cg->var_slots;
    o->p_flags = cg->bound_flags;
    o->p_entry = cg->entry_bb;
    o->p_err = cg->err_bb;
    o->p_block = LLVMGetInsertBlock(cg->b);
    o->p_loop_depth = cg->loop_depth;

    LLVMTypeRef params[5] = {cg->ptr, cg->ptr, cg->i64, cg->i64, cg->i32};
    /* internal: the name need not be unique beyond the module, and LLVM numbers repeats in emission order
     * (sym.chunk, sym.chunk.1...), the same in every process */
    char name[96];
    snprintf(name, sizeof name, "%s.chunk", f->symbol);
    o->child = LLVMAddFunction(cg->mod, name, LLVMFunctionType(cg->i32, params, 5, 0));
    LLVMSetLinkage(o->child, LLVMInternalLinkage);
    cg->fn = o->child;
    cg->entry_bb = LLVMAppendBasicBlockInContext(cg->ctx, o->child, "entry");
    cg->err_bb = LLVMAppendBasicBlockInContext(cg->ctx, o->child, "error");
    LLVMPositionBuilderAtEnd(cg->b, cg->err_bb);
    LLVMBuildRet(cg->b, LLVMConstInt(cg->i32, 1, 0));
    LLVMPositionBuilderAtEnd(cg->b, cg->entry_bb);
    cg->rtctx = LLVMGetParam(o->child, 0);
    LLVMValueRef env = LLVMGetParam(o->child, 1);
    o->lo = LLVMGetParam(o->child, 2);
    o->hi = LLVMGetParam(o->child, 3);
    o->tid = LLVMGetParam(o->child, 4);
    cg->loop_depth = 0;
    /* private variables, and the captured values loaded once */
    cg->var_slots = rt_arena_alloc(f->arena, sizeof(LLVMValueRef) * (size_t)(f->nvars + 1));
    cg->bound_flags = rt_arena_alloc(f->arena, sizeof(LLVMValueRef) * (size_t)(f->nvars + 1));
    for (int v = 0; v < f->nvars; v++) {
        if (f->vars[v]->type) cg->var_slots[v] = LLVMBuildAlloca(cg->b, cg_type(cg, f->vars[v]->type), f->vars[v]->name);
        if (f->vars[v]->maybe_unbound) {
            cg->bound_flags[v] = LLVMBuildAlloca(cg->b, cg->i1, "assigned");
            LLVMBuildStore(cg->b, LLVMConstInt(cg->i1, o->var_cap[v] >= 0, 0), cg->bound_flags[v]);
        }
    }
    for (int i = 0; i < o->n; i++) {
        LLVMValueRef p = LLVMBuildStructGEP2(cg->b, o->env_ty, env, (unsigned)i, "");
        o->child_vals[i] = LLVMBuildLoad2(cg->b, o->tys[i], p, "");
    }
    for (int v = 0; v < f->nvars; v++)
        if (o->var_cap[v] >= 0) LLVMBuildStore(cg->b, o->child_vals[o->var_cap[v]], cg->var_slots[v]);
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(cg->ctx, o->child, "chunk");
    LLVMBuildBr(cg->b, body);
    LLVMPositionBuilderAtEnd(cg->b, body);
}

LLVMValueRef cg_outline_get(CgOutline *o, int idx)
{
    return o->child_vals[idx];
}

LLVMValueRef cg_outline_end(Cg *cg, CgOutline *o, LLVMValueRef n, LLVMValueRef work)
{
    LLVMBuildRet(cg->b, LLVMConstInt(cg->i32, 0, 0));
    cg->fn = o->p_fn;
    cg->rtctx = o->p_rtctx;
    cg->var_slots = o->p_slots;
    cg->bound_flags = o->p_flags;
    cg->entry_bb = o->p_entry;
    cg->err_bb = o->p_err;
    cg->loop_depth = o->p_loop_depth;
    LLVMPositionBuilderAtEnd(cg->b, o->p_block);
    LLVMValueRef env = cg_alloca(cg, o->env_ty, "env");
    for (int i = 0; i < o->n; i++) LLVMBuildStore(cg->b, o->vals[i], LLVMBuildStructGEP2(cg->b, o->env_ty, env, (unsigned)i, ""));
    free(o->vals);
    o->vals = NULL;
    o->n = o->cap = 0;
    LLVMValueRef nchunks = cg_alloca(cg, cg->i64, "nchunks");
    LLVMTypeRef params[6] = {cg->ptr, cg->ptr, cg->ptr, cg->i64, cg->i64, cg->ptr};
    LLVMValueRef args[6] = {cg->rtctx, o->child, env, n, work, nchunks};
    LLVMValueRef status = cg_call_rt(cg, "rt_parallel_for", cg->i32, params, args, 6);
    cg_check_status(cg, status);
    return LLVMBuildLoad2(cg->b, cg->i64, nchunks, "");
}

/* work >= the team threshold, asked of the runtime at run time. It is changed only by lk.set_parallel_threshold,
 * never while compiled code runs that could see it, so the query is pure: LLVM may hoist it out of the loops
 * around a small reduction instead of calling it for every one (growcut's 3-element sums). */
LLVMValueRef cg_worth_a_team(Cg *cg, LLVMValueRef work)
{
    LLVMValueRef thr = cg_call_pure(cg, "rt_get_parallel_threshold", cg->i64, NULL, NULL, 0);
    return LLVMBuildICmp(cg->b, LLVMIntSGE, work, thr, "");
}

/* Whether rt_parallel_for(n, work) would share the loop out now (more than one thread: the threshold met, the
 * thread count above 1, not inside a team already). For loops done in two passes, which are worth it only then. */
LLVMValueRef cg_shares_work(Cg *cg, LLVMValueRef n, LLVMValueRef work)
{
    LLVMTypeRef params[2] = {cg->i64, cg->i64};
    LLVMValueRef args[2] = {n, work};
    LLVMValueRef threads = cg_call_rt(cg, "rt_parallel_threads", cg->i32, params, args, 2);
    return LLVMBuildICmp(cg->b, LLVMIntSGT, threads, LLVMConstInt(cg->i32, 1, 0), "");
}

/* The llvm backends' weights of the cost model (ir/cost.c), in units of a vectorised arithmetic operation: a math
 * function with a vector variant (vecmath.c) counts 20, one without (a scalar libm call) or a call of a user
 * function 150, a map or reduction nested in the element (a reduction over a row) 1000, and a loop nested in the
 * element 100 trips (its trip count is not known here; a loop in a loop body is rarely short: the k loop of a
 * matmult, the 3x3 window of a convolution). Measured on a 2-core x86 machine with scalar math: sum(a*a + 1)
 * gains from the team from about 60 000 elements, sum(sin(a)*exp(-a)) from about 1000; vector sin and exp are
 * about 7x faster, hence 20. */
static IrCostWeights weights(void)
{
    IrCostWeights w = {.op = 1, .user_call = 150, .nested_data_parallel = 1000, .nested_trips = 100};
    for (int f = 0; f < IR_MATH_COUNT; f++) w.math[f] = cg_vecmath_has((IrMathFn)f) ? 20 : 150;
    return w;
}

int64_t cg_block_cost(const IrBlock *b)
{
    IrCostWeights w = weights();
    return ir_block_cost(b, &w);
}

int64_t cg_cost(IrNode *n)
{
    IrCostWeights w = weights();
    return ir_cost(n, &w);
}
