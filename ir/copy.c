/* copy.c: a deep copy of a node of the typed IR, the blocks of a statement included, for a pass that needs two
 * versions of some code that may then differ (ir_version_loops) or a callee's code in its caller (ir_inline_calls).
 * Every node and every array of nodes is new; types, functions and strings are shared. Variables are shared too
 * unless the caller maps them (hooks->map_var: every variable a node names, its own and its bound ones, goes
 * through it). A copied node keeps its position (errors raised in either copy name the same line). It never
 * changes the original. */
#include <string.h>
#include "ir.h"

typedef struct Copy {
    RtArena *a;
    const IrCopyHooks *h;
} Copy;

static IrVar *var(Copy *c, IrVar *v)
{
    return v && c->h->map_var ? c->h->map_var(v, c->h->env) : v;
}

static IrNode *copy(Copy *c, const IrNode *n);

static IrNode **copy_all(Copy *c, IrNode *const *v, int n)
{
    IrNode **r = ir_nodes(c->a, n);
    for (int i = 0; i < n; i++) r[i] = copy(c, v[i]);
    return r;
}

static void copy_block(Copy *c, IrBlock *b)
{
    IrBlock r = {0};
    for (int i = 0; i < b->n; i++) ir_block_push(c->a, &r, copy(c, b->stmts[i]));
    *b = r;
}

static IrVar **dup_vars(Copy *c, IrVar **v, int n)
{
    if (n <= 0) return v;
    IrVar **r = rt_arena_dup(c->a, v, sizeof(IrVar *) * (size_t)n);
    for (int i = 0; i < n; i++) r[i] = var(c, r[i]);
    return r;
}

static void copy_combine(Copy *c, IrCombine *k)
{
    k->acc_param = var(c, k->acc_param);
    k->elem_param = var(c, k->elem_param);
    k->body = copy(c, k->body);
    k->init = copy(c, k->init);
}

