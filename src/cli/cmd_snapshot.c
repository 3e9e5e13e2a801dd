/* SPDX-License-Identifier: Apache-2.0 */
/* hutch snapshot: a live sandbox's files kept as an image, without
 * stopping it (hutch-exec(1), SNAPSHOT). */
#include "config.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "util.h"

enum { OPT_STATE_DIR = 256, OPT_STORE, OPT_NAME, OPT_JSON };

static const struct option snapshot_options[] = {{"name", required_argument, NULL, OPT_NAME},
                                                 {"store", required_argument, NULL, OPT_STORE},
                                                 {"state-dir", required_argument, NULL, OPT_STATE_DIR},
                                                 {"json", no_argument, NULL, OPT_JSON},
                                                 {"help", no_argument, NULL, 'h'},
                                                 {NULL, 0, NULL, 0}};

static void snapshot_usage(FILE *out) {
  fprintf(out, "Usage: hutch snapshot [OPTIONS] ID\n\n"
               "Keep a live sandbox's files as an image, without stopping it: its writable\n"
               "layer, read while the sandbox is paused (for the copy only; a paused sandbox\n"
               "stays paused), becomes a layer over the image it runs, in that image's store.\n"
               "`hutch create --rootfs IMAGE` starts from it.  Its binds, /tmp and /dev/shm\n"
               "are not part of it, nor its --env (an image is files: give it again; `hutch\n"
               "reset --to IMAGE` keeps it, and so does `hutch fork`).  Prints the image's\n"
               "digest.\n\n"
               "Options:\n"
               "  --name IMAGE     name the image (a name in use moves to it)\n"
               "  --store DIR      the store of the sandbox's image (the only one allowed)\n"
               "  --state-dir DIR  where sandboxes keep their state (default: $HUTCH_STATE_DIR)\n"
               "  --json           print one JSON object: id, digest, name, bytes, files,\n"
               "                   paused_ms, method, was_paused\n"
               "  -h, --help       show this help\n");
}

int cmd_snapshot(int argc, char **argv) {
  struct hutch_snapshot_options o = {0};
  const char *state_dir = NULL;
  bool json = false;
  opterr = 0;
  optind = 1;
  for (int c; (c = getopt_long(argc, argv, "h", snapshot_options, NULL)) != -1;) {
    const char **value = c == OPT_NAME ? &o.name : c == OPT_STORE ? &o.store : c == OPT_STATE_DIR ? &state_dir : NULL;
    if (value)
      *value = optarg;
    else if (c == OPT_JSON)
      json = true;
    else if (c != 'h')
      return cli_usage_error("snapshot", "unknown option or missing value: '%s'", argv[optind - 1]);
    else {
      snapshot_usage(stdout);
      return 0;
    }
  }
  if (optind >= argc)
    return cli_usage_error("snapshot", "no sandbox id given");
  if (optind + 1 < argc)
    return cli_usage_error("snapshot", "unexpected argument '%s' (one sandbox at a time)", argv[optind + 1]);
  if (o.name && !hutch_image_name_valid(o.name))
    return cli_usage_error("snapshot", "'%s' is not a valid image name", o.name);
  const char *id = argv[optind];
  hutch_error_t err = NULL;
  struct hutch_sandbox *sb;
  if (hutch_sandbox_open(state_dir, id, &sb, &err) < 0)
    return cli_fail(&err);
  struct hutch_snapshot_result r;
  int rc = hutch_sandbox_snapshot(sb, &o, &r, &err);
  char sid[40];
  snprintf(sid, sizeof(sid), "%s", hutch_sandbox_id(sb));
  hutch_sandbox_close(sb);
  if (rc < 0)
    return cli_fail(&err);
  if (json) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "id", sid);
    cJSON_AddStringToObject(j, "digest", r.digest);
    if (o.name)
      cJSON_AddStringToObject(j, "name", o.name);
    else
      cJSON_AddNullToObject(j, "name");
    cJSON_AddNumberToObject(j, "bytes", (double)r.size);
    cJSON_AddNumberToObject(j, "files", (double)r.files);
    cJSON_AddNumberToObject(j, "paused_ms", r.paused_seconds * 1000);
    cJSON_AddStringToObject(j, "method", hutch_pause_method_name(r.method));
    cJSON_AddBoolToObject(j, "was_paused", r.was_paused);
    _cleanup_free_ char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    printf("%s\n", s);
  } else {
    printf("%s\n", r.digest);
  }
  return 0;
}
