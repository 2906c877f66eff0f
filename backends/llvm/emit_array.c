/* emit_array.c: arrays in LLVM IR. Element access (with bounds checks and negative-index wrapping), views
 * (slices, new axes, transpose), allocation, and the loops of IR_MAP and IR_IMAP, which reductions and scans
 * (emit_reduce.c) run too: a map's elements go to its sink, which stores them or accumulates them.
 *
 * Two loop shapes: when every array involved has C layout (known from its type) and every input has the
 * output's shape (checked at run time), one flat loop with unit-stride addresses, which LLVM vectorises;
 * otherwise a loop nest over the output's shape with broadcast strides (0 on broadcast axes). */
#include "cg.h"

LLVMValueRef cg_array_data(Cg *cg, LLVMValueRef arr) { return LLVMBuildExtractValue(cg->b, arr, 0, "data"); }

LLVMValueRef cg_array_dim(Cg *cg, LLVMValueRef arr, int axis)
{
    return LLVMBuildExtractValue(cg->b, LLVMBuildExtractValue(cg->b, arr, 2, ""), (unsigned)axis, "dim");
}

LLVMValueRef cg_array_stride(Cg *cg, LLVMValueRef arr, int axis)
{
    return LLVMBuildExtractValue(cg->b, LLVMBuildExtractValue(cg->b, arr, 3, ""), (unsigned)axis, "stride");
}

static LLVMValueRef make_array(Cg *cg, const IrType *t, LLVMValueRef data, LLVMValueRef base, LLVMValueRef *dims,
                               LLVMValueRef *strides)
{
    LLVMValueRef agg = LLVMGetUndef(cg_type(cg, t));
    agg = LLVMBuildInsertValue(cg->b, agg, data, 0, "");
    agg = LLVMBuildInsertValue(cg->b, agg, base, 1, "");
    LLVMValueRef d = LLVMGetUndef(LLVMArrayType(cg->i64, (unsigned)t->ndim));
    LLVMValueRef s = LLVMGetUndef(LLVMArrayType(cg->i64, (unsigned)t->ndim));
    for (int i = 0; i < t->ndim; i++) {
        d = LLVMBuildInsertValue(cg->b, d, dims[i], (unsigned)i, "");
        s = LLVMBuildInsertValue(cg->b, s, strides[i], (unsigned)i, "");
    }
    agg = LLVMBuildInsertValue(cg->b, agg, d, 2, "");
    return LLVMBuildInsertValue(cg->b, agg, s, 3, "");
}

static LLVMValueRef byte_gep(Cg *cg, LLVMValueRef p, LLVMValueRef off)
{
    LLVMValueRef idx[1] = {off};
    return LLVMBuildInBoundsGEP2(cg->b, cg->i8, p, idx, 1, "");
}

/* Every read and write of array memory by emitted code goes through these two (the gpu's host code reaches
 * device memory through the runtime there: gpu_launch.c). */
LLVMValueRef cg_load_mem(Cg *cg, IrDtype dt, LLVMValueRef p)
{
    if (cg->gpu) return cg_gpu_load_mem(cg, dt, p);
    if (ir_dtype_is_complex(dt)) return cg_complex_load(cg, dt, p);
    return LLVMBuildLoad2(cg->b, cg_mem_type(cg, dt), p, "");
}

void cg_store_mem(Cg *cg, IrDtype dt, LLVMValueRef p, LLVMValueRef v)
{
    if (cg->gpu) cg_gpu_store_mem(cg, dt, p, v);
    else if (ir_dtype_is_complex(dt)) cg_complex_store(cg, dt, p, v);
    else LLVMBuildStore(cg->b, v, p);
}

LLVMValueRef cg_load_elem(Cg *cg, IrDtype dt, LLVMValueRef p)
{
    LLVMValueRef v = cg_load_mem(cg, dt, p);
    return dt == IR_DT_BOOL ? LLVMBuildICmp(cg->b, LLVMIntNE, v, LLVMConstInt(cg->i8, 0, 0), "") : v;
}

void cg_store_elem(Cg *cg, IrDtype dt, LLVMValueRef p, LLVMValueRef v)
{
    if (dt == IR_DT_BOOL) v = LLVMBuildZExt(cg->b, v, cg->i8, "");
    cg_store_mem(cg, dt, p, v);
}

/* The address of element idx of arr. With C layout it is computed from the shape (so LLVM sees unit stride). */
LLVMValueRef cg_elem_ptr(Cg *cg, const IrType *t, LLVMValueRef arr, LLVMValueRef *idx)
{
    LLVMValueRef off;
    if (t->layout == IR_LAYOUT_C) {
        LLVMValueRef lin = idx[0];
        for (int k = 1; k < t->ndim; k++)
            lin = LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, lin, cg_array_dim(cg, arr, k), ""), idx[k], "");
        off = LLVMBuildMul(cg->b, lin, cg_i64(cg, ir_dtype_size(t->dtype)), "");
    } else {
        off = cg_i64(cg, 0);
        for (int k = 0; k < t->ndim; k++)
            off = LLVMBuildAdd(cg->b, off, LLVMBuildMul(cg->b, idx[k], cg_array_stride(cg, arr, k), ""), "");
    }
    return byte_gep(cg, cg_array_data(cg, arr), off);
}

/* Wrap a negative index and check it against dim (IndexError) when the node asks for checks. */
static LLVMValueRef wrap_index(Cg *cg, const IrNode *n, LLVMValueRef v, LLVMValueRef dim, int axis)
{
    /* the test before a versioned loop proved 0 <= v < dim on every iteration (ir/version_loops.c) */
    if (n->u.index.proven) return v;
    LLVMValueRef neg = LLVMBuildICmp(cg->b, LLVMIntSLT, v, cg_i64(cg, 0), "");
    LLVMValueRef w = LLVMBuildSelect(cg->b, neg, LLVMBuildAdd(cg->b, v, dim, ""), v, "");
    if (n->u.index.checked) {
        LLVMValueRef bad = LLVMBuildICmp(cg->b, LLVMIntUGE, w, dim, "");
        LLVMValueRef extra[3] = {v, dim, cg_i64(cg, axis)};
        cg_raise_if(cg, bad, RT_ERR_INDEX, n->pos, extra, 3);
    }
    return w;
}

