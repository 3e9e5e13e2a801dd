/* SPDX-License-Identifier: Apache-2.0 */
/* An LLM server's reply (chat completions JSON) and the tool calls a model
 * writes in its text. */
#include "config.h"

#include "fuzz.h"
#include "llm_client.h"
#include "text_calls.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (4u << 20))
    return 0;
  hutch_error_t err = NULL;
  struct llm_reply rep;
  if (llm_parse_reply((const char *)data, size, &rep, &err) == 0 && rep.content) {
    struct text_call *calls = NULL;
    size_t n = text_calls_parse(rep.content, &calls);
    text_calls_free(calls, n);
  }
  llm_reply_clear(&rep);
  hutch_error_free(&err);
  /* The text parser on the raw bytes too: a reply's content is any text. */
  char *text = fuzz_cstring(data, size);
  struct text_call *calls = NULL;
  size_t n = text_calls_parse(text, &calls);
  text_calls_free(calls, n);
  llm_is_context_error(text);
  llm_shrink_max_tokens(text, 4096, 256);
  free(text);
  return 0;
}
