/* registry.c: the one list of what lorikeet compiles by name: builtins, math functions, NumPy functions, array
 * methods and attributes, lorikeet's operators. library.c and the files it calls lower each of them; this table
 * says which exist, so that the user guide's coverage table is generated from it (python -m lorikeet coverage),
 * and so that a call of a name lorikeet does not have is answered with the nearest that it does have (did you
 * mean). tests/test_coverage.py keeps the two in step: every public name of numpy, numpy.linalg, numpy.random,
 * numpy.fft, ndarray, math, builtins and lorikeet, and every ufunc's methods, is compiled, and a name is in this
 * table exactly when the lowering takes it. It must never decide what compiles: the lowering does.
 *
 * `needs` is the intrinsic a name's lowering makes that a backend may refuse (be_refusal; none is refused at
 * present: the gpu's host code sorts, factorises and draws on host copies), checked by the same test against the
 * typed IR. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "ts_internal.h"
#include "../backends/backend.h"

#define NONE IR_INTR_COUNT
#define SORT IR_INTR_SORT
#define LINALG IR_INTR_LINALG
#define RNG IR_INTR_RNG_NEW

static const TsLibEntry entries[] = {
    /* builtins */
    {TS_LIB_BUILTIN, "abs", "numbers", NONE, NULL},
    {TS_LIB_BUILTIN, "all", "reductions", NONE, NULL},
    {TS_LIB_BUILTIN, "any", "reductions", NONE, NULL},
    {TS_LIB_BUILTIN, "bool", "numbers", NONE, NULL},
    {TS_LIB_BUILTIN, "complex", "numbers", NONE, NULL},
    {TS_LIB_BUILTIN, "enumerate", "iteration", NONE, "in a for loop or a comprehension"},
    {TS_LIB_BUILTIN, "float", "numbers", NONE, NULL},
    {TS_LIB_BUILTIN, "int", "numbers", NONE, NULL},
    {TS_LIB_BUILTIN, "isinstance", "types", NONE, "against number types"},
    {TS_LIB_BUILTIN, "len", "sequences", NONE, NULL},
    {TS_LIB_BUILTIN, "list", "sequences", NONE, "of a comprehension or a range: an array"},
    {TS_LIB_BUILTIN, "max", "reductions", NONE, NULL},
    {TS_LIB_BUILTIN, "min", "reductions", NONE, NULL},
    {TS_LIB_BUILTIN, "print", "output", NONE, "not in element code; on gpu not in a kernel, nor of an array"},
    {TS_LIB_BUILTIN, "range", "iteration", NONE, NULL},
    {TS_LIB_BUILTIN, "slice", "sequences", NONE, NULL},
    {TS_LIB_BUILTIN, "sum", "reductions", NONE, NULL},
    {TS_LIB_BUILTIN, "zip", "iteration", NONE, "in a for loop or a comprehension"},

    /* math: Python floats in and out */
    {TS_LIB_MATH, "acos", "math", NONE, NULL}, {TS_LIB_MATH, "acosh", "math", NONE, NULL},
    {TS_LIB_MATH, "asin", "math", NONE, NULL}, {TS_LIB_MATH, "asinh", "math", NONE, NULL},
    {TS_LIB_MATH, "atan", "math", NONE, NULL}, {TS_LIB_MATH, "atan2", "math", NONE, NULL},
    {TS_LIB_MATH, "atanh", "math", NONE, NULL}, {TS_LIB_MATH, "cbrt", "math", NONE, NULL},
    {TS_LIB_MATH, "ceil", "math", NONE, NULL}, {TS_LIB_MATH, "copysign", "math", NONE, NULL},
    {TS_LIB_MATH, "cos", "math", NONE, NULL}, {TS_LIB_MATH, "cosh", "math", NONE, NULL},
    {TS_LIB_MATH, "degrees", "math", NONE, NULL}, {TS_LIB_MATH, "erf", "math", NONE, NULL},
    {TS_LIB_MATH, "erfc", "math", NONE, NULL}, {TS_LIB_MATH, "exp", "math", NONE, NULL},
    {TS_LIB_MATH, "exp2", "math", NONE, NULL}, {TS_LIB_MATH, "expm1", "math", NONE, NULL},
    {TS_LIB_MATH, "fabs", "math", NONE, NULL}, {TS_LIB_MATH, "floor", "math", NONE, NULL},
    {TS_LIB_MATH, "fmod", "math", NONE, NULL}, {TS_LIB_MATH, "gamma", "math", NONE, NULL},
    {TS_LIB_MATH, "hypot", "math", NONE, NULL}, {TS_LIB_MATH, "isfinite", "math", NONE, NULL},
    {TS_LIB_MATH, "isinf", "math", NONE, NULL}, {TS_LIB_MATH, "isnan", "math", NONE, NULL},
    {TS_LIB_MATH, "lgamma", "math", NONE, NULL}, {TS_LIB_MATH, "log", "math", NONE, NULL},
    {TS_LIB_MATH, "log10", "math", NONE, NULL}, {TS_LIB_MATH, "log1p", "math", NONE, NULL},
    {TS_LIB_MATH, "log2", "math", NONE, NULL}, {TS_LIB_MATH, "pow", "math", NONE, NULL},
    {TS_LIB_MATH, "radians", "math", NONE, NULL}, {TS_LIB_MATH, "sin", "math", NONE, NULL},
    {TS_LIB_MATH, "sinh", "math", NONE, NULL}, {TS_LIB_MATH, "sqrt", "math", NONE, NULL},
    {TS_LIB_MATH, "tan", "math", NONE, NULL}, {TS_LIB_MATH, "tanh", "math", NONE, NULL},
    {TS_LIB_MATH, "trunc", "math", NONE, NULL},

    /* numpy: array creation */
    {TS_LIB_NUMPY, "arange", "creation", NONE, NULL}, {TS_LIB_NUMPY, "array", "creation", NONE, NULL},
    {TS_LIB_NUMPY, "asarray", "creation", NONE, NULL}, {TS_LIB_NUMPY, "copy", "creation", NONE, NULL},
    {TS_LIB_NUMPY, "empty", "creation", NONE, NULL}, {TS_LIB_NUMPY, "empty_like", "creation", NONE, NULL},
    {TS_LIB_NUMPY, "eye", "creation", NONE, NULL}, {TS_LIB_NUMPY, "full", "creation", NONE, NULL},
    {TS_LIB_NUMPY, "full_like", "creation", NONE, NULL}, {TS_LIB_NUMPY, "identity", "creation", NONE, NULL},
    {TS_LIB_NUMPY, "linspace", "creation", NONE, NULL}, {TS_LIB_NUMPY, "ones", "creation", NONE, NULL},
    {TS_LIB_NUMPY, "ones_like", "creation", NONE, NULL}, {TS_LIB_NUMPY, "zeros", "creation", NONE, NULL},
    {TS_LIB_NUMPY, "zeros_like", "creation", NONE, NULL},
    /* numpy: scalar types (np.float32(x), and as dtype= arguments) */
    {TS_LIB_NUMPY, "bool", "scalar types", NONE, NULL}, {TS_LIB_NUMPY, "bool_", "scalar types", NONE, NULL},
    {TS_LIB_NUMPY, "cdouble", "scalar types", NONE, NULL}, {TS_LIB_NUMPY, "complex128", "scalar types", NONE, NULL},
    {TS_LIB_NUMPY, "complex64", "scalar types", NONE, NULL}, {TS_LIB_NUMPY, "csingle", "scalar types", NONE, NULL},
    {TS_LIB_NUMPY, "double", "scalar types", NONE, NULL}, {TS_LIB_NUMPY, "float16", "scalar types", NONE, NULL},
    {TS_LIB_NUMPY, "float32", "scalar types", NONE, NULL}, {TS_LIB_NUMPY, "float64", "scalar types", NONE, NULL},
    {TS_LIB_NUMPY, "half", "scalar types", NONE, NULL}, {TS_LIB_NUMPY, "int16", "scalar types", NONE, NULL},
    {TS_LIB_NUMPY, "int32", "scalar types", NONE, NULL}, {TS_LIB_NUMPY, "int64", "scalar types", NONE, NULL},
    {TS_LIB_NUMPY, "int8", "scalar types", NONE, NULL}, {TS_LIB_NUMPY, "intp", "scalar types", NONE, NULL},
    {TS_LIB_NUMPY, "single", "scalar types", NONE, NULL}, {TS_LIB_NUMPY, "uint16", "scalar types", NONE, NULL},
    {TS_LIB_NUMPY, "uint32", "scalar types", NONE, NULL}, {TS_LIB_NUMPY, "uint64", "scalar types", NONE, NULL},
    {TS_LIB_NUMPY, "uint8", "scalar types", NONE, NULL},
    /* numpy: elementwise (ufuncs and their kin) */
    {TS_LIB_NUMPY, "abs", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "absolute", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "add", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "angle", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "arccos", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "arccosh", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "arcsin", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "arcsinh", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "arctan", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "arctan2", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "arctanh", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "around", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "bitwise_and", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "bitwise_not", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "bitwise_or", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "bitwise_xor", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "cbrt", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "ceil", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "clip", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "conj", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "conjugate", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "copysign", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "cos", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "cosh", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "deg2rad", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "degrees", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "divide", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "equal", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "exp", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "exp2", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "expm1", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "fabs", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "floor", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "floor_divide", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "fmax", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "fmin", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "fmod", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "greater", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "greater_equal", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "hypot", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "imag", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "invert", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "isfinite", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "isinf", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "isnan", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "left_shift", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "less", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "less_equal", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "log", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "log10", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "log1p", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "log2", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "logaddexp", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "logaddexp2", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "logical_and", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "logical_not", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "logical_or", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "logical_xor", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "maximum", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "minimum", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "mod", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "multiply", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "negative", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "not_equal", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "positive", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "power", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "rad2deg", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "radians", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "real", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "reciprocal", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "remainder", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "right_shift", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "rint", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "round", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "sign", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "sin", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "sinh", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "sqrt", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "square", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "subtract", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "tan", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "tanh", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "true_divide", "elementwise", NONE, NULL}, {TS_LIB_NUMPY, "trunc", "elementwise", NONE, NULL},
    {TS_LIB_NUMPY, "where", "elementwise", NONE, "with three arguments"},
    /* numpy: reductions and scans */
    {TS_LIB_NUMPY, "all", "reductions", NONE, NULL}, {TS_LIB_NUMPY, "amax", "reductions", NONE, NULL},
    {TS_LIB_NUMPY, "amin", "reductions", NONE, NULL}, {TS_LIB_NUMPY, "any", "reductions", NONE, NULL},
    {TS_LIB_NUMPY, "argmax", "reductions", NONE, NULL}, {TS_LIB_NUMPY, "argmin", "reductions", NONE, NULL},
    {TS_LIB_NUMPY, "cumprod", "reductions", NONE, NULL}, {TS_LIB_NUMPY, "cumsum", "reductions", NONE, NULL},
    {TS_LIB_NUMPY, "max", "reductions", NONE, NULL}, {TS_LIB_NUMPY, "mean", "reductions", NONE, NULL},
    {TS_LIB_NUMPY, "min", "reductions", NONE, NULL}, {TS_LIB_NUMPY, "nanmax", "reductions", NONE, NULL},
    {TS_LIB_NUMPY, "nanmin", "reductions", NONE, NULL}, {TS_LIB_NUMPY, "nansum", "reductions", NONE, NULL},
    {TS_LIB_NUMPY, "prod", "reductions", NONE, NULL}, {TS_LIB_NUMPY, "std", "reductions", NONE, NULL},
    {TS_LIB_NUMPY, "sum", "reductions", NONE, NULL}, {TS_LIB_NUMPY, "var", "reductions", NONE, NULL},
    /* numpy: shapes and arrangement */
    {TS_LIB_NUMPY, "concatenate", "shape", NONE, NULL}, {TS_LIB_NUMPY, "diff", "shape", NONE, NULL},
    {TS_LIB_NUMPY, "expand_dims", "shape", NONE, NULL}, {TS_LIB_NUMPY, "flip", "shape", NONE, NULL},
    {TS_LIB_NUMPY, "fliplr", "shape", NONE, NULL}, {TS_LIB_NUMPY, "flipud", "shape", NONE, NULL},
    {TS_LIB_NUMPY, "hstack", "shape", NONE, NULL}, {TS_LIB_NUMPY, "ravel", "shape", NONE, NULL},
    {TS_LIB_NUMPY, "reshape", "shape", NONE, NULL}, {TS_LIB_NUMPY, "roll", "shape", NONE, NULL},
    {TS_LIB_NUMPY, "stack", "shape", NONE, NULL}, {TS_LIB_NUMPY, "tile", "shape", NONE, NULL},
    {TS_LIB_NUMPY, "transpose", "shape", NONE, NULL}, {TS_LIB_NUMPY, "vstack", "shape", NONE, NULL},
    /* numpy: products */
    {TS_LIB_NUMPY, "dot", "products", NONE, NULL}, {TS_LIB_NUMPY, "einsum", "products", NONE, NULL},
    {TS_LIB_NUMPY, "matmul", "products", NONE, NULL}, {TS_LIB_NUMPY, "outer", "products", NONE, NULL},
    /* numpy: sorting, searching, statistics */
    {TS_LIB_NUMPY, "argsort", "sorting and statistics", SORT, NULL},
    {TS_LIB_NUMPY, "corrcoef", "sorting and statistics", NONE, NULL},
    {TS_LIB_NUMPY, "cov", "sorting and statistics", NONE, NULL},
    {TS_LIB_NUMPY, "histogram", "sorting and statistics", SORT, NULL},
    {TS_LIB_NUMPY, "median", "sorting and statistics", SORT, NULL},
    {TS_LIB_NUMPY, "percentile", "sorting and statistics", SORT, NULL},
    {TS_LIB_NUMPY, "quantile", "sorting and statistics", SORT, NULL},
    {TS_LIB_NUMPY, "searchsorted", "sorting and statistics", NONE, "no sorter="},
    {TS_LIB_NUMPY, "sort", "sorting and statistics", SORT, NULL},
    {TS_LIB_NUMPY, "unique", "sorting and statistics", SORT, NULL},
    /* numpy.random: a generator made in the function (or a NumPy Generator on PCG64 passed in) */
    {TS_LIB_NUMPY, "random.default_rng", "random numbers", RNG,
     "an int seed or none; its random, uniform, integers, normal, standard_normal, exponential, standard_exponential, permutation and shuffle give NumPy's stream"},
    /* numpy.linalg */
    {TS_LIB_NUMPY, "linalg.cholesky", "linear algebra", LINALG, NULL},
    {TS_LIB_NUMPY, "linalg.det", "linear algebra", LINALG, NULL},
    {TS_LIB_NUMPY, "linalg.inv", "linear algebra", LINALG, NULL},
    {TS_LIB_NUMPY, "linalg.norm", "linear algebra", NONE, NULL},
    {TS_LIB_NUMPY, "linalg.solve", "linear algebra", LINALG, NULL},
    /* numpy: ufunc methods */
    {TS_LIB_NUMPY, "add.accumulate", "ufunc methods", NONE, NULL},
    {TS_LIB_NUMPY, "add.outer", "ufunc methods", NONE, NULL},
    {TS_LIB_NUMPY, "add.reduce", "ufunc methods", NONE, NULL},
    {TS_LIB_NUMPY, "divide.outer", "ufunc methods", NONE, NULL},
    {TS_LIB_NUMPY, "logical_and.reduce", "ufunc methods", NONE, NULL},
    {TS_LIB_NUMPY, "logical_or.reduce", "ufunc methods", NONE, NULL},
    {TS_LIB_NUMPY, "maximum.accumulate", "ufunc methods", NONE, NULL},
    {TS_LIB_NUMPY, "maximum.outer", "ufunc methods", NONE, NULL},
    {TS_LIB_NUMPY, "maximum.reduce", "ufunc methods", NONE, NULL},
    {TS_LIB_NUMPY, "minimum.accumulate", "ufunc methods", NONE, NULL},
    {TS_LIB_NUMPY, "minimum.outer", "ufunc methods", NONE, NULL},
    {TS_LIB_NUMPY, "minimum.reduce", "ufunc methods", NONE, NULL},
    {TS_LIB_NUMPY, "multiply.accumulate", "ufunc methods", NONE, NULL},
    {TS_LIB_NUMPY, "multiply.outer", "ufunc methods", NONE, NULL},
    {TS_LIB_NUMPY, "multiply.reduce", "ufunc methods", NONE, NULL},
    {TS_LIB_NUMPY, "power.outer", "ufunc methods", NONE, NULL},
    {TS_LIB_NUMPY, "subtract.outer", "ufunc methods", NONE, NULL},
    {TS_LIB_NUMPY, "true_divide.outer", "ufunc methods", NONE, NULL},

    /* array methods */
    {TS_LIB_METHOD, "all", "reductions", NONE, NULL}, {TS_LIB_METHOD, "any", "reductions", NONE, NULL},
    {TS_LIB_METHOD, "argmax", "reductions", NONE, NULL}, {TS_LIB_METHOD, "argmin", "reductions", NONE, NULL},
    {TS_LIB_METHOD, "argsort", "sorting", SORT, NULL}, {TS_LIB_METHOD, "astype", "conversion", NONE, NULL},
    {TS_LIB_METHOD, "clip", "elementwise", NONE, NULL}, {TS_LIB_METHOD, "conj", "elementwise", NONE, NULL},
    {TS_LIB_METHOD, "conjugate", "elementwise", NONE, NULL}, {TS_LIB_METHOD, "copy", "conversion", NONE, NULL},
    {TS_LIB_METHOD, "cumprod", "reductions", NONE, NULL}, {TS_LIB_METHOD, "cumsum", "reductions", NONE, NULL},
    {TS_LIB_METHOD, "dot", "products", NONE, NULL}, {TS_LIB_METHOD, "flatten", "shape", NONE, NULL},
    {TS_LIB_METHOD, "max", "reductions", NONE, NULL}, {TS_LIB_METHOD, "mean", "reductions", NONE, NULL},
    {TS_LIB_METHOD, "min", "reductions", NONE, NULL}, {TS_LIB_METHOD, "prod", "reductions", NONE, NULL},
    {TS_LIB_METHOD, "ravel", "shape", NONE, NULL}, {TS_LIB_METHOD, "reshape", "shape", NONE, NULL},
    {TS_LIB_METHOD, "round", "elementwise", NONE, NULL}, {TS_LIB_METHOD, "sort", "sorting", SORT, "in place"},
    {TS_LIB_METHOD, "std", "reductions", NONE, NULL}, {TS_LIB_METHOD, "sum", "reductions", NONE, NULL},
    {TS_LIB_METHOD, "transpose", "shape", NONE, NULL}, {TS_LIB_METHOD, "var", "reductions", NONE, NULL},

    /* array attributes */
    {TS_LIB_ATTRIBUTE, "T", "shape", NONE, NULL}, {TS_LIB_ATTRIBUTE, "dtype", "type", NONE, NULL},
    {TS_LIB_ATTRIBUTE, "imag", "elementwise", NONE, NULL}, {TS_LIB_ATTRIBUTE, "itemsize", "type", NONE, NULL},
    {TS_LIB_ATTRIBUTE, "nbytes", "shape", NONE, NULL}, {TS_LIB_ATTRIBUTE, "ndim", "shape", NONE, NULL},
    {TS_LIB_ATTRIBUTE, "real", "elementwise", NONE, NULL}, {TS_LIB_ATTRIBUTE, "shape", "shape", NONE, NULL},
    {TS_LIB_ATTRIBUTE, "size", "shape", NONE, NULL},

    /* lorikeet's operators */
    {TS_LIB_LORIKEET, "imap", "operators", NONE, NULL}, {TS_LIB_LORIKEET, "ireduce", "operators", NONE, NULL},
    {TS_LIB_LORIKEET, "map", "operators", NONE, NULL}, {TS_LIB_LORIKEET, "outer_map", "operators", NONE, NULL},
    {TS_LIB_LORIKEET, "prange", "operators", NONE, "as a for loop's iterable"},
    {TS_LIB_LORIKEET, "reduce", "operators", NONE, NULL}, {TS_LIB_LORIKEET, "scan", "operators", NONE, NULL},
};

