/* explicit_alloc.c: give every new array its own IR_ALLOC. A map (or imap) used as an expression,
 *
 *     x = map(f, a + 1, b)
 *
 * becomes statements that allocate first and then fill:
 *
 *     $t1 = <a + 1 ...>                           inputs that are not variables or constants, once
 *     $t2 = alloc array(dt, nd) (bcast_shape[0]($t1, b), ...)
 *     map(f, $t1, b, out=$t2)
 *     x = $t2
 *
 * so that a backend sees the allocation as an operation of its own, with a computed shape, separate from the
 * loop that fills it: the openmp backend allocates before forking, the gpu backend before launching.
 *
 * What stays as it was (the backend allocates there itself): maps inside a branch of a conditional
 * expression or after the first operand of and/or (they may not run), in a while condition (it is evaluated
 * again on every iteration), the input of a reduction (fused into the reduction's loop: there is no array), and
 * any map in a statement that also calls a user function (hoisting would change the order of evaluation
 * against the call's side effects). Axis reductions keep allocating in the backend for now. */
#include "ir.h"

typedef struct Hoist {
    IrFunc *f;
    IrBlock *out;       /* the new statement list being built */
} Hoist;

static bool calls_user_function(IrNode *n);

static void find_call(IrNode **p, void *env)
{
    bool *found = env;
    if ((*p)->kind == IR_CALL && (*p)->u.call.ckind == IR_CALLEE_FUNC) *found = true;
    else if (!*found) ir_each_child(*p, find_call, env);
}

static bool calls_user_function(IrNode *n)
{
    bool found = false;
    ir_each_child(n, find_call, &found);
    return found;
}

static IrNode *temp_of(Hoist *h, IrNode *value)
{
    if (value->kind == IR_VAR || value->kind == IR_CONST) return value;
    IrVar *t = ir_func_temp(h->f, value->type);
    IrNode *as = ir_node(h->f->arena, IR_ASSIGN, value->pos);
    as->u.assign.var = t;
    as->u.assign.value = value;
    ir_block_push(h->f->arena, h->out, as);
    return ir_var_ref(h->f->arena, value->pos, t);
}

static IrNode *alloc_into_temp(Hoist *h, IrNode *like, IrNode **dims, int ndim)
{
    RtArena *a = h->f->arena;
    IrNode *alloc = ir_node(a, IR_ALLOC, like->pos);
    alloc->type = ir_type_array(like->type->dtype, ndim, IR_LAYOUT_C);
    alloc->u.alloc.dims = dims;
    alloc->u.alloc.ndim = ndim;
    return temp_of(h, alloc);
}

static void emit_fill(Hoist *h, IrNode *fill)
{
    IrNode *st = ir_node(h->f->arena, IR_EXPR_STMT, fill->pos);
    st->u.expr_stmt.value = fill;
    ir_block_push(h->f->arena, h->out, st);
}

static IrNode *hoist_map(Hoist *h, IrNode *m)
{
    RtArena *a = h->f->arena;
    for (int i = 0; i < m->u.map.ninputs; i++) m->u.map.inputs[i] = temp_of(h, m->u.map.inputs[i]);
    int nd = m->type->ndim;
    IrNode **dims = ir_nodes(a, nd);
    for (int k = 0; k < nd; k++) {
        IrNode *d = ir_node(a, IR_BCAST_SHAPE, m->pos);
        d->type = ir_type_scalar(IR_DT_INT64);
        d->u.bcast_shape.args = m->u.map.inputs;
        d->u.bcast_shape.n = m->u.map.ninputs;
        d->u.bcast_shape.axis = k;
        d->u.bcast_shape.ndim = nd;
        dims[k] = d;
    }
    IrNode *out = alloc_into_temp(h, m, dims, nd);
    m->u.map.out = out;
    m->u.map.out_is_fresh = true;
    m->type = out->type;
    emit_fill(h, m);
    return out;
}

static IrNode *hoist_imap(Hoist *h, IrNode *m)
{
    IrNode **dims = ir_nodes(h->f->arena, m->u.imap.ndim);
    for (int k = 0; k < m->u.imap.ndim; k++) dims[k] = m->u.imap.dims[k] = temp_of(h, m->u.imap.dims[k]);
    IrNode *out = alloc_into_temp(h, m, dims, m->u.imap.ndim);
    m->u.imap.out = out;
    emit_fill(h, m);
    return out;
}

static void rewrite(IrNode **p, void *env);

/* Children of n whose evaluation is unconditional and happens once per evaluation of n. */
static void rewrite_children(IrNode *n, Hoist *h)
{
    switch (n->kind) {
    case IR_IFEXP: rewrite(&n->u.ifexp.cond, h); return;
    case IR_BOOLOP: rewrite(&n->u.boolop.values[0], h); return;
    case IR_REDUCE: case IR_SCAN: return; /* its input is fused into its loop */
    case IR_MAP:
        for (int i = 0; i < n->u.map.ninputs; i++) rewrite(&n->u.map.inputs[i], h);
        return;
    case IR_IMAP:
        for (int i = 0; i < n->u.imap.ndim; i++) rewrite(&n->u.imap.dims[i], h);
        return;
    default: ir_each_child(n, rewrite, h); return;
    }
}

static void rewrite(IrNode **p, void *env)
{
    Hoist *h = env;
    IrNode *n = *p;
    rewrite_children(n, h);
    if (n->kind == IR_MAP && !n->u.map.out) *p = hoist_map(h, n);
    else if (n->kind == IR_IMAP && !n->u.imap.out) *p = hoist_imap(h, n);
}

static void rewrite_block(IrFunc *f, IrBlock *b);

static void rewrite_stmt(IrFunc *f, IrNode *s, IrBlock *out)
{
    Hoist h = {f, out};
    switch (s->kind) {
    case IR_IF:
        rewrite_block(f, &s->u.if_.then);
        rewrite_block(f, &s->u.if_.orelse);
        if (!calls_user_function(s->u.if_.cond)) rewrite(&s->u.if_.cond, &h);
        break;
    case IR_WHILE: rewrite_block(f, &s->u.while_.body); break;
    case IR_FOR_RANGE:
        rewrite_block(f, &s->u.for_range.body);
        if (!calls_user_function(s)) ir_each_child(s, rewrite, &h);
        break;
    case IR_FOR_ITER: rewrite_block(f, &s->u.for_iter.body); break;
    default:
        if (!calls_user_function(s)) ir_each_child(s, rewrite, &h);
        break;
    }
    ir_block_push(f->arena, out, s);
}

static void rewrite_block(IrFunc *f, IrBlock *b)
{
    IrBlock out = {0};
    for (int i = 0; i < b->n; i++) rewrite_stmt(f, b->stmts[i], &out);
    *b = out;
}

void ir_explicit_alloc(IrFunc *f)
{
    rewrite_block(f, &f->body);
}
