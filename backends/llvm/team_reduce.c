/* team_reduce.c: reductions and scans of everything on the openmp team (those along an axis need nothing of
 * their own: each thread owns lines of the result). Each thread runs its chunk of the map into a partial
 * result of its own (with a started flag where nothing may have been accumulated: a user's combine has no
 * identity), and the partials are combined in chunk order after the join, so the grouping of the elements
 * changes and their order does not, and the result does not depend on which thread ran which chunk. The
 * runtime reports how many chunks ran; the combinations are loops over that count (partials in buffers of
 * RT_MAX_CHUNKS slots), never unrolled. Scans take a second pass over the same chunks, each from its carry.
 *
 * Everything here is only correct for an associative combine (documented for lk.reduce and lk.scan), and
 * must never make the user's combine see a value of a type its body was not compiled for. */
#include "cg.h"

/* Each chunk of m runs from the identity and leaves its accumulator in partials[tid] (an array of RT_MAX_CHUNKS
 * accumulators in the enclosing function) and, where lo and hi are given (arrays like partials), the rows it
 * covered. Shared by reductions and the first pass of scans. Returns the number of chunks that ran: slots
 * 0 .. that - 1 are written, the others are not. */
static LLVMValueRef partials_on_team(Cg *cg, CgMap *m, IrDtype dt, LLVMValueRef partials, LLVMValueRef lo,
                                     LLVMValueRef hi, LLVMValueRef work, bool vectorize)
{
    LLVMTypeRef et = cg_type(cg, ir_type_scalar(dt)), pt = LLVMArrayType(et, RT_MAX_CHUNKS);
    CgOutline o = {0};
    CgMapCaps c;
    cg_map_capture(&o, m, &c);
    int cpart = cg_capture(&o, partials), clo = lo ? cg_capture(&o, lo) : -1, chi = hi ? cg_capture(&o, hi) : -1;
    LLVMValueRef rows = m->dims[0];
    cg_outline_begin(cg, &o, m->region);
    CgMap mine = *m;
    cg_map_restore(&o, &mine, &c);
    mine.acc = cg_alloca(cg, et, "acc");
    LLVMBuildStore(cg->b, cg_red_identity(cg, m->red_op, dt), mine.acc);
    cg_map_run_chunk(cg, &mine, true, o.lo, o.hi, vectorize);
    LLVMValueRef idx[2] = {cg_i64(cg, 0), LLVMBuildZExt(cg->b, o.tid, cg->i64, "")};
    LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, et, mine.acc, ""), LLVMBuildGEP2(cg->b, pt, cg_outline_get(&o, cpart), idx, 2, ""));
    LLVMTypeRef rt = LLVMArrayType(cg->i64, RT_MAX_CHUNKS);
    if (clo >= 0) LLVMBuildStore(cg->b, o.lo, LLVMBuildGEP2(cg->b, rt, cg_outline_get(&o, clo), idx, 2, ""));
    if (chi >= 0) LLVMBuildStore(cg->b, o.hi, LLVMBuildGEP2(cg->b, rt, cg_outline_get(&o, chi), idx, 2, ""));
    return cg_outline_end(cg, &o, rows, work);
}

/* A loop c = 0 .. nchunks-1 in the enclosing function, over the chunks' partial results, calling body(&c). */
static void over_chunks(Cg *cg, LLVMValueRef nchunks, CgLoopBody body, void *env)
{
    cg_loop_nest(cg, 1, &nchunks, body, env, false);
}

typedef struct Partials {
    CgMap *m;
    IrDtype dt;
    LLVMTypeRef vt;                   /* the accumulated value's type */
    LLVMValueRef values, flags, idx;  /* [RT_MAX_CHUNKS] arrays in the enclosing function */
    LLVMValueRef lo, hi;              /* ... and, for a scan, the rows each chunk covered */
    LLVMValueRef acc, have, best_idx; /* the combination, as allocas */
    LLVMValueRef carry, carry_have;   /* a scan: [RT_MAX_CHUNKS], what each chunk starts from (if anything) */
    LLVMValueRef nchunks;             /* how many chunks the first pass ran (i64) */
} Partials;

