/* version_imaps.c: an imap whose element holds versioned if-expressions `(a if versioned c else b)` (where c
 * holds, a gives what b gives: small_windows.c's `(<unrolled loads> if <the window is inside> else
 * <the reduction>)`) whose conditions one test before the imap can prove for every element becomes
 *
 *     if versioned <test>:
 *         <a copy of the imap in which each such if-expression is a>
 *     else:
 *         <the imap, in which each such if-expression is b>
 *
 * Tested once per element the conditions cost little, but the general arm (a loop nest) stays in the element and
 * keeps a compiler from vectorising the imap's loop (conv_3x3_trim at 1200^2 on one core: 4.3 ms with the test
 * in the element, 1.0 ms versioned, as fast as the loops); tested once per call, the copy's element is
 * straight-line loads and arithmetic. Where the test fails (a window past an edge for some element, weights of
 * another shape) the imap runs as typespec wrote it: the condition only decided speed, and code that runs on
 * such inputs only is not worth compiling in two forms. The cost is compile time: the imap twice.
 *
 * A condition qualifies when it is an int64 compare, or an `and` of them, whose operands are affine forms (+, -,
 * unary -, multiplication by a constant) of the imap's indices and of atoms: quiet int64 expressions (ir_effects
 * 0: no element read, no call, no raise, no unbound variable) that name no variable bound inside the imap, so
 * they have one value for every element and before the imap. Index d takes the values [0, dims[d] - 1], so a
 * form's least and greatest values over the index space are forms of atoms and of the dims (which must be quiet
 * too), and `lo >= 0` or `hi <= 0` before the imap proves `f >= 0` or `f <= 0` for every element. An equality
 * qualifies only without indices. A condition that can never hold (a constant bound below 0: x[i-1:i+2] from
 * i = 0) is left out, so that it does not fail the test for the others: its element keeps its test.
 *
 * Exactness. int64 arithmetic wraps, but + - and * by a constant are exact modulo 2^64: a form whose value fits
 * int64 is computed exactly whatever its intermediate results, in the element and in the test. The test first
 * bounds every atom (and every dim) by a B in which every form it appears in fits, as bounds_plan.c's overflow
 * guard does: B = (INT64_MAX - |konst|) / sum |coef| over each operand of each compare and each bound the test
 * computes. So a passing test proves each compare on the operands' true values, which are the values the
 * element computes. When the index space is empty the imap runs nothing and the test, which cannot raise or
 * write, decides nothing.
 *
 * Runs after ir_check_unbound (a read that may be unbound is a check, not an atom) and with ir_version_loops,
 * before ir_mark_regions: each copy is a region. */
#include "wrap_form.h"

#define MAX_CONDS 64   /* compares gathered from one imap: the conditions past them keep their tests */

typedef IrWrapForm Form;

typedef struct Cond {
    IrCmpOp op;
    Form lhs, rhs;
} Cond;

typedef struct Pass {
    IrFunc *f;
    RtArena *a;
    IrNode *imap;
    bool *bound;        /* by var id: bound inside the imap (its indices included) */
    IrNode **proven;    /* the if-expressions the test proves */
    int nproven, cap_proven;
    Cond conds[MAX_CONDS];
    int nconds;
    const IrNode *range_atom[4 * MAX_CONDS * IR_FORM_TERMS]; /* every atom of the test, with its bound */
    __int128 range_b[4 * MAX_CONDS * IR_FORM_TERMS];
    int nranges;
} Pass;

/* ---- atoms ---- */

typedef struct Names {
    const bool *bound;
    bool hit;
} Names;

static void names_bound(IrNode **np, void *env)
{
    Names *k = env;
    if ((*np)->kind == IR_VAR && k->bound[(*np)->u.var.var->id]) k->hit = true;
    ir_each_child(*np, names_bound, env);
}

/* the index of the imap that e is, or -1 */
static int index_of(const Pass *p, const IrNode *e)
{
    if (e->kind != IR_VAR) return -1;
    for (int d = 0; d < p->imap->u.imap.ndim; d++)
        if (e->u.var.var == p->imap->u.imap.idx[d]) return d;
    return -1;
}

