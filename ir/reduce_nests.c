/* reduce_nests.c: a reduction over the middle axis of a 3-D space whose element reads a 2-D intermediate broadcast
 * along the last axis, and the intermediates that feed it, as one loop nest. The array form of n-body,
 *
 *     r2 = (d * d).sum(axis=2) + eps          # R: a reduction over the last axis of an (i, j, k) space
 *     w = mass[None, :] / (r2 * np.sqrt(r2))  # W: an (i, j) map reading R
 *     acc = (w[:, :, None] * d).sum(axis=1)   # the consumer: reduces (i, j, k) along j, reading W[:, :, None]
 *
 * reaches this pass as three loops and two (n, n) intermediates written to memory and read back, where the loop
 * form a user would write keeps every (i, j) value in registers. Recomputing W in the consumer (fuse.c's rule)
 * is no answer: its element would be computed once per k. So the statements become the nest
 *
 *     if versioned <every broadcast is exact, every extent at least 1, R and W as large as the consumer's (i, j)>:
 *         acc = alloc(c0, c2)
 *         for i in range(c0):            # parallel: iteration i writes row i of acc only
 *             a0, a1, a2, a3 = <identity>; for k in range(4, c2): acc[i, k] = <identity>
 *             for j in range(c1):
 *                 r = <identity>; r = r op <R's element at (i, j, 0)>; ... (3); for k1 in range(4, q2): r = r op ...
 *                 w = <W's element at (i, j), reading r>
 *                 a0 = a0 op <the consumer's element at (i, j, 0), reading w>; ... a3
 *                 for k in range(4, c2): acc[i, k] = acc[i, k] op <the consumer's element at (i, j, k)>
 *             acc[i, 0] = a0 (if c2 > 0); ... acc[i, 3] = a3 (if c2 > 3)
 *     else:
 *         <the statements as they were>
 *
 * which computes every element of R and W once, as the arrays did, without storing them. The first LANES (4)
 * positions of the last axis are unrolled, so that the short lines of coordinates (n-body's x, y, z) add up in
 * registers: accumulating each j into memory, and a loop of 3 trips per line, made the nest 2.1x the time of the
 * loop form on the GPU host's Sapphire Rapids core (1.2x on the 2-core machine's EPYC). A lane past the end of a
 * line reads the line's last position (min(m, extent - 1), so every read is in range) and its value is dropped:
 * the producer's accumulator keeps its value (an if-expression), the consumer's lane is not stored.
 *
 * The test asks only for what makes each element's position plain: each axis of a leaf array is the space's
 * extent, or an axis that a None of the view the leaf is made (`pos[None, :, :]`: extent 1, read at 0); R and W
 * span the consumer's (i, j) exactly, so no element of theirs is computed twice; no extent is 0. The other cases
 * (an axis of 1 broadcast against a longer one, a mismatch NumPy raises for, an empty input) run the statements
 * as written, which do what NumPy does. Results are NumPy's: the consumer's lines are reduced in order of j from
 * the identity, as NumPy reduces an axis that is not the last, and R's lines in order of k1.
 *
 * What qualifies (anything else is left as it is):
 *  - the consumer is a statement `reduce[op](map(...), axis=1, out=O)` over a 3-D map, O allocated in the same
 *    block; op has one combine expression (not argmin/argmax or a user's combine);
 *  - exactly one of its map's inputs is a variable V = W[:, :, None], W a 2-D array filled by a map statement of
 *    the block (`W = alloc(...)` then `map(..., out=W)`); W's inputs may be variables R (directly or through
 *    plain copies `X = R`) filled by a reduction over the last axis of a 3-D map (`reduce(map(...), axis=2,
 *    out=R)`), at most MAX_PRODUCERS of them;
 *  - every other input of the three maps is a scalar without effects or an array variable (a leaf) of at most
 *    the map's rank; every body is quiet (no raise, no write, no allocation) and of its result's dtype;
 *  - the statements from the first of the chain to the consumer are the chain's, `pass`, or assignments that
 *    move ahead of them unchanged: quiet values, or views of a variable by full slices and None, that name no
 *    variable of the chain and assign a variable no earlier statement of the run names;
 *  - W, V, R and the copies are named nowhere else in the function, nor read by a map as a plain input or in its
 *    body; every array input is assigned (a variable that may be unbound raises where it is read, and the test
 *    reads its shape); the run is not inside a parallel loop.
 *
 * Runs after the checks (its loop is parallel by construction, with no reduction variable: prange's rules hold)
 * and before ir_version_loops, whose bounds plans it needs nothing from: every access it makes is proven. The
 * loops it makes carry for_range.made, so that inspect_parallel does not list them as the user's. This file finds
 * the chain; nest_build.c builds the nest, its test and the if (if_.nest). */
