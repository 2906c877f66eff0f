/* emit_reduce.c: IR_REDUCE and IR_SCAN in LLVM IR. Both run the loops of a map (emit_array.c; an array input
 * is reduced as the identity map over it, so a map input is fused) with a sink that accumulates instead of
 * storing: here are those sinks, the identities and combines of the built-in operations, the user's combine,
 * and, for the openmp backend, the per-thread partial results and the two-pass scan.
 *
 * A user's combine has no identity: wherever nothing has been accumulated yet a started flag says so, and the
 * combine (user code, which may raise) runs only on values that exist. */
#include <string.h>
#include "cg.h"

static LLVMValueRef red_identity(Cg *cg, IrReduceOp op, IrDtype dt)
{
    LLVMTypeRef t = cg_type(cg, ir_type_scalar(dt));
    bool fl = ir_dtype_is_float(dt), sg = ir_dtype_is_signed(dt);
    int bits = ir_dtype_bits(dt);
    switch (op) {
    case IR_RED_ADD: case IR_RED_OR: return LLVMConstNull(t);
    case IR_RED_MUL: return fl ? LLVMConstReal(t, 1.0) : LLVMConstInt(t, 1, 0);
    case IR_RED_AND: return LLVMConstAllOnes(t);
    case IR_RED_MIN:
        if (fl) return LLVMConstReal(t, __builtin_inf());
        if (dt == IR_DT_BOOL) return LLVMConstInt(t, 1, 0);
        return sg ? LLVMConstInt(t, (~0ULL) >> (65 - bits), 0) : LLVMConstAllOnes(t);
    case IR_RED_MAX:
        if (fl) return LLVMConstReal(t, -__builtin_inf());
        if (dt == IR_DT_BOOL) return LLVMConstNull(t);
        return sg ? LLVMConstInt(t, 1ULL << (bits - 1), 0) : LLVMConstNull(t);
    case IR_RED_ARGMIN: return red_identity(cg, IR_RED_MIN, dt);
    case IR_RED_ARGMAX: return red_identity(cg, IR_RED_MAX, dt);
    case IR_RED_NANMIN: case IR_RED_NANMAX: return fl ? LLVMConstReal(t, __builtin_nan("")) : red_identity(cg, op == IR_RED_NANMIN ? IR_RED_MIN : IR_RED_MAX, dt);
    case IR_RED_FUNC: break; /* no identity: init, or the first element */
    }
    return LLVMConstNull(t);
}

static LLVMValueRef red_combine(Cg *cg, IrReduceOp op, IrDtype dt, LLVMValueRef a, LLVMValueRef x)
{
    IrNode fake = {.kind = IR_BINOP};
    IrNode operand = {.type = ir_type_scalar(dt)};
    fake.u.binop.lhs = &operand;
    switch (op) {
    case IR_RED_ADD: fake.u.binop.op = dt == IR_DT_BOOL ? IR_OP_BITOR : IR_OP_ADD; break;
    case IR_RED_MUL: fake.u.binop.op = dt == IR_DT_BOOL ? IR_OP_BITAND : IR_OP_MUL; break;
    case IR_RED_MIN: fake.u.binop.op = IR_OP_MIN; break;
    case IR_RED_MAX: fake.u.binop.op = IR_OP_MAX; break;
    case IR_RED_AND: return LLVMBuildAnd(cg->b, a, x, "");
    case IR_RED_OR: return LLVMBuildOr(cg->b, a, x, "");
    case IR_RED_NANMIN: case IR_RED_NANMAX: {
        if (!ir_dtype_is_float(dt)) {
            fake.u.binop.op = op == IR_RED_NANMIN ? IR_OP_MIN : IR_OP_MAX;
            break;
        }
        LLVMValueRef args[2] = {a, x};
        return cg_call_intrinsic(cg, op == IR_RED_NANMIN ? "llvm.minnum" : "llvm.maxnum", LLVMTypeOf(a), args, 2);
    }
    case IR_RED_ARGMIN: case IR_RED_ARGMAX: case IR_RED_FUNC: return a; /* handled by the sinks */
    }
    return cg_binop(cg, &fake, a, x);
}

/* The user's combine applied to (a, x): the params take the values, the body is evaluated. */
static LLVMValueRef apply_combine(Cg *cg, const IrCombine *c, LLVMValueRef a, LLVMValueRef x)
{
    LLVMBuildStore(cg->b, a, cg->var_slots[c->acc_param->id]);
    LLVMBuildStore(cg->b, x, cg->var_slots[c->elem_param->id]);
    return cg_expr(cg, c->body);
}

/* Whether the user's combine can merge two partial results: on the team, one thread's result becomes fn's
 * element argument, so the accumulator must have the elements' type. An init of a wider type (a float init
 * over ints) makes fn's body typed for (float, int) only, and such a combine stays on one thread. */
static bool combine_takes_partials(const IrCombine *c)
{
    return c->acc_param->type->dtype == c->elem_param->type->dtype;
}

static LLVMValueRef combine(Cg *cg, CgMap *m, IrDtype dt, LLVMValueRef a, LLVMValueRef x)
{
    if (m->red_op == IR_RED_FUNC) return apply_combine(cg, m->combine, a, x);
    return red_combine(cg, m->red_op, dt, a, x);
}

/* acc = started ? combine(acc, v) : v (started set); with init, always combine. The combine runs only when
 * there is an accumulated value: it is user code and may raise. */
static void accumulate_first_or_combine(Cg *cg, CgMap *m, LLVMValueRef acc_ptr, LLVMTypeRef t, LLVMValueRef v)
{
    if (!m->started) {
        LLVMBuildStore(cg->b, apply_combine(cg, m->combine, LLVMBuildLoad2(cg->b, t, acc_ptr, ""), v), acc_ptr);
        return;
    }
    LLVMValueRef started = LLVMBuildLoad2(cg->b, cg->i1, m->started, "");
    LLVMBasicBlockRef comb = cg_new_bb(cg, "combine"), first = cg_new_bb(cg, "first"), done = cg_new_bb(cg, "combined");
    LLVMBuildCondBr(cg->b, started, comb, first);
    LLVMPositionBuilderAtEnd(cg->b, comb);
    LLVMBuildStore(cg->b, apply_combine(cg, m->combine, LLVMBuildLoad2(cg->b, t, acc_ptr, ""), v), acc_ptr);
    LLVMBuildBr(cg->b, done);
    LLVMPositionBuilderAtEnd(cg->b, first);
    LLVMBuildStore(cg->b, v, acc_ptr);
    LLVMBuildStore(cg->b, LLVMConstInt(cg->i1, 1, 0), m->started);
    LLVMBuildBr(cg->b, done);
    LLVMPositionBuilderAtEnd(cg->b, done);
}

