/* SPDX-License-Identifier: Apache-2.0 */
/* The tools as tools/list shows them: a title, a description, an input
 * schema with every parameter described, an output schema that each
 * result's structuredContent matches, and annotations that say what a call
 * does.  A call's arguments are checked against the same input schema
 * before the tool runs, so that the schema a client sees is the one the
 * server holds calls to, and what does not fit is a tool error the model
 * can read and correct (the 2025-11-25 revision's input validation). */
#include "config.h"

#include "mcp.h"

#include <math.h>
#include <string.h>

#include "util.h"

/* The schemas below are JSON with ` for " (they hold no ` of their own),
 * for the sake of the reader. */
#define SANDBOX_ID "`id`:{`type`:`string`,`description`:`the sandbox's id, as sandbox_create returned it`}"
#define TIMEOUT                                                                                                        \
  "`timeout`:{`type`:`number`,`exclusiveMinimum`:0,`description`:`seconds before it is killed (at most the "           \
  "server's --timeout, which is also the default)`}"
#define EXEC_OUTPUT                                                                                                    \
  "{`type`:`object`,`properties`:{"                                                                                    \
  "`exit_code`:{`type`:`integer`,`description`:`the exit code (128 + N for signal N, 124 for a timeout)`},"            \
  "`stdout`:{`type`:`string`,`description`:`standard output, up to the server's --max-output bytes`},"                 \
  "`stderr`:{`type`:`string`,`description`:`standard error, up to the server's --max-output bytes`},"                  \
  "`timed_out`:{`type`:`boolean`,`description`:`killed at its timeout`},"                                              \
  "`truncated`:{`type`:`boolean`,`description`:`an output stream was cut at --max-output`},"                           \
  "`signal`:{`type`:`integer`,`description`:`the signal that ended it, when one did`}},"                               \
  "`required`:[`exit_code`,`stdout`,`stderr`,`timed_out`,`truncated`]}"

enum world { CLOSED, NET }; /* NET: its commands reach a network when the server gives one */

