/* emit_reduce.c: IR_REDUCE and IR_SCAN in LLVM IR. Both run the loops of their input, always a map
 * (ir/reduce_inputs.c; emit_array.c), with a sink that accumulates instead of storing: here are those sinks,
 * the lowering of the built-in operations' identities and combines (decided in ir/reduce_ops.c) and of the
 * user's combine, and the choice of what runs on the openmp team (team_reduce.c runs it).
 *
 * A user's combine has no identity: wherever nothing has been accumulated yet a started flag says so, and the
 * combine (user code, which may raise) runs only on values that exist. */
#include "cg.h"

/* A built-in operation's identity and combine, as ir/reduce_ops.c defines them, lowered by the ordinary
 * expression code (the combine's operands are the values given: placeholders stand for them). */
LLVMValueRef cg_red_identity(Cg *cg, IrReduceOp op, IrDtype dt)
{
    IrNode c = ir_reduce_identity(op, dt);
    return cg_const(cg, &c);
}

LLVMValueRef cg_red_combine(Cg *cg, IrReduceOp op, IrDtype dt, LLVMValueRef a, LLVMValueRef x)
{
    IrNode acc = {.kind = IR_VAR, .type = ir_type_scalar(dt)}, elem = acc;
    IrNode *n = ir_reduce_combine(cg->f->arena, op, dt, &acc, &elem);
    if (!n) return a; /* argmin, argmax, a user's combine: handled by the sinks */
    LLVMValueRef args[2] = {a, x};
    return n->kind == IR_MATH ? cg_math(cg, n, args) : cg_binop(cg, n, a, x);
}

/* The user's combine applied to (a, x): the params take the values, the body is evaluated. */
LLVMValueRef cg_apply_combine(Cg *cg, const IrCombine *c, LLVMValueRef a, LLVMValueRef x)
{
    LLVMBuildStore(cg->b, a, cg->var_slots[c->acc_param->id]);
    LLVMBuildStore(cg->b, x, cg->var_slots[c->elem_param->id]);
    return cg_expr(cg, c->body);
}

static LLVMValueRef combine(Cg *cg, CgMap *m, IrDtype dt, LLVMValueRef a, LLVMValueRef x)
{
    if (m->red_op == IR_RED_FUNC) return cg_apply_combine(cg, m->combine, a, x);
    return cg_red_combine(cg, m->red_op, dt, a, x);
}

/* acc = started ? combine(acc, v) : v (started set); with init, always combine. The combine runs only when
 * there is an accumulated value: it is user code and may raise. */
static void accumulate_first_or_combine(Cg *cg, CgMap *m, LLVMValueRef acc_ptr, LLVMTypeRef t, LLVMValueRef v)
{
    if (!m->started) {
        LLVMBuildStore(cg->b, cg_apply_combine(cg, m->combine, LLVMBuildLoad2(cg->b, t, acc_ptr, ""), v), acc_ptr);
        return;
    }
    LLVMValueRef started = LLVMBuildLoad2(cg->b, cg->i1, m->started, "");
    LLVMBasicBlockRef comb = cg_new_bb(cg, "combine"), first = cg_new_bb(cg, "first"), done = cg_new_bb(cg, "combined");
    LLVMBuildCondBr(cg->b, started, comb, first);
    LLVMPositionBuilderAtEnd(cg->b, comb);
    LLVMBuildStore(cg->b, cg_apply_combine(cg, m->combine, LLVMBuildLoad2(cg->b, t, acc_ptr, ""), v), acc_ptr);
    LLVMBuildBr(cg->b, done);
    LLVMPositionBuilderAtEnd(cg->b, first);
    LLVMBuildStore(cg->b, v, acc_ptr);
    LLVMBuildStore(cg->b, LLVMConstInt(cg->i1, 1, 0), m->started);
    LLVMBuildBr(cg->b, done);
    LLVMPositionBuilderAtEnd(cg->b, done);
}

