/* ir.h: lorikeet's intermediate representation, untyped and typed.
 *
 * One structured IR serves both stages. The frontend builds it from Python's AST with every `type` NULL
 * (the untyped IR, one per Python function, reused for every specialisation). typespec makes a typed copy for
 * one argument-type signature, in that compilation's arena, where every expression and variable has a type and
 * where array operations have become the data-parallel nodes (IR_MAP, IR_REDUCE, ...). Passes (ir/fuse.c,
 * ir/explicit_alloc.c, ...) rewrite the typed IR; backends lower it.
 *
 * Invariants of the typed IR (what backends may rely on):
 *  - every IrNode of an expression kind has a non-NULL type; every IrVar has a type;
 *  - operands of IR_BINOP/IR_COMPARE/IR_UNOP are scalars of the same type (typespec inserts IR_CAST); the result
 *    has that type too, except compares (bool), IR_OP_COMPLEX (the complex of its float operands) and the
 *    complex unops REAL, IMAG and ABS (the part's float type);
 *  - array arithmetic appears only inside the body of an IR_MAP, whose body is a scalar expression over the
 *    map's params;
 *  - after ir_explicit_alloc(), a map, imap, axis reduction, scan or array-making intrinsic (concatenate,
 *    matmul, mask_select) that produces a new array appears only as an IR_EXPR_STMT with `out` set to a
 *    variable that an IR_ALLOC filled just before, the shape computed in the IR. A map that is a
 *    reduction's or scan's input is fused into it: no array. Not covered: arrays made inside a per-element
 *    body (of a map, imap or combine); a backend's own scratch (see explicit_alloc.c).
 *  - after ir_reduce_inputs_as_maps(), the input of every IR_REDUCE and IR_SCAN is an IR_MAP without `out`.
 * Nodes are allocated in an RtArena and never freed one by one.
 *
 * ---- The contract between the compiler and every backend ----
 * A backend is written against this header alone: what follows is what a typed program means, and a backend
 * that meets it needs to read no other backend. tests/test_scalar_semantics.py runs every rule below, as a
 * table, on every backend, against CPython or NumPy.
 *
 * Order of evaluation. A statement evaluates its expressions in the order ir_walk_eval (effects.c) visits
 * them, and a backend must keep it wherever an expression may raise or write (C and CUDA C leave the order of
 * operands and arguments unspecified: put such subexpressions in temporaries, in this order):
 *  - children left to right: binop lhs before rhs, call arguments in order, index base before its items, a
 *    slice's start, stop, step; a tuple's items in order;
 *  - IR_STORE: the value before the target (`a[i] = f()` calls f, then evaluates a and i);
 *  - IR_MAP/IR_IMAP: inputs (or dims), then out, then the body once per element, elements in any order (a body
 *    may raise, and then which element raised first is the lowest index that raises, see below);
 *  - IR_REDUCE/IR_SCAN: the input, then out, then the combine per element;
 *  - IR_BOOLOP: values after the first only while the result is undecided (Python's short circuit);
 *    IR_IFEXP: cond, then exactly one arm; IR_WHILE: cond before each iteration;
 *  - IR_FOR_RANGE: start, stop, step once, before the first iteration.
 * When a data-parallel node raises for several elements, the error reported is one of them; backends that split
 * a loop report the error of the lowest chunk that raised, so the error does not depend on the thread count.
 * To raise, code fills in runtime.h's RtError record (it calls nothing on the host, so device code can), with
 * the node's line and file (IrPos.file, else the function's) as an index into the RtNames table that the backend
 * returns with the code.
 *
 * Scalars: what differs from C (and from CUDA C). Each is undefined behaviour or simply different there.
 *  - Integers are two's complement of their dtype's width and wrap on overflow (+, -, *, unary -, abs of the
 *    minimum, <<, **): NumPy's fixed-width arithmetic, not Python's unbounded ints.
 *  - `//` and `%` on integers are Python's: the quotient rounds towards -inf, the remainder takes the divisor's
 *    sign; a zero divisor raises ZeroDivisionError; INT_MIN // -1 wraps to INT_MIN and INT_MIN % -1 is 0
 *    (no trap).
 *  - `//` and `%` on floats are CPython's float_divmod (the remainder takes the divisor's sign, -5.0 % inf is
 *    inf), except that a zero divisor gives NumPy's inf or nan instead of raising.
 *  - Shifts by a count >= the bit width (or negative, taken as unsigned) give 0, or for >> of a negative signed
 *    value -1, as NumPy's do.
 *  - `**` on integers wraps; a negative exponent of a signed integer raises ValueError ("Integers to negative
 *    integer powers are not allowed."). On floats it is C's pow.
 *  - Float to integer conversion (IR_CAST, int()) truncates towards zero and saturates: values beyond the
 *    target's range give its minimum or maximum, NaN gives 0. Integer to integer casts wrap (truncate/extend).
 *    Anything to bool is `!= 0` (NaN is true).
 *  - IR_OP_MIN/IR_OP_MAX on floats propagate NaN and give the second operand when the two compare equal
 *    (NumPy's minimum/maximum: maximum(-0.0, 0.0) is 0.0; float16 gives the first, see below); builtins min/max,
 *    which depend on argument order, reach the typed IR as an IR_IFEXP of a compare instead.
 *  - Float comparisons are IEEE (ordered, except != which is true for NaN). Integer operands of a compare have
 *    one type, NumPy's promotion of the two (typespec casts), except that an integer compared with a Python int
 *    compares their values, as NumPy 2 does (typespec compares in int64, or tests the sign first against uint64).
 *  - Division `/` is IEEE (x / 0.0 is inf or nan); math functions are C's (IrMathFn), accurate to a few ulp.
 *  - float16 (IR_DT_FLOAT16: IEEE binary16, 2 bytes in memory) is computed as NumPy's float16 loops do: an
 *    operation on float16 operands (IR_BINOP, IR_UNOP, IR_MATH, IR_COMPARE) widens them exactly to float32,
 *    computes as the float32 operation does, and rounds a float16 result once, to nearest even (overflow gives
 *    inf, NaN stays NaN). So `a * b + c` rounds twice, as NumPy's two ufunc calls do, and the result does not
 *    depend on the CPU (native half arithmetic, where a CPU has it, gives the same bits for + - * / and sqrt
 *    only). A cast to float16 rounds once from the source's value (float64 directly, not through float32).
 *    Where NumPy's float16 loops differ from its float32 ones: IR_OP_MIN/IR_OP_MAX and IR_MATH_FMIN/FMAX give
 *    the first operand when the two compare equal (maximum(0.0, -0.0) is 0.0). What NumPy accumulates in
 *    float32 (sum, prod, mean, dot) typespec types so (a float32 reduction cast to float16); a float16
 *    IR_REDUCE or IR_SCAN rounds at each combine, as NumPy's cumsum does.
 *  - complex64 and complex128 (IR_DT_COMPLEX64/128) are NumPy's: a pair of float32 / float64, real part first (8 and
 *    16 bytes in memory). + and - work per part; * is (ac - bd) + (ad + bc)j; / is NumPy's Smith's algorithm (the
 *    divisor's larger part divides, and a zero divisor gives each part of the dividend over 0.0: inf or nan, no
 *    error); ** is NumPy's complex power (1 for a zero exponent; 0 for a zero base and a positive real exponent,
 *    else nan; repeated multiplication for an integer exponent in (-100, 100), its reciprocal for a negative one;
 *    else C99's cpow); IR_UOP_ABS is hypot of the parts; IR_COMPARE is == or != only (both parts equal, IEEE);
 *    a cast of a complex to a real type takes the real part (NumPy's astype), to bool tests both parts; a real
 *    cast to complex has imaginary part +0. IR_MATH of a complex is sqrt, exp or log only, C99's csqrt, cexp
 *    and clog (what NumPy calls), of the part type's precision. Reductions and scans of complex are add and
 *    mul only (identities 0 and 1).
 *
 * The shapes the typed IR takes (what typespec produces, so a backend need handle no other):
 *  - IR_COMPARE has exactly one operator and two operands (chains became an IR_BOOLOP of binary compares);
 *  - IR_CALL is IR_CALLEE_FUNC (a specialised user function in call.callee) or IR_CALLEE_INTRINSIC; every
 *    builtin, NumPy function and method has become other nodes;
 *  - IR_LAMBDA is a value with no runtime representation: it appears only where a function value was passed
 *    (an operand of lk.map and friends, already inlined) and lowers to nothing;
 *  - IR_STORE's target is an IR_INDEX; a scalar value is stored at the element (or broadcast over the view the
 *    index selects), an array value is broadcast into that view, and an array value whose target is indexed
 *    by a bool mask means `a[mask] = values` (the k-th set element takes values[k]);
 *  - IR_NAMEREF, IR_AUGASSIGN, IR_FOR_ITER and IR_COMPREHENSION never appear, nor a slice.ellipsis;
 *  - after ir_reduce_nests and ir_version_loops, an IR_IF may be versioned: its cond is an ordinary int64 test
 *    and its arms compute the same (if_.versioned: two copies of one loop, or with if_.nest a loop nest and
 *    the array statements it stands for); a backend lowers it as any if, and an access marked index.proven
 *    without wrap or check (lowering it as checked = false, wrapping, is correct too, only slower);
 *  - variable and symbol names are Python names, not C identifiers (`$t17`, `x'`, `f.1`): a backend that
 *    prints source names its variables by IrVar.id.
 */