/* argmax: x beats best if greater, or if it is the first NaN; argmin likewise with less. */
static LLVMValueRef arg_better(Cg *cg, IrReduceOp op, IrDtype dt, LLVMValueRef x, LLVMValueRef best)
{
    LLVMValueRef beats = cg_compare(cg, op == IR_RED_ARGMAX ? IR_CMP_GT : IR_CMP_LT, dt, x, best);
    if (!ir_dtype_is_float(dt)) return beats;
    LLVMValueRef x_nan = LLVMBuildFCmp(cg->b, LLVMRealUNO, x, x, "");
    LLVMValueRef best_num = LLVMBuildFCmp(cg->b, LLVMRealORD, best, best, "");
    return LLVMBuildOr(cg->b, beats, LLVMBuildAnd(cg->b, x_nan, best_num, ""), "");
}

/* Along an axis with the user's combine: the first element of each line is taken as it is. */
static void axis_first_or_combine(Cg *cg, CgMap *m, LLVMValueRef first, LLVMValueRef prev_ptr, LLVMValueRef out_ptr,
                                  LLVMValueRef v)
{
    IrDtype dt = m->out_type->dtype;
    LLVMBasicBlockRef comb = cg_new_bb(cg, "combine"), take = cg_new_bb(cg, "first"), done = cg_new_bb(cg, "combined");
    LLVMBuildCondBr(cg->b, first, take, comb);
    LLVMPositionBuilderAtEnd(cg->b, comb);
    cg_store_elem(cg, dt, out_ptr, apply_combine(cg, m->combine, cg_load_elem(cg, dt, prev_ptr), v));
    LLVMBuildBr(cg->b, done);
    LLVMPositionBuilderAtEnd(cg->b, take);
    cg_store_elem(cg, dt, out_ptr, v);
    LLVMBuildBr(cg->b, done);
    LLVMPositionBuilderAtEnd(cg->b, done);
}

/* The accumulating sinks: every kind but CG_SINK_STORE, which is emit_array.c's. */
void cg_reduce_sink(Cg *cg, CgMap *m, LLVMValueRef v, LLVMValueRef flat, LLVMValueRef *idx)
{
    IrDtype in_dt = m->map->u.map.body->type->dtype;
    switch (m->sink) {
    case CG_SINK_SCAN_ALL: {
        /* flattened: a running total written to consecutive elements of the 1-D output */
        LLVMValueRef lin = flat;
        if (!lin) {
            lin = idx[0];
            for (int d = 1; d < m->ndim; d++) lin = LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, lin, m->dims[d], ""), idx[d], "");
        }
        LLVMValueRef r;
        if (m->red_op == IR_RED_FUNC) {
            accumulate_first_or_combine(cg, m, m->acc, cg_type(cg, ir_type_scalar(m->out_type->dtype)), v);
            r = LLVMBuildLoad2(cg->b, cg_type(cg, ir_type_scalar(m->out_type->dtype)), m->acc, "");
        } else {
            LLVMValueRef a = LLVMBuildLoad2(cg->b, LLVMTypeOf(v), m->acc, "");
            r = red_combine(cg, m->red_op, in_dt, a, v);
            LLVMBuildStore(cg->b, r, m->acc);
        }
        cg_store_elem(cg, m->out_type->dtype, cg_elem_ptr(cg, m->out_type, m->out, &lin), r);
        return;
    }
    case CG_SINK_SCAN_AXIS: {
        /* out[idx] = out[idx - 1 along the axis] op x, or x at the axis's start */
        const IrType *ot = m->out_type;
        LLVMValueRef first = LLVMBuildICmp(cg->b, LLVMIntEQ, idx[m->red_axis], cg_i64(cg, 0), "");
        LLVMValueRef pidx[CG_MAX_DIMS];
        for (int d = 0; d < m->ndim; d++) pidx[d] = idx[d];
        pidx[m->red_axis] = LLVMBuildSelect(cg->b, first, cg_i64(cg, 0), LLVMBuildSub(cg->b, idx[m->red_axis], cg_i64(cg, 1), ""), "");
        if (m->red_op == IR_RED_FUNC && m->combine->init) {
            /* each line starts from init: out[first] = f(init, x) */
            LLVMValueRef prev = cg_load_elem(cg, ot->dtype, cg_elem_ptr(cg, ot, m->out, pidx));
            prev = LLVMBuildSelect(cg->b, first, cg_expr(cg, m->combine->init), prev, "");
            cg_store_elem(cg, ot->dtype, cg_elem_ptr(cg, ot, m->out, idx), apply_combine(cg, m->combine, prev, v));
            return;
        }
        if (m->red_op == IR_RED_FUNC) {
            axis_first_or_combine(cg, m, first, cg_elem_ptr(cg, ot, m->out, pidx), cg_elem_ptr(cg, ot, m->out, idx), v);
            return;
        }
        LLVMValueRef prev = cg_load_elem(cg, ot->dtype, cg_elem_ptr(cg, ot, m->out, pidx));
        prev = LLVMBuildSelect(cg->b, first, red_identity(cg, m->red_op, ot->dtype), prev, "");
        cg_store_elem(cg, ot->dtype, cg_elem_ptr(cg, ot, m->out, idx), red_combine(cg, m->red_op, ot->dtype, prev, v));
        return;
    }
    case CG_SINK_ARG_ALL: {
        LLVMValueRef lin = flat;
        if (!lin) {
            lin = idx[0];
            for (int d = 1; d < m->ndim; d++) lin = LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, lin, m->dims[d], ""), idx[d], "");
        }
        LLVMValueRef best = LLVMBuildLoad2(cg->b, LLVMTypeOf(v), m->acc, "");
        LLVMValueRef better = arg_better(cg, m->red_op, in_dt, v, best);
        LLVMBuildStore(cg->b, LLVMBuildSelect(cg->b, better, v, best, ""), m->acc);
        LLVMValueRef bi = LLVMBuildLoad2(cg->b, cg->i64, m->arg_index, "");
        LLVMBuildStore(cg->b, LLVMBuildSelect(cg->b, better, lin, bi, ""), m->arg_index);
        return;
    }
    case CG_SINK_ARG_AXIS: {
        LLVMValueRef oidx[CG_MAX_DIMS];
        int o = 0;
        for (int d = 0; d < m->ndim; d++)
            if (d != m->red_axis) oidx[o++] = idx[d];
        const IrType *bt = ir_type_array(in_dt, o, IR_LAYOUT_C);
        LLVMValueRef bp = cg_elem_ptr(cg, bt, m->best, oidx);
        LLVMValueRef best = cg_load_elem(cg, in_dt, bp);
        LLVMValueRef better = arg_better(cg, m->red_op, in_dt, v, best);
        cg_store_elem(cg, in_dt, bp, LLVMBuildSelect(cg->b, better, v, best, ""));
        LLVMValueRef op = cg_elem_ptr(cg, m->out_type, m->out, oidx);
        LLVMValueRef cur = cg_load_elem(cg, IR_DT_INT64, op);
        cg_store_elem(cg, IR_DT_INT64, op, LLVMBuildSelect(cg->b, better, idx[m->red_axis], cur, ""));
        return;
    }
    case CG_SINK_STORE:
        return;
    case CG_SINK_REDUCE_ALL: {
        if (m->red_op == IR_RED_FUNC) {
            accumulate_first_or_combine(cg, m, m->acc, cg_type(cg, m->combine->acc_param->type), v);
            return;
        }
        LLVMValueRef a = LLVMBuildLoad2(cg->b, LLVMTypeOf(v), m->acc, "");
        LLVMBuildStore(cg->b, red_combine(cg, m->red_op, m->map->u.map.body->type->dtype, a, v), m->acc);
        return;
    }
    case CG_SINK_REDUCE_AXIS: {
        LLVMValueRef oidx[CG_MAX_DIMS];
        int o = 0;
        for (int d = 0; d < m->ndim; d++)
            if (d != m->red_axis) oidx[o++] = idx[d];
        const IrType *ot = m->out_type;
        LLVMValueRef p = cg_elem_ptr(cg, ot, m->out, oidx);
        if (m->red_op == IR_RED_FUNC && !m->combine->init) {
            LLVMValueRef first = LLVMBuildICmp(cg->b, LLVMIntEQ, idx[m->red_axis], cg_i64(cg, 0), "");
            axis_first_or_combine(cg, m, first, p, p, v);
            return;
        }
        LLVMValueRef a = cg_load_elem(cg, ot->dtype, p);
        cg_store_elem(cg, ot->dtype, p, combine(cg, m, ot->dtype, a, v));
        return;
    }
    }
}

