/* emit_array.c: arrays in LLVM IR. Element access (with bounds checks and negative-index wrapping), views
 * (slices, new axes, transpose), allocation, and the loops of IR_MAP, IR_IMAP and IR_REDUCE.
 *
 * Two loop shapes: when every array involved has C layout (known from its type) and every input has the
 * output's shape (checked at run time), one flat loop with unit-stride addresses, which LLVM vectorises;
 * otherwise a loop nest over the output's shape with broadcast strides (0 on broadcast axes). */
#include <string.h>
#include "cg.h"

#define MAX_DIMS 32

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

static LLVMValueRef load_elem(Cg *cg, IrDtype dt, LLVMValueRef p)
{
    LLVMValueRef v = LLVMBuildLoad2(cg->b, cg_mem_type(cg, dt), p, "");
    return dt == IR_DT_BOOL ? LLVMBuildICmp(cg->b, LLVMIntNE, v, LLVMConstInt(cg->i8, 0, 0), "") : v;
}

static void store_elem(Cg *cg, IrDtype dt, LLVMValueRef p, LLVMValueRef v)
{
    if (dt == IR_DT_BOOL) v = LLVMBuildZExt(cg->b, v, cg->i8, "");
    LLVMBuildStore(cg->b, v, p);
}

/* The address of element idx of arr. With C layout it is computed from the shape (so LLVM sees unit stride). */
static LLVMValueRef elem_ptr(Cg *cg, const IrType *t, LLVMValueRef arr, LLVMValueRef *idx)
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
    /* the test before the loop proved 0 <= v < dim on every iteration (bounds_version.c) */
    if (cg_index_proven(cg, n)) return v;
    LLVMValueRef neg = LLVMBuildICmp(cg->b, LLVMIntSLT, v, cg_i64(cg, 0), "");
    LLVMValueRef w = LLVMBuildSelect(cg->b, neg, LLVMBuildAdd(cg->b, v, dim, ""), v, "");
    if (n->u.index.checked) {
        LLVMValueRef bad = LLVMBuildICmp(cg->b, LLVMIntUGE, w, dim, "");
        LLVMValueRef extra[3] = {v, dim, cg_i64(cg, axis)};
        cg_raise_if(cg, bad, "rt_raise_index", n->pos, extra, 3);
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
        cg_raise_if(cg, LLVMBuildICmp(b, LLVMIntEQ, step, zero, ""), "rt_raise_value", s->pos, extra, 1);
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
    LLVMValueRef idx[MAX_DIMS];
    for (int k = 0; k < bt->ndim; k++)
        idx[k] = wrap_index(cg, n, cg_expr(cg, n->u.index.items[k]), cg_array_dim(cg, arr, k), k);
    return elem_ptr(cg, bt, arr, idx);
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
    if (all_ints(n)) return load_elem(cg, bt->dtype, index_elem_ptr(cg, n, arr));
    /* a view: walk the items, consuming source axes */
    LLVMValueRef data = cg_array_data(cg, arr);
    LLVMValueRef dims[MAX_DIMS], strides[MAX_DIMS];
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
    LLVMValueRef arr = cg_expr(cg, target->u.index.base);
    store_elem(cg, target->u.index.base->type->dtype, index_elem_ptr(cg, target, arr), value);
}

LLVMValueRef cg_transpose(Cg *cg, LLVMValueRef arr, int ndim)
{
    LLVMValueRef dims[MAX_DIMS], strides[MAX_DIMS];
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
    cg_raise_if(cg, negative, "rt_raise_value", pos, neg_extra, 1);
    LLVMValueRef big_extra[1] = {cg_i64(cg, RT_VAL_TOO_BIG)};
    cg_raise_if(cg, overflow, "rt_raise_value", pos, big_extra, 1);
    LLVMTypeRef params[2] = {cg->ptr, cg->i64};
    LLVMValueRef args[2] = {cg->rtctx, total};
    LLVMValueRef buf = cg_call_rt(cg, "rt_buffer_alloc", cg->ptr, params, args, 2);
    LLVMBasicBlockRef ok = cg_new_bb(cg, "alloc_ok");
    LLVMBuildCondBr(cg->b, LLVMBuildIsNull(cg->b, buf, ""), cg->err_bb, ok);
    LLVMPositionBuilderAtEnd(cg->b, ok);
    LLVMValueRef data = LLVMBuildLoad2(cg->b, cg->ptr, byte_gep(cg, buf, cg_i64(cg, offsetof(RtBuffer, data))), "");
    LLVMValueRef strides[MAX_DIMS];
    LLVMValueRef s = cg_i64(cg, ir_dtype_size(dt));
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = s;
        s = LLVMBuildMul(cg->b, s, dims[i], "");
    }
    return make_array(cg, ir_type_array(dt, ndim, IR_LAYOUT_C), data, buf, dims, strides);
}

LLVMValueRef cg_alloc(Cg *cg, const IrNode *n)
{
    LLVMValueRef dims[MAX_DIMS];
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
        s = LLVMBuildSelect(cg->b, in_is1, s, in, "");
    }
    return s;
}

/* ---------------- maps ---------------- */

/* The inputs of a map, evaluated once, with their strides made 0 on broadcast axes. */
typedef struct MapIn {
    const IrNode *map;
    int n, ndim;                       /* ndim: of the iteration space */
    LLVMValueRef vals[16];
    LLVMValueRef bstrides[16][MAX_DIMS];
    LLVMValueRef dims[MAX_DIMS];       /* the iteration space */
    bool flat_ok_static;               /* all arrays C layout with the full ndim */
    LLVMValueRef flat_ok;              /* i1: and every input's shape equals dims */
    /* the consumer of each element */
    const IrType *out_type;
    LLVMValueRef out;
    IrReduceOp red_op;
    LLVMValueRef acc;                  /* reduce to scalar: the accumulator's alloca */
    int red_axis;                      /* reduce along an axis: that axis (out has the others) */
    const IrCombine *combine;          /* red_op == IR_RED_FUNC: the user's combine */
    LLVMValueRef started;              /* ... without init: whether the accumulator holds an element yet */
    LLVMValueRef arg_index;            /* argmin/argmax over everything: the index's alloca */
    LLVMValueRef best;                 /* argmin/argmax along an axis: the array of best values so far */
    enum { SINK_STORE, SINK_REDUCE_ALL, SINK_REDUCE_AXIS, SINK_ARG_ALL, SINK_ARG_AXIS, SINK_SCAN_ALL, SINK_SCAN_AXIS } sink;
} MapIn;

static bool prepare_inputs(Cg *cg, MapIn *m, const IrNode *map, LLVMValueRef *out_dims, int out_ndim)
{
    m->map = map;
    m->n = map->u.map.ninputs;
    m->ndim = out_ndim;
    if (m->n > 16 || out_ndim > MAX_DIMS) {
        lk_diag_set(cg->diag, LK_ERR_COMPILE, cg->f->file, map->pos.line, map->pos.col, "too many inputs to one array expression");
        return false;
    }
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
            cg_raise_if(cg, LLVMBuildNot(cg->b, LLVMBuildOr(cg->b, eq, is1, ""), ""), "rt_raise_shape", map->pos, extra, 3);
            m->flat_ok = LLVMBuildAnd(cg->b, m->flat_ok, eq, "");
            m->bstrides[i][k] = LLVMBuildSelect(cg->b, LLVMBuildAnd(cg->b, is1, LLVMBuildNot(cg->b, eq, ""), ""),
                                                cg_i64(cg, 0), cg_array_stride(cg, m->vals[i], k), "");
        }
    }
    return true;
}

