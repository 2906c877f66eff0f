/* arena.c: bump allocation for one compilation. Chunks are malloc'd and freed together. */
#include <stdlib.h>
#include <string.h>
#include "runtime.h"

struct RtArenaChunk {
    RtArenaChunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char mem[];
};

RtArena *rt_arena_new(void)
{
    return calloc(1, sizeof(RtArena));
}

void rt_arena_free(RtArena *a)
{
    if (!a) return;
    RtArenaChunk *c = a->chunks;
    while (c) {
        RtArenaChunk *next = c->next;
        free(c);
        c = next;
    }
    free(a);
}

void *rt_arena_alloc(RtArena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    RtArenaChunk *c = a->chunks;
    if (!c || c->used + n > c->cap) {
        size_t cap = n > 60000 ? n : 60000;
        c = malloc(sizeof *c + cap);
        if (!c) return NULL; /* callers run under a memory budget far below this; treated as fatal upstream */
        c->next = a->chunks;
        c->used = 0;
        c->cap = cap;
        a->chunks = c;
    }
    void *p = c->mem + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

char *rt_arena_strdup(RtArena *a, const char *s)
{
    return rt_arena_dup(a, s, strlen(s) + 1);
}

void *rt_arena_dup(RtArena *a, const void *p, size_t n)
{
    void *q = rt_arena_alloc(a, n);
    memcpy(q, p, n);
    return q;
}
