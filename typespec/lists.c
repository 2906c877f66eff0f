/* lists.c: lists where an array is meant.
 *
 * lorikeet has no list type. A list display or a list comprehension is a NumPy array where it is a value, as in
 * Parakeet: [x, y] of numbers is 1-D (the numbers' dtype as np.array gives it), [a, b] of arrays of one shape is
 * stacked along a new first axis, [[1, 2], [3, 4]] is 2-D, [f(x) for x in xs] a map or index map (rows, when
 * f gives arrays: operators.c). Where a library function takes a sequence (np.zeros([n, m]), np.concatenate([a,
 * b]), min([x, y]), sum([...]), a.reshape([2, 3])) a list display stays a tuple of its items. What a list does and
 * an array cannot (growing: [] then .append) is a CompileError naming the line; never a tuple returned where
 * Python returns a list. A generator expression is a value only as the argument of a reduction (sum, min, max,
 * any, all), which reduces it without making the array. */
#include <string.h>
#include "ts_internal.h"

/* A tuple of numbers (item i chosen by a chain of comparisons: tuples are short) as a new 1-D array of t. */
static IrNode *numbers_array(Ts *ts, IrPos pos, IrNode *x, IrType *t)
{
    int k = x->type->nelems;
    x = ts_reuse(ts, x);
    IrNode *len = ts_i64(ts, pos, k);
    IrNode *m = ts_make_imap(ts, pos, &len, 1);
    ts->cond_depth++;
    IrNode *body = NULL;
    for (int i = k - 1; i >= 0; i--) {
        IrNode *v = ts_cast(ts, ir_tuple_get(ts->a, pos, x, i), t);
        if (!body) {
            body = v;
            continue;
        }
        IrNode *f = ir_node(ts->a, IR_IFEXP, pos);
        f->type = t;
        f->u.ifexp.cond = ts_compare(ts, pos, IR_CMP_EQ, ts_var(ts, pos, m->u.imap.idx[0]), ts_i64(ts, pos, i));
        f->u.ifexp.then = v;
        f->u.ifexp.orelse = body;
        body = f;
    }
    ts->cond_depth--;
    if (!body) return NULL;
    m->u.imap.body = body;
    m->type = ir_type_array(t->dtype, 1, IR_LAYOUT_C);
    return m;
}

IrNode *ts_sequence_array(Ts *ts, IrPos pos, IrNode *x, const IrDtype *dtype)
{
    if (!x) return NULL;
    if (x->type->kind != IR_TY_TUPLE) TS_ERR(ts, pos, "internal error: a sequence that is not a tuple");
    int k = x->type->nelems;
    if (k == 0)
        TS_ERR(ts, pos, "[] is an empty list, and lorikeet makes a list an array, which cannot grow (no append): make "
                        "the array with np.empty(n) or np.zeros(n) and fill it");
    int nscalar = 0, narray = 0;
    IrType *t = NULL;
    for (int i = 0; i < k; i++) {
        IrType *et = x->type->elems[i];
        /* NumPy's array construction takes a Python number as its default dtype (int64, float64, bool), not as a
         * weak scalar: np.array([1, np.int8(3)]) is int64 */
        if (et->kind == IR_TY_SCALAR) nscalar++, t = t ? ts_promote(t, ir_type_strong(et)) : ir_type_strong(et);
        else if (et->kind == IR_TY_ARRAY || et->kind == IR_TY_TUPLE) narray++;
        else TS_ERR(ts, pos, "a list of %s is not an array (lorikeet makes a list an array: of numbers, or of arrays of one shape)", ts_type_name(et));
    }
    if (nscalar && narray)
        TS_ERR(ts, pos, "a list that mixes numbers and sequences is not an array (lorikeet makes a list an array)");
    if (nscalar) return numbers_array(ts, pos, x, dtype ? ir_type_scalar(*dtype) : t);
    /* rows: each an array (a nested list or tuple made one first), stacked along a new first axis */
    x = ts_reuse(ts, x);
    IrNode **rows = ir_nodes(ts->a, k);
    IrType **types = rt_arena_alloc(ts->a, sizeof(IrType *) * (size_t)k);
    for (int i = 0; i < k; i++) {
        IrNode *r = ir_tuple_get(ts->a, pos, x, i);
        if (r->type->kind == IR_TY_TUPLE) r = ts_sequence_array(ts, pos, r, NULL);
        if (!r) return NULL;
        if (i && r->type->ndim != rows[0]->type->ndim)
            TS_ERR(ts, pos, "a list of arrays of %d and %d dimensions is not an array", rows[0]->type->ndim, r->type->ndim);
        rows[i] = r;
        types[i] = r->type;
    }
    IrNode *seq = ir_node(ts->a, IR_TUPLE, pos);
    seq->u.tuple.items = rows;
    seq->u.tuple.n = k;
    seq->type = ir_type_tuple(types, k);
    IrNode *s = ts_stack(ts, pos, seq);
    if (s && dtype && s->type->dtype != *dtype) s = ts_cast_array(ts, pos, s, *dtype);
    return s;
}

