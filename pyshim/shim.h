/* shim.h: the C half of the `lorikeet` Python package (module lorikeet._lorikeet).
 *
 * dispatcher.c: the Dispatcher type, whose call path (signature key, lookup, unboxing, the call, boxing) is
 *               written for speed: no allocation, no hashing of source, no attribute lookups by string.
 * compile.c:    the slow path: untyped IR from the frontend, typespec, IR passes, a backend.
 * box.c:        NumPy and Python values to argument slots and back.
 * errors.c:     LkDiag to Python exceptions (the only place that happens).
 * device_array.c: lk.DeviceArray (device memory seen from Python), lk.to_device, __cuda_array_interface__ and
 *               DLPack export; device_import.c: device arrays of other libraries (CuPy, PyTorch, Numba)
 *               recognised without a copy; gpu_module.c: the gpu's module functions (gpu_available, stats,
 *               the private NVRTC and self-test entry points).
 */
#ifndef LK_SHIM_H
#define LK_SHIM_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define PY_ARRAY_UNIQUE_SYMBOL lk_ARRAY_API
#ifndef LK_IMPORT_ARRAY
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include "../frontend/frontend.h"
#include "../typespec/typespec.h"
#include "../ir/ir.h"
#include "../backends/backend.h"

#define LK_KEY_MAX 256
#define LK_MODULE_CHARS 35 /* a compilation's name: "lk" and 32 hex digits */
#define LK_MAX_SLOTS 1024
#define LK_MAX_ARRAYS 128

typedef struct LkSpec {
    unsigned char key[LK_KEY_MAX];
    int keylen;
    BeEntry entry;
    RtNames names;     /* what entry's error records name (BeCompiled.names) */
    IrType **arg_types; /* nargs of the call's, then nconsts of the constant arrays */
    int nargs;
    int nconsts;
    PyObject *consts;   /* a tuple (strong) of the constant arrays passed after the arguments, or NULL */
    PyObject *held;     /* the functions among the arguments (a tuple, or NULL): the key names them by address */
    IrType *ret_type;
    int ret_slots;
    int arg_slots;
    char *typed_ir;    /* printed typed IR after the passes */
    char *parallel_report; /* ir_parallel_report: which loops run in parallel, and why the others do not */
    char *llvm_ir;     /* optimised LLVM IR, kept only when asked for */
    double compile_ms;
    char ir_hash[2 * IR_HASH_BYTES + 1]; /* the typed IR's canonical hash, in hex */
    bool device_data;  /* BeCompiled.device_data: arrays travel to the device and back (gpu_call.c) */
    bool writes_args;
    bool declared;     /* compiled for a declared signature (warm-up): any-layout arrays here also take C ones */
    struct LkPosMap *posmap; /* code from the disk cache compiled elsewhere in the file system or the file: how its
                              * error records' positions map to this process's (lk_cache_rebase), else NULL */
    IrSplitPlan split;  /* whether a call may run as pieces of its first axis (split_call.c) */
    char func_name[64]; /* the Python function's name, for messages */
    const BeBackend *backend; /* holds the code of compilation `module` once: lk_free_spec gives it back */
    char module[LK_MODULE_CHARS];
} LkSpec;

/* What one compilation keeps or reuses besides its code (lk_compile's io; NULL: nothing) */
typedef struct LkCodeIo {
    bool keep_llvm;      /* keep the optimised LLVM IR text */
    bool save;           /* out: saved, saved_size, the code as bytes for load (malloc'd) */
    void *saved;
    size_t saved_size;
    const void *load;    /* load this saved code instead of compiling (code of another compilation is refused) */
    size_t load_size;
} LkCodeIo;

typedef struct LkAuto LkAuto; /* auto.c: backend="auto"'s state */

