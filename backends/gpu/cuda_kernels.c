/* cuda_kernels.c: one CUDA C kernel per parallel region, reading its parameter block exactly as
 * gpu_kernel_layout() (kernel_abi.c) lays it out. Work items are spread over the grid with a grid-stride loop;
 * each work item runs the region's element code on a private copy of the region's uses. A failing work item
 * writes the error record (lowest work item wins, cuda_preamble.c) and stops its thread; in a reduce kernel it
 * stops accumulating and still takes part in the block's barriers.
 *
 * Reductions of everything (and a prange's reductions) reduce per thread, then per block (warp shuffles and a
 * shared-memory tree that pairs neighbours, lk_block_reduce), write the block's partial to the scratch, and the
 * last block to take the ticket combines the partials in block order and zeroes the ticket: the result depends
 * on the grid only, never on which block finished first. The flat path loads 16 bytes an input at a time where
 * the inputs are aligned. A user's combine (lk.reduce with a function) whose partials combine, and the scan of
 * everything, run chunked over the blocks in order (cuda_scan.c); a user's combine whose partials do not combine
 * runs in one thread, in order. Axis reductions and scans along an axis take a work item per line, which
 * reduces or scans it in order. Matrix products are cuda_matmul.c's. */
#include "cuda.h"

/* Variables of the region that the element code takes from the slots, at the start of each work item (a
 * prange's reduction variables excepted: they accumulate over the thread's work items). */
void cu_init_uses(Cu *c, const GpuKernelLayout *k)
{
    const IrRegion *r = k->node->region;
    for (int j = 0; j < r->nuses; j++) {
        const IrVar *v = r->uses[j];
        bool is_red = false;
        if (k->kind == GPU_K_PRANGE)
            for (int i = 0; i < k->node->u.for_range.nreds; i++) is_red |= k->node->u.for_range.reds[i].var == v;
        if (is_red || !v->type) continue;
        int slot = k->use[j];
        if (v->type->kind == IR_TY_SCALAR || v->type->kind == IR_TY_ARRAY || v->type->kind == IR_TY_TUPLE)
            cu_fill_slots(c, cu_fmt(c, "v%d", v->id), v->type, &slot);
        if (v->maybe_unbound) cu_line(c, "b%d = true;", v->id);
    }
}

/* The kernel writes no memory its inputs may alias (element code with no store and no user call that may write;
 * a map's out just allocated, as an axis reduction's or a scan's always is): its inputs may be __restrict__. */
bool cu_reads_only(const IrNode *region)
{
    if (region->kind == IR_MAP)
        return region->u.map.out_is_fresh && !(ir_effects(region->u.map.body) & IR_FX_WRITE);
    const IrNode *input = region->kind == IR_REDUCE ? region->u.reduce.input : region->u.scan.input;
    const IrCombine *cb = region->kind == IR_REDUCE ? &region->u.reduce.combine : &region->u.scan.combine;
    unsigned fx = ir_effects(input->u.map.body);
    if (cb->body) fx |= ir_effects(cb->body);
    if (cb->init) fx |= ir_effects(cb->init);
    return !(fx & IR_FX_WRITE);
}

/* The map's inputs and the space's dims from the slots, as named locals. */
void cu_map_src(Cu *c, const GpuKernelLayout *k, CuMapSrc *m, bool restrict_ok)
{
    const IrNode *map = k->map;
    m->map = map;
    m->ndim = k->ndim;
    for (int d = 0; d < k->ndim; d++) {
        m->dims[d] = cu_fmt(c, "lk_d%d", d);
        cu_line(c, "const i64 lk_d%d = p.s[%d];", d, k->dims + d);
    }
    for (int i = 0; i < k->ninputs; i++) {
        const IrType *t = map->u.map.inputs[i]->type;
        if (t->kind != IR_TY_ARRAY) {
            m->val[i] = cu_fmt(c, "lk_in%d", i);
            cu_line(c, "const %s lk_in%d = %s;", cu_type(c, t), i, cu_from_slots(c, t, k->input[i]));
            continue;
        }
        m->val[i] = cu_fmt(c, "lk_in%d", i);
        cu_line(c, "const char *%slk_in%d = (const char *)p.s[%d];", restrict_ok ? "__restrict__ " : "", i, k->input[i]);
        for (int a = 0; a < t->ndim; a++) {
            m->stride[i][a] = cu_fmt(c, "lk_in%d_s%d", i, a);
            cu_line(c, "const i64 lk_in%d_s%d = p.s[%d];", i, a, k->input[i] + 1 + a);
        }
    }
}

/* Whether the flat loop can serve: every array input of the space's ndim with C layout, out too. */
bool cu_flat_possible(const GpuKernelLayout *k, const IrType *out_t)
{
    if (k->flat_ok < 0 || k->ndim == 0) return false;
    if (out_t && out_t->layout != IR_LAYOUT_C) return false;
    for (int i = 0; i < k->ninputs; i++) {
        const IrType *t = k->map->u.map.inputs[i]->type;
        if (t->kind == IR_TY_ARRAY && (t->layout != IR_LAYOUT_C || t->ndim != k->ndim)) return false;
    }
    return true;
}

