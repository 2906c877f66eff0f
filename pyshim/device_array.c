/* device_array.c: lk.DeviceArray, device memory seen from Python, and lk.to_device.
 *
 * A DeviceArray is a strided view (shape, byte strides, a NumPy dtype) of device memory that it owns (an
 * allocation of rt_gpu_malloc, or a device RtBuffer a call returned) or that another object keeps alive (a
 * view of an argument). Owned memory is freed, stream-ordered, when the array dies: device memory outlives the
 * call that made it, as a returned NumPy array does. `stream` records the stream whose queued work may still
 * use the array (a call's kernels are not waited for unless they may raise: gpu_call.c): whoever reads it on
 * another stream, or hands it to another library, waits for that stream first, and a free on another thread's
 * stream is ordered after it.
 *
 * Exports: __cuda_array_interface__ (version 3), __dlpack__ / __dlpack_device__ (the legacy and the versioned
 * capsule), __array__ and copy_to_host() (one device-to-host copy each). Nothing here initialises CUDA until a
 * DeviceArray is made. */
#include "shim.h"
#include "dlpack.h"

typedef struct LkDeviceArray {
    PyObject_HEAD
    uint64_t data;
    PyArray_Descr *dtype;
    int ndim;
    int64_t shape[IR_MAX_DIMS];
    int64_t strides[IR_MAX_DIMS];
    uint64_t alloc;   /* owned memory from rt_gpu_malloc, or 0 */
    RtBuffer *buffer; /* an owned device buffer of a call, or NULL */
    PyObject *owner;  /* what keeps viewed memory alive, or NULL */
    uint64_t stream;  /* queued work that may still use it is on this stream (the last call's); 0: none */
    int readonly;
} LkDeviceArray;

PyTypeObject *lk_DeviceArray_Type;

int lk_is_device_array(PyObject *obj)
{
    return Py_TYPE(obj) == lk_DeviceArray_Type;
}

/* A failed gpu call as its exception: MemoryError for memory; otherwise BackendUnavailable, whose message says
 * what failed (no driver, no device, a driver call's error). */
static PyObject *raise_gpu(const LkDiag *diag)
{
    LkDiag d = *diag;
    if (d.kind != LK_ERR_MEMORY) d.kind = LK_ERR_UNAVAILABLE;
    return lk_raise_diag(&d);
}

static int64_t size_of(const LkDeviceArray *a)
{
    int64_t n = 1;
    for (int i = 0; i < a->ndim; i++) n *= a->shape[i];
    return n;
}

static int is_c_contiguous(const LkDeviceArray *a)
{
    int64_t expect = (int64_t)PyDataType_ELSIZE(a->dtype);
    for (int i = a->ndim - 1; i >= 0; i--) {
        if (a->shape[i] != 1 && a->strides[i] != expect) return size_of(a) == 0;
        expect *= a->shape[i];
    }
    return 1;
}

static LkDeviceArray *new_array(uint64_t data, PyArray_Descr *dtype, int ndim, const int64_t *shape,
                                const int64_t *strides)
{
    if (ndim < 0 || ndim > IR_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "a DeviceArray has at most %d dimensions", IR_MAX_DIMS);
        return NULL;
    }
    LkDeviceArray *a = PyObject_New(LkDeviceArray, lk_DeviceArray_Type);
    if (!a) return NULL;
    a->data = data;
    Py_INCREF(dtype);
    a->dtype = dtype;
    a->ndim = ndim;
    int64_t step = (int64_t)PyDataType_ELSIZE(dtype);
    for (int i = ndim - 1; i >= 0; i--) {
        a->shape[i] = shape[i];
        a->strides[i] = strides ? strides[i] : step;
        step *= shape[i];
    }
    a->alloc = 0;
    a->buffer = NULL;
    a->owner = NULL;
    a->stream = 0;
    a->readonly = 0;
    return a;
}

PyObject *lk_device_array_from_buffer(RtBuffer *b, uint64_t data, int type_num, int ndim, const int64_t *shape,
                                      const int64_t *strides)
{
    PyArray_Descr *dtype = PyArray_DescrFromType(type_num);
    LkDeviceArray *a = dtype ? new_array(data, dtype, ndim, shape, strides) : NULL;
    Py_XDECREF(dtype);
    if (!a) {
        rt_buffer_free(b);
        return NULL;
    }
    a->buffer = b;
    a->stream = rt_gpu_stream_if_made();
    return (PyObject *)a;
}

