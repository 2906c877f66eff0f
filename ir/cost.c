/* cost.c: the cost model of a parallel region's element, the same shape for every backend, the weights each
 * backend's own. A backend asks whether a region's work (elements x the cost of one) pays for a team of threads or
 * a kernel launch; what one operation costs is its business (the llvm backend: a math function with a vector
 * variant is cheap, a scalar libm call dear), what the element consists of is the IR's. The cost is a rough count
 * in the backend's units, never a promise: it only decides speed, never what a program computes. */
#include "ir.h"

typedef struct Count {
    const IrCostWeights *w;
    int64_t total;
} Count;

static void count_nodes(IrNode **p, void *env)
{
    Count *c = env;
    const IrNode *n = *p;
    int64_t w = c->w->op;
    switch (n->kind) {
    case IR_MATH: w = c->w->math[n->u.math.fn]; break;
    case IR_CALL: if (n->u.call.ckind == IR_CALLEE_FUNC) w = c->w->user_call; break;
    case IR_MAP: case IR_IMAP: case IR_REDUCE: case IR_SCAN: w = c->w->nested_data_parallel; break;
    default: break; /* every other node: one operation */
    }
    c->total += w;
    ir_each_child(*p, count_nodes, env);
}

/* Saturates, so deep nests cannot overflow. */
#define COST_CAP ((int64_t)1 << 40)

int64_t ir_cost(const IrNode *n, const IrCostWeights *w)
{
    Count c = {w, 0};
    IrNode *node = (IrNode *)n; /* the walk only reads */
    if (node) count_nodes(&node, &c);
    return c.total < 1 ? 1 : c.total < COST_CAP ? c.total : COST_CAP;
}

int64_t ir_block_cost(const IrBlock *b, const IrCostWeights *w)
{
    int64_t c = 0;
    for (int i = 0; i < b->n && c < COST_CAP; i++) {
        IrNode *s = b->stmts[i];
        if (s->kind == IR_IF && s->u.if_.versioned) { /* one of two copies of a loop runs: the loop as written */
            c += ir_block_cost(&s->u.if_.orelse, w);
            continue;
        }
        c += ir_cost(s, w);
        IrBlock *blocks[2];
        int nb = ir_stmt_blocks(s, blocks);
        int64_t trips = s->kind == IR_IF ? 1 : w->nested_trips; /* an if's arms run once, a loop's body often */
        for (int k = 0; k < nb; k++) c += trips * ir_block_cost(blocks[k], w);
    }
    return c < COST_CAP ? c : COST_CAP;
}
