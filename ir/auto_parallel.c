/* auto_parallel.c: plain `for ... in range(...)` loops whose iterations are provably independent become
 * parallel loops, as if the user had written lk.prange; every other loop records why it stays sequential.
 *
 * The invariant: a loop is made parallel only when running its iterations in any order, on several threads,
 * gives the program what the sequential loop gives, bit for bit, including when an iteration raises (the
 * arrays it writes are then never seen). That holds when:
 *  1. the body never leaves the loop (no break of it, no return) and never assigns the loop variable;
 *  2. every array the body writes is made by this function (assigned once, from an IR_ALLOC, before the loop,
 *     and never bound to another name, viewed into a variable, or passed to a user function: it shares memory
 *     with nothing else), and the body writes it only by stores whose index holds the loop variable itself at
 *     one position p, and reads it only through indexes with the loop variable at that same p: each iteration
 *     touches its own part. An array the function did not make (an argument) may share memory with another,
 *     and a parallel run that raises would leave the writes of iterations after the failing one: such a loop
 *     stays sequential;
 *  3. the body allocates nothing, calls no user function (it could write anything it was given), holds no
 *     data-parallel node that writes an array (out set), and writes memory in no other way (effects.c's
 *     IR_FX_WRITE on any node but a store);
 *  4. every scalar the body assigns is either private (assigned before it is read in each iteration, along
 *     every path, and not read after the loop) or an exact reduction: v = v op x (+ * max min) on an integer
 *     or bool v, read nowhere else in the body (a float reduction's bits depend on its order). These are
 *     prange's rules (prange.c), which then records the reductions for the backends.
 * Only the outermost loop that qualifies becomes parallel (a region, ir/parallel_regions.c); a loop that does
 * not is searched for loops inside it that do. prange loops are left as they are. The pass never changes what a
 * loop computes: a backend may still run a parallel loop on one thread (the cpu backend always does). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ir.h"

/* A loop whose trips are constants below this stays sequential: a team or a kernel launch costs more than it
 * could save (a `for k in range(3)` in a callee called from element code would become a region of its own). */
#define MIN_TRIPS 64

typedef struct Func {
    IrFunc *f;
    int *assigns;      /* by var id: assignments anywhere in the function */
    int *reads;        /* by var id: reads anywhere in the function */
    bool *fresh;       /* by var id: an array made here (rule 2) */
} Func;

static const IrNode *strip_cast(const IrNode *n)
{
    while (n && n->kind == IR_CAST) n = n->u.cast.value;
    return n;
}

static bool is_var(const IrNode *n, const IrVar *v)
{
    n = strip_cast(n);
    return n && n->kind == IR_VAR && n->u.var.var == v;
}

static bool is_array(const IrType *t)
{
    return t && t->kind == IR_TY_ARRAY;
}

/* ---- facts about the whole function ---- */

typedef struct Walk {
    Func *fn;
    const IrNode *parent;
} Walk;

/* An array variable escapes (stops being fresh) when it is used other than by an element's index, a store's
 * target, a data-parallel node's input, or a return. */
static void escape_check(IrNode **p, void *env)
{
    Walk *w = env;
    IrNode *n = *p;
    const IrNode *parent = w->parent;
    if (n->kind == IR_VAR && is_array(n->u.var.var->type)) {
        bool ok = false;
        if (parent) switch (parent->kind) {
            case IR_INDEX:
                /* an element, or a view that is not bound to a name (its parent is checked in turn when the
                 * view is the node: a view assigned or passed on is an escape, see below) */
                ok = parent->u.index.base == n;
                break;
            case IR_MAP: case IR_REDUCE: case IR_SCAN: case IR_RETURN: case IR_ARRAY_DIM:
                ok = true;
                break;
            case IR_TUPLE: ok = false; break;
            case IR_CONST: case IR_VAR: case IR_NAMEREF: case IR_BINOP: case IR_UNOP: case IR_COMPARE:
            case IR_BOOLOP: case IR_IFEXP: case IR_CALL: case IR_SLICE: case IR_ATTR: case IR_TUPLE_GET:
            case IR_LAMBDA: case IR_COMPREHENSION: case IR_CAST: case IR_MATH: case IR_ALLOC: case IR_IMAP:
            case IR_BCAST_SHAPE: case IR_ASSIGN: case IR_AUGASSIGN: case IR_STORE: case IR_IF: case IR_WHILE:
            case IR_FOR_RANGE: case IR_FOR_ITER: case IR_BREAK: case IR_CONTINUE: case IR_EXPR_STMT:
            case IR_PASS: case IR_KIND_COUNT:
                ok = false;
                break;
            }
        if (!ok) w->fn->fresh[n->u.var.var->id] = false;
    }
    /* a view bound to a name, returned in a tuple or passed to a call aliases its base */
    if (n->kind == IR_INDEX && is_array(n->type) && parent &&
        (parent->kind == IR_ASSIGN || parent->kind == IR_TUPLE || parent->kind == IR_CALL)) {
        const IrNode *base = strip_cast(n->u.index.base);
        if (base->kind == IR_VAR) w->fn->fresh[base->u.var.var->id] = false;
    }
    /* `return (a, b)`: the arrays of a tuple returned alias nothing the function goes on to use */
    if (n->kind == IR_TUPLE && parent && parent->kind == IR_RETURN) {
        for (int i = 0; i < n->u.tuple.n; i++)
            if (n->u.tuple.items[i]->kind != IR_VAR) escape_check(&n->u.tuple.items[i], &(Walk){w->fn, n});
        return;
    }
    Walk inner = {w->fn, n};
    ir_each_child(n, escape_check, &inner);
}