PyObject *lk_device_array_view(PyObject *owner, uint64_t data, int type_num, int ndim, const int64_t *shape,
                               const int64_t *strides)
{
    PyArray_Descr *dtype = PyArray_DescrFromType(type_num);
    LkDeviceArray *a = dtype ? new_array(data, dtype, ndim, shape, strides) : NULL;
    Py_XDECREF(dtype);
    if (!a) return NULL;
    Py_INCREF(owner);
    a->owner = owner;
    a->stream = rt_gpu_stream_if_made();
    if (lk_is_device_array(owner)) a->readonly = ((LkDeviceArray *)owner)->readonly;
    return (PyObject *)a;
}

/* Waits for the stream whose work may still write a. */
static int wait_stream(LkDeviceArray *a)
{
    LkDiag diag = {0};
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = rt_gpu_stream_sync(a->stream, &diag);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        raise_gpu(&diag);
        return -1;
    }
    a->stream = 0;
    return 0;
}

/* The same before work on this thread's stream, which is ordered after its own earlier work anyway. */
static int wait_for_writer(LkDeviceArray *a)
{
    return !a->stream || a->stream == rt_gpu_stream_if_made() ? 0 : wait_stream(a);
}

uint64_t lk_device_array_stream(PyObject *obj)
{
    return ((LkDeviceArray *)obj)->stream;
}

void lk_device_array_used_on(PyObject *obj, uint64_t stream)
{
    /* the memory is the owner's: it is freed when the last of the chain dies, so each must know */
    for (PyObject *o = obj; o && lk_is_device_array(o); o = ((LkDeviceArray *)o)->owner)
        ((LkDeviceArray *)o)->stream = stream;
}

static void device_array_dealloc(LkDeviceArray *a)
{
    if (a->alloc || a->buffer) {
        /* the free is ordered on this thread's stream: another stream's queued work on it must come first (an
         * event orders the two streams; nothing waits on the host) */
        if (a->stream && a->stream != rt_gpu_stream_if_made()) {
            LkDiag ignored = {0};
            if (rt_gpu_stream_wait(a->stream, &ignored) < 0) rt_gpu_stream_sync(a->stream, &ignored);
        }
        if (a->buffer) rt_buffer_free(a->buffer);
        if (a->alloc) rt_gpu_free(a->alloc);
    }
    Py_XDECREF(a->owner);
    Py_XDECREF(a->dtype);
    PyTypeObject *tp = Py_TYPE(a);
    PyObject_Free(a);
    Py_DECREF(tp);
}

/* ---- to_device ---- */

static int supported_dtype(PyArray_Descr *d)
{
    return d->kind == 'b' || d->kind == 'i' || d->kind == 'u' || d->kind == 'f' || d->kind == 'c';
}

