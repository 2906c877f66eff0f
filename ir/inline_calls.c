/* inline_calls.c: calls of small user functions are replaced by the functions' bodies, so that what the callee
 * computes becomes visible to the passes that follow: common subexpressions across two calls (cse.c), a map
 * that fuses into the caller's reduction (fuse.c), an intermediate that needs no array (inline_single_use.c).
 * It runs first, on the root function and its callees (the compilation's call graph, which typespec makes
 * acyclic: recursion is refused there), callees first, so that a chain of small functions collapses.
 *
 * A callee is small when its body is straight-line: at most INLINE_MAX_STMTS statements, assignments to its
 * variables then one `return value` (a docstring, `pass`, is ignored), with at most INLINE_MAX_NODES nodes in
 * all. It may come from another file than the caller's: a copied node keeps its line, and its position names
 * the callee's file (IrPos.file), so an error raised there names the callee's file and line.
 *
 * Each argument is either substituted for its parameter or bound to a new variable of the caller:
 *  - substituted when the parameter is never assigned and the argument is a variable, a constant or a function
 *    value, or an expression that cannot raise or write, read at most once, outside any per-element body, by a
 *    callee that writes nothing, with no argument after it that writes (then it does not matter when it is
 *    evaluated, and nothing is duplicated);
 *  - otherwise bound, `<callee>.<param> = argument`, assigned before the caller's statement, in order.
 * The callee's assignments are copied before the caller's statement too (their variables renamed into new
 * variables of the caller, `<callee>.<name>`), and the call becomes a copy of the returned expression. Moving
 * code before the statement is done only where it cannot be observed: the call is evaluated on every path
 * through the statement and once (not in an arm of `x if c else y`, a map's body, a while condition), and
 * what the statement evaluates before the call can neither write nor raise, nor read memory the moved code
 * writes. A callee made only of `return value` whose arguments are all substituted needs nothing moved: it is
 * inlined wherever it is called, the body of a map included.
 *
 * Copies keep the callee's source positions, so errors raised inside name the callee's line. A callee that no
 * caller calls any more is dropped from the root's list of callees: backends emit only the functions left.
 * This pass never changes what a program computes, nor the order of what can be observed. */
#include <stdio.h>
#include <string.h>
#include "ir.h"

#define INLINE_MAX_STMTS 8
#define INLINE_MAX_NODES 200

typedef enum { FN_NEW, FN_VISITING, FN_DONE } FnState;

/* What the pass knows of one function of the compilation. */
typedef struct FnInfo {
    IrFunc *f;
    FnState state;
    int small;           /* -1: not yet known; else whether the body is straight-line and small */
    int *weight;         /* per variable id: reads, a read in a per-element body counting 2 */
    bool *assigned;      /* per variable id */
    int nassigns;        /* assignments before the return */
    unsigned stmts_fx;   /* their effects */
    unsigned body_fx;    /* effects of the whole body */
    bool called;         /* still called once inlining is over */
} FnInfo;

typedef struct Pass {
    IrFunc *root;
    FnInfo *fns;
    int nfns;
    IrFunc *f;           /* the function being rewritten */
    IrBlock *out;        /* the statements of its current block, where moved code goes */
} Pass;

static FnInfo *info_of(Pass *p, const IrFunc *f)
{
    for (int i = 0; i < p->nfns; i++)
        if (p->fns[i].f == f) return &p->fns[i];
    return NULL;
}

/* ---------------- which callees are small ---------------- */

static void count_nodes(IrNode **slot, void *env)
{
    (*(int *)env)++;
    ir_each_child(*slot, count_nodes, env);
}

static bool count_read(IrNode **slot, const IrEvalPos *pos, void *env)
{
    FnInfo *fi = env;
    if ((*slot)->kind == IR_VAR) fi->weight[(*slot)->u.var.var->id] += pos->repeated ? 2 : 1;
    return true;
}

static bool straight_line(FnInfo *fi)
{
    const IrBlock *b = &fi->f->body;
    if (b->n < 1 || b->n > INLINE_MAX_STMTS) return false;
    const IrNode *last = b->stmts[b->n - 1];
    if (last->kind != IR_RETURN || !last->u.ret.value) return false;
    int nodes = 0;
    for (int i = 0; i < b->n; i++) {
        IrNode *s = b->stmts[i];
        if (i < b->n - 1 && s->kind != IR_ASSIGN && s->kind != IR_PASS) return false;
        ir_each_child(s, count_nodes, &nodes);
    }
    return nodes <= INLINE_MAX_NODES;
}

