# lorikeet fuzz finding: seed 931628, exception on cpu (new)
# python -m fuzz --replay fuzz/findings/exception-cpu-seed931628.py   (make fuzz REPLAY=...)
#   cpu: ValueError: cannot convert float NaN to integer where the reference raises IndexError: index 2 is out of bounds for axis 1 with size 2
#   openmp: ValueError: cannot convert float NaN to integer where the reference raises IndexError: index 2 is out of bounds for axis 1 with size 2
import math
import numpy as np
import lorikeet as lk
nan = float('nan')
inf = float('inf')

def f(a0, s0):
    v1 = a0
    v2 = True
    v1[2, None, 2] = np.nan
    return (v2,)

def make_inputs():
    a0 = np.array([255, 7, 254, 3, 4, 9, 8, 6, 6, 9, 4, 7, 0, 255, 8, 1], dtype=np.uint8).reshape((8, 2))[::-2, ::-1]
    s0 = np.uint32(9)
    return (a0, s0)
