/* emit_stmt.c: functions, statements and expressions of the typed IR to LLVM IR, and the entry wrapper that
 * unpacks the shim's argument slots. Array work is delegated to emit_array.c and emit_reduce.c. */
#include <stdio.h>
#include <string.h>
#include "cg.h"

LLVMBasicBlockRef cg_new_bb(Cg *cg, const char *name)
{
    return LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, name);
}

/* Allocas go to the entry block so that mem2reg can promote them, wherever the variable is first used. */
LLVMValueRef cg_alloca(Cg *cg, LLVMTypeRef t, const char *name)
{
    LLVMBuilderRef eb = LLVMCreateBuilderInContext(cg->ctx);
    LLVMValueRef first = LLVMGetFirstInstruction(cg->entry_bb);
    if (first) LLVMPositionBuilderBefore(eb, first);
    else LLVMPositionBuilderAtEnd(eb, cg->entry_bb);
    LLVMValueRef a = LLVMBuildAlloca(eb, t, name);
    LLVMDisposeBuilder(eb);
    return a;
}

static bool terminated(Cg *cg)
{
    return LLVMGetBasicBlockTerminator(LLVMGetInsertBlock(cg->b)) != NULL;
}

/* After a return/break/continue, later statements of the block are dead: give them a block of their own. */
static void continue_in_dead_block(Cg *cg)
{
    LLVMPositionBuilderAtEnd(cg->b, cg_new_bb(cg, "dead"));
}

void cg_raise_if(Cg *cg, LLVMValueRef cond, const char *rt_fn, IrPos pos, LLVMValueRef *extra, int nextra)
{
    LLVMValueRef expect_args[2] = {cond, LLVMConstInt(cg->i1, 0, 0)};
    cond = cg_call_intrinsic(cg, "llvm.expect", cg->i1, expect_args, 2);
    LLVMBasicBlockRef raise = cg_new_bb(cg, "raise"), ok = cg_new_bb(cg, "ok");
    LLVMBuildCondBr(cg->b, cond, raise, ok);
    LLVMPositionBuilderAtEnd(cg->b, raise);
    LLVMValueRef args[8] = {cg->rtctx, cg->file_str, LLVMConstInt(cg->i32, (unsigned long long)pos.line, 0)};
    LLVMTypeRef params[8] = {cg->ptr, cg->ptr, cg->i32};
    for (int i = 0; i < nextra && i < 5; i++) {
        args[3 + i] = extra[i];
        params[3 + i] = LLVMTypeOf(extra[i]);
    }
    cg_call_rt(cg, rt_fn, cg->i32, params, args, 3 + nextra);
    LLVMBuildBr(cg->b, cg->err_bb);
    LLVMPositionBuilderAtEnd(cg->b, ok);
}

void cg_check_status(Cg *cg, LLVMValueRef status)
{
    LLVMValueRef failed = LLVMBuildICmp(cg->b, LLVMIntNE, status, LLVMConstInt(cg->i32, 0, 0), "");
    LLVMBasicBlockRef ok = cg_new_bb(cg, "call_ok");
    LLVMBuildCondBr(cg->b, failed, cg->err_bb, ok);
    LLVMPositionBuilderAtEnd(cg->b, ok);
}

static LLVMValueRef func_value(Cg *cg, const IrFunc *f)
{
    for (int i = 0; i < cg->nfuncs; i++)
        if (cg->funcs[i] == f) return cg->func_values[i];
    return NULL;
}

static LLVMTypeRef func_type(Cg *cg, const IrFunc *f)
{
    LLVMTypeRef params[130];
    params[0] = cg->ptr;
    params[1] = cg->ptr;
    for (int i = 0; i < f->nparams && i < 128; i++) params[2 + i] = cg_type(cg, f->params[i]->type);
    return LLVMFunctionType(cg->i32, params, (unsigned)(2 + f->nparams), 0);
}

static LLVMValueRef cg_call_user(Cg *cg, const IrNode *n)
{
    const IrFunc *callee = n->u.call.callee;
    LLVMValueRef args[130];
    LLVMValueRef ret = cg_alloca(cg, cg_type(cg, callee->ret_type), "callret");
    args[0] = cg->rtctx;
    args[1] = ret;
    for (int i = 0; i < n->u.call.nargs; i++) {
        LLVMValueRef v = cg_expr(cg, n->u.call.args[i]);
        args[2 + i] = cg_cast(cg, v, n->u.call.args[i]->type, callee->params[i]->type);
    }
    LLVMValueRef status = LLVMBuildCall2(cg->b, func_type(cg, callee), func_value(cg, callee), args,
                                         (unsigned)(2 + n->u.call.nargs), "");
    cg_check_status(cg, status);
    return LLVMBuildLoad2(cg->b, cg_type(cg, callee->ret_type), ret, "");
}