/* i64 idx[d] of work item `w` unravelled (C order) over dims, skipping axis `skip` (-1: none). */
void cu_unravel(Cu *c, const char *w, int ndim, const char *const *dims, int skip, const char **idx)
{
    const char *r = cu_tmp(c, ir_type_scalar(IR_DT_INT64), "%s", w);
    for (int d = ndim - 1; d >= 0; d--) {
        if (d == skip) continue;
        idx[d] = cu_new_tmp(c);
        bool first = true;
        for (int e = 0; e < d; e++) first &= e == skip;
        if (first) {
            cu_line(c, "const i64 %s = %s;", idx[d], r);
        } else {
            cu_line(c, "const i64 %s = %s %% %s;", idx[d], r, dims[d]);
            cu_line(c, "%s /= %s;", r, dims[d]);
        }
    }
}

static const char *out_addr(Cu *c, const char *out, int ndim, const char *const *idx)
{
    CuBuf b = {0};
    cu_buf_printf(&b, "%s", out);
    for (int d = 0; d < ndim; d++) cu_buf_printf(&b, " + %s * lk_out_s%d", idx[d], d);
    const char *r = cu_fmt(c, "%s", b.s);
    cu_buf_free(&b);
    return r;
}

void cu_out_slots(Cu *c, const GpuKernelLayout *k, int ndim)
{
    cu_line(c, "char *lk_out = (char *)p.s[%d];", k->out);
    for (int d = 0; d < ndim; d++) cu_line(c, "const i64 lk_out_s%d = p.s[%d];", d, k->out + 1 + d);
}

/* The grid-stride loop's header from work item `first` on: it counts in u64 (work items are never negative: n is
 * clamped at 0) and the body reads the item as i64 lk_w. ptxas takes about half as long over an unsigned loop as
 * over a signed 64-bit one, whose overflow it reasons about: NVRTC's time for a one-line map's kernels fell from
 * about 90 to 55 ms of CPU, most of a new kernel's first call. */
static void grid_loop_header(Cu *c, const char *first)
{
    cu_line(c, "for (u64 lk_wu = (u64)(%s) + (u64)blockIdx.x * blockDim.x + threadIdx.x; lk_wu < (u64)(lk_n > 0 ? lk_n : 0); "
               "lk_wu += (u64)gridDim.x * blockDim.x) {", first);
    c->indent++;
    cu_line(c, "const i64 lk_w = (i64)lk_wu;");
}

/* for (k = this thread's first work item; k < n; k += the grid's threads) { lk_order = k; ... } */
static void open_grid_loop(Cu *c)
{
    grid_loop_header(c, "0");
    cu_line(c, "lk_order = (u64)lk_w;");
}

static void close_brace(Cu *c)
{
    c->indent--;
    cu_line(c, "}");
}

static bool map_kernel(Cu *c, const GpuKernelLayout *k)
{
    const IrNode *n = k->node;
    const IrType *ot = n->type;
    CuMapSrc m = {0};
    cu_map_src(c, k, &m, cu_reads_only(n));
    cu_out_slots(c, k, ot->ndim);
    bool flat = cu_flat_possible(k, ot);
    IrDtype body_dt = n->u.map.body->type->dtype;
    for (int pass = flat ? 0 : 1; pass < 2; pass++) {
        if (flat) cu_line(c, pass == 0 ? "if (p.s[%d]) {" : "} else {", k->flat_ok);
        if (flat) c->indent++;
        open_grid_loop(c);
        cu_init_uses(c, k);
        const char *idx[IR_MAX_DIMS];
        if (pass == 1) cu_unravel(c, "lk_w", k->ndim, m.dims, -1, idx);
        const char *v = cu_map_value_at(c, &m, pass == 0 ? "lk_w" : NULL, idx);
        if (!v) return false;
        v = cu_cast(c, v, ir_type_scalar(body_dt), ir_type_scalar(ot->dtype));
        const char *addr = pass == 0 ? cu_fmt(c, "lk_out + lk_w * %d", ir_dtype_size(ot->dtype)) : out_addr(c, "lk_out", ot->ndim, idx);
        cu_store_at(c, ot->dtype, addr, v);
        close_brace(c);
        if (flat) c->indent--;
    }
    if (flat) cu_line(c, "}");
    return true;
}

static bool imap_kernel(Cu *c, const GpuKernelLayout *k)
{
    const IrNode *n = k->node;
    int nd = n->u.imap.ndim;
    const char *dims[IR_MAX_DIMS] = {0}, *idx[IR_MAX_DIMS] = {0};
    for (int d = 0; d < nd; d++) {
        dims[d] = cu_fmt(c, "lk_d%d", d);
        cu_line(c, "const i64 lk_d%d = p.s[%d];", d, k->dims + d);
    }
    cu_out_slots(c, k, nd);
    open_grid_loop(c);
    cu_init_uses(c, k);
    cu_unravel(c, "lk_w", nd, dims, -1, idx);
    for (int d = 0; d < nd; d++) cu_line(c, "v%d = %s;", n->u.imap.idx[d]->id, idx[d]);
    const char *v = cu_expr(c, n->u.imap.body);
    if (!v) return false;
    cu_store_at(c, n->type->dtype, out_addr(c, "lk_out", nd, idx), cu_cast(c, v, n->u.imap.body->type, ir_type_scalar(n->type->dtype)));
    close_brace(c);
    return true;
}