/* The map's body at one point: flat index (all C, same shape) or a multi-index. */
static LLVMValueRef map_value_at(Cg *cg, MapIn *m, LLVMValueRef flat, LLVMValueRef *idx)
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
                for (int k = 0; k < t->ndim; k++)
                    off = LLVMBuildAdd(cg->b, off, LLVMBuildMul(cg->b, idx[m->ndim - t->ndim + k], m->bstrides[i][k], ""), "");
                p = byte_gep(cg, cg_array_data(cg, v), off);
            }
            v = load_elem(cg, t->dtype, p);
        }
        LLVMBuildStore(cg->b, v, cg->var_slots[map->u.map.params[i]->id]);
    }
    return cg_expr(cg, map->u.map.body);
}

static LLVMValueRef red_identity(Cg *cg, IrReduceOp op, IrDtype dt)
{
    LLVMTypeRef t = cg_type(cg, ir_type_scalar(dt));
    bool fl = ir_dtype_is_float(dt), sg = ir_dtype_is_signed(dt);
    int bits = ir_dtype_bits(dt);
    switch (op) {
    case IR_RED_ADD: case IR_RED_OR: return LLVMConstNull(t);
    case IR_RED_MUL: return fl ? LLVMConstReal(t, 1.0) : LLVMConstInt(t, 1, 0);
    case IR_RED_AND: return LLVMConstAllOnes(t);
    case IR_RED_MIN:
        if (fl) return LLVMConstReal(t, __builtin_inf());
        if (dt == IR_DT_BOOL) return LLVMConstInt(t, 1, 0);
        return sg ? LLVMConstInt(t, (~0ULL) >> (65 - bits), 0) : LLVMConstAllOnes(t);
    case IR_RED_MAX:
        if (fl) return LLVMConstReal(t, -__builtin_inf());
        if (dt == IR_DT_BOOL) return LLVMConstNull(t);
        return sg ? LLVMConstInt(t, 1ULL << (bits - 1), 0) : LLVMConstNull(t);
    case IR_RED_ARGMIN: return red_identity(cg, IR_RED_MIN, dt);
    case IR_RED_ARGMAX: return red_identity(cg, IR_RED_MAX, dt);
    case IR_RED_NANMIN: case IR_RED_NANMAX: return fl ? LLVMConstReal(t, __builtin_nan("")) : red_identity(cg, op == IR_RED_NANMIN ? IR_RED_MIN : IR_RED_MAX, dt);
    case IR_RED_FUNC: break; /* no identity: init, or the first element */
    }
    return LLVMConstNull(t);
}

static LLVMValueRef red_combine(Cg *cg, IrReduceOp op, IrDtype dt, LLVMValueRef a, LLVMValueRef x)
{
    IrNode fake = {.kind = IR_BINOP};
    IrNode operand = {.type = ir_type_scalar(dt)};
    fake.u.binop.lhs = &operand;
    switch (op) {
    case IR_RED_ADD: fake.u.binop.op = dt == IR_DT_BOOL ? IR_OP_BITOR : IR_OP_ADD; break;
    case IR_RED_MUL: fake.u.binop.op = dt == IR_DT_BOOL ? IR_OP_BITAND : IR_OP_MUL; break;
    case IR_RED_MIN: fake.u.binop.op = IR_OP_MIN; break;
    case IR_RED_MAX: fake.u.binop.op = IR_OP_MAX; break;
    case IR_RED_AND: return LLVMBuildAnd(cg->b, a, x, "");
    case IR_RED_OR: return LLVMBuildOr(cg->b, a, x, "");
    case IR_RED_NANMIN: case IR_RED_NANMAX: {
        if (!ir_dtype_is_float(dt)) {
            fake.u.binop.op = op == IR_RED_NANMIN ? IR_OP_MIN : IR_OP_MAX;
            break;
        }
        LLVMValueRef args[2] = {a, x};
        return cg_call_intrinsic(cg, op == IR_RED_NANMIN ? "llvm.minnum" : "llvm.maxnum", LLVMTypeOf(a), args, 2);
    }
    case IR_RED_ARGMIN: case IR_RED_ARGMAX: case IR_RED_FUNC: return a; /* handled by the sinks */
    }
    return cg_binop(cg, &fake, a, x);
}

/* The user's combine applied to (a, x): the params take the values, the body is evaluated. */
static LLVMValueRef apply_combine(Cg *cg, const IrCombine *c, LLVMValueRef a, LLVMValueRef x)
{
    LLVMBuildStore(cg->b, a, cg->var_slots[c->acc_param->id]);
    LLVMBuildStore(cg->b, x, cg->var_slots[c->elem_param->id]);
    return cg_expr(cg, c->body);
}

static LLVMValueRef combine(Cg *cg, MapIn *m, IrDtype dt, LLVMValueRef a, LLVMValueRef x)
{
    if (m->red_op == IR_RED_FUNC) return apply_combine(cg, m->combine, a, x);
    return red_combine(cg, m->red_op, dt, a, x);
}

/* acc = started ? combine(acc, v) : v (started set); with init, always combine. The combine runs only when
 * there is an accumulated value: it is user code and may raise. */
static void accumulate_first_or_combine(Cg *cg, MapIn *m, LLVMValueRef acc_ptr, LLVMTypeRef t, LLVMValueRef v)
{
    if (!m->started) {
        LLVMBuildStore(cg->b, apply_combine(cg, m->combine, LLVMBuildLoad2(cg->b, t, acc_ptr, ""), v), acc_ptr);
        return;
    }
    LLVMValueRef started = LLVMBuildLoad2(cg->b, cg->i1, m->started, "");
    LLVMBasicBlockRef comb = cg_new_bb(cg, "combine"), first = cg_new_bb(cg, "first"), done = cg_new_bb(cg, "combined");
    LLVMBuildCondBr(cg->b, started, comb, first);
    LLVMPositionBuilderAtEnd(cg->b, comb);
    LLVMBuildStore(cg->b, apply_combine(cg, m->combine, LLVMBuildLoad2(cg->b, t, acc_ptr, ""), v), acc_ptr);
    LLVMBuildBr(cg->b, done);
    LLVMPositionBuilderAtEnd(cg->b, first);
    LLVMBuildStore(cg->b, v, acc_ptr);
    LLVMBuildStore(cg->b, LLVMConstInt(cg->i1, 1, 0), m->started);
    LLVMBuildBr(cg->b, done);
    LLVMPositionBuilderAtEnd(cg->b, done);
}

/* argmax: x beats best if greater, or if it is the first NaN; argmin likewise with less. */
static LLVMValueRef arg_better(Cg *cg, IrReduceOp op, IrDtype dt, LLVMValueRef x, LLVMValueRef best)
{
    LLVMValueRef beats = cg_compare(cg, op == IR_RED_ARGMAX ? IR_CMP_GT : IR_CMP_LT, dt, x, best);
    if (!ir_dtype_is_float(dt)) return beats;
    LLVMValueRef x_nan = LLVMBuildFCmp(cg->b, LLVMRealUNO, x, x, "");
    LLVMValueRef best_num = LLVMBuildFCmp(cg->b, LLVMRealORD, best, best, "");
    return LLVMBuildOr(cg->b, beats, LLVMBuildAnd(cg->b, x_nan, best_num, ""), "");
}

