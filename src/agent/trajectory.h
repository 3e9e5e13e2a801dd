/* SPDX-License-Identifier: Apache-2.0 */
/* trajectory.json: LLM-in-Sandbox's shape ({problem_statement, steps,
 * metadata.total_steps}) plus hutch's own fields, rewritten atomically after
 * every step so that a crash loses at most the step in flight. */
#ifndef HUTCH_AGENT_TRAJECTORY_H
#define HUTCH_AGENT_TRAJECTORY_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "hutch.h"

struct trajectory {
  cJSON *root;
  cJSON *steps;
  cJSON *meta;
  char *path;
  double start;     /* monotonic seconds at init */
  char *tmp;        /* the spare file, path + ".tmp" */
  bool saved;       /* trajectory.json has been written */
  bool spare;       /* the spare file exists (it holds an older save) */
  bool no_exchange; /* the filesystem cannot swap two names: rename only */
};

void trajectory_init(struct trajectory *t, const char *path, const char *problem);
/* One step: an action (function "" when the reply had no call). */
void trajectory_add(struct trajectory *t, long step, const char *thought, const char *reasoning, const char *function,
                    const char *arguments, const char *observation, double llm_seconds, double tool_seconds,
                    int exit_code, const char *call_id);
/* The model's reply the last step added came from, in that step's
 * metadata beside LLM-in-Sandbox's "step" and "exec_time" (the reply's
 * latency): "reply", its number (the steps of one reply share it), and on
 * the reply's first step only its "prompt_tokens" and "completion_tokens"
 * (when the endpoint reported them) and "cost" (when it reported one), so
 * that adding them up over the steps counts each call once. */
struct trajectory_reply {
  long n;
  bool first;
  bool has_usage;
  long prompt_tokens, completion_tokens;
  bool has_cost;
  double cost;
};
void trajectory_note_reply(struct trajectory *t, const struct trajectory_reply *rep);
/* Sets (replacing) a top-level field of hutch's own under "hutch". */
void trajectory_set(struct trajectory *t, const char *key, cJSON *value);
void trajectory_set_steps(struct trajectory *t, long total_steps);
int trajectory_save(struct trajectory *t, hutch_error_t *err);
/* Frees it, and removes the spare file. */
void trajectory_free(struct trajectory *t);

#endif
