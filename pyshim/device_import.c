/* device_import.c: device arrays of other libraries, taken without a copy.
 *
 * A CuPy, Numba or PyTorch array on the GPU is read through __cuda_array_interface__ (versions 2 and 3:
 * shape, typestr, data, strides, and v3's stream, which is waited for: the producer's queued writes are done
 * before lorikeet reads) or, failing that, through DLPack (__dlpack__ with this thread's stream as the
 * consumer's, so the producer orders its work before ours). The view keeps an owner alive: the exporting
 * object, or for DLPack the managed tensor, whose deleter runs when the owner dies. Arrays on a device other
 * than 0 are refused (lorikeet uses device 0). This is the slow path of a call's foreign arguments: attribute
 * lookups by name happen here, never for lorikeet's own DeviceArray. */
#include "shim.h"
#include "dlpack.h"

static int view_error(PyObject *exc, const char *msg, PyObject *obj)
{
    PyErr_Format(exc, "%s (a %s)", msg, Py_TYPE(obj)->tp_name);
    return -1;
}

static int gpu_error(const LkDiag *diag)
{
    LkDiag d = *diag;
    if (d.kind != LK_ERR_MEMORY && d.kind != LK_ERR_VALUE) d.kind = LK_ERR_UNAVAILABLE;
    lk_raise_diag(&d);
    return -1;
}

/* Device memory of device 0, or an exception. */
static int check_device(uint64_t data, PyObject *obj)
{
    if (!data) return 0;
    LkDiag diag = {0};
    int dev = rt_gpu_pointer_device(data, &diag);
    if (dev < 0) return gpu_error(&diag);
    if (dev != 0) {
        PyErr_Format(PyExc_ValueError, "a %s on CUDA device %d: lorikeet's gpu backend uses device 0",
                     Py_TYPE(obj)->tp_name, dev);
        return -1;
    }
    return 0;
}

static int int64_seq(PyObject *seq, int64_t *out, int n)
{
    for (int i = 0; i < n; i++) {
        PyObject *x = PySequence_GetItem(seq, i);
        if (!x) return -1;
        out[i] = PyLong_AsLongLong(x);
        Py_DECREF(x);
        if (out[i] == -1 && PyErr_Occurred()) return -1;
    }
    return 0;
}

static void c_strides(LkDeviceView *v)
{
    int64_t step = (int64_t)PyDataType_ELSIZE(v->dtype);
    for (int i = v->ndim - 1; i >= 0; i--) {
        v->strides[i] = step;
        step *= v->shape[i];
    }
}

static int from_cai(PyObject *obj, PyObject *cai, LkDeviceView *v)
{
    if (!PyDict_Check(cai)) return view_error(PyExc_TypeError, "__cuda_array_interface__ is not a dict", obj);
    PyObject *shape = PyDict_GetItemString(cai, "shape"), *typestr = PyDict_GetItemString(cai, "typestr");
    PyObject *data = PyDict_GetItemString(cai, "data"), *strides = PyDict_GetItemString(cai, "strides");
    PyObject *mask = PyDict_GetItemString(cai, "mask"), *stream = PyDict_GetItemString(cai, "stream");
    if (!shape || !typestr || !data || !PyTuple_Check(shape) || !PyTuple_Check(data) || PyTuple_GET_SIZE(data) != 2)
        return view_error(PyExc_ValueError, "__cuda_array_interface__ lacks shape, typestr or data", obj);
    if (mask && mask != Py_None)
        return view_error(PyExc_TypeError, "masked device arrays are not supported", obj);
    Py_ssize_t ndim = PyTuple_GET_SIZE(shape);
    if (ndim > IR_MAX_DIMS) return view_error(PyExc_ValueError, "too many dimensions", obj);
    v->ndim = (int)ndim;
    if (int64_seq(shape, v->shape, v->ndim) < 0) return -1;
    if (!PyArray_DescrConverter(typestr, &v->dtype)) return -1;
    v->data = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(data, 0));
    if (PyErr_Occurred()) return -1;
    v->readonly = PyObject_IsTrue(PyTuple_GET_ITEM(data, 1)) == 1;
    if (strides && strides != Py_None) {
        if (!PySequence_Check(strides) || PySequence_Size(strides) != ndim)
            return view_error(PyExc_ValueError, "__cuda_array_interface__'s strides do not match its shape", obj);
        if (int64_seq(strides, v->strides, v->ndim) < 0) return -1;
    } else {
        c_strides(v);
    }
    if (check_device(v->data, obj) < 0) return -1;
    /* v3: the producer's stream, whose queued work may still write the data (0 is not allowed by the spec;
     * taken as the legacy default stream, as 1) */
    if (stream && stream != Py_None) {
        unsigned long long s = PyLong_AsUnsignedLongLong(stream);
        if (PyErr_Occurred()) return -1;
        LkDiag diag = {0};
        int rc;
        Py_BEGIN_ALLOW_THREADS
        rc = rt_gpu_stream_sync(s ? s : 1, &diag);
        Py_END_ALLOW_THREADS
        if (rc < 0) return gpu_error(&diag);
    }
    Py_INCREF(obj);
    v->owner = obj;
    return 1;
}

