# lorikeet fuzz finding: seed 931356, exception on cpu (new)
# python -m fuzz --replay fuzz/findings/exception-cpu-seed931356.py   (make fuzz REPLAY=...)
#   cpu: ValueError: operands could not be broadcast together: size 3 against size 1 (dimension 2 from the right) (the reference returns)
#   openmp: ValueError: operands could not be broadcast together: size 3 against size 1 (dimension 2 from the right) (the reference returns)
import math
import numpy as np
import lorikeet as lk
nan = float('nan')
inf = float('inf')

def h0(x, y):
    return (x, y)

def f(a0, a1, a2, s0):
    a1[a0] = a2
    v2 = a2
    return (v2,)

def make_inputs():
    a0 = np.array([], dtype=np.int64).reshape((0,))
    a1 = np.array([], dtype=np.int64).reshape((0,))[::-2]
    a2 = np.array([], dtype=np.float64).reshape((3, 0))
    s0 = np.int32(-4)
    return (a0, a1, a2, s0)
