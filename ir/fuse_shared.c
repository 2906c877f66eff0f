/* fuse_shared.c: intermediates with several users (issue 15). fuse.c fuses an array expression into its one
 * user; a named intermediate read twice or more is stored and read back:
 *
 *     d = a - b                       # stored
 *     s = np.sum(d * d) + np.max(d)   # read three times
 *
 * This pass, before inline_single_use and fuse, does two things:
 *  1. a map that takes one variable as several inputs (`d * d` is map(*, d, d)) takes it once (the same array
 *     broadcast against itself is itself): the variable then has one reader fewer, often one;
 *  2. an array variable assigned a map and read by several maps or reductions over the same space (each read
 *     a direct input of a map of the map's ndim, or the input of a reduce or scan) gets the map's expression in
 *     place of each read, when cost.c's rule (ir_recompute_pays) says recomputing beats storing; fuse.c then
 *     makes each user one loop and no array is made. Otherwise it stays stored.
 *
 * The move must not change what is computed, nor which error is raised first (effects.c answers both):
 *  - the variable is assigned once in the function and every read is in a later statement of the same block,
 *    outside per-element bodies, in a statement that is not a loop or if whose blocks read it;
 *  - the map's bodies cannot raise, write or read memory (cost.c's rule refuses reads), and its leaves (the
 *    inputs that are not maps) neither write, allocate nor compute arrays (variables, constants, views, scalar
 *    expressions), so evaluating them again gives the same values when nothing writes memory or assigns a
 *    variable they name in between: the statements between the assignment and the last read only assign
 *    other variables and write nothing, and nothing that a reading statement evaluates before a read writes;
 *  - the map may still raise (its inputs' shapes clash, a view's index is out of range). Where something that
 *    may raise comes between the assignment and the first read, the assignment is replaced by the check alone
 *    (`bcast_shape` of the array leaves along each axis, an expression statement), so the error comes first, as
 *    before; elsewhere the first user raises it.
 * Copies get fresh parameters, so that fused bodies never bind one variable twice. */
#include "ir.h"

/* ---------------- 1. one input per variable ---------------- */

static void dedupe_inputs(IrNode **p, void *env)
{
    ir_each_child(*p, dedupe_inputs, env);
    if ((*p)->kind == IR_MAP) ir_map_merge_inputs(*p);
}

static void dedupe_stmt(IrNode *s, void *env)
{
    ir_each_child(s, dedupe_inputs, env);
}

/* ---------------- 2. recompute a cheap map in each of its users ---------------- */

typedef struct Pass {
    IrFunc *f;
    int *reads, *writes;
} Pass;

static void count_reads(IrNode **p, void *env)
{
    Pass *ps = env;
    if ((*p)->kind == IR_VAR) ps->reads[(*p)->u.var.var->id]++;
    ir_each_child(*p, count_reads, env);
}

static void count_stmt(IrNode *s, void *env)
{
    Pass *ps = env;
    if (s->kind == IR_ASSIGN) ps->writes[s->u.assign.var->id]++;
    if (s->kind == IR_FOR_RANGE) ps->writes[s->u.for_range.var->id]++;
    ir_each_child(s, count_reads, env);
}

static void recount(Pass *p)
{
    size_t n = sizeof(int) * (size_t)(p->f->nvars + 1);
    p->reads = rt_arena_alloc(p->f->arena, n);
    p->writes = rt_arena_alloc(p->f->arena, n);
    for (int i = 0; i <= p->f->nvars; i++) p->reads[i] = p->writes[i] = 0;
    for (int i = 0; i < p->f->nparams; i++) p->writes[p->f->params[i]->id]++;
    ir_each_stmt(&p->f->body, count_stmt, p);
}

/* The candidate: a map tree whose bodies are recomputable (cost.c) and whose leaves (the inputs that are not
 * maps) write nothing. A leaf that is not a variable or a constant (a view, a scalar expression, x.mean(), a
 * reduction along an axis) is hoisted: assigned to a temporary just before the assignment, where it was evaluated
 * (unless a leaf evaluated before it may raise), and every copy reads the temporary, so that fusion makes it one
 * input and nothing is computed twice but the bodies. The bound variables are renamed in copies. */
#define MAX_LEAVES 64
#define MAX_BOUND 64

typedef struct Tree {
    IrNode **leaf[MAX_LEAVES]; /* slots in the tree */
    bool hoist[MAX_LEAVES];
    int nleaves;
    IrVar *bound[MAX_BOUND];
    int nbound;
    bool leaf_raises;          /* some leaf seen so far may raise */
    bool scalar_leaf_raises;
} Tree;