/* Along an axis with the user's combine: the first element of each line is taken as it is. */
static void axis_first_or_combine(Cg *cg, MapIn *m, LLVMValueRef first, LLVMValueRef prev_ptr, LLVMValueRef out_ptr,
                                  LLVMValueRef v)
{
    IrDtype dt = m->out_type->dtype;
    LLVMBasicBlockRef comb = cg_new_bb(cg, "combine"), take = cg_new_bb(cg, "first"), done = cg_new_bb(cg, "combined");
    LLVMBuildCondBr(cg->b, first, take, comb);
    LLVMPositionBuilderAtEnd(cg->b, comb);
    store_elem(cg, dt, out_ptr, apply_combine(cg, m->combine, load_elem(cg, dt, prev_ptr), v));
    LLVMBuildBr(cg->b, done);
    LLVMPositionBuilderAtEnd(cg->b, take);
    store_elem(cg, dt, out_ptr, v);
    LLVMBuildBr(cg->b, done);
    LLVMPositionBuilderAtEnd(cg->b, done);
}

static void sink(Cg *cg, MapIn *m, LLVMValueRef v, LLVMValueRef flat, LLVMValueRef *idx)
{
    IrDtype in_dt = m->map->u.map.body->type->dtype;
    switch (m->sink) {
    case SINK_SCAN_ALL: {
        /* flattened: a running total written to consecutive elements of the 1-D output */
        LLVMValueRef lin = flat;
        if (!lin) {
            lin = idx[0];
            for (int d = 1; d < m->ndim; d++) lin = LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, lin, m->dims[d], ""), idx[d], "");
        }
        LLVMValueRef r;
        if (m->red_op == IR_RED_FUNC) {
            accumulate_first_or_combine(cg, m, m->acc, cg_type(cg, ir_type_scalar(m->out_type->dtype)), v);
            r = LLVMBuildLoad2(cg->b, cg_type(cg, ir_type_scalar(m->out_type->dtype)), m->acc, "");
        } else {
            LLVMValueRef a = LLVMBuildLoad2(cg->b, LLVMTypeOf(v), m->acc, "");
            r = red_combine(cg, m->red_op, in_dt, a, v);
            LLVMBuildStore(cg->b, r, m->acc);
        }
        store_elem(cg, m->out_type->dtype, elem_ptr(cg, m->out_type, m->out, &lin), r);
        return;
    }
    case SINK_SCAN_AXIS: {
        /* out[idx] = out[idx - 1 along the axis] op x, or x at the axis's start */
        const IrType *ot = m->out_type;
        LLVMValueRef first = LLVMBuildICmp(cg->b, LLVMIntEQ, idx[m->red_axis], cg_i64(cg, 0), "");
        LLVMValueRef pidx[MAX_DIMS];
        for (int d = 0; d < m->ndim; d++) pidx[d] = idx[d];
        pidx[m->red_axis] = LLVMBuildSelect(cg->b, first, cg_i64(cg, 0), LLVMBuildSub(cg->b, idx[m->red_axis], cg_i64(cg, 1), ""), "");
        if (m->red_op == IR_RED_FUNC && m->combine->init) {
            /* each line starts from init: out[first] = f(init, x) */
            LLVMValueRef prev = load_elem(cg, ot->dtype, elem_ptr(cg, ot, m->out, pidx));
            prev = LLVMBuildSelect(cg->b, first, cg_expr(cg, m->combine->init), prev, "");
            store_elem(cg, ot->dtype, elem_ptr(cg, ot, m->out, idx), apply_combine(cg, m->combine, prev, v));
            return;
        }
        if (m->red_op == IR_RED_FUNC) {
            axis_first_or_combine(cg, m, first, elem_ptr(cg, ot, m->out, pidx), elem_ptr(cg, ot, m->out, idx), v);
            return;
        }
        LLVMValueRef prev = load_elem(cg, ot->dtype, elem_ptr(cg, ot, m->out, pidx));
        prev = LLVMBuildSelect(cg->b, first, red_identity(cg, m->red_op, ot->dtype), prev, "");
        store_elem(cg, ot->dtype, elem_ptr(cg, ot, m->out, idx), red_combine(cg, m->red_op, ot->dtype, prev, v));
        return;
    }
    case SINK_ARG_ALL: {
        LLVMValueRef lin = flat;
        if (!lin) {
            lin = idx[0];
            for (int d = 1; d < m->ndim; d++) lin = LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, lin, m->dims[d], ""), idx[d], "");
        }
        LLVMValueRef best = LLVMBuildLoad2(cg->b, LLVMTypeOf(v), m->acc, "");
        LLVMValueRef better = arg_better(cg, m->red_op, in_dt, v, best);
        LLVMBuildStore(cg->b, LLVMBuildSelect(cg->b, better, v, best, ""), m->acc);
        LLVMValueRef bi = LLVMBuildLoad2(cg->b, cg->i64, m->arg_index, "");
        LLVMBuildStore(cg->b, LLVMBuildSelect(cg->b, better, lin, bi, ""), m->arg_index);
        return;
    }
    case SINK_ARG_AXIS: {
        LLVMValueRef oidx[MAX_DIMS];
        int o = 0;
        for (int d = 0; d < m->ndim; d++)
            if (d != m->red_axis) oidx[o++] = idx[d];
        const IrType *bt = ir_type_array(in_dt, o, IR_LAYOUT_C);
        LLVMValueRef bp = elem_ptr(cg, bt, m->best, oidx);
        LLVMValueRef best = load_elem(cg, in_dt, bp);
        LLVMValueRef better = arg_better(cg, m->red_op, in_dt, v, best);
        store_elem(cg, in_dt, bp, LLVMBuildSelect(cg->b, better, v, best, ""));
        LLVMValueRef op = elem_ptr(cg, m->out_type, m->out, oidx);
        LLVMValueRef cur = load_elem(cg, IR_DT_INT64, op);
        store_elem(cg, IR_DT_INT64, op, LLVMBuildSelect(cg->b, better, idx[m->red_axis], cur, ""));
        return;
    }
    case SINK_STORE: {
        const IrType *ot = m->out_type;
        LLVMValueRef p = flat ? byte_gep(cg, cg_array_data(cg, m->out), LLVMBuildMul(cg->b, flat, cg_i64(cg, ir_dtype_size(ot->dtype)), ""))
                              : elem_ptr(cg, ot, m->out, idx);
        store_elem(cg, ot->dtype, p, v);
        return;
    }
    case SINK_REDUCE_ALL: {
        if (m->red_op == IR_RED_FUNC) {
            accumulate_first_or_combine(cg, m, m->acc, cg_type(cg, m->combine->acc_param->type), v);
            return;
        }
        LLVMValueRef a = LLVMBuildLoad2(cg->b, LLVMTypeOf(v), m->acc, "");
        LLVMBuildStore(cg->b, red_combine(cg, m->red_op, m->map->u.map.body->type->dtype, a, v), m->acc);
        return;
    }
    case SINK_REDUCE_AXIS: {
        LLVMValueRef oidx[MAX_DIMS];
        int o = 0;
        for (int d = 0; d < m->ndim; d++)
            if (d != m->red_axis) oidx[o++] = idx[d];
        const IrType *ot = m->out_type;
        LLVMValueRef p = elem_ptr(cg, ot, m->out, oidx);
        if (m->red_op == IR_RED_FUNC && !m->combine->init) {
            LLVMValueRef first = LLVMBuildICmp(cg->b, LLVMIntEQ, idx[m->red_axis], cg_i64(cg, 0), "");
            axis_first_or_combine(cg, m, first, p, p, v);
            return;
        }
        LLVMValueRef a = load_elem(cg, ot->dtype, p);
        store_elem(cg, ot->dtype, p, combine(cg, m, ot->dtype, a, v));
        return;
    }
    }
}

