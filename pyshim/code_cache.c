/* code_cache.c: the compile path's side of the on-disk code cache (issue 11), and what the key needs from C.
 *
 * The key (pyshim/lorikeet/_key.py) is taken in Python from the function's source, what its free names meant,
 * the argument types, the options and the toolchain; the store (lorikeet/_cache.py) files entries under it.
 * lk_compile asks lk_cache_fetch after typing and the IR passes (which give the compilation's name, its result
 * type and its printed IR, about 0.3 ms): a hit is the saved object loaded by the backend, with no LLVM
 * optimiser or code generator run; a miss compiles keeping the object, and lk_cache_done saves it only once the
 * code was loaded and its entry found. The saved code names its compilation (BeOptions.module, from the typed
 * IR's hash), and the backend refuses code of another: an entry whose key matched but whose IR would now differ
 * is a miss, never a stale call.
 *
 * Nothing here ever raises: a key or store that fails is a compile without the cache (LORIKEET_CACHE_LOG says
 * why). Every backend is cached: for gpu an entry holds the host code's object and the kernels' image together
 * (backends/gpu/gpu_backend.c), and a signature of device arrays is keyed apart from one of NumPy arrays (its code
 * is another compilation). Under NVRTC's memo, lk_image_store keeps the kernels' images on their own
 * (lorikeet/_images.py), so that a compilation whose entry misses still skips NVRTC when its kernels are known. */
#define _GNU_SOURCE
#include "shim.h"
#include <dlfcn.h>
#include <elf.h>
#include <link.h>

/* ---- the build's identity: the GNU build id the linker wrote into our shared object (a hash of its bytes) ---- */

static char build_id_hex[2 * 64 + 1];

static int find_build_id(struct dl_phdr_info *info, size_t size, void *self_base)
{
    if ((void *)info->dlpi_addr != self_base) return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE) continue;
        const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            const char *name = p + sizeof *nh, *desc = name + ((nh->n_namesz + 3) & ~3u);
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
                nh->n_descsz <= 64 && desc + nh->n_descsz <= end) {
                for (unsigned k = 0; k < nh->n_descsz; k++)
                    sprintf(build_id_hex + 2 * k, "%02x", (unsigned char)desc[k]);
                return 1;
            }
            p = desc + ((nh->n_descsz + 3) & ~3u);
        }
    }
    return 1;
}

/* build_id() -> the hex build id of _lorikeet's shared object ("" when the linker wrote none) */
PyObject *lk_build_id(PyObject *self, PyObject *unused)
{
    if (!build_id_hex[0]) {
        Dl_info info;
        if (dladdr((void *)lk_build_id, &info) && info.dli_fbase) {
            /* dlpi_addr is the load bias; for a shared object it equals the base dladdr reports */
            dl_iterate_phdr(find_build_id, info.dli_fbase);
        }
    }
    return PyUnicode_FromString(build_id_hex);
}

/* key_extras(backend, fastmath) -> the backend's own inputs of a compilation's key (backend.h), as text */
PyObject *lk_key_extras(PyObject *self, PyObject *args)
{
    const char *name;
    int fastmath = 0;
    if (!PyArg_ParseTuple(args, "s|p", &name, &fastmath)) return NULL;
    LkDiag diag = {0};
    const BeBackend *be = be_find(name, &diag);
    BeOptions opts = {.fastmath = fastmath != 0};
    char *text = be && be->available(&diag) ? be->key_extras(&opts, &diag) : NULL;
    if (!text) return lk_raise_diag(&diag);
    PyObject *r = PyUnicode_FromString(text);
    free(text);
    return r;
}

/* ---- the compile path ---- */

bool lk_cache_wanted(const LkDispatcher *d, const BeBackend *be, const LkCodeIo *io)
{
    (void)be;
    return d->cache && !io->load && !io->save && !io->keep_llvm;
}

/* ---- NVRTC's images (runtime/nvrtc.c's RtImageStore over lorikeet._images) ----
 * Called from inside a compile, with or without the GIL (the test entry point _nvrtc_compile releases it). */

static PyObject *images_module(void)
{
    static PyObject *mod;
    if (!mod) mod = PyImport_ImportModule("lorikeet._images");
    return mod;
}

