/* work.c: the work a call of a typed function will do, as polynomials in the sizes of its arguments, for the
 * choice of backend="auto" (pyshim/auto.c) before anything is compiled for a backend.
 *
 * Invariant: the model only ever decides where a call runs, never what it computes; every estimate may be wrong
 * by a constant factor, and the code stays right. Three polynomials: `ops`, the whole call's work in the units of
 * IrCostWeights (cost.c's, so "work" means what the openmp team threshold means); `parallel_ops`, the part of it
 * inside parallel regions (what a team of threads or a GPU shares out); `launches`, the parallel regions entered
 * (a kernel launch or a team fork each). A term is a coefficient times a product of factors, each one argument's
 * dimension, an integer argument's value, or, where an extent is not a function of the arguments (the length of
 * an array made by a loop, a while loop's trips), the largest argument array's element count (or its root for
 * one axis of an array of ndim d) and the model is marked `estimated`. Evaluating a model is a few multiply-adds
 * per term; it is made once per specialisation, from the typed IR after the passes, which every backend gets. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

/* Loops whose trip count the model cannot see (while loops, extents of unknown scalars) count this many trips:
 * the assumption cost.c makes of a loop nested in a region's element. */
#define UNKNOWN_TRIPS 100.0
#define MAX_DEPTH 6 /* nested substitutions of locals and callees; deeper, the extent is unknown */

typedef struct Ctx {
    const IrFunc *f;
    const IrCostWeights *w;
    IrNode **single_def; /* the value of each variable assigned exactly once (not a parameter), else NULL */
    int depth;
    bool estimated;
} Ctx;

/* ---- monomials and polynomials ---- */

static int factor_cmp(IrWorkFactor a, IrWorkFactor b)
{
    if (a.kind != b.kind) return a.kind - b.kind;
    if (a.param != b.param) return a.param - b.param;
    return a.axis - b.axis;
}

static IrWorkTerm term_const(double c)
{
    IrWorkTerm t;
    memset(&t, 0, sizeof t);
    t.coef = c;
    return t;
}

static IrWorkTerm term_factor(Ctx *c, IrWorkFactorKind kind, int param, int axis)
{
    IrWorkTerm t = term_const(1);
    t.nf = 1;
    t.f[0] = (IrWorkFactor){.kind = (uint8_t)kind, .param = (uint16_t)param, .axis = (uint8_t)axis};
    if (kind == IR_WF_LARGEST || kind == IR_WF_LARGEST_ROOT) c->estimated = true;
    return t;
}

/* a x b, factors kept sorted so equal monomials compare equal; beyond IR_WORK_MAX_FACTORS the extra factors
 * are dropped (an underestimate, marked). */
static IrWorkTerm term_mul(Ctx *c, IrWorkTerm a, IrWorkTerm b)
{
    IrWorkTerm r = term_const(a.coef * b.coef);
    int i = 0, j = 0;
    while (i < a.nf || j < b.nf) {
        IrWorkFactor next;
        if (j >= b.nf || (i < a.nf && factor_cmp(a.f[i], b.f[j]) <= 0)) next = a.f[i++];
        else next = b.f[j++];
        if (r.nf == IR_WORK_MAX_FACTORS) {
            c->estimated = true;
            break;
        }
        r.f[r.nf++] = next;
    }
    return r;
}

static bool same_factors(const IrWorkTerm *a, const IrWorkTerm *b)
{
    if (a->nf != b->nf) return false;
    for (int i = 0; i < a->nf; i++)
        if (factor_cmp(a->f[i], b->f[i]) != 0) return false;
    return true;
}

static void poly_add_term(Ctx *c, IrWorkPoly *p, IrWorkTerm t)
{
    if (t.coef == 0) return;
    for (int i = 0; i < p->n; i++)
        if (same_factors(&p->t[i], &t)) {
            p->t[i].coef += t.coef;
            return;
        }
    if (p->n < IR_WORK_MAX_TERMS) {
        p->t[p->n++] = t;
        return;
    }
    /* full: the term joins the one of the same degree made of the largest array only, or the last */
    c->estimated = true;
    IrWorkTerm big = term_const(t.coef);
    for (int k = 0; k < t.nf; k++) big.f[big.nf++] = (IrWorkFactor){.kind = IR_WF_LARGEST};
    for (int i = 0; i < p->n; i++)
        if (same_factors(&p->t[i], &big)) {
            p->t[i].coef += big.coef;
            return;
        }
    p->t[p->n - 1].coef += t.coef;
}