/* A value the same for every element and before the imap: quiet, naming nothing bound inside it. */
static bool invariant(const Pass *p, IrNode *e)
{
    if (!ir_is_int64(e->type) || ir_effects(e) != 0) return false;
    Names k = {p->bound, false};
    names_bound(&e, &k);
    return !k.hit;
}

/* An atom of a form: an index of the imap, or a value the same for every element. */
static bool atom_ok(const IrNode *e, void *env)
{
    const Pass *p = env;
    return index_of(p, e) >= 0 || invariant(p, (IrNode *)e);
}

static bool form_of(const Pass *p, IrNode *e, Form *out)
{
    return ir_form_of(e, out, atom_ok, (void *)p);
}

/* ---- the test ---- */

static __int128 magnitude(uint64_t c)
{
    int64_t s = (int64_t)c;
    return s < 0 ? -(__int128)s : s;
}

/* Records that every atom of f (an index standing for its dim) must lie in [-B, B] for f to fit int64. A lone
 * atom fits as it is, and so does a shape less a constant (a shape is never negative). */
static void need_fit(Pass *p, const Form *f)
{
    if (f->n == 1 && f->coef[0] == 1 && (f->konst == 0 || (f->atom[0]->kind == IR_ARRAY_DIM && (int64_t)f->konst < 0)))
        return;
    __int128 sum = 0;
    for (int i = 0; i < f->n; i++) sum += magnitude(f->coef[i]);
    if (sum == 0) return;
    __int128 room = (__int128)INT64_MAX - magnitude(f->konst);
    __int128 b = room > 0 ? room / sum : 0;
    for (int i = 0; i < f->n; i++) {
        int d = index_of(p, f->atom[i]);
        const IrNode *atom = d >= 0 ? p->imap->u.imap.dims[d] : f->atom[i];
        int k = 0;
        while (k < p->nranges && !ir_form_same_atom(p->range_atom[k], atom)) k++;
        if (k == p->nranges) {
            p->range_atom[p->nranges] = atom;
            p->range_b[p->nranges++] = b;
        } else if (b < p->range_b[k]) {
            p->range_b[k] = b;
        }
    }
}

/* f's least (lowest) or greatest value over the index space, as a form of atoms and dims: c * i is c * (dim - 1)
 * where that is the extreme, else 0. */
static Form extreme(const Pass *p, const Form *f, bool lowest)
{
    Form r = {.konst = f->konst};
    for (int i = 0; i < f->n; i++) {
        int d = index_of(p, f->atom[i]);
        int64_t c = (int64_t)f->coef[i];
        if (d < 0) {
            r.atom[r.n] = f->atom[i];
            r.coef[r.n++] = f->coef[i];
        } else if ((c < 0) == lowest) {
            r.atom[r.n] = p->imap->u.imap.dims[d];
            r.coef[r.n++] = f->coef[i];
            r.konst -= f->coef[i];
        }
    }
    return r;
}

static bool has_index(const Pass *p, const Form *f)
{
    for (int i = 0; i < f->n; i++)
        if (index_of(p, f->atom[i]) >= 0) return true;
    return false;
}

static IrNode *literal(Pass *p, int64_t v)
{
    return ir_const_int(p->a, p->imap->pos, ir_type_scalar(IR_DT_INT64), v);
}

static IrNode *binop(Pass *p, IrBinOp op, IrNode *l, IrNode *r)
{
    IrNode *n = ir_node(p->a, IR_BINOP, p->imap->pos);
    n->type = ir_type_scalar(IR_DT_INT64);
    n->u.binop.op = op;
    n->u.binop.lhs = l;
    n->u.binop.rhs = r;
    return n;
}

