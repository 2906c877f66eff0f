/* cuda_scan.c: the kernels whose combine must see the elements in order over many blocks: the chunked scan of
 * everything (cumsum, cumprod, lk.scan with a combine whose partials combine; kernel_abi.h says how its blocks
 * share the work through the scratch), and lk.reduce of everything with a user's combine.
 *
 * Both split the elements into contiguous chunks, one a block; a chunk into contiguous parts, one a warp; a part
 * into warp tiles of 32 * CU_SCAN_ITEMS elements; a tile into runs of CU_SCAN_ITEMS consecutive elements, one a
 * lane. So every combination is of neighbours, in order, and an associative combine gives the sequential result
 * (up to float rounding); the grouping depends on the grid and the block size only, never on timing: the same
 * launch gives the same bits. A warp works through its part with shuffles alone (block barriers only between
 * the passes). A built-in combine (add, mul) is commutative, so a lane may fold its elements of all tiles
 * before the warp's reduction; a user's combine may not be, so each tile is reduced in order and folded in turn.
 *
 * The combine is a lambda, lk_comb(acc, later), over accumulators {r, have} (have: holds something; a user's
 * combine has no identity). A user's combine may raise: the lambda then records the error (lowest work item
 * wins, as everywhere), sets lk_bad and returns, so that every thread still reaches every barrier; the host
 * raises the error after the launch. This file must never let a thread leave before a barrier the others
 * wait at. */
#include "cuda.h"

#define CU_SCAN_ITEMS 8
#define CU_WARP_TILE (32 * CU_SCAN_ITEMS)

typedef struct Chunked {
    const GpuKernelLayout *k;
    int index;
    IrReduceOp op;
    const IrCombine *cb;  /* op == IR_RED_FUNC */
    IrDtype dt;           /* the elements' (the map body's, cast to the accumulator's for a user combine) */
    const IrType *acc_t;
    bool ordered;         /* a user's combine: tiles reduced one by one, in order */
    bool flat_path;       /* the kernel has a flat path (p.s[flat_ok]) */
    CuMapSrc m;
    const char *A;        /* the accumulator struct's name */
    int nlabel;
} Chunked;

/* struct lk_k<i>_s { T r; bool have; shfl, shflu, empty } in the translation unit's types. */
static void acc_struct(Cu *c, Chunked *s)
{
    const char *T = cu_scalar(s->acc_t->dtype);
    s->A = cu_fmt(c, "lk_k%d_s", s->index);
    bool builtin = s->op != IR_RED_FUNC;
    CuBuf b = {0};
    cu_buf_printf(&b, "struct alignas(8) %s {\n    %s r;\n    bool have;\n", s->A, T);
    /* a built-in combine's accumulators always hold something: have is not exchanged */
    cu_buf_printf(&b, "    __device__ __forceinline__ %s shfl(unsigned off) const { %s x; x.r = lk_shfl_%s(r, off); "
                      "x.have = %s; return x; }\n", s->A, s->A, T, builtin ? "true" : "lk_shfl_bool(have, off)");
    cu_buf_printf(&b, "    __device__ __forceinline__ %s shflu(unsigned off) const { %s x; x.r = lk_shflu_%s(r, off); "
                      "x.have = %s; return x; }\n", s->A, s->A, T, builtin ? "true" : "lk_shflu_bool(have, off)");
    CuBuf *saved = c->out;
    CuBuf id = {0};
    c->out = &id; /* an identity is a literal: nothing is emitted */
    const char *zero = builtin ? cu_red_identity(c, s->op, s->dt) : cu_konst(c, s->acc_t, 0, 0.0);
    c->out = saved;
    cu_buf_free(&id);
    cu_buf_printf(&b, "    __device__ static __forceinline__ %s empty() { %s x; x.r = %s; x.have = %s; return x; }\n};\n",
                  s->A, s->A, zero, builtin ? "true" : "false");
    cu_buf_printf(&c->types, "%s", b.s);
    cu_buf_free(&b);
}

/* The lambda lk_comb(x, o): x = x combined with o (later). A built-in combine starts from its identity (have is
 * always true); a user's takes o as it is when x holds nothing. */
