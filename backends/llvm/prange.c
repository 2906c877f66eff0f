/* prange.c: lk.prange loops on the openmp backend. The loop moves into a chunk function (outline.c) that the
 * team runs; each thread has private variables; the variables the body only ever updates as v = v op x are
 * reductions, combined in thread order after the join. Loops with too little work run in place. The cpu
 * backend never comes here: for it prange is range. */
#include "cg.h"

typedef struct PrangeRed {
    IrVar *var;
    IrBinOp op;      /* IR_OP_ADD, IR_OP_MUL, IR_OP_MIN or IR_OP_MAX */
    bool ok;
    int assigns, reads, self_reads;
} PrangeRed;

typedef struct PrangeScan {
    PrangeRed *vars;   /* by var id */
    bool bad_exit;
} PrangeScan;

static const IrNode *strip_cast(const IrNode *n)
{
    return n->kind == IR_CAST ? n->u.cast.value : n;
}

static void count_reads(IrNode **p, void *env)
{
    PrangeScan *s = env;
    if ((*p)->kind == IR_VAR) s->vars[(*p)->u.var.var->id].reads++;
    ir_each_child(*p, count_reads, env);
}

/* A reduction variable is assigned only as v = v op e (op + * min max), and read nowhere else in the body. */
static void scan_prange_stmt(IrNode *st, void *env)
{
    PrangeScan *s = env;
    if (st->kind == IR_BREAK || st->kind == IR_RETURN) s->bad_exit = true;
    ir_each_child(st, count_reads, env);
    if (st->kind != IR_ASSIGN) return;
    PrangeRed *r = &s->vars[st->u.assign.var->id];
    r->var = st->u.assign.var;
    r->assigns++;
    const IrNode *v = strip_cast(st->u.assign.value);
    IrBinOp op = IR_OP_ADD;
    bool is_red = false;
    if (v->kind == IR_BINOP && (v->u.binop.op == IR_OP_ADD || v->u.binop.op == IR_OP_MUL || v->u.binop.op == IR_OP_MIN || v->u.binop.op == IR_OP_MAX)) {
        const IrNode *l = strip_cast(v->u.binop.lhs), *rr = strip_cast(v->u.binop.rhs);
        bool self_l = l->kind == IR_VAR && l->u.var.var == r->var, self_r = rr->kind == IR_VAR && rr->u.var.var == r->var;
        is_red = self_l != self_r;
        op = v->u.binop.op;
        r->self_reads += 1;
    } else if (v->kind == IR_IFEXP && strip_cast(v->u.ifexp.cond)->kind == IR_COMPARE) {
        /* Python's max(v, x) / min(v, x): x if x > v else v, and the like */
        const IrNode *c = strip_cast(v->u.ifexp.cond);
        const IrNode *x = strip_cast(c->u.compare.operands[0]), *y = strip_cast(c->u.compare.operands[1]);
        const IrNode *p = strip_cast(v->u.ifexp.then), *q = strip_cast(v->u.ifexp.orelse);
        bool same_pair = x->kind == IR_VAR && y->kind == IR_VAR && p->kind == IR_VAR && q->kind == IR_VAR &&
                         ((p->u.var.var == x->u.var.var && q->u.var.var == y->u.var.var) ||
                          (p->u.var.var == y->u.var.var && q->u.var.var == x->u.var.var));
        bool self_p = p->kind == IR_VAR && p->u.var.var == r->var, self_q = q->kind == IR_VAR && q->u.var.var == r->var;
        IrCmpOp cop = c->u.compare.ops[0];
        if (same_pair && self_p != self_q && cop != IR_CMP_EQ && cop != IR_CMP_NE) {
            bool then_is_x = p->u.var.var == x->u.var.var;
            bool greater = cop == IR_CMP_GT || cop == IR_CMP_GE;
            op = (greater == then_is_x) ? IR_OP_MAX : IR_OP_MIN;
            is_red = true;
            r->self_reads += 2;
        }
    }
    if (r->assigns > 1 && r->op != op) is_red = false;
    r->op = op;
    r->ok = (r->assigns == 1 || r->ok) && is_red;
}

static LLVMValueRef prange_identity(Cg *cg, IrBinOp op, const IrType *t)
{
    LLVMTypeRef lt = cg_type(cg, t);
    bool fl = ir_dtype_is_float(t->dtype);
    switch (op) {
    case IR_OP_MUL: return fl ? LLVMConstReal(lt, 1.0) : LLVMConstInt(lt, 1, 0);
    case IR_OP_MIN: return fl ? LLVMConstReal(lt, __builtin_inf()) : LLVMConstInt(lt, ir_dtype_is_signed(t->dtype) ? (~0ULL) >> (65 - ir_dtype_bits(t->dtype)) : ~0ULL, 0);
    case IR_OP_MAX: return fl ? LLVMConstReal(lt, -__builtin_inf()) : LLVMConstInt(lt, ir_dtype_is_signed(t->dtype) ? 1ULL << (ir_dtype_bits(t->dtype) - 1) : 0, 0);
    default: return LLVMConstNull(lt);
    }
}

