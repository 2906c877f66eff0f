/* lower_stmt.c: a Python function's statements to untyped IR, and fe_lower_function, the frontend's entry.
 *
 * Scoping follows Python's rule: a name bound anywhere in the function (a parameter, an assignment, augmented
 * assignment or for target) is a local, one IrVar for the whole function; every other name is free and is
 * resolved through the environment. Unpacking assignments and tuple loop targets go through temporaries so
 * that the value is evaluated once, before any target is written. Statements this file does not lower are a
 * CompileError naming them.
 */
#include <string.h>
#include "lower.h"

static bool lower_block(FeCtx *c, PyObject *stmts, Py_ssize_t start, IrBlock *out);
static bool collect_locals(FeCtx *c, PyObject *body);
static bool lower_params(FeCtx *c, PyObject *fdef);
static bool is_docstring(FeCtx *c, PyObject *s);

static void emit(FeCtx *c, IrBlock *out, IrNode *stmt)
{
    ir_block_push(c->a, out, stmt);
}

static void emit_assign(FeCtx *c, IrBlock *out, IrVar *var, IrNode *value, IrPos pos)
{
    IrNode *s = ir_node(c->a, IR_ASSIGN, pos);
    s->u.assign.var = var;
    s->u.assign.value = value;
    emit(c, out, s);
}

static IrNode *tuple_get(FeCtx *c, IrVar *tuple, int k, int ntargets, IrPos pos)
{
    IrNode *n = ir_node(c->a, IR_TUPLE_GET, pos);
    n->u.tuple_get.tuple = ir_var_ref(c->a, pos, tuple);
    n->u.tuple_get.k = k;
    n->u.tuple_get.unpack_n = ntargets;
    return n;
}

static bool is_display(PyObject *e)
{
    return fe_is(e, "Tuple") || fe_is(e, "List");
}

/* ---- assignment ---- */

/* Assigns an already lowered value to one target: a name, a subscript (IR_STORE), or a nested tuple or list of
 * targets, unpacked through a temporary with IR_TUPLE_GET. */
static bool assign_target(FeCtx *c, PyObject *target, IrNode *value, IrBlock *out)
{
    IrPos pos = fe_pos(c, target);
    if (fe_is(target, "Name")) {
        const char *name = fe_str(c, target, "id");
        if (!name) return false;
        emit_assign(c, out, ir_func_var(c->f, name), value, pos);
        return true;
    }
    if (fe_is(target, "Subscript")) {
        IrNode *s = ir_node(c->a, IR_STORE, pos);
        if (!(s->u.store.target = fe_lower_subscript(c, target))) return false;
        s->u.store.value = value;
        emit(c, out, s);
        return true;
    }
    if (is_display(target)) {
        PyObject *elts = fe_list(c, target, "elts");
        if (!elts) return false;
        /* A temporary is never a target, so one that holds the value already can be unpacked in place. */
        IrVar *tmp = value->kind == IR_VAR && value->u.var.var->name[0] == '$' ? value->u.var.var : NULL;
        if (!tmp) {
            tmp = ir_func_temp(c->f, NULL);
            emit_assign(c, out, tmp, value, pos);
        }
        for (int k = 0; k < (int)PyList_GET_SIZE(elts); k++)
            if (!assign_target(c, PyList_GET_ITEM(elts, k), tuple_get(c, tmp, k, (int)PyList_GET_SIZE(elts), pos), out)) return false;
        return true;
    }
    if (fe_is(target, "Starred")) fe_error(c, pos, "unsupported syntax: starred assignment target (*x)");
    else if (fe_is(target, "Attribute")) fe_error(c, pos, "assignment to an attribute is not supported");
    else fe_error(c, pos, "unsupported syntax: cannot assign to a %s expression", fe_kind(target));
    return false;
}

/* a, b = b, a + b: every value into its own temporary (a constant needs none), then every target from it. No
 * tuple is built, and all values are still evaluated before any target is written. */
static bool assign_display(FeCtx *c, PyObject *target, PyObject *value, IrPos pos, IrBlock *out)
{
    PyObject *targets = fe_list(c, target, "elts"), *values = targets ? fe_list(c, value, "elts") : NULL;
    if (!values) return false;
    int n = (int)PyList_GET_SIZE(targets);
    if (PyList_GET_SIZE(values) != n)
        return fe_error(c, pos, "cannot unpack %d values into %d targets", (int)PyList_GET_SIZE(values), n) != NULL;
    IrNode **held = ir_nodes(c->a, n);
    for (int k = 0; k < n; k++) {
        IrNode *v = fe_lower_expr(c, PyList_GET_ITEM(values, k));
        if (!v) return false;
        if (v->kind == IR_CONST) {
            held[k] = v;
            continue;
        }
        IrVar *tmp = ir_func_temp(c->f, NULL);
        emit_assign(c, out, tmp, v, v->pos);
        held[k] = ir_var_ref(c->a, v->pos, tmp);
    }
    for (int k = 0; k < n; k++)
        if (!assign_target(c, PyList_GET_ITEM(targets, k), held[k], out)) return false;
    return true;
}

