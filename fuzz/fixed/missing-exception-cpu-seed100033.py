# lorikeet fuzz finding: seed 100033, missing-exception on cpu (new: F3 in fuzz/known.py)
# python -m fuzz --replay fuzz/findings/missing-exception-cpu-seed100033.py   (make fuzz REPLAY=...)
#   cpu: returns where the reference raises ValueError: shape mismatch: value array of shape (0,) could not be broadcast to indexing result of shape (1,)
#   openmp: returns where the reference raises ValueError: shape mismatch: value array of shape (0,) could not be broadcast to indexing result of shape (1,)
import math
import numpy as np
import lorikeet as lk
nan = float('nan')
inf = float('inf')

def f(a0, a1, a2):
    v1 = a0.argmin()
    a0[a0] = a2
    return (v1,)

def make_inputs():
    a0 = np.array([5], dtype=np.uint16).reshape((1,))
    a1 = np.array([], dtype=np.bool).reshape((0,))[::2]
    a2 = np.array([], dtype=np.bool).reshape((0,))
    return (a0, a1, a2)
