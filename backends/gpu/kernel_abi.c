/* kernel_abi.c: where each value a region's kernel takes sits in its parameter block (kernel_abi.h). The host
 * code that fills the block and the CUDA C that reads it both ask here, so they cannot disagree. */
#include <string.h>
#include "kernel_abi.h"

static bool refuse(LkDiag *diag, const IrNode *n, const char *file, const char *what)
{
    lk_diag_set(diag, LK_ERR_COMPILE, file, n->pos.line, n->pos.col, "the gpu backend cannot run %s yet", what);
    return false;
}

const GpuHostRefusal *gpu_host_refusal(IrIntrinsic k)
{
    /* none at present: sorts, np.linalg's factorisations and np.random's draws run on the host (runtime/gpu_host.c);
     * a backend whose host code cannot run an intrinsic names it here, once, for its CompileError and the table */
    switch (k) {
    case IR_INTR_TRANSPOSE: case IR_INTR_RESHAPE: case IR_INTR_RESHAPE_VIEWS: case IR_INTR_CONCATENATE:
    case IR_INTR_MATMUL: case IR_INTR_MASK_SELECT: case IR_INTR_CORE_DIM: case IR_INTR_RAISE: case IR_INTR_SEARCH:
    case IR_INTR_PRINT: case IR_INTR_SORT: case IR_INTR_LINALG: case IR_INTR_RNG_NEW: case IR_INTR_RNG_DRAW:
    case IR_INTR_COUNT:
        return NULL;
    }
    return NULL;
}

/* The kind of kernel a region is, or false (refused) for a form the host code never leaves in a region. */
static bool kernel_kind(const IrNode *n, GpuKernelKind *kind, const char *file, LkDiag *diag)
{
    switch (n->kind) {
    case IR_MAP:
        if (!n->u.map.out) return refuse(diag, n, file, "a map without an output array");
        *kind = GPU_K_MAP;
        return true;
    case IR_IMAP:
        if (!n->u.imap.out) return refuse(diag, n, file, "an index map without an output array");
        *kind = GPU_K_IMAP;
        return true;
    case IR_REDUCE:
        if (n->u.reduce.input->kind != IR_MAP) return refuse(diag, n, file, "a reduction whose input is not a map");
        if (n->u.reduce.axis < 0 && ir_dtype_is_complex(n->type->dtype)) /* its result is one int64 slot */
            return refuse(diag, n, file, "a reduction of complex numbers to one value");
        if (n->u.reduce.axis < 0) {
            *kind = GPU_K_REDUCE_ALL;
            return true;
        }
        if (!n->u.reduce.out) return refuse(diag, n, file, "an axis reduction without an output array");
        *kind = GPU_K_REDUCE_AXIS;
        return true;
    case IR_SCAN:
        if (n->u.scan.input->kind != IR_MAP) return refuse(diag, n, file, "a scan whose input is not a map");
        if (ir_dtype_is_complex(n->type->dtype)) return refuse(diag, n, file, "a scan of complex numbers");
        if (!n->u.scan.out) return refuse(diag, n, file, "a scan without an output array");
        *kind = GPU_K_SCAN;
        return true;
    case IR_FOR_RANGE:
        if (n->u.for_range.nreds > GPU_RESULTS) return refuse(diag, n, file, "an lk.prange loop with more than 64 reductions");
        for (int i = 0; i < n->u.for_range.nreds; i++)
            if (ir_dtype_is_complex(n->u.for_range.reds[i].var->type->dtype))
                return refuse(diag, n, file, "an lk.prange reduction of complex numbers");
        *kind = GPU_K_PRANGE;
        return true;
    case IR_CALL:
        if (n->u.call.ckind == IR_CALLEE_INTRINSIC && n->u.call.intrinsic == IR_INTR_MATMUL && n->u.call.out) {
            *kind = GPU_K_MATMUL;
            return true;
        }
        return refuse(diag, n, file, "this call as a parallel region");
    default:
        return refuse(diag, n, file, "this node as a parallel region");
    }
}

/* e is param p of the map, or a cast of it */
static bool is_param(const IrNode *e, const IrVar *p)
{
    if (e->kind == IR_CAST) e = e->u.cast.value;
    return e->kind == IR_VAR && e->u.var.var == p;
}

bool gpu_reduce_is_product(const IrNode *n)
{
    if (n->kind != IR_REDUCE || n->u.reduce.op != IR_RED_ADD || n->u.reduce.axis != 1 || !n->u.reduce.out) return false;
    const IrNode *map = n->u.reduce.input;
    if (map->kind != IR_MAP || map->type->ndim != 3 || map->u.map.ninputs != 2 || map->u.map.nparams != 2) return false;
    for (int i = 0; i < 2; i++) {
        const IrType *t = map->u.map.inputs[i]->type;
        if (t->kind != IR_TY_ARRAY || t->ndim != 3) return false;
    }
    const IrNode *body = map->u.map.body;
    IrDtype dt = body->type->dtype;
    if (body->kind != IR_BINOP || ir_dtype_is_float(dt) || ir_dtype_is_complex(dt) || n->u.reduce.out->type->dtype != dt)
        return false;
    if (body->u.binop.op != (dt == IR_DT_BOOL ? IR_OP_BITAND : IR_OP_MUL)) return false;
    return is_param(body->u.binop.lhs, map->u.map.params[0]) && is_param(body->u.binop.rhs, map->u.map.params[1]);
}