static bool lower_assign(FeCtx *c, PyObject *s, IrPos pos, IrBlock *out)
{
    PyObject *targets = fe_list(c, s, "targets"), *value = targets ? fe_get(c, s, "value") : NULL;
    if (!value) return false;
    int n = (int)PyList_GET_SIZE(targets);
    if (n == 0) return fe_error(c, pos, "malformed assignment without a target") != NULL;
    if (n == 1 && is_display(PyList_GET_ITEM(targets, 0)) && is_display(value))
        return assign_display(c, PyList_GET_ITEM(targets, 0), value, pos, out);
    IrNode *v = fe_lower_expr(c, value);
    if (!v) return false;
    if (n == 1) return assign_target(c, PyList_GET_ITEM(targets, 0), v, out);
    IrVar *tmp = ir_func_temp(c->f, NULL); /* a = b = e: e once, then each target left to right */
    emit_assign(c, out, tmp, v, pos);
    for (int k = 0; k < n; k++)
        if (!assign_target(c, PyList_GET_ITEM(targets, k), ir_var_ref(c->a, pos, tmp), out)) return false;
    return true;
}

/* x: T = e is x = e; a bare annotation x: T does nothing (but makes x a local, like Python). */
static bool lower_annassign(FeCtx *c, PyObject *s, IrPos pos, IrBlock *out)
{
    PyObject *target = fe_get(c, s, "target"), *value = target ? fe_get(c, s, "value") : NULL;
    if (!value) return false;
    if (value == Py_None) return true;
    IrNode *v = fe_lower_expr(c, value);
    return v && assign_target(c, target, v, out);
}

/* ---- augmented assignment ---- */

/* Makes *n safe to evaluate twice: anything but a variable, a constant or a name (or a slice of those) is
 * evaluated once into a temporary. */
static void hoist(FeCtx *c, IrNode **n, IrBlock *out)
{
    IrNode *e = *n;
    if (!e || e->kind == IR_VAR || e->kind == IR_CONST || e->kind == IR_NAMEREF) return;
    if (e->kind == IR_SLICE) {
        hoist(c, &e->u.slice.start, out);
        hoist(c, &e->u.slice.stop, out);
        hoist(c, &e->u.slice.step, out);
        return;
    }
    IrVar *tmp = ir_func_temp(c->f, NULL);
    emit_assign(c, out, tmp, e, e->pos);
    *n = ir_var_ref(c->a, e->pos, tmp);
}

/* A copy of a node that hoist() left alone. */
static IrNode *copy_simple(FeCtx *c, const IrNode *e)
{
    if (!e) return NULL;
    IrNode *n = ir_node(c->a, e->kind, e->pos);
    *n = *e;
    if (e->kind == IR_SLICE) {
        n->u.slice.start = copy_simple(c, e->u.slice.start);
        n->u.slice.stop = copy_simple(c, e->u.slice.stop);
        n->u.slice.step = copy_simple(c, e->u.slice.step);
    }
    return n;
}

/* a[i] += v is a[i] = a[i] + v, with a and i evaluated once. */
static bool augassign_subscript(FeCtx *c, PyObject *target, IrBinOp op, PyObject *value, IrPos pos, IrBlock *out)
{
    IrNode *store_at = fe_lower_subscript(c, target);
    if (!store_at) return false;
    hoist(c, &store_at->u.index.base, out);
    for (int k = 0; k < store_at->u.index.n; k++) hoist(c, &store_at->u.index.items[k], out);
    IrNode *load = copy_simple(c, store_at);
    load->u.index.base = copy_simple(c, store_at->u.index.base);
    load->u.index.items = ir_nodes(c->a, store_at->u.index.n);
    for (int k = 0; k < store_at->u.index.n; k++) load->u.index.items[k] = copy_simple(c, store_at->u.index.items[k]);
    IrNode *sum = ir_node(c->a, IR_BINOP, pos);
    sum->u.binop.op = op;
    sum->u.binop.lhs = load;
    if (!(sum->u.binop.rhs = fe_lower_expr(c, value))) return false;
    IrNode *s = ir_node(c->a, IR_STORE, pos);
    s->u.store.target = store_at;
    s->u.store.value = sum;
    s->u.store.augmented = true;
    emit(c, out, s);
    return true;
}

