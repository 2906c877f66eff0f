/* hash.c: the canonical hash of a typed IrFunc, the content address of a compilation (the disk cache's key,
 * and the prefix of the symbols a backend defines for it).
 *
 * The IR is written out as a canonical byte stream and hashed with SHA-256 (written out below; no dependency).
 * The stream holds every field that can change the code a backend makes: every node's kind, type and source
 * position (line numbers are compiled into error messages), the file, flags such as out_is_fresh, checked,
 * check_bound, maybe_unbound and unpack_n, variables by id with their names and types, types in full (never
 * through ir_type_str's 256-byte buffer), lambda bodies, and the callees, whole. Each integer is 8 bytes, each
 * string and list carries its length, and each node and type starts with its kind (a function with 0), where
 * -1 stands for NULL, so two different IRs never write the same stream. Process addresses (func_handle, IrType.func) are never hashed.
 *
 * Two functions that print the same can hash differently (a position, a flag the printer leaves out); two that
 * hash the same compile to the same code. A field added to IrNode, IrFunc, IrVar or IrType must be added here
 * too: the switch has no default, so a new kind cannot be forgotten, but a new field can. */
#include <string.h>
#include "ir.h"

/* ---------------- SHA-256 (FIPS 180-4) ---------------- */

typedef struct Sha256 {
    uint32_t h[8];
    uint64_t len;        /* bytes hashed so far */
    unsigned char buf[64];
    size_t nbuf;
} Sha256;

static const uint32_t sha_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t ror(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void sha_block(Sha256 *s, const unsigned char *p)
{
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3], e = s->h[4], f = s->h[5], g = s->h[6], h = s->h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + sha_k[i] + w[i];
        uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        h = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    s->h[0] += a; s->h[1] += b; s->h[2] += c; s->h[3] += d; s->h[4] += e; s->h[5] += f; s->h[6] += g; s->h[7] += h;
}

static void sha_init(Sha256 *s)
{
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, h0, sizeof h0);
    s->len = 0;
    s->nbuf = 0;
}

static void sha_update(Sha256 *s, const void *data, size_t n)
{
    const unsigned char *p = data;
    s->len += n;
    while (n) {
        size_t k = 64 - s->nbuf < n ? 64 - s->nbuf : n;
        memcpy(s->buf + s->nbuf, p, k);
        s->nbuf += k;
        p += k;
        n -= k;
        if (s->nbuf == 64) {
            sha_block(s, s->buf);
            s->nbuf = 0;
        }
    }
}

static void sha_final(Sha256 *s, unsigned char out[32])
{
    uint64_t bits = s->len * 8;
    unsigned char pad = 0x80, zero = 0;
    sha_update(s, &pad, 1);
    while (s->nbuf != 56) sha_update(s, &zero, 1);
    unsigned char lenb[8];
    for (int i = 0; i < 8; i++) lenb[i] = (unsigned char)(bits >> (56 - 8 * i));
    sha_update(s, lenb, 8);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 4; j++) out[4 * i + j] = (unsigned char)(s->h[i] >> (24 - 8 * j));
}

void ir_sha256(const void *data, size_t n, unsigned char out[IR_HASH_BYTES])
{
    Sha256 s;
    sha_init(&s);
    sha_update(&s, data, n);
    sha_final(&s, out);
}

void ir_hash_hex(const unsigned char hash[IR_HASH_BYTES], char out[2 * IR_HASH_BYTES + 1])
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < IR_HASH_BYTES; i++) {
        out[2 * i] = hex[hash[i] >> 4];
        out[2 * i + 1] = hex[hash[i] & 15];
    }
    out[2 * IR_HASH_BYTES] = 0;
}

/* ---------------- the canonical stream ---------------- */

#define MAX_FUNC_DEPTH 64 /* functions being written, nested through lambdas and callees */

typedef struct Enc {
    Sha256 sha;
    const IrFunc *open[MAX_FUNC_DEPTH]; /* the functions being written, outermost first */
    int nopen;
    bool unplaced; /* ir_hash_func_unplaced: lines and files are left out */
} Enc;

static void put_int(Enc *e, int64_t v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)v >> (8 * i));
    sha_update(&e->sha, b, 8);
}

