/* version_loops.c: loops versioned on their bounds plans, as a rewrite of the IR that every backend lowers.
 *
 * A checked access x[i, j] in a loop wraps a negative index and branches to a raise: both cost work on every
 * iteration and keep a compiler from vectorising the loop. bounds_plan.c finds the accesses of a loop that one
 * test before it proves in range on every iteration. A range or prange loop worth it becomes
 *
 *     if versioned <test>:
 *         <a copy of the loop, where the accesses the test proves are index.proven (no wrap, no check), and
 *          the loop and every range loop in it are for_range.proven_copy>
 *     else:
 *         <the loop as it was, every check in place>
 *
 * (or the copy alone when nothing needs testing: for i in range(len(x)): x[i])
 * so an index out of range still raises at the same line and iteration, and the test only decides speed.
 *
 * The test is ordinary typed IR, an `and` of int64 compares: first each atom within the range in which every
 * form it appears in fits int64 (IrBoundsAtom; the arithmetic wraps, and is exact when the result fits), then
 * lo >= 0 (unless it holds) and hi < shape for every axis of the plan. It cannot raise or write, reads no
 * array element, and every variable it reads has its value before the loop (bounds_plan.c leaves out code that
 * cannot run). The loop's start, stop and step are evaluated once, before the test: one that is not pure (a
 * call, an element, a variable that may be unbound) goes into a temporary first; a pure one is read again by
 * the test, where it has the value the loop starts with.
 *
 * Worth a copy (the rule that was the llvm backend's): the plan proves an access of an innermost loop (one with
 * no loop, map or reduction in it: where a check runs most often, and the loops a compiler vectorises; outside
 * one, a check runs a trip count less often) that no versioned loop around it has planned (there a copy would
 * add nothing), and fewer than MAX_NESTED versioned loops are around (each doubles the code inside it). Plans
 * nest: a loop in either copy may be versioned again for accesses new to it.
 *
 * The cost is compile time: the loop's body twice. This pass runs after prange's checks (which count a
 * variable's reads, and the copy doubles them) and before ir_mark_regions (a versioned prange loop is then two
 * regions, and its test runs once, before either starts). */
#include "ir.h"

#define MAX_NESTED 2

typedef struct Pass {
    IrFunc *f;
    const IrBoundsPlan *around[MAX_NESTED]; /* the plans of the versioned loops around, outermost first */
    int depth;
} Pass;

static bool planned_around(const Pass *p, const IrNode *index)
{
    for (int k = 0; k < p->depth; k++)
        for (int i = 0; i < p->around[k]->nindex; i++)
            if (p->around[k]->index[i] == index) return true;
    return false;
}

static bool worth_a_copy(const Pass *p, const IrBoundsPlan *plan)
{
    for (int i = 0; i < plan->nindex; i++)
        if (plan->innermost[i] && !planned_around(p, plan->index[i])) return true;
    return false;
}

/* ---- the test ---- */

typedef struct Test {
    RtArena *a;
    IrPos pos;
    const IrNode *own_start, *own_stop; /* the plan's atoms standing for the loop's start and stop */
    IrNode *start, *stop;               /* what the loop reads for them now */
    IrNode **terms;
    int n;
} Test;

static IrType *i64(void) { return ir_type_scalar(IR_DT_INT64); }

static IrNode *literal(Test *t, int64_t v)
{
    return ir_const_int(t->a, t->pos, ir_type_weak(IR_DT_INT64), v);
}

static IrNode *binop(Test *t, IrBinOp op, IrNode *l, IrNode *r)
{
    IrNode *n = ir_node(t->a, IR_BINOP, t->pos);
    n->type = i64();
    n->u.binop.op = op;
    n->u.binop.lhs = l;
    n->u.binop.rhs = r;
    return n;
}

