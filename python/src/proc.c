/* SPDX-License-Identifier: Apache-2.0 */
/* hutch._hutch.Proc: a process running in a sandbox (hutch_proc_*), with
 * its pipes.  Reads, writes and waits run without the GIL, in slices of
 * HPY_SLICE seconds between which they look whether the handle is being
 * closed; close() waits for them to leave before it frees the handle. */
#include "hutchpy.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* After the process has ended, its pipes are read until EOF, or until they
 * stay silent this long (something it left running holds them open). */
#define DRAIN_GRACE 0.2

typedef struct {
  PyObject_HEAD pthread_mutex_t lock;
  pthread_cond_t idle;
  struct hutch_proc *p; /* NULL once closed */
  int busy;             /* calls using the handle without the lock */
  int io_busy[3];       /* of them, those reading or writing a stream */
  int closing;          /* bit 3: the handle, bit s: stream s; read atomically by those calls */
  int fds[3];           /* the pipes' ends, -1 when none or closed */
  int event_fd;
  pid_t pid, sandbox_pid;
} HpyProc;

PyObject *hpy_proc_new(struct hutch_proc *p) {
  HpyProc *self = (HpyProc *)HpyProcType.tp_alloc(&HpyProcType, 0);
  if (self == NULL) {
    hutch_proc_free(p);
    return NULL;
  }
  pthread_mutex_init(&self->lock, NULL);
  pthread_cond_init(&self->idle, NULL);
  self->p = p;
  for (int i = 0; i < 3; i++)
    self->fds[i] = hutch_proc_fd(p, i);
  self->event_fd = hutch_proc_event_fd(p);
  self->pid = hutch_proc_pid(p);
  self->sandbox_pid = hutch_proc_sandbox_pid(p);
  return (PyObject *)self;
}

static PyObject *closed_error(void) {
  return hpy_raise_errno(EBADF, "process: the handle is closed", NULL);
}

/* Without the GIL: marks the handle in use; false when it is closed. */
#define CLOSING_HANDLE 8
/* Without the GIL: marks the handle in use, and stream s (-1: none) by a
 * read or write; false when it is closed. */
static bool enter_io(HpyProc *self, int s) {
  pthread_mutex_lock(&self->lock);
  bool ok = self->p != NULL && !(self->closing & CLOSING_HANDLE);
  if (ok) {
    self->busy++;
    if (s >= 0)
      self->io_busy[s]++;
  }
  pthread_mutex_unlock(&self->lock);
  return ok;
}
static void leave_io(HpyProc *self, int s) {
  pthread_mutex_lock(&self->lock);
  self->busy--;
  if (s >= 0)
    self->io_busy[s]--;
  pthread_cond_broadcast(&self->idle);
  pthread_mutex_unlock(&self->lock);
}
static bool enter(HpyProc *self) {
  return enter_io(self, -1);
}
static void leave(HpyProc *self) {
  leave_io(self, -1);
}

/* poll() in slices until an event, the deadline (< 0: none), close(), or
 * close_fd() of a stream in `watch` (a mask of 1 << stream). */
static int poll_sliced_on(HpyProc *self, struct pollfd *pfd, nfds_t n, double deadline, int watch) {
  for (;;) {
    if (__atomic_load_n(&self->closing, __ATOMIC_ACQUIRE) & (CLOSING_HANDLE | watch)) {
      errno = EBADF;
      return -1;
    }
    double wait = HPY_SLICE;
    if (deadline >= 0) {
      double left = deadline - hpy_now();
      if (left <= 0)
        return 0;
      if (left < wait)
        wait = left;
    }
    int r = poll(pfd, n, (int)ceil(wait * 1000));
    if (r != 0 && !(r < 0 && errno == EINTR))
      return r;
  }
}
static int poll_sliced(HpyProc *self, struct pollfd *pfd, nfds_t n, double deadline) {
  return poll_sliced_on(self, pfd, n, deadline, 0);
}