#ifndef LK_IR_H
#define LK_IR_H

#include <stdbool.h>
#include <stdint.h>
#include "../runtime/runtime.h"

/* ---------------- limits ----------------
 * The largest sizes the typed IR holds. typespec refuses a program that needs more with a CompileError naming
 * the line, and the shim refuses such arguments with a TypeError, so a backend may size fixed arrays by them. */
#define IR_MAX_DIMS 32       /* dimensions of an array type (and so of an imap, a reshape, a loop nest) */
#define IR_MAX_TUPLE 64      /* elements of a tuple type (so also the parts of a concatenate) */
#define IR_MAX_MAP_INPUTS 16 /* inputs of one IR_MAP (ir_fuse stops fusing below it) */

/* ---------------- types ---------------- */
typedef enum {
    IR_DT_BOOL, IR_DT_INT8, IR_DT_INT16, IR_DT_INT32, IR_DT_INT64,
    IR_DT_UINT8, IR_DT_UINT16, IR_DT_UINT32, IR_DT_UINT64,
    IR_DT_FLOAT16, IR_DT_FLOAT32, IR_DT_FLOAT64,  /* float16: IEEE binary16, see "float16" below */
    IR_DT_COMPLEX64, IR_DT_COMPLEX128,            /* a pair (real, imag) of float32 / float64, see "complex" */
    IR_DT_COUNT
} IrDtype;

typedef enum {
    IR_TY_SCALAR,  /* dtype; `weak` marks a Python int, float or bool (NEP 50), not a NumPy scalar */
    IR_TY_ARRAY,   /* dtype, ndim, layout */
    IR_TY_TUPLE,   /* elems[nelems] */
    IR_TY_NONE,
    IR_TY_SLICE,   /* a slice object (start/stop/step as int64 or absent) */
    IR_TY_RANGE,   /* a range object; only as a for-loop iterable */
    IR_TY_DTYPE,   /* a dtype used as a value (np.float32): dtype */
    IR_TY_FUNC,    /* a function used as a value (a lambda, a nested def, a module-level function): func */
    IR_TY_RNG,     /* a NumPy random Generator on PCG64 (np.random.default_rng): a pointer to its RtRng state
                    * (runtime.h), which draws update in place; an argument's state travels in 6 slots */
} IrTypeKind;

typedef enum { IR_LAYOUT_C, IR_LAYOUT_ANY } IrLayout;

typedef struct IrType IrType;
struct IrType {
    IrTypeKind kind;
    IrDtype dtype;
    bool weak;
    int ndim;
    IrLayout layout;
    bool readonly;      /* IR_TY_ARRAY: NumPy's WRITEABLE flag was off (an assignment is the raise intrinsic) */
    int nelems;
    IrType **elems;
    const void *func;   /* IR_TY_FUNC: the untyped IrFunc (or the resolver's handle) it calls */
    /* IR_TY_SLICE of constant parts (slice(2, 4), passed as a value): bit k of slice_has says part k (start, stop,
     * step) is slice_at[k], else None. A slice value with parts that are not constants has no type of its own:
     * it is only an index (IR_SLICE inside [ ]). Like every slice it has no run-time representation. */
    bool slice_const;
    uint8_t slice_has;
    int64_t slice_at[3];
};

/* Types are interned for the life of the process: equal types are the same pointer. */
IrType *ir_type_scalar(IrDtype dt);
IrType *ir_type_weak(IrDtype dt);          /* IR_DT_INT64, IR_DT_FLOAT64, IR_DT_COMPLEX128 or IR_DT_BOOL */
IrType *ir_type_array(IrDtype dt, int ndim, IrLayout layout);
IrType *ir_type_array_ro(IrDtype dt, int ndim, IrLayout layout, bool readonly);
IrType *ir_type_view(const IrType *of, int ndim, IrLayout layout); /* a view of `of`: its dtype and readonly */
IrType *ir_type_tuple(IrType **elems, int n);
IrType *ir_type_none(void);
IrType *ir_type_slice(void);
IrType *ir_type_slice_const(unsigned has, const int64_t at[3]); /* a slice of constant parts, see IrType */
IrType *ir_type_range(void);
IrType *ir_type_dtype(IrDtype dt);
IrType *ir_type_func(const void *func);
IrType *ir_type_rng(void);                 /* numpy.random.Generator (PCG64) */
IrType *ir_type_strong(IrType *t);         /* the weak flag cleared */
bool ir_dtype_is_int(IrDtype dt);
bool ir_dtype_is_signed(IrDtype dt);
bool ir_dtype_is_float(IrDtype dt);       /* float16, float32, float64: not the complex dtypes */
bool ir_dtype_is_complex(IrDtype dt);
IrDtype ir_complex_part(IrDtype dt);       /* complex64 -> float32, complex128 -> float64 */
IrDtype ir_complex_of(IrDtype dt);         /* the complex dtype whose parts hold float dt: float16 -> complex64 */
int ir_dtype_size(IrDtype dt);
int ir_dtype_bits(IrDtype dt);
const char *ir_dtype_name(IrDtype dt);     /* "float64" */
bool ir_dtype_from_name(const char *name, IrDtype *out);
void ir_type_str(const IrType *t, char *buf, size_t n); /* "array(float64, 2d, C)" */

/* The calling convention between the shim and compiled code: arguments and results travel as a flat list of
 * 8-byte slots. A scalar takes one (integers and bools widened to int64, floats to double), a complex scalar two
 * (its real and imaginary parts, each a double); an array of ndim n
 * takes 2 + 2n (data, base, shape[n], strides[n] in bytes); a tuple its elements' slots in order; None and
 * dtypes none; a Generator 6, its RtRng state, which the entry passes by address (so the call updates the slots,
 * and the shim writes them back into the NumPy Generator). */
int ir_abi_slots(const IrType *t);

/* ---------------- nodes ---------------- */
/* Where a node comes from: a line and column of its function's file, or of `file` when that is set (code that
 * ir_inline_calls copied from a function of another file keeps naming that file, for errors raised there). */
typedef struct IrPos {
    int line;
    int col;
    const char *file;   /* NULL: the file of the function the node is in */
} IrPos;

typedef struct IrVar {
    const char *name;   /* the Python name, or "$tN" for a compiler temporary */
    int id;
    IrType *type;       /* NULL in the untyped IR */
    bool maybe_unbound; /* typed IR: some read may come before any assignment (ir_check_unbound) */
} IrVar;

typedef enum {
    IR_OP_ADD, IR_OP_SUB, IR_OP_MUL, IR_OP_DIV, IR_OP_FLOORDIV, IR_OP_MOD, IR_OP_POW,
    IR_OP_MATMUL, IR_OP_LSHIFT, IR_OP_RSHIFT, IR_OP_BITAND, IR_OP_BITOR, IR_OP_BITXOR,
    /* scalar-only binary helpers typespec introduces */
    IR_OP_MIN, IR_OP_MAX,
    IR_OP_COMPLEX,   /* complex(lhs, rhs): two floats of one type make the complex whose parts they are */
} IrBinOp;

/* REAL, IMAG and CONJ take a complex operand (REAL and IMAG give its part's float type); ABS of a complex gives
 * that float type too (hypot of the parts, as NumPy's). */
typedef enum { IR_UOP_NEG, IR_UOP_POS, IR_UOP_INVERT, IR_UOP_NOT, IR_UOP_ABS, IR_UOP_REAL, IR_UOP_IMAG, IR_UOP_CONJ } IrUnOp;

