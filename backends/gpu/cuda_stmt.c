/* cuda_stmt.c: statements of element code as CUDA C (a prange body, a device function's body), the user
 * functions that element code calls as __device__ functions, and the reductions' identities and combines
 * (ir/reduce_ops.c decides them; here they are lowered with the ordinary expression code). */
#include "cuda.h"

const char *cu_red_identity(Cu *c, IrReduceOp op, IrDtype dt)
{
    IrNode k = ir_reduce_identity(op, dt);
    return cu_konst(c, k.type, k.u.konst.i, k.u.konst.f);
}

const char *cu_red_combine(Cu *c, IrReduceOp op, IrDtype dt, const char *acc, const char *x, IrPos pos)
{
    IrNode a = {.kind = IR_VAR, .type = ir_type_scalar(dt), .pos = pos}, b = a;
    IrNode *n = ir_reduce_combine(c->a, op, dt, &a, &b);
    if (!n) return acc;
    if (n->kind == IR_MATH) return cu_math(c, n->u.math.fn, dt, acc, x);
    return cu_binop(c, n, n->u.binop.op, dt, acc, x);
}

const char *cu_arg_better(Cu *c, IrReduceOp op, IrDtype dt, const char *x, const char *xi, const char *best,
                          const char *bi)
{
    const char *cmp = op == IR_RED_ARGMAX ? ">" : "<";
    if (!ir_dtype_is_float(dt))
        return cu_fmt(c, "(%s %s %s || (%s == %s && %s < %s))", x, cmp, best, x, best, xi, bi);
    return cu_fmt(c, "(%s %s %s || (%s != %s && %s == %s) || ((%s == %s || (%s != %s && %s != %s)) && %s < %s))", x,
                  cmp, best, x, x, best, best, x, best, x, x, best, best, xi, bi);
}

const char *cu_apply_combine(Cu *c, const IrCombine *cb, const char *acc, const char *x)
{
    cu_line(c, "v%d = %s;", cb->acc_param->id, acc);
    cu_line(c, "v%d = %s;", cb->elem_param->id, x);
    return cu_expr(c, cb->body);
}

static bool representable(const IrType *t)
{
    return t && (t->kind == IR_TY_SCALAR || t->kind == IR_TY_ARRAY || t->kind == IR_TY_TUPLE);
}

void cu_declare_vars(Cu *c, const IrFunc *f, const bool *used)
{
    for (int i = 0; i < f->nvars; i++) {
        const IrVar *v = f->vars[i];
        if (used && !used[i]) continue;
        if (representable(v->type)) cu_line(c, "%s v%d;", cu_type(c, v->type), v->id);
        if (v->maybe_unbound) cu_line(c, "bool b%d = false;", v->id);
    }
}

static void mark(bool *used, const IrVar *v)
{
    if (v) used[v->id] = true;
}

static void mark_combine(bool *used, const IrCombine *cb)
{
    mark(used, cb->acc_param);
    mark(used, cb->elem_param);
}

static void used_in(IrNode **p, void *env)
{
    bool *used = env;
    IrNode *n = *p;
    if (n->kind == IR_VAR) mark(used, n->u.var.var);
    if (n->kind == IR_ASSIGN) mark(used, n->u.assign.var);
    if (n->kind == IR_FOR_RANGE) mark(used, n->u.for_range.var);
    if (n->kind == IR_MAP)
        for (int i = 0; i < n->u.map.nparams; i++) mark(used, n->u.map.params[i]);
    if (n->kind == IR_IMAP)
        for (int i = 0; i < n->u.imap.ndim; i++) mark(used, n->u.imap.idx[i]);
    if (n->kind == IR_REDUCE) mark_combine(used, &n->u.reduce.combine);
    if (n->kind == IR_SCAN) mark_combine(used, &n->u.scan.combine);
    ir_each_child(n, used_in, env);
    IrBlock *blocks[2];
    int nb = ir_stmt_blocks(n, blocks);
    for (int k = 0; k < nb; k++)
        for (int i = 0; i < blocks[k]->n; i++) used_in(&blocks[k]->stmts[i], env);
}