static double deadline_of(PyObject *timeout, bool *bad) {
  *bad = false;
  if (timeout == NULL || timeout == Py_None)
    return -1;
  double t = PyFloat_AsDouble(timeout);
  if (t == -1 && PyErr_Occurred()) {
    *bad = true;
    return 0;
  }
  return hpy_now() + (t > 0 ? t : 0);
}

static int stream_arg(int stream) {
  if (stream < 0 || stream > 2) {
    PyErr_SetString(PyExc_ValueError, "stream must be 0, 1 or 2");
    return -1;
  }
  return 0;
}

static PyObject *proc_read(HpyProc *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"stream", "size", "timeout", NULL};
  int stream = 1;
  Py_ssize_t size = 65536;
  PyObject *timeout = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|inO", kwlist, &stream, &size, &timeout) || stream_arg(stream) < 0)
    return NULL;
  bool bad;
  double deadline = deadline_of(timeout, &bad);
  if (bad)
    return NULL;
  if (size <= 0)
    size = 65536;
  PyObject *buf = PyBytes_FromStringAndSize(NULL, size);
  if (buf == NULL)
    return NULL;
  ssize_t n = -1;
  int e = 0;
  bool ok, timed_out = false;
  Py_BEGIN_ALLOW_THREADS;
  ok = enter_io(self, stream);
  if (ok) {
    int fd = self->fds[stream];
    if (fd < 0)
      n = 0; /* no pipe, or closed: EOF */
    else {
      struct pollfd pfd = {fd, POLLIN, 0};
      int r = poll_sliced_on(self, &pfd, 1, deadline, 1 << stream);
      if (r == 0)
        timed_out = true;
      else if (r < 0)
        e = errno;
      else {
        n = read(fd, PyBytes_AS_STRING(buf), (size_t)size);
        if (n < 0)
          e = errno == EAGAIN ? 0 : errno;
        if (n < 0 && e == 0)
          timed_out = true;
      }
    }
    leave_io(self, stream);
  }
  Py_END_ALLOW_THREADS;
  if (!ok || e == EBADF) {
    Py_DECREF(buf);
    return closed_error();
  }
  if (timed_out) {
    Py_DECREF(buf);
    Py_RETURN_NONE;
  }
  if (n < 0) {
    Py_DECREF(buf);
    errno = e;
    return PyErr_SetFromErrno(PyExc_OSError);
  }
  _PyBytes_Resize(&buf, n);
  return buf;
}

/* Writes all of data to fd (non-blocking) by the deadline; 0, or an errno. */
static int write_all(HpyProc *self, int fd, const char *data, size_t len, size_t *done, double deadline) {
  while (*done < len) {
    ssize_t n = write(fd, data + *done, len - *done);
    if (n > 0) {
      *done += (size_t)n;
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR)
      return errno;
    struct pollfd pfd = {fd, POLLOUT, 0};
    int r = poll_sliced_on(self, &pfd, 1, deadline, 1);
    if (r == 0)
      return ETIMEDOUT;
    if (r < 0)
      return errno;
  }
  return 0;
}

static PyObject *proc_write(HpyProc *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"data", "timeout", NULL};
  Py_buffer buf;
  PyObject *timeout = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "y*|O", kwlist, &buf, &timeout))
    return NULL;
  bool bad;
  double deadline = deadline_of(timeout, &bad);
  if (bad) {
    PyBuffer_Release(&buf);
    return NULL;
  }
  size_t done = 0;
  int e = 0;
  bool ok;
  Py_BEGIN_ALLOW_THREADS;
  ok = enter_io(self, 0);
  if (ok) {
    e = self->fds[0] < 0 ? EPIPE : write_all(self, self->fds[0], buf.buf, (size_t)buf.len, &done, deadline);
    leave_io(self, 0);
  }
  Py_END_ALLOW_THREADS;
  PyBuffer_Release(&buf);
  if (!ok || e == EBADF)
    return closed_error();
  if (e == ETIMEDOUT)
    return hpy_raise_errno(e, "process: writing its stdin", "the process does not read its input");
  if (e) {
    errno = e;
    return PyErr_SetFromErrno(PyExc_OSError);
  }
  return PyLong_FromSize_t(done);
}