/* ---- DLPack ---- */

static void owner_destructor(PyObject *cap)
{
    void *m = PyCapsule_GetPointer(cap, "lorikeet.dlpack_owner");
    if (!m) {
        PyErr_Clear();
        return;
    }
    if (PyCapsule_GetContext(cap)) {
        LkDLManagedTensorVersioned *t = m;
        if (t->deleter) t->deleter(t);
    } else {
        LkDLManagedTensor *t = m;
        if (t->deleter) t->deleter(t);
    }
}

static PyArray_Descr *descr_of_dl(LkDLDataType t)
{
    if (t.lanes != 1) return NULL;
    int n = t.bits;
    int type = -1;
    switch (t.code) {
    case LK_DL_BOOL: type = n == 8 ? NPY_BOOL : -1; break;
    case LK_DL_INT: type = n == 8 ? NPY_INT8 : n == 16 ? NPY_INT16 : n == 32 ? NPY_INT32 : n == 64 ? NPY_INT64 : -1; break;
    case LK_DL_UINT:
        type = n == 8 ? NPY_UINT8 : n == 16 ? NPY_UINT16 : n == 32 ? NPY_UINT32 : n == 64 ? NPY_UINT64 : -1;
        break;
    case LK_DL_FLOAT: type = n == 16 ? NPY_HALF : n == 32 ? NPY_FLOAT32 : n == 64 ? NPY_FLOAT64 : -1; break;
    case LK_DL_COMPLEX: type = n == 64 ? NPY_COMPLEX64 : n == 128 ? NPY_COMPLEX128 : -1; break;
    }
    return type < 0 ? NULL : PyArray_DescrFromType(type);
}

static PyObject *call_dlpack(PyObject *obj, uint64_t stream)
{
    PyObject *meth = PyObject_GetAttrString(obj, "__dlpack__");
    if (!meth) return NULL;
    PyObject *args = PyTuple_New(0), *kw = Py_BuildValue("{sKs(ii)}", "stream", (unsigned long long)stream,
                                                         "max_version", 1, 0);
    PyObject *cap = args && kw ? PyObject_Call(meth, args, kw) : NULL;
    if (!cap && PyErr_ExceptionMatches(PyExc_TypeError)) { /* a producer older than max_version */
        PyErr_Clear();
        PyDict_DelItemString(kw, "max_version");
        cap = PyObject_Call(meth, args, kw);
    }
    Py_XDECREF(args);
    Py_XDECREF(kw);
    Py_DECREF(meth);
    return cap;
}

