/* prange.c: lk.prange loops on the openmp backend. The loop moves into a chunk function (outline.c) that the
 * team runs; each chunk has private variables; the reductions ir/prange.c found (for_range.reds) start at their
 * identity in each chunk and are combined in chunk order after the join. Loops with too little work run in
 * place. The rules of prange (no break, no private value used after the loop) were checked in ir/, for every
 * backend. The cpu backend never comes here: for it prange is range. */
#include "cg.h"

typedef struct ChunkLoop {
    CgOutline *o;
    int start, step;   /* capture indices of the range's start and step */
} ChunkLoop;

/* One thread's iterations [lo, hi) of the range, inside the chunk function. */
static void chunk_loop(Cg *cg, const IrNode *s, ChunkLoop *c)
{
    CgOutline *o = c->o;
    LLVMValueRef k = cg_alloca(cg, cg->i64, "k");
    LLVMBuildStore(cg->b, o->lo, k);
    LLVMBasicBlockRef head = cg_new_bb(cg, "prange_cond"), lbody = cg_new_bb(cg, "prange_body"), latch = cg_new_bb(cg, "prange_next"),
                      done = cg_new_bb(cg, "prange_end");
    LLVMBuildBr(cg->b, head);
    LLVMPositionBuilderAtEnd(cg->b, head);
    LLVMValueRef kv = LLVMBuildLoad2(cg->b, cg->i64, k, "");
    LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntSLT, kv, o->hi, ""), lbody, done);
    LLVMPositionBuilderAtEnd(cg->b, lbody);
    LLVMValueRef iv = LLVMBuildAdd(cg->b, cg_outline_get(o, c->start), LLVMBuildMul(cg->b, kv, cg_outline_get(o, c->step), ""), "");
    LLVMBuildStore(cg->b, LLVMBuildTruncOrBitCast(cg->b, iv, cg_type(cg, s->u.for_range.var->type), ""), cg->var_slots[s->u.for_range.var->id]);
    if (cg_push_loop(cg, done, latch, s->pos)) {
        cg_block(cg, &s->u.for_range.body);
        cg->loop_depth--;
    }
    if (!LLVMGetBasicBlockTerminator(LLVMGetInsertBlock(cg->b))) LLVMBuildBr(cg->b, latch);
    LLVMPositionBuilderAtEnd(cg->b, latch);
    LLVMBuildStore(cg->b, LLVMBuildAdd(cg->b, LLVMBuildLoad2(cg->b, cg->i64, k, ""), cg_i64(cg, 1), ""), k);
    cg_mark_loop(cg, LLVMBuildBr(cg->b, head), false, s->u.for_range.proven_copy); /* as cg_range_loop's */
    LLVMPositionBuilderAtEnd(cg->b, done);
}

typedef struct ChunkPartials {
    const IrPrangeRed *reds;
    int nred;
    LLVMTypeRef slot_ty, buf_ty; /* one chunk's values of the reductions (a struct); RT_MAX_CHUNKS of them */
    LLVMValueRef buf;
} ChunkPartials;

static LLVMValueRef partial_ptr(Cg *cg, const ChunkPartials *p, LLVMValueRef buf, LLVMValueRef chunk, int i)
{
    LLVMValueRef idx[3] = {cg_i64(cg, 0), chunk, LLVMConstInt(cg->i32, (unsigned)i, 0)};
    return LLVMBuildGEP2(cg->b, p->buf_ty, buf, idx, 3, "");
}

/* After the join: each reduction variable combined with chunk c's partial result (c in order). */
static void combine_chunk(Cg *cg, LLVMValueRef *c, void *env)
{
    ChunkPartials *p = env;
    for (int i = 0; i < p->nred; i++) {
        IrVar *v = p->reds[i].var;
        LLVMTypeRef lt = cg_type(cg, v->type);
        LLVMValueRef acc = LLVMBuildLoad2(cg->b, lt, cg->var_slots[v->id], "");
        LLVMValueRef part = LLVMBuildLoad2(cg->b, lt, partial_ptr(cg, p, p->buf, c[0], i), "");
        LLVMBuildStore(cg->b, cg_red_combine(cg, p->reds[i].op, v->type->dtype, acc, part), cg->var_slots[v->id]);
    }
}

/* The number of iterations of range(start, stop, step) over a loop variable of type t (step already checked
 * non-zero), with start and step widened to int64 in *s64 and *st64. */
LLVMValueRef cg_trip_count(Cg *cg, const IrType *t, LLVMValueRef start, LLVMValueRef stop, LLVMValueRef step,
                           LLVMValueRef *s64, LLVMValueRef *st64)
{
    bool sg = ir_dtype_is_signed(t->dtype);
    *s64 = sg ? LLVMBuildSExtOrBitCast(cg->b, start, cg->i64, "") : LLVMBuildZExtOrBitCast(cg->b, start, cg->i64, "");
    LLVMValueRef e64 = sg ? LLVMBuildSExtOrBitCast(cg->b, stop, cg->i64, "") : LLVMBuildZExtOrBitCast(cg->b, stop, cg->i64, "");
    *st64 = sg ? LLVMBuildSExtOrBitCast(cg->b, step, cg->i64, "") : LLVMBuildZExtOrBitCast(cg->b, step, cg->i64, "");
    LLVMValueRef one = cg_i64(cg, 1), zero = cg_i64(cg, 0);
    LLVMValueRef up = LLVMBuildICmp(cg->b, LLVMIntSGT, *st64, zero, "");
    LLVMValueRef span = LLVMBuildSelect(cg->b, up, LLVMBuildSub(cg->b, e64, *s64, ""), LLVMBuildSub(cg->b, *s64, e64, ""), "");
    LLVMValueRef mag = LLVMBuildSelect(cg->b, up, *st64, LLVMBuildNeg(cg->b, *st64, ""), "");
    LLVMValueRef cnt = LLVMBuildAdd(cg->b, LLVMBuildSDiv(cg->b, LLVMBuildSub(cg->b, span, one, ""), mag, ""), one, "");
    return LLVMBuildSelect(cg->b, LLVMBuildICmp(cg->b, LLVMIntSGT, span, zero, ""), cnt, zero, "");
}

