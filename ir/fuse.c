/* fuse.c: map fusion. A map whose input is another map (an array expression nobody else can see: the tree
 * form gives every intermediate exactly one user) absorbs it: the inner map's inputs become the outer map's,
 * and the inner body replaces the parameter that stood for its result. `np.sqrt(a*a + b*b)` becomes one map
 * over a and b with no temporary array. A reduction over a map needs no rewriting: backends compute the map's
 * body inside the reduction's loop.
 *
 * Broadcasting stays right: broadcasting is associative, so the fused map's space (the broadcast of all leaf
 * inputs) is the outer map's space, and each leaf is indexed as it was. */
#include <string.h>
#include "ir.h"

#define MAX_FUSED_INPUTS 16

typedef struct Subst {
    IrVar *param;
    IrNode *body;
} Subst;

static void substitute(IrNode **p, void *env)
{
    Subst *s = env;
    if ((*p)->kind == IR_VAR && (*p)->u.var.var == s->param) {
        *p = s->body;
        return;
    }
    ir_each_child(*p, substitute, env);
}

static bool is_expr_map(const IrNode *n)
{
    return n->kind == IR_MAP && !n->u.map.out;
}

static void fuse_map(RtArena *a, IrNode *m)
{
    for (int i = 0; i < m->u.map.ninputs; i++) {
        IrNode *inner = m->u.map.inputs[i];
        if (!is_expr_map(inner)) continue;
        int n = m->u.map.ninputs - 1 + inner->u.map.ninputs;
        if (n > MAX_FUSED_INPUTS) continue;
        IrNode **inputs = ir_nodes(a, n);
        IrVar **params = rt_arena_alloc(a, sizeof(IrVar *) * (size_t)n);
        int k = 0;
        for (int j = 0; j < m->u.map.ninputs; j++) {
            if (j == i) {
                for (int q = 0; q < inner->u.map.ninputs; q++) {
                    inputs[k] = inner->u.map.inputs[q];
                    params[k++] = inner->u.map.params[q];
                }
            } else {
                inputs[k] = m->u.map.inputs[j];
                params[k++] = m->u.map.params[j];
            }
        }
        Subst s = {m->u.map.params[i], inner->u.map.body};
        substitute(&m->u.map.body, &s);
        m->u.map.inputs = inputs;
        m->u.map.params = params;
        m->u.map.ninputs = m->u.map.nparams = n;
        i += inner->u.map.ninputs - 1; /* the absorbed inputs are already fused */
    }
}

static void fuse_expr(IrNode **p, void *env)
{
    ir_each_child(*p, fuse_expr, env); /* inner maps first, so chains collapse bottom-up */
    if ((*p)->kind == IR_MAP) fuse_map(env, *p);
}

static void fuse_stmt(IrNode *s, void *env)
{
    ir_each_child(s, fuse_expr, env);
}

void ir_fuse(IrFunc *f)
{
    ir_each_stmt(&f->body, fuse_stmt, f->arena);
}