/* Python's slice.indices(): start, length and step of a slice over an axis of size dim. */
static void slice_bounds(Cg *cg, const IrNode *s, LLVMValueRef dim, LLVMValueRef *start_out, LLVMValueRef *len_out,
                         LLVMValueRef *step_out)
{
    LLVMBuilderRef b = cg->b;
    LLVMValueRef zero = cg_i64(cg, 0), one = cg_i64(cg, 1), m1 = cg_i64(cg, -1);
    LLVMValueRef step = s->u.slice.step ? cg_expr(cg, s->u.slice.step) : one;
    if (s->u.slice.step && !(s->u.slice.step->kind == IR_CONST && s->u.slice.step->u.konst.i != 0)) {
        LLVMValueRef extra[1] = {cg_i64(cg, RT_VAL_SLICE_STEP_ZERO)};
        cg_raise_if(cg, LLVMBuildICmp(b, LLVMIntEQ, step, zero, ""), RT_ERR_VALUE, s->pos, extra, 1);
    }
    LLVMValueRef back = LLVMBuildICmp(b, LLVMIntSLT, step, zero, "");
    LLVMValueRef lower = LLVMBuildSelect(b, back, m1, zero, "");
    LLVMValueRef upper = LLVMBuildSelect(b, back, LLVMBuildSub(b, dim, one, ""), dim, "");
    LLVMValueRef ends[2];
    const IrNode *parts[2] = {s->u.slice.start, s->u.slice.stop};
    LLVMValueRef defaults[2] = {LLVMBuildSelect(b, back, upper, lower, ""), LLVMBuildSelect(b, back, lower, upper, "")};
    for (int i = 0; i < 2; i++) {
        if (!parts[i]) {
            ends[i] = defaults[i];
            continue;
        }
        LLVMValueRef v = cg_expr(cg, parts[i]);
        LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLT, v, zero, "");
        LLVMValueRef vn = LLVMBuildAdd(b, v, dim, "");
        LLVMValueRef vn_clamped = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, vn, zero, ""), lower, vn, "");
        LLVMValueRef vp_clamped = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGE, v, dim, ""), upper, v, "");
        ends[i] = LLVMBuildSelect(b, neg, vn_clamped, vp_clamped, "");
    }
    /* length: forward (stop - start - 1) / step + 1 when start < stop; backward mirrored */
    LLVMValueRef fwd_n = LLVMBuildAdd(b, LLVMBuildSDiv(b, LLVMBuildSub(b, LLVMBuildSub(b, ends[1], ends[0], ""), one, ""),
                                                       LLVMBuildSelect(b, back, one, step, ""), ""), one, "");
    LLVMValueRef fwd = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, ends[0], ends[1], ""), fwd_n, zero, "");
    LLVMValueRef bwd_n = LLVMBuildAdd(b, LLVMBuildSDiv(b, LLVMBuildSub(b, LLVMBuildSub(b, ends[0], ends[1], ""), one, ""),
                                                       LLVMBuildSelect(b, back, LLVMBuildNeg(b, step, ""), one, ""), ""), one, "");
    LLVMValueRef bwd = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGT, ends[0], ends[1], ""), bwd_n, zero, "");
    *len_out = LLVMBuildSelect(b, back, bwd, fwd, "");
    *start_out = ends[0];
    *step_out = step;
}

static bool is_none(const IrNode *n) { return n->kind != IR_SLICE && n->type->kind == IR_TY_NONE; }

/* Element address for an index of integers only. */
static LLVMValueRef index_elem_ptr(Cg *cg, const IrNode *n, LLVMValueRef arr)
{
    const IrType *bt = n->u.index.base->type;
    LLVMValueRef idx[IR_MAX_DIMS];
    for (int k = 0; k < bt->ndim; k++)
        idx[k] = wrap_index(cg, n, cg_expr(cg, n->u.index.items[k]), cg_array_dim(cg, arr, k), k);
    return cg_elem_ptr(cg, bt, arr, idx);
}

static bool all_ints(const IrNode *n)
{
    if (n->u.index.n != n->u.index.base->type->ndim) return false;
    for (int i = 0; i < n->u.index.n; i++)
        if (n->u.index.items[i]->kind == IR_SLICE || is_none(n->u.index.items[i])) return false;
    return true;
}

LLVMValueRef cg_index(Cg *cg, const IrNode *n)
{
    const IrType *bt = n->u.index.base->type;
    LLVMValueRef arr = cg_expr(cg, n->u.index.base);
    if (all_ints(n)) return cg_load_elem(cg, bt->dtype, index_elem_ptr(cg, n, arr));
    /* a view: walk the items, consuming source axes */
    LLVMValueRef data = cg_array_data(cg, arr);
    LLVMValueRef dims[IR_MAX_DIMS], strides[IR_MAX_DIMS];
    int ax = 0, out = 0;
    LLVMValueRef off = cg_i64(cg, 0);
    for (int i = 0; i < n->u.index.n; i++) {
        const IrNode *it = n->u.index.items[i];
        if (is_none(it)) {
            dims[out] = cg_i64(cg, 1);
            strides[out++] = cg_i64(cg, 0);
            continue;
        }
        LLVMValueRef dim = cg_array_dim(cg, arr, ax), stride = cg_array_stride(cg, arr, ax);
        if (it->kind == IR_SLICE) {
            LLVMValueRef start, len, step;
            slice_bounds(cg, it, dim, &start, &len, &step);
            /* an empty slice may start past the end: no element is touched, so its offset is irrelevant */
            off = LLVMBuildAdd(cg->b, off, LLVMBuildMul(cg->b, start, stride, ""), "");
            dims[out] = len;
            strides[out++] = LLVMBuildMul(cg->b, stride, step, "");
        } else {
            LLVMValueRef v = wrap_index(cg, n, cg_expr(cg, it), dim, ax);
            off = LLVMBuildAdd(cg->b, off, LLVMBuildMul(cg->b, v, stride, ""), "");
        }
        ax++;
    }
    for (; ax < bt->ndim; ax++) {
        dims[out] = cg_array_dim(cg, arr, ax);
        strides[out++] = cg_array_stride(cg, arr, ax);
    }
    LLVMValueRef p = LLVMBuildGEP2(cg->b, cg->i8, data, &off, 1, "");
    return make_array(cg, n->type, p, LLVMBuildExtractValue(cg->b, arr, 1, ""), dims, strides);
}

void cg_store(Cg *cg, const IrNode *target, LLVMValueRef value)
{
    if (target->u.index.n == 1 && target->u.index.items[0]->type->kind == IR_TY_ARRAY) {
        cg_mask_store(cg, target, value); /* a[mask] = scalar */
        return;
    }
    LLVMValueRef arr = cg_expr(cg, target->u.index.base);
    cg_store_elem(cg, target->u.index.base->type->dtype, index_elem_ptr(cg, target, arr), value);
}