/* Other names of functions lorikeet has (NumPy 2's array-API spellings; the math module's are NumPy's without
 * "arc"): a call of one is refused with the name that compiles, which edit distance would not find (asin is
 * nearer to sin than to arcsin). */
static const struct { TsLibKind kind; const char *name, *is; } aliases[] = {
    {TS_LIB_NUMPY, "acos", "arccos"}, {TS_LIB_NUMPY, "acosh", "arccosh"}, {TS_LIB_NUMPY, "asin", "arcsin"},
    {TS_LIB_NUMPY, "asinh", "arcsinh"}, {TS_LIB_NUMPY, "atan", "arctan"}, {TS_LIB_NUMPY, "atan2", "arctan2"},
    {TS_LIB_NUMPY, "atanh", "arctanh"}, {TS_LIB_NUMPY, "bitwise_invert", "invert"},
    {TS_LIB_NUMPY, "bitwise_left_shift", "left_shift"}, {TS_LIB_NUMPY, "bitwise_right_shift", "right_shift"},
    {TS_LIB_NUMPY, "concat", "concatenate"}, {TS_LIB_NUMPY, "cumulative_prod", "cumprod"},
    {TS_LIB_NUMPY, "cumulative_sum", "cumsum"}, {TS_LIB_NUMPY, "permute_dims", "transpose"},
    {TS_LIB_NUMPY, "pow", "power"},
    {TS_LIB_MATH, "arccos", "acos"}, {TS_LIB_MATH, "arccosh", "acosh"}, {TS_LIB_MATH, "arcsin", "asin"},
    {TS_LIB_MATH, "arcsinh", "asinh"}, {TS_LIB_MATH, "arctan", "atan"}, {TS_LIB_MATH, "arctan2", "atan2"},
    {TS_LIB_MATH, "arctanh", "atanh"},
};

