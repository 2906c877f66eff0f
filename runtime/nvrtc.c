/* nvrtc.c: CUDA C to device code with NVRTC, loaded with dlopen on first use (never at import, never linked).
 *
 * NVRTC needs no GPU, so this file works (and is tested) on machines without one. It is found, in order, at
 * $LORIKEET_NVRTC (a library file, or a folder holding one), as libnvrtc.so.13 or .12 on the loader's path, in
 * $CUDA_PATH/lib64, in /usr/local/cuda/lib64, and in the pip wheels' folders (nvidia/cu13/lib,
 * nvidia/cuda_nvrtc/lib) under the folders the shim names with rt_nvrtc_add_search_dir (Python's sys.path:
 * this layer cannot ask Python itself).
 *
 * The target: a cubin for sm_<cc> when nvrtcGetSupportedArchs lists cc, else PTX for the newest listed
 * architecture the device can run (the driver compiles it). Options: C++17, and nothing that changes results
 * unless fastmath is asked for: no -ftz, no fast math, and no contraction of a*b+c into one fused multiply-add
 * (--fmad=false): it rounds once where NumPy and the cpu backends round twice, so np.linspace and friends
 * would differ in the last bit from theirs (measured on the H100: test_linspace failed with --fmad=true). No include path: generated code needs
 * no CUDA header.
 *
 * A memo in the process keeps the images made (up to MEMO_MAX of them), keyed by the source without its
 * comments (which name files and lines: two functions whose kernels are the same code differ only there), the
 * options and the architecture: a second compilation of the same kernels skips NVRTC, which costs about 100 ms
 * of CPU for even a one-line map (measured here with NVRTC 13.0: 20 ms to parse, 25 ms to optimise the
 * preamble and the kernel, 55 ms in ptxas, most of it on the kernels' 64-bit grid-stride loops). Only real
 * NVRTC runs count as compiles in rt_gpu_stats.
 *
 * Under the memo, the caller may pass a persistent layer (RtImageStore: the shim's on-disk cache) keyed by the
 * same text, so that a new process does not run NVRTC again for kernels an earlier one compiled. What it hands
 * back is checked here before anyone else sees it (the kind the target asks for, a cubin's ELF header, PTX's
 * terminating NUL); anything else is a miss and is compiled and saved again. Disk hits count as disk_images. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_internal.h"

typedef int NvrtcResult; /* nvrtcResult: NVRTC_SUCCESS is 0 */
typedef struct NvrtcProgram *NvrtcProgram;

static struct {
    const char *(*GetErrorString)(NvrtcResult);
    NvrtcResult (*Version)(int *, int *);
    NvrtcResult (*GetNumSupportedArchs)(int *);
    NvrtcResult (*GetSupportedArchs)(int *);
    NvrtcResult (*CreateProgram)(NvrtcProgram *, const char *, const char *, int, const char *const *,
                                 const char *const *);
    NvrtcResult (*DestroyProgram)(NvrtcProgram *);
    NvrtcResult (*CompileProgram)(NvrtcProgram, int, const char *const *);
    NvrtcResult (*GetPTXSize)(NvrtcProgram, size_t *);
    NvrtcResult (*GetPTX)(NvrtcProgram, char *);
    NvrtcResult (*GetCUBINSize)(NvrtcProgram, size_t *);
    NvrtcResult (*GetCUBIN)(NvrtcProgram, char *);
    NvrtcResult (*GetProgramLogSize)(NvrtcProgram, size_t *);
    NvrtcResult (*GetProgramLog)(NvrtcProgram, char *);
} nv;

static pthread_once_t nvrtc_once = PTHREAD_ONCE_INIT;
static char nvrtc_error[1200];
static char nvrtc_path[1024];
static int nvrtc_ver;          /* major * 1000 + minor * 10 */
static int archs[64], narchs;  /* what nvrtcGetSupportedArchs lists, ascending */

/* Folders named by the shim (sys.path), searched last; set before the first compile. */
#define MAX_SEARCH_DIRS 32
static char *search_dirs[MAX_SEARCH_DIRS];
static int nsearch_dirs;
static pthread_mutex_t search_lock = PTHREAD_MUTEX_INITIALIZER;

void rt_nvrtc_add_search_dir(const char *dir)
{
    pthread_mutex_lock(&search_lock);
    if (nsearch_dirs < MAX_SEARCH_DIRS) {
        char *copy = strdup(dir);
        if (copy) search_dirs[nsearch_dirs++] = copy;
    }
    pthread_mutex_unlock(&search_lock);
}