static void poly_add(Ctx *c, IrWorkPoly *p, const IrWorkPoly *q)
{
    for (int i = 0; i < q->n; i++) poly_add_term(c, p, q->t[i]);
}

static void poly_scale(Ctx *c, IrWorkPoly *p, IrWorkTerm m)
{
    IrWorkPoly r = {0};
    for (int i = 0; i < p->n; i++) poly_add_term(c, &r, term_mul(c, p->t[i], m));
    *p = r;
}

typedef struct Work {
    IrWorkPoly ops, par, launches;
} Work;

static void work_add(Ctx *c, Work *a, const Work *b)
{
    poly_add(c, &a->ops, &b->ops);
    poly_add(c, &a->par, &b->par);
    poly_add(c, &a->launches, &b->launches);
}

static void work_scale(Ctx *c, Work *a, IrWorkTerm m)
{
    poly_scale(c, &a->ops, m);
    poly_scale(c, &a->par, m);
    poly_scale(c, &a->launches, m);
}

/* ---- extents: integer scalars and array sizes as monomials of the arguments ---- */

static int param_of(const Ctx *c, const IrNode *n)
{
    if (n->kind != IR_VAR) return -1;
    int id = n->u.var.var->id;
    return id < c->f->nparams ? id : -1;
}

static const IrNode *def_of(const Ctx *c, const IrNode *n)
{
    if (n->kind != IR_VAR || c->depth >= MAX_DEPTH) return NULL;
    return c->single_def[n->u.var.var->id];
}

static IrWorkTerm unknown_scalar(Ctx *c)
{
    c->estimated = true;
    return term_const(UNKNOWN_TRIPS);
}

static IrWorkTerm array_size(Ctx *c, const IrNode *a);
static IrWorkTerm extent(Ctx *c, const IrNode *n);

static int ndim_of(const IrNode *n)
{
    return n->type && n->type->kind == IR_TY_ARRAY ? n->type->ndim : 0;
}

static IrWorkTerm array_dim(Ctx *c, const IrNode *a, int axis);

/* Dimension `axis` of base[items]: an integer item drops an axis of the base, a slice or an index array keeps
 * one (counted whole: a slice's bounds are not read), None adds one of length 1. */
static IrWorkTerm index_dim(Ctx *c, const IrNode *a, int axis)
{
    const IrNode *base = a->u.index.base;
    int base_axis = 0, out_axis = 0;
    for (int i = 0; i < a->u.index.n; i++) {
        const IrNode *item = a->u.index.items[i];
        bool none = item->type && item->type->kind == IR_TY_NONE;
        bool keeps = none || item->kind == IR_SLICE || ndim_of(item) > 0;
        if (keeps && out_axis == axis) return none ? term_const(1) : array_dim(c, base, base_axis);
        if (keeps) out_axis++;
        if (!none) base_axis++;
    }
    return array_dim(c, base, base_axis + (axis - out_axis));
}

