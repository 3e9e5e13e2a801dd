/* SPDX-License-Identifier: Apache-2.0 */
/* The rows of the doctor's report: add one, set its detail and fix; and
 * the report's public helpers (hutch.h). */
#include "config.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "doctor.h"
#include "util.h"

/* The checks add their rows while holding pointers to the rows they added
 * before (a check's row and its sub-rows): the array is allocated once, at
 * its full size, and never moves.  The doctor has a few dozen rows; more
 * than REPORT_ROWS_MAX is a programming error. */
#define REPORT_ROWS_MAX 256

struct hutch_check *report_add(struct report *r, const char *id, const char *title, bool required) {
  if (r->checks == NULL) {
    r->cap = REPORT_ROWS_MAX;
    r->checks = xcalloc(r->cap, sizeof(*r->checks));
  }
  if (r->n == r->cap)
    abort();
  struct hutch_check *c = &r->checks[r->n++];
  *c = (struct hutch_check){.id = id, .title = title, .required = required, .status = HUTCH_CHECK_OK};
  return c;
}

void report_detail(struct hutch_check *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  free(c->detail);
  c->detail = xvasprintf(fmt, ap);
  va_end(ap);
}

/* The detail of a failed step: "FMT: strerror(errnum)" (hutch_errno_format). */
void report_detail_errno(struct hutch_check *c, int errnum, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  _cleanup_free_ char *what = xvasprintf(fmt, ap);
  va_end(ap);
  free(c->detail);
  c->detail = hutch_errno_format(errnum, "%s", what);
}

void report_fix(struct hutch_check *c, char *fix) {
  free(c->fix);
  c->fix = fix;
}

const char *probe_stage_name(int stage) {
  switch (stage) {
  case PROBE_STAGE_UNSHARE:
    return "creating the namespaces";
  case PROBE_STAGE_MAPS:
    return "writing the id maps";
  case PROBE_STAGE_RUN:
    return "inside the namespaces";
  case PROBE_STAGE_CRASH:
    return "the probe died";
  default:
    return "done";
  }
}

/* "step (stage): strerror" for a failed probe. */
void report_fail(struct hutch_check *c, const struct probe_result *res) {
  c->status = HUTCH_CHECK_FAIL;
  c->errnum = res->errnum;
  if (res->stage == PROBE_STAGE_CRASH)
    report_detail(c, "%s", res->what);
  else
    report_detail_errno(c, res->errnum, "%s failed (%s)", res->what, probe_stage_name(res->stage));
}

void hutch_doctor_report_clear(struct hutch_doctor_report *report) {
  for (size_t i = 0; i < report->n; i++) {
    free(report->checks[i].detail);
    free(report->checks[i].fix);
  }
  free(report->checks);
  free(report->environment);
  memset(report, 0, sizeof(*report));
}

const char *hutch_check_status_name(enum hutch_check_status status) {
  switch (status) {
  case HUTCH_CHECK_OK:
    return "ok";
  case HUTCH_CHECK_INFO:
    return "info";
  case HUTCH_CHECK_SKIP:
    return "skip";
  case HUTCH_CHECK_WARN:
    return "warn";
  default:
    return "fail";
  }
}
