/* SPDX-License-Identifier: Apache-2.0 */
/* hutch._hutch: errors, images, and the module itself. */
#include "hutchpy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static PyObject *Error;
PyObject *HpyPausedError;
/* errno -> the subclass raised for it; anything else raises Error itself. */
static struct {
  int errnum;
  const char *name;
  PyObject **base; /* the builtin OSError subclass it also derives from */
  PyObject *type;
} subclasses[] = {
    {ENOENT, "NotFoundError", &PyExc_FileNotFoundError, NULL},
    {EEXIST, "ExistsError", &PyExc_FileExistsError, NULL},
    {EPERM, "PermissionDenied", &PyExc_PermissionError, NULL},
    {EACCES, NULL, NULL, NULL}, /* raised as PermissionDenied */
    {ETIMEDOUT, "TimeoutError", &PyExc_TimeoutError, NULL},
    {EFBIG, "TooLargeError", NULL, NULL},
    {EINVAL, "InvalidArgument", &PyExc_ValueError, NULL},
};
#define N_SUB (sizeof(subclasses) / sizeof(subclasses[0]))

static PyObject *error_type(int errnum) {
  if (errnum == EACCES)
    errnum = EPERM;
  for (size_t i = 0; i < N_SUB; i++)
    if (subclasses[i].errnum == errnum && subclasses[i].type)
      return subclasses[i].type;
  return Error;
}

/* The runtime's text as a Python caller reads it: hutch._errors.pythonize
 * spells the command's options as this package's arguments (--no-cgroups:
 * no_cgroups=True).  The text as it is when that cannot be done. */
static PyObject *pythonized(const char *text) {
  PyObject *s = PyUnicode_DecodeUTF8(text, strlen(text), "replace");
  if (s == NULL)
    return NULL;
  PyObject *mod = PyImport_ImportModule("hutch._errors");
  PyObject *out = mod ? PyObject_CallMethod(mod, "pythonize", "O", s) : NULL;
  Py_XDECREF(mod);
  if (out != NULL && PyUnicode_Check(out)) {
    Py_DECREF(s);
    return out;
  }
  Py_XDECREF(out);
  PyErr_Clear();
  return s;
}

static PyObject *raise_as(PyObject *type, int errnum, const char *msg, const char *hint) {
  char *text = errnum ? hutch_errno_format(errnum, "%s", msg) : strdup(msg);
  PyObject *t = pythonized(text ? text : msg);
  free(text);
  PyObject *exc = t ? PyObject_CallFunctionObjArgs(type, t, NULL) : NULL;
  Py_XDECREF(t);
  if (exc == NULL)
    return NULL;
  PyObject *e = errnum ? PyLong_FromLong(errnum) : Py_NewRef(Py_None);
  PyObject *m = pythonized(msg);
  PyObject *h = hint ? pythonized(hint) : Py_NewRef(Py_None);
  if (e && m && h && PyObject_SetAttrString(exc, "errno", e) == 0 && PyObject_SetAttrString(exc, "message", m) == 0 &&
      PyObject_SetAttrString(exc, "hint", h) == 0)
    PyErr_SetObject(type, exc);
  Py_XDECREF(e);
  Py_XDECREF(m);
  Py_XDECREF(h);
  Py_DECREF(exc);
  return NULL;
}

PyObject *hpy_raise_errno(int errnum, const char *msg, const char *hint) {
  return raise_as(error_type(errnum), errnum, msg, hint);
}

PyObject *hpy_raise_as(PyObject *type, hutch_error_t *err) {
  if (*err == NULL)
    return hpy_raise_errno(0, "hutch: unknown error", NULL);
  raise_as(type, (*err)->errnum, (*err)->msg ? (*err)->msg : "hutch error", (*err)->hint);
  hutch_error_free(err);
  return NULL;
}

PyObject *hpy_raise(hutch_error_t *err) {
  return hpy_raise_as(error_type(*err ? (*err)->errnum : 0), err);
}

