/* SPDX-License-Identifier: Apache-2.0 */
/* hutch._hutch.Sandbox: a long-lived sandbox (hutch_sandbox_*), its
 * processes and its files.  Every call that may block runs without the GIL
 * and under the handle's mutex, so one handle serves several threads. */
#include "hutchpy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_READ_MAX ((size_t)64 << 20)

static PyObject *closed_error(void) {
  return hpy_raise_errno(EBADF, "sandbox: the handle is closed", NULL);
}

static PyObject *sb_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  HpySandbox *self = (HpySandbox *)type->tp_alloc(type, 0);
  if (self)
    pthread_mutex_init(&self->lock, NULL);
  return (PyObject *)self;
}

HpySandbox *hpy_sandbox_alloc(void) {
  return (HpySandbox *)sb_new(&HpySandboxType, NULL, NULL);
}

struct create_args {
  const char *image, *policy, *store, *state_dir, *hostname, *workdir, *net_policy, *name, *user;
  const char **allow, **env, **resolve, **labels, **devices;
  struct hutch_bind *binds;
  size_t n_binds;
  struct hutch_port *ports;
  size_t n_ports;
  double ttl;
  int on_ttl;
  struct hutch_limits limits;
  int net;
  bool keep, read_only;
};

/* Policy, store, image, then the sandbox: what `hutch create` does (its
 * name and labels checked first, so a bad one loads nothing). */
static int create_sandbox(const struct create_args *a, struct hutch_sandbox **out, hutch_error_t *err) {
  struct hutch_policy *policy = NULL;
  struct hutch_store *store = NULL;
  struct hutch_image image = {0};
  char **env = NULL;
  struct hutch_sandbox_extras x = {.name = a->name,
                                   .labels = a->labels,
                                   .ttl = a->ttl,
                                   .on_ttl = a->on_ttl ? HUTCH_TTL_PAUSE : HUTCH_TTL_REMOVE,
                                   .ports = a->ports,
                                   .n_ports = a->n_ports,
                                   .devices = a->devices,
                                   .user = a->user};
  int r = hutch_sandbox_extras_check(&x, err);
  if (r >= 0)
    r = hutch_policy_load(a->policy, &policy, err);
  if (r >= 0)
    r = hutch_store_open(a->store, &store, err);
  if (r >= 0)
    r = hutch_image_lookup(store, a->image ? a->image : "default", &image, err);
  if (r >= 0) {
    hutch_image_user_notice(&image);
    env = hutch_image_env(&image, a->env);
    struct hutch_sandbox_config cfg = {
        .rootfs = image.rootfs,
        .rootfs_lowers = (const char *const *)image.lowers,
        .image = image.name ? image.name : image.digest,
        .workdir = a->workdir ? a->workdir : image.workdir,
        .rootfs_subordinate_ids = image.ids_preserved,
        .policy = policy,
        .hostname = a->hostname,
        .env = (const char *const *)env,
        .binds = a->binds,
        .n_binds = a->n_binds,
        .keep = a->keep,
        .read_only_root = a->read_only,
        .state_dir = a->state_dir,
        .store = a->store,
        .limits = a->limits,
        .net = a->net ? HUTCH_NET_PROXY : HUTCH_NET_NONE,
        .net_allow = a->allow,
        .net_policy = a->net_policy,
        .net_resolve = a->resolve,
    };
    r = hutch_sandbox_create_with(&cfg, &x, out, err);
  }
  if (env)
    for (char **e = env; *e; e++)
      free(*e);
  free(env);
  hutch_image_clear(&image);
  hutch_store_close(store);
  hutch_policy_free(policy);
  return r;
}