static bool comb_lambda(Cu *c, Chunked *s)
{
    cu_line(c, "bool lk_bad = false;");
    cu_line(c, "auto lk_comb = [&](%s &lk_x, const %s &lk_o) {", s->A, s->A);
    c->indent++;
    if (s->op != IR_RED_FUNC) {
        cu_line(c, "lk_x.r = %s;", cu_red_combine(c, s->op, s->dt, "lk_x.r", "lk_o.r", s->k->node->pos));
    } else {
        cu_line(c, "if (!lk_o.have) return;");
        cu_line(c, "if (!lk_x.have) { lk_x = lk_o; return; }");
        cu_line(c, "if (lk_bad) return;");
        const char *saved = c->fail;
        c->fail = "{ lk_bad = true; return; }";
        const char *r = cu_apply_combine(c, s->cb, "lk_x.r", "lk_o.r");
        c->fail = saved;
        if (!r) return false;
        cu_line(c, "lk_x.r = %s;", cu_cast(c, r, s->cb->body->type, s->acc_t));
    }
    c->indent--;
    cu_line(c, "};");
    return true;
}

/* T lk_v = the element lk_w (lk_order set; on a raise, goto fail_label). flat_only: the code of the flat path
 * alone, for a caller that tested lk_flat itself. */
static bool element(Cu *c, Chunked *s, const char *fail_label, bool flat_only)
{
    const GpuKernelLayout *k = s->k;
    cu_line(c, "lk_order = (u64)lk_w;");
    cu_line(c, "%s lk_v;", cu_scalar(s->acc_t->dtype));
    const char *saved = c->fail;
    c->fail = cu_fmt(c, "goto %s;", fail_label);
    for (int pass = s->flat_path ? 0 : 1; pass < (flat_only ? 1 : 2); pass++) {
        if (s->flat_path && !flat_only) cu_line(c, pass == 0 ? "if (lk_flat) {" : "} else {");
        else cu_line(c, "{");
        c->indent++;
        cu_init_uses(c, k);
        const char *idx[IR_MAX_DIMS];
        if (pass == 1) cu_unravel(c, "lk_w", k->ndim, s->m.dims, -1, idx);
        const char *v = cu_map_value_at(c, &s->m, pass == 0 || k->ndim == 0 ? "lk_w" : NULL, idx);
        if (!v) return false;
        v = cu_cast(c, v, k->map->u.map.body->type, ir_type_scalar(s->dt));
        cu_line(c, "lk_v = %s;", cu_cast(c, v, ir_type_scalar(s->dt), s->acc_t));
        c->indent--;
    }
    cu_line(c, "}");
    c->fail = saved;
    return true;
}

static void close_brace(Cu *c)
{
    c->indent--;
    cu_line(c, "}");
}

/* The warp's tiles of its part, last first: the second pass then starts on what is most recent in L2. */
static void open_tiles_backwards(Cu *c, int tile)
{
    cu_line(c, "for (i64 lk_t0 = lk_whi > lk_wlo ? lk_wlo + (lk_whi - lk_wlo - 1) / %d * %d : lk_wlo - 1; lk_t0 >= lk_wlo; "
               "lk_t0 -= %d) {", tile, tile, tile);
    c->indent++;
}

/* A flat path's loop over the `count` elements base + j * 32 + lane (j < count) of a tile known to lie below
 * lk_whi, with no test an element: unrolled, its loads all go out before the first value is used (a loop that
 * may stop at any element issues one load at a time and waits for each, at about a third of the device's
 * bandwidth). Each element's value goes to `into`[j]. */
static bool open_whole_tile(Cu *c, Chunked *s, const char *base, int count, const char *into, const char *fail_label)
{
    cu_line(c, "if (lk_flat && %s + %d <= lk_whi) {", base, 32 * count);
    c->indent++;
    cu_line(c, "#pragma unroll");
    cu_line(c, "for (int lk_j = 0; lk_j < %d; lk_j++) {", count);
    c->indent++;
    cu_line(c, "const i64 lk_w = %s + lk_j * 32 + (i64)lk_lane;", base);
    if (!element(c, s, fail_label, true)) return false;
    cu_line(c, "%s[lk_j] = lk_v;", into);
    close_brace(c);
    return true;
}

/* The warp's tile at `base` evaluated into lk_nx[j], each lane every 32nd element (base + j * 32 + lane: the
 * loads coalesce). An element that raises sets lk_bad (its error is recorded). */
