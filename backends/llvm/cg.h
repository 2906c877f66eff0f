/* cg.h: the LLVM backend's code generator state, shared by its files (not by other layers).
 *
 * Lowering conventions:
 *  - every user function becomes `i32 @sym(ptr ctx, ptr ret, params...)`, returning 0 or an error status;
 *    the result is stored through `ret`. A failed call branches to the function's error block, which returns 1.
 *  - variables live in allocas made in the entry block (mem2reg turns them into SSA values);
 *  - bools are i1 in registers and i8 in array memory;
 *  - an array is the struct {ptr data, ptr base, [n x i64] shape, [n x i64] strides}, strides in bytes.
 */
#ifndef LK_CG_H
#define LK_CG_H

#include <llvm-c/Core.h>
#include <llvm-c/Orc.h>
#include <llvm-c/TargetMachine.h>
#include "../backend.h"

#define CG_MAX_LOOPS 64
#define CG_MAX_VERSIONS 2 /* versioned loops nested in one another (each doubles the code inside it) */

typedef struct Cg {
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LkDiag *diag;
    const BeOptions *opts;
    LLVMTypeRef i1, i8, i32, i64, f32, f64, ptr, void_t;
    /* the function being emitted */
    IrFunc *f;
    LLVMValueRef fn;
    LLVMValueRef rtctx;
    LLVMValueRef retptr;
    LLVMValueRef *var_slots;      /* by IrVar id */
    LLVMValueRef *bound_flags;    /* by IrVar id, for variables that may be read unassigned: an i1 alloca */
    LLVMBasicBlockRef entry_bb;
    LLVMBasicBlockRef err_bb;
    LLVMBasicBlockRef break_bb[CG_MAX_LOOPS], continue_bb[CG_MAX_LOOPS];
    int loop_depth;
    LLVMValueRef file_str;
    bool parallel;                /* the openmp backend: outermost data-parallel loops run on the team */
    int par_depth;                /* > 0 inside an outlined loop: everything nested runs on its thread */
    int chunk_level;              /* the loop level a chunk restricts (0; 1 for reductions along axis 0) */
    /* loop versioning (bounds_version.c): the bounds plans of the versioned loops around the code being
     * emitted, outermost first, and whether this copy runs with the plan's accesses proven in range */
    const IrBoundsPlan *plans[CG_MAX_VERSIONS];
    bool plan_proven[CG_MAX_VERSIONS];
    int nplans;
    /* every emitted function, by IrFunc, for calls */
    IrFunc **funcs;
    LLVMValueRef *func_values;
    int nfuncs;
} Cg;

/* emit_scalar.c */
LLVMTypeRef cg_type(Cg *cg, const IrType *t);
LLVMTypeRef cg_mem_type(Cg *cg, IrDtype dt);      /* element type in memory (bool as i8) */
LLVMValueRef cg_const(Cg *cg, const IrNode *n);
LLVMValueRef cg_cast(Cg *cg, LLVMValueRef v, const IrType *from, const IrType *to);
LLVMValueRef cg_binop(Cg *cg, const IrNode *n, LLVMValueRef l, LLVMValueRef r);
LLVMValueRef cg_unop(Cg *cg, const IrNode *n, LLVMValueRef x);
LLVMValueRef cg_compare(Cg *cg, IrCmpOp op, IrDtype dt, LLVMValueRef l, LLVMValueRef r);
LLVMValueRef cg_math(Cg *cg, const IrNode *n, LLVMValueRef *args);
LLVMValueRef cg_truth(Cg *cg, LLVMValueRef v, const IrType *t);
LLVMValueRef cg_i64(Cg *cg, int64_t v);
LLVMValueRef cg_call_intrinsic(Cg *cg, const char *name, LLVMTypeRef overload, LLVMValueRef *args, int n);
LLVMValueRef cg_call_rt(Cg *cg, const char *name, LLVMTypeRef ret, LLVMTypeRef *params, LLVMValueRef *args, int n);

/* emit_stmt.c */
LLVMValueRef cg_expr(Cg *cg, const IrNode *n);
void cg_block(Cg *cg, const IrBlock *b);
LLVMValueRef cg_alloca(Cg *cg, LLVMTypeRef t, const char *name);
LLVMBasicBlockRef cg_new_bb(Cg *cg, const char *name);
void cg_raise_if(Cg *cg, LLVMValueRef cond, const char *rt_fn, IrPos pos, LLVMValueRef *extra, int nextra);
void cg_check_status(Cg *cg, LLVMValueRef status);
/* Enters a loop for break/continue (false, with the error set, when loops nest too deeply). */
bool cg_push_loop(Cg *cg, LLVMBasicBlockRef brk, LLVMBasicBlockRef cont, IrPos pos);
/* The sequential loop of a for-range statement s whose start, stop and step are evaluated (and the step
 * checked): range is a CgRange. */
typedef struct CgRange {
    LLVMValueRef start, stop, step;
} CgRange;
void cg_range_loop(Cg *cg, const IrNode *s, void *range);
bool cg_emit_module(Cg *cg, IrFunc *root);

