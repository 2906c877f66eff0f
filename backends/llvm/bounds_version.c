/* bounds_version.c: loop versioning on the bounds plans of ir/bounds_plan.c, so that indexed loops vectorise.
 *
 * A checked access x[i, j] in a loop wraps negative indices and branches to a raise block; both keep LLVM from
 * vectorising or unrolling the loop. When a loop's plan names an access that no loop around it has planned yet,
 * the loop is emitted twice behind one test, made before it: the plan's bounds, lo >= 0 and hi < shape, for
 * every access it names. When the test holds, the copy with those accesses unchecked and unwrapped runs (lo >= 0
 * proves that no index is negative); otherwise the ordinary loop, with every check, so an IndexError is raised
 * where and when it always was. The test only picks which of two equivalent loops runs.
 *
 * Cost: the loop body is compiled twice, only where the plan proves an access of an innermost loop. Plans nest
 * (a loop inside a copy may version again for accesses new to it), up to CG_MAX_VERSIONS deep, which bounds the
 * copies of any body. */
#include "cg.h"

static bool planned(const Cg *cg, const IrNode *index, bool proven_only)
{
    for (int k = 0; k < cg->nplans; k++) {
        if (proven_only && !cg->plan_proven[k]) continue;
        const IrBoundsPlan *p = cg->plans[k];
        for (int i = 0; i < p->nindex; i++)
            if (p->index[i] == index) return true;
    }
    return false;
}

/* The checked loop is never runtime-unrolled (its raise exits prevent it), and unrolling the copy measured no
 * gain on top of vectorisation, while it made a third of the copy's compile time: the copy's loops are marked
 * not to be. */
bool cg_in_proven_copy(const Cg *cg)
{
    for (int k = 0; k < cg->nplans; k++)
        if (cg->plan_proven[k]) return true;
    return false;
}

bool cg_index_proven(const Cg *cg, const IrNode *index)
{
    return cg->nplans > 0 && planned(cg, index, true);
}

const IrBoundsPlan *cg_version_plan(Cg *cg, const IrNode *loop)
{
    if (cg->nplans == CG_MAX_VERSIONS) return NULL;
    const IrBoundsPlan *p = ir_bounds_plan(cg->f, loop);
    if (!p) return NULL;
    /* worth a copy: an access of an innermost loop (LLVM vectorises those; elsewhere a check runs a trip count
     * less often) that the loops around have not planned (where they have, a copy would add nothing) */
    for (int i = 0; i < p->nindex; i++)
        if (p->innermost[i] && !planned(cg, p->index[i], false)) return p;
    return NULL;
}

/* ---- the test ---- */

typedef struct Eval {
    Cg *cg;
    const IrNode *loop;
    LLVMValueRef start, stop;
    LLVMValueRef overflow;   /* i1: some form left int64, so the test fails */
} Eval;

static LLVMValueRef checked_op(Eval *e, const char *op, LLVMValueRef a, LLVMValueRef b)
{
    LLVMValueRef args[2] = {a, b};
    LLVMValueRef r = cg_call_intrinsic(e->cg, op, e->cg->i64, args, 2);
    e->overflow = LLVMBuildOr(e->cg->b, e->overflow, LLVMBuildExtractValue(e->cg->b, r, 1, ""), "");
    return LLVMBuildExtractValue(e->cg->b, r, 0, "");
}

static LLVMValueRef atom_value(Eval *e, IrNode *atom)
{
    LLVMValueRef v;
    if (atom == e->loop->u.for_range.start) v = e->start; /* evaluated once already, by the loop */
    else if (atom == e->loop->u.for_range.stop) v = e->stop;
    else v = cg_expr(e->cg, atom);
    /* a variable read in dead code may have no value before the loop: frozen, the test is still a test */
    return LLVMBuildFreeze(e->cg->b, v, "");
}

static LLVMValueRef eval_affine(Eval *e, const IrAffine *a)
{
    LLVMValueRef acc = cg_i64(e->cg, a->konst);
    for (int i = 0; i < a->n; i++) {
        LLVMValueRef x = atom_value(e, a->atom[i]);
        if (a->coef[i] != 1) x = checked_op(e, "llvm.smul.with.overflow", cg_i64(e->cg, a->coef[i]), x);
        acc = checked_op(e, "llvm.sadd.with.overflow", acc, x);
    }
    return acc;
}

LLVMValueRef cg_version_test(Cg *cg, const IrBoundsPlan *p, LLVMValueRef start, LLVMValueRef stop)
{
    LLVMBuilderRef b = cg->b;
    Eval e = {cg, p->loop, start, stop, LLVMConstInt(cg->i1, 0, 0)};
    LLVMValueRef ok = LLVMConstInt(cg->i1, 1, 0);
    for (int i = 0; i < p->nchecks; i++) {
        const IrBoundsCheck *c = &p->checks[i];
        LLVMValueRef lo = eval_affine(&e, &c->lo), hi = eval_affine(&e, &c->hi);
        if (!c->array) continue; /* a nested loop's bounds: evaluated for the overflow only */
        LLVMValueRef dim = LLVMBuildFreeze(b, cg_array_dim(cg, cg_expr(cg, c->array), c->axis), "");
        if (!c->lo_holds) ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntSGE, lo, cg_i64(cg, 0), ""), "");
        ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntSLT, hi, dim, ""), "");
    }
    return LLVMBuildAnd(b, ok, LLVMBuildNot(b, e.overflow, ""), "in_bounds");
}

/* ---- the two copies ---- */

void cg_versioned(Cg *cg, const IrBoundsPlan *p, LLVMValueRef ok, const IrNode *loop, CgLoopEmit emit, void *env)
{
    if (!p) {
        emit(cg, loop, env);
        return;
    }
    LLVMBasicBlockRef copies[2] = {cg_new_bb(cg, "bounds_proven"), cg_new_bb(cg, "bounds_checked")};
    LLVMBasicBlockRef joined = cg_new_bb(cg, "bounds_joined");
    LLVMBuildCondBr(cg->b, ok, copies[0], copies[1]);
    for (int k = 0; k < 2; k++) {
        LLVMPositionBuilderAtEnd(cg->b, copies[k]);
        cg->plans[cg->nplans] = p;
        cg->plan_proven[cg->nplans++] = k == 0;
        emit(cg, loop, env);
        cg->nplans--;
        if (!LLVMGetBasicBlockTerminator(LLVMGetInsertBlock(cg->b))) LLVMBuildBr(cg->b, joined);
    }
    LLVMPositionBuilderAtEnd(cg->b, joined);
}
