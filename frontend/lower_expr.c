/* lower_expr.c: Python expressions to untyped IR expressions.
 *
 * Names are resolved here: a local becomes IR_VAR, a free name becomes what the environment says (a constant,
 * a reference to a module attribute, a callee). Attributes of the modules numpy, math and lorikeet are looked
 * up on the module object now, so that np.pi is a constant and np.float32 a name. Only IR_CONST nodes get a
 * type (the weak Python type of the literal); everything else stays untyped for typespec.
 * Every construct this file does not lower is a CompileError naming it; none is silently dropped.
 */
#include <string.h>
#include "lower.h"
#include "../typespec/typespec.h"

static IrNode *new_node(FeCtx *c, IrKind kind, IrPos pos)
{
    return ir_node(c->a, kind, pos);
}

static IrNode *lower_rejected(FeCtx *c, PyObject *e, IrPos pos)
{
    static const struct { const char *kind, *what; } rejected[] = {
        {"Starred", "starred expression (*x)"},   {"Dict", "dict display"},
        {"Set", "set display"},
        {"SetComp", "set comprehension"},         {"DictComp", "dict comprehension"},
        {"JoinedStr", "f-string"},                {"FormattedValue", "f-string"},
        {"Await", "await"},                       {"Yield", "yield"},
        {"YieldFrom", "yield from"},              {"NamedExpr", "assignment expression (:=)"},
        {"Slice", "slice outside of a subscript"},
    };
    for (size_t i = 0; i < sizeof rejected / sizeof rejected[0]; i++)
        if (fe_is(e, rejected[i].kind)) return fe_error(c, pos, "unsupported syntax: %s", rejected[i].what);
    return fe_error(c, pos, "unsupported syntax: %s expression", fe_kind(e));
}

/* ---- constants ---- */

IrNode *fe_const_from_py(FeCtx *c, PyObject *v, IrPos pos)
{
    if (v == Py_None) {
        IrNode *n = new_node(c, IR_CONST, pos);
        n->type = ir_type_none();
        return n;
    }
    if (PyBool_Check(v)) return ir_const_int(c->a, pos, ir_type_weak(IR_DT_BOOL), v == Py_True);
    if (PyLong_Check(v)) {
        int overflow = 0;
        long long i = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (i == -1 && PyErr_Occurred()) return fe_py_error(c);
        if (overflow) return fe_error(c, pos, "integer constant does not fit in 64 bits");
        return ir_const_int(c->a, pos, ir_type_weak(IR_DT_INT64), i);
    }
    if (PyFloat_Check(v)) return ir_const_float(c->a, pos, ir_type_weak(IR_DT_FLOAT64), PyFloat_AS_DOUBLE(v));
    if (PyTuple_Check(v)) {
        int n = (int)PyTuple_GET_SIZE(v);
        IrNode *t = new_node(c, IR_TUPLE, pos);
        t->u.tuple.items = ir_nodes(c->a, n);
        t->u.tuple.n = n;
        for (int k = 0; k < n; k++)
            if (!(t->u.tuple.items[k] = fe_const_from_py(c, PyTuple_GET_ITEM(v, k), pos))) return NULL;
        return t;
    }
    if (PyUnicode_Check(v) || PyBytes_Check(v)) return fe_error(c, pos, "strings are not supported");
    if (PyComplex_Check(v)) { /* a Python complex: weak complex128, its parts in konst.f and konst.im */
        IrNode *z = ir_const_float(c->a, pos, ir_type_weak(IR_DT_COMPLEX128), PyComplex_RealAsDouble(v));
        z->u.konst.im = PyComplex_ImagAsDouble(v);
        return z;
    }
    if (v == Py_Ellipsis) return fe_error(c, pos, "unsupported syntax: Ellipsis (...) outside of a subscript");
    return fe_error(c, pos, "constants of type %s are not supported", fe_kind(v));
}

/* ---- names ---- */

static IrNode *nameref(FeCtx *c, IrPos pos, const char *qualname)
{
    IrNode *n = new_node(c, IR_NAMEREF, pos);
    n->u.name.name = fe_dup(c, qualname);
    return n;
}

/* The nearest names lorikeet has to `attr` of module `qual` (or to a bare name, qual NULL: the builtins), as
 * "; did you mean numpy.sin?" (typespec's registry), or "". */
