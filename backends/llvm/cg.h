/* cg.h: the LLVM backend's code generator state, shared by its files (not by other layers).
 *
 * Lowering conventions:
 *  - every user function becomes `i32 @sym(ptr ctx, ptr ret, params...)`, returning 0 or an error status;
 *    the result is stored through `ret`. A failed call branches to the function's error block, which returns 1.
 *  - variables live in allocas made in the entry block (mem2reg turns them into SSA values);
 *  - bools are i1 in registers and i8 in array memory;
 *  - an array is the struct {ptr data, ptr base, [n x i64] shape, [n x i64] strides}, strides in bytes;
 *  - complex64/complex128 are the structs {float, float}/{double, double} (emit_complex.c);
 *  - float16 is LLVM's half, in registers and in memory, and every operation on it widens its operands to float,
 *    computes in float and rounds the result to half (emit_scalar.c), as NumPy does: LLVM's own half arithmetic
 *    would compute floor division, pow or a math function in half at each step.
 */
#ifndef LK_CG_H
#define LK_CG_H

#include <llvm-c/Core.h>
#include <llvm-c/Orc.h>
#include <llvm-c/TargetMachine.h>
#include "../backend.h"
#include "../gpu/kernel_abi.h"

#define CG_MAX_LOOPS 64
#define CG_MAX_VARIANTS 128

typedef struct CgOutline CgOutline; /* outline.c */

