/* SPDX-License-Identifier: Apache-2.0 */
/* hutch._hutch.Sandbox.fork: new live sandboxes that start from this one's
 * files (hutch_sandbox_fork), each handed back as a Sandbox of its own that
 * owns it (closing it destroys it, as for one made by Sandbox()).  The
 * handles are made before the fork, with the GIL: once the children run,
 * nothing is left that can fail and leave one without a handle. */
#include "hutchpy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The fork itself, without the GIL, under the parent's mutex. */
static int fork_locked(HpySandbox *self, const struct hutch_fork_options *o, struct hutch_sandbox **children,
                       bool *closed, hutch_error_t *err) {
  int r = -1;
  Py_BEGIN_ALLOW_THREADS;
  pthread_mutex_lock(&self->lock);
  if (self->sb == NULL)
    *closed = true;
  else
    r = hutch_sandbox_fork(self->sb, o, children, NULL, err);
  pthread_mutex_unlock(&self->lock);
  Py_END_ALLOW_THREADS;
  return r;
}

PyObject *hpy_sb_fork(HpySandbox *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"n", "names", "labels", "ttl", "on_ttl", NULL};
  int n = 1, on_ttl = 0;
  PyObject *names_o = NULL, *labels_o = NULL;
  double ttl = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|iOOdp", kwlist, &n, &names_o, &labels_o, &ttl, &on_ttl))
    return NULL;
  /* The runtime's words for a count it refuses; its count is unsigned. */
  if (n < 0) {
    char msg[64], hint[64];
    snprintf(msg, sizeof(msg), "fork: %d children asked for", n);
    snprintf(hint, sizeof(hint), "a fork makes 1 to %d sandboxes at a time", HUTCH_FORK_MAX);
    return hpy_raise_errno(EINVAL, msg, hint);
  }
  const char **names = NULL, **labels = NULL;
  if (hpy_strv(names_o, &names, "names") < 0 || hpy_strv(labels_o, &labels, "labels") < 0) {
    free(names);
    return NULL;
  }
  /* n out of range is the runtime's to refuse, in its words, before it
   * touches children: no handle is made for it. */
  bool in_range = n >= 1 && n <= HUTCH_FORK_MAX;
  PyObject *list = PyList_New(in_range ? n : 0);
  for (Py_ssize_t i = 0; list && i < PyList_GET_SIZE(list); i++) {
    HpySandbox *h = hpy_sandbox_alloc();
    if (h && self->state_dir && (h->state_dir = strdup(self->state_dir)) == NULL)
      PyErr_NoMemory();
    if (h == NULL || PyErr_Occurred()) {
      Py_XDECREF(h);
      Py_CLEAR(list);
      break;
    }
    PyList_SET_ITEM(list, i, (PyObject *)h);
  }
  struct hutch_fork_options o = {
      .n = (unsigned)n,
      .names = names,
      .labels = labels,
      .ttl = ttl,
      .on_ttl = on_ttl ? HUTCH_TTL_PAUSE : HUTCH_TTL_REMOVE,
  };
  struct hutch_sandbox *children[HUTCH_FORK_MAX] = {NULL};
  hutch_error_t err = NULL;
  bool closed = false;
  int r = list ? fork_locked(self, &o, children, &closed, &err) : -1;
  free(names);
  free(labels);
  if (list == NULL)
    return NULL;
  if (closed) {
    Py_DECREF(list);
    return hpy_raise_errno(EBADF, "sandbox: the handle is closed", NULL);
  }
  if (r < 0) {
    Py_DECREF(list);
    return hpy_raise(&err);
  }
  for (int i = 0; i < n; i++) {
    HpySandbox *h = (HpySandbox *)PyList_GET_ITEM(list, i);
    h->sb = children[i];
    h->owned = true;
    snprintf(h->id, sizeof(h->id), "%s", hutch_sandbox_id(children[i]));
  }
  return list;
}