static void flat_body(Cg *cg, LLVMValueRef *idx, void *env)
{
    MapIn *m = env;
    sink(cg, m, map_value_at(cg, m, idx[0], NULL), idx[0], NULL);
}

static void nd_body(Cg *cg, LLVMValueRef *idx, void *env)
{
    MapIn *m = env;
    sink(cg, m, map_value_at(cg, m, NULL, idx), NULL, idx);
}

/* Run the map over its space: the flat loop when the layout allows it, else the loop nest. */
static void run_map(Cg *cg, MapIn *m, bool out_is_c, bool vectorize)
{
    if (m->ndim == 0) {
        flat_body(cg, (LLVMValueRef[]){cg_i64(cg, 0)}, m);
        return;
    }
    bool flat_possible = m->flat_ok_static && out_is_c && m->sink != SINK_REDUCE_AXIS;
    if (!flat_possible) {
        cg_loop_nest(cg, m->ndim, m->dims, nd_body, m, vectorize);
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
    cg_loop_nest(cg, m->ndim, m->dims, nd_body, m, vectorize);
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
static void copy_overlapping_inputs(Cg *cg, MapIn *m, const IrType *ot)
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
        LLVMValueRef dims[MAX_DIMS];
        for (int k = 0; k < t->ndim; k++) dims[k] = cg_array_dim(cg, m->vals[i], k);
        LLVMValueRef copy = cg_new_array(cg, t->dtype, t->ndim, dims, m->map->pos);
        cg_copy_array(cg, copy, m->vals[i], t, dims);
        /* the copy is C-contiguous: its strides replace the input's, keeping the broadcast zeros */
        LLVMValueRef cstr[MAX_DIMS];
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

/* Whether this data-parallel node runs on the team: the openmp backend, and not inside a loop that does. */
static bool on_team(Cg *cg)
{
    return cg->parallel && cg->par_depth == 0;
}

/* The MapIn's values moved into the chunk: capture them in the parent, read them back in the child. */
typedef struct MapCaps {
    int vals[16], bstrides[16][MAX_DIMS], dims[MAX_DIMS], out, flat_ok, best;
} MapCaps;

static void capture_map(CgOutline *o, MapIn *m, MapCaps *c)
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

static void restore_map(CgOutline *o, MapIn *m, const MapCaps *c)
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
static void run_map_chunk(Cg *cg, MapIn *m, bool out_is_c, LLVMValueRef lo, LLVMValueRef hi, bool vectorize)
{
    bool flat_possible = m->flat_ok_static && out_is_c && m->sink != SINK_REDUCE_AXIS;
    if (!flat_possible) {
        cg_loop_nest_from(cg, m->ndim, m->dims, lo, hi, nd_body, m, vectorize);
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
    cg_loop_nest_from(cg, m->ndim, m->dims, lo, hi, nd_body, m, vectorize);
    LLVMBuildBr(cg->b, done);
    LLVMPositionBuilderAtEnd(cg->b, done);
}

static LLVMValueRef map_work(Cg *cg, MapIn *m, IrNode *body)
{
    LLVMValueRef total = cg_i64(cg, 1);
    for (int d = 0; d < m->ndim; d++) total = LLVMBuildMul(cg->b, total, m->dims[d], "");
    return LLVMBuildMul(cg->b, total, cg_i64(cg, cg_cost(body)), "");
}

/* A map (or the fill of an array) on the team: each thread writes its rows of out. */
static void run_map_on_team_at(Cg *cg, MapIn *m, bool out_is_c, int chunk_level)
{
    CgOutline o = {0};
    MapCaps c;
    capture_map(&o, m, &c);
    LLVMValueRef work = map_work(cg, m, m->map->u.map.body), rows = m->dims[chunk_level];
    LLVMBasicBlockRef par = cg_new_bb(cg, "map_team"), seq = cg_new_bb(cg, "map_alone"), joined = cg_new_bb(cg, "map_joined");
    LLVMBuildCondBr(cg->b, cg_worth_a_team(cg, work), par, seq);
    LLVMPositionBuilderAtEnd(cg->b, seq);
    run_map(cg, m, out_is_c, false);
    LLVMBuildBr(cg->b, joined);
    LLVMPositionBuilderAtEnd(cg->b, par);
    IrNode *exprs[1] = {m->map->u.map.body};
    cg_outline_begin(cg, &o, exprs, 1, NULL);
    cg->par_depth++;
    MapIn mine = *m;
    restore_map(&o, &mine, &c);
    cg->chunk_level = chunk_level;
    run_map_chunk(cg, &mine, out_is_c && chunk_level == 0, o.lo, o.hi, false);
    cg->chunk_level = 0;
    cg->par_depth--;
    cg_outline_end(cg, &o, rows, work);
    LLVMBuildBr(cg->b, joined);
    LLVMPositionBuilderAtEnd(cg->b, joined);
}

static void run_map_on_team(Cg *cg, MapIn *m, bool out_is_c)
{
    run_map_on_team_at(cg, m, out_is_c, 0);
}

/* Along an axis, each thread owns lines of the result: chunked over the first axis, or (for axis 0) the
 * second. A 1-D input along axis 0 is a reduction of everything and never comes here. */
static void run_axis_on_team(Cg *cg, MapIn *m)
{
    if (m->red_axis != 0) run_map_on_team_at(cg, m, false, 0);
    else if (m->ndim > 1) run_map_on_team_at(cg, m, false, 1);
    else run_map(cg, m, false, false);
}

/* Each thread runs its chunk of m from the identity and leaves its accumulator in partials[tid] (an array of
 * RT_MAX_THREADS accumulators in the enclosing function, filled with the identity first, so slots of threads
 * that did not run hold it). Shared by reductions and the first pass of scans. */
static void partials_on_team(Cg *cg, MapIn *m, IrDtype dt, LLVMValueRef partials, bool vectorize)
{
    LLVMTypeRef et = cg_type(cg, ir_type_scalar(dt)), pt = LLVMArrayType(et, RT_MAX_THREADS);
    LLVMValueRef ident = red_identity(cg, m->red_op, dt);
    for (int t = 0; t < RT_MAX_THREADS; t++) {
        LLVMValueRef idx[2] = {cg_i64(cg, 0), cg_i64(cg, t)};
        LLVMBuildStore(cg->b, ident, LLVMBuildGEP2(cg->b, pt, partials, idx, 2, ""));
    }
    CgOutline o = {0};
    MapCaps c;
    capture_map(&o, m, &c);
    int cpart = cg_capture(&o, partials);
    LLVMValueRef work = map_work(cg, m, m->map->u.map.body), rows = m->dims[0];
    IrNode *exprs[1] = {m->map->u.map.body};
    cg_outline_begin(cg, &o, exprs, 1, NULL);
    cg->par_depth++;
    MapIn mine = *m;
    restore_map(&o, &mine, &c);
    mine.acc = cg_alloca(cg, et, "acc");
    LLVMBuildStore(cg->b, red_identity(cg, m->red_op, dt), mine.acc);
    run_map_chunk(cg, &mine, true, o.lo, o.hi, vectorize);
    LLVMValueRef idx[2] = {cg_i64(cg, 0), LLVMBuildZExt(cg->b, o.tid, cg->i64, "")};
    LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, et, mine.acc, ""), LLVMBuildGEP2(cg->b, pt, cg_outline_get(&o, cpart), idx, 2, ""));
    cg->par_depth--;
    cg_outline_end(cg, &o, rows, work);
}

/* A reduction of everything on the team: each thread reduces its rows into its slot of partials, and the
 * slots are combined in thread order afterwards (so the grouping changes, the order of elements does not). */
static LLVMValueRef reduce_on_team(Cg *cg, MapIn *m, IrDtype dt)
{
    LLVMTypeRef et = cg_type(cg, ir_type_scalar(dt));
    LLVMTypeRef pt = LLVMArrayType(et, RT_MAX_THREADS);
    LLVMValueRef work0 = map_work(cg, m, m->map->u.map.body);
    LLVMBasicBlockRef par = cg_new_bb(cg, "reduce_team"), seq = cg_new_bb(cg, "reduce_alone"), joined = cg_new_bb(cg, "reduce_joined");
    LLVMBuildCondBr(cg->b, cg_worth_a_team(cg, work0), par, seq);
    LLVMPositionBuilderAtEnd(cg->b, seq);
    LLVMBuildStore(cg->b, red_identity(cg, m->red_op, dt), m->acc);
    run_map(cg, m, true, true);
    LLVMBuildBr(cg->b, joined);
    LLVMPositionBuilderAtEnd(cg->b, par);
    LLVMValueRef partials = cg_alloca(cg, pt, "partials");
    LLVMValueRef ident = red_identity(cg, m->red_op, dt);
    partials_on_team(cg, m, dt, partials, true);
    LLVMValueRef acc = ident;
    for (int t = 0; t < RT_MAX_THREADS; t++) {
        LLVMValueRef i2[2] = {cg_i64(cg, 0), cg_i64(cg, t)};
        acc = red_combine(cg, m->red_op, dt, acc, LLVMBuildLoad2(cg->b, et, LLVMBuildGEP2(cg->b, pt, partials, i2, 2, ""), ""));
    }
    LLVMBuildStore(cg->b, acc, m->acc);
    LLVMBuildBr(cg->b, joined);
    LLVMPositionBuilderAtEnd(cg->b, joined);
    return LLVMBuildLoad2(cg->b, et, m->acc, "");
}

/* A loop t = 0 .. RT_MAX_THREADS-1 in the enclosing function (over partial results), calling body(&t). */
static void over_partials(Cg *cg, CgLoopBody body, void *env)
{
    LLVMValueRef dims[1] = {cg_i64(cg, RT_MAX_THREADS)};
    cg_loop_nest(cg, 1, dims, body, env, false);
}

typedef struct Partials {
    MapIn *m;
    IrDtype dt;
    LLVMTypeRef vt;                   /* the accumulated value's type */
    LLVMValueRef values, flags, idx;  /* [RT_MAX_THREADS] arrays in the enclosing function */
    LLVMValueRef acc, have, best_idx; /* the combination, as allocas */
    bool init_mode;
} Partials;

static LLVMValueRef slot(Cg *cg, LLVMTypeRef et, LLVMValueRef arr, LLVMValueRef t)
{
    LLVMValueRef idx[2] = {cg_i64(cg, 0), t};
    return LLVMBuildGEP2(cg->b, LLVMArrayType(et, RT_MAX_THREADS), arr, idx, 2, "");
}

static void init_partial(Cg *cg, LLVMValueRef *t, void *env)
{
    Partials *p = env;
    LLVMBuildStore(cg->b, LLVMConstNull(p->vt), slot(cg, p->vt, p->values, t[0]));
    if (p->flags) LLVMBuildStore(cg->b, LLVMConstInt(cg->i1, 0, 0), slot(cg, cg->i1, p->flags, t[0]));
    if (p->idx) LLVMBuildStore(cg->b, cg_i64(cg, 0), slot(cg, cg->i64, p->idx, t[0]));
}

/* the user's combine over the threads' partials, in thread order, skipping threads that saw nothing */
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
    LLVMBuildStore(cg->b, apply_combine(cg, p->m->combine, LLVMBuildLoad2(cg->b, p->vt, p->acc, ""), v), p->acc);
    LLVMBuildBr(cg->b, next);
    LLVMPositionBuilderAtEnd(cg->b, first);
    LLVMBuildStore(cg->b, v, p->acc);
    LLVMBuildStore(cg->b, LLVMConstInt(cg->i1, 1, 0), p->have);
    LLVMBuildBr(cg->b, next);
    LLVMPositionBuilderAtEnd(cg->b, next);
}

