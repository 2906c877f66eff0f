/* lower_einsum.c: the subscripts string of np.einsum, the one string constant the IR needs.
 *
 * The IR has no strings. A call np.einsum('ij,jk->ik', a, b) is lowered as NumPy's own equivalent sublist form,
 * np.einsum(a, (34, 35), b, (35, 36), (34, 36)): each operand followed by a tuple of integer labels, then the
 * output's tuple when the string has '->' (an absent one asks for NumPy's implicit output). Labels are NumPy's
 * numbering of letters in that form: 'A'-'Z' are 0-25 and 'a'-'z' are 26-51, so their order is the letters'.
 * This file only translates the syntax; what the labels mean (sizes, the output, which forms are supported) is
 * typespec's (typespec/einsum.c), which also takes the sublist form written by hand.
 * It never accepts a string it does not understand: every other character, '...' included, is a CompileError.
 * The few other string keywords NumPy functions take (searchsorted's side=, sort's kind=) become numbers here too.
 */
#include <string.h>
#include "lower.h"

static bool is_einsum(const IrNode *call)
{
    return call->u.call.ckind == IR_CALLEE_NAMED && strcmp(call->u.call.name, "numpy.einsum") == 0;
}

/* The str value of a Constant node, or NULL. */
static PyObject *str_constant(FeCtx *c, PyObject *e)
{
    if (!fe_is(e, "Constant")) return NULL;
    PyObject *v = fe_get(c, e, "value");
    return v && PyUnicode_Check(v) ? v : NULL;
}

static int label_of(char ch)
{
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return 26 + (ch - 'a');
    return -1;
}

/* The labels of s[0..n) as a tuple of int constants; spaces are skipped. */
static IrNode *label_tuple(FeCtx *c, const char *s, size_t n, IrPos pos)
{
    IrNode *t = ir_node(c->a, IR_TUPLE, pos);
    t->u.tuple.items = ir_nodes(c->a, (int)n);
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ' ') continue;
        if (s[i] == '.')
            return fe_error(c, pos, "numpy.einsum(): '...' (an ellipsis) in the subscripts is not supported; name "
                                    "every axis with a letter");
        int label = label_of(s[i]);
        if (label < 0) {
            if (s[i] == '-' || s[i] == '>')
                return fe_error(c, pos, "numpy.einsum(): the subscripts string has a '-' or '>' that is not its "
                                        "one '->'");
            if ((unsigned char)s[i] >= 0x80)
                return fe_error(c, pos, "numpy.einsum(): the subscripts may only have the letters a-z and A-Z");
            return fe_error(c, pos, "numpy.einsum(): '%c' is not a valid subscript: only the letters a-z and A-Z are",
                            s[i]);
        }
        t->u.tuple.items[t->u.tuple.n++] = ir_const_int(c->a, pos, ir_type_weak(IR_DT_INT64), label);
    }
    return t;
}

bool fe_is_einsum_string_call(FeCtx *c, const IrNode *call, PyObject *args)
{
    return is_einsum(call) && PyList_GET_SIZE(args) > 0 && str_constant(c, PyList_GET_ITEM(args, 0));
}

IrNode **fe_lower_einsum_args(FeCtx *c, PyObject *args, IrPos pos, int *nargs)
{
    const char *s = fe_utf8(c, str_constant(c, PyList_GET_ITEM(args, 0)));
    if (!s) return NULL;
    int nops = (int)PyList_GET_SIZE(args) - 1;
    const char *arrow = strstr(s, "->");
    size_t in_len = arrow ? (size_t)(arrow - s) : strlen(s);
    int nterms = 1;
    for (size_t i = 0; i < in_len; i++) nterms += s[i] == ',';
    if (nterms != nops)
        return fe_error(c, pos, "numpy.einsum(): the subscripts '%s' name %d operand%s but %d %s given", s, nterms,
                        nterms == 1 ? "" : "s", nops, nops == 1 ? "is" : "are");
    *nargs = 2 * nops + (arrow ? 1 : 0);
    IrNode **out = ir_nodes(c->a, *nargs);
    const char *term = s;
    for (int k = 0; k < nops; k++) {
        const char *end = memchr(term, ',', in_len - (size_t)(term - s));
        if (!end) end = s + in_len;
        if (!(out[2 * k] = fe_lower_expr(c, PyList_GET_ITEM(args, k + 1)))) return NULL;
        if (!(out[2 * k + 1] = label_tuple(c, term, (size_t)(end - term), pos))) return NULL;
        term = end + 1;
    }
    if (arrow) {
        const char *o = arrow + 2;
        if (strchr(o, ','))
            return fe_error(c, pos, "numpy.einsum(): the output subscripts (after '->') cannot have a ','");
        if (!(out[*nargs - 1] = label_tuple(c, o, strlen(o), pos))) return NULL;
    }
    return out;
}

static bool calls(const IrNode *call, const char *numpy_name, const char *method)
{
    if (call->u.call.ckind == IR_CALLEE_NAMED) return strcmp(call->u.call.name, numpy_name) == 0;
    return method && call->u.call.ckind == IR_CALLEE_METHOD && strcmp(call->u.call.name, method) == 0;
}