typedef struct LkDispatcher {
    PyObject_HEAD
    PyObject *py_func;
    PyObject *untyped;   /* capsule "lorikeet.untyped" (UntypedIR), or NULL until first compiled */
    PyObject *weakreflist;
    int boundscheck;
    int fastmath;
    char backend[16];
    int cache;           /* use the on-disk code cache (code_cache.c) when the backend is cpu or openmp */
    Py_ssize_t cache_hits, cache_misses; /* specialisations loaded from it; keyed but compiled */
    Py_ssize_t compiles; /* specialisations the backend compiled (not loaded) */
    double cache_ms;     /* time the disk cache's lookups and saves took (benchmarks/cache_hit.py reports it) */
    bool declared_warmed; /* the declared signatures were compiled (or loaded) on a miss: once */
    int nparams;
    bool varargs;       /* `*args`: the last parameter takes the call's positional arguments after the others */
    LkAuto *auto_state; /* backend "auto": the backend of each call is chosen (auto.c); else NULL */
    LkSpec **specs;   /* newest last; the call path scans them (few per function) */
    int nspecs, cap_specs;
} LkDispatcher;

typedef struct UntypedIR {
    RtArena *arena;
    IrFunc *func;
    PyObject *env;       /* keeps the func_handles of calls alive */
} UntypedIR;

extern PyTypeObject LkDispatcher_Type;
extern PyTypeObject *lk_dispatcher_type; /* the C type of dispatchers (heap type made at module init) */
static inline bool lk_is_dispatcher(PyObject *o)
{
    return lk_dispatcher_type && PyObject_TypeCheck(o, lk_dispatcher_type);
}

/* Argument i of a call of s: the call's own, then the compilation's constant arrays (TsOptions). */
static inline PyObject *lk_spec_arg(const LkSpec *s, PyObject *args, int i)
{
    return i < s->nargs ? PyTuple_GET_ITEM(args, i) : PyTuple_GET_ITEM(s->consts, i - s->nargs);
}

/* box.c */
/* Appends the signature key of one argument; -1 if its type is not supported (no exception set). */
int lk_key_arg(PyObject *arg, unsigned char *key, int *len);
bool lk_numpy_where_checks_python_ints(void); /* NumPy 2.5's np.where rule (cache_key.c) */
/* The IrType of one argument, or NULL with a TypeError naming the parameter. */
IrType *lk_type_of_arg(PyObject *arg, const char *param);
/* Writes the slots of one argument; arrays are recorded in arrays[] for their base tags. */
void lk_unbox_arg(PyObject *arg, const IrType *t, int64_t *slots, int *nslot, PyObject **arrays, int *narrays);
/* The Python value of a result; takes the buffers it returns out of ctx. NULL with an exception on failure. */
PyObject *lk_box_result(const IrType *t, const int64_t *slots, int *nslot, RtCtx *ctx, PyObject **arrays,
                        PyObject **owners, int *nowners);

/* generator.c: a numpy.random.Generator argument (PCG64 only): its state in 6 slots, written back after the call */
bool lk_is_generator(PyObject *o);                        /* a numpy.random.Generator (no exception set) */
bool lk_is_pcg64_generator(PyObject *gen);                /* ... on PCG64: the one compiled code takes */
bool lk_generator_supported(PyObject *gen, const char *param); /* else false with a TypeError naming param */
void lk_generator_in(PyObject *gen, int64_t *slots);      /* its RtRng into slots[0..5]; an exception on failure */
bool lk_spec_has_generator(const LkSpec *s);
int lk_generators_out(const LkSpec *s, PyObject *args, const int64_t *slots); /* -1 with an exception */

/* split_call.c: a call run as pieces along its arguments' first axis when its data exceeds the device's memory.
 * A runner moves the data of the pieces: device memory (gpu_call.c's lk_gpu_runner) or host memory (the test
 * mode on the cpu and openmp backends). */
