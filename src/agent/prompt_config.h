/* SPDX-License-Identifier: Apache-2.0 */
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
  /* Inside the sandbox, trailing '/' removed. */
  char *working_dir;
  char *input_dir;
  char *output_dir;
  /* As the file writes them: what the prompts say (LLM-in-Sandbox's text). */
  char *working_dir_text;
  char *input_dir_text;
  char *output_dir_text;
};

/* path NULL: $HUTCH_PROMPT_CONFIG, else the installed prompts/default.yaml. */
int prompt_config_load(const char *path, struct prompt_config *out, hutch_error_t *err);
int prompt_config_parse(const char *text, size_t len, const char *what, struct prompt_config *out, hutch_error_t *err);
void prompt_config_clear(struct prompt_config *pc);

/* LLM-in-Sandbox's rendering: first {input_dir}, {output_dir} and
 * {working_dir} are replaced everywhere, in that order, by the values as
 * written; then Python's str.format: {{ and }} become single braces,
 * {problem_statement} the problem (problem NULL: left as is), the legacy
 * {command_docs} and {demo} nothing.  Where str.format would fail (any other
 * {word}, a lone brace) the text stays as written.  An empty template with
 * a problem is the problem itself (an empty instance_prompt). */
char *prompt_expand(const char *tmpl, const struct prompt_config *pc, const char *problem);

#endif