/* argmin/argmax over the threads' (value, index) partials: a later thread wins only if strictly better */
static void combine_arg_partial(Cg *cg, LLVMValueRef *t, void *env)
{
    Partials *p = env;
    LLVMValueRef v = LLVMBuildLoad2(cg->b, p->vt, slot(cg, p->vt, p->values, t[0]), "");
    LLVMValueRef i = LLVMBuildLoad2(cg->b, cg->i64, slot(cg, cg->i64, p->idx, t[0]), "");
    LLVMValueRef started = LLVMBuildLoad2(cg->b, cg->i1, slot(cg, cg->i1, p->flags, t[0]), "");
    LLVMValueRef best = LLVMBuildLoad2(cg->b, p->vt, p->acc, "");
    LLVMValueRef have = LLVMBuildLoad2(cg->b, cg->i1, p->have, "");
    LLVMValueRef better = LLVMBuildOr(cg->b, LLVMBuildNot(cg->b, have, ""), arg_better(cg, p->m->red_op, p->dt, v, best), "");
    better = LLVMBuildAnd(cg->b, better, started, "");
    LLVMBuildStore(cg->b, LLVMBuildSelect(cg->b, better, v, best, ""), p->acc);
    LLVMBuildStore(cg->b, LLVMBuildSelect(cg->b, better, i, LLVMBuildLoad2(cg->b, cg->i64, p->best_idx, ""), ""), p->best_idx);
    LLVMBuildStore(cg->b, LLVMBuildOr(cg->b, have, started, ""), p->have);
}

/* lk.reduce with a function, or argmin/argmax, over everything, on the team. Each thread starts from nothing
 * (a started flag, or the identity with index 0), and the partials are combined in thread order. Returns
 * the value (FUNC) or the index (arg); an empty input raises as on one thread. */
