/* SPDX-License-Identifier: Apache-2.0 */
/* What a live sandbox is beyond its processes and files: its status (name,
 * labels, running or paused), pause and resume.  The calls run without the
 * GIL and under the handle's mutex, as sandbox.c's do. */
#include "hutchpy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *state_name(enum hutch_sandbox_state s) {
  static const char *const names[] = {
      [HUTCH_SANDBOX_DEAD] = "dead", [HUTCH_SANDBOX_RUNNING] = "running", [HUTCH_SANDBOX_PAUSED] = "paused"};
  return (unsigned)s < sizeof(names) / sizeof(names[0]) && names[s] ? names[s] : "dead";
}

/* "KEY=VALUE" strings as a dict (the runtime wrote them: each has its '='). */
static PyObject *labels_dict(char *const *labels) {
  PyObject *d = PyDict_New();
  for (char *const *kv = labels; d && kv && *kv; kv++) {
    const char *eq = strchr(*kv, '=');
    if (eq == NULL)
      continue;
    PyObject *v = PyUnicode_FromString(eq + 1);
    PyObject *k = v ? PyUnicode_FromStringAndSize(*kv, eq - *kv) : NULL;
    if (k == NULL || PyDict_SetItem(d, k, v) < 0)
      Py_CLEAR(d);
    Py_XDECREF(k);
    Py_XDECREF(v);
  }
  return d;
}

PyObject *hpy_status_dict(const struct hutch_sandbox_status *s) {
  const struct hutch_sandbox_info *info = &s->info;
  PyObject *labels = labels_dict(s->labels);
  if (labels == NULL)
    return NULL;
  PyObject *d =
      Py_BuildValue("{s:s,s:z,s:N,s:s,s:z,s:i,s:O,s:L,s:z,s:O}", "id", info->id, "name", s->name, "labels", labels,
                    "state", state_name(s->state), "pause_method",
                    s->state == HUTCH_SANDBOX_PAUSED ? hutch_pause_method_name(s->pause_method) : NULL, "pid",
                    (int)info->pid, "running", info->running ? Py_True : Py_False, "created", (long long)info->created,
                    "image", info->image, "net_proxy", info->net_proxy ? Py_True : Py_False);
  if (d && hpy_status_extras(d, s) < 0)
    Py_CLEAR(d);
  return d;
}

PyObject *hpy_sb_pause(HpySandbox *self, PyObject *unused) {
  hutch_error_t err = NULL;
  enum hutch_pause_method used = HUTCH_PAUSE_NONE;
  int r = -1;
  WITH_SANDBOX(self, r = hutch_sandbox_pause(sb, &used, &err));
  if (r < 0)
    return hpy_raise(&err);
  return PyUnicode_FromString(hutch_pause_method_name(used));
}

PyObject *hpy_sb_resume(HpySandbox *self, PyObject *unused) {
  hutch_error_t err = NULL;
  int r = -1;
  WITH_SANDBOX(self, r = hutch_sandbox_resume(sb, &err));
  if (r < 0)
    return hpy_raise(&err);
  Py_RETURN_NONE;
}

/* None when it is not paused, else how: method ("none" while a pause is
 * under way), since, tasks. */
PyObject *hpy_sb_pause_status(HpySandbox *self, PyObject *unused) {
  hutch_error_t err = NULL;
  struct hutch_pause_status ps = {0};
  int r = -1;
  WITH_SANDBOX(self, r = hutch_sandbox_pause_status(self->state_dir, self->id, &ps, &err));
  if (r < 0)
    return hpy_raise(&err);
  if (r == 0)
    Py_RETURN_NONE;
  return Py_BuildValue("{s:s,s:d,s:I}", "method", hutch_pause_method_name(ps.method), "since", ps.since, "tasks",
                       ps.tasks);
}

/* Its entry of hutch_sandbox_list_status (hutch ps --json). */
PyObject *hpy_sb_status(HpySandbox *self, PyObject *unused) {
  hutch_error_t err = NULL;
  struct hutch_sandbox_status *st = NULL;
  size_t n = 0;
  int r = -1;
  WITH_SANDBOX(self, r = hutch_sandbox_list_status(self->state_dir, &st, &n, &err));
  if (r < 0)
    return hpy_raise(&err);
  PyObject *d = NULL;
  for (size_t i = 0; i < n; i++)
    if (strcmp(st[i].info.id, self->id) == 0) {
      d = hpy_status_dict(&st[i]);
      break;
    }
  hutch_sandbox_status_free(st, n);
  if (d == NULL && !PyErr_Occurred())
    return hpy_raise_errno(ENOENT, "sandbox: it is gone from the state directory", "it was removed");
  return d;
}

PyObject *hpy_raise_sandbox(HpySandbox *self, hutch_error_t *err) {
  /* EAGAIN is also a fork's "try again": only a sandbox that is paused
   * makes it a PausedError. */
  struct hutch_pause_status ps;
  hutch_error_t ignored = NULL;
  bool paused =
      *err && (*err)->errnum == EAGAIN && hutch_sandbox_pause_status(self->state_dir, self->id, &ps, &ignored) == 1;
  hutch_error_free(&ignored);
  return paused ? hpy_raise_as(HpyPausedError, err) : hpy_raise(err);
}