/* Whether a value is an array made where it is computed: an IR_ALLOC, or a node that fills one it was given
 * as out (a map, a reduction along an axis, an intrinsic making a new array: their value is out). */
static bool makes_fresh(const IrNode *v)
{
    v = strip_cast(v);
    const IrNode *out = NULL;
    switch (v->kind) {
    case IR_ALLOC: return true;
    case IR_MAP: out = v->u.map.out; break;
    case IR_IMAP: out = v->u.imap.out; break;
    case IR_REDUCE: out = v->u.reduce.out; break;
    case IR_SCAN: out = v->u.scan.out; break;
    case IR_CALL: out = v->u.call.ckind == IR_CALLEE_INTRINSIC ? v->u.call.out : NULL; break;
    case IR_CONST: case IR_VAR: case IR_NAMEREF: case IR_BINOP: case IR_UNOP: case IR_COMPARE: case IR_BOOLOP:
    case IR_IFEXP: case IR_INDEX: case IR_SLICE: case IR_ATTR: case IR_TUPLE: case IR_TUPLE_GET: case IR_LAMBDA:
    case IR_COMPREHENSION: case IR_CAST: case IR_MATH: case IR_ARRAY_DIM: case IR_BCAST_SHAPE: case IR_ASSIGN:
    case IR_AUGASSIGN: case IR_STORE: case IR_IF: case IR_WHILE: case IR_FOR_RANGE: case IR_FOR_ITER: case IR_BREAK:
    case IR_CONTINUE: case IR_RETURN: case IR_EXPR_STMT: case IR_PASS: case IR_KIND_COUNT:
        return false;
    }
    return out && strip_cast(out)->kind == IR_ALLOC;
}

static void count_reads(IrNode **p, void *env)
{
    Func *fn = env;
    if ((*p)->kind == IR_VAR) fn->reads[(*p)->u.var.var->id]++;
    ir_each_child(*p, count_reads, env);
}

static void func_facts(IrNode *s, void *env)
{
    Func *fn = env;
    ir_each_child(s, count_reads, fn);
    Walk w = {fn, s};
    ir_each_child(s, escape_check, &w);
    if (s->kind == IR_ASSIGN) {
        int id = s->u.assign.var->id;
        fn->assigns[id]++;
        if (fn->assigns[id] > 1 || !makes_fresh(s->u.assign.value)) fn->fresh[id] = false;
    } else if (s->kind == IR_FOR_RANGE) {
        fn->assigns[s->u.for_range.var->id] += 2;
    }
}

/* ---- one loop ---- */

typedef struct Written {
    IrVar *var;
    int pos; /* the index position holding the loop variable; -1 before the first store */
} Written;

typedef struct Loop {
    Func *fn;
    const IrNode *loop;
    const IrVar *i;
    const char *why;       /* the first reason found to stay sequential, or NULL */
    char buf[200];
    int *reads;            /* by var id: reads in the body */
    int *self_reads;       /* reads that are the v of a reduction's v = v op x */
    bool *assigned;        /* assigned in the body */
    bool *red_form;        /* every assignment in the body is v = v op x with one exact op */
    IrReduceOp *op;
    Written *writes;
    int nwrites;
} Loop;

