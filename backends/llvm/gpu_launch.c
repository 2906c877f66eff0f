/* gpu_launch.c: the host code of a gpu compilation (the llvm backend's gpu mode, Cg.gpu). The host code is the
 * cpu code of the function with two differences: array memory is the device's (allocations come from
 * rt_gpu_buffer_alloc; the few element accesses host code makes go through rt_gpu_read_elem/write_elem), and
 * each parallel region is not run but launched as the kernel backends/gpu made for it. The host evaluates
 * everything a region takes from the code around it exactly as the cpu backend does (cg_map_prepare: the same
 * order, checks and errors), then fills the kernel's parameter block as backends/gpu/kernel_abi.h lays it out
 * (gpu_kernel_layout: the same function the CUDA C side reads it with) and calls rt_gpu_launch. A launch does
 * not wait: the host waits (rt_gpu_sync) only where it needs a result back (a reduction to a scalar, a prange's
 * reductions), and the shim waits once at the end of the call. This file must never decide what a region
 * computes: the kernel does that, from the IR. */
#include "cg.h"

static const GpuKernelLayout *layout_of(Cg *cg, const IrNode *n)
{
    for (int i = 0; i < cg->gpu->nkernels; i++)
        if (cg->gpu->kernels[i].node == n) return &cg->gpu->kernels[i];
    lk_diag_set(cg->diag, LK_ERR_INTERNAL, cg->f->file, n->pos.line, n->pos.col,
                "internal error: a parallel region of %s has no gpu kernel", cg->f->name);
    return NULL;
}

/* ---------------- the parameter block ---------------- */

typedef struct Block {
    LLVMValueRef slots; /* [nslots x i64] */
    LLVMTypeRef ty;
} Block;

static void put(Cg *cg, Block *b, int at, LLVMValueRef v64)
{
    LLVMValueRef idx[2] = {cg_i64(cg, 0), cg_i64(cg, at)};
    LLVMBuildStore(cg->b, v64, LLVMBuildGEP2(cg->b, b->ty, b->slots, idx, 2, ""));
}

static LLVMValueRef ptr_slot(Cg *cg, LLVMValueRef p)
{
    return LLVMBuildPtrToInt(cg->b, p, cg->i64, "");
}

/* A scalar of type dt in the slot encoding: integers widened by their signedness, bools as 0/1, floats as the
 * bits of a double. */
static LLVMValueRef scalar_slot(Cg *cg, LLVMValueRef v, IrDtype dt)
{
    if (ir_dtype_is_float(dt)) {
        LLVMValueRef d = dt == IR_DT_FLOAT64 ? v : LLVMBuildFPExt(cg->b, v, cg->f64, "");
        return LLVMBuildBitCast(cg->b, d, cg->i64, "");
    }
    if (dt == IR_DT_BOOL || !ir_dtype_is_signed(dt)) return LLVMBuildZExtOrBitCast(cg->b, v, cg->i64, "");
    return LLVMBuildSExtOrBitCast(cg->b, v, cg->i64, "");
}

/* The inverse: a slot as a scalar of dt. */
static LLVMValueRef slot_scalar(Cg *cg, LLVMValueRef s, IrDtype dt)
{
    if (ir_dtype_is_float(dt)) {
        LLVMValueRef d = LLVMBuildBitCast(cg->b, s, cg->f64, "");
        return dt == IR_DT_FLOAT64 ? d : LLVMBuildFPTrunc(cg->b, d, cg_mem_type(cg, dt), "");
    }
    if (dt == IR_DT_BOOL) return LLVMBuildICmp(cg->b, LLVMIntNE, s, cg_i64(cg, 0), "");
    return LLVMBuildTruncOrBitCast(cg->b, s, cg_mem_type(cg, dt), "");
}