static PyObject *to_device(PyObject *self, PyObject *x)
{
    if (lk_is_device_array(x)) return Py_NewRef(x);
    PyArrayObject *arr = (PyArrayObject *)PyArray_FromAny(x, NULL, 0, 0, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED,
                                                          NULL);
    if (!arr) return NULL;
    if (!supported_dtype(PyArray_DESCR(arr))) {
        PyErr_Format(PyExc_TypeError, "lk.to_device: arrays of %R cannot go to the device (numbers and bools only)",
                     (PyObject *)PyArray_DESCR(arr));
        Py_DECREF(arr);
        return NULL;
    }
    if (!PyArray_ISNOTSWAPPED(arr)) { /* the device works in its own (little-endian) byte order */
        PyArray_Descr *native = PyArray_DescrNewByteorder(PyArray_DESCR(arr), NPY_NATIVE);
        PyArrayObject *swapped = native ? (PyArrayObject *)PyArray_FromAny((PyObject *)arr, native, 0, 0,
                                                                          NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED |
                                                                              NPY_ARRAY_FORCECAST, NULL)
                                        : NULL;
        Py_DECREF(arr);
        if (!swapped) return NULL;
        arr = swapped;
    }
    int64_t nbytes = (int64_t)PyArray_NBYTES(arr);
    LkDiag diag = {0};
    uint64_t d = rt_gpu_malloc(nbytes, &diag);
    if (!d && diag.kind == LK_ERR_MEMORY) { /* arrays waiting for the collector may hold what is missing */
        PyGC_Collect();
        d = rt_gpu_malloc(nbytes, &diag);
    }
    if (!d) {
        Py_DECREF(arr);
        return raise_gpu(&diag);
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = rt_gpu_copy_to_device(d, PyArray_DATA(arr), nbytes, &diag);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        rt_gpu_free(d);
        Py_DECREF(arr);
        return raise_gpu(&diag);
    }
    int64_t shape[IR_MAX_DIMS];
    int ndim = PyArray_NDIM(arr);
    if (ndim > IR_MAX_DIMS) {
        rt_gpu_free(d);
        Py_DECREF(arr);
        PyErr_Format(PyExc_ValueError, "a DeviceArray has at most %d dimensions", IR_MAX_DIMS);
        return NULL;
    }
    for (int i = 0; i < ndim; i++) shape[i] = PyArray_DIM(arr, i);
    LkDeviceArray *a = new_array(d, PyArray_DESCR(arr), ndim, shape, NULL);
    Py_DECREF(arr);
    if (!a) {
        rt_gpu_free(d);
        return NULL;
    }
    a->alloc = d;
    return (PyObject *)a;
}

/* ---- back to the host ---- */

/* The lowest and one past the highest byte a's elements occupy, relative to a->data. */
static void extent(const LkDeviceArray *a, int64_t *lo, int64_t *hi)
{
    *lo = 0;
    *hi = (int64_t)PyDataType_ELSIZE(a->dtype);
    for (int i = 0; i < a->ndim; i++) {
        int64_t reach = a->strides[i] * (a->shape[i] - 1);
        if (reach < 0) *lo += reach;
        else *hi += reach;
    }
}

static PyObject *copy_to_host(LkDeviceArray *a, PyObject *unused)
{
    npy_intp shape[IR_MAX_DIMS], strides[IR_MAX_DIMS];
    for (int i = 0; i < a->ndim; i++) {
        shape[i] = (npy_intp)a->shape[i];
        strides[i] = (npy_intp)a->strides[i];
    }
    if (wait_for_writer(a) < 0) return NULL;
    Py_INCREF(a->dtype);
    if (size_of(a) == 0 || is_c_contiguous(a)) {
        PyArrayObject *out = (PyArrayObject *)PyArray_NewFromDescr(&PyArray_Type, a->dtype, a->ndim, shape, NULL,
                                                                   NULL, 0, NULL);
        if (!out) return NULL;
        LkDiag diag = {0};
        int rc;
        Py_BEGIN_ALLOW_THREADS
        rc = rt_gpu_copy_to_host(PyArray_DATA(out), a->data, (int64_t)PyArray_NBYTES(out), &diag);
        Py_END_ALLOW_THREADS
        if (rc < 0) {
            Py_DECREF(out);
            return raise_gpu(&diag);
        }
        return (PyObject *)out;
    }
    /* strided: the bytes the elements span come over in one copy, then NumPy gathers them */
    int64_t lo, hi;
    extent(a, &lo, &hi);
    npy_intp span = (npy_intp)(hi - lo);
    PyArrayObject *raw = (PyArrayObject *)PyArray_SimpleNew(1, &span, NPY_UINT8);
    if (!raw) {
        Py_DECREF(a->dtype);
        return NULL;
    }
    LkDiag diag = {0};
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = rt_gpu_copy_to_host(PyArray_DATA(raw), a->data + (uint64_t)lo, (int64_t)span, &diag);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        Py_DECREF(a->dtype);
        Py_DECREF(raw);
        return raise_gpu(&diag);
    }
    PyObject *view = PyArray_NewFromDescr(&PyArray_Type, a->dtype, a->ndim, shape, strides,
                                          (char *)PyArray_DATA(raw) - lo, 0, NULL);
    if (!view) {
        Py_DECREF(raw);
        return NULL;
    }
    if (PyArray_SetBaseObject((PyArrayObject *)view, (PyObject *)raw) < 0) {
        Py_DECREF(view);
        return NULL;
    }
    PyObject *out = PyArray_NewCopy((PyArrayObject *)view, NPY_CORDER);
    Py_DECREF(view);
    return out;
}