static IrNode *copy(Copy *c, const IrNode *n)
{
    if (!n) return NULL;
    if (c->h->replace) {
        IrNode *instead = c->h->replace(n, c->h->env);
        if (instead) return instead;
    }
    IrNode *r = ir_node(c->a, n->kind, n->pos);
    *r = *n;
    if (n->region) {
        r->region = rt_arena_dup(c->a, n->region, sizeof *n->region);
        r->region->uses = dup_vars(c, n->region->uses, n->region->nuses);
    }
    switch (n->kind) {
    case IR_CONST: case IR_NAMEREF: case IR_LAMBDA: case IR_BREAK: case IR_CONTINUE: case IR_PASS:
    case IR_KIND_COUNT:
        break;
    case IR_VAR: r->u.var.var = var(c, n->u.var.var); break;
    case IR_BINOP: r->u.binop.lhs = copy(c, n->u.binop.lhs); r->u.binop.rhs = copy(c, n->u.binop.rhs); break;
    case IR_UNOP: r->u.unop.operand = copy(c, n->u.unop.operand); break;
    case IR_COMPARE:
        r->u.compare.ops = rt_arena_dup(c->a, n->u.compare.ops, sizeof(IrCmpOp) * (size_t)n->u.compare.nops);
        r->u.compare.operands = copy_all(c, n->u.compare.operands, n->u.compare.nops + 1);
        break;
    case IR_BOOLOP: r->u.boolop.values = copy_all(c, n->u.boolop.values, n->u.boolop.n); break;
    case IR_IFEXP:
        r->u.ifexp.cond = copy(c, n->u.ifexp.cond);
        r->u.ifexp.then = copy(c, n->u.ifexp.then);
        r->u.ifexp.orelse = copy(c, n->u.ifexp.orelse);
        break;
    case IR_CALL:
        r->u.call.args = copy_all(c, n->u.call.args, n->u.call.nargs);
        r->u.call.kwargs = copy_all(c, n->u.call.kwargs, n->u.call.nkw);
        r->u.call.out = copy(c, n->u.call.out);
        break;
    case IR_INDEX:
        r->u.index.base = copy(c, n->u.index.base);
        r->u.index.items = copy_all(c, n->u.index.items, n->u.index.n);
        break;
    case IR_SLICE:
        r->u.slice.start = copy(c, n->u.slice.start);
        r->u.slice.stop = copy(c, n->u.slice.stop);
        r->u.slice.step = copy(c, n->u.slice.step);
        break;
    case IR_ATTR: r->u.attr.value = copy(c, n->u.attr.value); break;
    case IR_TUPLE: r->u.tuple.items = copy_all(c, n->u.tuple.items, n->u.tuple.n); break;
    case IR_TUPLE_GET: r->u.tuple_get.tuple = copy(c, n->u.tuple_get.tuple); break;
    case IR_COMPREHENSION:
        r->u.comprehension.target = var(c, n->u.comprehension.target);
        r->u.comprehension.iter = copy(c, n->u.comprehension.iter);
        r->u.comprehension.elt = copy(c, n->u.comprehension.elt);
        r->u.comprehension.cond = copy(c, n->u.comprehension.cond);
        break;
    case IR_CAST: r->u.cast.value = copy(c, n->u.cast.value); break;
    case IR_MATH:
        for (int i = 0; i < ir_math_arity(n->u.math.fn); i++) r->u.math.args[i] = copy(c, n->u.math.args[i]);
        break;
    case IR_ARRAY_DIM: r->u.array_dim.array = copy(c, n->u.array_dim.array); break;
    case IR_ALLOC: r->u.alloc.dims = copy_all(c, n->u.alloc.dims, n->u.alloc.ndim); break;
    case IR_MAP:
        r->u.map.params = dup_vars(c, n->u.map.params, n->u.map.nparams);
        r->u.map.inputs = copy_all(c, n->u.map.inputs, n->u.map.ninputs);
        r->u.map.body = copy(c, n->u.map.body);
        r->u.map.out = copy(c, n->u.map.out);
        break;
    case IR_IMAP:
        r->u.imap.idx = dup_vars(c, n->u.imap.idx, n->u.imap.ndim);
        r->u.imap.dims = copy_all(c, n->u.imap.dims, n->u.imap.ndim);
        r->u.imap.body = copy(c, n->u.imap.body);
        r->u.imap.out = copy(c, n->u.imap.out);
        break;
    case IR_REDUCE:
        r->u.reduce.input = copy(c, n->u.reduce.input);
        r->u.reduce.out = copy(c, n->u.reduce.out);
        copy_combine(c, &r->u.reduce.combine);
        break;
    case IR_SCAN:
        r->u.scan.input = copy(c, n->u.scan.input);
        r->u.scan.out = copy(c, n->u.scan.out);
        copy_combine(c, &r->u.scan.combine);
        break;
    case IR_BCAST_SHAPE: r->u.bcast_shape.args = copy_all(c, n->u.bcast_shape.args, n->u.bcast_shape.n); break;
    case IR_ASSIGN:
        r->u.assign.var = var(c, n->u.assign.var);
        r->u.assign.value = copy(c, n->u.assign.value);
        break;
    case IR_AUGASSIGN:
        r->u.augassign.var = var(c, n->u.augassign.var);
        r->u.augassign.value = copy(c, n->u.augassign.value);
        break;
    case IR_STORE:
        r->u.store.target = copy(c, n->u.store.target);
        r->u.store.value = copy(c, n->u.store.value);
        break;
    case IR_IF:
        r->u.if_.cond = copy(c, n->u.if_.cond);
        copy_block(c, &r->u.if_.then);
        copy_block(c, &r->u.if_.orelse);
        break;
    case IR_WHILE:
        r->u.while_.cond = copy(c, n->u.while_.cond);
        copy_block(c, &r->u.while_.body);
        break;
    case IR_FOR_RANGE:
        r->u.for_range.var = var(c, n->u.for_range.var);
        r->u.for_range.start = copy(c, n->u.for_range.start);
        r->u.for_range.stop = copy(c, n->u.for_range.stop);
        r->u.for_range.step = copy(c, n->u.for_range.step);
        if (n->u.for_range.nreds) {
            r->u.for_range.reds = rt_arena_dup(c->a, n->u.for_range.reds, sizeof(IrPrangeRed) * (size_t)n->u.for_range.nreds);
            for (int i = 0; i < n->u.for_range.nreds; i++) r->u.for_range.reds[i].var = var(c, r->u.for_range.reds[i].var);
        }
        copy_block(c, &r->u.for_range.body);
        break;
    case IR_FOR_ITER:
        r->u.for_iter.var = var(c, n->u.for_iter.var);
        r->u.for_iter.iterable = copy(c, n->u.for_iter.iterable);
        copy_block(c, &r->u.for_iter.body);
        break;
    case IR_RETURN: r->u.ret.value = copy(c, n->u.ret.value); break;
    case IR_EXPR_STMT: r->u.expr_stmt.value = copy(c, n->u.expr_stmt.value); break;
    }
    if (c->h->after) c->h->after(n, r, c->h->env);
    return r;
}

IrNode *ir_copy(RtArena *a, const IrNode *n, const IrCopyHooks *hooks)
{
    static const IrCopyHooks none = {0};
    Copy c = {a, hooks ? hooks : &none};
    return copy(&c, n);
}
