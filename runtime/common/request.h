/* SPDX-License-Identifier: Apache-2.0 */
/* Pure helpers for describing a process: environment merging and the wire
 * form of an exec request sent to a long-lived sandbox's init. */
#ifndef HUTCH_REQUEST_H
#define HUTCH_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hutch.h"

struct exec_request {
  char **argv;   /* NULL-terminated */
  char **env;    /* NULL-terminated "K=V", extra to the sandbox's own */
  char *workdir; /* may be NULL */
  bool tty;      /* a pseudo-terminal of rows x cols (payload.h) */
  unsigned short rows, cols;
};

/* Serialise into a newly allocated buffer; fails with E2BIG over max. */
int request_encode(const struct exec_request *req, size_t max, char **out, size_t *len, hutch_error_t *err);
int request_decode(const char *buf, size_t len, struct exec_request *out, hutch_error_t *err);
void request_clear(struct exec_request *req);

/* Build an environment from layers, later layers overriding earlier keys.
 * Each layer is a NULL-terminated "K=V" list (a NULL layer is skipped);
 * entries without '=' are ignored.  Returns a NULL-terminated array of
 * newly allocated strings. */
char **env_merge(const char *const *const *layers, size_t n_layers);
void strv_free(char **strv);
size_t strv_length(const char *const *strv);

#endif