static PyObject *device_array_array(LkDeviceArray *a, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"dtype", "copy", NULL};
    PyObject *dtype = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO", kwlist, &dtype, &copy)) return NULL;
    if (copy == Py_False) {
        PyErr_SetString(PyExc_ValueError, "a DeviceArray's data is on the device: NumPy can only have a copy of it");
        return NULL;
    }
    PyObject *host = copy_to_host(a, NULL);
    if (!host || dtype == Py_None) return host;
    PyObject *cast = PyObject_CallMethod(host, "astype", "O", dtype);
    Py_DECREF(host);
    return cast;
}

/* ---- attributes ---- */

static PyObject *int_tuple(const int64_t *v, int n)
{
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t && i < n; i++) {
        PyObject *x = PyLong_FromLongLong((long long)v[i]);
        if (!x) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, x);
    }
    return t;
}

static PyObject *get_shape(LkDeviceArray *a, void *c) { return int_tuple(a->shape, a->ndim); }
static PyObject *get_strides(LkDeviceArray *a, void *c) { return int_tuple(a->strides, a->ndim); }
static PyObject *get_dtype(LkDeviceArray *a, void *c) { return Py_NewRef((PyObject *)a->dtype); }
static PyObject *get_ndim(LkDeviceArray *a, void *c) { return PyLong_FromLong(a->ndim); }
static PyObject *get_size(LkDeviceArray *a, void *c) { return PyLong_FromLongLong((long long)size_of(a)); }
static PyObject *get_nbytes(LkDeviceArray *a, void *c)
{
    return PyLong_FromLongLong((long long)(size_of(a) * (int64_t)PyDataType_ELSIZE(a->dtype)));
}
static PyObject *get_ptr(LkDeviceArray *a, void *c) { return PyLong_FromUnsignedLongLong(a->data); }

/* Version 3 (numba.readthedocs.io, "CUDA Array Interface"): strides None for C-contiguous data; stream the
 * stream whose queued work may still write the array (the consumer waits for it), absent when none may. */
static PyObject *get_cai(LkDeviceArray *a, void *c)
{
    PyObject *shape = int_tuple(a->shape, a->ndim);
    PyObject *strides = is_c_contiguous(a) ? Py_NewRef(Py_None) : int_tuple(a->strides, a->ndim);
    PyObject *typestr = PyObject_GetAttrString((PyObject *)a->dtype, "str");
    uint64_t ptr = size_of(a) ? a->data : 0;
    PyObject *stream = a->stream ? PyLong_FromUnsignedLongLong(a->stream) : Py_NewRef(Py_None);
    PyObject *d = shape && strides && typestr && stream
                      ? Py_BuildValue("{sOsOs(KO)sisOsO}", "shape", shape, "typestr", typestr, "data",
                                      (unsigned long long)ptr, a->readonly ? Py_True : Py_False, "version", 3,
                                      "strides", strides, "stream", stream)
                      : NULL;
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    Py_XDECREF(typestr);
    Py_XDECREF(stream);
    return d;
}

/* ---- DLPack export ---- */

typedef struct {
    union {
        LkDLManagedTensor legacy;
        LkDLManagedTensorVersioned versioned;
    } t;
    PyObject *array;
    int64_t shape[IR_MAX_DIMS], strides[IR_MAX_DIMS];
} DlExport;

static void dl_release(DlExport *e)
{
    PyGILState_STATE g = PyGILState_Ensure();
    Py_XDECREF(e->array);
    PyMem_RawFree(e);
    PyGILState_Release(g);
}

static void dl_delete_legacy(LkDLManagedTensor *m) { dl_release((DlExport *)m->manager_ctx); }
static void dl_delete_versioned(LkDLManagedTensorVersioned *m) { dl_release((DlExport *)m->manager_ctx); }

