/* inline_single_use.c: an array variable assigned once and read once, a little later in the same block,
 *
 *     d = a*a + b*b
 *     r = np.sqrt(d)
 *     return np.sum(r * np.exp(-c))
 *
 * is an intermediate nobody else sees: its expression replaces the read, so that fusion (fuse.c) makes one loop of
 * the chain and no array is allocated. It runs before fusion. The move is made only when it cannot change what
 * is computed or how often:
 *  - the expression is a map or index map (an array expression without side effects);
 *  - the variable is assigned once and read once in the whole function;
 *  - the read is in a later statement of the same block, outside any map, index map or combine body (which run
 *    once per element) and that statement is not a while loop (whose condition runs again and again);
 *  - the statements in between only assign variables that the expression does not read, and neither they nor the
 *    reading statement call user functions (which could write the arrays it reads). */
#include "ir.h"

typedef struct Counts {
    int *reads, *writes;
    bool call;            /* a user function is called */
} Counts;

static void count_expr(IrNode **p, void *env)
{
    Counts *c = env;
    IrNode *n = *p;
    if (n->kind == IR_VAR) c->reads[n->u.var.var->id]++;
    if (n->kind == IR_CALL && n->u.call.ckind == IR_CALLEE_FUNC) c->call = true;
    ir_each_child(n, count_expr, env);
}

static void count_stmt(IrNode *s, void *env)
{
    Counts *c = env;
    if (s->kind == IR_ASSIGN) c->writes[s->u.assign.var->id]++;
    if (s->kind == IR_FOR_RANGE) c->writes[s->u.for_range.var->id]++;
    ir_each_child(s, count_expr, env);
}

/* Where the one read of `var` is in a statement: its slot, if it is outside every per-element body. */
typedef struct Find {
    const IrVar *var;
    IrNode **slot;
    bool in_body;
    bool bad;            /* found, but inside a body */
} Find;

static void find_read(IrNode **p, void *env);

static void find_in(IrNode **p, Find *f, bool body)
{
    if (!*p) return;
    bool saved = f->in_body;
    f->in_body = f->in_body || body;
    find_read(p, f);
    f->in_body = saved;
}

static void find_read(IrNode **p, void *env)
{
    Find *f = env;
    IrNode *n = *p;
    if (n->kind == IR_VAR && n->u.var.var == f->var) {
        if (f->in_body) f->bad = true;
        else f->slot = p;
        return;
    }
    switch (n->kind) {
    case IR_MAP:
        for (int i = 0; i < n->u.map.ninputs; i++) find_in(&n->u.map.inputs[i], f, false);
        find_in(&n->u.map.body, f, true);
        find_in(&n->u.map.out, f, false);
        return;
    case IR_IMAP:
        for (int i = 0; i < n->u.imap.ndim; i++) find_in(&n->u.imap.dims[i], f, false);
        find_in(&n->u.imap.body, f, true);
        find_in(&n->u.imap.out, f, false);
        return;
    case IR_REDUCE:
        find_in(&n->u.reduce.input, f, false);
        find_in(&n->u.reduce.out, f, false);
        find_in(&n->u.reduce.combine.body, f, true);
        find_in(&n->u.reduce.combine.init, f, false);
        return;
    case IR_SCAN:
        find_in(&n->u.scan.input, f, false);
        find_in(&n->u.scan.out, f, false);
        find_in(&n->u.scan.combine.body, f, true);
        find_in(&n->u.scan.combine.init, f, false);
        return;
    default: ir_each_child(n, find_read, env); return;
    }
}

static bool reads_var(IrNode *e, const IrVar *v)
{
    Find f = {v, NULL, false, false};
    find_read(&e, &f);
    return f.slot || f.bad;
}

typedef struct Pass {
    IrFunc *f;
    Counts counts;
} Pass;

static void has_call(IrNode **p, void *env)
{
    bool *found = env;
    if ((*p)->kind == IR_CALL && (*p)->u.call.ckind == IR_CALLEE_FUNC) *found = true;
    else if (!*found) ir_each_child(*p, has_call, env);
}

static bool stmt_calls(IrNode *s)
{
    bool found = false;
    ir_each_child(s, has_call, &found);
    return found;
}

/* Try to move the expression of stmts[i] (v = e) into its single read; true if done. */
static bool try_inline(Pass *p, IrBlock *b, int i)
{
    IrNode *s = b->stmts[i];
    if (s->kind != IR_ASSIGN) return false;
    IrNode *e = s->u.assign.value;
    IrVar *v = s->u.assign.var;
    if (!((e->kind == IR_MAP && !e->u.map.out) || (e->kind == IR_IMAP && !e->u.imap.out))) return false;
    if (p->counts.writes[v->id] != 1 || p->counts.reads[v->id] != 1) return false;
    for (int j = i + 1; j < b->n; j++) {
        IrNode *t = b->stmts[j];
        Find f = {v, NULL, false, false};
        if (t->kind != IR_IF && t->kind != IR_WHILE && t->kind != IR_FOR_RANGE) ir_each_child(t, find_read, &f);
        else if (t->kind == IR_IF) find_read(&t->u.if_.cond, &f);
        else if (t->kind == IR_FOR_RANGE) ir_each_child(t, find_read, &f);
        if (f.bad) return false;
        if (f.slot) {
            if (t->kind == IR_WHILE || stmt_calls(t)) return false;
            *f.slot = e;
            b->stmts[i] = ir_node(p->f->arena, IR_PASS, s->pos);
            return true;
        }
        /* a statement in between: only an assignment of something e does not read, calling nothing */
        if (t->kind == IR_PASS) continue;
        if (t->kind != IR_ASSIGN || reads_var(e, t->u.assign.var) || stmt_calls(t)) return false;
    }
    return false;
}

static void visit_block(Pass *p, IrBlock *b)
{
    for (int i = 0; i < b->n; i++) {
        IrNode *s = b->stmts[i];
        switch (s->kind) {
        case IR_IF: visit_block(p, &s->u.if_.then); visit_block(p, &s->u.if_.orelse); break;
        case IR_WHILE: visit_block(p, &s->u.while_.body); break;
        case IR_FOR_RANGE: visit_block(p, &s->u.for_range.body); break;
        default: break;
        }
    }
    /* backwards, so a chain collapses into its last user: r = f(d) absorbs d, then the sum absorbs r */
    for (int i = b->n - 1; i >= 0; i--) try_inline(p, b, i);
}

void ir_inline_single_use(IrFunc *f)
{
    Pass p = {f, {rt_arena_alloc(f->arena, sizeof(int) * (size_t)(f->nvars + 1)),
                  rt_arena_alloc(f->arena, sizeof(int) * (size_t)(f->nvars + 1)), false}};
    for (int i = 0; i < f->nparams; i++) p.counts.writes[f->params[i]->id]++;
    ir_each_stmt(&f->body, count_stmt, &p.counts);
    visit_block(&p, &f->body);
}
