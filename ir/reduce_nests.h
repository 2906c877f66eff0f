/* reduce_nests.h: the chain reduce_nests.c recognises, as nest_build.c builds its loop nest from it. Internal to
 * ir/ (ir.h declares the pass). */
#ifndef LK_IR_REDUCE_NESTS_H
#define LK_IR_REDUCE_NESTS_H

#include "ir.h"

#define MAX_PRODUCERS 4
#define MAX_INPUTS 16
#define MAX_ALIASES 4
#define LANES 4        /* positions of the last axis the nest keeps in registers: n-body's x, y, z and one more */

typedef enum { IN_SCALAR, IN_LEAF, IN_CHAIN } InKind;

typedef struct In {
    InKind kind;
    IrNode *node;          /* the map's input */
    IrVar *param;          /* the map's parameter bound to it */
    int producer;          /* IN_CHAIN: the producer it reads (W's inputs), or -1 for V (the consumer's) */
    IrVar *temp;           /* IN_SCALAR: its value, computed before the nest */
    bool one[3];           /* IN_LEAF: per axis, made by a None of the view the leaf is (its extent is 1) */
} In;

/* A map's element space: its rank, inputs, and the temporaries that hold its extents. */
typedef struct Space {
    IrNode *map;
    int rank;
    In in[MAX_INPUTS];
    int nin;
    IrVar *ext[3];
} Space;

typedef struct Producer {
    IrVar *var;                   /* R */
    IrNode *reduce;
    int alloc_at, reduce_at;
    IrVar *alias[MAX_ALIASES];    /* X = R, X2 = X, ...: the last one is W's input */
    int alias_at[MAX_ALIASES];
    int nalias;
    Space sp;
    IrVar *acc;                   /* R's element in the nest */
} Producer;

typedef struct Nest {
    IrFunc *f;
    RtArena *a;
    IrBlock *b;
    const int *refs;              /* by variable id: IR_VAR nodes naming it in the whole function */
    const int *defs;              /* by variable id: statements assigning it */
    int nvars;                    /* the ids those count */
    int at, first;                /* the consumer's statement, the first statement of the run */
    IrPos pos;
    IrNode *consumer;
    IrVar *out;
    int out_alloc_at;
    IrVar *view, *w;
    int view_at, w_alloc_at, w_map_at;
    Space csp, wsp;
    Producer prod[MAX_PRODUCERS];
    int nprod;
    IrVar *wval;                  /* W's element in the nest */
    IrVar *idx[3];                /* i, j, k (a producer's line uses idx[2] too: its loop comes before k's) */
} Nest;

/* Statement i of the run [x->first, x->at] is one of the chain's (the others move ahead of the nest's if). */
bool ir_nest_in_chain(const Nest *x, int i);
/* Replaces the run by its moved statements, the extents, and `if versioned nest <test>: <nest> else: <the chain>`. */
void ir_nest_rewrite(Nest *x);

#endif