static LLVMValueRef slot(Cg *cg, LLVMTypeRef et, LLVMValueRef arr, LLVMValueRef t)
{
    LLVMValueRef idx[2] = {cg_i64(cg, 0), t};
    return LLVMBuildGEP2(cg->b, LLVMArrayType(et, RT_MAX_CHUNKS), arr, idx, 2, "");
}

/* a built-in combine over the chunks' partials, in chunk order */
static void combine_builtin_partial(Cg *cg, LLVMValueRef *t, void *env)
{
    Partials *p = env;
    LLVMValueRef v = LLVMBuildLoad2(cg->b, p->vt, slot(cg, p->vt, p->values, t[0]), "");
    LLVMBuildStore(cg->b, cg_red_combine(cg, p->m->red_op, p->dt, LLVMBuildLoad2(cg->b, p->vt, p->acc, ""), v), p->acc);
}

/* A reduction of everything on the team: each thread reduces its rows into its slot of partials, and the
 * slots are combined in chunk order afterwards (so the grouping changes, the order of elements does not). */
LLVMValueRef cg_reduce_on_team(Cg *cg, CgMap *m, IrDtype dt)
{
    LLVMTypeRef et = cg_type(cg, ir_type_scalar(dt));
    LLVMTypeRef pt = LLVMArrayType(et, RT_MAX_CHUNKS);
    LLVMValueRef work0 = cg_map_work(cg, m, m->map->u.map.body);
    LLVMBasicBlockRef par = cg_new_bb(cg, "reduce_team"), seq = cg_new_bb(cg, "reduce_alone"), joined = cg_new_bb(cg, "reduce_joined");
    LLVMBuildCondBr(cg->b, cg_worth_a_team(cg, work0), par, seq);
    LLVMPositionBuilderAtEnd(cg->b, seq);
    LLVMBuildStore(cg->b, cg_red_identity(cg, m->red_op, dt), m->acc);
    cg_map_run(cg, m, true, true);
    LLVMBuildBr(cg->b, joined);
    LLVMPositionBuilderAtEnd(cg->b, par);
    Partials p = {m, dt, et};
    p.values = cg_alloca(cg, pt, "partials");
    p.acc = m->acc;
    LLVMValueRef nchunks = partials_on_team(cg, m, dt, p.values, NULL, NULL, work0, true);
    LLVMBuildStore(cg->b, cg_red_identity(cg, m->red_op, dt), m->acc);
    over_chunks(cg, nchunks, combine_builtin_partial, &p);
    LLVMBuildBr(cg->b, joined);
    LLVMPositionBuilderAtEnd(cg->b, joined);
    return LLVMBuildLoad2(cg->b, et, m->acc, "");
}

/* Sibling reductions (cg_reduce_siblings) on the team: each thread runs its rows of the chain once, every map
 * into its own accumulator, and leaves each in that map's partials; then each map's partials are combined in
 * chunk order, as cg_reduce_on_team combines one map's. */
