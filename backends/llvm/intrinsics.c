/* intrinsics.c: the typed IR's intrinsics (IrIntrinsic in ir.h, which states each one's arguments, result and
 * errors): views that rearrange axes, copies of data-dependent size, and the matrix product (a call of the
 * runtime's GEMM kernel). Those that make a new array fill the u.call.out that ir_explicit_alloc gave them, and
 * allocate only where it left none. */
#include <string.h>
#include "cg.h"

/* The call's out, or a new array of its type with shape dims where ir_explicit_alloc left it none. */
static LLVMValueRef result_array(Cg *cg, const IrNode *n, LLVMValueRef *dims)
{
    if (n->u.call.out) return cg_expr(cg, n->u.call.out);
    return cg_new_array(cg, n->type->dtype, n->type->ndim, dims, n->pos);
}

/* the extra of RT_ERR_SHAPE with dimension 0 is matmul's: {a's size, b's size, 0} */
static LLVMValueRef core_dim(Cg *cg, const IrNode *n)
{
    LLVMValueRef k = cg_expr(cg, n->u.call.args[0]), kb = cg_expr(cg, n->u.call.args[1]);
    LLVMValueRef extra[3] = {k, kb, cg_i64(cg, 0)};
    cg_raise_if(cg, LLVMBuildICmp(cg->b, LLVMIntNE, k, kb, ""), RT_ERR_SHAPE, n->pos, extra, 3);
    return k;
}

static LLVMValueRef matmul(Cg *cg, const IrNode *n)
{
    LLVMValueRef a = cg_expr(cg, n->u.call.args[0]), b = cg_expr(cg, n->u.call.args[1]);
    LLVMValueRef m = cg_array_dim(cg, a, 0), k = cg_array_dim(cg, a, 1);
    LLVMValueRef kb = cg_array_dim(cg, b, 0), nn = cg_array_dim(cg, b, 1);
    LLVMValueRef extra[3] = {k, kb, cg_i64(cg, 0)};
    cg_raise_if(cg, LLVMBuildICmp(cg->b, LLVMIntNE, k, kb, ""), RT_ERR_SHAPE, n->pos, extra, 3);
    LLVMValueRef dims[2] = {m, nn};
    IrDtype dt = n->type->dtype;
    LLVMValueRef c = result_array(cg, n, dims);
    if (dt == IR_DT_FLOAT16) { /* through float32 copies (runtime.h), on the team where the node is */
        LLVMTypeRef params[12] = {cg->ptr, cg->i32, cg->ptr, cg->i64, cg->i64, cg->ptr, cg->i64, cg->i64, cg->ptr, cg->i64, cg->i64, cg->i64};
        LLVMValueRef args[12] = {cg->rtctx, LLVMConstInt(cg->i32, cg_on_team(cg, n), 0), cg_array_data(cg, a),
                                 cg_array_stride(cg, a, 0), cg_array_stride(cg, a, 1), cg_array_data(cg, b),
                                 cg_array_stride(cg, b, 0), cg_array_stride(cg, b, 1), cg_array_data(cg, c), m, nn, k};
        cg_check_status(cg, cg_call_rt(cg, "rt_gemm_f16", cg->i32, params, args, 12));
        return c;
    }
    /* float32/float64: the runtime picks the BLAS or the own kernel at run time (no address in the code) */
    LLVMTypeRef params[13] = {cg->ptr, cg->i32, cg->i32, cg->ptr, cg->i64, cg->i64, cg->ptr, cg->i64, cg->i64, cg->ptr, cg->i64, cg->i64, cg->i64};
    LLVMValueRef args[13] = {cg->rtctx, LLVMConstInt(cg->i32, cg_on_team(cg, n), 0), LLVMConstInt(cg->i32, dt == IR_DT_FLOAT32, 0),
                             cg_array_data(cg, a), cg_array_stride(cg, a, 0), cg_array_stride(cg, a, 1),
                             cg_array_data(cg, b), cg_array_stride(cg, b, 0), cg_array_stride(cg, b, 1),
                             cg_array_data(cg, c), m, nn, k};
    cg_check_status(cg, cg_call_rt(cg, "rt_matmul", cg->i32, params, args, 13));
    return c;
}

/* Whether an axis reduction is typespec's float matrix-vector product (linalg.c): A @ x is reduce[add] along axis
 * 1 of map(*, A, x), A 2-d and x 1-d; x @ B along axis 0 of map(*, x[:, None], B), both 2-d (the first a column
 * only where its stride along axis 1 is 0: checked at run time). One dtype, float32 or float64. */
typedef enum { GEMV_NONE, GEMV_ROWS, GEMV_COLS } GemvForm;

static GemvForm gemv_form(const IrNode *n)
{
    if (n->u.reduce.op != IR_RED_ADD || n->u.reduce.axis < 0) return GEMV_NONE;
    const IrNode *map = n->u.reduce.input;
    if (map->kind != IR_MAP || map->type->ndim != 2 || map->u.map.ninputs != 2 || map->u.map.nparams != 2)
        return GEMV_NONE;
    const IrNode *body = map->u.map.body;
    IrDtype dt = body->type->dtype;
    if ((dt != IR_DT_FLOAT32 && dt != IR_DT_FLOAT64) || n->type->dtype != dt || body->kind != IR_BINOP ||
        body->u.binop.op != IR_OP_MUL)
        return GEMV_NONE;
    const IrType *t0 = map->u.map.inputs[0]->type, *t1 = map->u.map.inputs[1]->type;
    if (t0->kind != IR_TY_ARRAY || t1->kind != IR_TY_ARRAY || t0->dtype != dt || t1->dtype != dt) return GEMV_NONE;
    const IrNode *l = body->u.binop.lhs, *r = body->u.binop.rhs;
    if (l->kind != IR_VAR || r->kind != IR_VAR || l->u.var.var != map->u.map.params[0] ||
        r->u.var.var != map->u.map.params[1])
        return GEMV_NONE;
    if (n->u.reduce.axis == 1 && t0->ndim == 2 && t1->ndim == 1) return GEMV_ROWS;
    if (n->u.reduce.axis == 0 && t0->ndim == 2 && t1->ndim == 2) return GEMV_COLS;
    return GEMV_NONE;
}