static bool fetch_tile(Cu *c, Chunked *s, const char *base)
{
    int l = s->nlabel++;
    const char *fail_label = cu_fmt(c, "lk_sf%d", l);
    cu_line(c, "{");
    c->indent++;
    cu_line(c, "const i64 lk_tf = %s;", base);
    if (s->flat_path) {
        if (!open_whole_tile(c, s, "lk_tf", CU_SCAN_ITEMS, "lk_nx", fail_label)) return false;
        c->indent--;
        cu_line(c, "} else {");
        c->indent++;
    }
    cu_line(c, "for (int lk_j = 0; lk_j < %d; lk_j++) {", CU_SCAN_ITEMS);
    c->indent++;
    cu_line(c, "const i64 lk_w = lk_tf + lk_j * 32 + (i64)lk_lane;");
    cu_line(c, "if (lk_w >= lk_whi) break;");
    if (!element(c, s, fail_label, false)) return false;
    cu_line(c, "lk_nx[lk_j] = lk_v;");
    close_brace(c);
    if (s->flat_path) close_brace(c);
    close_brace(c);
    cu_line(c, "goto lk_sj%d;", l);
    cu_line(c, "lk_sf%d: lk_bad = true;", l);
    cu_line(c, "lk_sj%d: ;", l);
    return true;
}

/* lk_nx (the tile at lk_t0) into lk_vals[u], the lane's run of CU_SCAN_ITEMS consecutive elements (lk_t0 + lane *
 * CU_SCAN_ITEMS + u), through the warp's buffer lk_trw. */
static void spread_runs(Cu *c)
{
    cu_line(c, "for (int lk_j = 0; lk_j < %d; lk_j++) lk_trw[lk_j * 33 + (int)lk_lane] = lk_nx[lk_j];", CU_SCAN_ITEMS);
    cu_line(c, "__syncwarp();");
    cu_line(c, "for (int lk_u = 0; lk_u < %d; lk_u++) {", CU_SCAN_ITEMS);
    cu_line(c, "    const int lk_at = (int)lk_lane * %d + lk_u;", CU_SCAN_ITEMS);
    cu_line(c, "    lk_vals[lk_u] = lk_trw[lk_at + lk_at / 32];");
    cu_line(c, "}");
    cu_line(c, "__syncwarp();");
}

static bool load_runs(Cu *c, Chunked *s)
{
    if (!fetch_tile(c, s, "lk_t0")) return false;
    spread_runs(c);
    return true;
}

/* for (each u of the lane's run, lk_w its element, below lk_whi) { */
static void open_run(Cu *c)
{
    cu_line(c, "for (int lk_u = 0; lk_u < %d; lk_u++) {", CU_SCAN_ITEMS);
    c->indent++;
    cu_line(c, "const i64 lk_w = lk_t0 + (i64)lk_lane * %d + lk_u;", CU_SCAN_ITEMS);
    cu_line(c, "if (lk_w >= lk_whi) break;");
}

/* The chunk [lk_lo, lk_hi), split into one contiguous part a warp [lk_wlo, lk_whi), reduced: each warp's total
 * into lk_wsum[warp], then the chunk's into thread 0's lk_chunk. A warp needs no block barrier on the way. A
 * built-in combine folds each lane's elements, every 32nd (coalesced), then the warp's; a user's reduces each
 * tile's runs in order and puts the tile's total before the later tiles'. */