/* Each thread runs its chunk of m from the identity and leaves its accumulator in partials[tid] (an array of
 * RT_MAX_THREADS accumulators in the enclosing function, filled with the identity first, so slots of threads
 * that did not run hold it), and, where lo and hi are given (arrays like partials, zeroed), the rows of its
 * chunk. Shared by reductions and the first pass of scans. */
static void partials_on_team(Cg *cg, CgMap *m, IrDtype dt, LLVMValueRef partials, LLVMValueRef lo, LLVMValueRef hi,
                             LLVMValueRef work, bool vectorize)
{
    LLVMTypeRef et = cg_type(cg, ir_type_scalar(dt)), pt = LLVMArrayType(et, RT_MAX_THREADS);
    LLVMValueRef ident = red_identity(cg, m->red_op, dt);
    for (int t = 0; t < RT_MAX_THREADS; t++) {
        LLVMValueRef idx[2] = {cg_i64(cg, 0), cg_i64(cg, t)};
        LLVMBuildStore(cg->b, ident, LLVMBuildGEP2(cg->b, pt, partials, idx, 2, ""));
    }
    CgOutline o = {0};
    CgMapCaps c;
    cg_map_capture(&o, m, &c);
    int cpart = cg_capture(&o, partials), clo = lo ? cg_capture(&o, lo) : -1, chi = hi ? cg_capture(&o, hi) : -1;
    LLVMValueRef rows = m->dims[0];
    IrNode *exprs[1] = {m->map->u.map.body};
    cg_outline_begin(cg, &o, exprs, 1, NULL);
    cg->par_depth++;
    CgMap mine = *m;
    cg_map_restore(&o, &mine, &c);
    mine.acc = cg_alloca(cg, et, "acc");
    LLVMBuildStore(cg->b, red_identity(cg, m->red_op, dt), mine.acc);
    cg_map_run_chunk(cg, &mine, true, o.lo, o.hi, vectorize);
    LLVMValueRef idx[2] = {cg_i64(cg, 0), LLVMBuildZExt(cg->b, o.tid, cg->i64, "")};
    LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, et, mine.acc, ""), LLVMBuildGEP2(cg->b, pt, cg_outline_get(&o, cpart), idx, 2, ""));
    LLVMTypeRef rt = LLVMArrayType(cg->i64, RT_MAX_THREADS);
    if (clo >= 0) LLVMBuildStore(cg->b, o.lo, LLVMBuildGEP2(cg->b, rt, cg_outline_get(&o, clo), idx, 2, ""));
    if (chi >= 0) LLVMBuildStore(cg->b, o.hi, LLVMBuildGEP2(cg->b, rt, cg_outline_get(&o, chi), idx, 2, ""));
    cg->par_depth--;
    cg_outline_end(cg, &o, rows, work);
}

/* A reduction of everything on the team: each thread reduces its rows into its slot of partials, and the
 * slots are combined in thread order afterwards (so the grouping changes, the order of elements does not). */
static LLVMValueRef reduce_on_team(Cg *cg, CgMap *m, IrDtype dt)
{
    LLVMTypeRef et = cg_type(cg, ir_type_scalar(dt));
    LLVMTypeRef pt = LLVMArrayType(et, RT_MAX_THREADS);
    LLVMValueRef work0 = cg_map_work(cg, m, m->map->u.map.body);
    LLVMBasicBlockRef par = cg_new_bb(cg, "reduce_team"), seq = cg_new_bb(cg, "reduce_alone"), joined = cg_new_bb(cg, "reduce_joined");
    LLVMBuildCondBr(cg->b, cg_worth_a_team(cg, work0), par, seq);
    LLVMPositionBuilderAtEnd(cg->b, seq);
    LLVMBuildStore(cg->b, red_identity(cg, m->red_op, dt), m->acc);
    cg_map_run(cg, m, true, true);
    LLVMBuildBr(cg->b, joined);
    LLVMPositionBuilderAtEnd(cg->b, par);
    LLVMValueRef partials = cg_alloca(cg, pt, "partials");
    LLVMValueRef ident = red_identity(cg, m->red_op, dt);
    partials_on_team(cg, m, dt, partials, NULL, NULL, work0, true);
    LLVMValueRef acc = ident;
    for (int t = 0; t < RT_MAX_THREADS; t++) {
        LLVMValueRef i2[2] = {cg_i64(cg, 0), cg_i64(cg, t)};
        acc = red_combine(cg, m->red_op, dt, acc, LLVMBuildLoad2(cg->b, et, LLVMBuildGEP2(cg->b, pt, partials, i2, 2, ""), ""));
    }
    LLVMBuildStore(cg->b, acc, m->acc);
    LLVMBuildBr(cg->b, joined);
    LLVMPositionBuilderAtEnd(cg->b, joined);
    return LLVMBuildLoad2(cg->b, et, m->acc, "");
}

/* A loop t = 0 .. RT_MAX_THREADS-1 in the enclosing function (over partial results), calling body(&t). */
static void over_partials(Cg *cg, CgLoopBody body, void *env)
{
    LLVMValueRef dims[1] = {cg_i64(cg, RT_MAX_THREADS)};
    cg_loop_nest(cg, 1, dims, body, env, false);
}

typedef struct Partials {
    CgMap *m;
    IrDtype dt;
    LLVMTypeRef vt;                   /* the accumulated value's type */
    LLVMValueRef values, flags, idx;  /* [RT_MAX_THREADS] arrays in the enclosing function */
    LLVMValueRef lo, hi;              /* ... and, for a scan, the rows each thread's chunk covered */
    LLVMValueRef acc, have, best_idx; /* the combination, as allocas */
    LLVMValueRef carry, carry_have;   /* a scan: [RT_MAX_THREADS], what each chunk starts from (if anything) */
    LLVMValueRef nchunks;             /* ... and how many chunks the first pass ran, an alloca */
} Partials;

