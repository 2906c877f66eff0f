/* specialize.c: the driver of typing. For one function and one argument-type signature it runs rounds of
 * inference until no variable's type widens (loops carry types backwards), then one last round that builds the
 * typed body and reports errors. Callees are specialised through the session, once per signature. */
#include <stdio.h>
#include <string.h>
#include "ts_internal.h"

bool ts_same_kind(IrDtype from, IrDtype to)
{
    return from == to || (ir_dtype_is_float(to) && ir_dtype_is_float(from)) || (ir_dtype_is_int(to) && ir_dtype_is_int(from));
}

struct TsSpec {
    const IrFunc *untyped;
    IrType **arg_types;
    int nargs;
    IrFunc *typed;      /* NULL while being typed: a second request is recursion */
};

static void type_block(Ts *ts, const IrBlock *src, IrBlock *dst);
static void type_stmts(Ts *ts, const IrBlock *src, IrBlock *dst);

/* Widen a variable's type with a newly assigned value's type. Returns the type to cast the value to, or NULL
 * when the two cannot share a variable. */
static IrType *unify(IrType *have, IrType *got)
{
    if (!have) return got;
    if (have == got) return have;
    if (have->kind == IR_TY_SCALAR && got->kind == IR_TY_SCALAR) return ts_promote(have, got);
    if (have->kind == IR_TY_ARRAY && got->kind == IR_TY_ARRAY && have->dtype == got->dtype && have->ndim == got->ndim)
        return ir_type_array_ro(have->dtype, have->ndim, IR_LAYOUT_ANY, have->readonly || got->readonly);
    if (have->kind == IR_TY_TUPLE && got->kind == IR_TY_TUPLE && have->nelems == got->nelems) {
        IrType *elems[IR_MAX_TUPLE];
        if (have->nelems > IR_MAX_TUPLE) return NULL;
        for (int i = 0; i < have->nelems; i++)
            if (!(elems[i] = unify(have->elems[i], got->elems[i]))) return NULL;
        return ir_type_tuple(elems, have->nelems);
    }
    return NULL;
}

IrVar **ts_fcap_of(Ts *ts, const IrVar *v)
{
    for (int i = 0; i < ts->nfcap; i++)
        if (ts->fcap_var[i] == v) return ts->fcap_vars[i];
    return NULL;
}

void ts_fcap_alias(Ts *ts, IrVar *to, const IrNode *value)
{
    IrVar **caps = value->kind == IR_VAR ? ts_fcap_of(ts, value->u.var.var) : NULL;
    if (!caps || ts_fcap_of(ts, to) || ts->nfcap == 16) return;
    ts->fcap_var[ts->nfcap] = to;
    ts->fcap_vars[ts->nfcap++] = caps;
}

static IrNode *assign_to(Ts *ts, IrPos pos, IrVar *v, IrNode *value)
{
    if (!ts_no_slice_value(ts, value)) return NULL;
    if (value->type && value->type->kind == IR_TY_FUNC) ts_fcap_alias(ts, v, value);
    IrType *t = unify(v->type, value->type);
    if (!t) {
        char a[128], b[128];
        ir_type_str(v->type, a, sizeof a);
        ir_type_str(value->type, b, sizeof b);
        TS_ERR(ts, pos, "variable '%s' is given values of incompatible types %s and %s", v->name, a, b);
    }
    if (t != v->type) {
        if (!ts->dry) TS_ERR(ts, pos, "internal error: type of '%s' changed after inference", v->name);
        v->type = t;
        ts->changed = true;
    }
    IrNode *cast = ts_cast(ts, value, t);
    if (!cast) return NULL;
    IrNode *s = ir_node(ts->a, IR_ASSIGN, pos);
    s->u.assign.var = v;
    s->u.assign.value = cast;
    return s;
}

/* An assignment to the function's variable sv. A variable that holds None (a parameter `out=None`, `x = None`)
 * and is given a value of another type where no loop or run-time branch encloses the assignment becomes a new
 * variable from there on: `if out is None: out = np.empty(n)` (an if decided when compiling is no branch) then
 * reads the array. Elsewhere the two types are the usual CompileError. */