LLVMValueRef cg_transpose(Cg *cg, LLVMValueRef arr, int ndim)
{
    LLVMValueRef dims[IR_MAX_DIMS], strides[IR_MAX_DIMS];
    for (int i = 0; i < ndim; i++) {
        dims[i] = cg_array_dim(cg, arr, ndim - 1 - i);
        strides[i] = cg_array_stride(cg, arr, ndim - 1 - i);
    }
    LLVMValueRef agg = LLVMBuildInsertValue(cg->b, LLVMGetUndef(LLVMTypeOf(arr)), cg_array_data(cg, arr), 0, "");
    agg = LLVMBuildInsertValue(cg->b, agg, LLVMBuildExtractValue(cg->b, arr, 1, ""), 1, "");
    LLVMValueRef d = LLVMGetUndef(LLVMArrayType(cg->i64, (unsigned)ndim)), s = d;
    for (int i = 0; i < ndim; i++) {
        d = LLVMBuildInsertValue(cg->b, d, dims[i], (unsigned)i, "");
        s = LLVMBuildInsertValue(cg->b, s, strides[i], (unsigned)i, "");
    }
    agg = LLVMBuildInsertValue(cg->b, agg, d, 2, "");
    return LLVMBuildInsertValue(cg->b, agg, s, 3, "");
}

/* A new C-contiguous array owned by the call (freed with it unless returned). */
LLVMValueRef cg_host_scratch(Cg *cg, int64_t nbytes)
{
    LLVMTypeRef params[2] = {cg->ptr, cg->i64};
    LLVMValueRef args[2] = {cg->rtctx, cg_i64(cg, nbytes)};
    LLVMValueRef buf = cg_call_rt(cg, "rt_buffer_alloc", cg->ptr, params, args, 2);
    LLVMBasicBlockRef ok = cg_new_bb(cg, "scratch_ok");
    LLVMBuildCondBr(cg->b, LLVMBuildIsNull(cg->b, buf, ""), cg->err_bb, ok);
    LLVMPositionBuilderAtEnd(cg->b, ok);
    return LLVMBuildLoad2(cg->b, cg->ptr, byte_gep(cg, buf, cg_i64(cg, offsetof(RtBuffer, data))), "");
}

LLVMValueRef cg_new_array(Cg *cg, IrDtype dt, int ndim, LLVMValueRef *dims, IrPos pos)
{
    LLVMValueRef total = cg_i64(cg, ir_dtype_size(dt));
    LLVMValueRef overflow = LLVMConstInt(cg->i1, 0, 0), negative = LLVMConstInt(cg->i1, 0, 0);
    for (int i = 0; i < ndim; i++) {
        negative = LLVMBuildOr(cg->b, negative, LLVMBuildICmp(cg->b, LLVMIntSLT, dims[i], cg_i64(cg, 0), ""), "");
        LLVMValueRef args[2] = {total, dims[i]};
        LLVMValueRef r = cg_call_intrinsic(cg, "llvm.umul.with.overflow", cg->i64, args, 2);
        total = LLVMBuildExtractValue(cg->b, r, 0, "");
        overflow = LLVMBuildOr(cg->b, overflow, LLVMBuildExtractValue(cg->b, r, 1, ""), "");
    }
    LLVMValueRef neg_extra[1] = {cg_i64(cg, RT_VAL_NEGATIVE_DIM)};
    cg_raise_if(cg, negative, RT_ERR_VALUE, pos, neg_extra, 1);
    LLVMValueRef big_extra[1] = {cg_i64(cg, RT_VAL_TOO_BIG)};
    cg_raise_if(cg, overflow, RT_ERR_VALUE, pos, big_extra, 1);
    LLVMTypeRef params[2] = {cg->ptr, cg->i64};
    LLVMValueRef args[2] = {cg->rtctx, total};
    /* gpu: array memory is the device's (an RtBuffer on the host whose data is a device address) */
    LLVMValueRef buf = cg_call_rt(cg, cg->gpu ? "rt_gpu_buffer_alloc" : "rt_buffer_alloc", cg->ptr, params, args, 2);
    LLVMBasicBlockRef ok = cg_new_bb(cg, "alloc_ok");
    LLVMBuildCondBr(cg->b, LLVMBuildIsNull(cg->b, buf, ""), cg->err_bb, ok);
    LLVMPositionBuilderAtEnd(cg->b, ok);
    LLVMValueRef data = LLVMBuildLoad2(cg->b, cg->ptr, byte_gep(cg, buf, cg_i64(cg, offsetof(RtBuffer, data))), "");
    LLVMValueRef strides[IR_MAX_DIMS];
    LLVMValueRef s = cg_i64(cg, ir_dtype_size(dt));
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = s;
        s = LLVMBuildMul(cg->b, s, dims[i], "");
    }
    return make_array(cg, ir_type_array(dt, ndim, IR_LAYOUT_C), data, buf, dims, strides);
}

LLVMValueRef cg_alloc(Cg *cg, const IrNode *n)
{
    LLVMValueRef dims[IR_MAX_DIMS];
    for (int i = 0; i < n->u.alloc.ndim; i++) dims[i] = cg_expr(cg, n->u.alloc.dims[i]);
    return cg_new_array(cg, n->type->dtype, n->u.alloc.ndim, dims, n->pos);
}

/* One dimension of the broadcast shape of the arguments (the map that follows checks that they agree). */
LLVMValueRef cg_bcast_shape(Cg *cg, const IrNode *n)
{
    LLVMValueRef s = cg_i64(cg, 1);
    int nd = n->u.bcast_shape.ndim, axis = n->u.bcast_shape.axis;
    for (int i = 0; i < n->u.bcast_shape.n; i++) {
        const IrNode *arg = n->u.bcast_shape.args[i];
        if (arg->type->kind != IR_TY_ARRAY || axis < nd - arg->type->ndim) continue;
        LLVMValueRef in = cg_array_dim(cg, cg_expr(cg, arg), axis - (nd - arg->type->ndim));
        LLVMValueRef in_is1 = LLVMBuildICmp(cg->b, LLVMIntEQ, in, cg_i64(cg, 1), "");
        /* sizes that do not broadcast raise here, as the map they size would */
        LLVMValueRef fits = LLVMBuildOr(cg->b, in_is1, LLVMBuildOr(cg->b, LLVMBuildICmp(cg->b, LLVMIntEQ, s, cg_i64(cg, 1), ""),
                                                                   LLVMBuildICmp(cg->b, LLVMIntEQ, in, s, ""), ""), "");
        LLVMValueRef extra[3] = {in, s, cg_i64(cg, nd - axis)};
        cg_raise_if(cg, LLVMBuildNot(cg->b, fits, ""), RT_ERR_SHAPE, n->pos, extra, 3);
        s = LLVMBuildSelect(cg->b, in_is1, s, in, "");
    }
    return s;
}

