/* emit_stmt.c: functions, statements and expressions of the typed IR to LLVM IR, and the entry wrapper that
 * unpacks the shim's argument slots. Array work is delegated to emit_array.c and emit_reduce.c. */
#include <stdio.h>
#include <stdlib.h>
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

/* The error record (runtime.h's RtError, at the start of the context) filled in with stores: nothing is called,
 * so a chunk on another thread (or a kernel, in another backend) reports errors the same way. */
static void store_error(Cg *cg, RtErrCode code, IrPos pos, LLVMValueRef *extra, int nextra)
{
    LLVMTypeRef fields[5] = {cg->i32, cg->i32, cg->i32, cg->i32, LLVMArrayType(cg->i64, 3)};
    LLVMTypeRef rec = LLVMStructTypeInContext(cg->ctx, fields, 5, 0);
    int where = rt_names_index(cg->names, pos.file ? pos.file : cg->f->file);
    int32_t head[4] = {(int32_t)rt_err_kind(code), (int32_t)code, pos.line, where};
    for (unsigned i = 0; i < 4; i++)
        LLVMBuildStore(cg->b, LLVMConstInt(cg->i32, (unsigned long long)(int64_t)head[i], 1),
                       LLVMBuildStructGEP2(cg->b, rec, cg->rtctx, i, ""));
    for (int i = 0; i < nextra && i < 3; i++) {
        LLVMValueRef idx[3] = {LLVMConstInt(cg->i32, 0, 0), LLVMConstInt(cg->i32, 4, 0), LLVMConstInt(cg->i32, (unsigned)i, 0)};
        LLVMValueRef slot = LLVMBuildInBoundsGEP2(cg->b, rec, cg->rtctx, idx, 3, "");
        LLVMBuildStore(cg->b, LLVMBuildIntCast2(cg->b, extra[i], cg->i64, 1, ""), slot);
    }
    LLVMBuildBr(cg->b, cg->err_bb);
}