/* One iteration of a prange loop: its variable from the work item, then the body, with a continue label. */
static bool prange_item(Cu *c, const GpuKernelLayout *k)
{
    const IrNode *s = k->node;
    const IrVar *var = s->u.for_range.var;
    cu_init_uses(c, k);
    cu_line(c, "v%d = (%s)(p.s[%d] + lk_w * p.s[%d]);", var->id, cu_type(c, var->type), k->start, k->step);
    if (var->maybe_unbound) cu_line(c, "b%d = true;", var->id);
    int cont = c->nlabel++;
    c->brk[0] = cont; /* prange's rules forbid break */
    c->cont[0] = cont;
    c->loop_depth = 1;
    if (!cu_block(c, &s->u.for_range.body)) return false;
    c->loop_depth = 0;
    cu_line(c, "lk_L%d: ;", cont);
    return true;
}

/* ---- reductions over the grid ---- */

/* The accumulator struct of a reduce kernel: fields r<i> of types t[i] (and, for argmin/argmax, the index),
 * comb (this op later), shfl, empty (identities). */
static void acc_struct(Cu *c, int index, int nacc, const IrReduceOp *ops, const IrDtype *dts, IrPos pos)
{
    bool is_arg = nacc == 1 && (ops[0] == IR_RED_ARGMIN || ops[0] == IR_RED_ARGMAX);
    CuBuf *saved = c->out;
    CuBuf b = {0};
    c->out = &b;
    cu_buf_printf(&b, "struct lk_k%d_acc {\n", index);
    for (int i = 0; i < nacc; i++) cu_buf_printf(&b, "    %s r%d;\n", cu_scalar(dts[i]), i);
    if (is_arg) cu_buf_printf(&b, "    i64 idx;\n");
    cu_buf_printf(&b, "    __device__ __forceinline__ void comb(const lk_k%d_acc &o)\n    {\n", index);
    if (is_arg) {
        cu_buf_printf(&b, "        if (%s) { r0 = o.r0; idx = o.idx; }\n", cu_arg_better(c, ops[0], dts[0], "o.r0", "o.idx", "r0", "idx"));
    } else {
        for (int i = 0; i < nacc; i++)
            cu_buf_printf(&b, "        r%d = %s;\n", i, cu_red_combine(c, ops[i], dts[i], cu_fmt(c, "r%d", i), cu_fmt(c, "o.r%d", i), pos));
    }
    cu_buf_printf(&b, "    }\n    __device__ __forceinline__ lk_k%d_acc shfl(unsigned off) const\n    {\n        lk_k%d_acc x;\n", index, index);
    for (int i = 0; i < nacc; i++) cu_buf_printf(&b, "        x.r%d = lk_shfl_%s(r%d, off);\n", i, cu_scalar(dts[i]), i);
    if (is_arg) cu_buf_printf(&b, "        x.idx = lk_shfl_i64(idx, off);\n");
    cu_buf_printf(&b, "        return x;\n    }\n    __device__ static __forceinline__ lk_k%d_acc empty()\n    {\n        lk_k%d_acc x;\n", index, index);
    for (int i = 0; i < nacc; i++) cu_buf_printf(&b, "        x.r%d = %s;\n", i, cu_red_identity(c, ops[i], dts[i]));
    if (is_arg) cu_buf_printf(&b, "        x.idx = (i64)9223372036854775807LL;\n");
    cu_buf_printf(&b, "        return x;\n    }\n};\n");
    c->out = saved;
    cu_buf_printf(&c->types, "%s", b.s);
    cu_buf_free(&b);
}

/* After the grid loop (lk_acc holds the thread's partial): the block's partial to the scratch, and in the last
 * block the partials combined in block order; then results(b) writes the results from thread 0. */
static void grid_combine_open(Cu *c, int index)
{
    cu_line(c, "{");
    c->indent++;
    cu_line(c, "__shared__ lk_k%d_acc lk_sh[32];", index);
    cu_line(c, "__shared__ bool lk_lastf;");
    cu_line(c, "lk_k%d_acc *lk_parts = (lk_k%d_acc *)(lk_scratch + %d);", index, index, GPU_PARTIALS_OFFSET);
    /* every block's partial must fit in the scratch: a grid too big for this kernel's accumulator (a prange
     * with many reductions) raises an internal error from block 0 and every thread leaves, before any barrier */
    cu_line(c, "if ((u64)gridDim.x * sizeof(lk_k%d_acc) > (u64)%d) {", index, RT_GPU_SCRATCH_BYTES - GPU_PARTIALS_OFFSET);
    c->nraises++;
    c->indent++;
    cu_line(c, "if (blockIdx.x == 0 && threadIdx.x == 0) lk_raise(lk_err, 0, %d, %d, %d, -1, (i64)gridDim.x, (i64)sizeof(lk_k%d_acc), 0);",
            (int)LK_ERR_INTERNAL, CU_ERR_GRID, c->f->line, index);
    cu_line(c, "return;");
    close_brace(c);
    cu_line(c, "lk_acc = lk_block_reduce(lk_acc, lk_sh);");
    cu_line(c, "if (threadIdx.x == 0) lk_parts[blockIdx.x] = lk_acc;");
    cu_line(c, "if (lk_last_block(lk_scratch, &lk_lastf)) {");
    c->indent++;
    cu_line(c, "lk_k%d_acc lk_b = lk_k%d_acc::empty();", index, index);
    cu_line(c, "unsigned lk_per = (gridDim.x + blockDim.x - 1) / blockDim.x;");
    cu_line(c, "for (unsigned j = threadIdx.x * lk_per; j < (threadIdx.x + 1) * lk_per && j < gridDim.x; j++) lk_b.comb(lk_parts[j]);");
    cu_line(c, "lk_b = lk_block_reduce(lk_b, lk_sh);");
    cu_line(c, "if (threadIdx.x == 0) {");
    c->indent++;
    cu_line(c, "*(unsigned *)lk_scratch = 0u;");
    cu_line(c, "lk_order = 0;");
    c->fail = "goto lk_end;"; /* past the barriers: thread 0 is alone here */
}