void cg_reduce_siblings_on_team(Cg *cg, CgMap *m, int n, const IrDtype *dt, const IrRegion *region)
{
    RtArena *a = cg->f->arena;
    LLVMTypeRef *et = rt_arena_alloc(a, sizeof *et * (size_t)n);
    LLVMValueRef *partials = rt_arena_alloc(a, sizeof *partials * (size_t)n);
    LLVMValueRef work = cg_i64(cg, 0);
    for (int i = 0; i < n; i++) {
        et[i] = cg_type(cg, ir_type_scalar(dt[i]));
        work = LLVMBuildAdd(cg->b, work, cg_map_work(cg, &m[i], m[i].map->u.map.body), "");
    }
    LLVMBasicBlockRef par = cg_new_bb(cg, "siblings_team"), seq = cg_new_bb(cg, "siblings_alone"),
                      joined = cg_new_bb(cg, "siblings_joined");
    LLVMBuildCondBr(cg->b, cg_worth_a_team(cg, work), par, seq);
    LLVMPositionBuilderAtEnd(cg->b, seq);
    cg_map_run(cg, &m[0], true, true); /* the accumulators hold their identities */
    LLVMBuildBr(cg->b, joined);
    LLVMPositionBuilderAtEnd(cg->b, par);
    CgOutline o = {0};
    CgMapCaps *caps = rt_arena_alloc(a, sizeof *caps * (size_t)n);
    int *cpart = rt_arena_alloc(a, sizeof *cpart * (size_t)n);
    for (int i = 0; i < n; i++) {
        partials[i] = cg_alloca(cg, LLVMArrayType(et[i], RT_MAX_CHUNKS), "partials");
        cg_map_capture(&o, &m[i], &caps[i]);
        cpart[i] = cg_capture(&o, partials[i]);
    }
    LLVMValueRef rows = m[0].dims[0];
    cg_outline_begin(cg, &o, region);
    CgMap *mine = rt_arena_alloc(a, sizeof *mine * (size_t)n);
    for (int i = 0; i < n; i++) {
        mine[i] = m[i];
        cg_map_restore(&o, &mine[i], &caps[i]);
        mine[i].sibling = i + 1 < n ? &mine[i + 1] : NULL;
        mine[i].acc = cg_alloca(cg, et[i], "acc");
        LLVMBuildStore(cg->b, cg_red_identity(cg, m[i].red_op, dt[i]), mine[i].acc);
    }
    cg_map_run_chunk(cg, &mine[0], true, o.lo, o.hi, true);
    LLVMValueRef idx[2] = {cg_i64(cg, 0), LLVMBuildZExt(cg->b, o.tid, cg->i64, "")};
    for (int i = 0; i < n; i++)
        LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, et[i], mine[i].acc, ""),
                       LLVMBuildGEP2(cg->b, LLVMArrayType(et[i], RT_MAX_CHUNKS), cg_outline_get(&o, cpart[i]), idx, 2, ""));
    LLVMValueRef nchunks = cg_outline_end(cg, &o, rows, work);
    for (int i = 0; i < n; i++) {
        Partials p = {&m[i], dt[i], et[i]};
        p.values = partials[i];
        p.acc = m[i].acc;
        LLVMBuildStore(cg->b, cg_red_identity(cg, m[i].red_op, dt[i]), m[i].acc);
        over_chunks(cg, nchunks, combine_builtin_partial, &p);
    }
    LLVMBuildBr(cg->b, joined);
    LLVMPositionBuilderAtEnd(cg->b, joined);
}

/* the user's combine over the chunks' partials, in chunk order, skipping chunks that saw nothing */
static void combine_func_partial(Cg *cg, LLVMValueRef *t, void *env)
{
    Partials *p = env;
    LLVMValueRef started = LLVMBuildLoad2(cg->b, cg->i1, slot(cg, cg->i1, p->flags, t[0]), "");
    LLVMBasicBlockRef use = cg_new_bb(cg, "partial"), comb = cg_new_bb(cg, "partial_combine"), first = cg_new_bb(cg, "partial_first"),
                      next = cg_new_bb(cg, "partial_next");
    LLVMBuildCondBr(cg->b, started, use, next);
    LLVMPositionBuilderAtEnd(cg->b, use);
    LLVMValueRef v = LLVMBuildLoad2(cg->b, p->vt, slot(cg, p->vt, p->values, t[0]), "");
    LLVMBuildCondBr(cg->b, LLVMBuildLoad2(cg->b, cg->i1, p->have, ""), comb, first);
    LLVMPositionBuilderAtEnd(cg->b, comb);
    LLVMBuildStore(cg->b, cg_apply_combine(cg, p->m->combine, LLVMBuildLoad2(cg->b, p->vt, p->acc, ""), v), p->acc);
    LLVMBuildBr(cg->b, next);
    LLVMPositionBuilderAtEnd(cg->b, first);
    LLVMBuildStore(cg->b, v, p->acc);
    LLVMBuildStore(cg->b, LLVMConstInt(cg->i1, 1, 0), p->have);
    LLVMBuildBr(cg->b, next);
    LLVMPositionBuilderAtEnd(cg->b, next);
}