/* argmax: x beats best if greater, or if it is the first NaN; argmin likewise with less. */
LLVMValueRef cg_arg_better(Cg *cg, IrReduceOp op, IrDtype dt, LLVMValueRef x, LLVMValueRef best)
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
    cg_store_elem(cg, dt, out_ptr, cg_apply_combine(cg, m->combine, cg_load_elem(cg, dt, prev_ptr), v));
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
            r = cg_red_combine(cg, m->red_op, in_dt, a, v);
            LLVMBuildStore(cg->b, r, m->acc);
        }
        cg_store_elem(cg, m->out_type->dtype, cg_elem_ptr(cg, m->out_type, m->out, &lin), r);
        return;
    }
    case CG_SINK_SCAN_AXIS: {
        /* out[idx] = out[idx - 1 along the axis] op x, or x at the axis's start */
        const IrType *ot = m->out_type;
        LLVMValueRef first = LLVMBuildICmp(cg->b, LLVMIntEQ, idx[m->red_axis], cg_i64(cg, 0), "");
        LLVMValueRef pidx[IR_MAX_DIMS];
        for (int d = 0; d < m->ndim; d++) pidx[d] = idx[d];
        pidx[m->red_axis] = LLVMBuildSelect(cg->b, first, cg_i64(cg, 0), LLVMBuildSub(cg->b, idx[m->red_axis], cg_i64(cg, 1), ""), "");
        if (m->red_op == IR_RED_FUNC && m->combine->init) {
            /* each line starts from init: out[first] = f(init, x) */
            LLVMValueRef prev = cg_load_elem(cg, ot->dtype, cg_elem_ptr(cg, ot, m->out, pidx));
            prev = LLVMBuildSelect(cg->b, first, cg_expr(cg, m->combine->init), prev, "");
            cg_store_elem(cg, ot->dtype, cg_elem_ptr(cg, ot, m->out, idx), cg_apply_combine(cg, m->combine, prev, v));
            return;
        }
        if (m->red_op == IR_RED_FUNC) {
            axis_first_or_combine(cg, m, first, cg_elem_ptr(cg, ot, m->out, pidx), cg_elem_ptr(cg, ot, m->out, idx), v);
            return;
        }
        LLVMValueRef prev = cg_load_elem(cg, ot->dtype, cg_elem_ptr(cg, ot, m->out, pidx));
        prev = LLVMBuildSelect(cg->b, first, cg_red_identity(cg, m->red_op, ot->dtype), prev, "");
        cg_store_elem(cg, ot->dtype, cg_elem_ptr(cg, ot, m->out, idx), cg_red_combine(cg, m->red_op, ot->dtype, prev, v));
        return;
    }
    case CG_SINK_ARG_ALL: {
        LLVMValueRef lin = flat;
        if (!lin) {
            lin = idx[0];
            for (int d = 1; d < m->ndim; d++) lin = LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, lin, m->dims[d], ""), idx[d], "");
        }
        LLVMValueRef best = LLVMBuildLoad2(cg->b, LLVMTypeOf(v), m->acc, "");
        LLVMValueRef better = cg_arg_better(cg, m->red_op, in_dt, v, best);
        LLVMBuildStore(cg->b, LLVMBuildSelect(cg->b, better, v, best, ""), m->acc);
        LLVMValueRef bi = LLVMBuildLoad2(cg->b, cg->i64, m->arg_index, "");
        LLVMBuildStore(cg->b, LLVMBuildSelect(cg->b, better, lin, bi, ""), m->arg_index);
        return;
    }
    case CG_SINK_ARG_AXIS: {
        LLVMValueRef oidx[IR_MAX_DIMS];
        int o = 0;
        for (int d = 0; d < m->ndim; d++)
            if (d != m->red_axis) oidx[o++] = idx[d];
        const IrType *bt = ir_type_array(in_dt, o, IR_LAYOUT_C);
        LLVMValueRef bp = cg_elem_ptr(cg, bt, m->best, oidx);
        LLVMValueRef best = cg_load_elem(cg, in_dt, bp);
        LLVMValueRef better = cg_arg_better(cg, m->red_op, in_dt, v, best);
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
        LLVMBuildStore(cg->b, cg_red_combine(cg, m->red_op, m->map->u.map.body->type->dtype, a, v), m->acc);
        return;
    }
    case CG_SINK_REDUCE_AXIS: {
        LLVMValueRef oidx[IR_MAX_DIMS];
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

/* ---------------- reductions ---------------- */

/* Every element of arr (ndim dims, C layout) set to the constant c. */
static void fill_array(Cg *cg, LLVMValueRef arr, const IrType *t, LLVMValueRef *dims, int ndim, IrNode c)
{
    cg_fill(cg, arr, t, dims, ndim, &c);
}

/* NumPy's ValueError where m's space is empty: a reduction of everything with no identity (min, max, argmin,
 * argmax) has nothing to give. */
static void raise_if_empty(Cg *cg, const CgMap *m, IrPos pos)
{
    LLVMValueRef empty = LLVMConstInt(cg->i1, 0, 0);
    for (int d = 0; d < m->ndim; d++)
        empty = LLVMBuildOr(cg->b, empty, LLVMBuildICmp(cg->b, LLVMIntEQ, m->dims[d], cg_i64(cg, 0), ""), "");
    LLVMValueRef extra[1] = {cg_i64(cg, RT_VAL_EMPTY_REDUCE)};
    cg_raise_if(cg, empty, RT_ERR_VALUE, pos, extra, 1);
}

LLVMValueRef cg_reduce(Cg *cg, const IrNode *n)
{
    const IrNode *map = n->u.reduce.input; /* a map: ir_reduce_inputs_as_maps */
    const IrType *in_t = map->type;
    IrDtype dt = map->u.map.body->type->dtype;
    IrReduceOp op = n->u.reduce.op;
    CgMap m = {.red_op = op, .combine = &n->u.reduce.combine, .region = n->region};
    if (!cg_map_prepare(cg, &m, map, NULL, in_t->ndim)) return LLVMGetUndef(cg_type(cg, n->type));
    bool is_arg = op == IR_RED_ARGMIN || op == IR_RED_ARGMAX;
    bool needs_items = ir_reduce_needs_items(op, &n->u.reduce.combine);
    bool special = is_arg || op == IR_RED_FUNC; /* not one combine expression: the sinks of their own */
    if (n->u.reduce.axis < 0 && special && ir_reduce_partials_ok(op, &n->u.reduce.combine) && cg_on_team(cg, n) && m.ndim > 0) {
        if (is_arg) raise_if_empty(cg, &m, n->pos);
        return cg_reduce_special_on_team(cg, &m, dt, n);
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
            cg_raise_if(cg, LLVMBuildNot(cg->b, LLVMBuildLoad2(cg->b, cg->i1, m.started, ""), ""), RT_ERR_VALUE, n->pos, extra, 1);
        }
        return LLVMBuildLoad2(cg->b, at, m.acc, "");
    }
    if (n->u.reduce.axis < 0) {
        if (needs_items) raise_if_empty(cg, &m, n->pos);
        m.sink = is_arg ? CG_SINK_ARG_ALL : CG_SINK_REDUCE_ALL;
        m.acc = cg_alloca(cg, cg_type(cg, ir_type_scalar(dt)), "acc");
        LLVMBuildStore(cg->b, cg_red_identity(cg, op, dt), m.acc);
        if (is_arg) {
            m.arg_index = cg_alloca(cg, cg->i64, "argidx");
            LLVMBuildStore(cg->b, cg_i64(cg, 0), m.arg_index);
        }
        if (cg_on_team(cg, n) && !is_arg && m.ndim > 0) return cg_reduce_on_team(cg, &m, dt);
        cg_map_run(cg, &m, true, !is_arg);
        if (is_arg) return LLVMBuildLoad2(cg->b, cg->i64, m.arg_index, "");
        return LLVMBuildLoad2(cg->b, cg_type(cg, ir_type_scalar(dt)), m.acc, "");
    }
    /* along an axis: the result starts at the identity, and the input is walked in its own order */
    int axis = n->u.reduce.axis;
    LLVMValueRef odims[IR_MAX_DIMS];
    int o = 0;
    for (int d = 0; d < m.ndim; d++)
        if (d != axis) odims[o++] = m.dims[d];
    if (needs_items) { /* an empty axis raises even where no element of the result would reduce it, as NumPy */
        LLVMValueRef extra[1] = {cg_i64(cg, RT_VAL_EMPTY_REDUCE)};
        cg_raise_if(cg, LLVMBuildICmp(cg->b, LLVMIntEQ, m.dims[axis], cg_i64(cg, 0), ""), RT_ERR_VALUE, n->pos, extra, 1);
    }
    m.out = n->u.reduce.out ? cg_expr(cg, n->u.reduce.out) : cg_new_array(cg, n->type->dtype, o, odims, n->pos);
    m.out_type = n->type;
    if (is_arg) {
        /* the best value so far for each output element, in a scratch array freed with the call */
        m.best = cg_new_array(cg, dt, o, odims, n->pos);
        fill_array(cg, m.best, ir_type_array(dt, o, IR_LAYOUT_C), odims, o, ir_reduce_identity(op, dt));
        IrNode zero = {.kind = IR_CONST, .type = ir_type_scalar(IR_DT_INT64)};
        fill_array(cg, m.out, n->type, odims, o, zero);
        m.sink = CG_SINK_ARG_AXIS;
        m.red_axis = axis;
        /* along an axis other than the first, each row of the output is one thread's alone */
        if (cg_on_team(cg, n)) cg_map_axis_on_team(cg, &m);
        else cg_map_run(cg, &m, false, false);
        return m.out;
    }
    LLVMBasicBlockRef by_blas = cg_reduce_by_blas(cg, n, &m); /* A @ x and x @ B: gemv */
    if (op == IR_RED_FUNC && n->u.reduce.combine.init) {
        /* every line starts from init (evaluated once per element: it is a variable or constant) */
        cg_fill(cg, m.out, n->type, odims, o, n->u.reduce.combine.init);
    } else if (op != IR_RED_FUNC) {
        fill_array(cg, m.out, n->type, odims, o, ir_reduce_identity(op, dt));
    }
    m.sink = CG_SINK_REDUCE_AXIS;
    m.red_axis = axis;
    if (cg_on_team(cg, n)) cg_map_axis_on_team(cg, &m);
    else cg_map_run(cg, &m, false, false);
    if (by_blas) {
        LLVMBuildBr(cg->b, by_blas);
        LLVMPositionBuilderAtEnd(cg->b, by_blas);
    }
    return m.out;
}

