# lorikeet fuzz finding: seed 945722, value on cpu (new; fixed: float32's tolerance for a narrow transcendental, fuzz/check.py precision_floor)
# python -m fuzz --replay fuzz/fixed/value-cpu-seed945722.py   (make fuzz REPLAY=...)
#   cpu: result[0]: [[ nan 5.99995613] [-6.41503739 nan] [ 5.99995613 nan]] where the reference has [[ nan 5.99995613] [-6.41503763 nan] [ 5.99995613 nan]] (float64)
#   openmp: result[0]: [[ nan 5.99995613] [-6.41503739 nan] [ 5.99995613 nan]] where the reference has [[ nan 5.99995613] [-6.41503763 nan] [ 5.99995613 nan]] (float64)
import math
import numpy as np
import lorikeet as lk
nan = float('nan')
inf = float('inf')

def f(a0, a1, a2, s0, s1):
    v1 = a0
    v2 = v1 + np.log2(a2)
    return (v2,)

def make_inputs():
    a0 = np.array([-9], dtype=np.int64).reshape((1,))
    a1 = np.array([-3.80078125, 6.19921875, -7.078125, -2.599609375], dtype=np.float16).reshape((2, 2))[::2, ::-1]
    a2 = np.array([-8, 32767, -5, -32767, 6, -2, 9, 3, 32767, -5, 32766, -8], dtype=np.int16).reshape((6, 2))[::2, ::1]
    s0 = np.float64(-3.89)
    s1 = -1
    return (a0, a1, a2, s0, s1)
