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
 * The intrinsics that make an array get it the same way, as u.call.out, with the shape IrIntrinsic states:
 *
 *     $t3 = reduce[add](map(lambda $t2: int64($t2), m))       a[m]: the mask's set elements, counted first
 *     $t4 = alloc array(float64, 1d, C) ($t3)
 *     mask_select(a, m, out=$t4)
 *
 * matmul's rows are A's when the inner dimensions agree and 0 when not (so a mismatch raises its ValueError
 * without a large allocation); concatenate's length along the axis is the sum of its parts'.
 *
 * Reductions along an axis and scans fill reduce.out / scan.out, of the input's shape without the axis (a
 * fused map's bcast_shape, an imap's dims, an array's shape), of its shape (a scan along an axis) or of its
 * element count (a flat scan):
 *
 *     $t2 = alloc array(float64, 1d, C) (a.shape[1])
 *     reduce[add](a, axis=0, out=$t2)
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

/* ---- the intrinsics that make a new array: their arguments in temporaries, the shape computed from them ---- */

static IrNode *dim_of(RtArena *a, IrNode *array, int axis)
{
    IrNode *d = ir_node(a, IR_ARRAY_DIM, array->pos);
    d->type = ir_type_scalar(IR_DT_INT64);
    d->u.array_dim.array = array;
    d->u.array_dim.axis = axis;
    return d;
}

static IrNode *int_binop(RtArena *a, IrBinOp op, IrNode *l, IrNode *r)
{
    IrNode *b = ir_node(a, IR_BINOP, l->pos);
    b->type = ir_type_scalar(IR_DT_INT64);
    b->u.binop.op = op;
    b->u.binop.lhs = l;
    b->u.binop.rhs = r;
    return b;
}

/* v if l == r else 0 */
static IrNode *if_equal(RtArena *a, IrNode *l, IrNode *r, IrNode *v)
{
    IrNode *c = ir_node(a, IR_COMPARE, l->pos);
    c->type = ir_type_scalar(IR_DT_BOOL);
    c->u.compare.nops = 1;
    c->u.compare.ops = rt_arena_alloc(a, sizeof(IrCmpOp));
    c->u.compare.ops[0] = IR_CMP_EQ;
    c->u.compare.operands = ir_nodes(a, 2);
    c->u.compare.operands[0] = l;
    c->u.compare.operands[1] = r;
    IrNode *e = ir_node(a, IR_IFEXP, l->pos);
    e->type = v->type;
    e->u.ifexp.cond = c;
    e->u.ifexp.then = v;
    e->u.ifexp.orelse = ir_const_int(a, l->pos, v->type, 0);
    return e;
}

/* reduce[add](map(lambda p: int64(p), mask)): the number of set elements of a bool array */
static IrNode *count_set(IrFunc *f, IrNode *mask)
{
    RtArena *a = f->arena;
    IrType *i64 = ir_type_scalar(IR_DT_INT64);
    IrNode *m = ir_node(a, IR_MAP, mask->pos);
    m->type = ir_type_array(IR_DT_INT64, mask->type->ndim, IR_LAYOUT_C);
    m->u.map.nparams = m->u.map.ninputs = 1;
    m->u.map.params = rt_arena_alloc(a, sizeof(IrVar *));
    m->u.map.params[0] = ir_func_temp(f, ir_type_scalar(IR_DT_BOOL));
    m->u.map.inputs = ir_nodes(a, 1);
    m->u.map.inputs[0] = mask;
    IrNode *cast = ir_node(a, IR_CAST, mask->pos);
    cast->type = i64;
    cast->u.cast.value = ir_var_ref(a, mask->pos, m->u.map.params[0]);
    m->u.map.body = cast;
    IrNode *r = ir_node(a, IR_REDUCE, mask->pos);
    r->type = i64;
    r->u.reduce.op = IR_RED_ADD;
    r->u.reduce.input = m;
    r->u.reduce.axis = -1;
    return r;
}

/* The shape of the array intrinsic c makes (IrIntrinsic in ir.h), from its arguments (variables or constants by
 * now); NULL for the intrinsics that make views. */