static int from_dlpack(PyObject *obj, LkDeviceView *v)
{
    LkDiag diag = {0};
    uint64_t stream = rt_gpu_stream(&diag);
    if (!stream) return gpu_error(&diag);
    PyObject *cap = call_dlpack(obj, stream);
    if (!cap) return -1;
    int versioned = PyCapsule_IsValid(cap, "dltensor_versioned");
    if (!versioned && !PyCapsule_IsValid(cap, "dltensor")) {
        Py_DECREF(cap);
        return view_error(PyExc_TypeError, "__dlpack__ gave no DLPack capsule", obj);
    }
    void *m = PyCapsule_GetPointer(cap, versioned ? "dltensor_versioned" : "dltensor");
    LkDLTensor *t = versioned ? &((LkDLManagedTensorVersioned *)m)->dl_tensor : &((LkDLManagedTensor *)m)->dl_tensor;
    /* from here the tensor is ours: the owner capsule calls its deleter */
    PyCapsule_SetName(cap, versioned ? "used_dltensor_versioned" : "used_dltensor");
    Py_DECREF(cap);
    PyObject *owner = PyCapsule_New(m, "lorikeet.dlpack_owner", owner_destructor);
    if (!owner) return -1;
    if (versioned) PyCapsule_SetContext(owner, (void *)1);
    v->owner = owner;
    if (t->device.device_type != LK_DL_CUDA && t->device.device_type != LK_DL_CUDA_MANAGED)
        return view_error(PyExc_ValueError, "DLPack gave a tensor that is not in CUDA memory", obj);
    if (t->device.device_id != 0) {
        PyErr_Format(PyExc_ValueError, "a %s on CUDA device %d: lorikeet's gpu backend uses device 0",
                     Py_TYPE(obj)->tp_name, t->device.device_id);
        return -1;
    }
    if (t->ndim < 0 || t->ndim > IR_MAX_DIMS) return view_error(PyExc_ValueError, "too many dimensions", obj);
    if (!(v->dtype = descr_of_dl(t->dtype)))
        return view_error(PyExc_TypeError, "DLPack gave an element type lorikeet has no NumPy dtype for", obj);
    v->ndim = t->ndim;
    for (int i = 0; i < v->ndim; i++) v->shape[i] = t->shape[i];
    if (t->strides) {
        int64_t elsize = (int64_t)PyDataType_ELSIZE(v->dtype);
        for (int i = 0; i < v->ndim; i++) v->strides[i] = t->strides[i] * elsize;
    } else {
        c_strides(v);
    }
    v->data = (uint64_t)(uintptr_t)t->data + t->byte_offset;
    v->readonly = versioned && (((LkDLManagedTensorVersioned *)m)->flags & LK_DL_FLAG_READ_ONLY);
    return 1;
}

static int is_cuda_dlpack(PyObject *obj)
{
    PyObject *dev = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
    if (!dev) {
        PyErr_Clear();
        return 0;
    }
    int type = -1, id = -1;
    int ok = PyTuple_Check(dev) && PyArg_ParseTuple(dev, "ii", &type, &id);
    if (!ok) PyErr_Clear();
    Py_DECREF(dev);
    return ok && (type == LK_DL_CUDA || type == LK_DL_CUDA_MANAGED);
}

int lk_device_view(PyObject *obj, LkDeviceView *v)
{
    memset(v, 0, sizeof *v);
    if (lk_is_device_array(obj)) {
        lk_device_array_fill_view(obj, v);
        return 1;
    }
    if (PyArray_Check(obj) || PyLong_Check(obj) || PyFloat_Check(obj) || PyBool_Check(obj)) return 0;
    int rc = 0;
    PyObject *cai = PyObject_GetAttrString(obj, "__cuda_array_interface__");
    if (cai) {
        rc = from_cai(obj, cai, v);
        Py_DECREF(cai);
    } else {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
        PyErr_Clear();
        if (PyObject_HasAttrString(obj, "__dlpack__") && is_cuda_dlpack(obj)) rc = from_dlpack(obj, v);
    }
    if (rc < 0) lk_device_view_release(v);
    return rc;
}

void lk_device_view_release(LkDeviceView *v)
{
    Py_CLEAR(v->dtype);
    Py_CLEAR(v->owner);
}
