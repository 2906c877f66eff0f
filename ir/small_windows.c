/* small_windows.c: a reduction over a small window of an array, a slice of constant extent such as
 * `(x[i-1:i+2, j-1:j+2] * w).sum()`, `x[i:i+3].max()`, `x[i, j:j+3].sum()` or `np.dot(x[i:i+3], w)`, becomes
 * an unrolled expression of direct element loads wherever the window lies inside the array:
 *
 *     (<identity op e0 op e1 ... op eK-1, the map's body on each element, in C order> if <inside> else <reduce>)
 *
 * Why: the reduction as typespec writes it computes a view per evaluation (Python's slice.indices on every axis),
 * checks the broadcast against the other inputs and runs a loop nest of a few trips, which costs far more than
 * the few loads and operations it does; Parakeet's conv_3x3_trim comprehension ran 26x slower than its loops.
 * Here the code of every element is a handful of loads the backend emits without checks (index.proven), and
 * nothing is built: no view, no loop, no allocation. Every backend lowers the result as ordinary IR.
 *
 * The invariant: both arms give the same value, bit for bit, and raise the same errors; the test only decides
 * speed, as a versioned loop's does (version_loops.c).
 *  - A window is an IR_INDEX of an array variable with one item per axis: slices whose stop minus start is a
 *    constant K in [1, MAX_ELEMS] (as affine forms in int64 arithmetic: `i+2 - (i-1)` is 3; an absent start is
 *    0) and whose step is absent or 1, and int64 integers; at least one slice.
 *  - Inside means 0 <= start <= shape - K for every slice and 0 <= item < shape for every integer. Then NumPy's
 *    slice is exactly [start, start + K): nothing clamps, nothing wraps, start + K and start + k do not overflow,
 *    and every load is in range, so the loads are index.proven (no wrap, no check). A window that runs past an
 *    edge (NumPy clamps it: a shorter window, or a broadcast of a length 1, or a shape error), a negative start
 *    (NumPy counts it from the end: x[-1:2] is empty) or an integer out of range take the general arm, which is
 *    the reduction as it was and gives NumPy's result or error there. A constant start below 0 is never inside:
 *    such a window is left alone.
 *  - The other inputs of the reduction's map must have the window's extents exactly (else the general arm
 *    broadcasts or raises): array variables (the test compares their shape), np.dot's operand
 *    `w[:core_dim(win.shape[0], w.shape[0])]` (under the test core_dim cannot raise and w[:K] is all of w),
 *    and scalar variables or constants. The windows themselves fix the extents of every axis of the result (a
 *    window of extent 1 on an axis where another has K broadcasts, as in NumPy).
 *  - The elements are combined as every backend reduces a map (cg_reduce): from ir_reduce_identity, acc =
 *    ir_reduce_combine(acc, e) in C order; a window is far below any vector width, so that is what the general
 *    arm computes too. The body is evaluated once per element in C order, so the element that raises first is
 *    the lowest, as in the map.
 *  - What the test and the loads read again (the array, a slice's start, an integer item) is a quiet expression
 *    (ir_effects is 0: no read of an element, no call, no raise), so evaluating it again changes nothing.
 * Also `win.shape[d]` (np.mean divides by it) becomes `(K if <inside> else win.shape[d])`.
 *
 * Run after ir_fuse (a cast of the window is then the map's body, not a map of its own) and before
 * ir_explicit_alloc and ir_reduce_inputs_as_maps (a reduce's input may still be the bare window). The loads of
 * the unrolled arm are not checked accesses, so bounds_plan.c never plans them: it has nothing to prove. The
 * if-expressions are marked versioned (ir.h): in a comprehension, version_imaps.c tests them once per call. */
#include "wrap_form.h"

#define MAX_ELEMS 64    /* elements of an unrolled window: beyond it the loop costs less than the code grows */
#define MAX_NODES 4096  /* nodes of an unrolled expression: its body's copies and loads */
#define MAX_INPUTS IR_MAX_MAP_INPUTS

/* ---- affine forms (wrap_form.h), to see that stop - start is a constant ---- */
typedef IrWrapForm Form;

/* ---- windows ---- */

static bool quiet_int64(const IrNode *e)
{
    return ir_is_int64(e->type) && ir_effects(e) == 0;
}

