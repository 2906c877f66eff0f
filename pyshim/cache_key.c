/* cache_key.c: the text of the disk cache's key, the preimage that lorikeet/_key.py describes line by line.
 *
 * It is made here, in C, so that a process's first cache hit (cache_hit.c) imports none of the cache's Python
 * modules, which cost more than the rest of a hit together; _key.py's toolchain(), preimage() and generation()
 * call these same functions, so there is one writer of the text. What a function's free names meant is read from
 * the material its untyped IR was made from (Dispatcher._get_untyped keeps it), the constants through
 * lorikeet._source's _const and _describe. Nothing that changes from run to run is written: no id(), no hash(),
 * no address (identities only number this preimage's functions). Every function here either succeeds or returns
 * NULL/false with a Python exception set, which the compile path takes as "no cache for this compilation". */
#include "shim.h"

/* ---- a growing UTF-8 text ---- */

typedef struct Text {
    char *p;
    size_t n, cap;
} Text;

static bool text_add(Text *t, const char *s, size_t n)
{
    if (t->n + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 1024;
        while (cap < t->n + n + 1) cap *= 2;
        char *p = PyMem_Realloc(t->p, cap);
        if (!p) {
            PyErr_NoMemory();
            return false;
        }
        t->p = p;
        t->cap = cap;
    }
    memcpy(t->p + t->n, s, n);
    t->n += n;
    t->p[t->n] = '\0';
    return true;
}

static bool text_str(Text *t, const char *s)
{
    return text_add(t, s, strlen(s));
}

static bool text_fmt(Text *t, const char *fmt, long long v)
{
    char buf[64];
    snprintf(buf, sizeof buf, fmt, v);
    return text_str(t, buf);
}

static PyObject *new_ref(PyObject *o)
{
    Py_XINCREF(o);
    return o;
}

/* str(o) as an f-string writes it (format(o, "")), in UTF-8 */
static bool text_obj(Text *t, PyObject *o)
{
    PyObject *empty = PyUnicode_FromString("");
    PyObject *s = empty ? PyObject_Format(o, empty) : NULL;
    Py_XDECREF(empty);
    Py_ssize_t n;
    const char *u = s ? PyUnicode_AsUTF8AndSize(s, &n) : NULL;
    bool ok = u && text_add(t, u, (size_t)n);
    Py_XDECREF(s);
    return ok;
}

/* ---- values, as _key.py's _value writes them ---- */

/* An attribute of lorikeet._source (imported with lorikeet), looked up once: _const, _NOT_CONST, _describe. */
static PyObject *source_attr(const char *name)
{
    PyObject *mod = PyImport_ImportModule("lorikeet._source");
    PyObject *attr = mod ? PyObject_GetAttrString(mod, name) : NULL;
    Py_XDECREF(mod);
    return attr;
}

/* A frozen array: lorikeet._source._array_value's text (dtype, shape, layout, the SHA-256 of its values) */
static bool array_text(Text *t, PyObject *v)
{
    static PyObject *array_value;
    if (!array_value && !(array_value = source_attr("_array_value"))) return false;
    PyObject *d = PyObject_CallOneArg(array_value, v);
    bool ok = d && text_obj(t, d);
    Py_XDECREF(d);
    return ok;
}