static int parse_binds(PyObject *seq, struct create_args *a) {
  if (seq == NULL || seq == Py_None)
    return 0;
  PyObject *fast = PySequence_Fast(seq, "binds must be a sequence of (source, dest, readonly)");
  if (fast == NULL)
    return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  a->binds = calloc((size_t)n + 1, sizeof(*a->binds));
  if (a->binds == NULL) {
    Py_DECREF(fast);
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    const char *src, *dst;
    int ro = 0;
    if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fast, i), "ss|p;a bind is (source, dest, readonly)", &src, &dst,
                          &ro)) {
      Py_DECREF(fast);
      return -1;
    }
    a->binds[i] = (struct hutch_bind){.source = src, .dest = dst, .readonly = ro};
  }
  a->n_binds = (size_t)n;
  Py_DECREF(fast);
  return 0;
}

static int sb_init(HpySandbox *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"image",   "policy", "store",   "state_dir",  "hostname",  "workdir", "memory",
                           "cpus",    "pids",   "net",     "allow",      "env",       "binds",   "net_policy",
                           "resolve", "keep",   "disk",    "no_cgroups", "name",      "labels",  "ttl",
                           "on_ttl",  "ports",  "devices", "user",       "read_only", NULL};
  struct create_args a = {0};
  PyObject *allow = NULL, *env = NULL, *binds = NULL, *resolve = NULL, *labels = NULL, *ports = NULL, *devices = NULL;
  unsigned long long memory = 0, pids = 0, disk = 0;
  double cpus = 0;
  int keep = 0, no_cgroups = 0, read_only = 0;
  if (self->sb) {
    PyErr_SetString(PyExc_RuntimeError, "Sandbox is already open");
    return -1;
  }
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|zzzzzzKdKiOOOzOpKpzOdpOOzp", kwlist, &a.image, &a.policy, &a.store,
                                   &a.state_dir, &a.hostname, &a.workdir, &memory, &cpus, &pids, &a.net, &allow, &env,
                                   &binds, &a.net_policy, &resolve, &keep, &disk, &no_cgroups, &a.name, &labels, &a.ttl,
                                   &a.on_ttl, &ports, &devices, &a.user, &read_only))
    return -1;
  a.limits.memory = memory;
  a.limits.cpus = cpus;
  a.limits.pids = pids;
  a.limits.disk = disk;
  a.limits.no_cgroups = no_cgroups;
  a.keep = keep;
  a.read_only = read_only;
  int r = -1;
  if (hpy_strv(allow, &a.allow, "allow") < 0 || hpy_strv(env, &a.env, "env") < 0 ||
      hpy_strv(resolve, &a.resolve, "resolve") < 0 || hpy_strv(labels, &a.labels, "labels") < 0 ||
      hpy_strv(devices, &a.devices, "devices") < 0 || hpy_ports(ports, &a.ports, &a.n_ports) < 0 ||
      parse_binds(binds, &a) < 0)
    goto out;
  free(self->state_dir);
  self->state_dir = NULL;
  if (a.state_dir && (self->state_dir = strdup(a.state_dir)) == NULL) {
    PyErr_NoMemory();
    goto out;
  }
  hutch_error_t err = NULL;
  struct hutch_sandbox *sb = NULL;
  Py_BEGIN_ALLOW_THREADS;
  r = create_sandbox(&a, &sb, &err);
  Py_END_ALLOW_THREADS;
  if (r < 0) {
    hpy_raise(&err);
    goto out;
  }
  self->sb = sb;
  self->owned = true;
  snprintf(self->id, sizeof(self->id), "%s", hutch_sandbox_id(sb));
out:
  free(a.allow);
  free(a.env);
  free(a.resolve);
  free(a.labels);
  free(a.devices);
  free(a.ports);
  free(a.binds);
  return r < 0 ? -1 : 0;
}