typedef struct Window {
    const IrNode *index;        /* the IR_INDEX */
    int ndim;                   /* its slices: the axes of its value */
    int64_t ext[IR_MAX_DIMS];   /* their extents */
    int axis[IR_MAX_DIMS];      /* the array's axis of each */
} Window;

/* The constant extent of s (step absent or 1, stop - start a constant in [1, MAX_ELEMS], a quiet start that is
 * not a negative constant), or 0. */
static int64_t slice_extent(const IrNode *s)
{
    const IrNode *start = s->u.slice.start, *stop = s->u.slice.stop, *step = s->u.slice.step;
    if (step && !(step->kind == IR_CONST && ir_is_int64(step->type) && step->u.konst.i == 1)) return 0;
    if (!stop || !ir_is_int64(stop->type)) return 0;
    if (start && (!quiet_int64(start) || (start->kind == IR_CONST && start->u.konst.i < 0))) return 0;
    Form lo = {0}, hi, d;
    if ((start && !ir_form_of(start, &lo, NULL, NULL)) || !ir_form_of(stop, &hi, NULL, NULL) ||
        !ir_form_add(&d, &hi, &lo, (uint64_t)-1))
        return 0;
    if (d.n || d.konst < 1 || d.konst > MAX_ELEMS) return 0;
    return (int64_t)d.konst;
}

static bool as_window(const IrNode *n, Window *w)
{
    if (n->kind != IR_INDEX || n->u.index.base->kind != IR_VAR) return false;
    const IrType *bt = n->u.index.base->type;
    if (!bt || bt->kind != IR_TY_ARRAY || n->u.index.n != bt->ndim || !n->type || n->type->kind != IR_TY_ARRAY) return false;
    w->index = n;
    w->ndim = 0;
    for (int k = 0; k < n->u.index.n; k++) {
        const IrNode *it = n->u.index.items[k];
        if (it->kind == IR_SLICE) {
            int64_t ext = slice_extent(it);
            if (!ext) return false;
            w->ext[w->ndim] = ext;
            w->axis[w->ndim++] = k;
        } else if (!quiet_int64(it)) {
            return false; /* None (a new axis), a boolean mask, an integer that may raise */
        }
    }
    return w->ndim > 0 && w->ndim == n->type->ndim;
}

/* ---- the rewrite ---- */

typedef enum { IN_WINDOW, IN_ARRAY, IN_SCALAR } InputKind;

typedef struct Input {
    InputKind kind;
    const IrNode *node;  /* IN_WINDOW: the window's index; IN_ARRAY: the array variable; IN_SCALAR: the value */
    Window win;          /* IN_WINDOW */
    int ndim;            /* IN_WINDOW, IN_ARRAY: axes of its value, the last ones of the result's */
} Input;

typedef struct Rewrite {
    IrFunc *f;
    RtArena *a;
    IrPos pos;
    int ndim;                    /* of the map's value */
    int64_t ext[IR_MAX_DIMS];    /* the result's extents, each fixed by a window */
    Input in[MAX_INPUTS];
    int nin;
    IrVar *const *params;        /* the map's, bound to in[] */
    int64_t at[IR_MAX_DIMS];     /* the element being unrolled */
    IrNode **terms;              /* the test */
    int nterms, cap_terms;
} Rewrite;

static IrType *i64(void) { return ir_type_scalar(IR_DT_INT64); }

static IrNode *literal(Rewrite *r, int64_t v)
{
    return ir_const_int(r->a, r->pos, i64(), v);
}

static IrNode *dim_of(Rewrite *r, const IrNode *array, int axis)
{
    return ir_array_dim(r->a, r->pos, ir_copy(r->a, array, NULL), axis);
}

static void term(Rewrite *r, IrCmpOp op, IrNode *lhs, IrNode *rhs)
{
    if (r->nterms == r->cap_terms) {
        int cap = r->cap_terms ? 2 * r->cap_terms : 16;
        IrNode **t = ir_nodes(r->a, cap);
        for (int i = 0; i < r->nterms; i++) t[i] = r->terms[i];
        r->terms = t;
        r->cap_terms = cap;
    }
    r->terms[r->nterms++] = ir_compare(r->a, r->pos, op, lhs, rhs);
}

