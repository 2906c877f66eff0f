/* nest_build.c: the loop nest a chain of reduce_nests.c becomes (its header shows the nest), the extents and the
 * test before it, and the rewrite of the block. Every node it makes carries the consumer's position; every access
 * it makes is proven by the test (index.proven), and its loops are for_range.made.
 *
 * The extents of each space are the largest of its inputs' along each axis; the test asks that each input's axis
 * be that extent (an axis a None made is 1 and read at 0), that no extent be 0, and that R and W span the
 * consumer's (i, j): then every position below is in range, and the nest computes each element once. */
#include <string.h>

#include "reduce_nests.h"

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
    return ir_array_dim(x->a, x->pos, ir_copy(x->a, array, NULL), axis);
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
void ir_nest_rewrite(Nest *x)
{
    IrBlock pre = {0};
    IrNode *v = ir_node(x->a, IR_IF, x->pos);
    v->u.if_.versioned = true;
    v->u.if_.nest = true;
    for (int i = x->first; i <= x->at; i++) {
        IrNode *s = x->b->stmts[i];
        if (ir_nest_in_chain(x, i) || s->kind == IR_PASS) ir_block_push(x->a, &v->u.if_.orelse, s);
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

