/* parallel_regions.c: which nodes of a typed function are parallel regions, and what each uses.
 *
 * A region is a node whose elements or iterations may run at the same time: a map, an imap, a reduction or a
 * scan, an lk.prange loop, a matrix product. Only the outermost are regions. The code of one element (a map's
 * body, a reduction's fused input and combine, a prange loop's body) runs as sequential code on whichever
 * thread, or gpu thread, runs that element: a chunk never forks a team, a kernel never launches a kernel. The
 * operands a region takes from the code around it (a map's inputs and out, an imap's dims, a loop's bounds, a
 * product's arguments) are evaluated there before it starts, and may hold regions of their own.
 *
 * A region MAY run in parallel: whether it pays is the backend's call (the openmp backend runs small ones on one
 * thread, the cpu backend runs all of them so). What it may not do is decide differently which nodes are regions,
 * so that every backend splits a program the same way.
 *
 * Each region records its uses: the variables of the function that its per-element code reads or assigns (not
 * the parameters of the data-parallel nodes inside it, which are the element's own), in id order. They are what
 * an outlined chunk's environment or a kernel's parameters hold besides the operands.
 *
 * Regions are marked per function. A user function called from a region's element code keeps its own regions;
 * a backend runs them sequentially when it reaches them from inside a region (libgomp does not nest teams; a gpu
 * backend compiles such a callee as device code, its regions as plain loops).
 *
 * This pass only marks: it never changes what a program computes. */
#include <string.h>
#include "ir.h"

typedef struct Uses {
    IrFunc *f;
    bool *used;   /* by var id: referenced in the region's per-element code */
    bool *bound;  /* by var id: a parameter of a data-parallel node inside the region */
} Uses;

static void mark_expr(IrFunc *f, IrNode **p);

static void use_var(Uses *u, const IrVar *v)
{
    if (v) u->used[v->id] = true;
}

static void bind_vars(Uses *u, IrVar **vars, int n)
{
    for (int i = 0; i < n; i++)
        if (vars[i]) u->bound[vars[i]->id] = true;
}

static void bind_combine(Uses *u, const IrCombine *c)
{
    if (c->acc_param) u->bound[c->acc_param->id] = true;
    if (c->elem_param) u->bound[c->elem_param->id] = true;
}

static void collect_block(Uses *u, IrBlock *b);

/* Every variable n and its descendants (statement blocks included) read or assign. */
static void collect(IrNode **p, void *env)
{
    Uses *u = env;
    IrNode *n = *p;
    switch (n->kind) {
    case IR_VAR: use_var(u, n->u.var.var); break;
    case IR_ASSIGN: use_var(u, n->u.assign.var); break;
    case IR_AUGASSIGN: use_var(u, n->u.augassign.var); break;
    case IR_FOR_RANGE: use_var(u, n->u.for_range.var); break;
    case IR_FOR_ITER: use_var(u, n->u.for_iter.var); break;
    case IR_MAP: bind_vars(u, n->u.map.params, n->u.map.nparams); break;
    case IR_IMAP: bind_vars(u, n->u.imap.idx, n->u.imap.ndim); break;
    case IR_REDUCE: bind_combine(u, &n->u.reduce.combine); break;
    case IR_SCAN: bind_combine(u, &n->u.scan.combine); break;
    case IR_COMPREHENSION: bind_vars(u, &n->u.comprehension.target, 1); break;
    case IR_CONST: case IR_NAMEREF: case IR_BINOP: case IR_UNOP: case IR_COMPARE: case IR_BOOLOP: case IR_IFEXP:
    case IR_CALL: case IR_INDEX: case IR_SLICE: case IR_ATTR: case IR_TUPLE: case IR_TUPLE_GET: case IR_LAMBDA:
    case IR_CAST: case IR_MATH: case IR_ARRAY_DIM: case IR_ALLOC: case IR_BCAST_SHAPE: case IR_STORE: case IR_IF:
    case IR_WHILE: case IR_BREAK: case IR_CONTINUE: case IR_RETURN: case IR_EXPR_STMT: case IR_PASS:
    case IR_KIND_COUNT:
        break;
    }
    ir_each_child(n, collect, env);
    IrBlock *blocks[2];
    int nb = ir_stmt_blocks(n, blocks);
    for (int k = 0; k < nb; k++) collect_block(u, blocks[k]);
}

static void collect_block(Uses *u, IrBlock *b)
{
    for (int i = 0; i < b->n; i++) collect(&b->stmts[i], u);
}

/* The element-local variables of a data-parallel node: its parameters (a fused input's too). */
static void bind_own(Uses *u, IrNode *n)
{
    switch (n->kind) {
    case IR_MAP: bind_vars(u, n->u.map.params, n->u.map.nparams); return;
    case IR_IMAP: bind_vars(u, n->u.imap.idx, n->u.imap.ndim); return;
    case IR_REDUCE: bind_combine(u, &n->u.reduce.combine); bind_own(u, n->u.reduce.input); return;
    case IR_SCAN: bind_combine(u, &n->u.scan.combine); bind_own(u, n->u.scan.input); return;
    case IR_FOR_RANGE: use_var(u, n->u.for_range.var); return; /* each iteration assigns it */
    default: return; /* a matrix product, or a plain array input: nothing of its own */
    }
}

