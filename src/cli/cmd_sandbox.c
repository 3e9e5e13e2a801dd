/* SPDX-License-Identifier: Apache-2.0 */
/* hutch ps and hutch rm. */
#include "config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "options.h"
#include "util.h"

enum { OPT_STATE_DIR = 256, OPT_JSON, OPT_ALL, OPT_FILTER };

static void ps_usage(FILE *out) {
  fprintf(out, "Usage: hutch ps [OPTIONS]\n\n"
               "List sandboxes: long-lived ones, running one-shot ones, and those left behind by a\n"
               "killed hutch (STATUS dead; `hutch rm` cleans them).  TTL is the time a sandbox has\n"
               "left (`create --ttl`, `hutch ttl`); one whose time ran out while nothing watched it\n"
               "is removed (or paused) now, and a warning says so.\n\n"
               "Options:\n"
               "  --state-dir DIR  where sandboxes keep their state (default: $HUTCH_STATE_DIR)\n"
               "  --filter F       only the sandboxes that match F: name=NAME, label=KEY,\n"
               "                   label=KEY=VALUE, status=running|paused|dead (repeatable: all must match)\n"
               "  -q, --quiet      print the ids alone, one a line\n"
               "  --json           print a JSON array\n"
               "  -h, --help       show this help\n");
}

static void rm_usage(FILE *out) {
  fprintf(out, "Usage: hutch rm [OPTIONS] ID|NAME...\n\n"
               "Kill everything in each sandbox and remove its directories. Works on sandboxes\n"
               "left behind by a killed hutch too.  A reset, fork, snapshot, pause or resume of\n"
               "it under way is waited for.\n\n"
               "Options:\n"
               "  --state-dir DIR  where sandboxes keep their state (default: $HUTCH_STATE_DIR)\n"
               "  --all            remove every sandbox of this state directory\n"
               "  -f, --force      a sandbox that does not exist is not an error\n"
               "  -h, --help       show this help\n");
}