LLVMValueRef cg_scan(Cg *cg, const IrNode *n)
{
    const IrNode *map = n->u.scan.input;
    IrDtype dt = map->u.map.body->type->dtype;
    CgMap m = {.red_op = n->u.scan.op, .out_type = n->type, .combine = &n->u.scan.combine, .region = n->region};
    if (!cg_map_prepare(cg, &m, map, NULL, map->type->ndim)) return LLVMGetUndef(cg_type(cg, n->type));
    if (n->u.scan.axis < 0) {
        LLVMValueRef total = cg_i64(cg, 1);
        for (int d = 0; d < m.ndim; d++) total = LLVMBuildMul(cg->b, total, m.dims[d], "");
        m.out = n->u.scan.out ? cg_expr(cg, n->u.scan.out) : cg_new_array(cg, n->type->dtype, 1, &total, n->pos);
        m.acc = cg_alloca(cg, cg_type(cg, ir_type_scalar(n->type->dtype)), "acc");
        if (m.red_op == IR_RED_FUNC && n->u.scan.combine.init) {
            LLVMBuildStore(cg->b, cg_expr(cg, n->u.scan.combine.init), m.acc); /* combined into every element */
        } else if (m.red_op == IR_RED_FUNC) {
            LLVMBuildStore(cg->b, LLVMConstNull(cg_type(cg, ir_type_scalar(n->type->dtype))), m.acc);
            m.started = cg_alloca(cg, cg->i1, "started");
            LLVMBuildStore(cg->b, LLVMConstInt(cg->i1, 0, 0), m.started);
        } else {
            LLVMBuildStore(cg->b, cg_red_identity(cg, m.red_op, dt), m.acc);
        }
        m.sink = CG_SINK_SCAN_ALL;
        if (cg_on_team(cg, n) && m.ndim > 0) {
            if (m.red_op != IR_RED_FUNC) return cg_scan_on_team(cg, &m, n);
            if (ir_reduce_partials_ok(m.red_op, m.combine)) return cg_scan_func_on_team(cg, &m, n);
        }
        cg_map_run(cg, &m, true, false);
        return m.out;
    }
    m.out = n->u.scan.out ? cg_expr(cg, n->u.scan.out) : cg_new_array(cg, n->type->dtype, m.ndim, m.dims, n->pos);
    m.sink = CG_SINK_SCAN_AXIS;
    m.red_axis = n->u.scan.axis;
    m.flat_ok_static = false;
    if (cg_on_team(cg, n)) cg_map_axis_on_team(cg, &m);
    else cg_map_run(cg, &m, false, false); /* flat_ok_static is false: the loop nest */
    return m.out;
}

