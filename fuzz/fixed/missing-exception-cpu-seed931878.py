# lorikeet fuzz finding: seed 931878, missing-exception on cpu (new)
# python -m fuzz --replay fuzz/findings/missing-exception-cpu-seed931878.py   (make fuzz REPLAY=...)
#   cpu: returns where the reference raises ValueError: Integers to negative integer powers are not allowed.
#   openmp: returns where the reference raises ValueError: Integers to negative integer powers are not allowed.
import math
import numpy as np
import lorikeet as lk
nan = float('nan')
inf = float('inf')

def f(a0, a1, a2, s0, s1):
    v1 = s1
    v3 = a2
    v4 = np.where(1, a2, np.power(a1, v3))
    return (v1,)

def make_inputs():
    a0 = np.array([-1.0, -0.0, 3.640000104904175, 8.0, 0.5, 1.7999999523162842, 2.0, -5.139999866485596, nan, nan, 2.0, 1.340000033378601, -4.099999904632568, -0.6700000166893005, -inf, -1.7100000381469727, nan, nan, 2.759999990463257, -0.17000000178813934, 3e+38, -5.199999809265137, 7.0, -5.699999809265137], dtype=np.float32).reshape((2, 12))[::-2, ::-2].T
    a1 = np.array([-6, -9, -1, 8, -32768, -4], dtype=np.int16).reshape((6,))
    a2 = np.array([-2, -2, 4, 7, 7, 6], dtype=np.int64).reshape((6, 1))
    s0 = 0.0
    s1 = np.uint64(7)
    return (a0, a1, a2, s0, s1)