static const struct option ps_options[] = {
    {"state-dir", required_argument, NULL, OPT_STATE_DIR},
    {"json", no_argument, NULL, OPT_JSON},
    {"filter", required_argument, NULL, OPT_FILTER},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static const struct option rm_options[] = {
    {"state-dir", required_argument, NULL, OPT_STATE_DIR},
    {"all", no_argument, NULL, OPT_ALL},
    {"force", no_argument, NULL, 'f'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* How the sandbox's limits were applied and, from its cgroup, what it used. */
static void add_limits(cJSON *parent, const struct hutch_limits_status *l, const struct hutch_usage *u) {
  if (l->mode[0] == '\0')
    return;
  cJSON *o = cJSON_AddObjectToObject(parent, "limits");
  cJSON_AddStringToObject(o, "mode", l->mode);
  cJSON_AddBoolToObject(o, "degraded", l->degraded);
  if (l->reason[0])
    cJSON_AddStringToObject(o, "reason", l->reason);
  if (l->cgroup[0])
    cJSON_AddStringToObject(o, "cgroup", l->cgroup);
  if (l->warning[0])
    cJSON_AddStringToObject(o, "warning", l->warning);
  if (u->cpu_usec || u->memory_peak) {
    cJSON *g = cJSON_AddObjectToObject(parent, "usage");
    if (u->memory_max)
      cJSON_AddNumberToObject(g, "memory_max", (double)u->memory_max);
    if (u->memory_peak)
      cJSON_AddNumberToObject(g, "memory_peak", (double)u->memory_peak);
    cJSON_AddNumberToObject(g, "oom_kills", (double)u->oom_kills);
    cJSON_AddNumberToObject(g, "cpu_usec", (double)u->cpu_usec);
    cJSON_AddNumberToObject(g, "nr_throttled", (double)u->nr_throttled);
  }
}

static const char *state_text(enum hutch_sandbox_state st) {
  return st == HUTCH_SANDBOX_RUNNING ? "running" : st == HUTCH_SANDBOX_PAUSED ? "paused" : "dead";
}

static cJSON *ps_json(const struct hutch_sandbox_status *s) {
  const struct hutch_sandbox_info *info = &s->info;
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "id", info->id);
  cJSON_AddNumberToObject(o, "pid", info->pid);
  cJSON_AddStringToObject(o, "status", state_text(s->state));
  if (s->state == HUTCH_SANDBOX_PAUSED)
    cJSON_AddStringToObject(o, "pause_method", hutch_pause_method_name(s->pause_method));
  cJSON_AddNumberToObject(o, "created", (double)info->created);
  if (info->image)
    cJSON_AddStringToObject(o, "image", info->image);
  add_limits(o, &info->limits, &info->usage);
  cJSON *net = cJSON_AddObjectToObject(o, "network");
  cJSON_AddStringToObject(net, "mode", info->net_proxy ? "proxy" : "none");
  if (info->net_proxy && info->net_address[0])
    cJSON_AddStringToObject(net, "address", info->net_address);
  cJSON *degraded = cJSON_AddArrayToObject(o, "degraded_modes");
  if (info->overlay_fuse)
    cJSON_AddItemToArray(degraded, cJSON_CreateString(HUTCH_DEGRADED_OVERLAY_FUSE));
  if (info->proc_host_ro)
    cJSON_AddItemToArray(degraded, cJSON_CreateString(HUTCH_DEGRADED_PROC_HOST_RO));
  if (info->limits.disk_unbounded)
    cJSON_AddItemToArray(degraded, cJSON_CreateString(HUTCH_DEGRADED_DISK_UNBOUNDED));
  if (s->ttl > 0) {
    cJSON_AddNumberToObject(o, "ttl", s->ttl);
    cJSON_AddNumberToObject(o, "ttl_left", s->ttl_left);
    cJSON_AddStringToObject(o, "on_ttl", s->on_ttl == HUTCH_TTL_PAUSE ? "pause" : "remove");
  } else {
    cJSON_AddNullToObject(o, "ttl");
    cJSON_AddNullToObject(o, "ttl_left");
  }
  /* Last, as the NAME column: what came before keeps its place. */
  if (s->name)
    cJSON_AddStringToObject(o, "name", s->name);
  else
    cJSON_AddNullToObject(o, "name");
  cJSON *labels = cJSON_AddObjectToObject(o, "labels");
  for (char **kv = s->labels; *kv; kv++) {
    const char *eq = strchr(*kv, '=');
    char key[HUTCH_LABEL_KEY_MAX + 1];
    snprintf(key, sizeof(key), "%.*s", (int)(eq - *kv), *kv);
    cJSON_DeleteItemFromObjectCaseSensitive(labels, key);
    cJSON_AddStringToObject(labels, key, eq + 1);
  }
  cJSON *devices = cJSON_AddArrayToObject(o, "devices");
  for (char **d = s->devices; *d; d++)
    cJSON_AddItemToArray(devices, cJSON_CreateString(*d));
  cli_add_ports_json(o, s->ports, s->n_ports);
  cJSON_AddNumberToObject(o, "generation", (double)s->generation); /* resets so far */
  if (s->forked_from[0])
    cJSON_AddStringToObject(o, "forked_from", s->forked_from);
  else
    cJSON_AddNullToObject(o, "forked_from");
  return o;
}

/* After NAME, only for a sandbox that publishes ports: "ADDR:HOSTPORT->PORT,...". */
static void ps_ports(const struct hutch_sandbox_status *s) {
  for (size_t i = 0; i < s->n_ports; i++) {
    bool v6 = strchr(s->ports[i].host_addr, ':') != NULL;
    printf("%s%s%s%s:%u->%u", i ? "," : " ", v6 ? "[" : "", s->ports[i].host_addr, v6 ? "]" : "", s->ports[i].host_port,
           s->ports[i].port);
  }
}

static void ps_line(const struct hutch_sandbox_status *s) {
  const struct hutch_sandbox_info *info = &s->info;
  char when[32] = "-";
  time_t t = (time_t)info->created;
  struct tm tm;
  if (t > 0 && localtime_r(&t, &tm))
    strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
  const struct hutch_limits_status *l = &info->limits;
  char lim[32];
  snprintf(lim, sizeof(lim), "%s%s", l->mode[0] ? l->mode : "-", l->degraded ? " (degraded)" : "");
  char degraded[64] = "";
  const char *modes[] = {info->overlay_fuse ? "overlay-fuse" : NULL, info->proc_host_ro ? "proc-host-ro" : NULL,
                         info->limits.disk_unbounded ? "disk-unbounded" : NULL};
  for (size_t m = 0; m < ARRAY_SIZE(modes); m++)
    if (modes[m])
      snprintf(degraded + strlen(degraded), sizeof(degraded) - strlen(degraded), "%s%s", degraded[0] ? "," : "",
               modes[m]);
  char shown[32];
  snprintf(shown, sizeof(shown), "%s%s%s", state_text(s->state), s->state == HUTCH_SANDBOX_PAUSED ? ":" : "",
           s->state == HUTCH_SANDBOX_PAUSED ? hutch_pause_method_name(s->pause_method) : "");
  /* The time left; a paused sandbox's stands still. */
  char ttl[40] = "-";
  if (s->ttl > 0) {
    format_duration(s->ttl_left, ttl, sizeof(ttl));
    if (s->on_ttl == HUTCH_TTL_PAUSE)
      snprintf(ttl + strlen(ttl), sizeof(ttl) - strlen(ttl), "%s", ":pause");
  }
  /* NAME last: the columns before it keep their places. */
  printf("%-14s %-8d %-8s %-20s %-18s %-6s %-18s %-12s %-24s %s", info->id, (int)info->pid, shown, when, lim,
         info->net_proxy ? "proxy" : "none", degraded[0] ? degraded : "-", ttl, info->image ? info->image : "-",
         s->name ? s->name : "-");
  ps_ports(s);
  printf("\n");
}

int cmd_ps(int argc, char **argv) {
  const char *state_dir = NULL;
  bool json = false, quiet = false;
  _cleanup_free_ const char **filters = NULL;
  size_t n_filters = 0;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "hq", ps_options, NULL)) != -1) {
    switch (c) {
    case OPT_STATE_DIR:
      state_dir = optarg;
      break;
    case OPT_JSON:
      json = true;
      break;
    case OPT_FILTER: {
      hutch_error_t bad = NULL;
      if (hutch_sandbox_filter_check(optarg, &bad) < 0) {
        int r = cli_usage_error("ps", "%s%s%s", bad->msg, bad->hint ? ": " : "", bad->hint ? bad->hint : "");
        hutch_error_free(&bad);
        return r;
      }
      filters = xrealloc(filters, (n_filters + 2) * sizeof(*filters));
      filters[n_filters++] = optarg;
      filters[n_filters] = NULL;
      break;
    }
    case 'q':
      quiet = true;
      break;
    case 'h':
      ps_usage(stdout);
      return 0;
    default:
      return cli_usage_error("ps", "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind < argc)
    return cli_usage_error("ps", "unexpected argument '%s'", argv[optind]);
  if (json && quiet)
    return cli_usage_error("ps", "--json and --quiet exclude each other");
  hutch_error_t err = NULL;
  struct hutch_sandbox_status *list;
  size_t n;
  if (hutch_sandbox_list_status(state_dir, &list, &n, &err) < 0)
    return cli_fail(&err);
  cJSON *arr = json ? cJSON_CreateArray() : NULL;
  if (!json && !quiet)
    printf("%-14s %-8s %-8s %-20s %-18s %-6s %-18s %-12s %-24s %s\n", "ID", "PID", "STATUS", "CREATED", "LIMITS", "NET",
           "DEGRADED", "TTL", "IMAGE", "NAME");
  for (size_t i = 0; i < n; i++) {
    if (!hutch_sandbox_status_matches(&list[i], filters))
      continue;
    if (json)
      cJSON_AddItemToArray(arr, ps_json(&list[i]));
    else if (quiet)
      printf("%s\n", list[i].info.id);
    else
      ps_line(&list[i]);
  }
  if (json) {
    char *s = cJSON_PrintUnformatted(arr);
    printf("%s\n", s);
    free(s);
    cJSON_Delete(arr);
  }
  hutch_sandbox_status_free(list, n);
  return 0;
}

int cmd_rm(int argc, char **argv) {
  const char *state_dir = NULL;
  bool all = false, force = false;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "hf", rm_options, NULL)) != -1) {
    switch (c) {
    case OPT_STATE_DIR:
      state_dir = optarg;
      break;
    case OPT_ALL:
      all = true;
      break;
    case 'f':
      force = true;
      break;
    case 'h':
      rm_usage(stdout);
      return 0;
    default:
      return cli_usage_error("rm", "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (!all && optind >= argc)
    return cli_usage_error("rm", "no sandbox id given");
  int status = 0;
  hutch_error_t err = NULL;
  if (all) {
    struct hutch_sandbox_info *infos;
    size_t n;
    if (hutch_sandbox_list(state_dir, &infos, &n, &err) < 0)
      return cli_fail(&err);
    for (size_t i = 0; i < n; i++)
      if (hutch_sandbox_remove(state_dir, infos[i].id, &err) < 0)
        status = cli_fail(&err);
    hutch_sandbox_info_free(infos, n);
  }
  for (int i = optind; i < argc; i++) {
    if (hutch_sandbox_remove(state_dir, argv[i], &err) == 0)
      continue;
    /* -f: what is already gone is what was asked for. */
    if (force && err->errnum == ENOENT)
      hutch_error_free(&err);
    else
      status = cli_fail(&err);
  }
  return status;
}