static void put_f64(Enc *e, double v)
{
    int64_t bits;
    memcpy(&bits, &v, sizeof bits);
    put_int(e, bits);
}

/* NULL and "" differ */
static void put_str(Enc *e, const char *s)
{
    if (!s) { put_int(e, -1); return; }
    size_t n = strlen(s);
    put_int(e, (int64_t)n);
    sha_update(&e->sha, s, n);
}

static void put_type(Enc *e, const IrType *t)
{
    if (!t) { put_int(e, -1); return; }
    put_int(e, t->kind);
    switch (t->kind) {
    case IR_TY_SCALAR: put_int(e, t->dtype); put_int(e, t->weak); return;
    case IR_TY_ARRAY: put_int(e, t->dtype); put_int(e, t->ndim); put_int(e, t->layout); put_int(e, t->readonly); return;
    case IR_TY_TUPLE:
        put_int(e, t->nelems);
        for (int i = 0; i < t->nelems; i++) put_type(e, t->elems[i]);
        return;
    case IR_TY_DTYPE: put_int(e, t->dtype); return;
    case IR_TY_SLICE:
        put_int(e, t->slice_const);
        put_int(e, t->slice_has);
        for (int k = 0; k < 3; k++) put_int(e, t->slice_at[k]);
        return;
    case IR_TY_NONE: case IR_TY_RANGE: return;
    case IR_TY_FUNC: return; /* `func` is a process address; a call through it is a callee, hashed whole */
    case IR_TY_RNG: return;  /* one type: a generator's state is a value of the call, never of the code */
    }
}

/* A variable where it is used: its identity in the function, and what it is */
static void put_var(Enc *e, const IrVar *v)
{
    if (!v) { put_int(e, -1); return; }
    put_int(e, v->id);
    put_str(e, v->name);
    put_type(e, v->type);
    put_int(e, v->maybe_unbound);
}

static void put_node(Enc *e, const IrNode *n);
static void put_func(Enc *e, const IrFunc *f);

static void put_nodes(Enc *e, IrNode *const *v, int n)
{
    put_int(e, n);
    for (int i = 0; i < n; i++) put_node(e, v[i]);
}

static void put_block(Enc *e, const IrBlock *b)
{
    put_nodes(e, b->stmts, b->n);
}

static void put_combine(Enc *e, const IrCombine *c)
{
    put_var(e, c->acc_param);
    put_var(e, c->elem_param);
    put_node(e, c->body);
    put_node(e, c->init);
}

/* A function referred to from a node (a callee, a lambda): by symbol and name; its body is written where the
 * function is defined (the root's callees), or here for a lambda, whose function is written nowhere else. */
static void put_func_ref(Enc *e, const IrFunc *f)
{
    if (!f) { put_int(e, -1); return; }
    put_int(e, 0);
    put_str(e, f->symbol);
    put_str(e, f->name);
}