static bool value_text(Text *t, PyObject *v)
{
    if (v == Py_None) return text_str(t, "None");
    if (PyBool_Check(v)) return text_str(t, "bool ") && text_obj(t, v);
    if (PyLong_Check(v)) return text_str(t, "int ") && text_obj(t, v);
    if (PyFloat_Check(v)) { /* hex: every bit counts */
        PyObject *hex = PyObject_CallMethod(v, "hex", NULL);
        bool ok = hex && text_str(t, "float ") && text_obj(t, hex);
        Py_XDECREF(hex);
        return ok;
    }
    if (PyComplex_Check(v)) { /* both parts in hex, as a float's */
        PyObject *re = PyFloat_FromDouble(PyComplex_RealAsDouble(v)), *im = PyFloat_FromDouble(PyComplex_ImagAsDouble(v));
        PyObject *rh = re ? PyObject_CallMethod(re, "hex", NULL) : NULL, *ih = im ? PyObject_CallMethod(im, "hex", NULL) : NULL;
        bool ok = rh && ih && text_str(t, "complex ") && text_obj(t, rh) && text_str(t, " ") && text_obj(t, ih);
        Py_XDECREF(re);
        Py_XDECREF(im);
        Py_XDECREF(rh);
        Py_XDECREF(ih);
        return ok;
    }
    if (PyArray_CheckExact(v)) return array_text(t, v);
    if (PyTuple_Check(v)) {
        if (!text_str(t, "tuple(")) return false;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(v); i++)
            if ((i && !text_str(t, ", ")) || !value_text(t, PyTuple_GET_ITEM(v, i))) return false;
        return text_str(t, ")");
    }
    static PyObject *describe;
    if (!describe && !(describe = source_attr("_describe"))) return false;
    PyObject *d = PyObject_CallOneArg(describe, v);
    bool ok = d && text_str(t, "other ") && text_obj(t, d);
    Py_XDECREF(d);
    return ok;
}

/* A default argument: its value as a constant (NumPy scalars as Python's), else as it is */
static bool default_text(Text *t, PyObject *v)
{
    static PyObject *as_const, *not_const;
    if (!as_const && !(as_const = source_attr("_const"))) return false;
    if (!not_const && !(not_const = source_attr("_NOT_CONST"))) return false;
    PyObject *c = PyObject_CallOneArg(as_const, v);
    if (!c) return false;
    bool ok = value_text(t, c == not_const ? v : c);
    Py_DECREF(c);
    return ok;
}

/* ---- the program: the options, the signature, then each function, depth first ---- */

typedef struct Program {
    Text text;
    PyObject *frame;  /* [(file, first line, last line) or None] of each function, in order */
    PyObject **seen;  /* the dispatchers written so far, numbered by their place (held until the text is made, so
                       * that no other object takes an address compared here) */
    int nseen, capseen;
} Program;

/* d's material (file, line offset, source, env, span), its untyped IR made first if need be; NULL with the
 * exception set (the function is not compilable) */
static PyObject *material(PyObject *d)
{
    PyObject *dict = PyObject_GetAttrString(d, "__dict__");
    if (!dict) return NULL;
    PyObject *m = PyDict_GetItemString(dict, "_key_material");
    if (!m) {
        PyObject *u = PyObject_CallMethod(d, "_untyped", NULL);
        Py_XDECREF(u);
        m = u ? PyDict_GetItemString(dict, "_key_material") : NULL;
        if (u && !m) PyErr_SetString(PyExc_KeyError, "_key_material");
    }
    Py_XINCREF(m);
    Py_DECREF(dict);
    if (m && !(PyTuple_Check(m) && PyTuple_GET_SIZE(m) == 5)) {
        Py_DECREF(m);
        PyErr_SetString(PyExc_ValueError, "a dispatcher's key material is not (file, offset, source, env, span)");
        return NULL;
    }
    return m;
}

/* "module.qualname" of a function, as the preimage names it */
static bool function_name(Text *t, PyObject *fn)
{
    PyObject *mod = PyObject_GetAttrString(fn, "__module__");
    if (!mod) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return false;
        PyErr_Clear();
        mod = new_ref(Py_None);
    }
    PyObject *qual = PyObject_GetAttrString(fn, "__qualname__");
    if (!qual && PyErr_ExceptionMatches(PyExc_AttributeError)) {
        PyErr_Clear();
        qual = PyObject_GetAttrString(fn, "__name__");
    }
    bool ok = qual && text_obj(t, mod) && text_str(t, ".") && text_obj(t, qual);
    Py_DECREF(mod);
    Py_XDECREF(qual);
    return ok;
}

