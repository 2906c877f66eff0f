/* box.c: Python values <-> the slot calling convention (ir_abi_slots). Arrays pass zero-copy: compiled code
 * gets NumPy's data pointer, shape and strides; arrays it returns become ndarrays that own the call's buffer
 * (or views that keep the argument they came from alive). */
#include "shim.h"

static bool dtype_of_descr(PyArray_Descr *d, IrDtype *out)
{
    if (d->byteorder == '>') return false; /* non-native byte order */
    int size = (int)PyDataType_ELSIZE(d);
    switch (d->kind) {
    case 'b': *out = IR_DT_BOOL; return size == 1;
    case 'i':
        *out = size == 1 ? IR_DT_INT8 : size == 2 ? IR_DT_INT16 : size == 4 ? IR_DT_INT32 : IR_DT_INT64;
        return size == 1 || size == 2 || size == 4 || size == 8;
    case 'u':
        *out = size == 1 ? IR_DT_UINT8 : size == 2 ? IR_DT_UINT16 : size == 4 ? IR_DT_UINT32 : IR_DT_UINT64;
        return size == 1 || size == 2 || size == 4 || size == 8;
    case 'f':
        *out = size == 2 ? IR_DT_FLOAT16 : size == 4 ? IR_DT_FLOAT32 : IR_DT_FLOAT64;
        return size == 2 || size == 4 || size == 8;
    case 'c':
        *out = size == 8 ? IR_DT_COMPLEX64 : IR_DT_COMPLEX128;
        return size == 8 || size == 16;
    default: return false;
    }
}

int lk_npy_type(IrDtype dt)
{
    static const int map[IR_DT_COUNT] = {NPY_BOOL, NPY_INT8, NPY_INT16, NPY_INT32, NPY_INT64, NPY_UINT8,
                                         NPY_UINT16, NPY_UINT32, NPY_UINT64, NPY_FLOAT16, NPY_FLOAT32,
                                         NPY_FLOAT64, NPY_COMPLEX64, NPY_COMPLEX128};
    return map[dt];
}

/* Subclasses whose meaning differs from ndarray's (a mask to honour, * meaning matrix product) are refused;
 * others (np.memmap) are plain arrays to us. */
static const char *refused_subclass(PyObject *arg)
{
    if (PyArray_CheckExact(arg)) return NULL;
    const char *name = Py_TYPE(arg)->tp_name;
    if (strstr(name, "MaskedArray") || strstr(name, "masked")) return "masked arrays";
    if (strcmp(name, "matrix") == 0 || strstr(name, ".matrix")) return "np.matrix";
    return NULL;
}

static bool array_ok(PyArrayObject *a)
{
    return PyArray_ISALIGNED(a) && PyArray_NDIM(a) >= 1 && PyArray_NDIM(a) <= IR_MAX_DIMS;
}

/* A slice of ints and Nones (its parts in at, bit k of *has for a part given), or a dtype (np.float32,
 * np.dtype('int64'), float): values whose type says everything, passed in no slot. 1 when arg is one, 0 when not,
 * -1 (no exception) when it is one lorikeet cannot take. */
static int value_type_of(PyObject *arg, unsigned *has, int64_t at[3], IrDtype *dt, bool *is_slice)
{
    if (PySlice_Check(arg)) {
        PySliceObject *sl = (PySliceObject *)arg;
        PyObject *parts[3] = {sl->start, sl->stop, sl->step};
        *is_slice = true;
        *has = 0;
        for (int k = 0; k < 3; k++) {
            at[k] = 0;
            if (parts[k] == Py_None) continue;
            if (!PyLong_Check(parts[k])) return -1;
            int overflow;
            at[k] = PyLong_AsLongLongAndOverflow(parts[k], &overflow);
            if (overflow || (at[k] == -1 && PyErr_Occurred())) {
                PyErr_Clear();
                return -1;
            }
            *has |= 1u << k;
        }
        return (*has >> 2 & 1) && at[2] == 0 ? -1 : 1;
    }
    *is_slice = false;
    if (!PyArray_DescrCheck(arg) && !PyType_Check(arg)) return 0;
    PyArray_Descr *d = NULL;
    if (PyArray_DescrCheck(arg)) {
        d = (PyArray_Descr *)arg;
        Py_INCREF(d);
    } else if (PyType_IsSubtype((PyTypeObject *)arg, &PyGenericArrType_Type) || arg == (PyObject *)&PyFloat_Type ||
               arg == (PyObject *)&PyLong_Type || arg == (PyObject *)&PyBool_Type) {
        d = PyArray_DescrFromTypeObject(arg);
    }
    if (!d) {
        PyErr_Clear();
        return PyType_Check(arg) ? -1 : 0;
    }
    bool ok = dtype_of_descr(d, dt);
    Py_DECREF(d);
    return ok ? 1 : -1;
}