static void find_bad_leaf(IrNode **p, void *env)
{
    bool *bad = env;
    switch ((*p)->kind) {
    case IR_MAP: case IR_IMAP: case IR_REDUCE: case IR_SCAN: case IR_CALL: case IR_ALLOC: case IR_LAMBDA:
        *bad = true;
        return;
    default: break;
    }
    if (!*bad) ir_each_child(*p, find_bad_leaf, env);
}

static bool collect_tree(IrNode *m, Tree *t)
{
    if (ir_effects(m->u.map.body) & (IR_FX_RAISE | IR_FX_WRITE | IR_FX_ALLOC | IR_FX_READ)) return false;
    for (int i = 0; i < m->u.map.nparams; i++) {
        if (t->nbound == MAX_BOUND) return false;
        t->bound[t->nbound++] = m->u.map.params[i];
    }
    for (int i = 0; i < m->u.map.ninputs; i++) {
        IrNode *in = m->u.map.inputs[i];
        if (in->kind == IR_MAP && !in->u.map.out) {
            if (!collect_tree(in, t)) return false;
            if (ir_node_effects(in) & IR_FX_RAISE) t->leaf_raises = true; /* its shapes' check runs before the
                                                                             * inputs after it */
            continue;
        }
        bool bad = false;
        find_bad_leaf(&in, &bad);
        unsigned fx = ir_effects(in);
        if (t->nleaves == MAX_LEAVES || (fx & IR_FX_WRITE)) return false;
        /* all but variables and constants: what computes once, and views and scalars so that the copies name
         * one variable, which fusion makes one input */
        bool hoist = bad || (fx & IR_FX_ALLOC) || (in->kind != IR_VAR && in->kind != IR_CONST);
        if (hoist && t->leaf_raises) return false; /* hoisting it would raise its error before theirs */
        if (!hoist && in->type->kind != IR_TY_ARRAY && (fx & IR_FX_RAISE)) t->scalar_leaf_raises = true;
        if (!hoist && (fx & IR_FX_RAISE)) t->leaf_raises = true;
        t->hoist[t->nleaves] = hoist;
        t->leaf[t->nleaves++] = &m->u.map.inputs[i];
    }
    return true;
}

/* The hoisted leaves become temporaries assigned before statement i of b (in their order of evaluation); the
 * tree reads them. Returns how many statements were inserted. */
static int hoist_leaves(IrFunc *f, IrBlock *b, int i, Tree *t)
{
    int n = 0;
    for (int k = 0; k < t->nleaves; k++) {
        if (!t->hoist[k]) continue;
        IrNode *leaf = *t->leaf[k];
        IrVar *tmp = ir_func_temp(f, leaf->type);
        IrNode *st = ir_node(f->arena, IR_ASSIGN, leaf->pos);
        st->u.assign.var = tmp;
        st->u.assign.value = leaf;
        *t->leaf[k] = ir_var_ref(f->arena, leaf->pos, tmp);
        ir_block_push(f->arena, b, st);
        for (int q = b->n - 1; q > i + n; q--) b->stmts[q] = b->stmts[q - 1];
        b->stmts[i + n++] = st;
    }
    return n;
}

/* Whether a node names a variable. */
typedef struct Names {
    const IrVar *var;
    bool found;
} Names;

static void find_name(IrNode **p, void *env)
{
    Names *n = env;
    if ((*p)->kind == IR_VAR && (*p)->u.var.var == n->var) n->found = true;
    else if (!n->found) ir_each_child(*p, find_name, env);
}

static bool names(IrNode *e, const IrVar *v)
{
    Names n = {v, false};
    find_name(&e, &n);
    return n.found;
}

static bool names_in_stmt(IrNode *s, const IrVar *v)
{
    Names n = {v, false};
    ir_each_child(s, find_name, &n);
    IrBlock *blocks[2];
    int nb = ir_stmt_blocks(s, blocks);
    for (int k = 0; k < nb && !n.found; k++)
        for (int i = 0; i < blocks[k]->n && !n.found; i++) n.found = names_in_stmt(blocks[k]->stmts[i], v);
    return n.found;
}

/* The reads of var in one statement: each a slot, and whether its user is one the rule takes (a map of the
 * intermediate's ndim whose input it is, or a reduce or scan whose input it is). */
#define MAX_READS 32

