/* einsum.c: np.einsum of one or two operands, lowered to nodes every backend already has (maps, add
 * reductions, index maps, views, the matmul intrinsic), so that no backend needs code of its own for it.
 *
 * The subscripts arrive in NumPy's sublist form, which the frontend makes of the string
 * (frontend/lower_einsum.c) and which a user may also write: each operand followed by a tuple of labels (0-25
 * for 'A'-'Z', 26-51 for 'a'-'z'), then the output's tuple, or none for NumPy's implicit output (the labels used
 * exactly once, in order).
 *
 * The labels make one index space: an order that each operand's labels and the output's keep, where there is
 * one (operands_order: 'ij,ijk->ik' is (i, j, k), the sum over j a reduction along the middle axis); else the
 * output's in its order, then the summed ones in order of first use. Each operand is brought into that space:
 *  - with its labels in the space's order it is used as it is; in the reverse order, through transpose (a view);
 *    in any other order, or with a label repeated (the diagonal 'ii'), an index map copies it into the space's
 *    order, reading x[i, i] for a repeated label;
 *  - each label it lacks becomes a new axis of length 1 (x[:, None, :]).
 * The two operands' product is a map over them, which broadcasts axes of length 1 as NumPy's einsum does and
 * raises its shape error where two lengths of a label differ; each summed axis is then an add reduction, the
 * last first, the map fused into the first. One operand without sums is copied: the result is always a
 * new array (NumPy returns a view for some one-operand forms, 'ij->ji' and 'ii->i').
 * A matrix product of two float 2-D operands ('ij,jk->ik', 'ij,kj->ik', ...) is the matmul intrinsic, under a
 * run-time test that the summed axes have one length; when they do not, the general form broadcasts (a length
 * of 1) or raises.
 *
 * Types are NumPy's: everything is computed in the operands' promoted type (int8 sums wrap in int8; for bool a
 * product is `and` and a sum is `or`). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "ts_internal.h"

#define EIN_LABELS 52 /* the letters */

typedef struct EinOperand {
    IrNode *x;        /* the typed array; a variable wherever typespec can make it one */
    int nlab;         /* == its ndim */
    int lab[IR_MAX_DIMS];
    bool used;        /* x was handed out once (a non-variable operand may be used only once) */
} EinOperand;

typedef struct Einsum {
    IrPos pos;
    int nops;
    EinOperand op[2];
    int nout;
    int out[IR_MAX_DIMS];
    int nspace;        /* the index space: out, then the summed labels */
    int space[EIN_LABELS];
    IrDtype dt;        /* the result's and the computation's */
} Einsum;

static bool fail(Ts *ts, IrPos pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static bool fail(Ts *ts, IrPos pos, const char *fmt, ...)
{
    char msg[480];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!ts->dry) lk_diag_set(ts->diag, LK_ERR_TYPE, ts->src->file, pos.line, pos.col, "numpy.einsum(): %s", msg);
    return false;
}

static char letter(int label) { return (char)(label < 26 ? 'A' + label : 'a' + (label - 26)); }

/* The labels as the letters of a subscripts string, in buf. */
static const char *letters(const int *lab, int n, char buf[EIN_LABELS + 1])
{
    for (int i = 0; i < n; i++) buf[i] = letter(lab[i]);
    buf[n] = 0;
    return buf;
}

static int index_of(const int *lab, int n, int label)
{
    for (int i = 0; i < n; i++)
        if (lab[i] == label) return i;
    return -1;
}

/* ---------------- the subscripts ---------------- */