static LLVMValueRef reduce_all_special_on_team(Cg *cg, MapIn *m, IrDtype dt, const IrNode *n)
{
    bool is_arg = m->red_op != IR_RED_FUNC;
    LLVMTypeRef vt = is_arg ? cg_type(cg, ir_type_scalar(dt)) : cg_type(cg, m->combine->acc_param->type);
    Partials p = {m, dt, vt};
    p.values = cg_alloca(cg, LLVMArrayType(vt, RT_MAX_THREADS), "partials");
    p.flags = cg_alloca(cg, LLVMArrayType(cg->i1, RT_MAX_THREADS), "started");
    p.idx = is_arg ? cg_alloca(cg, LLVMArrayType(cg->i64, RT_MAX_THREADS), "argidx") : NULL;
    over_partials(cg, init_partial, &p);
    CgOutline o = {0};
    MapCaps c;
    capture_map(&o, m, &c);
    int cv = cg_capture(&o, p.values), cf = cg_capture(&o, p.flags), ci = is_arg ? cg_capture(&o, p.idx) : -1;
    LLVMValueRef work = map_work(cg, m, m->map->u.map.body), rows = m->dims[0];
    IrNode *exprs[2] = {m->map->u.map.body, is_arg ? NULL : m->combine->body};
    cg_outline_begin(cg, &o, exprs, 2, NULL);
    cg->par_depth++;
    MapIn mine = *m;
    restore_map(&o, &mine, &c);
    mine.acc = cg_alloca(cg, vt, "acc");
    LLVMValueRef tid = LLVMBuildZExt(cg->b, o.tid, cg->i64, "");
    if (is_arg) {
        mine.sink = SINK_ARG_ALL;
        LLVMBuildStore(cg->b, red_identity(cg, m->red_op, dt), mine.acc);
        mine.arg_index = cg_alloca(cg, cg->i64, "argidx");
        LLVMBuildStore(cg->b, cg_i64(cg, 0), mine.arg_index);
    } else {
        mine.sink = SINK_REDUCE_ALL;
        LLVMBuildStore(cg->b, LLVMConstNull(vt), mine.acc);
        mine.started = cg_alloca(cg, cg->i1, "started");
        LLVMBuildStore(cg->b, LLVMConstInt(cg->i1, 0, 0), mine.started);
    }
    run_map_chunk(cg, &mine, true, o.lo, o.hi, false);
    LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, vt, mine.acc, ""), slot(cg, vt, cg_outline_get(&o, cv), tid));
    LLVMBuildStore(cg->b, is_arg ? LLVMBuildICmp(cg->b, LLVMIntSLT, o.lo, o.hi, "") : LLVMBuildLoad2(cg->b, cg->i1, mine.started, ""),
                   slot(cg, cg->i1, cg_outline_get(&o, cf), tid));
    if (is_arg) LLVMBuildStore(cg->b, LLVMBuildLoad2(cg->b, cg->i64, mine.arg_index, ""), slot(cg, cg->i64, cg_outline_get(&o, ci), tid));
    cg->par_depth--;
    cg_outline_end(cg, &o, rows, work);
    p.acc = cg_alloca(cg, vt, "combined");
    p.have = cg_alloca(cg, cg->i1, "have");
    if (!is_arg && m->combine->init) {
        LLVMBuildStore(cg->b, cg_expr(cg, m->combine->init), p.acc);
        LLVMBuildStore(cg->b, LLVMConstInt(cg->i1, 1, 0), p.have);
    } else {
        LLVMBuildStore(cg->b, LLVMConstNull(vt), p.acc);
        LLVMBuildStore(cg->b, LLVMConstInt(cg->i1, 0, 0), p.have);
    }
    if (is_arg) {
        p.best_idx = cg_alloca(cg, cg->i64, "bestidx");
        LLVMBuildStore(cg->b, cg_i64(cg, 0), p.best_idx);
        over_partials(cg, combine_arg_partial, &p);
        return LLVMBuildLoad2(cg->b, cg->i64, p.best_idx, "");
    }
    over_partials(cg, combine_func_partial, &p);
    LLVMValueRef extra[1] = {cg_i64(cg, RT_VAL_EMPTY_REDUCE)};
    cg_raise_if(cg, LLVMBuildNot(cg->b, LLVMBuildLoad2(cg->b, cg->i1, p.have, ""), ""), "rt_raise_value", n->pos, extra, 1);
    return LLVMBuildLoad2(cg->b, vt, p.acc, "");
}

LLVMValueRef cg_map(Cg *cg, const IrNode *n)
{
    MapIn m = {.sink = SINK_STORE};
    const IrType *ot = n->type;
    if (n->u.map.out) {
        m.out = cg_expr(cg, n->u.map.out);
        LLVMValueRef dims[MAX_DIMS];
        for (int d = 0; d < ot->ndim; d++) dims[d] = cg_array_dim(cg, m.out, d);
        if (!prepare_inputs(cg, &m, n, dims, ot->ndim)) return LLVMGetUndef(cg_type(cg, ot));
        if (!n->u.map.out_is_fresh) copy_overlapping_inputs(cg, &m, ot);
    } else {
        if (!prepare_inputs(cg, &m, n, NULL, ot->ndim)) return LLVMGetUndef(cg_type(cg, ot));
        m.out = cg_new_array(cg, ot->dtype, ot->ndim, m.dims, n->pos);
    }
    m.out_type = ot;
    if (on_team(cg) && m.ndim > 0) run_map_on_team(cg, &m, ot->layout == IR_LAYOUT_C);
    else run_map(cg, &m, ot->layout == IR_LAYOUT_C, false);
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
    store_elem(cg, e->n->type->dtype, elem_ptr(cg, e->n->type, e->out, idx), v);
}

LLVMValueRef cg_imap(Cg *cg, const IrNode *n)
{
    int nd = n->u.imap.ndim;
    LLVMValueRef dims[MAX_DIMS];
    IMapEnv env = {n, NULL};
    if (n->u.imap.out) {
        env.out = cg_expr(cg, n->u.imap.out);
        for (int d = 0; d < nd; d++) dims[d] = cg_array_dim(cg, env.out, d);
    } else {
        for (int d = 0; d < nd; d++) dims[d] = cg_expr(cg, n->u.imap.dims[d]);
        env.out = cg_new_array(cg, n->type->dtype, nd, dims, n->pos);
    }
    if (!on_team(cg)) {
        cg_loop_nest(cg, nd, dims, imap_body, &env, false);
        return env.out;
    }
    CgOutline o = {0};
    int cdims[MAX_DIMS];
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
    IrNode *exprs[1] = {n->u.imap.body};
    cg_outline_begin(cg, &o, exprs, 1, NULL);
    cg->par_depth++;
    LLVMValueRef cd[MAX_DIMS];
    for (int d = 0; d < nd; d++) cd[d] = cg_outline_get(&o, cdims[d]);
    IMapEnv mine = {n, cg_outline_get(&o, cout)};
    cg_loop_nest_from(cg, nd, cd, o.lo, o.hi, imap_body, &mine, false);
    cg->par_depth--;
    cg_outline_end(cg, &o, rows, work);
    LLVMBuildBr(cg->b, joined);
    LLVMPositionBuilderAtEnd(cg->b, joined);
    return env.out;
}

/* ---------------- reductions ---------------- */

/* An array input is reduced as the identity map over it, so both cases share the map's loops (and a map input
 * is fused: its body is computed in the reduction's loop, with no array in between). */
static const IrNode *as_map(Cg *cg, const IrNode *x)
{
    if (x->kind == IR_MAP && !x->u.map.out) return x;
    IrNode *m = ir_node(cg->f->arena, IR_MAP, x->pos);
    m->type = x->type;
    m->u.map.ninputs = m->u.map.nparams = 1;
    m->u.map.inputs = ir_nodes(cg->f->arena, 1);
    m->u.map.inputs[0] = (IrNode *)x;
    m->u.map.params = rt_arena_alloc(cg->f->arena, sizeof(IrVar *));
    m->u.map.params[0] = ir_func_temp(cg->f, ir_type_scalar(x->type->dtype));
    m->u.map.body = ir_var_ref(cg->f->arena, x->pos, m->u.map.params[0]);
    /* the new variable needs a slot in this function */
    LLVMValueRef *slots = rt_arena_alloc(cg->f->arena, sizeof(LLVMValueRef) * (size_t)(cg->f->nvars + 1));
    memcpy(slots, cg->var_slots, sizeof(LLVMValueRef) * (size_t)(cg->f->nvars - 1));
    slots[cg->f->nvars - 1] = cg_alloca(cg, cg_type(cg, m->u.map.params[0]->type), "elem");
    cg->var_slots = slots;
    return m;
}