static void no(Loop *l, const char *fmt, const char *name)
{
    if (l->why) return;
    snprintf(l->buf, sizeof l->buf, fmt, name);
    l->why = l->buf;
}

static Written *written(Loop *l, IrVar *v)
{
    for (int k = 0; k < l->nwrites; k++)
        if (l->writes[k].var == v) return &l->writes[k];
    return NULL;
}

/* The position of an index that holds the loop variable itself, or -1. */
static int own_position(const Loop *l, const IrNode *index, int want)
{
    for (int k = 0; k < index->u.index.n; k++)
        if ((want < 0 || k == want) && is_var(index->u.index.items[k], l->i)) return k;
    return -1;
}

/* A store: to an array made here, at an index holding the loop variable, with scalar or slice items. */
static void check_store(Loop *l, const IrNode *s)
{
    const IrNode *t = s->u.store.target;
    const IrNode *base = strip_cast(t->u.index.base);
    if (base->kind != IR_VAR) {
        no(l, "it stores into an array expression, not a variable%s", "");
        return;
    }
    IrVar *a = base->u.var.var;
    if (!l->fn->fresh[a->id]) {
        no(l, "it writes '%s', an array it did not allocate (it may share memory with another, and a parallel "
              "run that raises would leave writes of later iterations)", a->name);
        return;
    }
    for (int k = 0; k < t->u.index.n; k++) {
        const IrNode *it = t->u.index.items[k];
        if (it->kind != IR_SLICE && is_array(it->type)) {
            no(l, "it stores into '%s' through an index array", a->name);
            return;
        }
    }
    Written *w = written(l, a);
    if (!w) {
        w = &l->writes[l->nwrites++];
        *w = (Written){a, -1};
    }
    int pos = own_position(l, t, w->pos);
    if (pos < 0) {
        no(l, "its stores into '%s' do not all index it by the loop variable at one position", a->name);
        return;
    }
    w->pos = pos;
}

static const IrNode *find_exit(const IrBlock *b, bool in_inner_loop);

static void scan_node(IrNode **p, void *env);

/* v = v op x (prange.c's forms) on an integer or bool v: the op and the self-reads it makes; else false. Float
 * reductions stay sequential: a sum's bits depend on its order, and so do Python's max and min of a NaN or of
 * 0.0 and -0.0 (max(nan, 1.0) is nan, max(1.0, nan) is 1.0). */
static bool exact_reduction(const IrNode *st, IrReduceOp *op, int *self)
{
    const IrVar *v = st->u.assign.var;
    return v->type->kind == IR_TY_SCALAR && !ir_dtype_is_float(v->type->dtype) &&
           ir_reduction_form(st->u.assign.value, v, op, self);
}

static void scan_stmt(IrNode *st, void *env)
{
    Loop *l = env;
    ir_each_child(st, scan_node, l);
    switch (st->kind) {
    case IR_ASSIGN: {
        IrVar *v = st->u.assign.var;
        if (v == l->i) {
            no(l, "it assigns its loop variable '%s'", v->name);
            break;
        }
        IrReduceOp op = IR_RED_ADD;
        int self = 0;
        bool form = exact_reduction(st, &op, &self);
        l->red_form[v->id] = (l->assigned[v->id] ? l->red_form[v->id] && l->op[v->id] == op : true) && form;
        l->op[v->id] = op;
        l->self_reads[v->id] += self;
        l->assigned[v->id] = true;
        break;
    }
    case IR_FOR_RANGE:
        if (st->u.for_range.var == l->i) no(l, "an inner loop reuses its loop variable '%s'", l->i->name);
        l->assigned[st->u.for_range.var->id] = true;
        l->red_form[st->u.for_range.var->id] = false;
        break;
    case IR_STORE: check_store(l, st); break;
    case IR_AUGASSIGN: case IR_FOR_ITER: no(l, "untyped IR%s", ""); break;
    case IR_IF: case IR_WHILE: case IR_BREAK: case IR_CONTINUE: case IR_RETURN: case IR_EXPR_STMT: case IR_PASS:
        break;
    case IR_CONST: case IR_VAR: case IR_NAMEREF: case IR_BINOP: case IR_UNOP: case IR_COMPARE: case IR_BOOLOP:
    case IR_IFEXP: case IR_CALL: case IR_INDEX: case IR_SLICE: case IR_ATTR: case IR_TUPLE: case IR_TUPLE_GET:
    case IR_LAMBDA: case IR_COMPREHENSION: case IR_CAST: case IR_MATH: case IR_ARRAY_DIM: case IR_ALLOC:
    case IR_MAP: case IR_IMAP: case IR_REDUCE: case IR_SCAN: case IR_BCAST_SHAPE: case IR_KIND_COUNT:
        break;
    }
}

