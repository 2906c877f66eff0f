/* print.c: the print intrinsic typed (ir.h's IR_INTR_PRINT).
 *
 * The frontend left the call's layout (its text and a slot per value) in u.call.text and the values as its
 * arguments. Here each value becomes what the backend appends to the call's printed record, and the kind that
 * tells the shim how to make it a Python object again, so that str() gives what CPython prints:
 *  - a scalar: one slot, int64 (integers and bools) or float64 (floats), two for a complex (its parts); its kind
 *    is its dtype's name, with "w" after it for a Python number (weak: 3 prints as 3, np.int64(3) as 3 too, but
 *    2.0 as 2.0 and np.float32(0.1) as 0.1, and in a tuple repr shows np.float64(2.0));
 *  - an array: the array itself, kind "a:<dtype>" (the shim makes a NumPy array of its elements);
 *  - None: no slot, kind "none"; a tuple: its items in turn, its kind the list of theirs.
 * The text becomes the literal (layout, kinds). Other values (a slice, a dtype, a function) are a CompileError.
 * A raise statement whose arguments are made at run time records its values the same way (ts_record_values). */
#include <stdio.h>
#include <string.h>
#include "ts_internal.h"

typedef struct Flat {
    IrNode **args;
    int n, cap;
    char *kinds;
    size_t len, size;
} Flat;

static void put_kind(Ts *ts, Flat *f, const char *s)
{
    size_t k = strlen(s);
    if (f->len + k + 1 > f->size) {
        size_t size = (f->size ? f->size * 2 : 64) + k;
        char *kinds = rt_arena_alloc(ts->a, size);
        if (f->kinds) memcpy(kinds, f->kinds, f->len);
        f->kinds = kinds;
        f->size = size;
    }
    memcpy(f->kinds + f->len, s, k + 1);
    f->len += k;
}

static void put_arg(Ts *ts, Flat *f, IrNode *v)
{
    if (f->n == f->cap) {
        int cap = f->cap ? 2 * f->cap : 8;
        IrNode **args = ir_nodes(ts->a, cap);
        for (int i = 0; i < f->n; i++) args[i] = f->args[i];
        f->args = args;
        f->cap = cap;
    }
    f->args[f->n++] = v;
}

static bool flatten(Ts *ts, IrPos pos, Flat *f, IrNode *v)
{
    IrType *t = v->type;
    char kind[48];
    switch (t->kind) {
    case IR_TY_SCALAR:
        snprintf(kind, sizeof kind, "'%s%s'", ir_dtype_name(t->dtype), t->weak ? "w" : "");
        put_kind(ts, f, kind);
        if (ir_dtype_is_complex(t->dtype)) {
            IrNode *x = ts_reuse(ts, v), *re = x ? ts_complex_part(ts, pos, x, IR_UOP_REAL) : NULL;
            IrNode *im = x ? ts_complex_part(ts, pos, ir_copy(ts->a, x, NULL), IR_UOP_IMAG) : NULL;
            re = re ? ts_cast(ts, re, ir_type_scalar(IR_DT_FLOAT64)) : NULL;
            im = im ? ts_cast(ts, im, ir_type_scalar(IR_DT_FLOAT64)) : NULL;
            if (!re || !im) return false;
            put_arg(ts, f, re);
            put_arg(ts, f, im);
            return true;
        }
        v = ts_cast(ts, v, ir_type_scalar(ir_dtype_is_float(t->dtype) ? IR_DT_FLOAT64 : IR_DT_INT64));
        if (!v) return false;
        put_arg(ts, f, v);
        return true;
    case IR_TY_ARRAY:
        snprintf(kind, sizeof kind, "'a:%s'", ir_dtype_name(t->dtype));
        put_kind(ts, f, kind);
        put_arg(ts, f, v);
        return true;
    case IR_TY_NONE:
        put_kind(ts, f, "'none'");
        return true;
    case IR_TY_TUPLE: {
        IrNode *x = t->nelems ? ts_reuse(ts, v) : v;
        if (!x) return false;
        put_kind(ts, f, "[");
        for (int i = 0; i < t->nelems; i++) {
            if (i) put_kind(ts, f, ", ");
            if (!flatten(ts, pos, f, ir_tuple_get(ts->a, pos, ir_copy(ts->a, x, NULL), i))) return false;
        }
        put_kind(ts, f, "]");
        return true;
    }
    case IR_TY_SLICE: case IR_TY_RANGE: case IR_TY_DTYPE: case IR_TY_FUNC: case IR_TY_RNG:
        break;
    }
    TS_ERR(ts, pos, "print() of %s is not supported in compiled code (numbers, arrays, None and tuples of them are)",
           ts_type_name(t));
}

const char *ts_record_values(Ts *ts, IrPos pos, IrNode *const *untyped, int n, const char *layout, IrNode ***args,
                             int *nargs)
{
    Flat f = {0};
    put_kind(ts, &f, "[");
    for (int i = 0; i < n; i++) {
        IrNode *v = ts_expr(ts, untyped[i]);
        if (i) put_kind(ts, &f, ", ");
        if (!v || !flatten(ts, pos, &f, v)) return NULL;
    }
    put_kind(ts, &f, "]");
    size_t len = strlen(layout) + f.len + 8;
    char *text = rt_arena_alloc(ts->a, len);
    snprintf(text, len, "(%s, %s)", layout, f.kinds);
    *args = f.args ? f.args : ir_nodes(ts->a, 1);
    *nargs = f.n;
    return text;
}

IrNode *ts_print(Ts *ts, const IrNode *n)
{
    IrNode **args;
    int nargs;
    const char *text = ts_record_values(ts, n->pos, n->u.call.args, n->u.call.nargs, n->u.call.text, &args, &nargs);
    if (!text) return NULL;
    IrNode *r = ir_intrinsic_call(ts->a, n->pos, IR_INTR_PRINT, args, nargs, ir_type_none());
    r->u.call.text = text;
    return r;
}