/* The identity of op as a constant node (what an axis reduction's output starts from). */
static IrNode identity_const(IrReduceOp op, IrDtype dt)
{
    IrNode c = {.kind = IR_CONST, .type = ir_type_scalar(dt)};
    if (op == IR_RED_ARGMIN) op = IR_RED_MIN;
    if (op == IR_RED_ARGMAX) op = IR_RED_MAX;
    bool nanop = op == IR_RED_NANMIN || op == IR_RED_NANMAX;
    if (nanop && !ir_dtype_is_float(dt)) op = op == IR_RED_NANMIN ? IR_RED_MIN : IR_RED_MAX;
    if (ir_dtype_is_float(dt)) {
        c.u.konst.f = nanop ? __builtin_nan("") : op == IR_RED_MUL ? 1.0 : op == IR_RED_MIN ? __builtin_inf()
                    : op == IR_RED_MAX ? -__builtin_inf() : 0.0;
    } else if (dt == IR_DT_BOOL) {
        c.u.konst.i = (op == IR_RED_AND || op == IR_RED_MUL || op == IR_RED_MIN);
    } else {
        int bits = ir_dtype_bits(dt);
        bool sg = ir_dtype_is_signed(dt);
        c.u.konst.i = op == IR_RED_MUL ? 1 : op == IR_RED_MIN ? (sg ? (int64_t)((~0ULL) >> (65 - bits)) : -1)
                    : op == IR_RED_MAX ? (sg ? (int64_t)(~0ULL << (bits - 1)) : 0) : 0;
    }
    return c;
}

/* Every element of arr (ndim dims, C layout) set to the constant c, through a map with no inputs. */
static void fill_array(Cg *cg, LLVMValueRef arr, const IrType *t, LLVMValueRef *dims, int ndim, IrNode c)
{
    if (ndim == 0) return;
    IrNode konst = c;
    IrNode fmap = {.kind = IR_MAP, .type = (IrType *)t};
    fmap.u.map.body = &konst;
    MapIn fill = {.sink = SINK_STORE, .out = arr, .out_type = t, .ndim = ndim, .map = &fmap};
    for (int d = 0; d < ndim; d++) fill.dims[d] = dims[d];
    cg_loop_nest(cg, ndim, dims, nd_body, &fill, false);
}

LLVMValueRef cg_reduce(Cg *cg, const IrNode *n)
{
    const IrNode *map = as_map(cg, n->u.reduce.input);
    const IrType *in_t = map->type;
    IrDtype dt = map->u.map.body->type->dtype;
    IrReduceOp op = n->u.reduce.op;
    MapIn m = {.red_op = op, .combine = &n->u.reduce.combine};
    if (!prepare_inputs(cg, &m, map, NULL, in_t->ndim)) return LLVMGetUndef(cg_type(cg, n->type));
    bool is_arg = op == IR_RED_ARGMIN || op == IR_RED_ARGMAX;
    bool needs_items = op == IR_RED_MIN || op == IR_RED_MAX || op == IR_RED_NANMIN || op == IR_RED_NANMAX || is_arg ||
                       (op == IR_RED_FUNC && !n->u.reduce.combine.init);
    if (n->u.reduce.axis < 0 && (op == IR_RED_FUNC || is_arg) && on_team(cg) && m.ndim > 0) {
        if (is_arg) {
            LLVMValueRef empty = LLVMConstInt(cg->i1, 0, 0);
            for (int d = 0; d < m.ndim; d++)
                empty = LLVMBuildOr(cg->b, empty, LLVMBuildICmp(cg->b, LLVMIntEQ, m.dims[d], cg_i64(cg, 0), ""), "");
            LLVMValueRef extra[1] = {cg_i64(cg, RT_VAL_EMPTY_REDUCE)};
            cg_raise_if(cg, empty, "rt_raise_value", n->pos, extra, 1);
        }
        return reduce_all_special_on_team(cg, &m, dt, n);
    }
    if (n->u.reduce.axis < 0 && op == IR_RED_FUNC) {
        const IrCombine *c = &n->u.reduce.combine;
        LLVMTypeRef at = cg_type(cg, c->acc_param->type);
        m.sink = SINK_REDUCE_ALL;
        m.acc = cg_alloca(cg, at, "acc");
        if (c->init) {
            LLVMBuildStore(cg->b, cg_expr(cg, c->init), m.acc);
        } else {
            LLVMBuildStore(cg->b, LLVMConstNull(at), m.acc);
            m.started = cg_alloca(cg, cg->i1, "started");
            LLVMBuildStore(cg->b, LLVMConstInt(cg->i1, 0, 0), m.started);
        }
        run_map(cg, &m, true, false);
        if (m.started) {
            LLVMValueRef extra[1] = {cg_i64(cg, RT_VAL_EMPTY_REDUCE)};
            cg_raise_if(cg, LLVMBuildNot(cg->b, LLVMBuildLoad2(cg->b, cg->i1, m.started, ""), ""), "rt_raise_value", n->pos, extra, 1);
        }
        return LLVMBuildLoad2(cg->b, at, m.acc, "");
    }
    if (n->u.reduce.axis < 0) {
        if (needs_items) {
            LLVMValueRef empty = LLVMConstInt(cg->i1, 0, 0);
            for (int d = 0; d < m.ndim; d++)
                empty = LLVMBuildOr(cg->b, empty, LLVMBuildICmp(cg->b, LLVMIntEQ, m.dims[d], cg_i64(cg, 0), ""), "");
            LLVMValueRef extra[1] = {cg_i64(cg, RT_VAL_EMPTY_REDUCE)};
            cg_raise_if(cg, empty, "rt_raise_value", n->pos, extra, 1);
        }
        m.sink = is_arg ? SINK_ARG_ALL : SINK_REDUCE_ALL;
        m.acc = cg_alloca(cg, cg_type(cg, ir_type_scalar(dt)), "acc");
        LLVMBuildStore(cg->b, red_identity(cg, op, dt), m.acc);
        if (is_arg) {
            m.arg_index = cg_alloca(cg, cg->i64, "argidx");
            LLVMBuildStore(cg->b, cg_i64(cg, 0), m.arg_index);
        }
        if (on_team(cg) && !is_arg && m.ndim > 0) return reduce_on_team(cg, &m, dt);
        run_map(cg, &m, true, !is_arg);
        if (is_arg) return LLVMBuildLoad2(cg->b, cg->i64, m.arg_index, "");
        return LLVMBuildLoad2(cg->b, cg_type(cg, ir_type_scalar(dt)), m.acc, "");
    }
    /* along an axis: the result starts at the identity, and the input is walked in its own order */
    int axis = n->u.reduce.axis;
    LLVMValueRef odims[MAX_DIMS];
    int o = 0;
    for (int d = 0; d < m.ndim; d++)
        if (d != axis) odims[o++] = m.dims[d];
    if (needs_items) {
        LLVMValueRef extra[1] = {cg_i64(cg, RT_VAL_EMPTY_REDUCE)};
        LLVMValueRef osize = cg_i64(cg, 1);
        for (int d = 0; d < o; d++) osize = LLVMBuildMul(cg->b, osize, odims[d], "");
        LLVMValueRef empty = LLVMBuildAnd(cg->b, LLVMBuildICmp(cg->b, LLVMIntEQ, m.dims[axis], cg_i64(cg, 0), ""),
                                          LLVMBuildICmp(cg->b, LLVMIntSGT, osize, cg_i64(cg, 0), ""), "");
        cg_raise_if(cg, empty, "rt_raise_value", n->pos, extra, 1);
    }
    m.out = n->u.reduce.out ? cg_expr(cg, n->u.reduce.out) : cg_new_array(cg, n->type->dtype, o, odims, n->pos);
    m.out_type = n->type;
    if (is_arg) {
        /* the best value so far for each output element, in a scratch array freed with the call */
        m.best = cg_new_array(cg, dt, o, odims, n->pos);
        fill_array(cg, m.best, ir_type_array(dt, o, IR_LAYOUT_C), odims, o, identity_const(op, dt));
        IrNode zero = {.kind = IR_CONST, .type = ir_type_scalar(IR_DT_INT64)};
        fill_array(cg, m.out, n->type, odims, o, zero);
        m.sink = SINK_ARG_AXIS;
        m.red_axis = axis;
        /* along an axis other than the first, each row of the output is one thread's alone */
        if (on_team(cg)) run_axis_on_team(cg, &m);
        else run_map(cg, &m, false, false);
        return m.out;
    }
    if (op == IR_RED_FUNC && n->u.reduce.combine.init) {
        /* every line starts from init (evaluated once per element: it is a variable or constant) */
        IrNode fmap = {.kind = IR_MAP, .type = n->type};
        fmap.u.map.body = n->u.reduce.combine.init;
        MapIn fill = {.sink = SINK_STORE, .out = m.out, .out_type = n->type, .ndim = o, .map = &fmap};
        for (int d = 0; d < o; d++) fill.dims[d] = odims[d];
        if (o > 0) cg_loop_nest(cg, o, odims, nd_body, &fill, false);
    } else if (op != IR_RED_FUNC) {
        fill_array(cg, m.out, n->type, odims, o, identity_const(op, dt));
    }
    m.sink = SINK_REDUCE_AXIS;
    m.red_axis = axis;
    if (on_team(cg)) run_axis_on_team(cg, &m);
    else run_map(cg, &m, false, false);
    return m.out;
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
    LLVMValueRef p = elem_ptr(cg, ot, f->out, idx);
    store_elem(cg, f->dt, p, red_combine(cg, f->op, f->dt, f->offset, load_elem(cg, f->dt, p)));
}

