/* fuse.c: map fusion. A map whose input is another map (an array expression nobody else can see: the tree
 * form gives every intermediate exactly one user) absorbs it: the inner map's inputs become the outer map's,
 * and the inner body replaces the parameter that stood for its result. `np.sqrt(a*a + b*b)` becomes one map
 * over a and b with no temporary array. A map over an index map and scalars becomes an index map. A reduction
 * or scan over a map needs no rewriting: backends compute the map's body inside the reduction's loop.
 *
 * Broadcasting stays right: broadcasting is associative, so the fused map's space (the broadcast of all leaf
 * inputs) is the outer map's space, and each leaf is indexed as it was. */
#include <string.h>
#include "ir.h"

typedef struct Subst {
    IrVar *param;
    IrNode *body;
} Subst;

static void substitute(IrNode **p, void *env)
{
    Subst *s = env;
    if ((*p)->kind == IR_VAR && (*p)->u.var.var == s->param) {
        *p = s->body;
        return;
    }
    ir_each_child(*p, substitute, env);
}

/* Where a body reads param: at all, and only under a condition (an arm of an if-expression, an operand of
 * `and`/`or` after the first), which evaluates it for some elements only. */
typedef struct Reads {
    IrVar *param;
    bool conditional;  /* the node being visited is evaluated under a condition */
    bool read, read_conditionally;
} Reads;

static void find_reads(IrNode **p, void *env)
{
    Reads *r = env;
    IrNode *n = *p;
    if (n->kind == IR_VAR && n->u.var.var == r->param) {
        r->read = true;
        r->read_conditionally |= r->conditional;
        return;
    }
    bool outer = r->conditional;
    if (n->kind == IR_IFEXP) {
        find_reads(&n->u.ifexp.cond, r);
        r->conditional = true;
        find_reads(&n->u.ifexp.then, r);
        find_reads(&n->u.ifexp.orelse, r);
    } else if (n->kind == IR_BOOLOP) {
        for (int k = 0; k < n->u.boolop.n; k++) {
            find_reads(&n->u.boolop.values[k], r);
            r->conditional = true;
        }
    } else {
        ir_each_child(n, find_reads, env);
    }
    r->conditional = outer;
}

/* An integer power, whose negative exponent NumPy's elementwise power raises for too. */
static void find_int_power(IrNode **p, void *env)
{
    const IrNode *n = *p;
    if (n->kind == IR_BINOP && n->u.binop.op == IR_OP_POW && n->u.binop.lhs->type &&
        n->u.binop.lhs->type->kind == IR_TY_SCALAR && ir_dtype_is_int(n->u.binop.lhs->type->dtype))
        *(bool *)env = true;
    else if (!*(bool *)env)
        ir_each_child(*p, find_int_power, env);
}

/* NumPy computes an input whole before the operation that reads it, so an input whose element may raise raises
 * for every element, whatever the body does with it. It is not fused where the body never reads its element
 * (np.isnan of integers is False); nor, where NumPy raises too (an integer power with a negative exponent),
 * where the body reads it under a condition (np.where(c, x, a ** e): the power's error for an element where c
 * holds would be skipped). An integer division is: NumPy gives 0 for a zero divisor, with a warning, where
 * lorikeet raises (USERGUIDE, Differences), so np.where(b != 0, a // b, 0), fused, gives NumPy's values. */
static bool dropped_would_raise(IrNode *body, IrVar *param, IrNode *input_body)
{
    if (!(ir_effects(input_body) & IR_FX_RAISE)) return false;
    Reads r = {.param = param};
    find_reads(&body, &r);
    if (!r.read) return true;
    bool int_power = false;
    find_int_power(&input_body, &int_power);
    return r.read_conditionally && int_power;
}

static void rename_param(IrNode **p, void *env)
{
    IrVar **from_to = env;
    if ((*p)->kind == IR_VAR && (*p)->u.var.var == from_to[0]) (*p)->u.var.var = from_to[1];
    ir_each_child(*p, rename_param, env);
}

static bool same_var(const IrNode *a, const IrNode *b)
{
    return a->kind == IR_VAR && b->kind == IR_VAR && a->u.var.var == b->u.var.var && !b->u.var.check_bound;
}

/* One variable as several inputs (d * d, or the leaves of fused maps that read d) is one input: an array
 * broadcast against itself is itself, so its parameters all stand for the same element. */
