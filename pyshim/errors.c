/* errors.c: diagnostics become Python exceptions here and nowhere else. A message names the cause and, for
 * code, the file and line, with the offending source line and a caret under the column. */
#include "shim.h"

static PyObject *errors_attr(const char *name)
{
    PyObject *mod = PyImport_ImportModule("lorikeet.errors");
    if (!mod) return NULL;
    PyObject *cls = PyObject_GetAttrString(mod, name);
    Py_DECREF(mod);
    return cls;
}

/* numpy.linalg.LinAlgError (a ValueError), or ValueError where NumPy cannot be imported */
static PyObject *linalg_error(void)
{
    PyObject *mod = PyImport_ImportModule("numpy.linalg");
    PyObject *cls = mod ? PyObject_GetAttrString(mod, "LinAlgError") : NULL;
    Py_XDECREF(mod);
    if (!cls) {
        PyErr_Clear();
        cls = PyExc_ValueError;
        Py_INCREF(cls);
    }
    return cls;
}

static PyObject *source_line(const char *file, int line)
{
    PyObject *lc = PyImport_ImportModule("linecache");
    if (!lc) return NULL;
    PyObject *text = PyObject_CallMethod(lc, "getline", "si", file, line);
    Py_DECREF(lc);
    return text;
}

/* The text of line `line` of file without its indentation and line end, at most 400 bytes, into out (size
 * >= 401); its length (0: no such line). *indent: the indentation's width. */
static size_t source_text(const char *file, int line, char *out, int *indent)
{
    PyObject *text = source_line(file, line);
    const char *src = text && PyUnicode_Check(text) ? PyUnicode_AsUTF8(text) : NULL;
    PyErr_Clear();
    int skip = 0;
    while (src && (src[skip] == ' ' || src[skip] == '\t')) skip++;
    size_t n = src ? strlen(src + skip) : 0;
    while (n && (src[skip + n - 1] == '\n' || src[skip + n - 1] == '\r')) n--;
    if (n > 400) n = 400;
    snprintf(out, 401, "%.*s", (int)n, src ? src + skip : "");
    Py_XDECREF(text);
    if (indent) *indent = skip;
    return n;
}

/* exc.lk_file and exc.lk_line: where compiled code raised it */
static void set_location(PyObject *exc, const LkDiag *d)
{
    PyObject *f = PyUnicode_FromString(d->file), *l = PyLong_FromLong(d->line);
    if (f && l) {
        PyObject_SetAttrString(exc, "lk_file", f);
        PyObject_SetAttrString(exc, "lk_line", l);
    }
    Py_XDECREF(f);
    Py_XDECREF(l);
    PyErr_Clear(); /* built-in exceptions may refuse attributes on some versions */
}

static PyObject *raise_as(const LkDiag *d, PyObject *cls);
static PyObject *raise_program_exception(const LkDiag *d);

PyObject *lk_raise_diag(const LkDiag *d)
{
    if (d->kind == LK_ERR_RAISED && d->raised_class) return raise_program_exception(d);
    return raise_as(d, NULL);
}

/* The class "module:qualname" names, if it is still an exception class there (a new reference), else NULL. */
static PyObject *exception_class_named(const char *spec)
{
    const char *colon = strchr(spec, ':');
    if (!colon) return NULL;
    PyObject *modname = PyUnicode_FromStringAndSize(spec, colon - spec);
    PyObject *obj = modname ? PyImport_Import(modname) : NULL;
    Py_XDECREF(modname);
    for (const char *p = colon + 1; obj && *p;) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        PyObject *attr = PyUnicode_FromStringAndSize(p, (Py_ssize_t)n);
        PyObject *next = attr ? PyObject_GetAttr(obj, attr) : NULL;
        Py_XDECREF(attr);
        Py_DECREF(obj);
        obj = next;
        p += n + (dot ? 1 : 0);
    }
    if (obj && PyType_Check(obj) && PyType_IsSubtype((PyTypeObject *)obj, (PyTypeObject *)PyExc_BaseException))
        return obj;
    Py_XDECREF(obj);
    PyErr_Clear();
    return NULL;
}

/* A raise statement of the program (LK_ERR_RAISED): its class made with exactly its arguments (so str(e) and
 * e.args are what CPython gives), with where it was raised as a note (shown by tracebacks) and as lk_file and
 * lk_line. A class that cannot be found any more (its module changed since the code was compiled) is a
 * RuntimeError that says what was raised. */
