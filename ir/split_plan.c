/* split_plan.c: whether a call of a function may run as pieces of its arguments' first axis (rows), and how the
 * pieces' results make the call's result. It never changes the IR. The shim asks once per signature, on the typed
 * IR after the passes, and runs a call whose data does not fit in device memory as pieces (pyshim/split_call.c).
 *
 * The invariant a plan states: for every split of [0, N) into consecutive pieces [r0, r1), calling the function
 * with each IR_SPLIT_ARG_ROWS argument replaced by its rows [r0, r1) (the same array otherwise: its other axes,
 * its strides) and every other argument as it is, then
 *  - concatenating each IR_SPLIT_CONCAT result along axis 0, in piece order,
 *  - combining each IR_SPLIT_COMBINE result (a scalar) with its op, in piece order (ir_reduce_combine's meaning),
 *  - taking any piece's value of each IR_SPLIT_SAME result,
 * gives the call's results (float sums and products to rounding, as a chunked reduction does), and the first
 * error a piece raises is the call's, provided every ROWS argument has N rows (the shim checks; it does not split
 * otherwise). N == 0 is never split.
 *
 * A plan exists only for straight-line code made of the forms whose meaning is row by row, which the whole
 * function must be (each refusal names its line, for the error a user sees when the data does not fit):
 *  - `$t = alloc(dims)` whose dims[0] is the number of rows and the other dims the same in every piece: a row
 *    array (a result made in pieces);
 *  - a map filling a row array (`out`), whose array inputs either have the row axis (the output's ndim: split
 *    arguments or earlier row arrays) or broadcast over it (fewer dims: read whole); its body reads only its own
 *    parameters and scalars that are the same in every piece (scalar arguments, constants, dims other than the
 *    rows);
 *  - a reduction or scan along an axis other than 0 into a row array, of such an input; a reduction of every
 *    element (a scalar) whose partials combine (add, mul, min, max, and, or, nanmin, nanmax; argmin and argmax
 *    of an argument itself, whose pieces' indices are offset by their first row and compared by the elements
 *    there), assigned to a variable that is only returned, or returned directly; one whose input has no row axis
 *    is the same in every piece; a one_pass tuple of such reductions (ir/sibling_reductions.c), each item
 *    then as a variable assigned it;
 *  - a matrix product whose left operand has the rows and whose right operand is read whole;
 *  - transposes of arguments read whole; scalar assignments the same in every piece;
 *  - one return, last, of row arrays, reductions and values the same in every piece (or a tuple of them).
 * Everything else refuses: a loop (it may carry state from one row to the next), an if, a store, a reduction
 * along axis 0 or whose value feeds other code (`a / a.max()`, `a.mean()`), a flattened scan, an index map (its
 * body may read any row), indexing or array dims read inside an element, a call that was not inlined, views of
 * arguments other than a transpose. An argument read both by rows and whole refuses too (a piece passes it one
 * way). The analysis is conservative: a refusal only means the call runs whole, or raises when it cannot. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ir.h"

typedef enum {
    VC_NONE,        /* not assigned yet */
    VC_UNIFORM,     /* a scalar the same in every piece */
    VC_ROWS,        /* the number of rows of the piece */
    VC_ROW_ARRAY,   /* an array the function made whose axis 0 is the piece's rows */
    VC_WHOLE_ARRAY, /* a view of an argument read whole */
    VC_PARTIAL,     /* a reduction over the rows: only returned, combined across pieces */
    VC_PARAM_ARRAY, /* an array argument: its kind in Planner.args */
} VarClass;

/* The items of a one_pass tuple of reductions (ir/sibling_reductions.c) assigned to a variable: each is what a
 * variable assigned that reduction would be. */
typedef struct Siblings {
    int n;
    VarClass cls[IR_MAX_TUPLE];
    IrReduceOp op[IR_MAX_TUPLE];
    int arg[IR_MAX_TUPLE];
} Siblings;

typedef struct Planner {
    const IrFunc *f;
    IrSplitPlan *plan;
    VarClass *cls;      /* by var id */
    IrReduceOp *op;     /* by var id, for VC_PARTIAL */
    int *arg;           /* by var id, for VC_PARTIAL: the compared argument of an argmin/argmax, else -1 */
    Siblings **sib;     /* by var id: a one_pass tuple's items, or NULL */
} Planner;

/* `$g[k]` of a variable assigned a one_pass tuple: its item's record, or NULL for any other tuple_get. */
static const Siblings *sibling_of(const Planner *P, const IrNode *e, int *k)
{
    const IrNode *t = e->u.tuple_get.tuple;
    if (t->kind != IR_VAR || !P->sib[t->u.var.var->id]) return NULL;
    *k = e->u.tuple_get.k;
    return P->sib[t->u.var.var->id];
}