typedef enum { IR_CMP_EQ, IR_CMP_NE, IR_CMP_LT, IR_CMP_LE, IR_CMP_GT, IR_CMP_GE } IrCmpOp;

/* Scalar math functions that a backend must provide (as LLVM intrinsics, libm calls or CUDA functions). */
typedef enum {
    IR_MATH_SQRT, IR_MATH_EXP, IR_MATH_EXP2, IR_MATH_EXPM1, IR_MATH_LOG, IR_MATH_LOG2, IR_MATH_LOG10,
    IR_MATH_LOG1P, IR_MATH_SIN, IR_MATH_COS, IR_MATH_TAN, IR_MATH_ASIN, IR_MATH_ACOS, IR_MATH_ATAN,
    IR_MATH_SINH, IR_MATH_COSH, IR_MATH_TANH, IR_MATH_ASINH, IR_MATH_ACOSH, IR_MATH_ATANH,
    IR_MATH_FLOOR, IR_MATH_CEIL, IR_MATH_TRUNC, IR_MATH_RINT, IR_MATH_FABS, IR_MATH_CBRT,
    IR_MATH_ISNAN, IR_MATH_ISINF, IR_MATH_ISFINITE, IR_MATH_ERF, IR_MATH_ERFC, IR_MATH_GAMMA, IR_MATH_LGAMMA,
    /* two arguments */
    IR_MATH_ATAN2, IR_MATH_HYPOT, IR_MATH_POW, IR_MATH_FMOD, IR_MATH_COPYSIGN, IR_MATH_FMIN, IR_MATH_FMAX,
    IR_MATH_COUNT
} IrMathFn;
const char *ir_math_name(IrMathFn f);  /* NumPy's name: "arcsin" */
int ir_math_arity(IrMathFn f);
/* The C library's function computing f on float64 ("exp", "tgamma") or, f32, on float32 ("expf"); the names
 * of C99's <math.h>, which CUDA's device math API shares. NULL for isnan, isinf and isfinite. */
const char *ir_math_c_name(IrMathFn f, bool f32);

typedef enum {
    IR_RED_ADD, IR_RED_MUL, IR_RED_MIN, IR_RED_MAX, IR_RED_AND, IR_RED_OR,
    IR_RED_ARGMIN, IR_RED_ARGMAX,  /* the int64 index of the first min/max (NaN counts as the extreme) */
    IR_RED_NANMIN, IR_RED_NANMAX,  /* min/max ignoring NaN (all NaN gives NaN) */
    IR_RED_FUNC,                   /* a user's combine function: combine over acc_param and elem_param */
} IrReduceOp;

/* The combine of a reduction or scan with IR_RED_FUNC: `body` is a scalar expression over the two params
 * (the accumulated value and the next element); `init`, when not NULL, is the value to start from (else the
 * first element, and an empty input is an error).
 *
 * What the built-in operations mean is decided in reduce_ops.c, for every backend (below, after IrNode):
 *  - a built-in reduction (everything but IR_RED_FUNC) may be reassociated: a backend may reduce chunks of the
 *    input separately and combine the partial results, in chunk order (so results do not depend on which
 *    thread ran which chunk). Float sums may then differ from a sequential sum in the last bits, as NumPy's
 *    pairwise sums do. A user's combine is documented as associative, and partials are combined only when
 *    ir_reduce_partials_ok() says the combine can take them;
 *  - argmin/argmax give the int64 index (in C order of the input) of the first minimum/maximum; the first NaN
 *    counts as the extreme (NumPy's rule): a later element replaces the best one only when it compares strictly
 *    better, or is NaN while the best is not. Partial results combine with the same rule, earlier chunk first;
 *  - min/max propagate NaN as IR_OP_MIN/IR_OP_MAX do; nanmin/nanmax ignore it (fmin/fmax) and give NaN only when
 *    every element is NaN. */

typedef enum {
    /* ---- expressions ---- */
    IR_CONST,        /* konst */
    IR_VAR,          /* var */
    IR_NAMEREF,      /* name: a module attribute used as a value ("numpy.float32"), or with name.handle set an
                      * array from outside the function (a global, a closure cell, a default value) frozen when
                      * the function was lowered; untyped IR only (typespec reads it as a hidden parameter) */
    IR_BINOP,        /* binop */
    IR_UNOP,         /* unop */
    IR_COMPARE,      /* compare: a < b <= c, evaluated left to right, short-circuit */
    IR_BOOLOP,       /* boolop: and/or with Python's value semantics, short-circuit */
    IR_IFEXP,        /* ifexp */
    IR_CALL,         /* call: builtins, numpy/math functions, methods, user functions */
    IR_INDEX,        /* index: base[i, j:k, None, ...] */
    IR_SLICE,        /* slice: start:stop:step, each may be NULL */
    IR_ATTR,         /* attr: value.name */
    IR_TUPLE,        /* tuple */
    IR_TUPLE_GET,    /* tuple_get: tuple[k], k constant */
    IR_LAMBDA,       /* lambda: a function as a value: a nested function (func) or a global one (func_handle) */
    IR_COMPREHENSION,/* comprehension: [elt for target in iter] (untyped IR only: typespec makes a map of it) */
    /* typed IR only */
    IR_CAST,         /* cast: value converted to node->type (scalars) */
    IR_MATH,         /* math: fn(args), float scalars of one type */
    IR_ARRAY_DIM,    /* array_dim: array.shape[axis], int64 */
    IR_ALLOC,        /* alloc: new uninitialised array of node->type with shape dims[ndim] (int64 each) */
    IR_MAP,          /* map: elementwise (broadcast) body over inputs; writes into out when set (value: out) */
    IR_IMAP,         /* imap: body over the index space dims (params are int64 indices); writes into out */
    IR_REDUCE,       /* reduce: op over input (all elements, or along axis); a statement when out is set */
    IR_SCAN,         /* scan: inclusive running op over input, flattened (axis -1) or along axis */
    IR_BCAST_SHAPE,  /* bcast_shape: dimension `axis` of the broadcast shape of args (int64); raises if they clash */
    /* ---- statements ---- */
    IR_ASSIGN,       /* assign: var = value */
    IR_AUGASSIGN,    /* augassign: var op= value (untyped IR only; typespec decides in-place or not) */
    IR_STORE,        /* store: target (an IR_INDEX) = value, with broadcasting */
    IR_IF,           /* if_ */
    IR_WHILE,        /* while_ */
    IR_FOR_RANGE,    /* for_range: var in range(start, stop, step) */
    IR_FOR_ITER,     /* for_iter: var in iterable (untyped IR only; typespec lowers it to IR_FOR_RANGE) */
    IR_BREAK,
    IR_CONTINUE,
    IR_RETURN,       /* ret: value may be NULL (returns None) */
    IR_EXPR_STMT,    /* expr_stmt: evaluated for its effects */
    IR_PASS,
    IR_KIND_COUNT
} IrKind;

typedef struct IrNode IrNode;

/* A reduction of an lk.prange loop (ir_prange_reductions): the body assigns var only as var = var op x (op is
 * IR_RED_ADD, IR_RED_MUL, IR_RED_MIN or IR_RED_MAX) and reads it nowhere else. A parallel backend runs each
 * chunk of the iterations from op's identity and combines the chunks' results into var in chunk order. */
typedef struct IrPrangeRed {
    IrVar *var;
    IrReduceOp op;
} IrPrangeRed;

typedef struct IrBlock {
    IrNode **stmts;
    int n;
    int cap;
} IrBlock;

typedef enum {
    IR_CALLEE_NAMED,  /* a known global: name is "builtins.len", "numpy.sqrt", "math.floor", "lorikeet.map" */
    IR_CALLEE_METHOD, /* a method: name is "sum", args[0] is the receiver */
    IR_CALLEE_FUNC,   /* a user function: func_handle identifies it to the resolver (see typespec.h) */
    IR_CALLEE_VALUE,  /* a function value: args[0] is it (a variable bound by a nested def, a parameter of an
                       * operator), then the arguments */
    IR_CALLEE_INTRINSIC, /* typed IR: an operation every backend implements: intrinsic (IrIntrinsic) */
} IrCalleeKind;

/* The intrinsics: operations every backend implements that no combination of the other nodes expresses well
 * (views that rearrange axes, the matrix product, results whose size depends on the data). The call's
 * arguments are u.call.args, its result has the node's type; an error raises before anything is written. A
 * backend lowers them with a switch that has no default.
 * Those that make a new array (concatenate, matmul, mask_select) get it from ir_explicit_alloc as u.call.out,
 * an IR_VAR holding a C-contiguous array of the result's type and shape that an IR_ALLOC made just before
 * (the shape each needs is stated below); they fill it and return it. Where ir_explicit_alloc leaves out NULL
 * (see explicit_alloc.c) the backend allocates the result itself, after the checks. */