/* argmin/argmax over the chunks' (value, index) partials: a later chunk wins only if strictly better */
static void combine_arg_partial(Cg *cg, LLVMValueRef *t, void *env)
{
    Partials *p = env;
    LLVMValueRef v = LLVMBuildLoad2(cg->b, p->vt, slot(cg, p->vt, p->values, t[0]), "");
    LLVMValueRef i = LLVMBuildLoad2(cg->b, cg->i64, slot(cg, cg->i64, p->idx, t[0]), "");
    LLVMValueRef started = LLVMBuildLoad2(cg->b, cg->i1, slot(cg, cg->i1, p->flags, t[0]), "");
    LLVMValueRef best = LLVMBuildLoad2(cg->b, p->vt, p->acc, "");
    LLVMValueRef have = LLVMBuildLoad2(cg->b, cg->i1, p->have, "");
    LLVMValueRef better = LLVMBuildOr(cg->b, LLVMBuildNot(cg->b, have, ""), cg_arg_better(cg, p->m->red_op, p->dt, v, best), "");
    better = LLVMBuildAnd(cg->b, better, started, "");
    LLVMBuildStore(cg->b, LLVMBuildSelect(cg->b, better, v, best, ""), p->acc);
    LLVMBuildStore(cg->b, LLVMBuildSelect(cg->b, better, i, LLVMBuildLoad2(cg->b, cg->i64, p->best_idx, ""), ""), p->best_idx);
    LLVMBuildStore(cg->b, LLVMBuildOr(cg->b, have, started, ""), p->have);
}

/* The work of a reduction or scan for the team threshold: the map's body and the user's combine, if any, for
 * each element. */
static LLVMValueRef special_work(Cg *cg, CgMap *m)
{
    LLVMValueRef work = cg_map_work(cg, m, m->map->u.map.body);
    if (m->red_op != IR_RED_FUNC) return work;
    return LLVMBuildAdd(cg->b, work, cg_map_work(cg, m, m->combine->body), "");
}

/* Each chunk of m is reduced from nothing: with the user's combine and a started flag, or (argmin, argmax) from
 * the identity with index 0. Its result goes to its slot of p: values, flags (whether it holds one) and idx
 * (arg), and, where p->lo and p->hi are given, the rows it covered; p->nchunks is set to the chunks' count. */
static void special_partials_on_team(Cg *cg, CgMap *m, Partials *p, LLVMValueRef work)
{
    bool is_arg = m->red_op != IR_RED_FUNC;
    LLVMTypeRef vt = p->vt;
    p->values = cg_alloca(cg, LLVMArrayType(vt, RT_MAX_CHUNKS), "partials");
    p->flags = cg_alloca(cg, LLVMArrayType(cg->i1, RT_MAX_CHUNKS), "started");
    p->idx = is_arg ? cg_alloca(cg, LLVMArrayType(cg->i64, RT_MAX_CHUNKS), "argidx") : NULL;
    CgOutline o = {0};
    CgMapCaps c;
    cg_map_capture(&o, m, &c);
    int cv = cg_capture(&o, p->values), cf = cg_capture(&o, p->flags), ci = is_arg ? cg_capture(&o, p->idx) : -1;
    int clo = p->lo ? cg_capture(&o, p->lo) : -1, chi = p->hi ? cg_capture(&o, p->hi) : -1;
    LLVMValueRef rows = m->dims[0];
    cg_outline_begin(cg, &o, m->region);
    CgMap mine = *m;
    cg_map_restore(&o, &mine, &c);
    mine.acc = cg_alloca(cg, vt, "acc");
    LLVMValueRef tid = LLVMBuildZExt(cg->b, o.tid, cg->i64, "");
    if (is_arg) {
        mine.sink = CG_SINK_ARG_ALL;
        LLVMBuildStore(cg->b, cg_red_identity(cg, m->red_op, p->dt), mine.acc);
        mine.arg_index = cg_alloca(cg, cg->i64, "argidx");
        LLVMBuildStore(cg->b, cg_i64(cg, 0), mine.arg_index);
    } else {
        mine.sink = CG_SINK_REDUCE_ALL;
        LLVMBuildStore(cg->b, LLVMConstNull(vt), mine.acc);
        mine.started = cg_alloca(cg, cg->i1, "started");
        LLVMBuildStore(cg->b, LLVMConstInt(cg->i1, 0, 0), mine.started);
    }
    cg_map_run_chunk(cg, &mine, true, o.lo, o.hi, false);
    LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, vt, mine.acc, ""), slot(cg, vt, cg_outline_get(&o, cv), tid));
    LLVMBuildStore(cg->b, is_arg ? LLVMBuildICmp(cg->b, LLVMIntSLT, o.lo, o.hi, "") : LLVMBuildLoad2(cg->b, cg->i1, mine.started, ""),
                   slot(cg, cg->i1, cg_outline_get(&o, cf), tid));
    if (is_arg) LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, cg->i64, mine.arg_index, ""), slot(cg, cg->i64, cg_outline_get(&o, ci), tid));
    if (clo >= 0) LLVMBuildStore(cg->b, o.lo, slot(cg, cg->i64, cg_outline_get(&o, clo), tid));
    if (chi >= 0) LLVMBuildStore(cg->b, o.hi, slot(cg, cg->i64, cg_outline_get(&o, chi), tid));
    p->nchunks = cg_outline_end(cg, &o, rows, work);
}