static bool refuse(Planner *P, const IrNode *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool refuse(Planner *P, const IrNode *n, const char *fmt, ...)
{
    IrSplitPlan *p = P->plan;
    if (!p->ok) return false; /* the first reason stands */
    p->ok = false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->why, sizeof p->why, fmt, ap);
    va_end(ap);
    const char *file = n && n->pos.file ? n->pos.file : P->f->file;
    snprintf(p->file, sizeof p->file, "%s", file ? file : "");
    p->line = n && n->pos.line > 0 ? n->pos.line : P->f->line;
    return false;
}

static int ndim_of(const IrNode *n)
{
    return n->type && n->type->kind == IR_TY_ARRAY ? n->type->ndim : 0;
}

static bool is_array(const IrNode *n)
{
    return n->type && n->type->kind == IR_TY_ARRAY;
}

/* Argument `param` is read as `kind`; false (a refusal) when it was read the other way before. */
static bool mark(Planner *P, const IrNode *at, int param, IrSplitArgKind kind)
{
    IrSplitArgKind *k = &P->plan->args[param];
    if (*k == IR_SPLIT_ARG_NONE || *k == kind) {
        *k = kind;
        return true;
    }
    return refuse(P, at, "argument '%s' is read both row by row and whole", P->f->params[param]->name);
}

static int param_of(Planner *P, const IrVar *v)
{
    return P->cls[v->id] == VC_PARAM_ARRAY ? v->id : -1; /* params come first: vars[i]->id == i */
}

/* An array operand that must have the row axis (its axis 0 is the piece's rows). */
static bool use_rows(Planner *P, IrNode *e)
{
    if (e->kind != IR_VAR) return refuse(P, e, "an array operand that is not an argument or a whole result");
    int param = param_of(P, e->u.var.var);
    if (param >= 0) return mark(P, e, param, IR_SPLIT_ARG_ROWS);
    if (P->cls[e->u.var.var->id] == VC_ROW_ARRAY) return true;
    return refuse(P, e, "'%s' is read row by row but is not split", e->u.var.var->name);
}

/* An array operand read whole in every piece. */
static bool use_whole(Planner *P, IrNode *e)
{
    if (e->kind != IR_VAR) return refuse(P, e, "an array operand that is not an argument or a whole result");
    int param = param_of(P, e->u.var.var);
    if (param >= 0) return mark(P, e, param, IR_SPLIT_ARG_WHOLE);
    if (P->cls[e->u.var.var->id] == VC_WHOLE_ARRAY) return true;
    return refuse(P, e, "'%s' is read whole but is made row by row", e->u.var.var->name);
}

static VarClass scalar_class(Planner *P, IrNode *e);

static bool uniform(Planner *P, IrNode *e)
{
    VarClass c = scalar_class(P, e);
    if (c == VC_UNIFORM) return true;
    if (c == VC_ROWS) return refuse(P, e, "uses the number of rows, which differs in each piece");
    return false;
}

/* The dims of an array operand other than its rows are the same in every piece; its rows are VC_ROWS. */
static VarClass dim_class(Planner *P, IrNode *dim)
{
    IrNode *x = dim->u.array_dim.array;
    if (x->kind != IR_VAR) {
        refuse(P, dim, "the shape of an array expression");
        return VC_NONE;
    }
    VarClass c = P->cls[x->u.var.var->id];
    if (dim->u.array_dim.axis != 0 || c == VC_WHOLE_ARRAY) return VC_UNIFORM;
    if (c == VC_ROW_ARRAY) return VC_ROWS;
    if (c == VC_PARAM_ARRAY) {
        /* len(c) of an argument read whole is the same everywhere; of one not read yet it names the rows */
        if (P->plan->args[x->u.var.var->id] == IR_SPLIT_ARG_WHOLE) return VC_UNIFORM;
        return mark(P, dim, x->u.var.var->id, IR_SPLIT_ARG_ROWS) ? VC_ROWS : VC_NONE;
    }
    refuse(P, dim, "the shape of '%s'", x->u.var.var->name);
    return VC_NONE;
}

/* bcast_shape[axis](args) of an nd-dimensional broadcast: the rows when axis is 0 and some array argument has
 * all nd dims (those are read by rows), else the same in every piece. */
static VarClass bcast_class(Planner *P, IrNode *n)
{
    int nd = n->u.bcast_shape.ndim, axis = n->u.bcast_shape.axis;
    bool rows = false;
    for (int i = 0; i < n->u.bcast_shape.n; i++) {
        IrNode *arg = n->u.bcast_shape.args[i];
        if (!is_array(arg)) {
            if (!uniform(P, arg)) return VC_NONE;
            continue;
        }
        if (arg->kind != IR_VAR) {
            refuse(P, arg, "the shape of an array expression");
            return VC_NONE;
        }
        if (axis == 0 && ndim_of(arg) == nd) {
            if (!use_rows(P, arg)) return VC_NONE;
            rows = true;
        }
    }
    return rows ? VC_ROWS : VC_UNIFORM;
}

