/* cuda.h: the CUDA C emitter of the gpu backend, shared by its files (not by other layers).
 *
 * The emitter writes text: one translation unit holding a preamble of its own (cuda_preamble.c: no #include,
 * NVRTC on a user's machine may have no header at all), the types the code needs, a __device__ function for
 * every user function that element code calls, and one kernel per parallel region (cuda_kernels.c).
 *
 * Conventions of the emitted code:
 *  - every subexpression that is not a constant or a variable is computed into a temporary `tN`, in the order
 *    ir.h states, so that C++'s unspecified order of operands never decides which error is raised;
 *  - variables are `v<id>`, with a flag `b<id>` where IrVar.maybe_unbound; bools are `bool` in registers and a
 *    0/1 byte in memory; a float16 is an `f32` holding a float16 value exactly in registers (every float16
 *    result rounded by lk_rh) and its 16 bits in memory (cu_load, cu_store_at convert); an array is `lk_a<ndim>`
 *    {data, base, shape, strides (bytes)}; a tuple `lk_t<k>`;
 *    None, slices, ranges, dtypes and functions as values are the empty `lk_none`;
 *  - every statement is emitted inside braces, so that the gotos of raise/break/continue only ever leave
 *    blocks (C++ forbids jumping past an initialised declaration into its scope);
 *  - a raise calls lk_raise (the lowest-work-item protocol of kernel_abi.h, with `lk_err` and `lk_order` in
 *    scope) and then runs `fail`: `return 1;` in a device function, a goto in a kernel.
 * A form the emitter cannot run is refused with a CompileError naming the line, never lowered wrongly. */
#ifndef LK_GPU_CUDA_H
#define LK_GPU_CUDA_H

#include "kernel_abi.h"