typedef enum {
    /* transpose(x): x an array of ndim >= 2. A view of x's data (no copy) with the axes reversed (shape and
     * strides reversed); the type is a view of x's with layout any. Never raises. */
    IR_INTR_TRANSPOSE,
    /* reshape(x, d0, ..., dn-1): x an array, then n >= 1 int64 scalars (n is the result's ndim). One d may be -1:
     * it stands for the size that makes the element counts equal (a -1 beside a d of 0 is a ValueError, as in
     * NumPy). A view of x's data with shape (d0, ...): C strides in units of x's element step when x is
     * C-contiguous or 1-D (so a strided 1-D x gives a strided view, as NumPy's reshape does); otherwise NumPy's
     * strides for a view of x (runtime.h's rt_reshape_view), and then the call is only made where
     * reshape_views(x, 0, d...) holds (typespec makes `x.reshape(d) if views else copy(x).reshape(d)`). The
     * type's layout is x's, or any. ValueError (the sizes differ) when a d is below -1, more than one d is -1, or
     * the shape's product is not x's size. */
    IR_INTR_RESHAPE,
    /* reshape_views(x, contiguous_only, d0, ..., dn-1): bool, whether NumPy's reshape of x to (d0, ...) is a view
     * of x (d as reshape's; contiguous_only, an IR_CONST bool: only when x is C-contiguous, np.ravel's rule).
     * True where reshape would raise its ValueError, so that it raises on x, before any copy. Reads x's shape and
     * strides, never its data; never raises. */
    IR_INTR_RESHAPE_VIEWS,
    /* concatenate(p0, ..., pk-1, axis): k >= 1 arrays of the result's dtype and ndim, then axis, an IR_CONST
     * int64 in [0, ndim). A new C-contiguous array: the parts one after another along axis, whose length there
     * is the sum of theirs. ValueError when a part's other dimensions differ from p0's. k <= IR_MAX_TUPLE (the
     * parts are a tuple's items). out: p0's shape with the sum of the parts' lengths along axis (allocated
     * before the check, so a failing one has allocated an array no larger than its parts). */
    IR_INTR_CONCATENATE,
    /* matmul(a, b): 2-D arrays of one float dtype (float16, float32 or float64, the result's), any strides; a is
     * (m, k) and b is (k2, n). First the shape check: k != k2 raises ValueError (a shape error naming k and k2).
     * Then a new C-contiguous (m, n) array holding a @ b; each element sums over k in any order (a blocked GEMM,
     * so not bit-identical to a loop), and k == 0 gives zeros. float16 is NumPy's float16 matmul: products and
     * sums in float32 (at least), each element rounded once to float16.
     * Its epilogue: the elementwise operations an expression applies to the product (sqrt(xx - 2*q@p.T + yy),
     * casts included) are one map (fuse.c) whose input is the product's array, read once: one pass over the
     * m x n result after the product, never a chain of them (tests/test_linalg.py checks it in inspect_types). out: (m, n) when k == k2, else (0, n), so that the
     * ValueError is what a mismatch gives, whatever m and n. */
    IR_INTR_MATMUL,
    /* mask_select(a, mask): an array and a bool array of the same ndim. IndexError when the shapes differ
     * (naming the first axis that does). A new 1-D C-contiguous array of a's elements where mask is set, in C
     * order. out: (count,), count the mask's set elements, an IR_REDUCE (add of mask as int64) evaluated
     * before the alloc; the mask alone decides it, so it is right whenever the shape check passes. */
    IR_INTR_MASK_SELECT,
    /* core_dim(k, k2): two int64 sizes, the summed (core) dimension of a matrix product's operands: a's last and
     * b's first. NumPy's products do not broadcast it, so a size 1 against k raises where the map that multiplies
     * would stretch it: ValueError (matmul's shape error naming k2 and k) when k != k2; else the value k. Typespec
     * evaluates it before the product's map (see typespec/linalg.c). */
    IR_INTR_CORE_DIM,
    /* raise(code, e0, e1, e2): code an IR_CONST int64 (a runtime.h RtErrCode), then three int64 scalars, the
     * record's extras (runtime.h says what each code's are). Raises that error at the node's line, always; its
     * value (of whatever type the place it stands in needs: a scalar, an array, None) is never produced. typespec
     * puts it where CPython and NumPy raise at run time an error the other nodes cannot: in the failing arm of
     * `x if ok else raise(...)` (a value out of the range a store's target holds), or alone (a write into a
     * read-only array, on the path that writes). Effects: it raises, and does nothing else.
     * A raise statement of the program (`raise ValueError("negative n")`, a failing `assert`) is this intrinsic
     * with code RT_ERR_RAISE, as a statement (IR_EXPR_STMT, typed None; ir_is_raise_stmt): u.call.name is the
     * exception class as "module:qualname" ("builtins:ValueError") and u.call.text the repr of the tuple of its
     * constant arguments ("('negative n',)"), or NULL for none; its int64 extras are 0. The backend enters both
     * strings in its RtNames and writes their indices as the record's extras. Arguments made at run time (an
     * f-string, a computed number) follow the four as values, print's slots (int64, float64, arrays; None and
     * empty tuples take none), the fourth argument (e2) is then the constant 1, and the text "(specs, kinds)"
     * (frontend/lower_raise.c, typespec/print.c): the backend appends a record of them to the call's printed
     * records, as print() does, and writes -2 for the arguments' index: the shim makes the arguments from that
     * last record. In the untyped IR the frontend makes it with the values alone as its
     * arguments (name and text set); typespec adds the code and extras before them. */
    IR_INTR_RAISE,
    /* sort(x, axis, argsort): x an array of any strides, axis an IR_CONST int64 in [0, ndim), argsort an IR_CONST
     * int64, 0 or 1. A new C-contiguous array of x's shape: each line of x along axis sorted (argsort 0: x's
     * values, x's dtype) or the int64 indices along the axis that sort it (argsort 1); the order is NumPy's
     * (NaN after everything, -0.0 equal to 0.0) and stable (equal values keep their order: NumPy's
     * kind='stable'). Raises nothing but MemoryError. out: x's shape. Host code: a kernel cannot sort. */
    IR_INTR_SORT,
    /* search(a, v, right): a a 1-D array of any stride, sorted in NumPy's order (NaN last); v a scalar of a's
     * dtype; right an IR_CONST int64, 0 or 1. The int64 index i in [0, len(a)] where v would be inserted to keep
     * the order: every a[:i] sorts before v (right: not after it) and no a[i:] does, found by bisection (NumPy's
     * searchsorted; an unsorted a gives some index in range, as NumPy's does). Never raises; a scalar, so it may
     * stand in element code (one per element of np.searchsorted's map). */
    IR_INTR_SEARCH,
    /* linalg(op, a[, b]): op an IR_CONST int64, runtime.h's RT_LINALG_DET, INV, SOLVE or CHOLESKY; a a 2-D array of
     * float32 or float64 (the result's dtype), any strides; b (solve only) a 1-D or 2-D array of a's dtype.
     * det: a scalar, the determinant (0 for a singular a); inv: a new (n, n) array, a^-1; solve: a new array of
     * b's shape, a^-1 b; cholesky: a new (n, n) array, the lower factor L of a = L L^T, read from a's lower
     * triangle. numpy.linalg.LinAlgError (RT_ERR_LINALG) for an a that is not square, singular (inv, solve: a
     * pivot exactly 0) or not positive definite (cholesky); ValueError (RT_VAL_SOLVE_SHAPE) when b's rows are not
     * a's. out: a's shape (inv, cholesky), b's (solve). Host code: a kernel cannot factorise. */
    IR_INTR_LINALG,
    /* rng_new(has_seed, seed): has_seed an IR_CONST int64 (0 or 1), seed an int64 scalar. A new Generator
     * (IR_TY_RNG): np.random.default_rng(seed), NumPy's SeedSequence and PCG64 (runtime.h's rt_rng_seed), or
     * seeded from the OS's entropy when has_seed is 0. ValueError (RT_VAL_RNG_SEED) for a negative seed. The
     * state lives in the frame of the function that made it, one per node: a generator made again by the same
     * node (in a loop) replaces the one it made before. Host code. */
    IR_INTR_RNG_NEW,
    /* rng_draw(g, method, a, b, d0, ..., dn-1): g an IR_TY_RNG, method an IR_CONST int64 (runtime.h's RT_RNG_*),
     * a and b the parameters (float64 for uniform's low/high and normal's loc/scale, int64 for integers' low and
     * high, anything for the others), then n >= 0 int64 sizes. n == 0: one scalar draw of the node's type
     * (float64, or int64/int32 for integers); else a new C-contiguous array of shape (d0, ...) of the node's
     * dtype filled in C order: the same numbers NumPy's Generator gives. NumPy's checks first, in its order:
     * ValueError (negative size, integers' bounds, normal's scale < 0) or OverflowError (uniform's high - low not
     * finite). It writes g's state: the stream is sequential, so it never stands in a parallel region's element
     * code (ir/check_random.c). out: (max(d0, 0), ...), so that the size's ValueError comes from the draw, after
     * the parameters' checks, as in NumPy. Host code. */
    IR_INTR_RNG_DRAW,
    /* print(v0, ..., vn-1): Python's print() of the program, as a statement (IR_EXPR_STMT, typed None). Each v is
     * an int64 or float64 or complex128 scalar or an array of any dtype and strides (typespec flattens tuples
     * and widens scalars to those). u.call.text is a Python literal, (layout, kinds): layout the list of the
     * text's pieces, a str or None for the next value (sep and end are in it), kinds how to show each value
     * (see typespec/print.c), nested as the program's tuples were. The backend enters the text in its RtNames
     * and appends a record to the call's context (runtime.h's print section), which the shim formats and writes
     * to sys.stdout after the call, in program order. It writes (effects.c): it is never removed, moved or
     * repeated. Not in element code (ir/check_print.c); not in a gpu kernel; an array only in host code of a
     * cpu or openmp function. */
    IR_INTR_PRINT,
    IR_INTR_COUNT
} IrIntrinsic;
const char *ir_intrinsic_name(IrIntrinsic k); /* "transpose": how the IR prints it */

