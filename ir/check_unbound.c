/* check_unbound.c: Python raises UnboundLocalError when a variable is read before any assignment on the path
 * taken. This pass finds the reads where that can happen: a forward analysis of the variables definitely
 * assigned at each point (intersection at joins; a loop body may run zero times; code after return, break,
 * continue or raise is unreachable). Those reads get check_bound, and their variable maybe_unbound, so the backend
 * keeps an "assigned" flag for it and raises where a check fails. Everywhere else there is no cost. */
#include <string.h>
#include "ir.h"

typedef struct Set {
    unsigned char *bits;   /* one byte a variable: simple, and functions have few variables */
    bool all;              /* unreachable: every variable counts as assigned */
} Set;

typedef struct Pass {
    IrFunc *f;
    int n;
} Pass;

static Set set_new(Pass *p, bool all)
{
    Set s = {rt_arena_alloc(p->f->arena, (size_t)p->n + 1), all};
    return s;
}

static Set set_copy(Pass *p, Set s)
{
    Set c = set_new(p, s.all);
    memcpy(c.bits, s.bits, (size_t)p->n);
    return c;
}

static Set set_meet(Pass *p, Set a, Set b)
{
    if (a.all) return set_copy(p, b);
    if (b.all) return set_copy(p, a);
    Set c = set_new(p, false);
    for (int i = 0; i < p->n; i++) c.bits[i] = a.bits[i] && b.bits[i];
    return c;
}

typedef struct Reads {
    Set *assigned;
} Reads;

static void mark_reads(IrNode **np, void *env)
{
    Reads *r = env;
    IrNode *n = *np;
    if (n->kind == IR_VAR) {
        IrVar *v = n->u.var.var;
        if (v->name[0] != '$' && !r->assigned->all && !r->assigned->bits[v->id]) {
            n->u.var.check_bound = true;
            v->maybe_unbound = true;
        }
        return;
    }
    ir_each_child(n, mark_reads, env);
}

static void reads(Set *assigned, IrNode *n)
{
    Reads r = {assigned};
    if (ir_is_statement(n->kind)) ir_each_child(n, mark_reads, &r);
    else mark_reads(&n, &r);
}

static Set block(Pass *p, IrBlock *b, Set in);

static Set stmt(Pass *p, IrNode *s, Set in)
{
    switch (s->kind) {
    case IR_ASSIGN:
        reads(&in, s);
        in.bits[s->u.assign.var->id] = 1;
        return in;
    case IR_IF: {
        reads(&in, s->u.if_.cond);
        Set t = block(p, &s->u.if_.then, set_copy(p, in));
        Set e = block(p, &s->u.if_.orelse, set_copy(p, in));
        return set_meet(p, t, e);
    }
    case IR_WHILE:
        reads(&in, s->u.while_.cond);
        block(p, &s->u.while_.body, set_copy(p, in));
        return in;
    case IR_FOR_RANGE: {
        reads(&in, s);
        Set body = set_copy(p, in);
        body.bits[s->u.for_range.var->id] = 1;
        block(p, &s->u.for_range.body, body);
        return in;
    }
    case IR_RETURN: case IR_BREAK: case IR_CONTINUE:
        reads(&in, s);
        return set_new(p, true);
    case IR_EXPR_STMT:
        reads(&in, s);
        return ir_is_raise_stmt(s) ? set_new(p, true) : in; /* a raise: what follows is unreachable */
    default:
        reads(&in, s);
        return in;
    }
}

static Set block(Pass *p, IrBlock *b, Set in)
{
    for (int i = 0; i < b->n; i++) in = stmt(p, b->stmts[i], in);
    return in;
}

void ir_check_unbound(IrFunc *f)
{
    Pass p = {f, f->nvars};
    Set in = set_new(&p, false);
    for (int i = 0; i < f->nparams; i++) in.bits[f->params[i]->id] = 1;
    block(&p, &f->body, in);
}
