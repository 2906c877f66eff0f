# lorikeet fuzz finding: seed 960020, args on cpu (new; fixed: np.floor of an integer or bool array makes a new array)
# python -m fuzz --replay fuzz/fixed/args-cpu-seed960020.py   (make fuzz REPLAY=...)
#   cpu: argument 0 afterwards: [[False False False False False] [False False False False False] [False False False False False]] where the reference has [[ True False False False True] [False False True False True] [ True True False True False]] (bool)
#   openmp: argument 0 afterwards: [[False False False False False] [False False False False False] [False False False False False]] where the reference has [[ True False False False True] [False False True False True] [ True True False True False]] (bool)
import math
import numpy as np
import lorikeet as lk
nan = float('nan')
inf = float('inf')

def f(a0, a1, s0):
    v1 = a0
    v2 = np.floor(a0)
    v4, v5 = (v2, True)
    v6 = v1
    v4[:] = v6 ^ v4
    return (v5,)

def make_inputs():
    a0 = np.array([True, True, False, False, False, False, False, False, False, True, True, True, True, True, False, True, False, False, False, False, False, True, True, False, True, True, True, False, False, False, False, False, True, True, False, True, True, True, True, True, True, False, False, True, True, False, False, True, False, True, True, False, True, False, True, True, False, True, False, False], dtype=np.bool).reshape((6, 10))[::2, ::-2]
    a1 = np.array([7, 3, 3, 2, 5, 7, 0, 1, 6, 1, 9, 5, 9, 5, 9, 7, 6, 7, 2, 0, 1, 1, 3, 6, 7, 9, 2, 9, 2, 7], dtype=np.uint64).reshape((10, 3))[::-2, ::-1].T
    s0 = 300
    return (a0, a1, s0)