static void library_hint(const char *qual, const char *attr, char *out, size_t cap)
{
    out[0] = 0;
    char name[256];
    TsLibKind kind;
    if (!qual) kind = TS_LIB_BUILTIN, snprintf(name, sizeof name, "%s", attr);
    else if (!strncmp(qual, "numpy", 5) && (qual[5] == 0 || qual[5] == '.'))
        kind = TS_LIB_NUMPY, snprintf(name, sizeof name, "%s%s%s", qual[5] ? qual + 6 : "", qual[5] ? "." : "", attr);
    else if (!strcmp(qual, "math")) kind = TS_LIB_MATH, snprintf(name, sizeof name, "%s", attr);
    else if (!strcmp(qual, "lorikeet")) kind = TS_LIB_LORIKEET, snprintf(name, sizeof name, "%s", attr);
    else return;
    ts_library_suggest(kind, name, out, cap);
}

/* The error for a name that cannot be used the way it is; NULL if it can. */
static void *name_misuse(FeCtx *c, const FeRes *r, IrPos pos)
{
    char hint[512];
    if (r->kind == FE_RES_UNDEFINED) {
        library_hint(NULL, r->name, hint, sizeof hint);
        return fe_error(c, pos, "name '%s' is not defined%s", r->name, hint);
    }
    if (r->kind == FE_RES_UNSUPPORTED)
        return fe_error(c, pos, "name '%s' refers to an unsupported object (%s)", r->name, r->qual);
    if (r->kind == FE_RES_EXCEPTION)
        return fe_error(c, pos, "'%s' is an exception class: compiled code can raise it (raise %s(\"...\")) but not "
                        "use it as a value", r->name, r->name);
    return NULL;
}

static IrNode *lower_name(FeCtx *c, PyObject *e, IrPos pos)
{
    PyObject *id = fe_get(c, e, "id");
    FeRes r;
    if (!id || !fe_resolve(c, id, pos, &r)) return NULL;
    switch (r.kind) {
    case FE_RES_LOCAL: return ir_var_ref(c->a, pos, r.var ? r.var : ir_func_var(c->f, r.name));
    case FE_RES_CONST: return fe_const_from_py(c, r.obj, pos);
    case FE_RES_MODULE:
    case FE_RES_NAMED: return nameref(c, pos, r.qual);
    case FE_RES_FUNC: {
        IrNode *n = new_node(c, IR_LAMBDA, pos);
        n->u.lambda.func_handle = r.obj; /* borrowed: env keeps it alive */
        return n;
    }
    case FE_RES_ARRAY: return fe_const_array(c, r.name, r.obj, pos);
    case FE_RES_EXCEPTION:
    case FE_RES_UNSUPPORTED:
    case FE_RES_UNDEFINED: return name_misuse(c, &r, pos);
    }
    return NULL;
}

/* An array from outside the function (frozen by the resolver): a reference typespec turns into a read of a
 * hidden parameter of the compilation, which the shim passes at each call. */
IrNode *fe_const_array(FeCtx *c, const char *name, PyObject *obj, IrPos pos)
{
    IrNode *n = nameref(c, pos, name);
    n->u.name.handle = obj; /* borrowed: env keeps it alive */
    return n;
}

/* ---- module attributes ---- */

/* If e is a Name bound to one of the supported modules, fills *r and returns true. */
static bool is_module_name(FeCtx *c, PyObject *e, FeRes *r)
{
    if (!fe_is(e, "Name")) return false;
    PyObject *id = fe_get(c, e, "id");
    return id && fe_resolve(c, id, fe_pos(c, e), r) && r->kind == FE_RES_MODULE;
}

/* If e is a chain of attributes on a module name (np.random.rand), writes "numpy.random.rand" to buf. */
static bool module_chain(FeCtx *c, PyObject *e, char *buf, size_t n)
{
    FeRes r;
    if (is_module_name(c, e, &r)) {
        snprintf(buf, n, "%s", r.qual);
        return true;
    }
    if (fe_failed(c) || !fe_is(e, "Attribute")) return false;
    PyObject *value = fe_get(c, e, "value");
    const char *attr = value ? fe_str(c, e, "attr") : NULL;
    if (!attr || !module_chain(c, value, buf, n)) return false;
    size_t used = strlen(buf);
    snprintf(buf + used, n - used, ".%s", attr);
    return true;
}

/* The attribute of a module object, or NULL with the CompileError if it has none. */
static PyObject *module_attr(FeCtx *c, const FeRes *mod, const char *attr, IrPos pos)
{
    PyObject *v = PyObject_GetAttrString(mod->obj, attr);
    if (!v) {
        PyErr_Clear();
        char hint[512];
        library_hint(mod->qual, attr, hint, sizeof hint);
        return fe_error(c, pos, "module '%s' has no attribute '%s'%s", mod->qual, attr, hint);
    }
    if (PyList_Append(c->keep, v) < 0) {
        Py_DECREF(v);
        return fe_py_error(c);
    }
    Py_DECREF(v);
    return v;
}

