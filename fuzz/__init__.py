"""fuzz: lorikeet's differential fuzzer.

Random programs within the subset docs/USERGUIDE.md documents (gen.py), over random inputs (inputs.py), are
written as Python source to a file and run by CPython+NumPy (with refops.py standing in for lk.map and friends)
and by lorikeet on every backend that can run here (check.py). Results, dtypes, shapes, the arguments' state
afterwards and exception classes are compared; a program that differs is shrunk to a small one that still differs
(shrink.py) and saved with its seed. What is not counted as a failure is listed in one place, known.py: the
documented differences (which the generator avoids) and the known bugs (each naming its issue or reproducer).

    make fuzz N=10000 SEED=0 JOBS=2        python -m fuzz -n 10000 --seed 0 --jobs 2
    make fuzz REPLAY=fuzz/findings/F.py    python -m fuzz --replay fuzz/findings/F.py

The programs run in worker processes (__main__.py), so that a crash or a hang in compiled code is caught, saved
and shrunk like any other finding. The same seed gives the same program and inputs everywhere.
"""
