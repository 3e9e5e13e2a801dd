/* SPDX-License-Identifier: Apache-2.0 */
/* hutch run's settings: command line (hutch spellings, LLM-in-Sandbox's, and
 * Python Fire's forms of them: short flags, --noX, words bound to its
 * parameters in order), a settings file with the same keys,
 * LLM-in-Sandbox's environment variables, then defaults, in each command's
 * order of precedence (settings_benchmark_order). */
#ifndef HUTCH_AGENT_SETTINGS_H
#define HUTCH_AGENT_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hutch.h"

struct settings {
  char *query;
  char *model;
  char *base_url;
  char *api_key;
  double temperature;
  bool has_temperature;
  long max_steps;
  long max_tokens_per_call;
  long max_token_limit;
  char *input_dir;
  char *output_dir;
  char *prompt_config;
  char *extra_body;
  char *settings_file; /* the file that was read, NULL when none */
  double tool_timeout;
  double llm_timeout;
  long max_tries;
  double retry_delay;
  uint64_t max_reply_size;
  /* What the model may make the run hold (agent.c, budget.c). */
  long max_calls_per_reply;       /* calls of one reply run; as many again are answered */
  uint64_t max_observation_size;  /* bytes of one call's observation */
  uint64_t max_conversation_size; /* bytes of replies and observations of the run */
  double run_timeout;             /* seconds, the whole run */
  uint64_t copy_limit;
  char *shell;
  char *tools;      /* --tools: lis (default) or hutch */
  char *tools_file; /* --tools-file: the tools array sent instead */
  bool no_reasoning_echo;
  bool quiet;
  bool json;               /* --json: one JSON object per event on stdout (console.h) */
  bool no_die_with_parent; /* else the run, and its sandbox, end with the caller */
  /* LLM-in-Sandbox's --docker_image: a store image, pulled when missing. */
  char *docker_image;
  bool save_litellm_response; /* request_NNN.json, response_NNN.json */
  char *verify;               /* --verify: a command run in the sandbox at the end */
  /* --lis[=DIR]: "true" or the package directory given, then the one found;
   * tools_json: its tool schemas, sent instead of hutch's. */
  char *lis;
  char *tools_json;
  bool base_url_given;    /* else the default, http://localhost:8000/v1 */
  char *temperature_text; /* the temperature as the command line wrote it */
  /* sandbox options shared with hutch exec */
  char *rootfs;
  char *store;
  char *state_dir;
  char *policy;
  char *hostname;
  /* Resource limits of the task's sandbox (hutch-exec(1)); 0: the policy's. */
  uint64_t memory, memory_swap, disk;
  double cpus;
  long pids, io_weight;
  char *cgroup_parent;
  bool no_cgroups;
  char *overlay; /* kernel (default) or fuse: hutch-exec(1) --overlay */
  char *proc;    /* fresh (default) or host-ro: hutch-exec(1) --proc */
  /* Network (hutch-exec(1) --net): none (default) or proxy. */
  char *net;
  char *net_policy;
  char **allow; /* NULL-terminated --allow HOST[:PORT] */
  size_t n_allow;
  char **resolve; /* NULL-terminated --resolve NAME=ADDR */
  size_t n_resolve;
  char **env; /* NULL-terminated */
  size_t n_env;
  struct hutch_bind *binds;
  char **bind_storage;
  size_t n_binds;
};

/* hutch benchmark's order of precedence, its LLM-in-Sandbox command's: the
 * command line, then LLM_NAME, LLM_BASE_URL, LLM_API_KEY, LLM_TEMPERATURE,
 * then the settings file, the key "sk-placeholder" by default and
 * OPENAI_API_KEY not read.  Else hutch run's, LLM-in-Sandbox's run
 * command's: the command line, the settings file, LLM_BASE_URL (and
 * LLM_NAME), OPENAI_API_KEY, "dummy".  Set by hutch-benchmark before any
 * parse, its forked agents included. */
extern bool settings_benchmark_order;

/* Returns -1 to go on, else an exit code (0 after --help, 2 on a usage error,
 * already printed). */
int settings_parse(int argc, char **argv, struct settings *s);
void settings_free(struct settings *s);
/* How the long option NAME (any spelling, without "--") takes a value: 1
 * always, 2 optionally (--flag or --flag=false), 0 never, -1: not a setting.
 * For programs that pass options through to hutch run. */
int settings_option_arg(const char *name);
void settings_usage(FILE *out);
/* The hutch spelling of a setting's option NAME (any spelling, without
 * "--"), NULL when it is none. */
const char *settings_canonical(const char *name);

#endif