/* After a prange loop of n iterations from s64 by st64 run elsewhere (a team, a kernel): its variable holds its
 * last value, as after range (and is assigned if the loop ran). */
void cg_prange_last_value(Cg *cg, const IrNode *s, LLVMValueRef s64, LLVMValueRef st64, LLVMValueRef n)
{
    const IrType *t = s->u.for_range.var->type;
    LLVMValueRef one = cg_i64(cg, 1), zero = cg_i64(cg, 0);
    LLVMValueRef last = LLVMBuildAdd(cg->b, s64, LLVMBuildMul(cg->b, LLVMBuildSub(cg->b, n, one, ""), st64, ""), "");
    LLVMValueRef var_slot = cg->var_slots[s->u.for_range.var->id];
    LLVMValueRef old = LLVMBuildLoad2(cg->b, cg_type(cg, t), var_slot, "");
    LLVMValueRef ran = LLVMBuildICmp(cg->b, LLVMIntSGT, n, zero, "");
    LLVMBuildStore(cg->b, LLVMBuildSelect(cg->b, ran, LLVMBuildTruncOrBitCast(cg->b, last, cg_type(cg, t), ""), old, ""), var_slot);
    if (s->u.for_range.var->maybe_unbound) {
        LLVMValueRef flag = cg->bound_flags[s->u.for_range.var->id];
        LLVMBuildStore(cg->b, LLVMBuildOr(cg->b, LLVMBuildLoad2(cg->b, cg->i1, flag, ""), ran, ""), flag);
    }
}

/* for i in lk.prange(...): the iterations are split into chunks run by the team; each chunk has private
 * variables; the reduction variables start at their identity in each chunk and the chunks' partial results
 * are combined in chunk order after the loop; the loop variable ends at its last value, as after range. */
void cg_prange(Cg *cg, const IrNode *s, LLVMValueRef start, LLVMValueRef stop, LLVMValueRef step)
{
    IrFunc *f = cg->f;
    const IrType *t = s->u.for_range.var->type;
    IrBlock *body = (IrBlock *)&s->u.for_range.body;
    LLVMValueRef s64, st64;
    LLVMValueRef n = cg_trip_count(cg, t, start, stop, step, &s64, &st64);
    /* partial results: slot c holds chunk c's values of every reduction variable (one buffer, one capture) */
    ChunkPartials parts = {s->u.for_range.reds, s->u.for_range.nreds};
    LLVMTypeRef *fields = rt_arena_alloc(f->arena, sizeof(LLVMTypeRef) * (size_t)(parts.nred + 1));
    for (int i = 0; i < parts.nred; i++) fields[i] = cg_type(cg, parts.reds[i].var->type);
    parts.slot_ty = LLVMStructTypeInContext(cg->ctx, fields, (unsigned)parts.nred, 0);
    parts.buf_ty = LLVMArrayType(parts.slot_ty, RT_MAX_CHUNKS);
    parts.buf = parts.nred ? cg_alloca(cg, parts.buf_ty, "partials") : NULL;
    CgOutline o = {0};
    int cs = cg_capture(&o, s64), cst = cg_capture(&o, st64);
    int cpart = parts.nred ? cg_capture(&o, parts.buf) : -1;
    int64_t cost = 1 + cg_block_cost(body);
    LLVMValueRef work = LLVMBuildMul(cg->b, n, cg_i64(cg, cost), "");
    /* too little work for the team: the plain loop, in place */
    LLVMBasicBlockRef par = cg_new_bb(cg, "prange_team"), seq = cg_new_bb(cg, "prange_alone"), joined = cg_new_bb(cg, "prange_joined");
    LLVMBuildCondBr(cg->b, cg_worth_a_team(cg, work), par, seq);
    LLVMPositionBuilderAtEnd(cg->b, seq);
    cg_range_loop(cg, s, start, stop, step);
    LLVMBuildBr(cg->b, joined);
    LLVMPositionBuilderAtEnd(cg->b, par);
    cg_outline_begin(cg, &o, s->region);
    for (int i = 0; i < parts.nred; i++)
        LLVMBuildStore(cg->b, cg_red_identity(cg, parts.reds[i].op, parts.reds[i].var->type->dtype), cg->var_slots[parts.reds[i].var->id]);
    ChunkLoop chunk = {&o, cs, cst};
    chunk_loop(cg, s, &chunk);
    LLVMValueRef tid = LLVMBuildZExt(cg->b, o.tid, cg->i64, "");
    for (int i = 0; i < parts.nred; i++) {
        IrVar *v = parts.reds[i].var;
        LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, cg_type(cg, v->type), cg->var_slots[v->id], ""),
                       partial_ptr(cg, &parts, cg_outline_get(&o, cpart), tid, i));
    }
    LLVMValueRef nchunks = cg_outline_end(cg, &o, n, work);
    /* after the loop: each reduction variable combined with the chunks' partials, in chunk order */
    if (parts.nred) cg_loop_nest(cg, 1, &nchunks, combine_chunk, &parts, false);
    cg_prange_last_value(cg, s, s64, st64, n);
    LLVMBuildBr(cg->b, joined);
    LLVMPositionBuilderAtEnd(cg->b, joined);
}