/* The terms that put window w inside its array (see the top of the file). */
static void window_terms(Rewrite *r, const Window *w)
{
    const IrNode *ix = w->index, *base = ix->u.index.base;
    int s = 0;
    for (int k = 0; k < ix->u.index.n; k++) {
        const IrNode *it = ix->u.index.items[k];
        if (it->kind != IR_SLICE) {
            term(r, IR_CMP_GE, ir_copy(r->a, it, NULL), literal(r, 0));
            term(r, IR_CMP_LT, ir_copy(r->a, it, NULL), dim_of(r, base, k));
            continue;
        }
        int64_t ext = w->ext[s++];
        const IrNode *start = it->u.slice.start;
        if (!start) {
            term(r, IR_CMP_GE, dim_of(r, base, k), literal(r, ext));
        } else if (start->kind == IR_CONST) { /* >= 0 (slice_extent), so start + ext fits */
            term(r, IR_CMP_GE, dim_of(r, base, k), literal(r, start->u.konst.i + ext));
        } else {
            IrNode *room = ir_node(r->a, IR_BINOP, r->pos); /* shape - ext: a shape is >= 0, so it fits */
            room->type = i64();
            room->u.binop.op = IR_OP_SUB;
            room->u.binop.lhs = dim_of(r, base, k);
            room->u.binop.rhs = literal(r, ext);
            term(r, IR_CMP_GE, ir_copy(r->a, start, NULL), literal(r, 0));
            term(r, IR_CMP_LE, ir_copy(r->a, start, NULL), room);
        }
    }
}

static IrNode *test_of(Rewrite *r)
{
    if (r->nterms == 1) return r->terms[0];
    IrNode *all = ir_node(r->a, IR_BOOLOP, r->pos);
    all->type = ir_type_scalar(IR_DT_BOOL);
    all->u.boolop.is_and = true;
    all->u.boolop.values = r->terms;
    all->u.boolop.n = r->nterms;
    return all;
}

/* Fixes the result's extents from window w's (aligned to the right); false when they clash. */
static bool take_extents(Rewrite *r, const Window *w)
{
    if (w->ndim > r->ndim) return false;
    for (int s = 0; s < w->ndim; s++) {
        int64_t *e = &r->ext[r->ndim - w->ndim + s];
        if (*e == 0 || *e == 1) *e = w->ext[s];
        else if (w->ext[s] != 1 && w->ext[s] != *e) return false; /* NumPy raises: the general arm does */
    }
    return true;
}

/* np.dot's second operand in element code: w[:core_dim(v.shape[d], w.shape[0])] (typespec/linalg.c), with v a
 * window. Under the test (v inside, so v.shape[d] is its extent, and w.shape[0] equal to it) it is all of w. */
static bool as_dot_operand(Rewrite *r, const IrNode *n, Input *in)
{
    if (n->kind != IR_INDEX || n->u.index.n != 1 || n->u.index.base->kind != IR_VAR) return false;
    const IrNode *s = n->u.index.items[0], *base = n->u.index.base;
    if (s->kind != IR_SLICE || s->u.slice.start || s->u.slice.step || !s->u.slice.stop) return false;
    const IrNode *c = s->u.slice.stop;
    if (c->kind != IR_CALL || c->u.call.ckind != IR_CALLEE_INTRINSIC || c->u.call.intrinsic != IR_INTR_CORE_DIM) return false;
    const IrNode *k = c->u.call.args[0], *k2 = c->u.call.args[1];
    if (k2->kind != IR_ARRAY_DIM || k2->u.array_dim.axis != 0 || !ir_form_same_atom(k2->u.array_dim.array, base)) return false;
    Window v;
    if (k->kind != IR_ARRAY_DIM || !as_window(k->u.array_dim.array, &v) || base->type->ndim != 1) return false;
    if (k->u.array_dim.axis >= v.ndim) return false;
    if (r->ndim < 1 || v.ext[k->u.array_dim.axis] != r->ext[r->ndim - 1]) return false;
    window_terms(r, &v);
    in->kind = IN_ARRAY;
    in->node = base;
    in->ndim = 1;
    return true;
}

static bool classify_input(Rewrite *r, const IrNode *n, Input *in)
{
    if (n->type->kind == IR_TY_SCALAR) {
        in->kind = IN_SCALAR;
        in->node = n;
        return n->kind == IR_CONST || (n->kind == IR_VAR && ir_effects(n) == 0);
    }
    if (n->type->kind != IR_TY_ARRAY) return false;
    if (as_window(n, &in->win)) {
        in->kind = IN_WINDOW;
        in->node = n;
        in->ndim = in->win.ndim;
        return true;
    }
    if (n->kind == IR_VAR && n->type->ndim <= r->ndim && ir_effects(n) == 0) {
        in->kind = IN_ARRAY;
        in->node = n;
        in->ndim = n->type->ndim;
        return true;
    }
    return as_dot_operand(r, n, in);
}

