/* ADD beyond COPY: a URL, downloaded through hutch's allowlist proxy, and
 * a local tar archive, unpacked by the image import's unpacker
 * (dockerfile_add.c). */
#ifndef HUTCH_DOCKERFILE_ADD_H
#define HUTCH_DOCKERFILE_ADD_H

#include <stdbool.h>

#include "dockerfile_build.h"

/* http:// or https:// */
bool df_add_is_url(const char *s);
/* ADD URL DEST: tmpl has the destination, owner and mode (its sources are
 * the URL only).  Updates the stage's key; returns 1 when the layer was
 * reused, 0 when made, -1. */
int df_add_url(struct df_builder *b, struct df_stage *st, const struct df_instr *in, const char *url,
               const struct df_copy *tmpl, hutch_error_t *err);
/* ADD of context files: those that are tar archives unpacked into c->dest,
 * the rest copied as COPY does, in order, into one layer keyed `key`. */
int df_add_local(struct df_builder *b, struct df_stage *st, const struct df_instr *in, const struct df_copy *c,
                 const char *key, hutch_error_t *err);

#endif
