/* ts_internal.h: what the files of typespec/ share. Not for other layers. */
#ifndef LK_TS_INTERNAL_H
#define LK_TS_INTERNAL_H

#include "typespec.h"

typedef struct TsSpec TsSpec;

/* One compilation: every specialised function, so each (function, signature) is typed once and recursion is
 * caught. */
typedef struct TsSession {
    const TsOptions *opts;
    RtArena *a;
    TsSpec *specs;
    int nspecs;
    IrFunc *root;
} TsSession;

/* The state of typing one function. */
typedef struct Ts {
    TsSession *sess;
    RtArena *a;
    LkDiag *diag;
    const IrFunc *src;
    IrFunc *dst;
    IrVar **varmap;      /* src var id -> dst var */
    bool dry;            /* a fixed-point round: no diagnostics, unknown types give NULL silently */
    bool changed;        /* a variable's type widened during this round */
    IrBlock *pre;        /* where hoisted statements go: the block being built */
    int cond_depth;      /* >0 inside a branch of a conditional expression (no hoisting there) */
    IrType *ret_type;
    bool returns_to_python; /* the root of the compilation: what it returns is boxed for the caller */
    bool has_return_value;
    bool has_return_none;
    /* function values with captured variables that reached this function as arguments (or were assigned from
     * one): the variable, and the hidden parameters holding what it captured (see ts_apply) */
    IrVar *fcap_var[16];
    IrVar **fcap_vars[16];
    int nfcap;
    int consts_at;       /* dst->params index of the first constant array (TsOptions) */
    /* comprehension targets being typed: an untyped variable stands for a typed expression */
    const IrVar *subst_from[32];
    IrNode *subst_to[32];
    int nsubst;
    /* >0 inside a loop or a branch decided at run time: a variable that holds None is not given another type
     * there (specialize.c's rebinding), as Python could still see the None on another path */
    int flow_depth;
    IrVar **rebound;     /* src var id -> the variable it became when a None was replaced (or NULL) */
    bool dead;           /* a decided if's branch returned (or broke out): what follows it is not typed */
    int splicing;        /* >0 while typing the branch taken of an if decided when compiling, in place */
    bool items_weak;     /* the last comprehension typed had Python numbers as items (sum() keeps them so) */
    unsigned char *list_vars; /* src var id -> TS_HOLDS_* bits: whether it holds a list (lists.c) */
} Ts;

#define TS_ERR(ts, pos, ...)                                                                    \
    do {                                                                                        \
        if (!(ts)->dry) lk_diag_set((ts)->diag, LK_ERR_TYPE, (ts)->src->file, (pos).line, (pos).col, __VA_ARGS__); \
        return NULL;                                                                            \
    } while (0)

/* promote.c (with ts_promote, typespec.h) */
IrType *ts_math_type(IrType *t);    /* the float type NumPy gives a math function of t (sqrt of int8: float16) */
/* The float type NumPy's loop for a math function of these scalars computes in: the first loop (e, f, d) every
 * operand casts to safely (np.logaddexp(np.uint8(9), int8_array) is float16, where their promotion, int16, gives
 * float32); library.c says the whole rule. */
IrType *ts_math_type_of(IrNode **args, int nargs);
IrType *ts_compute_type(IrType *t); /* the type NumPy computes a function of float type t in: float16's is float32 */

/* specialize.c: a typed condition decided when compiling (`k is None`, isinstance, a constant): 1 or 0; else -1 */
int ts_const_truth(const IrNode *c);

