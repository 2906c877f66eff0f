/* walk.c: generic traversal of the IR, so each pass handles only the kinds it changes. */
#include "ir.h"

static void each(IrNode **v, int n, IrChildFn fn, void *env)
{
    for (int i = 0; i < n; i++)
        if (v[i]) fn(&v[i], env);
}

static void one(IrNode **p, IrChildFn fn, void *env)
{
    if (*p) fn(p, env);
}

void ir_each_child(IrNode *n, IrChildFn fn, void *env)
{
    switch (n->kind) {
    case IR_CONST: case IR_VAR: case IR_NAMEREF: case IR_LAMBDA: case IR_BREAK: case IR_CONTINUE: case IR_PASS: case IR_KIND_COUNT:
        return;
    case IR_BINOP: one(&n->u.binop.lhs, fn, env); one(&n->u.binop.rhs, fn, env); return;
    case IR_UNOP: one(&n->u.unop.operand, fn, env); return;
    case IR_COMPARE: each(n->u.compare.operands, n->u.compare.nops + 1, fn, env); return;
    case IR_BOOLOP: each(n->u.boolop.values, n->u.boolop.n, fn, env); return;
    case IR_IFEXP: one(&n->u.ifexp.cond, fn, env); one(&n->u.ifexp.then, fn, env); one(&n->u.ifexp.orelse, fn, env); return;
    case IR_CALL:
        each(n->u.call.args, n->u.call.nargs, fn, env); each(n->u.call.kwargs, n->u.call.nkw, fn, env);
        one(&n->u.call.out, fn, env);
        return;
    case IR_INDEX: one(&n->u.index.base, fn, env); each(n->u.index.items, n->u.index.n, fn, env); return;
    case IR_SLICE: one(&n->u.slice.start, fn, env); one(&n->u.slice.stop, fn, env); one(&n->u.slice.step, fn, env); return;
    case IR_ATTR: one(&n->u.attr.value, fn, env); return;
    case IR_TUPLE: each(n->u.tuple.items, n->u.tuple.n, fn, env); return;
    case IR_TUPLE_GET: one(&n->u.tuple_get.tuple, fn, env); return;
    case IR_COMPREHENSION:
        one(&n->u.comprehension.iter, fn, env);
        one(&n->u.comprehension.elt, fn, env);
        if (n->u.comprehension.cond) one(&n->u.comprehension.cond, fn, env);
        return;
    case IR_CAST: one(&n->u.cast.value, fn, env); return;
    case IR_MATH: each(n->u.math.args, ir_math_arity(n->u.math.fn), fn, env); return;
    case IR_ARRAY_DIM: one(&n->u.array_dim.array, fn, env); return;
    case IR_ALLOC: each(n->u.alloc.dims, n->u.alloc.ndim, fn, env); return;
    case IR_MAP: each(n->u.map.inputs, n->u.map.ninputs, fn, env); one(&n->u.map.body, fn, env); one(&n->u.map.out, fn, env); return;
    case IR_IMAP: each(n->u.imap.dims, n->u.imap.ndim, fn, env); one(&n->u.imap.body, fn, env); one(&n->u.imap.out, fn, env); return;
    case IR_REDUCE:
        one(&n->u.reduce.input, fn, env); one(&n->u.reduce.out, fn, env);
        one(&n->u.reduce.combine.body, fn, env); one(&n->u.reduce.combine.init, fn, env);
        return;
    case IR_SCAN:
        one(&n->u.scan.input, fn, env); one(&n->u.scan.out, fn, env);
        one(&n->u.scan.combine.body, fn, env); one(&n->u.scan.combine.init, fn, env);
        return;
    case IR_BCAST_SHAPE: each(n->u.bcast_shape.args, n->u.bcast_shape.n, fn, env); return;
    case IR_ASSIGN: one(&n->u.assign.value, fn, env); return;
    case IR_AUGASSIGN: one(&n->u.augassign.value, fn, env); return;
    case IR_STORE: one(&n->u.store.target, fn, env); one(&n->u.store.value, fn, env); return;
    case IR_IF: one(&n->u.if_.cond, fn, env); return;
    case IR_WHILE: one(&n->u.while_.cond, fn, env); return;
    case IR_FOR_RANGE: one(&n->u.for_range.start, fn, env); one(&n->u.for_range.stop, fn, env); one(&n->u.for_range.step, fn, env); return;
    case IR_FOR_ITER: one(&n->u.for_iter.iterable, fn, env); return;
    case IR_RETURN: one(&n->u.ret.value, fn, env); return;
    case IR_EXPR_STMT: one(&n->u.expr_stmt.value, fn, env); return;
    }
}