static bool lower_augassign(FeCtx *c, PyObject *s, IrPos pos, IrBlock *out)
{
    PyObject *target = fe_get(c, s, "target"), *opnode = target ? fe_get(c, s, "op") : NULL;
    PyObject *value = opnode ? fe_get(c, s, "value") : NULL;
    IrBinOp op;
    if (!value || !fe_binop_of(c, opnode, pos, &op)) return false;
    if (fe_is(target, "Subscript")) return augassign_subscript(c, target, op, value, pos, out);
    if (!fe_is(target, "Name")) {
        if (fe_is(target, "Attribute")) fe_error(c, pos, "augmented assignment to an attribute is not supported");
        else fe_error(c, pos, "unsupported syntax: augmented assignment to a %s expression", fe_kind(target));
        return false;
    }
    const char *name = fe_str(c, target, "id");
    if (!name) return false;
    IrNode *n = ir_node(c->a, IR_AUGASSIGN, pos);
    n->u.augassign.var = ir_func_var(c->f, name);
    n->u.augassign.op = op;
    if (!(n->u.augassign.value = fe_lower_expr(c, value))) return false;
    emit(c, out, n);
    return true;
}

/* ---- control flow ---- */

static bool lower_if(FeCtx *c, PyObject *s, IrPos pos, IrBlock *out)
{
    PyObject *test = fe_get(c, s, "test"), *body = test ? fe_list(c, s, "body") : NULL;
    PyObject *orelse = body ? fe_list(c, s, "orelse") : NULL;
    if (!orelse) return false;
    IrNode *n = ir_node(c->a, IR_IF, pos);
    if (!(n->u.if_.cond = fe_lower_expr(c, test))) return false;
    if (!lower_block(c, body, 0, &n->u.if_.then) || !lower_block(c, orelse, 0, &n->u.if_.orelse)) return false;
    emit(c, out, n);
    return true;
}

static bool lower_while(FeCtx *c, PyObject *s, IrPos pos, IrBlock *out)
{
    PyObject *test = fe_get(c, s, "test"), *body = test ? fe_list(c, s, "body") : NULL;
    PyObject *orelse = body ? fe_list(c, s, "orelse") : NULL;
    if (!orelse) return false;
    if (PyList_GET_SIZE(orelse) > 0) return fe_error(c, pos, "while ... else is not supported") != NULL;
    IrNode *n = ir_node(c->a, IR_WHILE, pos);
    if (!(n->u.while_.cond = fe_lower_expr(c, test)) || !lower_block(c, body, 0, &n->u.while_.body)) return false;
    emit(c, out, n);
    return true;
}

/* Whether func names lorikeet.prange (as prange, or lk.prange for the module imported under any name). */
static bool is_prange(FeCtx *c, PyObject *func, IrPos pos)
{
    FeRes r;
    if (fe_is(func, "Name")) {
        PyObject *id = fe_get(c, func, "id");
        return id && fe_resolve(c, id, pos, &r) && r.kind == FE_RES_NAMED && strcmp(r.qual, "lorikeet.prange") == 0;
    }
    if (!fe_is(func, "Attribute")) return false;
    PyObject *value = fe_get(c, func, "value");
    const char *attr = value ? fe_str(c, func, "attr") : NULL;
    PyObject *id = value && fe_is(value, "Name") ? fe_get(c, value, "id") : NULL;
    return attr && id && strcmp(attr, "prange") == 0 && fe_resolve(c, id, pos, &r) && r.kind == FE_RES_MODULE &&
           strcmp(r.qual, "lorikeet") == 0;
}

/* The positional arguments of iter if it is a call of range (or lk.prange: *parallel set), else NULL
 * (fe_failed tells errors). */