static LLVMValueRef cg_boolop(Cg *cg, const IrNode *n)
{
    LLVMTypeRef t = cg_type(cg, n->type);
    LLVMBasicBlockRef done = cg_new_bb(cg, "boolop_end");
    LLVMValueRef vals[32];
    LLVMBasicBlockRef froms[32];
    int k = 0;
    for (int i = 0; i < n->u.boolop.n && i < 32; i++) {
        LLVMValueRef v = cg_expr(cg, n->u.boolop.values[i]);
        vals[k] = v;
        if (i + 1 == n->u.boolop.n) {
            froms[k++] = LLVMGetInsertBlock(cg->b);
            LLVMBuildBr(cg->b, done);
            break;
        }
        LLVMValueRef truth = cg_truth(cg, v, n->type);
        LLVMBasicBlockRef next = cg_new_bb(cg, "boolop_next");
        froms[k++] = LLVMGetInsertBlock(cg->b);
        /* and: a false value ends it; or: a true value ends it */
        if (n->u.boolop.is_and) LLVMBuildCondBr(cg->b, truth, next, done);
        else LLVMBuildCondBr(cg->b, truth, done, next);
        LLVMPositionBuilderAtEnd(cg->b, next);
    }
    LLVMPositionBuilderAtEnd(cg->b, done);
    LLVMValueRef phi = LLVMBuildPhi(cg->b, t, "");
    LLVMAddIncoming(phi, vals, froms, (unsigned)k);
    return phi;
}

static LLVMValueRef cg_ifexp(Cg *cg, const IrNode *n)
{
    LLVMValueRef c = cg_expr(cg, n->u.ifexp.cond);
    LLVMBasicBlockRef bt = cg_new_bb(cg, "ifexp_then"), bf = cg_new_bb(cg, "ifexp_else"), done = cg_new_bb(cg, "ifexp_end");
    LLVMBuildCondBr(cg->b, c, bt, bf);
    LLVMPositionBuilderAtEnd(cg->b, bt);
    LLVMValueRef vt = cg_expr(cg, n->u.ifexp.then);
    LLVMBasicBlockRef from_t = LLVMGetInsertBlock(cg->b);
    LLVMBuildBr(cg->b, done);
    LLVMPositionBuilderAtEnd(cg->b, bf);
    LLVMValueRef vf = cg_expr(cg, n->u.ifexp.orelse);
    LLVMBasicBlockRef from_f = LLVMGetInsertBlock(cg->b);
    LLVMBuildBr(cg->b, done);
    LLVMPositionBuilderAtEnd(cg->b, done);
    LLVMValueRef phi = LLVMBuildPhi(cg->b, cg_type(cg, n->type), "");
    LLVMValueRef vals[2] = {vt, vf};
    LLVMBasicBlockRef froms[2] = {from_t, from_f};
    LLVMAddIncoming(phi, vals, froms, 2);
    return phi;
}

