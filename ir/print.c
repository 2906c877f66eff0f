/* print.c: the readable text form of the IR. It is what f.inspect_types() shows and what IR tests compare, so
 * it must be deterministic and stable: one statement a line, expressions inline, types after a colon; code
 * inlined from another file says so (`[from path]`), since errors raised there name that file. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ir.h"

typedef struct Out {
    char *buf;
    size_t len, cap;
    const char *func_file; /* the file of the function being printed */
    const char *file;      /* the file of the node around the one being printed */
} Out;

static void put(Out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(Out *o, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int k = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
        va_end(ap);
        if (k >= 0 && o->len + (size_t)k < o->cap) { o->len += (size_t)k; return; }
        o->cap = o->cap * 2 + (size_t)(k > 0 ? k : 0) + 256;
        o->buf = realloc(o->buf, o->cap);
    }
}

static const char *binop_sym(IrBinOp op)
{
    static const char *s[] = {"+", "-", "*", "/", "//", "%", "**", "@", "<<", ">>", "&", "|", "^", "min", "max", "complex"};
    return s[op];
}

static const char *cmp_sym(IrCmpOp op)
{
    static const char *s[] = {"==", "!=", "<", "<=", ">", ">="};
    return s[op];
}

static const char *reduce_name(IrReduceOp op)
{
    static const char *s[] = {"add", "mul", "min", "max", "and", "or", "argmin", "argmax", "nanmin", "nanmax", "func"};
    return s[op];
}

static void expr(Out *o, const IrNode *n);

/* a user's combine of a reduce or scan: "lambda acc, x: body, init=..., " */
static void combine(Out *o, const IrCombine *c)
{
    put(o, "lambda %s, %s: ", c->acc_param->name, c->elem_param->name);
    expr(o, c->body);
    if (c->init) { put(o, ", init="); expr(o, c->init); }
    put(o, ", ");
}

/* The input of a reduce or scan: the identity map that ir_reduce_inputs_as_maps puts around an array prints as
 * the array (that pass makes every input a map, so nothing is lost), the way it was written. */
static void reduce_input(Out *o, const IrNode *in)
{
    bool identity = in->kind == IR_MAP && in->u.map.nparams == 1 && in->u.map.ninputs == 1 && !in->u.map.out &&
                    in->u.map.body->kind == IR_VAR && in->u.map.body->u.var.var == in->u.map.params[0];
    expr(o, identity ? in->u.map.inputs[0] : in);
}

static void type_of(Out *o, const IrType *t)
{
    char b[256];
    ir_type_str(t, b, sizeof b);
    put(o, "%s", b);
}

static void exprs(Out *o, IrNode *const *v, int n)
{
    for (int i = 0; i < n; i++) {
        if (i) put(o, ", ");
        expr(o, v[i]);
    }
}

/* A parallel region prints as `parallel[uses]` (plain `parallel` when it uses none) before its node, after a
 * prange loop's range. */
static void region(Out *o, const IrRegion *r)
{
    put(o, "parallel");
    for (int i = 0; i < r->nuses; i++) put(o, "%s%s", i ? ", " : "[", r->uses[i]->name);
    if (r->nuses) put(o, "]");
}

/* Code from another file than the one around it (ir_inline_calls copies callees of other files, whose nodes
 * name their file in IrPos.file) prints as `[from path] node`; the node's children are then in that file unless
 * they say otherwise. A node with no position at all (made by a pass) is in the file around it. Returns the
 * file around, which the caller restores after the node. */
static const char *from_file(Out *o, IrPos pos)
{
    const char *around = o->file;
    if (!pos.file && pos.line == 0) return around;
    const char *file = pos.file ? pos.file : o->func_file;
    if (strcmp(file, around) != 0) {
        put(o, "[from %s] ", file);
        o->file = file;
    }
    return around;
}

static void expr_node(Out *o, const IrNode *n);

static void expr(Out *o, const IrNode *n)
{
    if (!n) { put(o, "_"); return; }
    /* a constant, or a variable that cannot raise, is the same whichever file it comes from (an argument
     * substituted into an inlined callee) */
    bool leaf = n->kind == IR_CONST || (n->kind == IR_VAR && !n->u.var.check_bound);
    const char *around = leaf ? o->file : from_file(o, n->pos);
    expr_node(o, n);
    o->file = around;
}