/* ---------------- sibling reductions ---------------- */

/* Whether the items of a one_pass tuple are what this file runs together: each a reduction of everything with
 * a built-in combine of one expression, over a map of one rank, its result the map's element type. */
static bool siblings_fit(const IrNode *n)
{
    int ndim = -1;
    for (int i = 0; i < n->u.tuple.n; i++) {
        const IrNode *r = n->u.tuple.items[i];
        if (r->kind != IR_REDUCE || r->u.reduce.axis >= 0 || r->u.reduce.input->kind != IR_MAP) return false;
        IrReduceOp op = r->u.reduce.op;
        if (op == IR_RED_FUNC || op == IR_RED_ARGMIN || op == IR_RED_ARGMAX) return false;
        const IrNode *map = r->u.reduce.input;
        if (r->type->kind != IR_TY_SCALAR || r->type->dtype != map->u.map.body->type->dtype) return false;
        if (ndim >= 0 && map->type->ndim != ndim) return false;
        ndim = map->type->ndim;
    }
    return true;
}

/* The items of a one_pass tuple (ir/sibling_reductions.c). Each is prepared as it would be alone, in order (its
 * inputs evaluated and their shapes checked, an empty input refused for min and max), so the same error comes
 * first; then, when every item's space equals the first's, one loop nest runs them all, each element of each
 * map into its own accumulator (on the team: each thread's partials, combined in chunk order per item, as
 * cg_reduce_on_team does for one), else each item runs its own loops. */