static IrNode **intrinsic_dims(Hoist *h, IrNode *c)
{
    RtArena *a = h->f->arena;
    IrNode **args = c->u.call.args;
    int nd = c->type->ndim;
    switch (c->u.call.intrinsic) {
    case IR_INTR_TRANSPOSE: case IR_INTR_RESHAPE: case IR_INTR_COUNT: return NULL;
    case IR_INTR_MATMUL: {
        IrNode **dims = ir_nodes(a, 2);
        dims[0] = if_equal(a, dim_of(a, args[0], 1), dim_of(a, args[1], 0), dim_of(a, args[0], 0));
        dims[1] = dim_of(a, args[1], 1);
        return dims;
    }
    case IR_INTR_CONCATENATE: {
        int np = c->u.call.nargs - 1, axis = (int)args[np]->u.konst.i;
        IrNode **dims = ir_nodes(a, nd);
        for (int d = 0; d < nd; d++) dims[d] = dim_of(a, args[0], d);
        for (int i = 1; i < np; i++) dims[axis] = int_binop(a, IR_OP_ADD, dims[axis], dim_of(a, args[i], axis));
        return dims;
    }
    case IR_INTR_MASK_SELECT: {
        IrNode **dims = ir_nodes(a, 1);
        dims[0] = temp_of(h, count_set(h->f, args[1]));
        return dims;
    }
    }
    return NULL;
}

static bool makes_array(const IrNode *n)
{
    if (n->kind != IR_CALL || n->u.call.ckind != IR_CALLEE_INTRINSIC || n->u.call.out) return false;
    switch (n->u.call.intrinsic) {
    case IR_INTR_TRANSPOSE: case IR_INTR_RESHAPE: case IR_INTR_COUNT: return false;
    case IR_INTR_MATMUL: case IR_INTR_CONCATENATE: case IR_INTR_MASK_SELECT: return true;
    }
    return false;
}

static IrNode *hoist_intrinsic(Hoist *h, IrNode *c)
{
    for (int i = 0; i < c->u.call.nargs; i++) c->u.call.args[i] = temp_of(h, c->u.call.args[i]);
    IrNode *out = alloc_into_temp(h, c, intrinsic_dims(h, c), c->type->ndim);
    c->u.call.out = out;
    emit_fill(h, c);
    return out;
}

/* ---- reductions along an axis and scans: the shape of their input, without the axis or flattened ---- */

/* The dims of a reduction's input: a fused map's broadcast shape (its inputs put in temporaries), a fused
 * imap's dims, else those of the array (put in a temporary). */
static IrNode **input_dims(Hoist *h, IrNode **input)
{
    RtArena *a = h->f->arena;
    IrNode *in = *input;
    int nd = in->type->ndim;
    IrNode **dims = ir_nodes(a, nd);
    if (in->kind == IR_MAP && !in->u.map.out) {
        for (int i = 0; i < in->u.map.ninputs; i++) in->u.map.inputs[i] = temp_of(h, in->u.map.inputs[i]);
        for (int k = 0; k < nd; k++) {
            IrNode *d = ir_node(a, IR_BCAST_SHAPE, in->pos);
            d->type = ir_type_scalar(IR_DT_INT64);
            d->u.bcast_shape.args = in->u.map.inputs;
            d->u.bcast_shape.n = in->u.map.ninputs;
            d->u.bcast_shape.axis = k;
            d->u.bcast_shape.ndim = nd;
            dims[k] = d;
        }
    } else if (in->kind == IR_IMAP && !in->u.imap.out) {
        for (int k = 0; k < nd; k++) dims[k] = in->u.imap.dims[k] = temp_of(h, in->u.imap.dims[k]);
    } else {
        *input = temp_of(h, in);
        for (int k = 0; k < nd; k++) dims[k] = dim_of(a, *input, k);
    }
    return dims;
}