static PyObject *range_args(FeCtx *c, PyObject *iter, IrPos pos, bool *parallel)
{
    *parallel = false;
    if (!fe_is(iter, "Call")) return NULL;
    PyObject *func = fe_get(c, iter, "func"), *id = fe_is(func, "Name") ? fe_get(c, func, "id") : NULL;
    FeRes r;
    *parallel = func && is_prange(c, func, pos);
    if (!*parallel && (!id || !fe_resolve(c, id, pos, &r) || r.kind != FE_RES_NAMED || strcmp(r.qual, "builtins.range") != 0))
        return NULL;
    PyObject *args = fe_list(c, iter, "args"), *keywords = args ? fe_list(c, iter, "keywords") : NULL;
    if (!keywords) return NULL;
    int n = (int)PyList_GET_SIZE(args);
    if (PyList_GET_SIZE(keywords) > 0) return fe_error(c, pos, "range() takes no keyword arguments");
    if (n < 1 || n > 3) return fe_error(c, pos, "range expected 1 to 3 arguments, got %d", n);
    for (int k = 0; k < n; k++)
        if (fe_is(PyList_GET_ITEM(args, k), "Starred"))
            return fe_error(c, pos, "unsupported syntax: starred argument (*args)");
    return args;
}

static IrNode *lower_range_loop(FeCtx *c, PyObject *args, IrPos pos)
{
    int n = (int)PyList_GET_SIZE(args);
    IrNode *loop = ir_node(c->a, IR_FOR_RANGE, pos);
    IrNode **start = &loop->u.for_range.start, **stop = &loop->u.for_range.stop, **step = &loop->u.for_range.step;
    if (n == 1) {
        *start = ir_const_int(c->a, pos, ir_type_weak(IR_DT_INT64), 0);
        if (!(*stop = fe_lower_expr(c, PyList_GET_ITEM(args, 0)))) return NULL;
    } else {
        if (!(*start = fe_lower_expr(c, PyList_GET_ITEM(args, 0)))) return NULL;
        if (!(*stop = fe_lower_expr(c, PyList_GET_ITEM(args, 1)))) return NULL;
    }
    if (n == 3) return (*step = fe_lower_expr(c, PyList_GET_ITEM(args, 2))) ? loop : NULL;
    *step = ir_const_int(c->a, pos, ir_type_weak(IR_DT_INT64), 1);
    return loop;
}

/* for x in range(...) is IR_FOR_RANGE; any other iterable is IR_FOR_ITER. A target that is not a plain name
 * (a tuple, a subscript) is bound through a temporary loop variable at the top of the body. */
static bool lower_for(FeCtx *c, PyObject *s, IrPos pos, IrBlock *out)
{
    PyObject *target = fe_get(c, s, "target"), *iter = target ? fe_get(c, s, "iter") : NULL;
    PyObject *body = iter ? fe_list(c, s, "body") : NULL, *orelse = body ? fe_list(c, s, "orelse") : NULL;
    if (!orelse) return false;
    if (PyList_GET_SIZE(orelse) > 0) return fe_error(c, pos, "for ... else is not supported") != NULL;
    IrPos iter_pos = fe_pos(c, iter);
    bool parallel;
    PyObject *args = range_args(c, iter, iter_pos, &parallel);
    if (fe_failed(c)) return false;
    IrNode *loop;
    if (args) {
        loop = lower_range_loop(c, args, iter_pos);
        if (loop) loop->u.for_range.parallel = parallel;
    } else {
        loop = ir_node(c->a, IR_FOR_ITER, pos);
        loop->u.for_iter.iterable = fe_lower_expr(c, iter);
    }
    if (!loop || fe_failed(c)) return false;
    loop->pos = pos;
    IrVar **var = args ? &loop->u.for_range.var : &loop->u.for_iter.var;
    IrBlock *loop_body = args ? &loop->u.for_range.body : &loop->u.for_iter.body;
    if (fe_is(target, "Name")) {
        const char *name = fe_str(c, target, "id");
        if (!name) return false;
        *var = ir_func_var(c->f, name);
    } else {
        *var = ir_func_temp(c->f, NULL);
        IrPos tpos = fe_pos(c, target);
        if (!assign_target(c, target, ir_var_ref(c->a, tpos, *var), loop_body)) return false;
    }
    if (!lower_block(c, body, 0, loop_body)) return false;
    emit(c, out, loop);
    return true;
}

static bool lower_return(FeCtx *c, PyObject *s, IrPos pos, IrBlock *out)
{
    PyObject *value = fe_get(c, s, "value");
    if (!value) return false;
    IrNode *n = ir_node(c->a, IR_RETURN, pos);
    if (value != Py_None && !(n->u.ret.value = fe_lower_expr(c, value))) return false;
    emit(c, out, n);
    return true;
}