int lk_key_arg(PyObject *arg, unsigned char *key, int *len)
{
    if (*len + 4 > LK_KEY_MAX) return -1;
    if (PyArray_Check(arg)) {
        PyArrayObject *a = (PyArrayObject *)arg;
        IrDtype dt;
        if (refused_subclass(arg) || !dtype_of_descr(PyArray_DESCR(a), &dt)) return -1;
        if (PyArray_NDIM(a) == 0) { /* a 0-d array is used as a scalar of its dtype */
            key[(*len)++] = 's';
            key[(*len)++] = (unsigned char)dt;
            return 0;
        }
        if (!array_ok(a)) return -1;
        key[(*len)++] = 'A';
        key[(*len)++] = (unsigned char)dt;
        key[(*len)++] = (unsigned char)PyArray_NDIM(a);
        key[(*len)++] = (unsigned char)((PyArray_IS_C_CONTIGUOUS(a) ? 'C' : 'A') + (PyArray_ISWRITEABLE(a) ? 0 : 32));
        return 0;
    }
    if (PyArray_IsScalar(arg, Generic) /* before float: np.float64 is a float */) {
        PyArray_Descr *d = PyArray_DescrFromScalar(arg);
        IrDtype dt;
        bool ok = d && dtype_of_descr(d, &dt);
        Py_XDECREF(d);
        if (!ok) return -1;
        key[(*len)++] = 's';
        key[(*len)++] = (unsigned char)dt;
        return 0;
    }
    if (PyBool_Check(arg)) { key[(*len)++] = 'b'; return 0; }
    if (lk_is_dispatcher(arg)) { /* a function value: by identity (the spec holds it) */
        if (*len + 9 > LK_KEY_MAX) return -1;
        key[(*len)++] = 'F';
        memcpy(key + *len, &arg, sizeof arg);
        *len += 8;
        return 0;
    }
    unsigned has;
    int64_t at[3];
    IrDtype vdt;
    bool is_slice;
    int vt = value_type_of(arg, &has, at, &vdt, &is_slice);
    if (vt < 0) return -1;
    if (vt > 0 && is_slice) {
        if (*len + 2 + 24 > LK_KEY_MAX) return -1;
        key[(*len)++] = 'S';
        key[(*len)++] = (unsigned char)has;
        memcpy(key + *len, at, 24);
        *len += 24;
        return 0;
    }
    if (vt > 0) {
        key[(*len)++] = 'd';
        key[(*len)++] = (unsigned char)vdt;
        return 0;
    }
    if (PyComplex_Check(arg)) { key[(*len)++] = 'c'; return 0; }
    if (lk_is_generator(arg)) { /* by type only: its state is a value of the call */
        if (!lk_is_pcg64_generator(arg)) return -1; /* the slow path's TypeError names the parameter */
        key[(*len)++] = 'R';
        return 0;
    }
    if (!PyLong_Check(arg) && !PyFloat_Check(arg) && arg != Py_None && !PyTuple_Check(arg)) {
        /* a device array (lorikeet's, CuPy's, PyTorch's...): keyed apart from ndarrays, whose code may not take it */
        LkDeviceView v;
        int dv = lk_device_view(arg, &v);
        if (dv <= 0) {
            PyErr_Clear();
            return -1;
        }
        IrDtype dt;
        bool ok = dtype_of_descr(v.dtype, &dt) && v.ndim >= 1 && v.ndim <= IR_MAX_DIMS;
        if (ok) {
            key[(*len)++] = 'D';
            key[(*len)++] = (unsigned char)dt;
            key[(*len)++] = (unsigned char)v.ndim;
            key[(*len)++] = (unsigned char)((lk_device_view_is_c(&v) ? 'C' : 'A') + (v.readonly ? 32 : 0));
        }
        lk_device_view_release(&v);
        return ok ? 0 : -1;
    }
    if (PyLong_CheckExact(arg) || PyLong_Check(arg)) {
        int overflow;
        PyLong_AsLongLongAndOverflow(arg, &overflow);
        if (overflow) return -1;
        key[(*len)++] = 'i';
        return 0;
    }
    if (PyFloat_Check(arg)) { key[(*len)++] = 'f'; return 0; }
    if (arg == Py_None) { key[(*len)++] = 'N'; return 0; }
    if (PyTuple_Check(arg)) {
        Py_ssize_t n = PyTuple_GET_SIZE(arg);
        if (n > IR_MAX_TUPLE) return -1;
        key[(*len)++] = 'T';
        key[(*len)++] = (unsigned char)n;
        for (Py_ssize_t i = 0; i < n; i++)
            if (lk_key_arg(PyTuple_GET_ITEM(arg, i), key, len) < 0) return -1;
        if (*len + 1 > LK_KEY_MAX) return -1;
        key[(*len)++] = ')';
        return 0;
    }
    return -1;
}