void ir_map_merge_inputs(IrNode *m)
{
    for (int j = 1; j < m->u.map.ninputs; j++) {
        int i = 0;
        while (i < j && !same_var(m->u.map.inputs[i], m->u.map.inputs[j])) i++;
        if (i == j) continue;
        IrVar *from_to[2] = {m->u.map.params[j], m->u.map.params[i]};
        rename_param(&m->u.map.body, from_to);
        for (int k = j + 1; k < m->u.map.ninputs; k++) {
            m->u.map.inputs[k - 1] = m->u.map.inputs[k];
            m->u.map.params[k - 1] = m->u.map.params[k];
        }
        m->u.map.ninputs--;
        m->u.map.nparams--;
        j--;
    }
}

static bool is_expr_map(const IrNode *n)
{
    return n->kind == IR_MAP && !n->u.map.out;
}

static void fuse_map(RtArena *a, IrNode *m)
{
    for (int i = 0; i < m->u.map.ninputs; i++) {
        IrNode *inner = m->u.map.inputs[i];
        if (!is_expr_map(inner) || dropped_would_raise(m->u.map.body, m->u.map.params[i], inner->u.map.body)) continue;
        int n = m->u.map.ninputs - 1 + inner->u.map.ninputs;
        if (n > IR_MAX_MAP_INPUTS) continue; /* the map stays two maps */
        IrNode **inputs = ir_nodes(a, n);
        IrVar **params = rt_arena_alloc(a, sizeof(IrVar *) * (size_t)n);
        int k = 0;
        for (int j = 0; j < m->u.map.ninputs; j++) {
            if (j == i) {
                for (int q = 0; q < inner->u.map.ninputs; q++) {
                    inputs[k] = inner->u.map.inputs[q];
                    params[k++] = inner->u.map.params[q];
                }
            } else {
                inputs[k] = m->u.map.inputs[j];
                params[k++] = m->u.map.params[j];
            }
        }
        Subst s = {m->u.map.params[i], inner->u.map.body};
        substitute(&m->u.map.body, &s);
        m->u.map.inputs = inputs;
        m->u.map.params = params;
        m->u.map.ninputs = m->u.map.nparams = n;
        i += inner->u.map.ninputs - 1; /* the absorbed inputs are already fused */
    }
    ir_map_merge_inputs(m);
}

/* A map over one index map and scalars (np.arange(n) * 2.0 + k) becomes an index map whose body is the map's:
 * the scalars must be variables or constants, since the body is evaluated per element. */
static IrNode *fuse_into_imap(IrNode *m)
{
    if (m->u.map.out) return NULL;
    IrNode *im = NULL;
    for (int i = 0; i < m->u.map.ninputs; i++) {
        IrNode *in = m->u.map.inputs[i];
        if (in->kind == IR_IMAP && !in->u.imap.out && !im) im = in;
        else if (in->type->kind == IR_TY_ARRAY || (in->kind != IR_VAR && in->kind != IR_CONST)) return NULL;
    }
    if (!im || im->type->ndim != m->type->ndim) return NULL;
    for (int i = 0; i < m->u.map.ninputs; i++)
        if (m->u.map.inputs[i] == im && dropped_would_raise(m->u.map.body, m->u.map.params[i], im->u.imap.body))
            return NULL;
    IrNode *body = m->u.map.body;
    for (int i = 0; i < m->u.map.ninputs; i++) {
        Subst s = {m->u.map.params[i], m->u.map.inputs[i] == im ? im->u.imap.body : m->u.map.inputs[i]};
        substitute(&body, &s);
    }
    im->u.imap.body = body;
    im->type = m->type;
    return im;
}

static void fuse_expr(IrNode **p, void *env)
{
    ir_each_child(*p, fuse_expr, env); /* inner maps first, so chains collapse bottom-up */
    if ((*p)->kind == IR_MAP) {
        fuse_map(env, *p);
        IrNode *im = fuse_into_imap(*p);
        if (im) *p = im;
    }
}

static void fuse_stmt(IrNode *s, void *env)
{
    ir_each_child(s, fuse_expr, env);
}

void ir_fuse(IrFunc *f)
{
    ir_each_stmt(&f->body, fuse_stmt, f->arena);
}