/* A bare constant (a string used as a comment, `...`) does nothing: it is IR_PASS, not an error. */
static bool lower_expr_stmt(FeCtx *c, PyObject *s, IrPos pos, IrBlock *out)
{
    PyObject *value = fe_get(c, s, "value");
    if (!value) return false;
    if (fe_is(value, "Constant")) {
        emit(c, out, ir_node(c->a, IR_PASS, pos));
        return true;
    }
    IrNode *n = ir_node(c->a, IR_EXPR_STMT, pos);
    if (!(n->u.expr_stmt.value = fe_lower_expr(c, value))) return false;
    emit(c, out, n);
    return true;
}

static bool lower_rejected(FeCtx *c, PyObject *s, IrPos pos)
{
    static const struct { const char *kind, *message; } rejected[] = {
        {"With", "unsupported syntax: with statement"},
        {"AsyncWith", "unsupported syntax: async with statement"},
        {"AsyncFor", "unsupported syntax: async for loop"},
        {"Try", "unsupported syntax: try statement"},
        {"TryStar", "unsupported syntax: try statement"},
        {"Delete", "unsupported syntax: del statement"},
        {"Match", "unsupported syntax: match statement"},
        {"Import", "unsupported syntax: import statement inside a function"},
        {"ImportFrom", "unsupported syntax: import statement inside a function"},
        {"Global", "keyword 'global' is not supported"},
        {"Nonlocal", "keyword 'nonlocal' is not supported"},
        {"AsyncFunctionDef", "async functions are not supported"},
        {"ClassDef", "unsupported syntax: class definition inside a function"},
        {"TypeAlias", "unsupported syntax: type alias statement"},
    };
    for (size_t i = 0; i < sizeof rejected / sizeof rejected[0]; i++)
        if (fe_is(s, rejected[i].kind)) return fe_error(c, pos, "%s", rejected[i].message) != NULL;
    return fe_error(c, pos, "unsupported syntax: %s statement", fe_kind(s)) != NULL;
}

static bool lower_kind(FeCtx *c, PyObject *s, IrPos pos, IrBlock *out)
{
    const char *k = fe_kind(s);
    if (!strcmp(k, "Assign")) return lower_assign(c, s, pos, out);
    if (!strcmp(k, "AugAssign")) return lower_augassign(c, s, pos, out);
    if (!strcmp(k, "AnnAssign")) return lower_annassign(c, s, pos, out);
    if (!strcmp(k, "If")) return lower_if(c, s, pos, out);
    if (!strcmp(k, "While")) return lower_while(c, s, pos, out);
    if (!strcmp(k, "For")) return lower_for(c, s, pos, out);
    if (!strcmp(k, "Return")) return lower_return(c, s, pos, out);
    if (!strcmp(k, "Expr")) return lower_expr_stmt(c, s, pos, out);
    if (!strcmp(k, "Raise")) return fe_lower_raise(c, s, pos, out);
    if (!strcmp(k, "Assert")) return fe_lower_assert(c, s, pos, out);
    if (!strcmp(k, "FunctionDef")) {
        /* def g(...) inside the function: g becomes a local bound to the nested function */
        const char *name = fe_str(c, s, "name");
        PyObject *decos = name ? fe_list(c, s, "decorator_list") : NULL;
        if (!decos) return false;
        if (PyList_GET_SIZE(decos) > 0) return fe_error(c, pos, "decorators on nested functions are not supported") != NULL;
        IrNode *lam = fe_lower_nested(c, s, pos);
        if (!lam) return false;
        emit_assign(c, out, ir_func_var(c->f, name), lam, pos);
        return true;
    }
    if (!strcmp(k, "Pass") || !strcmp(k, "Break") || !strcmp(k, "Continue")) {
        emit(c, out, ir_node(c->a, k[0] == 'P' ? IR_PASS : k[0] == 'B' ? IR_BREAK : IR_CONTINUE, pos));
        return true;
    }
    return lower_rejected(c, s, pos);
}

static bool lower_block(FeCtx *c, PyObject *stmts, Py_ssize_t start, IrBlock *out)
{
    for (Py_ssize_t i = start; i < PyList_GET_SIZE(stmts); i++) {
        PyObject *s = PyList_GET_ITEM(stmts, i);
        IrPos outer = c->pos, pos = fe_pos(c, s);
        if (c->depth >= FE_MAX_DEPTH) return fe_error(c, pos, "statements nested too deeply") != NULL;
        c->pos = pos;
        c->depth++;
        bool ok = lower_kind(c, s, pos, out);
        c->depth--;
        c->pos = outer;
        if (!ok) {
            if (!fe_failed(c))
                lk_diag_set(c->diag, LK_ERR_INTERNAL, c->file, pos.line, pos.col,
                            "internal error in the frontend: %s failed without a diagnostic", fe_kind(s));
            return false;
        }
    }
    return true;
}