IrType *lk_type_of_arg(PyObject *arg, const char *param)
{
    if (PyArray_Check(arg)) {
        PyArrayObject *a = (PyArrayObject *)arg;
        IrDtype dt;
        const char *refused = refused_subclass(arg);
        if (refused) {
            PyErr_Format(PyExc_TypeError, "argument '%s': %s are not supported (pass a plain ndarray, e.g. np.asarray(x) "
                         "or x.filled(...))", param, refused);
            return NULL;
        }
        if (!dtype_of_descr(PyArray_DESCR(a), &dt)) {
            PyErr_Format(PyExc_TypeError, "argument '%s': arrays of dtype %R are not supported (bool, int8..int64, "
                         "uint8..uint64, float16, float32, float64, complex64 and complex128 in native byte order are)", param, PyArray_DESCR(a));
            return NULL;
        }
        if (PyArray_NDIM(a) == 0) return ir_type_scalar(dt); /* used as a scalar of its dtype */
        if (!array_ok(a)) {
            PyErr_Format(PyExc_TypeError, "argument '%s': the array is not aligned or has more than %d dimensions", param,
                         IR_MAX_DIMS);
            return NULL;
        }
        return ir_type_array_ro(dt, PyArray_NDIM(a), PyArray_IS_C_CONTIGUOUS(a) ? IR_LAYOUT_C : IR_LAYOUT_ANY,
                                !PyArray_ISWRITEABLE(a));
    }
    if (PyArray_IsScalar(arg, Generic) /* before float: np.float64 is a float */) {
        PyArray_Descr *d = PyArray_DescrFromScalar(arg);
        IrDtype dt;
        bool ok = d && dtype_of_descr(d, &dt);
        Py_XDECREF(d);
        if (ok) return ir_type_scalar(dt);
    }
    if (lk_is_dispatcher(arg)) { /* a jitted function (plain ones become one: _call_slow) */
        LkDispatcher *fd = (LkDispatcher *)arg;
        if (lk_ensure_untyped(fd) < 0) {
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            PyErr_NormalizeException(&type, &value, &tb);
            PyErr_Format(PyExc_TypeError, "argument '%s': the function passed cannot be compiled: %S", param, value);
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
            return NULL;
        }
        return ir_type_func(lk_untyped_func(fd));
    }
    unsigned has;
    int64_t at[3];
    IrDtype vdt;
    bool is_slice;
    int vt = value_type_of(arg, &has, at, &vdt, &is_slice);
    if (vt > 0) return is_slice ? ir_type_slice_const(has, at) : ir_type_dtype(vdt);
    if (vt < 0) {
        PyErr_Format(PyExc_TypeError, "argument '%s': %R is not supported (slices of integers and None, and the dtypes "
                     "bool, int8..int64, uint8..uint64, float16, float32, float64, complex64 and complex128 are)", param, arg);
        return NULL;
    }
    if (PyComplex_Check(arg)) return ir_type_weak(IR_DT_COMPLEX128); /* a Python complex, weak as a float is */
    if (lk_is_generator(arg)) return lk_generator_supported(arg, param) ? ir_type_rng() : NULL;
    if (!PyBool_Check(arg) && !PyLong_Check(arg) && !PyFloat_Check(arg) && arg != Py_None && !PyTuple_Check(arg)) {
        LkDeviceView v;
        int dv = lk_device_view(arg, &v);
        if (dv < 0) return NULL;
        if (dv == 1) {
            IrDtype dt;
            IrType *t = NULL;
            if (!dtype_of_descr(v.dtype, &dt))
                PyErr_Format(PyExc_TypeError, "argument '%s': device arrays of dtype %R are not supported", param, v.dtype);
            else if (v.ndim < 1 || v.ndim > IR_MAX_DIMS)
                PyErr_Format(PyExc_TypeError, "argument '%s': device arrays of %d dimensions are not supported (1 to %d are)",
                             param, v.ndim, IR_MAX_DIMS);
            else
                t = ir_type_array_ro(dt, v.ndim, lk_device_view_is_c(&v) ? IR_LAYOUT_C : IR_LAYOUT_ANY, v.readonly != 0);
            lk_device_view_release(&v);
            return t;
        }
    }
    if (PyBool_Check(arg)) return ir_type_weak(IR_DT_BOOL); /* Python bools add like ints: True + True == 2 */
    if (PyLong_Check(arg)) {
        int overflow;
        PyLong_AsLongLongAndOverflow(arg, &overflow);
        if (overflow) {
            PyErr_Format(PyExc_OverflowError, "argument '%s': %R does not fit in a 64-bit integer", param, arg);
            return NULL;
        }
        return ir_type_weak(IR_DT_INT64); /* a Python int: int64, weak as NEP 50 says (int32 array + 3 is int32) */
    }
    if (PyFloat_Check(arg)) return ir_type_weak(IR_DT_FLOAT64);
    if (arg == Py_None) return ir_type_none();
    if (PyTuple_Check(arg)) {
        Py_ssize_t n = PyTuple_GET_SIZE(arg);
        if (n > IR_MAX_TUPLE) {
            PyErr_Format(PyExc_TypeError, "argument '%s': tuples of more than %d items are not supported", param, IR_MAX_TUPLE);
            return NULL;
        }
        IrType *elems[IR_MAX_TUPLE];
        for (Py_ssize_t i = 0; i < n; i++)
            if (!(elems[i] = lk_type_of_arg(PyTuple_GET_ITEM(arg, i), param))) return NULL;
        return ir_type_tuple(elems, (int)n);
    }
    PyErr_Format(PyExc_TypeError,
                 "argument '%s' has unsupported type %.100s: lorikeet takes numbers, bools, NumPy arrays of numbers, "
                 "tuples of these, None, slices, dtypes and functions", param, Py_TYPE(arg)->tp_name);
    return NULL;
}

