/* args.c: reading the arguments of a library call: by position or keyword, constants, shapes, dtypes. */
#include <string.h>
#include "ts_internal.h"


bool ts_name_is(const char *q, const char *prefix, const char *name)
{
    size_t n = strlen(prefix);
    return strncmp(q, prefix, n) == 0 && strcmp(q + n, name) == 0;
}

/* The argument at position i or with keyword kw, or NULL. */
IrNode *ts_arg(Args *a, int i, const char *kw)
{
    if (i >= 0 && i < a->npos) return a->pos[i];
    for (int k = 0; kw && k < a->call->u.call.nkw; k++)
        if (strcmp(a->call->u.call.kwnames[k], kw) == 0) {
            a->kw_used |= 1u << (k & 31);
            return a->kw[k];
        }
    return NULL;
}

const IrNode *ts_kw(Args *a, const char *kw)
{
    for (int k = 0; k < a->call->u.call.nkw; k++)
        if (strcmp(a->call->u.call.kwnames[k], kw) == 0) {
            a->kw_used |= 1u << (k & 31);
            return a->call->u.call.kwargs[k];
        }
    return NULL;
}

/* Keyword arguments that must be compile-time constants are read from the untyped call. */
const IrNode *ts_raw_kw(const IrNode *call, const char *kw)
{
    for (int k = 0; k < call->u.call.nkw; k++)
        if (strcmp(call->u.call.kwnames[k], kw) == 0) return call->u.call.kwargs[k];
    return NULL;
}

bool ts_const_int(const IrNode *n, int64_t *v)
{
    if (!n) return false;
    if (n->kind == IR_CONST && n->type && n->type->kind == IR_TY_SCALAR && !ir_dtype_is_float(n->type->dtype)) {
        *v = n->u.konst.i;
        return true;
    }
    if (n->kind == IR_UNOP && n->u.unop.op == IR_UOP_NEG && ts_const_int(n->u.unop.operand, v)) {
        *v = -*v;
        return true;
    }
    return false;
}

IrNode *ts_check_args(Ts *ts, Args *a, const char *fname, int min, int max)
{
    if (a->npos < min || a->npos > max) {
        if (min == max) TS_ERR(ts, a->call->pos, "%s() takes %d argument%s, %d given", fname, min, min == 1 ? "" : "s", a->npos);
        TS_ERR(ts, a->call->pos, "%s() takes %d to %d arguments, %d given", fname, min, max, a->npos);
    }
    return (IrNode *)a->call; /* any non-NULL */
}

bool ts_dtype_arg(Ts *ts, IrNode *d, IrDtype *out)
{
    if (!d || d->type->kind == IR_TY_NONE) return true;
    if (d->type->kind != IR_TY_DTYPE) return false;
    *out = d->type->dtype;
    return true;
}

/* A shape argument: an int or a tuple of ints, as a list of int64 nodes. */
int ts_shape_arg(Ts *ts, IrNode *s, IrNode ***dims)
{
    if (ts_is_int_scalar(s->type)) {
        *dims = ir_nodes(ts->a, 1);
        (*dims)[0] = ts_cast(ts, s, ir_type_scalar(IR_DT_INT64));
        return 1;
    }
    if (s->type->kind != IR_TY_TUPLE) return -1;
    int n = s->type->nelems;
    s = ts_reuse(ts, s);
    *dims = ir_nodes(ts->a, n);
    for (int i = 0; i < n; i++) {
        if (!ts_is_int_scalar(s->type->elems[i])) return -1;
        (*dims)[i] = ts_cast(ts, ir_tuple_get(ts->a, s->pos, s, i), ir_type_scalar(IR_DT_INT64));
    }
    return n;
}