#include <string.h>

#include "reduce_nests.h"

/* ---- the function's variable uses ---- */

typedef struct Counts {
    int *refs, *defs;
    int nvars;
} Counts;

static void count_refs(IrNode **np, void *env)
{
    Counts *c = env;
    if ((*np)->kind == IR_VAR && (*np)->u.var.var->id < c->nvars) c->refs[(*np)->u.var.var->id]++;
    ir_each_child(*np, count_refs, env);
}

static void count_stmt(IrNode *s, void *env)
{
    Counts *c = env;
    IrVar *v = s->kind == IR_ASSIGN ? s->u.assign.var : s->kind == IR_FOR_RANGE ? s->u.for_range.var : NULL;
    if (v && v->id < c->nvars) c->defs[v->id]++;
    ir_each_child(s, count_refs, env);
}

/* ---- recognising the chain ---- */

static bool is_var(const IrNode *n, const IrVar *v)
{
    return n && n->kind == IR_VAR && n->u.var.var == v;
}

/* The statement of the block before `before` that assigns v, or -1. */
static int def_of(const Nest *x, const IrVar *v, int before)
{
    for (int i = before - 1; i >= 0; i--) {
        const IrNode *s = x->b->stmts[i];
        if (s->kind == IR_ASSIGN && s->u.assign.var == v) return i;
    }
    return -1;
}

static bool assigned_once(const Nest *x, const IrVar *v)
{
    return v->id < x->nvars && x->defs[v->id] == 1;
}

static bool quiet(const IrNode *n)
{
    return (ir_effects(n) & (IR_FX_RAISE | IR_FX_WRITE | IR_FX_ALLOC)) == 0;
}

/* The statement before `before` that fills v with an out= map or reduce (an IR_EXPR_STMT), or -1. */
static int filled_at(const Nest *x, const IrVar *v, IrKind kind, int before)
{
    for (int i = before - 1; i >= 0; i--) {
        const IrNode *s = x->b->stmts[i];
        if (s->kind != IR_EXPR_STMT || s->u.expr_stmt.value->kind != kind) continue;
        const IrNode *e = s->u.expr_stmt.value;
        if (is_var(kind == IR_MAP ? e->u.map.out : e->u.reduce.out, v)) return i;
    }
    return -1;
}

static bool alloc_of(const Nest *x, const IrVar *v, int before, int *at)
{
    *at = def_of(x, v, before);
    return *at >= 0 && x->b->stmts[*at]->u.assign.value->kind == IR_ALLOC;
}

/* The inputs of map m of rank `rank` as leaves and scalars (the caller finds which leaves are the chain's); its
 * body quiet and of the map's dtype. */
static bool read_inputs(Space *sp, IrNode *m, int rank)
{
    if (m->kind != IR_MAP || m->type->kind != IR_TY_ARRAY || m->type->ndim != rank) return false;
    if (m->u.map.ninputs > MAX_INPUTS || m->u.map.nparams != m->u.map.ninputs) return false;
    sp->map = m;
    sp->rank = rank;
    sp->nin = m->u.map.ninputs;
    for (int i = 0; i < sp->nin; i++) {
        In *in = &sp->in[i];
        *in = (In){.node = m->u.map.inputs[i], .param = m->u.map.params[i], .producer = -1};
        const IrType *t = in->node->type;
        if (t->kind == IR_TY_SCALAR) {
            if (!quiet(in->node)) return false;
            in->kind = IN_SCALAR;
        } else if (t->kind == IR_TY_ARRAY && in->node->kind == IR_VAR && t->ndim <= rank) {
            /* quiet: a variable that may be unassigned raises where it is read, and the test reads its shape */
            if (in->param->type->kind != IR_TY_SCALAR || in->param->type->dtype != t->dtype || !quiet(in->node))
                return false;
            in->kind = IN_LEAF;
        } else {
            return false;
        }
    }
    const IrType *bt = m->u.map.body->type;
    return bt->kind == IR_TY_SCALAR && bt->dtype == m->type->dtype && quiet(m->u.map.body);
}

static bool combinable(IrReduceOp op)
{
    switch (op) {
    case IR_RED_ADD: case IR_RED_MUL: case IR_RED_MIN: case IR_RED_MAX: case IR_RED_AND: case IR_RED_OR:
    case IR_RED_NANMIN: case IR_RED_NANMAX:
        return true;
    case IR_RED_ARGMIN: case IR_RED_ARGMAX: case IR_RED_FUNC:
        return false;
    }
    return false;
}