/* Expressions of the body: reads, reads of written arrays, and what rule 3 forbids. */
static void scan_node(IrNode **p, void *env)
{
    Loop *l = env;
    IrNode *n = *p;
    switch (n->kind) {
    case IR_VAR: l->reads[n->u.var.var->id]++; break;
    case IR_ALLOC: no(l, "it allocates an array in each iteration%s", ""); return;
    case IR_LAMBDA: case IR_COMPREHENSION: no(l, "it holds a function value%s", ""); return;
    case IR_CALL:
        if (n->u.call.ckind == IR_CALLEE_FUNC) no(l, "it calls the user function '%s'", n->u.call.name ? n->u.call.name : "?");
        if (n->u.call.out) no(l, "it writes a whole array in each iteration%s", "");
        break;
    case IR_MAP: if (n->u.map.out) no(l, "it writes a whole array in each iteration%s", ""); break;
    case IR_IMAP: if (n->u.imap.out) no(l, "it writes a whole array in each iteration%s", ""); break;
    case IR_REDUCE: if (n->u.reduce.out) no(l, "it writes a whole array in each iteration%s", ""); break;
    case IR_SCAN: if (n->u.scan.out) no(l, "it writes a whole array in each iteration%s", ""); break;
    case IR_CONST: case IR_NAMEREF: case IR_BINOP: case IR_UNOP: case IR_COMPARE: case IR_BOOLOP: case IR_IFEXP:
    case IR_INDEX: case IR_SLICE: case IR_ATTR: case IR_TUPLE: case IR_TUPLE_GET:
    case IR_CAST: case IR_MATH: case IR_ARRAY_DIM: case IR_BCAST_SHAPE: case IR_ASSIGN:
    case IR_AUGASSIGN: case IR_STORE: case IR_IF: case IR_WHILE: case IR_FOR_RANGE: case IR_FOR_ITER: case IR_BREAK:
    case IR_CONTINUE: case IR_RETURN: case IR_EXPR_STMT: case IR_PASS: case IR_KIND_COUNT:
        break;
    }
    /* whatever else may write memory that existed before (effects.c: an intrinsic writing its argument, an out
     * that is not fresh) is a write this pass cannot place */
    if ((ir_node_effects(n) & IR_FX_WRITE) && n->kind != IR_STORE)
        no(l, "it writes memory other than by storing elements%s", "");
    ir_each_child(n, scan_node, l);
}

/* Reads of each written array: only through an index holding the loop variable at its store position. */
static void check_reads(IrNode **p, void *env)
{
    Loop *l = env;
    IrNode *n = *p;
    if (n->kind == IR_INDEX) {
        const IrNode *base = strip_cast(n->u.index.base);
        Written *w = base->kind == IR_VAR ? written(l, base->u.var.var) : NULL;
        if (w) {
            if (own_position(l, n, w->pos) != w->pos)
                no(l, "it reads '%s' at an element another iteration may write", w->var->name);
            for (int k = 0; k < n->u.index.n; k++) check_reads(&n->u.index.items[k], env);
            return;
        }
    }
    if (n->kind == IR_VAR && written(l, n->u.var.var))
        no(l, "it uses all of '%s', which its iterations write", n->u.var.var->name);
    ir_each_child(n, check_reads, env);
}

static void check_reads_stmt(IrNode *st, void *env)
{
    if (st->kind == IR_STORE) {
        /* the target's own index is the store's, checked already; its items and the value are reads */
        IrNode *t = st->u.store.target;
        for (int k = 0; k < t->u.index.n; k++) check_reads(&t->u.index.items[k], env);
        check_reads(&st->u.store.value, env);
        return;
    }
    ir_each_child(st, check_reads, env);
}

/* ---- rule 4: private scalars are assigned before they are read, along every path of an iteration ---- */

typedef struct Defined {
    Loop *l;
    bool *set;       /* by var id: assigned on every path so far in this iteration */
} Defined;

static bool carried(const Loop *l, int id)
{
    return l->assigned[id] && !l->red_form[id];
}