/* Without the GIL, with the lock: closes our end of a pipe. */
static void close_stream_locked(HpyProc *self, int stream) {
  if (self->p && self->fds[stream] >= 0) {
    hutch_proc_close_fd(self->p, stream);
    self->fds[stream] = -1;
  }
}

static PyObject *proc_close_fd(HpyProc *self, PyObject *args) {
  int stream = 0;
  if (!PyArg_ParseTuple(args, "|i", &stream) || stream_arg(stream) < 0)
    return NULL;
  Py_BEGIN_ALLOW_THREADS;
  pthread_mutex_lock(&self->lock);
  /* A call reading or writing this fd leaves within a slice. */
  __atomic_or_fetch(&self->closing, 1 << stream, __ATOMIC_RELEASE);
  while (self->io_busy[stream] > 0 && self->p)
    pthread_cond_wait(&self->idle, &self->lock);
  close_stream_locked(self, stream);
  __atomic_and_fetch(&self->closing, ~(1 << stream), __ATOMIC_RELEASE);
  pthread_mutex_unlock(&self->lock);
  Py_END_ALLOW_THREADS;
  Py_RETURN_NONE;
}

static PyObject *exit_dict(const struct hutch_exit *ex) {
  PyObject *usage = hpy_usage_dict(&ex->usage);
  if (usage == NULL)
    return NULL;
  /* Why it could not be started, with the errno's text, as hutch exec says it. */
  char *failure = ex->failure[0] ? hutch_errno_format(ex->exec_errno, "%s", ex->failure) : NULL;
  PyObject *d = Py_BuildValue("{s:i,s:i,s:i,s:O,s:O,s:i,s:O,s:s,s:d,s:N}", "exit_code", hutch_exit_code(ex), "status",
                              ex->status, "signal", ex->signal, "timed_out", ex->timed_out ? Py_True : Py_False,
                              "oom_killed", ex->usage.oom_killed ? Py_True : Py_False, "exec_errno", ex->exec_errno,
                              "setup_failed", ex->setup_failed ? Py_True : Py_False, "failure", failure ? failure : "",
                              "wall_seconds", ex->wall_seconds, "usage", usage);
  free(failure);
  return d;
}

/* Without the GIL: 0 with *ex filled once ended, 1 still running, -1 error. */
static int wait_now(HpyProc *self, struct hutch_exit *ex, hutch_error_t *err) {
  pthread_mutex_lock(&self->lock);
  int r = self->p ? hutch_proc_wait(self->p, 0, ex, err) : -2;
  pthread_mutex_unlock(&self->lock);
  return r;
}

static PyObject *proc_wait(HpyProc *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"timeout", NULL};
  PyObject *timeout = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O", kwlist, &timeout))
    return NULL;
  bool bad;
  double deadline = deadline_of(timeout, &bad);
  if (bad)
    return NULL;
  struct hutch_exit ex = {0};
  hutch_error_t err = NULL;
  int r = -2;
  Py_BEGIN_ALLOW_THREADS;
  if (enter(self)) {
    struct pollfd pfd = {self->event_fd, POLLIN, 0};
    int pr = poll_sliced(self, &pfd, 1, deadline);
    leave(self);
    r = pr < 0 && errno == EBADF ? -2 : wait_now(self, &ex, &err);
  }
  Py_END_ALLOW_THREADS;
  if (r == -2)
    return closed_error();
  if (r < 0)
    return hpy_raise(&err);
  if (r == 1)
    Py_RETURN_NONE;
  return exit_dict(&ex);
}