static void dl_capsule_destructor(PyObject *cap)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (PyCapsule_IsValid(cap, "dltensor")) {
        LkDLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
        m->deleter(m);
    } else if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
        LkDLManagedTensorVersioned *m = PyCapsule_GetPointer(cap, "dltensor_versioned");
        m->deleter(m);
    }
    PyErr_Restore(type, value, tb);
}

static int dl_dtype(PyArray_Descr *d, LkDLDataType *out)
{
    out->lanes = 1;
    out->bits = (uint8_t)(PyDataType_ELSIZE(d) * 8);
    switch (d->kind) {
    case 'b': out->code = LK_DL_BOOL; return 0;
    case 'i': out->code = LK_DL_INT; return 0;
    case 'u': out->code = LK_DL_UINT; return 0;
    case 'f': out->code = LK_DL_FLOAT; return 0;
    case 'c': out->code = LK_DL_COMPLEX; return 0;
    default: PyErr_Format(PyExc_BufferError, "DLPack has no type for %R", (PyObject *)d); return -1;
    }
}

/* __dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None), as the array API standard has it:
 * the consumer's stream (None: the legacy default stream; -1: no ordering) sees the array's pending writes
 * done, which this ensures by waiting for them. */
static PyObject *device_array_dlpack(LkDeviceArray *a, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
    PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO", kwlist, &stream, &max_version, &dl_device, &copy))
        return NULL;
    if (copy == Py_True) {
        PyErr_SetString(PyExc_BufferError, "lorikeet's __dlpack__ exports without copying (copy=True is not supported)");
        return NULL;
    }
    if (dl_device != Py_None) {
        int type = -1, id = -1;
        if (!PyArg_ParseTuple(dl_device, "ii", &type, &id)) return NULL;
        if (type != LK_DL_CUDA || id != 0) {
            PyErr_Format(PyExc_BufferError, "a DeviceArray is on CUDA device 0, not on DLPack device (%d, %d)", type, id);
            return NULL;
        }
    }
    long long consumer = stream == Py_None ? 1 : PyLong_AsLongLong(stream);
    if (consumer == -1 && PyErr_Occurred()) return NULL;
    if (consumer != -1 && a->stream && (uint64_t)consumer != a->stream && wait_stream(a) < 0) return NULL;
    int versioned = 0;
    if (max_version != Py_None) {
        int major = 0, minor = 0;
        if (!PyArg_ParseTuple(max_version, "ii", &major, &minor)) return NULL;
        versioned = major >= 1;
    }
    LkDLTensor t = {0};
    if (dl_dtype(a->dtype, &t.dtype) < 0) return NULL;
    DlExport *e = PyMem_RawCalloc(1, sizeof *e);
    if (!e) return PyErr_NoMemory();
    int64_t elsize = (int64_t)PyDataType_ELSIZE(a->dtype);
    for (int i = 0; i < a->ndim; i++) {
        e->shape[i] = a->shape[i];
        e->strides[i] = elsize ? a->strides[i] / elsize : 0;
    }
    t.data = (void *)(uintptr_t)a->data;
    t.device = (LkDLDevice){LK_DL_CUDA, 0};
    t.ndim = a->ndim;
    t.shape = e->shape;
    t.strides = e->strides;
    t.byte_offset = 0;
    Py_INCREF(a);
    e->array = (PyObject *)a;
    PyObject *cap;
    if (versioned) {
        e->t.versioned = (LkDLManagedTensorVersioned){{1, 0}, e, dl_delete_versioned,
                                                      a->readonly ? LK_DL_FLAG_READ_ONLY : 0, t};
        cap = PyCapsule_New(&e->t.versioned, "dltensor_versioned", dl_capsule_destructor);
    } else {
        e->t.legacy = (LkDLManagedTensor){t, e, dl_delete_legacy};
        cap = PyCapsule_New(&e->t.legacy, "dltensor", dl_capsule_destructor);
    }
    if (!cap) {
        Py_DECREF(a);
        PyMem_RawFree(e);
    }
    return cap;
}

static PyObject *device_array_dlpack_device(LkDeviceArray *a, PyObject *unused)
{
    return Py_BuildValue("(ii)", LK_DL_CUDA, 0);
}