/* Dimension `axis` of array expression a. */
static IrWorkTerm array_dim(Ctx *c, const IrNode *a, int axis)
{
    int p = param_of(c, a);
    if (p >= 0 && axis < ndim_of(a)) return term_factor(c, IR_WF_DIM, p, axis);
    const IrNode *def = def_of(c, a);
    IrWorkTerm r;
    c->depth++;
    if (def) r = array_dim(c, def, axis);
    else if (a->kind == IR_ALLOC && axis < a->u.alloc.ndim) r = extent(c, a->u.alloc.dims[axis]);
    else if (a->kind == IR_IMAP && axis < a->u.imap.ndim) r = extent(c, a->u.imap.dims[axis]);
    else if (a->kind == IR_MAP && a->u.map.out) r = array_dim(c, a->u.map.out, axis);
    else if (a->kind == IR_INDEX) r = index_dim(c, a, axis);
    else if (a->kind == IR_MAP) {
        const IrNode *widest = NULL; /* broadcasting: the input of the map's ndim stands for its shape */
        for (int i = 0; i < a->u.map.ninputs; i++)
            if (ndim_of(a->u.map.inputs[i]) == ndim_of(a)) widest = a->u.map.inputs[i];
        r = widest ? array_dim(c, widest, axis) : term_factor(c, IR_WF_LARGEST_ROOT, 0, ndim_of(a) ? ndim_of(a) : 1);
    } else if (a->kind == IR_CALL && a->u.call.ckind == IR_CALLEE_INTRINSIC && a->u.call.nargs > 0 &&
               a->u.call.intrinsic == IR_INTR_TRANSPOSE) {
        int nd = ndim_of(a->u.call.args[0]);
        r = array_dim(c, a->u.call.args[0], nd - 1 - axis);
    } else if (a->kind == IR_CALL && a->u.call.ckind == IR_CALLEE_INTRINSIC && a->u.call.nargs >= 2 &&
               a->u.call.intrinsic == IR_INTR_MATMUL) {
        r = axis == 0 ? array_dim(c, a->u.call.args[0], 0) : array_dim(c, a->u.call.args[1], 1);
    } else r = term_factor(c, IR_WF_LARGEST_ROOT, 0, ndim_of(a) ? ndim_of(a) : 1);
    c->depth--;
    return r;
}

/* The element count of array expression a. */
static IrWorkTerm array_size(Ctx *c, const IrNode *a)
{
    int nd = ndim_of(a);
    if (nd == 0) return term_const(1);
    const IrNode *def = def_of(c, a);
    if (def) {
        c->depth++;
        IrWorkTerm r = array_size(c, def);
        c->depth--;
        return r;
    }
    switch (a->kind) {
    case IR_VAR:
        if (param_of(c, a) < 0) return term_factor(c, IR_WF_LARGEST, 0, 0);
        break;
    case IR_REDUCE: case IR_SCAN: case IR_MAP: case IR_IMAP: case IR_ALLOC: case IR_INDEX: case IR_CALL:
        break;
    default:
        return term_factor(c, IR_WF_LARGEST, 0, 0);
    }
    IrWorkTerm r = term_const(1);
    for (int k = 0; k < nd; k++) r = term_mul(c, r, array_dim(c, a, k));
    return r;
}

/* An integer scalar expression (a loop's stop, an imap's dim) as a monomial: sums keep their larger part and
 * constants their value, so `n - 1` counts as n and `2 * n` as 2n. */
static IrWorkTerm extent(Ctx *c, const IrNode *n)
{
    int p = param_of(c, n);
    if (p >= 0) {
        if (n->type && n->type->kind == IR_TY_SCALAR && ir_dtype_is_int(n->type->dtype))
            return term_factor(c, IR_WF_VALUE, p, 0);
        return unknown_scalar(c);
    }
    const IrNode *def = def_of(c, n);
    if (def) {
        c->depth++;
        IrWorkTerm r = extent(c, def);
        c->depth--;
        return r;
    }
    switch (n->kind) {
    case IR_CONST:
        return term_const(n->u.konst.i > 0 ? (double)n->u.konst.i : 0);
    case IR_CAST:
        return extent(c, n->u.cast.value);
    case IR_TUPLE_GET:
        if (n->u.tuple_get.tuple->kind == IR_TUPLE && n->u.tuple_get.k < n->u.tuple_get.tuple->u.tuple.n)
            return extent(c, n->u.tuple_get.tuple->u.tuple.items[n->u.tuple_get.k]);
        return unknown_scalar(c);
    case IR_ARRAY_DIM:
        return array_dim(c, n->u.array_dim.array, n->u.array_dim.axis);
    case IR_BCAST_SHAPE:
        for (int i = 0; i < n->u.bcast_shape.n; i++) {
            const IrNode *arg = n->u.bcast_shape.args[i];
            int nd = ndim_of(arg), axis = n->u.bcast_shape.axis - (n->u.bcast_shape.ndim - nd);
            if (nd == n->u.bcast_shape.ndim && axis >= 0) return array_dim(c, arg, axis);
        }
        return unknown_scalar(c);
    case IR_BINOP: {
        const IrNode *l = n->u.binop.lhs, *r = n->u.binop.rhs;
        switch (n->u.binop.op) {
        case IR_OP_ADD: case IR_OP_SUB: case IR_OP_MAX: case IR_OP_MIN:
            if (l->kind == IR_CONST) return extent(c, r);
            return extent(c, l);
        case IR_OP_MUL:
            return term_mul(c, extent(c, l), extent(c, r));
        case IR_OP_FLOORDIV: case IR_OP_DIV: case IR_OP_RSHIFT: {
            IrWorkTerm t = extent(c, l);
            if (r->kind == IR_CONST && r->u.konst.i > 0) {
                double d = n->u.binop.op == IR_OP_RSHIFT ? ldexp(1.0, (int)(r->u.konst.i & 63)) : (double)r->u.konst.i;
                t.coef /= d;
            }
            return t;
        }
        default:
            return unknown_scalar(c);
        }
    }
    case IR_CALL:
        if (n->u.call.ckind == IR_CALLEE_NAMED && n->u.call.nargs == 1 && n->u.call.name &&
            strcmp(n->u.call.name, "builtins.len") == 0)
            return array_dim(c, n->u.call.args[0], 0);
        return unknown_scalar(c);
    default:
        return unknown_scalar(c);
    }
}

