/* typespec.h: specialisation of an untyped IrFunc on concrete argument types.
 *
 * ts_specialize() copies the untyped function into the compilation's arena, infers a type for every variable
 * and expression (iterating to a fixed point over loops), inserts the casts that NumPy 2's promotion rules
 * (NEP 50) imply, and rewrites array operations and NumPy library calls into the IR's data-parallel nodes.
 * User functions that it calls are specialised too, each once per argument-type signature, and listed in the
 * result's callees. It never touches Python: callees are fetched through the resolver the caller supplies.
 */
#ifndef LK_TYPESPEC_H
#define LK_TYPESPEC_H

#include "../ir/ir.h"

/* Returns the untyped IR of the user function `func_handle` (as the frontend recorded it), or NULL with diag set. */
typedef const IrFunc *(*TsResolveCallee)(void *resolver_ctx, void *func_handle, LkDiag *diag);

/* Constant arrays: the arrays from outside the functions of a compilation (globals, closure cells, default values
 * the frontend lowered as an IR_NAMEREF with name.handle), frozen when their function was lowered. Every typed
 * function of the compilation takes them, in this order, as hidden parameters after its own (named "$" and the
 * name), and passes its own on to every callee; the shim passes the root's after the call's arguments. So code
 * never holds an address of the process that compiled it (the disk cache loads it elsewhere) and every backend
 * receives them as it receives arrays (the gpu's copied to the device). */
typedef struct TsOptions {
    bool boundscheck;
    /* np.where takes a Python int operand as operators do (NEP 50: OverflowError where it does not fit an integer
     * result dtype), as NumPy 2.5 does; false: NumPy 2.4's C cast, which wraps. The shim asks the NumPy loaded. */
    bool where_checks_python_ints;
    TsResolveCallee resolve;
    void *resolver_ctx;
    int nconsts;
    void *const *const_handles;      /* name.handle of each, compared by identity */
    IrType *const *const_types;      /* read-only array types */
    const char *const *const_names;
} TsOptions;

IrFunc *ts_specialize(const IrFunc *untyped, IrType **arg_types, int nargs, const TsOptions *opts, RtArena *a,
                      LkDiag *diag);

/* The library registry (registry.c): every name lorikeet compiles, for the user guide's coverage table and for
 * the nearest name a refusal suggests. It describes the lowering (library.c), which alone decides. */
typedef enum { TS_LIB_BUILTIN, TS_LIB_MATH, TS_LIB_NUMPY, TS_LIB_METHOD, TS_LIB_ATTRIBUTE, TS_LIB_LORIKEET } TsLibKind;
typedef struct TsLibEntry {
    TsLibKind kind;
    const char *name;    /* without the prefix: "sum", "linalg.solve", "add.reduce" */
    const char *group;   /* a heading for the table: "elementwise", "reductions", ... */
    IrIntrinsic needs;   /* the intrinsic its lowering makes that a backend may refuse; IR_INTR_COUNT: none */
    const char *note;    /* NULL or a few words on a limit */
} TsLibEntry;
int ts_library(const TsLibEntry **entries);                       /* all of them: their number */
const char *ts_library_prefix(TsLibKind kind);                    /* "numpy.", "math.", ".", "" */
const char *ts_library_refusal(const TsLibEntry *e, const char *backend); /* why it refuses e, or NULL */
/* "; did you mean numpy.sin or numpy.sinh?" for the nearest names of that kind within edit distance 1 to 3 (by
 * length), else the members of a small dotted namespace (" (lorikeet has numpy.linalg.cholesky, det, ...)"),
 * else "". name is as the user wrote it after the prefix ("sinn", "linalg.eig"). */
void ts_library_suggest(TsLibKind kind, const char *name, char *out, size_t cap);

/* NEP 50 promotion, exposed for tests of the rules through the shim. */
IrType *ts_promote(IrType *a, IrType *b);

#endif