void cg_raise_if(Cg *cg, LLVMValueRef cond, RtErrCode code, IrPos pos, LLVMValueRef *extra, int nextra)
{
    LLVMValueRef expect_args[2] = {cond, LLVMConstInt(cg->i1, 0, 0)};
    cond = cg_call_intrinsic(cg, "llvm.expect", cg->i1, expect_args, 2);
    LLVMBasicBlockRef raise = cg_new_bb(cg, "raise"), ok = cg_new_bb(cg, "ok");
    LLVMBuildCondBr(cg->b, cond, raise, ok);
    LLVMPositionBuilderAtEnd(cg->b, raise);
    store_error(cg, code, pos, extra, nextra);
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
    int nv = n->u.boolop.n;
    LLVMValueRef *vals = rt_arena_alloc(cg->f->arena, sizeof *vals * (size_t)nv);
    LLVMBasicBlockRef *froms = rt_arena_alloc(cg->f->arena, sizeof *froms * (size_t)nv);
    int k = 0;
    for (int i = 0; i < nv; i++) {
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
    cg->cold += n->u.ifexp.versioned;
    LLVMValueRef vf = cg_expr(cg, n->u.ifexp.orelse);
    cg->cold -= n->u.ifexp.versioned;
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
    if (cg->gpu && n->region) return cg_gpu_region(cg, n); /* launched, not run here: gpu_launch.c */
    switch (n->kind) {
    case IR_CONST: return cg_const(cg, n);
    case IR_VAR:
        if (n->u.var.check_bound) {
            IrVar *v = n->u.var.var;
            LLVMValueRef set = LLVMBuildLoad2(cg->b, cg->i1, cg->bound_flags[v->id], "");
            LLVMValueRef name[1] = {cg_i64(cg, rt_names_index(cg->names, v->name))};
            cg_raise_if(cg, LLVMBuildNot(cg->b, set, ""), RT_ERR_UNBOUND, n->pos, name, 1);
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
        if (n->u.tuple.one_pass && !cg->gpu) return cg_reduce_siblings(cg, n); /* reductions in one loop */
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
    if (cg->gpu && s->u.if_.nest) { /* gpu_collect_kernels made kernels of the else arm only (ir.h's if_) */
        cg_block(cg, &s->u.if_.orelse);
        return;
    }
    LLVMValueRef c = cg_expr(cg, s->u.if_.cond);
    LLVMBasicBlockRef bt = cg_new_bb(cg, "then"), bf = cg_new_bb(cg, "else"), done = cg_new_bb(cg, "endif");
    LLVMBuildCondBr(cg->b, c, bt, bf);
    LLVMPositionBuilderAtEnd(cg->b, bt);
    cg_block(cg, &s->u.if_.then);
    if (!terminated(cg)) LLVMBuildBr(cg->b, done);
    LLVMPositionBuilderAtEnd(cg->b, bf);
    cg->cold += s->u.if_.versioned;
    cg_block(cg, &s->u.if_.orelse);
    cg->cold -= s->u.if_.versioned;
    if (!terminated(cg)) LLVMBuildBr(cg->b, done);
    LLVMPositionBuilderAtEnd(cg->b, done);
}

bool cg_push_loop(Cg *cg, LLVMBasicBlockRef brk, LLVMBasicBlockRef cont, IrPos pos)
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
    if (!cg_push_loop(cg, done, head, s->pos)) return;
    cg_block(cg, &s->u.while_.body);
    cg->loop_depth--;
    if (!terminated(cg)) {
        LLVMValueRef back = LLVMBuildBr(cg->b, head);
        if (cg->cold) cg_mark_loop(cg, back, false, false);
    }
    LLVMPositionBuilderAtEnd(cg->b, done);
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
        cg_raise_if(cg, LLVMBuildICmp(cg->b, LLVMIntEQ, step, LLVMConstNull(lt), ""), RT_ERR_VALUE, s->pos, extra, 1);
    } else if (step_value == 0) {
        LLVMValueRef extra[1] = {cg_i64(cg, RT_VAL_RANGE_STEP_ZERO)};
        cg_raise_if(cg, LLVMConstInt(cg->i1, 1, 0), RT_ERR_VALUE, s->pos, extra, 1);
    }
    if (cg_on_team(cg, s)) {
        cg_prange(cg, s, start, stop, step);
        return;
    }
    if (cg->gpu && s->region) {
        cg_gpu_prange(cg, s, start, stop, step);
        return;
    }
    cg_range_loop(cg, s, start, stop, step);
}

void cg_range_loop(Cg *cg, const IrNode *s, LLVMValueRef start, LLVMValueRef stop, LLVMValueRef step)
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
    if (!cg_push_loop(cg, done, latch, s->pos)) return;
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
    /* fastmath: the user allows reassociation, so a float accumulation loop may vectorise. A loop with checked
     * accesses is never runtime-unrolled (its raise exits prevent it); in the copy of a versioned loop
     * (ir/version_loops.c), unrolling measured no gain on top of vectorisation while it made a third of the
     * copy's compile time, so its loops are marked not to be. */
    cg_mark_loop(cg, back, cg->opts->fastmath, s->u.for_range.proven_copy);
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
    case IR_STORE:
        if (s->u.store.value->type->kind == IR_TY_ARRAY) cg_mask_store_values(cg, s->u.store.target, s->u.store.value);
        else cg_store(cg, s->u.store.target, cg_expr(cg, s->u.store.value));
        return;
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

/* ---- long runs of statements as functions of their own ----
 * LLVM's cost on straight-line code with a check per statement grows as the square of its length: every check
 * branches to a raise block, so N statements make a chain of N blocks each dominated by the one before, and
 * ValueTracking (isGuaranteedNotToBeUndefOrPoison, asked by InstCombine and CodeGenPrepare for each select and
 * freeze) walks the dominator tree to its root each time; the register allocator's interference queries grow
 * the same way (1,200 statements `v = a[i % n] * k + v`: 3.5 s, 2,400: 16 s, most of it in those two). So the
 * top level of a function longer than SEGMENT_MIN statements is cut into runs of about SEGMENT_STMTS statements,
 * each emitted into an internal function of its own, never inlined: `i32 seg(ptr rtctx, ptr slots)`, which
 * copies the variables the run uses from the caller's slots into its own (mem2reg sees plain locals), runs the
 * statements, and copies them back; its status is the caller's (an error record is filled in as anywhere). The
 * chain, and LLVM's work, is then linear in the number of runs. A run holds only statements whose variables are
 * all named by its nodes, so that the copies are exact: no data-parallel node, lambda or comprehension (their
 * element code has variables of its own that only the region's uses list names), no prange loop, and nothing
 * that leaves the run (return, break, continue). Other statements are emitted in the function itself, between
 * runs. What a statement computes does not change; only which LLVM function holds its code. */
#define SEGMENT_MIN 256
#define SEGMENT_STMTS 64

typedef struct SegScan {
    const IrFunc *f;
    bool *used;    /* by variable id: named by the run's nodes */
    int *added;    /* the ids this statement added to used (taken out again when it cannot join the run) */
    int nadded;
    bool ok;       /* every node is of a kind the copies cover */
    int stmts;     /* statements, nested ones included */
} SegScan;

static void seg_var(SegScan *sc, const IrVar *v)
{
    if (!v || v->id < 0 || v->id >= sc->f->nvars || sc->f->vars[v->id] != v) {
        sc->ok = false; /* not a variable of this function: leave the statement to the function itself */
        return;
    }
    if (!sc->used[v->id]) {
        sc->used[v->id] = true;
        sc->added[sc->nadded++] = v->id;
    }
}

static void count_stmt(IrNode *s, void *env)
{
    (void)s;
    (*(int *)env)++;
}

static void seg_node(IrNode **p, void *env);

static void seg_block(SegScan *sc, IrBlock *b)
{
    for (int i = 0; i < b->n && sc->ok; i++) seg_node(&b->stmts[i], sc);
}

static void seg_node(IrNode **p, void *env)
{
    SegScan *sc = env;
    IrNode *n = *p;
    if (!sc->ok) return;
    switch (n->kind) {
    case IR_VAR: seg_var(sc, n->u.var.var); break;
    case IR_ASSIGN: seg_var(sc, n->u.assign.var); sc->stmts++; break;
    case IR_FOR_RANGE:
        if (n->u.for_range.parallel) sc->ok = false;
        else seg_var(sc, n->u.for_range.var);
        sc->stmts++;
        break;
    case IR_STORE: case IR_IF: case IR_WHILE: case IR_EXPR_STMT: case IR_PASS: sc->stmts++; break;
    case IR_CONST: case IR_BINOP: case IR_UNOP: case IR_COMPARE: case IR_BOOLOP: case IR_IFEXP: case IR_CALL:
    case IR_INDEX: case IR_SLICE: case IR_ATTR: case IR_TUPLE: case IR_TUPLE_GET: case IR_CAST: case IR_MATH:
    case IR_ARRAY_DIM: case IR_ALLOC: case IR_BCAST_SHAPE:
        break;
    /* element code with variables of its own, a loop run by the team, and what leaves the run */
    case IR_MAP: case IR_IMAP: case IR_REDUCE: case IR_SCAN: case IR_LAMBDA: case IR_COMPREHENSION:
    case IR_BREAK: case IR_CONTINUE: case IR_RETURN:
    /* untyped IR only */
    case IR_NAMEREF: case IR_AUGASSIGN: case IR_FOR_ITER: case IR_KIND_COUNT:
        sc->ok = false;
        return;
    }
    ir_each_child(n, seg_node, sc);
    IrBlock *blocks[2];
    int nb = ir_stmt_blocks(n, blocks);
    for (int k = 0; k < nb; k++) seg_block(sc, blocks[k]);
}

/* The variables of a function cut into segments live in one struct, its frame, so that a segment needs only
 * the frame's address (a table of the slots' addresses, filled where the function starts, would be thousands of
 * stores in one block: the machine scheduler's cost grows as their square). index[v] is variable v's field
 * (-1: v has no type), its bound flag, if any, the next one. */
typedef struct SegFrame {
    LLVMValueRef frame;
    LLVMTypeRef type;
    int *index;
} SegFrame;

static bool long_body(IrFunc *f)
{
    int total = 0;
    ir_each_stmt(&f->body, count_stmt, &total);
    return total >= SEGMENT_MIN;
}

/* The frame, in the entry block (the builder there), with cg->var_slots and cg->bound_flags its fields. */
static void seg_frame(Cg *cg, SegFrame *fr)
{
    IrFunc *f = cg->f;
    fr->index = rt_arena_alloc(f->arena, sizeof(int) * (size_t)(f->nvars + 1));
    LLVMTypeRef *fields = rt_arena_alloc(f->arena, sizeof(LLVMTypeRef) * 2 * (size_t)(f->nvars + 1));
    int n = 0;
    for (int v = 0; v < f->nvars; v++) {
        fr->index[v] = -1;
        if (!f->vars[v]->type) continue;
        fr->index[v] = n;
        fields[n++] = cg_type(cg, f->vars[v]->type);
        if (f->vars[v]->maybe_unbound) fields[n++] = cg->i1;
    }
    fr->type = LLVMStructTypeInContext(cg->ctx, fields, (unsigned)n, 0);
    fr->frame = LLVMBuildAlloca(cg->b, fr->type, "frame");
    for (int v = 0; v < f->nvars; v++) {
        if (fr->index[v] < 0) continue;
        cg->var_slots[v] = LLVMBuildStructGEP2(cg->b, fr->type, fr->frame, (unsigned)fr->index[v], f->vars[v]->name);
        if (f->vars[v]->maybe_unbound) {
            cg->bound_flags[v] = LLVMBuildStructGEP2(cg->b, fr->type, fr->frame, (unsigned)fr->index[v] + 1, "assigned");
            LLVMBuildStore(cg->b, LLVMConstInt(cg->i1, 0, 0), cg->bound_flags[v]);
        }
    }
}

/* Emits stmts [lo, hi) of the top level as one segment function, called here. */
static void emit_segment(Cg *cg, const SegFrame *t, IrNode **stmts, int lo, int hi, const bool *used)
{
    IrFunc *f = cg->f;
    LLVMTypeRef params[2] = {cg->ptr, cg->ptr};
    LLVMTypeRef fty = LLVMFunctionType(cg->i32, params, 2, 0);
    char name[96];
    snprintf(name, sizeof name, "%s.seg", f->symbol); /* internal; LLVM numbers repeats in emission order */
    LLVMValueRef seg = LLVMAddFunction(cg->mod, name, fty);
    LLVMSetLinkage(seg, LLVMInternalLinkage);
    unsigned noinline = LLVMGetEnumAttributeKindForName("noinline", 8);
    LLVMAddAttributeAtIndex(seg, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(cg->ctx, noinline, 0));
    LLVMValueRef args[2] = {cg->rtctx, t->frame};
    cg_check_status(cg, LLVMBuildCall2(cg->b, fty, seg, args, 2, ""));
    LLVMBasicBlockRef p_block = LLVMGetInsertBlock(cg->b), p_entry = cg->entry_bb, p_err = cg->err_bb;
    LLVMValueRef p_fn = cg->fn, p_rtctx = cg->rtctx, *p_slots = cg->var_slots, *p_flags = cg->bound_flags;

    /* the segment: slots of its own for the variables it uses, filled from the caller's */
    cg->fn = seg;
    cg->entry_bb = LLVMAppendBasicBlockInContext(cg->ctx, seg, "entry");
    cg->err_bb = LLVMAppendBasicBlockInContext(cg->ctx, seg, "error");
    LLVMPositionBuilderAtEnd(cg->b, cg->err_bb);
    LLVMBuildRet(cg->b, LLVMConstInt(cg->i32, 1, 0));
    LLVMPositionBuilderAtEnd(cg->b, cg->entry_bb);
    cg->rtctx = LLVMGetParam(seg, 0);
    LLVMValueRef caller = LLVMGetParam(seg, 1);
    cg->var_slots = rt_arena_alloc(f->arena, sizeof(LLVMValueRef) * (size_t)(f->nvars + 1));
    cg->bound_flags = rt_arena_alloc(f->arena, sizeof(LLVMValueRef) * (size_t)(f->nvars + 1));
    LLVMValueRef *theirs = rt_arena_alloc(f->arena, sizeof(LLVMValueRef) * 2 * (size_t)(f->nvars + 1));
    for (int v = 0; v < f->nvars; v++) {
        if (!used[v] || t->index[v] < 0) continue;
        LLVMTypeRef ty = cg_type(cg, f->vars[v]->type);
        theirs[2 * v] = LLVMBuildStructGEP2(cg->b, t->type, caller, (unsigned)t->index[v], "");
        cg->var_slots[v] = LLVMBuildAlloca(cg->b, ty, f->vars[v]->name);
        LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, ty, theirs[2 * v], ""), cg->var_slots[v]);
        if (f->vars[v]->maybe_unbound) {
            theirs[2 * v + 1] = LLVMBuildStructGEP2(cg->b, t->type, caller, (unsigned)t->index[v] + 1, "");
            cg->bound_flags[v] = LLVMBuildAlloca(cg->b, cg->i1, "assigned");
            LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, cg->i1, theirs[2 * v + 1], ""), cg->bound_flags[v]);
        }
    }
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(cg->ctx, seg, "body");
    LLVMBuildBr(cg->b, body);
    LLVMPositionBuilderAtEnd(cg->b, body);
    for (int i = lo; i < hi && cg->diag->kind == LK_OK; i++) cg_stmt(cg, stmts[i]);
    if (!terminated(cg)) {
        /* the variables back to the caller (an error leaves the function: they need not go back then) */
        for (int v = 0; v < f->nvars; v++) {
            if (!used[v] || t->index[v] < 0) continue;
            LLVMTypeRef ty = cg_type(cg, f->vars[v]->type);
            LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, ty, cg->var_slots[v], ""), theirs[2 * v]);
            if (f->vars[v]->maybe_unbound)
                LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, cg->i1, cg->bound_flags[v], ""), theirs[2 * v + 1]);
        }
        LLVMBuildRet(cg->b, LLVMConstInt(cg->i32, 0, 0));
    }

    /* back to the caller */
    cg->fn = p_fn;
    cg->entry_bb = p_entry;
    cg->err_bb = p_err;
    cg->rtctx = p_rtctx;
    cg->var_slots = p_slots;
    cg->bound_flags = p_flags;
    LLVMPositionBuilderAtEnd(cg->b, p_block);
}