/* ---- work ---- */

static Work block_work(Ctx *c, const IrBlock *b);
static Work node_work(Ctx *c, const IrNode *n);
static double poly_const(IrWorkPoly p);
static void model_at_depth(const IrFunc *f, const IrCostWeights *w, IrWorkModel *out, int depth);

typedef struct Gather {
    Ctx *c;
    Work *w;
} Gather;

static void gather_child(IrNode **child, void *env)
{
    Gather *g = env;
    Work cw = node_work(g->c, *child);
    work_add(g->c, g->w, &cw);
}

static Work children_work(Ctx *c, const IrNode *n)
{
    Work w = {0};
    Gather g = {c, &w};
    ir_each_child((IrNode *)n, gather_child, &g); /* the walk only reads */
    return w;
}

static double own_weight(const Ctx *c, const IrNode *n)
{
    switch (n->kind) {
    case IR_MATH: return (double)c->w->math[n->u.math.fn];
    case IR_CONST: case IR_VAR: return 0;
    default: return (double)c->w->op;
    }
}

/* The work of a callee called with args, its parameters' factors replaced by the arguments' extents. */
static Work callee_work(Ctx *c, const IrNode *call)
{
    const IrFunc *g = call->u.call.callee;
    Work out = {0};
    if (!g || c->depth >= MAX_DEPTH) {
        poly_add_term(c, &out.ops, term_const((double)c->w->user_call));
        c->estimated = true;
        return out;
    }
    IrWorkModel m;
    model_at_depth(g, c->w, &m, c->depth + 1);
    if (m.estimated) c->estimated = true;
    const IrWorkPoly *in[3] = {&m.ops, &m.parallel_ops, &m.launches};
    IrWorkPoly *to[3] = {&out.ops, &out.par, &out.launches};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < in[k]->n; i++) {
            const IrWorkTerm *t = &in[k]->t[i];
            IrWorkTerm r = term_const(t->coef);
            for (int j = 0; j < t->nf; j++) {
                IrWorkFactor f = t->f[j];
                IrWorkTerm sub;
                if ((f.kind == IR_WF_DIM || f.kind == IR_WF_VALUE) && f.param < call->u.call.nargs) {
                    const IrNode *arg = call->u.call.args[f.param];
                    c->depth++;
                    sub = f.kind == IR_WF_DIM ? array_dim(c, arg, f.axis) : extent(c, arg);
                    c->depth--;
                } else {
                    sub = term_const(1);
                    sub.nf = 1;
                    sub.f[0] = f;
                }
                r = term_mul(c, r, sub);
            }
            poly_add_term(c, to[k], r);
        }
    poly_add_term(c, &out.ops, term_const((double)c->w->user_call));
    return out;
}

/* Work of one element of a map-like body: the body's own work (nested data-parallel nodes with their extents). */
static Work element_then_extent(Ctx *c, const IrNode *body, IrWorkTerm size, double extra_per_element)
{
    Work w = body ? node_work(c, body) : (Work){0};
    poly_add_term(c, &w.ops, term_const(extra_per_element));
    work_scale(c, &w, size);
    return w;
}