static PyObject *proc_signal(HpyProc *self, PyObject *args) {
  int sig = SIGTERM;
  if (!PyArg_ParseTuple(args, "|i", &sig))
    return NULL;
  hutch_error_t err = NULL;
  int r = -2;
  Py_BEGIN_ALLOW_THREADS;
  pthread_mutex_lock(&self->lock);
  if (self->p)
    r = hutch_proc_signal(self->p, sig, &err);
  pthread_mutex_unlock(&self->lock);
  Py_END_ALLOW_THREADS;
  if (r == -2)
    return closed_error();
  if (r < 0)
    return hpy_raise(&err);
  Py_RETURN_NONE;
}

static PyObject *proc_kill(HpyProc *self, PyObject *unused) {
  PyObject *args = Py_BuildValue("(i)", SIGKILL);
  PyObject *r = args ? proc_signal(self, args) : NULL;
  Py_XDECREF(args);
  return r;
}

/* A growing buffer of one stream's output, bounded by max. */
struct sink {
  char *data;
  size_t len, cap, max;
  bool truncated, eof;
};

static int sink_read(struct sink *s, int fd) {
  char tmp[65536];
  ssize_t n = read(fd, tmp, sizeof(tmp));
  if (n < 0)
    return errno == EAGAIN || errno == EINTR ? 1 : -1;
  if (n == 0) {
    s->eof = true;
    return 0;
  }
  size_t keep = (size_t)n;
  if (s->len + keep > s->max) {
    keep = s->max - s->len;
    s->truncated = true;
  }
  if (s->len + keep > s->cap) {
    size_t cap = s->cap ? s->cap : 4096;
    while (cap < s->len + keep)
      cap *= 2;
    char *d = realloc(s->data, cap);
    if (d == NULL)
      return -1;
    s->data = d;
    s->cap = cap;
  }
  memcpy(s->data + s->len, tmp, keep);
  s->len += keep;
  return 1;
}

struct comm {
  const char *input;
  size_t input_len, input_done;
  double deadline;
  struct sink out[3]; /* [1] and [2] used */
  struct hutch_exit ex;
  bool timed_out;
  int err_no;
};

/* Without the GIL, inside enter(): feeds stdin, collects stdout and stderr,
 * kills the process at the deadline; returns when it has ended and its
 * pipes are drained.  0, -1 with c->err_no, or -2 with *err. */
static int communicate(HpyProc *self, struct comm *c, hutch_error_t *err) {
  bool ended = false;
  double ended_at = 0;
  if (c->input == NULL) {
    pthread_mutex_lock(&self->lock);
    close_stream_locked(self, 0);
    pthread_mutex_unlock(&self->lock);
  }
  for (;;) {
    struct pollfd pfd[4];
    int idx[4];
    nfds_t n = 0;
    int in = self->fds[0];
    if (in >= 0 && c->input_done < c->input_len) {
      pfd[n] = (struct pollfd){in, POLLOUT, 0};
      idx[n++] = 0;
    } else if (in >= 0) {
      pthread_mutex_lock(&self->lock);
      close_stream_locked(self, 0);
      pthread_mutex_unlock(&self->lock);
    }
    for (int s = 1; s <= 2; s++)
      if (self->fds[s] >= 0 && !c->out[s].eof) {
        pfd[n] = (struct pollfd){self->fds[s], POLLIN, 0};
        idx[n++] = s;
      }
    if (!ended) {
      pfd[n] = (struct pollfd){self->event_fd, POLLIN, 0};
      idx[n++] = 3;
    }
    if (ended && n == 0)
      return 0;
    double deadline = ended ? ended_at + DRAIN_GRACE : c->timed_out ? -1 : c->deadline;
    int r = poll_sliced(self, pfd, n, deadline);
    if (r < 0) {
      c->err_no = errno;
      return -1;
    }
    if (r == 0) {
      if (ended)
        return 0; /* silent pipes held open by what it left running */
      hutch_error_t kerr = NULL;
      pthread_mutex_lock(&self->lock);
      if (hutch_proc_kill(self->p, &kerr) < 0)
        hutch_error_free(&kerr);
      pthread_mutex_unlock(&self->lock);
      c->timed_out = true;
      continue;
    }
    for (nfds_t i = 0; i < n; i++) {
      if (pfd[i].revents == 0)
        continue;
      if (idx[i] == 0) {
        size_t before = c->input_done;
        int e = write_all(self, pfd[i].fd, c->input, c->input_len, &c->input_done, hpy_now());
        if (e && e != ETIMEDOUT) /* EPIPE: it stopped reading */
          c->input_done = c->input_len;
        (void)before;
      } else if (idx[i] == 3) {
        int w = wait_now(self, &c->ex, err);
        if (w < 0)
          return -2;
        if (w == 0) {
          ended = true;
          ended_at = hpy_now();
        }
      } else {
        if (sink_read(&c->out[idx[i]], pfd[i].fd) < 0) {
          c->err_no = errno;
          return -1;
        }
        if (ended)
          ended_at = hpy_now();
      }
    }
  }
}