static bool function_lines(Program *p, PyObject *d);

static bool defaults_lines(Text *t, PyObject *fn)
{
    PyObject *defs = PyObject_GetAttrString(fn, "__defaults__");
    if (!defs) return false;
    bool ok = text_str(t, "defaults ");
    if (ok && PyTuple_Check(defs))
        for (Py_ssize_t i = 0; ok && i < PyTuple_GET_SIZE(defs); i++)
            ok = (!i || text_str(t, ", ")) && default_text(t, PyTuple_GET_ITEM(defs, i));
    Py_DECREF(defs);
    if (!ok || !text_str(t, "\nkwdefaults ")) return false;
    PyObject *kw = PyObject_GetAttrString(fn, "__kwdefaults__");
    if (!kw) return false;
    PyObject *names = PyDict_Check(kw) ? PyDict_Keys(kw) : PyList_New(0);
    ok = names && PyList_Sort(names) == 0;
    for (Py_ssize_t i = 0; ok && i < PyList_GET_SIZE(names); i++) {
        PyObject *k = PyList_GET_ITEM(names, i);
        ok = (!i || text_str(t, ", ")) && text_obj(t, k) && text_str(t, "=") && default_text(t, PyDict_GetItem(kw, k));
    }
    Py_XDECREF(names);
    Py_DECREF(kw);
    return ok && text_str(t, "\n");
}

/* One free name's line, and for a function called the callee's own block (or "rec #n" for one met before) */
static bool env_line(Program *p, PyObject *var, PyObject *r)
{
    Text *t = &p->text;
    if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) < 1) {
        PyErr_SetString(PyExc_TypeError, "a free name's resolution is not a tuple");
        return false;
    }
    PyObject *kind = PyTuple_GET_ITEM(r, 0), *what = PyTuple_GET_SIZE(r) > 1 ? PyTuple_GET_ITEM(r, 1) : NULL;
    if (!text_str(t, "env ") || !text_obj(t, var) || !text_str(t, " ")) return false;
    bool is_str = PyUnicode_Check(kind);
    if (is_str && what && PyUnicode_CompareWithASCIIString(kind, "const") == 0)
        return text_str(t, "const ") && value_text(t, what) && text_str(t, "\n");
    if (is_str && what && PyUnicode_CompareWithASCIIString(kind, "array") == 0) /* a frozen array */
        return array_text(t, what) && text_str(t, "\n");
    if (is_str && what && (PyUnicode_CompareWithASCIIString(kind, "named") == 0 ||
                           PyUnicode_CompareWithASCIIString(kind, "unsupported") == 0 ||
                           PyUnicode_CompareWithASCIIString(kind, "module") == 0 ||
                           PyUnicode_CompareWithASCIIString(kind, "exception") == 0))
        return text_obj(t, kind) && text_str(t, " ") && text_obj(t, what) && text_str(t, "\n");
    if (is_str && what && PyUnicode_CompareWithASCIIString(kind, "func") == 0) {
        static PyObject *callee_of;
        if (!callee_of) {
            PyObject *mod = PyImport_ImportModule("lorikeet");
            callee_of = mod ? PyObject_GetAttrString(mod, "_callee_dispatcher") : NULL;
            Py_XDECREF(mod);
            if (!callee_of) return false;
        }
        PyObject *callee = PyObject_CallOneArg(callee_of, what);
        if (!callee) return false;
        int seen = -1;
        for (int i = 0; i < p->nseen; i++)
            if (p->seen[i] == callee) seen = i;
        bool ok = seen >= 0 ? text_fmt(t, "func rec #%lld\n", seen)
                            : text_str(t, "func\n") && function_lines(p, callee);
        Py_DECREF(callee); /* seen holds it */
        return ok;
    }
    return text_obj(t, kind) && text_str(t, "\n");
}

