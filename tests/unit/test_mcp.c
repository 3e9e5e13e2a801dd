/* SPDX-License-Identifier: Apache-2.0 */
/* hutch mcp's pure half: JSON-RPC replies for bad input, version
 * negotiation, the tool list's schemas and annotations, arguments checked
 * against them (tool errors, not protocol errors), resource URIs, prompts,
 * base64 and the UTF-8 made of what a sandbox wrote.  No sandbox is started: the tools that need one are asked
 * about ids that do not exist.  The reaper is run on a state directory of
 * records left by sandboxes that died before they were recorded (empty
 * directories, which hutch_sandbox_remove removes). */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../src/mcp/mcp.h"
#include "tap.h"

static struct mcp_config cfg = {.max_output = 1024, .max_file = 1024, .max_sandboxes = 1, .reaper_fd = -1};

/* The reply's error code, 0 for a result, -1 for no reply. */
static int code_of(struct mcp_session *s, const char *msg, cJSON **result) {
  char *r = mcp_handle_message(&cfg, s, msg, strlen(msg), NULL);
  if (r == NULL)
    return -1;
  cJSON *j = cJSON_Parse(r);
  free(r);
  const cJSON *e = cJSON_GetObjectItem(j, "error");
  int code = e ? cJSON_GetObjectItem(e, "code")->valueint : 0;
  if (result)
    *result = cJSON_DetachItemFromObject(j, "result");
  cJSON_Delete(j);
  return code;
}

