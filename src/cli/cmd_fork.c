/* SPDX-License-Identifier: Apache-2.0 */
/* hutch fork: new live sandboxes that start from a live one's files
 * (hutch-exec(1), FORK). */
#include "config.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "options.h"
#include "util.h"

enum { OPT_STATE_DIR = 256, OPT_NAME, OPT_LABEL, OPT_TTL, OPT_ON_TTL, OPT_JSON };

static const struct option fork_options[] = {
    {"count", required_argument, NULL, 'n'},
    {"name", required_argument, NULL, OPT_NAME},
    {"label", required_argument, NULL, OPT_LABEL},
    {"ttl", required_argument, NULL, OPT_TTL},
    {"on-ttl", required_argument, NULL, OPT_ON_TTL},
    {"state-dir", required_argument, NULL, OPT_STATE_DIR},
    {"json", no_argument, NULL, OPT_JSON},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void fork_usage(FILE *out) {
  fprintf(out,
          "Usage: hutch fork [OPTIONS] ID\n\n"
          "Start new live sandboxes from a live one's files, and print their ids, one a line.\n"
          "Each child gets a copy of the sandbox's writable layer, taken while it is paused\n"
          "(for the copy only; a paused sandbox stays paused), and the configuration it was\n"
          "created with: image, environment, binds, limits, network options, policy.  Its\n"
          "/tmp, /dev/shm and processes are not carried; each child is independent of the\n"
          "sandbox and of the others.\n\n"
          "Options:\n"
          "  -n, --count N        how many children (1 to %d; default 1)\n"
          "  --name NAME          the next child's name (repeatable: the first children take them)\n"
          "  --label KEY=VALUE    a label for every child (repeatable)\n"
          "  --ttl DURATION       remove each child once it has run this long (90s, 10m, 2h)\n"
          "  --on-ttl ACTION      what the end of --ttl does: remove (default) or pause\n"
          "  --state-dir DIR      where sandboxes keep their state (default: $HUTCH_STATE_DIR)\n"
          "  --json               print one JSON object: id, children, paused_ms, method,\n"
          "                       was_paused, seconds\n"
          "  -h, --help           show this help\n",
          HUTCH_FORK_MAX);
}

/* The syntax of a name or a label, as create checks it: a usage error. */
static int check_extra(const char *name, const char *label) {
  hutch_error_t bad = NULL;
  const char *one[] = {label, NULL};
  struct hutch_sandbox_extras x = {.name = name, .labels = label ? one : NULL};
  if (hutch_sandbox_extras_check(&x, &bad) == 0)
    return 0;
  int r = cli_usage_error("fork", "%s%s%s", bad->msg, bad->hint ? ": " : "", bad->hint ? bad->hint : "");
  hutch_error_free(&bad);
  return r;
}

static void print_json(const char *id, struct hutch_sandbox **children, unsigned n, const struct hutch_fork_result *r,
                       double seconds) {
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "id", id);
  cJSON *ids = cJSON_AddArrayToObject(j, "children");
  for (unsigned i = 0; i < n; i++)
    cJSON_AddItemToArray(ids, cJSON_CreateString(hutch_sandbox_id(children[i])));
  cJSON_AddNumberToObject(j, "paused_ms", r->paused_seconds * 1000);
  cJSON_AddStringToObject(j, "method", hutch_pause_method_name(r->method));
  cJSON_AddBoolToObject(j, "was_paused", r->was_paused);
  cJSON_AddNumberToObject(j, "seconds", seconds);
  _cleanup_free_ char *text = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
  printf("%s\n", text);
}