/* A data-parallel node's name in a message. */
static const char *what(IrKind k)
{
    return k == IR_REDUCE ? "reduction" : k == IR_SCAN ? "running scan" : k == IR_IMAP ? "index map" : "map";
}

static bool is_zero(const IrNode *n)
{
    return n->kind == IR_CONST && n->type && n->type->kind == IR_TY_SCALAR && ir_dtype_is_int(n->type->dtype) &&
           n->u.konst.i == 0;
}

/* The class of a scalar expression: VC_UNIFORM, VC_ROWS, or VC_NONE after a refusal. */
static VarClass scalar_class(Planner *P, IrNode *e)
{
    switch (e->kind) {
    case IR_CONST: return VC_UNIFORM;
    case IR_VAR: {
        VarClass c = P->cls[e->u.var.var->id];
        if (c == VC_UNIFORM || c == VC_ROWS) return c;
        if (c == VC_PARTIAL && e->u.var.var->name[0] == '$')
            refuse(P, e, "uses the value of a reduction over all rows, which no piece has");
        else if (c == VC_PARTIAL)
            refuse(P, e, "uses '%s', a reduction over all rows, which no piece has", e->u.var.var->name);
        else refuse(P, e, "reads '%s' here", e->u.var.var->name);
        return VC_NONE;
    }
    case IR_ARRAY_DIM: return dim_class(P, e);
    case IR_BCAST_SHAPE: return bcast_class(P, e);
    case IR_IFEXP: {
        if (!uniform(P, e->u.ifexp.cond)) return VC_NONE;
        VarClass t = scalar_class(P, e->u.ifexp.then);
        if (t == VC_NONE) return VC_NONE;
        VarClass o = scalar_class(P, e->u.ifexp.orelse);
        if (o == VC_NONE) return VC_NONE;
        if (t == o) return t;
        /* a matrix product's rows: `m if k == k2 else 0` (0 rows where its shape check raises) */
        if (t == VC_ROWS && is_zero(e->u.ifexp.orelse)) return VC_ROWS;
        refuse(P, e, "a value that is the number of rows on one path only");
        return VC_NONE;
    }
    case IR_BINOP:
        return uniform(P, e->u.binop.lhs) && uniform(P, e->u.binop.rhs) ? VC_UNIFORM : VC_NONE;
    case IR_UNOP: return uniform(P, e->u.unop.operand) ? VC_UNIFORM : VC_NONE;
    case IR_CAST: return uniform(P, e->u.cast.value) ? VC_UNIFORM : VC_NONE;
    case IR_COMPARE:
        for (int i = 0; i <= e->u.compare.nops; i++)
            if (!uniform(P, e->u.compare.operands[i])) return VC_NONE;
        return VC_UNIFORM;
    case IR_BOOLOP:
        for (int i = 0; i < e->u.boolop.n; i++)
            if (!uniform(P, e->u.boolop.values[i])) return VC_NONE;
        return VC_UNIFORM;
    case IR_MATH:
        for (int i = 0; i < ir_math_arity(e->u.math.fn); i++)
            if (!uniform(P, e->u.math.args[i])) return VC_NONE;
        return VC_UNIFORM;
    case IR_TUPLE:
        for (int i = 0; i < e->u.tuple.n; i++)
            if (is_array(e->u.tuple.items[i]) || !uniform(P, e->u.tuple.items[i])) {
                refuse(P, e, "a tuple holding arrays");
                return VC_NONE;
            }
        return VC_UNIFORM;
    case IR_TUPLE_GET: {
        int k;
        const Siblings *sb = sibling_of(P, e, &k);
        if (sb && sb->cls[k] == VC_PARTIAL) {
            refuse(P, e, "uses the value of a reduction over all rows, which no piece has");
            return VC_NONE;
        }
        if (sb) return sb->cls[k];
        /* an element of a tuple of dims (a.shape)[0] */
        IrNode *t = e->u.tuple_get.tuple;
        if (t->kind == IR_TUPLE && e->u.tuple_get.k < t->u.tuple.n) return scalar_class(P, t->u.tuple.items[e->u.tuple_get.k]);
        return uniform(P, t) ? VC_UNIFORM : VC_NONE;
    }
    case IR_CALL:
        if (e->u.call.ckind == IR_CALLEE_INTRINSIC && e->u.call.intrinsic == IR_INTR_CORE_DIM)
            return uniform(P, e->u.call.args[0]) && uniform(P, e->u.call.args[1]) ? VC_UNIFORM : VC_NONE;
        refuse(P, e, "a call whose result the pieces cannot share");
        return VC_NONE;
    case IR_REDUCE: case IR_MAP: case IR_IMAP: case IR_SCAN:
        refuse(P, e, "a %s whose value feeds other code, so it needs every row at once", what(e->kind));
        return VC_NONE;
    case IR_INDEX:
        refuse(P, e, "indexing an array outside a map (it may read any row)");
        return VC_NONE;
    case IR_NAMEREF: case IR_SLICE: case IR_ATTR: case IR_LAMBDA: case IR_COMPREHENSION: case IR_ALLOC:
    case IR_ASSIGN: case IR_AUGASSIGN: case IR_STORE: case IR_IF: case IR_WHILE: case IR_FOR_RANGE:
    case IR_FOR_ITER: case IR_BREAK: case IR_CONTINUE: case IR_RETURN: case IR_EXPR_STMT: case IR_PASS:
    case IR_KIND_COUNT:
        refuse(P, e, "a %s the pieces cannot share", ir_kind_name(e->kind));
        return VC_NONE;
    }
    return VC_NONE;
}