static IrNode *assign_var(Ts *ts, IrPos pos, const IrVar *sv, IrNode *value)
{
    IrVar *v = ts->varmap[sv->id];
    if (v->type && v->type->kind == IR_TY_NONE && value->type->kind != IR_TY_NONE && ts->flow_depth == 0) {
        if (!ts->rebound[sv->id]) ts->rebound[sv->id] = ir_func_new_var(ts->dst, v->name);
        v = ts->varmap[sv->id] = ts->rebound[sv->id];
    }
    return assign_to(ts, pos, v, value);
}

/* The value of a condition decided when compiling (a constant, or `not` of one): 0 or 1; -1 otherwise. */
int ts_const_truth(const IrNode *c)
{
    if (c->kind == IR_CONST && c->type->kind == IR_TY_SCALAR) return c->u.konst.i != 0;
    if (c->kind == IR_UNOP && c->u.unop.op == IR_UOP_NOT) {
        int v = ts_const_truth(c->u.unop.operand);
        return v < 0 ? -1 : !v;
    }
    return -1;
}

/* The statements that typing `cond` hoisted are returned in `pre`; a while loop then has to re-run them on
 * every iteration, so it becomes `while True: pre; if not cond: break; body`. */
static IrNode *type_while(Ts *ts, const IrNode *s)
{
    IrBlock pre = {0};
    IrBlock *saved = ts->pre;
    ts->pre = &pre;
    IrNode *cond = ts_expr(ts, s->u.while_.cond);
    if (cond) cond = ts_truth(ts, cond);
    ts->pre = saved;
    if (!cond) return NULL;
    IrNode *w = ir_node(ts->a, IR_WHILE, s->pos);
    if (pre.n == 0) {
        w->u.while_.cond = cond;
    } else {
        w->u.while_.cond = ir_const_int(ts->a, s->pos, ir_type_scalar(IR_DT_BOOL), 1);
        w->u.while_.body = pre;
        IrNode *brk = ir_node(ts->a, IR_IF, s->pos);
        brk->u.if_.cond = ts_scalar_unop(ts, s->pos, IR_UOP_NOT, cond);
        ir_block_push(ts->a, &brk->u.if_.then, ir_node(ts->a, IR_BREAK, s->pos));
        ir_block_push(ts->a, &w->u.while_.body, brk);
    }
    ts->flow_depth++;
    type_block(ts, &s->u.while_.body, &w->u.while_.body);
    ts->flow_depth--;
    return w;
}

static IrNode *type_for_range(Ts *ts, const IrNode *s)
{
    IrNode *parts[3] = {ts_expr(ts, s->u.for_range.start), ts_expr(ts, s->u.for_range.stop),
                        ts_expr(ts, s->u.for_range.step)};
    for (int i = 0; i < 3; i++) {
        if (!parts[i]) return NULL;
        if (!ts_is_int_scalar(parts[i]->type))
            TS_ERR(ts, parts[i]->pos, "range() takes integers, not %s", ts_type_name(parts[i]->type));
    }
    IrType *it = ir_type_weak(IR_DT_INT64); /* range gives Python ints, whatever its arguments' types (NEP 50) */
    IrVar *v = ts->varmap[s->u.for_range.var->id];
    IrType *vt = unify(v->type, it);
    if (!vt) TS_ERR(ts, s->pos, "loop variable '%s' also holds a %s", v->name, ts_type_name(v->type));
    if (vt != v->type) {
        v->type = vt;
        ts->changed = true;
    }
    IrNode *f = ir_node(ts->a, IR_FOR_RANGE, s->pos);
    f->u.for_range.var = v;
    f->u.for_range.parallel = s->u.for_range.parallel;
    /* the loop counts in the variable's type; start/stop/step are evaluated once, before the loop */
    f->u.for_range.start = ts_cast(ts, parts[0], vt);
    f->u.for_range.stop = ts_cast(ts, parts[1], vt);
    f->u.for_range.step = ts_cast(ts, parts[2], vt);
    ts->flow_depth++;
    type_block(ts, &s->u.for_range.body, &f->u.for_range.body);
    ts->flow_depth--;
    return f;
}

/* for x in it  ->  (it's parts once) for $i in range(len): x = item($i); body. it: an array (its rows), a list,
 * enumerate(...), zip(...), range(...) inside those (iterate.c) */
