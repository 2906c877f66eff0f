/* check_print.c: print() stays out of element code.
 *
 * The element code of a data-parallel node (a map's or index map's body, a reduction's or scan's combine: what
 * a comprehension or lk.map becomes, directly or through a function it calls) is not a sequence of statements
 * that runs once per element in order: a backend may evaluate it in any order, on several threads, or twice
 * (a scan's two passes, a fused intermediate recomputed in each user). A print there would show another text on
 * another backend, so it is a CompileError naming the line, on every backend. Prints in straight-line code, plain
 * loops and lk.prange bodies run in program order: the runtime joins a parallel loop's chunks' output in chunk
 * order (runtime/print.c). It only reads the IR. */
#include "ir.h"

typedef struct Check {
    IrFunc *f;
    LkDiag *diag;
    bool failed;
} Check;

static const IrNode *find_print(const IrNode *n, int depth);

typedef struct Find {
    const IrNode *found;
    int depth;
} Find;

static void find_in_child(IrNode **p, void *env)
{
    Find *f = env;
    if (!f->found) f->found = find_print(*p, f->depth);
}

static void find_in_stmt(IrNode *s, void *env)
{
    Find *f = env;
    if (!f->found) f->found = find_print(s, f->depth);
}

/* The first print in n's subtree, or in a function it calls (its call node then stands for it) */
static const IrNode *find_print(const IrNode *n, int depth)
{
    if (n->kind == IR_CALL && n->u.call.ckind == IR_CALLEE_INTRINSIC && n->u.call.intrinsic == IR_INTR_PRINT) return n;
    Find f = {NULL, depth};
    if (n->kind == IR_CALL && n->u.call.callee && depth < 64) {
        Find in = {NULL, depth + 1};
        ir_each_stmt(&n->u.call.callee->body, find_in_stmt, &in);
        if (in.found) return n;
    }
    ir_each_child((IrNode *)n, find_in_child, &f);
    return f.found;
}

static void check_element_code(Check *c, const IrNode *body)
{
    const IrNode *p = body ? find_print(body, 0) : NULL;
    if (!p || c->failed) return;
    c->failed = true;
    lk_diag_set(c->diag, LK_ERR_COMPILE, p->pos.file ? p->pos.file : c->f->file, p->pos.line, p->pos.col,
                "print() in element code (a comprehension, lk.map or another operation over elements, or a function "
                "it calls) is not supported: its elements may be computed in any order, at once or twice; print in a "
                "loop instead");
}

static void check_expr(IrNode **p, void *env)
{
    Check *c = env;
    IrNode *n = *p;
    switch (n->kind) {
    case IR_MAP: check_element_code(c, n->u.map.body); break;
    case IR_IMAP: check_element_code(c, n->u.imap.body); break;
    case IR_REDUCE: check_element_code(c, n->u.reduce.combine.body); break;
    case IR_SCAN: check_element_code(c, n->u.scan.combine.body); break;
    case IR_CONST: case IR_VAR: case IR_NAMEREF: case IR_BINOP: case IR_UNOP: case IR_COMPARE: case IR_BOOLOP:
    case IR_IFEXP: case IR_CALL: case IR_INDEX: case IR_SLICE: case IR_ATTR: case IR_TUPLE: case IR_TUPLE_GET:
    case IR_LAMBDA: case IR_COMPREHENSION: case IR_CAST: case IR_MATH: case IR_ARRAY_DIM: case IR_ALLOC:
    case IR_BCAST_SHAPE: case IR_ASSIGN: case IR_AUGASSIGN: case IR_STORE: case IR_IF: case IR_WHILE:
    case IR_FOR_RANGE: case IR_FOR_ITER: case IR_BREAK: case IR_CONTINUE: case IR_RETURN: case IR_EXPR_STMT:
    case IR_PASS: case IR_KIND_COUNT:
        break;
    }
    ir_each_child(n, check_expr, env);
}

static void check_stmt(IrNode *s, void *env)
{
    ir_each_child(s, check_expr, env);
}

bool ir_check_print(IrFunc *f, LkDiag *diag)
{
    Check c = {f, diag, false};
    ir_each_stmt(&f->body, check_stmt, &c);
    return !c.failed;
}
