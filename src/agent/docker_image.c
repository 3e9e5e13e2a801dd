/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "docker_image.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "lis_compat.h"
#include "util.h"

struct pull_view {
  const char *label;
  bool tty, quiet;
  int last_pct;
};

/* A percentage per step on a terminal; a line per step otherwise. */
static void on_phase(const char *label, void *data) {
  struct pull_view *v = data;
  if (v->tty && v->last_pct >= 0)
    fputs("\n", stderr);
  v->label = label;
  v->last_pct = -1;
  if (label && !v->quiet && !v->tty)
    fprintf(stderr, "hutch run: %s\n", label);
}

static void on_progress(uint64_t done, uint64_t total, void *data) {
  struct pull_view *v = data;
  if (!v->tty || v->quiet || total == 0)
    return;
  int pct = (int)(done >= total ? 100 : done * 100 / total);
  if (pct == v->last_pct)
    return;
  v->last_pct = pct;
  fprintf(stderr, "\rhutch run: %s %3d%%", v->label ? v->label : "pulling", pct);
}

int docker_image_ensure(struct settings *s) {
  if (s->docker_image == NULL)
    return 0;
  _cleanup_free_ char *name = lis_store_name(s->docker_image);
  _cleanup_error_ hutch_error_t err = NULL;
  struct hutch_store *store = NULL;
  if (hutch_store_open(s->store, &store, &err) < 0) {
    hutch_error_print(stderr, "hutch run", err);
    return AGENT_EXIT_RUNTIME;
  }
  struct hutch_image image = {0};
  int r = hutch_image_lookup(store, name, &image, &err);
  if (r < 0 && err->errnum == ENOENT) {
    hutch_error_free(&err);
    _cleanup_free_ char *ref = xasprintf("docker://%s", s->docker_image);
    if (!s->quiet)
      fprintf(stderr, "hutch run: image %s is not in the store: pulling %s\n", name, ref);
    struct pull_view v = {.tty = isatty(STDERR_FILENO), .quiet = s->quiet, .last_pct = -1};
    struct hutch_pull_options o = {.name = name, .progress = on_progress, .phase = on_phase, .data = &v};
    r = hutch_image_pull(store, ref, &o, &image, &err);
    on_phase(NULL, &v);
    if (r >= 0 && !s->quiet)
      fprintf(stderr, "hutch run: pulled %s as %s (%s)\n", ref, name, image.digest);
  }
  hutch_image_clear(&image);
  hutch_store_close(store);
  if (r < 0) {
    hutch_error_wrap(&err, "--docker-image %s", s->docker_image);
    hutch_error_print(stderr, "hutch run", err);
    return AGENT_EXIT_RUNTIME;
  }
  free(s->rootfs);
  s->rootfs = steal_pointer(&name);
  return 0;
}