static void test_protocol(void) {
  struct mcp_session s = {0};
  tap_is_int(code_of(&s, "{nope", NULL), -32700, "not JSON: parse error");
  tap_is_int(code_of(&s, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", NULL), -32600,
             "a batch: invalid request");
  tap_is_int(code_of(&s, "{\"id\":1,\"method\":\"ping\"}", NULL), -32600, "no jsonrpc member: invalid request");
  tap_is_int(code_of(&s, "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}", NULL), -32600, "an object id: invalid");
  tap_is_int(code_of(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", NULL), -32600,
             "tools/list before initialize: invalid request");
  tap_is_int(code_of(&s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", NULL), -1,
             "a notification gets no reply");
  tap_is_int(code_of(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", NULL), -1, "nor does a response");
  cJSON *r = NULL;
  tap_is_int(code_of(&s,
                     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
                     "\"2099-01-01\",\"capabilities\":{}}}",
                     &r),
             0, "initialize");
  tap_is_str(cJSON_GetObjectItem(r, "protocolVersion")->valuestring, MCP_LATEST_VERSION,
             "an unknown revision gets the newest");
  cJSON_Delete(r);
  code_of(&s,
          "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\"}}",
          &r);
  tap_is_str(cJSON_GetObjectItem(r, "protocolVersion")->valuestring, "2025-06-18", "a known one is kept");
  cJSON_Delete(r);
  tap_ok(mcp_version_supported("2024-11-05") && !mcp_version_supported("2024-10-07") && !mcp_version_supported(NULL),
         "the revisions spoken");
  tap_is_int(code_of(&s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}", NULL), 0, "ping");
  tap_is_int(code_of(&s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"no/such\"}", NULL), -32601,
             "an unknown method: -32601");
  tap_is_int(code_of(&s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/nosuch\"}", NULL), -32601,
             "an unknown resources/ method too");
  tap_is_int(code_of(&s, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"x\"}}", NULL),
             -32602, "an unknown tool: -32602");
  tap_is_int(code_of(&s,
                     "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"sandbox_exec\","
                     "\"arguments\":[]}}",
                     NULL),
             -32602, "arguments that are not an object: -32602");
  code_of(&s,
          "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"sandbox_exec\","
          "\"arguments\":{\"id\":\"nosuch\",\"command\":\"true\"}}}",
          &r);
  tap_ok(cJSON_IsTrue(cJSON_GetObjectItem(r, "isError")), "a sandbox of another session (or none) is a tool error");
  cJSON_Delete(r);
  code_of(&s,
          "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":\"sandbox_create\","
          "\"arguments\":{\"memory\":\"1G\"}}}",
          &r);
  tap_ok(cJSON_IsTrue(cJSON_GetObjectItem(r, "isError")), "a limit the operator did not allow is refused");
  cJSON_Delete(r);
  code_of(&s,
          "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"sandbox_create\","
          "\"arguments\":{\"net\":\"proxy\"}}}",
          &r);
  tap_ok(cJSON_IsTrue(cJSON_GetObjectItem(r, "isError")), "so is a network it did not allow");
  cJSON_Delete(r);
  tap_ok(s.sandboxes == NULL, "and nothing was created");

  /* Input validation: tool errors the model reads, as the 2025-11-25
   * revision has it, not JSON-RPC errors. */
  static const struct {
    const char *args, *want, *what;
  } invalid[] = {
      {"\"name\":\"sandbox_exec\",\"arguments\":{\"id\":\"x\"}", "missing argument command: the shell command",
       "a missing command"},
      {"\"name\":\"sandbox_exec\",\"arguments\":{\"id\":\"x\",\"command\":3}", "argument command wants a string",
       "a command that is not a string"},
      {"\"name\":\"sandbox_exec\",\"arguments\":{\"id\":\"x\",\"command\":\"true\",\"cmd\":\"x\"}",
       "unknown argument cmd: sandbox_exec takes id, command, timeout, workdir, stdin", "an argument it does not take"},
      {"\"name\":\"sandbox_exec\",\"arguments\":{\"id\":\"x\",\"command\":\"true\",\"timeout\":0}",
       "argument timeout wants a number above 0", "a timeout of 0"},
      {"\"name\":\"sandbox_run_code\",\"arguments\":{\"id\":\"x\",\"language\":\"cobol\",\"code\":\"x\"}",
       "argument language wants one of: python, bash, sh, javascript, ruby, perl, r, c, cpp, go, java",
       "an unknown language"},
      {"\"name\":\"sandbox_list_dir\",\"arguments\":{\"id\":\"x\",\"path\":\"/\",\"depth\":9}",
       "argument depth wants a number 1 to 8", "a depth past 8"},
      {"\"name\":\"sandbox_list_dir\",\"arguments\":{\"id\":\"x\",\"path\":\"/\",\"depth\":1.5}",
       "argument depth wants an integer", "a depth that is not whole"},
      {"\"name\":\"sandbox_create\",\"arguments\":{\"allow\":[1]}", "argument allow wants an array of strings",
       "hosts that are not strings"},
      {"\"name\":\"sandbox_pause\",\"arguments\":{}", "missing argument id: the sandbox's id", "a pause of no sandbox"},
      {"\"name\":\"sandbox_resume\",\"arguments\":{\"id\":\"x\",\"all\":true}",
       "unknown argument all: sandbox_resume takes id", "a resume with an argument it does not take"},
      {"\"name\":\"sandbox_pause\",\"arguments\":{\"id\":\"x\"}", "sandbox: no sandbox of this session has that id",
       "a pause of a sandbox of no session"},
      {"\"name\":\"sandbox_resume\",\"arguments\":{\"id\":\"x\"}", "sandbox: no sandbox of this session has that id",
       "a resume of a sandbox of no session"},
      {"\"name\":\"sandbox_snapshot\",\"arguments\":{\"id\":\"x\",\"name\":\"mine\"}",
       "unknown argument name: sandbox_snapshot takes id", "a snapshot named by the client"},
      {"\"name\":\"sandbox_snapshot\",\"arguments\":{\"id\":\"x\"}", "sandbox: no sandbox of this session has that id",
       "a snapshot of a sandbox of no session"},
      {"\"name\":\"sandbox_reset\",\"arguments\":{\"id\":\"x\",\"snapshot\":3}", "argument snapshot wants a string",
       "a reset to a snapshot that is not a string"},
      {"\"name\":\"sandbox_reset\",\"arguments\":{\"id\":\"x\"}", "sandbox: no sandbox of this session has that id",
       "a reset of a sandbox of no session"},
      {"\"name\":\"sandbox_fork\",\"arguments\":{\"id\":\"x\",\"n\":0}", "argument n wants a number 1 to 64",
       "a fork of no children"},
      {"\"name\":\"sandbox_fork\",\"arguments\":{\"id\":\"x\",\"n\":65}", "argument n wants a number 1 to 64",
       "a fork past HUTCH_FORK_MAX"},
      {"\"name\":\"sandbox_fork\",\"arguments\":{\"id\":\"x\",\"n\":1.5}", "argument n wants an integer",
       "a fork of a count that is not whole"},
      {"\"name\":\"sandbox_fork\",\"arguments\":{\"n\":1}", "missing argument id", "a fork of no sandbox"},
      {"\"name\":\"sandbox_fork\",\"arguments\":{\"id\":\"x\"}", "sandbox: no sandbox of this session has that id",
       "a fork of a sandbox of no session"},
      {"\"name\":\"sandbox_snapshot_delete\",\"arguments\":{}", "missing argument snapshot", "a delete of no snapshot"},
      {"\"name\":\"sandbox_snapshot_delete\",\"arguments\":{\"snapshot\":\"hutch-test-busybox\"}",
       "is not one of this session's", "a delete of an image of the store"},
      {"\"name\":\"sandbox_create\",\"arguments\":{\"snapshot\":\"hutch-test-busybox\"}",
       "is not one of this session's", "a create from an image of the store named as a snapshot"},
      {"\"name\":\"sandbox_create\",\"arguments\":{\"image\":\"a\",\"snapshot\":\"b\"}",
       "arguments image and snapshot: give one", "a create from an image and a snapshot at once"},
  };
  for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
    char *msg = NULL;
    if (asprintf(&msg, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{%s}}", invalid[i].args) < 0)
      abort();
    r = NULL;
    int code = code_of(&s, msg, &r);
    const char *text =
        cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "content"), 0), "text"));
    tap_ok(code == 0 && cJSON_IsTrue(cJSON_GetObjectItem(r, "isError")) && text && strstr(text, invalid[i].want),
           "%s: a tool error saying so (%s)", invalid[i].what, text ? text : "no text");
    cJSON_Delete(r);
    free(msg);
  }

  code_of(&s, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/list\"}", &r);
  const cJSON *tools = cJSON_GetObjectItem(r, "tools"), *t;
  int n = 0, schemas = 0;
  cJSON_ArrayForEach(t, tools) {
    n++;
    const cJSON *sc = cJSON_GetObjectItem(t, "inputSchema");
    schemas += cJSON_IsObject(sc) && strcmp(cJSON_GetObjectItem(sc, "type")->valuestring, "object") == 0;
  }
  tap_is_int(n, 18, "tools/list: 18 tools");
  tap_is_int(schemas, 18, "each with an object inputSchema");
  int described = 0, outputs = 0, annotated = 0, titled = 0;
  cJSON_ArrayForEach(t, tools) {
    const cJSON *props = cJSON_GetObjectItem(cJSON_GetObjectItem(t, "inputSchema"), "properties"), *p;
    bool all = true;
    cJSON_ArrayForEach(p, props) all &= cJSON_IsString(cJSON_GetObjectItem(p, "description"));
    described += all;
    const cJSON *out = cJSON_GetObjectItem(t, "outputSchema");
    outputs += cJSON_IsObject(out) && strcmp(cJSON_GetObjectItem(out, "type")->valuestring, "object") == 0 &&
               cJSON_IsArray(cJSON_GetObjectItem(out, "required"));
    const cJSON *a = cJSON_GetObjectItem(t, "annotations");
    annotated += cJSON_IsBool(cJSON_GetObjectItem(a, "readOnlyHint")) &&
                 cJSON_IsBool(cJSON_GetObjectItem(a, "destructiveHint")) &&
                 cJSON_IsBool(cJSON_GetObjectItem(a, "idempotentHint")) &&
                 cJSON_IsBool(cJSON_GetObjectItem(a, "openWorldHint"));
    titled += cJSON_IsString(cJSON_GetObjectItem(t, "title"));
  }
  tap_is_int(described, 18, "every input parameter of every tool is described");
  tap_is_int(outputs, 18, "each tool has an object outputSchema");
  tap_is_int(annotated, 18, "and the four annotations");
  tap_is_int(titled, 18, "and a title");
  cJSON_Delete(r);
}

/* The annotation `hint` of tool `name` in tools/list, with or without --net proxy. */
static bool hint(const char *name, const char *hint, bool net) {
  struct mcp_config c = cfg;
  c.net_proxy = net;
  cJSON *tools = mcp_tools_list(&c), *t;
  bool v = false;
  cJSON_ArrayForEach(t, tools) {
    if (strcmp(cJSON_GetObjectItem(t, "name")->valuestring, name) == 0)
      v = cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(t, "annotations"), hint));
  }
  cJSON_Delete(tools);
  return v;
}