/* The combination of the partials starts from init (a user's combine with one) or from nothing. */
static void start_combination(Cg *cg, Partials *p, const IrNode *init)
{
    p->acc = cg_alloca(cg, p->vt, "combined");
    p->have = cg_alloca(cg, cg->i1, "have");
    LLVMBuildStore(cg->b, init ? cg_expr(cg, init) : LLVMConstNull(p->vt), p->acc);
    LLVMBuildStore(cg->b, LLVMConstInt(cg->i1, init != NULL, 0), p->have);
}

/* lk.reduce with a function, or argmin/argmax, over everything, on the team. Each thread starts from nothing
 * (a started flag, or the identity with index 0), and the partials are combined in chunk order. Returns
 * the value (FUNC) or the index (arg); an empty input raises as on one thread. */
LLVMValueRef cg_reduce_special_on_team(Cg *cg, CgMap *m, IrDtype dt, const IrNode *n)
{
    bool is_arg = m->red_op != IR_RED_FUNC;
    LLVMTypeRef vt = is_arg ? cg_type(cg, ir_type_scalar(dt)) : cg_type(cg, m->combine->acc_param->type);
    Partials p = {m, dt, vt};
    special_partials_on_team(cg, m, &p, special_work(cg, m));
    start_combination(cg, &p, is_arg ? NULL : m->combine->init);
    if (is_arg) {
        p.best_idx = cg_alloca(cg, cg->i64, "bestidx");
        LLVMBuildStore(cg->b, cg_i64(cg, 0), p.best_idx);
        over_chunks(cg, p.nchunks, combine_arg_partial, &p);
        return LLVMBuildLoad2(cg->b, cg->i64, p.best_idx, "");
    }
    over_chunks(cg, p.nchunks, combine_func_partial, &p);
    LLVMValueRef extra[1] = {cg_i64(cg, RT_VAL_EMPTY_REDUCE)};
    cg_raise_if(cg, LLVMBuildNot(cg->b, LLVMBuildLoad2(cg->b, cg->i1, p.have, ""), ""), RT_ERR_VALUE, n->pos, extra, 1);
    return LLVMBuildLoad2(cg->b, vt, p.acc, "");
}

/* cumsum/cumprod, in chunk order: chunk t's offset carry[t] is the combination of the totals before it. */
static void carry_partial(Cg *cg, LLVMValueRef *t, void *env)
{
    Partials *p = env;
    LLVMValueRef acc = LLVMBuildLoad2(cg->b, p->vt, p->acc, "");
    LLVMBuildStore(cg->b, acc, slot(cg, p->vt, p->carry, t[0]));
    LLVMValueRef total = LLVMBuildLoad2(cg->b, p->vt, slot(cg, p->vt, p->values, t[0]), "");
    LLVMBuildStore(cg->b, cg_red_combine(cg, p->m->red_op, p->dt, acc, total), p->acc);
}

/* A user's combine, in chunk order: chunk t starts from carry[t], init (if any) combined with the totals of
 * the chunks before it; carry_have[t] is false while that is nothing (no init, every chunk before t empty). */
static void carry_func_partial(Cg *cg, LLVMValueRef *t, void *env)
{
    Partials *p = env;
    LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, p->vt, p->acc, ""), slot(cg, p->vt, p->carry, t[0]));
    LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, cg->i1, p->have, ""), slot(cg, cg->i1, p->carry_have, t[0]));
    combine_func_partial(cg, t, env);
}

typedef struct ScanFix {
    IrReduceOp op;
    IrDtype dt;
    LLVMValueRef out, offset;
} ScanFix;

