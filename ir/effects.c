/* effects.c: what evaluating a piece of typed IR can do, and the order in which a statement evaluates its
 * expressions. The passes that move code (inline_calls.c hoists a callee's statements before the caller's
 * statement; cse.c reuses a value computed earlier) ask two questions, answered here once:
 *  - what can this expression do: write memory that existed before it, raise, read array contents;
 *  - in which order, and on which paths, does a statement evaluate its parts, so that a pass knows what was
 *    evaluated before a given node, and whether the node is evaluated at all (an arm of `x if c else y`) or
 *    once per element (the body of a map).
 * The answers are conservative: "may raise" when a backend raises on some input, "writes" for every call of a
 * user function. They must follow the backends' order of evaluation (cg_expr in backends/llvm/emit_stmt.c):
 * children left to right, a store's value before its target, a map's inputs before its body. */
#include "ir.h"

static bool is_int_scalar(const IrNode *n)
{
    return n && n->type && n->type->kind == IR_TY_SCALAR && ir_dtype_is_int(n->type->dtype);
}

static unsigned binop_effects(const IrNode *n)
{
    switch (n->u.binop.op) {
    case IR_OP_FLOORDIV: case IR_OP_MOD: case IR_OP_DIV:
        return is_int_scalar(n->u.binop.lhs) ? IR_FX_RAISE : 0;       /* ZeroDivisionError */
    case IR_OP_POW:
        return is_int_scalar(n->u.binop.lhs) ? IR_FX_RAISE : 0;       /* a negative integer exponent */
    case IR_OP_MATMUL: return IR_FX_RAISE | IR_FX_READ;
    case IR_OP_ADD: case IR_OP_SUB: case IR_OP_MUL: case IR_OP_LSHIFT: case IR_OP_RSHIFT: case IR_OP_BITAND:
    case IR_OP_BITOR: case IR_OP_BITXOR: case IR_OP_MIN: case IR_OP_MAX: case IR_OP_COMPLEX:
        return 0;
    }
    return IR_FX_RAISE;
}

/* An `out` that is a fresh allocation (np.zeros(n) is map(..., out=alloc)) writes no memory anyone else sees. */
static unsigned out_effects(const IrNode *out)
{
    if (!out) return IR_FX_ALLOC;
    return out->kind == IR_ALLOC ? 0 : IR_FX_WRITE | IR_FX_RAISE;
}

static int array_inputs(const IrNode *m)
{
    int k = 0;
    for (int i = 0; i < m->u.map.ninputs; i++) k += m->u.map.inputs[i]->type->kind == IR_TY_ARRAY;
    return k;
}

/* Broadcasting raises when two inputs' shapes clash; one array, or one variable read twice, cannot clash. */
static bool shapes_may_clash(const IrNode *m)
{
    const IrNode *first = NULL;
    for (int i = 0; i < m->u.map.ninputs; i++) {
        const IrNode *in = m->u.map.inputs[i];
        if (in->type->kind != IR_TY_ARRAY) continue;
        if (!first) first = in;
        else if (in->kind != IR_VAR || first->kind != IR_VAR || in->u.var.var != first->u.var.var) return true;
    }
    return false;
}

