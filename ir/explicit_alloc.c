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
 * fused map's bcast_shape, an array's shape), of its shape (a scan along an axis) or of its
 * element count (a flat scan):
 *
 *     $t2 = alloc array(float64, 1d, C) (a.shape[1])
 *     reduce[add](a, axis=0, out=$t2)
 *
 * The order of evaluation (ir_walk_eval's, effects.c) is kept: a statement's parts are visited in that order,
 * and every part evaluated before an allocation that could raise, write or read (a user function's call, an
 * index) is evaluated into a temporary first, so the statements put before the statement run in the order the
 * parts did:
 *
 *     return g(f(a), a + 1)   ->   $t1 = f(a); $t2 = alloc ...; map(..., a, out=$t2); return g($t1, $t2)
 *
 * What runs on some paths only, or again and again, becomes statements whose blocks hold the allocations:
 *
 *     x = (a + 1) if c else a   ->   if c: $t2 = alloc ...; map(..., out=$t2); $t1 = $t2  else: $t1 = a
 *                                    x = $t1
 *     y = p or a[m].sum() > 0   ->   $t1 = p; if not $t1: <count, alloc, mask_select>; $t1 = ...
 *     while a[a > t].size > 2:  ->   while True: <allocs>; if not (...): break; body
 *
 * So every map, imap, axis reduction, scan and array-making intrinsic of the typed IR gets its IR_ALLOC, at any
 * depth of blocks. A map that is the input of a reduction or scan is not an array at all: it is fused into
 * the reduction's loop (what its inputs make is covered); an imap there is an array like any other. Not
 * covered: arrays made inside a per-element body (of a map, imap or combine), which depend on the element;
 * and two scratch arrays the LLVM backend keeps: the best values of argmin/argmax along an axis, and the copy
 * of an input that overlaps an `out` that is not fresh (a[1:] = a[:-1] + 1, decided at run time). */
#include "ir.h"

typedef struct Hoist {
    IrFunc *f;
    IrBlock *out;       /* the new statement list being built */
} Hoist;

static IrNode *assign(RtArena *a, IrVar *v, IrNode *value)
{
    IrNode *as = ir_node(a, IR_ASSIGN, value->pos);
    as->u.assign.var = v;
    as->u.assign.value = value;
    return as;
}

static IrNode *temp_of(Hoist *h, IrNode *value)
{
    if (value->kind == IR_VAR || value->kind == IR_CONST) return value;
    IrVar *t = ir_func_temp(h->f, value->type);
    ir_block_push(h->f->arena, h->out, assign(h->f->arena, t, value));
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
    return ir_array_dim(a, array->pos, array, axis);
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
    IrNode *c = ir_compare(a, l->pos, IR_CMP_EQ, l, r);
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
    case IR_INTR_TRANSPOSE: case IR_INTR_RESHAPE: case IR_INTR_RESHAPE_VIEWS: case IR_INTR_CORE_DIM: case IR_INTR_RAISE: case IR_INTR_SEARCH:
    case IR_INTR_RNG_NEW: case IR_INTR_PRINT: case IR_INTR_COUNT: return NULL;
    case IR_INTR_RNG_DRAW: { /* max(d, 0): a negative size is the draw's ValueError, after its parameters' */
        IrNode **dims = ir_nodes(a, nd);
        for (int d = 0; d < nd; d++) {
            IrNode *size = args[4 + d];
            IrNode *e = ir_node(a, IR_IFEXP, size->pos);
            e->type = size->type;
            e->u.ifexp.cond = ir_compare(a, size->pos, IR_CMP_LT, size, ir_const_int(a, size->pos, size->type, 0));
            e->u.ifexp.then = ir_const_int(a, size->pos, size->type, 0);
            e->u.ifexp.orelse = size;
            dims[d] = e;
        }
        return dims;
    }
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
    case IR_INTR_SORT: {
        IrNode **dims = ir_nodes(a, nd);
        for (int d = 0; d < nd; d++) dims[d] = dim_of(a, args[0], d);
        return dims;
    }
    case IR_INTR_LINALG: {
        IrNode *of = args[0]->u.konst.i == RT_LINALG_SOLVE ? args[2] : args[1];
        IrNode **dims = ir_nodes(a, nd);
        for (int d = 0; d < nd; d++) dims[d] = dim_of(a, of, d);
        return dims;
    }
    }
    return NULL;
}