static LLVMValueRef slot(Cg *cg, LLVMTypeRef et, LLVMValueRef arr, LLVMValueRef t)
{
    LLVMValueRef idx[2] = {cg_i64(cg, 0), t};
    return LLVMBuildGEP2(cg->b, LLVMArrayType(et, RT_MAX_THREADS), arr, idx, 2, "");
}

static void init_partial(Cg *cg, LLVMValueRef *t, void *env)
{
    Partials *p = env;
    LLVMBuildStore(cg->b, LLVMConstNull(p->vt), slot(cg, p->vt, p->values, t[0]));
    if (p->flags) LLVMBuildStore(cg->b, LLVMConstInt(cg->i1, 0, 0), slot(cg, cg->i1, p->flags, t[0]));
    if (p->idx) LLVMBuildStore(cg->b, cg_i64(cg, 0), slot(cg, cg->i64, p->idx, t[0]));
    if (p->lo) LLVMBuildStore(cg->b, cg_i64(cg, 0), slot(cg, cg->i64, p->lo, t[0]));
    if (p->hi) LLVMBuildStore(cg->b, cg_i64(cg, 0), slot(cg, cg->i64, p->hi, t[0]));
}

/* the user's combine over the threads' partials, in thread order, skipping threads that saw nothing */
static void combine_func_partial(Cg *cg, LLVMValueRef *t, void *env)
{
    Partials *p = env;
    LLVMValueRef started = LLVMBuildLoad2(cg->b, cg->i1, slot(cg, cg->i1, p->flags, t[0]), "");
    LLVMBasicBlockRef use = cg_new_bb(cg, "partial"), comb = cg_new_bb(cg, "partial_combine"), first = cg_new_bb(cg, "partial_first"),
                      next = cg_new_bb(cg, "partial_next");
    LLVMBuildCondBr(cg->b, started, use, next);
    LLVMPositionBuilderAtEnd(cg->b, use);
    LLVMValueRef v = LLVMBuildLoad2(cg->b, p->vt, slot(cg, p->vt, p->values, t[0]), "");
    LLVMBuildCondBr(cg->b, LLVMBuildLoad2(cg->b, cg->i1, p->have, ""), comb, first);
    LLVMPositionBuilderAtEnd(cg->b, comb);
    LLVMBuildStore(cg->b, apply_combine(cg, p->m->combine, LLVMBuildLoad2(cg->b, p->vt, p->acc, ""), v), p->acc);
    LLVMBuildBr(cg->b, next);
    LLVMPositionBuilderAtEnd(cg->b, first);
    LLVMBuildStore(cg->b, v, p->acc);
    LLVMBuildStore(cg->b, LLVMConstInt(cg->i1, 1, 0), p->have);
    LLVMBuildBr(cg->b, next);
    LLVMPositionBuilderAtEnd(cg->b, next);
}

/* argmin/argmax over the threads' (value, index) partials: a later thread wins only if strictly better */
static void combine_arg_partial(Cg *cg, LLVMValueRef *t, void *env)
{
    Partials *p = env;
    LLVMValueRef v = LLVMBuildLoad2(cg->b, p->vt, slot(cg, p->vt, p->values, t[0]), "");
    LLVMValueRef i = LLVMBuildLoad2(cg->b, cg->i64, slot(cg, cg->i64, p->idx, t[0]), "");
    LLVMValueRef started = LLVMBuildLoad2(cg->b, cg->i1, slot(cg, cg->i1, p->flags, t[0]), "");
    LLVMValueRef best = LLVMBuildLoad2(cg->b, p->vt, p->acc, "");
    LLVMValueRef have = LLVMBuildLoad2(cg->b, cg->i1, p->have, "");
    LLVMValueRef better = LLVMBuildOr(cg->b, LLVMBuildNot(cg->b, have, ""), arg_better(cg, p->m->red_op, p->dt, v, best), "");
    better = LLVMBuildAnd(cg->b, better, started, "");
    LLVMBuildStore(cg->b, LLVMBuildSelect(cg->b, better, v, best, ""), p->acc);
    LLVMBuildStore(cg->b, LLVMBuildSelect(cg->b, better, i, LLVMBuildLoad2(cg->b, cg->i64, p->best_idx, ""), ""), p->best_idx);
    LLVMBuildStore(cg->b, LLVMBuildOr(cg->b, have, started, ""), p->have);
}

/* The work of a reduction or scan for the team threshold: the map's body and the user's combine, if any, for
 * each element. */
static LLVMValueRef special_work(Cg *cg, CgMap *m)
{
    LLVMValueRef work = cg_map_work(cg, m, m->map->u.map.body);
    if (m->red_op != IR_RED_FUNC) return work;
    return LLVMBuildAdd(cg->b, work, cg_map_work(cg, m, m->combine->body), "");
}

/* Each thread reduces its chunk of m from nothing: with the user's combine and a started flag, or (argmin,
 * argmax) from the identity with index 0. Its result goes to its slot of p: values, flags (whether it holds
 * one) and idx (arg), and, where p->lo and p->hi are given, the rows its chunk covered. */
static void special_partials_on_team(Cg *cg, CgMap *m, Partials *p, LLVMValueRef work)
{
    bool is_arg = m->red_op != IR_RED_FUNC;
    LLVMTypeRef vt = p->vt;
    p->values = cg_alloca(cg, LLVMArrayType(vt, RT_MAX_THREADS), "partials");
    p->flags = cg_alloca(cg, LLVMArrayType(cg->i1, RT_MAX_THREADS), "started");
    p->idx = is_arg ? cg_alloca(cg, LLVMArrayType(cg->i64, RT_MAX_THREADS), "argidx") : NULL;
    over_partials(cg, init_partial, p);
    CgOutline o = {0};
    CgMapCaps c;
    cg_map_capture(&o, m, &c);
    int cv = cg_capture(&o, p->values), cf = cg_capture(&o, p->flags), ci = is_arg ? cg_capture(&o, p->idx) : -1;
    int clo = p->lo ? cg_capture(&o, p->lo) : -1, chi = p->hi ? cg_capture(&o, p->hi) : -1;
    LLVMValueRef rows = m->dims[0];
    IrNode *exprs[2] = {m->map->u.map.body, is_arg ? NULL : m->combine->body};
    cg_outline_begin(cg, &o, exprs, 2, NULL);
    cg->par_depth++;
    CgMap mine = *m;
    cg_map_restore(&o, &mine, &c);
    mine.acc = cg_alloca(cg, vt, "acc");
    LLVMValueRef tid = LLVMBuildZExt(cg->b, o.tid, cg->i64, "");
    if (is_arg) {
        mine.sink = CG_SINK_ARG_ALL;
        LLVMBuildStore(cg->b, red_identity(cg, m->red_op, p->dt), mine.acc);
        mine.arg_index = cg_alloca(cg, cg->i64, "argidx");
        LLVMBuildStore(cg->b, cg_i64(cg, 0), mine.arg_index);
    } else {
        mine.sink = CG_SINK_REDUCE_ALL;
        LLVMBuildStore(cg->b, LLVMConstNull(vt), mine.acc);
        mine.started = cg_alloca(cg, cg->i1, "started");
        LLVMBuildStore(cg->b, LLVMConstInt(cg->i1, 0, 0), mine.started);
    }
    cg_map_run_chunk(cg, &mine, true, o.lo, o.hi, false);
    LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, vt, mine.acc, ""), slot(cg, vt, cg_outline_get(&o, cv), tid));
    LLVMBuildStore(cg->b, is_arg ? LLVMBuildICmp(cg->b, LLVMIntSLT, o.lo, o.hi, "") : LLVMBuildLoad2(cg->b, cg->i1, mine.started, ""),
                   slot(cg, cg->i1, cg_outline_get(&o, cf), tid));
    if (is_arg) LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, cg->i64, mine.arg_index, ""), slot(cg, cg->i64, cg_outline_get(&o, ci), tid));
    if (clo >= 0) LLVMBuildStore(cg->b, o.lo, slot(cg, cg->i64, cg_outline_get(&o, clo), tid));
    if (chi >= 0) LLVMBuildStore(cg->b, o.hi, slot(cg, cg->i64, cg_outline_get(&o, chi), tid));
    cg->par_depth--;
    cg_outline_end(cg, &o, rows, work);
}

