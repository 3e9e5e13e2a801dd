/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "request.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

void strv_free(char **strv) {
  if (strv == NULL)
    return;
  for (char **s = strv; *s; s++)
    free(*s);
  free(strv);
}

size_t strv_length(const char *const *strv) {
  size_t n = 0;
  while (strv && strv[n])
    n++;
  return n;
}

char **env_merge(const char *const *const *layers, size_t n_layers) {
  size_t cap = 1;
  for (size_t l = 0; l < n_layers; l++)
    cap += strv_length(layers[l]);
  char **out = xcalloc(cap, sizeof(char *));
  size_t n = 0;
  for (size_t l = 0; l < n_layers; l++) {
    for (const char *const *e = layers[l]; e && *e; e++) {
      const char *eq = strchr(*e, '=');
      if (eq == NULL || eq == *e)
        continue;
      size_t keylen = (size_t)(eq - *e) + 1;
      size_t i;
      for (i = 0; i < n; i++)
        if (strncmp(out[i], *e, keylen) == 0)
          break;
      if (i < n) {
        free(out[i]);
        out[i] = xstrdup(*e);
      } else {
        out[n++] = xstrdup(*e);
      }
    }
  }
  out[n] = NULL;
  return out;
}

/* Wire form: records of {tag:1, length:4 (host order), bytes}.  Host order
 * is enough: both ends are the same binary on the same machine. */
enum { TAG_ARG = 'A', TAG_ENV = 'E', TAG_WORKDIR = 'W', TAG_TTY = 'T' };

struct buf {
  char *data;
  size_t len, cap, max;
  bool overflow;
};

static void put_record(struct buf *b, char tag, const char *s) {
  uint32_t n = (uint32_t)strlen(s);
  size_t need = 1 + sizeof(n) + n;
  if (b->len + need > b->max) {
    b->overflow = true;
    return;
  }
  if (b->len + need > b->cap) {
    b->cap = (b->len + need) * 2;
    b->data = xrealloc(b->data, b->cap);
  }
  b->data[b->len] = tag;
  memcpy(b->data + b->len + 1, &n, sizeof(n));
  memcpy(b->data + b->len + 1 + sizeof(n), s, n);
  b->len += need;
}

int request_encode(const struct exec_request *req, size_t max, char **out, size_t *len, hutch_error_t *err) {
  struct buf b = {.max = max};
  for (char **a = req->argv; a && *a; a++)
    put_record(&b, TAG_ARG, *a);
  for (char **e = req->env; e && *e; e++)
    put_record(&b, TAG_ENV, *e);
  if (req->workdir)
    put_record(&b, TAG_WORKDIR, req->workdir);
  if (req->tty) {
    char size[32];
    snprintf(size, sizeof(size), "%u %u", req->rows, req->cols);
    put_record(&b, TAG_TTY, size);
  }
  if (b.overflow) {
    free(b.data);
    hutch_error_set(err, E2BIG, "the command and its environment exceed %zu bytes", max);
    return hutch_error_hint(err, "pass large inputs on standard input or through a file in the sandbox");
  }
  *out = b.data;
  *len = b.len;
  return 0;
}

static void strv_push(char ***v, size_t *n, char *s) {
  *v = xrealloc(*v, (*n + 2) * sizeof(char *));
  (*v)[(*n)++] = s;
  (*v)[*n] = NULL;
}

int request_decode(const char *buf, size_t len, struct exec_request *out, hutch_error_t *err) {
  memset(out, 0, sizeof(*out));
  size_t nargs = 0, nenv = 0, off = 0;
  while (off < len) {
    uint32_t n;
    if (len - off < 1 + sizeof(n))
      goto bad;
    char tag = buf[off];
    memcpy(&n, buf + off + 1, sizeof(n));
    off += 1 + sizeof(n);
    if (n > len - off || memchr(buf + off, '\0', n) != NULL)
      goto bad;
    char *s = xstrndup(buf + off, n);
    off += n;
    switch (tag) {
    case TAG_ARG:
      strv_push(&out->argv, &nargs, s);
      break;
    case TAG_ENV:
      strv_push(&out->env, &nenv, s);
      break;
    case TAG_WORKDIR:
      free(out->workdir);
      out->workdir = s;
      break;
    case TAG_TTY: {
      unsigned rows, cols;
      char end;
      bool ok = sscanf(s, "%u %u%c", &rows, &cols, &end) == 2 && rows <= UINT16_MAX && cols <= UINT16_MAX;
      free(s);
      if (!ok)
        goto bad;
      out->tty = true;
      out->rows = (unsigned short)rows;
      out->cols = (unsigned short)cols;
      break;
    }
    default:
      free(s);
      goto bad;
    }
  }
  if (nargs == 0) {
    request_clear(out);
    return hutch_error_set(err, EINVAL, "exec request without a command");
  }
  return 0;
bad:
  request_clear(out);
  return hutch_error_set(err, EPROTO, "malformed exec request");
}

void request_clear(struct exec_request *req) {
  strv_free(req->argv);
  strv_free(req->env);
  free(req->workdir);
  memset(req, 0, sizeof(*req));
}