int hpy_strv(PyObject *seq, const char ***out, const char *what) {
  *out = NULL;
  if (seq == NULL || seq == Py_None)
    return 0;
  PyObject *fast = PySequence_Fast(seq, what);
  if (fast == NULL)
    return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  const char **v = calloc((size_t)n + 1, sizeof(*v));
  if (v == NULL) {
    Py_DECREF(fast);
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *item = PySequence_Fast_GET_ITEM(fast, i);
    Py_ssize_t len = 0;
    v[i] = PyUnicode_Check(item) ? PyUnicode_AsUTF8AndSize(item, &len) : NULL;
    if (v[i] == NULL || strlen(v[i]) != (size_t)len) {
      if (!PyErr_Occurred())
        PyErr_Format(PyExc_TypeError, "%s: every item must be a str without NUL", what);
      free(v);
      Py_DECREF(fast);
      return -1;
    }
  }
  /* The items stay alive in seq, which the caller holds. */
  Py_DECREF(fast);
  *out = v;
  return 0;
}

double hpy_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

PyObject *hpy_usage_dict(const struct hutch_usage *u) {
  return Py_BuildValue("{s:O,s:K,s:K,s:K,s:K,s:K,s:K}", "oom_killed", u->oom_killed ? Py_True : Py_False, "oom_kills",
                       (unsigned long long)u->oom_kills, "memory_max", (unsigned long long)u->memory_max, "memory_peak",
                       (unsigned long long)u->memory_peak, "cpu_usec", (unsigned long long)u->cpu_usec, "nr_throttled",
                       (unsigned long long)u->nr_throttled, "throttled_usec", (unsigned long long)u->throttled_usec);
}

static PyObject *strv_list(char **v) {
  PyObject *l = PyList_New(0);
  for (size_t i = 0; l && v && v[i]; i++) {
    PyObject *s = PyUnicode_DecodeUTF8(v[i], strlen(v[i]), "surrogateescape");
    if (s == NULL || PyList_Append(l, s) < 0) {
      Py_XDECREF(s);
      Py_CLEAR(l);
      break;
    }
    Py_DECREF(s);
  }
  return l;
}

static PyObject *image_dict(const struct hutch_image *im) {
  PyObject *env = strv_list(im->env), *lowers = strv_list(im->lowers);
  PyObject *d = NULL;
  if (env && lowers)
    d = Py_BuildValue("{s:z,s:s,s:s,s:K,s:L,s:O,s:O,s:z,s:z,s:O}", "name", im->name, "digest", im->digest, "rootfs",
                      im->rootfs, "size", (unsigned long long)im->size, "created", (long long)im->created,
                      "ids_preserved", im->ids_preserved ? Py_True : Py_False, "env", env, "workdir", im->workdir,
                      "user", im->user, "lowers", lowers);
  Py_XDECREF(env);
  Py_XDECREF(lowers);
  return d;
}

/* One operation on an image store, run without the GIL: the store at
 * `store` (NULL: the default) is opened, used and closed. */
struct store_call {
  const char *store;
  const char *name; /* the image's name, digest, file or reference */
  const char *new_name;
  const char *arch;
  struct hutch_image image;
  struct hutch_image *images;
  size_t n;
};
typedef int (*store_op)(struct hutch_store *store, struct store_call *c, hutch_error_t *err);

static PyObject *on_store(struct store_call *c, store_op op) {
  hutch_error_t err = NULL;
  struct hutch_store *store = NULL;
  int r;
  Py_BEGIN_ALLOW_THREADS;
  r = hutch_store_open(c->store, &store, &err);
  if (r >= 0)
    r = op(store, c, &err);
  hutch_store_close(store);
  Py_END_ALLOW_THREADS;
  if (r < 0)
    return hpy_raise(&err);
  Py_RETURN_NONE;
}

/* on_store() for an operation that fills c->image: its dict. */
static PyObject *on_store_image(struct store_call *c, store_op op) {
  PyObject *r = on_store(c, op);
  if (r == NULL)
    return NULL;
  Py_DECREF(r);
  PyObject *d = image_dict(&c->image);
  hutch_image_clear(&c->image);
  return d;
}

static int op_list(struct hutch_store *store, struct store_call *c, hutch_error_t *err) {
  return hutch_image_list(store, &c->images, &c->n, err);
}
static int op_lookup(struct hutch_store *store, struct store_call *c, hutch_error_t *err) {
  return hutch_image_lookup(store, c->name, &c->image, err);
}
static int op_import(struct hutch_store *store, struct store_call *c, hutch_error_t *err) {
  struct hutch_import_options opts = {.name = c->new_name};
  return hutch_image_import(store, c->name, &opts, &c->image, err);
}
static int op_pull(struct hutch_store *store, struct store_call *c, hutch_error_t *err) {
  struct hutch_pull_options opts = {.name = c->new_name, .arch = c->arch};
  return hutch_image_pull(store, c->name, &opts, &c->image, err);
}
static int op_remove(struct hutch_store *store, struct store_call *c, hutch_error_t *err) {
  return hutch_image_remove(store, c->name, err);
}

