# lorikeet fuzz finding: seed 960397, exception on cpu (new; fixed: a[i, ...] = v stores a one-element v into the 0-d view)
# python -m fuzz --replay fuzz/fixed/exception-cpu-seed960397.py   (make fuzz REPLAY=...)
#   cpu: ValueError: setting an array element with a sequence. (the reference returns)
#   openmp: ValueError: setting an array element with a sequence. (the reference returns)
import math
import numpy as np
import lorikeet as lk
nan = float('nan')
inf = float('inf')

def f(a0, a1):
    v1 = a1
    v3 = a1
    v4 = a1
    v5 = v4
    v3[-1, ...] = v5
    return (v1,)

def make_inputs():
    a0 = np.array([-9, 5, 2, -5], dtype=np.int8).reshape((4,))
    a1 = np.array([3, 9, 5], dtype=np.uint16).reshape((3,))[::3]
    return (a0, a1)