/* ---------------- maps ---------------- */

bool cg_map_prepare(Cg *cg, CgMap *m, const IrNode *map, LLVMValueRef *out_dims, int out_ndim)
{
    m->map = map;
    m->n = map->u.map.ninputs;
    m->ndim = out_ndim;
    if (m->n > IR_MAX_MAP_INPUTS || out_ndim > IR_MAX_DIMS) {
        lk_diag_set(cg->diag, LK_ERR_COMPILE, cg->f->file, map->pos.line, map->pos.col, "too many inputs to one array expression");
        return false;
    }
    if (!m->have_vals)
        for (int i = 0; i < m->n; i++) m->vals[i] = cg_expr(cg, map->u.map.inputs[i]);
    /* the iteration space: given (the output's), or the broadcast of the inputs */
    if (out_dims) {
        for (int d = 0; d < out_ndim; d++) m->dims[d] = out_dims[d];
    } else {
        for (int d = 0; d < out_ndim; d++) m->dims[d] = cg_i64(cg, 1);
        for (int i = 0; i < m->n; i++) {
            const IrType *t = map->u.map.inputs[i]->type;
            if (t->kind != IR_TY_ARRAY) continue;
            for (int k = 0; k < t->ndim; k++) {
                int d = out_ndim - t->ndim + k;
                LLVMValueRef in = cg_array_dim(cg, m->vals[i], k);
                LLVMValueRef in_is1 = LLVMBuildICmp(cg->b, LLVMIntEQ, in, cg_i64(cg, 1), "");
                LLVMValueRef cur_is1 = LLVMBuildICmp(cg->b, LLVMIntEQ, m->dims[d], cg_i64(cg, 1), "");
                m->dims[d] = LLVMBuildSelect(cg->b, in_is1, m->dims[d], in, "");
                (void)cur_is1;
            }
        }
    }
    /* every input must match the space on each axis or have size 1 there */
    m->flat_ok_static = true;
    m->flat_ok = LLVMConstInt(cg->i1, 1, 0);
    for (int i = 0; i < m->n; i++) {
        const IrType *t = map->u.map.inputs[i]->type;
        if (t->kind != IR_TY_ARRAY) continue;
        if (t->layout != IR_LAYOUT_C || t->ndim != out_ndim) m->flat_ok_static = false;
        for (int k = 0; k < t->ndim; k++) {
            int d = out_ndim - t->ndim + k;
            LLVMValueRef in = cg_array_dim(cg, m->vals[i], k);
            LLVMValueRef eq = LLVMBuildICmp(cg->b, LLVMIntEQ, in, m->dims[d], "");
            LLVMValueRef is1 = LLVMBuildICmp(cg->b, LLVMIntEQ, in, cg_i64(cg, 1), "");
            LLVMValueRef extra[3] = {in, m->dims[d], cg_i64(cg, t->ndim - k)};
            cg_raise_if(cg, LLVMBuildNot(cg->b, LLVMBuildOr(cg->b, eq, is1, ""), ""), RT_ERR_SHAPE, map->pos, extra, 3);
            m->flat_ok = LLVMBuildAnd(cg->b, m->flat_ok, eq, "");
            m->bstrides[i][k] = LLVMBuildSelect(cg->b, LLVMBuildAnd(cg->b, is1, LLVMBuildNot(cg->b, eq, ""), ""),
                                                cg_i64(cg, 0), cg_array_stride(cg, m->vals[i], k), "");
        }
    }
    return true;
}

bool cg_map_inputs_first(Cg *cg, CgMap *m, const IrNode *map, int out_ndim)
{
    int arrays = 0;
    for (int i = 0; i < map->u.map.ninputs; i++) arrays += map->u.map.inputs[i]->type->kind == IR_TY_ARRAY;
    if (arrays < 2) {
        for (int i = 0; i < map->u.map.ninputs; i++) m->vals[i] = cg_expr(cg, map->u.map.inputs[i]);
    } else {
        CgMap probe = *m; /* the inputs against their own broadcast: only its checks are kept */
        if (!cg_map_prepare(cg, &probe, map, NULL, out_ndim)) return false;
        for (int i = 0; i < probe.n; i++) m->vals[i] = probe.vals[i];
    }
    m->have_vals = true;
    return true;
}

/* The map's body at one point: flat index (all C, same shape) or a multi-index. */
static LLVMValueRef map_value_at(Cg *cg, CgMap *m, LLVMValueRef flat, LLVMValueRef *idx)
{
    const IrNode *map = m->map;
    for (int i = 0; i < m->n; i++) {
        const IrType *t = map->u.map.inputs[i]->type;
        LLVMValueRef v = m->vals[i];
        if (t->kind == IR_TY_ARRAY) {
            LLVMValueRef p;
            if (flat) {
                p = byte_gep(cg, cg_array_data(cg, v), LLVMBuildMul(cg->b, flat, cg_i64(cg, ir_dtype_size(t->dtype)), ""));
            } else {
                LLVMValueRef off = cg_i64(cg, 0);
                for (int k = 0; k < t->ndim; k++) {
                    /* in the unit-stride copy of the nest, the innermost stride is known (see nd_nest) */
                    LLVMValueRef stride = m->unit_inner && k == t->ndim - 1 ? cg_i64(cg, ir_dtype_size(t->dtype))
                                                                           : m->bstrides[i][k];
                    off = LLVMBuildAdd(cg->b, off, LLVMBuildMul(cg->b, idx[m->ndim - t->ndim + k], stride, ""), "");
                }
                p = byte_gep(cg, cg_array_data(cg, v), off);
            }
            v = cg_load_elem(cg, t->dtype, p);
        }
        LLVMBuildStore(cg->b, v, cg->var_slots[map->u.map.params[i]->id]);
    }
    return cg_expr(cg, map->u.map.body);
}

/* Where the map's element goes: its output, or the accumulator of a reduction or scan (emit_reduce.c). */
static void sink(Cg *cg, CgMap *m, LLVMValueRef v, LLVMValueRef flat, LLVMValueRef *idx)
{
    if (m->sink != CG_SINK_STORE) {
        cg_reduce_sink(cg, m, v, flat, idx);
        return;
    }
    const IrType *ot = m->out_type;
    LLVMValueRef p = flat ? byte_gep(cg, cg_array_data(cg, m->out), LLVMBuildMul(cg->b, flat, cg_i64(cg, ir_dtype_size(ot->dtype)), ""))
                          : cg_elem_ptr(cg, ot, m->out, idx);
    cg_store_elem(cg, ot->dtype, p, v);
}