int ir_stmt_blocks(IrNode *s, IrBlock *blocks[2])
{
    switch (s->kind) {
    case IR_IF: blocks[0] = &s->u.if_.then; blocks[1] = &s->u.if_.orelse; return 2;
    case IR_WHILE: blocks[0] = &s->u.while_.body; return 1;
    case IR_FOR_RANGE: blocks[0] = &s->u.for_range.body; return 1;
    case IR_FOR_ITER: blocks[0] = &s->u.for_iter.body; return 1;
    case IR_ASSIGN: case IR_AUGASSIGN: case IR_STORE: case IR_BREAK: case IR_CONTINUE: case IR_RETURN:
    case IR_EXPR_STMT: case IR_PASS:
        return 0;
    /* expressions hold no blocks */
    case IR_CONST: case IR_VAR: case IR_NAMEREF: case IR_BINOP: case IR_UNOP: case IR_COMPARE: case IR_BOOLOP:
    case IR_IFEXP: case IR_CALL: case IR_INDEX: case IR_SLICE: case IR_ATTR: case IR_TUPLE: case IR_TUPLE_GET:
    case IR_LAMBDA: case IR_COMPREHENSION: case IR_CAST: case IR_MATH: case IR_ARRAY_DIM: case IR_ALLOC:
    case IR_MAP: case IR_IMAP: case IR_REDUCE: case IR_SCAN: case IR_BCAST_SHAPE: case IR_KIND_COUNT:
        return 0;
    }
    return 0;
}

void ir_each_stmt(IrBlock *b, IrStmtFn fn, void *env)
{
    for (int i = 0; i < b->n; i++) {
        IrNode *s = b->stmts[i];
        fn(s, env);
        IrBlock *blocks[2];
        int n = ir_stmt_blocks(s, blocks);
        for (int k = 0; k < n; k++) ir_each_stmt(blocks[k], fn, env);
    }
}

typedef struct ElementWalk {
    IrElementFn fn;
    void *env;
} ElementWalk;

static void element_code_in(IrNode **p, void *env)
{
    ElementWalk *w = env;
    IrNode *n = *p, *body = NULL;
    switch (n->kind) {
    case IR_MAP: body = n->u.map.body; break;
    case IR_IMAP: body = n->u.imap.body; break;
    case IR_REDUCE: body = n->u.reduce.combine.body; break;
    case IR_SCAN: body = n->u.scan.combine.body; break;
    case IR_CONST: case IR_VAR: case IR_NAMEREF: case IR_BINOP: case IR_UNOP: case IR_COMPARE: case IR_BOOLOP:
    case IR_IFEXP: case IR_CALL: case IR_INDEX: case IR_SLICE: case IR_ATTR: case IR_TUPLE: case IR_TUPLE_GET:
    case IR_LAMBDA: case IR_COMPREHENSION: case IR_CAST: case IR_MATH: case IR_ARRAY_DIM: case IR_ALLOC:
    case IR_BCAST_SHAPE: case IR_ASSIGN: case IR_AUGASSIGN: case IR_STORE: case IR_IF: case IR_WHILE:
    case IR_FOR_RANGE: case IR_FOR_ITER: case IR_BREAK: case IR_CONTINUE: case IR_RETURN: case IR_EXPR_STMT:
    case IR_PASS: case IR_KIND_COUNT:
        break;
    }
    if (body) w->fn(body, w->env);
    ir_each_child(n, element_code_in, env);
}

static void element_code_of_stmt(IrNode *s, void *env)
{
    ir_each_child(s, element_code_in, env);
}

void ir_each_element_code(IrBlock *b, IrElementFn fn, void *env)
{
    ElementWalk w = {fn, env};
    ir_each_stmt(b, element_code_of_stmt, &w);
}
