/* node.c: constructors for IR functions, variables and nodes. All memory comes from the function's arena. */
#include <stdio.h>
#include <string.h>
#include "ir.h"

IrFunc *ir_func_new(RtArena *a, const char *name, const char *file, int line)
{
    IrFunc *f = rt_arena_alloc(a, sizeof *f);
    f->name = rt_arena_strdup(a, name);
    f->file = rt_arena_strdup(a, file ? file : "<unknown>");
    f->line = line;
    f->arena = a;
    return f;
}

static IrVar *add_var(IrFunc *f, const char *name, IrType *type)
{
    if (f->nvars == f->cap_vars) {
        int cap = f->cap_vars ? f->cap_vars * 2 : 16;
        IrVar **vars = rt_arena_alloc(f->arena, sizeof *vars * (size_t)cap);
        if (f->nvars) memcpy(vars, f->vars, sizeof *vars * (size_t)f->nvars);
        f->vars = vars;
        f->cap_vars = cap;
    }
    IrVar *v = rt_arena_alloc(f->arena, sizeof *v);
    v->name = rt_arena_strdup(f->arena, name);
    v->id = f->nvars;
    v->type = type;
    f->vars[f->nvars++] = v;
    return v;
}

IrVar *ir_func_var(IrFunc *f, const char *name)
{
    for (int i = 0; i < f->nvars; i++)
        if (strcmp(f->vars[i]->name, name) == 0) return f->vars[i];
    return add_var(f, name, NULL);
}

IrVar *ir_func_new_var(IrFunc *f, const char *name)
{
    return add_var(f, name, NULL);
}

IrVar *ir_func_temp(IrFunc *f, IrType *type)
{
    char name[32];
    snprintf(name, sizeof name, "$t%d", f->nvars);
    return add_var(f, name, type);
}

IrNode *ir_node(RtArena *a, IrKind kind, IrPos pos)
{
    IrNode *n = rt_arena_alloc(a, sizeof *n);
    n->kind = kind;
    n->pos = pos;
    return n;
}

IrNode **ir_nodes(RtArena *a, int n)
{
    return rt_arena_alloc(a, sizeof(IrNode *) * (size_t)(n > 0 ? n : 1));
}

void ir_block_push(RtArena *a, IrBlock *b, IrNode *stmt)
{
    if (b->n == b->cap) {
        int cap = b->cap ? b->cap * 2 : 8;
        IrNode **stmts = ir_nodes(a, cap);
        if (b->n) memcpy(stmts, b->stmts, sizeof *stmts * (size_t)b->n);
        b->stmts = stmts;
        b->cap = cap;
    }
    b->stmts[b->n++] = stmt;
}

IrNode *ir_const_int(RtArena *a, IrPos pos, IrType *t, int64_t v)
{
    IrNode *n = ir_node(a, IR_CONST, pos);
    n->type = t;
    n->u.konst.i = v;
    n->u.konst.f = (double)v;
    return n;
}

IrNode *ir_const_float(RtArena *a, IrPos pos, IrType *t, double v)
{
    IrNode *n = ir_node(a, IR_CONST, pos);
    n->type = t;
    n->u.konst.f = v;
    return n;
}

IrNode *ir_var_ref(RtArena *a, IrPos pos, IrVar *v)
{
    IrNode *n = ir_node(a, IR_VAR, pos);
    n->u.var.var = v;
    n->type = v->type;
    return n;
}

IrNode *ir_tuple_get(RtArena *a, IrPos pos, IrNode *tuple, int k)
{
    IrNode *g = ir_node(a, IR_TUPLE_GET, pos);
    g->u.tuple_get.tuple = tuple;
    g->u.tuple_get.k = k;
    if (tuple->type) g->type = tuple->type->elems[k];
    return g;
}

IrNode *ir_intrinsic_call(RtArena *a, IrPos pos, IrIntrinsic k, IrNode *const *args, int nargs, IrType *t)
{
    IrNode *c = ir_node(a, IR_CALL, pos);
    c->type = t;
    c->u.call.ckind = IR_CALLEE_INTRINSIC;
    c->u.call.intrinsic = k;
    c->u.call.nargs = nargs;
    c->u.call.args = ir_nodes(a, nargs);
    if (nargs) memcpy(c->u.call.args, args, sizeof *args * (size_t)nargs);
    return c;
}