/* A reduce statement's node `reduce(map, axis, out=VAR)` of the given ranks, its body of the out's dtype. */
static bool reduce_shape(const IrNode *r, int axis, int in_rank)
{
    if (r->u.reduce.axis != axis || !r->u.reduce.out || r->u.reduce.out->kind != IR_VAR) return false;
    const IrNode *m = r->u.reduce.input;
    const IrType *ot = r->u.reduce.out->type;
    return m->kind == IR_MAP && !m->u.map.out && m->type->ndim == in_rank && ot->kind == IR_TY_ARRAY &&
           ot->ndim == in_rank - 1 && m->u.map.body->type->kind == IR_TY_SCALAR &&
           m->u.map.body->type->dtype == ot->dtype && combinable(r->u.reduce.op);
}

/* W's input `in`, an array variable, as the last of a run of copies of a producer R. */
static bool read_producer(Nest *x, In *in)
{
    if (x->nprod == MAX_PRODUCERS) return false;
    Producer *p = &x->prod[x->nprod];
    *p = (Producer){0};
    IrVar *v = in->node->u.var.var;
    int before = x->w_map_at;
    for (;;) {
        int d = def_of(x, v, before);
        if (d < 0) return false;
        IrNode *val = x->b->stmts[d]->u.assign.value;
        if (val->kind == IR_VAR && val->type == v->type) { /* a copy X = R */
            if (p->nalias == MAX_ALIASES || !assigned_once(x, v)) return false;
            for (int k = p->nalias++; k > 0; k--) {
                p->alias[k] = p->alias[k - 1];
                p->alias_at[k] = p->alias_at[k - 1];
            }
            p->alias[0] = v;
            p->alias_at[0] = d;
            v = val->u.var.var;
            before = d;
            continue;
        }
        if (val->kind != IR_ALLOC) return false;
        p->alloc_at = d;
        break;
    }
    p->var = v;
    p->reduce_at = filled_at(x, v, IR_REDUCE, before);
    if (p->reduce_at < 0 || p->reduce_at < p->alloc_at || !assigned_once(x, v)) return false;
    p->reduce = x->b->stmts[p->reduce_at]->u.expr_stmt.value;
    if (!reduce_shape(p->reduce, 2, 3) || v->type->ndim != 2) return false;
    if (!read_inputs(&p->sp, p->reduce->u.reduce.input, 3)) return false;
    in->kind = IN_CHAIN;
    in->producer = x->nprod++;
    return true;
}

/* The view V = W[:, :, None] that input `in` of the consumer reads, and W's map. */
static bool read_view(Nest *x, In *in)
{
    IrVar *v = in->node->u.var.var;
    x->view_at = def_of(x, v, x->at);
    if (x->view_at < 0 || !assigned_once(x, v)) return false;
    const IrNode *e = x->b->stmts[x->view_at]->u.assign.value;
    if (e->kind != IR_INDEX || e->u.index.n != 3 || e->u.index.base->kind != IR_VAR) return false;
    for (int k = 0; k < 3; k++) {
        const IrNode *it = e->u.index.items[k];
        bool full = it->kind == IR_SLICE && !it->u.slice.start && !it->u.slice.stop && !it->u.slice.step;
        bool none = it->kind == IR_CONST && it->type->kind == IR_TY_NONE;
        if (k < 2 ? !full : !none) return false;
    }
    x->view = v;
    x->w = e->u.index.base->u.var.var;
    if (x->w->type->kind != IR_TY_ARRAY || x->w->type->ndim != 2 || !assigned_once(x, x->w)) return false;
    if (!alloc_of(x, x->w, x->view_at, &x->w_alloc_at)) return false;
    x->w_map_at = filled_at(x, x->w, IR_MAP, x->view_at);
    if (x->w_map_at < x->w_alloc_at) return false;
    Space *sp = &x->wsp;
    if (!read_inputs(sp, x->b->stmts[x->w_map_at]->u.expr_stmt.value, 2)) return false;
    for (int i = 0; i < sp->nin; i++) { /* a 2-D leaf filled in this block may be a producer */
        In *wi = &sp->in[i];
        if (wi->kind != IN_LEAF || wi->node->type->ndim != 2) continue;
        int d = def_of(x, wi->node->u.var.var, x->w_map_at);
        if (d < 0) continue;
        IrKind k = x->b->stmts[d]->u.assign.value->kind;
        if (k == IR_ALLOC || k == IR_VAR) read_producer(x, wi);
    }
    in->kind = IN_CHAIN;
    return true;
}