LLVMValueRef cg_reduce_siblings(Cg *cg, const IrNode *n)
{
    int k = n->u.tuple.n;
    LLVMValueRef agg = LLVMGetUndef(cg_type(cg, n->type));
    if (!siblings_fit(n)) {
        for (int i = 0; i < k; i++) agg = LLVMBuildInsertValue(cg->b, agg, cg_expr(cg, n->u.tuple.items[i]), (unsigned)i, "");
        return agg;
    }
    CgMap *m = rt_arena_alloc(cg->f->arena, sizeof *m * (size_t)k);
    IrDtype *dt = rt_arena_alloc(cg->f->arena, sizeof *dt * (size_t)k);
    const IrRegion **regions = rt_arena_alloc(cg->f->arena, sizeof *regions * (size_t)k);
    LLVMValueRef same = LLVMConstInt(cg->i1, 1, 0);
    for (int i = 0; i < k; i++) {
        const IrNode *r = n->u.tuple.items[i], *map = r->u.reduce.input;
        m[i] = (CgMap){.red_op = r->u.reduce.op, .combine = &r->u.reduce.combine, .region = r->region};
        regions[i] = r->region;
        if (!cg_map_prepare(cg, &m[i], map, NULL, map->type->ndim)) return agg;
        dt[i] = map->u.map.body->type->dtype;
        if (ir_reduce_needs_items(m[i].red_op, m[i].combine)) raise_if_empty(cg, &m[i], r->pos);
        m[i].sink = CG_SINK_REDUCE_ALL;
        m[i].acc = cg_alloca(cg, cg_type(cg, ir_type_scalar(dt[i])), "acc");
        LLVMBuildStore(cg->b, cg_red_identity(cg, m[i].red_op, dt[i]), m[i].acc);
        for (int d = 0; i > 0 && d < m[i].ndim; d++)
            same = LLVMBuildAnd(cg->b, same, LLVMBuildICmp(cg->b, LLVMIntEQ, m[i].dims[d], m[0].dims[d], ""), "");
    }
    bool team = cg_on_team(cg, n->u.tuple.items[0]) && m[0].ndim > 0;
    LLVMBasicBlockRef together = cg_new_bb(cg, "siblings_together"), apart = cg_new_bb(cg, "siblings_apart"),
                      done = cg_new_bb(cg, "siblings_done");
    LLVMBuildCondBr(cg->b, same, together, apart);
    LLVMPositionBuilderAtEnd(cg->b, apart);
    for (int i = 0; i < k; i++) {
        if (team) cg_reduce_on_team(cg, &m[i], dt[i]);
        else cg_map_run(cg, &m[i], true, true);
    }
    LLVMBuildBr(cg->b, done);
    LLVMPositionBuilderAtEnd(cg->b, together);
    CgMap *chain = rt_arena_alloc(cg->f->arena, sizeof *chain * (size_t)k);
    for (int i = 0; i < k; i++) {
        chain[i] = m[i];
        chain[i].sibling = i + 1 < k ? &chain[i + 1] : NULL;
        if (i > 0) {
            chain[0].flat_ok_static = chain[0].flat_ok_static && m[i].flat_ok_static;
            chain[0].flat_ok = LLVMBuildAnd(cg->b, chain[0].flat_ok, m[i].flat_ok, "");
        }
    }
    if (team) cg_reduce_siblings_on_team(cg, chain, k, dt, ir_region_union(cg->f, regions, k));
    else cg_map_run(cg, &chain[0], true, true);
    LLVMBuildBr(cg->b, done);
    LLVMPositionBuilderAtEnd(cg->b, done);
    for (int i = 0; i < k; i++)
        agg = LLVMBuildInsertValue(cg->b, agg, LLVMBuildLoad2(cg->b, cg_type(cg, ir_type_scalar(dt[i])), m[i].acc, ""), (unsigned)i, "");
    return agg;
}
