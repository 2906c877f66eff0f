/* axis.c: an axis given at run time. A reduction or scan along an axis that is an integer variable (a parameter,
 * a loop's variable) has the same type whichever axis it names, so it becomes a choice among the reductions
 * along each constant axis: `r0 if k == 0 else r1 if k == 1 else ...`, k the axis made non-negative and checked
 * first (NumPy's AxisError, a ValueError, when it is out of bounds). Only the chosen arm runs: the choice is a
 * chain of if statements, each arm's own statements (what its reduction hoists) inside it, its value assigned
 * to one temporary. So it needs a place for statements: not inside a conditional expression or a comprehension. */
#include "ts_internal.h"

/* `then if cond else orelse`, typed as then */
IrNode *ts_run_time_axis(Ts *ts, Args *a, const char *name, IrNode *x, IrNode *axis, bool keepdims, TsAlongFn along)
{
    IrPos pos = a->call->pos;
    if (!x || !axis) return NULL;
    if (!ts_is_int_scalar(axis->type) || axis->type->dtype == IR_DT_BOOL)
        TS_ERR(ts, pos, "%s(): axis must be an integer, not %s", name, ts_type_name(axis->type));
    if (x->type->kind != IR_TY_ARRAY)
        TS_ERR(ts, pos, "%s(): an axis given at run time needs an array, not %s", name, ts_type_name(x->type));
    if (ts->cond_depth > 0 || !ts->pre)
        TS_ERR(ts, pos, "%s(): an axis given at run time is not supported inside a conditional expression or a "
               "comprehension (assign the result to a variable first)", name);
    int nd = x->type->ndim;
    IrType *i64 = ir_type_scalar(IR_DT_INT64);
    x = ts_reuse(ts, x);
    IrNode *given = ts_reuse(ts, ts_cast(ts, axis, i64));
    /* k = given + ndim if given < 0 else given; out of [0, ndim) raises */
    IrNode *k = ts_ifexp(ts, pos, ts_compare(ts, pos, IR_CMP_LT, given, ts_i64(ts, pos, 0)),
                      ts_scalar_binop(ts, pos, IR_OP_ADD, given, ts_i64(ts, pos, nd)), given);
    k = ts_reuse(ts, k);
    IrNode *in_bounds = ts_scalar_binop(ts, pos, IR_OP_BITAND, ts_compare(ts, pos, IR_CMP_GE, k, ts_i64(ts, pos, 0)),
                                        ts_compare(ts, pos, IR_CMP_LT, k, ts_i64(ts, pos, nd)));
    IrNode *bad = ts_raise(ts, pos, RT_ERR_VALUE, ts_i64(ts, pos, RT_VAL_AXIS), given, ts_i64(ts, pos, nd), i64);
    if (!in_bounds || !bad) return NULL;
    k = ts_reuse(ts, ts_ifexp(ts, pos, in_bounds, k, bad));
    /* arm d: its statements (what it hoists) and its value, built into a block of its own */
    IrBlock *saved = ts->pre;
    IrBlock arms[IR_MAX_DIMS];
    IrNode *vals[IR_MAX_DIMS] = {NULL};
    for (int d = 0; d < nd; d++) {
        arms[d] = (IrBlock){0};
        ts->pre = &arms[d];
        vals[d] = along(ts, a, name, x, d, keepdims);
        ts->pre = saved;
        if (!vals[d]) return NULL;
        if (vals[d]->type != vals[0]->type)
            TS_ERR(ts, pos, "%s(): an axis given at run time is not supported here (the result's type depends on it)", name);
    }
    if (nd < 1 || !vals[0]) return NULL;
    IrVar *res = ir_func_temp(ts->dst, vals[0]->type);
    for (int d = 0; d < nd; d++) {
        IrNode *as = ir_node(ts->a, IR_ASSIGN, pos);
        as->u.assign.var = res;
        as->u.assign.value = vals[d];
        ir_block_push(ts->a, &arms[d], as);
    }
    /* if k == 0: arm 0 else: if k == 1: arm 1 ... else: arm nd-1 */
    IrBlock chain = arms[nd - 1];
    for (int d = nd - 2; d >= 0; d--) {
        IrNode *s = ir_node(ts->a, IR_IF, pos);
        s->u.if_.cond = ts_compare(ts, pos, IR_CMP_EQ, k, ts_i64(ts, pos, d));
        s->u.if_.then = arms[d];
        s->u.if_.orelse = chain;
        chain = (IrBlock){0};
        ir_block_push(ts->a, &chain, s);
    }
    for (int i = 0; i < chain.n; i++) ir_block_push(ts->a, ts->pre, chain.stmts[i]);
    return ts_var(ts, pos, res);
}
