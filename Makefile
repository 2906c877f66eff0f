# lorikeet: one Makefile, top to bottom.
#   make          build the C extension in place (pyshim/lorikeet/_lorikeet*.so)
#   make demo     set up a fresh machine, build, run examples/ against NumPy
#   make test     set up a fresh machine, build, run the test suite
#   make test-gpu the suite on the gpu backend, where a GPU can be used
#   make bench    set up (with numba), build, run the benchmark suite and, where a GPU is, its gpu rows against
#                 CuPy (make bench-quick: the short one)
#   make asan     build with AddressSanitizer/UBSan into build-asan/ and run a subset of the tests that reaches every
#                 layer under it (make asan ASAN_TESTS=tests: all of them); `make test` runs it last
#   make fuzz     the differential fuzzer (fuzz/): N programs (default 1000) from seed SEED (default 0), each run by
#                 CPython+NumPy and by lorikeet on every backend that can run here, in JOBS worker processes;
#                 findings, shrunk, in fuzz/findings/. make fuzz REPLAY=path runs one saved program again

PYTHON      ?= $(CURDIR)/.venv/bin/python
LLVM_CFLAGS ?= -I/usr/include/llvm-c-16 -I/usr/include/llvm-16
LLVM_LIBS   ?= -l:libLLVM-16.so.1
CC          ?= cc
OPT         ?= -O2

PY_INC      := $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
NP_INC      := $(shell $(PYTHON) -c 'import numpy; print(numpy.get_include())' 2>/dev/null)
EXT_SUFFIX  := $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))' 2>/dev/null)

WARN        := -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers
CFLAGS_ALL   = -std=gnu11 $(OPT) -g -fPIC -fvisibility=hidden $(WARN) $(LLVM_CFLAGS) -I$(PY_INC) -I$(NP_INC) \
               -DNPY_NO_DEPRECATED_API=NPY_1_22_API_VERSION $(EXTRA_CFLAGS)