static int64_t scalar_slot(PyObject *arg, const IrType *t)
{
    union { int64_t i; double f; } slot = {0};
    bool zero_d = PyArray_Check(arg) && PyArray_NDIM((PyArrayObject *)arg) == 0;
    if (zero_d || (PyArray_IsScalar(arg, Generic) && !PyBool_Check(arg) && !PyLong_Check(arg) && !PyFloat_Check(arg))) {
        unsigned char buf[16] = {0};
        if (zero_d) memcpy(buf, PyArray_DATA((PyArrayObject *)arg), (size_t)PyArray_ITEMSIZE((PyArrayObject *)arg));
        else PyArray_ScalarAsCtype(arg, buf);
        switch (t->dtype) {
        case IR_DT_BOOL: slot.i = *(npy_bool *)buf != 0; break;
        case IR_DT_INT8: slot.i = *(int8_t *)buf; break;
        case IR_DT_INT16: slot.i = *(int16_t *)buf; break;
        case IR_DT_INT32: slot.i = *(int32_t *)buf; break;
        case IR_DT_INT64: slot.i = *(int64_t *)buf; break;
        case IR_DT_UINT8: slot.i = *(uint8_t *)buf; break;
        case IR_DT_UINT16: slot.i = *(uint16_t *)buf; break;
        case IR_DT_UINT32: slot.i = *(uint32_t *)buf; break;
        case IR_DT_UINT64: slot.i = (int64_t)*(uint64_t *)buf; break;
        case IR_DT_FLOAT16: slot.f = rt_half_to_double(*(uint16_t *)buf); break; /* npy_half: the bits */
        case IR_DT_FLOAT32: slot.f = *(float *)buf; break;
        case IR_DT_FLOAT64: slot.f = *(double *)buf; break;
        case IR_DT_COMPLEX64: case IR_DT_COMPLEX128: case IR_DT_COUNT: break; /* complex: complex_slots */
        }
        return slot.i;
    }
    if (ir_dtype_is_float(t->dtype)) slot.f = PyFloat_AsDouble(arg);
    else slot.i = PyLong_AsLongLong(arg); /* bools are ints: 0 or 1 */
    return slot.i;
}