/* infer.c */
IrNode *ts_expr(Ts *ts, const IrNode *n);
IrNode *ts_tuple(Ts *ts, const IrNode *n);  /* an IR_TUPLE (a list display too) as a typed tuple */
IrNode *ts_cast(Ts *ts, IrNode *n, IrType *t);
IrNode *ts_truth(Ts *ts, IrNode *n);
IrNode *ts_reuse(Ts *ts, IrNode *n);
IrNode *ts_python_scalar(Ts *ts, IrNode *n); /* as a weak Python int, float or bool (NEP 50) */
IrType *ts_python_type(IrDtype dt);          /* the weak Python type of values of dt */
IrNode *ts_numpy_scalar(Ts *ts, IrNode *n);  /* as a strong NumPy scalar of its dtype */
IrNode *ts_after_effects(Ts *ts, IrPos pos, IrNode *first, IrNode *value);
IrNode *ts_pair(Ts *ts, IrPos pos, IrNode *x, IrNode *y); /* the tuple (x, y) */ /* value, first evaluated before it */
/* `cond ? then : orelse` typed as then (orelse already of that type, or a raise typed so); NULL if a part is */
IrNode *ts_ifexp(Ts *ts, IrPos pos, IrNode *cond, IrNode *then, IrNode *orelse);
IrNode *ts_bool2(Ts *ts, IrPos pos, bool is_and, IrNode *a, IrNode *b); /* a and b, a or b (bools); NULL if either is */
IrNode *ts_raise(Ts *ts, IrPos pos, RtErrCode code, IrNode *e0, IrNode *e1, IrNode *e2, IrType *t);
IrNode *ts_readonly_write(Ts *ts, IrPos pos, IrNode **before, int n, IrType *t, bool output);
IrNode *ts_scalar_binop(Ts *ts, IrPos pos, IrBinOp op, IrNode *l, IrNode *r);
IrNode *ts_binop(Ts *ts, IrPos pos, IrBinOp op, IrNode *l, IrNode *r);
IrNode *ts_ufunc_binop(Ts *ts, IrPos pos, IrBinOp op, IrNode *l, IrNode *r); /* np.power: no operator fast paths */
IrNode *ts_scalar_unop(Ts *ts, IrPos pos, IrUnOp op, IrNode *x);
IrNode *ts_unop(Ts *ts, IrPos pos, IrUnOp op, IrNode *x);
/* library.c: x.real, x.imag, x.conj() (op IR_UOP_REAL, _IMAG, _CONJ) of a number or an array, real or complex */
IrNode *ts_complex_part(Ts *ts, IrPos pos, IrNode *x, IrUnOp op);
IrNode *ts_compare(Ts *ts, IrPos pos, IrCmpOp op, IrNode *l, IrNode *r);
IrNode *ts_math(Ts *ts, IrPos pos, IrMathFn fn, IrNode **args, int nargs, IrType *force);
bool ts_is_array(const IrNode *n);
bool ts_is_int_scalar(const IrType *t);
const char *ts_type_name(const IrType *t); /* arena string */
IrNode *ts_var(Ts *ts, IrPos pos, IrVar *v);
IrNode *ts_i64(Ts *ts, IrPos pos, int64_t v);

/* map.c: building data-parallel nodes */
IrType *ts_elem_type(IrType *t);    /* array -> its dtype scalar; scalar -> itself */
typedef IrNode *(*TsElemFn)(Ts *ts, IrPos pos, IrNode **elems, int n, void *env);
IrNode *ts_make_map(Ts *ts, IrPos pos, IrNode **inputs, int n, TsElemFn fn, void *env);
IrNode *ts_make_map_into(Ts *ts, IrPos pos, IrNode *out, IrNode **inputs, int n, TsElemFn fn, void *env);
IrNode *ts_make_imap(Ts *ts, IrPos pos, IrNode **dims, int nd); /* body and type left to the caller */
IrNode *ts_make_alloc(Ts *ts, IrPos pos, IrDtype dt, IrNode **dims, int ndim);
IrNode *ts_make_fill(Ts *ts, IrPos pos, IrNode *alloc, IrNode *value);
IrNode *ts_make_reduce(Ts *ts, IrPos pos, IrReduceOp op, IrNode *x, int axis, bool keepdims, IrType *acc);
IrNode *ts_array_size(Ts *ts, IrPos pos, IrNode *arr);
IrNode *ts_make_scan(Ts *ts, IrPos pos, IrReduceOp op, IrNode *x, int axis, IrType *acc);
IrNode *ts_dim(Ts *ts, IrPos pos, IrNode *arr, int axis);
IrNode *ts_shape_dim(Ts *ts, IrPos pos, IrNode **x, int axis); /* without materialising a map */
IrNode *ts_cast_array(Ts *ts, IrPos pos, IrNode *x, IrDtype dt); /* x.astype(dt), or x itself */
IrNode *ts_copy_array(Ts *ts, IrPos pos, IrNode *x);             /* a new C-contiguous copy */

/* ufuncs.c: NumPy elementwise functions beyond the operators; *handled false when name is not one of them */
IrNode *ts_numpy_elementwise(Ts *ts, IrPos pos, const char *name, IrNode **args, int n, const IrNode *decimals_node,
                             bool *handled);