/* ---- the function ---- */

IrNode *fe_lower_nested(FeCtx *c, PyObject *node, IrPos pos)
{
    bool is_def = fe_is(node, "FunctionDef");
    const char *name = is_def ? fe_str(c, node, "name") : "<lambda>";
    if (!name) return NULL;
    FeCtx in = {.a = c->a, .diag = c->diag, .env = c->env, .keep = c->keep, .file = c->file,
                .line_offset = c->line_offset, .pos = pos, .depth = c->depth, .outer = c};
    in.locals = PySet_New(NULL);
    if (!in.locals) return fe_py_error(c);
    in.f = ir_func_new(c->a, name, c->file, pos.line);
    bool ok = lower_params(&in, node);
    if (ok && is_def) {
        PyObject *body = fe_list(&in, node, "body");
        ok = body && collect_locals(&in, body);
        Py_ssize_t start = ok && PyList_GET_SIZE(body) > 0 && is_docstring(&in, PyList_GET_ITEM(body, 0)) ? 1 : 0;
        ok = ok && lower_block(&in, body, start, &in.f->body);
    } else if (ok) {
        PyObject *body = fe_get(&in, node, "body");
        IrNode *ret = ir_node(c->a, IR_RETURN, pos);
        ok = body && (ret->u.ret.value = fe_lower_expr(&in, body)) != NULL;
        if (ok) ir_block_push(c->a, &in.f->body, ret);
    }
    Py_DECREF(in.locals);
    if (!ok) return NULL;
    /* the captured variables become the last params; each call passes the enclosing variables' values */
    IrFunc *f = in.f;
    IrVar **params = rt_arena_alloc(c->a, sizeof(IrVar *) * (size_t)(f->nparams + in.ncap + 1));
    for (int i = 0; i < f->nparams; i++) params[i] = f->params[i];
    for (int i = 0; i < in.ncap; i++) params[f->nparams + i] = in.cap_inner[i];
    f->params = params;
    f->nparams += in.ncap;
    f->ncaptured = in.ncap;
    f->captured_from = rt_arena_dup(c->a, in.cap_outer, sizeof(IrVar *) * (size_t)(in.ncap + 1));
    IrNode *lam = ir_node(c->a, IR_LAMBDA, pos);
    lam->u.lambda.func = f;
    return lam;
}

/* Python's scoping rule, for the names this frontend can bind: a name stored anywhere in the body is local. */
static bool collect_locals(FeCtx *c, PyObject *body)
{
    PyObject *ast = PyImport_ImportModule("ast"), *walk = ast ? PyObject_GetAttrString(ast, "walk") : NULL;
    Py_XDECREF(ast);
    if (!walk) return fe_py_error(c) != NULL;
    bool ok = true;
    for (Py_ssize_t i = 0; ok && i < PyList_GET_SIZE(body); i++) {
        PyObject *it = PyObject_CallFunctionObjArgs(walk, PyList_GET_ITEM(body, i), NULL), *node;
        if (!it) break;
        while (ok && (node = PyIter_Next(it))) {
            if (fe_is(node, "FunctionDef")) {
                PyObject *id = PyObject_GetAttrString(node, "name");
                if (!id || PySet_Add(c->locals, id) < 0) ok = false;
                Py_XDECREF(id);
            } else if (fe_is(node, "Name")) {
                PyObject *ctx = PyObject_GetAttrString(node, "ctx");
                PyObject *id = ctx ? PyObject_GetAttrString(node, "id") : NULL;
                if (!id || ((fe_is(ctx, "Store") || fe_is(ctx, "Del")) && PySet_Add(c->locals, id) < 0)) ok = false;
                Py_XDECREF(ctx);
                Py_XDECREF(id);
            }
            Py_DECREF(node);
        }
        Py_DECREF(it);
    }
    Py_DECREF(walk);
    if (PyErr_Occurred()) fe_py_error(c);
    return !fe_failed(c);
}

static bool reject_param_kind(FeCtx *c, PyObject *args, const char *field, const char *message)
{
    PyObject *v = fe_get(c, args, field);
    if (!v) return true;
    bool present = PyList_Check(v) ? PyList_GET_SIZE(v) > 0 : v != Py_None;
    if (!present) return false;
    PyObject *at = PyList_Check(v) ? PyList_GET_ITEM(v, 0) : v;
    fe_error(c, fe_pos(c, at), "%s", message);
    return true;
}