static PyObject *proc_communicate(HpyProc *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"input", "timeout", "max_output", NULL};
  Py_buffer in = {0};
  PyObject *timeout = NULL;
  Py_ssize_t max_output = (Py_ssize_t)64 << 20;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|z*On", kwlist, &in, &timeout, &max_output))
    return NULL;
  bool bad;
  struct comm c = {.input = in.buf, .input_len = in.buf ? (size_t)in.len : 0};
  c.deadline = deadline_of(timeout, &bad);
  if (bad) {
    PyBuffer_Release(&in);
    return NULL;
  }
  c.out[1].max = c.out[2].max = max_output > 0 ? (size_t)max_output : 0;
  hutch_error_t err = NULL;
  int r = -3;
  Py_BEGIN_ALLOW_THREADS;
  if (enter(self)) {
    pthread_mutex_lock(&self->lock);
    for (int i = 0; i < 3; i++)
      self->io_busy[i]++;
    pthread_mutex_unlock(&self->lock);
    r = communicate(self, &c, &err);
    pthread_mutex_lock(&self->lock);
    for (int i = 0; i < 3; i++)
      self->io_busy[i]--;
    pthread_mutex_unlock(&self->lock);
    leave(self);
  }
  Py_END_ALLOW_THREADS;
  PyBuffer_Release(&in);
  PyObject *ret = NULL;
  if (r == -3 || (r == -1 && c.err_no == EBADF))
    closed_error();
  else if (r == -2)
    hpy_raise(&err);
  else if (r == -1) {
    errno = c.err_no;
    PyErr_SetFromErrno(PyExc_OSError);
  } else {
    if (c.timed_out)
      c.ex.timed_out = true;
    PyObject *d = exit_dict(&c.ex);
    if (d) {
      ret = Py_BuildValue("(y#y#NOO)", c.out[1].data ? c.out[1].data : "", (Py_ssize_t)c.out[1].len,
                          c.out[2].data ? c.out[2].data : "", (Py_ssize_t)c.out[2].len, d,
                          c.out[1].truncated ? Py_True : Py_False, c.out[2].truncated ? Py_True : Py_False);
    }
  }
  free(c.out[1].data);
  free(c.out[2].data);
  return ret;
}

/* Without the GIL: waits for the calls in flight, then frees the handle
 * (killing a process still running, hutch_proc_free). */
static void proc_release(HpyProc *self) {
  pthread_mutex_lock(&self->lock);
  __atomic_or_fetch(&self->closing, CLOSING_HANDLE, __ATOMIC_RELEASE);
  while (self->busy > 0)
    pthread_cond_wait(&self->idle, &self->lock);
  struct hutch_proc *p = self->p;
  self->p = NULL;
  for (int i = 0; i < 3; i++)
    self->fds[i] = -1;
  self->event_fd = -1;
  pthread_mutex_unlock(&self->lock);
  if (p)
    hutch_proc_free(p);
}