static bool chunk_total(Cu *c, Chunked *s)
{
    cu_line(c, "%s lk_acc = %s::empty(), lk_wtot = %s::empty();", s->A, s->A, s->A);
    /* a built-in combine takes two tiles at a time: 16 loads a lane in flight */
    open_tiles_backwards(c, s->ordered ? CU_WARP_TILE : 2 * CU_WARP_TILE);
    if (s->ordered) {
        cu_line(c, "lk_acc = %s::empty();", s->A);
        if (!load_runs(c, s)) return false;
        open_run(c);
        cu_line(c, "%s lk_e; lk_e.r = lk_vals[lk_u]; lk_e.have = true;", s->A);
        cu_line(c, "lk_order = (u64)lk_w;");
        cu_line(c, "lk_comb(lk_acc, lk_e);");
        close_brace(c);
        cu_line(c, "lk_acc = lk_fwarp_reduce(lk_acc, lk_comb);");
        cu_line(c, "if (lk_lane == 0) { lk_comb(lk_acc, lk_wtot); lk_wtot = lk_acc; }");
    } else {
        int l = s->nlabel++;
        const char *fail_label = cu_fmt(c, "lk_sf%d", l);
        cu_line(c, "{");
        c->indent++;
        if (s->flat_path) {
            /* a whole tile pair: its 16 loads a lane first, then the combines in the same order as below */
            cu_line(c, "%s lk_ld[%d];", cu_scalar(s->acc_t->dtype), 2 * CU_SCAN_ITEMS);
            if (!open_whole_tile(c, s, "lk_t0", 2 * CU_SCAN_ITEMS, "lk_ld", fail_label)) return false;
            cu_line(c, "#pragma unroll");
            cu_line(c, "for (int lk_j = 0; lk_j < %d; lk_j++) {", 2 * CU_SCAN_ITEMS);
            cu_line(c, "    %s lk_e; lk_e.r = lk_ld[lk_j]; lk_e.have = true;", s->A);
            cu_line(c, "    lk_comb(lk_acc, lk_e);");
            cu_line(c, "}");
            c->indent--;
            cu_line(c, "} else {");
            c->indent++;
        }
        cu_line(c, "for (int lk_j = 0; lk_j < %d; lk_j++) {", 2 * CU_SCAN_ITEMS);
        c->indent++;
        cu_line(c, "const i64 lk_w = lk_t0 + lk_j * 32 + (i64)lk_lane;");
        cu_line(c, "if (lk_w >= lk_whi) break;");
        if (!element(c, s, fail_label, false)) return false;
        cu_line(c, "%s lk_e; lk_e.r = lk_v; lk_e.have = true;", s->A);
        cu_line(c, "lk_comb(lk_acc, lk_e);");
        close_brace(c);
        if (s->flat_path) close_brace(c);
        close_brace(c);
        cu_line(c, "goto lk_sj%d;", l);
        cu_line(c, "lk_sf%d: lk_bad = true;", l);
        cu_line(c, "lk_sj%d: ;", l);
    }
    close_brace(c);
    if (!s->ordered) cu_line(c, "lk_wtot = lk_fwarp_reduce(lk_acc, lk_comb);");
    cu_line(c, "if (lk_lane == 0) lk_wsum[lk_warp] = lk_wtot;");
    cu_line(c, "__syncthreads();");
    cu_line(c, "%s lk_chunk = %s::empty();", s->A, s->A);
    cu_line(c, "if (threadIdx.x == 0)");
    cu_line(c, "    for (unsigned lk_j = 0; lk_j < lk_nwarps; lk_j++) lk_comb(lk_chunk, lk_wsum[lk_j]);");
    return true;
}

/* The chunk of block lk_c, whole warp tiles a warp: [lk_lo, lk_hi), and this warp's part [lk_wlo, lk_whi). */
static void chunk_bounds(Cu *c)
{
    cu_line(c, "const unsigned lk_lane = threadIdx.x & 31u, lk_warp = threadIdx.x >> 5, lk_nwarps = (blockDim.x + 31u) >> 5;");
    cu_line(c, "const i64 lk_tile = (i64)lk_nwarps * %d;", CU_WARP_TILE);
    cu_line(c, "const i64 lk_per = ((lk_n + gridDim.x - 1) / gridDim.x + lk_tile - 1) / lk_tile * lk_tile;");
    cu_line(c, "const i64 lk_lo = lk_c * lk_per < lk_n ? lk_c * lk_per : lk_n;");
    cu_line(c, "const i64 lk_hi = lk_lo + lk_per < lk_n ? lk_lo + lk_per : lk_n;");
    cu_line(c, "const i64 lk_wper = lk_per / lk_nwarps;");
    cu_line(c, "const i64 lk_wlo = lk_lo + lk_warp * lk_wper < lk_hi ? lk_lo + lk_warp * lk_wper : lk_hi;");
    cu_line(c, "const i64 lk_whi = lk_wlo + lk_wper < lk_hi ? lk_wlo + lk_wper : lk_hi;");
}