/* Names lorikeet does not have whose work a form it has does: the form, said instead of the nearest spelling
 * (np.squeeze's nearest is np.square, which would mislead). */
static const struct { TsLibKind kind; const char *name, *write; } equivalents[] = {
    {TS_LIB_BUILTIN, "sorted", "write np.sort(x) (lists are arrays in lorikeet)"},
    {TS_LIB_BUILTIN, "round", "write np.round(x) (halves to even, as round does; int(np.round(x)) for an int)"},
    {TS_LIB_BUILTIN, "map", "write a comprehension, [f(v) for v in a], or lk.map(f, a)"},
    {TS_LIB_BUILTIN, "filter", "write a boolean mask, a[cond]"},
    {TS_LIB_BUILTIN, "reversed", "write x[::-1]"},
    {TS_LIB_BUILTIN, "pow", "write x ** y"},
    {TS_LIB_BUILTIN, "divmod", "write x // y and x % y"},
    {TS_LIB_NUMPY, "average", "write np.mean(a, axis) (np.average without weights)"},
    {TS_LIB_NUMPY, "squeeze", "write a.reshape(...) or an index (a[:, 0])"},
    {TS_LIB_NUMPY, "count_nonzero", "write np.sum(a != 0)"},
    {TS_LIB_NUMPY, "nanmean", "write np.nansum(a) / np.sum(~np.isnan(a))"},
    {TS_LIB_METHOD, "fill", "write a[:] = v"},
    {TS_LIB_METHOD, "searchsorted", "write np.searchsorted(a, v)"},
    {TS_LIB_METHOD, "tolist", "use the array itself (lists are arrays in lorikeet)"},
    {TS_LIB_METHOD, "item", "write an index, a[i] or a[i, j]"},
    {TS_LIB_METHOD, "squeeze", "write a.reshape(...) or an index (a[:, 0])"},
};