/* emit_array.c */
LLVMValueRef cg_array_dim(Cg *cg, LLVMValueRef arr, int axis);
LLVMValueRef cg_array_stride(Cg *cg, LLVMValueRef arr, int axis);
LLVMValueRef cg_array_data(Cg *cg, LLVMValueRef arr);
LLVMValueRef cg_index(Cg *cg, const IrNode *n);                 /* element load or view */
void cg_store(Cg *cg, const IrNode *target, LLVMValueRef value); /* element store */
LLVMValueRef cg_alloc(Cg *cg, const IrNode *n);
LLVMValueRef cg_new_array(Cg *cg, IrDtype dt, int ndim, LLVMValueRef *dims, IrPos pos);
LLVMValueRef cg_map(Cg *cg, const IrNode *n);
LLVMValueRef cg_imap(Cg *cg, const IrNode *n);
LLVMValueRef cg_reduce(Cg *cg, const IrNode *n);
LLVMValueRef cg_scan(Cg *cg, const IrNode *n);
/* intrinsics.c: the typed IR's named operations (transpose, matmul, ...) */
LLVMValueRef cg_intrinsic(Cg *cg, const IrNode *n);
/* Element by element copy of src into dst (same shape dims, any strides). */
void cg_copy_array(Cg *cg, LLVMValueRef dst, LLVMValueRef src, const IrType *t, LLVMValueRef *dims);
LLVMValueRef cg_bcast_shape(Cg *cg, const IrNode *n);
LLVMValueRef cg_transpose(Cg *cg, LLVMValueRef arr, int ndim);

/* loops.c: counted loops, with the vectorizer hint when asked */
typedef void (*CgLoopBody)(Cg *cg, LLVMValueRef *idx, void *env);
/* Lets LLVM vectorise the loop whose latch this is even where that reorders float arithmetic. */
void cg_mark_vectorize(Cg *cg, LLVMValueRef latch_br);
/* The same, and/or: no runtime unrolling of that loop (full unrolling of a constant trip count stays). */
void cg_mark_loop(Cg *cg, LLVMValueRef latch_br, bool vectorize, bool no_runtime_unroll);
void cg_loop_nest(Cg *cg, int ndim, LLVMValueRef *dims, CgLoopBody body, void *env, bool vectorize);

/* outline.c: a loop moved into a chunk function that rt_parallel_for runs on the team (openmp backend) */
#define CG_MAX_CAPTURES 512
typedef struct CgOutline {
    int n;
    LLVMValueRef vals[CG_MAX_CAPTURES], child_vals[CG_MAX_CAPTURES];
    LLVMTypeRef tys[CG_MAX_CAPTURES];
    int *var_cap;                        /* by IrVar id: its capture index, or -1 */
    LLVMTypeRef env_ty;
    LLVMValueRef child, lo, hi, tid;
    LLVMValueRef p_fn, p_rtctx, *p_slots, *p_flags;
    LLVMBasicBlockRef p_entry, p_err, p_block;
    int p_loop_depth;
} CgOutline;
int cg_capture(CgOutline *o, LLVMValueRef v);
void cg_outline_begin(Cg *cg, CgOutline *o, IrNode **exprs, int nexprs, IrBlock *block);
LLVMValueRef cg_outline_get(CgOutline *o, int idx);
void cg_outline_end(Cg *cg, CgOutline *o, LLVMValueRef n, LLVMValueRef work);
int64_t cg_cost(IrNode *n);
LLVMValueRef cg_worth_a_team(Cg *cg, LLVMValueRef work);
void cg_loop_nest_from(Cg *cg, int ndim, LLVMValueRef *dims, LLVMValueRef lo0, LLVMValueRef hi0, CgLoopBody body,
                       void *env, bool vectorize);

/* prange.c: an lk.prange loop run by the team (openmp backend, outside other parallel loops) */
void cg_prange(Cg *cg, const IrNode *s, LLVMValueRef start, LLVMValueRef stop, LLVMValueRef step);

/* bounds_version.c: a loop emitted twice, with the accesses its bounds plan proves unchecked, and as it is */
typedef void (*CgLoopEmit)(Cg *cg, const IrNode *loop, void *env);
/* The plan of a for-range loop, when it is worth a second copy here; else NULL. */
const IrBoundsPlan *cg_version_plan(Cg *cg, const IrNode *loop);
/* i1, emitted before the loop (start and stop: its evaluated bounds): every access of the plan stays in range. */
LLVMValueRef cg_version_test(Cg *cg, const IrBoundsPlan *p, LLVMValueRef start, LLVMValueRef stop);
/* emit(loop) twice, the copy chosen by ok; with no plan, once. */
void cg_versioned(Cg *cg, const IrBoundsPlan *p, LLVMValueRef ok, const IrNode *loop, CgLoopEmit emit, void *env);
/* This access is proven in range in the copy being emitted: no check, no wrap. */
bool cg_index_proven(const Cg *cg, const IrNode *index);
/* The code being emitted is in a copy with proven accesses (its loops are not runtime-unrolled: see there). */
bool cg_in_proven_copy(const Cg *cg);

/* jit.c */
bool cg_jit_init(LkDiag *diag);
LLVMTargetMachineRef cg_jit_target_machine(void);
bool cg_jit_optimize(LLVMModuleRef mod, LkDiag *diag);
/* Hands mod (made in tsc's context) to the JIT and returns the address of entry_name, or NULL with diag set. */
void *cg_jit_add(LLVMModuleRef mod, LLVMOrcThreadSafeContextRef tsc, const char *entry_name, LkDiag *diag);

#endif
