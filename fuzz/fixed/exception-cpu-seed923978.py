# lorikeet fuzz finding: seed 923978, exception on cpu (new)
# python -m fuzz --replay fuzz/fixed/exception-cpu-seed923978.py   (make fuzz REPLAY=...)
#   cpu: ZeroDivisionError: integer division by zero where the reference raises ValueError: operands could not be broadcast together with shapes (2,) (1,4) (2,)
#   openmp: ZeroDivisionError: integer division by zero where the reference raises ValueError: operands could not be broadcast together with shapes (2,) (1,4) (2,)
import math
import numpy as np
import lorikeet as lk
nan = float('nan')
inf = float('inf')

def f(a0, a1, s0):
    v1 = a0
    v2 = [i for i in range(5)]
    v7 = a1
    v8 = lk.map(lambda r: r.sum(), v7, axis=0)
    v8 //= v1
    return (v2,)

def make_inputs():
    a0 = np.array([False, False, True, False], dtype=np.bool).reshape((1, 4))
    a1 = np.array([1, 3, 7, 2, 9, 5, 7, 8, 4, 255, 2, 4], dtype=np.uint8).reshape((2, 6))[::2, ::3].T
    s0 = 0.5
    return (a0, a1, s0)
