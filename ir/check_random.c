/* check_random.c: a numpy Generator's draws stay out of code whose iterations may run at once.
 *
 * A Generator is one sequential stream: NumPy's numbers for a seed are defined by the order of the draws. The
 * element code of a data-parallel node (a map's or index map's body, a reduction's or scan's combine: what a
 * comprehension or lk.map becomes) and the body of an lk.prange loop may run in any order, on several threads
 * (openmp) or as a kernel (gpu), so a draw there would give other numbers on another backend or thread count.
 * This check refuses any use of a Generator there, with a CompileError naming the line, the same on every
 * backend. Draws elsewhere (straight-line code, plain loops, which ir_auto_parallel never parallelises because a
 * draw writes its generator: effects.c) run in program order, so openmp gives cpu's numbers bit for bit. It only
 * reads the IR. */
#include "ir.h"

typedef struct Check {
    IrFunc *f;
    LkDiag *diag;
    bool failed;
} Check;

/* The first node in n's subtree that is a Generator (a variable holding one, a draw's generator, a new one). */
static const IrNode *find_generator(IrNode *n);

static void find_in_child(IrNode **p, void *env)
{
    const IrNode **found = env;
    if (!*found) *found = find_generator(*p);
}

static const IrNode *find_generator(IrNode *n)
{
    if (n->type && n->type->kind == IR_TY_RNG) return n;
    const IrNode *found = NULL;
    ir_each_child(n, find_in_child, &found);
    return found;
}

static void refuse(Check *c, const IrNode *at, const char *where)
{
    if (c->failed) return;
    c->failed = true;
    lk_diag_set(c->diag, LK_ERR_COMPILE, at->pos.file ? at->pos.file : c->f->file, at->pos.line, at->pos.col,
                "a numpy Generator is used inside %s, whose iterations may run in any order or at once: its draws are "
                "one sequential stream, so draw what the loop needs before it (rng.random(n), rng.normal(0, 1, n), "
                "...) and index that", where);
}

static void check_expr(IrNode **p, void *env);

/* Element code: anything found there is refused. */
static void check_element_code(Check *c, IrNode *body)
{
    const IrNode *g = body ? find_generator(body) : NULL;
    if (g) refuse(c, g, "element code (a comprehension, lk.map or another operation over elements)");
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

/* A prange loop's body: any statement in it that uses a Generator. Loops that ir_auto_parallel made parallel
 * draw nothing (a draw writes memory, which it refuses). */
static void check_prange_stmt(IrNode *s, void *env)
{
    Check *c = env;
    const IrNode *g = NULL;
    ir_each_child(s, find_in_child, &g);
    if (g) refuse(c, g, "an lk.prange loop");
}

static void check_stmt(IrNode *s, void *env)
{
    Check *c = env;
    ir_each_child(s, check_expr, env);
    if (s->kind == IR_FOR_RANGE && s->u.for_range.parallel && !s->u.for_range.auto_parallel)
        ir_each_stmt(&s->u.for_range.body, check_prange_stmt, c);
}

bool ir_check_random(IrFunc *f, LkDiag *diag)
{
    Check c = {f, diag, false};
    ir_each_stmt(&f->body, check_stmt, &c);
    return !c.failed;
}