unsigned ir_node_effects(const IrNode *n)
{
    switch (n->kind) {
    case IR_CONST: case IR_NAMEREF: case IR_LAMBDA: case IR_UNOP: case IR_COMPARE: case IR_BOOLOP: case IR_IFEXP:
    case IR_SLICE: case IR_TUPLE: case IR_CAST: case IR_MATH: case IR_ARRAY_DIM:
        return 0;
    case IR_VAR: return n->u.var.check_bound ? IR_FX_RAISE : 0;
    case IR_BINOP: return binop_effects(n);
    case IR_CALL:
        /* intrinsics (transpose, reshape, matmul, ...) make new arrays or views, or fill their out, and write
         * nothing else */
        if (n->u.call.ckind == IR_CALLEE_INTRINSIC && n->u.call.intrinsic == IR_INTR_RAISE) return IR_FX_RAISE;
        if (n->u.call.ckind == IR_CALLEE_INTRINSIC && n->u.call.intrinsic == IR_INTR_SEARCH) return IR_FX_READ;
        /* reads a shape and strides, as a dimension does */
        if (n->u.call.ckind == IR_CALLEE_INTRINSIC && n->u.call.intrinsic == IR_INTR_RESHAPE_VIEWS) return 0;
        /* np.random: a draw writes its generator's state (so draws keep their order and are never shared) */
        if (n->u.call.ckind == IR_CALLEE_INTRINSIC && n->u.call.intrinsic == IR_INTR_RNG_DRAW)
            return IR_FX_WRITE | IR_FX_RAISE | IR_FX_READ | (n->u.call.out ? out_effects(n->u.call.out) : IR_FX_ALLOC);
        if (n->u.call.ckind == IR_CALLEE_INTRINSIC && n->u.call.intrinsic == IR_INTR_RNG_NEW)
            return IR_FX_WRITE | IR_FX_RAISE;
        /* print writes the call's output: kept, in order, once */
        if (n->u.call.ckind == IR_CALLEE_INTRINSIC && n->u.call.intrinsic == IR_INTR_PRINT) return IR_FX_WRITE | IR_FX_READ;
        if (n->u.call.ckind == IR_CALLEE_INTRINSIC)
            return IR_FX_RAISE | IR_FX_READ | (n->u.call.out ? out_effects(n->u.call.out) : IR_FX_ALLOC);
        return IR_FX_WRITE | IR_FX_RAISE | IR_FX_READ | IR_FX_ALLOC;
    case IR_INDEX: return n->u.index.proven ? IR_FX_READ : IR_FX_RAISE | IR_FX_READ; /* proven: in range */
    case IR_ATTR: case IR_COMPREHENSION: return IR_FX_WRITE | IR_FX_RAISE | IR_FX_READ | IR_FX_ALLOC; /* untyped */
    case IR_TUPLE_GET: return n->u.tuple_get.unpack_n ? IR_FX_RAISE : 0;
    case IR_ALLOC: return IR_FX_RAISE | IR_FX_ALLOC;
    case IR_MAP:
        return (array_inputs(n) ? IR_FX_READ : 0) | (shapes_may_clash(n) ? IR_FX_RAISE : 0) | out_effects(n->u.map.out);
    case IR_IMAP: return IR_FX_RAISE | out_effects(n->u.imap.out);
    case IR_REDUCE:
        return IR_FX_READ | (ir_reduce_needs_items(n->u.reduce.op, &n->u.reduce.combine) ? IR_FX_RAISE : 0) |
               (n->u.reduce.axis >= 0 || n->u.reduce.out ? out_effects(n->u.reduce.out) : 0);
    case IR_SCAN:
        return IR_FX_READ | out_effects(n->u.scan.out) |
               (ir_reduce_needs_items(n->u.scan.op, &n->u.scan.combine) ? IR_FX_RAISE : 0);
    case IR_BCAST_SHAPE: return IR_FX_RAISE;
    case IR_STORE: return IR_FX_WRITE | IR_FX_RAISE;
    case IR_ASSIGN: case IR_AUGASSIGN: case IR_IF: case IR_WHILE: case IR_FOR_RANGE: case IR_FOR_ITER: case IR_BREAK:
    case IR_CONTINUE: case IR_RETURN: case IR_EXPR_STMT: case IR_PASS:
        return 0;
    case IR_KIND_COUNT: break;
    }
    return IR_FX_WRITE | IR_FX_RAISE | IR_FX_READ | IR_FX_ALLOC;
}

static void add_effects(IrNode **p, void *env)
{
    *(unsigned *)env |= ir_effects(*p);
}

unsigned ir_effects(const IrNode *n)
{
    unsigned fx = ir_node_effects(n);
    ir_each_child((IrNode *)n, add_effects, &fx);
    return fx;
}

/* ---------------- the order of evaluation ---------------- */

typedef struct Walk {
    const IrEvalVisitor *v;
    void *env;
    unsigned done;     /* effects of everything the statement has evaluated so far */
} Walk;

static void visit(Walk *w, IrNode **slot, bool conditional, bool repeated);

static void visit_all(Walk *w, IrNode **v, int n, bool conditional, bool repeated)
{
    for (int i = 0; i < n; i++) visit(w, &v[i], conditional, repeated);
}

static void visit_combine(Walk *w, IrCombine *c, bool conditional)
{
    /* the combine runs once per element; its init before the first, but only for some inputs */
    visit(w, &c->init, true, true);
    visit(w, &c->body, conditional, true);
}