int cmd_fork(int argc, char **argv) {
  const char *state_dir = NULL;
  const char *names[HUTCH_FORK_MAX + 1] = {NULL};
  const char *labels[HUTCH_LABELS_MAX + 1] = {NULL};
  size_t n_names = 0, n_labels = 0;
  struct hutch_fork_options o = {.n = 1};
  bool json = false, on_ttl_set = false;
  optind = 1;
  opterr = 0;
  int c, r;
  while ((c = getopt_long(argc, argv, "hn:", fork_options, NULL)) != -1) {
    switch (c) {
    case 'h':
      fork_usage(stdout);
      return 0;
    case 'n': {
      char *end;
      unsigned long v = strtoul(optarg, &end, 10);
      if (*optarg < '0' || *optarg > '9' || *end != '\0' || v < 1 || v > HUTCH_FORK_MAX)
        return cli_usage_error("fork", "-n wants a number of children from 1 to %d, got '%s'", HUTCH_FORK_MAX, optarg);
      o.n = (unsigned)v;
      break;
    }
    case OPT_NAME:
      if ((r = check_extra(optarg, NULL)) != 0)
        return r;
      if (n_names == HUTCH_FORK_MAX)
        return cli_usage_error("fork", "at most %d names", HUTCH_FORK_MAX);
      names[n_names++] = optarg;
      break;
    case OPT_LABEL:
      if ((r = check_extra(NULL, optarg)) != 0)
        return r;
      if (n_labels == HUTCH_LABELS_MAX)
        return cli_usage_error("fork", "at most %d labels", HUTCH_LABELS_MAX);
      labels[n_labels++] = optarg;
      break;
    case OPT_TTL: {
      struct hutch_sandbox_extras x = {0};
      if (!parse_duration(optarg, &x.ttl) || hutch_sandbox_extras_check(&x, NULL) < 0)
        return cli_usage_error("fork", "--ttl wants a duration such as 90s, 10m or 2h (at most ten years), got '%s'",
                               optarg);
      o.ttl = x.ttl;
      break;
    }
    case OPT_ON_TTL:
      if (cli_parse_on_ttl("fork", optarg, &o.on_ttl) != 0)
        return EXIT_USAGE;
      on_ttl_set = true;
      break;
    case OPT_STATE_DIR:
      state_dir = optarg;
      break;
    case OPT_JSON:
      json = true;
      break;
    default:
      return cli_usage_error("fork", "unknown option or missing value: '%s'", argv[optind - 1]);
    }
  }
  if (optind >= argc)
    return cli_usage_error("fork", "no sandbox id given");
  if (optind + 1 < argc)
    return cli_usage_error("fork", "unexpected argument '%s' (one sandbox at a time; -n N for more children)",
                           argv[optind + 1]);
  if (on_ttl_set && o.ttl == 0)
    return cli_usage_error("fork", "--on-ttl needs --ttl");
  if (n_names > o.n)
    return cli_usage_error("fork", "%zu names for %u children (-n)", n_names, o.n);
  for (size_t i = 0; i < n_names; i++)
    for (size_t j = 0; j < i; j++)
      if (strcmp(names[i], names[j]) == 0)
        return cli_usage_error("fork", "--name %s given twice: a name is one sandbox's", names[i]);
  o.names = n_names ? names : NULL;
  o.labels = n_labels ? labels : NULL;

  hutch_error_t err = NULL;
  struct hutch_sandbox *sb;
  if (hutch_sandbox_open(state_dir, argv[optind], &sb, &err) < 0)
    return cli_fail(&err);
  /* Its children's network is the parent's: --net proxy's veth is set up
   * over libmnl, which the musl front end lacks (hutch-full goes on). */
  if (hutch_sandbox_audit_log(sb) != NULL && (r = cli_hand_over("a fork of a --net proxy sandbox")) >= 0) {
    hutch_sandbox_close(sb);
    return r;
  }
  struct hutch_sandbox *children[HUTCH_FORK_MAX];
  struct hutch_fork_result res;
  double t0 = monotonic_seconds();
  r = hutch_sandbox_fork(sb, &o, children, &res, &err);
  double seconds = monotonic_seconds() - t0;
  char id[40];
  snprintf(id, sizeof(id), "%s", hutch_sandbox_id(sb));
  hutch_sandbox_close(sb);
  if (r < 0)
    return cli_fail(&err);
  if (json)
    print_json(id, children, o.n, &res, seconds);
  else
    for (unsigned i = 0; i < o.n; i++)
      printf("%s\n", hutch_sandbox_id(children[i]));
  for (unsigned i = 0; i < o.n; i++)
    hutch_sandbox_close(children[i]);
  return 0;
}
