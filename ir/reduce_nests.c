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
 *  - W, V, R and the copies are named nowhere else in the function, and the run is not inside a parallel loop.
 *
 * Runs after the checks (its loop is parallel by construction, with no reduction variable: prange's rules hold)
 * and before ir_version_loops, whose bounds plans it needs nothing from: every access it makes is proven. The
 * loops it makes carry for_range.made, so that inspect_parallel does not list them as the user's. */
#include <string.h>

#include "ir.h"

#define MAX_PRODUCERS 4
#define MAX_INPUTS 16
#define MAX_ALIASES 4
#define LANES 4        /* positions of the last axis the nest keeps in registers: n-body's x, y, z and one more */

typedef enum { IN_SCALAR, IN_LEAF, IN_CHAIN } InKind;

typedef struct In {
    InKind kind;
    IrNode *node;          /* the map's input */
    IrVar *param;          /* the map's parameter bound to it */
    int producer;          /* IN_CHAIN: the producer it reads (W's inputs), or -1 for V (the consumer's) */
    IrVar *temp;           /* IN_SCALAR: its value, computed before the nest */
    bool one[3];           /* IN_LEAF: per axis, made by a None of the view the leaf is (its extent is 1) */
} In;

/* A map's element space: its rank, inputs, and the temporaries that hold its extents. */
typedef struct Space {
    IrNode *map;
    int rank;
    In in[MAX_INPUTS];
    int nin;
    IrVar *ext[3];
} Space;

typedef struct Producer {
    IrVar *var;                   /* R */
    IrNode *reduce;
    int alloc_at, reduce_at;
    IrVar *alias[MAX_ALIASES];    /* X = R, X2 = X, ...: the last one is W's input */
    int alias_at[MAX_ALIASES];
    int nalias;
    Space sp;
    IrVar *acc;                   /* R's element in the nest */
} Producer;

typedef struct Nest {
    IrFunc *f;
    RtArena *a;
    IrBlock *b;
    const int *refs;              /* by variable id: IR_VAR nodes naming it in the whole function */
    const int *defs;              /* by variable id: statements assigning it */
    int nvars;                    /* the ids those count */
    int at, first;                /* the consumer's statement, the first statement of the run */
    IrPos pos;
    IrNode *consumer;
    IrVar *out;
    int out_alloc_at;
    IrVar *view, *w;
    int view_at, w_alloc_at, w_map_at;
    Space csp, wsp;
    Producer prod[MAX_PRODUCERS];
    int nprod;
    IrVar *wval;                  /* W's element in the nest */
    IrVar *idx[3];                /* i, j, k (a producer's line uses idx[2] too: its loop comes before k's) */
} Nest;

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
static bool in_chain(const Nest *x, int i)
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
        if (in_chain(x, i) || s->kind == IR_PASS) continue;
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
        if (in_chain(x, i)) ir_each_child(x->b->stmts[i], tally, &t);
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

/* ---- building the nest ---- */

static IrType *i64(void) { return ir_type_scalar(IR_DT_INT64); }

static IrNode *lit(Nest *x, int64_t v) { return ir_const_int(x->a, x->pos, i64(), v); }

static IrNode *ref(Nest *x, IrVar *v) { return ir_var_ref(x->a, x->pos, v); }

static IrNode *binop(Nest *x, IrBinOp op, IrNode *l, IrNode *r)
{
    IrNode *n = ir_node(x->a, IR_BINOP, x->pos);
    n->type = l->type;
    n->u.binop.op = op;
    n->u.binop.lhs = l;
    n->u.binop.rhs = r;
    return n;
}

static IrNode *boolop(Nest *x, bool is_and, IrNode **values, int n)
{
    if (n == 1) return values[0];
    IrNode *b = ir_node(x->a, IR_BOOLOP, x->pos);
    b->type = ir_type_scalar(IR_DT_BOOL);
    b->u.boolop.is_and = is_and;
    b->u.boolop.n = n;
    b->u.boolop.values = ir_nodes(x->a, n);
    memcpy(b->u.boolop.values, values, sizeof *values * (size_t)n);
    return b;
}

static IrNode *assign(Nest *x, IrVar *v, IrNode *value)
{
    IrNode *s = ir_node(x->a, IR_ASSIGN, x->pos);
    s->u.assign.var = v;
    s->u.assign.value = value;
    return s;
}

static IrNode *loop(Nest *x, IrVar *v, IrNode *start, IrNode *stop, bool parallel)
{
    IrNode *l = ir_node(x->a, IR_FOR_RANGE, x->pos);
    l->u.for_range.var = v;
    l->u.for_range.start = start;
    l->u.for_range.stop = stop;
    l->u.for_range.step = lit(x, 1);
    l->u.for_range.parallel = parallel;
    l->u.for_range.made = true;
    l->u.for_range.proven_copy = true; /* every access of the nest is proven */
    return l;
}

static IrNode *dim_of(Nest *x, const IrNode *array, int axis)
{
    IrNode *d = ir_node(x->a, IR_ARRAY_DIM, x->pos);
    d->type = i64();
    d->u.array_dim.array = ir_copy(x->a, array, NULL);
    d->u.array_dim.axis = axis;
    return d;
}

/* The extent of input `in` along axis d of its space (NULL: 1). */
static IrNode *size_of(Nest *x, const Space *sp, const In *in, int d)
{
    if (in->kind == IN_SCALAR) return NULL;
    if (in->kind == IN_CHAIN)
        return sp == &x->csp ? (d < 2 ? ref(x, x->wsp.ext[d]) : NULL) : ref(x, x->prod[in->producer].sp.ext[d]);
    int lead = sp->rank - in->node->type->ndim;
    return d < lead || in->one[d - lead] ? NULL : dim_of(x, in->node, d - lead);
}

/* Statements before the if: each space's extents, the largest of its inputs' along each axis. */
static void extents(Nest *x, Space *sp, IrBlock *pre)
{
    for (int d = 0; d < sp->rank; d++) {
        IrNode *e = NULL;
        for (int i = 0; i < sp->nin; i++) {
            IrNode *s = size_of(x, sp, &sp->in[i], d);
            if (s) e = e ? binop(x, IR_OP_MAX, e, s) : s;
        }
        sp->ext[d] = ir_func_temp(x->f, i64());
        ir_block_push(x->a, pre, assign(x, sp->ext[d], e ? e : lit(x, 1)));
    }
}

typedef struct Terms {
    IrNode **t;
    int n, cap;
} Terms;

static void term(Nest *x, Terms *ts, IrNode *t)
{
    if (ts->n == ts->cap) {
        int cap = ts->cap ? 2 * ts->cap : 16;
        IrNode **n = ir_nodes(x->a, cap);
        if (ts->n) memcpy(n, ts->t, sizeof *n * (size_t)ts->n);
        ts->t = n;
        ts->cap = cap;
    }
    ts->t[ts->n++] = t;
}

/* The test's terms for one space: extents of at least 1, each leaf's axis the extent (but those of a None). */
static void space_terms(Nest *x, const Space *sp, Terms *ts)
{
    for (int d = 0; d < sp->rank; d++) {
        term(x, ts, ir_compare(x->a, x->pos, IR_CMP_GE, ref(x, sp->ext[d]), lit(x, 1)));
        for (int i = 0; i < sp->nin; i++) {
            if (sp->in[i].kind != IN_LEAF) continue;
            IrNode *s = size_of(x, sp, &sp->in[i], d);
            if (s) term(x, ts, ir_compare(x->a, x->pos, IR_CMP_EQ, s, ref(x, sp->ext[d])));
        }
    }
}

static void equal_term(Nest *x, Terms *ts, IrVar *a, IrVar *b)
{
    term(x, ts, ir_compare(x->a, x->pos, IR_CMP_EQ, ref(x, a), ref(x, b)));
}

static IrNode *test_of(Nest *x)
{
    Terms ts = {0};
    for (int p = 0; p < x->nprod; p++) {
        space_terms(x, &x->prod[p].sp, &ts);
        for (int d = 0; d < 2; d++) equal_term(x, &ts, x->prod[p].sp.ext[d], x->wsp.ext[d]);
    }
    space_terms(x, &x->wsp, &ts);
    space_terms(x, &x->csp, &ts);
    for (int d = 0; d < 2; d++) equal_term(x, &ts, x->wsp.ext[d], x->csp.ext[d]);
    return boolop(x, true, ts.t, ts.n);
}

/* Statements at the top of the fast arm: the scalars' values. */
static void prepare_inputs(Nest *x, Space *sp, IrBlock *arm)
{
    for (int i = 0; i < sp->nin; i++) {
        In *in = &sp->in[i];
        if (in->kind == IN_SCALAR) {
            in->temp = ir_func_temp(x->f, in->node->type);
            ir_block_push(x->a, arm, assign(x, in->temp, ir_copy(x->a, in->node, NULL)));
        }
    }
}

/* The element of leaf `in` at the space's position (i, j[, k]) (0 on an axis of a None). */
static IrNode *leaf_at(Nest *x, const Space *sp, const In *in, IrVar *k_at)
{
    IrVar *at[3] = {x->idx[0], x->idx[1], k_at};
    int nd = in->node->type->ndim, lead = sp->rank - nd;
    IrNode *e = ir_node(x->a, IR_INDEX, x->pos);
    e->type = ir_type_scalar(in->node->type->dtype);
    e->u.index.base = ir_copy(x->a, in->node, NULL);
    e->u.index.n = nd;
    e->u.index.items = ir_nodes(x->a, nd);
    e->u.index.proven = true;
    for (int k = 0; k < nd; k++) e->u.index.items[k] = in->one[k] ? lit(x, 0) : ref(x, at[lead + k]);
    return e;
}

typedef struct Inst {
    Nest *x;
    const Space *sp;
    IrVar *k;              /* the position along the last axis of a 3-D space */
} Inst;

static IrNode *param_value(const IrNode *n, void *env)
{
    Inst *c = env;
    if (n->kind != IR_VAR) return NULL;
    for (int i = 0; i < c->sp->nin; i++) {
        const In *in = &c->sp->in[i];
        if (n->u.var.var != in->param) continue;
        switch (in->kind) {
        case IN_SCALAR: return ref(c->x, in->temp);
        case IN_LEAF: return leaf_at(c->x, c->sp, in, c->k);
        case IN_CHAIN: return ref(c->x, in->producer < 0 ? c->x->wval : c->x->prod[in->producer].acc);
        }
    }
    return NULL;
}

/* The body of sp's map with its parameters replaced by their elements at (i, j[, k]). */
static IrNode *element(Nest *x, const Space *sp, IrVar *k)
{
    Inst c = {x, sp, k};
    IrCopyHooks h = {.replace = param_value, .env = &c};
    return ir_copy(x->a, sp->map->u.map.body, &h);
}

static IrNode *identity(Nest *x, IrReduceOp op, IrDtype dt)
{
    IrNode *c = ir_node(x->a, IR_CONST, x->pos);
    *c = ir_reduce_identity(op, dt);
    c->pos = x->pos;
    return c;
}

/* out[i, k] */
static IrNode *out_at(Nest *x, IrNode *k)
{
    IrNode *e = ir_node(x->a, IR_INDEX, x->pos);
    e->type = ir_type_scalar(x->out->type->dtype);
    e->u.index.base = ref(x, x->out);
    e->u.index.n = 2;
    e->u.index.items = ir_nodes(x->a, 2);
    e->u.index.items[0] = ref(x, x->idx[0]);
    e->u.index.items[1] = k;
    e->u.index.proven = true;
    return e;
}

static IrNode *store_out(Nest *x, IrNode *k, IrNode *value)
{
    IrNode *s = ir_node(x->a, IR_STORE, x->pos);
    s->u.store.target = out_at(x, k);
    s->u.store.value = value;
    return s;
}

static IrNode *combine(Nest *x, IrReduceOp op, IrDtype dt, IrNode *acc, IrNode *elem)
{
    IrNode *c = ir_reduce_combine(x->a, op, dt, acc, elem);
    c->pos = x->pos;
    return c;
}

/* The lanes' positions along a last axis of extent ext (at least 1: the test), min(m, ext - 1), before the nest. */
static void lanes_of(Nest *x, IrVar *ext, IrVar *lane[LANES], IrBlock *arm)
{
    for (int m = 0; m < LANES; m++) {
        lane[m] = ir_func_temp(x->f, i64());
        ir_block_push(x->a, arm, assign(x, lane[m], binop(x, IR_OP_MIN, lit(x, m), binop(x, IR_OP_SUB, ref(x, ext), lit(x, 1)))));
    }
}

/* lane m < ext: its value counts */
static IrNode *lane_counts(Nest *x, int m, IrVar *ext)
{
    return ir_compare(x->a, x->pos, IR_CMP_LT, lit(x, m), ref(x, ext));
}

/* A producer's element at (i, j): its line reduced in order of k1, the first LANES positions unrolled (a lane past
 * the line's end reads the last position and keeps the accumulator as it was). */
static void producer_line(Nest *x, Producer *pr, IrVar *const lane[LANES], IrBlock *cols)
{
    IrReduceOp op = pr->reduce->u.reduce.op;
    IrDtype dt = pr->var->type->dtype;
    IrVar *q2 = pr->sp.ext[2];
    pr->acc = ir_func_temp(x->f, ir_type_scalar(dt));
    ir_block_push(x->a, cols, assign(x, pr->acc, identity(x, op, dt)));
    for (int m = 0; m < LANES; m++) {
        IrNode *keep = ir_node(x->a, IR_IFEXP, x->pos);
        keep->type = ir_type_scalar(dt);
        keep->u.ifexp.cond = lane_counts(x, m, q2);
        keep->u.ifexp.then = combine(x, op, dt, ref(x, pr->acc), element(x, &pr->sp, lane[m]));
        keep->u.ifexp.orelse = ref(x, pr->acc);
        ir_block_push(x->a, cols, assign(x, pr->acc, keep));
    }
    IrNode *rest = loop(x, x->idx[2], lit(x, LANES), ref(x, q2), false);
    ir_block_push(x->a, &rest->u.for_range.body,
                  assign(x, pr->acc, combine(x, op, dt, ref(x, pr->acc), element(x, &pr->sp, x->idx[2]))));
    ir_block_push(x->a, cols, rest);
}

static void fast_arm(Nest *x, IrBlock *arm)
{
    for (int p = 0; p < x->nprod; p++) prepare_inputs(x, &x->prod[p].sp, arm);
    prepare_inputs(x, &x->wsp, arm);
    prepare_inputs(x, &x->csp, arm);
    IrNode *alloc = ir_node(x->a, IR_ALLOC, x->pos);
    alloc->type = x->out->type;
    alloc->u.alloc.ndim = 2;
    alloc->u.alloc.dims = ir_nodes(x->a, 2);
    alloc->u.alloc.dims[0] = ref(x, x->csp.ext[0]);
    alloc->u.alloc.dims[1] = ref(x, x->csp.ext[2]);
    ir_block_push(x->a, arm, assign(x, x->out, alloc));
    IrVar *lane[MAX_PRODUCERS + 1][LANES];
    for (int p = 0; p < x->nprod; p++) lanes_of(x, x->prod[p].sp.ext[2], lane[p], arm);
    lanes_of(x, x->csp.ext[2], lane[x->nprod], arm);
    for (int d = 0; d < 3; d++) x->idx[d] = ir_func_temp(x->f, i64());
    IrReduceOp op = x->consumer->u.reduce.op;
    IrDtype dt = x->out->type->dtype;
    IrVar *c2 = x->csp.ext[2], *acc[LANES];
    IrNode *rows = loop(x, x->idx[0], lit(x, 0), ref(x, x->csp.ext[0]), true);
    IrBlock *row = &rows->u.for_range.body;
    for (int m = 0; m < LANES; m++) {
        acc[m] = ir_func_temp(x->f, ir_type_scalar(dt));
        ir_block_push(x->a, row, assign(x, acc[m], identity(x, op, dt)));
    }
    IrNode *clear = loop(x, x->idx[2], lit(x, LANES), ref(x, c2), false);
    ir_block_push(x->a, &clear->u.for_range.body, store_out(x, ref(x, x->idx[2]), identity(x, op, dt)));
    ir_block_push(x->a, row, clear);
    IrNode *cols = loop(x, x->idx[1], lit(x, 0), ref(x, x->csp.ext[1]), false);
    IrBlock *col = &cols->u.for_range.body;
    for (int p = 0; p < x->nprod; p++) producer_line(x, &x->prod[p], lane[p], col);
    x->wval = ir_func_temp(x->f, ir_type_scalar(x->w->type->dtype));
    ir_block_push(x->a, col, assign(x, x->wval, element(x, &x->wsp, NULL)));
    for (int m = 0; m < LANES; m++) /* a lane past the end computes the last position's element, never stored */
        ir_block_push(x->a, col, assign(x, acc[m], combine(x, op, dt, ref(x, acc[m]), element(x, &x->csp, lane[x->nprod][m]))));
    IrNode *rest = loop(x, x->idx[2], lit(x, LANES), ref(x, c2), false);
    ir_block_push(x->a, &rest->u.for_range.body,
                  store_out(x, ref(x, x->idx[2]),
                            combine(x, op, dt, out_at(x, ref(x, x->idx[2])), element(x, &x->csp, x->idx[2]))));
    ir_block_push(x->a, col, rest);
    ir_block_push(x->a, row, cols);
    for (int m = 0; m < LANES; m++) {
        IrNode *put = ir_node(x->a, IR_IF, x->pos);
        put->u.if_.cond = lane_counts(x, m, c2);
        ir_block_push(x->a, &put->u.if_.then, store_out(x, lit(x, m), ref(x, acc[m])));
        ir_block_push(x->a, row, put);
    }
    ir_block_push(x->a, arm, rows);
}

/* Replaces the run [first, at] of the block by its moved statements, the extents, and the versioned if. */
static void rewrite(Nest *x)
{
    IrBlock pre = {0};
    IrNode *v = ir_node(x->a, IR_IF, x->pos);
    v->u.if_.versioned = true;
    for (int i = x->first; i <= x->at; i++) {
        IrNode *s = x->b->stmts[i];
        if (in_chain(x, i) || s->kind == IR_PASS) ir_block_push(x->a, &v->u.if_.orelse, s);
        else ir_block_push(x->a, &pre, s);
    }
    for (int p = 0; p < x->nprod; p++) extents(x, &x->prod[p].sp, &pre);
    extents(x, &x->wsp, &pre);
    extents(x, &x->csp, &pre);
    v->u.if_.cond = test_of(x);
    fast_arm(x, &v->u.if_.then);
    ir_block_push(x->a, &pre, v);
    int tail = x->b->n - x->at - 1, n = x->first + pre.n + tail;
    IrNode **stmts = ir_nodes(x->a, n);
    memcpy(stmts, x->b->stmts, sizeof *stmts * (size_t)x->first);
    memcpy(stmts + x->first, pre.stmts, sizeof *stmts * (size_t)pre.n);
    memcpy(stmts + x->first + pre.n, x->b->stmts + x->at + 1, sizeof *stmts * (size_t)tail);
    x->b->stmts = stmts;
    x->b->n = x->b->cap = n;
}

static void nest_block(IrFunc *f, const Counts *c, IrBlock *b)
{
    for (int i = 0; i < b->n; i++) {
        IrNode *s = b->stmts[i];
        Nest x = {.f = f, .a = f->arena, .b = b, .refs = c->refs, .defs = c->defs, .nvars = c->nvars, .at = i};
        if (read_chain(&x)) {
            int after = b->n - i - 1;
            rewrite(&x);
            i = b->n - after - 1; /* past the if: its arms are done */
            continue;
        }
        if (s->kind == IR_FOR_RANGE && s->u.for_range.parallel) continue; /* its body runs per iteration */
        IrBlock *blocks[2];
        int nb = ir_stmt_blocks(s, blocks);
        for (int k = 0; k < nb; k++) nest_block(f, c, blocks[k]);
    }
}

bool ir_is_nest_if(const IrNode *s)
{
    if (s->kind != IR_IF || !s->u.if_.versioned || s->u.if_.then.n == 0) return false;
    const IrNode *last = s->u.if_.then.stmts[s->u.if_.then.n - 1];
    return last->kind == IR_FOR_RANGE && last->u.for_range.made;
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