/* LORIKEET_NVRTC first, then the loader's path, CUDA_PATH and /usr/local/cuda (cuda_libs.c), then the NVIDIA
 * wheels' folders under the shim's search folders. */
static void *find_nvrtc(void)
{
    static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so.12", NULL};
    static const GpuLibrary nvrtc = {names, "libnvrtc.so", "LORIKEET_NVRTC", false};
    void *h = gpu_find_library(&nvrtc, nvrtc_path, sizeof nvrtc_path);
    if (h) return h;
    pthread_mutex_lock(&search_lock);
    for (int i = 0; i < nsearch_dirs && !h; i++) {
        static const char *wheels[] = {"nvidia/cu13/lib", "nvidia/cuda_nvrtc/lib"};
        for (int w = 0; w < 2 && !h; w++) {
            char dir[1024];
            snprintf(dir, sizeof dir, "%s/%s", search_dirs[i], wheels[w]);
            h = gpu_open_in_dir(&nvrtc, dir, nvrtc_path, sizeof nvrtc_path);
        }
    }
    pthread_mutex_unlock(&search_lock);
    return h;
}

static void load_nvrtc(void)
{
    void *h = find_nvrtc();
    if (!h) {
        snprintf(nvrtc_error, sizeof nvrtc_error,
                 "NVRTC (libnvrtc.so.13 or .12) was not found: install the CUDA toolkit or the nvidia-cuda-nvrtc "
                 "wheel, or set LORIKEET_NVRTC to the library's path");
        return;
    }
#define SYM(field, name)                                                                                        \
    if (!(*(void **)&nv.field = dlsym(h, name))) {                                                              \
        snprintf(nvrtc_error, sizeof nvrtc_error, "%s lacks %s: NVRTC 12 or newer is needed", nvrtc_path, name); \
        nv.Version = NULL;                                                                                      \
        return;                                                                                                 \
    }
    SYM(GetErrorString, "nvrtcGetErrorString") SYM(Version, "nvrtcVersion")
    SYM(GetNumSupportedArchs, "nvrtcGetNumSupportedArchs") SYM(GetSupportedArchs, "nvrtcGetSupportedArchs")
    SYM(CreateProgram, "nvrtcCreateProgram") SYM(DestroyProgram, "nvrtcDestroyProgram")
    SYM(CompileProgram, "nvrtcCompileProgram") SYM(GetPTXSize, "nvrtcGetPTXSize") SYM(GetPTX, "nvrtcGetPTX")
    SYM(GetCUBINSize, "nvrtcGetCUBINSize") SYM(GetCUBIN, "nvrtcGetCUBIN")
    SYM(GetProgramLogSize, "nvrtcGetProgramLogSize") SYM(GetProgramLog, "nvrtcGetProgramLog")
#undef SYM
    int major = 0, minor = 0, n = 0;
    if (nv.Version(&major, &minor) != 0 || nv.GetNumSupportedArchs(&n) != 0 || n <= 0 ||
        n > (int)(sizeof archs / sizeof archs[0]) || nv.GetSupportedArchs(archs) != 0) {
        snprintf(nvrtc_error, sizeof nvrtc_error, "%s does not answer nvrtcVersion/nvrtcGetSupportedArchs", nvrtc_path);
        nv.Version = NULL;
        return;
    }
    narchs = n;
    nvrtc_ver = major * 1000 + minor * 10;
}

const char *rt_nvrtc_unavailable(void)
{
    pthread_once(&nvrtc_once, load_nvrtc);
    return nv.Version ? NULL : nvrtc_error;
}

int rt_nvrtc_version(void)
{
    return rt_nvrtc_unavailable() ? 0 : nvrtc_ver;
}

int gpu_nvrtc_target(int cc, int *is_ptx)
{
    if (rt_nvrtc_unavailable()) return 0;
    int best = 0;
    for (int i = 0; i < narchs; i++) {
        if (archs[i] == cc) {
            *is_ptx = 0;
            return cc;
        }
        if (archs[i] < cc && archs[i] > best) best = archs[i];
    }
    *is_ptx = 1;
    return best;
}

static _Atomic int64_t n_compiles, n_disk_images;

/* ---- the memo ---- */
#define MEMO_MAX 256