typedef struct LkRunner {
    bool device;   /* arguments read whole must be copied to it once */
    uint64_t (*alloc)(int64_t nbytes, LkDiag *diag);      /* 0 with diag set */
    void (*release)(uint64_t p);
    int (*up)(uint64_t dst, const char *src, int64_t nbytes, LkDiag *diag);  /* may run on a helper thread */
    int (*down)(char *dst, uint64_t src, int64_t nbytes, LkDiag *diag);
    int (*call)(LkSpec *s, RtCtx *ctx, int64_t *slots, int64_t *ret);      /* the entry; its kernels' errors in */
    int (*sync)(LkDiag *diag);  /* NULL, or: wait until this thread's work is done (a piece's buffers are free) */
    int (*available)(int64_t *bytes); /* NULL, or the memory a call may use (when no limit is set); -1 unknown */
} LkRunner;
extern const LkRunner lk_host_runner;
extern bool lk_split_host; /* the test mode: lk_split_call on the host backends */
int lk_split_reload_env(void);
PyObject *lk_split_reload_env_py(PyObject *self, PyObject *unused);
PyObject *lk_split_stats(PyObject *self, PyObject *unused); /* {calls, pieces} split so far */
/* Runs the call in pieces when its data exceeds the limit (and raises DeviceMemoryError when it cannot be split);
 * else *handled is false and nothing was done. objs: the array arguments lk_unbox_arg recorded, nobjs of them. */
PyObject *lk_split_call(LkSpec *s, const LkRunner *run, PyObject **objs, int nobjs, int64_t *slots, int64_t *ret,
                        bool *handled);
PyObject *lk_split_plan_dict(const LkSpec *s); /* f.inspect_split */
extern const LkRunner lk_gpu_runner;

/* gpu_call.c: the call of code whose arrays are in device memory (slots and ret: room for the spec's slots) */
PyObject *lk_invoke_device(LkSpec *s, PyObject *args, int64_t *slots, int64_t *ret);

/* box.c: NumPy's type number of a dtype; whether a device array is C-contiguous */
int lk_npy_type(IrDtype dt);
struct LkDeviceView;
bool lk_device_view_is_c(const struct LkDeviceView *v);

/* compile.c */
LkSpec *lk_compile(LkDispatcher *d, PyObject *args, LkCodeIo *io);
PyObject *lk_lower(PyObject *self, PyObject *args);
/* cuda_source(dispatcher, args) -> the CUDA C of the gpu backend for that specialisation (f.inspect_cuda) */
PyObject *lk_cuda_source(PyObject *self, PyObject *args);
bool lk_work_model(LkDispatcher *d, PyObject *args, IrWorkModel *model, bool *ret_array, bool *writes);
/* auto.c */
LkAuto *lk_auto_new(void);
void lk_auto_free(LkAuto *a);
int lk_auto_traverse(LkAuto *a, visitproc visit, void *arg);
void lk_auto_clear(LkAuto *a);
const char *lk_auto_last(const LkAuto *a); /* the backend of the last call, or NULL */
PyObject *lk_auto_call(LkDispatcher *d, PyObject *args, const unsigned char *key, int len);
PyObject *lk_auto_estimate(PyObject *self, PyObject *args);
PyObject *lk_set_auto_costs(PyObject *self, PyObject *args);
void lk_free_spec(LkSpec *s);
int lk_ensure_untyped(LkDispatcher *d);
const IrFunc *lk_untyped_func(LkDispatcher *d); /* after lk_ensure_untyped: its untyped function */

/* code_cache.c: the on-disk code cache's side of lk_compile */
/* Whether this compilation goes through the cache (cache on, no code asked to be kept or loaded) */
bool lk_cache_wanted(const LkDispatcher *d, const BeBackend *be, const LkCodeIo *io);
/* The disk layer under NVRTC's memo (lorikeet._images) for a compilation of d: NULL when d has cache=False. */
const RtImageStore *lk_cache_images(const LkDispatcher *d);
extern const RtImageStore lk_image_store;
/* The cached code of this compilation (bopts->module names it; unplaced: the hex ir_hash_func_unplaced of its IR)
 * loaded, or NULL: then *ticket, when set, is the key to save the compiled code under (lk_cache_done). Code
 * compiled from the same source at other lines or in another file is loaded under the name it was saved with, and
 * *posmap (PyMem_Malloc'd, else NULL) rebases the positions its errors name. typed is compiled too on a hit
 * with LORIKEET_CACHE_VERIFY=1, to compare. On a hit, loaded_as is the name the code holds (its release's).
 * Never raises; keeps a pending exception. */
