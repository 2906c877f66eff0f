# lorikeet fuzz finding: seed 981059, exception on cpu (new; fixed: an index-array store checks its integer indices before the value's shape, as NumPy)
# python -m fuzz --replay fuzz/fixed/exception-cpu-seed981059.py   (make fuzz REPLAY=...)
#   cpu: ValueError: operands could not be broadcast together: size 6 against size 1 (dimension 2 from the right) where the reference raises IndexError: index 2 is out of bounds for axis 1 with size 1
#   openmp: ValueError: operands could not be broadcast together: size 6 against size 1 (dimension 2 from the right) where the reference raises IndexError: index 2 is out of bounds for axis 1 with size 1
import math
import numpy as np
import lorikeet as lk
nan = float('nan')
inf = float('inf')

def h0(x, y):
    return (x, y)

def f(a0, a1, s0):
    v2 = a1
    v3 = True
    a0[v2, 2] = a0
    return (v3,)

def make_inputs():
    a0 = np.array([4294967295, 0, 4, 8, 6, 4], dtype=np.uint32).reshape((1, 6))[::-1, ::1].T
    a1 = np.array([32767], dtype=np.int16).reshape((1,))
    s0 = np.uint64(0)
    return (a0, a1, s0)
