/* SPDX-License-Identifier: Apache-2.0 */
/* The Dockerfile builder's parts: the build's state (dockerfile_build.c)
 * and the layers it makes (dockerfile_layer.c). */
#ifndef HUTCH_DOCKERFILE_BUILD_H
#define HUTCH_DOCKERFILE_BUILD_H

#include <stdbool.h>
#include <stddef.h>

#include "build_audit.h"
#include "build_step.h"
#include "dockerfile.h"
#include "dockerfile_copy.h"
#include "hutch.h"
#include "sha256.h"

struct cJSON;
struct hutch_store;
struct idmap_set;

struct df_stage {
  char *name;             /* AS name, or NULL */
  struct hutch_image top; /* the image so far: its newest layer */
  char key[SHA256_HEX_SIZE];
  char **env;  /* the image's environment, "K=V" */
  char **args; /* ARGs in effect, "K=V" */
  char *workdir, *user;
  char **shell;
  struct cJSON *config; /* cmd, entrypoint, labels, exposed_ports */
};

struct df_builder {
  const struct hutch_dockerfile_options *o;
  const char *origin;
  struct hutch_store *store;
  struct hutch_policy *policy;
  const struct idmap_set *maps;
  struct dockerfile df;
  int ctx_fd;
  struct df_ignore ignore;
  char **allow;
  char **global_args; /* ARGs before the first FROM */
  bool net;
  int log_fd;
  struct build_output out;  /* the terminal and the log, with the caps on what the steps wrote */
  size_t state_bytes;       /* counted against DF_MAX_STATE */
  struct build_audit audit; /* the build's audit log (build_audit.h) */
  size_t n_built, n_cached;
};

/* Printed to the output and the log (escaped: it may quote the Dockerfile). */
void df_say(struct df_builder *b, const char *fmt, ...) HUTCH_PRINTF(2, 3);
/* key = sha256(key, parts...) as hex. */
void df_key_next(char key[SHA256_HEX_SIZE], const char *kind, const char *text, const char *extra);
/* The layer keyed `key` on the stage's top, if the store has it (a cache hit). */
bool df_layer_cached(struct df_builder *b, struct df_stage *st, const char *key, hutch_error_t *err);
/* RUN argv in a sandbox on the stage's top; the layer becomes the top.
 * Returns 0, -1, or the step's exit code. */
int df_layer_run(struct df_builder *b, struct df_stage *st, const struct df_instr *in, char **argv, const char *key,
                 hutch_error_t *err);
/* A layer made on the host: copy (COPY/ADD), or, copy NULL, mkdir -p dir. */
int df_layer_copy(struct df_builder *b, struct df_stage *st, const struct df_instr *in, const struct df_copy *copy,
                  const char *dir, const char *key, hutch_error_t *err);
/* A layer made on the host by fill (layer: the new layer's directory,
 * absolute; layer_fd: it, open); it becomes the top, keyed `key`. */
typedef int (*df_layer_fill_fn)(struct df_builder *b, const char *layer, int layer_fd, void *data, hutch_error_t *err);
int df_layer_make(struct df_builder *b, struct df_stage *st, const struct df_instr *in, const char *key,
                  df_layer_fill_fn fill, void *data, hutch_error_t *err);
/* In a fill: copy (or, copy NULL, mkdir -p dir) into the layer, in a user
 * namespace with the build's maps. */
int df_layer_fill_copy(struct df_builder *b, const struct df_copy *copy, const char *dir, int layer_fd,
                       hutch_error_t *err);
/* The final entry: no files, the image's defaults in its meta.json. */
int df_layer_config(struct df_builder *b, struct df_stage *st, char digest[80], hutch_error_t *err);

/* ADD beyond COPY (dockerfile_add.c): a URL, downloaded through hutch's
 * allowlist proxy, and a local tar archive, unpacked by the image import's
 * unpacker. */
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
