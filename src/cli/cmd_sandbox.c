/* SPDX-License-Identifier: Apache-2.0 */
/* hutch ps and hutch rm. */
#include "config.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "util.h"

enum { OPT_STATE_DIR = 256, OPT_JSON, OPT_ALL };

static void ps_usage(FILE *out) {
  fprintf(out, "Usage: hutch ps [OPTIONS]\n\n"
               "List sandboxes: long-lived ones, running one-shot ones, and those left behind by a\n"
               "killed hutch (STATUS dead; `hutch rm` cleans them).\n\n"
               "Options:\n"
               "  --state-dir DIR  where sandboxes keep their state (default: $HUTCH_STATE_DIR)\n"
               "  --json           print a JSON array\n"
               "  -h, --help       show this help\n");
}

static void rm_usage(FILE *out) {
  fprintf(out, "Usage: hutch rm [OPTIONS] ID...\n\n"
               "Kill everything in each sandbox and remove its directories. Works on sandboxes\n"
               "left behind by a killed hutch too.\n\n"
               "Options:\n"
               "  --state-dir DIR  where sandboxes keep their state (default: $HUTCH_STATE_DIR)\n"
               "  --all            remove every sandbox of this state directory\n"
               "  -h, --help       show this help\n");
}

static const struct option ps_options[] = {
    {"state-dir", required_argument, NULL, OPT_STATE_DIR},
    {"json", no_argument, NULL, OPT_JSON},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static const struct option rm_options[] = {
    {"state-dir", required_argument, NULL, OPT_STATE_DIR},
    {"all", no_argument, NULL, OPT_ALL},
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

int cmd_ps(int argc, char **argv) {
  const char *state_dir = NULL;
  bool json = false;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "h", ps_options, NULL)) != -1) {
    switch (c) {
    case OPT_STATE_DIR:
      state_dir = optarg;
      break;
    case OPT_JSON:
      json = true;
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
  hutch_error_t err = NULL;
  struct hutch_sandbox_info *infos;
  size_t n;
  if (hutch_sandbox_list(state_dir, &infos, &n, &err) < 0)
    return cli_fail(&err);
  if (json) {
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++) {
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "id", infos[i].id);
      cJSON_AddNumberToObject(o, "pid", infos[i].pid);
      enum hutch_pause_method pm;
      cJSON_AddStringToObject(o, "status", cli_sandbox_status(state_dir, infos[i].id, infos[i].running, &pm));
      if (pm != HUTCH_PAUSE_NONE)
        cJSON_AddStringToObject(o, "pause_method", hutch_pause_method_name(pm));
      cJSON_AddNumberToObject(o, "created", (double)infos[i].created);
      if (infos[i].image)
        cJSON_AddStringToObject(o, "image", infos[i].image);
      add_limits(o, &infos[i].limits, &infos[i].usage);
      cJSON *net = cJSON_AddObjectToObject(o, "network");
      cJSON_AddStringToObject(net, "mode", infos[i].net_proxy ? "proxy" : "none");
      if (infos[i].net_proxy && infos[i].net_address[0])
        cJSON_AddStringToObject(net, "address", infos[i].net_address);
      cJSON *degraded = cJSON_AddArrayToObject(o, "degraded_modes");
      if (infos[i].overlay_fuse)
        cJSON_AddItemToArray(degraded, cJSON_CreateString(HUTCH_DEGRADED_OVERLAY_FUSE));
      if (infos[i].proc_host_ro)
        cJSON_AddItemToArray(degraded, cJSON_CreateString(HUTCH_DEGRADED_PROC_HOST_RO));
      if (infos[i].limits.disk_unbounded)
        cJSON_AddItemToArray(degraded, cJSON_CreateString(HUTCH_DEGRADED_DISK_UNBOUNDED));
      cJSON_AddItemToArray(arr, o);
    }
    char *s = cJSON_PrintUnformatted(arr);
    printf("%s\n", s);
    free(s);
    cJSON_Delete(arr);
  } else {
    printf("%-14s %-8s %-8s %-20s %-18s %-6s %-18s %s\n", "ID", "PID", "STATUS", "CREATED", "LIMITS", "NET", "DEGRADED",
           "IMAGE");
    for (size_t i = 0; i < n; i++) {
      char when[32] = "-";
      time_t t = (time_t)infos[i].created;
      struct tm tm;
      if (t > 0 && localtime_r(&t, &tm))
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
      const struct hutch_limits_status *l = &infos[i].limits;
      char lim[32];
      snprintf(lim, sizeof(lim), "%s%s", l->mode[0] ? l->mode : "-", l->degraded ? " (degraded)" : "");
      char degraded[64] = "";
      const char *modes[] = {infos[i].overlay_fuse ? "overlay-fuse" : NULL,
                             infos[i].proc_host_ro ? "proc-host-ro" : NULL,
                             infos[i].limits.disk_unbounded ? "disk-unbounded" : NULL};
      for (size_t m = 0; m < ARRAY_SIZE(modes); m++)
        if (modes[m])
          snprintf(degraded + strlen(degraded), sizeof(degraded) - strlen(degraded), "%s%s", degraded[0] ? "," : "",
                   modes[m]);
      enum hutch_pause_method pm;
      const char *status = cli_sandbox_status(state_dir, infos[i].id, infos[i].running, &pm);
      char shown[32];
      snprintf(shown, sizeof(shown), "%s%s%s", status, pm != HUTCH_PAUSE_NONE ? ":" : "",
               pm != HUTCH_PAUSE_NONE ? hutch_pause_method_name(pm) : "");
      printf("%-14s %-8d %-8s %-20s %-18s %-6s %-18s %s\n", infos[i].id, (int)infos[i].pid, shown, when, lim,
             infos[i].net_proxy ? "proxy" : "none", degraded[0] ? degraded : "-",
             infos[i].image ? infos[i].image : "-");
    }
  }
  hutch_sandbox_info_free(infos, n);
  return 0;
}

int cmd_rm(int argc, char **argv) {
  const char *state_dir = NULL;
  bool all = false;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "h", rm_options, NULL)) != -1) {
    switch (c) {
    case OPT_STATE_DIR:
      state_dir = optarg;
      break;
    case OPT_ALL:
      all = true;
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
  for (int i = optind; i < argc; i++)
    if (hutch_sandbox_remove(state_dir, argv[i], &err) < 0)
      status = cli_fail(&err);
  return status;
}