/* ---- the type ---- */

static PyObject *device_array_repr(LkDeviceArray *a)
{
    PyObject *shape = int_tuple(a->shape, a->ndim);
    if (!shape) return NULL;
    PyObject *r = PyUnicode_FromFormat("lorikeet.DeviceArray(shape=%R, dtype=%R)", shape, (PyObject *)a->dtype);
    Py_DECREF(shape);
    return r;
}

static Py_ssize_t device_array_len(LkDeviceArray *a)
{
    if (a->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of unsized object");
        return -1;
    }
    return (Py_ssize_t)a->shape[0];
}

static PyGetSetDef device_array_getset[] = {
    {"shape", (getter)get_shape, NULL, "the shape, a tuple", NULL},
    {"strides", (getter)get_strides, NULL, "the strides in bytes, a tuple", NULL},
    {"dtype", (getter)get_dtype, NULL, "the NumPy dtype of the elements", NULL},
    {"ndim", (getter)get_ndim, NULL, "the number of dimensions", NULL},
    {"size", (getter)get_size, NULL, "the number of elements", NULL},
    {"nbytes", (getter)get_nbytes, NULL, "size times the element's bytes", NULL},
    {"ptr", (getter)get_ptr, NULL, "the device address of the first element", NULL},
    {"__cuda_array_interface__", (getter)get_cai, NULL, "the CUDA Array Interface, version 3", NULL},
    {NULL},
};

static PyMethodDef device_array_methods[] = {
    {"copy_to_host", (PyCFunction)copy_to_host, METH_NOARGS, "a new NumPy array holding the data (one copy)"},
    {"__array__", (PyCFunction)(void (*)(void))device_array_array, METH_VARARGS | METH_KEYWORDS,
     "np.asarray(d): a copy on the host"},
    {"__dlpack__", (PyCFunction)(void (*)(void))device_array_dlpack, METH_VARARGS | METH_KEYWORDS,
     "a DLPack capsule of the data, without a copy"},
    {"__dlpack_device__", (PyCFunction)device_array_dlpack_device, METH_NOARGS, "(2, 0): CUDA device 0"},
    {NULL},
};

static PyType_Slot device_array_slots[] = {
    {Py_tp_dealloc, device_array_dealloc},
    {Py_tp_repr, device_array_repr},
    {Py_sq_length, device_array_len},
    {Py_mp_length, device_array_len},
    {Py_tp_getset, device_array_getset},
    {Py_tp_methods, device_array_methods},
    {Py_tp_doc, "An array in GPU memory (lk.to_device(x), or a gpu function's result)."},
    {0, NULL},
};

static PyType_Spec device_array_spec = {
    .name = "lorikeet.DeviceArray",
    .basicsize = sizeof(LkDeviceArray),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = device_array_slots,
};

static PyMethodDef device_functions[] = {
    {"to_device", to_device, METH_O, "to_device(x) -> a new C-contiguous DeviceArray holding x (one copy)"},
    {NULL},
};

int lk_device_array_init(PyObject *m)
{
    PyObject *type = PyType_FromSpec(&device_array_spec);
    if (!type) return -1;
    lk_DeviceArray_Type = (PyTypeObject *)type;
    Py_INCREF(type); /* the module's reference, and ours */
    if (PyModule_AddObject(m, "DeviceArray", type) < 0) {
        Py_DECREF(type);
        return -1;
    }
    return PyModule_AddFunctions(m, device_functions);
}

/* The array's fields as a view (for lk_device_view in device_import.c). */
void lk_device_array_fill_view(PyObject *obj, LkDeviceView *v)
{
    LkDeviceArray *a = (LkDeviceArray *)obj;
    v->data = a->data;
    Py_INCREF(a->dtype);
    v->dtype = a->dtype;
    v->ndim = a->ndim;
    memcpy(v->shape, a->shape, sizeof(int64_t) * (size_t)a->ndim);
    memcpy(v->strides, a->strides, sizeof(int64_t) * (size_t)a->ndim);
    v->readonly = a->readonly;
    v->stream = a->stream;
    Py_INCREF(obj);
    v->owner = obj;
}
