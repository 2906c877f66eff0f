/* print.c: what compiled code's print() calls write, kept in the call's context for the shim to format
 * (runtime.h's print section says the record's layout and why). The functions are called from compiled code:
 * they never fail the call; a record that does not fit in memory is dropped whole, and counted. */
#include <stdlib.h>
#include <string.h>
#include "runtime.h"

/* the record being written: where it began, and whether a piece of it was lost */
typedef struct Open {
    int64_t start;
    int lost;
} Open;

static _Thread_local Open open_record;

static RtText *text_of(RtCtx *ctx)
{
    if (!ctx->printed) ctx->printed = calloc(1, sizeof *ctx->printed);
    return ctx->printed;
}

static void put(RtCtx *ctx, const void *bytes, int64_t n)
{
    RtText *t = text_of(ctx);
    if (!t || open_record.lost) {
        open_record.lost = 1;
        return;
    }
    int64_t padded = (n + 7) & ~(int64_t)7;
    if (t->n + padded > t->cap) {
        int64_t cap = t->cap ? t->cap : 256;
        while (cap < t->n + padded) cap *= 2;
        char *data = realloc(t->data, (size_t)cap);
        if (!data) {
            open_record.lost = 1;
            return;
        }
        t->data = data;
        t->cap = cap;
    }
    memcpy(t->data + t->n, bytes, (size_t)n);
    memset(t->data + t->n + n, 0, (size_t)(padded - n));
    t->n += padded;
}

void rt_print_begin(RtCtx *ctx, int64_t layout)
{
    RtText *t = text_of(ctx);
    open_record = (Open){t ? t->n : 0, 0};
    put(ctx, &layout, 8);
}

void rt_print_i64(RtCtx *ctx, int64_t v)
{
    put(ctx, &v, 8);
}

void rt_print_f64(RtCtx *ctx, double v)
{
    put(ctx, &v, 8);
}

/* The elements in C order, whatever the strides (a view, a transposed array), each in its own bytes, packed
 * into one piece (put() pads each piece). */
void rt_print_array(RtCtx *ctx, const char *data, int64_t ndim, const int64_t *shape, const int64_t *strides,
                    int64_t itemsize)
{
    put(ctx, &ndim, 8);
    for (int64_t d = 0; d < ndim; d++) put(ctx, &shape[d], 8);
    int64_t count = 1;
    for (int64_t d = 0; d < ndim; d++) count *= shape[d];
    if (count == 0) return;
    int64_t bytes = count * itemsize;
    char *packed = malloc((size_t)bytes);
    if (!packed) {
        open_record.lost = 1;
        return;
    }
    int64_t at = 0, idx[64] = {0};
    for (int64_t k = 0; k < count; k++) {
        const char *p = data;
        for (int64_t d = 0; d < ndim; d++) p += idx[d] * strides[d];
        memcpy(packed + at, p, (size_t)itemsize);
        at += itemsize;
        for (int64_t d = ndim - 1; d >= 0; d--) {
            if (++idx[d] < shape[d]) break;
            idx[d] = 0;
        }
    }
    put(ctx, packed, bytes);
    free(packed);
}

void rt_print_end(RtCtx *ctx)
{
    RtText *t = ctx->printed;
    if (open_record.lost) {
        if (t) {
            t->n = open_record.start; /* the record goes whole, or not at all */
            t->dropped++;
        }
    }
    open_record = (Open){0, 0};
}

void rt_text_join(RtCtx *dst, RtCtx *src)
{
    RtText *s = src->printed;
    if (!s) return;
    if (!dst->printed) {
        dst->printed = s;
        src->printed = NULL;
        return;
    }
    RtText *d = dst->printed;
    d->dropped += s->dropped;
    if (d->n + s->n > d->cap) {
        char *data = realloc(d->data, (size_t)(d->n + s->n));
        if (!data) {
            d->dropped++; /* a chunk's records, lost */
            rt_text_free(src);
            return;
        }
        d->data = data;
        d->cap = d->n + s->n;
    }
    memcpy(d->data + d->n, s->data, (size_t)s->n);
    d->n += s->n;
    rt_text_free(src);
}

void rt_text_free(RtCtx *ctx)
{
    if (!ctx->printed) return;
    free(ctx->printed->data);
    free(ctx->printed);
    ctx->printed = NULL;
}
