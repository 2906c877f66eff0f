/* recognize_matmul.c: a matrix product written element by element,
 *
 *     np.array([[np.dot(row, col) for col in Y.T] for row in X])      (Parakeet's matmult)
 *     lk.imap(lambda i, j: (A[i] * B[j]).sum(), (n, m))
 *
 * reaches typespec as imap(i, j: reduce[add](map(*, A[i], B[j][:core_dim(..)]))). That is A @ B.T, and is replaced by the
 * matmul intrinsic, so it runs on the blocked GEMM kernel instead of n*m dot products over strided columns.
 * Only float arrays, and only when A and B do not depend on i or j.
 *
 * The imap's own dims (n, m) decide its shape: they are A @ B.T's only when n == A.shape[0] and
 * m == B.shape[0]. Otherwise the imap computes a corner of the product, or raises IndexError past A's or B's
 * rows, and so must the rewritten code. The product is therefore taken under that test, at run time:
 *
 *     matmul(A, transpose(B)) if n == A.shape[0] & m == B.shape[0] & A.shape[1] == B.shape[1] else imap(...)
 *
 * which evaluates A, B, n and m twice: they must be variables or constants (typespec puts the dims and most
 * operands in variables). */
#include "ir.h"

static bool is_var(const IrNode *n, const IrVar *v)
{
    return n->kind == IR_VAR && n->u.var.var == v;
}

static bool uses_var(IrNode *n, const IrVar *v);

typedef struct Uses {
    const IrVar *v;
    bool found;
} Uses;

static void find_use(IrNode **p, void *env)
{
    Uses *u = env;
    if (is_var(*p, u->v)) u->found = true;
    else if (!u->found) ir_each_child(*p, find_use, env);
}

static bool uses_var(IrNode *n, const IrVar *v)
{
    Uses u = {v, false};
    find_use(&n, &u);
    return u.found;
}

/* v[:core_dim(k, k2)], typespec's check that a dot product's sizes agree (typespec/linalg.c): v. The matmul
 * intrinsic that replaces the product checks the same sizes itself. */
static IrNode *unchecked(IrNode *n)
{
    if (n->kind != IR_INDEX || n->u.index.n != 1) return n;
    const IrNode *s = n->u.index.items[0];
    if (s->kind != IR_SLICE || s->u.slice.start || s->u.slice.step || !s->u.slice.stop) return n;
    const IrNode *k = s->u.slice.stop;
    if (k->kind != IR_CALL || k->u.call.ckind != IR_CALLEE_INTRINSIC || k->u.call.intrinsic != IR_INTR_CORE_DIM) return n;
    return n->u.index.base;
}

/* x[idx] where x is a 2-D float array independent of both indices: returns x */
static IrNode *row_of(IrNode *n, const IrVar *idx, const IrVar *other)
{
    n = unchecked(n);
    if (n->kind != IR_INDEX || n->u.index.n != 1 || !is_var(n->u.index.items[0], idx)) return NULL;
    IrNode *base = n->u.index.base;
    if (!base->type || base->type->kind != IR_TY_ARRAY || base->type->ndim != 2 || !ir_dtype_is_float(base->type->dtype))
        return NULL;
    if (uses_var(base, idx) || uses_var(base, other)) return NULL;
    return base;
}

/* An expression that can be evaluated twice at no cost and with no effect. */
static bool is_plain(const IrNode *n)
{
    return n->kind == IR_VAR || n->kind == IR_CONST;
}

/* Another node of n's (plain) value: a node appears once in the tree. */
static IrNode *copy_plain(RtArena *a, const IrNode *n)
{
    IrNode *c = ir_node(a, n->kind, n->pos);
    *c = *n;
    return c;
}

/* x.shape[axis] */
static IrNode *dim(RtArena *a, IrNode *x, int axis)
{
    return ir_array_dim(a, x->pos, x, axis);
}

/* l == r, int64 */
static IrNode *equals(RtArena *a, IrNode *l, IrNode *r)
{
    return ir_compare(a, l->pos, IR_CMP_EQ, l, r);
}