/* The top level of a function: runs of statements as segments (above) when it is long, else as it is. */
static void cg_body(Cg *cg, IrBlock *b, const SegFrame *frame)
{
    IrFunc *f = cg->f;
    if (!frame) {
        cg_block(cg, b);
        return;
    }
    bool *used = calloc((size_t)f->nvars + 1, sizeof *used);
    int *added = calloc((size_t)f->nvars + 1, sizeof *added);
    if (!used || !added) rt_out_of_memory((sizeof *used + sizeof *added) * ((size_t)f->nvars + 1));
    int i = 0;
    while (i < b->n && cg->diag->kind == LK_OK && !terminated(cg)) {
        int lo = i, stmts = 0;
        memset(used, 0, (size_t)f->nvars + 1);
        while (i < b->n && stmts < SEGMENT_STMTS) {
            SegScan sc = {.f = f, .used = used, .added = added, .ok = true};
            seg_node(&b->stmts[i], &sc);
            if (!sc.ok) {
                for (int k = 0; k < sc.nadded; k++) used[added[k]] = false;
                break;
            }
            stmts += sc.stmts;
            i++;
        }
        if (i - lo >= 2) emit_segment(cg, frame, b->stmts, lo, i, used);
        else if (i > lo) cg_stmt(cg, b->stmts[lo]);
        if (i < b->n && i == lo) cg_stmt(cg, b->stmts[i++]); /* one the segments cannot hold */
    }
    free(used);
    free(added);
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
    cg->var_slots = rt_arena_alloc(f->arena, sizeof(LLVMValueRef) * (size_t)(f->nvars + 1));
    cg->bound_flags = rt_arena_alloc(f->arena, sizeof(LLVMValueRef) * (size_t)(f->nvars + 1));
    SegFrame frame = {0};
    bool segmented = long_body(f);
    if (segmented) seg_frame(cg, &frame);
    for (int i = 0; i < f->nvars && !segmented; i++) {
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
    cg_body(cg, &f->body, segmented ? &frame : NULL);
    /* falling off the end returns None (typespec guarantees this only happens for None-returning functions) */
    if (!terminated(cg)) LLVMBuildRet(cg->b, LLVMConstInt(cg->i32, 0, 0));
}

/* ---- the entry wrapper: slots in, slots out ---- */

static LLVMValueRef load_slots(Cg *cg, const IrType *t, LLVMValueRef base, int *slot)
{
    LLVMValueRef idx[1];
    switch (t->kind) {
    case IR_TY_SCALAR: {
        if (ir_dtype_is_complex(t->dtype)) { /* two slots, each part as a double */
            IrType *part = ir_type_scalar(ir_complex_part(t->dtype));
            LLVMValueRef re = load_slots(cg, part, base, slot), im = load_slots(cg, part, base, slot);
            return cg_complex_make(cg, t->dtype, re, im);
        }
        idx[0] = cg_i64(cg, (*slot)++);
        LLVMValueRef p = LLVMBuildGEP2(cg->b, cg->i64, base, idx, 1, "");
        if (ir_dtype_is_float(t->dtype)) {
            LLVMValueRef d = LLVMBuildLoad2(cg->b, cg->f64, p, "");
            return t->dtype == IR_DT_FLOAT64 ? d : LLVMBuildFPTrunc(cg->b, d, cg_type(cg, t), ""); /* exact */
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
    case IR_TY_RNG: { /* its RtRng is the slots themselves: the call's draws update them in place */
        idx[0] = cg_i64(cg, *slot);
        *slot += ir_abi_slots(t);
        return LLVMBuildGEP2(cg->b, cg->i64, base, idx, 1, "");
    }
    default: return LLVMConstNull(cg_type(cg, t));
    }
}

static void store_slots(Cg *cg, const IrType *t, LLVMValueRef v, LLVMValueRef base, int *slot)
{
    LLVMValueRef idx[1];
    switch (t->kind) {
    case IR_TY_SCALAR: {
        if (ir_dtype_is_complex(t->dtype)) {
            IrType *part = ir_type_scalar(ir_complex_part(t->dtype));
            store_slots(cg, part, cg_complex_part(cg, v, 0), base, slot);
            store_slots(cg, part, cg_complex_part(cg, v, 1), base, slot);
            return;
        }
        idx[0] = cg_i64(cg, (*slot)++);
        LLVMValueRef p = LLVMBuildGEP2(cg->b, cg->i64, base, idx, 1, "");
        if (ir_dtype_is_float(t->dtype)) {
            if (t->dtype != IR_DT_FLOAT64) v = LLVMBuildFPExt(cg->b, v, cg->f64, "");
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
