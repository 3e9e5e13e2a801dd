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
/* hpy_raise, as this subclass of hutch.Error whatever the errno. */
PyObject *hpy_raise_as(PyObject *type, hutch_error_t *err);
/* hutch.PausedError: what a paused sandbox refuses (EAGAIN). */
extern PyObject *HpyPausedError;
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
  char *state_dir; /* as given (NULL: the default), for the calls that take one */
} HpySandbox;
/* A handle with nothing open yet (its sb NULL), for a sandbox made elsewhere
 * than Sandbox(): fork's children. */
HpySandbox *hpy_sandbox_alloc(void);
/* Sandbox.fork(n=1, names=None, labels=None, ttl=0, on_ttl=False) (fork.c). */
PyObject *hpy_sb_fork(HpySandbox *self, PyObject *args, PyObject *kw);
/* Sandbox.reset(to=None, store=None) (reset.c). */
PyObject *hpy_sandbox_reset(HpySandbox *self, PyObject *args, PyObject *kw);

/* The body of a call on an open sandbox: CALL runs without the GIL, under
 * the lock, with `sb` set; it sets r (< 0 with err set on failure). */
#define WITH_SANDBOX(self, CALL)                                                                                       \
  do {                                                                                                                 \
    bool closed_ = false;                                                                                              \
    Py_BEGIN_ALLOW_THREADS;                                                                                            \
    pthread_mutex_lock(&(self)->lock);                                                                                 \
    struct hutch_sandbox *sb = (self)->sb;                                                                             \
    if (sb == NULL)                                                                                                    \
      closed_ = true;                                                                                                  \
    else {                                                                                                             \
      CALL;                                                                                                            \
    }                                                                                                                  \
    pthread_mutex_unlock(&(self)->lock);                                                                               \
    Py_END_ALLOW_THREADS;                                                                                              \
    if (closed_)                                                                                                       \
      return hpy_raise_errno(EBADF, "sandbox: the handle is closed", NULL);                                            \
  } while (0)

/* ---- live.c ---- */
/* A hutch_sandbox_list_status entry as sandboxes() gives it. */
PyObject *hpy_status_dict(const struct hutch_sandbox_status *s);
/* hpy_raise for a call on the sandbox: a refusal because it is paused is
 * hutch.PausedError. */
PyObject *hpy_raise_sandbox(HpySandbox *self, hutch_error_t *err);
PyObject *hpy_sb_pause(HpySandbox *self, PyObject *unused);
PyObject *hpy_sb_resume(HpySandbox *self, PyObject *unused);
PyObject *hpy_sb_pause_status(HpySandbox *self, PyObject *unused);
PyObject *hpy_sb_status(HpySandbox *self, PyObject *unused);

/* ---- extras.c ---- */
/* A sequence of (host_addr or None, host_port, port) as hutch_ports
 * (malloc'd; the addresses point into the tuples, valid while seq lives). */
int hpy_ports(PyObject *seq, struct hutch_port **out, size_t *n);
/* Adds ports, devices, ttl, ttl_left, on_ttl and forked_from of s to the dict d. */
int hpy_status_extras(PyObject *d, const struct hutch_sandbox_status *s);
PyObject *hpy_sb_set_ttl(HpySandbox *self, PyObject *args);
PyObject *hpy_sb_snapshot(HpySandbox *self, PyObject *args, PyObject *kw);

/* ---- proc.c ---- */
extern PyTypeObject HpyProcType;
/* Wraps a spawned process (takes p). */
PyObject *hpy_proc_new(struct hutch_proc *p);

#endif