static bool function_lines(Program *p, PyObject *d)
{
    Text *t = &p->text;
    if (p->nseen == p->capseen) {
        int cap = p->capseen ? 2 * p->capseen : 8;
        PyObject **seen = PyMem_Realloc(p->seen, (size_t)cap * sizeof *seen);
        if (!seen) {
            PyErr_NoMemory();
            return false;
        }
        p->seen = seen;
        p->capseen = cap;
    }
    int n = p->nseen;
    Py_INCREF(d);
    p->seen[p->nseen++] = d;
    PyObject *fn = PyObject_GetAttrString(d, "py_func");
    if (!fn || !text_fmt(t, "function #%lld ", n) || !function_name(t, fn) || !text_str(t, "\n")) {
        Py_XDECREF(fn);
        return false;
    }
    PyObject *m = material(d);
    if (!m) { /* not compilable: then no code depends on it (typing never reached it) */
        Py_DECREF(fn);
        if (!PyErr_ExceptionMatches(PyExc_Exception)) return false;
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        PyObject *tname = PyObject_GetAttrString(et, "__name__");
        Py_XDECREF(et);
        Py_XDECREF(ev);
        Py_XDECREF(tb);
        bool ok = tname && text_str(t, "unavailable ") && text_obj(t, tname) && text_fmt(t, "\nend #%lld\n", n) &&
                  PyList_Append(p->frame, Py_None) == 0;
        Py_XDECREF(tname);
        return ok;
    }
    PyObject *file = PyTuple_GET_ITEM(m, 0), *source = PyTuple_GET_ITEM(m, 2), *env = PyTuple_GET_ITEM(m, 3);
    PyObject *span = PyTuple_GET_ITEM(m, 4);
    bool ok = PyUnicode_Check(source) && PyDict_Check(env) && PyTuple_Check(span) && PyTuple_GET_SIZE(span) == 2;
    if (!ok) PyErr_SetString(PyExc_TypeError, "a dispatcher's key material has the wrong types");
    PyObject *place = ok ? PyTuple_Pack(3, file, PyTuple_GET_ITEM(span, 0), PyTuple_GET_ITEM(span, 1)) : NULL;
    ok = place && PyList_Append(p->frame, place) == 0;
    Py_XDECREF(place);
    Py_ssize_t len = 0;
    const char *src = ok ? PyUnicode_AsUTF8AndSize(source, &len) : NULL;
    ok = src && text_fmt(t, "source %lld\n", (long long)PyUnicode_GET_LENGTH(source)) && text_add(t, src, (size_t)len) &&
         text_str(t, "\n") && defaults_lines(t, fn);
    PyObject *vars = ok ? PyDict_Keys(env) : NULL;
    ok = vars && PyList_Sort(vars) == 0;
    for (Py_ssize_t i = 0; ok && i < PyList_GET_SIZE(vars); i++) {
        PyObject *var = PyList_GET_ITEM(vars, i);
        ok = env_line(p, var, PyDict_GetItem(env, var));
    }
    Py_XDECREF(vars);
    Py_DECREF(m);
    Py_DECREF(fn);
    return ok && text_fmt(t, "end #%lld\n", n);
}

/* The preimage after the toolchain: options, signature (a list of str), the functions; and the frame */
static bool program_text(LkDispatcher *d, PyObject *signature, Program *p)
{
    *p = (Program){.frame = PyList_New(0)};
    if (!p->frame) return false;
    Text *t = &p->text;
    bool ok = text_fmt(t, "options boundscheck=%lld", d->boundscheck != 0) &&
              text_fmt(t, " fastmath=%lld\nsignature ", d->fastmath != 0);
    PyObject *sig = ok ? PySequence_Fast(signature, "a signature is a list of type names") : NULL;
    for (Py_ssize_t i = 0; sig && ok && i < PySequence_Fast_GET_SIZE(sig); i++)
        ok = (!i || text_str(t, ", ")) && text_obj(t, PySequence_Fast_GET_ITEM(sig, i));
    ok = ok && sig && text_str(t, "\n") && function_lines(p, (PyObject *)d);
    Py_XDECREF(sig);
    for (int i = 0; i < p->nseen; i++) Py_DECREF(p->seen[i]);
    PyMem_Free(p->seen);
    p->seen = NULL;
    if (!ok) {
        PyMem_Free(t->p);
        Py_CLEAR(p->frame);
    }
    return ok;
}