/* reduce[op](x, axis=k): an array of x's shape without axis k */
static IrNode *hoist_axis_reduce(Hoist *h, IrNode *r)
{
    IrNode **in = input_dims(h, &r->u.reduce.input);
    int nd = r->type->ndim, o = 0;
    IrNode **dims = ir_nodes(h->f->arena, nd);
    for (int k = 0; k <= nd; k++)
        if (k != r->u.reduce.axis) dims[o++] = in[k];
    IrNode *out = alloc_into_temp(h, r, dims, nd);
    r->u.reduce.out = out;
    r->type = out->type;
    emit_fill(h, r);
    return out;
}

/* scan[op](x, axis=k): an array of x's shape; over the flattened x (axis -1), of x's element count */
static IrNode *hoist_scan(Hoist *h, IrNode *s)
{
    RtArena *a = h->f->arena;
    int ind = s->u.scan.input->type->ndim;
    IrNode **dims = input_dims(h, &s->u.scan.input);
    if (s->u.scan.axis < 0) {
        IrNode *count = ir_const_int(a, s->pos, ir_type_scalar(IR_DT_INT64), 1);
        for (int k = 0; k < ind; k++) count = k ? int_binop(a, IR_OP_MUL, count, dims[k]) : dims[k];
        dims = ir_nodes(a, 1);
        dims[0] = count;
    }
    IrNode *out = alloc_into_temp(h, s, dims, s->type->ndim);
    s->u.scan.out = out;
    s->type = out->type;
    emit_fill(h, s);
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

typedef struct Finds {
    bool found;
} Finds;

static void find_alloc(IrNode **p, void *env)
{
    Finds *fd = env;
    IrNode *n = *p;
    if ((n->kind == IR_MAP && !n->u.map.out) || (n->kind == IR_IMAP && !n->u.imap.out) || makes_array(n) ||
        (n->kind == IR_REDUCE && n->u.reduce.axis >= 0 && !n->u.reduce.out) || (n->kind == IR_SCAN && !n->u.scan.out))
        fd->found = true;
    else if (!fd->found) ir_each_child(n, find_alloc, env);
}

/* n or a node below it makes a new array (perhaps only where rewrite leaves it in place) */
static bool allocates(IrNode *n)
{
    Finds fd = {false};
    find_alloc(&n, &fd);
    return fd.found;
}

/* The input of a reduction or scan: a map or imap there is fused into its loop (no array), but what it reads
 * may make arrays. When one of a map's inputs does, every input goes into a temporary in order, so that what
 * an earlier one may raise is raised first. */
static void rewrite_fused(IrNode **p, Hoist *h)
{
    IrNode *n = *p;
    if (n->kind == IR_MAP && !n->u.map.out) {
        bool any = false;
        for (int i = 0; i < n->u.map.ninputs; i++) any |= allocates(n->u.map.inputs[i]);
        for (int i = 0; any && i < n->u.map.ninputs; i++) {
            rewrite(&n->u.map.inputs[i], h);
            n->u.map.inputs[i] = temp_of(h, n->u.map.inputs[i]);
        }
    } else if (n->kind == IR_IMAP && !n->u.imap.out) {
        for (int i = 0; i < n->u.imap.ndim; i++) rewrite(&n->u.imap.dims[i], h);
    } else {
        rewrite(p, h);
    }
}

/* Children of n whose evaluation is unconditional and happens once per evaluation of n. */
static void rewrite_children(IrNode *n, Hoist *h)
{
    switch (n->kind) {
    case IR_IFEXP: rewrite(&n->u.ifexp.cond, h); return;
    case IR_BOOLOP: rewrite(&n->u.boolop.values[0], h); return;
    case IR_REDUCE: rewrite_fused(&n->u.reduce.input, h); return;
    case IR_SCAN: rewrite_fused(&n->u.scan.input, h); return;
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
    else if (makes_array(n)) *p = hoist_intrinsic(h, n);
    else if (n->kind == IR_REDUCE && n->u.reduce.axis >= 0 && !n->u.reduce.out && n->type->kind == IR_TY_ARRAY)
        *p = hoist_axis_reduce(h, n);
    else if (n->kind == IR_SCAN && !n->u.scan.out) *p = hoist_scan(h, n);
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
