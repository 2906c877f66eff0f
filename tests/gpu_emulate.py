"""Runs the gpu backend's kernels without a GPU, to test what they compute: the CUDA C that inspect_cuda gives is
compiled as C++ by the host compiler against a few lines that stand in for CUDA (threads of a block are host
threads, __syncthreads a barrier, __shfl_down_sync an exchange through memory, atomics the compiler's), and a
kernel is launched over a grid, block after block, with its parameter block filled as kernel_abi.h lays it out
(the layout comment above each kernel says where each value goes). Only the kernels' code is under test: the
host side that the gpu backend will have (evaluating operands, allocating, launching) is played by the test."""
import ctypes
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np

CXX = shutil.which("g++") or shutil.which("c++")

SHIM = r"""
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <stdio.h>
#include <stdlib.h>
#include <thread>
#include <vector>
#define __global__
#define __device__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __shared__ static
/* a barrier that aborts instead of hanging when a kernel's threads do not all arrive (a deadlock on a GPU) */
struct lk_barrier {
    std::mutex m;
    std::condition_variable cv;
    unsigned n, count = 0, gen = 0;
    explicit lk_barrier(unsigned n) : n(n) {}
    void arrive_and_wait()
    {
        std::unique_lock<std::mutex> l(m);
        unsigned g = gen;
        if (++count == n) {
            count = 0;
            gen++;
            cv.notify_all();
            return;
        }
        if (!cv.wait_for(l, std::chrono::seconds(20), [&] { return gen != g; })) {
            fprintf(stderr, "gpu_emulate: a barrier waited 20 s: the kernel's threads do not all reach it\n");
            abort();
        }
    }
};
struct lk_dim3 { unsigned x, y, z; };
static thread_local lk_dim3 threadIdx, blockIdx;
static lk_dim3 blockDim, gridDim;
static lk_barrier *lk_block_barrier;
struct lk_warp { lk_barrier *bar; unsigned char buf[32][16]; };
static thread_local lk_warp *lk_my_warp;
static inline void __syncthreads() { lk_block_barrier->arrive_and_wait(); }
static inline void __syncwarp() { lk_my_warp->bar->arrive_and_wait(); }
static inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
template <class T> static T __shfl_down_sync(unsigned, T v, unsigned off)
{
    unsigned lane = threadIdx.x & 31u;
    memcpy(lk_my_warp->buf[lane], &v, sizeof v);
    lk_my_warp->bar->arrive_and_wait();
    T r;
    memcpy(&r, lk_my_warp->buf[lane + off < 32u ? lane + off : lane], sizeof r);
    lk_my_warp->bar->arrive_and_wait();
    return r;
}
template <class T> static T __shfl_up_sync(unsigned, T v, unsigned off)
{
    unsigned lane = threadIdx.x & 31u;
    memcpy(lk_my_warp->buf[lane], &v, sizeof v);
    lk_my_warp->bar->arrive_and_wait();
    T r;
    memcpy(&r, lk_my_warp->buf[lane >= off ? lane - off : lane], sizeof r);
    lk_my_warp->bar->arrive_and_wait();
    return r;
}
static inline unsigned long long atomicMin(unsigned long long *p, unsigned long long v)
{
    unsigned long long old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    while (v < old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) { }
    return old;
}
static inline unsigned atomicCAS(unsigned *p, unsigned cmp, unsigned v)
{
    __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return cmp;
}
static inline unsigned atomicExch(unsigned *p, unsigned v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }
static inline unsigned atomicAdd(unsigned *p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
static inline double __longlong_as_double(long long x) { double d; memcpy(&d, &x, 8); return d; }
static inline long long __double_as_longlong(double x) { long long d; memcpy(&d, &x, 8); return d; }
static inline float __int_as_float(int x) { float d; memcpy(&d, &x, 4); return d; }
/* A grid, one block at a time, each block's threads at once. */
static void lk_run_grid(unsigned grid, unsigned block, const std::function<void()> &kernel)
{
    gridDim = {grid, 1, 1};
    blockDim = {block, 1, 1};
    for (unsigned b = 0; b < grid; b++) {
        lk_barrier bar(block);
        lk_block_barrier = &bar;
        std::vector<lk_warp> warps((block + 31) / 32);
        for (unsigned w = 0; w < warps.size(); w++) warps[w].bar = new lk_barrier(32);
        std::vector<std::thread> threads;
        for (unsigned t = 0; t < block; t++)
            threads.emplace_back([&, t, b] {
                threadIdx = {t, 0, 0};
                blockIdx = {b, 0, 0};
                lk_my_warp = &warps[t / 32];
                kernel();
            });
        for (auto &th : threads) th.join();
        for (auto &w : warps) delete w.bar;
    }
}
"""