/* A value of type t at slots [at, at + ir_abi_slots(t)), as ir_abi_slots lays values out. */
static int put_value(Cg *cg, Block *b, int at, LLVMValueRef v, const IrType *t)
{
    switch (t->kind) {
    case IR_TY_SCALAR:
        if (ir_dtype_is_complex(t->dtype)) { /* its parts, each as a double */
            IrDtype part = ir_complex_part(t->dtype);
            put(cg, b, at, scalar_slot(cg, cg_complex_part(cg, v, 0), part));
            put(cg, b, at + 1, scalar_slot(cg, cg_complex_part(cg, v, 1), part));
            return at + 2;
        }
        put(cg, b, at, scalar_slot(cg, v, t->dtype));
        return at + 1;
    case IR_TY_ARRAY:
        put(cg, b, at++, ptr_slot(cg, cg_array_data(cg, v)));
        put(cg, b, at++, ptr_slot(cg, LLVMBuildExtractValue(cg->b, v, 1, "")));
        for (int d = 0; d < t->ndim; d++) put(cg, b, at++, cg_array_dim(cg, v, d));
        for (int d = 0; d < t->ndim; d++) put(cg, b, at++, cg_array_stride(cg, v, d));
        return at;
    case IR_TY_TUPLE:
        for (int i = 0; i < t->nelems; i++) at = put_value(cg, b, at, LLVMBuildExtractValue(cg->b, v, (unsigned)i, ""), t->elems[i]);
        return at;
    case IR_TY_NONE: case IR_TY_SLICE: case IR_TY_RANGE: case IR_TY_DTYPE: case IR_TY_FUNC: return at;
    case IR_TY_RNG: return at + ir_abi_slots(t); /* never in a kernel: ir/check_random.c keeps draws out */
    }
    return at;
}

static Block new_block(Cg *cg, const GpuKernelLayout *L)
{
    Block b = {.ty = LLVMArrayType(cg->i64, (unsigned)L->nslots)};
    b.slots = cg_alloca(cg, b.ty, "kernel_params");
    put(cg, &b, 0, cg_i64(cg, 0)); /* the runtime's: error record and scratch */
    put(cg, &b, 1, cg_i64(cg, 0));
    return b;
}

/* The region's uses: each variable's value now. A variable that may be unbound here travels as whatever its
 * slot holds; the kernel checks its own reads as the cpu code does (ir_check_unbound). */
static void put_uses(Cg *cg, Block *b, const GpuKernelLayout *L)
{
    const IrRegion *r = L->node->region;
    for (int j = 0; j < r->nuses; j++) {
        const IrVar *v = r->uses[j];
        LLVMValueRef val = LLVMBuildLoad2(cg->b, cg_type(cg, v->type), cg->var_slots[v->id], "");
        put_value(cg, b, L->use[j], val, v->type);
    }
}

/* A map's evaluated inputs: an array's data address and its strides over the space (0 where broadcast); a
 * scalar's value. */
static void put_inputs(Cg *cg, Block *b, const GpuKernelLayout *L, const CgMap *m)
{
    for (int i = 0; i < L->ninputs; i++) {
        const IrType *t = L->map->u.map.inputs[i]->type;
        if (t->kind != IR_TY_ARRAY) {
            put_value(cg, b, L->input[i], m->vals[i], t);
            continue;
        }
        put(cg, b, L->input[i], ptr_slot(cg, cg_array_data(cg, m->vals[i])));
        for (int k = 0; k < t->ndim; k++) put(cg, b, L->input[i] + 1 + k, m->bstrides[i][k]);
    }
}

static void put_out(Cg *cg, Block *b, const GpuKernelLayout *L, LLVMValueRef out, int ndim)
{
    put(cg, b, L->out, ptr_slot(cg, cg_array_data(cg, out)));
    for (int d = 0; d < ndim; d++) put(cg, b, L->out + 1 + d, cg_array_stride(cg, out, d));
}

static void put_dims(Cg *cg, Block *b, const GpuKernelLayout *L, LLVMValueRef *dims, int ndim)
{
    for (int d = 0; d < ndim; d++) put(cg, b, L->dims + d, dims[d]);
}

static LLVMValueRef product(Cg *cg, LLVMValueRef *dims, int ndim, int skip)
{
    LLVMValueRef total = cg_i64(cg, 1);
    for (int d = 0; d < ndim; d++)
        if (d != skip) total = LLVMBuildMul(cg->b, total, dims[d], "");
    return total;
}