LLVMBasicBlockRef cg_reduce_by_blas(Cg *cg, const IrNode *n, const CgMap *m)
{
    GemvForm form = gemv_form(n);
    if (form == GEMV_NONE) return NULL;
    IrDtype dt = n->type->dtype;
    LLVMValueRef es = cg_i64(cg, ir_dtype_size(dt)), zero = cg_i64(cg, 0), one = cg_i64(cg, 1);
    LLVMValueRef offer = LLVMBuildICmp(cg->b, LLVMIntEQ, cg_array_stride(cg, m->out, 0), es, ""); /* C contiguous */
    LLVMValueRef A = cg_array_data(cg, m->vals[0]), B = cg_array_data(cg, m->vals[1]);
    LLVMValueRef args[14] = {cg->rtctx, LLVMConstInt(cg->i32, cg_on_team(cg, n), 0),
                             LLVMConstInt(cg->i32, dt == IR_DT_FLOAT32, 0)};
    if (form == GEMV_ROWS) { /* (m x k) @ (k x 1): x's stride along k is B's first */
        LLVMValueRef rest[10] = {A, m->bstrides[0][0], m->bstrides[0][1], B, m->bstrides[1][0], zero,
                                 cg_array_data(cg, m->out), m->dims[0], one, m->dims[1]};
        memcpy(args + 3, rest, sizeof rest);
    } else { /* (1 x k) @ (k x n): x[:, None]'s stride along k is A's second */
        LLVMValueRef column = LLVMBuildOr(cg->b, LLVMBuildICmp(cg->b, LLVMIntEQ, m->bstrides[0][1], zero, ""),
                                          LLVMBuildICmp(cg->b, LLVMIntSLE, m->dims[1], one, ""), "");
        offer = LLVMBuildAnd(cg->b, offer, column, "");
        LLVMValueRef rest[10] = {A, zero, m->bstrides[0][0], B, m->bstrides[1][0], m->bstrides[1][1],
                                 cg_array_data(cg, m->out), one, m->dims[1], m->dims[0]};
        memcpy(args + 3, rest, sizeof rest);
    }
    LLVMValueRef taken = cg_alloca(cg, cg->i32, "blas_taken");
    LLVMBuildStore(cg->b, LLVMConstInt(cg->i32, 0, 0), taken);
    args[13] = taken;
    LLVMBasicBlockRef ask = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "blas_ask");
    LLVMBasicBlockRef asked = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "blas_asked");
    LLVMBuildCondBr(cg->b, offer, ask, asked);
    LLVMPositionBuilderAtEnd(cg->b, ask);
    LLVMTypeRef params[14] = {cg->ptr, cg->i32, cg->i32, cg->ptr, cg->i64, cg->i64, cg->ptr, cg->i64, cg->i64,
                              cg->ptr, cg->i64, cg->i64, cg->i64, cg->ptr};
    cg_check_status(cg, cg_call_rt(cg, "rt_blas_matmul", cg->i32, params, args, 14));
    LLVMBuildBr(cg->b, asked);
    LLVMPositionBuilderAtEnd(cg->b, asked);
    LLVMValueRef by_blas = LLVMBuildICmp(cg->b, LLVMIntNE, LLVMBuildLoad2(cg->b, cg->i32, taken, ""),
                                         LLVMConstInt(cg->i32, 0, 0), "");
    LLVMBasicBlockRef own = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "own_loop");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, "blas_done");
    LLVMBuildCondBr(cg->b, by_blas, done, own);
    LLVMPositionBuilderAtEnd(cg->b, own);
    return done;
}

/* reshape's dims (args from `first` on) with a -1 made the size it stands for, into dims; returns whether they are
 * wrong for x (reshape's ValueError). */
static LLVMValueRef reshape_dims(Cg *cg, const IrNode *n, int first, LLVMValueRef x, LLVMValueRef *dims)
{
    const IrType *xt = n->u.call.args[0]->type;
    int nd = n->u.call.nargs - first;
    LLVMValueRef total = cg_i64(cg, 1);
    for (int d = 0; d < xt->ndim; d++) total = LLVMBuildMul(cg->b, total, cg_array_dim(cg, x, d), "");
    LLVMValueRef known = cg_i64(cg, 1), nneg = cg_i64(cg, 0), bad = LLVMConstInt(cg->i1, 0, 0);
    for (int d = 0; d < nd; d++) {
        dims[d] = cg_expr(cg, n->u.call.args[first + d]);
        LLVMValueRef infer = LLVMBuildICmp(cg->b, LLVMIntEQ, dims[d], cg_i64(cg, -1), "");
        known = LLVMBuildMul(cg->b, known, LLVMBuildSelect(cg->b, infer, cg_i64(cg, 1), dims[d], ""), "");
        nneg = LLVMBuildAdd(cg->b, nneg, LLVMBuildZExt(cg->b, infer, cg->i64, ""), "");
        bad = LLVMBuildOr(cg->b, bad, LLVMBuildICmp(cg->b, LLVMIntSLT, dims[d], cg_i64(cg, -1), ""), "");
    }
    LLVMValueRef known_zero = LLVMBuildICmp(cg->b, LLVMIntEQ, known, cg_i64(cg, 0), "");
    LLVMValueRef inferred = LLVMBuildSelect(cg->b, known_zero, cg_i64(cg, 0),
                                            LLVMBuildSDiv(cg->b, total, LLVMBuildSelect(cg->b, known_zero, cg_i64(cg, 1), known, ""), ""), "");
    LLVMValueRef prod = cg_i64(cg, 1);
    for (int d = 0; d < nd; d++) {
        LLVMValueRef infer = LLVMBuildICmp(cg->b, LLVMIntEQ, dims[d], cg_i64(cg, -1), "");
        dims[d] = LLVMBuildSelect(cg->b, infer, inferred, dims[d], "");
        prod = LLVMBuildMul(cg->b, prod, dims[d], "");
    }
    bad = LLVMBuildOr(cg->b, bad, LLVMBuildICmp(cg->b, LLVMIntUGT, nneg, cg_i64(cg, 1), ""), "");
    /* a -1 beside a 0 stands for no size in particular: NumPy refuses it */
    bad = LLVMBuildOr(cg->b, bad, LLVMBuildAnd(cg->b, known_zero, LLVMBuildICmp(cg->b, LLVMIntNE, nneg, cg_i64(cg, 0), ""), ""), "");
    return LLVMBuildOr(cg->b, bad, LLVMBuildICmp(cg->b, LLVMIntNE, prod, total, ""), "");
}