typedef struct IrFunc IrFunc;

typedef struct IrCombine {
    IrVar *acc_param, *elem_param;
    IrNode *body;
    IrNode *init;
} IrCombine;

/* A parallel region (parallel_regions.c): an outermost data-parallel node, whose elements or iterations may run
 * at the same time; the code of one element runs sequentially. `uses` are the function's variables that code
 * reads or assigns (not the element's own parameters), in id order. */
typedef struct IrRegion {
    IrVar **uses;
    int nuses;
} IrRegion;

struct IrNode {
    IrKind kind;
    IrType *type;  /* NULL in the untyped IR */
    IrPos pos;
    IrRegion *region; /* typed IR after ir_mark_regions: non-NULL on the parallel regions */
    union {
        struct { int64_t i; double f, im; } konst; /* value by type: bool/int in i, float in f, complex in f and
                                                   * im (real and imaginary part); None has no value */
        struct { IrVar *var; bool check_bound; } var; /* check_bound: raise UnboundLocalError if unassigned */
        struct { const char *name; void *handle; } name; /* handle: a constant array's, for the resolver */
        struct { IrBinOp op; IrNode *lhs, *rhs; } binop;
        struct { IrUnOp op; IrNode *operand; } unop;
        struct { IrCmpOp *ops; IrNode **operands; int nops; } compare; /* nops ops, nops+1 operands */
        struct { bool is_and; IrNode **values; int n; } boolop;
        /* versioned (ir_small_windows): cond only decides speed: where it holds, then gives what orelse gives,
         * errors included (printed `(a if versioned c else b)`); a backend lowers it as any if-expression */
        struct { IrNode *cond, *then, *orelse; bool versioned; } ifexp;
        struct {
            IrCalleeKind ckind;
            const char *name;    /* IR_CALLEE_NAMED, _METHOD, _FUNC, _VALUE */
            IrIntrinsic intrinsic; /* IR_CALLEE_INTRINSIC */
            void *func_handle;
            IrFunc *callee;      /* typed IR: the specialised callee */
            IrNode **args;
            int nargs;
            IrNode *out;         /* an intrinsic making a new array, after ir_explicit_alloc: the array it fills
                                  * (then the call is a statement and its value is out); see IrIntrinsic */
            const char **kwnames;
            IrNode **kwargs;
            int nkw;
            uint64_t starred;    /* untyped IR: bit k says args[k] is unpacked (`f(*t)`), a tuple; user calls only */
            const char *text;    /* IR_INTR_RAISE of a raise statement: the repr of its arguments' tuple, or NULL */
        } call;
        /* checked: an item out of range raises IndexError (else, with boundscheck off, it is not checked);
         * either way a negative item counts from the end. proven (then checked is false): ir_version_loops's
         * test before the loop proved every item in [0, dim): no wrap, no check. */
        struct { IrNode *base; IrNode **items; int n; bool checked, proven; } index;
        /* ellipsis: untyped IR only, `...` among a subscript's items (typespec puts the full slices it stands for
         * in its place; the parts are NULL) */
        struct { IrNode *start, *stop, *step; bool ellipsis; } slice;
        struct { IrNode *value; const char *name; } attr;
        /* is_list (untyped IR only): a list display `[a, b]`, which typespec makes an array (a tuple where a
         * library function takes a sequence: np.zeros([n, m]), np.concatenate([a, b])). one_pass (typed IR,
         * ir_sibling_reductions): every item is a reduction of everything, and a backend may run them as one
         * loop over their common space when their spaces agree; the items' order of evaluation stands. */
        struct { IrNode **items; int n; bool is_list, one_pass; } tuple;
        struct { IrNode *tuple; int k; int unpack_n; } tuple_get; /* unpack_n: targets of an unpacking, else 0 */
        struct { IrFunc *func; void *func_handle; } lambda;
        /* cond: if, or NULL. unpack: a tuple target `for i, x in ...` binds these names to the target's items (then
         * target is a temporary); is_generator: `(elt for ...)`, allowed only as the argument of a reduction */
        struct {
            IrVar *target; IrNode *iter; IrNode *elt; IrNode *cond;
            IrVar **unpack; int nunpack; bool is_generator;
        } comprehension;
        struct { IrNode *value; } cast;
        struct { IrMathFn fn; IrNode *args[2]; } math;
        struct { IrNode *array; int axis; } array_dim;
        struct { IrNode **dims; int ndim; } alloc;
        struct {
            IrVar **params;      /* scalar parameters bound to elements of inputs */
            int nparams;
            IrNode *body;        /* scalar expression over params and enclosing scalar variables */
            IrNode **inputs;     /* arrays (broadcast against each other) or scalars */
            int ninputs;
            IrNode *out;         /* NULL: the map is an expression producing a new array */
            bool out_is_fresh;   /* out was just allocated for this map: nothing can overlap it */
        } map;
        struct {
            IrVar **idx;         /* one int64 index variable per dimension */
            int ndim;
            IrNode **dims;
            IrNode *body;
            IrNode *out;         /* NULL: a new array of node->type with shape dims */
        } imap;
        struct {
            IrReduceOp op;
            IrNode *input;       /* an array expression, often an IR_MAP (fused map-reduce: no array) */
            int axis;            /* -1: all elements, giving a scalar */
            IrNode *out;         /* axis reductions after ir_explicit_alloc: the array they fill, an IR_VAR that
                                  * an IR_ALLOC of the input's shape without axis filled just before (then the
                                  * reduce is a statement and its value is out) */
            IrCombine combine;   /* op == IR_RED_FUNC */
        } reduce;
        struct {
            IrReduceOp op;       /* add or mul */
            IrNode *input;       /* an array expression, often an IR_MAP (fused) */
            int axis;            /* -1: over the flattened input, giving 1-D */
            IrNode *out;         /* after ir_explicit_alloc: the array it fills, as reduce.out; its shape is the
                                  * input's (axis >= 0) or its element count (axis -1) */
            IrCombine combine;   /* op == IR_RED_FUNC */
        } scan;
        struct { IrNode **args; int n; int axis; int ndim; } bcast_shape;
        struct { IrVar *var; IrNode *value; } assign;
        struct { IrVar *var; IrBinOp op; IrNode *value; } augassign;
        /* augmented: untyped IR, the store of an augmented assignment (a[i] += v: value is a[i] + v), which NumPy
         * updates in place when the target is an array (a view, a fancy index): same_kind then applies */
        struct { IrNode *target; IrNode *value; bool augmented; } store;
        /* versioned (ir_version_loops): cond is a bounds test, then holds a copy of the loop that orelse holds,
         * with the accesses the test proves marked index.proven; both arms compute the same.
         * nest (ir_reduce_nests, versioned too): then holds one loop nest for the array statements orelse holds,
         * its parallel loop one iteration per row of the result; a backend of many threads may find those too
         * few and run orelse alone (the gpu: 3000 threads for 3000 bodies took 2.4x the arrays' kernels). */
        struct { IrNode *cond; IrBlock then, orelse; bool versioned, nest; } if_;
        struct { IrNode *cond; IrBlock body; } while_;
        struct {
            IrVar *var;
            IrNode *start, *stop, *step;
            IrBlock body;
            bool parallel;       /* lk.prange */
            IrPrangeRed *reds;   /* parallel, after ir_prange_reductions: its reductions, by variable id */
            int nreds;
            bool proven_copy;    /* ir_version_loops: a copy of a loop whose accesses marked index.proven hold
                                  * (the then arm of a versioned if, or the loop alone when they need no test),
                                  * or a loop nested in one: a backend may tune it for speed */
            bool auto_parallel;  /* a range loop ir_auto_parallel proved independent: parallel is set too */
            const char *why_sequential; /* ir_auto_parallel: why a range loop stays sequential (for
                                         * inspect_parallel; it does not change the code) */
            bool made;           /* made by ir_reduce_nests of array statements: not a loop the user wrote, so
                                  * inspect_parallel does not list it */
        } for_range;
        struct { IrVar *var; IrNode *iterable; IrBlock body; } for_iter;
        struct { IrNode *value; } ret;
        struct { IrNode *value; } expr_stmt;
    } u;
};