static IrNode *atom(Test *t, const IrNode *a)
{
    if (a == t->own_start) a = t->start;
    else if (a == t->own_stop) a = t->stop;
    return ir_copy(t->a, a, NULL);
}

/* konst + sum coef * atom as int64 IR, the terms with a positive coefficient first (it reads `n - 1`) */
static IrNode *form(Test *t, const IrAffine *f)
{
    IrNode *acc = NULL;
    for (int positive = 1; positive >= 0; positive--)
        for (int i = 0; i < f->n; i++) {
            int64_t c = f->coef[i];
            if ((c > 0) != positive) continue;
            bool minus = c < 0 && c != INT64_MIN; /* INT64_MIN has no magnitude: it is added */
            int64_t m = minus ? -c : c;
            IrNode *x = atom(t, f->atom[i]);
            if (m != 1) x = binop(t, IR_OP_MUL, x, literal(t, m));
            if (acc) {
                acc = binop(t, minus ? IR_OP_SUB : IR_OP_ADD, acc, x);
            } else if (minus) {
                acc = ir_node(t->a, IR_UNOP, t->pos);
                acc->type = i64();
                acc->u.unop.op = IR_UOP_NEG;
                acc->u.unop.operand = x;
            } else {
                acc = x;
            }
        }
    if (!acc) return literal(t, f->konst);
    if (f->konst > 0 || f->konst == INT64_MIN) return binop(t, IR_OP_ADD, acc, literal(t, f->konst));
    if (f->konst < 0) return binop(t, IR_OP_SUB, acc, literal(t, -f->konst));
    return acc;
}

static void term(Test *t, IrCmpOp op, IrNode *l, IrNode *r)
{
    t->terms[t->n++] = ir_compare(t->a, t->pos, op, l, r);
}

/* hi is shape[axis] of the checked array itself, less a constant: it holds without a test (shapes are >= 0) */
static bool below_own_shape(const IrBoundsCheck *c)
{
    const IrAffine *hi = &c->hi;
    if (hi->n != 1 || hi->coef[0] != 1 || hi->konst >= 0 || hi->konst == INT64_MIN) return false;
    const IrNode *a = hi->atom[0];
    return a->kind == IR_ARRAY_DIM && a->u.array_dim.axis == c->axis && a->u.array_dim.array->kind == IR_VAR &&
           a->u.array_dim.array->u.var.var == c->array->u.var.var;
}

/* The test, or NULL when every access of the plan holds without one. */
static IrNode *bounds_test(Test *t, const IrBoundsPlan *plan)
{
    t->terms = ir_nodes(t->a, 2 * plan->natoms + 2 * plan->nchecks);
    for (int i = 0; i < plan->natoms; i++) {
        const IrBoundsAtom *b = &plan->atoms[i];
        bool shape = b->atom->kind == IR_ARRAY_DIM; /* never negative */
        if (b->min > INT64_MIN && !(shape && b->min <= 0)) term(t, IR_CMP_GE, atom(t, b->atom), literal(t, b->min));
        if (b->max < INT64_MAX) term(t, IR_CMP_LE, atom(t, b->atom), literal(t, b->max));
    }
    for (int i = 0; i < plan->nchecks; i++) {
        const IrBoundsCheck *c = &plan->checks[i];
        if (!c->array) continue; /* a nested loop's bounds: their atoms' ranges above are all it needs */
        if (!c->lo_holds) term(t, IR_CMP_GE, form(t, &c->lo), literal(t, 0));
        if (below_own_shape(c)) continue;
        IrNode *dim = ir_node(t->a, IR_ARRAY_DIM, t->pos);
        dim->type = i64();
        dim->u.array_dim.array = ir_copy(t->a, c->array, NULL);
        dim->u.array_dim.axis = c->axis;
        term(t, IR_CMP_LT, form(t, &c->hi), dim);
    }
    if (t->n <= 1) return t->n ? t->terms[0] : NULL;
    IrNode *all = ir_node(t->a, IR_BOOLOP, t->pos);
    all->type = ir_type_scalar(IR_DT_BOOL);
    all->u.boolop.is_and = true;
    all->u.boolop.values = t->terms;
    all->u.boolop.n = t->n;
    return all;
}