/* A complex scalar's two slots: its real and imaginary parts as doubles (ir_abi_slots). */
static void complex_slots(PyObject *arg, const IrType *t, int64_t *slots, int *nslot)
{
    double parts[2];
    bool zero_d = PyArray_Check(arg) && PyArray_NDIM((PyArrayObject *)arg) == 0;
    if (zero_d || PyArray_IsScalar(arg, Generic)) {
        unsigned char buf[16] = {0};
        if (zero_d) memcpy(buf, PyArray_DATA((PyArrayObject *)arg), (size_t)PyArray_ITEMSIZE((PyArrayObject *)arg));
        else PyArray_ScalarAsCtype(arg, buf);
        if (t->dtype == IR_DT_COMPLEX64) {
            parts[0] = ((float *)buf)[0];
            parts[1] = ((float *)buf)[1];
        } else {
            memcpy(parts, buf, sizeof parts);
        }
    } else {
        Py_complex c = PyComplex_AsCComplex(arg);
        parts[0] = c.real;
        parts[1] = c.imag;
    }
    memcpy(&slots[(*nslot)++], &parts[0], sizeof(double));
    memcpy(&slots[(*nslot)++], &parts[1], sizeof(double));
}

void lk_unbox_arg(PyObject *arg, const IrType *t, int64_t *slots, int *nslot, PyObject **arrays, int *narrays)
{
    switch (t->kind) {
    case IR_TY_SCALAR:
        if (ir_dtype_is_complex(t->dtype)) complex_slots(arg, t, slots, nslot);
        else slots[(*nslot)++] = scalar_slot(arg, t);
        return;
    case IR_TY_ARRAY: {
        if (!PyArray_Check(arg)) { /* a device array: the type came from its view */
            LkDeviceView v;
            if (lk_device_view(arg, &v) != 1) {
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "a device array changed between typing and the call");
                return;
            }
            slots[(*nslot)++] = (int64_t)v.data;
            slots[(*nslot)++] = (int64_t)(intptr_t)RT_ARG_BASE(*narrays);
            arrays[(*narrays)++] = arg;
            for (int i = 0; i < t->ndim; i++) slots[(*nslot)++] = v.shape[i];
            for (int i = 0; i < t->ndim; i++) slots[(*nslot)++] = v.strides[i];
            lk_device_view_release(&v);
            return;
        }
        PyArrayObject *a = (PyArrayObject *)arg;
        slots[(*nslot)++] = (int64_t)(intptr_t)PyArray_DATA(a);
        slots[(*nslot)++] = (int64_t)(intptr_t)RT_ARG_BASE(*narrays);
        arrays[(*narrays)++] = arg;
        npy_intp *dims = PyArray_DIMS(a), *strides = PyArray_STRIDES(a);
        for (int i = 0; i < t->ndim; i++) slots[(*nslot)++] = dims[i];
        for (int i = 0; i < t->ndim; i++) slots[(*nslot)++] = strides[i];
        return;
    }
    case IR_TY_TUPLE:
        for (int i = 0; i < t->nelems; i++) lk_unbox_arg(PyTuple_GET_ITEM(arg, i), t->elems[i], slots, nslot, arrays, narrays);
        return;
    case IR_TY_RNG: /* its PCG64 state, which the call updates in place (written back by lk_generators_out) */
        lk_generator_in(arg, slots + *nslot);
        *nslot += ir_abi_slots(t);
        return;
    default: return;
    }
}

