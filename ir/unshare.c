/* unshare.c: make the typed IR a tree. Where typespec cannot hoist a value it uses more than once into a
 * temporary (ts_reuse inside an arm of `x if c else y`, an operand after the first of and/or, a map's body), it
 * puts the same node in each place it is used, and the typed IR is a graph:
 *
 *     x = np.std(a, axis=0) if flag else z      the cast of a to float64 is read by the mean, by the count
 *                                               (its shape) and by the squared deviations
 *
 * Every pass after typing rewrites nodes in place (ir_explicit_alloc gives a map its `out` where it stands, fusion
 * substitutes into bodies), so a change meant for one use would reach the others: the map read by the count got
 * its allocation, and the same node inside the mean's reduction then read that array before it was made (an
 * InternalError at run time). So before any pass, each node reached again by another path is replaced there by a
 * deep copy (ir_copy). A shared node is a pure value by construction (typespec shares only where it would
 * otherwise have evaluated the expression again), and the backends evaluate an expression where it stands, so
 * the copies compute what the shared node did, as often as it did. */
#include <stdint.h>
#include <stdlib.h>
#include "ir.h"

typedef struct Seen {
    const IrNode **slots;   /* open addressing, NULL empty; cap a power of two */
    size_t cap, n;
    IrFunc *f;
} Seen;

static size_t slot_of(const IrNode *n, size_t cap)
{
    uintptr_t h = (uintptr_t)n;
    h ^= h >> 17;
    h *= (uintptr_t)0x9E3779B97F4A7C15u;
    return (size_t)(h >> 7) & (cap - 1);
}

/* Adds n; false if it was there already. */
static bool add(Seen *s, const IrNode *n)
{
    if (2 * (s->n + 1) > s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        const IrNode **slots = calloc(cap, sizeof *slots);
        if (!slots) rt_out_of_memory(cap * sizeof *slots);
        for (size_t i = 0; i < s->cap; i++)
            if (s->slots[i]) {
                size_t k = slot_of(s->slots[i], cap);
                while (slots[k]) k = (k + 1) & (cap - 1);
                slots[k] = s->slots[i];
            }
        free(s->slots);
        s->slots = slots;
        s->cap = cap;
    }
    size_t k = slot_of(n, s->cap);
    for (; s->slots[k]; k = (k + 1) & (s->cap - 1))
        if (s->slots[k] == n) return false;
    s->slots[k] = n;
    s->n++;
    return true;
}

static void visit(IrNode **slot, void *env)
{
    Seen *s = env;
    if (!add(s, *slot)) {
        *slot = ir_copy(s->f->arena, *slot, NULL); /* new nodes all through: nothing in it is reached elsewhere */
        return;
    }
    ir_each_child(*slot, visit, s);
}

static void visit_stmt(IrNode *stmt, void *env) { ir_each_child(stmt, visit, env); }

void ir_unshare(IrFunc *f)
{
    Seen s = {.f = f};
    ir_each_stmt(&f->body, visit_stmt, &s);
    free(s.slots);
}
