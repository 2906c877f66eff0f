# lorikeet fuzz finding: seed 300086, exception on cpu (new: F3 in fuzz/known.py)
# python -m fuzz --replay fuzz/findings/exception-cpu-seed300086.py   (make fuzz REPLAY=...)
#   cpu: IndexError: index 1 is out of bounds for axis 0 with size 1 where the reference raises ValueError: shape mismatch: value array of shape (5,) could not be broadcast to indexing result of shape (1,)
#   openmp: IndexError: index 1 is out of bounds for axis 0 with size 1 where the reference raises ValueError: shape mismatch: value array of shape (5,) could not be broadcast to indexing result of shape (1,)
import math
import numpy as np
import lorikeet as lk
nan = float('nan')
inf = float('inf')

def f(a0, s0, s1):
    v1 = np.array([i for i in range(1)])
    v2 = np.array([x for x in a0 if x])
    v1[v1] = v2
    return (v2,)

def make_inputs():
    a0 = np.array([1, 9223372036854775806, 9, 3, -5], dtype=np.int64).reshape((5,))
    s0 = 10000000000.0
    s1 = np.uint64(9)
    return (a0, s0, s1)