static void test_annotations(void) {
  tap_ok(hint("sandbox_read_file", "readOnlyHint", false) && hint("sandbox_list", "readOnlyHint", false) &&
             hint("sandbox_list_dir", "readOnlyHint", false),
         "the tools that only read say so");
  tap_ok(!hint("sandbox_exec", "readOnlyHint", false) && hint("sandbox_exec", "destructiveHint", false) &&
             hint("sandbox_destroy", "destructiveHint", false) && hint("sandbox_write_file", "destructiveHint", false),
         "commands, writes and destroy are destructive");
  tap_ok(!hint("sandbox_create", "destructiveHint", false) && !hint("sandbox_create", "idempotentHint", false),
         "create destroys nothing and makes a new sandbox each time");
  tap_ok(hint("sandbox_write_file", "idempotentHint", false) && !hint("sandbox_exec", "idempotentHint", false),
         "writing the same file twice is idempotent; a command is not");
  tap_ok(!hint("sandbox_exec", "openWorldHint", false) && hint("sandbox_exec", "openWorldHint", true) &&
             hint("sandbox_python", "openWorldHint", true) && !hint("sandbox_read_file", "openWorldHint", true),
         "a command reaches an open world only when the server gives a network (--net proxy)");
  tap_ok(!hint("sandbox_pause", "destructiveHint", false) && hint("sandbox_pause", "idempotentHint", false) &&
             !hint("sandbox_resume", "readOnlyHint", false) && !hint("sandbox_resume", "openWorldHint", true),
         "pause and resume destroy nothing, change the sandbox's state, and reach no network");
  tap_ok(!hint("sandbox_snapshot", "destructiveHint", false) && !hint("sandbox_snapshot", "idempotentHint", false) &&
             !hint("sandbox_snapshot", "openWorldHint", true),
         "a snapshot destroys nothing and makes a new image each time");
  tap_ok(hint("sandbox_reset", "destructiveHint", false) && hint("sandbox_reset", "idempotentHint", false) &&
             !hint("sandbox_reset", "readOnlyHint", false),
         "a reset destroys the sandbox's processes and files, the same each time");
  tap_ok(!hint("sandbox_fork", "destructiveHint", false) && !hint("sandbox_fork", "idempotentHint", false) &&
             !hint("sandbox_fork", "openWorldHint", true) && !hint("sandbox_fork", "readOnlyHint", false),
         "a fork destroys nothing and makes new sandboxes each time");
  tap_ok(hint("sandbox_snapshot_delete", "destructiveHint", false) &&
             hint("sandbox_snapshot_delete", "idempotentHint", false),
         "deleting a snapshot destroys it, the same each time");
}

