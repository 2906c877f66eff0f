/* wrap_form.c: affine forms in int64's wrapping arithmetic (wrap_form.h). */
#include "wrap_form.h"

bool ir_is_int64(const IrType *t)
{
    return t && t->kind == IR_TY_SCALAR && t->dtype == IR_DT_INT64;
}

bool ir_form_same_atom(const IrNode *a, const IrNode *b)
{
    if (a == b) return true;
    if (a->kind != b->kind || a->type != b->type) return false;
    if (a->kind == IR_VAR) return a->u.var.var == b->u.var.var;
    if (a->kind == IR_ARRAY_DIM)
        return a->u.array_dim.axis == b->u.array_dim.axis &&
               ir_form_same_atom(a->u.array_dim.array, b->u.array_dim.array);
    if (a->kind == IR_TUPLE_GET)
        return a->u.tuple_get.k == b->u.tuple_get.k && ir_form_same_atom(a->u.tuple_get.tuple, b->u.tuple_get.tuple);
    if (a->kind == IR_CAST) return ir_form_same_atom(a->u.cast.value, b->u.cast.value);
    return false;
}

bool ir_form_add(IrWrapForm *out, const IrWrapForm *x, const IrWrapForm *y, uint64_t sign)
{
    IrWrapForm r = *x;
    r.konst += sign * y->konst;
    for (int i = 0; i < y->n; i++) {
        int j = 0;
        while (j < r.n && !ir_form_same_atom(r.atom[j], y->atom[i])) j++;
        if (j == r.n) {
            if (r.n == IR_FORM_TERMS) return false;
            r.atom[r.n] = y->atom[i];
            r.coef[r.n++] = 0;
        }
        r.coef[j] += sign * y->coef[i];
        if (r.coef[j] == 0) { /* cancelled: i - i */
            r.atom[j] = r.atom[r.n - 1];
            r.coef[j] = r.coef[--r.n];
        }
    }
    *out = r;
    return true;
}

void ir_form_scale(IrWrapForm *f, uint64_t c)
{
    f->konst *= c;
    int n = 0;
    for (int i = 0; i < f->n; i++)
        if ((f->coef[i] *= c) != 0) {
            f->atom[n] = f->atom[i];
            f->coef[n++] = f->coef[i];
        }
    f->n = n;
}

static bool form_at(const IrNode *e, IrWrapForm *out, bool (*atom_ok)(const IrNode *, void *), void *env, int depth)
{
    *out = (IrWrapForm){0};
    if (!ir_is_int64(e->type) || depth == 32) return false;
    if (e->kind == IR_CONST) {
        out->konst = (uint64_t)e->u.konst.i;
        return true;
    }
    if (e->kind == IR_UNOP && (e->u.unop.op == IR_UOP_NEG || e->u.unop.op == IR_UOP_POS)) {
        if (!form_at(e->u.unop.operand, out, atom_ok, env, depth + 1)) return false;
        if (e->u.unop.op == IR_UOP_NEG) ir_form_scale(out, (uint64_t)-1);
        return true;
    }
    if (e->kind == IR_BINOP && (e->u.binop.op == IR_OP_ADD || e->u.binop.op == IR_OP_SUB || e->u.binop.op == IR_OP_MUL)) {
        IrWrapForm l, r;
        if (!form_at(e->u.binop.lhs, &l, atom_ok, env, depth + 1) || !form_at(e->u.binop.rhs, &r, atom_ok, env, depth + 1))
            return false;
        if (e->u.binop.op != IR_OP_MUL) return ir_form_add(out, &l, &r, e->u.binop.op == IR_OP_ADD ? 1 : (uint64_t)-1);
        if (l.n && r.n) return false; /* not affine */
        if (r.n) {
            IrWrapForm t = l;
            l = r;
            r = t;
        }
        ir_form_scale(&l, r.konst);
        *out = l;
        return true;
    }
    if (atom_ok && !atom_ok(e, env)) return false;
    out->n = 1;
    out->coef[0] = 1;
    out->atom[0] = e;
    return true;
}

bool ir_form_of(const IrNode *e, IrWrapForm *out, bool (*atom_ok)(const IrNode *atom, void *env), void *env)
{
    return form_at(e, out, atom_ok, env, 0);
}
