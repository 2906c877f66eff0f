/* math.c: names and arities of the scalar math functions every backend provides. */
#include "ir.h"

static const char *math_names[IR_MATH_COUNT] = {
    "sqrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "arcsin", "arccos",
    "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "floor", "ceil", "trunc", "rint", "fabs",
    "cbrt", "isnan", "isinf", "isfinite", "erf", "erfc", "gamma", "lgamma", "arctan2", "hypot", "power", "fmod", "copysign", "fmin", "fmax",
};

const char *ir_math_name(IrMathFn f) { return math_names[f]; }
int ir_math_arity(IrMathFn f) { return f >= IR_MATH_ATAN2 ? 2 : 1; }