static IrNode *type_for_iter(Ts *ts, const IrNode *s)
{
    TsIter it;
    if (!ts_iter_open(ts, s->u.for_iter.iterable, &it)) {
        if (!ts->dry && ts->diag->kind == LK_OK) TS_ERR(ts, s->pos, "internal error: a loop's iterable failed silently");
        return NULL;
    }
    IrVar *iv = ir_func_temp(ts->dst, ir_type_scalar(IR_DT_INT64));
    IrNode *f = ir_node(ts->a, IR_FOR_RANGE, s->pos);
    f->u.for_range.var = iv;
    f->u.for_range.start = ts_i64(ts, s->pos, 0);
    f->u.for_range.stop = it.len;
    f->u.for_range.step = ts_i64(ts, s->pos, 1);
    IrBlock *saved = ts->pre;
    ts->pre = &f->u.for_range.body;
    ts->flow_depth++;
    IrNode *item = ts_iter_item(ts, s->pos, &it, ts_var(ts, s->pos, iv));
    IrNode *as = item ? assign_var(ts, s->pos, s->u.for_iter.var, item) : NULL;
    ts->pre = saved;
    if (as) {
        ir_block_push(ts->a, &f->u.for_range.body, as);
        type_block(ts, &s->u.for_iter.body, &f->u.for_range.body);
    }
    ts->flow_depth--;
    return as ? f : NULL;
}

/* A function value has no run-time representation (applying one specialises and calls it): it can be returned
 * to a caller inside the compilation, never boxed for Python. */
static bool holds_function(const IrType *t)
{
    if (t->kind == IR_TY_FUNC) return true;
    if (t->kind == IR_TY_TUPLE)
        for (int i = 0; i < t->nelems; i++)
            if (holds_function(t->elems[i])) return true;
    return false;
}

static bool holds_generator(const IrType *t)
{
    if (t->kind == IR_TY_RNG) return true;
    if (t->kind == IR_TY_TUPLE)
        for (int i = 0; i < t->nelems; i++)
            if (holds_generator(t->elems[i])) return true;
    return false;
}

static IrNode *type_return(Ts *ts, const IrNode *s)
{
    IrNode *r = ir_node(ts->a, IR_RETURN, s->pos);
    if (!s->u.ret.value) {
        ts->has_return_none = true;
        return r;
    }
    IrNode *v = ts_expr(ts, s->u.ret.value);
    if (!v) return NULL;
    if (v->type->kind == IR_TY_NONE) {
        ts->has_return_none = true;
        if (v->kind != IR_CONST) { /* `return a.sort()`: what the None came from still runs, before the return */
            IrNode *e = ir_node(ts->a, IR_EXPR_STMT, s->pos);
            e->u.expr_stmt.value = v;
            ir_block_push(ts->a, ts->pre, e);
        }
        return r;
    }
    if (ts->returns_to_python && v->type->kind == IR_TY_SLICE)
        TS_ERR(ts, s->pos, "%s() returns a slice: a compiled function returns numbers, arrays and tuples of them to "
               "Python", ts->src->name);
    if (!ts_no_slice_value(ts, v)) return NULL;
    if (ts->returns_to_python && holds_generator(v->type))
        TS_ERR(ts, s->pos, "%s() returns a numpy Generator: a compiled function cannot return one to Python; pass the "
               "Generator in as an argument instead (its state is written back after the call)", ts->src->name);
    if (ts->returns_to_python && holds_function(v->type))
        TS_ERR(ts, s->pos, "%s() returns a function%s%s: a compiled function returns numbers, arrays and tuples of "
               "them to Python, not functions", ts->src->name, v->type->kind == IR_TY_TUPLE ? " inside " : "",
               v->type->kind == IR_TY_TUPLE ? ts_type_name(v->type) : "");
    ts->has_return_value = true;
    IrType *t = unify(ts->ret_type, v->type);
    if (!t) {
        char a[128], b[128];
        ir_type_str(ts->ret_type, a, sizeof a);
        ir_type_str(v->type, b, sizeof b);
        TS_ERR(ts, s->pos, "the function returns values of incompatible types %s and %s", a, b);
    }
    if (t != ts->ret_type) {
        ts->ret_type = t;
        ts->changed = true;
    }
    r->u.ret.value = ts_cast(ts, v, t);
    return r->u.ret.value ? r : NULL;
}

/* a //= b and a %= b of integers raise ZeroDivisionError at a zero in the array b (lorikeet's rule for integer
 * division); the loop that writes a would have updated the elements before it, where NumPy writes nothing. So
 * the divisors are tested first, by a statement that divides 1 by whether all of them are non-zero. The test
 * is a map over a and b, so shapes that do not broadcast raise their ValueError first, as NumPy's (fuzz seed
 * 923978; a b that broadcasts to more than a's shape still raises at its zero first). *b may change (to a
 * variable). */
