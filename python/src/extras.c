/* SPDX-License-Identifier: Apache-2.0 */
/* What a live sandbox has beyond hutch_sandbox_config: a time limit,
 * published ports and devices (hutch_sandbox_extras), and the calls on a
 * running one that go with them: set_ttl and snapshot.  The calls run
 * without the GIL and under the handle's mutex, as sandbox.c's do. */
#include "hutchpy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int hpy_ports(PyObject *seq, struct hutch_port **out, size_t *n) {
  *out = NULL;
  *n = 0;
  if (seq == NULL || seq == Py_None)
    return 0;
  PyObject *fast = PySequence_Fast(seq, "ports must be a sequence of (host_addr, host_port, port)");
  if (fast == NULL)
    return -1;
  Py_ssize_t len = PySequence_Fast_GET_SIZE(fast);
  /* The runtime refuses more than 32 with its own words; this bound only
   * keeps a huge list from costing memory before it says so. */
  if (len > 1024) {
    Py_DECREF(fast);
    PyErr_SetString(PyExc_ValueError, "ports: at most 32 published ports");
    return -1;
  }
  struct hutch_port *p = calloc((size_t)len + 1, sizeof(*p));
  if (p == NULL) {
    Py_DECREF(fast);
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t i = 0; i < len; i++) {
    const char *addr = NULL;
    int host_port = 0, port = 0;
    /* The address points into the tuple's str, which the caller's list holds. */
    if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fast, i), "zii;a port is (host_addr, host_port, port)", &addr,
                          &host_port, &port)) {
      free(p);
      Py_DECREF(fast);
      return -1;
    }
    if (host_port < 0 || host_port > 65535 || port < 1 || port > 65535) {
      free(p);
      Py_DECREF(fast);
      PyErr_Format(PyExc_ValueError, "ports: %d:%d: a port is 1 to 65535 (a host port 0: any free one)", host_port,
                   port);
      return -1;
    }
    p[i] = (struct hutch_port){.host_addr = addr, .host_port = (unsigned short)host_port, .port = (unsigned short)port};
  }
  Py_DECREF(fast);
  *out = p;
  *n = (size_t)len;
  return 0;
}

static const char *ttl_action_name(enum hutch_ttl_action a) {
  return a == HUTCH_TTL_PAUSE ? "pause" : "remove";
}

int hpy_status_extras(PyObject *d, const struct hutch_sandbox_status *s) {
  PyObject *ports = PyList_New((Py_ssize_t)s->n_ports);
  if (ports == NULL)
    return -1;
  for (size_t i = 0; i < s->n_ports; i++) {
    PyObject *e = Py_BuildValue("{s:s,s:i,s:i}", "host_addr", s->ports[i].host_addr, "host_port",
                                (int)s->ports[i].host_port, "port", (int)s->ports[i].port);
    if (e == NULL) {
      Py_DECREF(ports);
      return -1;
    }
    PyList_SET_ITEM(ports, (Py_ssize_t)i, e);
  }
  PyObject *devices = PyList_New(0);
  for (char **dv = s->devices; devices && dv && *dv; dv++) {
    PyObject *v = PyUnicode_FromString(*dv);
    if (v == NULL || PyList_Append(devices, v) < 0)
      Py_CLEAR(devices);
    Py_XDECREF(v);
  }
  PyObject *ttl = s->ttl > 0 ? PyFloat_FromDouble(s->ttl) : Py_NewRef(Py_None);
  PyObject *left = s->ttl > 0 ? PyFloat_FromDouble(s->ttl_left) : Py_NewRef(Py_None);
  int r = -1;
  if (devices && ttl && left && PyDict_SetItemString(d, "ports", ports) == 0 &&
      PyDict_SetItemString(d, "devices", devices) == 0 && PyDict_SetItemString(d, "ttl", ttl) == 0 &&
      PyDict_SetItemString(d, "ttl_left", left) == 0) {
    PyObject *action = s->ttl > 0 ? PyUnicode_FromString(ttl_action_name(s->on_ttl)) : Py_NewRef(Py_None);
    PyObject *from = s->forked_from[0] ? PyUnicode_FromString(s->forked_from) : Py_NewRef(Py_None);
    r = action && from && PyDict_SetItemString(d, "on_ttl", action) == 0 &&
                PyDict_SetItemString(d, "forked_from", from) == 0
            ? 0
            : -1;
    Py_XDECREF(action);
    Py_XDECREF(from);
  }
  Py_DECREF(ports);
  Py_XDECREF(devices);
  Py_XDECREF(ttl);
  Py_XDECREF(left);
  return r;
}

PyObject *hpy_sb_set_ttl(HpySandbox *self, PyObject *args) {
  double seconds = 0;
  if (!PyArg_ParseTuple(args, "d", &seconds))
    return NULL;
  if (seconds != seconds) {
    PyErr_SetString(PyExc_ValueError, "set_ttl: seconds is not a number");
    return NULL;
  }
  hutch_error_t err = NULL;
  int r = -1;
  WITH_SANDBOX(self, r = hutch_sandbox_set_ttl(sb, seconds, &err));
  if (r < 0)
    return hpy_raise(&err);
  Py_RETURN_NONE;
}

PyObject *hpy_sb_snapshot(HpySandbox *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"name", "store", NULL};
  const char *name = NULL, *store = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|zz", kwlist, &name, &store))
    return NULL;
  hutch_error_t err = NULL;
  struct hutch_snapshot_result res = {0};
  struct hutch_snapshot_options o = {.store = store, .name = name};
  int r = -1;
  WITH_SANDBOX(self, r = hutch_sandbox_snapshot(sb, &o, &res, &err));
  if (r < 0)
    return hpy_raise(&err);
  return Py_BuildValue("{s:z,s:s,s:K,s:K,s:d,s:s,s:O}", "name", name, "digest", res.digest, "size",
                       (unsigned long long)res.size, "files", (unsigned long long)res.files, "paused_seconds",
                       res.paused_seconds, "pause_method", hutch_pause_method_name(res.method), "was_paused",
                       res.was_paused ? Py_True : Py_False);
}