static const struct tool {
  const char *name, *title, *description, *input, *output;
  bool read_only, destructive, idempotent;
  enum world world;
} tools[] = {
    {"sandbox_create", "Create a sandbox",
     "Create a sandbox (an isolated Linux machine) and return its id. It lives until sandbox_destroy or the end of "
     "this session.",
     "{`type`:`object`,`properties`:{"
     "`image`:{`type`:`string`,`description`:`the rootfs image to start (default: the server's --image)`},"
     "`memory`:{`type`:`string`,`description`:`memory limit, such as 512M (at most the server's --memory)`},"
     "`cpus`:{`type`:`number`,`exclusiveMinimum`:0,`description`:`CPUs it may use, such as 1.5 (at most the "
     "server's --cpus)`},"
     "`pids`:{`type`:`integer`,`minimum`:1,`description`:`processes it may hold at once (at most the server's "
     "--pids)`},"
     "`disk`:{`type`:`string`,`description`:`writable space, such as 1G (at most the server's --disk)`},"
     "`net`:{`type`:`string`,`enum`:[`none`,`proxy`],`description`:`none: loopback only (default); proxy: "
     "HTTP(S) through hutch's allowlist proxy, when the server allows it`},"
     "`allow`:{`type`:`array`,`items`:{`type`:`string`},`description`:`hosts (HOST or HOST:PORT) the proxy lets "
     "through besides the policy's, among those the server permits; needs net proxy`},"
     "`snapshot`:{`type`:`string`,`description`:`a snapshot of this session (sandbox_snapshot's image) to start "
     "from instead of an image`}},"
     "`additionalProperties`:false}",
     "{`type`:`object`,`properties`:{"
     "`id`:{`type`:`string`,`description`:`the sandbox's id, for the other tools`},"
     "`image`:{`type`:`string`,`description`:`the image it runs`},"
     "`limits`:{`type`:`string`,`enum`:[`cgroup`,`rlimits`,`none`],`description`:`how its limits are held: a "
     "cgroup, rlimits, or none set`},"
     "`net`:{`type`:`string`,`enum`:[`none`,`proxy`],`description`:`its network`}},"
     "`required`:[`id`,`image`,`limits`,`net`]}",
     false, false, false, CLOSED},
    {"sandbox_exec", "Run a shell command",
     "Run a shell command (/bin/sh -c) in a sandbox; returns its exit code, stdout and stderr. A command that does "
     "not exit 0 is a tool error, its output returned all the same.",
     "{`type`:`object`,`properties`:{" SANDBOX_ID ","
     "`command`:{`type`:`string`,`description`:`the shell command, run with /bin/sh -c`}," TIMEOUT ","
     "`workdir`:{`type`:`string`,`description`:`absolute directory to run in (default: the image's working "
     "directory)`},"
     "`stdin`:{`type`:`string`,`description`:`text given to the command on its standard input (default: "
     "none)`}},"
     "`required`:[`id`,`command`],`additionalProperties`:false}",
     EXEC_OUTPUT, false, true, false, NET},
    {"sandbox_run_code", "Run a program",
     "Run a program in a language in a sandbox; its interpreter or compiler must be in the sandbox's image "
     "(compiled languages are built in a fresh directory under /tmp). A program that does not exit 0 is a tool "
     "error, its output returned all the same.",
     "{`type`:`object`,`properties`:{" SANDBOX_ID ","
     "`language`:{`type`:`string`,`enum`:[`python`,`bash`,`sh`,`javascript`,`ruby`,`perl`,`r`,`c`,`cpp`,`go`,"
     "`java`],`description`:`the program's language`},"
     "`code`:{`type`:`string`,`description`:`the program's source`}," TIMEOUT "},"
     "`required`:[`id`,`language`,`code`],`additionalProperties`:false}",
     EXEC_OUTPUT, false, true, false, NET},
    {"sandbox_python", "Run Python in a persistent interpreter",
     "Run Python code in the sandbox's persistent interpreter: variables, imports and functions survive between "
     "calls. Returns stdout, stderr, the value of a last expression, the exception (a tool error), and matplotlib "
     "figures as PNG images.",
     "{`type`:`object`,`properties`:{" SANDBOX_ID ","
     "`code`:{`type`:`string`,`description`:`Python code; the value of a last expression is returned`}," TIMEOUT "},"
     "`required`:[`id`,`code`],`additionalProperties`:false}",
     "{`type`:`object`,`properties`:{"
     "`stdout`:{`type`:`string`,`description`:`what it printed, a subprocess's output too`},"
     "`stderr`:{`type`:`string`,`description`:`what it wrote on standard error`},"
     "`result`:{`type`:`string`,`description`:`repr() of the value of a last expression, when it has one`},"
     "`error`:{`type`:`string`,`description`:`the exception with its traceback, when the code raised one`},"
     "`figures`:{`type`:`integer`,`description`:`matplotlib figures returned as images`},"
     "`truncated`:{`type`:`boolean`,`description`:`an output stream was cut at --max-output`}},"
     "`required`:[`stdout`,`stderr`,`figures`,`truncated`]}",
     false, true, false, NET},
    {"sandbox_write_file", "Write a file",
     "Write a file in a sandbox, replacing what it held (its directories are made); content is text, or base64.",
     "{`type`:`object`,`properties`:{" SANDBOX_ID ","
     "`path`:{`type`:`string`,`description`:`absolute path in the sandbox; no symlink is followed`},"
     "`content`:{`type`:`string`,`description`:`the file's content, as text or base64 (encoding)`},"
     "`encoding`:{`type`:`string`,`enum`:[`utf-8`,`base64`],`description`:`how content is given (default: "
     "utf-8)`}},"
     "`required`:[`id`,`path`,`content`],`additionalProperties`:false}",
     "{`type`:`object`,`properties`:{"
     "`path`:{`type`:`string`,`description`:`the file written`},"
     "`bytes`:{`type`:`integer`,`description`:`its size`}},"
     "`required`:[`path`,`bytes`]}",
     false, true, true, CLOSED},
    {"sandbox_read_file", "Read a file", "Read a regular file of a sandbox: text, or base64 when it is not UTF-8.",
     "{`type`:`object`,`properties`:{" SANDBOX_ID ","
     "`path`:{`type`:`string`,`description`:`absolute path in the sandbox; no symlink is followed`}},"
     "`required`:[`id`,`path`],`additionalProperties`:false}",
     "{`type`:`object`,`properties`:{"
     "`path`:{`type`:`string`,`description`:`the file read`},"
     "`size`:{`type`:`integer`,`description`:`its size in bytes`},"
     "`encoding`:{`type`:`string`,`enum`:[`utf-8`,`base64`],`description`:`how content is given`},"
     "`content`:{`type`:`string`,`description`:`its bytes, as text or base64`}},"
     "`required`:[`path`,`size`,`encoding`,`content`]}",
     true, false, true, CLOSED},
    {"sandbox_list_dir", "List a directory", "List the paths under a directory of a sandbox.",
     "{`type`:`object`,`properties`:{" SANDBOX_ID ","
     "`path`:{`type`:`string`,`description`:`absolute directory in the sandbox; no symlink is followed`},"
     "`depth`:{`type`:`integer`,`minimum`:1,`maximum`:8,`description`:`levels below it to list (default: 1)`}},"
     "`required`:[`id`,`path`],`additionalProperties`:false}",
     "{`type`:`object`,`properties`:{"
     "`path`:{`type`:`string`,`description`:`the directory listed`},"
     "`paths`:{`type`:`array`,`items`:{`type`:`string`},`description`:`the directory, then the paths under "
     "it`},"
     "`truncated`:{`type`:`boolean`,`description`:`more than 10000 paths: the rest are left out`}},"
     "`required`:[`path`,`paths`,`truncated`]}",
     true, false, true, CLOSED},
    {"sandbox_list", "List sandboxes", "List this session's sandboxes.",
     "{`type`:`object`,`properties`:{},`additionalProperties`:false}",
     "{`type`:`object`,`properties`:{`sandboxes`:{`type`:`array`,`description`:`this session's sandboxes`,"
     "`items`:{`type`:`object`,`properties`:{"
     "`id`:{`type`:`string`},`image`:{`type`:`string`},"
     "`created`:{`type`:`integer`,`description`:`seconds since the epoch`}},"
     "`required`:[`id`,`image`,`created`]}}},"
     "`required`:[`sandboxes`]}",
     true, false, true, CLOSED},
    {"sandbox_destroy", "Destroy a sandbox", "Kill everything in a sandbox and remove it, its files with it.",
     "{`type`:`object`,`properties`:{" SANDBOX_ID "},`required`:[`id`],`additionalProperties`:false}",
     "{`type`:`object`,`properties`:{`id`:{`type`:`string`,`description`:`the sandbox removed`}},"
     "`required`:[`id`]}",
     false, true, true, CLOSED},
    /* mcp_lifecycle.c's tools */
    {"sandbox_pause", "Pause a sandbox",
     "Freeze every process of a sandbox: it keeps its memory and files and uses no CPU; until sandbox_resume, "
     "commands and file calls on it are tool errors (sandbox_destroy still works).",
     "{`type`:`object`,`properties`:{" SANDBOX_ID "},`required`:[`id`],`additionalProperties`:false}",
     "{`type`:`object`,`properties`:{"
     "`id`:{`type`:`string`,`description`:`the sandbox paused`},"
     "`paused`:{`type`:`boolean`,`description`:`true`},"
     "`method`:{`type`:`string`,`enum`:[`cgroup`,`ptrace`],`description`:`how it is held: its cgroup's freezer, "
     "or a process of the server's that holds every task (they die with it)`}},"
     "`required`:[`id`,`paused`,`method`]}",
     false, false, true, CLOSED},
    {"sandbox_resume", "Resume a sandbox", "Let a paused sandbox go on where it stopped.",
     "{`type`:`object`,`properties`:{" SANDBOX_ID "},`required`:[`id`],`additionalProperties`:false}",
     "{`type`:`object`,`properties`:{"
     "`id`:{`type`:`string`,`description`:`the sandbox resumed`},"
     "`paused`:{`type`:`boolean`,`description`:`false`},"
     "`paused_seconds`:{`type`:`number`,`description`:`how long it was paused`}},"
     "`required`:[`id`,`paused`,`paused_seconds`]}",
     false, false, true, CLOSED},
    {"sandbox_snapshot", "Snapshot a sandbox",
     "Keep a sandbox's files (what it changed on top of its image, not /tmp) as an image of this session, without "
     "stopping it; sandbox_reset with that snapshot goes back to it. A session keeps at most the server's "
     "--max-snapshots; they are removed when the session ends.",
     "{`type`:`object`,`properties`:{" SANDBOX_ID "},`required`:[`id`],`additionalProperties`:false}",
     "{`type`:`object`,`properties`:{"
     "`id`:{`type`:`string`,`description`:`the sandbox snapshotted`},"
     "`image`:{`type`:`string`,`description`:`the snapshot's name (mcp-TAG-N), for sandbox_reset`},"
     "`digest`:{`type`:`string`,`description`:`the snapshot's layer digest (sha256:...)`},"
     "`size`:{`type`:`number`,`description`:`bytes of file content in it`},"
     "`files`:{`type`:`number`,`description`:`files, directories, links and deletions in it`},"
     "`snapshots_left`:{`type`:`number`,`description`:`how many more this session may keep`}},"
     "`required`:[`id`,`image`,`digest`,`size`,`files`,`snapshots_left`]}",
     false, false, false, CLOSED},
    {"sandbox_reset", "Reset a sandbox",
     "Start a sandbox anew under the same id: every process ends (the Python interpreter too) and its files are "
     "those of its image again, or of one of this session's snapshots.",
     "{`type`:`object`,`properties`:{" SANDBOX_ID ","
     "`snapshot`:{`type`:`string`,`description`:`a snapshot of this session (sandbox_snapshot's image) to start "
     "from instead of its image`}},"
     "`required`:[`id`],`additionalProperties`:false}",
     "{`type`:`object`,`properties`:{"
     "`id`:{`type`:`string`,`description`:`the sandbox reset`},"
     "`image`:{`type`:`string`,`description`:`the image it runs now`}},"
     "`required`:[`id`,`image`]}",
     false, true, true, CLOSED},
    {"sandbox_snapshot_delete", "Delete a snapshot",
     "Remove one of this session's snapshots from the store, making room for another. Refused while a sandbox of "
     "the session runs on it, or while a later snapshot lies over it.",
     "{`type`:`object`,`properties`:{"
     "`snapshot`:{`type`:`string`,`description`:`the snapshot to delete (sandbox_snapshot's image)`}},"
     "`required`:[`snapshot`],`additionalProperties`:false}",
     "{`type`:`object`,`properties`:{"
     "`snapshot`:{`type`:`string`,`description`:`the snapshot deleted`},"
     "`snapshots_left`:{`type`:`number`,`description`:`how many more this session may keep`}},"
     "`required`:[`snapshot`,`snapshots_left`]}",
     false, true, true, CLOSED},
    /* mcp_fork.c's */
    {"sandbox_fork", "Fork a sandbox",
     "Make new sandboxes of this session that start from a sandbox's files (what it changed on top of its image; "
     "not /tmp, not its processes), each independent of it and of the others: no write of one reaches another. "
     "The sandbox is paused for the copy, and goes on after. They count against the server's --max-sandboxes.",
     "{`type`:`object`,`properties`:{" SANDBOX_ID ","
     "`n`:{`type`:`integer`,`minimum`:1,`maximum`:" MCP_STR(
         HUTCH_FORK_MAX) ",`description`:`how many new "
                         "sandboxes (default: 1)`}},"
                         "`required`:[`id`],`additionalProperties`:false}",
     "{`type`:`object`,`properties`:{"
     "`id`:{`type`:`string`,`description`:`the sandbox forked`},"
     "`children`:{`type`:`array`,`items`:{`type`:`string`},`description`:`the new sandboxes' ids, for the other "
     "tools`},"
     "`paused_ms`:{`type`:`number`,`description`:`how long the sandbox was paused for the copy (0 when it was "
     "paused already)`},"
     "`sandboxes_left`:{`type`:`integer`,`description`:`how many more sandboxes this session may have`}},"
     "`required`:[`id`,`children`,`paused_ms`,`sandboxes_left`]}",
     false, false, false, CLOSED},
    /* mcp_llmsb.c's: llm-sandbox's MCP server's tools, under its names and
     * parameters, so that a client made for that server works unchanged. */
    {"execute_code", "Execute code (llm-sandbox)",
     "Execute code in a fresh sandbox, destroyed after the call, as llm-sandbox's MCP server does; Python's "
     "matplotlib figures come back as an image (the last one). The text is JSON: exit_code, stderr, stdout. A "
     "language without an image on this server, or code that does not exit 0, is a tool error.",
     "{`type`:`object`,`properties`:{"
     "`code`:{`type`:`string`,`title`:`Code`,`description`:`the code to execute`},"
     "`language`:{`type`:`string`,`title`:`Language`,`default`:`python`,`description`:`python, javascript, java, "
     "cpp, go, r or ruby (get_supported_languages; get_language_details says which run on this server)`},"
     "`libraries`:{`type`:`array`,`items`:{`type`:`string`},`title`:`Libraries`,`default`:null,`description`:`"
     "packages to install first with the language's package manager, through hutch's proxy (needs hutch mcp --net "
     "proxy); null or absent: none`},"
     "`timeout`:{`type`:`integer`,`title`:`Timeout`,`default`:30,`minimum`:1,`description`:`seconds the code may "
     "run (at most the server's --timeout), and as many again for libraries`}},"
     "`required`:[`code`],`additionalProperties`:false}",
     "{`type`:`object`,`properties`:{"
     "`exit_code`:{`type`:`integer`,`description`:`the exit code (1 for an exception, 124 for a timeout)`},"
     "`stderr`:{`type`:`string`,`description`:`standard error, up to the server's --max-output bytes`},"
     "`stdout`:{`type`:`string`,`description`:`standard output, up to the server's --max-output bytes`},"
     "`language`:{`type`:`string`,`description`:`the language run`},"
     "`image`:{`type`:`string`,`description`:`the image it ran on`},"
     "`plots`:{`type`:`integer`,`description`:`figures the code made (the last is returned as an image)`}},"
     "`required`:[`exit_code`,`stderr`,`stdout`]}",
     false, false, false, NET},
    {"get_supported_languages", "Supported languages (llm-sandbox)",
     "The languages of llm-sandbox's MCP server, as its server lists them (a JSON array); get_language_details "
     "says which of them run on this server.",
     "{`type`:`object`,`properties`:{},`additionalProperties`:false}",
     "{`type`:`object`,`properties`:{"
     "`languages`:{`type`:`array`,`items`:{`type`:`string`},`description`:`llm-sandbox's languages`},"
     "`available`:{`type`:`array`,`items`:{`type`:`string`},`description`:`those this server runs now (an image "
     "with the language's tools is in its store)`}},"
     "`required`:[`languages`,`available`]}",
     true, false, true, CLOSED},
    {"get_language_details", "Language details (llm-sandbox)",
     "Details of a language, as llm-sandbox's MCP server gives them (version, package manager, preinstalled "
     "libraries, use cases, visualization support, examples), with what this server has of it: hutch_available, "
     "hutch_image, hutch_note.",
     "{`type`:`object`,`properties`:{"
     "`language`:{`type`:`string`,`title`:`Language`,`description`:`one of get_supported_languages`}},"
     "`required`:[`language`],`additionalProperties`:false}",
     "{`type`:`object`,`properties`:{"
     "`version`:{`type`:`string`},`package_manager`:{`type`:`string`},"
     "`preinstalled_libraries`:{`type`:`array`,`items`:{`type`:`string`}},"
     "`use_cases`:{`type`:`array`,`items`:{`type`:`string`}},"
     "`visualization_support`:{`type`:`boolean`},"
     "`examples`:{`type`:`array`,`items`:{`type`:`object`,`properties`:{`title`:{`type`:`string`},"
     "`description`:{`type`:`string`},`code`:{`type`:`string`}},`required`:[`title`,`description`,`code`]}},"
     "`hutch_available`:{`type`:`boolean`,`description`:`whether this server runs it now`},"
     "`hutch_image`:{`type`:`string`,`description`:`the image it runs on here (empty when none)`},"
     "`hutch_note`:{`type`:`string`,`description`:`what differs here, or how to make it available`}},"
     "`required`:[`version`,`package_manager`,`preinstalled_libraries`,`use_cases`,`visualization_support`,"
     "`examples`,`hutch_available`,`hutch_image`,`hutch_note`]}",
     true, false, true, CLOSED},
};

