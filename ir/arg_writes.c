/* arg_writes.c: whether a function may write the memory of its array arguments. A backend whose code works on
 * copies of the arguments (the gpu's, on device copies of NumPy arrays) copies them back only then.
 *
 * A variable "may view an argument" when it is an array parameter (or a tuple holding one), or is assigned an
 * expression that may: a variable that may, a view of one (an index that keeps axes, transpose, reshape), an item
 * of a tuple that may, either arm of a conditional, or what a user function returns when given one (a callee may
 * return its argument). Computed to a fixed point over the function's assignments, flow-insensitively. The
 * function may write an argument when a store's target, or the `out` of a data-parallel node or intrinsic, may
 * view one, or when a user function is called with one (the callee may store into it). Conservative by
 * construction: a false answer means no argument's memory is written, whatever the path taken. */
#include <string.h>
#include "ir.h"

typedef struct Aliases {
    IrFunc *f;
    bool *views;  /* by var id */
    bool changed;
    bool writes;
} Aliases;

static bool may_view(const Aliases *al, const IrNode *n)
{
    if (!n || !n->type || (n->type->kind != IR_TY_ARRAY && n->type->kind != IR_TY_TUPLE)) return false;
    switch (n->kind) {
    case IR_VAR: return al->views[n->u.var.var->id];
    case IR_INDEX: return may_view(al, n->u.index.base);
    case IR_TUPLE_GET: return may_view(al, n->u.tuple_get.tuple);
    case IR_IFEXP: return may_view(al, n->u.ifexp.then) || may_view(al, n->u.ifexp.orelse);
    case IR_TUPLE:
        for (int i = 0; i < n->u.tuple.n; i++)
            if (may_view(al, n->u.tuple.items[i])) return true;
        return false;
    case IR_CALL:
        if (n->u.call.ckind == IR_CALLEE_INTRINSIC)
            return (n->u.call.intrinsic == IR_INTR_TRANSPOSE || n->u.call.intrinsic == IR_INTR_RESHAPE) &&
                   may_view(al, n->u.call.args[0]);
        for (int i = 0; i < n->u.call.nargs; i++)
            if (may_view(al, n->u.call.args[i])) return true;
        return false;
    default: return false; /* a new array (an allocation, a map's result...) or a scalar */
    }
}

static void note_writes_in(IrNode **slot, void *env);

/* The writes an expression makes through arrays that may view an argument, and the calls that may. */
static void note_expr(Aliases *al, IrNode *n)
{
    if (!n) return;
    switch (n->kind) {
    case IR_MAP: if (may_view(al, n->u.map.out)) al->writes = true; break;
    case IR_IMAP: if (may_view(al, n->u.imap.out)) al->writes = true; break;
    case IR_REDUCE: if (may_view(al, n->u.reduce.out)) al->writes = true; break;
    case IR_SCAN: if (may_view(al, n->u.scan.out)) al->writes = true; break;
    case IR_CALL:
        if (may_view(al, n->u.call.out)) al->writes = true;
        if (n->u.call.ckind == IR_CALLEE_FUNC)
            for (int i = 0; i < n->u.call.nargs; i++)
                if (may_view(al, n->u.call.args[i])) al->writes = true;
        break;
    default: break;
    }
    ir_each_child(n, note_writes_in, al);
}

static void note_writes_in(IrNode **slot, void *env)
{
    note_expr(env, *slot);
}

static void visit_stmt(IrNode *s, void *env)
{
    Aliases *al = env;
    if (s->kind == IR_ASSIGN && !al->views[s->u.assign.var->id] && may_view(al, s->u.assign.value)) {
        al->views[s->u.assign.var->id] = true;
        al->changed = true;
    }
    if (s->kind == IR_STORE && may_view(al, s->u.store.target->u.index.base)) al->writes = true;
    note_expr(al, s);
}

bool ir_may_write_args(IrFunc *f)
{
    Aliases al = {f, rt_arena_alloc(f->arena, sizeof(bool) * (size_t)(f->nvars + 1)), true, false};
    for (int i = 0; i < f->nparams; i++) {
        const IrType *t = f->params[i]->type;
        al.views[f->params[i]->id] = t && (t->kind == IR_TY_ARRAY || t->kind == IR_TY_TUPLE);
    }
    while (al.changed) {
        al.changed = false;
        al.writes = false;
        ir_each_stmt(&f->body, visit_stmt, &al);
    }
    return al.writes;
}