static IrNode *elem_divisor_nonzero(Ts *ts, IrPos pos, IrNode **e, int n, void *env)
{
    return ts_compare(ts, pos, IR_CMP_NE, e[1], ir_const_int(ts->a, pos, ir_type_weak(IR_DT_INT64), 0));
}

static bool divisors_checked_first(Ts *ts, IrPos pos, IrBinOp op, IrNode *a, IrNode **b)
{
    if ((op != IR_OP_FLOORDIV && op != IR_OP_MOD) || !ts_is_array(*b) || ir_dtype_is_float(a->type->dtype) ||
        ir_dtype_is_float((*b)->type->dtype))
        return true;
    *b = ts_reuse(ts, *b);
    IrNode *in[2] = {a, *b};
    IrNode *nonzero = ts_make_map(ts, pos, in, 2, elem_divisor_nonzero, NULL);
    IrNode *all = nonzero ? ts_make_reduce(ts, pos, IR_RED_AND, nonzero, -1, false, ir_type_scalar(IR_DT_BOOL)) : NULL;
    IrType *i64 = ir_type_scalar(IR_DT_INT64);
    IrNode *check = all ? ts_scalar_binop(ts, pos, op, ir_const_int(ts->a, pos, i64, 1), ts_cast(ts, all, i64)) : NULL;
    return ts_reuse(ts, check) != NULL;
}

static IrNode *type_stmt(Ts *ts, const IrNode *s)
{
    switch (s->kind) {
    case IR_ASSIGN: {
        IrNode *v = ts_expr(ts, s->u.assign.value);
        return v ? assign_var(ts, s->pos, s->u.assign.var, v) : NULL;
    }
    case IR_AUGASSIGN: {
        IrVar *var = ts->varmap[s->u.augassign.var->id];
        if (!var->type) {
            if (!ts->dry) TS_ERR(ts, s->pos, "local variable '%s' is used before it is assigned", var->name);
            return NULL;
        }
        if (ts->list_vars && (ts->list_vars[s->u.augassign.var->id] & TS_HOLDS_LIST))
            TS_ERR(ts, s->pos, "'%s' holds a list: lorikeet makes a list an array, which cannot grow (+=, *=) and has "
                               "NumPy's operators (Python's list has none of -=, /=, ...); make the array with np.empty(n) "
                               "or np.zeros(n) and assign its items, or write %s = np.array(%s) first", var->name,
                   var->name, var->name);
        IrNode *v = ts_expr(ts, s->u.augassign.value);
        if (!v) return NULL;
        IrNode *cur = ts_var(ts, s->pos, var);
        if (var->type->kind == IR_TY_ARRAY) {
            /* NumPy updates an array in place: a += b writes into a's memory (views see it) */
            if (!divisors_checked_first(ts, s->pos, s->u.augassign.op, ts_var(ts, s->pos, var), &v)) return NULL;
            IrNode *sum = ts_binop(ts, s->pos, s->u.augassign.op, cur, v);
            if (!sum) return NULL;
            if (!ts_same_kind(sum->type->dtype, var->type->dtype))
                TS_ERR(ts, s->pos, "cannot update %s in place with a result of type %s (NumPy's same_kind rule)",
                       ts_type_name(var->type), ts_type_name(sum->type));
            IrNode *inputs[1] = {sum};
            IrNode *m = ts_make_map_into(ts, s->pos, ts_var(ts, s->pos, var), inputs, 1, NULL, NULL);
            if (!m) return NULL;
            IrNode *st = ir_node(ts->a, IR_EXPR_STMT, s->pos);
            st->u.expr_stmt.value = m;
            return st;
        }
        IrNode *sum = ts_binop(ts, s->pos, s->u.augassign.op, cur, v);
        return sum ? assign_to(ts, s->pos, var, sum) : NULL;
    }
    case IR_STORE: return ts_store(ts, s);
    case IR_IF: {
        IrNode *c = ts_expr(ts, s->u.if_.cond);
        if (c) c = ts_truth(ts, c);
        if (!c) return NULL;
        int decided = ts_const_truth(c);
        if (decided >= 0) {
            /* decided in this specialisation (`out is None`, isinstance, a constant): only the branch taken is
             * typed, in place, so the other may hold code this signature could not run */
            ts->splicing++;
            type_stmts(ts, decided ? &s->u.if_.then : &s->u.if_.orelse, ts->pre);
            ts->splicing--;
            return ir_node(ts->a, IR_PASS, s->pos);
        }
        IrNode *r = ir_node(ts->a, IR_IF, s->pos);
        r->u.if_.cond = c;
        ts->flow_depth++;
        type_block(ts, &s->u.if_.then, &r->u.if_.then);
        type_block(ts, &s->u.if_.orelse, &r->u.if_.orelse);
        ts->flow_depth--;
        return r;
    }
    case IR_WHILE: return type_while(ts, s);
    case IR_FOR_RANGE: return type_for_range(ts, s);
    case IR_FOR_ITER: return type_for_iter(ts, s);
    case IR_BREAK:
    case IR_CONTINUE:
    case IR_PASS: return ir_node(ts->a, s->kind, s->pos);
    case IR_RETURN: return type_return(ts, s);
    case IR_EXPR_STMT: {
        IrNode *v = ts_expr(ts, s->u.expr_stmt.value);
        if (!v) return NULL;
        IrNode *r = ir_node(ts->a, IR_EXPR_STMT, s->pos);
        r->u.expr_stmt.value = v;
        return r;
    }
    default: TS_ERR(ts, s->pos, "internal error: unexpected %s statement", ir_kind_name(s->kind));
    }
}