typedef struct LkPosMap LkPosMap;
BeCompiled *lk_cache_fetch(LkDispatcher *d, IrType **types, int nargs, IrFunc *typed, const BeBackend *be,
                           const BeOptions *bopts, const char *unplaced, PyObject **ticket, LkPosMap **posmap,
                           char loaded_as[LK_MODULE_CHARS]);
/* An error record of code loaded with a posmap: its file and line made this process's (the record is changed) */
void lk_cache_rebase(const LkPosMap *map, RtError *err);
/* Saves code (compiled with keep_object, loaded and found; NULL: it failed) under ticket and drops the ticket. */
void lk_cache_done(PyObject *ticket, const BeCompiled *code, const BeBackend *be);
PyObject *lk_build_id(PyObject *self, PyObject *unused);
PyObject *lk_sha256(PyObject *self, PyObject *arg);
PyObject *lk_library(PyObject *self, PyObject *unused); /* library.c: typespec's registry as a list */
PyObject *lk_key_extras(PyObject *self, PyObject *args);

/* cache_key.c: the key's text (the preimage lorikeet/_key.py describes), made in C for the hit path */
#define LK_KEY_FORMAT 2 /* the preimage's first line and meta's format; 2: no file and first line in the
                         * preimage (meta holds the frame and the unplaced hash) */
#define LK_GENERATION_CHARS 161 /* a store generation's name: at most 160 characters */
typedef struct LkCacheKey {
    PyObject *preimage;  /* bytes */
    PyObject *frame;     /* [(file, first line, last line) or None] of each function of the preimage */
    char digest[2 * IR_HASH_BYTES + 1];  /* SHA-256 of the preimage, in hex */
    char generation[LK_GENERATION_CHARS]; /* the store's subfolder for the toolchain's code */
} LkCacheKey;
/* The key of d's code for signature (a list of printed argument types); false with an exception set when it
 * cannot be made (a function whose source or values cannot be described, a backend that is not available). */
bool lk_cache_key(LkDispatcher *d, PyObject *signature, LkCacheKey *key);
void lk_cache_key_clear(LkCacheKey *key);
PyObject *lk_py_cache_toolchain(PyObject *self, PyObject *args);
PyObject *lk_py_cache_program(PyObject *self, PyObject *args);
PyObject *lk_py_cache_header(PyObject *self, PyObject *tc);
PyObject *lk_py_cache_generation(PyObject *self, PyObject *args);
PyObject *lk_py_cache_key(PyObject *self, PyObject *args);
int lk_cache_key_module_init(PyObject *m);

/* cache_hit.c: a hit found without the cache's Python modules */
typedef enum {
    LK_FAST_HIT, /* *obj: the saved code of compilation `module` (a new reference), checked as Store.load does */
    LK_FAST_OFF, /* the process has no cache (LORIKEET_CACHE=0, no folder): compile without it */
    LK_FAST_ASK  /* anything else, a miss included: the Python path (lorikeet._key.fetch) decides */
} LkFastHit;
LkFastHit lk_cache_fast_hit(LkDispatcher *d, PyObject *signature, const char *module, PyObject **obj);
/* Whether the disk cache holds an entry for d's code for signature, by its presence alone (a regular file of ours
 * at its key's path, not read: a prediction, for backend="auto"): 1, 0 (none, or no cache), -1 (cannot tell). */
int lk_cache_has_entry(LkDispatcher *d, PyObject *signature);
/* The signature as the key writes it: each argument's printed type, and for gpu code made for device arrays a
 * last item saying so; NULL with an exception. */