static cJSON *schema(const char *text) {
  _cleanup_free_ char *json = xstrdup(text);
  for (char *p = json; (p = strchr(p, '`')) != NULL;)
    *p = '"';
  cJSON *j = cJSON_Parse(json);
  if (j == NULL)
    abort(); /* a schema above that is not JSON: the unit test catches it first */
  return j;
}

static const struct tool *tool_named(const char *name) {
  for (size_t i = 0; i < ARRAY_SIZE(tools); i++)
    if (strcmp(tools[i].name, name) == 0)
      return &tools[i];
  return NULL;
}

bool mcp_tool_known(const char *name) {
  return tool_named(name) != NULL;
}

cJSON *mcp_tools_list(const struct mcp_config *cfg) {
  cJSON *a = cJSON_CreateArray();
  for (size_t i = 0; i < ARRAY_SIZE(tools); i++) {
    const struct tool *t = &tools[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", t->name);
    cJSON_AddStringToObject(o, "title", t->title);
    cJSON_AddStringToObject(o, "description", t->description);
    cJSON_AddItemToObject(o, "inputSchema", schema(t->input));
    cJSON_AddItemToObject(o, "outputSchema", schema(t->output));
    cJSON *an = cJSON_AddObjectToObject(o, "annotations");
    cJSON_AddStringToObject(an, "title", t->title);
    cJSON_AddBoolToObject(an, "readOnlyHint", t->read_only);
    cJSON_AddBoolToObject(an, "destructiveHint", t->destructive);
    cJSON_AddBoolToObject(an, "idempotentHint", t->idempotent);
    cJSON_AddBoolToObject(an, "openWorldHint", t->world == NET && cfg->net_proxy);
    cJSON_AddItemToArray(a, o);
  }
  return a;
}

static bool type_is(const cJSON *v, const char *type) {
  if (strcmp(type, "string") == 0)
    return cJSON_IsString(v);
  if (strcmp(type, "number") == 0)
    return cJSON_IsNumber(v);
  if (strcmp(type, "integer") == 0)
    return cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble == floor(v->valuedouble) &&
           fabs(v->valuedouble) < 9007199254740992.0;
  if (strcmp(type, "boolean") == 0)
    return cJSON_IsBool(v);
  if (strcmp(type, "array") == 0)
    return cJSON_IsArray(v);
  return cJSON_IsObject(v);
}

/* Why v does not fit the property's schema p, or NULL. */
static char *value_check(const char *key, const cJSON *p, const cJSON *v) {
  const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(p, "type"));
  const char *what = cJSON_GetStringValue(cJSON_GetObjectItem(p, "description"));
  /* null where the default is null stands for the argument left out (as
   * llm-sandbox's clients send libraries). */
  if (cJSON_IsNull(v) && cJSON_IsNull(cJSON_GetObjectItem(p, "default")))
    return NULL;
  if (type && !type_is(v, type))
    return xasprintf("argument %s wants %s %s: %s", key, strcmp(type, "integer") == 0 ? "an" : "a", type, what);
  const cJSON *items = cJSON_GetObjectItem(p, "items"), *e;
  const char *item_type = cJSON_GetStringValue(cJSON_GetObjectItem(items, "type"));
  const cJSON *elements = cJSON_IsArray(v) ? v : NULL;
  cJSON_ArrayForEach(e, elements) {
    if (item_type && !type_is(e, item_type))
      return xasprintf("argument %s wants an array of %ss: %s", key, item_type, what);
  }
  const cJSON *choices = cJSON_GetObjectItem(p, "enum"), *c;
  if (choices) {
    _cleanup_free_ char *list = NULL;
    size_t len = 0, cap = 0;
    cJSON_ArrayForEach(c, choices) {
      if (cJSON_IsString(v) && strcmp(c->valuestring, v->valuestring) == 0)
        return NULL;
      text_appendf(&list, &len, &cap, "%s%s", len ? ", " : "", c->valuestring);
    }
    return xasprintf("argument %s wants one of: %s", key, list);
  }
  const cJSON *min = cJSON_GetObjectItem(p, "minimum"), *max = cJSON_GetObjectItem(p, "maximum");
  const cJSON *above = cJSON_GetObjectItem(p, "exclusiveMinimum");
  if (cJSON_IsNumber(v) && ((min && v->valuedouble < min->valuedouble) || (max && v->valuedouble > max->valuedouble) ||
                            (above && !(v->valuedouble > above->valuedouble)))) {
    char range[64];
    if (above)
      snprintf(range, sizeof(range), "above %g", above->valuedouble);
    else
      snprintf(range, sizeof(range), "%g to %g", min ? min->valuedouble : -INFINITY, max ? max->valuedouble : INFINITY);
    return xasprintf("argument %s wants a number %s: %s", key, range, what);
  }
  return NULL;
}