static LLVMValueRef prange_combine(Cg *cg, IrBinOp op, const IrType *t, LLVMValueRef a, LLVMValueRef b)
{
    IrNode operand = {.type = (IrType *)t};
    IrNode fake = {.kind = IR_BINOP};
    fake.u.binop.op = op;
    fake.u.binop.lhs = &operand;
    return cg_binop(cg, &fake, a, b);
}

typedef struct ChunkLoop {
    CgOutline *o;
    int start, step;   /* capture indices of the range's start and step */
} ChunkLoop;

/* One thread's iterations [lo, hi) of the range, inside the chunk function. */
static void chunk_loop(Cg *cg, const IrNode *s, void *env)
{
    ChunkLoop *c = env;
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
    cg_mark_loop(cg, LLVMBuildBr(cg->b, head), false, cg_in_proven_copy(cg));
    LLVMPositionBuilderAtEnd(cg->b, done);
}

/* for i in lk.prange(...): the iterations are split among the team; each thread has private variables; the
 * reduction variables start at their identity in each thread and the partial results are combined in thread
 * order after the loop; the loop variable ends at its last value, as after range. */
void cg_prange(Cg *cg, const IrNode *s, LLVMValueRef start, LLVMValueRef stop, LLVMValueRef step)
{
    IrFunc *f = cg->f;
    const IrType *t = s->u.for_range.var->type;
    PrangeScan scan = {rt_arena_alloc(f->arena, sizeof(PrangeRed) * (size_t)(f->nvars + 1)), false};
    IrBlock *body = (IrBlock *)&s->u.for_range.body;
    ir_each_stmt(body, scan_prange_stmt, &scan);
    if (scan.bad_exit) {
        lk_diag_set(cg->diag, LK_ERR_COMPILE, f->file, s->pos.line, s->pos.col,
                    "break and return are not allowed in a prange loop (its iterations run in parallel)");
        return;
    }
    /* a variable assigned in the body and read after the loop must be a reduction: the threads' private
     * copies have no single last value to leave behind (range would leave one) */
    PrangeScan all = {rt_arena_alloc(f->arena, sizeof(PrangeRed) * (size_t)(f->nvars + 1)), false};
    ir_each_stmt(&f->body, scan_prange_stmt, &all);
    for (int v = 0; v < f->nvars; v++) {
        PrangeRed *r = &scan.vars[v];
        if (!r->var || r->var == s->u.for_range.var || r->var->name[0] == '$') continue;
        bool is_red = r->ok && r->reads == r->self_reads;
        if (!is_red && all.vars[v].reads > r->reads) {
            lk_diag_set(cg->diag, LK_ERR_COMPILE, f->file, s->pos.line, s->pos.col,
                        "variable '%s' is assigned in a prange loop and used outside it: only reductions (v += x, v *= x, "
                        "v = max(v, x), v = min(v, x)) carry a value out of a prange loop", r->var->name);
            return;
        }
    }
    /* trip count */
    bool sg = ir_dtype_is_signed(t->dtype);
    LLVMValueRef s64 = sg ? LLVMBuildSExtOrBitCast(cg->b, start, cg->i64, "") : LLVMBuildZExtOrBitCast(cg->b, start, cg->i64, "");
    LLVMValueRef e64 = sg ? LLVMBuildSExtOrBitCast(cg->b, stop, cg->i64, "") : LLVMBuildZExtOrBitCast(cg->b, stop, cg->i64, "");
    LLVMValueRef st64 = sg ? LLVMBuildSExtOrBitCast(cg->b, step, cg->i64, "") : LLVMBuildZExtOrBitCast(cg->b, step, cg->i64, "");
    LLVMValueRef one = cg_i64(cg, 1), zero = cg_i64(cg, 0);
    LLVMValueRef up = LLVMBuildICmp(cg->b, LLVMIntSGT, st64, zero, "");
    LLVMValueRef span = LLVMBuildSelect(cg->b, up, LLVMBuildSub(cg->b, e64, s64, ""), LLVMBuildSub(cg->b, s64, e64, ""), "");
    LLVMValueRef mag = LLVMBuildSelect(cg->b, up, st64, LLVMBuildNeg(cg->b, st64, ""), "");
    LLVMValueRef cnt = LLVMBuildAdd(cg->b, LLVMBuildSDiv(cg->b, LLVMBuildSub(cg->b, span, one, ""), mag, ""), one, "");
    LLVMValueRef n = LLVMBuildSelect(cg->b, LLVMBuildICmp(cg->b, LLVMIntSGT, span, zero, ""), cnt, zero, "");
    /* partial results, one slot a thread for each reduction variable */
    LLVMValueRef partials[64];
    int nred = 0;
    IrVar *reds[64];
    for (int v = 0; v < f->nvars && nred < 64; v++) {
        PrangeRed *r = &scan.vars[v];
        if (!r->var || !r->ok || r->reads != r->self_reads || r->var == s->u.for_range.var) continue;
        LLVMTypeRef pt = LLVMArrayType(cg_type(cg, r->var->type), RT_MAX_THREADS);
        partials[nred] = cg_alloca(cg, pt, "partials");
        for (int k = 0; k < RT_MAX_THREADS; k++) {
            LLVMValueRef idx[2] = {cg_i64(cg, 0), cg_i64(cg, k)};
            LLVMBuildStore(cg->b, prange_identity(cg, r->op, r->var->type), LLVMBuildGEP2(cg->b, pt, partials[nred], idx, 2, ""));
        }
        reds[nred++] = r->var;
    }
    /* one bounds test for the whole range, made here; each thread's chunk runs the copy it chose */
    const IrBoundsPlan *plan = cg_version_plan(cg, s);
    LLVMValueRef ok = plan ? cg_version_test(cg, plan, start, stop) : NULL;
    CgOutline o = {0};
    int cs = cg_capture(&o, s64), cst = cg_capture(&o, st64), cpart[64], cok = plan ? cg_capture(&o, ok) : -1;
    for (int i = 0; i < nred; i++) cpart[i] = cg_capture(&o, partials[i]);
    int64_t cost = 1 + cg_block_cost(body);
    LLVMValueRef work = LLVMBuildMul(cg->b, n, cg_i64(cg, cost), "");
    /* too little work for the team: the plain loop, in place */
    LLVMBasicBlockRef par = cg_new_bb(cg, "prange_team"), seq = cg_new_bb(cg, "prange_alone"), joined = cg_new_bb(cg, "prange_joined");
    LLVMBuildCondBr(cg->b, cg_worth_a_team(cg, work), par, seq);
    LLVMPositionBuilderAtEnd(cg->b, seq);
    CgRange range = {start, stop, step};
    cg_versioned(cg, plan, ok, s, cg_range_loop, &range);
    LLVMBuildBr(cg->b, joined);
    LLVMPositionBuilderAtEnd(cg->b, par);
    cg_outline_begin(cg, &o, NULL, 0, body);
    cg->par_depth++;
    for (int i = 0; i < nred; i++) LLVMBuildStore(cg->b, prange_identity(cg, scan.vars[reds[i]->id].op, reds[i]->type), cg->var_slots[reds[i]->id]);
    ChunkLoop chunk = {&o, cs, cst};
    cg_versioned(cg, plan, plan ? cg_outline_get(&o, cok) : NULL, s, chunk_loop, &chunk);
    for (int i = 0; i < nred; i++) {
        LLVMTypeRef pt = LLVMArrayType(cg_type(cg, reds[i]->type), RT_MAX_THREADS);
        LLVMValueRef idx[2] = {cg_i64(cg, 0), LLVMBuildZExt(cg->b, o.tid, cg->i64, "")};
        LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, cg_type(cg, reds[i]->type), cg->var_slots[reds[i]->id], ""),
                       LLVMBuildGEP2(cg->b, pt, cg_outline_get(&o, cpart[i]), idx, 2, ""));
    }
    cg->par_depth--;
    cg_outline_end(cg, &o, n, work);
    /* after the loop: each reduction variable combined with the threads' partials, in thread order */
    for (int i = 0; i < nred; i++) {
        LLVMTypeRef lt = cg_type(cg, reds[i]->type), pt = LLVMArrayType(lt, RT_MAX_THREADS);
        LLVMValueRef acc = LLVMBuildLoad2(cg->b, lt, cg->var_slots[reds[i]->id], "");
        for (int k2 = 0; k2 < RT_MAX_THREADS; k2++) {
            LLVMValueRef idx[2] = {cg_i64(cg, 0), cg_i64(cg, k2)};
            acc = prange_combine(cg, scan.vars[reds[i]->id].op, reds[i]->type, acc, LLVMBuildLoad2(cg->b, lt, LLVMBuildGEP2(cg->b, pt, partials[i], idx, 2, ""), ""));
        }
        LLVMBuildStore(cg->b, acc, cg->var_slots[reds[i]->id]);
    }
    /* the loop variable's last value */
    LLVMValueRef last = LLVMBuildAdd(cg->b, s64, LLVMBuildMul(cg->b, LLVMBuildSub(cg->b, n, one, ""), st64, ""), "");
    LLVMValueRef var_slot = cg->var_slots[s->u.for_range.var->id];
    LLVMValueRef old = LLVMBuildLoad2(cg->b, cg_type(cg, t), var_slot, "");
    LLVMValueRef ran = LLVMBuildICmp(cg->b, LLVMIntSGT, n, zero, "");
    LLVMBuildStore(cg->b, LLVMBuildSelect(cg->b, ran, LLVMBuildTruncOrBitCast(cg->b, last, cg_type(cg, t), ""), old, ""), var_slot);
    if (s->u.for_range.var->maybe_unbound) {
        LLVMValueRef flag = cg->bound_flags[s->u.for_range.var->id];
        LLVMBuildStore(cg->b, LLVMBuildOr(cg->b, LLVMBuildLoad2(cg->b, cg->i1, flag, ""), ran, ""), flag);
    }
    LLVMBuildBr(cg->b, joined);
    LLVMPositionBuilderAtEnd(cg->b, joined);
}