/* linalg.c */
IrNode *ts_matmul(Ts *ts, IrPos pos, IrNode *a, IrNode *b, bool is_dot);
IrNode *ts_outer(Ts *ts, IrPos pos, IrNode *a, IrNode *b);
/* x viewed with new axes: spec is a string over x's axes and new ones, ':' for an axis of x, 'n' for a new
 * axis of size 1 ("::n" is x[:, :, None]). */
IrNode *ts_with_new_axes(Ts *ts, IrPos pos, IrNode *x, const char *spec);

/* args.c: the arguments of a library call */
typedef struct Args {
    const IrNode *call;
    IrNode **pos;      /* typed positional arguments (receiver first for methods) */
    int npos;
    IrNode **kw;       /* typed keyword arguments */
    unsigned kw_used;  /* bit k: keyword k was read; any other keyword is refused, not ignored */
} Args;
IrNode *ts_arg(Args *a, int i, const char *kw);             /* position i or keyword kw, typed; or NULL */
const IrNode *ts_raw_kw(const IrNode *call, const char *kw); /* the untyped keyword argument (for constants) */
const IrNode *ts_kw(Args *a, const char *kw);                /* the same, and marks it as understood */
bool ts_const_int(const IrNode *n, int64_t *v);             /* an untyped integer constant, maybe negated */
IrNode *ts_check_args(Ts *ts, Args *a, const char *fname, int min, int max);
bool ts_dtype_arg(Ts *ts, IrNode *d, IrDtype *out);          /* None leaves *out alone; false if not a dtype */
int ts_shape_arg(Ts *ts, IrNode *s, IrNode ***dims);         /* an int or tuple of ints; -1 if not a shape */
bool ts_name_is(const char *q, const char *prefix, const char *name);

/* shape.c: reshape, ravel, concatenate, stack, linspace, eye */
IrNode *ts_numpy_shape(Ts *ts, Args *a, const char *name, bool *handled);
IrNode *ts_ravel(Ts *ts, IrPos pos, IrNode *x);
IrNode *ts_reshape(Ts *ts, IrPos pos, IrNode *x, IrNode *shape);
IrNode *ts_stack(Ts *ts, IrPos pos, IrNode *seq);  /* np.stack(seq): a tuple of arrays along a new first axis */
IrNode *ts_concatenate(Ts *ts, IrPos pos, IrNode *seq); /* np.concatenate(seq): a tuple of arrays along axis 0 */

/* arrange.c: flip, fliplr, flipud, diff, roll, tile; *handled false when name is not one of them */
IrNode *ts_numpy_arrange(Ts *ts, Args *a, const char *name, bool *handled);

/* axis.c: a reduction or scan along an axis known only at run time (an integer variable): x's reduction along
 * each axis, the one the value names chosen at run time (negative counts from the end; out of bounds is NumPy's
 * AxisError, a ValueError). along(ts, a, name, x, k, keepdims) builds the reduction along constant axis k. */
typedef IrNode *(*TsAlongFn)(Ts *ts, Args *a, const char *name, IrNode *x, int64_t axis, bool keepdims);
IrNode *ts_run_time_axis(Ts *ts, Args *a, const char *name, IrNode *x, IrNode *axis, bool keepdims, TsAlongFn along);

/* sorting.c: np.sort, np.argsort, np.median, np.percentile, np.quantile, np.unique; the methods sort (in place)
 * and argsort. *handled false when name is not one of them. */
IrNode *ts_numpy_sort(Ts *ts, Args *a, const char *name, bool *handled);
IrNode *ts_method_sort(Ts *ts, Args *a, const char *name, bool *handled);

/* stats.c: np.cov, np.corrcoef; *handled false when name is not one of them */
IrNode *ts_numpy_stats(Ts *ts, Args *a, const char *name, bool *handled);

/* linalg_dense.c: np.linalg.<name>; *handled false when it is not one of them */
IrNode *ts_numpy_linalg(Ts *ts, Args *a, const char *name, bool *handled);

/* random.c: np.random.<name>(...) (default_rng; the legacy functions are refused) and the methods of a Generator
 * (a->pos[0], IR_TY_RNG): random, uniform, integers, normal, standard_normal */
IrNode *ts_numpy_random(Ts *ts, Args *a, const char *name);
IrNode *ts_rng_method(Ts *ts, Args *a, const char *name);