typedef struct Cg {
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LkDiag *diag;
    const BeOptions *opts;
    LLVMTypeRef i1, i8, i32, i64, f16, f32, f64, ptr, void_t;
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
    RtNames *names;               /* the strings error records name (source files, variables), by index */
    bool parallel;                /* the openmp backend: outermost data-parallel loops run on the team */
    int chunk_level;              /* the loop level a chunk restricts (0; 1 for reductions along axis 0) */
    bool scalar_nest;             /* the nests being emitted keep their innermost loop scalar (emit_array.c's
                                   * nd_nest: the general copy, whose gathers cost more than they give) */
    int cold;                     /* > 0 while emitting the general arm of a versioned if (ir/version_loops.c,
                                   * ir/version_imaps.c, ir/small_windows.c): code that runs only for inputs the
                                   * fast copy does not take. Its loops stay plain (loops.c): optimising them
                                   * doubled the compile time of a versioned function for speed that is rarely
                                   * used */
    /* the gpu backend's host code (gpu_launch.c): its kernels, and the global that holds their loaded module */
    const GpuHost *gpu;
    LLVMValueRef gpu_module;
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
/* the same, of a function that reads and writes no memory the code can see (may be hoisted, merged, vectorised) */
LLVMValueRef cg_call_pure(Cg *cg, const char *name, LLVMTypeRef ret, LLVMTypeRef *params, LLVMValueRef *args, int n);

/* emit_complex.c: complex64/complex128 as {float, float}/{double, double} (ir.h's rule); cg_cast, cg_truth,
 * cg_compare, cg_binop, cg_unop and cg_math send complex operands here */
LLVMTypeRef cg_complex_type(Cg *cg, IrDtype dt);
LLVMValueRef cg_complex_make(Cg *cg, IrDtype dt, LLVMValueRef re, LLVMValueRef im);
LLVMValueRef cg_complex_part(Cg *cg, LLVMValueRef z, int k); /* 0: real, 1: imaginary */
LLVMValueRef cg_complex_const(Cg *cg, IrDtype dt, double re, double im);
LLVMValueRef cg_complex_cast(Cg *cg, LLVMValueRef v, const IrType *from, const IrType *to);
LLVMValueRef cg_complex_truth(Cg *cg, LLVMValueRef z);
LLVMValueRef cg_complex_compare(Cg *cg, IrCmpOp op, LLVMValueRef l, LLVMValueRef r);
LLVMValueRef cg_complex_binop(Cg *cg, const IrNode *n, LLVMValueRef l, LLVMValueRef r);
LLVMValueRef cg_complex_unop(Cg *cg, const IrNode *n, LLVMValueRef z);
LLVMValueRef cg_complex_math(Cg *cg, const IrNode *n, LLVMValueRef *args);
LLVMValueRef cg_complex_load(Cg *cg, IrDtype dt, LLVMValueRef p);
void cg_complex_store(Cg *cg, IrDtype dt, LLVMValueRef p, LLVMValueRef z);

/* emit_stmt.c */
LLVMValueRef cg_expr(Cg *cg, const IrNode *n);
void cg_block(Cg *cg, const IrBlock *b);
LLVMValueRef cg_alloca(Cg *cg, LLVMTypeRef t, const char *name);
LLVMBasicBlockRef cg_new_bb(Cg *cg, const char *name);
/* Where cond holds: the error record filled in (code, pos's file and line, extra: the code's numbers, as
 * runtime.h lists them, at most 3) and the function's error block; else on. */
void cg_raise_if(Cg *cg, LLVMValueRef cond, RtErrCode code, IrPos pos, LLVMValueRef *extra, int nextra);
void cg_check_status(Cg *cg, LLVMValueRef status);
/* Enters a loop for break/continue (false, with the error set, when loops nest too deeply). */
bool cg_push_loop(Cg *cg, LLVMBasicBlockRef brk, LLVMBasicBlockRef cont, IrPos pos);
/* The sequential loop of a for-range statement s whose start, stop and step are evaluated (and the step
 * checked). */
void cg_range_loop(Cg *cg, const IrNode *s, LLVMValueRef start, LLVMValueRef stop, LLVMValueRef step);
bool cg_emit_module(Cg *cg, IrFunc *root);

/* emit_array.c */
LLVMValueRef cg_array_dim(Cg *cg, LLVMValueRef arr, int axis);
LLVMValueRef cg_array_stride(Cg *cg, LLVMValueRef arr, int axis);
LLVMValueRef cg_array_data(Cg *cg, LLVMValueRef arr);
LLVMValueRef cg_index(Cg *cg, const IrNode *n);                 /* element load or view */
void cg_store(Cg *cg, const IrNode *target, LLVMValueRef value); /* element store */
LLVMValueRef cg_alloc(Cg *cg, const IrNode *n);
LLVMValueRef cg_new_array(Cg *cg, IrDtype dt, int ndim, LLVMValueRef *dims, IrPos pos);
/* nbytes of host memory owned by the call (freed when it returns), on every backend: the gpu's host code too */
LLVMValueRef cg_host_scratch(Cg *cg, int64_t nbytes);
LLVMValueRef cg_map(Cg *cg, const IrNode *n);
LLVMValueRef cg_imap(Cg *cg, const IrNode *n);
/* The address of element idx of arr (from the shape when t has C layout, so LLVM sees unit stride); loads and
 * stores of an element in memory (bools as i8 there, i1 in registers). */
LLVMValueRef cg_elem_ptr(Cg *cg, const IrType *t, LLVMValueRef arr, LLVMValueRef *idx);
LLVMValueRef cg_load_elem(Cg *cg, IrDtype dt, LLVMValueRef p);
/* the same, as the memory holds it (bools as i8): every access to array memory is one of these four */
LLVMValueRef cg_load_mem(Cg *cg, IrDtype dt, LLVMValueRef p);
void cg_store_mem(Cg *cg, IrDtype dt, LLVMValueRef p, LLVMValueRef v);
void cg_store_elem(Cg *cg, IrDtype dt, LLVMValueRef p, LLVMValueRef v);
/* Every element of arr set to value (a constant or a variable). */
void cg_fill(Cg *cg, LLVMValueRef arr, const IrType *t, LLVMValueRef *dims, int ndim, IrNode *value);

/* The loops of a map, which reductions and scans (emit_reduce.c) run too: where each element goes is the sink,
 * CG_SINK_STORE (a map's output) or one of the accumulating kinds of emit_reduce.c. */
typedef enum {
    CG_SINK_STORE, CG_SINK_REDUCE_ALL, CG_SINK_REDUCE_AXIS, CG_SINK_ARG_ALL, CG_SINK_ARG_AXIS, CG_SINK_SCAN_ALL,
    CG_SINK_SCAN_AXIS
} CgSink;
/* The inputs of a map, evaluated once, with their strides made 0 on broadcast axes, and its sink. */
typedef struct CgMap {
    const IrNode *map;
    const IrRegion *region;       /* the parallel region being run (its uses travel to a chunk), or NULL */
    int n, ndim;                       /* ndim: of the iteration space */
    LLVMValueRef vals[IR_MAX_MAP_INPUTS];
    LLVMValueRef bstrides[IR_MAX_MAP_INPUTS][IR_MAX_DIMS];
    LLVMValueRef dims[IR_MAX_DIMS];    /* the iteration space */
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
    CgSink sink;
    bool have_vals;                    /* vals already evaluated (cg_map_inputs_first) */
    /* the next of sibling reductions run in this map's loops (cg_reduce_siblings): its space equals this one's,
     * and this map's flat_ok and flat_ok_static hold for all of them */
    struct CgMap *sibling;
    bool unit_inner;                   /* being emitted: the copy of the nest where every input's innermost
                                        * stride is its element size (emit_array.c's nd_nest) */
} CgMap;
/* Evaluates the inputs (unless have_vals) and checks their shapes against out_dims (or their broadcast, when
 * NULL); false with the diagnostic set when the map is too big to compile. */
bool cg_map_prepare(Cg *cg, CgMap *m, const IrNode *map, LLVMValueRef *out_dims, int out_ndim);
/* A map with an out: its inputs evaluated, and checked to broadcast together, before out is (ir.h's order:
 * `a[i] = b + c` raises b + c's error before a[i]'s). */
bool cg_map_inputs_first(Cg *cg, CgMap *m, const IrNode *map, int out_ndim);
/* The whole space on this thread: the flat loop when the layout allows it, else the loop nest. */
void cg_map_run(Cg *cg, CgMap *m, bool out_is_c, bool vectorize);
/* openmp: whether a data-parallel node runs on the team (not inside a loop that does); the map's values
 * carried into a chunk function; rows [lo, hi) of the space, in a chunk; its work for the team threshold; an
 * axis reduction or scan with each thread owning lines of the result. */
bool cg_on_team(Cg *cg, const IrNode *n); /* n is a region and the backend is openmp */
typedef struct CgMapCaps {
    int vals[IR_MAX_MAP_INPUTS], bstrides[IR_MAX_MAP_INPUTS][IR_MAX_DIMS], dims[IR_MAX_DIMS], out, flat_ok, best;
} CgMapCaps;
void cg_map_capture(CgOutline *o, CgMap *m, CgMapCaps *c);
void cg_map_restore(CgOutline *o, CgMap *m, const CgMapCaps *c);
void cg_map_run_chunk(Cg *cg, CgMap *m, bool out_is_c, LLVMValueRef lo, LLVMValueRef hi, bool vectorize);
LLVMValueRef cg_map_work(Cg *cg, CgMap *m, IrNode *body);
void cg_map_axis_on_team(Cg *cg, CgMap *m);

/* emit_reduce.c */
LLVMValueRef cg_reduce(Cg *cg, const IrNode *n);
LLVMValueRef cg_scan(Cg *cg, const IrNode *n);
/* A one_pass tuple (ir/sibling_reductions.c): its reductions in one loop when their spaces agree. */
LLVMValueRef cg_reduce_siblings(Cg *cg, const IrNode *n);
/* The accumulating sinks: one element v (at the flat index, or the multi-index idx) into m's accumulator. */
void cg_reduce_sink(Cg *cg, CgMap *m, LLVMValueRef v, LLVMValueRef flat, LLVMValueRef *idx);
/* A built-in operation's identity and combine; the user's combine applied to (a, x); whether argmin/argmax
 * prefers x to best. */
LLVMValueRef cg_red_identity(Cg *cg, IrReduceOp op, IrDtype dt);
LLVMValueRef cg_red_combine(Cg *cg, IrReduceOp op, IrDtype dt, LLVMValueRef a, LLVMValueRef x);
LLVMValueRef cg_apply_combine(Cg *cg, const IrCombine *c, LLVMValueRef a, LLVMValueRef x);
LLVMValueRef cg_arg_better(Cg *cg, IrReduceOp op, IrDtype dt, LLVMValueRef x, LLVMValueRef best);

/* team_reduce.c: reductions and scans of everything on the openmp team, m prepared as for one thread */
LLVMValueRef cg_reduce_on_team(Cg *cg, CgMap *m, IrDtype dt);                          /* built-in op */
/* sibling reductions with built-in ops, m[0..n) chained by sibling, each result left in its acc */
void cg_reduce_siblings_on_team(Cg *cg, CgMap *m, int n, const IrDtype *dt, const IrRegion *region);
LLVMValueRef cg_reduce_special_on_team(Cg *cg, CgMap *m, IrDtype dt, const IrNode *n); /* fn, argmin/max */
LLVMValueRef cg_scan_on_team(Cg *cg, CgMap *m, const IrNode *n);                       /* cumsum, cumprod */
LLVMValueRef cg_scan_func_on_team(Cg *cg, CgMap *m, const IrNode *n);                  /* lk.scan with fn */
/* intrinsics.c: the typed IR's named operations (transpose, matmul, ...) */
LLVMValueRef cg_intrinsic(Cg *cg, const IrNode *n);
/* An axis reduction that is typespec's float matrix-vector product (A @ x, x @ B), m prepared and m->out set:
 * offered to the runtime's BLAS (rt_blas_matmul); returns the block to go on from once the caller's own loop
 * is emitted (the builder is left at that loop's start: the BLAS declined), or NULL for any other reduction. */
LLVMBasicBlockRef cg_reduce_by_blas(Cg *cg, const IrNode *n, const CgMap *m);
/* a[mask] = value: the store whose target's one index is a boolean array (value: a scalar of a's type) */
void cg_mask_store(Cg *cg, const IrNode *target, LLVMValueRef value);
/* a[mask] = values, values a 1-D array (of the mask's count of set elements, or of one) */
void cg_mask_store_values(Cg *cg, const IrNode *target, const IrNode *values);
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
struct CgOutline {                       /* zero-initialised; any number of captures */
    int n, cap;
    LLVMValueRef *vals;                  /* the parent's values (malloc'd, freed by cg_outline_end) */
    LLVMValueRef *child_vals;            /* the same, loaded in the chunk (arena) */
    LLVMTypeRef *tys;                    /* (arena) */
    int *var_cap;                        /* by IrVar id: its capture index, or -1 */
    LLVMTypeRef env_ty;
    LLVMValueRef child, lo, hi, tid;
    LLVMValueRef p_fn, p_rtctx, *p_slots, *p_flags;
    LLVMBasicBlockRef p_entry, p_err, p_block;
    int p_loop_depth;
};
int cg_capture(CgOutline *o, LLVMValueRef v);
void cg_outline_begin(Cg *cg, CgOutline *o, const IrRegion *region); /* captures region->uses */
LLVMValueRef cg_outline_get(CgOutline *o, int idx);
/* Returns the number of chunks rt_parallel_for ran (i64): the chunk functions' tid were 0 .. that - 1. */
LLVMValueRef cg_outline_end(Cg *cg, CgOutline *o, LLVMValueRef n, LLVMValueRef work);
int64_t cg_cost(IrNode *n);
int64_t cg_block_cost(const IrBlock *b); /* statements, nested loops weighted by an assumed trip count */
LLVMValueRef cg_worth_a_team(Cg *cg, LLVMValueRef work);
LLVMValueRef cg_shares_work(Cg *cg, LLVMValueRef n, LLVMValueRef work);
void cg_loop_nest_from(Cg *cg, int ndim, LLVMValueRef *dims, LLVMValueRef lo0, LLVMValueRef hi0, CgLoopBody body,
                       void *env, bool vectorize);

/* target.c: the CPU the code is compiled for */
typedef struct CgTarget {
    char cpu[64];        /* LLVM's CPU name: the host's, or an x86-64 level */
    char features[1024]; /* the host's features, or empty for a level (its own) */
    bool avx2_fma, sse41; /* the target has them (they decide the vector math ISA) */
} CgTarget;
void cg_target_host(CgTarget *t); /* the host CPU: LLVM's name and features for it (about 0.15 ms of cpuid) */
/* host (cg_target_host's), or the level $LORIKEET_CPU names if this machine can run it; else false with diag set. */
bool cg_target_choose(CgTarget *t, const CgTarget *host, LkDiag *diag);

/* vecmath.c: libmvec variants of math calls, so that loops calling them vectorise */
/* Once per process, ahead (the JIT's start): libmvec loaded and the variants of the host's own ISA found, into
 * syms for the JIT's symbol table; their number. */
int cg_vecmath_preload(const CgTarget *host, RtSymbol *syms, int max);
/* Once per process, at the first use: whether and which variants the target's code calls; into syms those the
 * JIT must still define (a target below the host's level needs its own ISA's); their number. */
int cg_vecmath_choose(const CgTarget *target, RtSymbol *syms, int max);
/* f(args) on elem through its vector variant, the same function whether the call is vectorised or not; NULL when
 * f has none here (the caller emits the scalar call). */
LLVMValueRef cg_vecmath_call(Cg *cg, IrMathFn f, LLVMTypeRef elem, LLVMValueRef *args);
bool cg_vecmath_has(IrMathFn f);                 /* f has a vector variant here */
/* gpu_launch.c: the host side of a gpu compilation (Cg.gpu): regions launched as their kernels, and element
 * accesses of host code to device memory */
LLVMValueRef cg_gpu_region(Cg *cg, const IrNode *n);
void cg_gpu_prange(Cg *cg, const IrNode *s, LLVMValueRef start, LLVMValueRef stop, LLVMValueRef step);
LLVMValueRef cg_gpu_load_mem(Cg *cg, IrDtype dt, LLVMValueRef p);
void cg_gpu_store_mem(Cg *cg, IrDtype dt, LLVMValueRef p, LLVMValueRef v);
/* NumPy's rule for an output that overlaps an input (emit_array.c): such inputs are copied first */
void cg_map_copy_overlaps(Cg *cg, CgMap *m, const IrType *ot);
void cg_prange_last_value(Cg *cg, const IrNode *s, LLVMValueRef s64, LLVMValueRef st64, LLVMValueRef n);
LLVMValueRef cg_trip_count(Cg *cg, const IrType *t, LLVMValueRef start, LLVMValueRef stop, LLVMValueRef step,
                           LLVMValueRef *s64, LLVMValueRef *st64);
/* prange.c: an lk.prange loop run by the team (openmp backend, outside other parallel loops) */
void cg_prange(Cg *cg, const IrNode *s, LLVMValueRef start, LLVMValueRef stop, LLVMValueRef step);


/* jit.c */
bool cg_jit_init(LkDiag *diag);
LLVMTargetMachineRef cg_jit_target_machine(void); /* made at the first call: call it only to compile */
/* The target the JIT's code is for, as a target machine made for it reports it (strings owned by jit.c) */
void cg_jit_target_describe(const char **triple, const char **cpu, const char **features);
bool cg_jit_optimize(LLVMModuleRef mod, LkDiag *diag);
/* Compiled code as object files (what is saved, and loaded again in another process): emit an optimised module,
 * add an object's code under a tracker of its own (its symbols must be new: cg_jit_find first), free it again
 * (cg_jit_remove), find a symbol (NULL when undefined). */
LLVMMemoryBufferRef cg_jit_emit_object(LLVMModuleRef mod, LkDiag *diag);
LLVMOrcResourceTrackerRef cg_jit_add_object(LLVMMemoryBufferRef obj, LkDiag *diag);
void cg_jit_remove(LLVMOrcResourceTrackerRef tracker);
void *cg_jit_find(const char *name, LkDiag *diag);

#endif
