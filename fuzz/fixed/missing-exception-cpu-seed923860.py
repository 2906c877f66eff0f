# lorikeet fuzz finding: seed 923860, missing-exception on cpu (new)
# python -m fuzz --replay fuzz/fixed/missing-exception-cpu-seed923860.py   (make fuzz REPLAY=...)
#   cpu: returns where the reference raises ValueError: reduce of an empty axis with no init
#   openmp: returns where the reference raises ValueError: reduce of an empty axis with no init
import math
import numpy as np
import lorikeet as lk
nan = float('nan')
inf = float('inf')

def f(a0, s0, s1):
    v1 = a0.argmax(axis=-2)
    v2 = a0[2::2, 1:3:-1, None]
    v3 = lk.reduce(lambda x, y: x, v2, axis=1)
    return (v1,)

def make_inputs():
    a0 = np.array([0.0, 4.0, -4.0, 6.0, 2.4800000190734863, -inf, -0.800000011920929, 4.0, nan, -3.700000047683716, 2.0, -2.640000104904175], dtype=np.float32).reshape((1, 12))[::1, ::3]
    s0 = np.int8(-7)
    s1 = np.uint32(2)
    return (a0, s0, s1)