/* rt_reshape_view(x's shape and strides, dims, new strides into *strides): whether NumPy's reshape is a view */
static LLVMValueRef reshape_view_strides(Cg *cg, LLVMValueRef x, int xnd, IrDtype dt, LLVMValueRef *dims, int nd,
                                         int contiguous_only, LLVMValueRef *strides)
{
    LLVMTypeRef old_arr = LLVMArrayType(cg->i64, (unsigned)xnd), new_arr = LLVMArrayType(cg->i64, (unsigned)nd);
    LLVMValueRef shape = cg_alloca(cg, old_arr, "reshape_shape"), old = cg_alloca(cg, old_arr, "reshape_strides");
    LLVMValueRef want = cg_alloca(cg, new_arr, "reshape_dims"), got = cg_alloca(cg, new_arr, "reshape_new_strides");
    for (int d = 0; d < xnd; d++) {
        LLVMValueRef at[2] = {cg_i64(cg, 0), cg_i64(cg, d)};
        LLVMBuildStore(cg->b, cg_array_dim(cg, x, d), LLVMBuildGEP2(cg->b, old_arr, shape, at, 2, ""));
        LLVMBuildStore(cg->b, cg_array_stride(cg, x, d), LLVMBuildGEP2(cg->b, old_arr, old, at, 2, ""));
    }
    for (int d = 0; d < nd; d++) {
        LLVMValueRef at[2] = {cg_i64(cg, 0), cg_i64(cg, d)};
        LLVMBuildStore(cg->b, dims[d], LLVMBuildGEP2(cg->b, new_arr, want, at, 2, ""));
    }
    LLVMTypeRef params[8] = {cg->i64, cg->ptr, cg->ptr, cg->i64, cg->i64, cg->ptr, cg->ptr, cg->i32};
    LLVMValueRef args[8] = {cg_i64(cg, xnd), shape, old, cg_i64(cg, ir_dtype_size(dt)), cg_i64(cg, nd), want, got,
                            LLVMConstInt(cg->i32, (unsigned)contiguous_only, 0)};
    LLVMValueRef views = cg_call_rt(cg, "rt_reshape_view", cg->i32, params, args, 8);
    for (int d = 0; strides && d < nd; d++) {
        LLVMValueRef at[2] = {cg_i64(cg, 0), cg_i64(cg, d)};
        strides[d] = LLVMBuildLoad2(cg->b, cg->i64, LLVMBuildGEP2(cg->b, new_arr, got, at, 2, ""), "");
    }
    return LLVMBuildICmp(cg->b, LLVMIntNE, views, LLVMConstInt(cg->i32, 0, 0), "");
}

/* reshape(x, dims...): a view of x with new dims, one of which may be -1 (inferred); ir.h says which strides. */
static LLVMValueRef reshape(Cg *cg, const IrNode *n)
{
    const IrType *xt = n->u.call.args[0]->type;
    LLVMValueRef x = cg_expr(cg, n->u.call.args[0]);
    int nd = n->type->ndim;
    LLVMValueRef dims[IR_MAX_DIMS], strides[IR_MAX_DIMS];
    LLVMValueRef bad = reshape_dims(cg, n, 1, x, dims);
    LLVMValueRef extra[1] = {cg_i64(cg, RT_VAL_RESHAPE)};
    cg_raise_if(cg, bad, RT_ERR_VALUE, n->pos, extra, 1);
    if (xt->layout != IR_LAYOUT_C && xt->ndim != 1) {
        reshape_view_strides(cg, x, xt->ndim, xt->dtype, dims, nd, 0, strides);
    } else {
        /* the element step: x's own for a 1-D x of any stride (its itemsize when x is C-contiguous) */
        LLVMValueRef stride = xt->ndim == 1 ? cg_array_stride(cg, x, 0) : cg_i64(cg, ir_dtype_size(n->type->dtype));
        for (int d = nd - 1; d >= 0; d--) {
            strides[d] = stride;
            stride = LLVMBuildMul(cg->b, stride, dims[d], "");
        }
    }
    LLVMValueRef agg = LLVMGetUndef(cg_type(cg, n->type));
    agg = LLVMBuildInsertValue(cg->b, agg, cg_array_data(cg, x), 0, "");
    agg = LLVMBuildInsertValue(cg->b, agg, LLVMBuildExtractValue(cg->b, x, 1, ""), 1, "");
    LLVMValueRef dv = LLVMGetUndef(LLVMArrayType(cg->i64, (unsigned)nd)), sv = dv;
    for (int d = 0; d < nd; d++) {
        dv = LLVMBuildInsertValue(cg->b, dv, dims[d], (unsigned)d, "");
        sv = LLVMBuildInsertValue(cg->b, sv, strides[d], (unsigned)d, "");
    }
    agg = LLVMBuildInsertValue(cg->b, agg, dv, 2, "");
    return LLVMBuildInsertValue(cg->b, agg, sv, 3, "");
}

/* reshape_views(x, contiguous_only, dims...): the dims wrong (reshape raises on x), or rt_reshape_view's answer */
static LLVMValueRef reshape_views(Cg *cg, const IrNode *n)
{
    const IrType *xt = n->u.call.args[0]->type;
    LLVMValueRef x = cg_expr(cg, n->u.call.args[0]);
    int nd = n->u.call.nargs - 2, contiguous_only = (int)n->u.call.args[1]->u.konst.i;
    LLVMValueRef dims[IR_MAX_DIMS];
    LLVMValueRef bad = reshape_dims(cg, n, 2, x, dims);
    LLVMValueRef views = reshape_view_strides(cg, x, xt->ndim, xt->dtype, dims, nd, contiguous_only, NULL);
    return LLVMBuildOr(cg->b, bad, views, "");
}

typedef struct CopyEnv {
    IrDtype dt;
    int ndim;
    LLVMValueRef src, dst_data, dst_strides[IR_MAX_DIMS], src_strides[IR_MAX_DIMS];
} CopyEnv;

static void copy_body(Cg *cg, LLVMValueRef *idx, void *env)
{
    CopyEnv *e = env;
    LLVMValueRef so = cg_i64(cg, 0), dof = cg_i64(cg, 0);
    for (int d = 0; d < e->ndim; d++) {
        so = LLVMBuildAdd(cg->b, so, LLVMBuildMul(cg->b, idx[d], e->src_strides[d], ""), "");
        dof = LLVMBuildAdd(cg->b, dof, LLVMBuildMul(cg->b, idx[d], e->dst_strides[d], ""), "");
    }
    LLVMValueRef v = cg_load_mem(cg, e->dt, LLVMBuildGEP2(cg->b, cg->i8, cg_array_data(cg, e->src), &so, 1, ""));
    cg_store_mem(cg, e->dt, LLVMBuildGEP2(cg->b, cg->i8, e->dst_data, &dof, 1, ""), v);
}

void cg_copy_array(Cg *cg, LLVMValueRef dst, LLVMValueRef src, const IrType *t, LLVMValueRef *dims)
{
    CopyEnv e = {.dt = t->dtype, .ndim = t->ndim, .src = src, .dst_data = cg_array_data(cg, dst)};
    for (int d = 0; d < t->ndim; d++) {
        e.src_strides[d] = cg_array_stride(cg, src, d);
        e.dst_strides[d] = cg_array_stride(cg, dst, d);
    }
    cg_loop_nest(cg, t->ndim, dims, copy_body, &e, false);
}

