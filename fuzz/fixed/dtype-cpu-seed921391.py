# lorikeet fuzz finding: seed 921391, dtype on cpu (new)
# python -m fuzz --replay fuzz/fixed/dtype-cpu-seed921391.py   (make fuzz REPLAY=...)
#   cpu: result[0]: dtype float32 where the reference has float16 (values [0.7853981] and [0.785])
#   openmp: result[0]: dtype float32 where the reference has float16 (values [0.7853981] and [0.785])
import math
import numpy as np
import lorikeet as lk
nan = float('nan')
inf = float('inf')

def f(a0, s0):
    v1 = a0
    v4 = np.arctan2(np.uint8(3), v1)
    v5 = v4
    return (v5,)

def make_inputs():
    a0 = np.array([3], dtype=np.int8).reshape((1,))
    s0 = np.int64(3)
    return (a0, s0)