char *mcp_args_check(const char *name, const cJSON *args) {
  const struct tool *t = tool_named(name);
  if (t == NULL)
    return xasprintf("unknown tool %s", name);
  cJSON *s = schema(t->input);
  const cJSON *props = cJSON_GetObjectItem(s, "properties"), *required = cJSON_GetObjectItem(s, "required");
  char *why = NULL;
  const cJSON *a, *p;
  cJSON_ArrayForEach(a, args) {
    p = cJSON_GetObjectItemCaseSensitive(props, a->string);
    if (p == NULL) {
      _cleanup_free_ char *names = NULL;
      size_t len = 0, cap = 0;
      cJSON_ArrayForEach(p, props) {
        text_appendf(&names, &len, &cap, "%s%s", len ? ", " : "", p->string);
      }
      /* The name is the client's, of any length: only its start is quoted. */
      why = xasprintf("unknown argument %.64s%s: %s takes %s", a->string, strlen(a->string) > 64 ? "..." : "", name,
                      names ? names : "none");
      goto done;
    }
    if ((why = value_check(a->string, p, a)) != NULL)
      goto done;
  }
  cJSON_ArrayForEach(a, required) {
    if (cJSON_GetObjectItemCaseSensitive(args, a->valuestring) == NULL) {
      p = cJSON_GetObjectItemCaseSensitive(props, a->valuestring);
      why = xasprintf("missing argument %s: %s", a->valuestring,
                      cJSON_GetStringValue(cJSON_GetObjectItem(p, "description")));
      goto done;
    }
  }
done:
  cJSON_Delete(s);
  return why;
}