/* The body of a map element: its own parameters and values the same in every piece, nothing that reads an
 * array (an element must depend on its own position only). */
typedef struct BodyCheck {
    Planner *P;
    const IrNode *map;
    bool ok;
} BodyCheck;

static void check_body(IrNode **slot, void *env)
{
    BodyCheck *b = env;
    IrNode *e = *slot;
    if (!b->ok) return;
    switch (e->kind) {
    case IR_VAR:
        for (int i = 0; i < b->map->u.map.nparams; i++)
            if (b->map->u.map.params[i] == e->u.var.var) return;
        b->ok = uniform(b->P, e);
        return;
    case IR_CONST: return;
    case IR_BINOP: case IR_UNOP: case IR_COMPARE: case IR_BOOLOP: case IR_IFEXP: case IR_CAST: case IR_MATH:
    case IR_TUPLE: case IR_TUPLE_GET:
        ir_each_child(e, check_body, b);
        return;
    case IR_CALL:
        if (e->u.call.ckind == IR_CALLEE_INTRINSIC &&
            (e->u.call.intrinsic == IR_INTR_RAISE || e->u.call.intrinsic == IR_INTR_CORE_DIM)) {
            ir_each_child(e, check_body, b);
            return;
        }
        b->ok = refuse(b->P, e, "a call inside an element");
        return;
    case IR_ARRAY_DIM: case IR_BCAST_SHAPE:
        b->ok = uniform(b->P, e);
        return;
    case IR_INDEX:
        b->ok = refuse(b->P, e, "indexing inside an element (it may read any row)");
        return;
    case IR_MAP: case IR_IMAP: case IR_REDUCE: case IR_SCAN:
        b->ok = refuse(b->P, e, "a %s inside an element", what(e->kind));
        return;
    case IR_NAMEREF: case IR_SLICE: case IR_ATTR: case IR_LAMBDA: case IR_COMPREHENSION: case IR_ALLOC:
    case IR_ASSIGN: case IR_AUGASSIGN: case IR_STORE: case IR_IF: case IR_WHILE: case IR_FOR_RANGE:
    case IR_FOR_ITER: case IR_BREAK: case IR_CONTINUE: case IR_RETURN: case IR_EXPR_STMT: case IR_PASS:
    case IR_KIND_COUNT:
        b->ok = refuse(b->P, e, "a %s inside an element", ir_kind_name(e->kind));
        return;
    }
}

/* A map's inputs and body: inputs with all nd dims are read by rows (*rows set when there is one), those with
 * fewer broadcast over the rows and are read whole, scalars are the same in every piece. */
static bool map_ok(Planner *P, IrNode *map, int nd, bool *rows)
{
    *rows = false;
    for (int i = 0; i < map->u.map.ninputs; i++) {
        IrNode *in = map->u.map.inputs[i];
        if (!is_array(in)) {
            if (!uniform(P, in)) return false;
        } else if (ndim_of(in) == nd) {
            if (!use_rows(P, in)) return false;
            *rows = true;
        } else if (!use_whole(P, in)) {
            return false;
        }
    }
    BodyCheck b = {P, map, true};
    check_body(&map->u.map.body, &b);
    return b.ok;
}

/* `out` of a row-wise statement: a row array of nd dims made by an alloc before. */
static bool out_ok(Planner *P, IrNode *out, int nd)
{
    if (out && out->kind == IR_VAR && P->cls[out->u.var.var->id] == VC_ROW_ARRAY && ndim_of(out) == nd) return true;
    return refuse(P, out, "writes into an array that is not a fresh array of rows");
}

/* argmin/argmax of an argument itself (the identity map over a parameter): the parameter, else -1. Their pieces
 * combine by comparing the elements at the pieces' indices, which only an argument's own elements allow. */
static int arg_compared(Planner *P, const IrNode *reduce)
{
    const IrNode *map = reduce->u.reduce.input;
    if (reduce->u.reduce.op != IR_RED_ARGMIN && reduce->u.reduce.op != IR_RED_ARGMAX) return -1;
    if (map->kind != IR_MAP || map->u.map.ninputs != 1 || map->u.map.nparams != 1) return -1;
    const IrNode *in = map->u.map.inputs[0], *body = map->u.map.body;
    if (in->kind != IR_VAR || body->kind != IR_VAR || body->u.var.var != map->u.map.params[0]) return -1;
    return param_of(P, in->u.var.var);
}