/* The flattened cumsum/cumprod on the team, in two passes over the same chunks: each thread scans its chunk
 * from the identity and leaves its total; the totals' running combination gives each chunk its offset; each
 * thread then combines its offset into its chunk. */
static LLVMValueRef scan_on_team(Cg *cg, MapIn *m, const IrNode *n)
{
    IrDtype dt = n->type->dtype;
    LLVMTypeRef et = cg_type(cg, ir_type_scalar(dt)), pt = LLVMArrayType(et, RT_MAX_THREADS);
    LLVMValueRef ident = red_identity(cg, m->red_op, dt);
    LLVMValueRef totals = cg_alloca(cg, pt, "totals"), offsets = cg_alloca(cg, pt, "offsets");
    LLVMValueRef inner = cg_i64(cg, 1);
    for (int d = 1; d < m->ndim; d++) inner = LLVMBuildMul(cg->b, inner, m->dims[d], "");
    LLVMValueRef work = map_work(cg, m, m->map->u.map.body), rows = m->dims[0];
    partials_on_team(cg, m, dt, totals, false); /* pass 1: each chunk scanned from the identity, its total left */
    /* offsets[t] = totals[0] op ... op totals[t-1] */
    LLVMValueRef run = ident;
    for (int t = 0; t < RT_MAX_THREADS; t++) {
        LLVMValueRef ix[2] = {cg_i64(cg, 0), cg_i64(cg, t)};
        LLVMBuildStore(cg->b, run, LLVMBuildGEP2(cg->b, pt, offsets, ix, 2, ""));
        run = red_combine(cg, m->red_op, dt, run, LLVMBuildLoad2(cg->b, et, LLVMBuildGEP2(cg->b, pt, totals, ix, 2, ""), ""));
    }
    /* pass 2: the same chunks (same n and work, so the same decision and partition) */
    CgOutline o2 = {0};
    int cout = cg_capture(&o2, m->out), coff = cg_capture(&o2, offsets), cinner = cg_capture(&o2, inner);
    cg_outline_begin(cg, &o2, NULL, 0, NULL);
    cg->par_depth++;
    LLVMValueRef ti[2] = {cg_i64(cg, 0), LLVMBuildZExt(cg->b, o2.tid, cg->i64, "")};
    ScanFix fix = {m->red_op, dt, cg_outline_get(&o2, cout),
                   LLVMBuildLoad2(cg->b, et, LLVMBuildGEP2(cg->b, pt, cg_outline_get(&o2, coff), ti, 2, ""), "")};
    LLVMValueRef in2 = cg_outline_get(&o2, cinner);
    LLVMValueRef hi = LLVMBuildMul(cg->b, o2.hi, in2, "");
    cg_loop_nest_from(cg, 1, &hi, LLVMBuildMul(cg->b, o2.lo, in2, ""), hi, scan_fix_body, &fix, false);
    cg->par_depth--;
    cg_outline_end(cg, &o2, rows, work);
    return m->out;
}

LLVMValueRef cg_scan(Cg *cg, const IrNode *n)
{
    const IrNode *map = as_map(cg, n->u.scan.input);
    IrDtype dt = map->u.map.body->type->dtype;
    MapIn m = {.red_op = n->u.scan.op, .out_type = n->type, .combine = &n->u.scan.combine};
    if (!prepare_inputs(cg, &m, map, NULL, map->type->ndim)) return LLVMGetUndef(cg_type(cg, n->type));
    if (n->u.scan.axis < 0) {
        LLVMValueRef total = cg_i64(cg, 1);
        for (int d = 0; d < m.ndim; d++) total = LLVMBuildMul(cg->b, total, m.dims[d], "");
        m.out = cg_new_array(cg, n->type->dtype, 1, &total, n->pos);
        m.acc = cg_alloca(cg, cg_type(cg, ir_type_scalar(n->type->dtype)), "acc");
        if (m.red_op == IR_RED_FUNC && n->u.scan.combine.init) {
            LLVMBuildStore(cg->b, cg_expr(cg, n->u.scan.combine.init), m.acc); /* combined into every element */
        } else if (m.red_op == IR_RED_FUNC) {
            LLVMBuildStore(cg->b, LLVMConstNull(cg_type(cg, ir_type_scalar(n->type->dtype))), m.acc);
            m.started = cg_alloca(cg, cg->i1, "started");
            LLVMBuildStore(cg->b, LLVMConstInt(cg->i1, 0, 0), m.started);
        } else {
            LLVMBuildStore(cg->b, red_identity(cg, m.red_op, dt), m.acc);
        }
        m.sink = SINK_SCAN_ALL;
        if (on_team(cg) && m.red_op != IR_RED_FUNC && m.ndim > 0) return scan_on_team(cg, &m, n);
        run_map(cg, &m, true, false);
        return m.out;
    }
    m.out = cg_new_array(cg, n->type->dtype, m.ndim, m.dims, n->pos);
    m.sink = SINK_SCAN_AXIS;
    m.red_axis = n->u.scan.axis;
    m.flat_ok_static = false;
    if (on_team(cg)) run_axis_on_team(cg, &m);
    else cg_loop_nest(cg, m.ndim, m.dims, nd_body, &m, false);
    return m.out;
}