typedef struct MemoEntry {
    uint64_t hash;
    char *key;       /* the source without comments, then the options and the target */
    void *image;
    size_t size;
    int is_ptx;
} MemoEntry;

static struct {
    pthread_mutex_t lock;
    MemoEntry e[MEMO_MAX];
    int n, next; /* entries used; the one replaced next when full (the oldest) */
} memo = {PTHREAD_MUTEX_INITIALIZER};

/* src without its comments (string and character literals kept as they are), then "\n" and tail. */
static char *memo_key(const char *src, const char *tail)
{
    size_t n = strlen(src), t = strlen(tail);
    char *k = malloc(n + t + 2), *o = k;
    if (!k) return NULL;
    for (const char *p = src; *p;) {
        if (*p == '"' || *p == '\'') {
            char q = *p;
            *o++ = *p++;
            while (*p && *p != q) {
                if (*p == '\\' && p[1]) *o++ = *p++;
                *o++ = *p++;
            }
            if (*p) *o++ = *p++;
        } else if (p[0] == '/' && p[1] == '*') {
            const char *end = strstr(p + 2, "*/");
            p = end ? end + 2 : p + strlen(p);
            *o++ = ' ';
        } else if (p[0] == '/' && p[1] == '/') {
            while (*p && *p != '\n') p++;
        } else {
            *o++ = *p++;
        }
    }
    *o++ = '\n';
    memcpy(o, tail, t + 1);
    return k;
}

static uint64_t memo_hash(const char *k)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a: entries are compared in full on a match */
    for (; *k; k++) h = (h ^ (unsigned char)*k) * 0x100000001b3ull;
    return h;
}

/* A copy of the image memoised for key (malloc'd), or NULL. */
static void *memo_find(const char *key, uint64_t h, size_t *size, int *is_ptx)
{
    void *copy = NULL;
    pthread_mutex_lock(&memo.lock);
    for (int i = 0; i < memo.n; i++) {
        MemoEntry *e = &memo.e[i];
        if (e->hash != h || strcmp(e->key, key) != 0) continue;
        if ((copy = malloc(e->size ? e->size : 1)) != NULL) {
            memcpy(copy, e->image, e->size);
            *size = e->size;
            *is_ptx = e->is_ptx;
        }
        break;
    }
    pthread_mutex_unlock(&memo.lock);
    return copy;
}

/* Keeps a copy of image under key (which it takes); nothing when out of memory. */
static void memo_add(char *key, uint64_t h, const void *image, size_t size, int is_ptx)
{
    void *copy = malloc(size ? size : 1);
    if (!copy) {
        free(key);
        return;
    }
    memcpy(copy, image, size);
    pthread_mutex_lock(&memo.lock);
    MemoEntry *e;
    if (memo.n < MEMO_MAX) {
        e = &memo.e[memo.n++];
    } else {
        e = &memo.e[memo.next];
        memo.next = (memo.next + 1) % MEMO_MAX;
        free(e->key);
        free(e->image);
    }
    *e = (MemoEntry){h, key, copy, size, is_ptx};
    pthread_mutex_unlock(&memo.lock);
}

int64_t gpu_nvrtc_compiles(void)
{
    return atomic_load(&n_compiles);
}

int64_t gpu_nvrtc_disk_images(void)
{
    return atomic_load(&n_disk_images);
}

/* Whether image (size bytes, as the disk layer gave it) is the kind of image the key's target asks for: a cubin
 * starts with ELF's magic, PTX is text ending in the NUL cuModuleLoadData reads up to. The store verified its
 * checksum; this catches an entry of another kind filed under the key (a bug of a writer, not damage). */
static bool image_plausible(const unsigned char *image, size_t size, int is_ptx, int want_ptx)
{
    if (is_ptx != want_ptx || size < 4) return false;
    if (!is_ptx) return memcmp(image, "\x7f" "ELF", 4) == 0;
    return image[size - 1] == 0 && memchr(image, 0, size) == image + size - 1;
}

/* The image the disk layer has for key (malloc'd, checked), or NULL. */
static void *disk_find(const RtImageStore *disk, const char *key, int want_ptx, size_t *size, int *is_ptx)
{
    size_t n = 0;
    int ptx = 0;
    void *image = disk->load(key, strlen(key), &n, &ptx);
    if (image && !image_plausible(image, n, ptx, want_ptx)) {
        free(image);
        image = NULL;
    }
    if (image) {
        *size = n;
        *is_ptx = ptx;
        atomic_fetch_add(&n_disk_images, 1);
    }
    return image;
}