static void launch(Cg *cg, const GpuKernelLayout *L, Block *b, LLVMValueRef n, RtLaunchKind kind)
{
    put(cg, b, L->n, n);
    LLVMValueRef module = LLVMBuildLoad2(cg->b, cg->ptr, cg->gpu_module, "");
    LLVMTypeRef params[7] = {cg->ptr, cg->ptr, cg->i32, cg->ptr, cg->i32, cg->i64, cg->i32};
    LLVMValueRef args[7] = {cg->rtctx, module, LLVMConstInt(cg->i32, (unsigned)(L - cg->gpu->kernels), 0), b->slots,
                            LLVMConstInt(cg->i32, (unsigned)L->nslots, 0), n, LLVMConstInt(cg->i32, (unsigned)kind, 0)};
    cg_check_status(cg, cg_call_rt(cg, "rt_gpu_launch", cg->i32, params, args, 7));
}

/* Waits for the kernels launched so far and reads n results back (a reduction's), raising their errors first. */
static LLVMValueRef results(Cg *cg, int n)
{
    LLVMTypeRef p1[1] = {cg->ptr};
    LLVMValueRef a1[1] = {cg->rtctx};
    cg_check_status(cg, cg_call_rt(cg, "rt_gpu_sync", cg->i32, p1, a1, 1));
    LLVMTypeRef ty = LLVMArrayType(cg->i64, (unsigned)n);
    LLVMValueRef buf = cg_alloca(cg, ty, "kernel_results");
    LLVMTypeRef p3[3] = {cg->ptr, cg->ptr, cg->i32};
    LLVMValueRef a3[3] = {cg->rtctx, buf, LLVMConstInt(cg->i32, (unsigned)n, 0)};
    cg_check_status(cg, cg_call_rt(cg, "rt_gpu_results", cg->i32, p3, a3, 3));
    return buf;
}

static LLVMValueRef result_at(Cg *cg, LLVMValueRef buf, int n, int i)
{
    LLVMValueRef idx[2] = {cg_i64(cg, 0), cg_i64(cg, i)};
    return LLVMBuildLoad2(cg->b, cg->i64, LLVMBuildGEP2(cg->b, LLVMArrayType(cg->i64, (unsigned)n), buf, idx, 2, ""), "");
}

/* ---------------- the regions ---------------- */

static LLVMValueRef gpu_map(Cg *cg, const IrNode *n, const GpuKernelLayout *L)
{
    const IrType *ot = n->type;
    CgMap m = {.sink = CG_SINK_STORE, .region = n->region};
    if (!cg_map_inputs_first(cg, &m, n, ot->ndim)) return LLVMGetUndef(cg_type(cg, ot));
    m.out = cg_expr(cg, n->u.map.out);
    LLVMValueRef dims[IR_MAX_DIMS];
    for (int d = 0; d < ot->ndim; d++) dims[d] = cg_array_dim(cg, m.out, d);
    if (!cg_map_prepare(cg, &m, n, dims, ot->ndim)) return m.out;
    m.out_type = ot;
    if (!n->u.map.out_is_fresh) cg_map_copy_overlaps(cg, &m, ot);
    Block b = new_block(cg, L);
    put_dims(cg, &b, L, m.dims, m.ndim);
    bool flat = m.flat_ok_static && ot->layout == IR_LAYOUT_C;
    put(cg, &b, L->flat_ok, flat ? LLVMBuildZExt(cg->b, m.flat_ok, cg->i64, "") : cg_i64(cg, 0));
    put_inputs(cg, &b, L, &m);
    put_out(cg, &b, L, m.out, ot->ndim);
    put_uses(cg, &b, L);
    launch(cg, L, &b, product(cg, m.dims, m.ndim, -1), RT_LAUNCH_ELEMENTS);
    return m.out;
}

static LLVMValueRef gpu_imap(Cg *cg, const IrNode *n, const GpuKernelLayout *L)
{
    int nd = n->u.imap.ndim;
    LLVMValueRef out = cg_expr(cg, n->u.imap.out), dims[IR_MAX_DIMS];
    for (int d = 0; d < nd; d++) dims[d] = cg_array_dim(cg, out, d);
    Block b = new_block(cg, L);
    put_dims(cg, &b, L, dims, nd);
    put_out(cg, &b, L, out, nd);
    put_uses(cg, &b, L);
    launch(cg, L, &b, product(cg, dims, nd, -1), RT_LAUNCH_ELEMENTS);
    return out;
}

