/* cuda_emit.c: the kernels of a compilation and its CUDA C translation unit. Which regions become kernels is
 * parallel_regions.c's decision (node->region); here they are found in host code (the code outside every
 * region's element code, of the root and of the callees host code calls), in a fixed order, and emitted with
 * the device functions their element code calls. */
#include <stdlib.h>
#include <string.h>
#include "../backend.h"
#include "cuda.h"
#include "gpu.h"

typedef struct Collect {
    RtArena *a;
    LkDiag *diag;
    bool record;          /* second pass: lay out the kernels (first pass: find the host-called functions) */
    IrFunc **host;        /* functions host code calls */
    int nhost;
    int cap_host;
    GpuKernelLayout *k;
    int n, cap;
    const IrFunc *f;
    bool ok;
} Collect;

static void host_expr(Collect *cl, IrNode *n);

static void host_child(IrNode **p, void *env)
{
    host_expr(env, *p);
}

static void add_host(Collect *cl, IrFunc *f)
{
    for (int i = 0; i < cl->nhost; i++)
        if (cl->host[i] == f) return;
    if (cl->nhost == cl->cap_host) {
        int cap = cl->cap_host ? 2 * cl->cap_host : 8;
        IrFunc **h = rt_arena_alloc(cl->a, sizeof *h * (size_t)cap);
        if (cl->nhost) memcpy(h, cl->host, sizeof *h * (size_t)cl->nhost);
        cl->host = h;
        cl->cap_host = cap;
    }
    cl->host[cl->nhost++] = f;
}

static void region(Collect *cl, IrNode *n)
{
    if (!cl->record || !cl->ok || !n->region) return;
    if (cl->n == cl->cap) {
        int cap = cl->cap ? 2 * cl->cap : 8;
        GpuKernelLayout *k = rt_arena_alloc(cl->a, sizeof *k * (size_t)cap);
        if (cl->n) memcpy(k, cl->k, sizeof *k * (size_t)cl->n);
        cl->k = k;
        cl->cap = cap;
    }
    const char *file = n->pos.file ? n->pos.file : cl->f->file;
    if (!gpu_kernel_layout(n, cl->a, &cl->k[cl->n], file, cl->diag)) cl->ok = false;
    else cl->n++;
}

static void fused_input(Collect *cl, IrNode *input)
{
    switch (input->kind) {
    case IR_MAP:
        for (int i = 0; i < input->u.map.ninputs; i++) host_expr(cl, input->u.map.inputs[i]);
        return;
    case IR_IMAP:
        for (int i = 0; i < input->u.imap.ndim; i++) host_expr(cl, input->u.imap.dims[i]);
        return;
    default: host_expr(cl, input); return;
    }
}

/* n is evaluated by host code: the regions it is and holds, in parallel_regions.c's order (operands first). */
static void host_expr(Collect *cl, IrNode *n)
{
    switch (n->kind) {
    case IR_MAP:
        for (int i = 0; i < n->u.map.ninputs; i++) host_expr(cl, n->u.map.inputs[i]);
        if (n->u.map.out) host_expr(cl, n->u.map.out);
        region(cl, n);
        return;
    case IR_IMAP:
        for (int i = 0; i < n->u.imap.ndim; i++) host_expr(cl, n->u.imap.dims[i]);
        if (n->u.imap.out) host_expr(cl, n->u.imap.out);
        region(cl, n);
        return;
    case IR_REDUCE:
        fused_input(cl, n->u.reduce.input);
        if (n->u.reduce.out) host_expr(cl, n->u.reduce.out);
        region(cl, n);
        return;
    case IR_SCAN:
        fused_input(cl, n->u.scan.input);
        region(cl, n);
        return;
    case IR_CALL:
        ir_each_child(n, host_child, cl);
        if (n->u.call.ckind == IR_CALLEE_FUNC && n->u.call.callee) add_host(cl, n->u.call.callee);
        if (n->u.call.ckind == IR_CALLEE_INTRINSIC && n->u.call.intrinsic == IR_INTR_MATMUL) region(cl, n);
        return;
    case IR_CONST: case IR_VAR: case IR_NAMEREF: case IR_BINOP: case IR_UNOP: case IR_COMPARE: case IR_BOOLOP:
    case IR_IFEXP: case IR_INDEX: case IR_SLICE: case IR_ATTR: case IR_TUPLE: case IR_TUPLE_GET: case IR_LAMBDA:
    case IR_COMPREHENSION: case IR_CAST: case IR_MATH: case IR_ARRAY_DIM: case IR_ALLOC: case IR_BCAST_SHAPE:
    case IR_ASSIGN: case IR_AUGASSIGN: case IR_STORE: case IR_IF: case IR_WHILE: case IR_FOR_RANGE:
    case IR_FOR_ITER: case IR_BREAK: case IR_CONTINUE: case IR_RETURN: case IR_EXPR_STMT: case IR_PASS:
    case IR_KIND_COUNT:
        ir_each_child(n, host_child, cl);
        return;
    }
}

