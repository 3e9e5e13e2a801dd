/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "tools.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "observation.h"
#include "shell_session.h"
#include "util.h"

/* Bytes kept of each output stream before the line cut. */
#define BASH_CAPTURE_MAX (1u << 20)

static cJSON *function_tool(const char *name, const char *description, cJSON *properties, const char *const *required,
                            size_t n_required) {
  cJSON *tool = cJSON_CreateObject();
  cJSON_AddStringToObject(tool, "type", "function");
  cJSON *fn = cJSON_AddObjectToObject(tool, "function");
  cJSON_AddStringToObject(fn, "name", name);
  cJSON_AddStringToObject(fn, "description", description);
  cJSON *params = cJSON_AddObjectToObject(fn, "parameters");
  cJSON_AddStringToObject(params, "type", "object");
  cJSON_AddItemToObject(params, "properties", properties);
  /* An empty `required` too, as the reference sends it for submit. */
  cJSON_AddItemToObject(params, "required",
                        n_required ? cJSON_CreateStringArray(required, (int)n_required) : cJSON_CreateArray());
  return tool;
}

/* A property with its keys in the reference's order (description, enum,
 * type, items): chat templates print the tools as JSON text, key order and
 * all. */
static cJSON *add_prop(cJSON *props, const char *name, const char *type, const char *description) {
  cJSON *p = cJSON_AddObjectToObject(props, name);
  cJSON_AddStringToObject(p, "description", description);
  cJSON_AddStringToObject(p, "type", type);
  return p;
}

static void add_enum(cJSON *prop, const char *const *values, int n) {
  cJSON *type = cJSON_DetachItemFromObjectCaseSensitive(prop, "type");
  cJSON_AddItemToObject(prop, "enum", cJSON_CreateStringArray(values, n));
  cJSON_AddItemToObject(prop, "type", type);
}

static const char *const EDITOR_LIS_DESC =
    "View, create and edit files.\n"
    "* `view` of a directory lists its subdirectories and its .py and .rst files, two levels deep, hidden ones "
    "left out.\n"
    "* `view` of a file shows it numbered like `cat -n`; only .py and .rst files can be viewed (read other files "
    "with execute_bash).\n"
    "* `create` writes `file_text` to `path`, replacing any file there.\n"
    "* `str_replace` replaces `old_str`, which must occur exactly once in the file, with `new_str`.\n"
    "* `insert` inserts `new_str` after line `insert_line`.\n"
    "Tabs are expanded to spaces when a file is edited. Long output is cut and marked with `<response clipped>`.";

static const char *const EDITOR_HUTCH_DESC = "View, create and edit text files.\n"
                                             "* `view` shows a file with line numbers (like `cat -n`), or a "
                                             "directory's contents two levels deep.\n"
                                             "* `create` makes a new file; it refuses to overwrite an existing one.\n"
                                             "* `str_replace` replaces `old_str` with `new_str`; `old_str` must match "
                                             "exactly one place in the file, whitespace included.\n"
                                             "* `insert` inserts `new_str` after line `insert_line`.\n"
                                             "* `undo_edit` reverts the last edit of the file.\n"
                                             "Long output is cut and marked with `<response clipped>`.";

static cJSON *editor_tool(enum tool_profile profile) {
  bool lis = profile == TOOLS_LIS;
  cJSON *ep = cJSON_CreateObject();
  const char *cmds[] = {"view", "create", "str_replace", "insert", "undo_edit"};
  add_enum(add_prop(ep, "command", "string",
                    lis ? "The command: `view`, `create`, `str_replace` or `insert`."
                        : "The command: `view`, `create`, `str_replace`, `insert` or `undo_edit`."),
           cmds, lis ? 4 : 5);
  add_prop(ep, "path", "string", "Absolute path to a file or directory, e.g. `/testbed/file.py` or `/testbed`.");
  add_prop(ep, "file_text", "string", "Content of the file to create (`create`).");
  add_prop(ep, "old_str", "string", "The exact text to replace; it must occur exactly once (`str_replace`).");
  add_prop(ep, "new_str", "string", "The replacement text (`str_replace`) or the text to insert (`insert`).");
  add_prop(ep, "insert_line", "integer", "Insert `new_str` after this line; 0 inserts at the top (`insert`).");
  cJSON *vr = add_prop(ep, "view_range", "array",
                       "Lines to show, [start, end], 1-based; end -1 shows to the end of the file (`view` of a file).");
  cJSON_AddItemToObject(vr, "items", cJSON_Parse("{\"type\": \"integer\"}"));
  const char *ereq[] = {"command", "path"};
  return function_tool("str_replace_editor", lis ? EDITOR_LIS_DESC : EDITOR_HUTCH_DESC, ep, ereq, 2);
}