static void put_node(Enc *e, const IrNode *n)
{
    if (!n) { put_int(e, -1); return; }
    put_int(e, n->kind);
    put_type(e, n->type);
    if (!e->unplaced) {
        put_int(e, n->pos.line);
        put_str(e, n->pos.file); /* code inlined from another file names that file in its errors */
    }
    put_int(e, n->pos.col);
    put_int(e, n->region ? n->region->nuses : -1);
    if (n->region)
        for (int i = 0; i < n->region->nuses; i++) put_var(e, n->region->uses[i]);
    switch (n->kind) {
    case IR_CONST: put_int(e, n->u.konst.i); put_f64(e, n->u.konst.f); put_f64(e, n->u.konst.im); return;
    case IR_VAR: put_var(e, n->u.var.var); put_int(e, n->u.var.check_bound); return;
    case IR_NAMEREF: put_str(e, n->u.name.name); return;
    case IR_BINOP: put_int(e, n->u.binop.op); put_node(e, n->u.binop.lhs); put_node(e, n->u.binop.rhs); return;
    case IR_UNOP: put_int(e, n->u.unop.op); put_node(e, n->u.unop.operand); return;
    case IR_COMPARE:
        put_int(e, n->u.compare.nops);
        for (int i = 0; i < n->u.compare.nops; i++) put_int(e, n->u.compare.ops[i]);
        put_nodes(e, n->u.compare.operands, n->u.compare.nops + 1);
        return;
    case IR_BOOLOP: put_int(e, n->u.boolop.is_and); put_nodes(e, n->u.boolop.values, n->u.boolop.n); return;
    case IR_IFEXP:
        put_int(e, n->u.ifexp.versioned);
        put_node(e, n->u.ifexp.cond); put_node(e, n->u.ifexp.then); put_node(e, n->u.ifexp.orelse);
        return;
    case IR_CALL:
        put_int(e, n->u.call.ckind);
        put_int(e, n->u.call.intrinsic);
        put_str(e, n->u.call.name);
        put_func_ref(e, n->u.call.callee);
        put_nodes(e, n->u.call.args, n->u.call.nargs);
        put_int(e, n->u.call.nkw);
        for (int i = 0; i < n->u.call.nkw; i++) {
            put_str(e, n->u.call.kwnames[i]);
            put_node(e, n->u.call.kwargs[i]);
        }
        put_node(e, n->u.call.out);
        put_str(e, n->u.call.text);
        return;
    case IR_INDEX: put_node(e, n->u.index.base); put_nodes(e, n->u.index.items, n->u.index.n); put_int(e, n->u.index.checked); put_int(e, n->u.index.proven); return;
    case IR_SLICE:
        put_int(e, n->u.slice.ellipsis);
        put_node(e, n->u.slice.start); put_node(e, n->u.slice.stop); put_node(e, n->u.slice.step);
        return;
    case IR_ATTR: put_node(e, n->u.attr.value); put_str(e, n->u.attr.name); return;
    case IR_TUPLE: put_nodes(e, n->u.tuple.items, n->u.tuple.n); return;
    case IR_TUPLE_GET: put_node(e, n->u.tuple_get.tuple); put_int(e, n->u.tuple_get.k); put_int(e, n->u.tuple_get.unpack_n); return;
    case IR_LAMBDA: put_func_ref(e, n->u.lambda.func); put_func(e, n->u.lambda.func); return;
    case IR_COMPREHENSION:
        put_var(e, n->u.comprehension.target);
        put_node(e, n->u.comprehension.iter);
        put_node(e, n->u.comprehension.elt);
        put_node(e, n->u.comprehension.cond);
        return;
    case IR_CAST: put_node(e, n->u.cast.value); return;
    case IR_MATH:
        put_int(e, n->u.math.fn);
        for (int i = 0; i < ir_math_arity(n->u.math.fn); i++) put_node(e, n->u.math.args[i]);
        return;
    case IR_ARRAY_DIM: put_node(e, n->u.array_dim.array); put_int(e, n->u.array_dim.axis); return;
    case IR_ALLOC: put_nodes(e, n->u.alloc.dims, n->u.alloc.ndim); return;
    case IR_MAP:
        put_int(e, n->u.map.nparams);
        for (int i = 0; i < n->u.map.nparams; i++) put_var(e, n->u.map.params[i]);
        put_node(e, n->u.map.body);
        put_nodes(e, n->u.map.inputs, n->u.map.ninputs);
        put_node(e, n->u.map.out);
        put_int(e, n->u.map.out_is_fresh);
        return;
    case IR_IMAP:
        put_int(e, n->u.imap.ndim);
        for (int i = 0; i < n->u.imap.ndim; i++) put_var(e, n->u.imap.idx[i]);
        put_nodes(e, n->u.imap.dims, n->u.imap.ndim);
        put_node(e, n->u.imap.body);
        put_node(e, n->u.imap.out);
        return;
    case IR_REDUCE:
        put_int(e, n->u.reduce.op);
        put_node(e, n->u.reduce.input);
        put_int(e, n->u.reduce.axis);
        put_node(e, n->u.reduce.out);
        if (n->u.reduce.op == IR_RED_FUNC) put_combine(e, &n->u.reduce.combine);
        return;
    case IR_SCAN:
        put_int(e, n->u.scan.op);
        put_node(e, n->u.scan.input);
        put_int(e, n->u.scan.axis);
        put_node(e, n->u.scan.out);
        if (n->u.scan.op == IR_RED_FUNC) put_combine(e, &n->u.scan.combine);
        return;
    case IR_BCAST_SHAPE:
        put_nodes(e, n->u.bcast_shape.args, n->u.bcast_shape.n);
        put_int(e, n->u.bcast_shape.axis);
        put_int(e, n->u.bcast_shape.ndim);
        return;
    case IR_ASSIGN: put_var(e, n->u.assign.var); put_node(e, n->u.assign.value); return;
    case IR_AUGASSIGN: put_var(e, n->u.augassign.var); put_int(e, n->u.augassign.op); put_node(e, n->u.augassign.value); return;
    case IR_STORE: put_node(e, n->u.store.target); put_node(e, n->u.store.value); return;
    case IR_IF:
        put_node(e, n->u.if_.cond); put_block(e, &n->u.if_.then); put_block(e, &n->u.if_.orelse);
        put_int(e, n->u.if_.versioned);
        put_int(e, n->u.if_.nest);
        return;
    case IR_WHILE: put_node(e, n->u.while_.cond); put_block(e, &n->u.while_.body); return;
    case IR_FOR_RANGE:
        put_var(e, n->u.for_range.var);
        put_node(e, n->u.for_range.start);
        put_node(e, n->u.for_range.stop);
        put_node(e, n->u.for_range.step);
        put_block(e, &n->u.for_range.body);
        put_int(e, n->u.for_range.parallel);
        put_int(e, n->u.for_range.proven_copy);
        put_int(e, n->u.for_range.auto_parallel); /* why_sequential is text for inspect_parallel, never code */
        put_int(e, n->u.for_range.made);
        put_int(e, n->u.for_range.nreds);
        for (int i = 0; i < n->u.for_range.nreds; i++) {
            put_var(e, n->u.for_range.reds[i].var);
            put_int(e, n->u.for_range.reds[i].op);
        }
        return;
    case IR_FOR_ITER: put_var(e, n->u.for_iter.var); put_node(e, n->u.for_iter.iterable); put_block(e, &n->u.for_iter.body); return;
    case IR_RETURN: put_node(e, n->u.ret.value); return;
    case IR_EXPR_STMT: put_node(e, n->u.expr_stmt.value); return;
    case IR_BREAK: case IR_CONTINUE: case IR_PASS: case IR_KIND_COUNT: return;
    }
}