typedef struct Reads {
    const IrVar *var;
    int ndim;
    IrNode **slot[MAX_READS];
    const IrNode *root[MAX_READS]; /* the loop each read is in: the outermost map, reduce or scan of its tree */
    IrNode *shape_of[MAX_READS];   /* or the bcast_shape whose argument it is (a kept check): only its shape */
    int n;
    bool bad;        /* read in a body, as something other than an input, or too often */
    bool in_body;
    const IrNode *tree; /* the loop being walked: one fused loop of maps ending in a map, reduce or scan */
    /* from the walk in evaluation order */
    unsigned before_first; /* effects evaluated before the statement's first read */
    bool first_conditional;
    bool write_before;     /* something that writes was evaluated before some read */
    int seen;
} Reads;

static void add_read(Reads *r, IrNode **slot, bool ok, IrNode *shape_of)
{
    if (!ok || r->in_body || r->n == MAX_READS) {
        r->bad = true;
        return;
    }
    r->root[r->n] = shape_of ? NULL : r->tree;
    r->shape_of[r->n] = shape_of;
    r->slot[r->n++] = slot;
}

static bool is_read(const IrNode *n, const Reads *r)
{
    return n->kind == IR_VAR && n->u.var.var == r->var;
}

static void find_reads(IrNode **p, void *env);

static void find_in(IrNode **p, Reads *r, bool body)
{
    if (!*p) return;
    bool saved = r->in_body;
    r->in_body = saved || body;
    find_reads(p, r);
    r->in_body = saved;
}

/* An input of tree node n: a read of the variable there is a user's; a map there fuses into n's loop. */
static void find_input(IrNode **p, Reads *r, const IrNode *n, bool ok)
{
    if (is_read(*p, r)) {
        add_read(r, p, ok, NULL);
        return;
    }
    const IrNode *saved = r->tree;
    if (!((*p)->kind == IR_MAP && !(*p)->u.map.out)) r->tree = NULL; /* another loop, if any */
    else if (!r->tree) r->tree = n;
    find_in(p, r, false);
    r->tree = saved;
}

static void find_reads(IrNode **p, void *env)
{
    Reads *r = env;
    IrNode *n = *p;
    if (is_read(n, r)) {
        r->bad = true; /* a read that is no map's or reduction's input */
        return;
    }
    const IrNode *saved = r->tree;
    if (!r->tree && (n->kind == IR_MAP || n->kind == IR_REDUCE || n->kind == IR_SCAN)) r->tree = n;
    switch (n->kind) {
    case IR_MAP:
        for (int i = 0; i < n->u.map.ninputs; i++) find_input(&n->u.map.inputs[i], r, n, n->type->ndim == r->ndim);
        find_in(&n->u.map.body, r, true);
        find_in(&n->u.map.out, r, false);
        break;
    case IR_REDUCE:
        find_input(&n->u.reduce.input, r, n, true);
        find_in(&n->u.reduce.out, r, false);
        find_in(&n->u.reduce.combine.body, r, true);
        find_in(&n->u.reduce.combine.init, r, true);
        break;
    case IR_SCAN:
        find_input(&n->u.scan.input, r, n, true);
        find_in(&n->u.scan.out, r, false);
        find_in(&n->u.scan.combine.body, r, true);
        find_in(&n->u.scan.combine.init, r, true);
        break;
    case IR_BCAST_SHAPE: /* the check of an intermediate recomputed already: it takes the leaves for v */
        for (int i = 0; i < n->u.bcast_shape.n; i++) {
            if (is_read(n->u.bcast_shape.args[i], r)) add_read(r, &n->u.bcast_shape.args[i], true, n);
            else find_in(&n->u.bcast_shape.args[i], r, false);
        }
        break;
    case IR_IMAP:
        for (int i = 0; i < n->u.imap.ndim; i++) find_in(&n->u.imap.dims[i], r, false);
        find_in(&n->u.imap.body, r, true);
        find_in(&n->u.imap.out, r, false);
        break;
    default: ir_each_child(n, find_reads, env); break;
    }
    r->tree = saved;
}

static bool pre_read(IrNode **slot, const IrEvalPos *pos, void *env)
{
    Reads *r = env;
    for (int i = 0; i < r->n; i++) {
        if (r->slot[i] != slot) continue;
        if (r->seen++ == 0) {
            r->before_first = pos->before;
            r->first_conditional = pos->conditional || pos->repeated;
        }
        if (pos->before & IR_FX_WRITE) r->write_before = true;
        return false;
    }
    return true;
}

/* The reads of var in statement s (its expressions; the blocks of an if or loop must not read it). */
static void stmt_reads(IrNode *s, Reads *r)
{
    IrBlock *blocks[2];
    int nb = ir_stmt_blocks(s, blocks);
    for (int k = 0; k < nb; k++)
        for (int i = 0; i < blocks[k]->n; i++)
            if (names_in_stmt(blocks[k]->stmts[i], r->var)) r->bad = true;
    ir_each_child(s, find_reads, r);
    if (r->n && !r->bad) {
        static const IrEvalVisitor v = {pre_read, NULL};
        ir_walk_eval(s, &v, r);
    }
}