typedef struct CuBuf {
    char *s;
    size_t n, cap;
} CuBuf;
void cu_buf_printf(CuBuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cu_buf_free(CuBuf *b);

#define CU_MAX_LOOPS 64
#define CU_MAX_TUPLES 512

typedef struct Cu {
    RtArena *a;
    LkDiag *diag;
    RtNames *names;
    const IrFunc *f;         /* the function whose code is being emitted (its file names errors) */
    CuBuf *out;              /* where statements go */
    CuBuf types;             /* array and tuple structs, in the order first needed */
    int indent;
    int ntmp, nlabel;
    const char *fail;        /* what follows a raise: "return 1;" or "goto lk_fail;" */
    int brk[CU_MAX_LOOPS], cont[CU_MAX_LOOPS];
    int loop_depth;
    bool array_nd[IR_MAX_DIMS + 1];
    const IrType *tuples[CU_MAX_TUPLES];
    int ntuples;
    IrFunc **dev;            /* functions called from element code: lk_f<i> */
    int ndev;
    bool matmul_tiles;       /* cuda_matmul.c's template is in types */
    int nraises;             /* raises emitted so far (cu_raise and the kernels' own checks) */
    int ndevcalls;           /* calls of device functions (lk_f<i>) emitted so far */
} Cu;

/* cuda_preamble.c: the helpers a translation unit may use, in sections; cu_preamble appends to out the
 * sections that the given texts (the unit's types, device functions and kernels) name, and those they name in
 * turn, in their fixed order, always with the first (the typedefs) and the last (the end marker). */
typedef struct CuPreambleSection {
    const char *uses; /* space-separated identifiers (a trailing '_': any identifier starting so); NULL: always */
    const char *text;
} CuPreambleSection;
extern const CuPreambleSection cu_preamble_sections[];
extern const int cu_npreamble_sections;
void cu_preamble(CuBuf *out, const char *const *texts, int ntexts);

/* cuda_expr.c: expressions. Each returns the C expression of the value (a temporary, a variable or a literal),
 * or NULL with c->diag set. */
void cu_line(Cu *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *cu_fmt(Cu *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *cu_tmp(Cu *c, const IrType *t, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const char *cu_new_tmp(Cu *c);                       /* a fresh name tN */
const char *cu_type(Cu *c, const IrType *t);          /* the C type of a value of t */
const char *cu_scalar(IrDtype dt);                    /* i64, f32, bool, ... */
const char *cu_konst(Cu *c, const IrType *t, int64_t i, double f);
const char *cu_cast(Cu *c, const char *v, const IrType *from, const IrType *to);
const char *cu_truth(Cu *c, const char *v, const IrType *t);
const char *cu_expr(Cu *c, const IrNode *n);
const char *cu_binop(Cu *c, const IrNode *n, IrBinOp op, IrDtype dt, const char *l, const char *r);
const char *cu_math(Cu *c, IrMathFn fn, IrDtype dt, const char *a0, const char *a1);
const char *cu_load(Cu *c, IrDtype dt, const char *addr);   /* the element at a char* address */
void cu_store_at(Cu *c, IrDtype dt, const char *addr, const char *v);
/* The raise of code at pos with extra (C expressions, may be NULL), then c->fail; under `cond` when not NULL. */
void cu_raise(Cu *c, const char *cond, RtErrCode code, IrPos pos, const char *e0, const char *e1, const char *e2);
/* A CompileError: the gpu backend cannot run `what` inside a kernel yet (NULL, for returning). */
const char *cu_refuse(Cu *c, const IrNode *n, const char *what);
int cu_dev_index(const Cu *c, const IrFunc *f);
/* The value of an array/scalar encoded in int64 slots `p.s[slot..]`, as a C expression of t (arrays and tuples
 * as a temporary). */
const char *cu_from_slots(Cu *c, const IrType *t, int slot);
/* dst (a variable of type t) filled from the slots from *slot on, which advances past them */
void cu_fill_slots(Cu *c, const char *dst, const IrType *t, int *slot);
/* v (of type t) as the int64 of its slot encoding */
const char *cu_to_slot(Cu *c, const char *v, const IrType *t);

/* cuda_array.c: element access, views, and nested data-parallel nodes run sequentially in a thread */
const char *cu_index(Cu *c, const IrNode *n);
bool cu_store(Cu *c, const IrNode *s);
const char *cu_intrinsic(Cu *c, const IrNode *n);
const char *cu_nested_map(Cu *c, const IrNode *n);
const char *cu_nested_imap(Cu *c, const IrNode *n);
const char *cu_nested_reduce(Cu *c, const IrNode *n);
const char *cu_bcast_shape(Cu *c, const IrNode *n);
/* A map's inputs as the kernels and the nested loops see them: a data pointer and strides (broadcast axes 0)
 * per array input, or a scalar value; the space's dims. */
typedef struct CuMapSrc {
    const IrNode *map;
    int ndim;
    const char *val[IR_MAX_MAP_INPUTS];                 /* scalar inputs: the value; arrays: the data (char *) */
    const char *stride[IR_MAX_MAP_INPUTS][IR_MAX_DIMS]; /* arrays: bytes per step along each of its axes */
    const char *dims[IR_MAX_DIMS];
} CuMapSrc;
/* The map's body at the flat index `flat` (all inputs C-contiguous with the space's shape) or at the
 * multi-index idx: binds the params and returns the body's value. */
const char *cu_map_value_at(Cu *c, const CuMapSrc *m, const char *flat, const char *const *idx);

/* cuda_stmt.c: statements and device functions */
bool cu_block(Cu *c, const IrBlock *b);
bool cu_stmt(Cu *c, const IrNode *s);
/* Declarations of the variables of f (v<id>, b<id>) that used marks (NULL: all), none initialised but the
 * flags (false). */
void cu_declare_vars(Cu *c, const IrFunc *f, const bool *used);
/* By variable id: the variables n and its descendants (blocks included) name. */
bool *cu_vars_used(Cu *c, const IrFunc *f, IrNode *n);
bool cu_device_functions(Cu *c, CuBuf *protos, CuBuf *defs);
/* The functions that element code calls (transitively), found in the blocks and expressions given. */
void cu_find_device_calls(Cu *c, IrNode *n);
/* A sequential for-range loop of s around body_fn, with labels for break and continue. */
bool cu_for_range(Cu *c, const IrNode *s);
/* an acc value of op, as the combine of acc and x, evaluated */
const char *cu_red_combine(Cu *c, IrReduceOp op, IrDtype dt, const char *acc, const char *x, IrPos pos);
const char *cu_red_identity(Cu *c, IrReduceOp op, IrDtype dt);
/* argmin/argmax: whether x (at index xi) beats best (at bi): strictly better, the first NaN, or equal and
 * earlier, so that partials combine to the same index in any grouping */
const char *cu_arg_better(Cu *c, IrReduceOp op, IrDtype dt, const char *x, const char *xi, const char *best,
                          const char *bi);
/* The user's combine applied to (acc, x): its params take the values, the body is evaluated. */
const char *cu_apply_combine(Cu *c, const IrCombine *cb, const char *acc, const char *x);

/* cuda_kernels.c */
bool cu_kernel(Cu *c, const GpuKernelLayout *k, int index, IrFunc *owner);
/* Pieces of a kernel, shared with cuda_scan.c: the region's uses from the slots (at each work item's start);
 * whether the kernel writes nothing its inputs may alias; the map's inputs and dims as named locals; whether a
 * flat loop can serve; idx[d] of work item w unravelled in C order over dims (skipping axis skip, -1: none);
 * out's data and strides as lk_out, lk_out_s<d>. */
void cu_init_uses(Cu *c, const GpuKernelLayout *k);
bool cu_reads_only(const IrNode *region);
void cu_map_src(Cu *c, const GpuKernelLayout *k, CuMapSrc *m, bool restrict_ok);
bool cu_flat_possible(const GpuKernelLayout *k, const IrType *out_t);
void cu_unravel(Cu *c, const char *w, int ndim, const char *const *dims, int skip, const char **idx);
void cu_out_slots(Cu *c, const GpuKernelLayout *k, int ndim);
/* Not an RtErrCode: rt_error_diag reports it as an internal error (the host launched more blocks than fit). */
#define CU_ERR_GRID 101

/* cuda_scan.c: kernels that combine in order over many blocks */
bool cu_scan_chunked_kernel(Cu *c, const GpuKernelLayout *k, int index);
bool cu_reduce_func_chunked_kernel(Cu *c, const GpuKernelLayout *k, int index);

/* cuda_matmul.c: the body of kernel `index`, a GPU_K_MATMUL (the tiled product; its template and traits go to
 * c->types) */
bool cu_matmul_kernel(Cu *c, const GpuKernelLayout *k, int index);
/* The start of the body of REDUCE_AXIS kernel `index` with k->product set: the tiled product when p.s[product],
 * then return; the line kernel follows it */
void cu_matmul_in_reduce(Cu *c, const GpuKernelLayout *k, int index);

#endif