/* An empty input of an operation without identity raises before anything runs, as on the cpu. */
static void check_not_empty(Cg *cg, const IrNode *n, LLVMValueRef size)
{
    LLVMValueRef extra[1] = {cg_i64(cg, RT_VAL_EMPTY_REDUCE)};
    cg_raise_if(cg, LLVMBuildICmp(cg->b, LLVMIntEQ, size, cg_i64(cg, 0), ""), RT_ERR_VALUE, n->pos, extra, 1);
}

/* ceil(x / d) for x >= 0 */
static LLVMValueRef ceil_div(Cg *cg, LLVMValueRef x, int64_t d)
{
    return LLVMBuildSDiv(cg->b, LLVMBuildAdd(cg->b, x, cg_i64(cg, d - 1), ""), cg_i64(cg, d), "");
}

/* The work items of a matrix product's kernel: RT_GPU_BLOCK per tile of out (kernel_abi.h's MATMUL). */
static LLVMValueRef tile_items(Cg *cg, LLVMValueRef rows, LLVMValueRef cols)
{
    LLVMValueRef tiles = LLVMBuildMul(cg->b, ceil_div(cg, rows, GPU_MATMUL_TILE), ceil_div(cg, cols, GPU_MATMUL_TILE), "");
    return LLVMBuildMul(cg->b, tiles, cg_i64(cg, RT_GPU_BLOCK), "");
}

/* An integer or bool matrix product (gpu_reduce_is_product): the tiled kernel when a's elements do not vary
 * along the space's axis 2 nor b's along axis 0 (a[:, :, None] and b[None, :, :], as typespec makes it), which
 * only the strides tell; else a line per work item as for any axis reduction. Returns the work items. */
static LLVMValueRef product_items(Cg *cg, Block *b, const GpuKernelLayout *L, const CgMap *m, LLVMValueRef lines)
{
    LLVMValueRef zero = cg_i64(cg, 0), one = cg_i64(cg, 1);
    LLVMValueRef a_ok = LLVMBuildOr(cg->b, LLVMBuildICmp(cg->b, LLVMIntEQ, m->bstrides[0][2], zero, ""),
                                    LLVMBuildICmp(cg->b, LLVMIntSLE, m->dims[2], one, ""), "");
    LLVMValueRef b_ok = LLVMBuildOr(cg->b, LLVMBuildICmp(cg->b, LLVMIntEQ, m->bstrides[1][0], zero, ""),
                                    LLVMBuildICmp(cg->b, LLVMIntSLE, m->dims[0], one, ""), "");
    LLVMValueRef tiled = LLVMBuildAnd(cg->b, a_ok, b_ok, "");
    put(cg, b, L->product, LLVMBuildZExt(cg->b, tiled, cg->i64, ""));
    return LLVMBuildSelect(cg->b, tiled, tile_items(cg, m->dims[0], m->dims[2]), lines, "");
}

/* rt_gpu_gemm for a product of dtype dt (float16, float32 or float64), then a branch: to the block returned when cuBLAS
 * took it, else on to the code that follows (the builder is left there). `offer` false: cuBLAS is not asked. */
static LLVMBasicBlockRef cublas_first(Cg *cg, IrDtype dt, LLVMValueRef offer, LLVMValueRef *args12)
{
    LLVMValueRef taken = cg_alloca(cg, cg->i32, "cublas_taken");
    LLVMBuildStore(cg->b, LLVMConstInt(cg->i32, 0, 0), taken);
    LLVMBasicBlockRef ask = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "cublas_ask");
    LLVMBasicBlockRef asked = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "cublas_asked");
    LLVMBuildCondBr(cg->b, offer, ask, asked);
    LLVMPositionBuilderAtEnd(cg->b, ask);
    LLVMTypeRef params[15] = {cg->ptr, cg->i32, cg->ptr, cg->i64, cg->i64, cg->ptr, cg->i64, cg->i64,
                              cg->ptr, cg->i64, cg->i64, cg->i64, cg->i64, cg->i64, cg->ptr};
    int gemm_dt = dt == IR_DT_FLOAT16 ? RT_GEMM_F16 : dt == IR_DT_FLOAT32 ? RT_GEMM_F32 : RT_GEMM_F64;
    LLVMValueRef args[15] = {cg->rtctx, LLVMConstInt(cg->i32, gemm_dt, 0)};
    for (int i = 0; i < 12; i++) args[2 + i] = args12[i];
    args[14] = taken;
    cg_check_status(cg, cg_call_rt(cg, "rt_gpu_gemm", cg->i32, params, args, 15));
    LLVMBuildBr(cg->b, asked);
    LLVMPositionBuilderAtEnd(cg->b, asked);
    LLVMValueRef by_cublas = LLVMBuildICmp(cg->b, LLVMIntNE, LLVMBuildLoad2(cg->b, cg->i32, taken, ""),
                                           LLVMConstInt(cg->i32, 0, 0), "");
    LLVMBasicBlockRef own = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "own_kernel");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "cublas_done");
    LLVMBuildCondBr(cg->b, by_cublas, done, own);
    LLVMPositionBuilderAtEnd(cg->b, own);
    return done;
}

