/* sibling_reductions.c: reductions of everything that walk the same space, computed in one pass (issue 15).
 *
 *     xm = x.mean(); ym = y.mean()                          # two passes: x, then y
 *     c = ((x - xm) * (y - ym)).mean() / ((x - xm) ** 2).mean()   # two more, both over x
 *
 * Each reduction is its own loop over its input, so x is read three times where twice would do. This pass finds
 * such siblings in a run of statements and evaluates them first, together, as one tuple marked one_pass:
 *
 *     $g = one_pass (reduce[add](x), reduce[add](y))
 *     xm = $g[0] / float64(x.shape[0]); ym = $g[1] / float64(y.shape[0])
 *
 * A tuple's items are evaluated in order (ir.h), so the program means what it meant before whatever a backend
 * does with the mark; one_pass says a backend MAY run the items as one loop over their common space, each with
 * its own accumulator, when their spaces agree at run time (the llvm backends do, on one thread or on the team;
 * the gpu backend evaluates them one by one). This pass decides only what is safe to move.
 *
 * A member is a reduction of everything (axis -1, no out) with a built-in operation that is not argmin or
 * argmax (the llvm sinks accumulate those as one combine expression), whose input is a map over variables and
 * constants only (evaluating them again costs nothing and changes nothing) with a body that cannot raise,
 * write, read arrays or allocate, of the same rank as the first member's. It is evaluated in its statement
 * unconditionally and once (not in an arm of `a if c else b`, an operand after the first of and/or, or a
 * per-element body). The move puts it before everything that came between the group's start and it (the
 * "span": the parts of the group's statements that are not members), which must not change what is computed
 * or which error comes first:
 *  - the span writes no memory, and assigns no variable the member reads (statements are plain assignments);
 *  - if the member may raise (its inputs' shapes may clash, or an empty input raises for min and max), the span
 *    cannot raise: the member's error would otherwise come before one the program raised first. Members keep
 *    their order, so among themselves the first error is the same.
 * A group is a run of statements from one assignment (or the return or expression statement that ends it);
 * one of two members or more is made one_pass. */
#include <string.h>
#include "ir.h"

#define MAX_MEMBERS IR_MAX_TUPLE

typedef struct Group {
    bool *assigned;            /* by var id: assigned by a statement of the run before the current one (the
                                * function's one buffer, all false again when the group is done) */
    int nids;                  /* its length: the variables the function had when the pass began (a group's
                                * tuple variable is newer; no later group reads or assigns one) */
    unsigned span;             /* effects of the non-member parts evaluated since the run began */
    int ndim;                  /* the members' rank (-1 before the first) */
    IrNode **slots[MAX_MEMBERS];
    int n;
    int stmt, first, last;     /* the statement being walked; the first and the last that hold a member */
} Group;

/* The reduction's input map reads only variables and constants, and its body does nothing but compute. */
static bool plain_input(const IrNode *map)
{
    if (map->kind != IR_MAP || map->u.map.out) return false;
    for (int i = 0; i < map->u.map.ninputs; i++) {
        const IrNode *in = map->u.map.inputs[i];
        if (in->kind == IR_CONST) continue;
        if (in->kind != IR_VAR || in->u.var.check_bound) return false;
    }
    return ir_effects(map->u.map.body) == 0;
}

static bool is_member_kind(const IrNode *n)
{
    if (n->kind != IR_REDUCE || n->u.reduce.axis >= 0 || n->u.reduce.out) return false;
    IrReduceOp op = n->u.reduce.op;
    if (op == IR_RED_FUNC || op == IR_RED_ARGMIN || op == IR_RED_ARGMAX) return false;
    if (n->type->kind != IR_TY_SCALAR) return false;
    return plain_input(n->u.reduce.input);
}

static bool reads_assigned(const Group *g, const IrNode *map)
{
    for (int i = 0; i < map->u.map.ninputs; i++) {
        const IrNode *in = map->u.map.inputs[i];
        if (in->kind == IR_VAR && (in->u.var.var->id >= g->nids || g->assigned[in->u.var.var->id])) return true;
    }
    return false;
}

