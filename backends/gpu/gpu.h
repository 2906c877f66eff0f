/* gpu.h: what the gpu backend's CUDA C emitter offers the rest of backends/ (the host side in backends/llvm, the
 * gpu backend's registry entry). Internal to backends/. */
#ifndef LK_GPU_H
#define LK_GPU_H

#include "kernel_abi.h"

/* The kernels of a compilation: every parallel region reached from host code, in root and in every callee that
 * host code calls, root first and then root->callees in order, within a function in the order ir_mark_regions
 * marks them; kernel i is named lk_k<i>. Each with its layout (gpu_kernel_layout). The array is allocated in a.
 * false with diag set (a CompileError naming the line) when a region is one the backend cannot run yet. */
bool gpu_collect_kernels(IrFunc *root, RtArena *a, GpuKernelLayout **kernels, int *n, LkDiag *diag);
/* The index of region's kernel among k[0..n), or -1. */
int gpu_kernel_index(const GpuKernelLayout *k, int n, const IrNode *region);
/* One malloc'd CUDA C translation unit holding every kernel (lk_k<i>) and the device functions they call;
 * strings that error records name are indices into names. NULL with diag set: a CompileError ("the gpu backend
 * cannot run ... inside a kernel yet", naming the line) for a form not supported yet. may_raise[i] (when
 * may_raise is not NULL): whether kernel i can write the device error record (a bounds check not proven away,
 * a division by a value not known non-zero, an empty reduction's ValueError, any other runtime check, or a
 * call of a device function when one of them may raise): false means a call that launches only such kernels
 * need not wait for them to learn their errors. */
char *gpu_emit_cuda(IrFunc *root, const GpuKernelLayout *k, int n, bool fastmath, RtNames *names, bool *may_raise,
                    LkDiag *diag);

#endif