/* Declarations every chunked kernel starts with: inputs, the flat flag, shared memory, the combine. */
static bool open_chunked(Cu *c, Chunked *s, const GpuKernelLayout *k, int index, IrReduceOp op, const IrCombine *cb)
{
    s->k = k;
    s->index = index;
    s->op = op;
    s->cb = cb;
    s->dt = k->map->u.map.body->type->dtype;
    s->acc_t = op == IR_RED_FUNC ? cb->acc_param->type : ir_type_scalar(s->dt);
    if (op == IR_RED_FUNC) s->dt = s->acc_t->dtype; /* ir_reduce_partials_ok: the elements' dtype */
    s->ordered = op == IR_RED_FUNC;
    s->flat_path = cu_flat_possible(k, NULL);
    acc_struct(c, s);
    cu_map_src(c, k, &s->m, cu_reads_only(k->node));
    cu_line(c, "const bool lk_flat = %s;", s->flat_path ? cu_fmt(c, "p.s[%d] != 0", k->flat_ok) : "false");
    cu_line(c, "__shared__ %s lk_sh[32], lk_wsum[32];", s->A);
    const char *T = cu_scalar(s->acc_t->dtype);
    cu_line(c, "__shared__ %s lk_tr[%d][%d];", T, RT_GPU_BLOCK / 32, 33 * CU_SCAN_ITEMS);
    cu_line(c, "%s *const lk_trw = lk_tr[threadIdx.x >> 5];", T);
    cu_line(c, "%s lk_vals[%d], lk_nx[%d];", T, CU_SCAN_ITEMS, CU_SCAN_ITEMS);
    return comb_lambda(c, s);
}