/* l & r, bools */
static IrNode *both(RtArena *a, IrNode *l, IrNode *r)
{
    IrNode *n = ir_node(a, IR_BINOP, l->pos);
    n->type = ir_type_scalar(IR_DT_BOOL);
    n->u.binop.op = IR_OP_BITAND;
    n->u.binop.lhs = l;
    n->u.binop.rhs = r;
    return n;
}

/* imap(i, j: reduce[add](map(p, q: p * q, A[i], B[j]))) over (n, m)
 *   -> matmul(A, transpose(B)) if n == A.shape[0] & m == B.shape[0] & A.shape[1] == B.shape[1] else the imap
 * (with sizes that differ, the imap raises at its first element, or not at all when it has none, as NumPy's
 * loop of dot products does) */
static IrNode *as_matmul(RtArena *a, IrNode *m)
{
    if (m->kind != IR_IMAP || m->u.imap.out || m->u.imap.ndim != 2) return NULL;
    IrNode *r = m->u.imap.body;
    if (r->kind == IR_CAST) r = r->u.cast.value;
    if (r->kind != IR_REDUCE || r->u.reduce.op != IR_RED_ADD || r->u.reduce.axis != -1) return NULL;
    IrNode *mul = r->u.reduce.input;
    if (mul->kind != IR_MAP || mul->u.map.ninputs != 2) return NULL;
    IrNode *body = mul->u.map.body;
    if (body->kind != IR_BINOP || body->u.binop.op != IR_OP_MUL) return NULL;
    IrVar *p = mul->u.map.params[0], *q = mul->u.map.params[1];
    if (!((is_var(body->u.binop.lhs, p) && is_var(body->u.binop.rhs, q)) || (is_var(body->u.binop.lhs, q) && is_var(body->u.binop.rhs, p))))
        return NULL;
    IrVar *i = m->u.imap.idx[0], *j = m->u.imap.idx[1];
    IrNode *A = row_of(mul->u.map.inputs[0], i, j), *B = row_of(mul->u.map.inputs[1], j, i);
    if (!A || !B || A->type->dtype != B->type->dtype || A->type->dtype != m->type->dtype) return NULL;
    if (!is_plain(A) || !is_plain(B) || !is_plain(m->u.imap.dims[0]) || !is_plain(m->u.imap.dims[1])) return NULL;
    IrNode *bt = ir_intrinsic_call(a, m->pos, IR_INTR_TRANSPOSE, (IrNode *[]){copy_plain(a, B)}, 1,
                                   ir_type_view(B->type, 2, IR_LAYOUT_ANY));
    IrNode *operands[2] = {copy_plain(a, A), bt};
    IrNode *mm = ir_intrinsic_call(a, m->pos, IR_INTR_MATMUL, operands, 2, ir_type_array(A->type->dtype, 2, IR_LAYOUT_C));
    IrNode *rows_match = both(a, equals(a, copy_plain(a, m->u.imap.dims[0]), dim(a, copy_plain(a, A), 0)),
                              equals(a, copy_plain(a, m->u.imap.dims[1]), dim(a, copy_plain(a, B), 0)));
    IrNode *sizes_match = equals(a, dim(a, copy_plain(a, A), 1), dim(a, copy_plain(a, B), 1));
    IrNode *choice = ir_node(a, IR_IFEXP, m->pos);
    choice->type = m->type;
    choice->u.ifexp.cond = both(a, rows_match, sizes_match);
    choice->u.ifexp.then = mm;
    choice->u.ifexp.orelse = m;
    return choice;
}

static void visit(IrNode **p, void *env)
{
    ir_each_child(*p, visit, env);
    IrNode *mm = as_matmul(env, *p);
    if (mm) *p = mm;
}

static void visit_stmt(IrNode *s, void *env)
{
    ir_each_child(s, visit, env);
}

void ir_recognize_matmul(IrFunc *f)
{
    ir_each_stmt(&f->body, visit_stmt, f->arena);
}