PyObject *lk_cache_signature(IrType **types, int nargs, bool device_args);
/* compile.c: lk_cache_has_entry for the code of d for these arguments; -1 when their types cannot be taken */
int lk_cache_probe(LkDispatcher *d, PyObject *args);

/* errors.c */
/* Raises the exception for diag (compile-time kinds become lorikeet.CompileError). Returns NULL. */
/* print.c: what the call's print() calls left in ctx written to sys.stdout (and freed); -1 with an exception.
 * raised_args (NULL: none wanted): the call raised an exception whose arguments it recorded last (a raise
 * statement's f-string): *raised_args gets them, a new tuple (NULL when they were lost). */
int lk_print_flush(RtCtx *ctx, const RtNames *names, PyObject **raised_args);
/* Whether the call's error is a raise statement whose arguments are its last printed record */
static inline bool lk_raised_recorded(const RtCtx *ctx, int status)
{
    return status != 0 && ctx->err.code == RT_ERR_RAISE && ctx->err.extra[1] == -2;
}
PyObject *lk_raise_diag(const LkDiag *d);
PyObject *lk_raise_diag_as(const LkDiag *d, const char *name); /* as lorikeet.errors.<name> */
void lk_diag_from_exception(LkDiag *d);

/* ---- device arrays (device_array.c, device_import.c, gpu_module.c) ---- */

/* A device array as the call path sees it: a lorikeet DeviceArray, or another library's through
 * __cuda_array_interface__ (versions 2 and 3) or DLPack (kDLCUDA). */
typedef struct LkDeviceView {
    uint64_t data;            /* the device address of element [0, ..., 0] */
    PyArray_Descr *dtype;     /* a new reference */
    int ndim;
    int64_t shape[IR_MAX_DIMS];
    int64_t strides[IR_MAX_DIMS]; /* bytes */
    int readonly;
    uint64_t stream;          /* work that may still write it is queued on this CUstream (0: none; a lorikeet
                               * array's only: foreign arrays' streams are waited for when they are read) */
    PyObject *owner;          /* a new reference: keeps the memory alive while it is used */
} LkDeviceView;

extern PyTypeObject *lk_DeviceArray_Type;
/* Whether obj is a lorikeet DeviceArray (a pointer comparison). */
int lk_is_device_array(PyObject *obj);
/* Fills v from obj: 1 for a device array (a DeviceArray, or a foreign one without copying it), 0 when obj is no
 * device array (no exception; NumPy arrays answer 0 at once), -1 with an exception (a malformed interface, an
 * array on another device, a masked array, the gpu unavailable). */
int lk_device_view(PyObject *obj, LkDeviceView *v);
void lk_device_view_release(LkDeviceView *v);
/* A DeviceArray that owns b (a device RtBuffer detached from its call; freed, stream-ordered, when the array
 * dies), of dtype type_num (NPY_*), whose element [0, ...] is at data; the work that fills it is queued on this
 * thread's stream. NULL with an exception (b is then freed). */
PyObject *lk_device_array_from_buffer(RtBuffer *b, uint64_t data, int type_num, int ndim, const int64_t *shape,
                                      const int64_t *strides);
/* A DeviceArray viewing memory that owner (any object) keeps alive: a view of an argument. */
PyObject *lk_device_array_view(PyObject *owner, uint64_t data, int type_num, int ndim, const int64_t *shape,
                               const int64_t *strides);
int lk_device_array_init(PyObject *m);                   /* device_array.c's part of lk_gpu_module_init */
void lk_device_array_fill_view(PyObject *obj, LkDeviceView *v); /* obj: a DeviceArray */
/* obj a DeviceArray: the stream whose queued work may still use it (0: none); that a call queued work using it
 * on stream (it and the DeviceArrays whose memory it views are marked, for later readers and frees). */
uint64_t lk_device_array_stream(PyObject *obj);
void lk_device_array_used_on(PyObject *obj, uint64_t stream);
/* Adds DeviceArray, to_device, gpu_available, gpu_stats and the private gpu entry points to the module. */
int lk_gpu_module_init(PyObject *m);

#endif