/* A failed statement in a dry round is skipped (its types are not known yet); in the last round the first
 * failure stops typing, with its diagnostic set. A return, break or continue in the branch taken of an if decided
 * when compiling ends the enclosing block: what follows cannot run in this specialisation and is not typed
 * (`if isinstance(x, float): return x` then `return x.sum()` types for a float). Other code after a return is
 * typed as written. */
static void type_stmts(Ts *ts, const IrBlock *src, IrBlock *dst)
{
    IrBlock *saved = ts->pre;
    ts->pre = dst;
    for (int i = 0; i < src->n && !ts->dead; i++) {
        if (!ts->dry && ts->diag->kind != LK_OK) break;
        IrNode *s = type_stmt(ts, src->stmts[i]);
        if (s) ir_block_push(ts->a, dst, s);
        IrKind k = src->stmts[i]->kind;
        if (ts->splicing && (k == IR_RETURN || k == IR_BREAK || k == IR_CONTINUE || ir_is_raise_stmt(src->stmts[i])))
            ts->dead = true;
    }
    ts->pre = saved;
}

static void type_block(Ts *ts, const IrBlock *src, IrBlock *dst)
{
    type_stmts(ts, src, dst);
    ts->dead = false;
}

static bool has_break(const IrBlock *b)
{
    for (int i = 0; i < b->n; i++) {
        const IrNode *s = b->stmts[i];
        if (s->kind == IR_BREAK) return true;
        if (s->kind == IR_IF && (has_break(&s->u.if_.then) || has_break(&s->u.if_.orelse))) return true;
    }
    return false;
}

/* Whether control can never fall off the end of the block (then the function never returns None by falling
 * off its end). Conservative: a `while True` without a break, a return, a raise, or an if whose branches both
 * return (or raise). */
static bool stmt_always_returns(const IrNode *s);

static bool always_returns(const IrBlock *b)
{
    for (int i = 0; i < b->n; i++)
        if (stmt_always_returns(b->stmts[i])) return true; /* what follows is dead code */
    return false;
}

static bool stmt_always_returns(const IrNode *s)
{
    switch (s->kind) {
    case IR_RETURN: return true;
    case IR_EXPR_STMT: return ir_is_raise_stmt(s); /* it never falls through either */
    case IR_IF: return always_returns(&s->u.if_.then) && always_returns(&s->u.if_.orelse);
    case IR_WHILE:
        return s->u.while_.cond->kind == IR_CONST && s->u.while_.cond->u.konst.i != 0 && !has_break(&s->u.while_.body);
    default: return false;
    }
}

static TsSpec *find_spec(TsSession *sess, const IrFunc *f, IrType **args, int nargs)
{
    for (int i = 0; i < sess->nspecs; i++) {
        TsSpec *s = &sess->specs[i];
        if (s->untyped != f || s->nargs != nargs) continue;
        if (nargs && memcmp(s->arg_types, args, sizeof *args * (size_t)nargs) != 0) continue;
        return s;
    }
    return NULL;
}

