/* kernel_abi.h: the contract between the host code of a gpu compilation (emitted by backends/llvm in its gpu
 * mode) and the CUDA C kernels backends/gpu emits for it. Internal to backends/ (as cg.h is to backends/llvm).
 *
 * Every outermost parallel region of a function (ir/parallel_regions.c: a map, imap, reduce, scan, lk.prange
 * loop or matrix product that no other region's per-element code holds) becomes one kernel. The host evaluates
 * everything the region takes from the code around it exactly as the cpu backend does (a map's inputs and out,
 * an imap's dims, a loop's bounds, a product's arguments: in the order ir.h states, with the same checks and
 * errors, raised on the host), then launches the kernel, which runs the per-element code. Nested regions and
 * loops inside it run sequentially in each thread.
 *
 * A kernel is
 *     extern "C" __global__ void __launch_bounds__(RT_GPU_BLOCK) lk_k<index>(struct { long long s[nslots]; } p)
 * taking one parameter block of int64 slots by value, laid out by gpu_kernel_layout() below, the same function
 * on both sides. Slots hold values in the encoding of ir_abi_slots (ir.h): an integer or bool widened to int64,
 * a float as the bits of a double (float32 and float16 widened, exactly), an array as data, base, shape[n],
 * strides[n] (bytes), a tuple as its elements' slots in order. Device arrays hold device addresses in data.
 *
 * Slots 0 and 1 are the runtime's (rt_gpu_launch fills them in):
 *   s[0]  the device error record: an RtError (runtime.h) followed by an unsigned 64-bit `order` (offset 40,
 *         ULLONG_MAX while no work item failed) and a 32-bit lock (offset 48, 0). A work item that raises
 *         writes the record so that the lowest failing work item's error is the one left (atomicMin on order,
 *         then the fields under the lock if order is still its own), and stops; the host reads the record at the
 *         next rt_gpu_sync. So the error does not depend on the grid, as ir.h asks of every backend.
 *   s[1]  the scratch (RT_GPU_SCRATCH_BYTES): a uint32 ticket at offset 0 and a uint32 count of finished
 *         blocks at offset 4 (both zero before a launch; a kernel that uses them leaves them zero), results at
 *         offset 16 (8-byte slots in the encoding above: GPU_RESULTS of them), per-block (or per-chunk) partial
 *         results from offset GPU_PARTIALS_OFFSET (16 bytes each, RT_GPU_MAX_REDUCE_BLOCKS of them), and a
 *         chunked scan's per-chunk uint32 flags from GPU_SCAN_FLAGS_OFFSET (zero before a launch and after).
 * Then, by kind:
 *   s[n]           the number of work items (rt_gpu_launch spreads [0, n) over the grid);
 *   s[dims + d]    the iteration space, d < ndim;
 *   s[flat_ok]     MAP, REDUCE_ALL, chunked SCAN: 1 when the inputs and (MAP) out all have the space's shape and C layout,
 *                  so that element k of the space is element k of each (a flat index serves all);
 *   s[input[i]]    MAP, REDUCE_*, SCAN: the i-th input of the map computed (the region itself for MAP, the
 *                  input of a reduce or scan): an array input is its data address, then its strides over the
 *                  space's last nd axes (nd its ndim; 0 on a broadcast axis); a scalar input is its value
 *                  (in ir_abi_slots' encoding: a complex takes two slots, its parts as doubles);
 *   s[out]         MAP, IMAP, REDUCE_AXIS, SCAN: the array filled, data address then its strides (its ndim);
 *   s[start], s[step]  PRANGE: the loop's first value and step (n is its trip count, already checked);
 *   s[product]     REDUCE_AXIS of an integer or bool matrix product (gpu_reduce_is_product): 1 when the host found
 *                  the inputs' strides those of a product (a's zero along axis 2, b's along axis 0): then the
 *                  work items are as MATMUL's, over the space (m, k, n) and out; 0: a line each, as any;
 *   s[arg[i]]      MATMUL: its arguments a, b and out, each an array value (data, base, shape, strides);
 *   s[use[j]]      the region's uses (IrRegion.uses, in order, in ir_abi_slots' encoding): each variable's value before the region (the
 *                  per-element code takes its own copy of each: variables it assigns are private to a work item).
 * Work items: MAP, REDUCE_ALL: the elements of the space; IMAP: its index tuples in C order; REDUCE_AXIS: the
 * elements of out (each reduces one line of the space along the axis, in order); SCAN: the lines of out along
 * its axis, or, chunked (below), the elements of the space flattened; PRANGE: the iterations; MATMUL:
 * RT_GPU_BLOCK per square tile of GPU_MATMUL_TILE x GPU_MATMUL_TILE elements of out (a block per tile,
 * cuda_matmul.c), launched only when cuBLAS did not take the product (runtime.h's rt_gpu_gemm).
 * A chunked SCAN (GpuKernelLayout.chunked: axis -1, a combine whose partials combine, element code that writes
 * nothing, as it runs twice) launches as RT_LAUNCH_REDUCE over the elements: each block takes the next chunk
 * (the ticket), a contiguous run of ceil(n / blocks) elements rounded up to whole tiles; it reduces its chunk,
 * publishes the total at GPU_PARTIALS_OFFSET + chunk * 16 and sets the chunk's flag; it combines the totals of
 * the chunks before its own, in chunk order, as a fixed tree (waiting for their flags: they were taken by
 * blocks already running, so the wait ends), and scans its chunk again from that prefix, tile by tile. The last
 * block to finish (the count at offset 4) zeroes the flags, the ticket and the count. The result depends on
 * the grid only, never on timing.
 * Launch kinds: REDUCE_ALL, a PRANGE with reductions and a chunked SCAN launch as RT_LAUNCH_REDUCE (one wave:
 * GPU_REDUCE_BLOCKS_PER_SM blocks an SM at most, which their __launch_bounds__ promise can be resident). A
 * REDUCE_ALL or PRANGE block reduces its work items (a built-in op: any of its items, grid-stride; a user's
 * combine: block b the b-th contiguous chunk, in order), writes its partial at GPU_PARTIALS_OFFSET + block * 16,
 * and the last block to take a ticket
 * combines the partials in block order into the results (REDUCE_ALL: one; PRANGE: one per reduction, in
 * for_range.reds order; argmin/argmax: the index), then zeroes the ticket. An empty REDUCE_ALL still launches
 * one block: it writes the identity, or raises the empty-reduction ValueError. The rest launch as
 * RT_LAUNCH_ELEMENTS. */