static void read_check(IrNode **p, void *env)
{
    Defined *d = env;
    IrNode *n = *p;
    if (n->kind == IR_VAR) {
        int id = n->u.var.var->id;
        if (carried(d->l, id) && !d->set[id])
            no(d->l, "'%s' carries a value from one iteration to the next", n->u.var.var->name);
    }
    ir_each_child(n, read_check, env);
}

static void defined_block(Defined *d, const IrBlock *b);

static void defined_stmt(Defined *d, const IrNode *s)
{
    Loop *l = d->l;
    int nv = l->fn->f->nvars;
    switch (s->kind) {
    case IR_ASSIGN:
        ir_each_child((IrNode *)s, read_check, d);
        d->set[s->u.assign.var->id] = true;
        return;
    case IR_IF: {
        ir_each_child((IrNode *)s, read_check, d);
        bool *before = rt_arena_alloc(l->fn->f->arena, (size_t)nv + 1);
        memcpy(before, d->set, (size_t)nv);
        defined_block(d, &s->u.if_.then);
        bool *then = rt_arena_alloc(l->fn->f->arena, (size_t)nv + 1);
        memcpy(then, d->set, (size_t)nv);
        memcpy(d->set, before, (size_t)nv);
        defined_block(d, &s->u.if_.orelse);
        for (int v = 0; v < nv; v++) d->set[v] = d->set[v] && then[v];
        return;
    }
    case IR_FOR_RANGE: case IR_WHILE: {
        /* the body may run no time: what it assigns is not assigned after it; inside, it is read after the
         * assignments of its own earlier trips, which are this iteration's */
        ir_each_child((IrNode *)s, read_check, d);
        bool *before = rt_arena_alloc(l->fn->f->arena, (size_t)nv + 1);
        memcpy(before, d->set, (size_t)nv);
        if (s->kind == IR_FOR_RANGE) d->set[s->u.for_range.var->id] = true;
        defined_block(d, s->kind == IR_FOR_RANGE ? &s->u.for_range.body : &s->u.while_.body);
        memcpy(d->set, before, (size_t)nv);
        return;
    }
    case IR_STORE: case IR_EXPR_STMT: case IR_RETURN:
        ir_each_child((IrNode *)s, read_check, d);
        return;
    case IR_BREAK: case IR_CONTINUE: case IR_PASS:
        return;
    case IR_AUGASSIGN: case IR_FOR_ITER:
    case IR_CONST: case IR_VAR: case IR_NAMEREF: case IR_BINOP: case IR_UNOP: case IR_COMPARE: case IR_BOOLOP:
    case IR_IFEXP: case IR_CALL: case IR_INDEX: case IR_SLICE: case IR_ATTR: case IR_TUPLE: case IR_TUPLE_GET:
    case IR_LAMBDA: case IR_COMPREHENSION: case IR_CAST: case IR_MATH: case IR_ARRAY_DIM: case IR_ALLOC:
    case IR_MAP: case IR_IMAP: case IR_REDUCE: case IR_SCAN: case IR_BCAST_SHAPE: case IR_KIND_COUNT:
        ir_each_child((IrNode *)s, read_check, d);
        return;
    }
}

static void defined_block(Defined *d, const IrBlock *b)
{
    for (int i = 0; i < b->n && !d->l->why; i++) defined_stmt(d, b->stmts[i]);
}

/* ---- the loop's verdict ---- */

static const IrNode *find_exit(const IrBlock *b, bool in_inner_loop)
{
    for (int i = 0; i < b->n; i++) {
        const IrNode *s = b->stmts[i], *e = NULL;
        switch (s->kind) {
        case IR_RETURN: return s;
        case IR_BREAK: if (!in_inner_loop) return s; break;
        case IR_IF:
            if (!(e = find_exit(&s->u.if_.then, in_inner_loop))) e = find_exit(&s->u.if_.orelse, in_inner_loop);
            break;
        case IR_WHILE: e = find_exit(&s->u.while_.body, true); break;
        case IR_FOR_RANGE: e = find_exit(&s->u.for_range.body, true); break;
        case IR_FOR_ITER: e = find_exit(&s->u.for_iter.body, true); break;
        case IR_ASSIGN: case IR_AUGASSIGN: case IR_STORE: case IR_CONTINUE: case IR_EXPR_STMT: case IR_PASS:
            break;
        case IR_CONST: case IR_VAR: case IR_NAMEREF: case IR_BINOP: case IR_UNOP: case IR_COMPARE: case IR_BOOLOP:
        case IR_IFEXP: case IR_CALL: case IR_INDEX: case IR_SLICE: case IR_ATTR: case IR_TUPLE: case IR_TUPLE_GET:
        case IR_LAMBDA: case IR_COMPREHENSION: case IR_CAST: case IR_MATH: case IR_ARRAY_DIM: case IR_ALLOC:
        case IR_MAP: case IR_IMAP: case IR_REDUCE: case IR_SCAN: case IR_BCAST_SHAPE: case IR_KIND_COUNT:
            break;
        }
        if (e) return e;
    }
    return NULL;
}