cJSON *tools_schema(enum tool_profile profile, bool persistent) {
  cJSON *tools = cJSON_CreateArray();
  cJSON_AddItemToArray(tools, editor_tool(profile));

  cJSON *bp = cJSON_CreateObject();
  /* type before description here, as the reference has it. */
  cJSON *cmd = cJSON_AddObjectToObject(bp, "command");
  cJSON_AddStringToObject(cmd, "type", "string");
  cJSON_AddStringToObject(cmd, "description", "The bash command to run.");
  const char *breq[] = {"command"};
  const char *bdesc = persistent ? "Execute a bash command in the terminal.\n"
                                   "Parameters:\n"
                                   "  (1) command (string, required): the command to run. The shell is kept "
                                   "between calls: cd and export carry over."
                                 : "Execute a bash command in the terminal.\n"
                                   "Parameters:\n"
                                   "  (1) command (string, required): the command to run. Each call starts "
                                   "a fresh shell in the working directory.";
  cJSON_AddItemToArray(tools, function_tool("execute_bash", bdesc, bp, breq, 1));

  cJSON_AddItemToArray(tools, function_tool("submit", "Submit your work and end the task. No parameters required.",
                                            cJSON_CreateObject(), NULL, 0));
  return tools;
}

cJSON *tools_parse(const char *text, size_t len, const char *what, hutch_error_t *err) {
  cJSON *tools = cJSON_ParseWithLength(text, len);
  bool ok = cJSON_IsArray(tools) && cJSON_GetArraySize(tools) > 0;
  const cJSON *t;
  cJSON_ArrayForEach(t, tools) ok = ok && cJSON_IsObject(t);
  if (!ok) {
    cJSON_Delete(tools);
    hutch_error_set(err, EINVAL,
                    "%s is not a JSON array of tool objects (the `tools` of an OpenAI chat completions request)", what);
    return NULL;
  }
  return tools;
}

cJSON *tools_load_file(const char *path, hutch_error_t *err) {
  size_t len = 0;
  _cleanup_free_ char *text = read_file_at(AT_FDCWD, path, 16 << 20, &len);
  if (text == NULL) {
    hutch_error_sys(err, "read the tools file %s", path);
    return NULL;
  }
  _cleanup_free_ char *what = xasprintf("the tools file %s", path);
  return tools_parse(text, len, what, err);
}

/* The reference knows a timeout by timeout(1)'s exit status, 124, so a
 * command that exits 124 reads as timed out under --tools lis too. */
static bool timed_out(const struct tool_env *env, bool timed_out, int exit_code) {
  return timed_out || (env->profile == TOOLS_LIS && exit_code == 124);
}

/* A command that could not run: the model is told why, as the reference
 * tells it. */
static void not_started(struct tool_result *out, bool interrupted, const char *why) {
  out->interrupted = interrupted;
  out->outcome = interrupted ? TOOL_STOPPED : TOOL_NOT_STARTED;
  out->error = xstrdup(why);
  out->observation = obs_bash_failure(why);
}

/* What became of a command that ran. */
static void ran(struct tool_env *env, struct tool_result *out, bool interrupted, bool killed_at_timeout) {
  out->interrupted = interrupted;
  out->outcome = interrupted ? TOOL_STOPPED : killed_at_timeout ? TOOL_TIMED_OUT : TOOL_EXITED;
  out->timeout = env->timeout;
}

static void run_in_session(struct tool_env *env, const char *command, struct tool_result *out) {
  struct session_result res;
  hutch_error_t err = NULL;
  if (shell_session_run(env->session, command, env->timeout, BASH_CAPTURE_MAX, &res, &err) < 0) {
    not_started(out, res.interrupted, err->msg);
    hutch_error_free(&err);
    session_result_clear(&res);
    return;
  }
  ran(env, out, res.interrupted, res.timed_out);
  out->exit_code = res.exit_code;
  _cleanup_free_ char *o = text_for_model(res.out.data, res.out.len, res.out.capped);
  _cleanup_free_ char *e = text_for_model(res.err.data, res.err.len, res.err.capped);
  _cleanup_free_ char *obs = obs_bash(res.exit_code, timed_out(env, res.timed_out, res.exit_code), env->timeout, o, e);
  if (res.restarted) {
    _cleanup_free_ char *note = obs_session_restarted(env->working_dir);
    out->observation = xasprintf("%s%s", obs, note);
  } else {
    out->observation = steal_pointer(&obs);
  }
  session_result_clear(&res);
}