class Kernel:
    def __init__(self, lib, index, layout):
        self.index = index
        self.layout = layout
        self.fn = getattr(lib, f"lk_launch_{index}")
        self.fn.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint]


def parse_layout(line):
    out = {}
    for part in line.split()[2:-1]:
        key, _, value = part.partition("=")
        if key in ("arg", "in"):
            out[key] = [int(v) for v in value.split(",") if v]
        elif key == "uses":
            out[key] = {u.split(":")[0]: int(u.split(":")[1]) for u in value.split(",") if u}
        else:
            out[key] = int(value)
    return out


class Module:
    """The kernels of one inspect_cuda source, runnable on the host."""

    def __init__(self, src):
        layouts = [parse_layout(l) for l in src.splitlines() if l.startswith("/* layout:")]
        launchers = []
        for i, lay in enumerate(layouts):
            launchers.append(f'extern "C" void lk_launch_{i}(const long long *slots, unsigned grid, unsigned block)\n'
                             f'{{ lk_p{i} p; memcpy(&p, slots, sizeof p); lk_run_grid(grid, block, [&] {{ lk_k{i}(p); }}); }}\n')
        self.dir = tempfile.mkdtemp(prefix="lk_emu")
        cpp = os.path.join(self.dir, "k.cpp")
        with open(cpp, "w") as f:
            body = re.sub(r"^#pragma nv_diag_suppress.*$", "", src, flags=re.M)
            f.write(SHIM + body + "\n".join(launchers))
        so = os.path.join(self.dir, "k.so")
        # -fno-gnu-unique: a template's static locals (the matmul tiles' __shared__ arrays) and its instances are
        # vague-linkage symbols that would otherwise bind to the first module loaded in the process
        r = subprocess.run([CXX, "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", "-w", "-fno-gnu-unique",
                            "-Wl,-Bsymbolic", cpp, "-o", so],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(r.stderr[:4000])
        self.lib = ctypes.CDLL(so)
        self.kernels = [Kernel(self.lib, i, lay) for i, lay in enumerate(layouts)]
        self.keep = []

    def launch(self, index, fill, grid, block=256):
        """Runs kernel index over grid blocks; fill(slots, layout) puts the values in. Returns (results, error):
        the scratch's result slots (int64) and the error record (status, code, line, extra) or None."""
        lay = self.kernels[index].layout
        slots = np.zeros(lay["nslots"], dtype=np.int64)
        err = np.zeros(64, dtype=np.uint8)
        err.view(np.uint64)[5] = np.iinfo(np.uint64).max
        scratch = np.zeros(1 << 16, dtype=np.uint8)
        slots[0] = err.ctypes.data
        slots[1] = scratch.ctypes.data
        self.keep = []
        fill(self, slots, lay)
        self.kernels[index].fn(slots.ctypes.data, grid, block)
        head = err[:16].view(np.int32)
        results = scratch[16:16 + 8 * 64].view(np.int64).copy()
        assert scratch[:4].view(np.uint32)[0] == 0, "the ticket was left non-zero"
        error = None if head[0] == 0 else (int(head[0]), int(head[1]), int(head[2]),
                                           tuple(int(x) for x in err[16:40].view(np.int64)))
        return results, error

    def array(self, slots, at, a, with_base=True):
        """Array a into slots from `at`: data, base, shape, strides (an argument value), or with_base False:
        data, strides (a map's input or out)."""
        self.keep.append(a)
        vals = [a.ctypes.data] + ([a.ctypes.data] + list(a.shape) if with_base else []) + list(a.strides)
        slots[at:at + len(vals)] = vals

    def scalar(self, slots, at, x):
        slots[at] = np.array(float(x)).view(np.int64) if isinstance(x, (float, np.floating)) else int(x)

    def value(self, slots, at, v):
        if isinstance(v, np.ndarray):
            self.array(slots, at, v)
        else:
            self.scalar(slots, at, v)


def as_float(bits, dtype=np.float64):
    return np.array(bits, dtype=np.int64).view(np.float64).astype(dtype)[()]
