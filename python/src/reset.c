/* SPDX-License-Identifier: Apache-2.0 */
/* hutch._hutch.Sandbox.reset: the sandbox back to its image's state
 * (hutch_sandbox_reset), under the handle's mutex, without the GIL. */
#include "hutchpy.h"

#include <errno.h>

/* The image `to` names in `store` (NULL: the default store), then the reset. */
static int reset(struct hutch_sandbox *sb, const char *to, const char *store_dir, hutch_error_t *err) {
  struct hutch_store *store = NULL;
  struct hutch_image image = {0};
  int r = 0;
  if (to && (hutch_store_open(store_dir, &store, err) < 0 || hutch_image_lookup(store, to, &image, err) < 0))
    r = -1;
  if (r == 0) {
    struct hutch_reset_options o = {.to = to ? &image : NULL};
    r = hutch_sandbox_reset(sb, &o, err);
  }
  hutch_image_clear(&image);
  hutch_store_close(store);
  return r;
}

PyObject *hpy_sandbox_reset(HpySandbox *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"to", "store", NULL};
  const char *to = NULL, *store = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|zz", kwlist, &to, &store))
    return NULL;
  hutch_error_t err = NULL;
  int r = 0;
  bool closed = false;
  Py_BEGIN_ALLOW_THREADS;
  pthread_mutex_lock(&self->lock);
  if (self->sb == NULL)
    closed = true;
  else
    r = reset(self->sb, to, store, &err);
  pthread_mutex_unlock(&self->lock);
  Py_END_ALLOW_THREADS;
  if (closed)
    return hpy_raise_errno(EBADF, "sandbox: the handle is closed", NULL);
  if (r < 0)
    return hpy_raise(&err);
  Py_RETURN_NONE;
}