/* ---- the toolchain: everything besides the program that the code depends on ---- */

static PyObject *module_attr(const char *module, const char *name)
{
    PyObject *mod = PyImport_ImportModule(module);
    PyObject *attr = mod ? PyObject_GetAttrString(mod, name) : NULL;
    Py_XDECREF(mod);
    return attr;
}

/* Does the NumPy loaded check a Python int operand of np.where against an integer result dtype (OverflowError:
 * NumPy 2.5) or cast it (wrapping: 2.4)? Asked of NumPy itself once, by the behaviour rather than the version;
 * typespec follows the answer (TsOptions) and the key holds it. */
bool lk_numpy_where_checks_python_ints(void)
{
    static int answer = -1;
    if (answer < 0) {
        PyObject *r = PyRun_String("__import__('numpy').where(__import__('numpy').ones(1, bool), "
                                   "__import__('numpy').zeros(1, __import__('numpy').uint8), -1)",
                                   Py_eval_input, PyEval_GetBuiltins(), NULL);
        answer = !r && PyErr_ExceptionMatches(PyExc_OverflowError);
        if (!r) PyErr_Clear();
        Py_XDECREF(r);
    }
    return answer == 1;
}

static bool put(PyObject *dict, const char *name, PyObject *value)
{
    int r = value ? PyDict_SetItemString(dict, name, value) : -1;
    Py_XDECREF(value);
    return r == 0;
}

/* {name: value} in key order: lorikeet's version and build id, Python's cache tag, NumPy's major version and its
 * np.where rule, the IR pipeline's version, then the backend's key_extras. */
static PyObject *make_toolchain(const char *backend, bool fastmath)
{
    PyObject *tc = PyDict_New();
    if (!tc) return NULL;
    PyObject *impl = PySys_GetObject("implementation"); /* borrowed */
    PyObject *numpy_version = module_attr("numpy", "__version__");
    PyObject *major = numpy_version ? PyObject_CallMethod(numpy_version, "partition", "s", ".") : NULL;
    Py_XDECREF(numpy_version);
    PyObject *id = lk_build_id(NULL, NULL);
    bool ok = put(tc, "lorikeet", module_attr("lorikeet", "__version__")) && id &&
              put(tc, "build", PyUnicode_GET_LENGTH(id) ? new_ref(id) : PyUnicode_FromString("none")) &&
              impl && put(tc, "python", PyObject_GetAttrString(impl, "cache_tag")) && major &&
              put(tc, "numpy", new_ref(PyTuple_GET_ITEM(major, 0))) &&
              put(tc, "numpy_where", PyUnicode_FromString(lk_numpy_where_checks_python_ints() ? "checks" : "wraps")) &&
              put(tc, "pipeline", PyUnicode_FromFormat("%d", IR_PIPELINE_VERSION));
    Py_XDECREF(id);
    Py_XDECREF(major);
    LkDiag diag = {0};
    const BeBackend *be = ok ? be_find(backend, &diag) : NULL;
    BeOptions opts = {.fastmath = fastmath};
    char *extras = be && be->available(&diag) ? be->key_extras(&opts, &diag) : NULL;
    if (ok && !extras) {
        lk_raise_diag(&diag);
        ok = false;
    }
    for (char *item = extras; ok && item && *item;) {
        char *end = strchr(item, ';'), *eq;
        if (end) *end = '\0';
        if ((eq = strchr(item, '='))) *eq = '\0';
        ok = put(tc, item, PyUnicode_FromString(eq ? eq + 1 : ""));
        item = end ? end + 1 : NULL;
    }
    free(extras);
    if (!ok) Py_CLEAR(tc);
    return tc;
}