static PyObject *sb_attach(PyObject *cls, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"id", "state_dir", NULL};
  const char *id, *state_dir = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "s|z", kwlist, &id, &state_dir))
    return NULL;
  hutch_error_t err = NULL;
  struct hutch_sandbox *sb = NULL;
  int r;
  Py_BEGIN_ALLOW_THREADS;
  r = hutch_sandbox_open(state_dir, id, &sb, &err);
  Py_END_ALLOW_THREADS;
  if (r < 0)
    return hpy_raise(&err);
  HpySandbox *self = (HpySandbox *)sb_new((PyTypeObject *)cls, NULL, NULL);
  if (self == NULL) {
    hutch_sandbox_close(sb);
    return NULL;
  }
  self->sb = sb;
  self->owned = false;
  snprintf(self->id, sizeof(self->id), "%s", hutch_sandbox_id(sb));
  if (state_dir && (self->state_dir = strdup(state_dir)) == NULL) {
    Py_DECREF(self);
    return PyErr_NoMemory();
  }
  return (PyObject *)self;
}

/* Ends the handle: destroys a sandbox made here (or when `destroy`), else
 * only lets go of it.  Called without the GIL. */
static int sb_release(HpySandbox *self, bool destroy, hutch_error_t *err) {
  pthread_mutex_lock(&self->lock);
  struct hutch_sandbox *sb = self->sb;
  self->sb = NULL;
  int r = 0;
  if (sb && (destroy || self->owned))
    r = hutch_sandbox_destroy(sb, err);
  else if (sb)
    hutch_sandbox_close(sb);
  pthread_mutex_unlock(&self->lock);
  return r;
}

static PyObject *sb_close(HpySandbox *self, PyObject *unused) {
  hutch_error_t err = NULL;
  int r;
  Py_BEGIN_ALLOW_THREADS;
  r = sb_release(self, false, &err);
  Py_END_ALLOW_THREADS;
  if (r < 0)
    return hpy_raise(&err);
  Py_RETURN_NONE;
}

static PyObject *sb_destroy(HpySandbox *self, PyObject *unused) {
  hutch_error_t err = NULL;
  int r;
  Py_BEGIN_ALLOW_THREADS;
  r = sb_release(self, true, &err);
  Py_END_ALLOW_THREADS;
  if (r < 0)
    return hpy_raise(&err);
  Py_RETURN_NONE;
}

static void sb_dealloc(HpySandbox *self) {
  if (self->sb) {
    hutch_error_t err = NULL;
    Py_BEGIN_ALLOW_THREADS;
    if (sb_release(self, false, &err) < 0)
      hutch_error_free(&err);
    Py_END_ALLOW_THREADS;
  }
  pthread_mutex_destroy(&self->lock);
  free(self->state_dir);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static int stdio_spec(PyObject *o, struct hutch_stdio *out) {
  if (o == NULL || o == Py_None || o == Py_False)
    *out = (struct hutch_stdio){.kind = HUTCH_STDIO_NULL};
  else if (o == Py_True)
    *out = (struct hutch_stdio){.kind = HUTCH_STDIO_PIPE};
  else if (PyLong_Check(o)) {
    long fd = PyLong_AsLong(o);
    if (fd < 0 || fd > INT32_MAX) {
      PyErr_SetString(PyExc_ValueError, "a stdio fd must be >= 0");
      return -1;
    }
    *out = (struct hutch_stdio){.kind = HUTCH_STDIO_FD, .fd = (int)fd};
  } else {
    PyErr_SetString(PyExc_TypeError, "stdio: None (/dev/null), True (a pipe) or an fd");
    return -1;
  }
  return 0;
}

static PyObject *sb_spawn(HpySandbox *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"argv", "env", "cwd", "stdin", "stdout", "stderr", NULL};
  PyObject *argv_o, *env_o = NULL, *io[3] = {NULL, NULL, NULL};
  const char *cwd = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OzOOO", kwlist, &argv_o, &env_o, &cwd, &io[0], &io[1], &io[2]))
    return NULL;
  struct hutch_spawn spec = {.workdir = cwd};
  for (int i = 0; i < 3; i++)
    if (stdio_spec(io[i], &spec.stdio[i]) < 0)
      return NULL;
  const char **argv = NULL, **env = NULL;
  if (hpy_strv(argv_o, &argv, "argv") < 0 || hpy_strv(env_o, &env, "env") < 0) {
    free(argv);
    return NULL;
  }
  if (argv == NULL || argv[0] == NULL) {
    free(argv);
    free(env);
    PyErr_SetString(PyExc_ValueError, "argv must not be empty");
    return NULL;
  }
  spec.argv = argv;
  spec.env = env;
  hutch_error_t err = NULL;
  struct hutch_proc *p = NULL;
  int r = -1;
  WITH_SANDBOX(self, r = hutch_proc_spawn(sb, &spec, &p, &err));
  free(argv);
  free(env);
  if (r < 0)
    return hpy_raise_sandbox(self, &err);
  return hpy_proc_new(p);
}