static void free_buffer_capsule(PyObject *cap)
{
    rt_buffer_free(PyCapsule_GetPointer(cap, "lorikeet.buffer"));
}

/* The object that keeps a returned array's memory alive: the argument it views, or a capsule owning the
 * buffer (one per buffer, even when several returned arrays share it). */
static PyObject *owner_of(void *base, RtCtx *ctx, PyObject **arrays, PyObject **owners, int *nowners)
{
    if (RT_IS_ARG_BASE(base)) {
        PyObject *o = arrays[(uintptr_t)base - 1];
        Py_INCREF(o);
        return o;
    }
    for (int i = 0; i < *nowners; i++)
        if (PyCapsule_GetPointer(owners[i], "lorikeet.buffer") == base) {
            Py_INCREF(owners[i]);
            return owners[i];
        }
    if (!rt_is_buffer_of(ctx, base) || *nowners >= LK_MAX_ARRAYS) {
        PyErr_SetString(PyExc_SystemError, "lorikeet: a returned array has no known owner (internal error)");
        return NULL;
    }
    rt_buffer_detach(ctx, base);
    PyObject *cap = PyCapsule_New(base, "lorikeet.buffer", free_buffer_capsule);
    if (!cap) {
        rt_buffer_free(base);
        return NULL;
    }
    owners[(*nowners)++] = cap; /* borrowed by the list; the arrays hold the references */
    return cap;
}

bool lk_device_view_is_c(const LkDeviceView *v)
{
    int64_t s = PyDataType_ELSIZE(v->dtype);
    for (int d = v->ndim - 1; d >= 0; d--) {
        if (v->shape[d] != 1 && v->strides[d] != s) return false;
        s *= v->shape[d];
    }
    return true;
}

/* A complex result: a Python complex when weak, else np.complex64 or np.complex128. */
static PyObject *box_complex(const IrType *t, const int64_t *slots, int *nslot)
{
    double parts[2];
    memcpy(&parts[0], &slots[(*nslot)++], sizeof(double));
    memcpy(&parts[1], &slots[(*nslot)++], sizeof(double));
    if (t->weak) return PyComplex_FromDoubles(parts[0], parts[1]);
    union { float f32[2]; double f64[2]; unsigned char raw[16]; } c;
    if (t->dtype == IR_DT_COMPLEX64) {
        c.f32[0] = (float)parts[0];
        c.f32[1] = (float)parts[1];
    } else {
        c.f64[0] = parts[0];
        c.f64[1] = parts[1];
    }
    PyArray_Descr *d = PyArray_DescrFromType(lk_npy_type(t->dtype));
    PyObject *s = PyArray_Scalar(c.raw, d, NULL);
    Py_DECREF(d);
    return s;
}