/* The terms of f whose coefficient has the sign asked for, with their magnitudes, and konst's part of that sign. */
static IrNode *side(Pass *p, const Form *f, bool positive)
{
    IrNode *acc = NULL;
    for (int i = 0; i < f->n; i++) {
        int64_t c = (int64_t)f->coef[i];
        if ((c > 0) != positive) continue;
        IrNode *x = ir_copy(p->a, f->atom[i], NULL);
        if (c != 1 && c != -1) x = binop(p, IR_OP_MUL, x, literal(p, c > 0 ? c : -c));
        acc = acc ? binop(p, IR_OP_ADD, acc, x) : x;
    }
    int64_t k = (int64_t)f->konst;
    if ((k > 0 && positive) || (k < 0 && !positive)) {
        IrNode *x = literal(p, k > 0 ? k : -k);
        acc = acc ? binop(p, IR_OP_ADD, acc, x) : x;
    }
    return acc ? acc : literal(p, 0);
}

/* f op 0, as `positive terms op negative terms`; false when it holds without a test */
static bool relation(Pass *p, IrCmpOp op, const Form *f, IrNode **out)
{
    if (f->n == 0) return false;
    *out = ir_compare(p->a, p->imap->pos, op, side(p, f, true), side(p, f, false));
    return true;
}

/* Whether c can be proven for every element: its extremes, and the atoms' ranges that make them exact, are
 * recorded when it can. -1: never (an extreme that is a constant out of the relation). */
static int provable(Pass *p, const Cond *c, Form *ext, IrCmpOp *rel)
{
    Form f;
    if (!ir_form_add(&f, &c->lhs, &c->rhs, (uint64_t)-1)) return 0;
    for (int i = 0; i < f.n; i++)
        if ((int64_t)f.coef[i] == INT64_MIN) return 0; /* no magnitude: its side cannot be written */
    Form one = {.konst = 1};
    switch (c->op) {
    case IR_CMP_GE: *ext = extreme(p, &f, true); *rel = IR_CMP_GE; break;            /* min f >= 0 */
    case IR_CMP_GT: *ext = extreme(p, &f, true); *rel = IR_CMP_GE;                   /* min f - 1 >= 0 */
        if (!ir_form_add(ext, ext, &one, (uint64_t)-1)) return 0;
        break;
    case IR_CMP_LE: *ext = extreme(p, &f, false); *rel = IR_CMP_LE; break;           /* max f <= 0 */
    case IR_CMP_LT: *ext = extreme(p, &f, false); *rel = IR_CMP_LE;                  /* max f + 1 <= 0 */
        if (!ir_form_add(ext, ext, &one, 1)) return 0;
        break;
    case IR_CMP_EQ: case IR_CMP_NE:
        if (has_index(p, &f)) return 0;
        *ext = f;
        *rel = c->op;
        break;
    }
    if ((int64_t)ext->konst == INT64_MIN) return 0;
    for (int i = 0; i < ext->n; i++)
        if ((int64_t)ext->coef[i] == INT64_MIN) return 0;
    if (ext->n == 0) { /* a constant: it holds or it never does */
        int64_t k = (int64_t)ext->konst;
        bool holds = *rel == IR_CMP_GE ? k >= 0 : *rel == IR_CMP_LE ? k <= 0 : *rel == IR_CMP_EQ ? k == 0 : k != 0;
        return holds ? 1 : -1;
    }
    return 1;
}

/* ---- gathering the conditions ---- */

static bool gather_cond(Pass *p, IrNode *c)
{
    if (c->kind == IR_BOOLOP && c->u.boolop.is_and) {
        for (int i = 0; i < c->u.boolop.n; i++)
            if (!gather_cond(p, c->u.boolop.values[i])) return false;
        return true;
    }
    if (c->kind != IR_COMPARE || c->u.compare.nops != 1 || p->nconds == MAX_CONDS) return false;
    Cond *k = &p->conds[p->nconds];
    k->op = c->u.compare.ops[0];
    if (!form_of(p, c->u.compare.operands[0], &k->lhs) || !form_of(p, c->u.compare.operands[1], &k->rhs)) return false;
    p->nconds++;
    return true;
}