static bool makes_array(const IrNode *n)
{
    if (n->kind != IR_CALL || n->u.call.ckind != IR_CALLEE_INTRINSIC || n->u.call.out) return false;
    switch (n->u.call.intrinsic) {
    case IR_INTR_TRANSPOSE: case IR_INTR_RESHAPE: case IR_INTR_RESHAPE_VIEWS: case IR_INTR_CORE_DIM: case IR_INTR_RAISE: case IR_INTR_SEARCH:
    case IR_INTR_RNG_NEW: case IR_INTR_PRINT: case IR_INTR_COUNT: return false;
    case IR_INTR_RNG_DRAW: return n->type->kind == IR_TY_ARRAY; /* a scalar draw makes none */
    case IR_INTR_MATMUL: case IR_INTR_CONCATENATE: case IR_INTR_MASK_SELECT: case IR_INTR_SORT: return true;
    case IR_INTR_LINALG: return n->type->kind == IR_TY_ARRAY; /* det is a scalar */
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

/* The dims of a reduction's input: a fused map's broadcast shape (its inputs put in temporaries), else those
 * of the array (put in a temporary). */
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

/* ---- the order of evaluation: what runs before an allocation runs before it still ---- */

/* n makes a new array that rewrite() gives an IR_ALLOC */
static bool is_new_array(const IrNode *n)
{
    switch (n->kind) {
    case IR_MAP: return !n->u.map.out;
    case IR_IMAP: return !n->u.imap.out;
    case IR_CALL: return makes_array(n);
    case IR_REDUCE: return n->u.reduce.axis >= 0 && !n->u.reduce.out && n->type->kind == IR_TY_ARRAY;
    case IR_SCAN: return !n->u.scan.out;
    case IR_CONST: case IR_VAR: case IR_NAMEREF: case IR_BINOP: case IR_UNOP: case IR_COMPARE: case IR_BOOLOP:
    case IR_IFEXP: case IR_INDEX: case IR_SLICE: case IR_ATTR: case IR_TUPLE: case IR_TUPLE_GET: case IR_LAMBDA:
    case IR_COMPREHENSION: case IR_CAST: case IR_MATH: case IR_ARRAY_DIM: case IR_ALLOC: case IR_BCAST_SHAPE:
    case IR_ASSIGN: case IR_AUGASSIGN: case IR_STORE: case IR_IF: case IR_WHILE: case IR_FOR_RANGE: case IR_FOR_ITER:
    case IR_BREAK: case IR_CONTINUE: case IR_RETURN: case IR_EXPR_STMT: case IR_PASS: case IR_KIND_COUNT:
        return false;
    }
    return false;
}

typedef void (*KidFn)(IrNode **kid, void *env);

static void kid(IrNode **p, KidFn fn, void *env)
{
    if (*p) fn(p, env);
}

static void kids(IrNode **v, int n, KidFn fn, void *env)
{
    for (int i = 0; i < n; i++) kid(&v[i], fn, env);
}

/* The input of a reduction or scan: a map there is fused into its loop (there is no array), so its inputs
 * stand in its place. Any other input is an array (an imap's is made first). */
static void fused_kids(IrNode **p, KidFn fn, void *env)
{
    IrNode *n = *p;
    if (n->kind == IR_MAP && !n->u.map.out) kids(n->u.map.inputs, n->u.map.ninputs, fn, env);
    else fn(p, env);
}

/* The children that evaluating n evaluates once on every path, in the order of evaluation (ir_walk_eval's,
 * effects.c). Left out: the arms of `x if c else y` and the operands after the first of and/or (some paths
 * only), the bodies of maps and combines and a while condition (many times). */
static void each_kid(IrNode *n, KidFn fn, void *env)
{
    switch (n->kind) {
    case IR_CONST: case IR_VAR: case IR_NAMEREF: case IR_LAMBDA: case IR_BREAK: case IR_CONTINUE: case IR_PASS:
    case IR_KIND_COUNT: case IR_WHILE: case IR_COMPREHENSION: case IR_AUGASSIGN: case IR_FOR_ITER:
        return;
    case IR_BINOP: kid(&n->u.binop.lhs, fn, env); kid(&n->u.binop.rhs, fn, env); return;
    case IR_UNOP: kid(&n->u.unop.operand, fn, env); return;
    case IR_COMPARE: kids(n->u.compare.operands, 2, fn, env); return;
    case IR_BOOLOP: kid(&n->u.boolop.values[0], fn, env); return;
    case IR_IFEXP: kid(&n->u.ifexp.cond, fn, env); return;
    case IR_CALL:
        kids(n->u.call.args, n->u.call.nargs, fn, env); kids(n->u.call.kwargs, n->u.call.nkw, fn, env);
        kid(&n->u.call.out, fn, env);
        return;
    case IR_INDEX: kid(&n->u.index.base, fn, env); kids(n->u.index.items, n->u.index.n, fn, env); return;
    case IR_SLICE:
        kid(&n->u.slice.start, fn, env); kid(&n->u.slice.stop, fn, env); kid(&n->u.slice.step, fn, env);
        return;
    case IR_ATTR: kid(&n->u.attr.value, fn, env); return;
    case IR_TUPLE: kids(n->u.tuple.items, n->u.tuple.n, fn, env); return;
    case IR_TUPLE_GET: kid(&n->u.tuple_get.tuple, fn, env); return;
    case IR_CAST: kid(&n->u.cast.value, fn, env); return;
    case IR_MATH: kids(n->u.math.args, ir_math_arity(n->u.math.fn), fn, env); return;
    case IR_ARRAY_DIM: kid(&n->u.array_dim.array, fn, env); return;
    case IR_ALLOC: kids(n->u.alloc.dims, n->u.alloc.ndim, fn, env); return;
    case IR_MAP: kids(n->u.map.inputs, n->u.map.ninputs, fn, env); kid(&n->u.map.out, fn, env); return;
    case IR_IMAP: kids(n->u.imap.dims, n->u.imap.ndim, fn, env); kid(&n->u.imap.out, fn, env); return;
    case IR_REDUCE: fused_kids(&n->u.reduce.input, fn, env); kid(&n->u.reduce.out, fn, env); return;
    case IR_SCAN: fused_kids(&n->u.scan.input, fn, env); kid(&n->u.scan.out, fn, env); return;
    case IR_BCAST_SHAPE: kids(n->u.bcast_shape.args, n->u.bcast_shape.n, fn, env); return;
    case IR_ASSIGN: kid(&n->u.assign.value, fn, env); return;
    case IR_STORE: kid(&n->u.store.value, fn, env); kid(&n->u.store.target, fn, env); return;
    case IR_IF: kid(&n->u.if_.cond, fn, env); return;
    case IR_FOR_RANGE:
        kid(&n->u.for_range.start, fn, env); kid(&n->u.for_range.stop, fn, env); kid(&n->u.for_range.step, fn, env);
        return;
    case IR_RETURN: kid(&n->u.ret.value, fn, env); return;
    case IR_EXPR_STMT: kid(&n->u.expr_stmt.value, fn, env); return;
    }
}

static bool allocates(IrNode *n);

static void find_alloc(IrNode **p, void *env)
{
    bool *found = env;
    if (!*found) *found = allocates(*p);
}

/* an arm of `x if c else y`, or an operand after the first of and/or, makes an array */
static bool conditional_allocates(IrNode *n)
{
    if (n->kind == IR_IFEXP) return allocates(n->u.ifexp.then) || allocates(n->u.ifexp.orelse);
    if (n->kind == IR_BOOLOP)
        for (int i = 1; i < n->u.boolop.n; i++)
            if (allocates(n->u.boolop.values[i])) return true;
    return false;
}

/* rewrite() would put statements before n's: n or an unconditional part of it makes an array, or one of its
 * conditional expressions has a part that does */
static bool allocates(IrNode *n)
{
    if (is_new_array(n) || conditional_allocates(n)) return true;
    bool found = false;
    each_kid(n, find_alloc, &found);
    return found;
}

/* A part of a statement evaluated before an allocation, which may raise, write or read what a later part
 * writes: it is evaluated into a temporary before the allocation, so the order stays. */
static void spill(IrNode **p, void *env)
{
    Hoist *h = env;
    IrNode *n = *p;
    if (n->kind == IR_VAR || n->kind == IR_CONST || !ir_effects(n)) return;
    switch (n->type->kind) {
    case IR_TY_SCALAR: case IR_TY_ARRAY: case IR_TY_TUPLE: case IR_TY_RNG: *p = temp_of(h, n); return;
    case IR_TY_NONE: /* a call of a function returning None: a statement of its own */
        emit_fill(h, n);
        *p = ir_node(h->f->arena, IR_CONST, n->pos);
        (*p)->type = n->type;
        return;
    case IR_TY_SLICE: case IR_TY_RANGE: case IR_TY_DTYPE: case IR_TY_FUNC: each_kid(n, spill, env); return;
    }
}

static void rewrite(IrNode **p, void *env);
static void rewrite_block(IrFunc *f, IrBlock *b);

typedef struct Kids {
    Hoist *h;
    int i;      /* the kid being visited */
    int last;   /* the last kid that allocates, or -1 */
} Kids;

static void find_last(IrNode **p, void *env)
{
    Kids *k = env;
    if (allocates(*p)) k->last = k->i;
    k->i++;
}

static void rewrite_kid(IrNode **p, void *env)
{
    Kids *k = env;
    int i = k->i++;
    if (i > k->last) return;
    rewrite(p, k->h);
    if (i < k->last) spill(p, k->h);
}

/* n's parts in order of evaluation, up to the last that allocates: each rewritten, and those before it spilled */
static void rewrite_kids(IrNode *n, Hoist *h)
{
    Kids k = {h, 0, -1};
    each_kid(n, find_last, &k);
    k.i = 0;
    each_kid(n, rewrite_kid, &k);
}

/* `x if c else y` where an arm makes an array becomes a statement: if c: $t = x else: $t = y (each arm's
 * allocations made inside it) */
static IrNode *branch(Hoist *h, IrNode *e)
{
    RtArena *a = h->f->arena;
    IrVar *t = ir_func_temp(h->f, e->type);
    IrNode *s = ir_node(a, IR_IF, e->pos);
    s->u.if_.cond = e->u.ifexp.cond;
    IrNode *arms[2] = {e->u.ifexp.then, e->u.ifexp.orelse};
    IrBlock *blocks[2] = {&s->u.if_.then, &s->u.if_.orelse};
    for (int i = 0; i < 2; i++) {
        ir_block_push(a, blocks[i], assign(a, t, arms[i]));
        rewrite_block(h->f, blocks[i]);
    }
    ir_block_push(a, h->out, s);
    return ir_var_ref(a, e->pos, t);
}

/* not v, or v's truth: bool(v) (the boolop's truth test, cg_truth), negated with not */
static IrNode *truth(RtArena *a, IrNode *v, bool negate)
{
    IrNode *b = v;
    if (v->type->dtype != IR_DT_BOOL) {
        b = ir_node(a, IR_CAST, v->pos);
        b->type = ir_type_scalar(IR_DT_BOOL);
        b->u.cast.value = v;
    }
    if (!negate) return b;
    IrNode *n = ir_node(a, IR_UNOP, v->pos);
    n->type = ir_type_scalar(IR_DT_BOOL);
    n->u.unop.op = IR_UOP_NOT;
    n->u.unop.operand = b;
    return n;
}

/* `v0 and v1 and v2` where a later operand makes an array becomes statements (for or, `not $t`):
 *     $t = v0
 *     if $t: $t = v1; if $t: $t = v2
 * each operand's allocations made in its branch. The operands are scalars of the boolop's type. */
static IrNode *branch_boolop(Hoist *h, IrNode *e)
{
    RtArena *a = h->f->arena;
    IrVar *t = ir_func_temp(h->f, e->type);
    ir_block_push(a, h->out, assign(a, t, e->u.boolop.values[0]));
    IrBlock *blk = h->out, *first = NULL;
    for (int i = 1; i < e->u.boolop.n; i++) {
        IrNode *s = ir_node(a, IR_IF, e->pos);
        s->u.if_.cond = truth(a, ir_var_ref(a, e->pos, t), !e->u.boolop.is_and);
        ir_block_push(a, &s->u.if_.then, assign(a, t, e->u.boolop.values[i]));
        ir_block_push(a, blk, s);
        blk = &s->u.if_.then;
        if (!first) first = blk;
    }
    rewrite_block(h->f, first); /* the ifs nested in it included */
    return ir_var_ref(a, e->pos, t);
}

/* while c: body  ->  while True: if not c: break; body  when c makes an array: its allocations are made in the
 * loop's body, before each test */
static void test_in_body(IrFunc *f, IrNode *w)
{
    RtArena *a = f->arena;
    IrNode *s = ir_node(a, IR_IF, w->u.while_.cond->pos);
    s->u.if_.cond = truth(a, w->u.while_.cond, true);
    ir_block_push(a, &s->u.if_.then, ir_node(a, IR_BREAK, w->pos));
    IrBlock body = {0};
    ir_block_push(a, &body, s);
    for (int i = 0; i < w->u.while_.body.n; i++) ir_block_push(a, &body, w->u.while_.body.stmts[i]);
    w->u.while_.body = body;
    w->u.while_.cond = ir_const_int(a, w->pos, ir_type_scalar(IR_DT_BOOL), 1);
}

static void rewrite(IrNode **p, void *env)
{
    Hoist *h = env;
    IrNode *n = *p;
    rewrite_kids(n, h);
    if (n->kind == IR_IFEXP && conditional_allocates(n)) *p = branch(h, n);
    if (n->kind == IR_BOOLOP && conditional_allocates(n)) *p = branch_boolop(h, n);
    if (!is_new_array(n)) return;
    switch (n->kind) {
    case IR_MAP: *p = hoist_map(h, n); return;
    case IR_IMAP: *p = hoist_imap(h, n); return;
    case IR_CALL: *p = hoist_intrinsic(h, n); return;
    case IR_REDUCE: *p = hoist_axis_reduce(h, n); return;
    case IR_SCAN: *p = hoist_scan(h, n); return;
    case IR_CONST: case IR_VAR: case IR_NAMEREF: case IR_BINOP: case IR_UNOP: case IR_COMPARE: case IR_BOOLOP:
    case IR_IFEXP: case IR_INDEX: case IR_SLICE: case IR_ATTR: case IR_TUPLE: case IR_TUPLE_GET: case IR_LAMBDA:
    case IR_COMPREHENSION: case IR_CAST: case IR_MATH: case IR_ARRAY_DIM: case IR_ALLOC: case IR_BCAST_SHAPE:
    case IR_ASSIGN: case IR_AUGASSIGN: case IR_STORE: case IR_IF: case IR_WHILE: case IR_FOR_RANGE: case IR_FOR_ITER:
    case IR_BREAK: case IR_CONTINUE: case IR_RETURN: case IR_EXPR_STMT: case IR_PASS: case IR_KIND_COUNT:
        return;
    }
}

static void rewrite_stmt(IrFunc *f, IrNode *s, IrBlock *out)
{
    Hoist h = {f, out};
    if (s->kind == IR_IF) {
        rewrite_block(f, &s->u.if_.then);
        rewrite_block(f, &s->u.if_.orelse);
    } else if (s->kind == IR_WHILE) {
        if (allocates(s->u.while_.cond)) test_in_body(f, s);
        rewrite_block(f, &s->u.while_.body);
    } else if (s->kind == IR_FOR_RANGE) {
        rewrite_block(f, &s->u.for_range.body);
    }
    rewrite_kids(s, &h);
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
