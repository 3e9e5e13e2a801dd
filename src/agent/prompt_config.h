/* The prompt config: LLM-in-Sandbox's YAML keys (system_prompt,
 * instance_prompt, working_dir, input_dir, output_dir) and its
 * placeholders, so its configs load unchanged. */
#ifndef HUTCH_AGENT_PROMPT_CONFIG_H
#define HUTCH_AGENT_PROMPT_CONFIG_H

#include "hutch.h"

struct prompt_config {
  char *path;
  char *system_prompt;
  char *instance_prompt;
  char *working_dir;
  char *input_dir;
  char *output_dir;
};

/* path NULL: $HUTCH_PROMPT_CONFIG, else the installed prompts/default.yaml. */
int prompt_config_load(const char *path, struct prompt_config *out, hutch_error_t *err);
int prompt_config_parse(const char *text, size_t len, const char *what, struct prompt_config *out, hutch_error_t *err);
void prompt_config_clear(struct prompt_config *pc);

/* Replaces {working_dir} {input_dir} {output_dir} {problem_statement}
 * (problem may be NULL: left as is), drops the reference's legacy
 * {command_docs} and {demo}, and turns {{ and }} into single braces.
 * Any other {word} stays as written. */
char *prompt_expand(const char *tmpl, const struct prompt_config *pc, const char *problem);

#endif