LLVMValueRef cg_expr(Cg *cg, const IrNode *n)
{
    switch (n->kind) {
    case IR_CONST: return cg_const(cg, n);
    case IR_VAR:
        if (n->u.var.check_bound) {
            IrVar *v = n->u.var.var;
            LLVMValueRef set = LLVMBuildLoad2(cg->b, cg->i1, cg->bound_flags[v->id], "");
            LLVMValueRef name = LLVMBuildGlobalStringPtr(cg->b, v->name, "varname");
            LLVMBasicBlockRef raise = cg_new_bb(cg, "unbound"), ok = cg_new_bb(cg, "bound");
            LLVMBuildCondBr(cg->b, set, ok, raise);
            LLVMPositionBuilderAtEnd(cg->b, raise);
            LLVMTypeRef params[4] = {cg->ptr, cg->ptr, cg->i32, cg->ptr};
            LLVMValueRef args[4] = {cg->rtctx, cg->file_str, LLVMConstInt(cg->i32, (unsigned long long)n->pos.line, 0), name};
            cg_call_rt(cg, "rt_raise_unbound", cg->i32, params, args, 4);
            LLVMBuildBr(cg->b, cg->err_bb);
            LLVMPositionBuilderAtEnd(cg->b, ok);
        }
        return LLVMBuildLoad2(cg->b, cg_type(cg, n->u.var.var->type), cg->var_slots[n->u.var.var->id], "");
    case IR_BINOP: {
        LLVMValueRef l = cg_expr(cg, n->u.binop.lhs);
        LLVMValueRef r = cg_expr(cg, n->u.binop.rhs);
        return cg_binop(cg, n, l, r);
    }
    case IR_UNOP: return cg_unop(cg, n, cg_expr(cg, n->u.unop.operand));
    case IR_COMPARE: {
        LLVMValueRef l = cg_expr(cg, n->u.compare.operands[0]);
        LLVMValueRef r = cg_expr(cg, n->u.compare.operands[1]);
        return cg_compare(cg, n->u.compare.ops[0], n->u.compare.operands[0]->type->dtype, l, r);
    }
    case IR_BOOLOP: return cg_boolop(cg, n);
    case IR_IFEXP: return cg_ifexp(cg, n);
    case IR_CALL:
        if (n->u.call.ckind == IR_CALLEE_FUNC) return cg_call_user(cg, n);
        if (n->u.call.ckind == IR_CALLEE_INTRINSIC) return cg_intrinsic(cg, n);
        break;
    case IR_INDEX: return cg_index(cg, n);
    case IR_TUPLE: {
        LLVMValueRef agg = LLVMGetUndef(cg_type(cg, n->type));
        for (int i = 0; i < n->u.tuple.n; i++)
            agg = LLVMBuildInsertValue(cg->b, agg, cg_expr(cg, n->u.tuple.items[i]), (unsigned)i, "");
        return agg;
    }
    case IR_TUPLE_GET: return LLVMBuildExtractValue(cg->b, cg_expr(cg, n->u.tuple_get.tuple), (unsigned)n->u.tuple_get.k, "");
    case IR_CAST: {
        LLVMValueRef v = cg_expr(cg, n->u.cast.value);
        return cg_cast(cg, v, n->u.cast.value->type, n->type);
    }
    case IR_MATH: {
        LLVMValueRef args[2];
        for (int i = 0; i < ir_math_arity(n->u.math.fn); i++) args[i] = cg_expr(cg, n->u.math.args[i]);
        return cg_math(cg, n, args);
    }
    case IR_ARRAY_DIM: return cg_array_dim(cg, cg_expr(cg, n->u.array_dim.array), n->u.array_dim.axis);
    case IR_ALLOC: return cg_alloc(cg, n);
    case IR_MAP: return cg_map(cg, n);
    case IR_IMAP: return cg_imap(cg, n);
    case IR_REDUCE: return cg_reduce(cg, n);
    case IR_SCAN: return cg_scan(cg, n);
    case IR_BCAST_SHAPE: return cg_bcast_shape(cg, n);
    case IR_LAMBDA: return LLVMConstNull(cg_type(cg, n->type));
    case IR_COMPREHENSION:
    case IR_NAMEREF: case IR_SLICE: case IR_ATTR:
    case IR_ASSIGN: case IR_AUGASSIGN: case IR_STORE: case IR_IF: case IR_WHILE: case IR_FOR_RANGE: case IR_FOR_ITER:
    case IR_BREAK: case IR_CONTINUE: case IR_RETURN: case IR_EXPR_STMT: case IR_PASS: case IR_KIND_COUNT:
        break;
    }
    lk_diag_set(cg->diag, LK_ERR_INTERNAL, cg->f->file, n->pos.line, n->pos.col,
                "the cpu backend cannot lower a %s expression here", ir_kind_name(n->kind));
    return LLVMGetUndef(n->type ? cg_type(cg, n->type) : cg->i64);
}

static void cg_if(Cg *cg, const IrNode *s)
{
    LLVMValueRef c = cg_expr(cg, s->u.if_.cond);
    LLVMBasicBlockRef bt = cg_new_bb(cg, "then"), bf = cg_new_bb(cg, "else"), done = cg_new_bb(cg, "endif");
    LLVMBuildCondBr(cg->b, c, bt, bf);
    LLVMPositionBuilderAtEnd(cg->b, bt);
    cg_block(cg, &s->u.if_.then);
    if (!terminated(cg)) LLVMBuildBr(cg->b, done);
    LLVMPositionBuilderAtEnd(cg->b, bf);
    cg_block(cg, &s->u.if_.orelse);
    if (!terminated(cg)) LLVMBuildBr(cg->b, done);
    LLVMPositionBuilderAtEnd(cg->b, done);
}

static bool push_loop(Cg *cg, LLVMBasicBlockRef brk, LLVMBasicBlockRef cont, IrPos pos)
{
    if (cg->loop_depth == CG_MAX_LOOPS) {
        lk_diag_set(cg->diag, LK_ERR_COMPILE, cg->f->file, pos.line, pos.col, "loops nested too deeply");
        return false;
    }
    cg->break_bb[cg->loop_depth] = brk;
    cg->continue_bb[cg->loop_depth] = cont;
    cg->loop_depth++;
    return true;
}