/* A float matrix-vector product (gpu_reduce_gemv_form) offered to cuBLAS as a GEMM with one column (A @ x: C is
 * m x 1) or one row (x @ B: 1 x n), which rt_gpu_gemm computes with GEMV. x[:, None] is offered only where its
 * strides say it is one (zero along axis 1). NULL when n is no such product. */
static LLVMBasicBlockRef gemv_first(Cg *cg, const IrNode *n, const CgMap *m, LLVMValueRef out)
{
    GpuGemvForm form = gpu_reduce_gemv_form(n);
    if (form == GPU_GEMV_NONE) return NULL;
    IrDtype dt = n->u.reduce.out->type->dtype;
    LLVMValueRef es = cg_i64(cg, ir_dtype_size(dt)), one = cg_i64(cg, 1), out_s = cg_array_stride(cg, out, 0);
    LLVMValueRef in0 = cg_array_data(cg, m->vals[0]), in1 = cg_array_data(cg, m->vals[1]);
    if (form == GPU_GEMV_ROWS) {
        LLVMValueRef args[12] = {in0, m->bstrides[0][0], m->bstrides[0][1], in1, m->bstrides[1][0], es,
                                 cg_array_data(cg, out), out_s, es, m->dims[0], one, m->dims[1]};
        return cublas_first(cg, dt, LLVMConstInt(cg->i1, 1, 0), args);
    }
    LLVMValueRef is_vector = LLVMBuildOr(cg->b, LLVMBuildICmp(cg->b, LLVMIntEQ, m->bstrides[0][1], cg_i64(cg, 0), ""),
                                         LLVMBuildICmp(cg->b, LLVMIntSLE, m->dims[1], one, ""), "");
    LLVMValueRef args[12] = {in0, es, m->bstrides[0][0], in1, m->bstrides[1][0], m->bstrides[1][1],
                             cg_array_data(cg, out), es, out_s, one, m->dims[1], m->dims[0]};
    return cublas_first(cg, dt, is_vector, args);
}

static LLVMValueRef gpu_reduce(Cg *cg, const IrNode *n, const GpuKernelLayout *L)
{
    const IrNode *map = n->u.reduce.input;
    CgMap m = {.red_op = n->u.reduce.op, .combine = &n->u.reduce.combine, .region = n->region};
    if (!cg_map_prepare(cg, &m, map, NULL, map->type->ndim)) return LLVMGetUndef(cg_type(cg, n->type));
    bool needs_items = ir_reduce_needs_items(n->u.reduce.op, &n->u.reduce.combine);
    Block b = new_block(cg, L);
    put_dims(cg, &b, L, m.dims, m.ndim);
    put_inputs(cg, &b, L, &m);
    put_uses(cg, &b, L);
    if (L->kind == GPU_K_REDUCE_ALL) {
        LLVMValueRef total = product(cg, m.dims, m.ndim, -1);
        if (needs_items) check_not_empty(cg, n, total);
        put(cg, &b, L->flat_ok, m.flat_ok_static ? LLVMBuildZExt(cg->b, m.flat_ok, cg->i64, "") : cg_i64(cg, 0));
        launch(cg, L, &b, total, RT_LAUNCH_REDUCE);
        LLVMValueRef res = results(cg, 1);
        return slot_scalar(cg, result_at(cg, res, 1, 0), n->type->dtype);
    }
    int axis = n->u.reduce.axis;
    LLVMValueRef lines = product(cg, m.dims, m.ndim, axis);
    if (needs_items) check_not_empty(cg, n, m.dims[axis]); /* even with no lines, as NumPy and the cpu */
    LLVMValueRef out = cg_expr(cg, n->u.reduce.out);
    put_out(cg, &b, L, out, m.ndim - 1);
    if (L->product >= 0) lines = product_items(cg, &b, L, &m, lines);
    LLVMBasicBlockRef done = gemv_first(cg, n, &m, out);
    launch(cg, L, &b, lines, RT_LAUNCH_ELEMENTS);
    if (done) {
        LLVMBuildBr(cg->b, done);
        LLVMPositionBuilderAtEnd(cg->b, done);
    }
    return out;
}