GpuGemvForm gpu_reduce_gemv_form(const IrNode *n)
{
    if (n->kind != IR_REDUCE || n->u.reduce.op != IR_RED_ADD || !n->u.reduce.out) return GPU_GEMV_NONE;
    const IrNode *map = n->u.reduce.input;
    if (map->kind != IR_MAP || map->type->ndim != 2 || map->u.map.ninputs != 2 || map->u.map.nparams != 2)
        return GPU_GEMV_NONE;
    const IrNode *body = map->u.map.body;
    IrDtype dt = body->type->dtype;
    if ((dt != IR_DT_FLOAT32 && dt != IR_DT_FLOAT64) || n->u.reduce.out->type->dtype != dt || body->kind != IR_BINOP ||
        body->u.binop.op != IR_OP_MUL)
        return GPU_GEMV_NONE;
    const IrType *t0 = map->u.map.inputs[0]->type, *t1 = map->u.map.inputs[1]->type;
    if (t0->kind != IR_TY_ARRAY || t1->kind != IR_TY_ARRAY || t0->dtype != dt || t1->dtype != dt) return GPU_GEMV_NONE;
    const IrNode *l = body->u.binop.lhs, *r = body->u.binop.rhs;
    if (l->kind != IR_VAR || r->kind != IR_VAR || l->u.var.var != map->u.map.params[0] ||
        r->u.var.var != map->u.map.params[1])
        return GPU_GEMV_NONE;
    if (n->u.reduce.axis == 1 && t0->ndim == 2 && t1->ndim == 1) return GPU_GEMV_ROWS;
    if (n->u.reduce.axis == 0 && t0->ndim == 2 && t1->ndim == 2) return GPU_GEMV_COLS;
    return GPU_GEMV_NONE;
}

/* A scan of everything runs chunked over blocks when its combine may be split (a built-in one, or a user's whose
 * partials combine: ir_reduce_partials_ok, as the openmp team decides) and neither its element code nor its
 * combine writes memory: the chunked scan evaluates each element twice. */
static bool scan_chunked(const IrNode *n)
{
    if (n->u.scan.axis >= 0 || !ir_reduce_partials_ok(n->u.scan.op, &n->u.scan.combine)) return false;
    unsigned fx = ir_effects(n->u.scan.input->u.map.body);
    if (n->u.scan.combine.body) fx |= ir_effects(n->u.scan.combine.body);
    if (n->u.scan.combine.init) fx |= ir_effects(n->u.scan.combine.init);
    return !(fx & IR_FX_WRITE);
}

bool gpu_kernel_layout(const IrNode *node, RtArena *arena, GpuKernelLayout *L, const char *file, LkDiag *diag)
{
    memset(L, 0, sizeof *L);
    L->node = node;
    L->n = L->dims = L->flat_ok = L->out = L->start = L->step = L->product = -1;
    L->arg[0] = L->arg[1] = L->arg[2] = -1;
    if (!node->region) return refuse(diag, node, file, "a node that is not a parallel region");
    if (!kernel_kind(node, &L->kind, file, diag)) return false;
    int s = 2; /* error record, scratch */
    L->n = s++;
    const IrType *out_type = NULL;
    switch (L->kind) {
    case GPU_K_MAP: L->map = node; out_type = node->type; L->ndim = node->type->ndim; break;
    case GPU_K_IMAP: out_type = node->type; L->ndim = node->u.imap.ndim; break;
    case GPU_K_REDUCE_ALL: L->map = node->u.reduce.input; L->ndim = L->map->type->ndim; break;
    case GPU_K_REDUCE_AXIS:
        L->map = node->u.reduce.input;
        L->ndim = L->map->type->ndim;
        out_type = node->u.reduce.out->type;
        break;
    case GPU_K_SCAN: L->map = node->u.scan.input; L->ndim = L->map->type->ndim; out_type = node->u.scan.out->type; break;
    case GPU_K_PRANGE: L->start = s++; L->step = s++; break;
    case GPU_K_MATMUL:
        for (int i = 0; i < 3; i++) {
            const IrNode *v = i < 2 ? node->u.call.args[i] : node->u.call.out;
            L->arg[i] = s;
            s += ir_abi_slots(v->type);
        }
        break;
    }
    if (L->kind != GPU_K_PRANGE && L->kind != GPU_K_MATMUL) {
        L->dims = s;
        s += L->ndim;
    }
    if (L->kind == GPU_K_SCAN) L->chunked = scan_chunked(node);
    if (L->kind == GPU_K_MAP || L->kind == GPU_K_REDUCE_ALL || L->chunked) L->flat_ok = s++;
    if (L->kind == GPU_K_REDUCE_AXIS && gpu_reduce_is_product(node)) L->product = s++;
    if (L->map) {
        L->ninputs = L->map->u.map.ninputs;
        for (int i = 0; i < L->ninputs; i++) {
            const IrType *t = L->map->u.map.inputs[i]->type;
            L->input[i] = s;
            s += t->kind == IR_TY_ARRAY ? 1 + t->ndim : ir_abi_slots(t); /* a scalar: its value (a complex: two) */
        }
    }
    if (out_type) {
        L->out = s;
        s += 1 + out_type->ndim;
    }
    const IrRegion *r = node->region;
    L->nuses = r->nuses;
    L->use = rt_arena_alloc(arena, sizeof(int) * (size_t)(r->nuses + 1));
    for (int j = 0; j < r->nuses; j++) {
        L->use[j] = s;
        s += ir_abi_slots(r->uses[j]->type);
    }
    L->nslots = s;
    return true;
}