/* A function: its signature, every variable (the backend gives each a slot), its body and its callees. A
 * function already being written (a nested function whose lambda refers to itself) is written as the depth
 * at which it is open. */
static void put_func(Enc *e, const IrFunc *f)
{
    if (!f) { put_int(e, -1); return; }
    for (int i = 0; i < e->nopen; i++)
        if (e->open[i] == f) { put_int(e, -2); put_int(e, i); return; }
    if (e->nopen == MAX_FUNC_DEPTH) { put_int(e, -3); put_func_ref(e, f); return; } /* still canonical */
    e->open[e->nopen++] = f;
    put_int(e, 0);
    put_str(e, f->name);
    if (!e->unplaced) {
        put_str(e, f->file);
        put_int(e, f->line);
    }
    put_str(e, f->symbol);
    put_type(e, f->ret_type);
    put_int(e, f->nparams);
    for (int i = 0; i < f->nparams; i++) put_int(e, f->params[i]->id);
    put_int(e, f->ndefaults);
    for (int i = 0; i < f->ndefaults; i++) put_node(e, f->defaults[i]);
    put_int(e, f->ncaptured);
    for (int i = 0; i < f->ncaptured; i++) put_int(e, f->captured_from && f->captured_from[i] ? f->captured_from[i]->id : -1);
    put_int(e, f->nvars);
    for (int i = 0; i < f->nvars; i++) put_var(e, f->vars[i]);
    put_block(e, &f->body);
    put_int(e, f->ncallees);
    for (int i = 0; i < f->ncallees; i++) put_func(e, f->callees[i]);
    e->nopen--;
}

static void hash_func(const IrFunc *f, bool unplaced, unsigned char out[IR_HASH_BYTES])
{
    Enc e = {.nopen = 0, .unplaced = unplaced};
    sha_init(&e.sha);
    put_str(&e, "lorikeet typed IR");
    put_func(&e, f);
    sha_final(&e.sha, out);
}

void ir_hash_func(const IrFunc *f, unsigned char out[IR_HASH_BYTES])
{
    hash_func(f, false, out);
}

void ir_hash_func_unplaced(const IrFunc *f, unsigned char out[IR_HASH_BYTES])
{
    hash_func(f, true, out);
}