static bool partials_combine(IrReduceOp op)
{
    switch (op) {
    case IR_RED_ADD: case IR_RED_MUL: case IR_RED_MIN: case IR_RED_MAX: case IR_RED_AND: case IR_RED_OR:
    case IR_RED_NANMIN: case IR_RED_NANMAX:
        return true;
    case IR_RED_ARGMIN: case IR_RED_ARGMAX: /* when they compare an argument's elements: see arg_compared */
    case IR_RED_FUNC:
        return false;
    }
    return false;
}

/* A reduction of every element: VC_PARTIAL (combined across pieces), VC_UNIFORM (its input has no rows: the
 * same in every piece), or VC_NONE after a refusal. */
static VarClass scalar_reduce(Planner *P, IrNode *r)
{
    IrNode *in = r->u.reduce.input;
    if (r->u.reduce.axis >= 0 || r->u.reduce.out || in->kind != IR_MAP || in->u.map.out) {
        refuse(P, r, "a reduction of a form the pieces cannot share");
        return VC_NONE;
    }
    bool rows;
    if (!map_ok(P, in, ndim_of(in), &rows)) return VC_NONE;
    if (!rows) return VC_UNIFORM;
    bool arg_op = r->u.reduce.op == IR_RED_ARGMIN || r->u.reduce.op == IR_RED_ARGMAX;
    if (arg_op && arg_compared(P, r) < 0) {
        refuse(P, r, "an argmin or argmax of an expression (of an argument itself, its pieces combine)");
        return VC_NONE;
    }
    if (!arg_op && !partials_combine(r->u.reduce.op)) {
        refuse(P, r, "a reduction by a user's combine, whose pieces are not combined");
        return VC_NONE;
    }
    return VC_PARTIAL;
}

/* An axis reduction or scan (statement) into a row array: along an axis other than 0, of an input with rows. */
static bool axis_op_ok(Planner *P, IrNode *n, IrNode *in, int axis, IrNode *out, int out_nd)
{
    const char *what = n->kind == IR_SCAN ? "running scan" : "reduction";
    if (axis < 0 && n->kind == IR_SCAN)
        return refuse(P, n, "a running scan over the flattened array carries its value from one row to the next");
    if (axis == 0)
        return refuse(P, n, "a %s along axis 0 carries its value from one row to the next", what);
    if (in->kind != IR_MAP || in->u.map.out) return refuse(P, n, "a %s of a form the pieces cannot share", what);
    bool rows;
    if (!map_ok(P, in, ndim_of(in), &rows)) return false;
    if (!rows) return refuse(P, n, "a %s of arrays that are read whole", what);
    return out_ok(P, out, out_nd);
}

/* The statement that fills a new array, checked for what no piece can do before the array's size is: a
 * reduction along axis 0 or a flattened scan (whose sizes are not rows) gets its own reason. */
static bool fill_ok(Planner *P, const IrNode *s)
{
    if (!s || s->kind != IR_EXPR_STMT) return true;
    const IrNode *e = s->u.expr_stmt.value;
    if (e->kind == IR_REDUCE && e->u.reduce.axis == 0)
        return refuse(P, e, "a reduction along axis 0 carries its value from one row to the next");
    if (e->kind == IR_SCAN && e->u.scan.axis <= 0)
        return refuse(P, e, "a running scan %s carries its value from one row to the next",
                      e->u.scan.axis < 0 ? "over the flattened array" : "along axis 0");
    if (e->kind == IR_IMAP) return refuse(P, e, "an index map, whose elements may read any row");
    return true;
}