static void grid_combine_close(Cu *c)
{
    for (int i = 0; i < 3; i++) close_brace(c);
    cu_line(c, "lk_end: ;");
}

/* One element of a reduce kernel, lk_w (declared by the caller), into lk_acc; its inputs loaded at the flat
 * index, at the multi-index idx, or (vals not NULL) given: vals[i] the address of input i's element in a vector
 * already loaded. */
static bool reduce_one(Cu *c, const GpuKernelLayout *k, CuMapSrc *m, IrReduceOp op, IrDtype dt, bool flat,
                       const char *const *vals)
{
    cu_line(c, "lk_order = (u64)lk_w;");
    cu_init_uses(c, k);
    const char *v;
    if (vals) {
        const IrNode *map = m->map;
        for (int i = 0; i < map->u.map.ninputs; i++) {
            const IrType *t = map->u.map.inputs[i]->type;
            const char *x = t->kind == IR_TY_ARRAY ? cu_load(c, t->dtype, vals[i]) : m->val[i];
            const IrVar *prm = i < map->u.map.nparams ? map->u.map.params[i] : NULL;
            if (prm) cu_line(c, "v%d = %s;", prm->id, cu_cast(c, x, t->kind == IR_TY_ARRAY ? ir_type_scalar(t->dtype) : t, prm->type));
        }
        v = cu_expr(c, map->u.map.body);
    } else {
        const char *idx[IR_MAX_DIMS];
        if (!flat) cu_unravel(c, "lk_w", k->ndim, m->dims, -1, idx);
        v = cu_map_value_at(c, m, flat || k->ndim == 0 ? "lk_w" : NULL, idx);
    }
    if (!v) return false;
    v = cu_tmp(c, ir_type_scalar(dt), "%s", cu_cast(c, v, k->map->u.map.body->type, ir_type_scalar(dt)));
    if (op == IR_RED_ARGMIN || op == IR_RED_ARGMAX)
        cu_line(c, "if (%s) { lk_acc.r0 = %s; lk_acc.idx = lk_w; }", cu_arg_better(c, op, dt, v, "lk_w", "lk_acc.r0", "lk_acc.idx"), v);
    else
        cu_line(c, "lk_acc.r0 = %s;", cu_red_combine(c, op, dt, "lk_acc.r0", v, k->node->pos));
    return true;
}

/* Elements per wide load of the flat path: 16 bytes of the widest array input (1: no array input). */
static int vector_width(const GpuKernelLayout *k)
{
    int widest = 0;
    for (int i = 0; i < k->ninputs; i++) {
        const IrType *t = k->map->u.map.inputs[i]->type;
        if (t->kind == IR_TY_ARRAY && ir_dtype_size(t->dtype) > widest) widest = ir_dtype_size(t->dtype);
    }
    return widest ? 16 / widest : 1;
}

/* 16-byte vectors a thread loads before it combines them, over all its array inputs: 128 bytes (128 KiB an SM
 * at 1024 threads), at least two an input. On the H100 a sum of 10M float64 took 36.5 us with 2 in flight, 36.3
 * with 4, 35.6 with 8 (kernel alone, timed as tests/gpu_kernel_timing.py does); more costs registers (56 at 8)
 * for nothing. */
#define CU_BYTES_IN_FLIGHT 128

/* The flat path's wide loads, when every array input is aligned to its vector: each thread takes vectors q,
 * q + stride, ... (CU_BYTES_IN_FLIGHT's worth at a time, then one at a time), lk_w0 past the last whole vector;
 * the caller's scalar loop does the rest. */
static bool reduce_vectors(Cu *c, const GpuKernelLayout *k, CuMapSrc *m, IrReduceOp op, IrDtype dt, int V)
{
    CuBuf al = {0};
    cu_buf_printf(&al, "true");
    for (int i = 0; i < k->ninputs; i++) {
        const IrType *t = k->map->u.map.inputs[i]->type;
        if (t->kind == IR_TY_ARRAY) cu_buf_printf(&al, " && ((u64)lk_in%d & %dull) == 0", i, V * ir_dtype_size(t->dtype) - 1);
    }
    cu_line(c, "if (%s) {", al.s);
    cu_buf_free(&al);
    c->indent++;
    cu_line(c, "const i64 lk_nv = lk_n / %d, lk_stride = (i64)gridDim.x * blockDim.x;", V);
    cu_line(c, "i64 lk_q = (i64)blockIdx.x * blockDim.x + threadIdx.x;");
    int narrays = 0;
    for (int i = 0; i < k->ninputs; i++) narrays += k->map->u.map.inputs[i]->type->kind == IR_TY_ARRAY;
    int in_flight = CU_BYTES_IN_FLIGHT / 16 / (narrays ? narrays : 1);
    if (in_flight < 2) in_flight = 2;
    for (int pair = 0; pair < 2; pair++) {
        int nvec = pair == 0 ? in_flight : 1;
        if (pair == 0) cu_line(c, "for (; lk_q + %d * lk_stride < lk_nv; lk_q += %d * lk_stride) {", nvec - 1, nvec);
        else cu_line(c, "for (; lk_q < lk_nv; lk_q += lk_stride) {");
        c->indent++;
        for (int j = 0; j < nvec; j++)
            for (int i = 0; i < k->ninputs; i++) {
                const IrType *t = k->map->u.map.inputs[i]->type;
                if (t->kind != IR_TY_ARRAY) continue;
                int bytes = V * ir_dtype_size(t->dtype);
                cu_line(c, "const lk_v%d lk_x%d_%d = *(const lk_v%d *)(lk_in%d + (lk_q + %d * lk_stride) * %d);", bytes, j, i,
                        bytes, i, j, bytes);
            }
        for (int j = 0; j < nvec; j++)
            for (int u = 0; u < V; u++) {
                cu_line(c, "{");
                c->indent++;
                cu_line(c, "const i64 lk_w = (lk_q + %d * lk_stride) * %d + %d;", j, V, u);
                const char *vals[IR_MAX_MAP_INPUTS] = {0};
                for (int i = 0; i < k->ninputs; i++)
                    vals[i] = cu_fmt(c, "(const char *)&lk_x%d_%d + %d", j, i, u * ir_dtype_size(k->map->u.map.inputs[i]->type->dtype));
                if (!reduce_one(c, k, m, op, dt, true, vals)) return false;
                close_brace(c);
            }
        close_brace(c);
    }
    cu_line(c, "lk_w0 = lk_nv * %d;", V);
    close_brace(c);
    return true;
}