/* ufunc_methods.c: np.<ufunc>.reduce/accumulate/outer; *handled false when it is not one of them */
IrNode *ts_ufunc_method(Ts *ts, Args *a, const char *ufunc, const char *method, bool *handled);

/* library.c: the reduction or scan `name` (sum, max, cumsum, ...) of a's first argument, axis and keepdims as
 * a's call gives them (np.sum's rules) */
IrNode *ts_numpy_reduction(Ts *ts, Args *a, const char *name);

/* operators.c: functions as values, and lorikeet's operators (lk.map, lk.reduce, ...) */
const IrFunc *ts_resolve_handle(Ts *ts, IrPos pos, void *handle);
IrNode *ts_call_func(Ts *ts, IrPos pos, const IrFunc *callee, IrNode **args, int nargs, const char **kwnames,
                     IrNode **kwargs, int nkw);
IrNode *ts_apply(Ts *ts, IrPos pos, IrNode *fn, IrNode **args, int nargs); /* fn: a typed function value */
IrNode *ts_apply_kw(Ts *ts, IrPos pos, IrNode *fn, IrNode **args, int nargs, const char **kwnames, IrNode **kwargs,
                    int nkw);
IrNode *ts_lambda(Ts *ts, const IrNode *n);                                /* an IR_LAMBDA as a typed value */
IrNode *ts_operator(Ts *ts, Args *a, const char *name);
IrNode *ts_comprehension_array(Ts *ts, const IrNode *comp, IrDtype *dtype); /* np.array([... for ...]) */

/* registry.c: the CompileError for a call of a name lorikeet does not have, "numpy.sinn is not supported; did you
 * mean numpy.sin or numpy.sinh?": before, name (as the registry writes names) and after name it */
IrNode *ts_unsupported(Ts *ts, IrPos pos, TsLibKind kind, const char *before, const char *name, const char *after);

/* library.c: calls of builtins, math, numpy, methods and user functions */
IrNode *ts_call(Ts *ts, const IrNode *n);

/* iterate.c: what loops and comprehensions iterate over: range, an array, enumerate and zip of those */
typedef enum { TS_ITER_RANGE, TS_ITER_ARRAY, TS_ITER_ENUMERATE, TS_ITER_ZIP } TsIterKind;
typedef struct TsIter {
    TsIterKind kind;
    IrNode *len;             /* int64, evaluated once before the loop */
    IrNode *start, *step;    /* range: int64; enumerate: the counter's start */
    IrNode *arr;             /* array: it */
    struct TsIter *parts;    /* enumerate: the iterable (one); zip: nparts */
    int nparts;
} TsIter;
bool ts_is_builtin_call(const IrNode *n, const char *name);   /* an untyped call of builtins.name */
bool ts_is_iterator_call(const IrNode *n);                   /* range(...), enumerate(...), zip(...) */
bool ts_iter_open(Ts *ts, const IrNode *iterable, TsIter *it); /* false with diag */
IrNode *ts_iter_item(Ts *ts, IrPos pos, const TsIter *it, IrNode *i); /* the item at int64 index i */
IrNode *ts_iter_array(Ts *ts, IrPos pos, const TsIter *it, bool *weak_out); /* the items as a new 1-D array */

/* builtins.c: builtins that read untyped arguments, builtins as values */
IrNode *ts_builtin_raw(Ts *ts, const IrNode *n, bool *handled); /* sum, isinstance, is, range, list, len(range) */
IrNode *ts_builtin_value(Ts *ts, const IrNode *nameref);        /* min/max/abs as functions; NULL if not one */
IrNode *ts_expr_arg(Ts *ts, const IrNode *call, const IrNode *arg); /* an argument: generators, list displays */
IrNode *ts_any_all(Ts *ts, Args *a, bool is_all);

