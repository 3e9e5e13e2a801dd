/* SPDX-License-Identifier: Apache-2.0 */
/* The YAML files of hutch run: the prompt config (hutch-prompt(5)), with
 * its prompts expanded as a run does, and the settings file's mapping. */
#include "config.h"

#include "fuzz.h"
#include "prompt_config.h"
#include "yaml_map.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (1u << 20))
    return 0;
  hutch_error_t err = NULL;
  struct yaml_map m;
  if (yaml_map_parse((const char *)data, size, "fuzz.yaml", &m, &err) == 0) {
    yaml_map_get(&m, "model");
    yaml_map_clear(&m);
  }
  hutch_error_free(&err);
  struct prompt_config pc;
  if (prompt_config_parse((const char *)data, size, "fuzz.yaml", &pc, &err) == 0) {
    free(prompt_expand(pc.system_prompt ? pc.system_prompt : "", &pc, "the task {x}"));
    free(prompt_expand(pc.instance_prompt ? pc.instance_prompt : "", &pc, "the task {problem_statement}"));
    free(prompt_expand(pc.instance_prompt ? pc.instance_prompt : "", &pc, NULL));
    prompt_config_clear(&pc);
  }
  hutch_error_free(&err);
  return 0;
}