static PyObject *sb_read_file(HpySandbox *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"path", "max", NULL};
  const char *path;
  Py_ssize_t max = (Py_ssize_t)DEFAULT_READ_MAX;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "s|n", kwlist, &path, &max))
    return NULL;
  hutch_error_t err = NULL;
  char *data = NULL;
  size_t len = 0;
  int r = -1;
  WITH_SANDBOX(self, r = hutch_sandbox_read_file(sb, path, (size_t)max, &data, &len, &err));
  if (r < 0)
    return hpy_raise_sandbox(self, &err);
  PyObject *b = PyBytes_FromStringAndSize(data, (Py_ssize_t)len);
  free(data);
  return b;
}

static PyObject *sb_write_file(HpySandbox *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"path", "data", "create", NULL};
  const char *path;
  Py_buffer buf;
  int create = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "sy*|p", kwlist, &path, &buf, &create))
    return NULL;
  hutch_error_t err = NULL;
  int r = -1;
  bool closed_ = false;
  Py_BEGIN_ALLOW_THREADS;
  pthread_mutex_lock(&self->lock);
  if (self->sb == NULL)
    closed_ = true;
  else
    r = hutch_sandbox_write_file(self->sb, path, buf.buf, (size_t)buf.len, create, &err);
  pthread_mutex_unlock(&self->lock);
  Py_END_ALLOW_THREADS;
  PyBuffer_Release(&buf);
  if (closed_)
    return closed_error();
  if (r < 0)
    return hpy_raise_sandbox(self, &err);
  Py_RETURN_NONE;
}

static PyObject *sb_file_kind(HpySandbox *self, PyObject *args) {
  const char *path;
  if (!PyArg_ParseTuple(args, "s", &path))
    return NULL;
  hutch_error_t err = NULL;
  int r = -1;
  WITH_SANDBOX(self, r = hutch_sandbox_file_kind(sb, path, &err));
  if (r < 0)
    return hpy_raise_sandbox(self, &err);
  static const char *const names[] = {"none", "file", "dir", "other"};
  return PyUnicode_FromString(r <= HUTCH_FILE_OTHER ? names[r] : "other");
}

static PyObject *sb_path_op(HpySandbox *self, PyObject *args,
                            int (*op)(struct hutch_sandbox *, const char *, hutch_error_t *)) {
  const char *path;
  if (!PyArg_ParseTuple(args, "s", &path))
    return NULL;
  hutch_error_t err = NULL;
  int r = -1;
  WITH_SANDBOX(self, r = op(sb, path, &err));
  if (r < 0)
    return hpy_raise_sandbox(self, &err);
  Py_RETURN_NONE;
}
static PyObject *sb_mkdirs(HpySandbox *self, PyObject *args) {
  return sb_path_op(self, args, hutch_sandbox_mkdirs);
}
static PyObject *sb_remove_file(HpySandbox *self, PyObject *args) {
  return sb_path_op(self, args, hutch_sandbox_remove_file);
}