static PyObject *proc_close(HpyProc *self, PyObject *unused) {
  Py_BEGIN_ALLOW_THREADS;
  proc_release(self);
  Py_END_ALLOW_THREADS;
  Py_RETURN_NONE;
}

static void proc_dealloc(HpyProc *self) {
  if (self->p) {
    Py_BEGIN_ALLOW_THREADS;
    proc_release(self);
    Py_END_ALLOW_THREADS;
  }
  pthread_cond_destroy(&self->idle);
  pthread_mutex_destroy(&self->lock);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *proc_fileno(HpyProc *self, PyObject *args) {
  int stream = 1;
  if (!PyArg_ParseTuple(args, "|i", &stream) || stream_arg(stream) < 0)
    return NULL;
  return PyLong_FromLong(self->fds[stream]);
}

/* For an event loop: readable once the process has ended (then wait(0)
 * answers at once); -1 once the handle is closed. */
static PyObject *proc_event_fileno(HpyProc *self, PyObject *unused) {
  return PyLong_FromLong(self->event_fd);
}

static PyObject *proc_get_pid(HpyProc *self, void *unused) {
  return PyLong_FromLong(self->pid);
}
static PyObject *proc_get_sandbox_pid(HpyProc *self, void *unused) {
  return PyLong_FromLong(self->sandbox_pid);
}
static PyObject *proc_get_closed(HpyProc *self, void *unused) {
  return PyBool_FromLong(self->p == NULL);
}

#define KW (METH_VARARGS | METH_KEYWORDS)
#define FN(f) (PyCFunction)(void (*)(void))(f)
static PyMethodDef proc_methods[] = {
    {"read", FN(proc_read), KW,
     "read(stream=1, size=65536, timeout=None) -> bytes (b'' at EOF) or None when the timeout expired"},
    {"write", FN(proc_write), KW, "write(data, timeout=None) -> int: all of data to its stdin"},
    {"close_fd", FN(proc_close_fd), METH_VARARGS, "close_fd(stream=0): close our end (stdin: it reads EOF)"},
    {"wait", FN(proc_wait), KW, "wait(timeout=None) -> exit dict, or None while it still runs"},
    {"communicate", FN(proc_communicate), KW,
     "communicate(input=None, timeout=None, max_output=64 MiB) -> (stdout, stderr, exit dict, stdout_truncated, "
     "stderr_truncated); kills it at the timeout"},
    {"signal", FN(proc_signal), METH_VARARGS, "signal(sig=SIGTERM): to its process group"},
    {"kill", FN(proc_kill), METH_NOARGS, "kill(): SIGKILL to its process group"},
    {"fileno", FN(proc_fileno), METH_VARARGS, "fileno(stream=1) -> our end of the pipe, or -1"},
    {"event_fileno", FN(proc_event_fileno), METH_NOARGS,
     "event_fileno() -> an fd readable once the process has ended, or -1"},
    {"close", FN(proc_close), METH_NOARGS, "close(): free the handle, killing the process if it still runs"},
    {NULL, NULL, 0, NULL},
};
static PyGetSetDef proc_getset[] = {
    {"pid", (getter)proc_get_pid, NULL, "its pid on the host (-1 when unknown)", NULL},
    {"sandbox_pid", (getter)proc_get_sandbox_pid, NULL, "its pid inside the sandbox", NULL},
    {"closed", (getter)proc_get_closed, NULL, "whether the handle is closed", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject HpyProcType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "hutch._hutch.Proc",
    .tp_basicsize = sizeof(HpyProc),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A process in a sandbox (low level; see hutch.Process).",
    .tp_dealloc = (destructor)proc_dealloc,
    .tp_methods = proc_methods,
    .tp_getset = proc_getset,
};