static bool is_small(Pass *p, FnInfo *fi)
{
    if (fi->small >= 0) return fi->small;
    fi->small = straight_line(fi);
    if (!fi->small) return false;
    IrFunc *f = fi->f;
    fi->weight = rt_arena_alloc(p->root->arena, sizeof(int) * (size_t)(f->nvars + 1));
    fi->assigned = rt_arena_alloc(p->root->arena, sizeof(bool) * (size_t)(f->nvars + 1));
    IrEvalVisitor v = {count_read, NULL};
    for (int i = 0; i < f->body.n; i++) {
        IrNode *s = f->body.stmts[i];
        ir_walk_eval(s, &v, fi);
        unsigned fx = ir_effects(s);
        fi->body_fx |= fx;
        if (s->kind == IR_ASSIGN) {
            fi->assigned[s->u.assign.var->id] = true;
            fi->stmts_fx |= fx;
            fi->nassigns++;
        }
    }
    return true;
}

/* The returned value may have a weak type (a literal) where the call has the strong one: scalars get a cast,
 * tuples are fitted item by item; anything else must already match. */
static bool fits(const IrNode *value, const IrType *want)
{
    const IrType *have = value->type;
    if (have == want) return true;
    if (have->kind == IR_TY_SCALAR && want->kind == IR_TY_SCALAR) return true;
    if (value->kind != IR_TUPLE || want->kind != IR_TY_TUPLE || want->nelems != value->u.tuple.n) return false;
    for (int i = 0; i < value->u.tuple.n; i++)
        if (!fits(value->u.tuple.items[i], want->elems[i])) return false;
    return true;
}

static IrNode *fit(RtArena *a, IrNode *value, IrType *want)
{
    if (value->type == want) return value;
    if (value->type->kind == IR_TY_SCALAR) {
        IrNode *c = ir_node(a, IR_CAST, value->pos);
        c->type = want;
        c->u.cast.value = value;
        return c;
    }
    for (int i = 0; i < value->u.tuple.n; i++) value->u.tuple.items[i] = fit(a, value->u.tuple.items[i], want->elems[i]);
    value->type = want;
    return value;
}

/* ---------------- copying the callee into the caller ---------------- */

typedef struct Copy {
    IrFunc *dst;
    const IrFunc *src;
    IrVar **vars;        /* callee variable id -> the caller's variable standing for it (made on first use) */
    IrNode **subst;      /* callee variable id -> the argument substituted for that parameter, or NULL */
} Copy;

static bool name_taken(const IrFunc *f, const char *name)
{
    for (int i = 0; i < f->nvars; i++)
        if (strcmp(f->vars[i]->name, name) == 0) return true;
    return false;
}

/* "covariance.x", or "covariance.x.2" for the second copy, so that the printed IR stays unambiguous */
static const char *unique_name(const IrFunc *f, const char *func, const char *var, char *name, size_t size)
{
    snprintf(name, size, "%s.%s", func, var);
    for (int k = 2; name_taken(f, name); k++) snprintf(name, size, "%s.%s.%d", func, var, k);
    return name;
}

static IrVar *map_var(Copy *c, IrVar *v)
{
    if (v->id >= c->src->nvars || c->src->vars[v->id] != v) return v; /* not the callee's: cannot happen */
    if (c->vars[v->id]) return c->vars[v->id];
    IrVar *nv;
    if (v->name[0] == '$') {
        nv = ir_func_temp(c->dst, v->type);
    } else {
        char name[200];
        nv = ir_func_new_var(c->dst, unique_name(c->dst, c->src->name, v->name, name, sizeof name));
        nv->type = v->type;
    }
    return c->vars[v->id] = nv;
}

/* A substituted argument: a leaf is copied at each use, an expression (used once at most) moved. */
static IrNode *use_arg(Copy *c, IrNode *arg, int id)
{
    if (arg->kind != IR_VAR && arg->kind != IR_CONST && arg->kind != IR_LAMBDA) {
        c->subst[id] = NULL;
        return arg;
    }
    IrNode *n = ir_node(c->dst->arena, arg->kind, arg->pos);
    *n = *arg;
    return n;
}