/* concatenate(parts..., axis): a new array, each part copied into its slab along the axis. */
static LLVMValueRef concatenate(Cg *cg, const IrNode *n)
{
    int np = n->u.call.nargs - 1, nd = n->type->ndim;
    int axis = (int)n->u.call.args[np]->u.konst.i;
    LLVMValueRef parts[IR_MAX_TUPLE]; /* the parts are a tuple's items */
    for (int i = 0; i < np; i++) parts[i] = cg_expr(cg, n->u.call.args[i]);
    LLVMValueRef dims[IR_MAX_DIMS], bad = LLVMConstInt(cg->i1, 0, 0);
    for (int d = 0; d < nd; d++) dims[d] = cg_array_dim(cg, parts[0], d);
    dims[axis] = cg_i64(cg, 0);
    for (int i = 0; i < np; i++) {
        dims[axis] = LLVMBuildAdd(cg->b, dims[axis], cg_array_dim(cg, parts[i], axis), "");
        for (int d = 0; d < nd; d++)
            if (d != axis)
                bad = LLVMBuildOr(cg->b, bad, LLVMBuildICmp(cg->b, LLVMIntNE, cg_array_dim(cg, parts[i], d), dims[d], ""), "");
    }
    LLVMValueRef extra[1] = {cg_i64(cg, RT_VAL_CONCAT)};
    cg_raise_if(cg, bad, RT_ERR_VALUE, n->pos, extra, 1);
    LLVMValueRef out = result_array(cg, n, dims);
    LLVMValueRef offset = cg_i64(cg, 0);
    for (int i = 0; i < np; i++) {
        CopyEnv e = {.dt = n->type->dtype, .ndim = nd, .src = parts[i]};
        LLVMValueRef pdims[IR_MAX_DIMS];
        for (int d = 0; d < nd; d++) {
            pdims[d] = cg_array_dim(cg, parts[i], d);
            e.src_strides[d] = cg_array_stride(cg, parts[i], d);
            e.dst_strides[d] = cg_array_stride(cg, out, d);
        }
        LLVMValueRef off = LLVMBuildMul(cg->b, offset, e.dst_strides[axis], "");
        e.dst_data = LLVMBuildGEP2(cg->b, cg->i8, cg_array_data(cg, out), &off, 1, "");
        cg_loop_nest(cg, nd, pdims, copy_body, &e, false);
        offset = LLVMBuildAdd(cg->b, offset, pdims[axis], "");
    }
    return out;
}

typedef struct MaskEnv {
    const IrType *at;
    LLVMValueRef a, mask, count, out;
    bool fill;
    LLVMValueRef value; /* a[mask] = value: store it where the mask is set (count, out unused) */
    LLVMValueRef values; /* a[mask] = values: the k-th set element gets values[k] (values[0] if it has one) */
    const IrType *vt;
    LLVMValueRef one_value;
} MaskEnv;

static void mask_body(Cg *cg, LLVMValueRef *idx, void *env)
{
    MaskEnv *e = env;
    LLVMValueRef mo = cg_i64(cg, 0), ao = cg_i64(cg, 0);
    for (int d = 0; d < e->at->ndim; d++) {
        mo = LLVMBuildAdd(cg->b, mo, LLVMBuildMul(cg->b, idx[d], cg_array_stride(cg, e->mask, d), ""), "");
        ao = LLVMBuildAdd(cg->b, ao, LLVMBuildMul(cg->b, idx[d], cg_array_stride(cg, e->a, d), ""), "");
    }
    LLVMValueRef m = cg_load_mem(cg, IR_DT_BOOL, LLVMBuildGEP2(cg->b, cg->i8, cg_array_data(cg, e->mask), &mo, 1, ""));
    LLVMValueRef on = LLVMBuildICmp(cg->b, LLVMIntNE, m, LLVMConstInt(cg->i8, 0, 0), "");
    if (e->value) {
        /* a select of the old and new values, stored always: a branch-free loop LLVM can vectorise */
        LLVMValueRef p = LLVMBuildGEP2(cg->b, cg->i8, cg_array_data(cg, e->a), &ao, 1, "");
        LLVMValueRef v = e->at->dtype == IR_DT_BOOL ? LLVMBuildZExt(cg->b, e->value, cg->i8, "") : e->value;
        cg_store_mem(cg, e->at->dtype, p, LLVMBuildSelect(cg->b, on, v, cg_load_mem(cg, e->at->dtype, p), ""));
        return;
    }
    LLVMValueRef k = LLVMBuildLoad2(cg->b, cg->i64, e->count, "");
    if (e->values) {
        LLVMBasicBlockRef yes = cg_new_bb(cg, "mask_on"), done = cg_new_bb(cg, "mask_next");
        LLVMBuildCondBr(cg->b, on, yes, done);
        LLVMPositionBuilderAtEnd(cg->b, yes);
        LLVMValueRef vk = LLVMBuildSelect(cg->b, e->one_value, cg_i64(cg, 0), k, "");
        LLVMValueRef vo = LLVMBuildMul(cg->b, vk, cg_array_stride(cg, e->values, 0), "");
        LLVMValueRef v = cg_load_mem(cg, e->vt->dtype, LLVMBuildGEP2(cg->b, cg->i8, cg_array_data(cg, e->values), &vo, 1, ""));
        if (e->vt->dtype == IR_DT_BOOL) v = LLVMBuildTrunc(cg->b, v, cg->i1, "");
        v = cg_cast(cg, v, ir_type_scalar(e->vt->dtype), ir_type_scalar(e->at->dtype));
        if (e->at->dtype == IR_DT_BOOL) v = LLVMBuildZExt(cg->b, v, cg->i8, "");
        cg_store_mem(cg, e->at->dtype, LLVMBuildGEP2(cg->b, cg->i8, cg_array_data(cg, e->a), &ao, 1, ""), v);
        LLVMBuildBr(cg->b, done);
        LLVMPositionBuilderAtEnd(cg->b, done);
    } else if (e->fill) {
        LLVMBasicBlockRef yes = cg_new_bb(cg, "mask_on"), done = cg_new_bb(cg, "mask_next");
        LLVMBuildCondBr(cg->b, on, yes, done);
        LLVMPositionBuilderAtEnd(cg->b, yes);
        LLVMValueRef v = cg_load_mem(cg, e->at->dtype, LLVMBuildGEP2(cg->b, cg->i8, cg_array_data(cg, e->a), &ao, 1, ""));
        LLVMValueRef oo = LLVMBuildMul(cg->b, k, cg_i64(cg, ir_dtype_size(e->at->dtype)), "");
        cg_store_mem(cg, e->at->dtype, LLVMBuildGEP2(cg->b, cg->i8, cg_array_data(cg, e->out), &oo, 1, ""), v);
        LLVMBuildBr(cg->b, done);
        LLVMPositionBuilderAtEnd(cg->b, done);
    }
    LLVMBuildStore(cg->b, LLVMBuildAdd(cg->b, k, LLVMBuildZExt(cg->b, on, cg->i64, ""), ""), e->count);
}