/* Statement i of the run: one of the chain's. */
bool ir_nest_in_chain(const Nest *x, int i)
{
    if (i == x->at || i == x->out_alloc_at || i == x->view_at || i == x->w_alloc_at || i == x->w_map_at) return true;
    for (int p = 0; p < x->nprod; p++) {
        const Producer *pr = &x->prod[p];
        if (i == pr->alloc_at || i == pr->reduce_at) return true;
        for (int k = 0; k < pr->nalias; k++)
            if (i == pr->alias_at[k]) return true;
    }
    return false;
}

typedef struct Named {
    const IrVar *const *vars;
    int n;
    bool hit;
} Named;

static void find_named(IrNode **np, void *env)
{
    Named *k = env;
    if ((*np)->kind == IR_VAR)
        for (int i = 0; i < k->n; i++) k->hit |= (*np)->u.var.var == k->vars[i];
    ir_each_child(*np, find_named, env);
}

static bool names_any(const IrNode *n, const IrVar *const *vars, int nv)
{
    Named k = {vars, nv, false};
    IrNode *m = (IrNode *)n;
    find_named(&m, &k);
    return k.hit;
}

#define MAX_CHAIN_VARS (2 + MAX_PRODUCERS * (1 + MAX_ALIASES))

/* The variables the chain makes and reads only itself: W, V, each R and its copies. */
static int chain_vars(const Nest *x, const IrVar *vars[MAX_CHAIN_VARS])
{
    int nv = 0;
    vars[nv++] = x->w;
    vars[nv++] = x->view;
    for (int p = 0; p < x->nprod; p++) {
        vars[nv++] = x->prod[p].var;
        for (int k = 0; k < x->prod[p].nalias; k++) vars[nv++] = x->prod[p].alias[k];
    }
    return nv;
}

static bool names_chain_var(const Nest *x, const IrNode *n)
{
    const IrVar *vars[MAX_CHAIN_VARS + 1];
    int nv = chain_vars(x, vars);
    vars[nv++] = x->out;
    return names_any(n, vars, nv);
}

/* A view of an assigned variable by full slices and None: it cannot raise. */
static bool plain_view(const IrNode *e)
{
    if (e->kind != IR_INDEX || e->u.index.base->kind != IR_VAR || !quiet(e->u.index.base)) return false;
    for (int k = 0; k < e->u.index.n; k++) {
        const IrNode *it = e->u.index.items[k];
        bool full = it->kind == IR_SLICE && !it->u.slice.start && !it->u.slice.stop && !it->u.slice.step;
        if (!full && !(it->kind == IR_CONST && it->type->kind == IR_TY_NONE)) return false;
    }
    return true;
}

/* The run's other statements move ahead of it (see the top), and no leaf is assigned inside the run. */
static bool run_movable(const Nest *x)
{
    for (int i = x->first; i <= x->at; i++) {
        const IrNode *s = x->b->stmts[i];
        if (ir_nest_in_chain(x, i) || s->kind == IR_PASS) continue;
        if (s->kind != IR_ASSIGN) return false;
        const IrNode *e = s->u.assign.value;
        if (!(ir_effects(e) == 0 || plain_view(e)) || names_chain_var(x, e)) return false;
        const IrVar *v = s->u.assign.var;
        for (int k = x->first; k < i; k++) /* no earlier statement of the run reads or assigns it */
            if (names_any(x->b->stmts[k], &v, 1) ||
                (x->b->stmts[k]->kind == IR_ASSIGN && x->b->stmts[k]->u.assign.var == v))
                return false;
    }
    return true;
}

typedef struct Tally {
    const IrVar *const *vars;
    int n;
    int *count;
} Tally;

static void tally(IrNode **np, void *env)
{
    Tally *t = env;
    if ((*np)->kind == IR_VAR)
        for (int i = 0; i < t->n; i++) t->count[i] += (*np)->u.var.var == t->vars[i];
    ir_each_child(*np, tally, env);
}

/* W, V, R and the copies are named by the chain's statements only, and there only as the chain reads them: no
 * map reads one as a plain input (the nest would read an array it never fills) or in its body. */
static bool chain_only(const Nest *x)
{
    const IrVar *vars[MAX_CHAIN_VARS + 1];
    int nv = chain_vars(x, vars), count[MAX_CHAIN_VARS] = {0};
    Tally t = {vars, nv, count};
    for (int i = x->first; i <= x->at; i++) /* the chain's statements hold no blocks */
        if (ir_nest_in_chain(x, i)) ir_each_child(x->b->stmts[i], tally, &t);
    for (int k = 0; k < nv; k++)
        if (count[k] != x->refs[vars[k]->id]) return false;
    vars[nv++] = x->out;
    const Space *spaces[MAX_PRODUCERS + 2] = {&x->wsp, &x->csp};
    int ns = 2;
    for (int p = 0; p < x->nprod; p++) spaces[ns++] = &x->prod[p].sp;
    for (int k = 0; k < ns; k++) {
        if (names_any(spaces[k]->map->u.map.body, vars, nv)) return false;
        for (int i = 0; i < spaces[k]->nin; i++)
            if (spaces[k]->in[i].kind != IN_CHAIN && names_any(spaces[k]->in[i].node, vars, nv)) return false;
    }
    return true;
}