#ifndef LK_GPU_KERNEL_ABI_H
#define LK_GPU_KERNEL_ABI_H

#include "../backend.h"

#define GPU_RESULTS 64                /* result slots in the scratch (a prange with more reductions is refused) */
#define GPU_RESULTS_OFFSET 16
#define GPU_PARTIALS_OFFSET 1024      /* 16 bytes a block: a value and, for argmin/argmax, its index */
#define GPU_REDUCE_BLOCKS_PER_SM 4    /* rt_gpu_launch's grid for RT_LAUNCH_REDUCE: the kernels' __launch_bounds__ */
#define GPU_DONE_OFFSET 4             /* the count of finished blocks (chunked scans) */
#define GPU_SCAN_FLAGS_OFFSET (GPU_PARTIALS_OFFSET + 16 * RT_GPU_MAX_REDUCE_BLOCKS)
#if GPU_SCAN_FLAGS_OFFSET + 4 * RT_GPU_MAX_REDUCE_BLOCKS > RT_GPU_SCRATCH_BYTES
#error "the scratch cannot hold a chunked scan's partials and flags"
#endif
#define GPU_ERROR_ORDER_OFFSET 40
#define GPU_ERROR_LOCK_OFFSET 48
#define GPU_ERROR_RECORD_BYTES 64
#define GPU_MATMUL_TILE 128           /* the side of the tile of out that a matrix product's block computes */

typedef enum {
    GPU_K_MAP,         /* an IR_MAP (with out, after ir_explicit_alloc) */
    GPU_K_IMAP,        /* an IR_IMAP with out */
    GPU_K_REDUCE_ALL,  /* an IR_REDUCE with axis -1: a scalar result */
    GPU_K_REDUCE_AXIS, /* an IR_REDUCE along an axis, with out */
    GPU_K_SCAN,        /* an IR_SCAN with out */
    GPU_K_PRANGE,      /* a parallel IR_FOR_RANGE */
    GPU_K_MATMUL,      /* the matmul intrinsic, with out */
} GpuKernelKind;

typedef struct GpuKernelLayout {
    GpuKernelKind kind;
    const IrNode *node;   /* the region */
    const IrNode *map;    /* MAP: node; REDUCE_*, SCAN: the input map; else NULL */
    int ndim;             /* of the iteration space (MAP, IMAP, REDUCE_*, SCAN) */
    int nslots;
    int n, dims, flat_ok, out, start, step; /* slot offsets, -1 where the kind has none */
    int product;          /* REDUCE_AXIS that gpu_reduce_is_product: the slot of its flag, else -1 */
    bool chunked;         /* SCAN: the multi-block scan of everything (above); else a work item per line */
    int input[IR_MAX_MAP_INPUTS];
    int ninputs;
    int arg[3];
    int *use;             /* by index into node->region->uses */
    int nuses;
} GpuKernelLayout;