/* Makes n a region whose per-element code is parts[0..nparts) and body. */
static void make_region(IrFunc *f, IrNode *n, IrNode **parts, int nparts, IrBlock *body)
{
    RtArena *a = f->arena;
    size_t size = (size_t)(f->nvars ? f->nvars : 1) * sizeof(bool);
    Uses u = {f, rt_arena_alloc(a, size), rt_arena_alloc(a, size)};
    memset(u.used, 0, size);
    memset(u.bound, 0, size);
    bind_own(&u, n);
    for (int i = 0; i < nparts; i++)
        if (parts[i]) collect(&parts[i], &u);
    if (body) collect_block(&u, body);
    IrRegion *r = rt_arena_alloc(a, sizeof *r);
    r->nuses = 0;
    for (int id = 0; id < f->nvars; id++) r->nuses += u.used[id] && !u.bound[id];
    r->uses = rt_arena_alloc(a, (size_t)(r->nuses ? r->nuses : 1) * sizeof *r->uses);
    int k = 0;
    for (int id = 0; id < f->nvars; id++)
        if (u.used[id] && !u.bound[id]) r->uses[k++] = f->vars[id];
    n->region = r;
}

static void mark_all(IrFunc *f, IrNode **v, int n)
{
    for (int i = 0; i < n; i++)
        if (v[i]) mark_expr(f, &v[i]);
}

static void mark_child(IrNode **p, void *env)
{
    mark_expr(env, p);
}

/* A reduction's or scan's input: a map or imap is fused into its loop (its operands are evaluated before, its
 * body per element); anything else is an operand. The per-element part, or NULL. */
static IrNode *fused_input(IrFunc *f, IrNode *input)
{
    switch (input->kind) {
    case IR_MAP: mark_all(f, input->u.map.inputs, input->u.map.ninputs); return input->u.map.body;
    case IR_IMAP: mark_all(f, input->u.imap.dims, input->u.imap.ndim); return input->u.imap.body;
    default: mark_expr(f, &input); return NULL;
    }
}

/* n is evaluated by sequential code (outside every region): mark the regions it is and holds. */
static void mark_expr(IrFunc *f, IrNode **p)
{
    IrNode *n = *p;
    switch (n->kind) {
    case IR_MAP:
        mark_all(f, n->u.map.inputs, n->u.map.ninputs);
        if (n->u.map.out) mark_expr(f, &n->u.map.out);
        make_region(f, n, &n->u.map.body, 1, NULL);
        return;
    case IR_IMAP:
        mark_all(f, n->u.imap.dims, n->u.imap.ndim);
        if (n->u.imap.out) mark_expr(f, &n->u.imap.out);
        make_region(f, n, &n->u.imap.body, 1, NULL);
        return;
    case IR_REDUCE: {
        IrNode *parts[3] = {fused_input(f, n->u.reduce.input), n->u.reduce.combine.body, n->u.reduce.combine.init};
        if (n->u.reduce.out) mark_expr(f, &n->u.reduce.out);
        make_region(f, n, parts, 3, NULL);
        return;
    }
    case IR_SCAN: {
        IrNode *parts[3] = {fused_input(f, n->u.scan.input), n->u.scan.combine.body, n->u.scan.combine.init};
        make_region(f, n, parts, 3, NULL);
        return;
    }
    case IR_CALL:
        ir_each_child(n, mark_child, f);
        if (n->u.call.ckind == IR_CALLEE_INTRINSIC && n->u.call.intrinsic == IR_INTR_MATMUL)
            make_region(f, n, NULL, 0, NULL);
        return;
    case IR_CONST: case IR_VAR: case IR_NAMEREF: case IR_BINOP: case IR_UNOP: case IR_COMPARE: case IR_BOOLOP:
    case IR_IFEXP: case IR_INDEX: case IR_SLICE: case IR_ATTR: case IR_TUPLE: case IR_TUPLE_GET: case IR_LAMBDA:
    case IR_COMPREHENSION: case IR_CAST: case IR_MATH: case IR_ARRAY_DIM: case IR_ALLOC: case IR_BCAST_SHAPE:
    case IR_ASSIGN: case IR_AUGASSIGN: case IR_STORE: case IR_IF: case IR_WHILE: case IR_FOR_RANGE:
    case IR_FOR_ITER: case IR_BREAK: case IR_CONTINUE: case IR_RETURN: case IR_EXPR_STMT: case IR_PASS:
    case IR_KIND_COUNT:
        ir_each_child(n, mark_child, f);
        return;
    }
}

static void mark_block(IrFunc *f, IrBlock *b)
{
    for (int i = 0; i < b->n; i++) {
        IrNode *s = b->stmts[i];
        if (s->kind == IR_FOR_RANGE && s->u.for_range.parallel) {
            ir_each_child(s, mark_child, f); /* start, stop, step: before the loop */
            make_region(f, s, NULL, 0, &s->u.for_range.body);
            continue;
        }
        mark_expr(f, &b->stmts[i]); /* a statement's own expressions */
        IrBlock *blocks[2];
        int nb = ir_stmt_blocks(s, blocks);
        for (int k = 0; k < nb; k++) mark_block(f, blocks[k]);
    }
}

void ir_mark_regions(IrFunc *f)
{
    mark_block(f, &f->body);
}

IrRegion *ir_region_union(IrFunc *f, const IrRegion *const *rs, int n)
{
    size_t size = (size_t)(f->nvars ? f->nvars : 1) * sizeof(bool);
    bool *used = rt_arena_alloc(f->arena, size);
    memset(used, 0, size);
    for (int i = 0; i < n; i++)
        for (int k = 0; rs[i] && k < rs[i]->nuses; k++) used[rs[i]->uses[k]->id] = true;
    IrRegion *r = rt_arena_alloc(f->arena, sizeof *r);
    r->nuses = 0;
    for (int id = 0; id < f->nvars; id++) r->nuses += used[id];
    r->uses = rt_arena_alloc(f->arena, (size_t)(r->nuses ? r->nuses : 1) * sizeof *r->uses);
    int k = 0;
    for (int id = 0; id < f->nvars; id++)
        if (used[id]) r->uses[k++] = f->vars[id];
    return r;
}