/* Which axes of each leaf a None made: a leaf assigned once, by a plain view in this block. */
static void mark_ones(const Nest *x, Space *sp)
{
    for (int i = 0; i < sp->nin; i++) {
        In *in = &sp->in[i];
        if (in->kind != IN_LEAF || !assigned_once(x, in->node->u.var.var)) continue;
        int d = def_of(x, in->node->u.var.var, x->at);
        if (d < 0 || !plain_view(x->b->stmts[d]->u.assign.value)) continue;
        const IrNode *e = x->b->stmts[d]->u.assign.value;
        for (int k = 0; k < e->u.index.n && k < in->node->type->ndim; k++)
            in->one[k] = e->u.index.items[k]->kind == IR_CONST;
    }
}

/* The consumer at statement `at`, with everything it needs; false leaves the block as it is. */
static bool read_chain(Nest *x)
{
    IrNode *s = x->b->stmts[x->at];
    if (s->kind != IR_EXPR_STMT || s->u.expr_stmt.value->kind != IR_REDUCE) return false;
    IrNode *r = s->u.expr_stmt.value;
    if (!reduce_shape(r, 1, 3)) return false;
    x->consumer = r;
    x->pos = s->pos;
    x->out = r->u.reduce.out->u.var.var;
    if (!alloc_of(x, x->out, x->at, &x->out_alloc_at)) return false;
    Space *sp = &x->csp;
    if (!read_inputs(sp, r->u.reduce.input, 3)) return false;
    bool viewed = false;
    for (int i = 0; i < sp->nin && !viewed; i++) {
        In *in = &sp->in[i];
        if (in->kind != IN_LEAF || in->node->type->ndim != 3) continue;
        x->nprod = 0;
        viewed = read_view(x, in);
        if (!viewed) in->kind = IN_LEAF;
    }
    if (!viewed) return false;
    x->first = x->at;
    int ats[4] = {x->out_alloc_at, x->view_at, x->w_alloc_at, x->w_map_at};
    for (int k = 0; k < 4; k++)
        if (ats[k] < x->first) x->first = ats[k];
    for (int p = 0; p < x->nprod; p++) {
        if (x->prod[p].alloc_at < x->first) x->first = x->prod[p].alloc_at;
        for (int k = 0; k < x->prod[p].nalias; k++)
            if (x->prod[p].alias_at[k] < x->first) x->first = x->prod[p].alias_at[k];
    }
    if (!run_movable(x) || !chain_only(x)) return false;
    for (int p = 0; p < x->nprod; p++) mark_ones(x, &x->prod[p].sp);
    mark_ones(x, &x->wsp);
    mark_ones(x, &x->csp);
    return true;
}

static void nest_block(IrFunc *f, const Counts *c, IrBlock *b)
{
    for (int i = 0; i < b->n; i++) {
        IrNode *s = b->stmts[i];
        Nest x = {.f = f, .a = f->arena, .b = b, .refs = c->refs, .defs = c->defs, .nvars = c->nvars, .at = i};
        if (read_chain(&x)) {
            int after = b->n - i - 1;
            ir_nest_rewrite(&x);
            i = b->n - after - 1; /* past the if: its arms are done */
            continue;
        }
        if (s->kind == IR_FOR_RANGE && s->u.for_range.parallel) continue; /* its body runs per iteration */
        IrBlock *blocks[2];
        int nb = ir_stmt_blocks(s, blocks);
        for (int k = 0; k < nb; k++) nest_block(f, c, blocks[k]);
    }
}

void ir_reduce_nests(IrFunc *f)
{
    Counts c = {rt_arena_alloc(f->arena, sizeof(int) * (size_t)(f->nvars + 1)),
                rt_arena_alloc(f->arena, sizeof(int) * (size_t)(f->nvars + 1)), f->nvars};
    memset(c.refs, 0, sizeof(int) * (size_t)(f->nvars + 1));
    memset(c.defs, 0, sizeof(int) * (size_t)(f->nvars + 1));
    ir_each_stmt(&f->body, count_stmt, &c);
    nest_block(f, &c, &f->body);
}