/* The combination of the partials starts from init (a user's combine with one) or from nothing. */
static void start_combination(Cg *cg, Partials *p, const IrNode *init)
{
    p->acc = cg_alloca(cg, p->vt, "combined");
    p->have = cg_alloca(cg, cg->i1, "have");
    LLVMBuildStore(cg->b, init ? cg_expr(cg, init) : LLVMConstNull(p->vt), p->acc);
    LLVMBuildStore(cg->b, LLVMConstInt(cg->i1, init != NULL, 0), p->have);
}

/* lk.reduce with a function, or argmin/argmax, over everything, on the team. Each thread starts from nothing
 * (a started flag, or the identity with index 0), and the partials are combined in thread order. Returns
 * the value (FUNC) or the index (arg); an empty input raises as on one thread. */
static LLVMValueRef reduce_all_special_on_team(Cg *cg, CgMap *m, IrDtype dt, const IrNode *n)
{
    bool is_arg = m->red_op != IR_RED_FUNC;
    LLVMTypeRef vt = is_arg ? cg_type(cg, ir_type_scalar(dt)) : cg_type(cg, m->combine->acc_param->type);
    Partials p = {m, dt, vt};
    special_partials_on_team(cg, m, &p, special_work(cg, m));
    start_combination(cg, &p, is_arg ? NULL : m->combine->init);
    if (is_arg) {
        p.best_idx = cg_alloca(cg, cg->i64, "bestidx");
        LLVMBuildStore(cg->b, cg_i64(cg, 0), p.best_idx);
        over_partials(cg, combine_arg_partial, &p);
        return LLVMBuildLoad2(cg->b, cg->i64, p.best_idx, "");
    }
    over_partials(cg, combine_func_partial, &p);
    LLVMValueRef extra[1] = {cg_i64(cg, RT_VAL_EMPTY_REDUCE)};
    cg_raise_if(cg, LLVMBuildNot(cg->b, LLVMBuildLoad2(cg->b, cg->i1, p.have, ""), ""), "rt_raise_value", n->pos, extra, 1);
    return LLVMBuildLoad2(cg->b, vt, p.acc, "");
}

/* ---------------- reductions ---------------- */

/* An array input is reduced as the identity map over it, so both cases share the map's loops (and a map input
 * is fused: its body is computed in the reduction's loop, with no array in between). */
static const IrNode *as_map(Cg *cg, const IrNode *x)
{
    if (x->kind == IR_MAP && !x->u.map.out) return x;
    IrNode *m = ir_node(cg->f->arena, IR_MAP, x->pos);
    m->type = x->type;
    m->u.map.ninputs = m->u.map.nparams = 1;
    m->u.map.inputs = ir_nodes(cg->f->arena, 1);
    m->u.map.inputs[0] = (IrNode *)x;
    m->u.map.params = rt_arena_alloc(cg->f->arena, sizeof(IrVar *));
    m->u.map.params[0] = ir_func_temp(cg->f, ir_type_scalar(x->type->dtype));
    m->u.map.body = ir_var_ref(cg->f->arena, x->pos, m->u.map.params[0]);
    /* the new variable needs a slot in this function */
    LLVMValueRef *slots = rt_arena_alloc(cg->f->arena, sizeof(LLVMValueRef) * (size_t)(cg->f->nvars + 1));
    memcpy(slots, cg->var_slots, sizeof(LLVMValueRef) * (size_t)(cg->f->nvars - 1));
    slots[cg->f->nvars - 1] = cg_alloca(cg, cg_type(cg, m->u.map.params[0]->type), "elem");
    cg->var_slots = slots;
    return m;
}

/* The identity of op as a constant node (what an axis reduction's output starts from). */
static IrNode identity_const(IrReduceOp op, IrDtype dt)
{
    IrNode c = {.kind = IR_CONST, .type = ir_type_scalar(dt)};
    if (op == IR_RED_ARGMIN) op = IR_RED_MIN;
    if (op == IR_RED_ARGMAX) op = IR_RED_MAX;
    bool nanop = op == IR_RED_NANMIN || op == IR_RED_NANMAX;
    if (nanop && !ir_dtype_is_float(dt)) op = op == IR_RED_NANMIN ? IR_RED_MIN : IR_RED_MAX;
    if (ir_dtype_is_float(dt)) {
        c.u.konst.f = nanop ? __builtin_nan("") : op == IR_RED_MUL ? 1.0 : op == IR_RED_MIN ? __builtin_inf()
                    : op == IR_RED_MAX ? -__builtin_inf() : 0.0;
    } else if (dt == IR_DT_BOOL) {
        c.u.konst.i = (op == IR_RED_AND || op == IR_RED_MUL || op == IR_RED_MIN);
    } else {
        int bits = ir_dtype_bits(dt);
        bool sg = ir_dtype_is_signed(dt);
        c.u.konst.i = op == IR_RED_MUL ? 1 : op == IR_RED_MIN ? (sg ? (int64_t)((~0ULL) >> (65 - bits)) : -1)
                    : op == IR_RED_MAX ? (sg ? (int64_t)(~0ULL << (bits - 1)) : 0) : 0;
    }
    return c;
}

/* Every element of arr (ndim dims, C layout) set to the constant c. */
static void fill_array(Cg *cg, LLVMValueRef arr, const IrType *t, LLVMValueRef *dims, int ndim, IrNode c)
{
    cg_fill(cg, arr, t, dims, ndim, &c);
}