static void cg_while(Cg *cg, const IrNode *s)
{
    LLVMBasicBlockRef head = cg_new_bb(cg, "while_cond"), body = cg_new_bb(cg, "while_body"), done = cg_new_bb(cg, "while_end");
    LLVMBuildBr(cg->b, head);
    LLVMPositionBuilderAtEnd(cg->b, head);
    LLVMBuildCondBr(cg->b, cg_expr(cg, s->u.while_.cond), body, done);
    LLVMPositionBuilderAtEnd(cg->b, body);
    if (!push_loop(cg, done, head, s->pos)) return;
    cg_block(cg, &s->u.while_.body);
    cg->loop_depth--;
    if (!terminated(cg)) LLVMBuildBr(cg->b, head);
    LLVMPositionBuilderAtEnd(cg->b, done);
}

/* ---- lk.prange on the openmp backend ---- */

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

static bool push_loop(Cg *cg, LLVMBasicBlockRef brk, LLVMBasicBlockRef cont, IrPos pos);
static void cg_for_range_seq(Cg *cg, const IrNode *s, LLVMValueRef start, LLVMValueRef stop, LLVMValueRef step);

/* for i in lk.prange(...): the iterations are split among the team; each thread has private variables; the
 * reduction variables start at their identity in each thread and the partial results are combined in thread
 * order after the loop; the loop variable ends at its last value, as after range. */
static void cg_prange(Cg *cg, const IrNode *s, LLVMValueRef start, LLVMValueRef stop, LLVMValueRef step)
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
    CgOutline o = {0};
    int cs = cg_capture(&o, s64), cst = cg_capture(&o, st64), cpart[64];
    for (int i = 0; i < nred; i++) cpart[i] = cg_capture(&o, partials[i]);
    int64_t cost = 1;
    for (int i = 0; i < body->n; i++) cost += cg_cost(body->stmts[i]);
    LLVMValueRef work = LLVMBuildMul(cg->b, n, cg_i64(cg, cost), "");
    /* too little work for the team: the plain loop, in place */
    LLVMBasicBlockRef par = cg_new_bb(cg, "prange_team"), seq = cg_new_bb(cg, "prange_alone"), joined = cg_new_bb(cg, "prange_joined");
    LLVMBuildCondBr(cg->b, cg_worth_a_team(cg, work), par, seq);
    LLVMPositionBuilderAtEnd(cg->b, seq);
    cg_for_range_seq(cg, s, start, stop, step);
    LLVMBuildBr(cg->b, joined);
    LLVMPositionBuilderAtEnd(cg->b, par);
    cg_outline_begin(cg, &o, NULL, 0, body);
    cg->par_depth++;
    for (int i = 0; i < nred; i++) LLVMBuildStore(cg->b, prange_identity(cg, scan.vars[reds[i]->id].op, reds[i]->type), cg->var_slots[reds[i]->id]);
    LLVMValueRef k = cg_alloca(cg, cg->i64, "k");
    LLVMBuildStore(cg->b, o.lo, k);
    LLVMBasicBlockRef head = cg_new_bb(cg, "prange_cond"), lbody = cg_new_bb(cg, "prange_body"), latch = cg_new_bb(cg, "prange_next"),
                      done = cg_new_bb(cg, "prange_end");
    LLVMBuildBr(cg->b, head);
    LLVMPositionBuilderAtEnd(cg->b, head);
    LLVMValueRef kv = LLVMBuildLoad2(cg->b, cg->i64, k, "");
    LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntSLT, kv, o.hi, ""), lbody, done);
    LLVMPositionBuilderAtEnd(cg->b, lbody);
    LLVMValueRef iv = LLVMBuildAdd(cg->b, cg_outline_get(&o, cs), LLVMBuildMul(cg->b, kv, cg_outline_get(&o, cst), ""), "");
    LLVMBuildStore(cg->b, LLVMBuildTruncOrBitCast(cg->b, iv, cg_type(cg, t), ""), cg->var_slots[s->u.for_range.var->id]);
    if (push_loop(cg, done, latch, s->pos)) {
        cg_block(cg, body);
        cg->loop_depth--;
    }
    if (!LLVMGetBasicBlockTerminator(LLVMGetInsertBlock(cg->b))) LLVMBuildBr(cg->b, latch);
    LLVMPositionBuilderAtEnd(cg->b, latch);
    LLVMBuildStore(cg->b, LLVMBuildAdd(cg->b, LLVMBuildLoad2(cg->b, cg->i64, k, ""), one, ""), k);
    LLVMBuildBr(cg->b, head);
    LLVMPositionBuilderAtEnd(cg->b, done);
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