struct IrFunc {
    const char *name;
    const char *file;
    int line;
    IrVar **params;
    int nparams;
    IrNode **defaults;   /* constant default values of the last ndefaults params (untyped IR) */
    int ndefaults;
    int ncaptured;       /* a nested function: its last ncaptured params are the enclosing function's variables */
    bool varargs;        /* `*args`: the last of its own params (before the captured) takes the positional
                          * arguments after the others, as a tuple (untyped IR) */
    IrVar **captured_from; /* ... namely these (of the enclosing untyped function), read at each call */
    IrVar **vars;        /* every variable of the function, params first; vars[i]->id == i */
    int nvars;
    int cap_vars;
    IrBlock body;
    IrType *ret_type;    /* typed IR only */
    RtArena *arena;      /* owns this function's nodes */
    /* typed IR: user functions this one calls, each specialised (for backends to emit) */
    IrFunc **callees;
    int ncallees;
    int cap_callees;
    const char *symbol;  /* typed IR: the unique name backends give it */
};

/* ---- construction (node.c) ---- */
IrFunc *ir_func_new(RtArena *a, const char *name, const char *file, int line);
IrVar *ir_func_var(IrFunc *f, const char *name); /* the variable of that name, created on first use */
IrVar *ir_func_temp(IrFunc *f, IrType *type);    /* a fresh compiler temporary */
IrVar *ir_func_new_var(IrFunc *f, const char *name); /* a new variable even if the name exists (scoped names) */
IrNode *ir_node(RtArena *a, IrKind kind, IrPos pos);
IrNode **ir_nodes(RtArena *a, int n);
void ir_block_push(RtArena *a, IrBlock *b, IrNode *stmt);
IrNode *ir_const_int(RtArena *a, IrPos pos, IrType *t, int64_t v);
IrNode *ir_const_float(RtArena *a, IrPos pos, IrType *t, double v);
IrNode *ir_var_ref(RtArena *a, IrPos pos, IrVar *v);
IrNode *ir_compare(RtArena *a, IrPos pos, IrCmpOp op, IrNode *l, IrNode *r); /* typed: l op r, a bool */
IrNode *ir_array_dim(RtArena *a, IrPos pos, IrNode *array, int axis); /* array.shape[axis], int64 (array as given) */
IrNode *ir_tuple_get(RtArena *a, IrPos pos, IrNode *tuple, int k); /* tuple[k], typed when tuple is */
/* A call of intrinsic k with args[nargs] (copied) and result type t. */
IrNode *ir_intrinsic_call(RtArena *a, IrPos pos, IrIntrinsic k, IrNode *const *args, int nargs, IrType *t);
/* copy.c: a deep copy of n (for a statement, its blocks too) in a: new nodes, the same types. hooks may be NULL;
 * each of its members may be NULL:
 *  replace(n, env): a node to use instead of copying n (a callee's parameter replaced by the argument), or NULL;
 *  map_var(v, env): the variable the copy names wherever n names v (renaming a callee's variables); unmapped,
 *                   the copy names the same variables as n;
 *  after(from, to, env): called on each original node and its copy, after the copy's children are made. */
typedef struct IrCopyHooks {
    IrNode *(*replace)(const IrNode *n, void *env);
    IrVar *(*map_var)(IrVar *v, void *env);
    void (*after)(const IrNode *from, IrNode *to, void *env);
    void *env;
} IrCopyHooks;
IrNode *ir_copy(RtArena *a, const IrNode *n, const IrCopyHooks *hooks);
bool ir_is_statement(IrKind k);
/* s is a raise statement of the program (IR_EXPR_STMT of IR_INTR_RAISE, untyped or typed): control never
 * continues after it */
bool ir_is_raise_stmt(const IrNode *s);
/* n is a typed raise statement whose arguments are made at run time (a printed record: see IR_INTR_RAISE) */
bool ir_raise_recorded(const IrNode *n);
const char *ir_kind_name(IrKind k);

/* ---- printing (print.c): the readable text form that inspect_types shows ---- */
char *ir_print_func(const IrFunc *f); /* malloc'd; caller frees */

/* ---- the content address of a compilation (hash.c) ---- */
/* SHA-256 of a canonical encoding of the whole typed IR of f and its callees: every field that can change the
 * generated code (positions, file, flags, variable ids, types in full, lambda bodies), no process addresses.
 * Equal hashes mean equal IR; the same function and argument types give the same hash in any process. */
#define IR_HASH_BYTES 32
void ir_hash_func(const IrFunc *f, unsigned char out[IR_HASH_BYTES]);
/* The same hash without the lines and files of nodes and functions: equal for the same code placed elsewhere (an
 * edit above it, a moved package), whose compiled error records differ only in the positions they name (the disk
 * cache rebases those at load, pyshim/code_cache.c). */
void ir_hash_func_unplaced(const IrFunc *f, unsigned char out[IR_HASH_BYTES]);
void ir_sha256(const void *data, size_t n, unsigned char out[IR_HASH_BYTES]);
void ir_hash_hex(const unsigned char hash[IR_HASH_BYTES], char out[2 * IR_HASH_BYTES + 1]);

/* ---- passes ---- */
/* pipeline.c: every pass a compilation runs, in order, on the root and on each callee it still calls (the one
 * list of them). IR_PIPELINE_VERSION changes whenever that list or what one of its passes does changes, so that
 * a cache keyed on the IR before the passes never returns code made by another pipeline. */