static Work data_parallel_work(Ctx *c, const IrNode *n)
{
    Work w = {0};
    switch (n->kind) {
    case IR_MAP: {
        for (int i = 0; i < n->u.map.ninputs; i++) {
            Work in = node_work(c, n->u.map.inputs[i]);
            work_add(c, &w, &in);
        }
        IrWorkTerm size = n->u.map.out ? array_size(c, n->u.map.out) : array_size(c, n);
        Work body = element_then_extent(c, n->u.map.body, size, 1);
        work_add(c, &w, &body);
        break;
    }
    case IR_IMAP: {
        IrWorkTerm size = term_const(1);
        for (int k = 0; k < n->u.imap.ndim; k++) size = term_mul(c, size, extent(c, n->u.imap.dims[k]));
        Work body = element_then_extent(c, n->u.imap.body, size, 1);
        work_add(c, &w, &body);
        break;
    }
    case IR_REDUCE: case IR_SCAN: {
        const IrNode *input = n->kind == IR_REDUCE ? n->u.reduce.input : n->u.scan.input;
        const IrCombine *comb = n->kind == IR_REDUCE ? &n->u.reduce.combine : &n->u.scan.combine;
        double per = 1;
        if (comb->body) per += poly_const(node_work(c, comb->body).ops);
        if (input->kind == IR_MAP) { /* fused: the map's body runs per element, no array */
            for (int i = 0; i < input->u.map.ninputs; i++) {
                Work in = node_work(c, input->u.map.inputs[i]);
                work_add(c, &w, &in);
            }
            Work body = element_then_extent(c, input->u.map.body, array_size(c, input), per + 1);
            work_add(c, &w, &body);
        } else {
            Work in = node_work(c, input);
            work_add(c, &w, &in);
            Work each = element_then_extent(c, NULL, array_size(c, input), per);
            work_add(c, &w, &each);
        }
        break;
    }
    default:
        break;
    }
    return w;
}

static Work node_work(Ctx *c, const IrNode *n)
{
    Work w = {0};
    if (!n) return w;
    switch (n->kind) {
    case IR_MAP: case IR_IMAP: case IR_REDUCE: case IR_SCAN:
        w = data_parallel_work(c, n);
        break;
    case IR_CALL:
        if (n->u.call.ckind == IR_CALLEE_INTRINSIC && n->u.call.intrinsic == IR_INTR_MATMUL && n->u.call.nargs >= 2) {
            /* m x n results of k multiply-adds each */
            const IrNode *a = n->u.call.args[0], *b = n->u.call.args[1];
            IrWorkTerm mnk = term_mul(c, term_mul(c, array_dim(c, a, 0), array_dim(c, a, 1)), array_dim(c, b, 1));
            mnk.coef *= 2;
            w = children_work(c, n);
            poly_add_term(c, &w.ops, mnk);
            break;
        }
        w = children_work(c, n);
        if (n->u.call.ckind == IR_CALLEE_FUNC) {
            Work cw = callee_work(c, n);
            work_add(c, &w, &cw);
        } else poly_add_term(c, &w.ops, term_const(own_weight(c, n)));
        break;
    case IR_IF: {
        w = node_work(c, n->u.if_.cond);
        Work orelse = block_work(c, &n->u.if_.orelse);
        if (n->u.if_.versioned) { /* the arms compute the same: the code as written stands for both */
            work_add(c, &w, &orelse);
            break;
        }
        /* either arm may run: half of each */
        Work then = block_work(c, &n->u.if_.then);
        work_add(c, &then, &orelse);
        work_scale(c, &then, term_const(0.5));
        work_add(c, &w, &then);
        break;
    }
    case IR_WHILE: {
        c->estimated = true;
        w = block_work(c, &n->u.while_.body);
        Work cond = node_work(c, n->u.while_.cond);
        work_add(c, &w, &cond);
        work_scale(c, &w, term_const(UNKNOWN_TRIPS));
        break;
    }
    case IR_FOR_RANGE: {
        w = block_work(c, &n->u.for_range.body);
        poly_add_term(c, &w.ops, term_const(1)); /* the counter */
        IrWorkTerm trips = extent(c, n->u.for_range.stop);
        const IrNode *step = n->u.for_range.step;
        if (step && step->kind == IR_CONST && step->u.konst.i > 1) trips.coef /= (double)step->u.konst.i;
        work_scale(c, &w, trips);
        Work bounds = node_work(c, n->u.for_range.start);
        work_add(c, &w, &bounds);
        bounds = node_work(c, n->u.for_range.stop);
        work_add(c, &w, &bounds);
        break;
    }
    default: {
        IrBlock *blocks[2];
        int nb = ir_stmt_blocks((IrNode *)n, blocks);
        w = children_work(c, n);
        poly_add_term(c, &w.ops, term_const(own_weight(c, n)));
        for (int k = 0; k < nb; k++) {
            Work bw = block_work(c, blocks[k]);
            work_add(c, &w, &bw);
        }
        break;
    }
    }
    if (n->region) { /* an outermost parallel region: all of it is shared out, and it is entered once */
        w.par = w.ops;
        memset(&w.launches, 0, sizeof w.launches);
        poly_add_term(c, &w.launches, term_const(1));
    }
    return w;
}