/* ir_copy's hooks: a substituted parameter becomes its argument, the callee's variables the caller's new ones,
 * and a copied node's position names the callee's file when the caller's is another */
static IrNode *replace_param(const IrNode *n, void *env)
{
    Copy *c = env;
    if (n->kind != IR_VAR) return NULL;
    int id = n->u.var.var->id;
    return id < c->src->nvars && c->subst[id] ? use_arg(c, c->subst[id], id) : NULL;
}

static IrVar *rename_var(IrVar *v, void *env)
{
    return map_var(env, v);
}

static void keep_file(const IrNode *from, IrNode *to, void *env)
{
    (void)from;
    Copy *c = env;
    if (!to->pos.file && strcmp(c->src->file, c->dst->file) != 0) to->pos.file = c->src->file;
}

static IrNode *copy(Copy *c, const IrNode *n)
{
    IrCopyHooks h = {.replace = replace_param, .map_var = rename_var, .after = keep_file, .env = c};
    return ir_copy(c->dst->arena, n, &h);
}

/* ---------------- one call ---------------- */

static bool is_leaf(const IrNode *n)
{
    return n->kind == IR_VAR || n->kind == IR_CONST || n->kind == IR_LAMBDA;
}

/* Whether parameter i takes its argument by substitution (else it is bound to a new variable). */
static bool substituted(const FnInfo *fi, int i, const IrNode *arg)
{
    int id = fi->f->params[i]->id;
    if (fi->assigned[id]) return false;
    if (is_leaf(arg)) return true;
    return !(ir_effects(arg) & (IR_FX_WRITE | IR_FX_RAISE)) && fi->weight[id] <= 1 && !(fi->body_fx & IR_FX_WRITE);
}

/* Whether the code moved before the statement (bound arguments, the callee's assignments) may go there. */
static bool may_move(const FnInfo *fi, const IrNode *call, const bool *subst, const IrEvalPos *pos)
{
    unsigned moved = fi->stmts_fx;
    bool any = fi->nassigns > 0;
    for (int i = 0; i < call->u.call.nargs; i++)
        if (!subst[i]) {
            moved |= ir_effects(call->u.call.args[i]);
            any = true;
        }
    if (!any) return true;
    if (pos->conditional || pos->repeated) return false;
    if (pos->before & (IR_FX_WRITE | IR_FX_RAISE)) return false;
    return !((moved & IR_FX_WRITE) && (pos->before & IR_FX_READ));
}

static IrNode *inline_call(Pass *p, IrNode *call, FnInfo *fi, const bool *subst)
{
    IrFunc *callee = fi->f;
    RtArena *a = p->f->arena;
    Copy c = {p->f, callee, rt_arena_alloc(a, sizeof(IrVar *) * (size_t)(callee->nvars + 1)),
              rt_arena_alloc(a, sizeof(IrNode *) * (size_t)(callee->nvars + 1))};
    for (int i = 0; i < callee->nparams; i++) {
        IrNode *arg = call->u.call.args[i];
        if (subst[i]) {
            c.subst[callee->params[i]->id] = arg;
            continue;
        }
        IrNode *bind = ir_node(a, IR_ASSIGN, arg->pos);
        bind->u.assign.var = map_var(&c, callee->params[i]);
        bind->u.assign.value = arg;
        ir_block_push(a, p->out, bind);
    }
    for (int i = 0; i < callee->body.n - 1; i++)
        if (callee->body.stmts[i]->kind == IR_ASSIGN) ir_block_push(a, p->out, copy(&c, callee->body.stmts[i]));
    IrNode *value = copy(&c, callee->body.stmts[callee->body.n - 1]->u.ret.value);
    return fit(a, value, call->type);
}

static void visit_func(Pass *p, FnInfo *fi);

