/* SPDX-License-Identifier: Apache-2.0 */
/* Tool calls written in a reply's text, for models served without a tool
 * parser: the Hermes form <tool_call>{"name": ..., "arguments": ...}</tool_call>
 * and the Qwen3-Coder / R2E form <function=NAME><parameter=KEY>VALUE</parameter></function>. */
#ifndef HUTCH_AGENT_TEXT_CALLS_H
#define HUTCH_AGENT_TEXT_CALLS_H

#include <stddef.h>

struct text_call {
  char *name;
  char *arguments; /* a JSON object, as text */
};

/* Returns the number of calls found (0 when none) and stores them in *out. */
size_t text_calls_parse(const char *content, struct text_call **out);
void text_calls_free(struct text_call *calls, size_t n);

#endif