/* ---- the rewrite ---- */

/* The loop's start, stop or step, evaluated before the test: into a temporary, unless it is pure. */
static void evaluate_first(Pass *p, IrBlock *out, IrNode **slot)
{
    IrNode *e = *slot;
    if (!ir_effects(e)) return;
    RtArena *a = p->f->arena;
    IrVar *tmp = ir_func_temp(p->f, e->type);
    IrNode *set = ir_node(a, IR_ASSIGN, e->pos);
    set->u.assign.var = tmp;
    set->u.assign.value = e;
    ir_block_push(a, out, set);
    *slot = ir_var_ref(a, e->pos, tmp);
}

/* In the copy: the plan's accesses proven, every range loop marked. */
static void mark_copy(const IrNode *from, IrNode *to, void *env)
{
    const IrBoundsPlan *plan = env;
    if (to->kind == IR_FOR_RANGE) to->u.for_range.proven_copy = true;
    if (to->kind != IR_INDEX) return;
    for (int i = 0; i < plan->nindex; i++)
        if (plan->index[i] == from) {
            to->u.index.checked = false;
            to->u.index.proven = true;
            return;
        }
}

static void version_block(Pass *p, IrBlock *b);

/* Appends to out the loop s, or what versions it. */
static void version_loop(Pass *p, IrNode *s, IrBlock *out)
{
    const IrBoundsPlan *plan = p->depth < MAX_NESTED ? ir_bounds_plan(p->f, s) : NULL;
    RtArena *a = p->f->arena;
    if (!plan || !worth_a_copy(p, plan)) {
        version_block(p, &s->u.for_range.body);
        ir_block_push(a, out, s);
        return;
    }
    Test t = {a, s->pos, s->u.for_range.start, s->u.for_range.stop, NULL, NULL, NULL, 0};
    evaluate_first(p, out, &s->u.for_range.start);
    evaluate_first(p, out, &s->u.for_range.stop);
    evaluate_first(p, out, &s->u.for_range.step);
    t.start = s->u.for_range.start;
    t.stop = s->u.for_range.stop;
    IrNode *test = bounds_test(&t, plan);
    IrNode *copy = ir_copy(a, s, &(IrCopyHooks){.after = mark_copy, .env = (void *)plan});
    p->around[p->depth++] = plan;
    if (!test) { /* for i in range(len(x)): x[i] needs no test, and no second copy */
        ir_block_push(a, out, copy);
        version_block(p, &copy->u.for_range.body);
        p->depth--;
        return;
    }
    IrNode *versioned = ir_node(a, IR_IF, s->pos);
    versioned->u.if_.cond = test;
    versioned->u.if_.versioned = true;
    ir_block_push(a, &versioned->u.if_.then, copy);
    ir_block_push(a, &versioned->u.if_.orelse, s);
    ir_block_push(a, out, versioned);
    version_block(p, &copy->u.for_range.body);
    version_block(p, &s->u.for_range.body);
    p->depth--;
}

static void version_block(Pass *p, IrBlock *b)
{
    IrBlock out = {0};
    for (int i = 0; i < b->n; i++) {
        IrNode *s = b->stmts[i];
        if (s->kind == IR_FOR_RANGE) {
            version_loop(p, s, &out);
            continue;
        }
        IrBlock *blocks[2];
        int nb = ir_stmt_blocks(s, blocks);
        for (int k = 0; k < nb; k++) version_block(p, blocks[k]);
        ir_block_push(p->f->arena, &out, s);
    }
    *b = out;
}

void ir_version_loops(IrFunc *f)
{
    Pass p = {f, {NULL}, 0};
    version_block(&p, &f->body);
}