static bool assign_ok(Planner *P, IrNode *s, const IrNode *next)
{
    IrVar *v = s->u.assign.var;
    IrNode *val = s->u.assign.value;
    if (val->kind == IR_ALLOC) {
        if (!fill_ok(P, next)) return false;
        if (val->u.alloc.ndim < 1) return refuse(P, s, "a new array of no dims");
        VarClass d0 = scalar_class(P, val->u.alloc.dims[0]);
        if (d0 == VC_NONE) return false;
        if (d0 != VC_ROWS) return refuse(P, s, "a new array whose first dim is not the number of rows");
        for (int i = 1; i < val->u.alloc.ndim; i++)
            if (!uniform(P, val->u.alloc.dims[i])) return false;
        P->cls[v->id] = VC_ROW_ARRAY;
        P->plan->nrow_temps++;
        return true;
    }
    if (val->kind == IR_REDUCE) {
        VarClass c = scalar_reduce(P, val);
        if (c == VC_NONE) return false;
        P->cls[v->id] = c;
        P->op[v->id] = val->u.reduce.op;
        P->arg[v->id] = arg_compared(P, val);
        return true;
    }
    if (val->kind == IR_TUPLE && val->u.tuple.one_pass) {
        Siblings *sb = calloc(1, sizeof *sb);
        if (!sb) return refuse(P, s, "out of memory");
        P->sib[v->id] = sb;
        sb->n = val->u.tuple.n;
        for (int k = 0; k < sb->n; k++) {
            IrNode *r = val->u.tuple.items[k];
            if (r->kind != IR_REDUCE) return refuse(P, r, "a %s the pieces cannot share", ir_kind_name(r->kind));
            sb->cls[k] = scalar_reduce(P, r);
            if (sb->cls[k] == VC_NONE) return false;
            sb->op[k] = r->u.reduce.op;
            sb->arg[k] = arg_compared(P, r);
        }
        return true;
    }
    if (val->kind == IR_CALL && val->u.call.ckind == IR_CALLEE_INTRINSIC && val->u.call.intrinsic == IR_INTR_TRANSPOSE) {
        if (!use_whole(P, val->u.call.args[0])) return false;
        P->cls[v->id] = VC_WHOLE_ARRAY;
        return true;
    }
    if (is_array(val) || (val->type && val->type->kind == IR_TY_TUPLE))
        return refuse(P, s, "'%s' is an array or tuple value the pieces cannot share", v->name);
    VarClass c = scalar_class(P, val);
    if (c == VC_NONE) return false;
    P->cls[v->id] = c;
    return true;
}

static bool expr_stmt_ok(Planner *P, IrNode *s)
{
    IrNode *e = s->u.expr_stmt.value;
    switch (e->kind) {
    case IR_MAP: {
        bool rows;
        if (!e->u.map.out || !e->u.map.out_is_fresh) return refuse(P, s, "a map into an existing array");
        return out_ok(P, e->u.map.out, ndim_of(e)) && map_ok(P, e, ndim_of(e), &rows);
    }
    case IR_REDUCE:
        return axis_op_ok(P, e, e->u.reduce.input, e->u.reduce.axis, e->u.reduce.out, ndim_of(e->u.reduce.input) - 1);
    case IR_SCAN:
        return axis_op_ok(P, e, e->u.scan.input, e->u.scan.axis, e->u.scan.out, ndim_of(e->u.scan.input));
    case IR_CALL:
        if (e->u.call.ckind == IR_CALLEE_INTRINSIC && e->u.call.intrinsic == IR_INTR_MATMUL && e->u.call.out)
            return use_rows(P, e->u.call.args[0]) && use_whole(P, e->u.call.args[1]) && out_ok(P, e->u.call.out, 2);
        return refuse(P, s, "a call the pieces cannot share");
    case IR_BCAST_SHAPE: /* the shape check fuse_shared.c keeps where an intermediate was: each piece checks its own */
        return bcast_class(P, e) != VC_NONE;
    case IR_CONST: case IR_VAR: case IR_NAMEREF: case IR_BINOP: case IR_UNOP: case IR_COMPARE: case IR_BOOLOP:
    case IR_IFEXP: case IR_INDEX: case IR_SLICE: case IR_ATTR: case IR_TUPLE: case IR_TUPLE_GET: case IR_LAMBDA:
    case IR_COMPREHENSION: case IR_CAST: case IR_MATH: case IR_ARRAY_DIM: case IR_ALLOC: case IR_IMAP:
    case IR_ASSIGN: case IR_AUGASSIGN: case IR_STORE: case IR_IF: case IR_WHILE:
    case IR_FOR_RANGE: case IR_FOR_ITER: case IR_BREAK: case IR_CONTINUE: case IR_RETURN: case IR_EXPR_STMT:
    case IR_PASS: case IR_KIND_COUNT:
        if (e->kind == IR_IMAP) return refuse(P, s, "an index map, whose elements may read any row");
        return refuse(P, s, "a %s statement the pieces cannot share", ir_kind_name(e->kind));
    }
    return false;
}

static bool add_result(Planner *P, IrSplitResultKind kind, IrReduceOp op, const IrType *t, int arg)
{
    IrSplitPlan *p = P->plan;
    /* a complex scalar is two slots, which the driver's combines do not know yet */
    if (kind == IR_SPLIT_COMBINE && t->kind == IR_TY_SCALAR && ir_dtype_is_complex(t->dtype))
        return refuse(P, NULL, "a complex reduction to one value (not split yet)");
    IrSplitResult *r = realloc(p->results, sizeof *r * (size_t)(p->nresults + 1));
    if (!r) return refuse(P, NULL, "out of memory");
    p->results = r;
    r[p->nresults++] = (IrSplitResult){kind, op, t->dtype, t->kind == IR_TY_ARRAY ? t->ndim : 0, arg};
    return true;
}