/* The thread's grid-stride loop of a map's elements into lk_acc (flat when the layout allows it, with wide
 * loads where the inputs are aligned). */
static bool reduce_all_elements(Cu *c, const GpuKernelLayout *k, IrReduceOp op, IrDtype dt)
{
    CuMapSrc m = {0};
    cu_map_src(c, k, &m, cu_reads_only(k->node));
    bool flat = cu_flat_possible(k, NULL);
    int V = vector_width(k);
    for (int pass = flat ? 0 : 1; pass < 2; pass++) {
        if (flat) cu_line(c, pass == 0 ? "if (p.s[%d]) {" : "} else {", k->flat_ok);
        if (flat) c->indent++;
        cu_line(c, "i64 lk_w0 = 0;");
        if (pass == 0 && V > 1 && !reduce_vectors(c, k, &m, op, dt, V)) return false;
        grid_loop_header(c, "lk_w0");
        if (!reduce_one(c, k, &m, op, dt, pass == 0, NULL)) return false;
        close_brace(c);
        if (flat) c->indent--;
    }
    if (flat) cu_line(c, "}");
    return true;
}

/* lk.reduce with a function: one thread, every element in C order (started flag where there is no init). */
static bool reduce_func_one_thread(Cu *c, const GpuKernelLayout *k)
{
    const IrNode *n = k->node;
    const IrCombine *cb = &n->u.reduce.combine;
    const IrType *acc_t = cb->acc_param->type;
    IrDtype dt = k->map->u.map.body->type->dtype;
    CuMapSrc m = {0};
    cu_map_src(c, k, &m, cu_reads_only(k->node));
    cu_line(c, "if (blockIdx.x != 0 || threadIdx.x != 0) return;");
    cu_line(c, "%s lk_r = %s;", cu_type(c, acc_t), cu_konst(c, acc_t, 0, 0.0));
    cu_line(c, "bool lk_started = false;");
    cu_line(c, "for (i64 lk_w = 0; lk_w < lk_n; lk_w++) {");
    c->indent++;
    cu_line(c, "lk_order = (u64)lk_w;");
    cu_init_uses(c, k);
    if (cb->init) {
        cu_line(c, "if (lk_w == 0) {");
        c->indent++;
        const char *init = cu_expr(c, cb->init);
        if (!init) return false;
        cu_line(c, "lk_r = %s; lk_started = true;", cu_cast(c, init, cb->init->type, acc_t));
        close_brace(c);
    }
    const char *idx[IR_MAX_DIMS];
    cu_unravel(c, "lk_w", k->ndim, m.dims, -1, idx);
    const char *v = cu_map_value_at(c, &m, k->ndim == 0 ? "lk_w" : NULL, idx);
    if (!v) return false;
    v = cu_tmp(c, ir_type_scalar(dt), "%s", v);
    cu_line(c, "if (lk_started) {");
    c->indent++;
    const char *r = cu_apply_combine(c, cb, "lk_r", v);
    if (!r) return false;
    cu_line(c, "lk_r = %s;", cu_cast(c, r, cb->body->type, acc_t));
    c->indent--;
    cu_line(c, "} else { lk_r = %s; lk_started = true; }", cu_cast(c, v, ir_type_scalar(dt), acc_t));
    close_brace(c);
    cu_line(c, "lk_order = 0;");
    if (cb->init) {
        cu_line(c, "if (!lk_started) {");
        c->indent++;
        cu_init_uses(c, k);
        const char *init = cu_expr(c, cb->init);
        if (!init) return false;
        cu_line(c, "lk_r = %s;", cu_cast(c, init, cb->init->type, acc_t));
        close_brace(c);
    } else {
        cu_raise(c, "!lk_started", RT_ERR_VALUE, n->pos, cu_fmt(c, "%d", RT_VAL_EMPTY_REDUCE), NULL, NULL);
    }
    cu_line(c, "*(i64 *)(lk_scratch + %d) = %s;", GPU_RESULTS_OFFSET, cu_to_slot(c, "lk_r", acc_t));
    return true;
}