/* The element of input in at the result's position r->at, loaded without a check (the test proved it). */
static IrNode *load(Rewrite *r, const Input *in)
{
    if (in->kind == IN_SCALAR) return ir_copy(r->a, in->node, NULL);
    const IrNode *base = in->kind == IN_WINDOW ? in->node->u.index.base : in->node;
    int nd = base->type->ndim, lead = r->ndim - in->ndim;
    IrNode *x = ir_node(r->a, IR_INDEX, in->node->pos);
    x->type = ir_type_scalar(base->type->dtype);
    x->u.index.base = ir_copy(r->a, base, NULL);
    x->u.index.n = nd;
    x->u.index.items = ir_nodes(r->a, nd);
    x->u.index.proven = true;
    if (in->kind == IN_ARRAY) {
        for (int k = 0; k < nd; k++) x->u.index.items[k] = literal(r, r->at[lead + k]);
        return x;
    }
    int s = 0;
    for (int k = 0; k < nd; k++) {
        const IrNode *it = in->node->u.index.items[k];
        if (it->kind != IR_SLICE) {
            x->u.index.items[k] = ir_copy(r->a, it, NULL);
            continue;
        }
        int64_t off = in->win.ext[s] == 1 ? 0 : r->at[lead + s]; /* an extent of 1 broadcasts */
        s++;
        const IrNode *start = it->u.slice.start;
        if (!start || start->kind == IR_CONST) {
            x->u.index.items[k] = literal(r, (start ? start->u.konst.i : 0) + off);
        } else if (off == 0) {
            x->u.index.items[k] = ir_copy(r->a, start, NULL);
        } else {
            IrNode *sum = ir_node(r->a, IR_BINOP, r->pos);
            sum->type = i64();
            sum->u.binop.op = IR_OP_ADD;
            sum->u.binop.lhs = ir_copy(r->a, start, NULL);
            sum->u.binop.rhs = literal(r, off);
            x->u.index.items[k] = sum;
        }
    }
    return x;
}

/* ir_copy's hook: a parameter of the map becomes the load of its input's element */
static IrNode *param_load(const IrNode *n, void *env)
{
    Rewrite *r = env;
    if (n->kind != IR_VAR) return NULL;
    for (int i = 0; i < r->nin; i++)
        if (n->u.var.var == r->params[i]) return load(r, &r->in[i]);
    return NULL;
}

static void count_node(IrNode **np, void *env)
{
    (*(int *)env)++;
    ir_each_child(*np, count_node, env);
}

static int node_count(IrNode *n)
{
    int c = 0;
    count_node(&n, &c);
    return c;
}

static bool unrollable_op(IrReduceOp op)
{
    switch (op) {
    case IR_RED_ADD: case IR_RED_MUL: case IR_RED_MIN: case IR_RED_MAX: case IR_RED_AND: case IR_RED_OR:
    case IR_RED_NANMIN: case IR_RED_NANMAX:
        return true;
    case IR_RED_ARGMIN: case IR_RED_ARGMAX: case IR_RED_FUNC: /* an index, a user's combine: not one expression */
        return false;
    }
    return false;
}