static void expr_node(Out *o, const IrNode *n)
{
    if (n->region && n->kind != IR_FOR_RANGE) { region(o, n->region); put(o, " "); }
    switch (n->kind) {
    case IR_CONST:
        if (!n->type || n->type->kind == IR_TY_NONE) put(o, "None");
        else if (n->type->kind == IR_TY_SCALAR && ir_dtype_is_float(n->type->dtype)) put(o, "%.17g", n->u.konst.f);
        else if (n->type->kind == IR_TY_SCALAR && ir_dtype_is_complex(n->type->dtype))
            put(o, "(%.17g%+.17gj)", n->u.konst.f, n->u.konst.im);
        else if (n->type->kind == IR_TY_SCALAR && n->type->dtype == IR_DT_BOOL) put(o, n->u.konst.i ? "True" : "False");
        else put(o, "%lld", (long long)n->u.konst.i);
        if (n->type && n->type->kind == IR_TY_SCALAR && !n->type->weak) { put(o, ":"); type_of(o, n->type); }
        return;
    case IR_VAR: put(o, "%s", n->u.var.var->name); return;
    case IR_NAMEREF: put(o, "%s", n->u.name.name); return;
    case IR_BINOP:
        if (n->u.binop.op == IR_OP_MIN || n->u.binop.op == IR_OP_MAX || n->u.binop.op == IR_OP_COMPLEX) {
            put(o, "%s(", binop_sym(n->u.binop.op)); expr(o, n->u.binop.lhs); put(o, ", ");
            expr(o, n->u.binop.rhs); put(o, ")");
            return;
        }
        put(o, "("); expr(o, n->u.binop.lhs); put(o, " %s ", binop_sym(n->u.binop.op)); expr(o, n->u.binop.rhs);
        put(o, ")");
        return;
    case IR_UNOP: {
        static const char *s[] = {"-", "+", "~", "not ", "abs ", "real ", "imag ", "conj "};
        put(o, "%s", s[n->u.unop.op]); expr(o, n->u.unop.operand);
        return;
    }
    case IR_COMPARE:
        put(o, "(");
        expr(o, n->u.compare.operands[0]);
        for (int i = 0; i < n->u.compare.nops; i++) {
            put(o, " %s ", cmp_sym(n->u.compare.ops[i]));
            expr(o, n->u.compare.operands[i + 1]);
        }
        put(o, ")");
        return;
    case IR_BOOLOP:
        put(o, "(");
        for (int i = 0; i < n->u.boolop.n; i++) {
            if (i) put(o, n->u.boolop.is_and ? " and " : " or ");
            expr(o, n->u.boolop.values[i]);
        }
        put(o, ")");
        return;
    case IR_IFEXP:
        put(o, "("); expr(o, n->u.ifexp.then); put(o, " if %s", n->u.ifexp.versioned ? "versioned " : "");
        expr(o, n->u.ifexp.cond); put(o, " else ");
        expr(o, n->u.ifexp.orelse); put(o, ")");
        return;
    case IR_CALL:
        if (n->u.call.callee) put(o, "%s", n->u.call.callee->symbol ? n->u.call.callee->symbol : n->u.call.callee->name);
        else if (n->u.call.ckind == IR_CALLEE_INTRINSIC) put(o, "%s", ir_intrinsic_name(n->u.call.intrinsic));
        else put(o, "%s%s", n->u.call.ckind == IR_CALLEE_METHOD ? "." : "", n->u.call.name ? n->u.call.name : "<func>");
        put(o, "(");
        exprs(o, n->u.call.args, n->u.call.nargs);
        for (int i = 0; i < n->u.call.nkw; i++) {
            put(o, "%s%s=", (i || n->u.call.nargs) ? ", " : "", n->u.call.kwnames[i]);
            expr(o, n->u.call.kwargs[i]);
        }
        if (n->u.call.out) { put(o, ", out="); expr(o, n->u.call.out); }
        if (n->u.call.ckind == IR_CALLEE_INTRINSIC && n->u.call.name) /* a raise statement's exception */
            put(o, "%s%s%s", n->u.call.nargs ? ", " : "", n->u.call.name, n->u.call.text ? n->u.call.text : "()");
        put(o, ")");
        return;
    case IR_INDEX:
        expr(o, n->u.index.base); put(o, "[");
        exprs(o, n->u.index.items, n->u.index.n);
        put(o, "]%s", n->u.index.proven ? "!proven" : n->type && !n->u.index.checked ? "!nocheck" : "");
        return;
    case IR_SLICE:
        if (n->u.slice.ellipsis) {
            put(o, "...");
            return;
        }
        if (n->u.slice.start) expr(o, n->u.slice.start);
        put(o, ":");
        if (n->u.slice.stop) expr(o, n->u.slice.stop);
        if (n->u.slice.step) { put(o, ":"); expr(o, n->u.slice.step); }
        return;
    case IR_ATTR: expr(o, n->u.attr.value); put(o, ".%s", n->u.attr.name); return;
    case IR_TUPLE: put(o, n->u.tuple.one_pass ? "one_pass (" : "("); exprs(o, n->u.tuple.items, n->u.tuple.n); put(o, n->u.tuple.n == 1 ? ",)" : ")"); return;
    case IR_TUPLE_GET: expr(o, n->u.tuple_get.tuple); put(o, "[%d]", n->u.tuple_get.k); return;
    case IR_LAMBDA: put(o, "<function %s>", n->u.lambda.func ? n->u.lambda.func->name : "global"); return;
    case IR_COMPREHENSION:
        put(o, "["); expr(o, n->u.comprehension.elt); put(o, " for %s in ", n->u.comprehension.target->name);
        expr(o, n->u.comprehension.iter);
        if (n->u.comprehension.cond) { put(o, " if "); expr(o, n->u.comprehension.cond); }
        put(o, "]");
        return;
    case IR_CAST: type_of(o, n->type); put(o, "("); expr(o, n->u.cast.value); put(o, ")"); return;
    case IR_MATH:
        put(o, "%s(", ir_math_name(n->u.math.fn));
        exprs(o, n->u.math.args, ir_math_arity(n->u.math.fn));
        put(o, ")");
        return;
    case IR_ARRAY_DIM: expr(o, n->u.array_dim.array); put(o, ".shape[%d]", n->u.array_dim.axis); return;
    case IR_ALLOC: put(o, "alloc "); type_of(o, n->type); put(o, " ("); exprs(o, n->u.alloc.dims, n->u.alloc.ndim); put(o, ")"); return;
    case IR_BCAST_SHAPE: put(o, "bcast_shape[%d](", n->u.bcast_shape.axis); exprs(o, n->u.bcast_shape.args, n->u.bcast_shape.n); put(o, ")"); return;
    case IR_MAP:
        put(o, "map(lambda ");
        for (int i = 0; i < n->u.map.nparams; i++) put(o, "%s%s", i ? ", " : "", n->u.map.params[i]->name);
        put(o, ": "); expr(o, n->u.map.body); put(o, ", "); exprs(o, n->u.map.inputs, n->u.map.ninputs);
        if (n->u.map.out) { put(o, ", out="); expr(o, n->u.map.out); }
        put(o, ")");
        return;
    case IR_IMAP:
        put(o, "imap(lambda ");
        for (int i = 0; i < n->u.imap.ndim; i++) put(o, "%s%s", i ? ", " : "", n->u.imap.idx[i]->name);
        put(o, ": "); expr(o, n->u.imap.body); put(o, ", shape=("); exprs(o, n->u.imap.dims, n->u.imap.ndim); put(o, ")");
        if (n->u.imap.out) { put(o, ", out="); expr(o, n->u.imap.out); }
        put(o, ")");
        return;
    case IR_SCAN:
        put(o, "scan[%s](", reduce_name(n->u.scan.op));
        if (n->u.scan.op == IR_RED_FUNC) combine(o, &n->u.scan.combine);
        reduce_input(o, n->u.scan.input);
        if (n->u.scan.axis >= 0) put(o, ", axis=%d", n->u.scan.axis);
        if (n->u.scan.out) { put(o, ", out="); expr(o, n->u.scan.out); }
        put(o, ")");
        return;
    case IR_REDUCE:
        put(o, "reduce[%s](", reduce_name(n->u.reduce.op));
        if (n->u.reduce.op == IR_RED_FUNC) combine(o, &n->u.reduce.combine);
        reduce_input(o, n->u.reduce.input);
        if (n->u.reduce.axis >= 0) put(o, ", axis=%d", n->u.reduce.axis);
        if (n->u.reduce.out) { put(o, ", out="); expr(o, n->u.reduce.out); }
        put(o, ")");
        return;
    default:
        put(o, "<%s>", ir_kind_name(n->kind));
        return;
    }
}