static bool reduce_all_kernel(Cu *c, const GpuKernelLayout *k, int index)
{
    const IrNode *n = k->node;
    IrReduceOp op = n->u.reduce.op;
    if (op == IR_RED_FUNC && ir_reduce_partials_ok(op, &n->u.reduce.combine)) return cu_reduce_func_chunked_kernel(c, k, index);
    if (op == IR_RED_FUNC) return reduce_func_one_thread(c, k);
    IrDtype dt = k->map->u.map.body->type->dtype;
    acc_struct(c, index, 1, &op, &dt, n->pos);
    cu_line(c, "lk_k%d_acc lk_acc = lk_k%d_acc::empty();", index, index);
    cu_line(c, "{");
    c->indent++;
    if (!reduce_all_elements(c, k, op, dt)) return false;
    close_brace(c);
    cu_line(c, "goto lk_join;");
    cu_line(c, "lk_fail: ;");
    cu_line(c, "lk_join:");
    grid_combine_open(c, index);
    bool is_arg = op == IR_RED_ARGMIN || op == IR_RED_ARGMAX;
    if (ir_reduce_needs_items(op, &n->u.reduce.combine))
        cu_raise(c, "lk_n == 0", RT_ERR_VALUE, n->pos, cu_fmt(c, "%d", RT_VAL_EMPTY_REDUCE), NULL, NULL);
    const IrType *rt = is_arg ? ir_type_scalar(IR_DT_INT64) : ir_type_scalar(dt);
    cu_line(c, "*(i64 *)(lk_scratch + %d) = %s;", GPU_RESULTS_OFFSET, cu_to_slot(c, is_arg ? "lk_b.idx" : "lk_b.r0", rt));
    grid_combine_close(c);
    return true;
}

static bool prange_kernel(Cu *c, const GpuKernelLayout *k, int index)
{
    const IrNode *s = k->node;
    int nred = s->u.for_range.nreds;
    if (nred == 0) {
        open_grid_loop(c);
        if (!prange_item(c, k)) return false;
        close_brace(c);
        return true;
    }
    IrReduceOp ops[GPU_RESULTS] = {0};
    IrDtype dts[GPU_RESULTS] = {0};
    for (int i = 0; i < nred; i++) {
        ops[i] = s->u.for_range.reds[i].op;
        dts[i] = s->u.for_range.reds[i].var->type->dtype;
    }
    acc_struct(c, index, nred, ops, dts, s->pos);
    for (int i = 0; i < nred; i++) cu_line(c, "v%d = %s;", s->u.for_range.reds[i].var->id, cu_red_identity(c, ops[i], dts[i]));
    cu_line(c, "{");
    c->indent++;
    open_grid_loop(c);
    if (!prange_item(c, k)) return false;
    close_brace(c);
    close_brace(c);
    cu_line(c, "goto lk_join;");
    cu_line(c, "lk_fail: ;");
    cu_line(c, "lk_join:");
    cu_line(c, "lk_k%d_acc lk_acc;", index);
    for (int i = 0; i < nred; i++) cu_line(c, "lk_acc.r%d = v%d;", i, s->u.for_range.reds[i].var->id);
    grid_combine_open(c, index);
    for (int i = 0; i < nred; i++)
        cu_line(c, "*(i64 *)(lk_scratch + %d) = %s;", GPU_RESULTS_OFFSET + 8 * i,
                cu_to_slot(c, cu_fmt(c, "lk_b.r%d", i), ir_type_scalar(dts[i])));
    grid_combine_close(c);
    return true;
}

/* ---- a work item per line ---- */

/* The line's accumulator starts: identity, init, or the first element (started flag). */
typedef struct LineAcc {
    IrReduceOp op;
    const IrCombine *cb;
    IrDtype dt;             /* the elements' */
    const IrType *acc_t;
    bool is_arg;
} LineAcc;

static bool line_start(Cu *c, const LineAcc *l)
{
    cu_line(c, "bool lk_started = false;");
    cu_line(c, "i64 lk_best_i = 0;");
    if (l->op == IR_RED_FUNC && l->cb->init) {
        const char *init = cu_expr(c, l->cb->init);
        if (!init) return false;
        cu_line(c, "%s lk_r = %s;", cu_type(c, l->acc_t), cu_cast(c, init, l->cb->init->type, l->acc_t));
        cu_line(c, "lk_started = true;");
    } else if (l->op == IR_RED_FUNC) {
        cu_line(c, "%s lk_r = %s;", cu_type(c, l->acc_t), cu_konst(c, l->acc_t, 0, 0.0));
    } else {
        cu_line(c, "%s lk_r = %s;", cu_type(c, l->acc_t), cu_red_identity(c, l->op, l->dt));
        cu_line(c, "lk_started = true;");
    }
    return true;
}

/* v (an element, at position j of the line) into lk_r */
static bool line_step(Cu *c, const LineAcc *l, const char *v, const char *j)
{
    if (l->is_arg) {
        cu_line(c, "if (%s) { lk_r = %s; lk_best_i = %s; }", cu_arg_better(c, l->op, l->dt, v, j, "lk_r", "lk_best_i"), v, j);
        return true;
    }
    if (l->op != IR_RED_FUNC) {
        cu_line(c, "lk_r = %s;", cu_red_combine(c, l->op, l->dt, "lk_r", v, (IrPos){0}));
        return true;
    }
    cu_line(c, "if (lk_started) {");
    c->indent++;
    const char *r = cu_apply_combine(c, l->cb, "lk_r", v);
    if (!r) return false;
    cu_line(c, "lk_r = %s;", cu_cast(c, r, l->cb->body->type, l->acc_t));
    c->indent--;
    cu_line(c, "} else { lk_r = %s; lk_started = true; }", cu_cast(c, v, ir_type_scalar(l->dt), l->acc_t));
    return true;
}