/* A versioned if-expression of the element whose condition qualifies: its compares join the test. */
static void consider(Pass *p, IrNode *n)
{
    int before = p->nconds;
    if (!n->u.ifexp.versioned) return;
    if (!gather_cond(p, n->u.ifexp.cond)) {
        p->nconds = before;
        return;
    }
    for (int i = before; i < p->nconds; i++) {
        Form ext;
        IrCmpOp rel;
        if (provable(p, &p->conds[i], &ext, &rel) != 1) {
            p->nconds = before;
            return;
        }
    }
    if (p->nproven == p->cap_proven) {
        int cap = p->cap_proven ? 2 * p->cap_proven : 8;
        IrNode **v = ir_nodes(p->a, cap);
        for (int i = 0; i < p->nproven; i++) v[i] = p->proven[i];
        p->proven = v;
        p->cap_proven = cap;
    }
    p->proven[p->nproven++] = n;
}

static void find_ifexp(IrNode **np, void *env)
{
    if ((*np)->kind == IR_IFEXP && (*np)->u.ifexp.versioned) *(bool *)env = true;
    else ir_each_child(*np, find_ifexp, env);
}

static void find_conds(IrNode **np, void *env)
{
    Pass *p = env;
    if ((*np)->kind == IR_IFEXP) consider(p, *np);
    ir_each_child(*np, find_conds, env);
}

static void bind(Pass *p, IrVar *v)
{
    if (v) p->bound[v->id] = true;
}

static void find_bound(IrNode **np, void *env)
{
    Pass *p = env;
    IrNode *n = *np;
    if (n->kind == IR_MAP)
        for (int i = 0; i < n->u.map.nparams; i++) bind(p, n->u.map.params[i]);
    if (n->kind == IR_IMAP)
        for (int i = 0; i < n->u.imap.ndim; i++) bind(p, n->u.imap.idx[i]);
    if (n->kind == IR_REDUCE) {
        bind(p, n->u.reduce.combine.acc_param);
        bind(p, n->u.reduce.combine.elem_param);
    }
    if (n->kind == IR_SCAN) {
        bind(p, n->u.scan.combine.acc_param);
        bind(p, n->u.scan.combine.elem_param);
    }
    ir_each_child(n, find_bound, env);
}

/* ---- the rewrite ---- */

static IrNode *test_of(Pass *p)
{
    Form done[MAX_CONDS];
    IrCmpOp done_rel[MAX_CONDS];
    int ndone = 0;
    IrNode *rels[MAX_CONDS];
    int nrels = 0;
    for (int i = 0; i < p->nconds; i++) {
        Form ext;
        IrCmpOp rel;
        provable(p, &p->conds[i], &ext, &rel);
        bool dup = false;
        for (int k = 0; k < ndone && !dup; k++) {
            Form d;
            dup = done_rel[k] == rel && ir_form_add(&d, &done[k], &ext, (uint64_t)-1) && d.n == 0 && d.konst == 0;
        }
        if (dup) continue;
        done[ndone] = ext;
        done_rel[ndone++] = rel;
        need_fit(p, &p->conds[i].lhs);
        need_fit(p, &p->conds[i].rhs);
        for (int positive = 0; positive < 2; positive++) { /* the test computes each side of `ext op 0` */
            Form s = {0};
            for (int k = 0; k < ext.n; k++)
                if (((int64_t)ext.coef[k] > 0) == positive) {
                    s.atom[s.n] = ext.atom[k];
                    s.coef[s.n++] = positive ? ext.coef[k] : (uint64_t)-ext.coef[k];
                }
            int64_t k = (int64_t)ext.konst;
            if (k != 0 && (k > 0) == positive) s.konst = k > 0 ? ext.konst : (uint64_t)0 - ext.konst;
            need_fit(p, &s);
        }
        if (relation(p, rel, &ext, &rels[nrels])) nrels++;
    }
    /* the ranges first: within them every form the test and the elements compute is exact */
    IrNode **terms = ir_nodes(p->a, 2 * p->nranges + nrels);
    int n = 0;
    for (int k = 0; k < p->nranges; k++) {
        const IrNode *atom = p->range_atom[k];
        __int128 b = p->range_b[k];
        if (b >= INT64_MAX) continue;
        if (atom->kind != IR_ARRAY_DIM) /* a shape is never negative */
            terms[n++] = ir_compare(p->a, p->imap->pos, IR_CMP_GE, ir_copy(p->a, atom, NULL), literal(p, -(int64_t)b));
        terms[n++] = ir_compare(p->a, p->imap->pos, IR_CMP_LE, ir_copy(p->a, atom, NULL), literal(p, (int64_t)b));
    }
    for (int k = 0; k < nrels; k++) terms[n++] = rels[k];
    if (n == 0) return NULL;
    if (n == 1) return terms[0];
    IrNode *all = ir_node(p->a, IR_BOOLOP, p->imap->pos);
    all->type = ir_type_scalar(IR_DT_BOOL);
    all->u.boolop.is_and = true;
    all->u.boolop.values = terms;
    all->u.boolop.n = n;
    return all;
}

