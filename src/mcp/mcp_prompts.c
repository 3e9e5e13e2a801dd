/* SPDX-License-Identifier: Apache-2.0 */
/* The prompts of hutch mcp: ready-made requests a user picks in a client
 * (a slash command, a menu) to have the model work in a sandbox the way
 * these tools are meant to be used: in a fresh sandbox, checking each step,
 * removing it at the end. */
#include "config.h"

#include "mcp.h"

#include <string.h>

#include "util.h"

static const struct prompt {
  const char *name, *title, *description;
  const char *arg, *arg_description; /* the one required argument, or NULL */
  const char *text;                  /* the argument, if any, follows it */
} prompts[] = {
    {"sandbox_task", "Do a task in a sandbox",
     "Have the model do a task in a fresh sandbox, check the result by running it, and remove the sandbox.", "task",
     "what to do, such as: write a script that counts the words of a file, and test it",
     "Do the following task in a hutch sandbox, an isolated Linux machine, with the tools of this server.\n\n"
     "1. Create a sandbox with sandbox_create.\n"
     "2. Work in it with sandbox_exec, sandbox_run_code, sandbox_python and the file tools. A command that does "
     "not exit 0 is a tool error: read its output and correct course.\n"
     "3. Check the outcome by running it, not by reading code alone.\n"
     "4. Report what you did, what came out, and anything that did not work.\n"
     "5. Destroy the sandbox with sandbox_destroy.\n\n"
     "Task:\n"},
    {"sandbox_survey", "Survey a sandbox image",
     "Have the model find out what a sandbox of this server offers: its system, languages, tools and limits.", NULL,
     NULL,
     "Create a sandbox with sandbox_create and find out what it offers, with sandbox_exec: the operating system "
     "(/etc/os-release), the languages and compilers installed (python3, node, cc, go, java, ...), common tools, "
     "the memory, CPUs and disk space it has, and whether it reaches a network. Report it as a short table, then "
     "destroy the sandbox with sandbox_destroy.\n"},
};

cJSON *mcp_prompts_list(void) {
  cJSON *r = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(r, "prompts");
  for (size_t i = 0; i < ARRAY_SIZE(prompts); i++) {
    const struct prompt *p = &prompts[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", p->name);
    cJSON_AddStringToObject(o, "title", p->title);
    cJSON_AddStringToObject(o, "description", p->description);
    cJSON *args = cJSON_AddArrayToObject(o, "arguments");
    if (p->arg) {
      cJSON *x = cJSON_CreateObject();
      cJSON_AddStringToObject(x, "name", p->arg);
      cJSON_AddStringToObject(x, "description", p->arg_description);
      cJSON_AddBoolToObject(x, "required", true);
      cJSON_AddItemToArray(args, x);
    }
    cJSON_AddItemToArray(a, o);
  }
  return r;
}

cJSON *mcp_prompts_get(const cJSON *params, int *code, char **message) {
  const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(params, "name"));
  const cJSON *args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
  const struct prompt *p = NULL;
  for (size_t i = 0; name && i < ARRAY_SIZE(prompts); i++)
    if (strcmp(prompts[i].name, name) == 0)
      p = &prompts[i];
  *code = -32602; /* invalid params, as the specification has it for both */
  if (p == NULL) {
    *message = xasprintf("invalid params: %s (prompts/list names them)", name ? "unknown prompt" : "wants a name");
    return NULL;
  }
  const char *value = p->arg ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(args, p->arg)) : "";
  if (value == NULL || (p->arg && value[0] == '\0')) {
    *message = xasprintf("invalid params: prompt %s wants the argument %s: %s", p->name, p->arg, p->arg_description);
    return NULL;
  }
  *code = 0;
  _cleanup_free_ char *text = xasprintf("%s%s%s", p->text, value, p->arg ? "\n" : "");
  cJSON *r = cJSON_CreateObject();
  cJSON_AddStringToObject(r, "description", p->description);
  cJSON *m = cJSON_CreateObject();
  cJSON_AddStringToObject(m, "role", "user");
  cJSON *c = cJSON_AddObjectToObject(m, "content");
  cJSON_AddStringToObject(c, "type", "text");
  cJSON_AddStringToObject(c, "text", text);
  cJSON_AddItemToArray(cJSON_AddArrayToObject(r, "messages"), m);
  return r;
}
