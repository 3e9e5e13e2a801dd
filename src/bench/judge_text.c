/* SPDX-License-Identifier: Apache-2.0 */
/* LLM-in-Sandbox's judge, its pure parts: the prompt (the judge's text is
 * LLM-in-Sandbox's, so that judged scores compare) and the verdict. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bench.h"
#include "lis_compat.h"
#include "util.h"

char *bench_judge_prompt(const char *question, const char *truth, const char *answer) {
  const char *end = strstr(answer, "</think>");
  _cleanup_free_ char *cut = NULL;
  if (end) {
    /* What follows the reasoning, stripped. */
    const char *p = end + strlen("</think>");
    while (*p && strchr(" \t\n\r\v\f", *p))
      p++;
    size_t n = strlen(p);
    while (n > 0 && strchr(" \t\n\r\v\f", p[n - 1]))
      n--;
    answer = cut = xstrndup(p, n);
  }
  return xasprintf("Assess whether the following CANDIDATE ANSWER is CORRECT or INCORRECT.\n"
                   "For the CANDIDATE ANSWER to be correct, it must be consistent with the OFFICIAL ANSWER.\n\n"
                   "The question, for reference only: %s\n"
                   "The OFFICIAL ANSWER: %s\n"
                   "CANDIDATE ANSWER TO ASSESS: %s\n\n"
                   "Reply only with CORRECT or INCORRECT.",
                   question, truth, answer);
}

const char *bench_judge_verdict(const char *text) {
  /* The last occurrence wins; CORRECT inside INCORRECT does not count. */
  long last_c = -1, last_i = -1;
  size_t n = strlen(text);
  for (size_t i = 0; i + 7 <= n; i++) {
    if (strncasecmp(text + i, "CORRECT", 7) == 0 && (i < 2 || strncasecmp(text + i - 2, "IN", 2) != 0))
      last_c = (long)i;
    if (i + 9 <= n && strncasecmp(text + i, "INCORRECT", 9) == 0)
      last_i = (long)i;
  }
  if (last_c < 0 && last_i < 0)
    return "UNKNOWN";
  return last_i > last_c ? "INCORRECT" : "CORRECT";
}

cJSON *bench_one_message(const char *model, const char *prompt, long max_tokens) {
  cJSON *body = cJSON_CreateObject();
  cJSON_AddStringToObject(body, "model", lis_request_model(model));
  cJSON *msgs = cJSON_AddArrayToObject(body, "messages");
  cJSON *m = cJSON_CreateObject();
  cJSON_AddStringToObject(m, "role", "user");
  cJSON_AddStringToObject(m, "content", prompt);
  cJSON_AddItemToArray(msgs, m);
  cJSON_AddNumberToObject(body, "max_tokens", (double)max_tokens);
  return body;
}