/* a.append(v) and the other methods that grow or shrink a list: the receiver is an array in lorikeet */
IrNode *ts_list_method(Ts *ts, IrPos pos, const char *name, bool *handled)
{
    static const char *grow[] = {"append", "extend", "insert", "pop", "remove", "clear"};
    *handled = false;
    for (size_t i = 0; i < sizeof grow / sizeof grow[0]; i++)
        if (!strcmp(name, grow[i])) {
            *handled = true;
            TS_ERR(ts, pos, ".%s(): lorikeet makes a list an array, which cannot grow or shrink; make the array with "
                            "np.empty(n) or np.zeros(n) and assign its items (out[i] = v), or use a comprehension", name);
        }
    return NULL;
}

/* list(iterable): a new array of its items (a list is an array in lorikeet) */
IrNode *ts_list_of(Ts *ts, const IrNode *n)
{
    IrPos pos = n->pos;
    if (n->u.call.nargs != 1 || n->u.call.nkw) TS_ERR(ts, pos, "list() takes one iterable");
    const IrNode *raw = n->u.call.args[0];
    if (ts_is_iterator_call(raw)) {
        TsIter it;
        return ts_iter_open(ts, raw, &it) ? ts_iter_array(ts, pos, &it, NULL) : NULL;
    }
    if (raw->kind == IR_COMPREHENSION) return ts_comprehension_array(ts, raw, NULL);
    IrNode *x = raw->kind == IR_TUPLE ? ts_tuple(ts, raw) : ts_expr(ts, raw);
    if (!x) return NULL;
    if (x->type->kind == IR_TY_TUPLE) return ts_sequence_array(ts, pos, x, NULL);
    if (x->type->kind == IR_TY_ARRAY) return ts_copy_array(ts, pos, x);
    TS_ERR(ts, pos, "list() of %s is not supported", ts_type_name(x->type));
}


/* ---- operators on lists ----
 * A list made an array must not take NumPy's meaning of an operator where Python's differs: `[0.0] * n` is n
 * zeros, `[1, 2] + [3]` three items, and `[1, 2] - 1` a TypeError. Which variables hold a list is decided once
 * per function, before typing, from its assignments (flow-insensitively): a list display, a list
 * comprehension, list(...), a variable that holds one, a list repeated or two lists joined. An operand that
 * holds a list on some paths and something else on others is refused where its meaning depends on it. A list's
 * other partner, an array, keeps NumPy's meaning, as in Python (`[1, 2] + a` is ndarray.__radd__). */