static void *image_load(const char *key, size_t key_len, size_t *size, int *is_ptx)
{
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyObject *mod = images_module();
    PyObject *r = mod ? PyObject_CallMethod(mod, "load", "y#", key, (Py_ssize_t)key_len) : NULL;
    void *image = NULL;
    if (r && PyTuple_Check(r) && PyTuple_GET_SIZE(r) == 2 && PyBytes_Check(PyTuple_GET_ITEM(r, 0))) {
        PyObject *bytes = PyTuple_GET_ITEM(r, 0);
        size_t n = (size_t)PyBytes_GET_SIZE(bytes);
        if ((image = malloc(n ? n : 1)) != NULL) {
            memcpy(image, PyBytes_AS_STRING(bytes), n);
            *size = n;
            *is_ptx = PyObject_IsTrue(PyTuple_GET_ITEM(r, 1)) == 1;
        }
    }
    Py_XDECREF(r);
    PyErr_Clear();
    PyErr_Restore(et, ev, tb);
    PyGILState_Release(gil);
    return image;
}

static void image_save(const char *key, size_t key_len, const void *image, size_t size, int is_ptx)
{
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyObject *mod = images_module();
    PyObject *r = mod ? PyObject_CallMethod(mod, "save", "y#y#O", key, (Py_ssize_t)key_len, (const char *)image,
                                            (Py_ssize_t)size, is_ptx ? Py_True : Py_False) : NULL;
    Py_XDECREF(r);
    PyErr_Clear();
    PyErr_Restore(et, ev, tb);
    PyGILState_Release(gil);
}

const RtImageStore lk_image_store = {image_load, image_save};

const RtImageStore *lk_cache_images(const LkDispatcher *d)
{
    return d->cache ? &lk_image_store : NULL;
}

static PyObject *key_module(void)
{
    static PyObject *mod;
    if (!mod) mod = PyImport_ImportModule("lorikeet._key");
    return mod;
}

/* The signature as the key writes it: every argument's type, as ir_type_str prints it, and for gpu code made for
 * device arrays a last item saying so (their code is another compilation than the same types' in NumPy arrays). */
static PyObject *signature_text(IrType **types, int nargs, bool device_args)
{
    PyObject *list = PyList_New(nargs);
    for (int i = 0; list && i < nargs; i++) {
        char buf[512];
        ir_type_str(types[i], buf, sizeof buf);
        PyList_SET_ITEM(list, i, PyUnicode_FromString(buf));
    }
    if (list && device_args) {
        PyObject *mark = PyUnicode_FromString("(device arrays)");
        if (!mark || PyList_Append(list, mark) < 0) Py_CLEAR(list);
        Py_XDECREF(mark);
    }
    return list;
}

BeCompiled *lk_cache_fetch(LkDispatcher *d, IrType **types, int nargs, const BeBackend *be, const BeOptions *bopts,
                           PyObject **ticket)
{
    *ticket = NULL;
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyObject *mod = key_module();
    PyObject *sig = mod ? signature_text(types, nargs, bopts->device_args) : NULL;
    PyObject *r = sig ? PyObject_CallMethod(mod, "fetch", "OOs", (PyObject *)d, sig, bopts->module) : NULL;
    Py_XDECREF(sig);
    BeCompiled *code = NULL;
    if (r && PyTuple_Check(r) && PyTuple_GET_SIZE(r) == 2) {
        *ticket = PyTuple_GET_ITEM(r, 0);
        Py_INCREF(*ticket);
        PyObject *obj = PyTuple_GET_ITEM(r, 1);
        if (PyBytes_Check(obj)) {
            LkDiag diag = {0};
            code = be->load(PyBytes_AS_STRING(obj), (size_t)PyBytes_GET_SIZE(obj), bopts, &diag);
            PyObject *done = PyObject_CallMethod(mod, "loaded", "Os", *ticket, code ? "" : diag.message);
            Py_XDECREF(done);
            if (code) Py_CLEAR(*ticket); /* nothing to save */
        }
    }
    Py_XDECREF(r);
    PyErr_Clear(); /* the cache never raises: a failure is a compile without it */
    PyErr_Restore(et, ev, tb);
    if (code) d->cache_hits++;
    else if (*ticket) d->cache_misses++;
    return code;
}

void lk_cache_done(PyObject *ticket, const BeCompiled *code, const BeBackend *be)
{
    if (!ticket) return;
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyObject *saved = NULL;
    if (code && code->object) {
        LkDiag diag = {0};
        size_t size = 0;
        void *bytes = be->save(code, &size, &diag);
        if (bytes) saved = PyBytes_FromStringAndSize(bytes, (Py_ssize_t)size);
        free(bytes);
    }
    PyObject *mod = key_module();
    PyObject *r = mod ? PyObject_CallMethod(mod, "done", "OOd", ticket, saved ? saved : Py_None,
                                            code ? code->compile_ms : 0.0) : NULL;
    Py_XDECREF(r);
    Py_XDECREF(saved);
    Py_DECREF(ticket);
    PyErr_Clear();
    PyErr_Restore(et, ev, tb);
}