static TsSpec *add_spec(TsSession *sess, const IrFunc *f, IrType **args, int nargs)
{
    TsSpec *specs = rt_arena_alloc(sess->a, sizeof *specs * (size_t)(sess->nspecs + 1));
    if (sess->nspecs) memcpy(specs, sess->specs, sizeof *specs * (size_t)sess->nspecs);
    sess->specs = specs;
    TsSpec *s = &specs[sess->nspecs++];
    s->untyped = f;
    s->arg_types = rt_arena_dup(sess->a, args, sizeof *args * (size_t)(nargs ? nargs : 1));
    s->nargs = nargs;
    return s;
}

/* A typed function's parameters: its own (src's), then what the function values among them captured (each one's
 * captured_from, in order: they travel with the value, see ts_apply), then the constant arrays (TsOptions). */
static IrFunc *new_typed_func(TsSession *sess, const IrFunc *src, IrType **arg_types, int nargs, IrVar ***varmap_out)
{
    IrFunc *dst = ir_func_new(sess->a, src->name, src->file, src->line);
    IrVar **varmap = rt_arena_alloc(sess->a, sizeof *varmap * (size_t)(src->nvars + 1));
    for (int i = 0; i < src->nvars; i++) varmap[i] = ir_func_var(dst, src->vars[i]->name);
    const TsOptions *o = sess->opts;
    dst->nparams = nargs + o->nconsts;
    dst->params = rt_arena_alloc(sess->a, sizeof *dst->params * (size_t)(dst->nparams + 1));
    for (int i = 0; i < src->nparams; i++) dst->params[i] = varmap[src->params[i]->id];
    int at = src->nparams;
    for (int i = 0; i < src->nparams; i++) {
        const IrType *t = arg_types[i];
        const IrFunc *fv = t->kind == IR_TY_FUNC ? t->func : NULL;
        for (int k = 0; fv && k < fv->ncaptured; k++) {
            char name[160];
            snprintf(name, sizeof name, "%s.%s", src->params[i]->name, fv->captured_from[k]->name);
            IrVar *v = dst->params[at] = ir_func_new_var(dst, name);
            v->type = arg_types[at++];
        }
    }
    for (int k = 0; k < o->nconsts; k++) { /* the constant arrays, hidden parameters (see TsOptions) */
        char name[160];
        snprintf(name, sizeof name, "$%s", o->const_names[k]);
        IrVar *v = dst->params[nargs + k] = ir_func_new_var(dst, name);
        v->type = o->const_types[k];
    }
    char sym[160];
    snprintf(sym, sizeof sym, "%s.%d", src->name, sess->nspecs);
    dst->symbol = rt_arena_strdup(sess->a, sym);
    *varmap_out = varmap;
    return dst;
}

/* The number of arguments a call of src with these leading types passes: its parameters', then the captures of
 * the function values among them; -1 when arg_types are too few. */
static int args_with_captures(const IrFunc *src, IrType **arg_types, int nargs)
{
    if (nargs < src->nparams) return -1;
    int n = src->nparams;
    for (int i = 0; i < src->nparams; i++)
        if (arg_types[i]->kind == IR_TY_FUNC) n += ((const IrFunc *)arg_types[i]->func)->ncaptured;
    return n;
}