bool *cu_vars_used(Cu *c, const IrFunc *f, IrNode *n)
{
    bool *used = rt_arena_alloc(c->a, sizeof *used * (size_t)(f->nvars + 1));
    used_in(&n, used);
    return used;
}

static bool push_loop(Cu *c, const IrNode *s, int *brk, int *cont)
{
    if (c->loop_depth == CU_MAX_LOOPS) {
        lk_diag_set(c->diag, LK_ERR_COMPILE, c->f->file, s->pos.line, s->pos.col, "loops nested too deeply");
        return false;
    }
    *brk = c->nlabel++;
    *cont = c->nlabel++;
    c->brk[c->loop_depth] = *brk;
    c->cont[c->loop_depth] = *cont;
    c->loop_depth++;
    return true;
}

static bool while_loop(Cu *c, const IrNode *s)
{
    int brk, cont;
    if (!push_loop(c, s, &brk, &cont)) return false;
    cu_line(c, "for (;;) {");
    c->indent++;
    cu_line(c, "{");
    c->indent++;
    const char *cond = cu_expr(c, s->u.while_.cond);
    if (!cond) return false;
    cu_line(c, "if (!%s) goto lk_L%d;", cu_truth(c, cond, s->u.while_.cond->type), brk);
    c->indent--;
    cu_line(c, "}");
    if (!cu_block(c, &s->u.while_.body)) return false;
    cu_line(c, "lk_L%d: ;", cont);
    c->indent--;
    cu_line(c, "}");
    cu_line(c, "lk_L%d: ;", brk);
    c->loop_depth--;
    return true;
}

/* for v in range(start, stop, step), run in the thread (a nested prange too: prange's rules make it mean the
 * same as range): a hidden counter; a step past the type's end ends the loop, as Python's ints would. */
bool cu_for_range(Cu *c, const IrNode *s)
{
    const IrType *t = s->u.for_range.var->type;
    const char *T = cu_type(c, t);
    const char *parts[3];
    const IrNode *nodes[3] = {s->u.for_range.start, s->u.for_range.stop, s->u.for_range.step};
    for (int i = 0; i < 3; i++) {
        const char *v = cu_expr(c, nodes[i]);
        if (!v) return false;
        parts[i] = cu_tmp(c, t, "%s", cu_cast(c, v, nodes[i]->type, t));
    }
    const IrNode *step_node = nodes[2];
    if (!(step_node->kind == IR_CONST && step_node->u.konst.i != 0))
        cu_raise(c, cu_fmt(c, "%s == 0", parts[2]), RT_ERR_VALUE, s->pos, cu_fmt(c, "%d", RT_VAL_RANGE_STEP_ZERO), NULL, NULL);
    const char *i = cu_tmp(c, t, "%s", parts[0]);
    const char *done = cu_tmp(c, ir_type_scalar(IR_DT_BOOL), "false");
    int brk, cont;
    if (!push_loop(c, s, &brk, &cont)) return false;
    bool sg = ir_dtype_is_signed(t->dtype);
    cu_line(c, "for (;;) {");
    c->indent++;
    cu_line(c, "if (%s || !(%s > 0 ? %s < %s : %s > %s)) break;", done, parts[2], i, parts[1], i, parts[1]);
    cu_line(c, "v%d = %s;", s->u.for_range.var->id, i);
    if (s->u.for_range.var->maybe_unbound) cu_line(c, "b%d = true;", s->u.for_range.var->id);
    if (!cu_block(c, &s->u.for_range.body)) return false;
    cu_line(c, "lk_L%d: ;", cont);
    cu_line(c, "{");
    c->indent++;
    if (sg) {
        const char *W = ir_dtype_bits(t->dtype) > 32 ? "u64" : "u32";
        cu_line(c, "%s nx = (%s)((%s)%s + (%s)%s);", T, T, W, i, W, parts[2]);
        cu_line(c, "%s = %s > 0 ? nx < %s : nx > %s;", done, parts[2], i, i);
        cu_line(c, "%s = nx;", i);
    } else {
        cu_line(c, "%s nx = (%s)(%s + %s);", T, T, i, parts[2]);
        cu_line(c, "%s = nx < %s;", done, i);
        cu_line(c, "%s = nx;", i);
    }
    c->indent--;
    cu_line(c, "}");
    c->indent--;
    cu_line(c, "}");
    cu_line(c, "lk_L%d: ;", brk);
    c->loop_depth--;
    return true;
}