static void visit_children(Walk *w, IrNode *n, bool c, bool r)
{
    switch (n->kind) {
    case IR_CONST: case IR_VAR: case IR_NAMEREF: case IR_LAMBDA: case IR_BREAK: case IR_CONTINUE: case IR_PASS:
    case IR_KIND_COUNT:
        return;
    case IR_BINOP: visit(w, &n->u.binop.lhs, c, r); visit(w, &n->u.binop.rhs, c, r); return;
    case IR_UNOP: visit(w, &n->u.unop.operand, c, r); return;
    case IR_COMPARE: /* a < b < c: the operands after the second only when the comparisons before hold */
        visit_all(w, n->u.compare.operands, 2, c, r);
        visit_all(w, n->u.compare.operands + 2, n->u.compare.nops - 1, true, r);
        return;
    case IR_BOOLOP: /* short-circuit: the values after the first only on some paths */
        visit(w, &n->u.boolop.values[0], c, r);
        visit_all(w, n->u.boolop.values + 1, n->u.boolop.n - 1, true, r);
        return;
    case IR_IFEXP:
        visit(w, &n->u.ifexp.cond, c, r);
        visit(w, &n->u.ifexp.then, true, r);
        visit(w, &n->u.ifexp.orelse, true, r);
        return;
    case IR_CALL:
        visit_all(w, n->u.call.args, n->u.call.nargs, c, r);
        visit_all(w, n->u.call.kwargs, n->u.call.nkw, c, r);
        visit(w, &n->u.call.out, c, r);
        return;
    case IR_INDEX: visit(w, &n->u.index.base, c, r); visit_all(w, n->u.index.items, n->u.index.n, c, r); return;
    case IR_SLICE:
        visit(w, &n->u.slice.start, c, r); visit(w, &n->u.slice.stop, c, r); visit(w, &n->u.slice.step, c, r);
        return;
    case IR_ATTR: visit(w, &n->u.attr.value, c, r); return;
    case IR_TUPLE: visit_all(w, n->u.tuple.items, n->u.tuple.n, c, r); return;
    case IR_TUPLE_GET: visit(w, &n->u.tuple_get.tuple, c, r); return;
    case IR_COMPREHENSION:
        visit(w, &n->u.comprehension.iter, c, r);
        if (n->u.comprehension.cond) visit(w, &n->u.comprehension.cond, c, true);
        visit(w, &n->u.comprehension.elt, c, true);
        return;
    case IR_CAST: visit(w, &n->u.cast.value, c, r); return;
    case IR_MATH: visit_all(w, n->u.math.args, ir_math_arity(n->u.math.fn), c, r); return;
    case IR_ARRAY_DIM: visit(w, &n->u.array_dim.array, c, r); return;
    case IR_ALLOC: visit_all(w, n->u.alloc.dims, n->u.alloc.ndim, c, r); return;
    case IR_MAP:
        visit_all(w, n->u.map.inputs, n->u.map.ninputs, c, r);
        visit(w, &n->u.map.out, c, r);
        visit(w, &n->u.map.body, c, true);
        return;
    case IR_IMAP:
        visit_all(w, n->u.imap.dims, n->u.imap.ndim, c, r);
        visit(w, &n->u.imap.out, c, r);
        visit(w, &n->u.imap.body, c, true);
        return;
    case IR_REDUCE:
        visit(w, &n->u.reduce.input, c, r);
        visit(w, &n->u.reduce.out, c, r);
        visit_combine(w, &n->u.reduce.combine, c);
        return;
    case IR_SCAN:
        visit(w, &n->u.scan.input, c, r);
        visit(w, &n->u.scan.out, c, r);
        visit_combine(w, &n->u.scan.combine, c);
        return;
    case IR_BCAST_SHAPE: visit_all(w, n->u.bcast_shape.args, n->u.bcast_shape.n, c, r); return;
    /* statements: the expressions they evaluate once, in order (blocks are not this walk's business) */
    case IR_ASSIGN: visit(w, &n->u.assign.value, c, r); return;
    case IR_AUGASSIGN: visit(w, &n->u.augassign.value, c, r); return;
    case IR_STORE: visit(w, &n->u.store.value, c, r); visit(w, &n->u.store.target, c, r); return;
    case IR_IF: visit(w, &n->u.if_.cond, c, r); return;
    case IR_WHILE: visit(w, &n->u.while_.cond, c, true); return; /* evaluated again after each iteration */
    case IR_FOR_RANGE:
        visit(w, &n->u.for_range.start, c, r); visit(w, &n->u.for_range.stop, c, r); visit(w, &n->u.for_range.step, c, r);
        return;
    case IR_FOR_ITER: visit(w, &n->u.for_iter.iterable, c, r); return;
    case IR_RETURN: visit(w, &n->u.ret.value, c, r); return;
    case IR_EXPR_STMT: visit(w, &n->u.expr_stmt.value, c, r); return;
    }
}

static void visit(Walk *w, IrNode **slot, bool conditional, bool repeated)
{
    IrNode *n = *slot;
    if (!n) return;
    IrEvalPos pos = {w->done, conditional, repeated};
    if (w->v->pre && !w->v->pre(slot, &pos, w->env)) {
        w->done = pos.before | ir_effects(n);
        return;
    }
    visit_children(w, n, conditional, repeated);
    if (w->v->post) w->v->post(slot, &pos, w->env);
    /* what was evaluated: the node as it now stands, if the visitor replaced it */
    w->done = *slot == n ? w->done | ir_node_effects(n) : pos.before | ir_effects(*slot);
}

void ir_walk_eval(IrNode *stmt, const IrEvalVisitor *v, void *env)
{
    Walk w = {v, env, 0};
    visit_children(&w, stmt, false, false);
}
