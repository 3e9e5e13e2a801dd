/* SPDX-License-Identifier: Apache-2.0 */
/* hutch serve's pure half: the HTTP head parser (strict: what it refuses),
 * POST /run_code's body against SandboxFusion's fields (defaults, types,
 * FastAPI's 422 detail, hutch's bounds), the language table, and the
 * metrics' text.  No sandbox is started. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/serve/serve.h"
#include "tap.h"

static bool head_ok(const char *text, struct serve_head *h) {
  const char *why = NULL;
  bool ok = serve_head_parse(text, strlen(text), h, &why);
  if (!ok && why == NULL)
    printf("# no reason given for a refused head\n");
  return ok;
}

static void test_head(void) {
  struct serve_head h;
  tap_ok(head_ok("POST /run_code HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Length:  12 \r\n", &h),
         "a request head parses");
  tap_is_str(h.method, "POST", "its method");
  tap_is_str(h.target, "/run_code", "its target");
  tap_is_str(serve_header(&h, "content-length"), "12", "a header, by any case, its value trimmed");
  tap_ok(serve_header(&h, "Origin") == NULL, "an absent header is NULL");
  serve_head_clear(&h);
  tap_ok(head_ok("GET /v1/ping HTTP/1.0\nHost: x\n", &h), "lines ending in LF alone, HTTP/1.0");
  serve_head_clear(&h);
  static const char *const bad[] = {
      "GET /x HTTP/2.0\r\n",
      "GET /x\r\n",
      "GET /x HTTP/1.1 more\r\n",
      "G(T /x HTTP/1.1\r\n",
      "GET /x HTTP/1.1\r\n folded\r\n",
      "GET /x HTTP/1.1\r\nno colon\r\n",
      "GET /x HTTP/1.1\r\nBad Name: v\r\n",
      "GET /x HTTP/1.1\r\n: empty name\r\n",
      "GET /x HTTP/1.1\r\nA: b\x01"
      "c\r\n",
      "",
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    tap_ok(!head_ok(bad[i], &h), "refused: \"%.*s\"", (int)strcspn(bad[i], "\r\x01"), bad[i]);
    serve_head_clear(&h);
  }
  const char with_nul[] = "GET /x HTTP/1.1\r\nA: b\0c\r\n";
  const char *why = NULL;
  tap_ok(!serve_head_parse(with_nul, sizeof(with_nul) - 1, &h, &why), "refused: a NUL byte");
  serve_head_clear(&h);
  char many[8192] = "GET /x HTTP/1.1\r\n";
  for (int i = 0; i < SERVE_MAX_HEADERS; i++)
    snprintf(many + strlen(many), sizeof(many) - strlen(many), "H%d: v\r\n", i);
  tap_ok(head_ok(many, &h), "%d headers are taken", SERVE_MAX_HEADERS);
  serve_head_clear(&h);
  strcat(many, "One-more: v\r\n");
  tap_ok(!head_ok(many, &h), "one more is refused");
  serve_head_clear(&h);
}

static struct serve_config cfg = {.max_timeout = 300, .max_memory = 2048ull << 20};

/* The status of parsing body, and the detail's first entry's type and
 * last loc element ("" when it has none), and the detail's entries. */
static int parse(const char *body, struct serve_run_request *rq, char *type, char *field, int *entries) {
  char *detail = NULL;
  int st = serve_request_parse(&cfg, body, strlen(body), rq, &detail);
  type[0] = field[0] = '\0';
  *entries = 0;
  if (detail) {
    cJSON *j = cJSON_Parse(detail);
    const cJSON *list = cJSON_GetObjectItem(j, "detail");
    *entries = cJSON_GetArraySize(list);
    const cJSON *first = cJSON_GetArrayItem(list, 0);
    const cJSON *loc = cJSON_GetObjectItem(first, "loc");
    snprintf(type, 64, "%s", cJSON_GetStringValue(cJSON_GetObjectItem(first, "type")));
    const cJSON *last = cJSON_GetArrayItem(loc, cJSON_GetArraySize(loc) - 1);
    snprintf(field, 64, "%s", cJSON_IsString(last) ? last->valuestring : "");
    cJSON_Delete(j);
    free(detail);
  }
  return st;
}