LLVMValueRef cg_reduce(Cg *cg, const IrNode *n)
{
    const IrNode *map = as_map(cg, n->u.reduce.input);
    const IrType *in_t = map->type;
    IrDtype dt = map->u.map.body->type->dtype;
    IrReduceOp op = n->u.reduce.op;
    CgMap m = {.red_op = op, .combine = &n->u.reduce.combine};
    if (!cg_map_prepare(cg, &m, map, NULL, in_t->ndim)) return LLVMGetUndef(cg_type(cg, n->type));
    bool is_arg = op == IR_RED_ARGMIN || op == IR_RED_ARGMAX;
    bool needs_items = op == IR_RED_MIN || op == IR_RED_MAX || op == IR_RED_NANMIN || op == IR_RED_NANMAX || is_arg ||
                       (op == IR_RED_FUNC && !n->u.reduce.combine.init);
    bool partials_ok = is_arg || (op == IR_RED_FUNC && combine_takes_partials(&n->u.reduce.combine));
    if (n->u.reduce.axis < 0 && partials_ok && cg_on_team(cg) && m.ndim > 0) {
        if (is_arg) {
            LLVMValueRef empty = LLVMConstInt(cg->i1, 0, 0);
            for (int d = 0; d < m.ndim; d++)
                empty = LLVMBuildOr(cg->b, empty, LLVMBuildICmp(cg->b, LLVMIntEQ, m.dims[d], cg_i64(cg, 0), ""), "");
            LLVMValueRef extra[1] = {cg_i64(cg, RT_VAL_EMPTY_REDUCE)};
            cg_raise_if(cg, empty, "rt_raise_value", n->pos, extra, 1);
        }
        return reduce_all_special_on_team(cg, &m, dt, n);
    }
    if (n->u.reduce.axis < 0 && op == IR_RED_FUNC) {
        const IrCombine *c = &n->u.reduce.combine;
        LLVMTypeRef at = cg_type(cg, c->acc_param->type);
        m.sink = CG_SINK_REDUCE_ALL;
        m.acc = cg_alloca(cg, at, "acc");
        if (c->init) {
            LLVMBuildStore(cg->b, cg_expr(cg, c->init), m.acc);
        } else {
            LLVMBuildStore(cg->b, LLVMConstNull(at), m.acc);
            m.started = cg_alloca(cg, cg->i1, "started");
            LLVMBuildStore(cg->b, LLVMConstInt(cg->i1, 0, 0), m.started);
        }
        cg_map_run(cg, &m, true, false);
        if (m.started) {
            LLVMValueRef extra[1] = {cg_i64(cg, RT_VAL_EMPTY_REDUCE)};
            cg_raise_if(cg, LLVMBuildNot(cg->b, LLVMBuildLoad2(cg->b, cg->i1, m.started, ""), ""), "rt_raise_value", n->pos, extra, 1);
        }
        return LLVMBuildLoad2(cg->b, at, m.acc, "");
    }
    if (n->u.reduce.axis < 0) {
        if (needs_items) {
            LLVMValueRef empty = LLVMConstInt(cg->i1, 0, 0);
            for (int d = 0; d < m.ndim; d++)
                empty = LLVMBuildOr(cg->b, empty, LLVMBuildICmp(cg->b, LLVMIntEQ, m.dims[d], cg_i64(cg, 0), ""), "");
            LLVMValueRef extra[1] = {cg_i64(cg, RT_VAL_EMPTY_REDUCE)};
            cg_raise_if(cg, empty, "rt_raise_value", n->pos, extra, 1);
        }
        m.sink = is_arg ? CG_SINK_ARG_ALL : CG_SINK_REDUCE_ALL;
        m.acc = cg_alloca(cg, cg_type(cg, ir_type_scalar(dt)), "acc");
        LLVMBuildStore(cg->b, red_identity(cg, op, dt), m.acc);
        if (is_arg) {
            m.arg_index = cg_alloca(cg, cg->i64, "argidx");
            LLVMBuildStore(cg->b, cg_i64(cg, 0), m.arg_index);
        }
        if (cg_on_team(cg) && !is_arg && m.ndim > 0) return reduce_on_team(cg, &m, dt);
        cg_map_run(cg, &m, true, !is_arg);
        if (is_arg) return LLVMBuildLoad2(cg->b, cg->i64, m.arg_index, "");
        return LLVMBuildLoad2(cg->b, cg_type(cg, ir_type_scalar(dt)), m.acc, "");
    }
    /* along an axis: the result starts at the identity, and the input is walked in its own order */
    int axis = n->u.reduce.axis;
    LLVMValueRef odims[CG_MAX_DIMS];
    int o = 0;
    for (int d = 0; d < m.ndim; d++)
        if (d != axis) odims[o++] = m.dims[d];
    if (needs_items) {
        LLVMValueRef extra[1] = {cg_i64(cg, RT_VAL_EMPTY_REDUCE)};
        LLVMValueRef osize = cg_i64(cg, 1);
        for (int d = 0; d < o; d++) osize = LLVMBuildMul(cg->b, osize, odims[d], "");
        LLVMValueRef empty = LLVMBuildAnd(cg->b, LLVMBuildICmp(cg->b, LLVMIntEQ, m.dims[axis], cg_i64(cg, 0), ""),
                                          LLVMBuildICmp(cg->b, LLVMIntSGT, osize, cg_i64(cg, 0), ""), "");
        cg_raise_if(cg, empty, "rt_raise_value", n->pos, extra, 1);
    }
    m.out = n->u.reduce.out ? cg_expr(cg, n->u.reduce.out) : cg_new_array(cg, n->type->dtype, o, odims, n->pos);
    m.out_type = n->type;
    if (is_arg) {
        /* the best value so far for each output element, in a scratch array freed with the call */
        m.best = cg_new_array(cg, dt, o, odims, n->pos);
        fill_array(cg, m.best, ir_type_array(dt, o, IR_LAYOUT_C), odims, o, identity_const(op, dt));
        IrNode zero = {.kind = IR_CONST, .type = ir_type_scalar(IR_DT_INT64)};
        fill_array(cg, m.out, n->type, odims, o, zero);
        m.sink = CG_SINK_ARG_AXIS;
        m.red_axis = axis;
        /* along an axis other than the first, each row of the output is one thread's alone */
        if (cg_on_team(cg)) cg_map_axis_on_team(cg, &m);
        else cg_map_run(cg, &m, false, false);
        return m.out;
    }
    if (op == IR_RED_FUNC && n->u.reduce.combine.init) {
        /* every line starts from init (evaluated once per element: it is a variable or constant) */
        cg_fill(cg, m.out, n->type, odims, o, n->u.reduce.combine.init);
    } else if (op != IR_RED_FUNC) {
        fill_array(cg, m.out, n->type, odims, o, identity_const(op, dt));
    }
    m.sink = CG_SINK_REDUCE_AXIS;
    m.red_axis = axis;
    if (cg_on_team(cg)) cg_map_axis_on_team(cg, &m);
    else cg_map_run(cg, &m, false, false);
    return m.out;
}