static bool take(IrNode **slot, const IrEvalPos *pos, void *env)
{
    Group *g = env;
    IrNode *n = *slot;
    if (pos->conditional || pos->repeated || !is_member_kind(n) || g->n == MAX_MEMBERS) return true;
    const IrNode *map = n->u.reduce.input;
    if (g->ndim >= 0 && map->type->ndim != g->ndim) return true;
    if (g->span & IR_FX_WRITE || reads_assigned(g, map)) return true;
    if ((ir_effects(n) & IR_FX_RAISE) && (g->span & IR_FX_RAISE)) return true;
    g->ndim = map->type->ndim;
    if (g->n == 0) g->first = g->stmt;
    g->slots[g->n++] = slot;
    g->last = g->stmt;
    return false; /* a member: moved, so its effects are not the span's */
}

static void passed(IrNode **slot, const IrEvalPos *pos, void *env)
{
    (void)pos;
    ((Group *)env)->span |= ir_node_effects(*slot);
}

static bool may_join(IrKind k) { return k == IR_ASSIGN || k == IR_RETURN || k == IR_EXPR_STMT; }

/* Statements i.. of b: the group they start; returns how many statements it covers (0: none made). A
 * statement after the last member's may hold the start of another group. */
static int group_from(IrFunc *f, IrBlock *b, int i, bool *assigned, int nids)
{
    Group g = {.assigned = assigned, .nids = nids, .ndim = -1};
    IrEvalVisitor v = {take, passed};
    int j = i;
    while (j < b->n && may_join(b->stmts[j]->kind)) {
        IrNode *s = b->stmts[j];
        g.stmt = j;
        ir_walk_eval(s, &v, &g);
        j++;
        if (s->kind != IR_ASSIGN || g.span & IR_FX_WRITE || s->u.assign.var->id >= nids) break;
        g.assigned[s->u.assign.var->id] = true;
    }
    for (int q = i; q < j; q++) { /* the buffer all false again for the next group (no statement moved yet) */
        const IrNode *s = b->stmts[q];
        if (s->kind == IR_ASSIGN && s->u.assign.var->id < nids) g.assigned[s->u.assign.var->id] = false;
    }
    if (g.n < 2) return 0;
    /* $g = one_pass (members...), before the first member's statement; each member's place reads its item */
    IrType *elems[MAX_MEMBERS];
    IrNode *tuple = ir_node(f->arena, IR_TUPLE, b->stmts[g.first]->pos);
    tuple->u.tuple.items = ir_nodes(f->arena, g.n);
    tuple->u.tuple.n = g.n;
    tuple->u.tuple.one_pass = true;
    for (int k = 0; k < g.n; k++) {
        tuple->u.tuple.items[k] = *g.slots[k];
        elems[k] = (*g.slots[k])->type;
    }
    tuple->type = ir_type_tuple(elems, g.n);
    IrVar *t = ir_func_temp(f, tuple->type);
    for (int k = 0; k < g.n; k++) {
        IrPos pos = (*g.slots[k])->pos;
        *g.slots[k] = ir_tuple_get(f->arena, pos, ir_var_ref(f->arena, pos, t), k);
    }
    IrNode *st = ir_node(f->arena, IR_ASSIGN, b->stmts[g.first]->pos);
    st->u.assign.var = t;
    st->u.assign.value = tuple;
    ir_block_push(f->arena, b, st);
    for (int q = b->n - 1; q > g.first; q--) b->stmts[q] = b->stmts[q - 1];
    b->stmts[g.first] = st;
    return g.last - i + 2; /* the statements up to the last member's, and the one inserted */
}

static void block(IrFunc *f, IrBlock *b, bool *assigned, int nids)
{
    for (int i = 0; i < b->n;) {
        IrBlock *blocks[2];
        int nb = ir_stmt_blocks(b->stmts[i], blocks);
        for (int k = 0; k < nb; k++) block(f, blocks[k], assigned, nids);
        int covered = group_from(f, b, i, assigned, nids);
        i += covered ? covered : 1;
    }
}

void ir_sibling_reductions(IrFunc *f)
{
    /* one buffer for every group: a group clears what it set, so a long function costs no buffer per statement */
    int nids = f->nvars;
    size_t size = sizeof(bool) * (size_t)(nids + 1);
    bool *assigned = rt_arena_alloc(f->arena, size);
    memset(assigned, 0, size);
    block(f, &f->body, assigned, nids);
}