static bool is_constant(const IrNode *n)
{
    if (n->kind == IR_CONST) return true;
    if (n->kind == IR_NAMEREF && n->u.name.handle) return true; /* a frozen array */
    if (n->kind == IR_NAMEREF && n->u.name.name) { /* a dtype: np.float32, float, int, bool, complex */
        const char *q = n->u.name.name, *dot = strrchr(q, '.');
        IrDtype dt;
        if (!strncmp(q, "numpy.", 6) && dot && ir_dtype_from_name(dot + 1, &dt)) return true;
        return !strcmp(q, "builtins.float") || !strcmp(q, "builtins.int") || !strcmp(q, "builtins.bool") ||
               !strcmp(q, "builtins.complex");
    }
    if (n->kind == IR_UNOP && n->u.unop.op == IR_UOP_NEG) return is_constant(n->u.unop.operand);
    if (n->kind != IR_TUPLE) return false;
    for (int i = 0; i < n->u.tuple.n; i++)
        if (!is_constant(n->u.tuple.items[i])) return false;
    return true;
}

/* The value Python computed for default k when it ran the def (`w=G * 2` is that array, `k=N + 1` that int), as
 * the resolver gave it under the key "<default k>"; NULL with fe_failed false when env has no such key. */
static IrNode *resolved_default(FeCtx *c, int k, const char *param, IrPos pos)
{
    if (c->outer || !c->env) return NULL;
    char key[32];
    snprintf(key, sizeof key, "<default %d>", k);
    PyObject *r = PyDict_GetItemString(c->env, key); /* borrowed */
    if (!r) return NULL;
    const char *tag = PyTuple_Check(r) && PyTuple_GET_SIZE(r) == 2 ? fe_utf8(c, PyTuple_GET_ITEM(r, 0)) : NULL;
    if (!tag)
        return fe_failed(c) ? NULL : fe_error(c, pos, "internal error: malformed default of parameter '%s'", param);
    PyObject *v = PyTuple_GET_ITEM(r, 1);
    if (strcmp(tag, "const") == 0) return fe_const_from_py(c, v, pos);
    if (strcmp(tag, "array") == 0) return fe_const_array(c, param, v, pos);
    const char *what = PyUnicode_Check(v) ? fe_utf8(c, v) : "?";
    return fe_error(c, pos, "the default value of parameter '%s' is not supported (%s): defaults are numbers, bools, "
                    "None, tuples of them, or arrays (frozen when the function is compiled)", param, what ? what : "?");
}

/* Default values: the values the def computed (resolved_default), else constant expressions (numbers, bools,
 * None, tuples of them, frozen arrays), fixed when the function is compiled. */
static bool lower_defaults(FeCtx *c, PyObject *args)
{
    PyObject *defaults = fe_list(c, args, "defaults");
    if (!defaults) return false;
    int n = (int)PyList_GET_SIZE(defaults);
    c->f->defaults = ir_nodes(c->a, n);
    for (int k = 0; k < n; k++) {
        PyObject *e = PyList_GET_ITEM(defaults, k);
        const char *param = c->f->params[c->f->nparams - n + k]->name;
        IrNode *v = resolved_default(c, k, param, fe_pos(c, e));
        if (!v && fe_failed(c)) return false;
        if (!v && !(v = fe_lower_expr(c, e))) return false;
        if (!is_constant(v))
            return fe_error(c, v->pos, "default argument values must be constants (numbers, bools, None, tuples of "
                            "them, arrays, or dtypes)") != NULL;
        c->f->defaults[k] = v;
    }
    c->f->ndefaults = n;
    return true;
}

