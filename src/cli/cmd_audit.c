/* SPDX-License-Identifier: Apache-2.0 */
/* hutch audit: print a sandbox's audit log and verify its hash chain
 * (hutch-audit(1), the format in hutch-audit(5)). */
#include "config.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "util.h"

static const char audit_usage[] = "Usage: hutch audit [--json] [--quiet] [--state-dir DIR] ID|DIR|FILE\n"
                                  "\n"
                                  "Print a sandbox's audit log (hutch-audit(5)) and verify it: every line's\n"
                                  "place and the sha256 of the line before it, and the log's end against its\n"
                                  "head file (FILE.head).  ID is a sandbox's id (a live one's state directory,\n"
                                  "else the archive of ended ones); DIR a directory holding audit.jsonl (a run\n"
                                  "directory); FILE a log (exec --audit FILE).  Exit status 0: the log is\n"
                                  "whole; 1: it is broken (edited, cut, or lines removed), and where.\n"
                                  "\n"
                                  "Options:\n"
                                  "  --json           print one JSON object: the verdict and the records\n"
                                  "  --quiet          print the verdict only\n"
                                  "  --state-dir DIR  where sandboxes live (default: $HUTCH_STATE_DIR,\n"
                                  "                   $XDG_RUNTIME_DIR/hutch or /run/hutch)\n"
                                  "  -h, --help       show this help\n";

enum { OPT_JSON = 256, OPT_QUIET, OPT_STATE_DIR };

struct printer {
  bool json, quiet;
  cJSON *records;
};

/* The log is written ASCII-only, but an edited one may hold anything: what
 * reaches the terminal is escaped, and --json gives a line that is not one
 * JSON object as a string. */
static void print_line(const char *text, size_t len, uint64_t no, void *data) {
  struct printer *p = data;
  if (p->quiet)
    return;
  _cleanup_free_ char *safe = text_escape_controls(text, len);
  if (p->json) {
    cJSON *rec = cJSON_ParseWithLength(text, len);
    if (rec == NULL || !cJSON_IsObject(rec)) {
      cJSON_Delete(rec);
      rec = cJSON_CreateString(safe);
    }
    cJSON_AddItemToArray(p->records, rec);
  } else {
    printf("%6" PRIu64 " %s\n", no, safe);
  }
}

/* "; network: ..." when the log says what became of the proxy's lines:
 * the requests counted but not logged, the lines left out at the bound,
 * or that its log could not be read (then its requests are unknown). */
static const char *network_text(const struct hutch_audit_verdict *v, char *buf, size_t len) {
  if (!v->net)
    return "";
  if (v->net_unread) {
    snprintf(buf, len, "; network: the proxy's log was not read (see its net_unread record): requests unknown");
    return buf;
  }
  int n = snprintf(buf, len, "; network: %" PRIu64 " requests", v->net_requests);
  if (v->net_unlogged && n > 0 && (size_t)n < len)
    n += snprintf(buf + n, len - (size_t)n, ", %" PRIu64 " not logged by the proxy", v->net_unlogged);
  if (v->net_not_joined && n > 0 && (size_t)n < len)
    snprintf(buf + n, len - (size_t)n, ", %" PRIu64 " proxy lines not joined (the audit log's bound)",
             v->net_not_joined);
  return buf;
}

int cmd_audit(int argc, char **argv) {
  static const struct option longopts[] = {
      {"json", no_argument, NULL, OPT_JSON},
      {"quiet", no_argument, NULL, OPT_QUIET},
      {"state-dir", required_argument, NULL, OPT_STATE_DIR},
      {"help", no_argument, NULL, 'h'},
      {0},
  };
  struct printer p = {0};
  const char *state_dir = NULL;
  int c;
  optind = 0;
  while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    switch (c) {
    case OPT_JSON:
      p.json = true;
      break;
    case OPT_QUIET:
      p.quiet = true;
      break;
    case OPT_STATE_DIR:
      state_dir = optarg;
      break;
    case 'h':
      fputs(audit_usage, stdout);
      return 0;
    case ':':
      return cli_usage_error("audit", "option %s needs an argument", argv[optind - 1]);
    default:
      return cli_usage_error("audit", "unknown option %s", argv[optind - 1]);
    }
  }
  if (optind + 1 != argc)
    return cli_usage_error("audit", "give one sandbox id, directory or log file");
  hutch_error_t err = NULL;
  _cleanup_free_ char *path = NULL;
  if (hutch_audit_find(state_dir, argv[optind], &path, &err) < 0)
    return cli_fail(&err);
  p.records = cJSON_CreateArray();
  struct hutch_audit_verdict v;
  int r = hutch_audit_verify(path, print_line, &p, &v, &err);
  if (r < 0) {
    cJSON_Delete(p.records);
    return cli_fail(&err);
  }
  _cleanup_free_ char *where = text_escape_cstr(path);
  char net[256];
  if (p.json) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "log", where);
    cJSON_AddBoolToObject(o, "ok", v.ok);
    cJSON_AddNumberToObject(o, "lines", (double)v.lines);
    if (v.ok)
      cJSON_AddNullToObject(o, "broken_line");
    else
      cJSON_AddNumberToObject(o, "broken_line", (double)v.broken_line);
    cJSON_AddStringToObject(o, "reason", v.reason);
    cJSON_AddBoolToObject(o, "ended", v.ended);
    cJSON_AddBoolToObject(o, "capped", v.capped);
    cJSON_AddBoolToObject(o, "head", v.headed);
    if (v.net) {
      cJSON *jn = cJSON_AddObjectToObject(o, "network");
      cJSON_AddBoolToObject(jn, "read", !v.net_unread);
      if (!v.net_unread) {
        cJSON_AddNumberToObject(jn, "requests", (double)v.net_requests);
        cJSON_AddNumberToObject(jn, "unlogged", (double)v.net_unlogged);
        cJSON_AddNumberToObject(jn, "not_joined", (double)v.net_not_joined);
      }
    }
    cJSON_AddItemToObject(o, "records", p.records);
    _cleanup_free_ char *text = cJSON_Print(o);
    cJSON_Delete(o);
    puts(text);
  } else {
    cJSON_Delete(p.records);
    if (v.ok)
      printf("audit: %s: verified, %" PRIu64 " records, %s%s%s\n", where, v.lines,
             v.ended ? "ended" : "open (the sandbox still runs)", v.capped ? ", capped: records were dropped" : "",
             network_text(&v, net, sizeof(net)));
    else
      printf("audit: %s: BROKEN: %s\n", where, v.reason);
  }
  return v.ok ? 0 : 1;
}
