/* pipeline.c: the IR passes every compilation runs, in order, on the root function and on each callee it
 * still calls. This is the one list of them: the shim runs it, and a cache keyed on the typed IR before the
 * passes keys on IR_PIPELINE_VERSION too (ir.h), so a change of this list or of what a pass does bumps it.
 *
 * A pass is a function IrFunc * -> void that rewrites one function in place; a check (after the passes) may
 * also reject the program, returning false with a CompileError in diag. ir_inline_calls runs on the root
 * only and first: it sees the whole call graph (root->callees) and prunes the callees it inlined everywhere, so
 * the per-function passes run on the functions backends will actually emit. Before anything, ir_unshare makes
 * each function's IR a tree, as every pass changes nodes in place. */
#include "ir.h"

typedef void (*IrPass)(IrFunc *f);

/* The per-function passes, in order. A new pass goes here (and IR_PIPELINE_VERSION goes up). */
static const IrPass passes[] = {
    ir_cse,               /* before fusion: it shares the scalar reductions that fusion would bury in maps */
    ir_fuse_shared,       /* shared intermediates recomputed in their users (cost.c's rule), before they fuse */
    ir_inline_single_use, /* named single-use intermediates take their expression's place, so they fuse */
    ir_fuse,
    ir_recognize_matmul,  /* on fused bodies: a dot-product imap is one node by now */
    ir_small_windows,     /* on fused bodies (a window's cast is in its map); before reduce inputs become maps */
    ir_explicit_alloc,    /* after every pass that makes or merges maps */
    ir_check_unbound,     /* it reads the final statements */
    ir_reduce_inputs_as_maps, /* after every pass that makes reductions or replaces their inputs */
    ir_auto_parallel,     /* on the final nodes (every new array an IR_ALLOC); before prange's rules, which it
                           * keeps, and which then record its loops' reductions */
};

/* Then the checks, passes that may reject the program with a CompileError; they record what they found. */
typedef bool (*IrCheck)(IrFunc *f, LkDiag *diag);

static const IrCheck checks[] = {
    ir_prange_reductions, /* prange's rules, the same for every backend, and each loop's reductions */
    ir_check_random,      /* a Generator's draws stay out of element code and prange bodies */
    ir_check_print,       /* print() stays out of element code */
};

/* Then the passes that must see the program as the checks accepted it. */
static const IrPass after_checks[] = {
    ir_reduce_nests,      /* its parallel loop keeps prange's rules by construction; before ir_version_loops,
                           * which finds nothing to prove in it (its accesses are proven) */
    ir_version_loops,     /* it copies loops: prange's rules count a variable's reads, the copy doubles them */
    ir_version_imaps,     /* the same for imaps whose element tests its indices (small_windows.c's tests) */
    ir_sibling_reductions,/* on the final statements: it moves reductions the passes above leave in place */
    ir_mark_regions,      /* last: it only marks, on the final nodes (each copy of a versioned loop) */
};

bool ir_optimize(IrFunc *root, LkDiag *diag)
{
    for (int i = 0; i <= root->ncallees; i++) ir_unshare(i == 0 ? root : root->callees[i - 1]); /* passes change nodes in place */
    ir_inline_calls(root);
    for (int i = 0; i <= root->ncallees; i++) {
        IrFunc *f = i == 0 ? root : root->callees[i - 1];
        for (size_t p = 0; p < sizeof passes / sizeof passes[0]; p++) passes[p](f);
        for (size_t c = 0; c < sizeof checks / sizeof checks[0]; c++)
            if (!checks[c](f, diag)) return false;
        for (size_t p = 0; p < sizeof after_checks / sizeof after_checks[0]; p++) after_checks[p](f);
    }
    return true;
}
