/* SPDX-License-Identifier: Apache-2.0 */
/* LLM-in-Sandbox's request rules (lis_compat.c) and its prompt rendering
 * (prompt_expand), as pure functions. */
#include "config.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "json_num.h"
#include "lis_compat.h"
#include "prompt_config.h"
#include "tap.h"
#include "util.h"

static void check(char *got, const char *want, const char *desc) {
  tap_is_str(got, want, "%s", desc);
  free(got);
}

static void prefixes(void) {
  tap_is_str(lis_refused_prefix("anthropic/claude-3"), "anthropic/", "anthropic/ is refused");
  tap_is_str(lis_refused_prefix("azure/gpt-4o"), "azure/", "azure/ is refused");
  tap_ok(lis_refused_prefix("openai/qwen3") == NULL, "openai/ is not");
  tap_ok(lis_refused_prefix("hosted_vllm/qwen3") == NULL, "hosted_vllm/ is not");
  tap_ok(lis_refused_prefix("my-anthropic/x") == NULL, "only as a prefix");
  tap_ok(!lis_sends_temperature("o3-mini") && !lis_sends_temperature("openai/o4-mini"),
         "no temperature for o3/o4 names");
  tap_ok(!lis_sends_temperature("gpt-o3x"), "anywhere in the name, as LLM-in-Sandbox tests it");
  tap_ok(lis_sends_temperature("qwen3-coder") && lis_sends_temperature("gpt-4o"), "others get it");
}

static void bools(void) {
  cJSON *j =
      cJSON_Parse("{\"a\": \"true\", \"b\": {\"c\": \"FALSE\", \"d\": [\"True\", \"yes\", 1]}, \"true\": \"x\"}");
  lis_fix_string_bools(j);
  _cleanup_free_ char *t = cJSON_PrintUnformatted(j);
  tap_is_str(t, "{\"a\":true,\"b\":{\"c\":false,\"d\":[true,\"yes\",1]},\"true\":\"x\"}",
             "string booleans at any depth; keys and other strings stay");
  cJSON_Delete(j);
  lis_fix_string_bools(NULL);
  tap_ok(1, "NULL is nothing to fix");
}

static void tokens(void) {
  cJSON *m = cJSON_Parse("[{\"role\": \"system\", \"content\": \"abcd\"}, {\"role\": \"assistant\", \"content\": null},"
                         "{\"role\": \"tool\", \"content\": \"\xc3\xa9\xc3\xa9\xc3\xa9\"}, {\"role\": \"user\"}]");
  tap_is_int(lis_count_tokens(m), (4 + 4 + 3) / 4, "characters of the contents, null as None, by four");
  cJSON_Delete(m);
}

static void names(void) {
  check(lis_store_name("cdx123/llm-in-sandbox:v0.1"), "cdx123_llm-in-sandbox:v0.1", "'/' becomes '_'");
  check(lis_store_name("busybox"), "busybox", "a plain name stays");
  check(lis_store_name("reg:5000/a/b@sha256:ab"), "reg:5000_a_b_sha256:ab", "'@' too");
}

static void redaction(void) {
  check(lis_redact("key sk-abcdef and sk-abcdef", "sk-abcdef"), "key [REDACTED] and [REDACTED]", "every occurrence");
  check(lis_redact("\"a\\\"quoted\\\"\"", "a\"quoted\""), "\"[REDACTED]\"", "as it appears inside JSON");
  check(lis_redact("dummy text", "dummy"), "dummy text", "a placeholder key is left");
  check(lis_redact("text", NULL), "text", "no key");
}

static void rendering(void) {
  const char *yaml = "system_prompt: \"{{{working_dir}}} {input_dir}{command_docs}{demo}\"\n"
                     "instance_prompt: \"\"\nworking_dir: /testbed/\ninput_dir: \"/x{output_dir}\"\n"
                     "output_dir: /out\n";
  struct prompt_config pc;
  hutch_error_t err = NULL;
  int r = prompt_config_parse(yaml, strlen(yaml), "t", &pc, &err);
  tap_ok(r == 0, "config loads");
  hutch_error_free(&err);
  if (r < 0)
    return;
  tap_is_str(pc.working_dir, "/testbed", "the sandbox's directory has no trailing '/'");
  check(prompt_expand(pc.system_prompt, &pc, NULL), "{/testbed/} /x/out",
        "replace in LLM-in-Sandbox's order (input_dir, then output_dir in its value), then format");
  check(prompt_expand(pc.instance_prompt, &pc, "the {task}"), "the {task}", "an empty instance prompt is the task");
  prompt_config_clear(&pc);
}

/* A model's numbers in tool arguments (view_range, insert_line): clamped,
 * never a cast out of range (undefined behaviour, which the sanitizer
 * pass's float-cast-overflow check reports). */
static void numbers(void) {
  tap_ok(json_number_to_long(1e300) == __LONG_MAX__, "1e300 clamps to LONG_MAX");
  tap_ok(json_number_to_long(-1e300) == -__LONG_MAX__ - 1, "-1e300 clamps to LONG_MIN");
  tap_ok(json_number_to_long(9223372036854775808.0) == __LONG_MAX__, "2^63 clamps to LONG_MAX");
  tap_ok(json_number_to_long(-9223372036854775808.0) == -__LONG_MAX__ - 1, "-2^63 is LONG_MIN");
  tap_ok(json_number_to_long(-3.7) == -3, "-3.7 truncates toward zero");
  cJSON *n = cJSON_Parse("[12, 1e19, 2.5, \"7\"]");
  long v = 0;
  tap_ok(json_whole_long(cJSON_GetArrayItem(n, 0), &v) && v == 12, "12 is a whole long");
  tap_ok(!json_whole_long(cJSON_GetArrayItem(n, 1), &v), "1e19 is out of long's range");
  tap_ok(!json_whole_long(cJSON_GetArrayItem(n, 2), &v), "2.5 is not whole");
  tap_ok(!json_whole_long(cJSON_GetArrayItem(n, 3), &v), "a string is not a number");
  cJSON_Delete(n);
}

int main(void) {
  numbers();
  prefixes();
  bools();
  tokens();
  names();
  redaction();
  rendering();
  return tap_done();
}
