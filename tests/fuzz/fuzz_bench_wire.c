/* SPDX-License-Identifier: Apache-2.0 */
/* hutch benchmark's side of the scoring driver's wire (src/bench/pyargs.c).
 * The result line comes from the scoring sandbox, where reward.py runs code
 * the model's answer may shape: bench_py_result_head must take only a
 * well-formed "cpu=USEC[,last] " head, and bench_py_result refuse anything
 * but a well-formed "score", "error" or "prompt" line; neither may read
 * past it.
 * The first byte picks: 's' the result line (the rest of the input, as
 * reward.c cuts it: one line, NUL-terminated), anything else a task set's
 * row and an answer, marshalled as the driver's args. */
#include "config.h"

#include <math.h>

#include "bench/bench.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 65536)
    return 0;
  if (data[0] == 's') {
    char *line = fuzz_cstring(data + 1, size - 1);
    char *nl = strchr(line, '\n');
    if (nl)
      *nl = '\0';
    /* Its head, "cpu=USEC[,last] ", then the result proper (the whole
     * line where it has no head, to try that parser on every input). */
    int64_t us = -1;
    bool last = false;
    const char *rest = bench_py_result_head(line, &us, &last);
    if (rest && (us < 0 || rest <= line + 4 || rest > line + strlen(line) || rest[-1] != ' '))
      abort();
    const char *tail = rest ? rest : line;
    cJSON *r = bench_py_result(tail);
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(r, "score");
    /* A score is a finite number, and only from a "score " line. */
    if (s && (!cJSON_IsNumber(s) || !isfinite(s->valuedouble) || strncmp(tail, "score ", 6) != 0))
      abort();
    cJSON_Delete(r);
    free(line);
    return 0;
  }
  /* A row (as bench_parse_rows parses one: cJSON, then its numbers'
   * text), then, after a NUL, the answer: both marshalled as the args. */
  const uint8_t *nul = memchr(data + 1, '\0', size - 1);
  size_t rlen = nul ? (size_t)(nul - data - 1) : size - 1;
  char *text = fuzz_cstring(data + 1, rlen);
  char *answer = nul ? fuzz_cstring(nul + 1, size - rlen - 2) : fuzz_cstring(data, 0);
  cJSON *row = cJSON_ParseWithLength(text, rlen);
  hutch_error_t err = NULL;
  if (row && bench_json_keep_numbers(row, text, rlen, &err) == 0) {
    bench_json_last_wins(row);
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "answer", answer);
    cJSON_AddItemToObject(args, "kwargs", row);
    row = NULL;
    size_t n = 0;
    free(bench_py_marshal(args, &n));
    cJSON_Delete(args);
  }
  hutch_error_free(&err);
  cJSON_Delete(row);
  free(text);
  free(answer);
  return 0;
}