/* for v in range(start, stop, step): a hidden counter runs; v takes its value at the top of each iteration
 * (so v keeps the last value after the loop, and assigning v in the body does not change the iteration). */
static void cg_for_range(Cg *cg, const IrNode *s)
{
    const IrType *t = s->u.for_range.var->type;
    LLVMTypeRef lt = cg_type(cg, t);
    LLVMValueRef start = cg_expr(cg, s->u.for_range.start);
    LLVMValueRef stop = cg_expr(cg, s->u.for_range.stop);
    const IrNode *step_node = s->u.for_range.step;
    LLVMValueRef step = cg_expr(cg, step_node);
    bool step_const = step_node->kind == IR_CONST;
    int64_t step_value = step_const ? step_node->u.konst.i : 0;
    if (!step_const) {
        LLVMValueRef extra[1] = {cg_i64(cg, RT_VAL_RANGE_STEP_ZERO)};
        cg_raise_if(cg, LLVMBuildICmp(cg->b, LLVMIntEQ, step, LLVMConstNull(lt), ""), "rt_raise_value", s->pos, extra, 1);
    } else if (step_value == 0) {
        LLVMValueRef extra[1] = {cg_i64(cg, RT_VAL_RANGE_STEP_ZERO)};
        cg_raise_if(cg, LLVMConstInt(cg->i1, 1, 0), "rt_raise_value", s->pos, extra, 1);
    }
    if (s->u.for_range.parallel && cg->parallel && cg->par_depth == 0) {
        cg_prange(cg, s, start, stop, step);
        return;
    }
    cg_for_range_seq(cg, s, start, stop, step);
}

static void cg_for_range_seq(Cg *cg, const IrNode *s, LLVMValueRef start, LLVMValueRef stop, LLVMValueRef step)
{
    const IrType *t = s->u.for_range.var->type;
    LLVMTypeRef lt = cg_type(cg, t);
    const IrNode *step_node = s->u.for_range.step;
    bool step_const = step_node->kind == IR_CONST;
    int64_t step_value = step_const ? step_node->u.konst.i : 0;
    LLVMValueRef counter = cg_alloca(cg, lt, "range_i");
    LLVMBuildStore(cg->b, start, counter);
    LLVMBasicBlockRef head = cg_new_bb(cg, "for_cond"), body = cg_new_bb(cg, "for_body"), latch = cg_new_bb(cg, "for_next"),
                      done = cg_new_bb(cg, "for_end");
    LLVMBuildBr(cg->b, head);
    LLVMPositionBuilderAtEnd(cg->b, head);
    LLVMValueRef i = LLVMBuildLoad2(cg->b, lt, counter, "");
    bool sg = ir_dtype_is_signed(t->dtype);
    LLVMValueRef up = LLVMBuildICmp(cg->b, sg ? LLVMIntSLT : LLVMIntULT, i, stop, "");
    LLVMValueRef cond;
    if (step_const) {
        cond = step_value > 0 ? up : LLVMBuildICmp(cg->b, sg ? LLVMIntSGT : LLVMIntUGT, i, stop, "");
    } else {
        LLVMValueRef down = LLVMBuildICmp(cg->b, LLVMIntSGT, i, stop, "");
        LLVMValueRef pos_step = LLVMBuildICmp(cg->b, LLVMIntSGT, step, LLVMConstNull(lt), "");
        cond = LLVMBuildSelect(cg->b, pos_step, up, down, "");
    }
    LLVMBuildCondBr(cg->b, cond, body, done);
    LLVMPositionBuilderAtEnd(cg->b, body);
    LLVMBuildStore(cg->b, i, cg->var_slots[s->u.for_range.var->id]);
    if (s->u.for_range.var->maybe_unbound) LLVMBuildStore(cg->b, LLVMConstInt(cg->i1, 1, 0), cg->bound_flags[s->u.for_range.var->id]);
    if (!push_loop(cg, done, latch, s->pos)) return;
    cg_block(cg, &s->u.for_range.body);
    cg->loop_depth--;
    if (!terminated(cg)) LLVMBuildBr(cg->b, latch);
    LLVMPositionBuilderAtEnd(cg->b, latch);
    LLVMValueRef cur = LLVMBuildLoad2(cg->b, lt, counter, "");
    LLVMValueRef back;
    if (step_const && (step_value == 1 || step_value == -1)) {
        /* cur < stop (or > stop) held, so cur + 1 (- 1) cannot overflow */
        LLVMBuildStore(cg->b, LLVMBuildAdd(cg->b, cur, step, ""), counter);
        back = LLVMBuildBr(cg->b, head);
    } else {
        /* a step past the type's end ends the loop, as Python's unbounded ints would */
        LLVMValueRef args[2] = {cur, step};
        LLVMValueRef r = cg_call_intrinsic(cg, sg ? "llvm.sadd.with.overflow" : "llvm.uadd.with.overflow", lt, args, 2);
        LLVMBuildStore(cg->b, LLVMBuildExtractValue(cg->b, r, 0, ""), counter);
        back = LLVMBuildCondBr(cg->b, LLVMBuildExtractValue(cg->b, r, 1, ""), done, head);
    }
    /* fastmath: the user allows reassociation, so a float accumulation loop may vectorise */
    if (cg->opts->fastmath) cg_mark_vectorize(cg, back);
    LLVMPositionBuilderAtEnd(cg->b, done);
}

