/* SPDX-License-Identifier: Apache-2.0 */
/* The CPython extension hutch._hutch over the runtime library (hutch.h).
 *
 * Locking: every handle (sandbox, process) has a mutex of its own, taken
 * only with the GIL released and never held while Python code runs, so a
 * thread waiting for it never holds the GIL another one needs.  Blocking
 * waits poll in short slices and look at the handle's `closing` flag
 * between them: closing a handle from one thread ends another thread's
 * wait on it instead of freeing what that wait uses. */
#ifndef HUTCH_PY_H
#define HUTCH_PY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stdbool.h>

#include "hutch.h"

/* A blocking wait looks at its handle's state this often (seconds). */
#define HPY_SLICE 0.05

/* ---- module.c ---- */
/* Raises the hutch.Error subclass of err's errno and frees err; returns NULL. */
PyObject *hpy_raise(hutch_error_t *err);
/* Raises hutch.Error with errno and message of our own; returns NULL. */
PyObject *hpy_raise_errno(int errnum, const char *msg, const char *hint);
/* A list or tuple of str as a NULL-terminated array of UTF-8 pointers into
 * the objects (valid while seq lives; free only the array).  None: NULL. */
int hpy_strv(PyObject *seq, const char ***out, const char *what);
double hpy_now(void);
PyObject *hpy_usage_dict(const struct hutch_usage *u);

/* ---- sandbox.c ---- */
extern PyTypeObject HpySandboxType;
typedef struct {
  PyObject_HEAD pthread_mutex_t lock;
  struct hutch_sandbox *sb; /* NULL once closed */
  bool owned;               /* made here: closing destroys it */
  char id[40];
} HpySandbox;
/* Sandbox.reset(to=None, store=None) (reset.c). */
PyObject *hpy_sandbox_reset(HpySandbox *self, PyObject *args, PyObject *kw);

/* ---- proc.c ---- */
extern PyTypeObject HpyProcType;
/* Wraps a spawned process (takes p). */
PyObject *hpy_proc_new(struct hutch_proc *p);

#endif
