/* lower.h: private to frontend/. The state of lowering one function, and what its three files share:
 *   pyast.c      reading Python AST objects safely (fields, lists, positions, errors, name resolution)
 *   lower_expr.c expressions
 *   lower_stmt.c statements and fe_lower_function
 *
 * Reference discipline: every object the helpers fetch from Python is appended to FeCtx.keep, so the helpers
 * hand out borrowed references that stay valid until fe_lower_function returns. No caller ever DECREFs.
 * Error discipline: a helper that fails sets the diagnostic and returns NULL/false; callers return at once.
 */
#ifndef LK_FE_LOWER_H
#define LK_FE_LOWER_H

#include "frontend.h"

typedef struct FeCtx {
    IrFunc *f;
    RtArena *a;
    LkDiag *diag;
    PyObject *env;       /* borrowed dict, or NULL: free name -> resolution tuple */
    PyObject *locals;    /* owned set of str: every name the function binds (params, assignment targets) */
    PyObject *keep;      /* owned list: keeps alive every object the helpers handed out */
    const char *file;
    int line_offset;     /* file line of ast line 1 */
    IrPos pos;           /* the node being lowered: errors about nodes without a position use it */
    int depth;           /* nesting of expressions and statements, bounded so that C recursion stays shallow */
    /* nested functions (lambda, def inside def): the enclosing function's context, and what this one captured
     * from it (its own param for each, and the enclosing variable it reads at each call) */
    struct FeCtx *outer;
    IrVar *cap_inner[64], *cap_outer[64];
    int ncap;
    /* comprehension targets in scope, innermost last: they shadow every other name */
    const char *comp_names[16];
    IrVar *comp_vars[16];
    int ncomp;
} FeCtx;

#define FE_MAX_DEPTH 500