static void block(Out *o, const IrBlock *b, int depth);

static void indent(Out *o, int depth)
{
    put(o, "%*s", depth * 4, "");
}

static void stmt_node(Out *o, const IrNode *s, int depth);

static void stmt(Out *o, const IrNode *s, int depth)
{
    indent(o, depth);
    const char *around = from_file(o, s->pos);
    stmt_node(o, s, depth);
    o->file = around;
}

static void stmt_node(Out *o, const IrNode *s, int depth)
{
    switch (s->kind) {
    case IR_ASSIGN:
        put(o, "%s = ", s->u.assign.var->name); expr(o, s->u.assign.value);
        if (s->u.assign.value->type) { put(o, "  : "); type_of(o, s->u.assign.value->type); }
        put(o, "\n");
        return;
    case IR_AUGASSIGN: put(o, "%s %s= ", s->u.augassign.var->name, binop_sym(s->u.augassign.op)); expr(o, s->u.augassign.value); put(o, "\n"); return;
    case IR_STORE: expr(o, s->u.store.target); put(o, " = "); expr(o, s->u.store.value); put(o, "\n"); return;
    case IR_IF:
        put(o, "if %s%s", s->u.if_.versioned ? "versioned " : "", s->u.if_.nest ? "nest " : "");
        expr(o, s->u.if_.cond); put(o, ":\n");
        block(o, &s->u.if_.then, depth + 1);
        if (s->u.if_.orelse.n) { indent(o, depth); put(o, "else:\n"); block(o, &s->u.if_.orelse, depth + 1); }
        return;
    case IR_WHILE: put(o, "while "); expr(o, s->u.while_.cond); put(o, ":\n"); block(o, &s->u.while_.body, depth + 1); return;
    case IR_FOR_RANGE:
        put(o, "for %s in %s(", s->u.for_range.var->name, s->u.for_range.auto_parallel ? "range[parallel]" : s->u.for_range.parallel ? "prange" : "range"); expr(o, s->u.for_range.start); put(o, ", ");
        expr(o, s->u.for_range.stop); put(o, ", "); expr(o, s->u.for_range.step); put(o, ")");
        if (s->u.for_range.proven_copy) put(o, " proven");
        for (int i = 0; i < s->u.for_range.nreds; i++)
            put(o, "%s%s %s", i ? ", " : " reducing ", s->u.for_range.reds[i].var->name, reduce_name(s->u.for_range.reds[i].op));
        if (s->region) { put(o, " "); region(o, s->region); }
        put(o, ":\n");
        block(o, &s->u.for_range.body, depth + 1);
        return;
    case IR_FOR_ITER:
        put(o, "for %s in ", s->u.for_iter.var->name); expr(o, s->u.for_iter.iterable); put(o, ":\n");
        block(o, &s->u.for_iter.body, depth + 1);
        return;
    case IR_BREAK: put(o, "break\n"); return;
    case IR_CONTINUE: put(o, "continue\n"); return;
    case IR_RETURN: put(o, "return "); expr(o, s->u.ret.value); put(o, "\n"); return;
    case IR_EXPR_STMT: expr(o, s->u.expr_stmt.value); put(o, "\n"); return;
    case IR_PASS: put(o, "pass\n"); return;
    default: expr(o, s); put(o, "\n"); return;
    }
}

static void block(Out *o, const IrBlock *b, int depth)
{
    if (b->n == 0) { indent(o, depth); put(o, "pass\n"); }
    for (int i = 0; i < b->n; i++) stmt(o, b->stmts[i], depth);
}

static void func(Out *o, const IrFunc *f)
{
    o->func_file = o->file = f->file;
    put(o, "def %s(", f->symbol ? f->symbol : f->name);
    for (int i = 0; i < f->nparams; i++) {
        put(o, "%s%s", i ? ", " : "", f->params[i]->name);
        if (f->params[i]->type) { put(o, ": "); type_of(o, f->params[i]->type); }
    }
    put(o, ")");
    if (f->ret_type) { put(o, " -> "); type_of(o, f->ret_type); }
    put(o, ":\n");
    block(o, &f->body, 1);
}

char *ir_print_func(const IrFunc *f)
{
    Out o = {malloc(1024), 0, 1024, "", ""};
    o.buf[0] = 0;
    func(&o, f);
    for (int i = 0; i < f->ncallees; i++) { put(&o, "\n"); func(&o, f->callees[i]); }
    return o.buf;
}
