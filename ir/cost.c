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
        if (s->kind == IR_IF && s->u.if_.versioned) { /* the arms compute the same: the code as written */
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

/* ---------------- recompute or store: the rule for an intermediate with several users ----------------
 * An array a map makes and k loops (maps or reductions over the same space) read (d = a - b; np.sum(d * d) and
 * np.max(d)) can be stored once and read back k times, or recomputed inside each of the k loops (fuse_shared.c).
 * Per element, storing costs a store (with the cache line it fills: 16 bytes of memory traffic for a float64 once
 * the array outgrows the cache), a load in each user and the array's allocation; recomputing costs the map's
 * operations k - 1 more times. A vectorised add or multiply costs about 1/8 of a cycle an element (4 lanes, 2 a
 * cycle); a store and a load from memory about 2 cycles (24 bytes at the 30-40 GB/s of one core here): 16
 * operations. So a map is recomputed when (k - 1) x its cost <= IR_RECOMPUTE_BUDGET (16), counting in its bodies:
 *  - an operation (binop, unop, compare, cast, select, ...) 1; variables and constants 0;
 *  - a division or remainder 8 and sqrt 16 (a divider's throughput: 4 doubles in 4-5 cycles, sqrt in 8-12);
 *  - the math functions a few instructions compute (fabs, floor, ceil, trunc, rint, copysign, fmin, fmax, isnan,
 *    isinf, isfinite) 1;
 *  - every other math function (exp, log, pow, sin, erf, ...): never, a libm-class call costs more than a store
 *    and a load;
 *  - a read of array memory in a body (a gather), a call, a nested map or reduction: never, it may cost more than
 *    the load it saves.
 * k counts loops, not reads: reads of the intermediate that fusion puts in one loop cost one computation (the
 * copies are equal expressions of the same inputs, which the backends' code generators compute once).
 * The rule is the same for every backend: it decides speed only, never what a program computes. */
#define RECOMPUTE_NEVER COST_CAP

static int64_t recompute_math_cost(IrMathFn fn)
{
    switch (fn) {
    case IR_MATH_SQRT: return 16;
    case IR_MATH_FABS: case IR_MATH_FLOOR: case IR_MATH_CEIL: case IR_MATH_TRUNC: case IR_MATH_RINT:
    case IR_MATH_COPYSIGN: case IR_MATH_FMIN: case IR_MATH_FMAX: case IR_MATH_ISNAN: case IR_MATH_ISINF:
    case IR_MATH_ISFINITE:
        return 1;
    case IR_MATH_EXP: case IR_MATH_EXP2: case IR_MATH_EXPM1: case IR_MATH_LOG: case IR_MATH_LOG2: case IR_MATH_LOG10:
    case IR_MATH_LOG1P: case IR_MATH_SIN: case IR_MATH_COS: case IR_MATH_TAN: case IR_MATH_ASIN: case IR_MATH_ACOS:
    case IR_MATH_ATAN: case IR_MATH_SINH: case IR_MATH_COSH: case IR_MATH_TANH: case IR_MATH_ASINH: case IR_MATH_ACOSH:
    case IR_MATH_ATANH: case IR_MATH_CBRT: case IR_MATH_ERF: case IR_MATH_ERFC: case IR_MATH_GAMMA: case IR_MATH_LGAMMA:
    case IR_MATH_ATAN2: case IR_MATH_HYPOT: case IR_MATH_POW: case IR_MATH_FMOD: case IR_MATH_COUNT:
        return RECOMPUTE_NEVER;
    }
    return RECOMPUTE_NEVER;
}

static void count_recompute(IrNode **p, void *env)
{
    int64_t *total = env;
    const IrNode *n = *p;
    int64_t w = 1;
    switch (n->kind) {
    case IR_MATH: w = recompute_math_cost(n->u.math.fn); break;
    case IR_INDEX: case IR_CALL: case IR_MAP: case IR_IMAP: case IR_REDUCE: case IR_SCAN: w = RECOMPUTE_NEVER; break;
    case IR_VAR: case IR_CONST: w = 0; break;
    case IR_BINOP:
        w = n->u.binop.op == IR_OP_DIV || n->u.binop.op == IR_OP_FLOORDIV || n->u.binop.op == IR_OP_MOD ? 8 : 1;
        break;
    default: break; /* every other node: one operation */
    }
    *total = *total + w < COST_CAP ? *total + w : COST_CAP;
    if (*total < COST_CAP) ir_each_child(*p, count_recompute, env);
}

/* The bodies of map and of the maps among its inputs, recursively (fusion makes one body of them); the other
 * inputs are the leaves the caller judges. */
int64_t ir_recompute_cost(const IrNode *map)
{
    int64_t total = 0;
    IrNode *body = map->u.map.body; /* the walk only reads */
    count_recompute(&body, &total);
    for (int i = 0; i < map->u.map.ninputs && total < COST_CAP; i++) {
        const IrNode *in = map->u.map.inputs[i];
        if (in->kind == IR_MAP && !in->u.map.out) total += ir_recompute_cost(in);
    }
    return total < COST_CAP ? total : COST_CAP;
}

bool ir_recompute_pays(int64_t cost, int users)
{
    return cost < COST_CAP && (users - 1) * cost <= IR_RECOMPUTE_BUDGET;
}