static unsigned holds_of(const unsigned char *vars, const IrNode *n)
{
    switch (n->kind) {
    case IR_TUPLE: return n->u.tuple.is_list ? TS_HOLDS_LIST : TS_HOLDS_OTHER;
    case IR_COMPREHENSION: return n->u.comprehension.is_generator ? TS_HOLDS_OTHER : TS_HOLDS_LIST;
    case IR_VAR: return vars[n->u.var.var->id];
    case IR_IFEXP: return holds_of(vars, n->u.ifexp.then) | holds_of(vars, n->u.ifexp.orelse);
    case IR_CALL:
        return n->u.call.name && !strcmp(n->u.call.name, "builtins.list") ? TS_HOLDS_LIST : TS_HOLDS_OTHER;
    case IR_BINOP: { /* list + list joins; list * n repeats (the list's own holds, its count being another value) */
        unsigned l = holds_of(vars, n->u.binop.lhs), r = holds_of(vars, n->u.binop.rhs);
        bool ll = l & TS_HOLDS_LIST, rl = r & TS_HOLDS_LIST;
        if (n->u.binop.op == IR_OP_ADD && ll && rl) return l | r;
        if (n->u.binop.op == IR_OP_MUL && ll != rl) return ll ? l : r;
        return TS_HOLDS_OTHER;
    }
    default: return TS_HOLDS_OTHER;
    }
}

typedef struct ListScan {
    unsigned char *vars;
    bool changed;
} ListScan;

static void holds_assign(ListScan *s, const IrVar *v, unsigned h)
{
    if ((s->vars[v->id] | h) != s->vars[v->id]) {
        s->vars[v->id] |= (unsigned char)h;
        s->changed = true;
    }
}

static void scan_stmt(IrNode *st, void *env)
{
    ListScan *s = env;
    switch (st->kind) {
    case IR_ASSIGN: holds_assign(s, st->u.assign.var, holds_of(s->vars, st->u.assign.value)); break;
    case IR_FOR_RANGE: holds_assign(s, st->u.for_range.var, TS_HOLDS_OTHER); break;
    case IR_FOR_ITER: holds_assign(s, st->u.for_iter.var, TS_HOLDS_OTHER); break;
    default: break;
    }
}

unsigned char *ts_list_vars(RtArena *a, const IrFunc *src)
{
    ListScan s = {rt_arena_alloc(a, (size_t)src->nvars + 1), true};
    for (int i = 0; i < src->nparams; i++) s.vars[src->params[i]->id] = TS_HOLDS_OTHER;
    for (int round = 0; s.changed && round < 64; round++) {
        s.changed = false;
        ir_each_stmt((IrBlock *)&src->body, scan_stmt, &s);
    }
    return s.vars;
}

unsigned ts_holds(const Ts *ts, const IrNode *n)
{
    return ts->list_vars ? holds_of(ts->list_vars, n) : TS_HOLDS_OTHER;
}

/* x (a list's array) repeated count times along its first axis: Python's list * n, none for n <= 0 */
static IrNode *repeat_rows(Ts *ts, IrPos pos, IrNode *x, IrNode *count)
{
    x = ts_reuse(ts, x);
    count = ts_reuse(ts, ts_cast(ts, count, ir_type_scalar(IR_DT_INT64)));
    IrNode *none = ts_compare(ts, pos, IR_CMP_LT, count, ts_i64(ts, pos, 0));
    int nd = x->type->ndim;
    IrNode **dims = ir_nodes(ts->a, nd);
    dims[0] = ts_reuse(ts, ts_ifexp(ts, pos, none, ts_i64(ts, pos, 0),
                                    ts_scalar_binop(ts, pos, IR_OP_MUL, ts_dim(ts, pos, x, 0), count)));
    for (int d = 1; d < nd; d++) dims[d] = ts_dim(ts, pos, x, d);
    if (!dims[0]) return NULL;
    IrNode *m = ts_make_imap(ts, pos, dims, nd);
    ts->cond_depth++;
    IrNode *r = ir_node(ts->a, IR_INDEX, pos);
    r->u.index.base = x;
    r->u.index.n = nd;
    r->u.index.items = ir_nodes(ts->a, nd);
    for (int d = 0; d < nd; d++) r->u.index.items[d] = ts_var(ts, pos, m->u.imap.idx[d]);
    r->u.index.items[0] = ts_scalar_binop(ts, pos, IR_OP_MOD, r->u.index.items[0], ts_dim(ts, pos, x, 0));
    ts->cond_depth--;
    r->type = ir_type_scalar(x->type->dtype);
    m->u.imap.body = r;
    m->type = ir_type_array(x->type->dtype, nd, IR_LAYOUT_C);
    return r->u.index.items[0] ? m : NULL;
}