static void inline_at(IrNode **slot, const IrEvalPos *pos, void *env)
{
    Pass *p = env;
    IrNode *call = *slot;
    if (call->kind != IR_CALL || call->u.call.ckind != IR_CALLEE_FUNC || !call->u.call.callee) return;
    FnInfo *fi = info_of(p, call->u.call.callee);
    if (!fi || fi->state != FN_DONE || !is_small(p, fi)) return;
    IrFunc *callee = fi->f;
    if (call->u.call.nargs != callee->nparams || call->u.call.nkw) return;
    if (!fits(callee->body.stmts[callee->body.n - 1]->u.ret.value, call->type)) return;
    bool *subst = rt_arena_alloc(p->f->arena, sizeof(bool) * (size_t)(callee->nparams + 1));
    /* right to left: an expression substituted is evaluated after the arguments bound, so none after it may
     * write (a(x.sum(), fill(x)) must sum before fill writes) */
    bool later_writes = false;
    for (int i = callee->nparams - 1; i >= 0; i--) {
        IrNode *arg = call->u.call.args[i];
        subst[i] = substituted(fi, i, arg) && (is_leaf(arg) || !later_writes);
        if (!subst[i]) later_writes = later_writes || (ir_effects(arg) & IR_FX_WRITE);
    }
    if (!may_move(fi, call, subst, pos)) return;
    *slot = inline_call(p, call, fi, subst);
}

/* ---------------- functions, callees first ---------------- */

static void rewrite_block(Pass *p, IrBlock *b)
{
    IrBlock out = {0};
    IrEvalVisitor v = {NULL, inline_at};
    for (int i = 0; i < b->n; i++) {
        IrNode *s = b->stmts[i];
        p->out = &out;
        ir_walk_eval(s, &v, p);
        switch (s->kind) {
        case IR_IF: rewrite_block(p, &s->u.if_.then); rewrite_block(p, &s->u.if_.orelse); break;
        case IR_WHILE: rewrite_block(p, &s->u.while_.body); break;
        case IR_FOR_RANGE: rewrite_block(p, &s->u.for_range.body); break;
        case IR_FOR_ITER: rewrite_block(p, &s->u.for_iter.body); break;
        default: break;
        }
        ir_block_push(p->f->arena, &out, s);
    }
    *b = out;
}

static void visit_callees(IrNode **slot, void *env)
{
    Pass *p = env;
    IrNode *n = *slot;
    if (n->kind == IR_CALL && n->u.call.ckind == IR_CALLEE_FUNC && n->u.call.callee) {
        FnInfo *fi = info_of(p, n->u.call.callee);
        if (fi && fi->state == FN_NEW) visit_func(p, fi);
    }
    ir_each_child(n, visit_callees, env);
}

static void visit_callees_of(IrNode *s, void *env)
{
    ir_each_child(s, visit_callees, env);
}

static void visit_func(Pass *p, FnInfo *fi)
{
    fi->state = FN_VISITING; /* a call back into a function being visited (recursion) stays a call */
    ir_each_stmt(&fi->f->body, visit_callees_of, p);
    IrFunc *saved = p->f;
    p->f = fi->f;
    rewrite_block(p, &fi->f->body);
    p->f = saved;
    fi->state = FN_DONE;
}

/* ---------------- callees still called ---------------- */

static void mark_called(IrNode **slot, void *env);

static void mark_stmt(IrNode *s, void *env)
{
    ir_each_child(s, mark_called, env);
}

static void mark_called(IrNode **slot, void *env)
{
    Pass *p = env;
    IrNode *n = *slot;
    if (n->kind == IR_CALL && n->u.call.ckind == IR_CALLEE_FUNC && n->u.call.callee) {
        FnInfo *fi = info_of(p, n->u.call.callee);
        if (fi && !fi->called) {
            fi->called = true;
            ir_each_stmt(&fi->f->body, mark_stmt, p);
        }
    }
    ir_each_child(n, mark_called, env);
}

/* The root's callees are the functions backends emit: keep those some call still reaches, in their order. */
static void drop_uncalled(Pass *p)
{
    ir_each_stmt(&p->root->body, mark_stmt, p);
    int k = 0;
    for (int i = 1; i < p->nfns; i++)
        if (p->fns[i].called && p->fns[i].f != p->root) p->root->callees[k++] = p->fns[i].f;
    p->root->ncallees = k;
}

void ir_inline_calls(IrFunc *root)
{
    if (root->ncallees == 0) return;
    Pass p = {.root = root, .nfns = root->ncallees + 1};
    p.fns = rt_arena_alloc(root->arena, sizeof(FnInfo) * (size_t)p.nfns);
    p.fns[0] = (FnInfo){.f = root, .small = -1};
    for (int i = 0; i < root->ncallees; i++) p.fns[i + 1] = (FnInfo){.f = root->callees[i], .small = -1};
    visit_func(&p, &p.fns[0]);
    drop_uncalled(&p);
}
