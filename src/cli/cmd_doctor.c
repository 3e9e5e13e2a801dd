/* SPDX-License-Identifier: Apache-2.0 */
/* hutch doctor: can a full-isolation sandbox start here, and if not, why
 * and how to fix it. */
#include "config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* The host cannot run a full-isolation sandbox (see hutch-doctor(1)). */
#define EXIT_NOT_READY 1

enum { OPT_JSON = 256, OPT_STORE, OPT_STATE_DIR };

static const struct option doctor_options[] = {
    {"json", no_argument, NULL, OPT_JSON},
    {"store", required_argument, NULL, OPT_STORE},
    {"state-dir", required_argument, NULL, OPT_STATE_DIR},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void doctor_usage(FILE *out) {
  fprintf(out, "Usage: hutch doctor [OPTIONS]\n\n"
               "Check, by trying each step, whether this host can run a full-isolation sandbox,\n"
               "and name the fix for what fails. Exit status: 0 when a sandbox can start, 1 when\n"
               "a required check failed, 125 when the checks themselves could not run.\n\n"
               "Options:\n"
               "  --json           print the checks as one JSON object\n"
               "  --store DIR      rootfs store to check (default: $HUTCH_STORE or the per-user store)\n"
               "  --state-dir DIR  state directory to check (default: $HUTCH_STATE_DIR or the per-user one)\n"
               "  -h, --help       show this help\n");
}

static const char *status_colour(enum hutch_check_status s) {
  switch (s) {
  case HUTCH_CHECK_OK:
    return "\033[32m";
  case HUTCH_CHECK_WARN:
    return "\033[33m";
  case HUTCH_CHECK_FAIL:
    return "\033[1;31m";
  default:
    return "\033[2m";
  }
}

static void print_indented(FILE *out, const char *prefix, const char *text) {
  const char *p = text;
  bool first = true;
  while (*p) {
    size_t n = strcspn(p, "\n");
    fprintf(out, "%s%.*s\n", first ? prefix : "           ", (int)n, p);
    first = false;
    p += n;
    if (*p == '\n')
      p++;
  }
}

static void print_table(const struct hutch_doctor_report *r, FILE *out) {
  bool colour = isatty(fileno(out)) && getenv("NO_COLOR") == NULL;
  const char *reset = colour ? "\033[0m" : "";
  fprintf(out, "%-6s %-46s %s\n", "STATUS", "CHECK", "DETAIL");
  for (size_t i = 0; i < r->n; i++) {
    const struct hutch_check *c = &r->checks[i];
    const char *name = hutch_check_status_name(c->status);
    char status[8];
    snprintf(status, sizeof(status), "%s", name);
    for (char *s = status; *s; s++)
      *s = (char)(*s - 'a' + 'A');
    fprintf(out, "%s%-6s%s %-46s %s\n", colour ? status_colour(c->status) : "", status, reset, c->title,
            c->detail ? c->detail : "");
    if (c->fix && (c->status == HUTCH_CHECK_FAIL || c->status == HUTCH_CHECK_WARN))
      print_indented(out, "    fix:   ", c->fix);
  }
  fprintf(out, "\n%s%s%s\n", colour ? (r->ready ? "\033[1;32m" : "\033[1;31m") : "",
          r->ready ? "A full-isolation sandbox can start on this host."
                   : "A full-isolation sandbox cannot start on this host: fix the FAIL lines above.",
          reset);
}

static int print_json(const struct hutch_doctor_report *r, FILE *out) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddBoolToObject(o, "ready", r->ready);
  cJSON_AddStringToObject(o, "environment", r->environment);
  /* Degraded modes are opt-in flags of exec/create; the doctor never picks one. */
  cJSON_AddItemToObject(o, "degraded", cJSON_CreateArray());
  cJSON *checks = cJSON_AddArrayToObject(o, "checks");
  for (size_t i = 0; i < r->n; i++) {
    const struct hutch_check *c = &r->checks[i];
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "id", c->id);
    cJSON_AddStringToObject(j, "title", c->title);
    cJSON_AddStringToObject(j, "status", hutch_check_status_name(c->status));
    cJSON_AddBoolToObject(j, "required", c->required);
    cJSON_AddStringToObject(j, "detail", c->detail ? c->detail : "");
    if (c->errnum) {
      cJSON_AddNumberToObject(j, "errno", c->errnum);
      const char *name = strerrorname_np(c->errnum);
      if (name)
        cJSON_AddStringToObject(j, "error", name);
    }
    if (c->fix)
      cJSON_AddStringToObject(j, "fix", c->fix);
    else
      cJSON_AddNullToObject(j, "fix");
    cJSON_AddItemToArray(checks, j);
  }
  char *text = cJSON_Print(o);
  cJSON_Delete(o);
  if (text == NULL)
    return -1;
  fprintf(out, "%s\n", text);
  free(text);
  return 0;
}

int cmd_doctor(int argc, char **argv) {
  bool json = false;
  struct hutch_doctor_options opts = {0};
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "+h", doctor_options, NULL)) != -1) {
    switch (c) {
    case OPT_JSON:
      json = true;
      break;
    case OPT_STORE:
      opts.store = optarg;
      break;
    case OPT_STATE_DIR:
      opts.state_dir = optarg;
      break;
    case 'h':
      doctor_usage(stdout);
      return 0;
    default:
      return cli_usage_error("doctor", "unknown option");
    }
  }
  if (optind < argc)
    return cli_usage_error("doctor", "unexpected argument '%s'", argv[optind]);

  struct hutch_doctor_report report;
  hutch_error_t err = NULL;
  if (hutch_doctor_run(&opts, &report, &err) < 0)
    return cli_fail(&err);
  if (json) {
    if (print_json(&report, stdout) < 0) {
      hutch_doctor_report_clear(&report);
      fprintf(stderr, "hutch doctor: out of memory formatting JSON\n");
      return EXIT_RUNTIME;
    }
  } else {
    print_table(&report, stdout);
  }
  int rc = report.ready ? 0 : EXIT_NOT_READY;
  hutch_doctor_report_clear(&report);
  return rc;
}