/* NumPy raises IndexError for a mask of another shape than the array's. */
static void check_mask_shape(Cg *cg, MaskEnv *e, LLVMValueRef *dims, IrPos pos)
{
    for (int d = 0; d < e->at->ndim; d++) {
        dims[d] = cg_array_dim(cg, e->a, d);
        LLVMValueRef extra[3] = {cg_array_dim(cg, e->mask, d), dims[d], cg_i64(cg, d)};
        cg_raise_if(cg, LLVMBuildICmp(cg->b, LLVMIntNE, dims[d], cg_array_dim(cg, e->mask, d), ""), RT_ERR_MASK, pos, extra, 3);
    }
}

/* a[mask] = value (a scalar, already of a's type): every element where the mask is set. */
void cg_mask_store(Cg *cg, const IrNode *target, LLVMValueRef value)
{
    const IrType *at = target->u.index.base->type;
    MaskEnv e = {.at = at, .a = cg_expr(cg, target->u.index.base), .mask = cg_expr(cg, target->u.index.items[0]),
                 .value = value};
    LLVMValueRef dims[IR_MAX_DIMS];
    check_mask_shape(cg, &e, dims, target->pos);
    cg_loop_nest(cg, at->ndim, dims, mask_body, &e, true);
}

/* a[mask] = values (1-D): the k-th set element, in C order, gets values[k]; values must have as many elements
 * as the mask has set, or one (NumPy's ValueError otherwise). Counted first, so nothing is written on error. */
void cg_mask_store_values(Cg *cg, const IrNode *target, const IrNode *values)
{
    const IrType *at = target->u.index.base->type;
    MaskEnv e = {.at = at, .a = cg_expr(cg, target->u.index.base), .mask = cg_expr(cg, target->u.index.items[0])};
    LLVMValueRef dims[IR_MAX_DIMS];
    check_mask_shape(cg, &e, dims, target->pos);
    e.count = cg_alloca(cg, cg->i64, "count");
    LLVMBuildStore(cg->b, cg_i64(cg, 0), e.count);
    cg_loop_nest(cg, at->ndim, dims, mask_body, &e, false);
    LLVMValueRef total = LLVMBuildLoad2(cg->b, cg->i64, e.count, "");
    e.values = cg_expr(cg, values);
    e.vt = values->type;
    LLVMValueRef nv = cg_array_dim(cg, e.values, 0);
    e.one_value = LLVMBuildICmp(cg->b, LLVMIntEQ, nv, cg_i64(cg, 1), "");
    LLVMValueRef fits = LLVMBuildOr(cg->b, e.one_value, LLVMBuildICmp(cg->b, LLVMIntEQ, nv, total, ""), "");
    LLVMValueRef extra[2] = {nv, total};
    cg_raise_if(cg, LLVMBuildNot(cg->b, fits, ""), RT_ERR_MASK_VALUES, target->pos, extra, 2);
    LLVMBuildStore(cg->b, cg_i64(cg, 0), e.count);
    cg_loop_nest(cg, at->ndim, dims, mask_body, &e, false);
}

/* a[mask]: copy the selected elements in C order into out (counted and allocated first where there is none). */
static LLVMValueRef mask_select(Cg *cg, const IrNode *n)
{
    const IrType *at = n->u.call.args[0]->type;
    MaskEnv e = {.at = at, .a = cg_expr(cg, n->u.call.args[0]), .mask = cg_expr(cg, n->u.call.args[1])};
    LLVMValueRef dims[IR_MAX_DIMS];
    check_mask_shape(cg, &e, dims, n->pos);
    e.count = cg_alloca(cg, cg->i64, "count");
    if (n->u.call.out) {
        e.out = cg_expr(cg, n->u.call.out);
    } else {
        LLVMBuildStore(cg->b, cg_i64(cg, 0), e.count);
        cg_loop_nest(cg, at->ndim, dims, mask_body, &e, false);
        LLVMValueRef total = LLVMBuildLoad2(cg->b, cg->i64, e.count, "");
        e.out = cg_new_array(cg, at->dtype, 1, &total, n->pos);
    }
    LLVMBuildStore(cg->b, cg_i64(cg, 0), e.count);
    e.fill = true;
    cg_loop_nest(cg, at->ndim, dims, mask_body, &e, false);
    return e.out;
}

/* raise(code, e0, e1, e2): the error record filled and the function left, always. The code after it (in a block
 * of its own) is never reached, but must be valid: it gets an undefined value of the node's type. */
static bool print_record(Cg *cg, const IrNode *n, int first);

static LLVMValueRef raise_error(Cg *cg, const IrNode *n)
{
    LLVMValueRef extra[3];
    RtErrCode code = (RtErrCode)n->u.call.args[0]->u.konst.i;
    for (int i = 0; i < 3; i++) extra[i] = cg_expr(cg, n->u.call.args[1 + i]);
    if (code == RT_ERR_RAISE) { /* a raise statement: its class and arguments, as strings of the names table */
        extra[0] = cg_i64(cg, rt_names_index(cg->names, n->u.call.name));
        extra[1] = cg_i64(cg, n->u.call.text ? rt_names_index(cg->names, n->u.call.text) : -1);
        if (ir_raise_recorded(n)) { /* arguments made at run time: a printed record, the call's last */
            if (!print_record(cg, n, 4)) return LLVMGetUndef(cg_type(cg, n->type));
            extra[1] = cg_i64(cg, -2);
            extra[2] = cg_i64(cg, 0);
        }
    }
    cg_raise_if(cg, LLVMConstInt(cg->i1, 1, 0), code, n->pos, extra, 3);
    LLVMTypeRef t = cg_type(cg, n->type);
    return LLVMGetUndef(t);
}

/* sort(x, axis, argsort): the runtime's merge sort of each line (rt_sort), into out. On the gpu backend's host
 * code x and out are device memory: rt_gpu_sort sorts a host copy. */