/* The chunks a scan's first pass ran, counted: the last slot a thread ran, plus one. */
static void count_chunk(Cg *cg, Partials *p, LLVMValueRef t)
{
    LLVMValueRef lo = LLVMBuildLoad2(cg->b, cg->i64, slot(cg, cg->i64, p->lo, t), "");
    LLVMValueRef hi = LLVMBuildLoad2(cg->b, cg->i64, slot(cg, cg->i64, p->hi, t), "");
    LLVMValueRef ran = LLVMBuildICmp(cg->b, LLVMIntSLT, lo, hi, "");
    LLVMValueRef n = LLVMBuildLoad2(cg->b, cg->i64, p->nchunks, "");
    LLVMBuildStore(cg->b, LLVMBuildSelect(cg->b, ran, LLVMBuildAdd(cg->b, t, cg_i64(cg, 1), ""), n, ""), p->nchunks);
}

/* cumsum/cumprod, in chunk order: chunk t's offset carry[t] is the combination of the totals before it. */
static void carry_partial(Cg *cg, LLVMValueRef *t, void *env)
{
    Partials *p = env;
    LLVMValueRef acc = LLVMBuildLoad2(cg->b, p->vt, p->acc, "");
    LLVMBuildStore(cg->b, acc, slot(cg, p->vt, p->carry, t[0]));
    LLVMValueRef total = LLVMBuildLoad2(cg->b, p->vt, slot(cg, p->vt, p->values, t[0]), "");
    LLVMBuildStore(cg->b, red_combine(cg, p->m->red_op, p->dt, acc, total), p->acc);
    count_chunk(cg, p, t[0]);
}

/* A user's combine, in chunk order: chunk t starts from carry[t], init (if any) combined with the totals of
 * the chunks before it; carry_have[t] is false while that is nothing (no init, every chunk before t empty). */
static void carry_func_partial(Cg *cg, LLVMValueRef *t, void *env)
{
    Partials *p = env;
    LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, p->vt, p->acc, ""), slot(cg, p->vt, p->carry, t[0]));
    LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, cg->i1, p->have, ""), slot(cg, cg->i1, p->carry_have, t[0]));
    count_chunk(cg, p, t[0]);
    combine_func_partial(cg, t, env);
}

typedef struct ScanFix {
    IrReduceOp op;
    IrDtype dt;
    LLVMValueRef out, offset;
} ScanFix;

static void scan_fix_body(Cg *cg, LLVMValueRef *idx, void *env)
{
    ScanFix *f = env;
    const IrType *ot = ir_type_array(f->dt, 1, IR_LAYOUT_C);
    LLVMValueRef p = cg_elem_ptr(cg, ot, f->out, idx);
    cg_store_elem(cg, f->dt, p, red_combine(cg, f->op, f->dt, f->offset, cg_load_elem(cg, f->dt, p)));
}

/* cumsum/cumprod's chunk c, which pass 1 scanned from the identity: its offset combined into each element.
 * The first chunk's offset is the identity, and it is left as it is. */
static void fix_chunk(Cg *cg, LLVMValueRef *c, void *env)
{
    Partials *p = env;
    CgMap *m = p->m;
    LLVMValueRef inner = cg_i64(cg, 1);
    for (int d = 1; d < m->ndim; d++) inner = LLVMBuildMul(cg->b, inner, m->dims[d], "");
    LLVMValueRef lo = LLVMBuildLoad2(cg->b, cg->i64, slot(cg, cg->i64, p->lo, c[0]), "");
    LLVMValueRef hi = LLVMBuildLoad2(cg->b, cg->i64, slot(cg, cg->i64, p->hi, c[0]), "");
    LLVMValueRef end = LLVMBuildMul(cg->b, hi, inner, "");
    LLVMValueRef first = LLVMBuildICmp(cg->b, LLVMIntEQ, lo, cg_i64(cg, 0), "");
    LLVMValueRef start = LLVMBuildSelect(cg->b, first, end, LLVMBuildMul(cg->b, lo, inner, ""), "");
    ScanFix fix = {m->red_op, p->dt, m->out, LLVMBuildLoad2(cg->b, p->vt, slot(cg, p->vt, p->carry, c[0]), "")};
    cg_loop_nest_from(cg, 1, &end, start, end, scan_fix_body, &fix, false);
}

/* Chunk c of the first pass, scanned again from its carry (or from its first element, when it has none). */
static void rescan_chunk(Cg *cg, LLVMValueRef *c, void *env)
{
    Partials *p = env;
    CgMap *m = p->m;
    LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, p->vt, slot(cg, p->vt, p->carry, c[0]), ""), m->acc);
    LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, cg->i1, slot(cg, cg->i1, p->carry_have, c[0]), ""), m->started);
    LLVMValueRef lo = LLVMBuildLoad2(cg->b, cg->i64, slot(cg, cg->i64, p->lo, c[0]), "");
    LLVMValueRef hi = LLVMBuildLoad2(cg->b, cg->i64, slot(cg, cg->i64, p->hi, c[0]), "");
    cg_map_run_chunk(cg, m, true, lo, hi, false);
}

/* A scan's second pass runs over the first pass's chunks as recorded (the team splits their count, normally
 * one chunk per thread), not over a new split of the rows: the team's size may have changed in between
 * (another Python thread calling lk.set_num_threads), and each carry belongs to its chunk. chunk(c) is
 * emitted in the chunk function, with p's arrays and m as that function sees them. */
static void over_recorded_chunks(Cg *cg, CgMap *m, Partials *p, LLVMValueRef work, CgLoopBody chunk)
{
    bool func = m->red_op == IR_RED_FUNC;
    CgOutline o = {0};
    CgMapCaps c;
    cg_map_capture(&o, m, &c);
    int ccarry = cg_capture(&o, p->carry), chave = func ? cg_capture(&o, p->carry_have) : -1;
    int clo = cg_capture(&o, p->lo), chi = cg_capture(&o, p->hi);
    LLVMValueRef nchunks = LLVMBuildLoad2(cg->b, cg->i64, p->nchunks, "");
    IrNode *exprs[2] = {func ? m->map->u.map.body : NULL, func ? m->combine->body : NULL};
    cg_outline_begin(cg, &o, exprs, 2, NULL);
    cg->par_depth++;
    CgMap mine = *m;
    cg_map_restore(&o, &mine, &c);
    if (func) {
        mine.acc = cg_alloca(cg, p->vt, "acc");
        mine.started = cg_alloca(cg, cg->i1, "started");
    }
    Partials q = *p;
    q.m = &mine;
    q.carry = cg_outline_get(&o, ccarry);
    q.carry_have = func ? cg_outline_get(&o, chave) : NULL;
    q.lo = cg_outline_get(&o, clo);
    q.hi = cg_outline_get(&o, chi);
    cg_loop_nest_from(cg, 1, &o.hi, o.lo, o.hi, chunk, &q, false);
    cg->par_depth--;
    cg_outline_end(cg, &o, nchunks, work);
}