static PyObject *raise_program_exception(const LkDiag *d)
{
    PyObject *args = NULL;
    bool lost = d->raised_recorded && !d->raised_values; /* its arguments were made, and lost (no memory) */
    if (d->raised_recorded && d->raised_values) {
        args = (PyObject *)d->raised_values;
        Py_INCREF(args);
    } else if (d->raised_args) {
        PyObject *ast = PyImport_ImportModule("ast");
        args = ast ? PyObject_CallMethod(ast, "literal_eval", "s", d->raised_args) : NULL;
        Py_XDECREF(ast);
        if (args && !PyTuple_Check(args)) Py_CLEAR(args);
        if (!args) return NULL;
    } else if (!(args = PyTuple_New(0))) {
        return NULL;
    }
    PyObject *cls = exception_class_named(d->raised_class);
    if (!cls) {
        PyErr_Format(PyExc_RuntimeError, "compiled code raised %s%s (File \"%s\", line %d), a class that cannot be "
                     "found there any more", d->raised_class, d->raised_args ? d->raised_args : "()", d->file, d->line);
        Py_DECREF(args);
        return NULL;
    }
    PyObject *exc = PyObject_Call(cls, args, NULL);
    Py_DECREF(args);
    if (exc && PyExceptionInstance_Check(exc)) {
        if (d->file[0] && d->line > 0) {
            char line[401];
            size_t n = source_text(d->file, d->line, line, NULL);
            PyObject *note = PyUnicode_FromFormat("raised by compiled code:\n  File \"%s\", line %d%s%s", d->file, d->line,
                                                  n ? "\n    " : "", line);
            Py_XDECREF(note ? PyObject_CallMethod(exc, "add_note", "O", note) : NULL);
            Py_XDECREF(note);
            set_location(exc, d);
        }
        if (lost)
            Py_XDECREF(PyObject_CallMethod(exc, "add_note", "s", "(its arguments, made at run time, were lost: out of memory)"));
        PyErr_Clear(); /* a class that refuses notes or attributes is raised without them */
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    } else if (exc) { /* a class whose constructor returned something else: CPython's words for raising that */
        PyErr_SetString(PyExc_TypeError, "exceptions must derive from BaseException");
    }
    Py_XDECREF(exc);
    Py_DECREF(cls);
    return NULL;
}

/* d raised as lorikeet.errors' class `name` (a subclass of what d's kind raises) */
PyObject *lk_raise_diag_as(const LkDiag *d, const char *name)
{
    PyObject *cls = errors_attr(name);
    return cls ? raise_as(d, cls) : NULL;
}

/* cls: a new reference, or NULL for the class of d's kind */
static PyObject *raise_as(const LkDiag *d, PyObject *cls)
{
    if (!cls) switch (d->kind) {
    case LK_ERR_COMPILE: case LK_ERR_TYPE: cls = errors_attr("CompileError"); break;
    case LK_ERR_INDEX: cls = PyExc_IndexError; Py_INCREF(cls); break;
    case LK_ERR_ZERODIV: cls = PyExc_ZeroDivisionError; Py_INCREF(cls); break;
    case LK_ERR_UNBOUND: cls = PyExc_UnboundLocalError; Py_INCREF(cls); break;
    case LK_ERR_OVERFLOW: cls = PyExc_OverflowError; Py_INCREF(cls); break;
    case LK_ERR_LINALG: cls = linalg_error(); break;
    case LK_ERR_VALUE: cls = PyExc_ValueError; Py_INCREF(cls); break;
    case LK_ERR_MEMORY: cls = PyExc_MemoryError; Py_INCREF(cls); break;
    case LK_ERR_UNAVAILABLE: cls = errors_attr("BackendUnavailable"); break;
    case LK_ERR_INTERNAL: case LK_OK: cls = errors_attr("InternalError"); break;
    case LK_ERR_RAISED: cls = PyExc_RuntimeError; Py_INCREF(cls); break; /* without its class: see lk_raise_diag */
    }
    if (!cls) return NULL;
    PyObject *msg;
    if (d->file[0] && d->line > 0) {
        /* the line without its indentation, and the caret moved left by as much */
        char line[401];
        int indent = 0;
        size_t n = source_text(d->file, d->line, line, &indent);
        int caret = d->col > indent ? d->col - 1 - indent : 0;
        char buf[2048];
        if (n && d->col > 0)
            snprintf(buf, sizeof buf, "%s\n  File \"%s\", line %d\n    %s\n    %*s^", d->message, d->file, d->line,
                     line, caret > 400 ? 400 : caret, "");
        else if (n)
            snprintf(buf, sizeof buf, "%s\n  File \"%s\", line %d\n    %s", d->message, d->file, d->line, line);
        else
            snprintf(buf, sizeof buf, "%s\n  File \"%s\", line %d", d->message, d->file, d->line);
        msg = PyUnicode_DecodeUTF8(buf, (Py_ssize_t)strlen(buf), "replace");
    } else {
        msg = PyUnicode_FromString(d->message);
    }
    if (msg) {
        PyObject *exc = PyObject_CallOneArg(cls, msg);
        if (exc) {
            if (d->file[0]) set_location(exc, d);
            PyErr_SetObject(cls, exc);
            Py_DECREF(exc);
        }
        Py_DECREF(msg);
    }
    Py_DECREF(cls);
    return NULL;
}

/* The pending Python exception as a diagnostic (for failures inside callbacks the C layers made). */
void lk_diag_from_exception(LkDiag *d)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject *s = value ? PyObject_Str(value) : NULL;
    const char *text = s ? PyUnicode_AsUTF8(s) : "unknown error";
    PyObject *cerr = errors_attr("CompileError");
    LkErrKind kind = (cerr && type && PyErr_GivenExceptionMatches(type, cerr)) ? LK_ERR_COMPILE : LK_ERR_INTERNAL;
    PyErr_Clear();
    lk_diag_set(d, kind, "", 0, 0, "%s", text ? text : "unknown error");
    Py_XDECREF(cerr);
    Py_XDECREF(s);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
}
