/* SPDX-License-Identifier: Apache-2.0 */
/* hutch reset: a live sandbox back to its image's state, or to another
 * image's (hutch-exec(1), RESET). */
#include "config.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "util.h"

enum { OPT_STATE_DIR = 256, OPT_STORE, OPT_TO, OPT_JSON };

static const struct option reset_options[] = {
    {"to", required_argument, NULL, OPT_TO},
    {"store", required_argument, NULL, OPT_STORE},
    {"state-dir", required_argument, NULL, OPT_STATE_DIR},
    {"json", no_argument, NULL, OPT_JSON},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void reset_usage(FILE *out) {
  fprintf(out, "Usage: hutch reset [OPTIONS] ID\n\n"
               "Return a long-lived sandbox to its image's state: every process but its init\n"
               "ends, and its writable layer, /tmp and /dev/shm are empty again.  It starts\n"
               "anew from the configuration it was created with, under the same id, name and\n"
               "labels, with the same audit log; a paused sandbox comes back running.\n\n"
               "Options:\n"
               "  --to IMAGE       start it from this image (name or digest) instead, from now on\n"
               "  --store DIR      the store --to looks in (default: $HUTCH_STORE or the per-user store)\n"
               "  --state-dir DIR  where sandboxes keep their state (default: $HUTCH_STATE_DIR)\n"
               "  --json           print one JSON object: id, name, generation, image, pid, seconds\n"
               "  -h, --help       show this help\n");
}

/* The sandbox's status after the reset (generation, image, pid), or NULL. */
static struct hutch_sandbox_status *status_of(const char *state_dir, const char *id, struct hutch_sandbox_status **all,
                                              size_t *n) {
  hutch_error_t err = NULL;
  if (hutch_sandbox_list_status(state_dir, all, n, &err) < 0) {
    hutch_error_free(&err);
    return NULL;
  }
  for (size_t i = 0; i < *n; i++)
    if (strcmp((*all)[i].info.id, id) == 0)
      return &(*all)[i];
  return NULL;
}

int cmd_reset(int argc, char **argv) {
  const char *state_dir = NULL, *store_dir = NULL, *to = NULL;
  bool json = false;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "h", reset_options, NULL)) != -1) {
    switch (c) {
    case 'h':
      reset_usage(stdout);
      return 0;
    case OPT_JSON:
      json = true;
      break;
    case OPT_STATE_DIR:
      state_dir = optarg;
      break;
    case OPT_STORE:
      store_dir = optarg;
      break;
    case OPT_TO:
      to = optarg;
      break;
    default:
      return cli_usage_error("reset", "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind >= argc)
    return cli_usage_error("reset", "no sandbox id given");
  if (optind + 1 < argc)
    return cli_usage_error("reset", "unexpected argument '%s' (one sandbox at a time)", argv[optind + 1]);
  if (store_dir && !to)
    return cli_usage_error("reset", "--store is where --to looks for its image: give --to IMAGE");
  hutch_error_t err = NULL;
  struct hutch_store *store = NULL;
  struct hutch_image image = {0};
  struct hutch_sandbox *sb = NULL;
  int r = EXIT_RUNTIME;
  /* The image first: a name that is not there resets nothing. */
  if (to && (hutch_store_open(store_dir, &store, &err) < 0 || hutch_image_lookup(store, to, &image, &err) < 0)) {
    r = cli_fail(&err);
    goto out;
  }
  if (to)
    hutch_image_user_notice(&image);
  if (hutch_sandbox_open(state_dir, argv[optind], &sb, &err) < 0) {
    r = cli_fail(&err);
    goto out;
  }
  struct hutch_reset_options o = {.to = to ? &image : NULL};
  double t0 = monotonic_seconds();
  if (hutch_sandbox_reset(sb, &o, &err) < 0) {
    r = cli_fail(&err);
    goto out;
  }
  double seconds = monotonic_seconds() - t0;
  char id[40];
  snprintf(id, sizeof(id), "%s", hutch_sandbox_id(sb));
  struct hutch_sandbox_status *all = NULL;
  size_t n = 0;
  const struct hutch_sandbox_status *s = status_of(state_dir, id, &all, &n);
  if (json) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "id", id);
    if (s && s->name)
      cJSON_AddStringToObject(j, "name", s->name);
    if (s) {
      cJSON_AddNumberToObject(j, "generation", (double)s->generation);
      if (s->info.image)
        cJSON_AddStringToObject(j, "image", s->info.image);
      cJSON_AddNumberToObject(j, "pid", s->info.pid);
    }
    cJSON_AddNumberToObject(j, "seconds", seconds);
    _cleanup_free_ char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    printf("%s\n", text);
  } else if (s) {
    printf("%s reset (generation %llu, image %s) in %.1f ms\n", id, (unsigned long long)s->generation,
           s->info.image ? s->info.image : "?", seconds * 1000);
  } else {
    printf("%s reset in %.1f ms\n", id, seconds * 1000);
  }
  hutch_sandbox_status_free(all, n);
  r = 0;
out:
  hutch_sandbox_close(sb);
  hutch_image_clear(&image);
  hutch_store_close(store);
  return r;
}