static Work block_work(Ctx *c, const IrBlock *b)
{
    Work w = {0};
    for (int i = 0; i < b->n; i++) {
        Work s = node_work(c, b->stmts[i]);
        work_add(c, &w, &s);
    }
    return w;
}

/* ---- single assignments: `n = a.shape[0]` lets `range(n)` count as the argument's dimension ---- */

typedef struct Defs {
    const IrNode **value;
    int *ndefs;
} Defs;

static void count_defs(IrNode *stmt, void *env)
{
    Defs *d = env;
    if (stmt->kind == IR_ASSIGN) {
        int id = stmt->u.assign.var->id;
        d->ndefs[id]++;
        d->value[id] = stmt->u.assign.value;
    } else if (stmt->kind == IR_FOR_RANGE) {
        d->ndefs[stmt->u.for_range.var->id] += 2; /* a loop variable is no single value */
    }
}

static double poly_const(IrWorkPoly p)
{
    double s = 0;
    for (int i = 0; i < p.n; i++)
        if (p.t[i].nf == 0) s += p.t[i].coef;
    return s;
}

static void model_at_depth(const IrFunc *f, const IrCostWeights *w, IrWorkModel *out, int depth)
{
    memset(out, 0, sizeof *out);
    int nvars = f->nvars ? f->nvars : 1;
    const IrNode **value = calloc((size_t)nvars, sizeof *value);
    int *ndefs = calloc((size_t)nvars, sizeof *ndefs);
    IrNode **single = calloc((size_t)nvars, sizeof *single);
    if (!value || !ndefs || !single) {
        free(value);
        free(ndefs);
        free(single);
        out->estimated = true;
        return;
    }
    Defs d = {value, ndefs};
    ir_each_stmt((IrBlock *)&f->body, count_defs, &d);
    for (int i = f->nparams; i < f->nvars; i++)
        if (ndefs[i] == 1) single[i] = (IrNode *)value[i];
    Ctx c = {.f = f, .w = w, .single_def = single, .depth = depth};
    Work work = block_work(&c, &f->body);
    out->ops = work.ops;
    out->parallel_ops = work.par;
    out->launches = work.launches;
    out->estimated = c.estimated;
    free(value);
    free(ndefs);
    free(single);
}

void ir_work_model(const IrFunc *f, const IrCostWeights *w, IrWorkModel *out)
{
    model_at_depth(f, w, out, 0);
}

double ir_work_eval(const IrWorkPoly *p, const IrWorkArg *args, int nargs, double largest)
{
    double s = 0;
    for (int i = 0; i < p->n; i++) {
        const IrWorkTerm *t = &p->t[i];
        double v = t->coef;
        for (int k = 0; k < t->nf; k++) {
            IrWorkFactor f = t->f[k];
            switch ((IrWorkFactorKind)f.kind) {
            case IR_WF_DIM:
                v *= f.param < nargs && f.axis < args[f.param].ndim ? (double)args[f.param].dims[f.axis] : 1;
                break;
            case IR_WF_VALUE:
                v *= f.param < nargs && args[f.param].value > 0 ? args[f.param].value : 0;
                break;
            case IR_WF_LARGEST:
                v *= largest;
                break;
            case IR_WF_LARGEST_ROOT:
                v *= f.axis > 1 ? pow(largest, 1.0 / f.axis) : largest;
                break;
            }
        }
        s += v;
    }
    return s;
}