bool cu_stmt(Cu *c, const IrNode *s)
{
    if (c->diag->kind != LK_OK) return false;
    bool ok = true;
    cu_line(c, "{ /* line %d */", s->pos.line);
    c->indent++;
    switch (s->kind) {
    case IR_ASSIGN: {
        const IrVar *v = s->u.assign.var;
        const char *x = cu_expr(c, s->u.assign.value);
        if (!x) {
            ok = false;
            break;
        }
        if (representable(v->type)) cu_line(c, "v%d = %s;", v->id, cu_cast(c, x, s->u.assign.value->type, v->type));
        if (v->maybe_unbound) cu_line(c, "b%d = true;", v->id);
        break;
    }
    case IR_STORE: ok = cu_store(c, s); break;
    case IR_IF: {
        const char *cond = cu_expr(c, s->u.if_.cond);
        if (!cond) {
            ok = false;
            break;
        }
        cu_line(c, "if (%s) {", cu_truth(c, cond, s->u.if_.cond->type));
        c->indent++;
        ok = cu_block(c, &s->u.if_.then);
        c->indent--;
        cu_line(c, "} else {");
        c->indent++;
        ok = ok && cu_block(c, &s->u.if_.orelse);
        c->indent--;
        cu_line(c, "}");
        break;
    }
    case IR_WHILE: ok = while_loop(c, s); break;
    case IR_FOR_RANGE: ok = cu_for_range(c, s); break;
    case IR_BREAK: cu_line(c, "goto lk_L%d;", c->brk[c->loop_depth - 1]); break;
    case IR_CONTINUE: cu_line(c, "goto lk_L%d;", c->cont[c->loop_depth - 1]); break;
    case IR_RETURN:
        if (c->fail[0] != 'r') { /* a return in a kernel's element code: prange's rules forbid it */
            ok = cu_refuse(c, s, "a return statement") != NULL;
            break;
        }
        if (s->u.ret.value) {
            const char *x = cu_expr(c, s->u.ret.value);
            if (!x) {
                ok = false;
                break;
            }
            cu_line(c, "*lk_ret = %s;", cu_cast(c, x, s->u.ret.value->type, c->f->ret_type));
        }
        cu_line(c, "return 0;");
        break;
    case IR_EXPR_STMT: ok = cu_expr(c, s->u.expr_stmt.value) != NULL; break;
    case IR_PASS: break;
    case IR_AUGASSIGN: case IR_FOR_ITER:
        lk_diag_set(c->diag, LK_ERR_INTERNAL, c->f->file, s->pos.line, s->pos.col, "the gpu backend cannot lower a %s statement",
                    ir_kind_name(s->kind));
        ok = false;
        break;
    case IR_CONST: case IR_VAR: case IR_NAMEREF: case IR_BINOP: case IR_UNOP: case IR_COMPARE: case IR_BOOLOP:
    case IR_IFEXP: case IR_CALL: case IR_INDEX: case IR_SLICE: case IR_ATTR: case IR_TUPLE: case IR_TUPLE_GET:
    case IR_LAMBDA: case IR_COMPREHENSION: case IR_CAST: case IR_MATH: case IR_ARRAY_DIM: case IR_ALLOC: case IR_MAP:
    case IR_IMAP: case IR_REDUCE: case IR_SCAN: case IR_BCAST_SHAPE: case IR_KIND_COUNT:
        ok = cu_expr(c, s) != NULL;
        break;
    }
    c->indent--;
    cu_line(c, "}");
    return ok && c->diag->kind == LK_OK;
}