/* lists.c: lists where an array is meant */
IrNode *ts_sequence_array(Ts *ts, IrPos pos, IrNode *tuple, const IrDtype *dtype); /* a list display's array */
/* Which variables hold a list (lists.c): the bits of ts_list_vars, by src var id, and of an untyped expression */
enum { TS_HOLDS_LIST = 1, TS_HOLDS_OTHER = 2 };
unsigned char *ts_list_vars(RtArena *a, const IrFunc *src);
unsigned ts_holds(const Ts *ts, const IrNode *n);
IrNode *ts_binop_node(Ts *ts, const IrNode *n); /* an untyped binop: Python's meaning where an operand is a list */
/* false, with the error set, when storing a value of type value into a list's array would convert it */
bool ts_list_store_fits(Ts *ts, IrPos pos, const IrNode *target_base, const IrType *base, const IrType *value);
IrNode *ts_list_method(Ts *ts, IrPos pos, const char *name, bool *handled); /* .append() and the like: refused */
IrNode *ts_list_of(Ts *ts, const IrNode *call);                  /* list(iterable): an array */

/* einsum.c: np.einsum of one or two operands (a->pos: each operand then its labels, NumPy's sublist form) */
IrNode *ts_einsum(Ts *ts, Args *a);

/* index.c: subscripts, attributes and stores */
IrNode *ts_index(Ts *ts, const IrNode *n);
IrNode *ts_elem_at(Ts *ts, IrPos pos, IrNode *base, IrNode *item, bool checked); /* base[item], one index */
IrNode *ts_mask_select(Ts *ts, IrPos pos, IrNode *base, IrNode *mask);           /* base[mask], a new 1-D array */
IrNode *ts_attr(Ts *ts, const IrNode *n);
IrNode *ts_slice_value(Ts *ts, Args *a);   /* the builtin slice() */
/* A slice whose parts are not constants has no run-time representation: an error unless used as an index */
IrNode *ts_no_slice_value(Ts *ts, IrNode *v);
IrNode *ts_store(Ts *ts, const IrNode *s);

/* setitem.c: a scalar value converted for a store into an array of dtype dt, as NumPy's setitem converts it */
IrNode *ts_setitem_value(Ts *ts, IrPos pos, IrNode *value, IrDtype dt, IrNode *first, bool numpy_checked);
/* value, an array of more than nd dimensions, as NumPy's assignment takes it: its leading dimensions beyond nd
 * each of length 1 (a view of the rest), else NumPy's ValueError when it runs */
IrNode *ts_drop_leading_ones(Ts *ts, IrPos pos, IrNode *value, int nd);
IrNode *ts_index_store_value(Ts *ts, IrPos pos, IrNode *value, int nd); /* a[idx] = value: at most nd dims, as NumPy takes it */
/* scatter.c: assignment through integer index arrays. ts_scatter_target checks the index's form (1-D integer
 * arrays and integers, then full slices) and makes the store's target; ts_index_array_store the store itself. */
IrNode *ts_scatter_target(Ts *ts, IrPos pos, IrNode *base, IrNode **items, int n);
IrNode *ts_index_array_store(Ts *ts, const IrNode *s, IrNode *dst, IrNode *value);
/* print.c: print(...) (the frontend's print intrinsic) typed: its values as the backend appends them */
IrNode *ts_print(Ts *ts, const IrNode *n);
/* NumPy's same_kind rule for an in-place update (a += b of an array): a result of dtype `from` may be written into
 * an array of dtype `to` (the same dtype, or both integers, or both floats) */
bool ts_same_kind(IrDtype from, IrDtype to);
/* The untyped values of a print-like record typed and flattened into *args (*nargs of them); the text
 * "(layout, kinds)" that tells the shim how to show them; NULL with diag set. */
const char *ts_record_values(Ts *ts, IrPos pos, IrNode *const *untyped, int n, const char *layout, IrNode ***args,
                             int *nargs);
IrNode *ts_python_int_operand(Ts *ts, IrPos pos, IrNode *v, IrDtype dt, bool clamp_low, bool clamp_high);
IrNode *ts_transpose(Ts *ts, IrPos pos, IrNode *x); /* x.T: a view with the axes reversed */

/* specialize.c */
IrVar **ts_fcap_of(Ts *ts, const IrVar *v);         /* the captures travelling with function variable v, or NULL */
void ts_fcap_alias(Ts *ts, IrVar *to, const IrNode *value); /* `to = value`: to's captures are value's */
IrNode *ts_const_array(Ts *ts, const IrNode *n);   /* an IR_NAMEREF with name.handle: its hidden parameter */
void ts_pass_consts(Ts *ts, IrPos pos, IrNode *call); /* a call of a typed function gets this one's constants */
IrFunc *ts_specialize_in(TsSession *sess, const IrFunc *untyped, IrType **arg_types, int nargs, LkDiag *diag);

#endif