/* NULL when loop may run its iterations in parallel (rules 1 to 4), else why not (arena text). */
static const char *verdict(Func *fn, IrNode *loop)
{
    IrFunc *f = fn->f;
    int nv = f->nvars;
    Loop l = {.fn = fn, .loop = loop, .i = loop->u.for_range.var};
    const IrNode *lo = strip_cast(loop->u.for_range.start), *hi = strip_cast(loop->u.for_range.stop);
    const IrNode *st = strip_cast(loop->u.for_range.step);
    if (lo->kind == IR_CONST && hi->kind == IR_CONST && st->kind == IR_CONST && st->u.konst.i > 0 &&
        (hi->u.konst.i - lo->u.konst.i) / st->u.konst.i < MIN_TRIPS)
        return "it runs a few iterations, known when compiling: too few to share";
    const IrNode *exit = find_exit(&loop->u.for_range.body, false);
    if (exit) return exit->kind == IR_RETURN ? "it returns from inside the loop" : "it breaks out of the loop";
    l.reads = rt_arena_alloc(f->arena, sizeof(int) * (size_t)(nv + 1));
    l.self_reads = rt_arena_alloc(f->arena, sizeof(int) * (size_t)(nv + 1));
    l.assigned = rt_arena_alloc(f->arena, (size_t)nv + 1);
    l.red_form = rt_arena_alloc(f->arena, (size_t)nv + 1);
    l.op = rt_arena_alloc(f->arena, sizeof(IrReduceOp) * (size_t)(nv + 1));
    l.writes = rt_arena_alloc(f->arena, sizeof(Written) * (size_t)(nv + 1));
    for (int v = 0; v < nv; v++) {
        l.reads[v] = l.self_reads[v] = 0;
        l.assigned[v] = l.red_form[v] = false;
    }
    ir_each_stmt(&loop->u.for_range.body, scan_stmt, &l);
    if (!l.why) ir_each_stmt(&loop->u.for_range.body, check_reads_stmt, &l);
    /* reductions, private scalars, and what may leave the loop */
    for (int v = 0; v < nv && !l.why; v++) {
        if (!l.assigned[v]) continue;
        IrVar *var = f->vars[v];
        bool is_red = l.red_form[v] && l.reads[v] == l.self_reads[v] && var->type->kind == IR_TY_SCALAR;
        l.red_form[v] = is_red;
        if (!is_red && var->name[0] != '$' && fn->reads[v] > l.reads[v])
            no(&l, "'%s' is assigned in the loop and read after it (only exact reductions carry a value out)",
               var->name);
    }
    if (!l.why) {
        Defined d = {&l, rt_arena_alloc(f->arena, (size_t)nv + 1)};
        memset(d.set, 0, (size_t)nv + 1);
        d.set[l.i->id] = true;
        defined_block(&d, &loop->u.for_range.body);
    }
    if (!l.why && l.nwrites == 0) {
        bool any_red = false;
        for (int v = 0; v < nv; v++) any_red |= l.assigned[v] && l.red_form[v];
        if (!any_red) return "it writes no array and reduces no value";
    }
    return l.why ? rt_arena_strdup(f->arena, l.why) : NULL;
}

static void visit_block(Func *fn, IrBlock *b);