static void scan_fix_body(Cg *cg, LLVMValueRef *idx, void *env)
{
    ScanFix *f = env;
    const IrType *ot = ir_type_array(f->dt, 1, IR_LAYOUT_C);
    LLVMValueRef p = cg_elem_ptr(cg, ot, f->out, idx);
    cg_store_elem(cg, f->dt, p, cg_red_combine(cg, f->op, f->dt, f->offset, cg_load_elem(cg, f->dt, p)));
}

/* cumsum/cumprod's chunk c, which pass 1 scanned from the identity: its offset combined into each element.
 * The first chunk's offset is the identity, and it is left as it is. */
static void fix_chunk(Cg *cg, LLVMValueRef *c, void *env)
{
    Partials *p = env;
    CgMap *m = p->m;
    LLVMValueRef inner = cg_i64(cg, 1);
    for (int d = 1; d < m->ndim; d++) inner = LLVMBuildMul(cg->b, inner, m->dims[d], "");
    LLVMValueRef lo = LLVMBuildLoad2(cg->b, cg->i64, slot(cg, cg->i64, p->lo, c[0]), "");
    LLVMValueRef hi = LLVMBuildLoad2(cg->b, cg->i64, slot(cg, cg->i64, p->hi, c[0]), "");
    LLVMValueRef end = LLVMBuildMul(cg->b, hi, inner, "");
    LLVMValueRef first = LLVMBuildICmp(cg->b, LLVMIntEQ, lo, cg_i64(cg, 0), "");
    LLVMValueRef start = LLVMBuildSelect(cg->b, first, end, LLVMBuildMul(cg->b, lo, inner, ""), "");
    ScanFix fix = {m->red_op, p->dt, m->out, LLVMBuildLoad2(cg->b, p->vt, slot(cg, p->vt, p->carry, c[0]), "")};
    cg_loop_nest_from(cg, 1, &end, start, end, scan_fix_body, &fix, false);
}

/* Chunk c of the first pass, scanned again from its carry (or from its first element, when it has none). */
static void rescan_chunk(Cg *cg, LLVMValueRef *c, void *env)
{
    Partials *p = env;
    CgMap *m = p->m;
    LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, p->vt, slot(cg, p->vt, p->carry, c[0]), ""), m->acc);
    LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, cg->i1, slot(cg, cg->i1, p->carry_have, c[0]), ""), m->started);
    LLVMValueRef lo = LLVMBuildLoad2(cg->b, cg->i64, slot(cg, cg->i64, p->lo, c[0]), "");
    LLVMValueRef hi = LLVMBuildLoad2(cg->b, cg->i64, slot(cg, cg->i64, p->hi, c[0]), "");
    cg_map_run_chunk(cg, m, true, lo, hi, false);
}

/* A scan's second pass runs over the first pass's chunks as recorded (the team splits their count, normally
 * one chunk per thread), not over a new split of the rows: the team's size may have changed in between
 * (another Python thread calling lk.set_num_threads), and each carry belongs to its chunk. chunk(c) is
 * emitted in the chunk function, with p's arrays and m as that function sees them. */
static void over_recorded_chunks(Cg *cg, CgMap *m, Partials *p, LLVMValueRef work, CgLoopBody chunk)
{
    bool func = m->red_op == IR_RED_FUNC;
    CgOutline o = {0};
    CgMapCaps c;
    cg_map_capture(&o, m, &c);
    int ccarry = cg_capture(&o, p->carry), chave = func ? cg_capture(&o, p->carry_have) : -1;
    int clo = cg_capture(&o, p->lo), chi = cg_capture(&o, p->hi);
    LLVMValueRef nchunks = p->nchunks;
    cg_outline_begin(cg, &o, m->region);
    CgMap mine = *m;
    cg_map_restore(&o, &mine, &c);
    if (func) {
        mine.acc = cg_alloca(cg, p->vt, "acc");
        mine.started = cg_alloca(cg, cg->i1, "started");
    }
    Partials q = *p;
    q.m = &mine;
    q.carry = cg_outline_get(&o, ccarry);
    q.carry_have = func ? cg_outline_get(&o, chave) : NULL;
    q.lo = cg_outline_get(&o, clo);
    q.hi = cg_outline_get(&o, chi);
    cg_loop_nest_from(cg, 1, &o.hi, o.lo, o.hi, chunk, &q, false);
    cg_outline_end(cg, &o, nchunks, work);
}