PyObject *lk_box_result(const IrType *t, const int64_t *slots, int *nslot, RtCtx *ctx, PyObject **arrays,
                        PyObject **owners, int *nowners)
{
    switch (t->kind) {
    case IR_TY_SCALAR: {
        if (ir_dtype_is_complex(t->dtype)) return box_complex(t, slots, nslot);
        int64_t v = slots[(*nslot)++];
        double f;
        memcpy(&f, &v, sizeof f);
        /* a weak result is a Python int, float or bool in CPython too (len(a), x > 0, a Python argument) */
        if (t->weak && t->dtype == IR_DT_BOOL) return PyBool_FromLong(v != 0);
        if (t->weak && t->dtype == IR_DT_INT64) return PyLong_FromLongLong(v);
        if (t->weak) return PyFloat_FromDouble(f);
        /* a strong one is a NumPy scalar of its dtype, as NumPy's own operations give */
        union { int8_t i8; int16_t i16; int32_t i32; uint64_t u64; float f32; unsigned char raw[8]; } c;
        switch (t->dtype) {
        case IR_DT_BOOL: c.i8 = v != 0; break;
        case IR_DT_INT8: case IR_DT_UINT8: c.i8 = (int8_t)v; break;
        case IR_DT_INT16: case IR_DT_UINT16: c.i16 = (int16_t)v; break;
        case IR_DT_INT32: case IR_DT_UINT32: c.i32 = (int32_t)v; break;
        case IR_DT_FLOAT16: c.i16 = (int16_t)rt_half_from_double(f); break; /* exact: f is a float16 */
        case IR_DT_FLOAT32: c.f32 = (float)f; break;
        case IR_DT_INT64: case IR_DT_UINT64: case IR_DT_FLOAT64: case IR_DT_COMPLEX64: case IR_DT_COMPLEX128:
        case IR_DT_COUNT: c.u64 = (uint64_t)v; break;
        }
        PyArray_Descr *d = PyArray_DescrFromType(lk_npy_type(t->dtype));
        PyObject *s = PyArray_Scalar(c.raw, d, NULL);
        Py_DECREF(d);
        return s;
    }
    case IR_TY_ARRAY: {
        void *data = (void *)(intptr_t)slots[*nslot];
        void *base = (void *)(intptr_t)slots[*nslot + 1];
        npy_intp dims[IR_MAX_DIMS], strides[IR_MAX_DIMS];
        for (int i = 0; i < t->ndim; i++) dims[i] = slots[*nslot + 2 + i];
        for (int i = 0; i < t->ndim; i++) strides[i] = slots[*nslot + 2 + t->ndim + i];
        *nslot += 2 + 2 * t->ndim;
        PyObject *owner = owner_of(base, ctx, arrays, owners, nowners);
        if (!owner) return NULL;
        int flags = NPY_ARRAY_WRITEABLE;
        if (RT_IS_ARG_BASE(base) && !PyArray_ISWRITEABLE((PyArrayObject *)owner)) flags = 0;
        PyArray_Descr *d = PyArray_DescrFromType(lk_npy_type(t->dtype));
        PyObject *arr = PyArray_NewFromDescr(&PyArray_Type, d, t->ndim, dims, strides, data, flags, NULL);
        if (!arr) {
            Py_DECREF(owner);
            return NULL;
        }
        if (PyArray_SetBaseObject((PyArrayObject *)arr, owner) < 0) {
            Py_DECREF(arr);
            return NULL;
        }
        return arr;
    }
    case IR_TY_TUPLE: {
        PyObject *tup = PyTuple_New(t->nelems);
        if (!tup) return NULL;
        for (int i = 0; i < t->nelems; i++) {
            PyObject *v = lk_box_result(t->elems[i], slots, nslot, ctx, arrays, owners, nowners);
            if (!v) {
                Py_DECREF(tup);
                return NULL;
            }
            PyTuple_SET_ITEM(tup, i, v);
        }
        return tup;
    }
    case IR_TY_DTYPE: {
        PyArray_Descr *d = PyArray_DescrFromType(lk_npy_type(t->dtype));
        return (PyObject *)d;
    }
    default: Py_RETURN_NONE;
    }
}