static bool is_scalar_const(PyObject *v)
{
    return v == Py_None || PyBool_Check(v) || PyLong_Check(v) || PyFloat_Check(v) || PyComplex_Check(v);
}

/* module.attr used as a value: np.pi and math.inf are constants, np.newaxis is None, np.float32 a name. */
static IrNode *lower_module_attr(FeCtx *c, const FeRes *mod, const char *attr, IrPos pos)
{
    PyObject *v = module_attr(c, mod, attr, pos);
    if (!v) return NULL;
    if (is_scalar_const(v)) return fe_const_from_py(c, v, pos);
    if (PyModule_Check(v)) return fe_error(c, pos, "module %s.%s is not supported", mod->qual, attr);
    char q[256];
    snprintf(q, sizeof q, "%s.%s", mod->qual, attr);
    return nameref(c, pos, q);
}

static IrNode *lower_attribute(FeCtx *c, PyObject *e, IrPos pos)
{
    PyObject *value = fe_get(c, e, "value");
    const char *attr = value ? fe_str(c, e, "attr") : NULL;
    if (!attr) return NULL;
    FeRes mod;
    if (is_module_name(c, value, &mod)) return lower_module_attr(c, &mod, attr, pos);
    char chain[256];
    if (module_chain(c, value, chain, sizeof chain)) return fe_error(c, pos, "%s.%s is not supported", chain, attr);
    if (fe_failed(c)) return NULL;
    IrNode *n = new_node(c, IR_ATTR, pos);
    n->u.attr.name = fe_dup(c, attr);
    return (n->u.attr.value = fe_lower_expr(c, value)) ? n : NULL;
}

/* ---- operators ---- */