/* One element of the map, and of each sibling after it (their spaces equal its own), each into its sink. */
static void flat_body(Cg *cg, LLVMValueRef *idx, void *env)
{
    for (CgMap *m = env; m; m = m->sibling) sink(cg, m, map_value_at(cg, m, idx[0], NULL), idx[0], NULL);
}

static void nd_body(Cg *cg, LLVMValueRef *idx, void *env)
{
    for (CgMap *m = env; m; m = m->sibling) sink(cg, m, map_value_at(cg, m, NULL, idx), NULL, idx);
}

/* i1: every array input of m and of its siblings steps by its element size along the space's last axis (none
 * is broadcast there, none is a strided view there). */
static LLVMValueRef inner_unit(Cg *cg, CgMap *lead)
{
    LLVMValueRef unit = LLVMConstInt(cg->i1, 1, 0);
    for (CgMap *m = lead; m; m = m->sibling)
        for (int i = 0; i < m->n; i++) {
            const IrType *t = m->map->u.map.inputs[i]->type;
            if (t->kind != IR_TY_ARRAY || t->ndim == 0) continue;
            LLVMValueRef is_unit = LLVMBuildICmp(cg->b, LLVMIntEQ, m->bstrides[i][t->ndim - 1], cg_i64(cg, ir_dtype_size(t->dtype)), "");
            unit = LLVMBuildAnd(cg->b, unit, is_unit, "");
        }
    return unit;
}

static bool has_strided_input(const CgMap *lead)
{
    for (const CgMap *m = lead; m; m = m->sibling)
        for (int i = 0; i < m->n; i++) {
            const IrType *t = m->map->u.map.inputs[i]->type;
            if (t->kind == IR_TY_ARRAY && t->ndim > 0) return true;
        }
    return false;
}

static void set_unit_inner(CgMap *lead, bool on)
{
    for (CgMap *m = lead; m; m = m->sibling) m->unit_inner = on;
}

/* A reduction along the last axis with a built-in combine: each line is reduced into a register and combined
 * into its element of out once. The sink's way, a load and a store of out for every element, is a dependence
 * through memory that keeps the line's loop scalar (a.sum(axis=1) of a 2000x5000 array ran at a third of
 * NumPy's speed; now a little faster than NumPy). The line's loop may reassociate (llvm.loop.vectorize.enable),
 * as ir.h allows a built-in reduction; elements are still visited in C order, so an element that raises is the
 * first that would. Lines shorter than LONG_LINE keep the sink's way (15% faster for n-body's x, y, z), so a
 * reduction along the last axis compiles its element three times: n-body's first call costs 17% more. */
#define LONG_LINE 16 /* shorter lines (x, y, z) run as elements: a vector loop's setup costs more than it gives */

typedef struct LineNest {
    CgMap *m;
    LLVMValueRef acc;
    LLVMValueRef idx[IR_MAX_DIMS];
} LineNest;

static bool by_lines(const CgMap *m)
{
    return m->sink == CG_SINK_REDUCE_AXIS && m->ndim >= 2 && m->red_axis == m->ndim - 1 && m->red_op != IR_RED_FUNC &&
           !m->sibling;
}

static void line_element(Cg *cg, LLVMValueRef *j, void *env)
{
    LineNest *l = env;
    CgMap *m = l->m;
    l->idx[m->ndim - 1] = j[0];
    LLVMValueRef v = map_value_at(cg, m, NULL, l->idx);
    IrDtype dt = m->out_type->dtype;
    LLVMValueRef a = LLVMBuildLoad2(cg->b, cg_type(cg, ir_type_scalar(dt)), l->acc, "");
    LLVMBuildStore(cg->b, cg_red_combine(cg, m->red_op, dt, a, v), l->acc);
}

static void line(Cg *cg, LLVMValueRef *idx, void *env)
{
    LineNest *l = env;
    CgMap *m = l->m;
    IrDtype dt = m->out_type->dtype;
    LLVMTypeRef t = cg_type(cg, ir_type_scalar(dt));
    for (int d = 0; d < m->ndim - 1; d++) l->idx[d] = idx[d];
    l->acc = cg_alloca(cg, t, "line");
    LLVMBuildStore(cg->b, cg_red_identity(cg, m->red_op, dt), l->acc);
    cg_loop_nest(cg, 1, &m->dims[m->ndim - 1], line_element, l, true);
    LLVMValueRef p = cg_elem_ptr(cg, m->out_type, m->out, l->idx); /* the line's element: idx without the last */
    LLVMValueRef line_value = LLVMBuildLoad2(cg->b, t, l->acc, "");
    cg_store_elem(cg, dt, p, cg_red_combine(cg, m->red_op, dt, cg_load_elem(cg, dt, p), line_value));
}

/* The plain nest over the space (rows [lo, hi) when lo is given), or its lines (by_lines). */
static void plain_nest(Cg *cg, CgMap *m, LLVMValueRef lo, LLVMValueRef hi, bool vectorize)
{
    LLVMBasicBlockRef done = NULL;
    if (by_lines(m) && !cg->scalar_nest && !cg->cold) { /* the general copy, scalar anyway, is not worth a third */
        LLVMBasicBlockRef lines = cg_new_bb(cg, "lines"), elements = cg_new_bb(cg, "elements");
        done = cg_new_bb(cg, "lines_end");
        LLVMValueRef longer = LLVMBuildICmp(cg->b, LLVMIntSGE, m->dims[m->ndim - 1], cg_i64(cg, LONG_LINE), "");
        LLVMBuildCondBr(cg->b, longer, lines, elements);
        LLVMPositionBuilderAtEnd(cg->b, lines);
        LineNest l = {.m = m};
        if (lo) cg_loop_nest_from(cg, m->ndim - 1, m->dims, lo, hi, line, &l, false);
        else cg_loop_nest(cg, m->ndim - 1, m->dims, line, &l, false);
        LLVMBuildBr(cg->b, done);
        LLVMPositionBuilderAtEnd(cg->b, elements);
    }
    if (lo) cg_loop_nest_from(cg, m->ndim, m->dims, lo, hi, nd_body, m, vectorize);
    else cg_loop_nest(cg, m->ndim, m->dims, nd_body, m, vectorize);
    if (done) {
        LLVMBuildBr(cg->b, done);
        LLVMPositionBuilderAtEnd(cg->b, done);
    }
}

/* The loop nest over the map's space (rows [lo, hi) of it when lo is given). An input's strides are run-time
 * values (0 where it is broadcast), so LLVM can only vectorise the innermost loop with gathers; where every
 * input steps by its element size along the last axis (tested once, before the nest) a copy of the nest with
 * that constant stride runs instead, and vectorises with plain loads. The output's addresses are its own
 * (cg_elem_ptr: unit stride when it has C layout). The general copy is kept scalar: measured on a 2-core Zen 4,
 * its gathers ran a strided view's map 2.8x slower than scalar code (and an outer difference x[:, None] - y
 * 1.2x faster), and vectorising both copies cost 30% more compile time where one costs 13%. */
