/* diag.c: filling in a diagnostic value. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "runtime.h"

void lk_diag_set(LkDiag *d, LkErrKind kind, const char *file, int line, int col, const char *fmt, ...)
{
    if (d->kind != LK_OK) return; /* the first error wins: later ones are usually its consequences */
    d->kind = kind;
    snprintf(d->file, sizeof d->file, "%s", file ? file : "");
    d->line = line;
    d->col = col;
    d->raised_class = d->raised_args = NULL;
    d->raised_recorded = false;
    d->raised_values = NULL;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->message, sizeof d->message, fmt, ap);
    va_end(ap);
}