static PyObject *py_images(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"store", NULL};
  struct store_call c = {0};
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|z", kwlist, &c.store))
    return NULL;
  PyObject *r = on_store(&c, op_list);
  if (r == NULL)
    return NULL;
  Py_DECREF(r);
  PyObject *l = PyList_New(0);
  for (size_t i = 0; l && i < c.n; i++) {
    PyObject *d = image_dict(&c.images[i]);
    if (d == NULL || PyList_Append(l, d) < 0)
      Py_CLEAR(l);
    Py_XDECREF(d);
  }
  hutch_image_list_free(c.images, c.n);
  return l;
}

static PyObject *py_image(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"name", "store", NULL};
  struct store_call c = {0};
  if (!PyArg_ParseTupleAndKeywords(args, kw, "s|z", kwlist, &c.name, &c.store))
    return NULL;
  return on_store_image(&c, op_lookup);
}

static PyObject *py_import_image(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"path", "name", "store", NULL};
  struct store_call c = {0};
  if (!PyArg_ParseTupleAndKeywords(args, kw, "s|zz", kwlist, &c.name, &c.new_name, &c.store))
    return NULL;
  return on_store_image(&c, op_import);
}

static PyObject *py_pull(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"ref", "name", "arch", "store", NULL};
  struct store_call c = {0};
  if (!PyArg_ParseTupleAndKeywords(args, kw, "s|zzz", kwlist, &c.name, &c.new_name, &c.arch, &c.store))
    return NULL;
  return on_store_image(&c, op_pull);
}

static PyObject *py_remove_image(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"name", "store", NULL};
  struct store_call c = {0};
  if (!PyArg_ParseTupleAndKeywords(args, kw, "s|z", kwlist, &c.name, &c.store))
    return NULL;
  return on_store(&c, op_remove);
}

static PyObject *py_parse_size(PyObject *self, PyObject *arg) {
  const char *s = PyUnicode_AsUTF8(arg);
  if (s == NULL)
    return NULL;
  uint64_t v;
  if (!hutch_parse_size(s, &v))
    return PyErr_Format(PyExc_ValueError, "not a size: '%s' (e.g. 512M, 2G, 1.5GiB)", s);
  return PyLong_FromUnsignedLongLong(v);
}

static PyObject *py_check_host_path(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"path", "writable", "store", "state_dir", NULL};
  const char *path, *store = NULL, *state_dir = NULL;
  int writable = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "s|pzz", kwlist, &path, &writable, &store, &state_dir))
    return NULL;
  hutch_error_t err = NULL;
  int r;
  Py_BEGIN_ALLOW_THREADS;
  r = hutch_check_host_path(path, writable, store, state_dir, NULL, &err);
  Py_END_ALLOW_THREADS;
  if (r < 0)
    return hpy_raise(&err);
  Py_RETURN_NONE;
}

/* The policy a sandbox takes when none is named, as hutch_policy_load
 * finds it ($HUTCH_POLICY, the administrator's, the installed one): its
 * path once it has loaded; raises as loading it does. */
static PyObject *py_default_policy_path(PyObject *self, PyObject *unused) {
  hutch_error_t err = NULL;
  struct hutch_policy *policy = NULL;
  int r;
  Py_BEGIN_ALLOW_THREADS;
  r = hutch_policy_load(NULL, &policy, &err);
  Py_END_ALLOW_THREADS;
  if (r < 0)
    return hpy_raise(&err);
  const char *p = hutch_policy_path(policy);
  PyObject *s = PyUnicode_DecodeFSDefault(p ? p : "");
  hutch_policy_free(policy);
  return s;
}

/* hutch_set_init_program: the hutch-init of the build tree this package
 * was built from (hutch/_paths.py decides). */
static PyObject *py_set_init_program(PyObject *self, PyObject *arg) {
  PyObject *bytes = NULL;
  if (arg != Py_None && !PyUnicode_FSConverter(arg, &bytes))
    return NULL;
  hutch_error_t err = NULL;
  int r = hutch_set_init_program(bytes ? PyBytes_AS_STRING(bytes) : NULL, &err);
  Py_XDECREF(bytes);
  if (r < 0)
    return hpy_raise(&err);
  Py_RETURN_NONE;
}

/* The live sandboxes (hutch ps), those matching every filter (hutch ps
 * --filter) when there are any. */
