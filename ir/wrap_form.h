/* wrap_form.h: affine forms in int64's wrapping arithmetic, shared by the passes of ir/ that read a start, a
 * stop or an index as konst + sum coef * atom (small_windows.c, version_imaps.c). Not for other layers.
 *
 * The arithmetic is uint64_t's: + - * are exact modulo 2^64, so two forms whose difference is the constant K give
 * K exactly however the program's own arithmetic wraps. (bounds_plan.c's forms, in ir.h, are unbounded instead:
 * they prove ranges.) */
#ifndef LK_IR_WRAP_FORM_H
#define LK_IR_WRAP_FORM_H

#include "ir.h"

#define IR_FORM_TERMS 8 /* atoms of a form: a longer one is not a form */

typedef struct IrWrapForm {
    uint64_t konst;
    int n;
    uint64_t coef[IR_FORM_TERMS];
    const IrNode *atom[IR_FORM_TERMS];
} IrWrapForm;

bool ir_is_int64(const IrType *t);
/* Atoms are equal when they read the same quiet thing (a variable, a dimension, a tuple item, a cast of one);
 * anything else only when it is the same node. */
bool ir_form_same_atom(const IrNode *a, const IrNode *b);
bool ir_form_add(IrWrapForm *out, const IrWrapForm *x, const IrWrapForm *y, uint64_t sign); /* x + sign*y; false: too many atoms */
void ir_form_scale(IrWrapForm *f, uint64_t c);                                             /* f * c */
/* e (an int64 expression) as a form: constants, + - * by a constant and unary -/+ are read through, to a depth
 * of 32; any other node is an atom, if atom_ok (NULL: every one) accepts it, else e is not a form (false). */
bool ir_form_of(const IrNode *e, IrWrapForm *out, bool (*atom_ok)(const IrNode *atom, void *env), void *env);

#endif