/* The toolchain of backend's code (a borrowed dict, made once per process and backend: none of it changes while
 * the process runs) */
static PyObject *toolchain(const char *backend, bool fastmath)
{
    static struct { char backend[16]; PyObject *tc[2]; } memo[8];
    int i = 0;
    while (i < 8 && memo[i].backend[0] && strcmp(memo[i].backend, backend) != 0) i++;
    if (i < 8 && memo[i].tc[fastmath]) return memo[i].tc[fastmath];
    PyObject *tc = make_toolchain(backend, fastmath);
    if (tc && i < 8 && strlen(backend) < sizeof memo[i].backend) {
        snprintf(memo[i].backend, sizeof memo[i].backend, "%s", backend);
        memo[i].tc[fastmath] = tc; /* kept for the process */
    }
    return tc; /* (an unknown backend's, never asked twice in practice, is not kept: it is leaked) */
}

/* The store's subfolder for tc's code: backend (and gpu architecture), CPU, LLVM and build, in [A-Za-z0-9._+-] */
static bool generation_text(const char *backend, PyObject *tc, char *out, size_t size)
{
    const char *gpu = NULL, *cpu = "?", *llvm = "?", *lk = NULL, *build = NULL;
    PyObject *v;
    if ((v = PyDict_GetItemString(tc, "gpu"))) gpu = PyUnicode_AsUTF8(v);
    if ((v = PyDict_GetItemString(tc, "cpu"))) cpu = PyUnicode_AsUTF8(v);
    if ((v = PyDict_GetItemString(tc, "llvm"))) llvm = PyUnicode_AsUTF8(v);
    if ((v = PyDict_GetItemString(tc, "lorikeet"))) lk = PyUnicode_AsUTF8(v);
    if ((v = PyDict_GetItemString(tc, "build"))) build = PyUnicode_AsUTF8(v);
    if (!cpu || !llvm || !lk || !build || (PyDict_GetItemString(tc, "gpu") && !gpu)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_KeyError, "a toolchain without lorikeet's version or build");
        return false;
    }
    int n = snprintf(out, size, "%s%s%s-%s-llvm%s-lk%s+%.12s", backend, gpu ? "-" : "", gpu ? gpu : "", cpu, llvm, lk,
                     build);
    if (n < 0 || (size_t)n >= size) {
        PyErr_SetString(PyExc_ValueError, "a cache generation name too long");
        return false;
    }
    for (char *c = out; *c; c++) /* a byte of a non-ASCII character too becomes '_' */
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || strchr("._+-", *c)))
            *c = '_';
    return true;
}

static bool header_text(Text *t, PyObject *tc)
{
    if (!text_fmt(t, "lorikeet-cache %lld\n", LK_KEY_FORMAT)) return false;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(tc, &pos, &k, &v))
        if (!text_obj(t, k) || !text_str(t, " ") || !text_obj(t, v) || !text_str(t, "\n")) return false;
    return true;
}

/* ---- for the compile path (cache_hit.c) ---- */

