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

/* Element code: anything found there is refused. */
static void check_element_code(IrNode *body, void *env)
{
    const IrNode *g = find_generator(body);
    if (g) refuse(env, g, "element code (a comprehension, lk.map or another operation over elements)");
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
    if (s->kind == IR_FOR_RANGE && s->u.for_range.parallel && !s->u.for_range.auto_parallel)
        ir_each_stmt(&s->u.for_range.body, check_prange_stmt, c);
}

bool ir_check_random(IrFunc *f, LkDiag *diag)
{
    Check c = {f, diag, false};
    ir_each_element_code(&f->body, check_element_code, &c);
    ir_each_stmt(&f->body, check_stmt, &c);
    return !c.failed;
}