static bool lower_params(FeCtx *c, PyObject *fdef)
{
    PyObject *args = fe_get(c, fdef, "args");
    if (!args) return false;
    if (reject_param_kind(c, args, "kwarg", "unsupported syntax: **kwargs parameter") ||
        reject_param_kind(c, args, "kwonlyargs", "keyword-only parameters are not supported"))
        return false;
    PyObject *posonly = fe_list(c, args, "posonlyargs"), *plain = posonly ? fe_list(c, args, "args") : NULL;
    if (!plain) return false;
    int n0 = (int)PyList_GET_SIZE(posonly), n = n0 + (int)PyList_GET_SIZE(plain);
    c->f->params = rt_arena_alloc(c->a, sizeof(IrVar *) * (size_t)(n ? n : 1));
    for (int k = 0; k < n; k++) {
        PyObject *arg = k < n0 ? PyList_GET_ITEM(posonly, k) : PyList_GET_ITEM(plain, k - n0);
        PyObject *id = fe_get(c, arg, "arg");
        const char *name = id ? fe_utf8(c, id) : NULL;
        if (!name) return false;
        if (PySet_Add(c->locals, id) < 0) return fe_py_error(c) != NULL;
        c->f->params[c->f->nparams++] = ir_func_var(c->f, name);
    }
    if (!lower_defaults(c, args)) return false;
    PyObject *vararg = fe_get(c, args, "vararg");
    if (!vararg || vararg == Py_None) return vararg != NULL;
    /* *args: one more parameter, a tuple of the positional arguments after the others */
    PyObject *id = fe_get(c, vararg, "arg");
    const char *name = id ? fe_utf8(c, id) : NULL;
    if (!name) return false;
    if (PySet_Add(c->locals, id) < 0) return fe_py_error(c) != NULL;
    IrVar **params = rt_arena_alloc(c->a, sizeof(IrVar *) * (size_t)(n + 1));
    for (int k = 0; k < n; k++) params[k] = c->f->params[k];
    params[n] = ir_func_var(c->f, name);
    c->f->params = params;
    c->f->nparams = n + 1;
    c->f->varargs = true;
    return true;
}

static bool is_docstring(FeCtx *c, PyObject *s)
{
    if (!fe_is(s, "Expr")) return false;
    PyObject *v = fe_get(c, s, "value"), *k = v && fe_is(v, "Constant") ? fe_get(c, v, "value") : NULL;
    return k && PyUnicode_Check(k);
}

static IrFunc *lower_function(FeCtx *c, PyObject *fdef)
{
    c->pos = fe_pos(c, fdef);
    if (fe_is(fdef, "AsyncFunctionDef")) return fe_error(c, c->pos, "async functions are not supported");
    if (fe_is(fdef, "Lambda")) {
        /* a lambda compiled on its own (passed to lk.map from Python): a function returning its body */
        c->f = ir_func_new(c->a, "<lambda>", c->file, c->pos.line);
        PyObject *body = lower_params(c, fdef) ? fe_get(c, fdef, "body") : NULL;
        IrNode *ret = ir_node(c->a, IR_RETURN, c->pos);
        if (!body || !(ret->u.ret.value = fe_lower_expr(c, body))) return NULL;
        ir_block_push(c->a, &c->f->body, ret);
        return c->f;
    }
    if (!fe_is(fdef, "FunctionDef")) {
        lk_diag_set(c->diag, LK_ERR_INTERNAL, c->file, c->pos.line, c->pos.col,
                    "internal error in the frontend: expected an ast.FunctionDef, got %s", fe_kind(fdef));
        return NULL;
    }
    const char *name = fe_str(c, fdef, "name");
    PyObject *body = name ? fe_list(c, fdef, "body") : NULL;
    if (!body) return NULL;
    c->f = ir_func_new(c->a, name, c->file, c->pos.line);
    if (!lower_params(c, fdef) || !collect_locals(c, body)) return NULL;
    Py_ssize_t start = PyList_GET_SIZE(body) > 0 && is_docstring(c, PyList_GET_ITEM(body, 0)) ? 1 : 0;
    if (fe_failed(c) || !lower_block(c, body, start, &c->f->body)) return NULL;
    return c->f;
}

IrFunc *fe_lower_function(PyObject *fdef, PyObject *env, const char *file, int line_offset, RtArena *a,
                          LkDiag *diag)
{
    if (!diag) return NULL;
    memset(diag, 0, sizeof *diag);
    FeCtx c = {.a = a, .diag = diag, .file = file ? file : "<unknown>", .line_offset = line_offset};
    c.pos = (IrPos){c.line_offset, 1};
    if (!fdef || !a) {
        lk_diag_set(diag, LK_ERR_INTERNAL, c.file, c.pos.line, 1, "internal error in the frontend: no function or arena");
        return NULL;
    }
    if (env && env != Py_None && !PyDict_Check(env)) {
        lk_diag_set(diag, LK_ERR_INTERNAL, c.file, c.pos.line, 1, "internal error in the frontend: env is a %s, not a dict",
                    fe_kind(env));
        return NULL;
    }
    c.env = env == Py_None ? NULL : env;
    c.keep = PyList_New(0);
    c.locals = PySet_New(NULL);
    IrFunc *f = c.keep && c.locals ? lower_function(&c, fdef) : fe_py_error(&c);
    Py_XDECREF(c.keep);
    Py_XDECREF(c.locals);
    return fe_failed(&c) ? NULL : f;
}