/* The chunked scan (kernel_abi.h): its chunk, the prefix of the chunks before it, the chunk scanned again. */
bool cu_scan_chunked_kernel(Cu *c, const GpuKernelLayout *k, int index)
{
    const IrNode *n = k->node;
    const IrType *ot = n->u.scan.out->type;
    Chunked s = {0};
    if (!open_chunked(c, &s, k, index, n->u.scan.op, &n->u.scan.combine)) return false;
    cu_out_slots(c, k, 1);
    cu_line(c, "__shared__ %s lk_pre;", s.A);
    cu_line(c, "__shared__ unsigned lk_chunk_id;");
    cu_line(c, "%s *lk_tot = (%s *)(lk_scratch + %d);", s.A, s.A, GPU_PARTIALS_OFFSET);
    cu_line(c, "unsigned *lk_flags = (unsigned *)(lk_scratch + %d);", GPU_SCAN_FLAGS_OFFSET);
    cu_line(c, "if (gridDim.x > %du) {", RT_GPU_MAX_REDUCE_BLOCKS);
    cu_line(c, "    if (blockIdx.x == 0 && threadIdx.x == 0) lk_raise(lk_err, 0, %d, %d, %d, -1, (i64)gridDim.x, %d, 0);",
            (int)LK_ERR_INTERNAL, CU_ERR_GRID, c->f->line, RT_GPU_MAX_REDUCE_BLOCKS);
    cu_line(c, "    return;");
    cu_line(c, "}");
    cu_line(c, "if (threadIdx.x == 0) lk_chunk_id = atomicAdd((unsigned *)lk_scratch, 1u);");
    cu_line(c, "__syncthreads();");
    cu_line(c, "const i64 lk_c = lk_chunk_id;");
    chunk_bounds(c);
    if (!chunk_total(c, &s)) return false;
    cu_line(c, "if (threadIdx.x == 0) {");
    cu_line(c, "    lk_tot[lk_c] = lk_chunk;");
    cu_line(c, "    __threadfence();");
    cu_line(c, "    atomicExch(&lk_flags[lk_c], 1u);");
    cu_line(c, "}");
    /* the prefix: the totals of chunks 0 .. c-1, a contiguous share per thread, then the block's tree */
    cu_line(c, "{");
    c->indent++;
    cu_line(c, "%s lk_x = %s::empty();", s.A, s.A);
    cu_line(c, "const i64 lk_share = (lk_c + blockDim.x - 1) / blockDim.x;");
    cu_line(c, "for (i64 lk_j = threadIdx.x * lk_share; lk_j < (threadIdx.x + 1) * lk_share && lk_j < lk_c; lk_j++) {");
    cu_line(c, "    while (*(volatile unsigned *)&lk_flags[lk_j] == 0u) { }");
    cu_line(c, "    __threadfence();");
    cu_line(c, "    lk_comb(lk_x, lk_load_volatile(&lk_tot[lk_j]));");
    cu_line(c, "}");
    cu_line(c, "lk_x = lk_fblock_reduce(lk_x, lk_sh, lk_comb);");
    cu_line(c, "if (threadIdx.x == 0) {");
    c->indent++;
    if (n->u.scan.op == IR_RED_FUNC && n->u.scan.combine.init) {
        /* the init comes before every element: the carry of chunk 0 */
        cu_line(c, "lk_order = 0;");
        cu_init_uses(c, k);
        const char *saved = c->fail;
        c->fail = "goto lk_init_failed;";
        const char *init = cu_expr(c, n->u.scan.combine.init);
        c->fail = saved;
        if (!init) return false;
        cu_line(c, "%s lk_i; lk_i.r = %s; lk_i.have = true;", s.A, cu_cast(c, init, n->u.scan.combine.init->type, s.acc_t));
        cu_line(c, "lk_comb(lk_i, lk_x);");
        cu_line(c, "lk_x = lk_i;");
        cu_line(c, "goto lk_init_done;");
        cu_line(c, "lk_init_failed: lk_bad = true;");
        cu_line(c, "lk_init_done: ;");
    }
    cu_line(c, "lk_pre = lk_x;");
    close_brace(c);
    cu_line(c, "__syncthreads();");
    close_brace(c);
    /* the chunk again, each warp its part from its carry (the prefix, then the parts before it): each tile's
     * runs scanned from the warp's exclusive scan of them; the results go back through the warp's buffer, so
     * that the stores coalesce too */
    cu_line(c, "%s lk_carry = lk_pre;", s.A);
    cu_line(c, "for (unsigned lk_j = 0; lk_j < lk_warp; lk_j++) lk_comb(lk_carry, lk_wsum[lk_j]);");
    if (!fetch_tile(c, &s, "lk_wlo")) return false;
    cu_line(c, "for (i64 lk_t0 = lk_wlo; lk_t0 < lk_whi; lk_t0 += %d) {", CU_WARP_TILE);
    c->indent++;
    cu_line(c, "%s lk_run = %s::empty();", s.A, s.A);
    spread_runs(c);
    /* the next tile's loads go out now, to arrive while this one is scanned and stored */
    if (!fetch_tile(c, &s, cu_fmt(c, "lk_t0 + %d", CU_WARP_TILE))) return false;
    open_run(c);
    cu_line(c, "%s lk_e; lk_e.r = lk_vals[lk_u]; lk_e.have = true;", s.A);
    cu_line(c, "lk_order = (u64)lk_w;");
    cu_line(c, "lk_comb(lk_run, lk_e);");
    close_brace(c);
    cu_line(c, "const %s lk_inc = lk_fwarp_scan(lk_run, lk_comb);", s.A);
    cu_line(c, "const %s lk_before = lk_inc.shflu(1), lk_ttot = lk_inc.shfl(31u - lk_lane);", s.A);
    cu_line(c, "%s lk_x = lk_carry;", s.A);
    cu_line(c, "if (lk_lane) lk_comb(lk_x, lk_before);");
    open_run(c);
    cu_line(c, "%s lk_e; lk_e.r = lk_vals[lk_u]; lk_e.have = true;", s.A);
    cu_line(c, "lk_order = (u64)lk_w;");
    cu_line(c, "lk_comb(lk_x, lk_e);");
    cu_line(c, "const int lk_at = (int)lk_lane * %d + lk_u;", CU_SCAN_ITEMS);
    cu_line(c, "lk_trw[lk_at + lk_at / 32] = lk_x.r;");
    close_brace(c);
    cu_line(c, "__syncwarp();");
    cu_line(c, "for (int lk_j = 0; lk_j < %d; lk_j++) {", CU_SCAN_ITEMS);
    c->indent++;
    cu_line(c, "const int lk_at = lk_j * 32 + (int)lk_lane;");
    cu_line(c, "const i64 lk_w = lk_t0 + lk_at;");
    cu_line(c, "if (lk_w >= lk_whi) break;");
    cu_store_at(c, ot->dtype, "lk_out + lk_w * lk_out_s0", cu_cast(c, "lk_trw[lk_at + lk_j]", s.acc_t, ir_type_scalar(ot->dtype)));
    close_brace(c);
    cu_line(c, "__syncwarp();");
    cu_line(c, "lk_comb(lk_carry, lk_ttot);");
    close_brace(c);
    /* the last block out leaves the scratch as it found it */
    cu_line(c, "__syncthreads();");
    cu_line(c, "if (threadIdx.x == 0) {");
    cu_line(c, "    __threadfence();");
    cu_line(c, "    if (atomicAdd((unsigned *)(lk_scratch + %d), 1u) == gridDim.x - 1u) {", GPU_DONE_OFFSET);
    cu_line(c, "        for (unsigned lk_j = 0; lk_j < gridDim.x; lk_j++) lk_flags[lk_j] = 0u;");
    cu_line(c, "        *(unsigned *)(lk_scratch + %d) = 0u;", GPU_DONE_OFFSET);
    cu_line(c, "        *(unsigned *)lk_scratch = 0u;");
    cu_line(c, "        __threadfence();");
    cu_line(c, "    }");
    cu_line(c, "}");
    return true;
}