IrFunc *ts_specialize_in(TsSession *sess, const IrFunc *src, IrType **arg_types, int nargs, LkDiag *diag)
{
    if (args_with_captures(src, arg_types, nargs) != nargs) {
        lk_diag_set(diag, LK_ERR_TYPE, src->file, src->line, 0, "%s() takes %d arguments but %d were given",
                    src->name, src->nparams, nargs);
        return NULL;
    }
    TsSpec *spec = find_spec(sess, src, arg_types, nargs);
    if (spec) {
        if (!spec->typed)
            lk_diag_set(diag, LK_ERR_TYPE, src->file, src->line, 0,
                        "%s() calls itself (directly or through others): recursion is not supported", src->name);
        return spec->typed;
    }
    spec = add_spec(sess, src, arg_types, nargs);
    int spec_index = (int)(spec - sess->specs);

    Ts ts = {.sess = sess, .a = sess->a, .diag = diag, .src = src, .returns_to_python = spec_index == 0,
             .consts_at = nargs};
    ts.dst = new_typed_func(sess, src, arg_types, nargs, &ts.varmap);
    ts.list_vars = ts_list_vars(sess->a, src);
    for (int i = 0, at = src->nparams; i < src->nparams; i++) {
        ts.dst->params[i]->type = arg_types[i];
        int ncap = arg_types[i]->kind == IR_TY_FUNC ? ((const IrFunc *)arg_types[i]->func)->ncaptured : 0;
        if (ncap && ts.nfcap < 16) {
            ts.fcap_var[ts.nfcap] = ts.dst->params[i];
            ts.fcap_vars[ts.nfcap++] = ts.dst->params + at;
        }
        at += ncap;
    }

    /* rounds of inference until types settle; 50 is far beyond any real function's loop nesting. Each round
     * starts from the variables as they are at entry (assign_var rebinds some as it goes). */
    size_t map_bytes = sizeof(IrVar *) * (size_t)(src->nvars + 1);
    IrVar **entry_map = rt_arena_dup(sess->a, ts.varmap, map_bytes);
    ts.rebound = rt_arena_alloc(sess->a, map_bytes);
    for (int round = 0; round < 50; round++) {
        ts.dry = true;
        ts.changed = false;
        memcpy(ts.varmap, entry_map, map_bytes);
        IrBlock scratch = {0};
        type_block(&ts, &src->body, &scratch);
        if (!ts.changed) break;
    }
    ts.dry = false;
    memcpy(ts.varmap, entry_map, map_bytes);
    ts.has_return_none = ts.has_return_value = false;
    type_block(&ts, &src->body, &ts.dst->body);
    if (diag->kind != LK_OK) {
        sess->specs[spec_index].untyped = NULL; /* forget the failed attempt: it is not recursion */
        return NULL;
    }
    if (ts.has_return_value && !always_returns(&ts.dst->body)) ts.has_return_none = true; /* typed: ifs decided */
    if (ts.has_return_value && ts.has_return_none)
        lk_diag_set(diag, LK_ERR_TYPE, src->file, src->line, 0,
                    "%s() returns a value on some paths and None on others", src->name);
    if (diag->kind != LK_OK) {
        sess->specs[spec_index].untyped = NULL;
        return NULL;
    }
    /* a weak result (in a tuple too) stays weak: a Python int returned is still one for the caller, and the
     * shim boxes it as a Python object, a strong one as a NumPy scalar */
    ts.dst->ret_type = ts.has_return_value ? ts.ret_type : ir_type_none();
    sess->specs[spec_index].typed = ts.dst;
    return ts.dst;
}

IrFunc *ts_specialize(const IrFunc *untyped, IrType **arg_types, int nargs, const TsOptions *opts, RtArena *a,
                      LkDiag *diag)
{
    TsSession sess = {.opts = opts, .a = a};
    IrFunc *root = ts_specialize_in(&sess, untyped, arg_types, nargs, diag);
    if (!root) return NULL;
    /* every function the root reaches, for the backend to emit */
    root->callees = rt_arena_alloc(a, sizeof(IrFunc *) * (size_t)(sess.nspecs + 1));
    for (int i = 0; i < sess.nspecs; i++)
        if (sess.specs[i].typed && sess.specs[i].typed != root) root->callees[root->ncallees++] = sess.specs[i].typed;
    return root;
}

IrNode *ts_const_array(Ts *ts, const IrNode *n)
{
    const TsOptions *o = ts->sess->opts;
    for (int k = 0; k < o->nconsts; k++)
        if (o->const_handles[k] == n->u.name.handle) return ts_var(ts, n->pos, ts->dst->params[ts->consts_at + k]);
    TS_ERR(ts, n->pos, "internal error: the array '%s' is not among the compilation's constants", n->u.name.name);
}

void ts_pass_consts(Ts *ts, IrPos pos, IrNode *call)
{
    int k = ts->sess->opts->nconsts, n = call->u.call.nargs;
    if (!k) return;
    IrNode **args = ir_nodes(ts->a, n + k);
    for (int i = 0; i < n; i++) args[i] = call->u.call.args[i];
    for (int i = 0; i < k; i++) args[n + i] = ts_var(ts, pos, ts->dst->params[ts->consts_at + i]);
    call->u.call.args = args;
    call->u.call.nargs = n + k;
}