static LLVMValueRef gpu_scan(Cg *cg, const IrNode *n, const GpuKernelLayout *L)
{
    const IrNode *map = n->u.scan.input;
    CgMap m = {.red_op = n->u.scan.op, .out_type = n->type, .combine = &n->u.scan.combine, .region = n->region};
    if (!cg_map_prepare(cg, &m, map, NULL, map->type->ndim)) return LLVMGetUndef(cg_type(cg, n->type));
    LLVMValueRef out = cg_expr(cg, n->u.scan.out);
    Block b = new_block(cg, L);
    put_dims(cg, &b, L, m.dims, m.ndim);
    put_inputs(cg, &b, L, &m);
    put_out(cg, &b, L, out, n->u.scan.out->type->ndim);
    put_uses(cg, &b, L);
    if (L->chunked) { /* the elements, chunked over the blocks (kernel_abi.h) */
        put(cg, &b, L->flat_ok, m.flat_ok_static ? LLVMBuildZExt(cg->b, m.flat_ok, cg->i64, "") : cg_i64(cg, 0));
        launch(cg, L, &b, product(cg, m.dims, m.ndim, -1), RT_LAUNCH_REDUCE);
        return out;
    }
    LLVMValueRef lines = n->u.scan.axis < 0 ? cg_i64(cg, 1) : product(cg, m.dims, m.ndim, n->u.scan.axis);
    launch(cg, L, &b, lines, RT_LAUNCH_ELEMENTS);
    return out;
}

/* A float product goes to cuBLAS first (rt_gpu_gemm: it says whether it took it, runtime/cublas.c says when it
 * does); the tiled kernel computes the rest, a block per GPU_MATMUL_TILE square of out (kernel_abi.h). */
static LLVMValueRef gpu_matmul(Cg *cg, const IrNode *n, const GpuKernelLayout *L)
{
    LLVMValueRef a = cg_expr(cg, n->u.call.args[0]), bm = cg_expr(cg, n->u.call.args[1]);
    LLVMValueRef k = cg_array_dim(cg, a, 1), kb = cg_array_dim(cg, bm, 0);
    LLVMValueRef extra[3] = {k, kb, cg_i64(cg, 0)};
    cg_raise_if(cg, LLVMBuildICmp(cg->b, LLVMIntNE, k, kb, ""), RT_ERR_SHAPE, n->pos, extra, 3);
    LLVMValueRef c = cg_expr(cg, n->u.call.out);
    LLVMValueRef m = cg_array_dim(cg, c, 0), nn = cg_array_dim(cg, c, 1);
    IrDtype dt = n->type->dtype;
    LLVMBasicBlockRef done = NULL;
    if (dt == IR_DT_FLOAT16 || dt == IR_DT_FLOAT32 || dt == IR_DT_FLOAT64) {
        LLVMValueRef args[12] = {cg_array_data(cg, a), cg_array_stride(cg, a, 0), cg_array_stride(cg, a, 1),
                                 cg_array_data(cg, bm), cg_array_stride(cg, bm, 0), cg_array_stride(cg, bm, 1),
                                 cg_array_data(cg, c), cg_array_stride(cg, c, 0), cg_array_stride(cg, c, 1), m, nn, k};
        done = cublas_first(cg, dt, LLVMConstInt(cg->i1, 1, 0), args);
    }
    Block b = new_block(cg, L);
    put_value(cg, &b, L->arg[0], a, n->u.call.args[0]->type);
    put_value(cg, &b, L->arg[1], bm, n->u.call.args[1]->type);
    put_value(cg, &b, L->arg[2], c, n->u.call.out->type);
    put_uses(cg, &b, L);
    launch(cg, L, &b, tile_items(cg, m, nn), RT_LAUNCH_ELEMENTS);
    if (done) {
        LLVMBuildBr(cg->b, done);
        LLVMPositionBuilderAtEnd(cg->b, done);
    }
    return c;
}

