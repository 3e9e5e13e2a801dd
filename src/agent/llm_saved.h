/* SPDX-License-Identifier: Apache-2.0 */
/* --save-litellm-response: each request and its reply as LLM-in-Sandbox
 * names them, request_NNN.json and response_NNN.json in the run directory,
 * with the API key left out. */
#ifndef HUTCH_AGENT_LLM_SAVED_H
#define HUTCH_AGENT_LLM_SAVED_H

#include <cjson/cJSON.h>

#include "llm_client.h"

/* call: 1 for the first successful request.  body: the request as sent.
 * A failure is a warning (the run goes on, as LLM-in-Sandbox's does). */
void llm_saved_write(const char *dir, long call, const cJSON *body, const struct llm_reply *rep, const char *base_url,
                     const char *api_key);

#endif