int ts_library(const TsLibEntry **out)
{
    *out = entries;
    return (int)(sizeof entries / sizeof entries[0]);
}

const char *ts_library_prefix(TsLibKind kind)
{
    switch (kind) {
    case TS_LIB_BUILTIN: return "";
    case TS_LIB_MATH: return "math.";
    case TS_LIB_NUMPY: return "numpy.";
    case TS_LIB_METHOD: return ".";
    case TS_LIB_ATTRIBUTE: return ".";
    case TS_LIB_LORIKEET: return "lorikeet.";
    }
    return "";
}

const char *ts_library_refusal(const TsLibEntry *e, const char *backend)
{
    return e->needs == IR_INTR_COUNT ? NULL : be_refusal(backend, e->needs);
}

/* Levenshtein distance of a and b, or more than cap (then cap + 1): names are short. */
static int distance(const char *a, const char *b, int cap)
{
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > 63 || lb > 63 || la - lb > cap || lb - la > cap) return cap + 1;
    int row[64];
    for (int j = 0; j <= lb; j++) row[j] = j;
    for (int i = 1; i <= la; i++) {
        int diag = row[0], best = row[0] = i;
        for (int j = 1; j <= lb; j++) {
            int up = row[j];
            int v = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < v) v = up + 1;
            if (row[j - 1] + 1 < v) v = row[j - 1] + 1;
            row[j] = v;
            diag = up;
            if (v < best) best = v;
        }
        if (best > cap) return cap + 1;
    }
    return row[lb];
}