/* lk.reduce of everything with a user's combine (ir_reduce_partials_ok): block b reduces chunk b in order, the
 * last block combines the chunks' totals in order, then the init before them (or the empty-input error). */
bool cu_reduce_func_chunked_kernel(Cu *c, const GpuKernelLayout *k, int index)
{
    const IrNode *n = k->node;
    const IrCombine *cb = &n->u.reduce.combine;
    Chunked s = {0};
    if (!open_chunked(c, &s, k, index, IR_RED_FUNC, cb)) return false;
    cu_line(c, "__shared__ bool lk_lastf;");
    cu_line(c, "%s *lk_tot = (%s *)(lk_scratch + %d);", s.A, s.A, GPU_PARTIALS_OFFSET);
    cu_line(c, "if (gridDim.x > %du) {", RT_GPU_MAX_REDUCE_BLOCKS);
    cu_line(c, "    if (blockIdx.x == 0 && threadIdx.x == 0) lk_raise(lk_err, 0, %d, %d, %d, -1, (i64)gridDim.x, %d, 0);",
            (int)LK_ERR_INTERNAL, CU_ERR_GRID, c->f->line, RT_GPU_MAX_REDUCE_BLOCKS);
    cu_line(c, "    return;");
    cu_line(c, "}");
    cu_line(c, "const i64 lk_c = blockIdx.x;");
    chunk_bounds(c);
    if (!chunk_total(c, &s)) return false;
    cu_line(c, "if (threadIdx.x == 0) lk_tot[lk_c] = lk_chunk;");
    cu_line(c, "if (lk_last_block(lk_scratch, &lk_lastf)) {");
    c->indent++;
    cu_line(c, "%s lk_x = %s::empty();", s.A, s.A);
    cu_line(c, "const i64 lk_share = (gridDim.x + blockDim.x - 1) / blockDim.x;");
    cu_line(c, "for (i64 lk_j = threadIdx.x * lk_share; lk_j < (threadIdx.x + 1) * lk_share && lk_j < gridDim.x; lk_j++)");
    cu_line(c, "    lk_comb(lk_x, lk_load_volatile(&lk_tot[lk_j]));");
    cu_line(c, "lk_x = lk_fblock_reduce(lk_x, lk_sh, lk_comb);");
    cu_line(c, "if (threadIdx.x == 0) {");
    c->indent++;
    cu_line(c, "*(unsigned *)lk_scratch = 0u;");
    cu_line(c, "lk_order = 0;");
    c->fail = "goto lk_end;"; /* past the barriers: thread 0 is alone here */
    if (cb->init) {
        cu_init_uses(c, k);
        const char *init = cu_expr(c, cb->init);
        if (!init) return false;
        cu_line(c, "%s lk_i; lk_i.r = %s; lk_i.have = true;", s.A, cu_cast(c, init, cb->init->type, s.acc_t));
        cu_line(c, "lk_comb(lk_i, lk_x);");
        cu_line(c, "lk_x = lk_i;");
    } else {
        cu_raise(c, "!lk_x.have", RT_ERR_VALUE, n->pos, cu_fmt(c, "%d", RT_VAL_EMPTY_REDUCE), NULL, NULL);
    }
    cu_line(c, "*(i64 *)(lk_scratch + %d) = %s;", GPU_RESULTS_OFFSET, cu_to_slot(c, "lk_x.r", s.acc_t));
    close_brace(c);
    close_brace(c);
    cu_line(c, "lk_end: ;");
    return true;
}
