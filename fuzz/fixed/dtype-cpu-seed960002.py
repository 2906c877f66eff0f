# lorikeet fuzz finding: seed 960002, dtype on cpu (new; fixed: logaddexp takes NumPy's loop for mixed integers)
# python -m fuzz --replay fuzz/fixed/dtype-cpu-seed960002.py   (make fuzz REPLAY=...)
#   cpu: result[0]: dtype float32 where the reference has float16 (values [[9.000006]] and [[9.]])
#   openmp: result[0]: dtype float32 where the reference has float16 (values [[9.000006]] and [[9.]])
import math
import numpy as np
import lorikeet as lk
nan = float('nan')
inf = float('inf')

def f(a0, a1, a2, s0, s1):
    v2 = np.logaddexp(s0, a0)
    return (v2,)

def make_inputs():
    a0 = np.array([-3], dtype=np.int8).reshape((1, 1))[::-1, ::1]
    a1 = np.array([-6.69140625], dtype=np.float16).reshape((1,))
    a2 = np.array([-3, 9, -2, -4], dtype=np.int32).reshape((4,))[::-2]
    s0 = np.uint8(9)
    s1 = np.float16(-2.0)
    return (a0, a1, a2, s0, s1)