/* The text of a tools/call's result, and whether it is a tool error. */
static bool tool_error(struct mcp_session *s, const char *args, char *text, size_t size) {
  char *msg = NULL;
  if (asprintf(&msg, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{%s}}", args) < 0)
    abort();
  cJSON *r = NULL;
  int code = code_of(s, msg, &r);
  free(msg);
  const char *t =
      cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "content"), 0), "text"));
  snprintf(text, size, "%s", t ? t : "");
  bool is_error = code == 0 && cJSON_IsTrue(cJSON_GetObjectItem(r, "isError"));
  cJSON_Delete(r);
  return is_error;
}

/* What a session holds bounds a fork, and keeps a snapshot from being
 * deleted: refused before any sandbox or store is reached (the session's
 * entries here name none that exist). */
static void test_session_holds(void) {
  char dir[] = "/tmp/hutch-test-mcp-XXXXXX";
  if (mkdtemp(dir) == NULL)
    abort();
  const char *saved = cfg.state_dir;
  cfg.state_dir = dir;
  struct mcp_snapshot snaps[] = {{.name = "mcp-00000000-1", .base = "busybox"},
                                 {.name = "mcp-00000000-2", .base = "mcp-00000000-1"}};
  struct mcp_sandbox sb = {.id = "0123456789ab", .image = "mcp-00000000-2"};
  struct mcp_session s = {.initialized = true, .sandboxes = &sb, .snapshots = snaps, .n_snapshots = 2};
  char text[512];
  tap_ok(tool_error(&s, "\"name\":\"sandbox_fork\",\"arguments\":{\"id\":\"0123456789ab\"}", text, sizeof(text)) &&
             strstr(text, "has 1 sandboxes and may have 1 (the server's --max-sandboxes)"),
         "a fork past --max-sandboxes is refused, naming it (%s)", text);
  tap_ok(tool_error(&s, "\"name\":\"sandbox_snapshot_delete\",\"arguments\":{\"snapshot\":\"mcp-00000000-2\"}", text,
                    sizeof(text)) &&
             strstr(text, "sandbox 0123456789ab runs on it"),
         "a snapshot a sandbox of the session runs on is not deleted (%s)", text);
  tap_ok(tool_error(&s, "\"name\":\"sandbox_snapshot_delete\",\"arguments\":{\"snapshot\":\"mcp-00000000-1\"}", text,
                    sizeof(text)) &&
             strstr(text, "snapshot mcp-00000000-2 of this session") && strstr(text, "delete mcp-00000000-2 first"),
         "nor one a later snapshot lies over (%s)", text);
  tap_ok(s.n_snapshots == 2 && s.sandboxes == &sb && sb.next == NULL, "and the session holds what it held");
  cfg.state_dir = saved;
  rmdir(dir);
}