LLVMValueRef cg_gpu_region(Cg *cg, const IrNode *n)
{
    const GpuKernelLayout *L = layout_of(cg, n);
    if (!L) return LLVMGetUndef(cg_type(cg, n->type));
    switch (L->kind) {
    case GPU_K_MAP: return gpu_map(cg, n, L);
    case GPU_K_IMAP: return gpu_imap(cg, n, L);
    case GPU_K_REDUCE_ALL: case GPU_K_REDUCE_AXIS: return gpu_reduce(cg, n, L);
    case GPU_K_SCAN: return gpu_scan(cg, n, L);
    case GPU_K_MATMUL: return gpu_matmul(cg, n, L);
    case GPU_K_PRANGE: break;
    }
    lk_diag_set(cg->diag, LK_ERR_INTERNAL, cg->f->file, n->pos.line, n->pos.col, "internal error: a prange loop as an expression");
    return LLVMGetUndef(cg_type(cg, n->type));
}

/* for i in lk.prange(...) as a kernel: the iterations are the work items; the reductions start at their
 * identity in each work item's thread and come back combined in block order, then into the variables; the loop
 * variable ends at its last value, as after range. */
void cg_gpu_prange(Cg *cg, const IrNode *s, LLVMValueRef start, LLVMValueRef stop, LLVMValueRef step)
{
    const GpuKernelLayout *L = layout_of(cg, s);
    if (!L) return;
    const IrType *t = s->u.for_range.var->type;
    LLVMValueRef s64, st64, n = cg_trip_count(cg, t, start, stop, step, &s64, &st64);
    Block b = new_block(cg, L);
    put(cg, &b, L->start, s64);
    put(cg, &b, L->step, st64);
    put_uses(cg, &b, L);
    int nred = s->u.for_range.nreds;
    launch(cg, L, &b, n, nred ? RT_LAUNCH_REDUCE : RT_LAUNCH_ELEMENTS);
    if (nred) {
        LLVMValueRef res = results(cg, nred);
        for (int i = 0; i < nred; i++) {
            const IrPrangeRed *r = &s->u.for_range.reds[i];
            LLVMValueRef slot = cg->var_slots[r->var->id];
            LLVMValueRef acc = LLVMBuildLoad2(cg->b, cg_type(cg, r->var->type), slot, "");
            LLVMValueRef part = slot_scalar(cg, result_at(cg, res, nred, i), r->var->type->dtype);
            LLVMBuildStore(cg->b, cg_red_combine(cg, r->op, r->var->type->dtype, acc, part), slot);
        }
    }
    cg_prange_last_value(cg, s, s64, st64, n);
}

/* ---------------- host access to device memory ---------------- */

LLVMValueRef cg_gpu_load_mem(Cg *cg, IrDtype dt, LLVMValueRef p)
{
    LLVMTypeRef mt = cg_mem_type(cg, dt);
    LLVMValueRef tmp = cg_alloca(cg, mt, "device_elem");
    LLVMTypeRef params[4] = {cg->ptr, cg->ptr, cg->ptr, cg->i64};
    LLVMValueRef args[4] = {cg->rtctx, p, tmp, cg_i64(cg, ir_dtype_size(dt))};
    cg_check_status(cg, cg_call_rt(cg, "rt_gpu_read_elem", cg->i32, params, args, 4));
    return LLVMBuildLoad2(cg->b, mt, tmp, "");
}

void cg_gpu_store_mem(Cg *cg, IrDtype dt, LLVMValueRef p, LLVMValueRef v)
{
    LLVMTypeRef mt = cg_mem_type(cg, dt);
    LLVMValueRef tmp = cg_alloca(cg, mt, "device_elem");
    LLVMBuildStore(cg->b, v, tmp);
    LLVMTypeRef params[4] = {cg->ptr, cg->ptr, cg->ptr, cg->i64};
    LLVMValueRef args[4] = {cg->rtctx, p, tmp, cg_i64(cg, ir_dtype_size(dt))};
    cg_check_status(cg, cg_call_rt(cg, "rt_gpu_write_elem", cg->i32, params, args, 4));
}