#define IR_PIPELINE_VERSION 22 /* 4: ir_inline_calls inlines callees of other files; 5: prange's rules and
                               * reductions (ir_prange_reductions); 6: reduce inputs are maps; 7: every new
                               * array an IR_ALLOC (intrinsics, axis reductions, scans, conditionals);
                               * 8: IR_DT_FLOAT16 (the dtypes after it renumbered); 9: loops versioned on
                               * their bounds plans in the IR (ir_version_loops), after the checks;
                               * 10: ir_fuse keeps an input map whose unread result may raise;
                               * 11: complex64 and complex128 (konst.im, IR_OP_COMPLEX, the complex unops);
                               * 12: range loops with independent iterations made parallel (ir_auto_parallel);
                               * 13: the typed IR made a tree first (ir_unshare);
                               * 14: np.random (IR_TY_RNG, rng_new, rng_draw) and ir_check_random;
                               * 15: reductions over small windows unrolled (ir_small_windows), imaps
                               * versioned on their windows' tests (ir_version_imaps);
                               * 16: ir_fuse_shared (shared intermediates recomputed, cost.c's rule);
                               * 17: ir_sibling_reductions (one_pass tuples of reductions); 18: ir_fuse
                               * leaves an input that may raise out of a conditional (np.where's arms);
                               * 19: ir_reduce_nests (n-body's array chain as one loop nest); 20: it declines
                               * a chain array read as a plain input, and marks its if (if_.nest);
                               * 21: raise statements (IR_INTR_RAISE with RT_ERR_RAISE, u.call.text hashed),
                               * print() (IR_INTR_PRINT, ir_check_print); 22: a reshape of a strided
                               * array is a view where NumPy's is (IR_INTR_RESHAPE_VIEWS) */
/* false, with diag set (a CompileError), when a check among the passes rejects the program (prange's rules) */
bool ir_optimize(IrFunc *root, LkDiag *diag);
void ir_unshare(IrFunc *f);        /* unshare.c: a node typespec put in several places becomes a copy in each */
void ir_inline_calls(IrFunc *root);   /* inline_calls.c: calls of small user functions become their bodies */
void ir_cse(IrFunc *f);            /* cse.c: a scalar computed by a loop, repeated in a block, is computed once */
void ir_auto_parallel(IrFunc *f);  /* auto_parallel.c: range loops with independent iterations become parallel */
/* prange.c: whether `var = value` has a reduction's form, var op x or x op var (+ * min max, or Python's max and
 * min as typespec writes them, `x if x > var else var`): its op and how many reads of var the form makes. */
bool ir_reduction_form(const IrNode *value, const IrVar *var, IrReduceOp *op, int *self_reads);
/* Every range and prange loop of f, a line each, "line\tkind\twhy": kind parallel (made so by ir_auto_parallel),
 * prange, or sequential with the reason; malloc'ed (NULL only when out of memory). */
char *ir_parallel_report(const IrFunc *f);
/* fuse_shared.c: a map reading one variable twice reads it once; an intermediate array with several users over
 * its space is recomputed in each when cost.c's rule says so */
void ir_fuse_shared(IrFunc *f);
void ir_inline_single_use(IrFunc *f); /* inline_single_use.c: an array variable read once takes its expression's place */
void ir_fuse(IrFunc *f);           /* fuse.c: a map that feeds a map becomes part of its body */
void ir_map_merge_inputs(IrNode *map); /* fuse.c: inputs that name one variable become one input */
void ir_recognize_matmul(IrFunc *f); /* recognize_matmul.c: element-wise dot products become one matmul */
/* small_windows.c: a reduction over a window of constant extent (x[i-1:i+2, j-1:j+2]) becomes
 * `(<its elements' loads, unrolled> if <the window is inside the array> else <the reduction>)` */
void ir_small_windows(IrFunc *f);
void ir_explicit_alloc(IrFunc *f); /* explicit_alloc.c: new arrays get an IR_ALLOC before the map fills them */
void ir_check_unbound(IrFunc *f);  /* check_unbound.c: reads that may precede every assignment get a check */
/* version_loops.c: a loop whose bounds plan proves accesses of an innermost loop becomes `if versioned <test>:
 * <copy with those accesses index.proven> else: <loop>` (see IrNode's if_.versioned) */
void ir_version_loops(IrFunc *f);
/* version_imaps.c: an imap whose element tests conditions of its indices that one test can prove for every element
 * becomes `if versioned <test>: <copy with each such (a if c else b) as a> else: <imap>` */
void ir_version_imaps(IrFunc *f);
/* sibling_reductions.c: reductions of everything over one space, in a run of statements, evaluated first as a
 * one_pass tuple (see the tuple's one_pass) when moving them changes neither results nor the first error */
void ir_sibling_reductions(IrFunc *f);
/* reduce_nests.c: a reduction over the middle axis of a 3-D map that reads a 2-D intermediate W[:, :, None] (and
 * the reductions over the last axis that W reads) becomes one loop nest over (i, j), computing each (i, j) element
 * once without storing it, in the then arm of `if versioned <the shapes are plain>: ... else: <as written>`
 * (if_.nest) */
void ir_reduce_nests(IrFunc *f);
/* ---- cost.c: the work of one element of a region, for a backend's decision whether a team or a launch pays ---- */
typedef struct IrCostWeights {
    int64_t op;                   /* a node not weighed below: one arithmetic operation, the unit */
    int64_t math[IR_MATH_COUNT];  /* each math function */
    int64_t user_call;            /* a call of a user function that was not inlined */
    int64_t nested_data_parallel; /* a map, imap, reduce or scan inside the element (a reduction over a row) */
    int64_t nested_trips;         /* the trips assumed for a loop statement inside the element */
} IrCostWeights;
int64_t ir_cost(const IrNode *n, const IrCostWeights *w);         /* an expression or a statement's own parts */
int64_t ir_block_cost(const IrBlock *b, const IrCostWeights *w);  /* statements, nested loops x nested_trips */
/* The recompute-or-store rule for an intermediate array with several users (cost.c states it and its reason):
 * ir_recompute_cost is the per-element cost of a map's bodies (its input maps' included) in the rule's units,
 * ir_recompute_pays whether computing it once more for each of users - 1 extra users beats storing it. */
#define IR_RECOMPUTE_BUDGET 16
int64_t ir_recompute_cost(const IrNode *map);
bool ir_recompute_pays(int64_t cost, int users);

/* ---- work.c: the work of a whole call as polynomials in its arguments' sizes, for backend="auto" ---- */
typedef enum {
    IR_WF_DIM,          /* dimension `axis` of array argument `param` */
    IR_WF_VALUE,        /* the value of integer argument `param` */
    IR_WF_LARGEST,      /* the element count of the largest array argument (an extent the model cannot see) */
    IR_WF_LARGEST_ROOT, /* its `axis`-th root: one dimension of an unseen array of ndim `axis` */
} IrWorkFactorKind;
typedef struct IrWorkFactor { uint8_t kind; uint8_t axis; uint16_t param; } IrWorkFactor;
#define IR_WORK_MAX_FACTORS 6
#define IR_WORK_MAX_TERMS 24
typedef struct IrWorkTerm { double coef; int nf; IrWorkFactor f[IR_WORK_MAX_FACTORS]; } IrWorkTerm;
typedef struct IrWorkPoly { int n; IrWorkTerm t[IR_WORK_MAX_TERMS]; } IrWorkPoly;
typedef struct IrWorkModel {
    IrWorkPoly ops;          /* the call's work in IrCostWeights' units */
    IrWorkPoly parallel_ops; /* the part of it inside parallel regions */
    IrWorkPoly launches;     /* parallel regions entered */
    bool estimated;          /* some extent stood in for one the model could not see */
} IrWorkModel;
/* One argument as the model sees it: an array's shape (ndim 0 for scalars) or an integer's value. */
typedef struct IrWorkArg { int ndim; const int64_t *dims; double value; } IrWorkArg;
void ir_work_model(const IrFunc *f, const IrCostWeights *w, IrWorkModel *out);
double ir_work_eval(const IrWorkPoly *p, const IrWorkArg *args, int nargs, double largest);

/* parallel_regions.c: marks the parallel regions (map, imap, reduce, scan, lk.prange loop, matmul not nested in
 * another region's per-element code) with what each uses; the same for every backend, which may run a region on
 * one thread or many but never treats another node as one. Last in the pipeline. */
void ir_mark_regions(IrFunc *f);
/* The region whose code is that of regions rs[0..n) together (their uses, in id order): for a backend that runs
 * several regions as one, as the items of a one_pass tuple. */
IrRegion *ir_region_union(IrFunc *f, const IrRegion *const *rs, int n);
/* reduce_inputs.c: the input of every reduce and scan becomes a map expression (the identity map over an array
 * that is not one), so that backends lower one shape and never add variables to the IR they lower. */
void ir_reduce_inputs_as_maps(IrFunc *f);
/* prange.c, for every backend: the rules of lk.prange loops (no break or return in the body; a variable the body
 * assigns is used after the loop only if it is a reduction), false with diag set (a CompileError naming the
 * line) when one is broken; and each loop's reductions recorded in for_range.reds. A sequential backend may run
 * prange as range: the rules make both mean the same. */
bool ir_prange_reductions(IrFunc *f, LkDiag *diag);
/* check_random.c, for every backend: a numpy Generator used in element code (a map's, imap's, reduction's or
 * scan's) or in an lk.prange loop's body is a CompileError naming the line: its draws are one ordered stream. */
bool ir_check_random(IrFunc *f, LkDiag *diag);
/* check_print.c, for every backend: print() in element code (directly or in a function it calls) is a
 * CompileError naming the line: element code is not run once per element in order. */
bool ir_check_print(IrFunc *f, LkDiag *diag);

/* ---- reductions (reduce_ops.c): the meaning of the built-in operations, see IrReduceOp ---- */
/* op's identity for dt, an IR_CONST with no position (IR_RED_FUNC has none: a zero, never to be combined). */
IrNode ir_reduce_identity(IrReduceOp op, IrDtype dt);
/* acc op x as a scalar expression of dt, allocated in a (an IR_BINOP, or IR_MATH fmin/fmax for nanmin/nanmax
 * over floats), which a backend lowers with its ordinary expression code; NULL for argmin, argmax and
 * IR_RED_FUNC, which are not one expression. acc and x are used as they are (not copied). */
IrNode *ir_reduce_combine(RtArena *a, IrReduceOp op, IrDtype dt, IrNode *acc, IrNode *x);
/* An empty input (or an empty line, along an axis) raises ValueError: ops without an identity. */
bool ir_reduce_needs_items(IrReduceOp op, const IrCombine *c);
/* Partial results of chunks may be combined (by combine, or by the argmin/argmax rule) into the result. */
bool ir_reduce_partials_ok(IrReduceOp op, const IrCombine *c);

/* ---- bounds plans (bounds_plan.c): the checked element accesses of a loop that one test before the loop can
 * prove in range on every iteration, so that a copy of the loop may run without their checks (ir_version_loops
 * makes it; a backend lowers the result and need not call this) ---- */

/* konst + sum of coef[i] * atom[i], in unbounded integers. An atom is an int64 expression the loop cannot
 * change (a variable it never assigns, shape[k] of such an array, an element of such a tuple, a cast of such a
 * variable), safe to evaluate before the loop; or the loop's own start or stop node, which stands for the value
 * the loop starts with (ir_version_loops reads it from a temporary unless it is pure). */
typedef struct IrAffine {
    int64_t konst;
    int n;
    int64_t *coef;
    IrNode **atom;
} IrAffine;

/* Every index along `axis` of `array` lies in [lo, hi]: the test is lo >= 0 (unless lo_holds: it is a constant
 * >= 0) and hi < array.shape[axis]. With array NULL, lo and hi are the bounds of a nested loop's start or stop,
 * and need only evaluate without overflow. Every form must be computed exactly (its value must fit int64, see
 * IrBoundsAtom): then the loop's wrapping int64 arithmetic computes every index exactly. */
typedef struct IrBoundsCheck {
    IrNode *array;  /* an IR_VAR of array type, or NULL */
    int axis;
    bool lo_holds;
    IrAffine lo, hi;
} IrBoundsCheck;

/* The overflow guard: when every atom of the plan lies in [min, max], the value of every form of its checks
 * fits int64, so that wrapping int64 arithmetic (in any order of the terms) computes it exactly. The ranges
 * always hold 0; [INT64_MIN, INT64_MAX] needs no test. */
typedef struct IrBoundsAtom {
    IrNode *atom;
    int64_t min, max;
} IrBoundsAtom;

typedef struct IrBoundsPlan {
    const IrNode *loop;   /* the IR_FOR_RANGE */
    IrNode **index;       /* IR_INDEX nodes (checked, integer items only) proven when every check passes */
    bool *innermost;      /* index[i] is in an innermost loop (one with no loop in it, statement or map/reduce):
                           * where checks cost most, and the loops LLVM vectorises */
    int nindex;
    IrBoundsCheck *checks;
    int nchecks;
    IrBoundsAtom *atoms;  /* the distinct atoms of the checks' forms, each with its range */
    int natoms;
} IrBoundsPlan;

/* The plan of an IR_FOR_RANGE loop of f, allocated in f's arena; NULL when no access of the loop qualifies. */
IrBoundsPlan *ir_bounds_plan(IrFunc *f, const IrNode *loop);
/* ---- split plans (split_plan.c): whether a call may run as pieces along its arguments' first axis, for data
 * larger than a device's memory (the shim's split_call.c runs them); the file states the invariant ---- */
typedef enum {
    IR_SPLIT_ARG_NONE,  /* not an array: passed to every piece as it is */
    IR_SPLIT_ARG_ROWS,  /* each piece gets its rows [r0, r1) */
    IR_SPLIT_ARG_WHOLE, /* each piece gets all of it */
} IrSplitArgKind;
typedef enum {
    IR_SPLIT_CONCAT,  /* an array: the pieces' results one after another along axis 0 */
    IR_SPLIT_COMBINE, /* a scalar: the pieces' results combined by op, in piece order */
    IR_SPLIT_SAME,    /* a scalar the same in every piece */
} IrSplitResultKind;
typedef struct IrSplitResult {
    IrSplitResultKind kind;
    IrReduceOp op;    /* IR_SPLIT_COMBINE */
    IrDtype dtype;
    int ndim;         /* IR_SPLIT_CONCAT */
    int arg;          /* argmin, argmax: the parameter whose elements they compare (each piece's index is into its
                       * rows, flattened; the combine reads the element there), else -1 */
} IrSplitResult;
typedef struct IrSplitPlan {
    bool ok;              /* else why, at file:line, says what cannot run in pieces */
    char why[200];
    char file[256];
    int line;
    int nargs;            /* the function's parameters */
    IrSplitArgKind *args;
    int nresults;         /* the leaves of the return type (a tuple's items, in order; none for None) */
    IrSplitResult *results;
    int nrow_temps;       /* arrays of rows the call makes, returned or not */
} IrSplitPlan;
/* The plan of f (typed, after ir_optimize); its arrays are malloc'd: ir_split_plan_free. */
void ir_split_plan(const IrFunc *f, IrSplitPlan *plan);
void ir_split_plan_free(IrSplitPlan *plan);

/* ---- effects and order of evaluation (effects.c) ---- */
enum {
    IR_FX_WRITE = 1, /* may write memory that existed before (a store, an `out` that is not fresh, a user call) */
    IR_FX_RAISE = 2, /* may raise (IndexError, ZeroDivisionError, a shape mismatch, an empty reduction...) */
    IR_FX_READ = 4,  /* reads the contents of arrays */
    IR_FX_ALLOC = 8, /* makes a new array (whose identity a caller could see) */
};
unsigned ir_node_effects(const IrNode *n); /* the node's own, its children excluded */
unsigned ir_effects(const IrNode *n);      /* the node's and all its descendants' (bodies included) */
/* Where a statement evaluates a node: `before` is what it evaluated earlier (IR_FX_ flags), `conditional` says
 * the node is evaluated on some paths only (an arm of `x if c else y`, an operand after the first of and/or),
 * `repeated` that it may be evaluated many times (a map's body, a while loop's condition). */
typedef struct IrEvalPos {
    unsigned before;
    bool conditional;
    bool repeated;
} IrEvalPos;
/* A visit of a statement's expressions in the order the backends evaluate them: pre (may be NULL) before a
 * node's children (false: skip them), post (may be NULL) after, which may replace *slot. Nested blocks of the
 * statement are not visited. */
typedef struct IrEvalVisitor {
    bool (*pre)(IrNode **slot, const IrEvalPos *pos, void *env);
    void (*post)(IrNode **slot, const IrEvalPos *pos, void *env);
} IrEvalVisitor;
void ir_walk_eval(IrNode *stmt, const IrEvalVisitor *v, void *env);

/* arg_writes.c: whether f may write the memory of one of its array arguments (through a store, an `out`, or a
 * call given a view of one); false only when it certainly does not. */
bool ir_may_write_args(IrFunc *f);

/* ---- traversal (walk.c) ---- */
/* Calls fn on the address of each direct child expression of n (statement blocks excluded), so a pass can
 * replace a child in place. */
typedef void (*IrChildFn)(IrNode **child, void *env);
void ir_each_child(IrNode *n, IrChildFn fn, void *env);
/* The blocks nested directly in statement s (an if's then and orelse, a loop's body), in order: their number.
 * Its switch names every kind, so a new statement kind that holds a block is added here, once, for every pass. */
int ir_stmt_blocks(IrNode *s, IrBlock *blocks[2]);
/* Calls fn on each statement of the block and, recursively, of the blocks nested in it. */
typedef void (*IrStmtFn)(IrNode *stmt, void *env);
void ir_each_stmt(IrBlock *b, IrStmtFn fn, void *env);
/* Calls fn on the element code (the body of each map and index map, the combine of each reduction and scan: what
 * runs once per element, in any order) anywhere in the block's statements, nested element code included. */
typedef void (*IrElementFn)(IrNode *body, void *env);
void ir_each_element_code(IrBlock *b, IrElementFn fn, void *env);

#endif