/* Which tools a paused sandbox takes: those that end or change its pause;
 * everything that would run in it or touch its files waits for resume. */
static void test_runs_paused(void) {
  static const char *const yes[] = {"sandbox_pause",    "sandbox_resume", "sandbox_destroy",
                                    "sandbox_snapshot", "sandbox_reset",  "sandbox_fork"};
  static const char *const no[] = {"sandbox_exec",       "sandbox_run_code",  "sandbox_python",
                                   "sandbox_write_file", "sandbox_read_file", "sandbox_list_dir"};
  int n = 0;
  for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
    n += mcp_tool_runs_paused(yes[i]) && mcp_tool_known(yes[i]);
  tap_is_int(n, 6, "pause, resume, destroy, snapshot, reset and fork act on a paused sandbox");
  n = 0;
  for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
    n += !mcp_tool_runs_paused(no[i]) && mcp_tool_known(no[i]);
  tap_is_int(n, 6, "commands, the interpreter and the file tools are refused while it is paused");
}

static void test_resources(void) {
  struct mcp_session s = {0};
  cJSON *r = NULL;
  code_of(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}", &r);
  const cJSON *caps = cJSON_GetObjectItem(r, "capabilities");
  tap_ok(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(caps, "resources"), "subscribe")) &&
             cJSON_IsObject(cJSON_GetObjectItem(caps, "prompts")),
         "initialize offers resources with subscriptions, and prompts");
  cJSON_Delete(r);
  tap_is_int(code_of(&s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"resources/list\"}", &r), 0, "resources/list");
  const cJSON *listed = cJSON_GetObjectItem(r, "resources");
  tap_ok(cJSON_GetArraySize(listed) == 1 &&
             strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(listed, 0), "uri")),
                    "sandbox://languages") == 0,
         "names only llm-sandbox's languages resource without a sandbox");
  cJSON_Delete(r);
  tap_is_int(code_of(&s,
                     "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/read\",\"params\":{\"uri\":"
                     "\"sandbox://abc/etc/passwd\"}}",
                     NULL),
             -32002, "a file of a sandbox of no session: resource not found (-32002)");
  tap_is_int(code_of(&s,
                     "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/read\",\"params\":{\"uri\":"
                     "\"file:///etc/passwd\"}}",
                     NULL),
             -32002, "a file:// of the host: not found either");
  tap_is_int(code_of(&s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/read\",\"params\":{}}", NULL), -32602,
             "no uri: invalid params");
  tap_is_int(code_of(&s,
                     "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/subscribe\",\"params\":{\"uri\":"
                     "\"sandbox://abc/x\"}}",
                     NULL),
             -32002, "subscribing to one: not found");
  tap_is_int(code_of(&s, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"resources/templates/list\"}", &r), 0,
             "resources/templates/list");
  tap_is_str(cJSON_GetStringValue(cJSON_GetObjectItem(
                 cJSON_GetArrayItem(cJSON_GetObjectItem(r, "resourceTemplates"), 0), "uriTemplate")),
             "sandbox://{id}{+path}", "one template: a sandbox's file");
  cJSON_Delete(r);

  char *uri = mcp_resource_uri("ab12", "/a b/\xc3\xbc%?#");
  tap_is_str(uri, "sandbox://ab12/a%20b/%C3%BC%25%3F%23", "a URI percent-encodes what a path needs");
  char *id = NULL, *path = NULL;
  tap_ok(mcp_resource_parse(uri, &id, &path) && strcmp(id, "ab12") == 0 && strcmp(path, "/a b/\xc3\xbc%?#") == 0,
         "and is read back");
  free(uri);
  free(id);
  free(path);
  static const char *const bad[] = {"sandbox://ab12",   "sandbox:///etc",     "sandbox://zz/etc", "sandbox://ab/a%00b",
                                    "sandbox://ab/a%2", "sandbox://ab/a?b=c", "file:///etc/x",    "sandbox://ab/x#y"};
  int refused = 0;
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    refused += !mcp_resource_parse(bad[i], &id, &path);
  tap_is_int(refused, 8, "URIs that name no sandbox file (no path, no id, a NUL, a query) are refused");
}