bool cu_block(Cu *c, const IrBlock *b)
{
    for (int i = 0; i < b->n; i++)
        if (!cu_stmt(c, b->stmts[i])) return false;
    return true;
}

/* ---------------- device functions ---------------- */

static void add_dev(Cu *c, IrFunc *f);

static void find_calls(IrNode **p, void *env)
{
    Cu *c = env;
    IrNode *n = *p;
    if (n->kind == IR_CALL && n->u.call.ckind == IR_CALLEE_FUNC && n->u.call.callee) add_dev(c, n->u.call.callee);
    ir_each_child(n, find_calls, env);
    IrBlock *blocks[2];
    int nb = ir_stmt_blocks(n, blocks);
    for (int k = 0; k < nb; k++)
        for (int i = 0; i < blocks[k]->n; i++) find_calls(&blocks[k]->stmts[i], env);
}

static void add_dev(Cu *c, IrFunc *f)
{
    if (cu_dev_index(c, f) >= 0) return;
    IrFunc **dev = rt_arena_alloc(c->a, sizeof *dev * (size_t)(c->ndev + 1));
    for (int i = 0; i < c->ndev; i++) dev[i] = c->dev[i];
    dev[c->ndev++] = f;
    c->dev = dev;
    for (int i = 0; i < f->body.n; i++) find_calls(&f->body.stmts[i], c);
}

void cu_find_device_calls(Cu *c, IrNode *n)
{
    find_calls(&n, c);
}

static void signature(Cu *c, CuBuf *b, int k)
{
    const IrFunc *f = c->dev[k];
    cu_buf_printf(b, "__device__ int lk_f%d(unsigned char *lk_err, u64 lk_order, %s *lk_ret", k, cu_type(c, f->ret_type));
    for (int i = 0; i < f->nparams; i++) cu_buf_printf(b, ", %s a%d", cu_type(c, f->params[i]->type), i);
    cu_buf_printf(b, ")");
}

/* Every function element code calls, as `__device__ int lk_f<k>(err, order, ret, params...)`: 0, or 1 after
 * writing the error record. Prototypes first, so that calls may come in any order. */
bool cu_device_functions(Cu *c, CuBuf *protos, CuBuf *defs)
{
    for (int k = 0; k < c->ndev; k++) {
        IrFunc *f = c->dev[k];
        const IrFunc *saved_f = c->f;
        CuBuf *saved_out = c->out;
        c->f = f;
        c->out = defs;
        c->fail = "return 1;";
        c->loop_depth = 0;
        signature(c, protos, k);
        cu_buf_printf(protos, ";\n");
        cu_buf_printf(defs, "/* %s, %s:%d */\n", f->name, f->file, f->line);
        signature(c, defs, k);
        cu_buf_printf(defs, "\n{\n");
        c->indent = 1;
        cu_declare_vars(c, f, NULL);
        for (int i = 0; i < f->nparams; i++) {
            if (representable(f->params[i]->type)) cu_line(c, "v%d = a%d;", f->params[i]->id, i);
            if (f->params[i]->maybe_unbound) cu_line(c, "b%d = true;", f->params[i]->id);
        }
        bool ok = cu_block(c, &f->body);
        cu_line(c, "return 0;");
        c->indent = 0;
        cu_buf_printf(defs, "}\n\n");
        c->f = saved_f;
        c->out = saved_out;
        if (!ok) return false;
    }
    return true;
}