static PyObject *sb_list_dir(HpySandbox *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"path", "depth", "max", NULL};
  const char *path;
  unsigned int depth = 1;
  Py_ssize_t max = 100000;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "s|In", kwlist, &path, &depth, &max))
    return NULL;
  hutch_error_t err = NULL;
  char **list = NULL;
  int r = -1;
  WITH_SANDBOX(self, r = hutch_sandbox_list_dir(sb, path, depth, (size_t)max, &list, &err));
  if (r < 0)
    return hpy_raise_sandbox(self, &err);
  PyObject *l = PyList_New(0);
  for (size_t i = 0; list[i]; i++) {
    PyObject *s = l ? PyUnicode_DecodeFSDefault(list[i]) : NULL;
    if (s == NULL || PyList_Append(l, s) < 0)
      Py_CLEAR(l);
    Py_XDECREF(s);
    free(list[i]);
  }
  free(list);
  return l;
}

static PyObject *sb_copy(HpySandbox *self, PyObject *args, PyObject *kw, bool in) {
  static char *kwlist[] = {"src", "dest", "max_bytes", "max_entries", "max_depth", "seconds", NULL};
  const char *src, *dest;
  unsigned long long bytes = 0, entries = 0;
  unsigned int depth = 0;
  double seconds = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "ss|KKId", kwlist, &src, &dest, &bytes, &entries, &depth, &seconds))
    return NULL;
  struct hutch_copy_limits lim = {.bytes = bytes, .entries = entries, .depth = depth, .seconds = seconds};
  struct hutch_copy_report rep = {0};
  hutch_error_t err = NULL;
  int r = -1;
  WITH_SANDBOX(self, r = in ? hutch_sandbox_copy_in(sb, src, dest, &lim, &rep, &err)
                            : hutch_sandbox_copy_out(sb, src, dest, &lim, &rep, &err));
  if (r < 0)
    return hpy_raise_sandbox(self, &err);
  return Py_BuildValue("{s:K,s:K,s:K,s:K,s:z}", "files", (unsigned long long)rep.files, "dirs",
                       (unsigned long long)rep.dirs, "bytes", (unsigned long long)rep.bytes, "skipped",
                       (unsigned long long)rep.skipped, "stopped", rep.stopped);
}
static PyObject *sb_copy_in(HpySandbox *self, PyObject *args, PyObject *kw) {
  return sb_copy(self, args, kw, true);
}
static PyObject *sb_copy_out(HpySandbox *self, PyObject *args, PyObject *kw) {
  return sb_copy(self, args, kw, false);
}

static PyObject *sb_limits(HpySandbox *self, PyObject *unused) {
  struct hutch_limits_status l = {{0}};
  int r = 0;
  WITH_SANDBOX(self, l = *hutch_sandbox_limits(sb));
  (void)r;
  /* warning: the no-cgroup line stderr gets once a day, here every time. */
  return Py_BuildValue("{s:s,s:O,s:s,s:s,s:s,s:O}", "mode", l.mode[0] ? l.mode : "none", "degraded",
                       l.degraded ? Py_True : Py_False, "reason", l.reason, "cgroup", l.cgroup, "warning", l.warning,
                       "disk_unbounded", l.disk_unbounded ? Py_True : Py_False);
}

/* The path of its proxy's audit log (JSON lines written by hutch's proxy
 * on the host, not by the sandbox), None without a proxy. */
static PyObject *sb_proxy_log(HpySandbox *self, PyObject *unused) {
  char path[4096] = "";
  int r = 0;
  WITH_SANDBOX(self, {
    const char *p = hutch_sandbox_audit_log(sb);
    if (p)
      snprintf(path, sizeof(path), "%s", p);
  });
  (void)r;
  if (path[0] == '\0')
    Py_RETURN_NONE;
  return PyUnicode_DecodeFSDefault(path);
}

static PyObject *sb_get_id(HpySandbox *self, void *unused) {
  return PyUnicode_FromString(self->id);
}
static PyObject *sb_get_closed(HpySandbox *self, void *unused) {
  bool closed;
  Py_BEGIN_ALLOW_THREADS;
  pthread_mutex_lock(&self->lock);
  closed = self->sb == NULL;
  pthread_mutex_unlock(&self->lock);
  Py_END_ALLOW_THREADS;
  return PyBool_FromLong(closed);
}
static PyObject *sb_get_owned(HpySandbox *self, void *unused) {
  return PyBool_FromLong(self->owned);
}

