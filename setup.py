"""The C extension of `pip install .`: built by the Makefile's own rule (`make all`, the same sources and flags as
`make test` builds), for the interpreter that runs the build. Its objects go to build/<python>-numpy<version>/ (one
folder per Python and NumPy whose headers they were compiled with, beside the Makefile's own build/ objects), so a
second install from the same tree, editable or not, only compiles what changed; the library is written where
setuptools wants it (pyshim/lorikeet/ for an editable install). The metadata is in
pyproject.toml. What the build needs and does not find (LLVM 16's headers or library, a C compiler, make, Python's
headers) is named, with the package that provides it, before anything is compiled."""
import ctypes
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
LLVM_HEADER = "/usr/include/llvm-c-16/llvm-c/Core.h"   # the Makefile's default LLVM_CFLAGS look here
LLVM_LIBRARY = "libLLVM-16.so.1"                         # and its LLVM_LIBS link this


class BuildError(Exception):
    pass


def missing_for_build():
    """What the build needs and does not find, one line each naming how to get it."""
    missing = []
    if "LLVM_CFLAGS" not in os.environ and not os.path.isfile(LLVM_HEADER):
        missing.append(f"LLVM 16's C headers ({LLVM_HEADER}): install llvm-16-dev (apt-get install llvm-16-dev, "
                       "or apt.llvm.org's llvm.sh 16), or set LLVM_CFLAGS to the -I flags of another copy")
    if "LLVM_LIBS" not in os.environ:
        try:
            ctypes.CDLL(LLVM_LIBRARY)
        except OSError:
            missing.append(f"LLVM 16's shared library ({LLVM_LIBRARY}): install llvm-16-dev (it brings libllvm16), "
                           "or set LLVM_LIBS to the linker flags of another copy")
    if not shutil.which(os.environ.get("CC", "cc")):
        missing.append("a C compiler (cc): install gcc, or set CC")
    if not shutil.which("make"):
        missing.append("make: install make")
    include = sysconfig.get_paths()["include"]
    if not os.path.isfile(os.path.join(include, "Python.h")):
        missing.append(f"Python's headers ({include}/Python.h): install python3-dev for this Python")
    return missing


class MakeBuildExt(build_ext):
    def build_extension(self, ext):
        missing = missing_for_build()
        if missing:
            raise BuildError("lorikeet cannot be built here; missing:\n  - " + "\n  - ".join(missing))
        target = os.path.abspath(self.get_ext_fullpath(ext.name))
        import numpy

        objects = os.path.join(HERE, "build", f"{sys.implementation.cache_tag}-numpy{numpy.__version__}")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        jobs = os.environ.get("LORIKEET_BUILD_JOBS") or str(os.cpu_count() or 1)
        cmd = ["make", "-s", "-C", HERE, f"-j{jobs}", "all", f"PYTHON={sys.executable}", f"BUILD={objects}",
               f"EXT={target}"]
        print("building lorikeet's C extension:", " ".join(shlex.quote(c) for c in cmd), flush=True)
        subprocess.run(cmd, check=True)


if __name__ == "__main__":
    setup(ext_modules=[Extension("lorikeet._lorikeet", sources=[])], cmdclass={"build_ext": MakeBuildExt})