static char *program_log(NvrtcProgram prog)
{
    size_t n = 0;
    if (nv.GetProgramLogSize(prog, &n) != 0 || n == 0) return strdup("");
    char *text = malloc(n + 1);
    if (!text) return NULL;
    if (nv.GetProgramLog(prog, text) != 0) text[0] = 0;
    text[n] = 0;
    return text;
}

/* A compile's options, target and memo key, made once and used by the compile and its job. */
typedef struct Prepared {
    char arch_opt[48];
    const char *opts[4];
    int nopts, ptx;
    char *key; /* malloc'd, or NULL (out of memory: no memo) */
    uint64_t h;
} Prepared;

/* Fills p; returns the image the memo or disk has for src (malloc'd), else NULL: then p->key is the compile's.
 * *failed (with diag set) when NVRTC is unavailable or cannot target cc. */
static void *prepare(const char *src, int cc, int fastmath, const RtImageStore *disk, Prepared *p, size_t *size,
                     int *is_ptx, bool *failed, LkDiag *diag)
{
    *failed = false;
    const char *why = rt_nvrtc_unavailable();
    if (why) {
        lk_diag_set(diag, LK_ERR_UNAVAILABLE, "", 0, 0, "%s", why);
        *failed = true;
        return NULL;
    }
    int arch = gpu_nvrtc_target(cc, &p->ptx);
    if (!arch) {
        lk_diag_set(diag, LK_ERR_UNAVAILABLE, "", 0, 0,
                    "NVRTC %d.%d cannot compile for compute capability %d.%d (the oldest it knows is %d.%d)",
                    nvrtc_ver / 1000, nvrtc_ver % 1000 / 10, cc / 10, cc % 10, archs[0] / 10, archs[0] % 10);
        *failed = true;
        return NULL;
    }
    snprintf(p->arch_opt, sizeof p->arch_opt, "--gpu-architecture=%s_%d", p->ptx ? "compute" : "sm", arch);
    p->opts[0] = p->arch_opt;
    p->opts[1] = "--std=c++17";
    p->opts[2] = fastmath ? "--fmad=true" : "--fmad=false";
    p->opts[3] = "--use_fast_math";
    p->nopts = fastmath ? 4 : 3;
    char tail[160];
    snprintf(tail, sizeof tail, "nvrtc %d: %s %s %s %s", nvrtc_ver, p->opts[0], p->opts[1], p->opts[2],
             fastmath ? p->opts[3] : "");
    p->key = memo_key(src, tail);
    p->h = p->key ? memo_hash(p->key) : 0;
    void *hit = p->key ? memo_find(p->key, p->h, size, is_ptx) : NULL;
    if (!hit && p->key && disk && (hit = disk_find(disk, p->key, p->ptx, size, is_ptx)) != NULL) {
        memo_add(p->key, p->h, hit, *size, *is_ptx); /* takes key */
        p->key = NULL;
    }
    if (hit) {
        free(p->key);
        p->key = NULL;
    }
    return hit;
}

/* NVRTC itself: the image of src (malloc'd) or NULL with diag set; memoised under p->key (taken either way). */
static void *run_nvrtc(const char *src, const char *name, Prepared *p, size_t *size, int *is_ptx, char **log,
                       LkDiag *diag)
{
    NvrtcProgram prog = NULL;
    NvrtcResult r = nv.CreateProgram(&prog, src, name, 0, NULL, NULL);
    if (r != 0) {
        lk_diag_set(diag, LK_ERR_INTERNAL, "", 0, 0, "nvrtcCreateProgram failed for %s: %s", name, nv.GetErrorString(r));
        free(p->key);
        p->key = NULL;
        return NULL;
    }
    atomic_fetch_add(&n_compiles, 1);
    r = nv.CompileProgram(prog, p->nopts, p->opts);
    void *image = NULL;
    if (r != 0) {
        char *text = program_log(prog);
        lk_diag_set(diag, LK_ERR_INTERNAL, "", 0, 0, "NVRTC could not compile %s (%s, %s): %s", name, p->arch_opt,
                    nv.GetErrorString(r), text ? text : "(no log)");
        if (log) *log = text;
        else free(text);
        nv.DestroyProgram(&prog);
        free(p->key);
        p->key = NULL;
        return NULL;
    }
    size_t n = 0;
    r = p->ptx ? nv.GetPTXSize(prog, &n) : nv.GetCUBINSize(prog, &n);
    if (r == 0 && (image = malloc(n ? n : 1)) != NULL) r = p->ptx ? nv.GetPTX(prog, image) : nv.GetCUBIN(prog, image);
    if (r != 0 || !image) {
        lk_diag_set(diag, LK_ERR_INTERNAL, "", 0, 0, "NVRTC compiled %s but its %s could not be read: %s", name,
                    p->ptx ? "PTX" : "cubin", r ? nv.GetErrorString(r) : "out of memory");
        free(image);
        image = NULL;
        free(p->key);
    } else {
        *size = n;
        *is_ptx = p->ptx;
        if (log) *log = program_log(prog);
        if (p->key) memo_add(p->key, p->h, image, n, p->ptx);
    }
    p->key = NULL;
    nv.DestroyProgram(&prog);
    return image;
}

