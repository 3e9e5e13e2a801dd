/* SPDX-License-Identifier: Apache-2.0 */
/* /proc/PID/stat and /proc/PID/status of a sandbox's processes: their comm
 * and Name are whatever the sandbox set (prctl PR_SET_NAME, exec of any
 * file name), so the text around them is the sandbox's to shape. */
#include "config.h"

#include "fuzz.h"
#include "proc_stat.h"
#include "proc_tree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 65536)
    return 0;
  char *text = fuzz_cstring(data, size);
  uint64_t v[4];
  proc_stat_parse(text, PROC_STAT_START_TIME, 1, v);
  proc_stat_parse(text, PROC_STAT_ARG_START, 4, v);
  proc_stat_parse(text, 1, 1, v);
  proc_stat_state(text);
  pid_t ppid, inner;
  proc_status_parse(text, &ppid, &inner);
  free(text);
  return 0;
}