static void test_request(void) {
  struct serve_run_request rq;
  char type[64], field[64];
  int n;
  tap_is_int(parse("{\"code\": \"print(1)\", \"language\": \"python\", \"extra\": 1}", &rq, type, field, &n), 0,
             "code and language alone are a request (unknown fields ignored)");
  tap_ok(rq.compile_timeout == 10 && rq.run_timeout == 10, "SandboxFusion's default time limits, 10 s");
  tap_is_int(rq.memory_mb, -1, "no memory limit asked");
  tap_ok(!rq.has_stdin && rq.n_files == 0 && rq.n_fetch == 0 && rq.fetch && rq.fetch[0] == NULL,
         "no stdin, no files, an empty fetch list");
  serve_request_clear(&rq);

  tap_is_int(parse("{\"code\": \"x\", \"language\": \"cpp\", \"stdin\": \"in\", \"compile_timeout\": 2.5, "
                   "\"run_timeout\": 3, \"memory_limit_MB\": 256, \"files\": {\"d/a.txt\": \"aGk=\", \"skip\": null}, "
                   "\"fetch_files\": [\"out\", \"/abs\"]}",
                   &rq, type, field, &n),
             0, "every field");
  tap_ok(rq.has_stdin && strcmp(rq.stdin_text, "in") == 0, "stdin");
  tap_ok(rq.compile_timeout == 2.5 && rq.run_timeout == 3, "the time limits");
  tap_is_int(rq.memory_mb, 256, "memory_limit_MB");
  tap_is_int(rq.n_files, 1, "a file without content is skipped, as SandboxFusion does");
  tap_ok(rq.n_files == 1 && strcmp(rq.files[0].path, "d/a.txt") == 0 && rq.files[0].len == 2 &&
             memcmp(rq.files[0].data, "hi", 2) == 0,
         "a file's base64 decoded");
  tap_ok(rq.n_fetch == 2 && strcmp(rq.fetch[1], "/abs") == 0 && rq.fetch[2] == NULL, "fetch_files");
  serve_request_clear(&rq);

  const struct {
    const char *body, *type, *field;
  } bad[] = {
      {"{\"code\": ", "json_invalid", "body"},
      {"[1]", "model_attributes_type", "body"},
      {"{\"language\": \"python\"}", "missing", "code"},
      {"{\"code\": \"x\"}", "missing", "language"},
      {"{\"code\": 1, \"language\": \"python\"}", "string_type", "code"},
      {"{\"code\": \"x\", \"language\": \"cobol\"}", "literal_error", "language"},
      {"{\"code\": \"x\", \"language\": \"python\", \"run_timeout\": \"5\"}", "float_type", "run_timeout"},
      {"{\"code\": \"x\", \"language\": \"python\", \"run_timeout\": 0}", "greater_than", "run_timeout"},
      {"{\"code\": \"x\", \"language\": \"python\", \"compile_timeout\": 301}", "less_than_equal", "compile_timeout"},
      {"{\"code\": \"x\", \"language\": \"python\", \"memory_limit_MB\": 1.5}", "int_from_float", "memory_limit_MB"},
      {"{\"code\": \"x\", \"language\": \"python\", \"memory_limit_MB\": 1e300}", "int_from_float", "memory_limit_MB"},
      {"{\"code\": \"x\", \"language\": \"python\", \"memory_limit_MB\": 4096}", "less_than_equal", "memory_limit_MB"},
      {"{\"code\": \"x\", \"language\": \"python\", \"stdin\": 5}", "string_type", "stdin"},
      {"{\"code\": \"x\", \"language\": \"python\", \"files\": []}", "dict_type", "files"},
      {"{\"code\": \"x\", \"language\": \"python\", \"files\": {\"a\": 1}}", "string_type", "files"},
      {"{\"code\": \"x\", \"language\": \"python\", \"files\": {\"a\": \"not base64!\"}}", "value_error", "files"},
      {"{\"code\": \"x\", \"language\": \"python\", \"files\": {\"\": \"aGk=\"}}", "value_error", "files"},
      {"{\"code\": \"x\", \"language\": \"python\", \"fetch_files\": \"out\"}", "list_type", "fetch_files"},
      {"{\"code\": \"x\", \"language\": \"python\", \"fetch_files\": [1]}", "string_type", "fetch_files"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    int st = parse(bad[i].body, &rq, type, field, &n);
    tap_ok(st == 422 && strcmp(type, bad[i].type) == 0 && strcmp(field, bad[i].field) == 0, "422 %s at %s: %s",
           bad[i].type, bad[i].field[0] ? bad[i].field : "the body", bad[i].body);
    if (st != 422 || strcmp(type, bad[i].type) != 0 || strcmp(field, bad[i].field) != 0)
      printf("#   got %d %s %s\n", st, type, field);
  }
  parse("{\"language\": \"cobol\", \"run_timeout\": -1}", &rq, type, field, &n);
  tap_is_int(n, 3, "every problem is an entry of the detail");
}

static void test_languages(void) {
  size_t n = 0;
  bool all_sf = true;
  for (; serve_lang_at(n); n++)
    all_sf &= serve_sf_language(serve_lang_at(n)->name) && serve_lang_at(n)->run[0] != NULL;
  tap_ok(all_sf, "each of hutch's %zu languages is one of SandboxFusion's names, with a run step", n);
  tap_ok(n <= sizeof(((struct serve_config *)0)->languages), "and the availability table holds them all");
  tap_is_str(serve_lang_find("cpp")->compile[0], "g++", "cpp compiles with g++");
  tap_ok(serve_lang_find("python")->compile[0] == NULL, "python has no compile step");
  tap_ok(serve_lang_find("go_test") == NULL && serve_sf_language("go_test"), "go_test is SandboxFusion's, not hutch's");
  tap_ok(!serve_sf_language("cobol") && !serve_sf_language("Python"), "names are SandboxFusion's, case and all");
}

static void test_metrics(void) {
  struct serve_metrics m = {.lock = PTHREAD_MUTEX_INITIALIZER};
  serve_metrics_done(&m, SERVE_SUCCESS, 0.03);
  serve_metrics_done(&m, SERVE_FAILED, 200);
  serve_metrics_done(&m, SERVE_REJECTED, 0);
  serve_metrics_http(&m, 503);
  char *t = serve_metrics_text(&m);
  tap_ok(strstr(t, "hutch_serve_requests_total{status=\"Success\"} 1\n") != NULL, "a Success is counted");
  tap_ok(strstr(t, "hutch_serve_request_duration_seconds_bucket{le=\"0.025\"} 0\n") &&
             strstr(t, "hutch_serve_request_duration_seconds_bucket{le=\"0.05\"} 1\n") &&
             strstr(t, "hutch_serve_request_duration_seconds_bucket{le=\"120\"} 1\n") &&
             strstr(t, "hutch_serve_request_duration_seconds_bucket{le=\"+Inf\"} 2\n"),
         "the histogram is cumulative, a refused request not in it");
  tap_ok(strstr(t, "hutch_serve_http_responses_total{code=\"5xx\"} 1\n") != NULL, "answers by class");
  /* Every line is a comment of its own or NAME VALUE: nothing glued. */
  bool lines_ok = true;
  for (char *save = NULL, *l = strtok_r(t, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
    lines_ok &= (strncmp(l, "# HELP hutch_serve_", 19) == 0) ||
                (strncmp(l, "# TYPE hutch_serve_", 19) == 0 &&
                 (strstr(l, " counter") || strstr(l, " gauge") || strstr(l, " histogram")) &&
                 strchr(l + 7, ' ') == strrchr(l, ' ')) ||
                (strncmp(l, "hutch_serve_", 12) == 0 && strchr(l, ' ') && !strchr(l, '#'));
  tap_ok(lines_ok, "every line is whole: HELP, TYPE with its type, or a sample");
  free(t);
}

int main(void) {
  test_head();
  test_request();
  test_languages();
  test_metrics();
  return tap_done();
}