/* ---- pyast.c: AST access ---- */
const char *fe_kind(PyObject *node);                       /* "BinOp", "Name", ...: the node's class name */
bool fe_is(PyObject *node, const char *kind);
PyObject *fe_get(FeCtx *c, PyObject *node, const char *field);  /* borrowed; NULL with diag */
PyObject *fe_list(FeCtx *c, PyObject *node, const char *field); /* borrowed list; NULL with diag */
const char *fe_str(FeCtx *c, PyObject *node, const char *field); /* UTF-8, valid while the node lives */
const char *fe_utf8(FeCtx *c, PyObject *s);                /* UTF-8 of a str object, or NULL with diag */
const char *fe_dup(FeCtx *c, const char *s);               /* s copied into the arena */
IrPos fe_pos(FeCtx *c, PyObject *node);                    /* real file position; c->pos if node has none */
bool fe_failed(const FeCtx *c);
void *fe_error(FeCtx *c, IrPos pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void *fe_py_error(FeCtx *c);                               /* the pending Python exception as LK_ERR_INTERNAL */

/* ---- pyast.c: what a name means ---- */
typedef enum {
    FE_RES_LOCAL,       /* a variable of the function */
    FE_RES_CONST,       /* obj: a bool/int/float/None or a tuple of those */
    FE_RES_MODULE,      /* qual: "numpy", "math" or "lorikeet"; obj: the module */
    FE_RES_NAMED,       /* qual: "builtins.len", "numpy.sqrt", ... */
    FE_RES_FUNC,        /* obj: a user function or dispatcher */
    FE_RES_ARRAY,       /* obj: a NumPy array from outside the function, frozen (a read-only copy) */
    FE_RES_EXCEPTION,   /* qual: an exception class as "module:qualname" ("builtins:ValueError"); obj: the class */
    FE_RES_UNSUPPORTED, /* qual: a description of the object */
    FE_RES_UNDEFINED,   /* not found anywhere */
} FeResKind;

typedef struct FeRes {
    FeResKind kind;
    const char *name;   /* the name as written */
    const char *qual;   /* see above */
    PyObject *obj;      /* borrowed */
    IrVar *var;         /* FE_RES_LOCAL of a comprehension target or a captured variable: that variable */
} FeRes;

bool fe_resolve(FeCtx *c, PyObject *id, IrPos pos, FeRes *out); /* id: a str; false with diag on a bad env */

/* ---- lower_stmt.c: nested functions ---- */
/* A lambda or a def inside the function, as an IR_LAMBDA whose func captures what it reads of the enclosing
 * function's variables. */
IrNode *fe_lower_nested(FeCtx *c, PyObject *node, IrPos pos);

/* ---- lower_raise.c: raise and assert statements ---- */
/* `raise E`, `raise E(constants...)` (and `from None`): an IR_EXPR_STMT of the raise intrinsic naming E and its
 * arguments (ir.h's IR_INTR_RAISE); `assert test[, message]`: if not test, raise AssertionError(message). */
bool fe_lower_raise(FeCtx *c, PyObject *s, IrPos pos, IrBlock *out);
bool fe_lower_assert(FeCtx *c, PyObject *s, IrPos pos, IrBlock *out);

/* ---- lower_print.c: print(...) ---- */
/* A text made at run time: its pieces (a list of str, and (conversion, spec) slots for values) and its values, the
 * untyped expressions the slots show in turn. */
typedef struct FeLayout {
    PyObject *pieces; /* a new list */
    IrNode **values;
    int nvalues, cap;
} FeLayout;
bool fe_layout_fstring(FeCtx *c, FeLayout *l, PyObject *joined_str); /* an f-string's parts and slots, appended */
bool fe_layout_value(FeCtx *c, FeLayout *l, PyObject *expr, const char *conversion, PyObject *spec);
/* n, a call of builtins.print, as the print intrinsic (ir.h's IR_INTR_PRINT): its values, and its strings, sep and
 * end as the layout text; NULL with diag set for what compiled code cannot print (file=, a computed sep). */
IrNode *fe_lower_print(FeCtx *c, IrNode *n, PyObject *args, PyObject *keywords);

/* ---- lower_expr.c ---- */
IrNode *fe_lower_expr(FeCtx *c, PyObject *e);
IrNode *fe_lower_subscript(FeCtx *c, PyObject *e);         /* an ast.Subscript as an IR_INDEX */
IrNode *fe_const_from_py(FeCtx *c, PyObject *v, IrPos pos); /* a Python constant as IR_CONST/IR_TUPLE */
IrNode *fe_const_array(FeCtx *c, const char *name, PyObject *obj, IrPos pos); /* a frozen array, by handle */
bool fe_binop_of(FeCtx *c, PyObject *op, IrPos pos, IrBinOp *out); /* ast.Add -> IR_OP_ADD, ... */

/* ---- lower_einsum.c: np.einsum's subscripts string as NumPy's sublist form ---- */
bool fe_is_einsum_string_call(FeCtx *c, const IrNode *call, PyObject *args); /* np.einsum('...', ...) */
/* The call's arguments: each operand then a tuple of its labels, then the output's tuple if there is '->' */
IrNode **fe_lower_einsum_args(FeCtx *c, PyObject *args, IrPos pos, int *nargs);
/* A keyword argument's value: fe_lower_expr's, except einsum's optimize='greedy'/'optimal' (True), searchsorted's side=
 * (0 or 1) and sort's and argsort's kind= (None) */
IrNode *fe_lower_einsum_keyword(FeCtx *c, const IrNode *call, const char *name, PyObject *value, IrPos pos);
/* Positional argument k (the receiver of a method is 0): fe_lower_expr's, except those strings given by position */
IrNode *fe_lower_argument(FeCtx *c, const IrNode *call, int k, PyObject *value, IrPos pos);
/* The subscripts are a str variable: true with the CompileError set (also true when resolving fails) */
bool fe_einsum_subscripts_misused(FeCtx *c, const IrNode *call, PyObject *args, IrPos pos);

#endif