static void test_prompts(void) {
  struct mcp_session s = {.initialized = true};
  cJSON *r = NULL;
  code_of(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"prompts/list\"}", &r);
  tap_is_int(cJSON_GetArraySize(cJSON_GetObjectItem(r, "prompts")), 2, "prompts/list: 2 prompts");
  cJSON_Delete(r);
  tap_is_int(code_of(&s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"prompts/get\",\"params\":{\"name\":\"x\"}}", NULL),
             -32602, "an unknown prompt: -32602");
  tap_is_int(code_of(&s,
                     "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"prompts/get\",\"params\":{\"name\":\"sandbox_task\"}}",
                     NULL),
             -32602, "a missing required argument: -32602");
  tap_is_int(code_of(&s,
                     "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"prompts/get\",\"params\":{\"name\":\"sandbox_task\","
                     "\"arguments\":{\"task\":\"count the words of README\"}}}",
                     &r),
             0, "prompts/get");
  const char *text = cJSON_GetStringValue(cJSON_GetObjectItem(
      cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "messages"), 0), "content"), "text"));
  tap_ok(text && strstr(text, "sandbox_create") && strstr(text, "Task:\ncount the words of README\n"),
         "a user message with the task");
  cJSON_Delete(r);
}

static void test_base64(void) {
  const unsigned char bytes[] = {0, 255, 1, 2, 'a'};
  for (size_t len = 0; len <= sizeof(bytes); len++) {
    char *b = mcp_base64_encode(bytes, len);
    unsigned char out[16];
    size_t got = 99;
    tap_ok(mcp_base64_decode(b, out, &got) && got == len && memcmp(out, bytes, len) == 0, "base64 round trip of %zu",
           len);
    free(b);
  }
  char *b = mcp_base64_encode((const unsigned char *)"hello", 5);
  tap_is_str(b, "aGVsbG8=", "base64 of hello");
  free(b);
  unsigned char out[16];
  size_t got;
  tap_ok(!mcp_base64_decode("aGV*bG8=", out, &got), "a byte that is not base64 is refused");
  tap_ok(!mcp_base64_decode("aG=Vs", out, &got), "so is data after padding");
}