static LLVMValueRef sort(Cg *cg, const IrNode *n)
{
    const IrType *xt = n->u.call.args[0]->type;
    LLVMValueRef x = cg_expr(cg, n->u.call.args[0]);
    int nd = xt->ndim, axis = (int)n->u.call.args[1]->u.konst.i, argsort = (int)n->u.call.args[2]->u.konst.i;
    LLVMValueRef dims[IR_MAX_DIMS];
    LLVMTypeRef arr = LLVMArrayType(cg->i64, (unsigned)nd);
    LLVMValueRef shape = cg_alloca(cg, arr, "sort_shape"), strides = cg_alloca(cg, arr, "sort_strides");
    for (int d = 0; d < nd; d++) {
        dims[d] = cg_array_dim(cg, x, d);
        LLVMValueRef at[2] = {cg_i64(cg, 0), cg_i64(cg, d)};
        LLVMBuildStore(cg->b, dims[d], LLVMBuildGEP2(cg->b, arr, shape, at, 2, ""));
        LLVMBuildStore(cg->b, cg_array_stride(cg, x, d), LLVMBuildGEP2(cg->b, arr, strides, at, 2, ""));
    }
    LLVMValueRef out = result_array(cg, n, dims);
    IrDtype dt = xt->dtype;
    int kind = ir_dtype_is_float(dt) ? RT_SORT_FLOAT : ir_dtype_is_signed(dt) ? RT_SORT_SIGNED : RT_SORT_UNSIGNED;
    LLVMTypeRef params[9] = {cg->ptr, cg->i32, cg->i32, cg->ptr, cg->ptr, cg->ptr, cg->i32, cg->i32, cg->ptr};
    LLVMValueRef args[9] = {cg->rtctx, LLVMConstInt(cg->i32, (unsigned)RT_SORT_KEY(kind, ir_dtype_size(dt)), 0),
                            LLVMConstInt(cg->i32, (unsigned)argsort, 0), cg_array_data(cg, x), shape, strides,
                            LLVMConstInt(cg->i32, (unsigned)nd, 0), LLVMConstInt(cg->i32, (unsigned)axis, 0),
                            cg_array_data(cg, out)};
    cg_check_status(cg, cg_call_rt(cg, cg->gpu ? "rt_gpu_sort" : "rt_sort", cg->i32, params, args, 9));
    return out;
}

/* x sorts strictly before y (values of dtype dt as loaded from memory): NumPy's order, NaN after everything */
static LLVMValueRef sorts_before(Cg *cg, IrDtype dt, LLVMValueRef x, LLVMValueRef y)
{
    if (ir_dtype_is_float(dt)) {
        if (dt == IR_DT_FLOAT16) {
            x = LLVMBuildFPExt(cg->b, x, cg->f32, "");
            y = LLVMBuildFPExt(cg->b, y, cg->f32, "");
        }
        LLVMValueRef lt = LLVMBuildFCmp(cg->b, LLVMRealOLT, x, y, "");
        LLVMValueRef y_nan = LLVMBuildFCmp(cg->b, LLVMRealUNO, y, y, ""), x_num = LLVMBuildFCmp(cg->b, LLVMRealORD, x, x, "");
        return LLVMBuildOr(cg->b, lt, LLVMBuildAnd(cg->b, y_nan, x_num, ""), "");
    }
    return LLVMBuildICmp(cg->b, ir_dtype_is_signed(dt) ? LLVMIntSLT : LLVMIntULT, x, y, "");
}

/* search(a, v, right): bisection over [lo, hi), lo the answer */
static LLVMValueRef search(Cg *cg, const IrNode *n)
{
    IrDtype dt = n->u.call.args[0]->type->dtype;
    int right = (int)n->u.call.args[2]->u.konst.i;
    LLVMValueRef a = cg_expr(cg, n->u.call.args[0]), v = cg_expr(cg, n->u.call.args[1]);
    if (dt == IR_DT_BOOL) v = LLVMBuildZExt(cg->b, v, cg->i8, ""); /* as memory holds it */
    LLVMValueRef data = cg_array_data(cg, a), stride = cg_array_stride(cg, a, 0);
    LLVMValueRef lo = cg_alloca(cg, cg->i64, "search_lo"), hi = cg_alloca(cg, cg->i64, "search_hi");
    LLVMBuildStore(cg->b, cg_i64(cg, 0), lo);
    LLVMBuildStore(cg->b, cg_array_dim(cg, a, 0), hi);
    LLVMBasicBlockRef test = cg_new_bb(cg, "search_test"), step = cg_new_bb(cg, "search_step"), done = cg_new_bb(cg, "search_done");
    LLVMBuildBr(cg->b, test);
    LLVMPositionBuilderAtEnd(cg->b, test);
    LLVMValueRef l = LLVMBuildLoad2(cg->b, cg->i64, lo, ""), h = LLVMBuildLoad2(cg->b, cg->i64, hi, "");
    LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntSLT, l, h, ""), step, done);
    LLVMPositionBuilderAtEnd(cg->b, step);
    LLVMValueRef mid = LLVMBuildAdd(cg->b, l, LLVMBuildLShr(cg->b, LLVMBuildSub(cg->b, h, l, ""), cg_i64(cg, 1), ""), "");
    LLVMValueRef off = LLVMBuildMul(cg->b, mid, stride, "");
    LLVMValueRef x = cg_load_mem(cg, dt, LLVMBuildGEP2(cg->b, cg->i8, data, &off, 1, ""));
    /* left: go right of mid while a[mid] < v; right: while not v < a[mid] */
    LLVMValueRef go = right ? LLVMBuildNot(cg->b, sorts_before(cg, dt, v, x), "") : sorts_before(cg, dt, x, v);
    LLVMBuildStore(cg->b, LLVMBuildSelect(cg->b, go, LLVMBuildAdd(cg->b, mid, cg_i64(cg, 1), ""), l, ""), lo);
    LLVMBuildStore(cg->b, LLVMBuildSelect(cg->b, go, h, mid, ""), hi);
    LLVMBuildBr(cg->b, test);
    LLVMPositionBuilderAtEnd(cg->b, done);
    return LLVMBuildLoad2(cg->b, cg->i64, lo, "");
}

/* linalg(op, a[, b]): the runtime's LU or Cholesky (rt_linalg; on the gpu backend's host code rt_gpu_linalg,
 * on host copies of the device operands), its refusals raised at the node's line */