/* The reduction n as `(unrolled if test else n)`, or NULL when it is not over windows (see the top). */
static IrNode *unroll_reduce(IrFunc *f, IrNode *n)
{
    if (n->u.reduce.axis != -1 || n->u.reduce.out || !unrollable_op(n->u.reduce.op)) return NULL;
    IrNode *input = n->u.reduce.input, *body = NULL; /* NULL: the bare window, whose element is the body */
    Rewrite r = {.f = f, .a = f->arena, .pos = n->pos, .ndim = input->type->ndim};
    IrNode *const *inputs = &n->u.reduce.input;
    IrDtype dt = input->type->dtype;
    r.nin = 1;
    if (input->kind == IR_MAP) {
        if (input->u.map.out || input->u.map.ninputs > MAX_INPUTS || input->u.map.nparams != input->u.map.ninputs) return NULL;
        inputs = input->u.map.inputs;
        r.nin = input->u.map.ninputs;
        r.params = input->u.map.params;
        body = input->u.map.body;
        if (body->type->kind != IR_TY_SCALAR) return NULL;
        dt = body->type->dtype;
    }
    if (r.ndim < 1 || r.ndim > IR_MAX_DIMS || n->type->kind != IR_TY_SCALAR || dt != n->type->dtype) return NULL;
    /* the windows first: they fix the extents that np.dot's operand and the arrays are compared with */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < r.nin; i++) {
            bool window = inputs[i]->type->kind == IR_TY_ARRAY && as_window(inputs[i], &r.in[i].win);
            if (window != (pass == 0)) continue;
            if (!classify_input(&r, inputs[i], &r.in[i])) return NULL;
            if (window && !take_extents(&r, &r.in[i].win)) return NULL;
        }
    int64_t elems = 1;
    for (int d = 0; d < r.ndim; d++) {
        if (r.ext[d] == 0) return NULL; /* an axis no window fixes */
        elems *= r.ext[d];
    }
    if (elems > MAX_ELEMS || elems * ((body ? node_count(body) : 0) + 2 * r.nin) > MAX_NODES) return NULL;
    for (int i = 0; i < r.nin; i++) {
        const Input *in = &r.in[i];
        if (in->kind == IN_WINDOW) window_terms(&r, &in->win);
        if (in->kind == IN_ARRAY) /* an array variable, or all of np.dot's operand */
            for (int k = 0; k < in->ndim; k++)
                term(&r, IR_CMP_EQ, dim_of(&r, in->node, k), literal(&r, r.ext[r.ndim - in->ndim + k]));
    }
    IrNode *acc = ir_node(r.a, IR_CONST, n->pos);
    *acc = ir_reduce_identity(n->u.reduce.op, dt);
    acc->pos = n->pos;
    IrCopyHooks hooks = {.replace = param_load, .env = &r};
    for (int64_t e = 0; e < elems; e++) {
        int64_t rest = e;
        for (int d = r.ndim - 1; d >= 0; d--) {
            r.at[d] = rest % r.ext[d];
            rest /= r.ext[d];
        }
        IrNode *elem = body ? ir_copy(r.a, body, &hooks) : load(&r, &r.in[0]);
        acc = ir_reduce_combine(r.a, n->u.reduce.op, dt, acc, elem);
    }
    IrNode *v = ir_node(r.a, IR_IFEXP, n->pos);
    v->type = n->type;
    v->u.ifexp.cond = test_of(&r);
    v->u.ifexp.versioned = true;
    v->u.ifexp.then = acc;
    v->u.ifexp.orelse = n;
    return v;
}

/* win.shape[d] as `(K if <win inside> else win.shape[d])` */
static IrNode *window_dim(IrFunc *f, IrNode *n)
{
    Window w;
    if (!as_window(n->u.array_dim.array, &w) || n->u.array_dim.axis >= w.ndim) return NULL;
    Rewrite r = {.f = f, .a = f->arena, .pos = n->pos};
    window_terms(&r, &w);
    IrNode *v = ir_node(r.a, IR_IFEXP, n->pos);
    v->type = n->type;
    v->u.ifexp.cond = test_of(&r);
    v->u.ifexp.versioned = true;
    v->u.ifexp.then = ir_const_int(r.a, n->pos, n->type, w.ext[n->u.array_dim.axis]);
    v->u.ifexp.orelse = n;
    return v;
}

/* A reduction is tried before its children (np.dot's operand reads its window's shape, which would otherwise be
 * rewritten first); once rewritten, only its unrolled arm is visited again: the general arm stays as it was. */
static void visit(IrNode **np, void *env)
{
    IrFunc *f = env;
    IrNode *n = *np;
    if (n->kind == IR_REDUCE) {
        IrNode *v = unroll_reduce(f, n);
        if (v) {
            *np = v;
            visit(&v->u.ifexp.then, env);
            return;
        }
    }
    ir_each_child(n, visit, env);
    if (n->kind == IR_ARRAY_DIM) {
        IrNode *v = window_dim(f, n);
        if (v) *np = v;
    }
}

static void visit_stmt(IrNode *s, void *env)
{
    if (ir_is_statement(s->kind)) ir_each_child(s, visit, env);
    else visit(&s, env); /* an expression in statement position is not replaced: nothing reads its value */
}

void ir_small_windows(IrFunc *f)
{
    ir_each_stmt(&f->body, visit_stmt, f);
}