# Layers, in dependency order (each may include the headers of the layers after it only).
SRC := $(wildcard pyshim/*.c) $(wildcard frontend/*.c) $(wildcard typespec/*.c) $(wildcard ir/*.c) \
       $(wildcard backends/*.c) $(wildcard backends/llvm/*.c) $(wildcard backends/gpu/*.c) $(wildcard runtime/*.c)
HDR := $(wildcard */*.h) $(wildcard backends/*/*.h)
BUILD ?= build
OBJ := $(patsubst %.c,$(BUILD)/%.o,$(SRC))
EXT := pyshim/lorikeet/_lorikeet$(EXT_SUFFIX)

.PHONY: all setup demo test test-gpu bench bench-quick asan fuzz clean check-layers
all: $(EXT)

$(BUILD)/%.o: %.c $(HDR) Makefile
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -c $< -o $@

# the matrix-multiply kernels want full optimisation and fused multiply-add
$(BUILD)/runtime/gemm.o: OPT = -O3 -ffp-contract=fast

# --build-id: a hash of the linked bytes, which the disk cache keys on (pyshim/code_cache.c)
$(EXT): $(OBJ)
	$(CC) -shared -Wl,--build-id=sha1 $(OBJ) -o $@ $(LLVM_LIBS) -ldl -lm $(EXTRA_LDFLAGS)

setup:
	bash scripts/setup.sh

demo: setup
	$(MAKE) all
	PYTHONPATH=pyshim $(PYTHON) examples/demo.py

# The suite runs on the cpu backend, then all of it again on openmp, with every parallel loop on the team however
# small (threshold 0), so the parallel code runs on the suite's small inputs too (errors, memory and inspection
# included: a test that is about one backend says so and picks it). The gpu backend's kernels compiled by NVRTC
# and run in the host emulation do not depend on the backend the suite runs on: the cpu pass runs them once.
OPENMP_TESTS := $(filter-out tests/test_gpu_codegen.py tests/test_gpu_kernels_emulated.py tests/test_cache_gpu.py,$(sort $(wildcard tests/test_*.py)))
# Results must not depend on the machine's vector width: the tests whose results depend on how loops are cut
# run once more compiled for a narrower CPU than most hosts have (SSE4.2, no AVX), and float16's (no F16C there).
NARROW_CPU   := x86-64-v2
NARROW_TESTS := tests/test_openmp.py tests/test_reproducible.py tests/test_float16.py

test: setup
	$(MAKE) all
	$(MAKE) check-layers
	PYTHONPATH=pyshim $(PYTHON) -m pytest -q tests
	LORIKEET_BACKEND=openmp LORIKEET_PARALLEL_THRESHOLD=0 PYTHONPATH=pyshim $(PYTHON) -m pytest -q $(OPENMP_TESTS)
	LORIKEET_CPU=$(NARROW_CPU) PYTHONPATH=pyshim $(PYTHON) -m pytest -q $(NARROW_TESTS)
	$(MAKE) asan

# The whole suite on the gpu backend, where a GPU can be used (the gpu backend is being built: issue 10; this pass
# joins `make test` when it passes).
test-gpu: setup
	$(MAKE) all
	@if PYTHONPATH=pyshim $(PYTHON) -c 'import sys, lorikeet as lk; sys.exit(not lk.gpu_available()[0])'; then \
	    LORIKEET_BACKEND=gpu PYTHONPATH=pyshim $(PYTHON) -m pytest -q tests; \
	else echo "gpu pass skipped: $$(PYTHONPATH=pyshim $(PYTHON) -c 'import lorikeet as lk; print(lk.gpu_available()[1])')"; fi

bench: 
	LK_WITH_NUMBA=1 bash scripts/setup.sh
	$(MAKE) all
	PYTHONPATH=pyshim:. $(PYTHON) -m benchmarks --full
	PYTHONPATH=pyshim:. $(PYTHON) -m benchmarks.gpu
	PYTHONPATH=pyshim:. $(PYTHON) -m benchmarks.crossover
	PYTHONPATH=pyshim:. $(PYTHON) -m lorikeet calibrate
	PYTHONPATH=pyshim:. $(PYTHON) -m benchmarks.auto_choice
	PYTHONPATH=pyshim:. $(PYTHON) -m benchmarks --report

bench-quick:
	LK_WITH_NUMBA=1 bash scripts/setup.sh
	$(MAKE) all
	PYTHONPATH=pyshim:. $(PYTHON) -m benchmarks --quick
	PYTHONPATH=pyshim:. $(PYTHON) -m benchmarks.gpu --quick
	PYTHONPATH=pyshim:. $(PYTHON) -m benchmarks.crossover --quick
	PYTHONPATH=pyshim:. $(PYTHON) -m lorikeet calibrate --quick
	PYTHONPATH=pyshim:. $(PYTHON) -m benchmarks.auto_choice --quick
	PYTHONPATH=pyshim:. $(PYTHON) -m benchmarks --report

# The layering rule of docs/ARCHITECTURE.md, checked: Python.h only in pyshim/ and frontend/, and no layer
# includes a header of a layer to its left.
check-layers:
	bash scripts/check_layers.sh

# AddressSanitizer and UBSan (any undefined behaviour fails the run) over tests that reach every layer: the shim
# and dispatcher (skeleton, errors: bad input of every kind), the front end and typing (scalar_semantics: every
# scalar rule), the IR's passes (passes, fusion, regions), the cpu backend and the runtime (operators: the
# data-parallel nodes; memory: allocation and freeing), the openmp backend's team (openmp), the disk cache
# (cache_store), the gpu backend's runtime without a GPU (gpu_runtime), 250 generated programs (fuzz), and calls
# run in pieces with their helper thread (split), and print()'s records (print).
ASAN_TESTS ?= tests/test_skeleton.py tests/test_errors.py tests/test_scalar_semantics.py tests/test_passes.py \
              tests/test_fusion.py tests/test_regions.py tests/test_operators.py tests/test_memory.py \
              tests/test_openmp.py tests/test_cache_store.py tests/test_gpu_runtime.py tests/test_fuzz.py \
              tests/test_split.py tests/test_print.py
asan:
	rm -f pyshim/lorikeet/_lorikeet*.so
	$(MAKE) BUILD=build-asan OPT=-O1 EXTRA_CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined \
	        -fno-omit-frame-pointer" EXTRA_LDFLAGS="-fsanitize=address,undefined" all
	LD_PRELOAD=$$($(CC) -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 \
	  PYTHONPATH=pyshim $(PYTHON) -m pytest -q -x -p no:cacheprovider $(ASAN_TESTS); status=$$?; \
	  rm -f pyshim/lorikeet/_lorikeet*.so; $(MAKE) -s all; exit $$status  # the sanitised build only loads with
	                                                                    # LD_PRELOAD: the normal one is relinked

# The differential fuzzer (fuzz/__init__.py says how it works; fuzz/known.py lists what it does not count).
N    ?= 1000
SEED ?= 0
JOBS ?= 2
fuzz: all
	@if [ -n "$(REPLAY)" ]; then PYTHONPATH=pyshim $(PYTHON) -m fuzz --replay $(REPLAY); \
	else PYTHONPATH=pyshim $(PYTHON) -m fuzz -n $(N) --seed $(SEED) --jobs $(JOBS); fi

clean:
	rm -rf build build-asan pyshim/lorikeet/_lorikeet*.so