/* A work item per line of the space along `axis`: idx of the line's elements, j running along it. */
static bool line_kernel(Cu *c, const GpuKernelLayout *k, int axis, bool scan, const LineAcc *l)
{
    const IrNode *n = k->node;
    CuMapSrc m = {0};
    cu_map_src(c, k, &m, cu_reads_only(k->node));
    const IrType *ot = scan ? n->u.scan.out->type : n->u.reduce.out->type;
    cu_out_slots(c, k, ot->ndim);
    open_grid_loop(c);
    cu_init_uses(c, k);
    const char *idx[IR_MAX_DIMS];
    if (axis >= 0) cu_unravel(c, "lk_w", k->ndim, m.dims, axis, idx);
    if (!line_start(c, l)) return false;
    if (!scan && ir_reduce_needs_items(l->op, l->cb))
        cu_raise(c, cu_fmt(c, "lk_d%d == 0", axis), RT_ERR_VALUE, n->pos, cu_fmt(c, "%d", RT_VAL_EMPTY_REDUCE), NULL, NULL);
    if (axis >= 0) {
        cu_line(c, "for (i64 lk_j = 0; lk_j < lk_d%d; lk_j++) {", axis);
        c->indent++;
        idx[axis] = "lk_j";
    } else {
        cu_line(c, "i64 lk_total = 1;");
        for (int d = 0; d < k->ndim; d++) cu_line(c, "lk_total *= lk_d%d;", d);
        cu_line(c, "for (i64 lk_j = 0; lk_j < lk_total; lk_j++) {");
        c->indent++;
        if (k->ndim) cu_unravel(c, "lk_j", k->ndim, m.dims, -1, idx);
    }
    const char *v = cu_map_value_at(c, &m, k->ndim ? NULL : "0", idx);
    if (!v) return false;
    v = cu_tmp(c, ir_type_scalar(l->dt), "%s", cu_cast(c, v, k->map->u.map.body->type, ir_type_scalar(l->dt)));
    if (!line_step(c, l, v, "lk_j")) return false;
    if (scan) {
        const char *addr = axis >= 0 ? out_addr(c, "lk_out", ot->ndim, idx) : "lk_out + lk_j * lk_out_s0";
        cu_store_at(c, ot->dtype, addr, cu_cast(c, "lk_r", l->acc_t, ir_type_scalar(ot->dtype)));
    }
    close_brace(c);
    if (!scan) {
        const char *oidx[IR_MAX_DIMS];
        int o = 0;
        for (int d = 0; d < k->ndim; d++)
            if (d != axis) oidx[o++] = idx[d];
        const char *r = l->is_arg ? "lk_best_i" : cu_cast(c, "lk_r", l->acc_t, ir_type_scalar(ot->dtype));
        cu_store_at(c, ot->dtype, out_addr(c, "lk_out", ot->ndim, oidx), r);
    }
    close_brace(c);
    return true;
}

static bool reduce_axis_kernel(Cu *c, const GpuKernelLayout *k)
{
    const IrNode *n = k->node;
    IrReduceOp op = n->u.reduce.op;
    IrDtype dt = k->map->u.map.body->type->dtype;
    LineAcc l = {op, &n->u.reduce.combine, dt, op == IR_RED_FUNC ? n->u.reduce.combine.acc_param->type : ir_type_scalar(dt),
                 op == IR_RED_ARGMIN || op == IR_RED_ARGMAX};
    return line_kernel(c, k, n->u.reduce.axis, false, &l);
}

/* A scan: chunked over the blocks (cuda_scan.c) where kernel_abi.c says so, else a work item per line (axis
 * -1 with a combine that cannot be split, or element code that writes: one work item for everything). */
static bool scan_kernel(Cu *c, const GpuKernelLayout *k, int index)
{
    if (k->chunked) return cu_scan_chunked_kernel(c, k, index);
    const IrNode *n = k->node;
    IrReduceOp op = n->u.scan.op;
    IrDtype dt = k->map->u.map.body->type->dtype;
    LineAcc l = {op, &n->u.scan.combine, dt, op == IR_RED_FUNC ? n->u.scan.combine.acc_param->type : ir_type_scalar(dt), false};
    return line_kernel(c, k, n->u.scan.axis, true, &l);
}

/* A map's body that is a short expression of real scalars (no call, index, loop or nested region): its kernel
 * fits in 32 registers without spilling, so __launch_bounds__(RT_GPU_BLOCK, CU_LIGHT_MAP_BLOCKS) lets every
 * thread slot of an SM keep loads in flight. On the H100, sqrt(a*a+b*b)*exp(-c) over 10M float64 took 34
 * registers, 6 blocks an SM and 116 us; bounded, 32 registers, 8 blocks and 113 us (kernel alone, timed as
 * tests/gpu_kernel_timing.py does). A heavier body keeps the registers it needs: spilling would cost more. */
#define CU_LIGHT_MAP_BLOCKS 8
#define CU_LIGHT_MAP_NODES 24