/* The names of kind `kind` within the namespace of `name` ("linalg.eig": those starting "linalg."; "sinn": the
 * undotted ones), compared without that prefix. */
static const char *in_namespace(const TsLibEntry *e, TsLibKind kind, const char *name)
{
    if (e->kind != kind) return NULL;
    const char *dot = strrchr(name, '.'), *edot = strrchr(e->name, '.');
    size_t ns = dot ? (size_t)(dot - name) + 1 : 0, ens = edot ? (size_t)(edot - e->name) + 1 : 0;
    if (ns != ens || strncmp(name, e->name, ns) != 0) return NULL;
    return e->name + ns;
}

/* Appends to out[cap] at *at, truncating. */
static void put(char *out, size_t cap, size_t *at, const char *fmt, ...)
{
    if (*at + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(out + *at, cap - *at, fmt, ap);
    va_end(ap);
    if (k > 0) *at = *at + (size_t)k < cap ? *at + (size_t)k : cap - 1;
}

void ts_library_suggest(TsLibKind kind, const char *name, char *out, size_t cap)
{
    if (cap == 0) return;
    out[0] = 0;
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (aliases[i].kind == kind && !strcmp(aliases[i].name, name)) {
            snprintf(out, cap, "; did you mean %s%s (the same function)?", ts_library_prefix(kind), aliases[i].is);
            return;
        }
    for (size_t i = 0; i < sizeof equivalents / sizeof equivalents[0]; i++)
        if (equivalents[i].kind == kind && !strcmp(equivalents[i].name, name)) {
            snprintf(out, cap, "; %s instead", equivalents[i].write);
            return;
        }
    const char *dot = strrchr(name, '.');
    const char *leaf = dot ? dot + 1 : name;
    size_t len = strlen(leaf);
    int limit = len <= 3 ? 1 : len <= 6 ? 2 : 3, best = limit + 1, nbest = 0, nns = 0;
    const char *picks[3];
    int shared[3]; /* how long a prefix each pick shares with the name: the longer first (sinn: sin, sinh, sign) */
    int n = (int)(sizeof entries / sizeof entries[0]);
    for (int i = 0; i < n; i++) {
        const char *other = in_namespace(&entries[i], kind, name);
        if (!other) continue;
        nns++;
        int d = distance(leaf, other, limit);
        if (d > best) continue;
        if (d < best) best = d, nbest = 0;
        int p = 0;
        while (leaf[p] && leaf[p] == other[p]) p++;
        int at = nbest < 3 ? nbest++ : 3;
        while (at > 0 && shared[at - 1] < p) {
            if (at < 3) picks[at] = picks[at - 1], shared[at] = shared[at - 1];
            at--;
        }
        if (at < 3) picks[at] = entries[i].name, shared[at] = p;
    }
    size_t at = 0;
    const char *pre = ts_library_prefix(kind), *parens = kind == TS_LIB_METHOD || kind == TS_LIB_BUILTIN ? "()" : "";
    if (nbest > 0 && best <= limit) {
        put(out, cap, &at, "; did you mean ");
        for (int i = 0; i < nbest; i++)
            put(out, cap, &at, "%s%s%s%s", i == 0 ? "" : i == nbest - 1 ? " or " : ", ", pre, picks[i], parens);
        put(out, cap, &at, "?");
        return;
    }
    if (!dot || nns == 0 || nns > 12) return; /* a small namespace (numpy.linalg) is listed instead */
    put(out, cap, &at, " (lorikeet has %s%.*s", pre, (int)(dot - name) + 1, name);
    for (int i = 0, k = 0; i < n; i++) {
        const char *other = in_namespace(&entries[i], kind, name);
        if (other) put(out, cap, &at, "%s%s", k++ ? ", " : "", other);
    }
    put(out, cap, &at, ")");
}

IrNode *ts_unsupported(Ts *ts, IrPos pos, TsLibKind kind, const char *before, const char *name, const char *after)
{
    char hint[512];
    ts_library_suggest(kind, name, hint, sizeof hint);
    TS_ERR(ts, pos, "%s%s%s is not supported%s", before, name, after, hint);
}