/* A sublist: an untyped tuple of integer constants in [0, 52). */
static bool read_labels(Ts *ts, const Einsum *e, const IrNode *raw, int *lab, int *n, int max)
{
    if (raw->kind != IR_TUPLE)
        return fail(ts, e->pos, "the subscripts must be a string literal (or, in NumPy's sublist form, a list of "
                                "constant integers after each operand)");
    if (raw->u.tuple.n > max)
        return fail(ts, e->pos, "%d subscripts where at most %d are possible", raw->u.tuple.n, max);
    *n = raw->u.tuple.n;
    for (int i = 0; i < *n; i++) {
        int64_t v;
        if (!ts_const_int(raw->u.tuple.items[i], &v))
            return fail(ts, e->pos, "a subscript in NumPy's sublist form must be a constant integer");
        if (v < 0 || v >= EIN_LABELS)
            return fail(ts, e->pos, "subscript %lld is not within the valid range [0, %d)", (long long)v, EIN_LABELS);
        lab[i] = (int)v;
    }
    return true;
}

static bool read_operand(Ts *ts, Einsum *e, Args *a, int k)
{
    EinOperand *o = &e->op[k];
    IrNode *x = a->pos[2 * k];
    if (x->type->kind != IR_TY_ARRAY)
        return fail(ts, e->pos, "operand %d is %s; only arrays are supported", k, ts_type_name(x->type));
    if (!read_labels(ts, e, a->call->u.call.args[2 * k + 1], o->lab, &o->nlab, IR_MAX_DIMS)) return false;
    char buf[EIN_LABELS + 1];
    if (o->nlab != x->type->ndim)
        return fail(ts, e->pos, "operand %d has %d dimension%s but its subscripts '%s' name %d", k, x->type->ndim,
                    x->type->ndim == 1 ? "" : "s", letters(o->lab, o->nlab, buf), o->nlab);
    o->x = ts_reuse(ts, x);
    return o->x != NULL;
}

/* The output's labels: the explicit ones (each in some operand, none twice), or NumPy's implicit rule: the
 * labels used exactly once, in order (uppercase before lowercase). */
static bool read_output(Ts *ts, Einsum *e, const IrNode *raw)
{
    int count[EIN_LABELS] = {0};
    for (int k = 0; k < e->nops; k++)
        for (int i = 0; i < e->op[k].nlab; i++) count[e->op[k].lab[i]]++;
    if (!raw) {
        e->nout = 0;
        for (int l = 0; l < EIN_LABELS; l++)
            if (count[l] == 1) {
                if (e->nout == IR_MAX_DIMS)
                    return fail(ts, e->pos, "the output would have more than %d dimensions", IR_MAX_DIMS);
                e->out[e->nout++] = l;
            }
        return true;
    }
    if (!read_labels(ts, e, raw, e->out, &e->nout, IR_MAX_DIMS)) return false;
    for (int i = 0; i < e->nout; i++) {
        if (!count[e->out[i]])
            return fail(ts, e->pos, "the output subscript '%c' is not among the operands' subscripts",
                        letter(e->out[i]));
        if (index_of(e->out, i, e->out[i]) >= 0)
            return fail(ts, e->pos, "the output subscript '%c' appears more than once", letter(e->out[i]));
    }
    return true;
}

static bool read_einsum(Ts *ts, Args *a, Einsum *e)
{
    int nargs = a->call->u.call.nargs;
    if (nargs < 2) return fail(ts, e->pos, "needs the subscripts and at least one operand");
    e->nops = nargs / 2;
    if (e->nops > 2)
        return fail(ts, e->pos, "%d operands: only one or two are supported (nest two calls for more)", e->nops);
    for (int k = 0; k < e->nops; k++)
        if (!read_operand(ts, e, a, k)) return false;
    if (!read_output(ts, e, nargs % 2 ? a->call->u.call.args[nargs - 1] : NULL)) return false;
    const IrNode *opt = ts_kw(a, "optimize");
    int64_t v;
    if (opt && !ts_const_int(opt, &v)) return fail(ts, e->pos, "optimize must be True, False, 'greedy' or 'optimal'");
    /* the space: the output's labels, then the summed ones in order of first use */
    e->nspace = e->nout;
    for (int i = 0; i < e->nout; i++) e->space[i] = e->out[i];
    for (int k = 0; k < e->nops; k++)
        for (int i = 0; i < e->op[k].nlab; i++)
            if (index_of(e->space, e->nspace, e->op[k].lab[i]) < 0) e->space[e->nspace++] = e->op[k].lab[i];
    if (e->nspace > IR_MAX_DIMS)
        return fail(ts, e->pos, "%d different subscripts: at most %d are supported", e->nspace, IR_MAX_DIMS);
    IrType *t = ir_type_strong(ts_elem_type(e->op[0].x->type));
    if (e->nops == 2) t = ts_promote(t, ir_type_strong(ts_elem_type(e->op[1].x->type)));
    e->dt = t->dtype;
    return true;
}