/* Whether an axis reduction is typespec's integer or bool matrix product, C = sum over axis 1 of
 * a[:, :, None] * b[None, :, :] (typespec/linalg.c; & for bool): reduce[add] along axis 1 of a 3-d map of two
 * arrays whose body multiplies its two params (each maybe cast to the body's dtype), into out of that dtype.
 * Such a kernel also holds the tiled product (cuda_matmul.c), which the host picks when the strides agree. */
bool gpu_reduce_is_product(const IrNode *n);

/* Whether an axis reduction is typespec's float matrix-vector product (float32 or float64, one dtype):
 * GPU_GEMV_ROWS for A @ x, reduce[add] along axis 1 of a map of a 2-d and a 1-d array multiplying its params;
 * GPU_GEMV_COLS for x @ B, along axis 0 of a map of a 2-d view (x[:, None]) and a 2-d array; else GPU_GEMV_NONE.
 * The host offers those to cuBLAS's GEMV (when x[:, None]'s strides say it is one) before launching the kernel,
 * which is the plain axis reduction. */
typedef enum { GPU_GEMV_NONE, GPU_GEMV_ROWS, GPU_GEMV_COLS } GpuGemvForm;
GpuGemvForm gpu_reduce_gemv_form(const IrNode *n);

/* The layout of region node's kernel (node->region set), allocated in arena; false with diag set when the node
 * is one the gpu backend cannot run yet (the message says what, naming the node's line). */
bool gpu_kernel_layout(const IrNode *node, RtArena *arena, GpuKernelLayout *out, const char *file, LkDiag *diag);

/* ---- the CUDA C emitter (cuda_*.c) ---- */
/* The kernels of a compilation: every region of root and of the functions it calls, in a fixed order, each
 * with its layout (kernel i is lk_k<i>); false with diag set when one cannot run on the gpu yet. */
bool gpu_collect_kernels(IrFunc *root, RtArena *a, GpuKernelLayout **kernels, int *n, LkDiag *diag);
/* The CUDA C of those kernels, one translation unit (malloc'd), its error records naming strings of names;
 * NULL with diag set. may_raise[i]: whether kernel i can write the error record (gpu.h). */
char *gpu_emit_cuda(IrFunc *root, const GpuKernelLayout *kernels, int n, bool fastmath, RtNames *names, bool *may_raise,
                    LkDiag *diag);

/* ---- the host side (backends/llvm's gpu mode, llvm_backend.c and gpu_launch.c) ---- */
typedef struct GpuHost {
    const GpuKernelLayout *kernels; /* kernel i is kernels[i], named lk_k<i> in the module */
    int nkernels;
    const RtNames *names;           /* the strings the kernels' error records name: the host code's table
                                     * starts with them, in order, so an index means the same on both sides */
} GpuHost;
/* The intrinsics whose host code a gpu compilation cannot run, as the runtime's code that does it reads host
 * memory and the arrays are the device's: what the refusal says it cannot do ("sort") and the NumPy functions
 * that lower to it; NULL for every other intrinsic. The one table of them, which the user guide's coverage
 * table reads (be_refusal). None at present: sorts, np.linalg's factorisations and np.random's draws run in the
 * host code on host copies of the device data (runtime/gpu_host.c). */
typedef struct GpuHostRefusal {
    const char *what;
    const char *functions;
} GpuHostRefusal;
const GpuHostRefusal *gpu_host_refusal(IrIntrinsic k);
/* The host code of a gpu compilation: f compiled as for the cpu, except that array memory is the device's and
 * every region of host->kernels is launched instead of run. The code reads the loaded RtGpuModule from a
 * global of its own, whose address *module_slot receives: set it before the entry first runs. NULL with diag
 * set on failure. */
BeCompiled *be_llvm_compile_gpu_host(IrFunc *f, const BeOptions *opts, const GpuHost *host, void ***module_slot,
                                     LkDiag *diag);
/* The module global of a gpu compilation of that name already in the process (then its kernels are loaded and its
 * host code compiled), else NULL. */
void **be_llvm_gpu_module_slot(const char *module);
/* Drops a hold on the llvm backends' code of that compilation (BeBackend.release); when it was the last, the code
 * is freed and the RtGpuModule its global held is returned (for the caller to unload), else NULL. */
void *be_llvm_release(const char *module);
/* What besides the IR changes the host code: as the cpu backend's key_extras. */
char *be_llvm_cpu_key_extras(const BeOptions *opts, LkDiag *diag);

#endif