static LLVMValueRef linalg(Cg *cg, const IrNode *n)
{
    int op = (int)n->u.call.args[0]->u.konst.i;
    const IrType *at = n->u.call.args[1]->type;
    LLVMValueRef a = cg_expr(cg, n->u.call.args[1]);
    LLVMValueRef b = op == RT_LINALG_SOLVE ? cg_expr(cg, n->u.call.args[2]) : NULL;
    const IrType *bt = op == RT_LINALG_SOLVE ? n->u.call.args[2]->type : NULL;
    LLVMValueRef rows = cg_array_dim(cg, a, 0), cols = cg_array_dim(cg, a, 1);
    LLVMValueRef brows = b ? cg_array_dim(cg, b, 0) : cg_i64(cg, 0);
    LLVMValueRef bcols = b ? (bt->ndim == 2 ? cg_array_dim(cg, b, 1) : cg_i64(cg, 1)) : cg_i64(cg, 0);
    LLVMValueRef bs0 = b ? cg_array_stride(cg, b, 0) : cg_i64(cg, 0);
    LLVMValueRef bs1 = b && bt->ndim == 2 ? cg_array_stride(cg, b, 1) : cg_i64(cg, 0);
    LLVMValueRef out = NULL;
    if (op != RT_LINALG_DET) {
        LLVMValueRef dims[2] = {b ? brows : rows, b ? bcols : cols};
        out = result_array(cg, n, dims);
    }
    LLVMValueRef det = cg_alloca(cg, cg->f64, "det");
    LLVMTypeRef params[15] = {cg->ptr, cg->i32, cg->i32, cg->ptr, cg->i64, cg->i64, cg->i64, cg->i64,
                              cg->ptr, cg->i64, cg->i64, cg->i64, cg->i64, cg->ptr, cg->ptr};
    LLVMValueRef args[15] = {cg->rtctx, LLVMConstInt(cg->i32, (unsigned)op, 0),
                             LLVMConstInt(cg->i32, at->dtype == IR_DT_FLOAT32, 0), cg_array_data(cg, a),
                             cg_array_stride(cg, a, 0), cg_array_stride(cg, a, 1), rows, cols,
                             b ? cg_array_data(cg, b) : LLVMConstNull(cg->ptr), bs0, bs1, brows, bcols,
                             out ? cg_array_data(cg, out) : LLVMConstNull(cg->ptr), det};
    LLVMValueRef status = cg_call_rt(cg, cg->gpu ? "rt_gpu_linalg" : "rt_linalg", cg->i32, params, args, 15);
    LLVMBasicBlockRef ok = cg_new_bb(cg, "linalg_ran");
    LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntSLT, status, LLVMConstInt(cg->i32, 0, 1), ""), cg->err_bb, ok);
    LLVMPositionBuilderAtEnd(cg->b, ok);
    LLVMValueRef code = LLVMBuildSExt(cg->b, status, cg->i64, "");
    LLVMValueRef shape_extra[1] = {cg_i64(cg, RT_VAL_SOLVE_SHAPE)};
    cg_raise_if(cg, LLVMBuildICmp(cg->b, LLVMIntEQ, code, cg_i64(cg, RT_LINALG_SHAPE), ""), RT_ERR_VALUE, n->pos, shape_extra, 1);
    LLVMValueRef extra[1] = {code};
    cg_raise_if(cg, LLVMBuildICmp(cg->b, LLVMIntNE, code, cg_i64(cg, RT_LINALG_OK), ""), RT_ERR_LINALG, n->pos, extra, 1);
    if (out) return out;
    LLVMValueRef d = LLVMBuildLoad2(cg->b, cg->f64, det, "");
    return at->dtype == IR_DT_FLOAT32 ? LLVMBuildFPTrunc(cg->b, d, cg->f32, "") : d;
}

/* rng_new(has_seed, seed): the state in a buffer of the call (freed when it returns, like a temporary array), so
 * a generator outlives the frame or segment that made it; seeded by the runtime (ValueError for seed < 0). Host
 * memory on every backend: draws run in host code only (ir_check_random keeps them out of kernels). */
static LLVMValueRef rng_new(Cg *cg, const IrNode *n)
{
    LLVMValueRef seed = cg_expr(cg, n->u.call.args[1]);
    LLVMValueRef g = cg_host_scratch(cg, (int64_t)sizeof(RtRng));
    LLVMTypeRef params[3] = {cg->ptr, cg->i32, cg->i64};
    LLVMValueRef args[3] = {g, LLVMConstInt(cg->i32, (unsigned)n->u.call.args[0]->u.konst.i, 0), seed};
    LLVMValueRef status = LLVMBuildSExt(cg->b, cg_call_rt(cg, "rt_rng_seed", cg->i32, params, args, 3), cg->i64, "");
    LLVMValueRef extra[1] = {status};
    cg_raise_if(cg, LLVMBuildICmp(cg->b, LLVMIntNE, status, cg_i64(cg, 0), ""), RT_ERR_VALUE, n->pos, extra, 1);
    return g;
}

/* rng_draw(g, method, a, b, d0, ...): rt_rng_fill into out (or one scalar), its failures raised at the node's
 * line: an RT_VAL_* message as ValueError, RT_RNG_OVERFLOW as uniform's OverflowError. On the gpu backend out is
 * device memory: rt_gpu_rng_fill draws into host memory and copies the numbers over (the stream is the cpu's). */
static LLVMValueRef rng_draw(Cg *cg, const IrNode *n)
{
    int method = (int)n->u.call.args[1]->u.konst.i, nd = n->u.call.nargs - 4;
    bool ints = method == RT_RNG_INTEGERS || method == RT_RNG_INTEGERS_CLOSED;
    LLVMValueRef g = cg_expr(cg, n->u.call.args[0]);
    LLVMValueRef a = cg_expr(cg, n->u.call.args[2]), b = cg_expr(cg, n->u.call.args[3]);
    LLVMTypeRef arr = LLVMArrayType(cg->i64, (unsigned)(nd ? nd : 1));
    LLVMValueRef shape = cg_alloca(cg, arr, "rng_shape"), dims[IR_MAX_DIMS];
    for (int d = 0; d < nd; d++) {
        LLVMValueRef size = cg_expr(cg, n->u.call.args[4 + d]);
        LLVMValueRef at[2] = {cg_i64(cg, 0), cg_i64(cg, d)};
        LLVMBuildStore(cg->b, size, LLVMBuildGEP2(cg->b, arr, shape, at, 2, ""));
        dims[d] = LLVMBuildSelect(cg->b, LLVMBuildICmp(cg->b, LLVMIntSLT, size, cg_i64(cg, 0), ""), cg_i64(cg, 0), size, "");
    }
    IrDtype dt = n->type->dtype;
    LLVMValueRef out = nd ? result_array(cg, n, dims) : NULL;
    LLVMValueRef data = out ? cg_array_data(cg, out) : cg_alloca(cg, cg->i64, "rng_one");
    LLVMTypeRef params[11] = {cg->ptr, cg->i32, cg->i32, cg->f64, cg->f64, cg->i64, cg->i64, cg->ptr, cg->i32, cg->ptr,
                              cg->ptr};
    LLVMValueRef args[11] = {g, LLVMConstInt(cg->i32, (unsigned)method, 0), LLVMConstInt(cg->i32, (unsigned)ir_dtype_size(dt), 0),
                             ints ? LLVMConstReal(cg->f64, 0) : a, ints ? LLVMConstReal(cg->f64, 0) : b,
                             ints ? a : cg_i64(cg, 0), ints ? b : cg_i64(cg, 0), shape,
                             LLVMConstInt(cg->i32, (unsigned)nd, 0), data, cg->rtctx};
    bool device = cg->gpu && out;
    LLVMValueRef status = LLVMBuildSExt(cg->b, cg_call_rt(cg, device ? "rt_gpu_rng_fill" : "rt_rng_fill", cg->i32,
                                                          params, args, device ? 11 : 10), cg->i64, "");
    if (device) { /* a failed copy: the gpu's error, in ctx */
        LLVMBasicBlockRef ok = cg_new_bb(cg, "draw_copied");
        LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntEQ, status, cg_i64(cg, RT_RNG_COPY_FAILED), ""), cg->err_bb, ok);
        LLVMPositionBuilderAtEnd(cg->b, ok);
    }
    LLVMValueRef extra[3] = {status, cg_i64(cg, 0), cg_i64(cg, RT_OVF_RNG_RANGE)};
    cg_raise_if(cg, LLVMBuildICmp(cg->b, LLVMIntSGT, status, cg_i64(cg, 0), ""), RT_ERR_VALUE, n->pos, extra, 1);
    LLVMValueRef ovf[3] = {cg_i64(cg, 0), cg_i64(cg, 0), cg_i64(cg, RT_OVF_RNG_RANGE)};
    cg_raise_if(cg, LLVMBuildICmp(cg->b, LLVMIntEQ, status, cg_i64(cg, RT_RNG_OVERFLOW), ""), RT_ERR_OVERFLOW, n->pos, ovf, 3);
    if (out) return out;
    return LLVMBuildLoad2(cg->b, cg_type(cg, n->type), data, "");
}