static bool shape_ok(const char *text) {
  return mcp_answer_shape_ok(text, strlen(text), MCP_ANSWER_STRINGS);
}

/* The interpreter's answers, and what the sandbox can write instead. */
static void test_answer_shape(void) {
  tap_ok(shape_ok("{\"result\": \"'[{'\", \"error\": null, \"figures\": [\"iVBO\", \"iVBO\"], \"stdout\": "
                  "\"a \\\"[[[\\\" \\\\\", \"stderr\": \"\", \"truncated\": false}"),
         "an answer, brackets, quotes and backslashes in its strings");
  tap_ok(!shape_ok("{\"a\": [[]]}"), "a third container is refused");
  tap_ok(!shape_ok("{\"a\": \"\\\\\", \"b\": [[]]}"), "after an escaped backslash, a string has ended");
  tap_ok(!shape_ok("{\"a\": \"\\\"\", \"b\": [[]]}"), "an escaped quote does not end one");
  char *many = malloc(1 + 3 * 2000 + 2 + 1);
  strcpy(many, "[");
  for (int i = 0; i < 2000; i++)
    strcat(many, "0, ");
  strcat(many, "0]");
  tap_ok(!shape_ok(many), "thousands of numbers between the strings are refused");
  free(many);
  char *strings = malloc(5 * (MCP_ANSWER_STRINGS + 1) + 3);
  strcpy(strings, "[");
  for (int i = 0; i <= MCP_ANSWER_STRINGS; i++)
    strcat(strings, "\"\",");
  strcat(strings, "\"\"]");
  tap_ok(!shape_ok(strings), "more strings than an answer has are refused");
  free(strings);
}

static void test_utf8(void) {
  char *u = mcp_utf8("a\xff"
                     "b\0c\xc3\xa9",
                     7);
  tap_is_str(u,
             "a\xef\xbf\xbd"
             "b\xef\xbf\xbd"
             "c\xc3\xa9",
             "bad bytes and NUL become U+FFFD, good UTF-8 stays");
  free(u);
  u = mcp_utf8("\xe2\x82", 2);
  tap_is_str(u, "\xef\xbf\xbd\xef\xbf\xbd", "a truncated sequence too");
  free(u);
}

/* More sandboxes than the reaper once had room for (4096): every one it is
 * told of is removed when the server goes, and none it was told to forget. */
static void test_reaper(void) {
  enum { MANY = 5000, KEPT = 7 };
  char dir[] = "/tmp/hutch-test-reaper.XXXXXX";
  if (mkdtemp(dir) == NULL) {
    tap_ok(false, "mkdtemp");
    return;
  }
  char path[sizeof(dir) + 64];
  for (int i = 0; i < MANY; i++) {
    snprintf(path, sizeof(path), "%s/%032x", dir, i);
    mkdir(path, 0700);
  }
  hutch_error_t err = NULL;
  int fd = mcp_reaper_start(dir, NULL, &err);
  tap_ok(fd >= 0, "the reaper starts");
  if (fd < 0) {
    hutch_error_free(&err);
    return;
  }
  int failed = 0;
  for (int i = 0; i < MANY; i++) {
    char id[40];
    snprintf(id, sizeof(id), "%032x", i);
    failed += mcp_reaper_announce(fd, true, id, &err) < 0;
  }
  for (int i = 0; i < KEPT; i++) {
    char id[40];
    snprintf(id, sizeof(id), "%032x", i * 700);
    failed += mcp_reaper_announce(fd, false, id, &err) < 0;
  }
  tap_is_int(failed, 0, "it is told of %d sandboxes and to forget %d", MANY, KEPT);
  close(fd); /* the server's end */
  int status = -1;
  while (waitpid(-1, &status, 0) < 0 && errno == EINTR)
    ;
  tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the reaper ends with the server");
  int left = 0, kept = 0;
  for (int i = 0; i < MANY; i++) {
    snprintf(path, sizeof(path), "%s/%032x", dir, i);
    if (rmdir(path) == 0)
      (i % 700 == 0 && i / 700 < KEPT) ? kept++ : left++;
  }
  tap_is_int(left, 0, "it removed every one it was told of, past 4096");
  tap_is_int(kept, KEPT, "and none it was told to forget");
  rmdir(dir);
}