/* The flattened cumsum/cumprod on the team, in two passes: each thread scans its chunk from the identity and
 * leaves its total; the totals' running combination gives each chunk its offset; each thread then combines
 * its offset into its chunk. With one thread (or below the threshold), one pass. */
static LLVMValueRef scan_on_team(Cg *cg, CgMap *m, const IrNode *n)
{
    IrDtype dt = n->type->dtype;
    LLVMValueRef work = cg_map_work(cg, m, m->map->u.map.body);
    LLVMBasicBlockRef par = cg_new_bb(cg, "scan_team"), seq = cg_new_bb(cg, "scan_alone"), joined = cg_new_bb(cg, "scan_joined");
    LLVMBuildCondBr(cg->b, cg_shares_work(cg, m->dims[0], work), par, seq);
    LLVMPositionBuilderAtEnd(cg->b, seq);
    cg_map_run(cg, m, true, false);
    LLVMBuildBr(cg->b, joined);
    LLVMPositionBuilderAtEnd(cg->b, par);
    LLVMTypeRef vt = cg_type(cg, ir_type_scalar(dt));
    Partials p = {m, dt, vt};
    p.values = cg_alloca(cg, LLVMArrayType(vt, RT_MAX_THREADS), "totals");
    p.lo = cg_alloca(cg, LLVMArrayType(cg->i64, RT_MAX_THREADS), "chunk_lo");
    p.hi = cg_alloca(cg, LLVMArrayType(cg->i64, RT_MAX_THREADS), "chunk_hi");
    over_partials(cg, init_partial, &p);
    partials_on_team(cg, m, dt, p.values, p.lo, p.hi, work, false);
    p.acc = cg_alloca(cg, vt, "offset");
    LLVMBuildStore(cg->b, red_identity(cg, m->red_op, dt), p.acc);
    p.carry = cg_alloca(cg, LLVMArrayType(vt, RT_MAX_THREADS), "offsets");
    p.nchunks = cg_alloca(cg, cg->i64, "nchunks");
    LLVMBuildStore(cg->b, cg_i64(cg, 0), p.nchunks);
    over_partials(cg, carry_partial, &p);
    over_recorded_chunks(cg, m, &p, work, fix_chunk);
    LLVMBuildBr(cg->b, joined);
    LLVMPositionBuilderAtEnd(cg->b, joined);
    return m->out;
}

/* lk.scan with a function, flattened, on the team. A user's combine has no identity, so pass 1 only reduces:
 * each thread its chunk, from its first element. The carries follow, in chunk order; in pass 2 each thread
 * scans its chunk again from its carry, writing the result. Valid when fn is associative (documented). */
static LLVMValueRef scan_func_on_team(Cg *cg, CgMap *m, const IrNode *n)
{
    LLVMValueRef work = special_work(cg, m);
    LLVMBasicBlockRef par = cg_new_bb(cg, "scan_team"), seq = cg_new_bb(cg, "scan_alone"), joined = cg_new_bb(cg, "scan_joined");
    LLVMBuildCondBr(cg->b, cg_shares_work(cg, m->dims[0], work), par, seq); /* else one pass, not two */
    LLVMPositionBuilderAtEnd(cg->b, seq);
    cg_map_run(cg, m, true, false);
    LLVMBuildBr(cg->b, joined);
    LLVMPositionBuilderAtEnd(cg->b, par);
    LLVMTypeRef vt = cg_type(cg, m->combine->acc_param->type);
    Partials p = {m, n->type->dtype, vt};
    p.lo = cg_alloca(cg, LLVMArrayType(cg->i64, RT_MAX_THREADS), "chunk_lo");
    p.hi = cg_alloca(cg, LLVMArrayType(cg->i64, RT_MAX_THREADS), "chunk_hi");
    special_partials_on_team(cg, m, &p, work);
    start_combination(cg, &p, m->combine->init);
    p.carry = cg_alloca(cg, LLVMArrayType(vt, RT_MAX_THREADS), "carry");
    p.carry_have = cg_alloca(cg, LLVMArrayType(cg->i1, RT_MAX_THREADS), "carry_have");
    p.nchunks = cg_alloca(cg, cg->i64, "nchunks");
    LLVMBuildStore(cg->b, cg_i64(cg, 0), p.nchunks);
    over_partials(cg, carry_func_partial, &p);
    over_recorded_chunks(cg, m, &p, work, rescan_chunk);
    LLVMBuildBr(cg->b, joined);
    LLVMPositionBuilderAtEnd(cg->b, joined);
    return m->out;
}

LLVMValueRef cg_scan(Cg *cg, const IrNode *n)
{
    const IrNode *map = as_map(cg, n->u.scan.input);
    IrDtype dt = map->u.map.body->type->dtype;
    CgMap m = {.red_op = n->u.scan.op, .out_type = n->type, .combine = &n->u.scan.combine};
    if (!cg_map_prepare(cg, &m, map, NULL, map->type->ndim)) return LLVMGetUndef(cg_type(cg, n->type));
    if (n->u.scan.axis < 0) {
        LLVMValueRef total = cg_i64(cg, 1);
        for (int d = 0; d < m.ndim; d++) total = LLVMBuildMul(cg->b, total, m.dims[d], "");
        m.out = cg_new_array(cg, n->type->dtype, 1, &total, n->pos);
        m.acc = cg_alloca(cg, cg_type(cg, ir_type_scalar(n->type->dtype)), "acc");
        if (m.red_op == IR_RED_FUNC && n->u.scan.combine.init) {
            LLVMBuildStore(cg->b, cg_expr(cg, n->u.scan.combine.init), m.acc); /* combined into every element */
        } else if (m.red_op == IR_RED_FUNC) {
            LLVMBuildStore(cg->b, LLVMConstNull(cg_type(cg, ir_type_scalar(n->type->dtype))), m.acc);
            m.started = cg_alloca(cg, cg->i1, "started");
            LLVMBuildStore(cg->b, LLVMConstInt(cg->i1, 0, 0), m.started);
        } else {
            LLVMBuildStore(cg->b, red_identity(cg, m.red_op, dt), m.acc);
        }
        m.sink = CG_SINK_SCAN_ALL;
        if (cg_on_team(cg) && m.ndim > 0) {
            if (m.red_op != IR_RED_FUNC) return scan_on_team(cg, &m, n);
            if (combine_takes_partials(m.combine)) return scan_func_on_team(cg, &m, n);
        }
        cg_map_run(cg, &m, true, false);
        return m.out;
    }
    m.out = cg_new_array(cg, n->type->dtype, m.ndim, m.dims, n->pos);
    m.sink = CG_SINK_SCAN_AXIS;
    m.red_axis = n->u.scan.axis;
    m.flat_ok_static = false;
    if (cg_on_team(cg)) cg_map_axis_on_team(cg, &m);
    else cg_map_run(cg, &m, false, false); /* flat_ok_static is false: the loop nest */
    return m.out;
}