/* Copies of the tree name fresh variables where the original binds its own. */
typedef struct Fresh {
    IrFunc *f;
    const Tree *t;
    IrVar *to[MAX_BOUND];
} Fresh;

static IrVar *fresh_var(IrVar *v, void *env)
{
    Fresh *fr = env;
    for (int i = 0; i < fr->t->nbound; i++)
        if (fr->t->bound[i] == v) return fr->to[i] ? fr->to[i] : (fr->to[i] = ir_func_temp(fr->f, v->type));
    return v;
}

static IrNode *copy_tree(IrFunc *f, const IrNode *e, const Tree *t)
{
    Fresh fr = {f, t, {0}};
    IrCopyHooks h = {NULL, fresh_var, NULL, &fr};
    return ir_copy(f->arena, e, &h);
}

/* A kept check that names v checks v's array leaves instead (v's shape is their broadcast; v's own check, or its
 * first user, comes before and raises what they would). */
static void leaves_for_var(IrFunc *f, IrNode *check, const IrVar *v, const Tree *t)
{
    int n = 0;
    for (int i = 0; i < check->u.bcast_shape.n; i++) {
        const IrNode *arg = check->u.bcast_shape.args[i];
        if (arg->kind != IR_VAR || arg->u.var.var != v) n++;
        else
            for (int k = 0; k < t->nleaves; k++) n += (*t->leaf[k])->type->kind == IR_TY_ARRAY;
    }
    IrNode **args = ir_nodes(f->arena, n);
    int a = 0;
    for (int i = 0; i < check->u.bcast_shape.n; i++) {
        IrNode *arg = check->u.bcast_shape.args[i];
        if (arg->kind != IR_VAR || arg->u.var.var != v) args[a++] = arg;
        else
            for (int k = 0; k < t->nleaves; k++)
                if ((*t->leaf[k])->type->kind == IR_TY_ARRAY) args[a++] = ir_copy(f->arena, *t->leaf[k], NULL);
    }
    check->u.bcast_shape.args = args;
    check->u.bcast_shape.n = n;
}

/* The statements that stand for `v = e` once its reads compute e: its shape check (IR_BCAST_SHAPE along each
 * axis, over copies of the array leaves), or nothing. */
static void replace_assignment(IrFunc *f, IrBlock *b, int i, const Tree *t, bool keep_check)
{
    IrNode *s = b->stmts[i];
    IrNode *e = s->u.assign.value;
    int nd = e->type->ndim, narrays = 0;
    for (int k = 0; k < t->nleaves; k++) narrays += (*t->leaf[k])->type->kind == IR_TY_ARRAY;
    if (!keep_check || nd == 0 || narrays == 0) {
        b->stmts[i] = ir_node(f->arena, IR_PASS, s->pos);
        return;
    }
    for (int axis = 0; axis < nd; axis++) {
        IrNode **args = ir_nodes(f->arena, narrays);
        for (int k = 0, a = 0; k < t->nleaves; k++)
            if ((*t->leaf[k])->type->kind == IR_TY_ARRAY) args[a++] = ir_copy(f->arena, *t->leaf[k], NULL);
        IrNode *d = ir_node(f->arena, IR_BCAST_SHAPE, e->pos);
        d->type = ir_type_scalar(IR_DT_INT64);
        d->u.bcast_shape.args = args;
        d->u.bcast_shape.n = narrays;
        d->u.bcast_shape.axis = axis;
        d->u.bcast_shape.ndim = nd;
        IrNode *st = ir_node(f->arena, IR_EXPR_STMT, s->pos);
        st->u.expr_stmt.value = d;
        if (axis == 0) {
            b->stmts[i] = st;
            continue;
        }
        ir_block_push(f->arena, b, st); /* grows the block, then moved into place after statement i + axis - 1 */
        for (int k = b->n - 1; k > i + axis; k--) b->stmts[k] = b->stmts[k - 1];
        b->stmts[i + axis] = st;
    }
}

/* Where the statements after i read v: all of them, each by a user the rule takes, with nothing in between that
 * could change what e computes. Fills reads (slots, in statement order) and says whether e's errors need the
 * check kept in place. */
typedef struct Users {
    IrNode **slot[MAX_READS];
    const IrNode *root[MAX_READS];
    IrNode *shape_of[MAX_READS];
    int n;
    int loops;       /* distinct roots: the loops that read v once fusion is done */
    bool keep_check;
} Users;

