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
/* Sets (replacing) a top-level field of hutch's own under "hutch". */
void trajectory_set(struct trajectory *t, const char *key, cJSON *value);
void trajectory_set_steps(struct trajectory *t, long total_steps);
int trajectory_save(struct trajectory *t, hutch_error_t *err);
/* Frees it, and removes the spare file. */
void trajectory_free(struct trajectory *t);

#endif