static void visit_stmt(Func *fn, IrNode *s)
{
    switch (s->kind) {
    case IR_FOR_RANGE:
        if (s->u.for_range.parallel) return; /* lk.prange: the user's; its body is a region */
        s->u.for_range.why_sequential = verdict(fn, s);
        if (!s->u.for_range.why_sequential) {
            s->u.for_range.parallel = true;
            s->u.for_range.auto_parallel = true;
            return;
        }
        visit_block(fn, &s->u.for_range.body);
        return;
    case IR_IF: visit_block(fn, &s->u.if_.then); visit_block(fn, &s->u.if_.orelse); return;
    case IR_WHILE: visit_block(fn, &s->u.while_.body); return;
    case IR_FOR_ITER: visit_block(fn, &s->u.for_iter.body); return;
    case IR_ASSIGN: case IR_AUGASSIGN: case IR_STORE: case IR_BREAK: case IR_CONTINUE: case IR_RETURN:
    case IR_EXPR_STMT: case IR_PASS:
    case IR_CONST: case IR_VAR: case IR_NAMEREF: case IR_BINOP: case IR_UNOP: case IR_COMPARE: case IR_BOOLOP:
    case IR_IFEXP: case IR_CALL: case IR_INDEX: case IR_SLICE: case IR_ATTR: case IR_TUPLE: case IR_TUPLE_GET:
    case IR_LAMBDA: case IR_COMPREHENSION: case IR_CAST: case IR_MATH: case IR_ARRAY_DIM: case IR_ALLOC:
    case IR_MAP: case IR_IMAP: case IR_REDUCE: case IR_SCAN: case IR_BCAST_SHAPE: case IR_KIND_COUNT:
        return;
    }
}

static void visit_block(Func *fn, IrBlock *b)
{
    for (int i = 0; i < b->n; i++) visit_stmt(fn, b->stmts[i]);
}

void ir_auto_parallel(IrFunc *f)
{
    int nv = f->nvars;
    Func fn = {f, rt_arena_alloc(f->arena, sizeof(int) * (size_t)(nv + 1)),
               rt_arena_alloc(f->arena, sizeof(int) * (size_t)(nv + 1)), rt_arena_alloc(f->arena, (size_t)nv + 1)};
    for (int v = 0; v < nv; v++) {
        fn.assigns[v] = fn.reads[v] = 0;
        fn.fresh[v] = is_array(f->vars[v]->type) && v >= f->nparams;
    }
    ir_each_stmt(&f->body, func_facts, &fn);
    visit_block(&fn, &f->body);
}

/* ---- the report inspect_parallel gives ---- */

typedef struct Report {
    char *text;
    size_t len, cap;
} Report;

static void report_line(Report *r, int line, const char *kind, const char *why)
{
    char buf[320];
    int n = snprintf(buf, sizeof buf, "%d\t%s\t%s\n", line, kind, why ? why : "");
    if (n < 0) return;
    if ((size_t)n >= sizeof buf) n = sizeof buf - 1;
    if (r->len + (size_t)n + 1 > r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 256;
        while (cap < r->len + (size_t)n + 1) cap *= 2;
        char *t = realloc(r->text, cap);
        if (!t) return;
        r->text = t;
        r->cap = cap;
    }
    memcpy(r->text + r->len, buf, (size_t)n);
    r->len += (size_t)n;
    r->text[r->len] = '\0';
}

static void report_block(Report *r, const IrBlock *b, bool in_region);

static void report_stmt(Report *r, const IrNode *s, bool in_region)
{
    IrBlock *blocks[2];
    if (s->kind == IR_FOR_RANGE && s->u.for_range.made) return; /* ir_reduce_nests': the user wrote array code */
    if (s->kind == IR_FOR_RANGE) {
        const char *kind = s->u.for_range.auto_parallel ? "parallel" : s->u.for_range.parallel ? "prange" : "sequential";
        const char *why = s->u.for_range.why_sequential;
        if (in_region && !s->u.for_range.parallel) why = "it is inside a parallel loop, whose iterations run it";
        if (!why && !s->u.for_range.parallel) why = "it is inside a parallel loop, whose iterations run it";
        report_line(r, s->pos.line, kind, s->u.for_range.parallel ? NULL : why);
        report_block(r, &s->u.for_range.body, in_region || s->u.for_range.parallel);
        return;
    }
    int nb = ir_stmt_blocks((IrNode *)s, blocks);
    for (int k = 0; k < nb; k++) report_block(r, blocks[k], in_region);
}

static void report_block(Report *r, const IrBlock *b, bool in_region)
{
    for (int i = 0; i < b->n; i++) report_stmt(r, b->stmts[i], in_region);
}

char *ir_parallel_report(const IrFunc *f)
{
    Report r = {0};
    report_block(&r, &f->body, false);
    if (!r.text) {
        r.text = malloc(1);
        if (r.text) r.text[0] = '\0';
    }
    return r.text;
}