/* ---------------- the operands in the index space ---------------- */

/* The operand as a node to put in the IR: a new reference to its variable each time, or the expression itself
 * once (inside a conditional expression or a per-element function, typespec cannot make it a variable). */
static IrNode *use(Ts *ts, Einsum *e, EinOperand *o)
{
    if (o->x->kind == IR_VAR) return ts_var(ts, e->pos, o->x->u.var.var);
    if (o->used) {
        fail(ts, e->pos, "an operand that is an expression is needed twice here, where it cannot be put in a "
                         "variable (a conditional expression or a per-element function): assign it to one first");
        return NULL;
    }
    o->used = true;
    return o->x;
}

/* An index map copying o into the space's order: one axis per distinct label of o, in the space's order (pos[d]:
 * where axis d's label is in the space), element x[the index of each axis' label]. A repeated label's length is
 * the longest of its axes' and its reads are bounds-checked, whatever the function's boundscheck option, so axes
 * of different lengths raise IndexError (NumPy: ValueError) and nothing is read past an axis' end. */
static IrNode *gather(Ts *ts, Einsum *e, EinOperand *o, const int *pos, int nd, bool repeated)
{
    IrNode *dims[IR_MAX_DIMS];
    int axis_of[IR_MAX_DIMS]; /* the imap axis of each of o's axes */
    for (int d = 0; d < nd; d++) {
        int label = e->space[pos[d]];
        dims[d] = NULL;
        for (int i = 0; i < o->nlab; i++) {
            if (o->lab[i] != label) continue;
            axis_of[i] = d;
            IrNode *x = use(ts, e, o);
            if (!x) return NULL;
            IrNode *len = ts_dim(ts, e->pos, x, i);
            dims[d] = dims[d] ? ts_scalar_binop(ts, e->pos, IR_OP_MAX, dims[d], len) : len;
        }
    }
    IrNode *m = ts_make_imap(ts, e->pos, dims, nd);
    IrNode *base = use(ts, e, o);
    if (!base) return NULL;
    IrNode *elem = ir_node(ts->a, IR_INDEX, e->pos);
    elem->u.index.base = base;
    elem->u.index.n = o->nlab;
    elem->u.index.items = ir_nodes(ts->a, o->nlab);
    for (int i = 0; i < o->nlab; i++) elem->u.index.items[i] = ts_var(ts, e->pos, m->u.imap.idx[axis_of[i]]);
    elem->u.index.checked = repeated;
    elem->type = ir_type_scalar(base->type->dtype);
    m->u.imap.body = elem;
    m->type = ir_type_array(base->type->dtype, nd, IR_LAYOUT_C);
    return m;
}

/* Operand k with one axis per label of the space, in its order (length 1 where it lacks the label); *copied: it
 * is a new array, not a view of the operand. */