typedef struct Copy {
    Pass *p;
    IrCopyHooks hooks;
} Copy;

/* ir_copy's hook: a proven if-expression is its then arm (its test holds for every element) */
static IrNode *then_arm(const IrNode *n, void *env)
{
    Copy *c = env;
    if (n->kind != IR_IFEXP) return NULL;
    for (int i = 0; i < c->p->nproven; i++)
        if (c->p->proven[i] == n) return ir_copy(c->p->a, n->u.ifexp.then, &c->hooks);
    return NULL;
}

/* In the imap that runs when the test fails: a proven if-expression is its general arm. */
static void general_arm(IrNode **np, void *env)
{
    Pass *p = env;
    IrNode *n = *np;
    if (n->kind == IR_IFEXP)
        for (int i = 0; i < p->nproven; i++)
            if (p->proven[i] == n) {
                *np = n = n->u.ifexp.orelse;
                break;
            }
    ir_each_child(n, general_arm, env);
}

/* The versioned if for the imap statement s, or NULL when nothing of its element can be proven. */
static IrNode *version_imap(IrFunc *f, IrNode *s)
{
    IrNode *imap = s->u.expr_stmt.value;
    bool any = false;
    find_ifexp(&imap->u.imap.body, &any);
    if (!any) return NULL;
    Pass *p = rt_arena_alloc(f->arena, sizeof *p);
    *p = (Pass){.f = f, .a = f->arena, .imap = imap};
    for (int d = 0; d < imap->u.imap.ndim; d++)
        if (!ir_is_int64(imap->u.imap.dims[d]->type) || ir_effects(imap->u.imap.dims[d]) != 0) return NULL;
    p->bound = rt_arena_alloc(f->arena, (size_t)f->nvars + 1);
    for (int i = 0; i <= f->nvars; i++) p->bound[i] = false;
    find_bound(&imap, p); /* the imap's own indices too: an atom names none of them */
    find_conds(&imap->u.imap.body, p);
    if (!p->nproven) return NULL;
    IrNode *test = test_of(p);
    Copy c = {p, {.replace = then_arm}};
    c.hooks.env = &c;
    IrNode *copy = ir_copy(f->arena, s, &c.hooks);
    if (!test) return copy;
    general_arm(&s->u.expr_stmt.value, p);
    IrNode *v = ir_node(f->arena, IR_IF, s->pos);
    v->u.if_.cond = test;
    v->u.if_.versioned = true;
    ir_block_push(f->arena, &v->u.if_.then, copy);
    ir_block_push(f->arena, &v->u.if_.orelse, s);
    return v;
}

static void version_block(IrFunc *f, IrBlock *b)
{
    for (int i = 0; i < b->n; i++) {
        IrNode *s = b->stmts[i];
        if (s->kind == IR_EXPR_STMT && s->u.expr_stmt.value->kind == IR_IMAP && s->u.expr_stmt.value->u.imap.out) {
            IrNode *v = version_imap(f, s);
            if (v) b->stmts[i] = v;
            continue;
        }
        IrBlock *blocks[2];
        int nb = ir_stmt_blocks(s, blocks);
        for (int k = 0; k < nb; k++) version_block(f, blocks[k]);
    }
}

void ir_version_imaps(IrFunc *f)
{
    version_block(f, &f->body);
}
