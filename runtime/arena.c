/* arena.c: bump allocation for one compilation. Chunks are malloc'd and freed together.
 *
 * An allocation never returns NULL: the compiler's hundreds of callers could not all check it, and a NULL
 * they dereference is a crash that says nothing. Running out of memory while compiling ends the process with a
 * message saying so, as LLVM (which the same compilation then calls) does on its own allocation failures. The
 * compiler's requests are small (typespec bounds every size a program can ask for: ir.h's limits), so this
 * happens only when the whole process is out of memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime.h"

void rt_out_of_memory(size_t n)
{
    fprintf(stderr, "lorikeet: out of memory: the compiler could not allocate %zu bytes\n", n);
    fflush(stderr);
    abort();
}

struct RtArenaChunk {
    RtArenaChunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char mem[];
};

RtArena *rt_arena_new(void)
{
    RtArena *a = calloc(1, sizeof(RtArena));
    if (!a) rt_out_of_memory(sizeof(RtArena));
    return a;
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
        if (!c) rt_out_of_memory(sizeof *c + cap);
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
