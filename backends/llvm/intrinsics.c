/* intrinsics.c: the typed IR's named operations (IR_CALLEE_INTRINSIC), which no combination of the other nodes
 * expresses well: views that rearrange axes, and the matrix product (a call of the runtime's GEMM kernel). */
#include <string.h>
#include "cg.h"

static LLVMValueRef matmul(Cg *cg, const IrNode *n)
{
    LLVMValueRef a = cg_expr(cg, n->u.call.args[0]), b = cg_expr(cg, n->u.call.args[1]);
    LLVMValueRef m = cg_array_dim(cg, a, 0), k = cg_array_dim(cg, a, 1);
    LLVMValueRef kb = cg_array_dim(cg, b, 0), nn = cg_array_dim(cg, b, 1);
    LLVMValueRef extra[3] = {k, kb, cg_i64(cg, 0)};
    cg_raise_if(cg, LLVMBuildICmp(cg->b, LLVMIntNE, k, kb, ""), "rt_raise_shape", n->pos, extra, 3);
    LLVMValueRef dims[2] = {m, nn};
    IrDtype dt = n->type->dtype;
    LLVMValueRef c = cg_new_array(cg, dt, 2, dims, n->pos);
    LLVMTypeRef params[10] = {cg->ptr, cg->i64, cg->i64, cg->ptr, cg->i64, cg->i64, cg->ptr, cg->i64, cg->i64, cg->i64};
    LLVMValueRef args[10] = {cg_array_data(cg, a), cg_array_stride(cg, a, 0), cg_array_stride(cg, a, 1),
                             cg_array_data(cg, b), cg_array_stride(cg, b, 0), cg_array_stride(cg, b, 1),
                             cg_array_data(cg, c), m, nn, k};
    LLVMTypeRef void_t = LLVMVoidTypeInContext(cg->ctx);
    cg_call_rt(cg, dt == IR_DT_FLOAT32 ? "rt_gemm_f32" : "rt_gemm_f64", void_t, params, args, 10);
    return c;
}

LLVMValueRef cg_intrinsic(Cg *cg, const IrNode *n)
{
    const char *name = n->u.call.name;
    if (strcmp(name, "transpose") == 0) return cg_transpose(cg, cg_expr(cg, n->u.call.args[0]), n->type->ndim);
    if (strcmp(name, "matmul") == 0) return matmul(cg, n);
    lk_diag_set(cg->diag, LK_ERR_INTERNAL, cg->f->file, n->pos.line, n->pos.col, "the cpu backend has no intrinsic '%s'", name);
    return LLVMGetUndef(cg_type(cg, n->type));
}
