/* SPDX-License-Identifier: Apache-2.0 */
/* Parsing /proc/PID/stat: the fields after a comm that holds spaces and
 * parentheses, and what is refused. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc_stat.h"
#include "tap.h"

/* A line as the kernel writes it, with fields 3..52; field N holds N*10. */
static char *line(const char *comm) {
  char buf[2048];
  int n = snprintf(buf, sizeof(buf), "42 (%s) S", comm);
  for (int f = 4; f <= 52; f++)
    n += snprintf(buf + n, sizeof(buf) - (size_t)n, " %d", f * 10);
  snprintf(buf + n, sizeof(buf) - (size_t)n, "\n");
  return strdup(buf);
}

int main(void) {
  uint64_t v[4];
  char *l = line("bash");
  tap_ok(proc_stat_parse(l, PROC_STAT_START_TIME, 1, v) && v[0] == 220, "start time is field 22");
  tap_ok(proc_stat_parse(l, PROC_STAT_ARG_START, 4, v) && v[0] == 480 && v[1] == 490 && v[2] == 500 && v[3] == 510,
         "arg_start, arg_end, env_start, env_end are fields 48-51");
  tap_ok(proc_stat_parse(l, 52, 1, v) && v[0] == 520, "the last field, before the newline");
  tap_ok(!proc_stat_parse(l, 52, 2, v), "past the last field: refused");
  tap_is_int(proc_stat_state(l), 'S', "state letter");
  free(l);

  l = line("a) b (c) Z 1 2");
  tap_ok(proc_stat_parse(l, PROC_STAT_START_TIME, 1, v) && v[0] == 220,
         "a comm with ') Z 1 2' inside does not shift fields");
  tap_is_int(proc_stat_state(l), 'S', "nor fake the state");
  free(l);

  tap_ok(!proc_stat_parse("42 bash S 1 2", 4, 1, v), "no parentheses: refused");
  tap_ok(!proc_stat_parse("42 (x)", 4, 1, v), "nothing after comm: refused");
  tap_ok(!proc_stat_parse("42 (x) S 1 -2 3", 5, 1, v), "a negative field where a count is read: refused");
  tap_ok(!proc_stat_parse("42 (x) S 1 2x 3", 5, 1, v), "trailing garbage in a field: refused");
  tap_is_int(proc_stat_state("garbage"), 0, "no state in garbage");

  char *self = proc_stat_read(0);
  tap_ok(self != NULL && proc_stat_parse(self, PROC_STAT_ARG_START, 4, v) && v[0] < v[1] && v[2] <= v[3],
         "this process's own stat has its argument and environment bounds");
  free(self);
  tap_done();
}