const char *ir_intrinsic_name(IrIntrinsic k)
{
    switch (k) {
    case IR_INTR_TRANSPOSE: return "transpose";
    case IR_INTR_RESHAPE: return "reshape";
    case IR_INTR_RESHAPE_VIEWS: return "reshape_views";
    case IR_INTR_CONCATENATE: return "concatenate";
    case IR_INTR_MATMUL: return "matmul";
    case IR_INTR_MASK_SELECT: return "mask_select";
    case IR_INTR_CORE_DIM: return "core_dim";
    case IR_INTR_RAISE: return "raise";
    case IR_INTR_PRINT: return "print";
    case IR_INTR_SORT: return "sort";
    case IR_INTR_SEARCH: return "search";
    case IR_INTR_LINALG: return "linalg";
    case IR_INTR_RNG_NEW: return "rng_new";
    case IR_INTR_RNG_DRAW: return "rng_draw";
    case IR_INTR_COUNT: break;
    }
    return "?";
}

bool ir_is_statement(IrKind k)
{
    return k >= IR_ASSIGN;
}

bool ir_raise_recorded(const IrNode *n)
{
    return n->kind == IR_CALL && n->u.call.ckind == IR_CALLEE_INTRINSIC && n->u.call.intrinsic == IR_INTR_RAISE &&
           n->u.call.nargs >= 4 && n->u.call.args[0]->kind == IR_CONST && n->u.call.args[0]->u.konst.i == RT_ERR_RAISE &&
           n->u.call.args[3]->kind == IR_CONST && n->u.call.args[3]->u.konst.i == 1;
}

bool ir_is_raise_stmt(const IrNode *s)
{
    const IrNode *v = s->kind == IR_EXPR_STMT ? s->u.expr_stmt.value : NULL;
    return v && v->kind == IR_CALL && v->u.call.ckind == IR_CALLEE_INTRINSIC && v->u.call.intrinsic == IR_INTR_RAISE;
}

const char *ir_kind_name(IrKind k)
{
    static const char *names[IR_KIND_COUNT] = {
        [IR_CONST] = "const", [IR_VAR] = "var", [IR_NAMEREF] = "nameref", [IR_BINOP] = "binop",
        [IR_UNOP] = "unop", [IR_COMPARE] = "compare", [IR_BOOLOP] = "boolop", [IR_IFEXP] = "ifexp",
        [IR_CALL] = "call", [IR_INDEX] = "index", [IR_SLICE] = "slice", [IR_ATTR] = "attr",
        [IR_TUPLE] = "tuple", [IR_TUPLE_GET] = "tuple_get", [IR_LAMBDA] = "lambda", [IR_COMPREHENSION] = "comprehension", [IR_CAST] = "cast", [IR_MATH] = "math",
        [IR_ARRAY_DIM] = "array_dim", [IR_ALLOC] = "alloc", [IR_MAP] = "map", [IR_IMAP] = "imap", [IR_REDUCE] = "reduce", [IR_SCAN] = "scan",
        [IR_BCAST_SHAPE] = "bcast_shape", [IR_ASSIGN] = "assign", [IR_AUGASSIGN] = "augassign",
        [IR_STORE] = "store", [IR_IF] = "if", [IR_WHILE] = "while", [IR_FOR_RANGE] = "for_range",
        [IR_FOR_ITER] = "for_iter", [IR_BREAK] = "break", [IR_CONTINUE] = "continue", [IR_RETURN] = "return",
        [IR_EXPR_STMT] = "expr", [IR_PASS] = "pass",
    };
    return (k >= 0 && k < IR_KIND_COUNT && names[k]) ? names[k] : "?";
}

IrNode *ir_array_dim(RtArena *a, IrPos pos, IrNode *array, int axis)
{
    IrNode *d = ir_node(a, IR_ARRAY_DIM, pos);
    d->type = ir_type_scalar(IR_DT_INT64);
    d->u.array_dim.array = array;
    d->u.array_dim.axis = axis;
    return d;
}

IrNode *ir_compare(RtArena *a, IrPos pos, IrCmpOp op, IrNode *l, IrNode *r)
{
    IrNode *c = ir_node(a, IR_COMPARE, pos);
    c->type = ir_type_scalar(IR_DT_BOOL);
    c->u.compare.nops = 1;
    c->u.compare.ops = rt_arena_alloc(a, sizeof(IrCmpOp));
    c->u.compare.ops[0] = op;
    c->u.compare.operands = ir_nodes(a, 2);
    c->u.compare.operands[0] = l;
    c->u.compare.operands[1] = r;
    return c;
}
