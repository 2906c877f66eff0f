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

static void check_element_code(IrNode *body, void *env)
{
    Check *c = env;
    const IrNode *p = find_print(body, 0);
    if (!p || c->failed) return;
    c->failed = true;
    lk_diag_set(c->diag, LK_ERR_COMPILE, p->pos.file ? p->pos.file : c->f->file, p->pos.line, p->pos.col,
                "print() in element code (a comprehension, lk.map or another operation over elements, or a function "
                "it calls) is not supported: its elements may be computed in any order, at once or twice; print in a "
                "loop instead");
}

bool ir_check_print(IrFunc *f, LkDiag *diag)
{
    Check c = {f, diag, false};
    ir_each_element_code(&f->body, check_element_code, &c);
    return !c.failed;
}