/* A printed record (runtime.h's print section) of n's arguments from `first` on: the text's index in the names
 * table, then each value (int64 and float64 scalars, arrays: typespec made them so). Every value is evaluated
 * first, so one that raises leaves no record begun. An array of the gpu backend's host code is device memory,
 * which the runtime cannot read: a CompileError there. false with diag set. */
static bool print_record(Cg *cg, const IrNode *n, int first)
{
    for (int i = first; i < n->u.call.nargs; i++)
        if (cg->gpu && n->u.call.args[i]->type->kind == IR_TY_ARRAY) {
            lk_diag_set(cg->diag, LK_ERR_COMPILE, n->pos.file ? n->pos.file : cg->f->file, n->pos.line, n->pos.col,
                        "print() of an array (or an array in an exception's arguments) is not supported on the gpu "
                        "backend (its data is on the device): use its elements, or the cpu or openmp backend");
            return false;
        }
    LLVMValueRef *vals = rt_arena_alloc(cg->f->arena, sizeof *vals * (size_t)(n->u.call.nargs + 1));
    for (int i = first; i < n->u.call.nargs; i++) vals[i] = cg_expr(cg, n->u.call.args[i]);
    LLVMTypeRef p2[2] = {cg->ptr, cg->i64}, p2f[2] = {cg->ptr, cg->f64}, p1[1] = {cg->ptr};
    LLVMValueRef begin[2] = {cg->rtctx, cg_i64(cg, rt_names_index(cg->names, n->u.call.text))};
    cg_call_rt(cg, "rt_print_begin", cg->void_t, p2, begin, 2);
    for (int i = first; i < n->u.call.nargs; i++) {
        const IrNode *a = n->u.call.args[i];
        LLVMValueRef v = vals[i];
        if (a->type->kind == IR_TY_SCALAR) {
            LLVMValueRef args[2] = {cg->rtctx, v};
            bool f = ir_dtype_is_float(a->type->dtype);
            cg_call_rt(cg, f ? "rt_print_f64" : "rt_print_i64", cg->void_t, f ? p2f : p2, args, 2);
            continue;
        }
        int nd = a->type->ndim;
        LLVMTypeRef arr = LLVMArrayType(cg->i64, (unsigned)(nd ? nd : 1));
        LLVMValueRef shape = cg_alloca(cg, arr, "print_shape"), strides = cg_alloca(cg, arr, "print_strides");
        for (int d = 0; d < nd; d++) {
            LLVMValueRef at[2] = {cg_i64(cg, 0), cg_i64(cg, d)};
            LLVMBuildStore(cg->b, cg_array_dim(cg, v, d), LLVMBuildGEP2(cg->b, arr, shape, at, 2, ""));
            LLVMBuildStore(cg->b, cg_array_stride(cg, v, d), LLVMBuildGEP2(cg->b, arr, strides, at, 2, ""));
        }
        LLVMTypeRef pa[6] = {cg->ptr, cg->ptr, cg->i64, cg->ptr, cg->ptr, cg->i64};
        LLVMValueRef args[6] = {cg->rtctx, cg_array_data(cg, v), cg_i64(cg, nd), shape, strides,
                                cg_i64(cg, ir_dtype_size(a->type->dtype))};
        cg_call_rt(cg, "rt_print_array", cg->void_t, pa, args, 6);
    }
    LLVMValueRef end[1] = {cg->rtctx};
    cg_call_rt(cg, "rt_print_end", cg->void_t, p1, end, 1);
    return true;
}

static LLVMValueRef print_values(Cg *cg, const IrNode *n)
{
    print_record(cg, n, 0);
    return LLVMGetUndef(cg_type(cg, n->type));
}

LLVMValueRef cg_intrinsic(Cg *cg, const IrNode *n)
{
    switch (n->u.call.intrinsic) {
    case IR_INTR_TRANSPOSE: return cg_transpose(cg, cg_expr(cg, n->u.call.args[0]), n->type->ndim);
    case IR_INTR_RESHAPE: return reshape(cg, n);
    case IR_INTR_RESHAPE_VIEWS: return reshape_views(cg, n);
    case IR_INTR_CONCATENATE: return concatenate(cg, n);
    case IR_INTR_MATMUL: return matmul(cg, n);
    case IR_INTR_MASK_SELECT: return mask_select(cg, n);
    case IR_INTR_CORE_DIM: return core_dim(cg, n);
    case IR_INTR_RAISE: return raise_error(cg, n);
    case IR_INTR_SORT: return sort(cg, n);
    case IR_INTR_SEARCH: return search(cg, n);
    case IR_INTR_LINALG: return linalg(cg, n);
    case IR_INTR_RNG_NEW: return rng_new(cg, n);
    case IR_INTR_RNG_DRAW: return rng_draw(cg, n);
    case IR_INTR_PRINT: return print_values(cg, n);
    case IR_INTR_COUNT: break;
    }
    lk_diag_set(cg->diag, LK_ERR_INTERNAL, cg->f->file, n->pos.line, n->pos.col, "a call of intrinsic %d",
                (int)n->u.call.intrinsic);
    return LLVMGetUndef(cg_type(cg, n->type));
}