static void nd_nest(Cg *cg, CgMap *m, LLVMValueRef lo, LLVMValueRef hi, bool vectorize)
{
    if (m->unit_inner || cg->cold || !has_strided_input(m)) { /* cold code: one copy, plain */
        plain_nest(cg, m, lo, hi, vectorize);
        return;
    }
    LLVMBasicBlockRef ub = cg_new_bb(cg, "unit_inner"), gb = cg_new_bb(cg, "strided_inner"), done = cg_new_bb(cg, "nest_end");
    LLVMBuildCondBr(cg->b, inner_unit(cg, m), ub, gb);
    LLVMPositionBuilderAtEnd(cg->b, ub);
    set_unit_inner(m, true);
    nd_nest(cg, m, lo, hi, vectorize);
    set_unit_inner(m, false);
    LLVMBuildBr(cg->b, done);
    LLVMPositionBuilderAtEnd(cg->b, gb);
    bool outer = cg->scalar_nest;
    cg->scalar_nest = true;
    plain_nest(cg, m, lo, hi, vectorize);
    cg->scalar_nest = outer;
    LLVMBuildBr(cg->b, done);
    LLVMPositionBuilderAtEnd(cg->b, done);
}

/* Run the map over its space: the flat loop when the layout allows it, else the loop nest. */
void cg_map_run(Cg *cg, CgMap *m, bool out_is_c, bool vectorize)
{
    if (m->ndim == 0) {
        flat_body(cg, (LLVMValueRef[]){cg_i64(cg, 0)}, m);
        return;
    }
    bool flat_possible = m->flat_ok_static && out_is_c && m->sink != CG_SINK_REDUCE_AXIS;
    if (!flat_possible) {
        nd_nest(cg, m, NULL, NULL, vectorize);
        return;
    }
    LLVMValueRef total = m->dims[0];
    for (int d = 1; d < m->ndim; d++) total = LLVMBuildMul(cg->b, total, m->dims[d], "");
    LLVMBasicBlockRef fb = cg_new_bb(cg, "flat"), nb = cg_new_bb(cg, "strided"), done = cg_new_bb(cg, "map_end");
    LLVMBuildCondBr(cg->b, m->flat_ok, fb, nb);
    LLVMPositionBuilderAtEnd(cg->b, fb);
    cg_loop_nest(cg, 1, &total, flat_body, m, vectorize);
    LLVMBuildBr(cg->b, done);
    LLVMPositionBuilderAtEnd(cg->b, nb);
    nd_nest(cg, m, NULL, NULL, vectorize);
    LLVMBuildBr(cg->b, done);
    LLVMPositionBuilderAtEnd(cg->b, done);
}

/* The lowest and one-past-highest byte address an array touches (equal when it is empty). */
static void byte_range(Cg *cg, LLVMValueRef arr, const IrType *t, LLVMValueRef *lo, LLVMValueRef *hi)
{
    LLVMValueRef base = LLVMBuildPtrToInt(cg->b, cg_array_data(cg, arr), cg->i64, "");
    LLVMValueRef neg = cg_i64(cg, 0), pos = cg_i64(cg, ir_dtype_size(t->dtype)), empty = LLVMConstInt(cg->i1, 0, 0);
    for (int d = 0; d < t->ndim; d++) {
        LLVMValueRef dim = cg_array_dim(cg, arr, d);
        empty = LLVMBuildOr(cg->b, empty, LLVMBuildICmp(cg->b, LLVMIntEQ, dim, cg_i64(cg, 0), ""), "");
        LLVMValueRef span = LLVMBuildMul(cg->b, LLVMBuildSub(cg->b, dim, cg_i64(cg, 1), ""), cg_array_stride(cg, arr, d), "");
        LLVMValueRef is_neg = LLVMBuildICmp(cg->b, LLVMIntSLT, span, cg_i64(cg, 0), "");
        neg = LLVMBuildAdd(cg->b, neg, LLVMBuildSelect(cg->b, is_neg, span, cg_i64(cg, 0), ""), "");
        pos = LLVMBuildAdd(cg->b, pos, LLVMBuildSelect(cg->b, is_neg, cg_i64(cg, 0), span, ""), "");
    }
    *lo = LLVMBuildAdd(cg->b, base, neg, "");
    *hi = LLVMBuildSelect(cg->b, empty, *lo, LLVMBuildAdd(cg->b, base, pos, ""), "");
}

/* NumPy semantics for a[1:] = a[:-1] and friends: an input that overlaps the output, other than by reading
 * each element exactly where it is written, is copied first, so the result is as if all reads came before all
 * writes. Checked at run time; the copy is made only when the memory really overlaps. */