static void cg_stmt(Cg *cg, const IrNode *s)
{
    switch (s->kind) {
    case IR_ASSIGN: {
        LLVMValueRef v = cg_expr(cg, s->u.assign.value);
        v = cg_cast(cg, v, s->u.assign.value->type, s->u.assign.var->type);
        LLVMBuildStore(cg->b, v, cg->var_slots[s->u.assign.var->id]);
        if (s->u.assign.var->maybe_unbound) LLVMBuildStore(cg->b, LLVMConstInt(cg->i1, 1, 0), cg->bound_flags[s->u.assign.var->id]);
        return;
    }
    case IR_STORE: cg_store(cg, s->u.store.target, cg_expr(cg, s->u.store.value)); return;
    case IR_IF: cg_if(cg, s); return;
    case IR_WHILE: cg_while(cg, s); return;
    case IR_FOR_RANGE: cg_for_range(cg, s); return;
    case IR_BREAK:
    case IR_CONTINUE:
        LLVMBuildBr(cg->b, s->kind == IR_BREAK ? cg->break_bb[cg->loop_depth - 1] : cg->continue_bb[cg->loop_depth - 1]);
        continue_in_dead_block(cg);
        return;
    case IR_RETURN:
        if (s->u.ret.value) {
            LLVMValueRef v = cg_expr(cg, s->u.ret.value);
            LLVMBuildStore(cg->b, cg_cast(cg, v, s->u.ret.value->type, cg->f->ret_type), cg->retptr);
        }
        LLVMBuildRet(cg->b, LLVMConstInt(cg->i32, 0, 0));
        continue_in_dead_block(cg);
        return;
    case IR_EXPR_STMT: cg_expr(cg, s->u.expr_stmt.value); return;
    case IR_PASS: return;
    default:
        if (!ir_is_statement(s->kind)) {
            cg_expr(cg, s);
            return;
        }
        lk_diag_set(cg->diag, LK_ERR_INTERNAL, cg->f->file, s->pos.line, s->pos.col,
                    "the cpu backend cannot lower a %s statement", ir_kind_name(s->kind));
    }
}

void cg_block(Cg *cg, const IrBlock *b)
{
    for (int i = 0; i < b->n && cg->diag->kind == LK_OK; i++) cg_stmt(cg, b->stmts[i]);
}

static void emit_function(Cg *cg, IrFunc *f)
{
    cg->f = f;
    cg->fn = func_value(cg, f);
    cg->entry_bb = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "entry");
    LLVMBasicBlockRef start = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "start");
    cg->err_bb = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "error");
    LLVMPositionBuilderAtEnd(cg->b, cg->err_bb);
    LLVMBuildRet(cg->b, LLVMConstInt(cg->i32, 1, 0));
    LLVMPositionBuilderAtEnd(cg->b, cg->entry_bb);
    cg->rtctx = LLVMGetParam(cg->fn, 0);
    cg->retptr = LLVMGetParam(cg->fn, 1);
    cg->file_str = LLVMBuildGlobalStringPtr(cg->b, f->file, "file");
    cg->var_slots = rt_arena_alloc(f->arena, sizeof(LLVMValueRef) * (size_t)(f->nvars + 1));
    cg->bound_flags = rt_arena_alloc(f->arena, sizeof(LLVMValueRef) * (size_t)(f->nvars + 1));
    for (int i = 0; i < f->nvars; i++) {
        if (f->vars[i]->type) cg->var_slots[i] = LLVMBuildAlloca(cg->b, cg_type(cg, f->vars[i]->type), f->vars[i]->name);
        if (f->vars[i]->maybe_unbound) {
            cg->bound_flags[i] = LLVMBuildAlloca(cg->b, cg->i1, "assigned");
            LLVMBuildStore(cg->b, LLVMConstInt(cg->i1, 0, 0), cg->bound_flags[i]);
        }
    }
    for (int i = 0; i < f->nparams; i++) LLVMBuildStore(cg->b, LLVMGetParam(cg->fn, (unsigned)(2 + i)), cg->var_slots[f->params[i]->id]);
    LLVMBuildBr(cg->b, start);
    LLVMPositionBuilderAtEnd(cg->b, start);
    cg->loop_depth = 0;
    cg_block(cg, &f->body);
    /* falling off the end returns None (typespec guarantees this only happens for None-returning functions) */
    if (!terminated(cg)) LLVMBuildRet(cg->b, LLVMConstInt(cg->i32, 0, 0));
}