/* One value returned: appended to the plan's results in the order of the return type's leaves. */
static bool result_ok(Planner *P, IrNode *v)
{
    if (v->kind == IR_TUPLE) {
        for (int i = 0; i < v->u.tuple.n; i++)
            if (!result_ok(P, v->u.tuple.items[i])) return false;
        return true;
    }
    if (v->type->kind == IR_TY_TUPLE || v->type->kind == IR_TY_NONE)
        return v->type->kind == IR_TY_NONE || refuse(P, v, "returns a tuple the pieces cannot share");
    int k;
    const Siblings *sb = v->kind == IR_TUPLE_GET ? sibling_of(P, v, &k) : NULL;
    if (sb && sb->cls[k] == VC_PARTIAL) return add_result(P, IR_SPLIT_COMBINE, sb->op[k], v->type, sb->arg[k]);
    if (v->kind == IR_REDUCE) {
        VarClass c = scalar_reduce(P, v);
        if (c == VC_NONE) return false;
        return add_result(P, c == VC_PARTIAL ? IR_SPLIT_COMBINE : IR_SPLIT_SAME, v->u.reduce.op, v->type,
                          arg_compared(P, v));
    }
    if (v->kind == IR_VAR) {
        VarClass c = P->cls[v->u.var.var->id];
        if (c == VC_ROW_ARRAY) return add_result(P, IR_SPLIT_CONCAT, IR_RED_ADD, v->type, -1);
        if (c == VC_PARTIAL)
            return add_result(P, IR_SPLIT_COMBINE, P->op[v->u.var.var->id], v->type, P->arg[v->u.var.var->id]);
        if (c == VC_PARAM_ARRAY || c == VC_WHOLE_ARRAY) return refuse(P, v, "returns an argument or a view of one");
    }
    if (is_array(v)) return refuse(P, v, "returns an array that is not made row by row");
    VarClass c = scalar_class(P, v);
    if (c == VC_NONE) return false;
    if (c == VC_ROWS) return refuse(P, v, "returns the number of rows, which differs in each piece");
    return add_result(P, IR_SPLIT_SAME, IR_RED_ADD, v->type, -1);
}

/* One statement of the function's body; next: the one after it (NULL for the last). A VC_PARTIAL variable read
 * anywhere but in the return is refused (its value exists only after every piece). */
static bool stmt_ok(Planner *P, IrNode *s, const IrNode *next)
{
    bool last = !next;
    switch (s->kind) {
    case IR_ASSIGN: return assign_ok(P, s, next);
    case IR_EXPR_STMT: return expr_stmt_ok(P, s);
    case IR_RETURN:
        if (!last) return refuse(P, s, "a return before the end");
        return !s->u.ret.value || result_ok(P, s->u.ret.value);
    case IR_PASS: return true;
    case IR_FOR_RANGE: case IR_WHILE:
        return refuse(P, s, "a loop, which may carry state from one row to the next (lorikeet splits maps, "
                            "reductions and matrix products)");
    case IR_IF:
        if (s->u.if_.versioned)
            return refuse(P, s, "a loop, which may carry state from one row to the next (lorikeet splits maps, "
                                "reductions and matrix products)");
        return refuse(P, s, "an if statement, which the pieces cannot share");
    case IR_STORE: return refuse(P, s, "a store into an array, which may write any row");
    case IR_BREAK: case IR_CONTINUE: case IR_AUGASSIGN: case IR_FOR_ITER:
    case IR_CONST: case IR_VAR: case IR_NAMEREF: case IR_BINOP: case IR_UNOP: case IR_COMPARE: case IR_BOOLOP:
    case IR_IFEXP: case IR_CALL: case IR_INDEX: case IR_SLICE: case IR_ATTR: case IR_TUPLE: case IR_TUPLE_GET:
    case IR_LAMBDA: case IR_COMPREHENSION: case IR_CAST: case IR_MATH: case IR_ARRAY_DIM: case IR_ALLOC: case IR_MAP:
    case IR_IMAP: case IR_REDUCE: case IR_SCAN: case IR_BCAST_SHAPE: case IR_KIND_COUNT:
        return refuse(P, s, "a %s statement the pieces cannot share", ir_kind_name(s->kind));
    }
    return false;
}

/* Before the checks: the role each argument's operand uses give it (by rows where a map, reduction or product
 * reads its rows, whole where it broadcasts or is the right operand of a product), so that `len(b)` in a shape
 * computed before those uses knows which b is. Only a first role is taken here, and nothing is refused: the
 * checks that follow mark every use again and refuse an argument used both ways. */
static void note_operand(Planner *P, const IrNode *e, IrSplitArgKind kind)
{
    if (e->kind != IR_VAR) return;
    int param = param_of(P, e->u.var.var);
    if (param >= 0 && P->plan->args[param] == IR_SPLIT_ARG_NONE) P->plan->args[param] = kind;
}