static IrNode *in_space(Ts *ts, Einsum *e, int k, bool *copied)
{
    EinOperand *o = &e->op[k];
    int where[IR_MAX_DIMS], pos[IR_MAX_DIMS], nd = 0;
    bool repeated = false, increasing = true, decreasing = true;
    for (int i = 0; i < o->nlab; i++) {
        where[i] = index_of(e->space, e->nspace, o->lab[i]);
        if (index_of(o->lab, i, o->lab[i]) >= 0) repeated = true;
        if (i && where[i] <= where[i - 1]) increasing = false;
        if (i && where[i] >= where[i - 1]) decreasing = false;
    }
    for (int p = 0; p < e->nspace; p++)
        if (index_of(where, o->nlab, p) >= 0) pos[nd++] = p;
    IrNode *x;
    *copied = !increasing && !decreasing;
    if (increasing) {
        x = use(ts, e, o);
    } else if (decreasing) {
        x = use(ts, e, o);
        x = x ? ts_transpose(ts, e->pos, x) : NULL;
    } else {
        x = ts_reuse(ts, gather(ts, e, o, pos, nd, repeated));
    }
    if (!x || nd == e->nspace) return x;
    char spec[IR_MAX_DIMS + 1];
    for (int p = 0; p < e->nspace; p++) spec[p] = index_of(pos, nd, p) >= 0 ? ':' : 'n';
    spec[e->nspace] = 0;
    return ts_with_new_axes(ts, e->pos, x, spec);
}

/* ---------------- the product and the sums ---------------- */

static IrNode *elem_product(Ts *ts, IrPos pos, IrNode **e, int n, void *env)
{
    IrType *t = env;
    return ts_scalar_binop(ts, pos, IR_OP_MUL, ts_cast(ts, e[0], t), ts_cast(ts, e[1], t));
}

/* The space in an order every operand's labels keep, when there is one: the labels merged in the order each
 * operand and the output lists them (the first listed first where the order leaves a choice). Then no operand is
 * copied into the space's order, and a summed label between kept ones is reduced where it is: 'ij,ijk->ik' is
 * (w[:, :, None] * d).sum(axis=1), where the space (i, k, j) took a transposed copy of d. A repeated label (a
 * diagonal), or operands that order two labels both ways, leave the space as it is. */
static void operands_order(Einsum *e)
{
    const int *seq[3];
    int len[3], nseq = 0;
    for (int k = 0; k < e->nops; k++) {
        for (int i = 0; i < e->op[k].nlab; i++)
            if (index_of(e->op[k].lab, i, e->op[k].lab[i]) >= 0) return;
        seq[nseq] = e->op[k].lab;
        len[nseq++] = e->op[k].nlab;
    }
    seq[nseq] = e->out;
    len[nseq++] = e->nout;
    int first[EIN_LABELS], order[EIN_LABELS], n = 0; /* first: where each label first appears, for the choice */
    for (int l = 0; l < EIN_LABELS; l++) first[l] = -1;
    for (int s = 0, at = 0; s < nseq; s++)
        for (int i = 0; i < len[s]; i++, at++)
            if (first[seq[s][i]] < 0) first[seq[s][i]] = at;
    bool placed[EIN_LABELS] = {false};
    while (n < e->nspace) {
        int best = -1;
        for (int p = 0; p < e->nspace; p++) { /* a label none of whose predecessors in a sequence is unplaced */
            int l = e->space[p];
            bool ready = !placed[l];
            for (int s = 0; s < nseq && ready; s++)
                for (int i = 1; i < len[s] && ready; i++)
                    if (seq[s][i] == l && !placed[seq[s][i - 1]]) ready = false;
            if (ready && (best < 0 || first[l] < first[best])) best = l;
        }
        if (best < 0) return; /* two sequences order two labels both ways */
        placed[best] = true;
        order[n++] = best;
    }
    memcpy(e->space, order, sizeof(int) * (size_t)n);
}

static bool is_out(const Einsum *e, int label)
{
    return index_of(e->out, e->nout, label) >= 0;
}