static void host_block(Collect *cl, IrBlock *b)
{
    for (int i = 0; i < b->n; i++) {
        IrNode *s = b->stmts[i];
        if (s->kind == IR_FOR_RANGE && s->u.for_range.parallel && s->region) {
            ir_each_child(s, host_child, cl);
            region(cl, s);
            continue;
        }
        if (s->kind == IR_IF && s->u.if_.nest) { /* the arrays' kernels fill the device; the nest's rows would not */
            host_block(cl, &s->u.if_.orelse);
            continue;
        }
        host_expr(cl, s);
        IrBlock *blocks[2];
        int nb = ir_stmt_blocks(s, blocks);
        for (int k = 0; k < nb; k++) host_block(cl, blocks[k]);
    }
}

static void host_func(Collect *cl, IrFunc *f)
{
    cl->f = f;
    host_block(cl, &f->body);
}

bool gpu_collect_kernels(IrFunc *root, RtArena *a, GpuKernelLayout **kernels, int *n, LkDiag *diag)
{
    Collect cl = {.a = a, .diag = diag, .ok = true};
    /* which callees host code reaches (host code of a reached callee reaches more) */
    host_func(&cl, root);
    for (int i = 0; i < cl.nhost; i++) host_func(&cl, cl.host[i]);
    cl.record = true;
    host_func(&cl, root);
    /* every callee: the llvm backend emits host code for each, called from host code or not */
    for (int i = 0; i < root->ncallees && cl.ok; i++) host_func(&cl, root->callees[i]);
    *kernels = cl.k;
    *n = cl.n;
    return cl.ok;
}

int gpu_kernel_index(const GpuKernelLayout *k, int n, const IrNode *region_node)
{
    for (int i = 0; i < n; i++)
        if (k[i].node == region_node) return i;
    return -1;
}

/* ---------------- the translation unit ---------------- */

typedef struct Find {
    const IrNode *node;
    bool found;
} Find;

static void find_in(IrNode **p, void *env)
{
    Find *fd = env;
    if (fd->found) return;
    if (*p == fd->node) {
        fd->found = true;
        return;
    }
    ir_each_child(*p, find_in, env);
    IrBlock *blocks[2];
    int nb = ir_stmt_blocks(*p, blocks);
    for (int k = 0; k < nb && !fd->found; k++)
        for (int i = 0; i < blocks[k]->n; i++) find_in(&blocks[k]->stmts[i], env);
}

/* The function whose body holds node. */
static IrFunc *owner_of(IrFunc *root, const IrNode *node)
{
    for (int i = 0; i <= root->ncallees; i++) {
        IrFunc *f = i == 0 ? root : root->callees[i - 1];
        Find fd = {node, false};
        for (int s = 0; s < f->body.n && !fd.found; s++) find_in(&f->body.stmts[s], &fd);
        if (fd.found) return f;
    }
    return root;
}