static bool binop_of(PyObject *op, IrBinOp *out)
{
    static const struct { const char *kind; IrBinOp op; } ops[] = {
        {"Add", IR_OP_ADD},       {"Sub", IR_OP_SUB},       {"Mult", IR_OP_MUL},       {"Div", IR_OP_DIV},
        {"FloorDiv", IR_OP_FLOORDIV}, {"Mod", IR_OP_MOD},   {"Pow", IR_OP_POW},        {"MatMult", IR_OP_MATMUL},
        {"LShift", IR_OP_LSHIFT}, {"RShift", IR_OP_RSHIFT}, {"BitAnd", IR_OP_BITAND},  {"BitOr", IR_OP_BITOR},
        {"BitXor", IR_OP_BITXOR},
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (fe_is(op, ops[i].kind)) {
            *out = ops[i].op;
            return true;
        }
    return false;
}

bool fe_binop_of(FeCtx *c, PyObject *op, IrPos pos, IrBinOp *out)
{
    if (binop_of(op, out)) return true;
    fe_error(c, pos, "unsupported operator %s", fe_kind(op));
    return false;
}

static IrNode *lower_binop(FeCtx *c, PyObject *e, IrPos pos)
{
    PyObject *op = fe_get(c, e, "op"), *left = op ? fe_get(c, e, "left") : NULL;
    PyObject *right = left ? fe_get(c, e, "right") : NULL;
    IrNode *n = new_node(c, IR_BINOP, pos);
    if (!right || !fe_binop_of(c, op, pos, &n->u.binop.op)) return NULL;
    if (!(n->u.binop.lhs = fe_lower_expr(c, left))) return NULL;
    return (n->u.binop.rhs = fe_lower_expr(c, right)) ? n : NULL;
}

static IrNode *lower_unop(FeCtx *c, PyObject *e, IrPos pos)
{
    PyObject *op = fe_get(c, e, "op"), *operand = op ? fe_get(c, e, "operand") : NULL;
    if (!operand) return NULL;
    IrNode *n = new_node(c, IR_UNOP, pos);
    if (fe_is(op, "USub")) n->u.unop.op = IR_UOP_NEG;
    else if (fe_is(op, "UAdd")) n->u.unop.op = IR_UOP_POS;
    else if (fe_is(op, "Invert")) n->u.unop.op = IR_UOP_INVERT;
    else if (fe_is(op, "Not")) n->u.unop.op = IR_UOP_NOT;
    else return fe_error(c, pos, "unsupported operator %s", fe_kind(op));
    /* -9223372036854775808 is the negation of a literal that does not fit: fold it, as Python's value fits. */
    if (n->u.unop.op == IR_UOP_NEG && fe_is(operand, "Constant")) {
        PyObject *v = fe_get(c, operand, "value");
        if (!v) return NULL;
        if (PyLong_Check(v) && !PyBool_Check(v)) {
            int overflow = 0;
            long long i = PyLong_AsLongLongAndOverflow(v, &overflow);
            PyErr_Clear();
            if (overflow > 0 && i == -1) {
                PyObject *neg = PyNumber_Negative(v);
                if (!neg || PyList_Append(c->keep, neg) < 0) {
                    Py_XDECREF(neg);
                    return fe_py_error(c);
                }
                Py_DECREF(neg);
                return fe_const_from_py(c, neg, pos);
            }
        }
    }
    return (n->u.unop.operand = fe_lower_expr(c, operand)) ? n : NULL;
}

/* x is y, x is not y: a call of operator.is_ / operator.is_not, which typespec decides from the operands' types
 * (`out is None` is a constant in each specialisation, as None is a type of its own). */
static IrNode *lower_is(FeCtx *c, PyObject *left, PyObject *right, bool negated, IrPos pos)
{
    IrNode *n = new_node(c, IR_CALL, pos);
    n->u.call.ckind = IR_CALLEE_NAMED;
    n->u.call.name = negated ? "operator.is_not" : "operator.is_";
    n->u.call.nargs = 2;
    n->u.call.args = ir_nodes(c->a, 2);
    n->u.call.kwnames = rt_arena_alloc(c->a, sizeof(const char *));
    n->u.call.kwargs = ir_nodes(c->a, 0);
    if (!(n->u.call.args[0] = fe_lower_expr(c, left))) return NULL;
    return (n->u.call.args[1] = fe_lower_expr(c, right)) ? n : NULL;
}

static IrNode *lower_compare(FeCtx *c, PyObject *e, IrPos pos)
{
    static const struct { const char *kind; IrCmpOp op; } cmps[] = {
        {"Eq", IR_CMP_EQ}, {"NotEq", IR_CMP_NE}, {"Lt", IR_CMP_LT}, {"LtE", IR_CMP_LE}, {"Gt", IR_CMP_GT},
        {"GtE", IR_CMP_GE},
    };
    static const struct { const char *kind, *what; } rejected[] = {
        {"Is", "is"}, {"IsNot", "is not"}, {"In", "in"}, {"NotIn", "not in"},
    };
    PyObject *left = fe_get(c, e, "left"), *ops = left ? fe_list(c, e, "ops") : NULL;
    PyObject *rights = ops ? fe_list(c, e, "comparators") : NULL;
    if (!rights) return NULL;
    int nops = (int)PyList_GET_SIZE(ops);
    if (nops == 0 || PyList_GET_SIZE(rights) != nops)
        return fe_error(c, pos, "malformed comparison: %d operators, %d operands", nops, (int)PyList_GET_SIZE(rights));
    PyObject *op0 = PyList_GET_ITEM(ops, 0);
    if (nops == 1 && (fe_is(op0, "Is") || fe_is(op0, "IsNot"))) return lower_is(c, left, PyList_GET_ITEM(rights, 0), fe_is(op0, "IsNot"), pos);
    IrNode *n = new_node(c, IR_COMPARE, pos);
    n->u.compare.ops = rt_arena_alloc(c->a, sizeof(IrCmpOp) * (size_t)nops);
    n->u.compare.operands = ir_nodes(c->a, nops + 1);
    n->u.compare.nops = nops;
    for (int k = 0; k < nops; k++) {
        PyObject *op = PyList_GET_ITEM(ops, k);
        size_t i = 0;
        while (i < sizeof cmps / sizeof cmps[0] && !fe_is(op, cmps[i].kind)) i++;
        if (i < sizeof cmps / sizeof cmps[0]) {
            n->u.compare.ops[k] = cmps[i].op;
            continue;
        }
        for (size_t j = 0; j < sizeof rejected / sizeof rejected[0]; j++)
            if (fe_is(op, rejected[j].kind))
                return fe_error(c, pos, "unsupported syntax: the '%s' operator", rejected[j].what);
        return fe_error(c, pos, "unsupported comparison %s", fe_kind(op));
    }
    if (!(n->u.compare.operands[0] = fe_lower_expr(c, left))) return NULL;
    for (int k = 0; k < nops; k++)
        if (!(n->u.compare.operands[k + 1] = fe_lower_expr(c, PyList_GET_ITEM(rights, k)))) return NULL;
    return n;
}

/* The elements of a Python list of expressions, lowered; *n gets the count. NULL with diag on error. */
static IrNode **lower_exprs(FeCtx *c, PyObject *list, int *n)
{
    *n = (int)PyList_GET_SIZE(list);
    IrNode **items = ir_nodes(c->a, *n);
    for (int k = 0; k < *n; k++)
        if (!(items[k] = fe_lower_expr(c, PyList_GET_ITEM(list, k)))) return NULL;
    return items;
}

static IrNode *lower_boolop(FeCtx *c, PyObject *e, IrPos pos)
{
    PyObject *op = fe_get(c, e, "op"), *values = op ? fe_list(c, e, "values") : NULL;
    if (!values) return NULL;
    if (!fe_is(op, "And") && !fe_is(op, "Or")) return fe_error(c, pos, "unsupported operator %s", fe_kind(op));
    if (PyList_GET_SIZE(values) < 2) return fe_error(c, pos, "malformed boolean operation");
    IrNode *n = new_node(c, IR_BOOLOP, pos);
    n->u.boolop.is_and = fe_is(op, "And");
    return (n->u.boolop.values = lower_exprs(c, values, &n->u.boolop.n)) ? n : NULL;
}

static IrNode *lower_ifexp(FeCtx *c, PyObject *e, IrPos pos)
{
    PyObject *test = fe_get(c, e, "test"), *body = test ? fe_get(c, e, "body") : NULL;
    PyObject *orelse = body ? fe_get(c, e, "orelse") : NULL;
    if (!orelse) return NULL;
    IrNode *n = new_node(c, IR_IFEXP, pos);
    if (!(n->u.ifexp.cond = fe_lower_expr(c, test))) return NULL;
    if (!(n->u.ifexp.then = fe_lower_expr(c, body))) return NULL;
    return (n->u.ifexp.orelse = fe_lower_expr(c, orelse)) ? n : NULL;
}

/* Tuple and List displays are both IR_TUPLE; a list's is_list makes it an array where it is a value (typespec),
 * and a tuple where a library function takes a sequence: np.zeros([n, m]) and np.zeros((n, m)) mean the same. */
static IrNode *lower_tuple(FeCtx *c, PyObject *e, IrPos pos)
{
    PyObject *elts = fe_list(c, e, "elts");
    if (!elts) return NULL;
    IrNode *n = new_node(c, IR_TUPLE, pos);
    n->u.tuple.is_list = fe_is(e, "List");
    return (n->u.tuple.items = lower_exprs(c, elts, &n->u.tuple.n)) ? n : NULL;
}

/* ---- subscripts ---- */

/* An optional part of a slice: NULL (absent) is not an error, so errors are told by fe_failed. */
static IrNode *lower_opt(FeCtx *c, PyObject *e, const char *field)
{
    PyObject *v = fe_get(c, e, field);
    return (v && v != Py_None) ? fe_lower_expr(c, v) : NULL;
}

static IrNode *lower_index_item(FeCtx *c, PyObject *item)
{
    if (fe_is(item, "Index")) { /* Python 3.8 wraps plain indices */
        PyObject *v = fe_get(c, item, "value");
        return v ? lower_index_item(c, v) : NULL;
    }
    IrPos pos = fe_pos(c, item);
    PyObject *konst = fe_is(item, "Constant") ? fe_get(c, item, "value") : NULL;
    if (konst == Py_Ellipsis || fe_is(item, "Ellipsis")) { /* a[..., 0]: typespec knows how many slices it is */
        IrNode *n = new_node(c, IR_SLICE, pos);
        n->u.slice.ellipsis = true;
        return n;
    }
    if (fe_failed(c)) return NULL;
    if (!fe_is(item, "Slice")) return fe_lower_expr(c, item);
    IrNode *n = new_node(c, IR_SLICE, pos);
    n->u.slice.start = lower_opt(c, item, "lower");
    n->u.slice.stop = fe_failed(c) ? NULL : lower_opt(c, item, "upper");
    n->u.slice.step = fe_failed(c) ? NULL : lower_opt(c, item, "step");
    return fe_failed(c) ? NULL : n;
}

IrNode *fe_lower_subscript(FeCtx *c, PyObject *e)
{
    IrPos pos = fe_pos(c, e);
    PyObject *value = fe_get(c, e, "value"), *slice = value ? fe_get(c, e, "slice") : NULL;
    if (!slice) return NULL;
    if (fe_is(slice, "Index")) { /* Python 3.8: Index(Tuple(...)) for a[i, j] */
        slice = fe_get(c, slice, "value");
        if (!slice) return NULL;
    }
    IrNode *n = new_node(c, IR_INDEX, pos);
    if (!(n->u.index.base = fe_lower_expr(c, value))) return NULL;
    bool several = fe_is(slice, "Tuple") || fe_is(slice, "ExtSlice");
    PyObject *items = several ? fe_list(c, slice, fe_is(slice, "Tuple") ? "elts" : "dims") : NULL;
    if (several && !items) return NULL;
    n->u.index.n = several ? (int)PyList_GET_SIZE(items) : 1;
    n->u.index.items = ir_nodes(c->a, n->u.index.n);
    for (int k = 0; k < n->u.index.n; k++)
        if (!(n->u.index.items[k] = lower_index_item(c, several ? PyList_GET_ITEM(items, k) : slice))) return NULL;
    return n;
}

/* ---- calls ---- */

/* Fills the callee of call n from the function expression; for a method call, *receiver gets the lowered
 * receiver, which becomes args[0]. */
static bool lower_callee(FeCtx *c, PyObject *func, IrNode *n, IrPos pos, IrNode **receiver)
{
    *receiver = NULL;
    if (fe_is(func, "Name")) {
        PyObject *id = fe_get(c, func, "id");
        FeRes r;
        if (!id || !fe_resolve(c, id, pos, &r)) return false;
        switch (r.kind) {
        case FE_RES_NAMED: n->u.call.ckind = IR_CALLEE_NAMED; n->u.call.name = fe_dup(c, r.qual); return true;
        case FE_RES_FUNC:
            n->u.call.ckind = IR_CALLEE_FUNC;
            n->u.call.name = fe_dup(c, r.name);
            n->u.call.func_handle = r.obj; /* borrowed: env keeps it alive */
            return true;
        case FE_RES_LOCAL:
            /* a nested function bound to a local name, or a function passed in: called by value */
            n->u.call.ckind = IR_CALLEE_VALUE;
            n->u.call.name = fe_dup(c, r.name);
            *receiver = ir_var_ref(c->a, pos, r.var ? r.var : ir_func_var(c->f, r.name));
            return true;
        case FE_RES_MODULE: fe_error(c, pos, "module '%s' is not callable", r.qual); return false;
        case FE_RES_CONST: fe_error(c, pos, "'%s' is a constant, not a function", r.name); return false;
        case FE_RES_ARRAY: fe_error(c, pos, "'%s' is an array, not a function", r.name); return false;
        case FE_RES_EXCEPTION:
        case FE_RES_UNSUPPORTED:
        case FE_RES_UNDEFINED: name_misuse(c, &r, pos); return false;
        }
        return false;
    }
    if (!fe_is(func, "Attribute")) {
        /* (lambda x: x + 1)(y), fs[0](y), pick(f, g)(y): the expression's value is the function called */
        n->u.call.ckind = IR_CALLEE_VALUE;
        n->u.call.name = fe_is(func, "Lambda") ? "<lambda>" : "<function value>";
        return (*receiver = fe_lower_expr(c, func)) != NULL;
    }
    PyObject *value = fe_get(c, func, "value");
    const char *attr = value ? fe_str(c, func, "attr") : NULL;
    if (!attr) return false;
    FeRes mod;
    char q[256];
    if (is_module_name(c, value, &mod)) {
        PyObject *v = module_attr(c, &mod, attr, pos);
        if (!v) return false;
        if (is_scalar_const(v) || PyModule_Check(v)) {
            fe_error(c, pos, "%s.%s is not callable", mod.qual, attr);
            return false;
        }
        snprintf(q, sizeof q, "%s.%s", mod.qual, attr);
        n->u.call.ckind = IR_CALLEE_NAMED;
        n->u.call.name = fe_dup(c, q);
        return true;
    }
    if (module_chain(c, value, q, sizeof q)) {
        /* np.add.reduce, np.linalg.norm: a named call too, which typespec takes or refuses by its name */
        size_t used = strlen(q);
        snprintf(q + used, sizeof q - used, ".%s", attr);
        n->u.call.ckind = IR_CALLEE_NAMED;
        n->u.call.name = fe_dup(c, q);
        return true;
    }
    if (fe_failed(c)) return false;
    n->u.call.ckind = IR_CALLEE_METHOD;
    n->u.call.name = fe_dup(c, attr);
    return (*receiver = fe_lower_expr(c, value)) != NULL;
}

static IrNode *lower_call(FeCtx *c, PyObject *e, IrPos pos)
{
    PyObject *func = fe_get(c, e, "func"), *args = func ? fe_list(c, e, "args") : NULL;
    PyObject *keywords = args ? fe_list(c, e, "keywords") : NULL;
    if (!keywords) return NULL;
    IrNode *n = new_node(c, IR_CALL, pos), *receiver;
    if (!lower_callee(c, func, n, pos, &receiver)) return NULL;
    if (n->u.call.ckind == IR_CALLEE_NAMED && !strcmp(n->u.call.name, "builtins.print"))
        return fe_lower_print(c, n, args, keywords); /* lower_print.c: its strings become a layout */
    int first = receiver ? 1 : 0, npos = (int)PyList_GET_SIZE(args);
    for (int k = 0; k < npos; k++) {
        PyObject *arg = PyList_GET_ITEM(args, k);
        if (!fe_is(arg, "Starred")) continue;
        if ((n->u.call.ckind != IR_CALLEE_FUNC && n->u.call.ckind != IR_CALLEE_VALUE) || first + k >= 64)
            return fe_error(c, fe_pos(c, arg), "unsupported syntax: a starred argument (*t) is supported in calls of "
                            "your own functions only");
        n->u.call.starred |= (uint64_t)1 << (first + k);
    }
    if (fe_is_einsum_string_call(c, n, args)) {
        if (!(n->u.call.args = fe_lower_einsum_args(c, args, pos, &n->u.call.nargs))) return NULL;
    } else {
        if (fe_einsum_subscripts_misused(c, n, args, pos)) return NULL;
        n->u.call.nargs = first + npos;
        n->u.call.args = ir_nodes(c->a, n->u.call.nargs);
        if (receiver) n->u.call.args[0] = receiver;
        for (int k = 0; k < npos; k++) {
            PyObject *arg = PyList_GET_ITEM(args, k);
            if (fe_is(arg, "Starred") && !(arg = fe_get(c, arg, "value"))) return NULL;
            if (!(n->u.call.args[first + k] = fe_lower_argument(c, n, first + k, arg, pos))) return NULL;
        }
    }
    int nkw = (int)PyList_GET_SIZE(keywords);
    n->u.call.nkw = nkw;
    n->u.call.kwnames = rt_arena_alloc(c->a, sizeof(const char *) * (size_t)(nkw ? nkw : 1));
    n->u.call.kwargs = ir_nodes(c->a, nkw);
    for (int k = 0; k < nkw; k++) {
        PyObject *kw = PyList_GET_ITEM(keywords, k), *arg = fe_get(c, kw, "arg");
        PyObject *value = arg ? fe_get(c, kw, "value") : NULL;
        if (!value) return NULL;
        if (arg == Py_None) return fe_error(c, fe_pos(c, kw), "unsupported syntax: keyword arguments unpacking (**kw)");
        const char *name = fe_utf8(c, arg);
        if (!name) return NULL;
        n->u.call.kwnames[k] = fe_dup(c, name);
        if (!(n->u.call.kwargs[k] = fe_lower_einsum_keyword(c, n, name, value, fe_pos(c, value)))) return NULL;
    }
    return n;
}

/* The names of a comprehension's tuple target (`for i, x in enumerate(a)`): plain names, one level. */
static bool comp_unpack(FeCtx *c, IrNode *n, PyObject *target, IrPos pos)
{
    PyObject *elts = fe_list(c, target, "elts");
    if (!elts) return false;
    int k = (int)PyList_GET_SIZE(elts);
    if (c->ncomp + k > 16) return fe_error(c, pos, "comprehensions nested too deeply") != NULL;
    n->u.comprehension.unpack = rt_arena_alloc(c->a, sizeof(IrVar *) * (size_t)(k ? k : 1));
    n->u.comprehension.nunpack = k;
    for (int i = 0; i < k; i++) {
        PyObject *t = PyList_GET_ITEM(elts, i);
        if (!fe_is(t, "Name")) return fe_error(c, pos, "a comprehension's target must be a name or a tuple of names") != NULL;
        const char *name = fe_str(c, t, "id");
        if (!name) return false;
        char scoped[128];
        snprintf(scoped, sizeof scoped, "%s'", name);
        n->u.comprehension.unpack[i] = ir_func_new_var(c->f, scoped);
    }
    return true;
}

/* [elt for target in iter] or [elt for target in iter if cond], and the generator (elt for ...): one generator,
 * at most one condition. The target (a name, or a tuple of names) is a new variable, visible only in elt and
 * cond. */
static IrNode *lower_listcomp(FeCtx *c, PyObject *e, IrPos pos)
{
    PyObject *gens = fe_list(c, e, "generators"), *elt = gens ? fe_get(c, e, "elt") : NULL;
    if (!elt) return NULL;
    if (PyList_GET_SIZE(gens) != 1)
        return fe_error(c, pos, "a comprehension with several 'for' clauses is not supported; nest comprehensions instead");
    PyObject *g = PyList_GET_ITEM(gens, 0);
    PyObject *target = fe_get(c, g, "target"), *iter = target ? fe_get(c, g, "iter") : NULL;
    PyObject *ifs = iter ? fe_list(c, g, "ifs") : NULL;
    if (!ifs) return NULL;
    if (PyList_GET_SIZE(ifs) > 1) return fe_error(c, pos, "a comprehension with several 'if' clauses is not supported; join them with 'and'");
    bool unpack = fe_is(target, "Tuple") || fe_is(target, "List");
    if (!unpack && !fe_is(target, "Name")) return fe_error(c, pos, "a comprehension's target must be a name or a tuple of names");
    const char *name = unpack ? "$target" : fe_str(c, target, "id");
    if (!name) return NULL;
    if (c->ncomp == 16) return fe_error(c, pos, "comprehensions nested too deeply");
    IrNode *n = new_node(c, IR_COMPREHENSION, pos);
    n->u.comprehension.is_generator = fe_is(e, "GeneratorExp");
    if (!(n->u.comprehension.iter = fe_lower_expr(c, iter))) return NULL;
    char scoped[128];
    snprintf(scoped, sizeof scoped, "%s'", name);
    IrVar *v = ir_func_new_var(c->f, scoped);
    n->u.comprehension.target = v;
    int saved = c->ncomp;
    if (unpack) {
        if (!comp_unpack(c, n, target, pos)) return NULL;
        PyObject *elts = fe_list(c, target, "elts");
        for (int i = 0; i < n->u.comprehension.nunpack; i++) {
            c->comp_names[c->ncomp] = fe_str(c, PyList_GET_ITEM(elts, i), "id");
            c->comp_vars[c->ncomp++] = n->u.comprehension.unpack[i];
        }
    } else {
        c->comp_names[c->ncomp] = name;
        c->comp_vars[c->ncomp++] = v;
    }
    n->u.comprehension.elt = fe_lower_expr(c, elt);
    if (n->u.comprehension.elt && PyList_GET_SIZE(ifs) == 1 &&
        !(n->u.comprehension.cond = fe_lower_expr(c, PyList_GET_ITEM(ifs, 0))))
        n->u.comprehension.elt = NULL;
    c->ncomp = saved;
    return n->u.comprehension.elt ? n : NULL;
}

/* ---- dispatch ---- */

static IrNode *lower_constant(FeCtx *c, PyObject *e, IrPos pos)
{
    PyObject *v = fe_get(c, e, "value");
    return v ? fe_const_from_py(c, v, pos) : NULL;
}

static IrNode *lower_kind(FeCtx *c, PyObject *e, IrPos pos)
{
    const char *k = fe_kind(e);
    if (!strcmp(k, "Constant")) return lower_constant(c, e, pos);
    if (!strcmp(k, "Name")) return lower_name(c, e, pos);
    if (!strcmp(k, "BinOp")) return lower_binop(c, e, pos);
    if (!strcmp(k, "UnaryOp")) return lower_unop(c, e, pos);
    if (!strcmp(k, "Compare")) return lower_compare(c, e, pos);
    if (!strcmp(k, "BoolOp")) return lower_boolop(c, e, pos);
    if (!strcmp(k, "IfExp")) return lower_ifexp(c, e, pos);
    if (!strcmp(k, "Call")) return lower_call(c, e, pos);
    if (!strcmp(k, "Subscript")) return fe_lower_subscript(c, e);
    if (!strcmp(k, "Attribute")) return lower_attribute(c, e, pos);
    if (!strcmp(k, "Tuple") || !strcmp(k, "List")) return lower_tuple(c, e, pos);
    if (!strcmp(k, "Lambda")) return fe_lower_nested(c, e, pos);
    if (!strcmp(k, "ListComp") || !strcmp(k, "GeneratorExp")) return lower_listcomp(c, e, pos);
    return lower_rejected(c, e, pos);
}

IrNode *fe_lower_expr(FeCtx *c, PyObject *e)
{
    IrPos outer = c->pos, pos = fe_pos(c, e);
    if (c->depth >= FE_MAX_DEPTH) return fe_error(c, pos, "expression nested too deeply");
    c->pos = pos;
    c->depth++;
    IrNode *n = lower_kind(c, e, pos);
    c->depth--;
    c->pos = outer;
    if (!n && !fe_failed(c))
        lk_diag_set(c->diag, LK_ERR_INTERNAL, c->file, pos.line, pos.col,
                    "internal error in the frontend: %s lowered to nothing", fe_kind(e));
    return n;
}