void cg_map_copy_overlaps(Cg *cg, CgMap *m, const IrType *ot)
{
    LLVMValueRef olo, ohi;
    byte_range(cg, m->out, ot, &olo, &ohi);
    for (int i = 0; i < m->n; i++) {
        const IrType *t = m->map->u.map.inputs[i]->type;
        if (t->kind != IR_TY_ARRAY) continue;
        LLVMValueRef lo, hi;
        byte_range(cg, m->vals[i], t, &lo, &hi);
        LLVMValueRef overlap = LLVMBuildAnd(cg->b, LLVMBuildICmp(cg->b, LLVMIntULT, lo, ohi, ""),
                                            LLVMBuildICmp(cg->b, LLVMIntULT, olo, hi, ""), "");
        /* element-for-element in place (same start, same strides on every axis it spans) is safe */
        LLVMValueRef same = LLVMBuildICmp(cg->b, LLVMIntEQ, cg_array_data(cg, m->vals[i]), cg_array_data(cg, m->out), "");
        for (int k = 0; k < t->ndim; k++) {
            int d = m->ndim - t->ndim + k;
            same = LLVMBuildAnd(cg->b, same, LLVMBuildICmp(cg->b, LLVMIntEQ, m->bstrides[i][k], cg_array_stride(cg, m->out, d), ""), "");
        }
        for (int d = 0; d < m->ndim - t->ndim; d++) /* broadcast over an output axis: read many times, written once */
            same = LLVMBuildAnd(cg->b, same, LLVMBuildICmp(cg->b, LLVMIntULE, cg_array_dim(cg, m->out, d), cg_i64(cg, 1), ""), "");
        LLVMValueRef must_copy = LLVMBuildAnd(cg->b, overlap, LLVMBuildNot(cg->b, same, ""), "");
        LLVMBasicBlockRef from = LLVMGetInsertBlock(cg->b), copy_bb = cg_new_bb(cg, "overlap_copy"), done = cg_new_bb(cg, "overlap_done");
        LLVMBuildCondBr(cg->b, must_copy, copy_bb, done);
        LLVMPositionBuilderAtEnd(cg->b, copy_bb);
        LLVMValueRef dims[IR_MAX_DIMS];
        for (int k = 0; k < t->ndim; k++) dims[k] = cg_array_dim(cg, m->vals[i], k);
        LLVMValueRef copy = cg_new_array(cg, t->dtype, t->ndim, dims, m->map->pos);
        cg_copy_array(cg, copy, m->vals[i], t, dims);
        /* the copy is C-contiguous: its strides replace the input's, keeping the broadcast zeros */
        LLVMValueRef cstr[IR_MAX_DIMS];
        for (int k = 0; k < t->ndim; k++) {
            LLVMValueRef zero_stride = LLVMBuildICmp(cg->b, LLVMIntEQ, m->bstrides[i][k], cg_i64(cg, 0), "");
            cstr[k] = LLVMBuildSelect(cg->b, zero_stride, cg_i64(cg, 0), cg_array_stride(cg, copy, k), "");
        }
        LLVMBasicBlockRef copy_end = LLVMGetInsertBlock(cg->b);
        LLVMBuildBr(cg->b, done);
        LLVMPositionBuilderAtEnd(cg->b, done);
        LLVMValueRef phi = LLVMBuildPhi(cg->b, LLVMTypeOf(m->vals[i]), "");
        LLVMValueRef vals[2] = {m->vals[i], copy};
        LLVMBasicBlockRef froms[2] = {from, copy_end};
        LLVMAddIncoming(phi, vals, froms, 2);
        m->vals[i] = phi;
        for (int k = 0; k < t->ndim; k++) {
            LLVMValueRef sphi = LLVMBuildPhi(cg->b, cg->i64, "");
            LLVMValueRef svals[2] = {m->bstrides[i][k], cstr[k]};
            LLVMAddIncoming(sphi, svals, froms, 2);
            m->bstrides[i][k] = sphi;
        }
    }
}

/* ---------------- the openmp backend: the outermost loop on the team ---------------- */

/* Whether this node runs on the team: the openmp backend, and a parallel region (ir/parallel_regions.c): the
 * code of one element runs on the thread that runs that element. Whether the team pays
 * is decided at run time (cg_worth_a_team). */
bool cg_on_team(Cg *cg, const IrNode *n)
{
    return cg->parallel && n->region;
}

void cg_map_capture(CgOutline *o, CgMap *m, CgMapCaps *c)
{
    for (int i = 0; i < m->n; i++) {
        c->vals[i] = cg_capture(o, m->vals[i]);
        const IrType *t = m->map->u.map.inputs[i]->type;
        for (int k = 0; t->kind == IR_TY_ARRAY && k < t->ndim; k++) c->bstrides[i][k] = cg_capture(o, m->bstrides[i][k]);
    }
    for (int d = 0; d < m->ndim; d++) c->dims[d] = cg_capture(o, m->dims[d]);
    c->out = m->out ? cg_capture(o, m->out) : -1;
    c->best = m->best ? cg_capture(o, m->best) : -1;
    c->flat_ok = cg_capture(o, m->flat_ok);
}

void cg_map_restore(CgOutline *o, CgMap *m, const CgMapCaps *c)
{
    for (int i = 0; i < m->n; i++) {
        m->vals[i] = cg_outline_get(o, c->vals[i]);
        const IrType *t = m->map->u.map.inputs[i]->type;
        for (int k = 0; t->kind == IR_TY_ARRAY && k < t->ndim; k++) m->bstrides[i][k] = cg_outline_get(o, c->bstrides[i][k]);
    }
    for (int d = 0; d < m->ndim; d++) m->dims[d] = cg_outline_get(o, c->dims[d]);
    if (c->out >= 0) m->out = cg_outline_get(o, c->out);
    if (c->best >= 0) m->best = cg_outline_get(o, c->best);
    m->flat_ok = cg_outline_get(o, c->flat_ok);
}

/* Rows [lo, hi) of the map's space: flat over those rows when the layout allows it, else the nest. */
void cg_map_run_chunk(Cg *cg, CgMap *m, bool out_is_c, LLVMValueRef lo, LLVMValueRef hi, bool vectorize)
{
    bool flat_possible = m->flat_ok_static && out_is_c && m->sink != CG_SINK_REDUCE_AXIS;
    if (!flat_possible) {
        nd_nest(cg, m, lo, hi, vectorize);
        return;
    }
    LLVMValueRef inner = cg_i64(cg, 1);
    for (int d = 1; d < m->ndim; d++) inner = LLVMBuildMul(cg->b, inner, m->dims[d], "");
    LLVMBasicBlockRef fb = cg_new_bb(cg, "flat"), nb = cg_new_bb(cg, "strided"), done = cg_new_bb(cg, "map_end");
    LLVMBuildCondBr(cg->b, m->flat_ok, fb, nb);
    LLVMPositionBuilderAtEnd(cg->b, fb);
    LLVMValueRef total = LLVMBuildMul(cg->b, hi, inner, "");
    cg_loop_nest_from(cg, 1, &total, LLVMBuildMul(cg->b, lo, inner, ""), total, flat_body, m, vectorize);
    LLVMBuildBr(cg->b, done);
    LLVMPositionBuilderAtEnd(cg->b, nb);
    nd_nest(cg, m, lo, hi, vectorize);
    LLVMBuildBr(cg->b, done);
    LLVMPositionBuilderAtEnd(cg->b, done);
}

LLVMValueRef cg_map_work(Cg *cg, CgMap *m, IrNode *body)
{
    LLVMValueRef total = cg_i64(cg, 1);
    for (int d = 0; d < m->ndim; d++) total = LLVMBuildMul(cg->b, total, m->dims[d], "");
    return LLVMBuildMul(cg->b, total, cg_i64(cg, cg_cost(body)), "");
}