static void run_bash(struct tool_env *env, const cJSON *args, struct tool_result *out) {
  const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(args, "command");
  if (!cJSON_IsString(cmd)) {
    out->observation = obs_bash_failure("execute_bash needs a `command` string");
    out->outcome = TOOL_REFUSED;
    out->error = xstrdup("no command string");
    return;
  }
  if (env->session) {
    run_in_session(env, cmd->valuestring, out);
    return;
  }
  const char *argv[] = {env->shell, "-c", cmd->valuestring, NULL};
  struct run_request req = {
      .argv = argv, .workdir = env->working_dir, .timeout = env->timeout, .cap = BASH_CAPTURE_MAX};
  struct run_result res;
  hutch_error_t err = NULL;
  if (task_sandbox_run(env->sandbox, &req, &res, &err) < 0) {
    not_started(out, res.interrupted, err->msg);
    hutch_error_free(&err);
    run_result_clear(&res);
    return;
  }
  _cleanup_free_ char *o = text_for_model(res.out.data, res.out.len, res.out.capped);
  _cleanup_free_ char *e = text_for_model(res.err.data, res.err.len, res.err.capped);
  out->exit_code = hutch_exit_code(&res.exit);
  if (res.exit.setup_failed || res.exit.exec_errno) {
    _cleanup_free_ char *why = hutch_errno_format(res.exit.exec_errno, "%s", res.exit.failure);
    not_started(out, res.interrupted, why);
  } else {
    ran(env, out, res.interrupted, res.exit.timed_out);
    out->observation = obs_bash(out->exit_code, timed_out(env, res.exit.timed_out, out->exit_code), env->timeout, o, e);
  }
  run_result_clear(&res);
}

static bool known_tool(const char *name) {
  return strcmp(name, "execute_bash") == 0 || strcmp(name, "str_replace_editor") == 0 || strcmp(name, "submit") == 0;
}

static void refused(struct tool_result *out, char *observation, const char *why) {
  out->observation = observation;
  out->outcome = TOOL_REFUSED;
  out->error = xstrdup(why);
}

static void submitted(struct tool_result *out) {
  out->observation = xstrdup(OBS_SUBMIT);
  out->submitted = true;
  out->outcome = TOOL_SUBMITTED;
}

/* An editor's answer: its first line says why it failed. */
static void edited(struct tool_result *out, char *result, bool failed) {
  out->outcome = out->interrupted ? TOOL_STOPPED : failed ? TOOL_EDIT_FAILED : TOOL_EDITED;
  if (failed)
    out->error = xstrndup(result, strcspn(result, "\n"));
  out->observation = obs_editor(result);
  free(result);
}

/* The arguments as the reference reads them: JSON first (text that does not
 * parse is answered with the no-call reminder), then the name. */
static void run_lis(struct tool_env *env, const char *name, const char *arguments, struct tool_result *out) {
  cJSON *args = cJSON_Parse(arguments ? arguments : "");
  if (args == NULL) {
    refused(out, xstrdup(OBS_REMINDER), "the arguments are not valid JSON");
    return;
  }
  if (!cJSON_IsObject(args)) {
    if (strcmp(name, "submit") == 0)
      submitted(out);
    else
      refused(out, obs_lis_not_object(name), "the arguments are not a JSON object");
  } else if (strcmp(name, "submit") == 0) {
    submitted(out);
  } else if (strcmp(name, "execute_bash") == 0) {
    const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(args, "command");
    if (cmd == NULL || cJSON_IsNull(cmd) || cJSON_IsFalse(cmd) || (cJSON_IsString(cmd) && !cmd->valuestring[0]))
      refused(out, xstrdup("Error: No command provided."), "no command");
    else
      run_bash(env, args, out);
  } else if (strcmp(name, "str_replace_editor") == 0) {
    bool failed = false;
    char *result = editor_lis_run(env, args, &out->exit_code, &out->interrupted, &failed);
    edited(out, result, failed);
  } else {
    refused(out, obs_unknown_action(name), "unknown tool");
  }
  cJSON_Delete(args);
}

void tools_run(struct tool_env *env, const char *name, const char *arguments, struct tool_result *out) {
  memset(out, 0, sizeof(*out));
  out->exit_code = -1;
  double start = monotonic_seconds();
  cJSON *args = NULL;
  if (env->profile == TOOLS_LIS) {
    run_lis(env, name, arguments, out);
    goto out;
  }
  if (!known_tool(name)) {
    refused(out, obs_unknown_action(name), "unknown tool");
    goto out;
  }
  args = cJSON_Parse(arguments && *arguments ? arguments : "{}");
  if (!cJSON_IsObject(args)) {
    refused(out, obs_bad_arguments(name, args ? "they are not a JSON object" : "they are not valid JSON"),
            args ? "the arguments are not a JSON object" : "the arguments are not valid JSON");
    goto out;
  }
  if (strcmp(name, "submit") == 0) {
    submitted(out);
  } else if (strcmp(name, "execute_bash") == 0) {
    run_bash(env, args, out);
  } else {
    char *result = editor_run(env, args, &out->exit_code, &out->interrupted);
    edited(out, result, out->exit_code != 0);
  }
out:
  cJSON_Delete(args);
  out->seconds = monotonic_seconds() - start;
}

void tool_result_clear(struct tool_result *r) {
  free(r->observation);
  free(r->error);
  memset(r, 0, sizeof(*r));
}