static PyObject *py_sandboxes(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"state_dir", "filters", NULL};
  const char *state_dir = NULL;
  PyObject *filters_o = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|zO", kwlist, &state_dir, &filters_o))
    return NULL;
  const char **filters = NULL;
  if (hpy_strv(filters_o, &filters, "filters") < 0)
    return NULL;
  hutch_error_t err = NULL;
  for (const char **f = filters; f && *f; f++)
    if (hutch_sandbox_filter_check(*f, &err) < 0) {
      free(filters);
      return hpy_raise(&err);
    }
  struct hutch_sandbox_status *st = NULL;
  size_t n = 0;
  int r;
  Py_BEGIN_ALLOW_THREADS;
  r = hutch_sandbox_list_status(state_dir, &st, &n, &err);
  Py_END_ALLOW_THREADS;
  if (r < 0) {
    free(filters);
    return hpy_raise(&err);
  }
  PyObject *l = PyList_New(0);
  for (size_t i = 0; l && i < n; i++) {
    if (filters && !hutch_sandbox_status_matches(&st[i], filters))
      continue;
    PyObject *d = hpy_status_dict(&st[i]);
    if (d == NULL || PyList_Append(l, d) < 0)
      Py_CLEAR(l);
    Py_XDECREF(d);
  }
  hutch_sandbox_status_free(st, n);
  free(filters);
  return l;
}

/* Removes a sandbox by id, killing what still runs in it (`hutch rm`): the
 * reaper's call for the sandboxes of a program that was killed. */
static PyObject *py_remove_sandbox(PyObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"id", "state_dir", NULL};
  const char *id, *state_dir = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "s|z", kwlist, &id, &state_dir))
    return NULL;
  hutch_error_t err = NULL;
  int r;
  Py_BEGIN_ALLOW_THREADS;
  r = hutch_sandbox_remove(state_dir, id, &err);
  Py_END_ALLOW_THREADS;
  if (r < 0)
    return hpy_raise(&err);
  Py_RETURN_NONE;
}

/* The library's log goes to a Python callable (hutch routes it to the
 * logging module).  Lines logged by a process hutch forked (a sandbox's
 * init before its exec) or after the interpreter has begun to exit go to
 * stderr, as the library's default does: no Python code runs there. */
static PyObject *log_callable;
static pid_t log_pid;

static void log_to_python(enum hutch_log_level level, const char *line, void *data) {
  if (getpid() != log_pid || !Py_IsInitialized() || _Py_IsFinalizing()) {
    fprintf(stderr, "hutch: %s%s\n", hutch_log_level_prefix(level), line);
    return;
  }
  PyGILState_STATE g = PyGILState_Ensure();
  if (log_callable) {
    PyObject *r = PyObject_CallFunction(log_callable, "is", (int)level, line);
    if (r == NULL)
      PyErr_WriteUnraisable(log_callable);
    Py_XDECREF(r);
  }
  PyGILState_Release(g);
}