/* ---- the entry wrapper: slots in, slots out ---- */

static LLVMValueRef load_slots(Cg *cg, const IrType *t, LLVMValueRef base, int *slot)
{
    LLVMValueRef idx[1];
    switch (t->kind) {
    case IR_TY_SCALAR: {
        idx[0] = cg_i64(cg, (*slot)++);
        LLVMValueRef p = LLVMBuildGEP2(cg->b, cg->i64, base, idx, 1, "");
        if (ir_dtype_is_float(t->dtype)) {
            LLVMValueRef d = LLVMBuildLoad2(cg->b, cg->f64, p, "");
            return t->dtype == IR_DT_FLOAT32 ? LLVMBuildFPTrunc(cg->b, d, cg->f32, "") : d;
        }
        LLVMValueRef v = LLVMBuildLoad2(cg->b, cg->i64, p, "");
        if (t->dtype == IR_DT_BOOL) return LLVMBuildICmp(cg->b, LLVMIntNE, v, cg_i64(cg, 0), "");
        return LLVMBuildTruncOrBitCast(cg->b, v, cg_type(cg, t), "");
    }
    case IR_TY_ARRAY: {
        LLVMValueRef agg = LLVMGetUndef(cg_type(cg, t));
        for (int k = 0; k < 2; k++) {
            idx[0] = cg_i64(cg, (*slot)++);
            LLVMValueRef p = LLVMBuildGEP2(cg->b, cg->i64, base, idx, 1, "");
            agg = LLVMBuildInsertValue(cg->b, agg, LLVMBuildLoad2(cg->b, cg->ptr, p, ""), (unsigned)k, "");
        }
        for (int field = 2; field < 4; field++) {
            LLVMValueRef arr = LLVMGetUndef(LLVMArrayType(cg->i64, (unsigned)t->ndim));
            for (int d = 0; d < t->ndim; d++) {
                idx[0] = cg_i64(cg, (*slot)++);
                LLVMValueRef p = LLVMBuildGEP2(cg->b, cg->i64, base, idx, 1, "");
                arr = LLVMBuildInsertValue(cg->b, arr, LLVMBuildLoad2(cg->b, cg->i64, p, ""), (unsigned)d, "");
            }
            agg = LLVMBuildInsertValue(cg->b, agg, arr, (unsigned)field, "");
        }
        return agg;
    }
    case IR_TY_TUPLE: {
        LLVMValueRef agg = LLVMGetUndef(cg_type(cg, t));
        for (int i = 0; i < t->nelems; i++)
            agg = LLVMBuildInsertValue(cg->b, agg, load_slots(cg, t->elems[i], base, slot), (unsigned)i, "");
        return agg;
    }
    default: return LLVMConstNull(cg_type(cg, t));
    }
}