static void note_roles(IrNode **slot, void *env)
{
    Planner *P = env;
    IrNode *e = *slot;
    if (e->kind == IR_MAP)
        for (int i = 0; i < e->u.map.ninputs; i++) {
            IrNode *in = e->u.map.inputs[i];
            if (is_array(in))
                note_operand(P, in, ndim_of(in) == ndim_of(e) ? IR_SPLIT_ARG_ROWS : IR_SPLIT_ARG_WHOLE);
        }
    if (e->kind == IR_CALL && e->u.call.ckind == IR_CALLEE_INTRINSIC && e->u.call.intrinsic == IR_INTR_MATMUL) {
        note_operand(P, e->u.call.args[0], IR_SPLIT_ARG_ROWS);
        note_operand(P, e->u.call.args[1], IR_SPLIT_ARG_WHOLE);
    }
    if (e->kind == IR_CALL && e->u.call.ckind == IR_CALLEE_INTRINSIC && e->u.call.intrinsic == IR_INTR_TRANSPOSE)
        note_operand(P, e->u.call.args[0], IR_SPLIT_ARG_WHOLE);
    ir_each_child(e, note_roles, P);
}

/* np.random: each piece would draw again (or reseed from the OS), so a function that uses a Generator is never
 * split: the first node of such a type, or NULL. */
static void find_generator(IrNode **p, void *env)
{
    const IrNode **found = env;
    if (*found) return;
    if ((*p)->type && (*p)->type->kind == IR_TY_RNG) *found = *p;
    else ir_each_child(*p, find_generator, env);
}

static void find_generator_stmt(IrNode *s, void *env)
{
    ir_each_child(s, find_generator, env);
}

void ir_split_plan(const IrFunc *f, IrSplitPlan *plan)
{
    memset(plan, 0, sizeof *plan);
    plan->ok = true;
    plan->nargs = f->nparams;
    plan->args = calloc((size_t)(f->nparams ? f->nparams : 1), sizeof *plan->args);
    Planner P = {f, plan, calloc((size_t)f->nvars + 1, sizeof *P.cls), calloc((size_t)f->nvars + 1, sizeof *P.op),
                 calloc((size_t)f->nvars + 1, sizeof *P.arg), calloc((size_t)f->nvars + 1, sizeof *P.sib)};
    if (!plan->args || !P.cls || !P.op || !P.arg || !P.sib) {
        refuse(&P, NULL, "out of memory");
        goto done;
    }
    for (int i = 0; i < f->nparams; i++) {
        const IrType *t = f->params[i]->type;
        if (t->kind == IR_TY_ARRAY) P.cls[i] = VC_PARAM_ARRAY;
        else if (t->kind == IR_TY_SCALAR) P.cls[i] = VC_UNIFORM;
        else if (t->kind == IR_TY_TUPLE) {
            for (int k = 0; k < t->nelems; k++)
                if (t->elems[k]->kind != IR_TY_SCALAR) {
                    refuse(&P, NULL, "argument '%s' is a tuple holding arrays", f->params[i]->name);
                    goto done;
                }
            P.cls[i] = VC_UNIFORM;
        }
    }
    const IrNode *generator = NULL;
    ir_each_stmt((IrBlock *)&f->body, find_generator_stmt, &generator);
    bool takes_generator = false;
    for (int i = 0; i < f->nparams; i++) takes_generator |= f->params[i]->type->kind == IR_TY_RNG;
    if (generator || takes_generator) {
        refuse(&P, generator, "it uses a numpy Generator, whose draws are one stream that pieces would repeat");
        goto done;
    }
    for (int i = 0; i < f->body.n; i++) note_roles(&f->body.stmts[i], &P);
    for (int i = 0; i < f->body.n; i++)
        if (!stmt_ok(&P, f->body.stmts[i], i + 1 < f->body.n ? f->body.stmts[i + 1] : NULL)) goto done;
    if (f->body.n == 0 || f->body.stmts[f->body.n - 1]->kind != IR_RETURN) refuse(&P, NULL, "no return at the end");
    /* nothing of the call has rows: it is the same in every piece, and there is nothing to split */
    bool any_rows = false;
    for (int i = 0; i < f->nparams; i++) any_rows |= plan->args[i] == IR_SPLIT_ARG_ROWS;
    if (plan->ok && !any_rows) refuse(&P, NULL, "no argument is read row by row");
    for (int i = 0; i < f->nparams; i++)
        if (P.cls[i] == VC_PARAM_ARRAY && plan->args[i] == IR_SPLIT_ARG_NONE) plan->args[i] = IR_SPLIT_ARG_WHOLE;
done:
    for (int i = 0; P.sib && i <= f->nvars; i++) free(P.sib[i]);
    free(P.sib);
    free(P.cls);
    free(P.op);
    free(P.arg);
}

void ir_split_plan_free(IrSplitPlan *plan)
{
    free(plan->args);
    free(plan->results);
    plan->args = NULL;
    plan->results = NULL;
}
