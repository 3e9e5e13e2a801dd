/* SPDX-License-Identifier: Apache-2.0 */
/* LLM-in-Sandbox 0.2.0's rules for the request and the run, as pure
 * helpers: which model names it routes elsewhere, when it sends a
 * temperature, its extra_body booleans, its token count, and the store name
 * hutch gives a Docker image reference. */
#ifndef HUTCH_AGENT_LIS_COMPAT_H
#define HUTCH_AGENT_LIS_COMPAT_H

#include <cjson/cJSON.h>
#include <stdbool.h>

/* "anthropic/" or "azure/" when the model name starts with a LiteLLM
 * provider prefix that is not the chat-completions protocol, else NULL. */
const char *lis_refused_prefix(const char *model);

/* LLM-in-Sandbox leaves temperature out for model names containing "o3" or
 * "o4" (OpenAI's reasoning models refuse it). */
bool lis_sends_temperature(const char *model);

/* Every string value "true"/"false" (any case) becomes a boolean, in
 * objects and arrays at any depth; keys are left alone. */
void lis_fix_string_bools(cJSON *j);

/* LLM-in-Sandbox's count when its tokenizer is unavailable: the characters
 * (code points) of every message's content, a null content counting as
 * "None", divided by four. */
long lis_count_tokens(const cJSON *messages);

/* The store name of a Docker reference: the reference itself when it is a
 * valid image name, else with each other character ('/', '@') as '_'. */
char *lis_store_name(const char *ref);

/* text with every occurrence of secret (as it appears inside a JSON
 * string) replaced by "[REDACTED]"; a copy when secret is NULL or short. */
char *lis_redact(const char *text, const char *secret);

/* --extra-body: JSON, or the Python literal LLM-in-Sandbox users write
 * (True, False, None, single quotes); NULL when neither parses. */
cJSON *lis_parse_extra_body(const char *text);
/* The same as JSON text (its numbers as written: 1.0 stays 1.0). */
char *lis_extra_body_json(const char *text);

/* The model name sent to the server: without LiteLLM's openai/ or
 * hosted_vllm/ routing prefix. */
const char *lis_request_model(const char *m);

/* Python's truth of a JSON value: null, false, 0, "", [] and {} are false. */
bool lis_truthy(const cJSON *v);

#endif