void *rt_nvrtc_compile(const char *src, const char *name, int cc, int fastmath, size_t *size, int *is_ptx,
                       char **log, const RtImageStore *disk, LkDiag *diag)
{
    if (log) *log = NULL;
    Prepared p = {0};
    bool failed;
    void *hit = prepare(src, cc, fastmath, disk, &p, size, is_ptx, &failed, diag);
    if (failed) return NULL;
    if (hit) {
        if (log) *log = strdup("");
        return hit;
    }
    char *disk_key = disk && p.key ? strdup(p.key) : NULL;
    void *image = run_nvrtc(src, name, &p, size, is_ptx, log, diag);
    if (image && disk_key) disk->save(disk_key, strlen(disk_key), image, *size, *is_ptx);
    free(disk_key);
    return image;
}

/* ---- a compile on a thread of its own, beside the caller's other work ---- */

struct RtNvrtcJob {
    pthread_t thread;
    bool started;
    char *src, *name, *disk_key;
    const RtImageStore *disk;
    Prepared p;
    void *image;
    size_t size;
    int is_ptx;
    LkDiag diag;
};

static void *job_main(void *arg)
{
    RtNvrtcJob *j = arg;
    j->image = run_nvrtc(j->src, j->name, &j->p, &j->size, &j->is_ptx, NULL, &j->diag);
    return NULL;
}

RtNvrtcJob *rt_nvrtc_start(const char *src, const char *name, int cc, int fastmath, const RtImageStore *disk,
                           LkDiag *diag)
{
    RtNvrtcJob *j = calloc(1, sizeof *j);
    if (!j) {
        lk_diag_set(diag, LK_ERR_MEMORY, "", 0, 0, "out of host memory compiling CUDA C");
        return NULL;
    }
    bool failed;
    j->image = prepare(src, cc, fastmath, disk, &j->p, &j->size, &j->is_ptx, &failed, diag);
    if (failed) {
        free(j);
        return NULL;
    }
    if (j->image) return j; /* the memo or the disk had it: ready */
    j->src = strdup(src);
    j->name = strdup(name);
    j->disk = disk;
    j->disk_key = disk && j->p.key ? strdup(j->p.key) : NULL;
    if (!j->src || !j->name) {
        lk_diag_set(diag, LK_ERR_MEMORY, "", 0, 0, "out of host memory compiling CUDA C");
        rt_nvrtc_finish(j, NULL, NULL, NULL);
        return NULL;
    }
    /* NVRTC is thread-safe for programs of their own; where no thread can be made, the compile runs at finish */
    j->started = pthread_create(&j->thread, NULL, job_main, j) == 0;
    return j;
}

void *rt_nvrtc_finish(RtNvrtcJob *j, size_t *size, int *is_ptx, LkDiag *diag)
{
    if (!j) return NULL;
    if (j->started) pthread_join(j->thread, NULL);
    else if (!j->image && j->src && j->name && diag) job_main(j);
    void *image = NULL;
    if (diag) {
        if (j->image) {
            image = j->image;
            *size = j->size;
            *is_ptx = j->is_ptx;
            /* the disk layer is written here, in the caller's thread (the shim's takes Python's lock) */
            if (j->disk_key) j->disk->save(j->disk_key, strlen(j->disk_key), image, j->size, j->is_ptx);
        } else {
            *diag = j->diag;
        }
    } else {
        free(j->image);
    }
    free(j->p.key);
    free(j->src);
    free(j->name);
    free(j->disk_key);
    free(j);
    return image;
}
