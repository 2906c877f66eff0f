/* math.c: names and arities of the scalar math functions every backend provides, and their C names. */
#include "ir.h"

static const char *math_names[IR_MATH_COUNT] = {
    "sqrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "arcsin", "arccos",
    "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "floor", "ceil", "trunc", "rint", "fabs",
    "cbrt", "isnan", "isinf", "isfinite", "erf", "erfc", "gamma", "lgamma", "arctan2", "hypot", "power", "fmod", "copysign", "fmin", "fmax",
};

const char *ir_math_name(IrMathFn f) { return math_names[f]; }
int ir_math_arity(IrMathFn f) { return f >= IR_MATH_ATAN2 ? 2 : 1; }

/* C99's <math.h> names, which CUDA's device math API shares; [f][1] is the float32 function. */
static const char *c_names[IR_MATH_COUNT][2] = {
    [IR_MATH_SQRT] = {"sqrt", "sqrtf"},     [IR_MATH_EXP] = {"exp", "expf"},
    [IR_MATH_EXP2] = {"exp2", "exp2f"},     [IR_MATH_EXPM1] = {"expm1", "expm1f"},
    [IR_MATH_LOG] = {"log", "logf"},        [IR_MATH_LOG2] = {"log2", "log2f"},
    [IR_MATH_LOG10] = {"log10", "log10f"},  [IR_MATH_LOG1P] = {"log1p", "log1pf"},
    [IR_MATH_SIN] = {"sin", "sinf"},        [IR_MATH_COS] = {"cos", "cosf"},
    [IR_MATH_TAN] = {"tan", "tanf"},        [IR_MATH_ASIN] = {"asin", "asinf"},
    [IR_MATH_ACOS] = {"acos", "acosf"},     [IR_MATH_ATAN] = {"atan", "atanf"},
    [IR_MATH_SINH] = {"sinh", "sinhf"},     [IR_MATH_COSH] = {"cosh", "coshf"},
    [IR_MATH_TANH] = {"tanh", "tanhf"},     [IR_MATH_ASINH] = {"asinh", "asinhf"},
    [IR_MATH_ACOSH] = {"acosh", "acoshf"},  [IR_MATH_ATANH] = {"atanh", "atanhf"},
    [IR_MATH_FLOOR] = {"floor", "floorf"},  [IR_MATH_CEIL] = {"ceil", "ceilf"},
    [IR_MATH_TRUNC] = {"trunc", "truncf"},  [IR_MATH_RINT] = {"rint", "rintf"},
    [IR_MATH_FABS] = {"fabs", "fabsf"},     [IR_MATH_CBRT] = {"cbrt", "cbrtf"},
    [IR_MATH_ERF] = {"erf", "erff"},        [IR_MATH_ERFC] = {"erfc", "erfcf"},
    [IR_MATH_GAMMA] = {"tgamma", "tgammaf"}, [IR_MATH_LGAMMA] = {"lgamma", "lgammaf"},
    [IR_MATH_ATAN2] = {"atan2", "atan2f"},  [IR_MATH_HYPOT] = {"hypot", "hypotf"},
    [IR_MATH_POW] = {"pow", "powf"},        [IR_MATH_FMOD] = {"fmod", "fmodf"},
    [IR_MATH_COPYSIGN] = {"copysign", "copysignf"},
    [IR_MATH_FMIN] = {"fmin", "fminf"},     [IR_MATH_FMAX] = {"fmax", "fmaxf"},
    /* isnan, isinf, isfinite: C's are macros giving an int; a backend compares (x != x, |x| == inf) */
};

const char *ir_math_c_name(IrMathFn f, bool f32) { return c_names[f][f32]; }