static const char *op_text(IrBinOp op)
{
    static const char *text[] = {[IR_OP_ADD] = "+", [IR_OP_SUB] = "-", [IR_OP_MUL] = "*", [IR_OP_DIV] = "/",
                                 [IR_OP_FLOORDIV] = "//", [IR_OP_MOD] = "%", [IR_OP_POW] = "**"};
    return (size_t)op < sizeof text / sizeof text[0] && text[op] ? text[op] : "this operator";
}

IrNode *ts_binop_node(Ts *ts, const IrNode *n)
{
    IrPos pos = n->pos;
    IrBinOp op = n->u.binop.op;
    unsigned hl = ts_holds(ts, n->u.binop.lhs), hr = ts_holds(ts, n->u.binop.rhs);
    IrNode *l = ts_expr(ts, n->u.binop.lhs), *r = ts_expr(ts, n->u.binop.rhs);
    if (!l || !r) return NULL;
    if (!((hl | hr) & TS_HOLDS_LIST)) return ts_binop(ts, pos, op, l, r);
    if (((hl & TS_HOLDS_LIST) && (hl & TS_HOLDS_OTHER)) || ((hr & TS_HOLDS_LIST) && (hr & TS_HOLDS_OTHER)))
        TS_ERR(ts, pos, "an operand of %s holds a list on some paths and another value on others: lorikeet makes a "
                        "list an array, and %s means another thing for each (convert it with np.array() where it is "
                        "made)", op_text(op), op_text(op));
    bool both = (hl & TS_HOLDS_LIST) && (hr & TS_HOLDS_LIST);
    IrNode *list = hl & TS_HOLDS_LIST ? l : r, *other = hl & TS_HOLDS_LIST ? r : l;
    if (op == IR_OP_ADD && both) return ts_concatenate(ts, pos, ts_pair(ts, pos, l, r));
    if (!both && other->type->kind == IR_TY_ARRAY) {
        if (op == IR_OP_MUL)
            TS_ERR(ts, pos, "a list times an array: lorikeet makes the list an array, whose * repeats it where it is a "
                            "list; write np.array([...]) * a");
        return ts_binop(ts, pos, op, l, r); /* ndarray's operator, as Python picks it */
    }
    if (op == IR_OP_MUL && !both && other->type->kind == IR_TY_SCALAR && !ir_dtype_is_float(other->type->dtype) &&
        !ir_dtype_is_complex(other->type->dtype))
        return repeat_rows(ts, pos, list, other);
    TS_ERR(ts, pos, "unsupported operand types for %s: a list and %s (Python raises TypeError)", op_text(op),
           both ? "a list" : ts_type_name(other->type));
}

/* `x[...] = v` into a variable that holds a list: Python's list takes any value, lorikeet's array converts it to
 * its dtype, so a value of a wider kind (a float into a list of ints) is refused, not truncated */
bool ts_list_store_fits(Ts *ts, IrPos pos, const IrNode *target_base, const IrType *base, const IrType *value)
{
    if (!(ts_holds(ts, target_base) & TS_HOLDS_LIST) || value->kind == IR_TY_TUPLE) return true;
    IrDtype to = base->dtype, from = value->dtype;
    int kind_to = to == IR_DT_BOOL ? 0 : ir_dtype_is_complex(to) ? 3 : ir_dtype_is_float(to) ? 2 : 1;
    int kind_from = from == IR_DT_BOOL ? 0 : ir_dtype_is_complex(from) ? 3 : ir_dtype_is_float(from) ? 2 : 1;
    if (kind_from <= kind_to) return true;
    if (!ts->dry)
        lk_diag_set(ts->diag, LK_ERR_TYPE, ts->src->file, pos.line, pos.col,
                    "storing %s into a list of %s: lorikeet makes the list an array of %s, which would convert it "
                    "(Python's list keeps it); make the list of %s where it is made (e.g. [0.0] * n)",
                    ts_type_name(value->kind == IR_TY_ARRAY ? ir_type_scalar(from) : (IrType *)value),
                    ts_type_name(ir_type_scalar(to)), ts_type_name(ir_type_scalar(to)),
                    ts_type_name(ir_type_scalar(from)));
    return false;
}