/* The other string keywords of NumPy functions, which the IR spells as numbers: searchsorted's side='left' and
 * 'right' (0 and 1), and sort's and argsort's kind= (every kind has the stable sort's answer here: None). */
static IrNode *numpy_keyword_string(FeCtx *c, const IrNode *call, const char *name, PyObject *value, IrPos pos)
{
    const char *s = fe_utf8(c, str_constant(c, value));
    if (!s) return NULL;
    if (calls(call, "numpy.searchsorted", NULL) && strcmp(name, "side") == 0) {
        if (strcmp(s, "left") && strcmp(s, "right"))
            return fe_error(c, pos, "numpy.searchsorted(): side='%s' is not one of 'left' and 'right'", s);
        return ir_const_int(c->a, pos, ir_type_weak(IR_DT_INT64), s[0] == 'r');
    }
    if ((calls(call, "numpy.sort", "sort") || calls(call, "numpy.argsort", "argsort")) && strcmp(name, "kind") == 0) {
        if (strcmp(s, "quicksort") && strcmp(s, "mergesort") && strcmp(s, "heapsort") && strcmp(s, "stable"))
            return fe_error(c, pos, "kind='%s' is not one of 'quicksort', 'mergesort', 'heapsort' and 'stable'", s);
        IrNode *none = ir_node(c->a, IR_CONST, pos);
        none->type = ir_type_none();
        return none;
    }
    if (calls(call, "", "standard_exponential") && strcmp(name, "method") == 0) { /* Generator's: 'zig' 0, 'inv' 1 */
        if (strcmp(s, "zig") && strcmp(s, "inv"))
            return fe_error(c, pos, "standard_exponential(): method='%s' is not one of 'zig' and 'inv'", s);
        return ir_const_int(c->a, pos, ir_type_weak(IR_DT_INT64), s[0] == 'i');
    }
    if (calls(call, "numpy.linalg.norm", NULL) && strcmp(name, "ord") == 0) {
        if (strcmp(s, "fro") && strcmp(s, "f"))
            return fe_error(c, pos, "numpy.linalg.norm(): ord='%s' is not supported (only 'fro')", s);
        IrNode *none = ir_node(c->a, IR_CONST, pos); /* the Frobenius norm: ord=None's */
        none->type = ir_type_none();
        return none;
    }
    return fe_lower_expr(c, value); /* the CompileError of a string */
}

IrNode *fe_lower_argument(FeCtx *c, const IrNode *call, int k, PyObject *value, IrPos pos)
{
    /* the same strings given by position: np.sort(a, axis, kind), np.searchsorted(a, v, side), norm(x, ord) */
    static const struct { const char *numpy_name, *method; int k; const char *kw; } at[] = {
        {"numpy.sort", NULL, 2, "kind"}, {"numpy.argsort", NULL, 2, "kind"}, {"", "sort", 2, "kind"},
        {"", "argsort", 2, "kind"}, {"numpy.searchsorted", NULL, 2, "side"}, {"numpy.linalg.norm", NULL, 1, "ord"},
        {"", "standard_exponential", 3, "method"},
    };
    if (str_constant(c, value))
        for (size_t i = 0; i < sizeof at / sizeof at[0]; i++)
            if (at[i].k == k && calls(call, at[i].numpy_name, at[i].method)) return numpy_keyword_string(c, call, at[i].kw, value, pos);
    return fe_lower_expr(c, value);
}

IrNode *fe_lower_einsum_keyword(FeCtx *c, const IrNode *call, const char *name, PyObject *value, IrPos pos)
{
    PyObject *v = str_constant(c, value);
    if (!v) return fe_lower_expr(c, value);
    if (!is_einsum(call) || strcmp(name, "optimize") != 0) return numpy_keyword_string(c, call, name, value, pos);
    /* optimize='greedy' or 'optimal' chooses the order of contraction of three operands or more; with one or two
     * there is one order, so both mean optimize=True */
    const char *s = fe_utf8(c, v);
    if (!s) return NULL;
    if (strcmp(s, "greedy") != 0 && strcmp(s, "optimal") != 0)
        return fe_error(c, pos, "numpy.einsum(): optimize='%s' is not one of 'greedy', 'optimal', True and False", s);
    return ir_const_int(c->a, pos, ir_type_weak(IR_DT_BOOL), 1);
}

bool fe_einsum_subscripts_misused(FeCtx *c, const IrNode *call, PyObject *args, IrPos pos)
{
    if (!is_einsum(call) || PyList_GET_SIZE(args) == 0 || !fe_is(PyList_GET_ITEM(args, 0), "Name")) return false;
    PyObject *id = fe_get(c, PyList_GET_ITEM(args, 0), "id");
    FeRes r;
    if (!id || !fe_resolve(c, id, pos, &r)) return true;
    if (r.kind != FE_RES_UNSUPPORTED || strcmp(r.qual, "str") != 0) return false;
    fe_error(c, pos, "numpy.einsum(): the subscripts must be a string literal ('%s' is a str variable, whose value can "
                     "change after compilation)", r.name);
    return true;
}