#define KW (METH_VARARGS | METH_KEYWORDS)
#define FN(f) (PyCFunction)(void (*)(void))(f)
static PyMethodDef sb_methods[] = {
    {"attach", FN(sb_attach), KW | METH_CLASS, "attach(id, state_dir=None): a sandbox made elsewhere."},
    {"spawn", FN(sb_spawn), KW, "spawn(argv, env=None, cwd=None, stdin=None, stdout=None, stderr=None) -> Proc"},
    {"read_file", FN(sb_read_file), KW, "read_file(path, max=64 MiB) -> bytes"},
    {"write_file", FN(sb_write_file), KW, "write_file(path, data, create=False)"},
    {"file_kind", FN(sb_file_kind), METH_VARARGS, "file_kind(path) -> 'none', 'file', 'dir' or 'other'"},
    {"mkdirs", FN(sb_mkdirs), METH_VARARGS, "mkdirs(path)"},
    {"remove_file", FN(sb_remove_file), METH_VARARGS, "remove_file(path)"},
    {"list_dir", FN(sb_list_dir), KW, "list_dir(path, depth=1, max=100000) -> list of paths"},
    {"copy_in", FN(sb_copy_in), KW, "copy_in(host_dir, dir, ...) -> report dict"},
    {"copy_out", FN(sb_copy_out), KW, "copy_out(dir, host_dir, ...) -> report dict"},
    {"limits", FN(sb_limits), METH_NOARGS, "limits() -> dict: how the limits were applied"},
    {"pause", FN(hpy_sb_pause), METH_NOARGS, "pause() -> 'cgroup' or 'ptrace': freeze every process of it"},
    {"resume", FN(hpy_sb_resume), METH_NOARGS, "resume(): let a paused sandbox go on"},
    {"pause_status", FN(hpy_sb_pause_status), METH_NOARGS,
     "pause_status() -> None when it is not paused, else dict: method, since, tasks"},
    {"status", FN(hpy_sb_status), METH_NOARGS, "status() -> dict: its entry of sandboxes()"},
    {"proxy_log", FN(sb_proxy_log), METH_NOARGS, "proxy_log() -> str | None: its proxy's audit log"},
    {"close", FN(sb_close), METH_NOARGS, "close(): destroy a sandbox made here, let go of an attached one"},
    {"destroy", FN(sb_destroy), METH_NOARGS, "destroy(): kill everything in it and remove it"},
    {"reset", FN(hpy_sandbox_reset), KW, "reset(to=None, store=None): back to its image's state"},
    {"set_ttl", FN(hpy_sb_set_ttl), METH_VARARGS, "set_ttl(seconds): its time limit from now (<= 0: none)"},
    {"snapshot", FN(hpy_sb_snapshot), KW, "snapshot(name=None, store=None) -> dict: its writable layer as an image"},
    {"fork", FN(hpy_sb_fork), KW,
     "fork(n=1, names=None, labels=None, ttl=0, on_ttl=False) -> list of Sandbox: new sandboxes from its files"},
    {NULL, NULL, 0, NULL},
};
static PyGetSetDef sb_getset[] = {
    {"id", (getter)sb_get_id, NULL, "the sandbox's id", NULL},
    {"closed", (getter)sb_get_closed, NULL, "whether the handle is closed", NULL},
    {"owned", (getter)sb_get_owned, NULL, "made by this handle (closing destroys it)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject HpySandboxType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "hutch._hutch.Sandbox",
    .tp_basicsize = sizeof(HpySandbox),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A long-lived sandbox (low level; see hutch.Sandbox).",
    .tp_new = sb_new,
    .tp_init = (initproc)sb_init,
    .tp_dealloc = (destructor)sb_dealloc,
    .tp_methods = sb_methods,
    .tp_getset = sb_getset,
};