static bool light_expr(const IrNode *e, int *budget)
{
    if (!e) return true;
    if (--*budget < 0 || !e->type || e->type->kind != IR_TY_SCALAR || ir_dtype_is_complex(e->type->dtype)) return false;
    switch (e->kind) {
    case IR_CONST:
    case IR_VAR: return true;
    case IR_BINOP: return e->u.binop.op != IR_OP_MATMUL && light_expr(e->u.binop.lhs, budget) && light_expr(e->u.binop.rhs, budget);
    case IR_UNOP: return light_expr(e->u.unop.operand, budget);
    case IR_CAST: return light_expr(e->u.cast.value, budget);
    case IR_MATH: return light_expr(e->u.math.args[0], budget) && light_expr(e->u.math.args[1], budget);
    case IR_IFEXP:
        return light_expr(e->u.ifexp.cond, budget) && light_expr(e->u.ifexp.then, budget) && light_expr(e->u.ifexp.orelse, budget);
    case IR_COMPARE:
        for (int i = 0; i <= e->u.compare.nops; i++)
            if (!light_expr(e->u.compare.operands[i], budget)) return false;
        return true;
    default: return false;
    }
}

static bool light_map(const GpuKernelLayout *k)
{
    int budget = CU_LIGHT_MAP_NODES;
    return k->kind == GPU_K_MAP && k->node->kind == IR_MAP && light_expr(k->node->u.map.body, &budget);
}

bool cu_kernel(Cu *c, const GpuKernelLayout *k, int index, IrFunc *owner)
{
    c->f = owner;
    c->fail = "goto lk_fail;";
    c->loop_depth = 0;
    cu_buf_printf(&c->types, "struct lk_p%d { i64 s[%d]; };\n", index, k->nslots);
    const char *kinds[] = {"map", "index map", "reduction of everything", "reduction along an axis", "scan",
                           "lk.prange loop", "matrix product"};
    cu_buf_printf(c->out, "/* kernel %d: the %s at %s:%d (%s) */\n", index, kinds[k->kind],
                  k->node->pos.file ? k->node->pos.file : owner->file, k->node->pos.line, owner->name);
    /* where each value sits in the parameter block (kernel_abi.h), for readers of inspect_cuda and its tests */
    cu_buf_printf(c->out, "/* layout: nslots=%d n=%d ndim=%d dims=%d flat_ok=%d out=%d start=%d step=%d chunked=%d product=%d arg=%d,%d,%d in=",
                  k->nslots, k->n, k->ndim, k->dims, k->flat_ok, k->out, k->start, k->step, (int)k->chunked, k->product,
                  k->arg[0], k->arg[1], k->arg[2]);
    for (int i = 0; i < k->ninputs; i++) cu_buf_printf(c->out, "%s%d", i ? "," : "", k->input[i]);
    cu_buf_printf(c->out, " uses=");
    for (int j = 0; j < k->nuses; j++) cu_buf_printf(c->out, "%s%s:%d", j ? "," : "", k->node->region->uses[j]->name, k->use[j]);
    cu_buf_printf(c->out, " */\n");
    /* a chunked scan's blocks wait for the blocks before them, and any reduce kernel's grid is one wave: the
     * registers must let GPU_REDUCE_BLOCKS_PER_SM blocks an SM be resident (80 registers gave 3, and a second
     * wave doubled a 10M cumsum's time) */
    bool one_wave = (k->kind == GPU_K_REDUCE_ALL) || (k->kind == GPU_K_SCAN && k->chunked) ||
                    (k->kind == GPU_K_PRANGE && k->node->u.for_range.nreds > 0);
    const char *min_blocks = one_wave ? cu_fmt(c, ", %d", GPU_REDUCE_BLOCKS_PER_SM)
                             : light_map(k) ? cu_fmt(c, ", %d", CU_LIGHT_MAP_BLOCKS) : "";
    cu_buf_printf(c->out, "extern \"C\" __global__ void __launch_bounds__(%d%s) lk_k%d(struct lk_p%d p)\n{\n", RT_GPU_BLOCK,
                  min_blocks, index, index);
    c->indent = 1;
    cu_line(c, "unsigned char *lk_err = (unsigned char *)p.s[0];");
    cu_line(c, "unsigned char *lk_scratch = (unsigned char *)p.s[1];");
    cu_line(c, "u64 lk_order = 0;");
    cu_line(c, "const i64 lk_n = p.s[%d];", k->n);
    cu_declare_vars(c, owner, cu_vars_used(c, owner, (IrNode *)k->node));
    bool own_fail = false, ok = false;
    switch (k->kind) {
    case GPU_K_MAP: ok = map_kernel(c, k); break;
    case GPU_K_IMAP: ok = imap_kernel(c, k); break;
    case GPU_K_REDUCE_ALL:
        own_fail = k->node->u.reduce.op != IR_RED_FUNC || ir_reduce_partials_ok(IR_RED_FUNC, &k->node->u.reduce.combine);
        ok = reduce_all_kernel(c, k, index);
        break;
    case GPU_K_REDUCE_AXIS:
        if (k->product >= 0) cu_matmul_in_reduce(c, k, index);
        ok = reduce_axis_kernel(c, k);
        break;
    case GPU_K_SCAN:
        own_fail = k->chunked;
        ok = scan_kernel(c, k, index);
        break;
    case GPU_K_PRANGE:
        own_fail = k->node->u.for_range.nreds > 0;
        ok = prange_kernel(c, k, index);
        break;
    case GPU_K_MATMUL: ok = cu_matmul_kernel(c, k, index); break;
    }
    if (!own_fail) {
        cu_line(c, "return;");
        cu_line(c, "lk_fail:");
        cu_line(c, "return;");
    }
    c->indent = 0;
    cu_buf_printf(c->out, "}\n\n");
    return ok && c->diag->kind == LK_OK;
}