static IrNode *product_and_sums(Ts *ts, Einsum *e)
{
    IrNode *x;
    bool copied = true;
    operands_order(e);
    if (e->nops == 1) {
        x = in_space(ts, e, 0, &copied);
    } else {
        IrNode *in[2] = {in_space(ts, e, 0, &copied), NULL};
        in[1] = in[0] ? in_space(ts, e, 1, &copied) : NULL;
        x = in[1] ? ts_make_map(ts, e->pos, in, 2, elem_product, ir_type_scalar(e->dt)) : NULL;
        copied = true;
    }
    if (!x) return NULL;
    if (e->nout == e->nspace) return copied ? x : ts_copy_array(ts, e->pos, x); /* no sums */
    IrReduceOp op = e->dt == IR_DT_BOOL ? IR_RED_OR : IR_RED_ADD;
    IrType *acc = ir_type_scalar(e->dt);
    if (e->nout == 0) return ts_make_reduce(ts, e->pos, op, x, -1, false, acc);
    for (int axis = e->nspace - 1; x && axis >= 0; axis--) /* the kept labels stay in the output's order */
        if (!is_out(e, e->space[axis])) x = ts_make_reduce(ts, e->pos, op, x, axis, false, acc);
    return x;
}

/* ---------------- the matrix product ---------------- */

/* Two 2-D float32/float64 operands, each with distinct labels, sharing one label that is summed, the output
 * being the other two: out[0] is operand *first's, out[1] the other's. *t_first / *t_second: that operand's axes
 * must be reversed to be (out[0], summed) / (summed, out[1]). */
static bool is_matmul(const Einsum *e, int *first, bool *t_first, bool *t_second)
{
    if (e->nops != 2 || (e->dt != IR_DT_FLOAT32 && e->dt != IR_DT_FLOAT64) || e->nout != 2 || e->nspace != 3)
        return false;
    const EinOperand *a = &e->op[0], *b = &e->op[1];
    if (a->nlab != 2 || b->nlab != 2 || a->lab[0] == a->lab[1] || b->lab[0] == b->lab[1]) return false;
    int sum = e->space[2];
    if (index_of(a->lab, 2, sum) < 0 || index_of(b->lab, 2, sum) < 0) return false;
    *first = index_of(a->lab, 2, e->out[0]) >= 0 ? 0 : 1;
    *t_first = e->op[*first].lab[0] == sum;
    *t_second = e->op[1 - *first].lab[1] == sum;
    return true;
}

static IrNode *matmul(Ts *ts, Einsum *e, int first, bool t_first, bool t_second)
{
    EinOperand *a = &e->op[first], *b = &e->op[1 - first];
    IrNode *x = use(ts, e, a), *y = use(ts, e, b);
    IrNode *len_a = ts_dim(ts, e->pos, use(ts, e, a), t_first ? 0 : 1);
    IrNode *len_b = ts_dim(ts, e->pos, use(ts, e, b), t_second ? 1 : 0);
    IrNode *same = ts_compare(ts, e->pos, IR_CMP_EQ, len_a, len_b);
    if (!same) return NULL;
    ts->cond_depth++;
    if (t_first) x = ts_transpose(ts, e->pos, x);
    if (t_second) y = ts_transpose(ts, e->pos, y);
    IrNode *mm = ts_matmul(ts, e->pos, x, y, false);
    IrNode *general = mm ? product_and_sums(ts, e) : NULL;
    ts->cond_depth--;
    if (!general) return NULL;
    if (general->type != mm->type) TS_ERR(ts, e->pos, "internal error: numpy.einsum's two forms differ in type");
    IrNode *r = ir_node(ts->a, IR_IFEXP, e->pos);
    r->type = mm->type;
    r->u.ifexp.cond = same;
    r->u.ifexp.then = mm;
    r->u.ifexp.orelse = general;
    return r;
}

IrNode *ts_einsum(Ts *ts, Args *a)
{
    Einsum e = {.pos = a->call->pos};
    if (!read_einsum(ts, a, &e)) return NULL;
    int first;
    bool t_first, t_second;
    bool vars = e.op[0].x->kind == IR_VAR && e.op[1].x && e.op[1].x->kind == IR_VAR;
    if (vars && is_matmul(&e, &first, &t_first, &t_second)) return matmul(ts, &e, first, t_first, t_second);
    return product_and_sums(ts, &e);
}