static bool find_users(Pass *p, IrBlock *b, int i, Users *u)
{
    IrNode *s = b->stmts[i];
    IrVar *v = s->u.assign.var;
    IrNode *e = s->u.assign.value;
    bool e_raises = ir_effects(e) & IR_FX_RAISE;
    unsigned between = 0; /* effects of what runs after the assignment, before the first read */
    u->n = u->loops = 0;
    for (int j = i + 1; j < b->n && u->n < p->reads[v->id]; j++) {
        IrNode *st = b->stmts[j];
        Reads r = {.var = v, .ndim = e->type->ndim};
        stmt_reads(st, &r);
        if (r.bad || (r.n && (st->kind == IR_WHILE || r.write_before)) || u->n + r.n > MAX_READS) return false;
        if (!r.n) {
            /* in between: it assigns a variable e does not name, or nothing, and writes no memory */
            if (st->kind == IR_PASS) continue;
            if (st->kind != IR_ASSIGN && st->kind != IR_EXPR_STMT) return false;
            if (ir_effects(st) & IR_FX_WRITE) return false;
            if (st->kind == IR_ASSIGN && names(e, st->u.assign.var)) return false;
            if (!u->n) between |= ir_effects(st);
            continue;
        }
        if (!u->n) {
            between |= r.before_first;
            u->keep_check = e_raises && ((between & (IR_FX_RAISE | IR_FX_WRITE)) || r.first_conditional);
        }
        for (int k = 0; k < r.n; k++) {
            int q = 0;
            while (q < u->n && u->root[q] != r.root[k]) q++;
            u->loops += q == u->n && r.root[k];
            u->root[u->n] = r.root[k];
            u->shape_of[u->n] = r.shape_of[k];
            u->slot[u->n++] = r.slot[k];
        }
        /* a statement that reads v and then writes memory or assigns a variable e names ends the run */
        bool changes = (ir_effects(st) & IR_FX_WRITE) || (st->kind == IR_ASSIGN && names(e, st->u.assign.var)) ||
                       ir_stmt_blocks(st, (IrBlock *[2]){0}) > 0;
        if (changes && u->n < p->reads[v->id]) return false;
    }
    return u->n == p->reads[v->id];
}

/* stmts[i] is `v = e`: recompute e in each user of v when the rule says so. */
static bool try_recompute(Pass *p, IrBlock *b, int i)
{
    IrNode *s = b->stmts[i];
    if (s->kind != IR_ASSIGN) return false;
    IrNode *e = s->u.assign.value;
    IrVar *v = s->u.assign.var;
    if (e->kind != IR_MAP || e->u.map.out || e->type->kind != IR_TY_ARRAY) return false;
    if (p->writes[v->id] != 1 || p->reads[v->id] < 2) return false;
    Tree t = {.nleaves = 0};
    if (!collect_tree(e, &t)) return false;
    for (int k = 0; k < t.nleaves; k++)
        if (names(*t.leaf[k], v)) return false;
    int64_t cost = ir_recompute_cost(e);
    if (!ir_recompute_pays(cost, 1)) return false;
    Users u = {.n = 0};
    if (!find_users(p, b, i, &u)) return false;
    if (!ir_recompute_pays(cost, u.loops)) return false;
    if (u.keep_check && t.scalar_leaf_raises) return false; /* the check would not raise what they raise */
    int hoisted = hoist_leaves(p->f, b, i, &t);
    i += hoisted;
    for (int k = 0; k < u.n; k++)
        if (!u.shape_of[k]) *u.slot[k] = copy_tree(p->f, e, &t);
    for (int k = 0; k < u.n; k++)
        if (u.shape_of[k]) leaves_for_var(p->f, u.shape_of[k], v, &t);
    replace_assignment(p->f, b, i, &t, u.keep_check);
    return true;
}

static void visit_block(Pass *p, IrBlock *b)
{
    for (int i = 0; i < b->n; i++) {
        IrBlock *blocks[2];
        int nb = ir_stmt_blocks(b->stmts[i], blocks);
        for (int k = 0; k < nb; k++) visit_block(p, blocks[k]);
    }
    /* backwards: a later intermediate's copies add readers to the earlier ones they name, counted before those
     * are judged */
    for (int i = b->n - 1; i >= 0; i--)
        if (try_recompute(p, b, i)) recount(p);
}

void ir_fuse_shared(IrFunc *f)
{
    ir_each_stmt(&f->body, dedupe_stmt, NULL);
    Pass p = {f, NULL, NULL};
    recount(&p);
    visit_block(&p, &f->body);
}