/* The flattened cumsum/cumprod on the team, in two passes: each thread scans its chunk from the identity and
 * leaves its total; the totals' running combination gives each chunk its offset; each thread then combines
 * its offset into its chunk. With one thread (or below the threshold), one pass. */
LLVMValueRef cg_scan_on_team(Cg *cg, CgMap *m, const IrNode *n)
{
    IrDtype dt = n->type->dtype;
    LLVMValueRef work = cg_map_work(cg, m, m->map->u.map.body);
    LLVMBasicBlockRef par = cg_new_bb(cg, "scan_team"), seq = cg_new_bb(cg, "scan_alone"), joined = cg_new_bb(cg, "scan_joined");
    LLVMBuildCondBr(cg->b, cg_shares_work(cg, m->dims[0], work), par, seq);
    LLVMPositionBuilderAtEnd(cg->b, seq);
    cg_map_run(cg, m, true, false);
    LLVMBuildBr(cg->b, joined);
    LLVMPositionBuilderAtEnd(cg->b, par);
    LLVMTypeRef vt = cg_type(cg, ir_type_scalar(dt));
    Partials p = {m, dt, vt};
    p.values = cg_alloca(cg, LLVMArrayType(vt, RT_MAX_CHUNKS), "totals");
    p.lo = cg_alloca(cg, LLVMArrayType(cg->i64, RT_MAX_CHUNKS), "chunk_lo");
    p.hi = cg_alloca(cg, LLVMArrayType(cg->i64, RT_MAX_CHUNKS), "chunk_hi");
    p.nchunks = partials_on_team(cg, m, dt, p.values, p.lo, p.hi, work, false);
    p.acc = cg_alloca(cg, vt, "offset");
    LLVMBuildStore(cg->b, cg_red_identity(cg, m->red_op, dt), p.acc);
    p.carry = cg_alloca(cg, LLVMArrayType(vt, RT_MAX_CHUNKS), "offsets");
    over_chunks(cg, p.nchunks, carry_partial, &p);
    over_recorded_chunks(cg, m, &p, work, fix_chunk);
    LLVMBuildBr(cg->b, joined);
    LLVMPositionBuilderAtEnd(cg->b, joined);
    return m->out;
}

/* lk.scan with a function, flattened, on the team. A user's combine has no identity, so pass 1 only reduces:
 * each thread its chunk, from its first element. The carries follow, in chunk order; in pass 2 each thread
 * scans its chunk again from its carry, writing the result. Valid when fn is associative (documented). */
LLVMValueRef cg_scan_func_on_team(Cg *cg, CgMap *m, const IrNode *n)
{
    LLVMValueRef work = special_work(cg, m);
    LLVMBasicBlockRef par = cg_new_bb(cg, "scan_team"), seq = cg_new_bb(cg, "scan_alone"), joined = cg_new_bb(cg, "scan_joined");
    LLVMBuildCondBr(cg->b, cg_shares_work(cg, m->dims[0], work), par, seq); /* else one pass, not two */
    LLVMPositionBuilderAtEnd(cg->b, seq);
    cg_map_run(cg, m, true, false);
    LLVMBuildBr(cg->b, joined);
    LLVMPositionBuilderAtEnd(cg->b, par);
    LLVMTypeRef vt = cg_type(cg, m->combine->acc_param->type);
    Partials p = {m, n->type->dtype, vt};
    p.lo = cg_alloca(cg, LLVMArrayType(cg->i64, RT_MAX_CHUNKS), "chunk_lo");
    p.hi = cg_alloca(cg, LLVMArrayType(cg->i64, RT_MAX_CHUNKS), "chunk_hi");
    special_partials_on_team(cg, m, &p, work);
    start_combination(cg, &p, m->combine->init);
    p.carry = cg_alloca(cg, LLVMArrayType(vt, RT_MAX_CHUNKS), "carry");
    p.carry_have = cg_alloca(cg, LLVMArrayType(cg->i1, RT_MAX_CHUNKS), "carry_have");
    over_chunks(cg, p.nchunks, carry_func_partial, &p);
    over_recorded_chunks(cg, m, &p, work, rescan_chunk);
    LLVMBuildBr(cg->b, joined);
    LLVMPositionBuilderAtEnd(cg->b, joined);
    return m->out;
}