/* A tool's result, by its text and whether it is an error. */
static char *call_text(struct mcp_session *s, const char *name, const char *args, bool *is_error) {
  char *msg = NULL;
  if (asprintf(&msg,
               "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\","
               "\"arguments\":%s}}",
               name, args) < 0)
    abort();
  cJSON *r = NULL;
  code_of(s, msg, &r);
  free(msg);
  *is_error = cJSON_IsTrue(cJSON_GetObjectItem(r, "isError"));
  char *text =
      strdup(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "content"), 0), "text"))
                 ?: "");
  cJSON_Delete(r);
  return text;
}

static void test_llm_sandbox(void) {
  struct mcp_session s = {0};
  const char *store = cfg.store;
  cfg.store = "/dev/null/store"; /* no store, so no image: no language runs */
  code_of(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}", NULL);
  bool e;
  char *t = call_text(&s, "get_supported_languages", "{}", &e);
  tap_ok(!e && strcmp(t, "[\n  \"python\",\n  \"java\",\n  \"javascript\",\n  \"cpp\",\n  \"go\",\n  \"ruby\",\n  "
                         "\"r\"\n]") == 0,
         "get_supported_languages: llm-sandbox's list, as its server prints it");
  free(t);
  t = call_text(&s, "get_language_details", "{\"language\":\"cobol\"}", &e);
  tap_ok(e && strcmp(t, "{\"error\":\"Unsupported language: cobol\"}") == 0, "an unknown language's details: an error");
  free(t);
  t = call_text(&s, "get_language_details", "{\"language\":\"go\"}", &e);
  tap_ok(!e && strstr(t, "\"hutch_available\":\tfalse") && strstr(t, "not available here"),
         "a language without an image: its details say it is not available here, and how to build it");
  free(t);
  t = call_text(&s, "execute_code", "{\"code\":\"x\",\"language\":\"cobol\",\"libraries\":null}", &e);
  tap_ok(e && strstr(t, "\"exit_code\": 1") && strstr(t, "cobol is not supported"),
         "execute_code, a language llm-sandbox lacks: a tool error in its result's JSON (libraries null taken)");
  free(t);
  t = call_text(&s, "execute_code", "{\"code\":\"x\",\"libraries\":[\"--index-url=http://evil\"]}", &e);
  tap_ok(e && strstr(t, "not a package name"), "a library that would pass for an option: refused");
  free(t);
  t = call_text(&s, "execute_code", "{\"code\":\"x\",\"language\":\"java\"}", &e);
  tap_ok(e && strstr(t, "java is not available here"), "execute_code, no image for the language: not available here");
  free(t);
  t = call_text(&s, "execute_code", "{\"code\":\"x\",\"timeout\":0}", &e);
  tap_ok(e && strstr(t, "argument timeout"), "a timeout below 1: refused by the schema");
  free(t);
  cfg.store = store;
}

int main(void) {
  test_protocol();
  test_annotations();
  test_runs_paused();
  test_session_holds();
  test_resources();
  test_llm_sandbox();
  test_prompts();
  test_base64();
  test_utf8();
  test_answer_shape();
  test_reaper();
  return tap_done();
}