bool lk_cache_key(LkDispatcher *d, PyObject *signature, LkCacheKey *key)
{
    memset(key, 0, sizeof *key);
    PyObject *tc = toolchain(d->backend, d->fastmath != 0);
    if (!tc || !generation_text(d->backend, tc, key->generation, sizeof key->generation)) return false;
    Program p;
    Text head = {0};
    if (!header_text(&head, tc) || !program_text(d, signature, &p)) {
        PyMem_Free(head.p);
        return false;
    }
    bool ok = text_add(&head, p.text.p, p.text.n);
    PyMem_Free(p.text.p);
    key->preimage = ok ? PyBytes_FromStringAndSize(head.p, (Py_ssize_t)head.n) : NULL;
    PyMem_Free(head.p);
    key->frame = p.frame;
    if (!key->preimage) {
        Py_CLEAR(key->frame);
        return false;
    }
    unsigned char digest[IR_HASH_BYTES];
    ir_sha256(PyBytes_AS_STRING(key->preimage), (size_t)PyBytes_GET_SIZE(key->preimage), digest);
    ir_hash_hex(digest, key->digest);
    return true;
}

void lk_cache_key_clear(LkCacheKey *key)
{
    Py_CLEAR(key->preimage);
    Py_CLEAR(key->frame);
}

/* ---- for lorikeet/_key.py ---- */

/* cache_toolchain(backend, fastmath) -> the toolchain dict (the process's own: do not change it) */
PyObject *lk_py_cache_toolchain(PyObject *self, PyObject *args)
{
    const char *backend;
    int fastmath = 0;
    if (!PyArg_ParseTuple(args, "s|p", &backend, &fastmath)) return NULL;
    return new_ref(toolchain(backend, fastmath != 0));
}

/* cache_program(dispatcher, signature) -> (the preimage's program part as bytes, frame) */
PyObject *lk_py_cache_program(PyObject *self, PyObject *args)
{
    PyObject *d, *signature;
    if (!PyArg_ParseTuple(args, "OO", &d, &signature)) return NULL;
    if (!PyObject_TypeCheck(d, lk_dispatcher_type)) return PyErr_Format(PyExc_TypeError, "not a dispatcher");
    Program p;
    if (!program_text((LkDispatcher *)d, signature, &p)) return NULL;
    PyObject *r = Py_BuildValue("(y#N)", p.text.p, (Py_ssize_t)p.text.n, p.frame);
    PyMem_Free(p.text.p);
    return r;
}

/* cache_key(dispatcher, signature) -> (digest, preimage, generation), made as the compile path's lookup makes it */
PyObject *lk_py_cache_key(PyObject *self, PyObject *args)
{
    PyObject *d, *signature;
    if (!PyArg_ParseTuple(args, "OO", &d, &signature)) return NULL;
    if (!PyObject_TypeCheck(d, lk_dispatcher_type)) return PyErr_Format(PyExc_TypeError, "not a dispatcher");
    LkCacheKey key;
    if (!lk_cache_key((LkDispatcher *)d, signature, &key)) return NULL;
    PyObject *r = Py_BuildValue("(sOs)", key.digest, key.preimage, key.generation);
    lk_cache_key_clear(&key);
    return r;
}

/* cache_header(toolchain) -> the preimage's first lines (the format and one line per toolchain entry), bytes */
PyObject *lk_py_cache_header(PyObject *self, PyObject *tc)
{
    if (!PyDict_Check(tc)) return PyErr_Format(PyExc_TypeError, "a toolchain is a dict");
    Text t = {0};
    PyObject *r = header_text(&t, tc) ? PyBytes_FromStringAndSize(t.p, (Py_ssize_t)t.n) : NULL;
    PyMem_Free(t.p);
    return r;
}

/* cache_generation(backend, toolchain) -> the store's subfolder name for that toolchain's code */
PyObject *lk_py_cache_generation(PyObject *self, PyObject *args)
{
    const char *backend;
    PyObject *tc;
    char out[LK_GENERATION_CHARS];
    if (!PyArg_ParseTuple(args, "sO!", &backend, &PyDict_Type, &tc)) return NULL;
    if (!generation_text(backend, tc, out, sizeof out)) return NULL;
    return PyUnicode_FromString(out);
}

int lk_cache_key_module_init(PyObject *m)
{
    return PyModule_AddIntConstant(m, "key_format", LK_KEY_FORMAT);
}