/* The calls of user functions in a region's element code (not in its operands, which host code evaluates). */
static void element_calls(Cu *c, const IrNode *n)
{
    if (n->kind == IR_MAP) cu_find_device_calls(c, n->u.map.body);
    if (n->kind == IR_IMAP) cu_find_device_calls(c, n->u.imap.body);
    if (n->kind == IR_REDUCE || n->kind == IR_SCAN) {
        const IrNode *input = n->kind == IR_REDUCE ? n->u.reduce.input : n->u.scan.input;
        const IrCombine *cb = n->kind == IR_REDUCE ? &n->u.reduce.combine : &n->u.scan.combine;
        if (input->kind == IR_MAP) cu_find_device_calls(c, input->u.map.body);
        if (cb->body) cu_find_device_calls(c, cb->body);
        if (cb->init) cu_find_device_calls(c, cb->init);
    }
    if (n->kind == IR_FOR_RANGE)
        for (int i = 0; i < n->u.for_range.body.n; i++) cu_find_device_calls(c, n->u.for_range.body.stmts[i]);
}

char *gpu_emit_cuda(IrFunc *root, const GpuKernelLayout *k, int n, bool fastmath, RtNames *names, bool *may_raise,
                    LkDiag *diag)
{
    Cu c = {.a = rt_arena_new(), .diag = diag, .names = names, .f = root, .fail = "return 1;"};
    CuBuf protos = {0}, defs = {0}, kernels = {0}, errors = {0};
    for (int i = 0; i < n; i++) element_calls(&c, k[i].node);
    bool ok = cu_device_functions(&c, &protos, &defs);
    /* a kernel may raise when it emitted a raise of its own, or calls a device function and some device
     * function raises (which ones a kernel reaches is not tracked: any of them counts) */
    bool dev_raise = c.nraises > 0;
    c.out = &kernels;
    for (int i = 0; i < n && ok; i++) {
        int raises = c.nraises, calls = c.ndevcalls;
        ok = cu_kernel(&c, &k[i], i, owner_of(root, k[i].node));
        bool raises_here = c.nraises > raises || (dev_raise && c.ndevcalls > calls);
        if (may_raise) may_raise[i] = raises_here;
        cu_buf_printf(&errors, "%s lk_k%d %s", i ? "," : "", i, raises_here ? "may raise" : "raises nothing");
    }
    char *src = NULL;
    if (ok && diag->kind == LK_OK) {
        CuBuf all = {0};
        const char *texts[] = {c.types.s, protos.s, defs.s, kernels.s};
        cu_preamble(&all, texts, 4);
        cu_buf_printf(&all, "/* %s:%d, %d kernel%s%s */\n", root->file, root->line, n, n == 1 ? "" : "s",
                      fastmath ? ", fastmath" : "");
        if (c.types.s) cu_buf_printf(&all, "%s\n", c.types.s);
        if (protos.s) cu_buf_printf(&all, "%s\n", protos.s);
        if (defs.s) cu_buf_printf(&all, "%s", defs.s);
        if (kernels.s) cu_buf_printf(&all, "%s", kernels.s);
        /* which kernels can write the error record (a call that launched one waits for it to read its errors) */
        if (errors.s) cu_buf_printf(&all, "/* errors:%s */\n", errors.s);
        src = all.s;
    }
    cu_buf_free(&protos);
    cu_buf_free(&defs);
    cu_buf_free(&kernels);
    cu_buf_free(&errors);
    cu_buf_free(&c.types);
    rt_arena_free(c.a);
    return src;
}

char *be_gpu_cuda_source(IrFunc *typed, const BeOptions *opts, LkDiag *diag)
{
    RtArena *a = rt_arena_new();
    GpuKernelLayout *k = NULL;
    int n = 0;
    char *src = NULL;
    if (gpu_collect_kernels(typed, a, &k, &n, diag)) {
        RtNames names = {0};
        src = gpu_emit_cuda(typed, k, n, opts && opts->fastmath, &names, NULL, diag);
        rt_names_free(&names);
    }
    rt_arena_free(a);
    return src;
}
