/* SPDX-License-Identifier: Apache-2.0 */
/* hutch mcp's pure half: JSON-RPC replies for bad input, version
 * negotiation, the tool list's schemas, base64 and the UTF-8 made of what a
 * sandbox wrote.  No sandbox is started: the tools that need one are asked
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
  tap_is_int(code_of(&s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/list\"}", NULL), -32601,
             "an unknown method: -32601");
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

  code_of(&s, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/list\"}", &r);
  const cJSON *tools = cJSON_GetObjectItem(r, "tools"), *t;
  int n = 0, schemas = 0;
  cJSON_ArrayForEach(t, tools) {
    n++;
    const cJSON *sc = cJSON_GetObjectItem(t, "inputSchema");
    schemas += cJSON_IsObject(sc) && strcmp(cJSON_GetObjectItem(sc, "type")->valuestring, "object") == 0;
  }
  tap_is_int(n, 9, "tools/list: 9 tools");
  tap_is_int(schemas, 9, "each with an object inputSchema");
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
  int fd = mcp_reaper_start(dir, &err);
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

int main(void) {
  test_protocol();
  test_base64();
  test_utf8();
  test_answer_shape();
  test_reaper();
  return tap_done();
}