static void store_slots(Cg *cg, const IrType *t, LLVMValueRef v, LLVMValueRef base, int *slot)
{
    LLVMValueRef idx[1];
    switch (t->kind) {
    case IR_TY_SCALAR: {
        idx[0] = cg_i64(cg, (*slot)++);
        LLVMValueRef p = LLVMBuildGEP2(cg->b, cg->i64, base, idx, 1, "");
        if (ir_dtype_is_float(t->dtype)) {
            if (t->dtype == IR_DT_FLOAT32) v = LLVMBuildFPExt(cg->b, v, cg->f64, "");
        } else if (t->dtype == IR_DT_BOOL || !ir_dtype_is_signed(t->dtype)) {
            v = LLVMBuildZExtOrBitCast(cg->b, v, cg->i64, "");
        } else {
            v = LLVMBuildSExtOrBitCast(cg->b, v, cg->i64, "");
        }
        LLVMBuildStore(cg->b, v, p);
        return;
    }
    case IR_TY_ARRAY:
        for (int k = 0; k < 2; k++) {
            idx[0] = cg_i64(cg, (*slot)++);
            LLVMBuildStore(cg->b, LLVMBuildExtractValue(cg->b, v, (unsigned)k, ""), LLVMBuildGEP2(cg->b, cg->i64, base, idx, 1, ""));
        }
        for (int field = 2; field < 4; field++) {
            LLVMValueRef arr = LLVMBuildExtractValue(cg->b, v, (unsigned)field, "");
            for (int d = 0; d < t->ndim; d++) {
                idx[0] = cg_i64(cg, (*slot)++);
                LLVMBuildStore(cg->b, LLVMBuildExtractValue(cg->b, arr, (unsigned)d, ""), LLVMBuildGEP2(cg->b, cg->i64, base, idx, 1, ""));
            }
        }
        return;
    case IR_TY_TUPLE:
        for (int i = 0; i < t->nelems; i++) store_slots(cg, t->elems[i], LLVMBuildExtractValue(cg->b, v, (unsigned)i, ""), base, slot);
        return;
    default: return;
    }
}

static void emit_entry(Cg *cg, IrFunc *root, const char *entry_name)
{
    LLVMTypeRef params[3] = {cg->ptr, cg->ptr, cg->ptr};
    LLVMValueRef fn = LLVMAddFunction(cg->mod, entry_name, LLVMFunctionType(cg->i32, params, 3, 0));
    cg->fn = fn;
    cg->entry_bb = LLVMAppendBasicBlockInContext(cg->ctx, fn, "entry");
    LLVMPositionBuilderAtEnd(cg->b, cg->entry_bb);
    LLVMValueRef args[130];
    args[0] = LLVMGetParam(fn, 0);
    LLVMValueRef ret = LLVMBuildAlloca(cg->b, cg_type(cg, root->ret_type), "ret");
    args[1] = ret;
    int slot = 0;
    for (int i = 0; i < root->nparams; i++) args[2 + i] = load_slots(cg, root->params[i]->type, LLVMGetParam(fn, 1), &slot);
    LLVMValueRef status = LLVMBuildCall2(cg->b, func_type(cg, root), func_value(cg, root), args, (unsigned)(2 + root->nparams), "");
    LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(cg->ctx, fn, "ok"), bad = LLVMAppendBasicBlockInContext(cg->ctx, fn, "bad");
    LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntEQ, status, LLVMConstInt(cg->i32, 0, 0), ""), ok, bad);
    LLVMPositionBuilderAtEnd(cg->b, bad);
    LLVMBuildRet(cg->b, status);
    LLVMPositionBuilderAtEnd(cg->b, ok);
    slot = 0;
    store_slots(cg, root->ret_type, LLVMBuildLoad2(cg->b, cg_type(cg, root->ret_type), ret, ""), LLVMGetParam(fn, 2), &slot);
    LLVMBuildRet(cg->b, LLVMConstInt(cg->i32, 0, 0));
}

bool cg_emit_module(Cg *cg, IrFunc *root)
{
    int n = root->ncallees + 1;
    cg->funcs = rt_arena_alloc(root->arena, sizeof(IrFunc *) * (size_t)n);
    cg->func_values = rt_arena_alloc(root->arena, sizeof(LLVMValueRef) * (size_t)n);
    cg->funcs[0] = root;
    for (int i = 0; i < root->ncallees; i++) cg->funcs[i + 1] = root->callees[i];
    cg->nfuncs = n;
    for (int i = 0; i < n; i++) {
        if (cg->funcs[i]->nparams > 128) {
            lk_diag_set(cg->diag, LK_ERR_COMPILE, cg->funcs[i]->file, cg->funcs[i]->line, 0, "too many parameters");
            return false;
        }
        cg->func_values[i] = LLVMAddFunction(cg->mod, cg->funcs[i]->symbol, func_type(cg, cg->funcs[i]));
        if (i > 0) LLVMSetLinkage(cg->func_values[i], LLVMInternalLinkage);
    }
    LLVMSetLinkage(cg->func_values[0], LLVMInternalLinkage);
    for (int i = 0; i < n && cg->diag->kind == LK_OK; i++) emit_function(cg, cg->funcs[i]);
    if (cg->diag->kind != LK_OK) return false;
    char entry[200];
    snprintf(entry, sizeof entry, "%s.entry", root->symbol);
    emit_entry(cg, root, entry);
    return true;
}