/* A map (or the fill of an array) on the team: each thread writes its rows of out. */
static void run_map_on_team_at(Cg *cg, CgMap *m, bool out_is_c, int chunk_level)
{
    CgOutline o = {0};
    CgMapCaps c;
    cg_map_capture(&o, m, &c);
    LLVMValueRef work = cg_map_work(cg, m, m->map->u.map.body), rows = m->dims[chunk_level];
    LLVMBasicBlockRef par = cg_new_bb(cg, "map_team"), seq = cg_new_bb(cg, "map_alone"), joined = cg_new_bb(cg, "map_joined");
    LLVMBuildCondBr(cg->b, cg_worth_a_team(cg, work), par, seq);
    LLVMPositionBuilderAtEnd(cg->b, seq);
    cg_map_run(cg, m, out_is_c, false);
    LLVMBuildBr(cg->b, joined);
    LLVMPositionBuilderAtEnd(cg->b, par);
    cg_outline_begin(cg, &o, m->region);
    CgMap mine = *m;
    cg_map_restore(&o, &mine, &c);
    cg->chunk_level = chunk_level;
    cg_map_run_chunk(cg, &mine, out_is_c && chunk_level == 0, o.lo, o.hi, false);
    cg->chunk_level = 0;
    cg_outline_end(cg, &o, rows, work);
    LLVMBuildBr(cg->b, joined);
    LLVMPositionBuilderAtEnd(cg->b, joined);
}

static void run_map_on_team(Cg *cg, CgMap *m, bool out_is_c)
{
    run_map_on_team_at(cg, m, out_is_c, 0);
}

/* Along an axis, each thread owns lines of the result: chunked over the first axis, or (for axis 0) the
 * second. A 1-D input along axis 0 is a reduction of everything and never comes here. */
void cg_map_axis_on_team(Cg *cg, CgMap *m)
{
    if (m->red_axis != 0) run_map_on_team_at(cg, m, false, 0);
    else if (m->ndim > 1) run_map_on_team_at(cg, m, false, 1);
    else cg_map_run(cg, m, false, false);
}

/* Every element of arr (ndim dims, C layout) set to value, a constant or a variable, through a map with no
 * inputs. */
void cg_fill(Cg *cg, LLVMValueRef arr, const IrType *t, LLVMValueRef *dims, int ndim, IrNode *value)
{
    if (ndim == 0) return;
    IrNode fmap = {.kind = IR_MAP, .type = (IrType *)t};
    fmap.u.map.body = value;
    CgMap fill = {.sink = CG_SINK_STORE, .out = arr, .out_type = t, .ndim = ndim, .map = &fmap};
    for (int d = 0; d < ndim; d++) fill.dims[d] = dims[d];
    cg_loop_nest(cg, ndim, dims, nd_body, &fill, false);
}

LLVMValueRef cg_map(Cg *cg, const IrNode *n)
{
    CgMap m = {.sink = CG_SINK_STORE, .region = n->region};
    const IrType *ot = n->type;
    if (n->u.map.out) {
        if (!cg_map_inputs_first(cg, &m, n, ot->ndim)) return LLVMGetUndef(cg_type(cg, ot));
        m.out = cg_expr(cg, n->u.map.out);
        LLVMValueRef dims[IR_MAX_DIMS];
        for (int d = 0; d < ot->ndim; d++) dims[d] = cg_array_dim(cg, m.out, d);
        if (!cg_map_prepare(cg, &m, n, dims, ot->ndim)) return LLVMGetUndef(cg_type(cg, ot));
        if (!n->u.map.out_is_fresh) cg_map_copy_overlaps(cg, &m, ot);
    } else {
        if (!cg_map_prepare(cg, &m, n, NULL, ot->ndim)) return LLVMGetUndef(cg_type(cg, ot));
        m.out = cg_new_array(cg, ot->dtype, ot->ndim, m.dims, n->pos);
    }
    m.out_type = ot;
    if (cg_on_team(cg, n) && m.ndim > 0) run_map_on_team(cg, &m, ot->layout == IR_LAYOUT_C);
    else cg_map_run(cg, &m, ot->layout == IR_LAYOUT_C, false);
    return m.out;
}

typedef struct IMapEnv {
    const IrNode *n;
    LLVMValueRef out;
} IMapEnv;

static void imap_body(Cg *cg, LLVMValueRef *idx, void *env)
{
    IMapEnv *e = env;
    for (int d = 0; d < e->n->u.imap.ndim; d++) LLVMBuildStore(cg->b, idx[d], cg->var_slots[e->n->u.imap.idx[d]->id]);
    LLVMValueRef v = cg_expr(cg, e->n->u.imap.body);
    cg_store_elem(cg, e->n->type->dtype, cg_elem_ptr(cg, e->n->type, e->out, idx), v);
}

LLVMValueRef cg_imap(Cg *cg, const IrNode *n)
{
    int nd = n->u.imap.ndim;
    LLVMValueRef dims[IR_MAX_DIMS];
    IMapEnv env = {n, NULL};
    if (n->u.imap.out) {
        env.out = cg_expr(cg, n->u.imap.out);
        for (int d = 0; d < nd; d++) dims[d] = cg_array_dim(cg, env.out, d);
    } else {
        for (int d = 0; d < nd; d++) dims[d] = cg_expr(cg, n->u.imap.dims[d]);
        env.out = cg_new_array(cg, n->type->dtype, nd, dims, n->pos);
    }
    if (!cg_on_team(cg, n)) {
        cg_loop_nest(cg, nd, dims, imap_body, &env, false);
        return env.out;
    }
    CgOutline o = {0};
    int cdims[IR_MAX_DIMS];
    for (int d = 0; d < nd; d++) cdims[d] = cg_capture(&o, dims[d]);
    int cout = cg_capture(&o, env.out);
    LLVMValueRef total = cg_i64(cg, 1);
    for (int d = 0; d < nd; d++) total = LLVMBuildMul(cg->b, total, dims[d], "");
    LLVMValueRef work = LLVMBuildMul(cg->b, total, cg_i64(cg, cg_cost(n->u.imap.body)), ""), rows = dims[0];
    LLVMBasicBlockRef par = cg_new_bb(cg, "imap_team"), seq = cg_new_bb(cg, "imap_alone"), joined = cg_new_bb(cg, "imap_joined");
    LLVMBuildCondBr(cg->b, cg_worth_a_team(cg, work), par, seq);
    LLVMPositionBuilderAtEnd(cg->b, seq);
    cg_loop_nest(cg, nd, dims, imap_body, &env, false);
    LLVMBuildBr(cg->b, joined);
    LLVMPositionBuilderAtEnd(cg->b, par);
    cg_outline_begin(cg, &o, n->region);
    LLVMValueRef cd[IR_MAX_DIMS];
    for (int d = 0; d < nd; d++) cd[d] = cg_outline_get(&o, cdims[d]);
    IMapEnv mine = {n, cg_outline_get(&o, cout)};
    cg_loop_nest_from(cg, nd, cd, o.lo, o.hi, imap_body, &mine, false);
    cg_outline_end(cg, &o, rows, work);
    LLVMBuildBr(cg->b, joined);
    LLVMPositionBuilderAtEnd(cg->b, joined);
    return env.out;
}
