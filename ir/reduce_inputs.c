/* reduce_inputs.c: every reduce or scan reads its elements through a map. An input that is not already a map
 * expression (an array variable, an index, a view) becomes the identity map over it,
 *
 *     reduce[add](a)   ->   reduce[add](map(lambda $t1: $t1, a))
 *
 * so that a backend lowers one shape: the map's loops, its body computing each element, and a sink that
 * accumulates (a map input is then fused: no array in between). Done here, before any backend runs, because
 * the identity map needs a new variable of the function: a backend never adds to the IR it lowers. */
#include "ir.h"

static IrNode *identity_map(IrFunc *f, IrNode *x)
{
    if (x->kind == IR_MAP && !x->u.map.out) return x;
    IrNode *m = ir_node(f->arena, IR_MAP, x->pos);
    m->type = x->type;
    m->u.map.ninputs = m->u.map.nparams = 1;
    m->u.map.inputs = ir_nodes(f->arena, 1);
    m->u.map.inputs[0] = x;
    m->u.map.params = rt_arena_alloc(f->arena, sizeof(IrVar *));
    m->u.map.params[0] = ir_func_temp(f, ir_type_scalar(x->type->dtype));
    m->u.map.body = ir_var_ref(f->arena, x->pos, m->u.map.params[0]);
    return m;
}

static void visit(IrNode **p, void *env)
{
    IrNode *n = *p;
    ir_each_child(n, visit, env);
    if (n->kind == IR_REDUCE) n->u.reduce.input = identity_map(env, n->u.reduce.input);
    if (n->kind == IR_SCAN) n->u.scan.input = identity_map(env, n->u.scan.input);
}

static void visit_stmt(IrNode *s, void *env)
{
    ir_each_child(s, visit, env);
}

void ir_reduce_inputs_as_maps(IrFunc *f)
{
    ir_each_stmt(&f->body, visit_stmt, f);
}