static PyObject *py_set_log_handler(PyObject *self, PyObject *fn) {
  if (fn != Py_None && !PyCallable_Check(fn))
    return PyErr_Format(PyExc_TypeError, "set_log_handler: a callable(level, line) or None");
  Py_XSETREF(log_callable, fn == Py_None ? NULL : Py_NewRef(fn));
  log_pid = getpid();
  hutch_set_log_handler(log_callable ? log_to_python : NULL, NULL);
  Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"set_log_handler", py_set_log_handler, METH_O,
     "set_log_handler(fn): the library's log lines go to fn(level, line); None: to stderr."},
    {"images", (PyCFunction)(void (*)(void))py_images, METH_VARARGS | METH_KEYWORDS,
     "images(store=None) -> list of dict: the images in the store."},
    {"image", (PyCFunction)(void (*)(void))py_image, METH_VARARGS | METH_KEYWORDS,
     "image(name, store=None) -> dict: one image by name or digest."},
    {"sandboxes", (PyCFunction)(void (*)(void))py_sandboxes, METH_VARARGS | METH_KEYWORDS,
     "sandboxes(state_dir=None, filters=None) -> list of dict: the live sandboxes (hutch ps), those matching every "
     "filter (hutch ps --filter)."},
    {"import_image", (PyCFunction)(void (*)(void))py_import_image, METH_VARARGS | METH_KEYWORDS,
     "import_image(path, name=None, store=None) -> dict: a rootfs tarball, docker save archive or OCI layout."},
    {"pull", (PyCFunction)(void (*)(void))py_pull, METH_VARARGS | METH_KEYWORDS,
     "pull(ref, name=None, arch=None, store=None) -> dict: a manifest's image or docker://NAME[:TAG]."},
    {"remove_sandbox", (PyCFunction)(void (*)(void))py_remove_sandbox, METH_VARARGS | METH_KEYWORDS,
     "remove_sandbox(id, state_dir=None): remove a sandbox, killing what runs in it."},
    {"remove_image", (PyCFunction)(void (*)(void))py_remove_image, METH_VARARGS | METH_KEYWORDS,
     "remove_image(name, store=None): remove an image from the store."},
    {"default_policy_path", py_default_policy_path, METH_NOARGS,
     "default_policy_path() -> str: the policy a sandbox takes when none is named; raises when it cannot be "
     "loaded."},
    {"set_init_program", py_set_init_program, METH_O,
     "set_init_program(path or None): the hutch-init program long-lived sandboxes' init becomes (a build tree's)."},
    {"parse_size", py_parse_size, METH_O, "parse_size(str) -> int: '512M', '2G', '1.5GiB' in bytes."},
    {"check_host_path", (PyCFunction)(void (*)(void))py_check_host_path, METH_VARARGS | METH_KEYWORDS,
     "check_host_path(path, writable=False, store=None, state_dir=None): raises when sandbox content may not "
     "reach this host path."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "hutch._hutch",
                                    "The hutch runtime library (hutch.h) for Python; use the hutch package.", -1,
                                    methods};

static int add_errors(PyObject *m) {
  Error = PyErr_NewExceptionWithDoc("hutch.Error",
                                    "A failure of the hutch runtime: .errno (or None), .message (the failed step) "
                                    "and .hint (how to fix it, or None).",
                                    NULL, NULL);
  if (Error == NULL || PyModule_AddObjectRef(m, "Error", Error) < 0)
    return -1;
  for (size_t i = 0; i < N_SUB; i++) {
    if (subclasses[i].name == NULL)
      continue;
    PyObject *bases = subclasses[i].base ? PyTuple_Pack(2, Error, *subclasses[i].base) : PyTuple_Pack(1, Error);
    if (bases == NULL)
      return -1;
    char full[64];
    snprintf(full, sizeof(full), "hutch.%s", subclasses[i].name);
    subclasses[i].type = PyErr_NewException(full, bases, NULL);
    Py_DECREF(bases);
    if (subclasses[i].type == NULL || PyModule_AddObjectRef(m, subclasses[i].name, subclasses[i].type) < 0)
      return -1;
  }
  /* Raised by errno EAGAIN only when the sandbox is paused (live.c). */
  HpyPausedError = PyErr_NewExceptionWithDoc(
      "hutch.PausedError", "The sandbox is paused: it runs nothing until resume() (errno EAGAIN).", Error, NULL);
  if (HpyPausedError == NULL || PyModule_AddObjectRef(m, "PausedError", HpyPausedError) < 0)
    return -1;
  return 0;
}

PyMODINIT_FUNC PyInit__hutch(void) {
  if (PyType_Ready(&HpySandboxType) < 0 || PyType_Ready(&HpyProcType) < 0)
    return NULL;
  PyObject *m = PyModule_Create(&moddef);
  if (m == NULL)
    return NULL;
  if (add_errors(m) < 0 || PyModule_AddObjectRef(m, "Sandbox", (PyObject *)&HpySandboxType) < 0 ||
      PyModule_AddObjectRef(m, "Proc", (PyObject *)&HpyProcType) < 0 ||
      PyModule_AddIntConstant(m, "NET_NONE", HUTCH_NET_NONE) < 0 ||
      PyModule_AddIntConstant(m, "NET_PROXY", HUTCH_NET_PROXY) < 0 ||
      PyModule_AddIntConstant(m, "FORK_MAX", HUTCH_FORK_MAX) < 0 ||
      PyModule_AddIntConstant(m, "LOG_DEBUG", HUTCH_LOG_DEBUG) < 0 ||
      PyModule_AddIntConstant(m, "LOG_INFO", HUTCH_LOG_INFO) < 0 ||
      PyModule_AddIntConstant(m, "LOG_NOTICE", HUTCH_LOG_NOTICE) < 0 ||
      PyModule_AddIntConstant(m, "LOG_WARNING", HUTCH_LOG_WARNING) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
