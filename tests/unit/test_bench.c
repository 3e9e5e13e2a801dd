/* SPDX-License-Identifier: Apache-2.0 */
/* hutch benchmark's pure helpers: the data file's two forms, the answer as
 * LLM-in-Sandbox reads it, task ids as file names, and the shard choice. */
#include "config.h"

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "tap.h"
#include "util.h"

volatile sig_atomic_t bench_stop;

static char *ids(const char *text) {
  hutch_error_t err = NULL;
  cJSON *rows = bench_parse_rows(text, strlen(text), &err);
  if (rows == NULL) {
    char *why = hutch_error_format(err);
    hutch_error_free(&err);
    return why;
  }
  char *out = xstrdup("");
  const cJSON *r;
  cJSON_ArrayForEach(r, rows) {
    char *next = xasprintf("%s%s;", out, cJSON_GetObjectItemCaseSensitive(r, "id")->valuestring);
    free(out);
    out = next;
  }
  cJSON_Delete(rows);
  return out;
}

static void check(char *got, const char *want, const char *desc) {
  tap_is_str(got, want, "%s", desc);
  free(got);
}

static void rows(void) {
  check(ids("[{\"id\": \"a\", \"problem_statement\": \"p\"}, {\"id\": 7, \"problem_statement\": \"q\"}]"), "a;7;",
        "a JSON array; a numeric id becomes its text");
  check(ids("\n{\"id\": \"a\", \"problem_statement\": \"p\"}\n\n  {\"id\": \"b\", \"problem_statement\": \"q\"}\r\n"),
        "a;b;", "JSON lines, blank lines and CRLF skipped");
  check(ids(""), "", "an empty file has no task");
  check(ids("{\"id\": \"a\", \"problem_statement\": \"p\"}\n{\"id\": \"a\", \"problem_statement\": \"q\"}\n"),
        "line 2 repeats the id 'a'", "a repeated id is refused (resume and file names go by id)");
  check(ids("[{\"id\": \"x/y\", \"problem_statement\": \"p\"}, {\"id\": \"x_y\", \"problem_statement\": \"q\"}]"),
        "row 2: the ids 'x/y' and 'x_y' name the same files (a '/' or a leading '.' becomes '_')",
        "ids whose file names collide are refused");
  check(ids("[{\"id\": \".h\", \"problem_statement\": \"p\"}, {\"id\": \"_h.\", \"problem_statement\": \"q\"}]"),
        ".h;_h.;", "only a leading dot becomes '_'");
  check(ids("[{\"problem_statement\": \"p\"}]"), "row 1 has no \"id\"", "a row without id is refused");
  check(ids("{\"id\": \"a\"}\n"), "line 1 has no \"problem_statement\" string", "and one without a problem");
  check(ids("{\"id\": \"a\", \"problem_statement\": \"p\"}\n{oops\n"), "line 2 is not JSON", "a broken line is named");
  check(ids("[1, 2]"), "row 1 is not a JSON object", "rows are objects");
}

static void answers(void) {
  check(bench_clean_answer(" \t42\n\n", 6), "42", "white space stripped at both ends, as str.strip()");
  check(bench_clean_answer("a\nb", 3), "a\nb", "inner new lines kept");
  check(bench_clean_answer("x\xffy", 3), "x\xef\xbf\xbdy", "a byte that is not UTF-8 becomes U+FFFD");
  check(bench_clean_answer("a\0b", 3),
        "a\xef\xbf\xbd"
        "b",
        "so does NUL (the answer is a C string after)");
  check(bench_clean_answer("\xc3\xa9\xe2\x82\xac", 5), "\xc3\xa9\xe2\x82\xac", "valid UTF-8 stays");
  check(bench_clean_answer("\xed\xa0\x80", 3), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", "surrogates are not UTF-8");
  check(bench_clean_answer("\xe2\x82", 2), "\xef\xbf\xbd\xef\xbf\xbd", "nor a truncated sequence");
}

static void names(void) {
  check(bench_safe_name("demo_001"), "demo_001", "an id is its own file name");
  check(bench_safe_name("../x/y"), "_._x_y", "'/' and a leading dot are replaced");
  check(bench_safe_name(""), "_", "an empty id gets a name");
}

static char *shard(const char *opt, long shards, const char *id, const char *min, const char *count,
                   const char *index) {
  long k, n;
  char *why = NULL;
  if (bench_shard(opt, shards, id, min, count, index, &k, &n, &why) < 0)
    return why;
  return xasprintf("%ld/%ld", k, n);
}

/* Whether S holds NEEDLE; S is freed. */
static bool holds(char *s, const char *needle) {
  bool r = s != NULL && strstr(s, needle) != NULL;
  free(s);
  return r;
}

static void shards(void) {
  check(shard(NULL, 0, NULL, NULL, NULL, NULL), "0/1", "no shard: all tasks");
  check(shard("2/4", 0, "1", NULL, "3", NULL), "2/4", "--shard K/N wins over Slurm's variables");
  check(shard("4/4", 0, NULL, NULL, NULL, NULL), "--shard wants K/N with 0 <= K < N <= 1048576, got '4/4'",
        "K below N");
  check(shard("x", 0, NULL, NULL, NULL, NULL), "--shard wants K/N with 0 <= K < N <= 1048576, got 'x'", "K/N only");
  check(shard("0/1048576", 0, NULL, NULL, NULL, NULL), "0/1048576", "at most 2^20 shards");
  tap_ok(holds(shard("0/1048577", 0, NULL, NULL, NULL, NULL), "wants K/N"), "one more is refused");
  tap_ok(holds(shard("0/99999999999999999999", 0, NULL, NULL, NULL, NULL), "wants K/N"),
         "a count past a long is refused, not clamped");
  tap_ok(holds(shard(NULL, 0, "0", NULL, "2000000", NULL), "is not a shard"), "so is a Slurm array that large");
  tap_ok(holds(shard(NULL, 2000000, NULL, NULL, NULL, "0"), "at most 1048576"), "and --shards that large");
  check(shard(NULL, 0, "5", "4", "3", NULL), "1/3", "a Slurm array: the id less the array's first");
  check(shard(NULL, 0, "2", NULL, "3", NULL), "2/3", "an array from 0");
  tap_ok(holds(shard(NULL, 0, "3", NULL, "3", NULL), "is not a shard"), "an id past the count is refused");
  check(shard(NULL, 0, "2", NULL, NULL, NULL), "0/1", "a Slurm job that is no array: all tasks");
  check(shard(NULL, 4, NULL, NULL, NULL, "3"), "3/4", "an Indexed Job's JOB_COMPLETION_INDEX with --shards");
  tap_ok(holds(shard(NULL, 4, NULL, NULL, NULL, NULL), "wants JOB_COMPLETION_INDEX"),
         "--shards without the index is refused");
}

static void judge(void) {
  tap_is_str(bench_judge_verdict("CORRECT"), "CORRECT", "a verdict");
  tap_is_str(bench_judge_verdict("incorrect"), "INCORRECT", "in any case; CORRECT inside INCORRECT does not count");
  tap_is_str(bench_judge_verdict("At first INCORRECT, but on reflection: Correct."), "CORRECT", "the last one wins");
  tap_is_str(bench_judge_verdict("correct? no: INCORRECT"), "INCORRECT", "either way");
  tap_is_str(bench_judge_verdict("I cannot tell"), "UNKNOWN", "none: UNKNOWN");
  char *p = bench_judge_prompt("Q?", "42", "<think>hmm 41</think>\n 42 \n");
  tap_ok(strstr(p, "The question, for reference only: Q?\nThe OFFICIAL ANSWER: 42\nCANDIDATE ANSWER TO ASSESS: 42\n\n"
                   "Reply only with CORRECT or INCORRECT.") != NULL,
         "the prompt holds the question, the official answer and the answer after </think>, stripped");
  free(p);
}

static char *topts(const char *row_json) {
  cJSON *row = cJSON_Parse(row_json);
  struct bench_task_opts t;
  char *why = NULL;
  char *out;
  if (bench_task_opts(row, &t, &why) < 0) {
    out = why;
  } else {
    out = xasprintf("%g:", t.timeout);
    for (size_t i = 0; i < t.n_args; i++) {
      char *next = xasprintf("%s %s", out, t.args[i]);
      free(out);
      out = next;
    }
    bench_task_opts_free(&t);
  }
  cJSON_Delete(row);
  return out;
}

static char *vscore(const char *rec) {
  cJSON *v = cJSON_Parse(rec);
  double score = -1;
  char *why = NULL;
  char *out = bench_verifier_score(v, &score, &why) < 0 ? why : xasprintf("%g", score);
  cJSON_Delete(v);
  return out;
}

static void task_settings(void) {
  check(topts("{\"id\": \"a\"}"), "0:", "no hutch object: nothing");
  check(topts("{\"hutch\": {\"image\": \"deb\", \"memory\": \"1G\", \"cpus\": 0.5, \"pids\": 64, \"timeout\": 30, "
              "\"allow\": [\"pypi.org\", \"x:8080\"], \"verifier\": \"make test\"}}"),
        "30: --rootfs=deb --memory=1G --cpus=0.5 --pids=64 --net=proxy --allow=pypi.org --allow=x:8080 --verify=make "
        "test",
        "a task's image, limits, allowlist, time limit and verifier as hutch run options");
  check(topts("{\"hutch\": {\"verifier\": 3}}"), "\"hutch\": 'verifier' has a wrong value", "types are checked");
  check(topts("{\"hutch\": {\"timeout\": -1}}"), "\"hutch\": 'timeout' has a wrong value", "a positive time");
  check(topts("{\"hutch\": {\"nope\": 1}}"), "\"hutch\": unknown key 'nope'", "unknown keys are refused");
  check(topts("{\"hutch\": []}"), "\"hutch\" is not an object", "an object");
  check(vscore("{\"exit_code\": 0, \"last_line\": \"ok\"}"), "1", "exit status 0: 1.0");
  check(vscore("{\"exit_code\": 2, \"last_line\": \"\"}"), "0", "any other: 0.0");
  check(vscore("{\"exit_code\": 1, \"last_line\": \"0.25\"}"), "0.25", "a number on the last line is the score");
  check(vscore("{\"exit_code\": 0, \"last_line\": \"0.5 of 1\"}"), "1", "only a line that is a number");
  check(vscore("{\"exit_code\": 0, \"last_line\": \"inf\"}"), "inf",
        "an infinite one is given as it is (the task set's range refuses it)");
  check(vscore("{\"exit_code\": 137, \"timed_out\": true}"), "verifier: timed out", "a timeout is an error");
  check(vscore("null"), "verifier: it did not run (the run ended before it)", "no record is an error");
}

/* summary.md: what the model wrote (an error quoting its answer, a task id)
 * is no HTML for a Markdown viewer. */
static void summary_escapes(void) {
  char dir[] = "/tmp/test_bench.XXXXXX";
  if (mkdtemp(dir) == NULL) {
    tap_ok(false, "mkdtemp");
    return;
  }
  cJSON *lines = cJSON_Parse("[{\"id\": \"t<b>1\", \"score\": 0, \"elapsed_seconds\": 1, \"error\": "
                             "\"reward: ValueError: <img src=x onerror=alert(1)> & more\"}]");
  cJSON *metaj = cJSON_Parse("{\"config\": {\"llm_name\": \"m\", \"mode\": \"llm-in-sandbox\"}}");
  struct bench_opts o;
  memset(&o, 0, sizeof(o));
  o.task = "demo";
  hutch_error_t err = NULL;
  /* The run's benchmark.json, which report.html reads; its templates from
   * the source tree (this program is no hutch of the build tree's). */
  _cleanup_free_ char *meta = xasprintf("%s/benchmark.json", dir);
  const char *meta_text = "{\"taskdir\": \"/t\", \"task\": \"demo\", \"config\": {\"llm_name\": \"m\", "
                          "\"mode\": \"llm-in-sandbox\"}, \"shard\": [0, 1]}";
  write_file_atomic(meta, meta_text, strlen(meta_text), 0644);
  setenv("HUTCH_REPORT_DIR", HUTCH_SRCDIR "/report", 1);
  tap_ok(bench_write_outputs(dir, &o, metaj, lines, 1.0, &err) == 0, "the outputs are written%s%s", err ? ": " : "",
         err ? err->msg : "");
  hutch_error_free(&err);
  char *path = xasprintf("%s/summary.md", dir);
  size_t len = 0;
  char *md = read_file_at(AT_FDCWD, path, 1 << 20, &len);
  tap_ok(md &&
             strstr(md, "| ` t<b>1 ` | 0.0000 | 1.0 s | ` reward: ValueError: <img src=x onerror=alert(1)> & more ` |"),
         "summary.md shows the model's tags as text, in code spans");
  free(md);
  free(path);
  path = xasprintf("%s/report.html", dir);
  char *page = read_file_at(AT_FDCWD, path, 1 << 24, &len);
  tap_ok(page && strstr(page, "&lt;img src=x onerror=alert(1)&gt; &amp; more") && !strstr(page, "<img src=x") &&
             !strstr(page, "t<b>1"),
         "report.html shows them as text, escaped");
  free(page);
  free(path);
  cJSON_Delete(lines);
  cJSON_Delete(metaj);
  remove_tree_at(AT_FDCWD, dir);
}

/* Markdown: what a task or model wrote is a code span, nothing of it live. */
static void markdown(void) {
  check(bench_md_code("", 80, true), "", "empty text: nothing");
  check(bench_md_code("plain", 80, true), "` plain `", "text in a code span");
  check(bench_md_code("![x](http://h/?gt=42) [a](javascript:alert(1)) <img src=x> &amp; # h *e* _u_ ~s~", 200, false),
        "` ![x](http://h/?gt=42) [a](javascript:alert(1)) <img src=x> &amp; # h *e* _u_ ~s~ `",
        "images, links, tags, entities, headings, emphasis: as they are, inside the span");
  check(bench_md_code("a|b", 80, true), "` a\\|b `", "a '|' escaped in a table's cell");
  check(bench_md_code("a|b", 80, false), "` a|b `", "and not elsewhere");
  check(bench_md_code("a`b", 80, true), "`` a`b ``", "a backtick: a longer fence");
  check(bench_md_code("x ``` y `", 80, true), "```` x ``` y ` ````", "longer than the longest run");
  check(bench_md_code("`", 80, true), "`` ` ``", "a lone backtick");
  check(bench_md_code("one\ntwo\tthree\r", 80, true), "` one two three\\x0d `", "on one line");
  check(bench_md_code("\x1b[2J\xe2\x80\xae", 80, true), "` \\x1b[2J\\u202e `",
        "control and bidirectional characters as escapes");
  check(bench_md_code("abcdefghij", 4, true), "` abcd `...", "cut at max characters");
  check(bench_md_code("\xc3\xa9\xc3\xa9\xc3\xa9", 2, true), "` \xc3\xa9\xc3\xa9 `...", "characters, not bytes");
  check(bench_md_code("ab\\|", 80, true), "` ab\\\\| `", "a backslash before '|' stays one (GitHub takes \\| as |)");
}

static char *meta(const char *json) {
  cJSON *j = cJSON_Parse(json);
  struct bench_meta m;
  char *why = NULL;
  char *out = bench_meta_check(j, &m, &why) < 0
                  ? why
                  : xasprintf("%s %s %s %s %ld/%ld [%g, %g]%s", m.taskdir, m.task, m.mode, m.llm_name, m.shard_k,
                              m.shard_n, m.range.min, m.range.max, m.merged_from ? " merged" : "");
  cJSON_Delete(j);
  return out;
}

static char *line(const char *json, const char *shards) {
  cJSON *j = cJSON_Parse(json), *s = shards ? cJSON_Parse(shards) : NULL;
  struct bench_range r = {0, 1};
  char *why = NULL;
  char *out = bench_line_check(j, &r, s, &why) < 0 ? why : xstrdup("ok");
  cJSON_Delete(j);
  cJSON_Delete(s);
  return out;
}

static char *fmt(double v) {
  char buf[32];
  bench_fmt_double(buf, v);
  return xstrdup(buf);
}

/* benchmark.json and results.jsonl as merge and --resume read them back. */
static void runfiles(void) {
#define META(rest)                                                                                                     \
  "{\"taskdir\": \"/t\", \"task\": \"demo\", \"config\": {\"mode\": \"llm\", \"llm_name\": \"m\"}" rest "}"
  check(meta(META(", \"shard\": [1, 3]")), "/t demo llm m 1/3 [0, 1]", "a shard's benchmark.json");
  check(meta(META(", \"shard\": [0, 1], \"score_range\": [-1, 100], \"merged_from\": [\"/a\"]")),
        "/t demo llm m 0/1 [-1, 100] merged", "a merged run's, with a score range");
  check(meta("[]"), "is not a JSON object", "an object");
  check(meta("{\"task\": \"demo\"}"), "\"taskdir\" is not a path", "taskdir");
  check(meta("{\"taskdir\": \"/t\", \"task\": 5}"), "\"task\" is not the name of a task folder", "task a string");
  check(meta("{\"taskdir\": \"/t\", \"task\": \"../x\"}"), "\"task\" is not the name of a task folder",
        "a folder's name, no path");
  check(meta("{\"taskdir\": \"/t\", \"task\": \".x\"}"), "\"task\" is not the name of a task folder", "no hidden one");
  check(meta("{\"taskdir\": \"/t\", \"task\": \"a\\nb\"}"), "\"task\" is not the name of a task folder",
        "no control character");
  check(meta("{\"taskdir\": \"/t\", \"task\": \"t\", \"config\": []}"), "\"config\" is not an object", "config");
  check(meta("{\"taskdir\": \"/t\", \"task\": \"t\", \"config\": {\"mode\": \"x\"}}"),
        "\"config.mode\" is not llm-in-sandbox or llm", "its mode");
  check(meta("{\"taskdir\": \"/t\", \"task\": \"t\", \"config\": {\"mode\": \"llm\"}}"),
        "\"config.llm_name\" is not a string", "its model");
  const char *bad_shards[] = {"",
                              ", \"shard\": [0]",
                              ", \"shard\": [0, 1, 2]",
                              ", \"shard\": {\"a\": 0, \"b\": 2}",
                              ", \"shard\": [0.5, 2]",
                              ", \"shard\": [\"0\", \"2\"]",
                              ", \"shard\": [2, 2]",
                              ", \"shard\": [-1, 2]",
                              ", \"shard\": [0, 0]",
                              ", \"shard\": [0, 1048577]",
                              ", \"shard\": [0, 1e300]",
                              ", \"shard\": [0, -1]",
                              ", \"shard\": [0, 1e999]"};
  for (size_t i = 0; i < ARRAY_SIZE(bad_shards); i++) {
    char *j = xasprintf(META("%s"), bad_shards[i]);
    char *desc = xasprintf("shard refused:%s", bad_shards[i][0] ? bad_shards[i] + 1 : " none");
    check(meta(j), "\"shard\" is not [K, N] with 0 <= K < N <= 1048576", desc);
    free(j);
    free(desc);
  }
  check(meta(META(", \"shard\": [1048575, 1048576]")), "/t demo llm m 1048575/1048576 [0, 1]",
        "the last shard there may be");
  check(meta(META(", \"shard\": [0, 1], \"score_range\": [1, 1]")),
        "\"score_range\" is not [MIN, MAX] of finite numbers, MIN below MAX", "a range's MIN below its MAX");
  check(meta(META(", \"shard\": [0, 1], \"merged_from\": [\"rel\"]")),
        "\"merged_from\" is not a list of absolute paths", "merged_from");
#undef META
#define LINE(rest) "{\"id\": \"a\", \"score\": 1, \"elapsed_seconds\": 2.5" rest "}"
  check(line(LINE(""), NULL), "ok", "a results line");
  check(line(LINE(", \"error\": null, \"run_dir\": \"runs/a/20260101_x\", \"tokens\": 3, \"timings\": {}"), NULL), "ok",
        "with every field");
  check(line("{\"id\": 5, \"score\": 1, \"elapsed_seconds\": 1}", NULL), "\"id\" is not a task id", "id");
  check(line("{\"id\": \"\", \"score\": 1, \"elapsed_seconds\": 1}", NULL), "\"id\" is not a task id", "not empty");
  check(line("{\"id\": \"a\", \"score\": \"1\", \"elapsed_seconds\": 1}", NULL), "\"score\" is not a finite number",
        "score a number");
  check(line("{\"id\": \"a\", \"score\": 1e999, \"elapsed_seconds\": 1}", NULL), "\"score\" is not a finite number",
        "a finite one");
  check(line("{\"id\": \"a\", \"score\": 1e300, \"elapsed_seconds\": 1}", NULL),
        "\"score\" 1e+300, outside the task set's score range [0, 1]", "in the task set's range");
  check(line("{\"id\": \"a\", \"score\": 0, \"error\": \"x\", \"elapsed_seconds\": 1}", NULL), "ok",
        "a task's error scores 0");
  check(line(LINE(", \"error\": 3"), NULL), "\"error\" is not text", "error");
  check(line("{\"id\": \"a\", \"score\": 1, \"elapsed_seconds\": -1}", NULL),
        "\"elapsed_seconds\" is not a time in seconds", "a time");
  check(line(LINE(", \"tokens\": \"many\""), NULL), "\"tokens\" is not a count", "tokens");
  check(line(LINE(", \"timings\": []"), NULL), "\"timings\" is not an object", "timings");
  check(line(LINE(", \"run_dir\": \"/etc\""), NULL), "\"run_dir\" '/etc' is not a directory under runs/",
        "run_dir not absolute");
  check(line(LINE(", \"run_dir\": \"runs/../../x\""), NULL),
        "\"run_dir\" 'runs/../../x' is not a directory under runs/", "no ..");
  check(line(LINE(", \"run_dir\": 7"), NULL), "\"run_dir\" '(not text)' is not a directory under runs/", "text");
  check(line(LINE(", \"run_dir\": \"/a\\u001b[2J\""), NULL), "\"run_dir\" '/a\\x1b[2J' is not a directory under runs/",
        "a control character in a name is only shown escaped");
  check(line(LINE(", \"shard_dir\": \"/s\""), NULL),
        "\"shard_dir\" is not a shard of this merged run (its merged_from)", "shard_dir only in a merged run");
  check(line(LINE(", \"shard_dir\": \"/s\""), "[\"/r\", \"/s\"]"), "ok", "one of its shards");
  check(line(LINE(", \"shard_dir\": 5"), "[\"/s\"]"),
        "\"shard_dir\" is not a shard of this merged run (its merged_from)", "text");
  check(line("[]", NULL), "is not a JSON object", "an object");
#undef LINE
  const char *dirs[][2] = {{"runs/a/b", "1"},  {"runs/a", "1"},         {"runs/a b/20260101_1", "1"},
                           {"runs", "0"},      {"runs/", "0"},          {"/runs/a", "0"},
                           {"runs/../x", "0"}, {"runs/a/../../x", "0"}, {"runs/./a", "0"},
                           {"runs//a", "0"},   {"runs/a/", "0"},        {"runs/.reward-driver", "0"},
                           {"x/runs/a", "0"},  {"runsx/a", "0"},        {"", "0"}};
  for (size_t i = 0; i < ARRAY_SIZE(dirs); i++)
    tap_ok(bench_run_dir_ok(dirs[i][0]) == (dirs[i][1][0] == '1'), "run_dir '%s' %s", dirs[i][0],
           dirs[i][1][0] == '1' ? "taken" : "refused");
  check(fmt(100), "100", "100 as Python's repr (without .0)");
  check(fmt(0.1), "0.1", "0.1");
  check(fmt(-0.5), "-0.5", "-0.5");
  check(fmt(100.5), "100.5", "100.5");
  check(fmt(1e300), "1e+300", "1e+300");
  check(fmt(5e-324), "5e-324", "the smallest double");
  check(fmt(1e16), "1e+16", "1e16 with an exponent");
  check(fmt(0.30000000000000004), "0.30000000000000004", "all the digits it takes");
  struct bench_range r = {0, 1};
  check(bench_score_outside(0.5, &r) ? xstrdup("outside") : xstrdup("in"), "in", "0.5 is in [0, 1]");
  check(bench_score_outside(-0.0, &r) ? xstrdup("outside") : xstrdup("in"), "in", "so is -0");
  check(bench_score_outside(1.0000000000000002, &r), "1.0000000000000002, outside the task set's score range [0, 1]",
        "the next double above 1 is not");
  check(bench_score_outside(__builtin_inf(), &r), "inf, not a finite number", "infinity is no score");
  check(bench_score_outside(__builtin_nan(""), &r), "nan, not a finite number", "nor NaN");
}

static char *hex(const char *p, size_t n) {
  char *out = xmalloc(n * 2 + 1);
  for (size_t i = 0; i < n; i++)
    snprintf(out + 2 * i, 3, "%02x", (unsigned char)p[i]);
  out[n * 2] = '\0';
  return out;
}

/* The scoring driver's wire: args as Python's marshal.dumps(json.loads(row),
 * 2) makes them (numbers as written), its result line read strictly. */
static void py_wire(void) {
  const char *row = "{\"id\": \"a\", \"problem_statement\": \"p\", \"n\": [3, 3.0, -0, 12345678901234567890, "
                    "-2147483649, 1e2, -0.0], \"s\": \"\\\"\\\\\\n\xc3\xa9\", \"t\": true, \"f\": false, \"z\": null, "
                    "\"d\": {\"k\": []}}";
  hutch_error_t err = NULL;
  cJSON *rows = bench_parse_rows(row, strlen(row), &err);
  size_t n = 0;
  char *m = rows ? bench_py_marshal(cJSON_GetArrayItem(rows, 0), &n) : NULL;
  check(m ? hex(m, n) : xstrdup("none"),
        "7b75020000006964750100000061751100000070726f626c656d5f73746174656d656e7475010000007075010000006e5b0700000069"
        "0300000067000000000000084069000000006c05000000d20a3e563326a55a0a006cfdffffff01000000020067000000000000594067"
        "00000000000000807501000000737505000000225c0ac3a9750100000074547501000000664675010000007a4e7501000000647b7501"
        "0000006b5b000000003030",
        "a row as marshal.dumps(json.loads(row), 2): 3 and 3.0 apart, a big integer exact, -0.0");
  free(m);
  cJSON_Delete(rows);
  const char *array = "[{\"id\": \"a\", \"problem_statement\": \"p\", \"n\": [7.0, 7]}]";
  rows = bench_parse_rows(array, strlen(array), &err);
  m = rows ? bench_py_marshal(cJSON_GetArrayItem(rows, 0), &n) : NULL;
  check(m && n > 20 ? hex(m + n - 20, 20) : xstrdup("none"), "5b02000000670000000000001c40690700000030",
        "and in a JSON array's rows");
  free(m);
  cJSON_Delete(rows);
  _cleanup_free_ char *big = xasprintf("{\"id\": \"a\", \"problem_statement\": \"p\", \"n\": -1%04300d}\n", 0);
  check(ids(big), "line 1: an integer of more than 4300 digits (Python's json.loads refuses it)",
        "an integer json.loads refuses is refused");
  big[strlen(big) - 3] = '.';
  check(ids(big), "a;", "a float of as many digits is not");
  check(ids("{\"id\": \"a\", \"problem_statement\": \"p\", \"ground_truth\": \"12\\u00003\"}\n"),
        "line 1: a string holds a NUL (\\u0000), which hutch would cut short there",
        "a ground truth holding a NUL is refused, not cut short (\"12\" would have matched)");
  check(ids("[{\"id\": \"a\", \"problem_statement\": \"p\\\\u0000 \\\"\\\\\\\\u0000\"}]"), "a;",
        "an escaped backslash before u0000 is no NUL");

  /* A repeated key: json.loads keeps the last value, where the first was.
   * compute_score's ground truth and fields are then LLM-in-Sandbox's, and
   * the ground truth is no keyword argument too. */
  const char *dup =
      "{\"id\": \"a\", \"ground_truth\": \"A\", \"problem_statement\": \"p\", \"x\": {\"k\": 1, \"j\": 0, "
      "\"k\": [{\"k\": 2, \"k\": 3}]}, \"ground_truth\": \"B\", \"id\": \"b\", \"ground_truth\": \"C\"}";
  rows = bench_parse_rows(dup, strlen(dup), &err);
  check(rows ? cJSON_PrintUnformatted(cJSON_GetArrayItem(rows, 0)) : xstrdup("none"),
        "{\"id\":\"b\",\"ground_truth\":\"C\",\"problem_statement\":\"p\",\"x\":{\"k\":[{\"k\":3}],\"j\":0}}",
        "a repeated key's last value, in the first one's place, as json.loads reads it");
  cJSON_Delete(rows);
  check(ids("[{\"id\": \"a\", \"problem_statement\": \"p\", \"id\": \"b\"}, {\"id\": \"c\", \"id\": 5, "
            "\"problem_statement\": \"q\"}]"),
        "b;5;", "and the id is the last one given");

  struct {
    const char *line, *want;
  } res[] = {
      {"score 0.75", "{\"score\":0.75,\"repr\":\"0.75\"}"},
      {"score 1e-05", "{\"score\":1e-05,\"repr\":\"1e-05\"}"},
      {"score 1", "{\"score\":1,\"repr\":\"1\"}"},
      {"score True", "{\"score\":1,\"repr\":\"True\"}"},
      {"score False", "{\"score\":0,\"repr\":\"False\"}"},
      {"score true", NULL},
      {"score nan", NULL},
      {"score inf", NULL},
      {"score 1.0x", NULL},
      {"score ", NULL},
      {"score 1.0 ", NULL},
      {"error ValueError two\\nlines \\\\ \\0 end",
       "{\"error\":\"two\\nlines \\\\ \xef\xbf\xbd end\",\"kind\":\"ValueError\"}"},
      {"error odd\\skind boom", "{\"error\":\"boom\",\"kind\":\"odd kind\"}"},
      {"error K bad \\q", NULL},
      {"error K trailing \\", NULL},
      {"error K", NULL},
      {"error  text", "{\"error\":\"text\",\"kind\":\"\"}"},
      {"prompt a b\\nc", "{\"prompt\":\"a b\\nc\"}"},
      {"{\"score\": 1.0}", NULL},
      {"scores 1.0", NULL},
  };
  struct {
    const char *line, *want;
  } heads[] = {
      {"cpu=1234 score 1.0", "1234 0 score 1.0"},
      {"cpu=0,last error K t", "0 1 error K t"},
      {"cpu=999999999999999999 x", "999999999999999999 0 x"},
      {"cpu=1000000000000000000 x", NULL}, /* 19 digits: refused before it could overflow */
      {"cpu= score 1.0", NULL},
      {"cpu=-5 score 1.0", NULL},
      {"cpu=+5 score 1.0", NULL},
      {"cpu= 5 score 1.0", NULL},
      {"cpu=5,lastx score 1.0", NULL},
      {"cpu=5,first score 1.0", NULL},
      {"cpu=5score 1.0", NULL},
      {"cpu=5", NULL},
      {"score 1.0", NULL},
      {"CPU=5 score 1.0", NULL},
  };
  for (size_t i = 0; i < ARRAY_SIZE(heads); i++) {
    int64_t us = -1;
    bool last = false;
    const char *rest = bench_py_result_head(heads[i].line, &us, &last);
    check(rest ? xasprintf("%lld %d %s", (long long)us, last, rest) : xstrdup("(refused)"),
          heads[i].want ? heads[i].want : "(refused)", heads[i].line);
  }
  for (size_t i = 0; i < ARRAY_SIZE(res); i++) {
    cJSON *r = bench_py_result(res[i].line);
    check(r ? cJSON_PrintUnformatted(r) : xstrdup("(refused)"), res[i].want ? res[i].want : "(refused)", res[i].line);
    cJSON_Delete(r);
  }
}

static char *end_of(const char *json) {
  cJSON *j = cJSON_Parse(json);
  int end = bench_line_end(j);
  cJSON_Delete(j);
  return xstrdup(end < 0 ? "unknown" : bench_end_names[end]);
}

static char *status_of(const char *lines, long tasks) {
  cJSON *ls = cJSON_Parse(lines);
  struct bench_status st = {0};
  bench_status_count(&st, ls, tasks);
  cJSON *j = bench_status_json(&st);
  char *out = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
  cJSON_Delete(ls);
  return out;
}

/* How a task ended (its line's "end", or what an older line's error and
 * exit status say), and what a run measured. */
static void ends(void) {
#define LINE(rest) "{\"id\": \"a\", \"score\": 1, \"elapsed_seconds\": 2.5" rest "}"
  check(end_of("{\"end\": \"api_error\", \"error\": \"x\"}"), "api_error", "a line's end");
  check(end_of("{\"end\": \"done\"}"), "unknown", "an end of no known name");
  check(end_of("{\"end\": 3}"), "unknown", "an end that is no name");
  check(end_of("{\"error\": null, \"exit_code\": 0}"), "finished", "an older line without an error");
  check(end_of("{\"error\": \"hutch run exited with status 3 (see logs/a.txt)\", \"exit_code\": 3}"), "api_error",
        "an older line of hutch run's status 3: the model's API failed");
  check(end_of("{\"error\": \"Timeout\", \"exit_code\": -1}"), "timeout", "its Timeout");
  check(end_of("{\"error\": \"reward: ValueError: x\", \"exit_code\": 0}"), "scoring_error", "a reward's error");
  check(end_of("{\"error\": \"verifier: timed out\", \"exit_code\": 1}"), "scoring_error", "a verifier's");
  check(end_of("{\"error\": \"hutch run exited with status 125 (see logs/a.txt)\", \"exit_code\": 125}"), "infra_error",
        "hutch run's status 125: hutch failed");
  check(end_of("{\"error\": \"hutch run exited with status 137\", \"exit_code\": 137}"), "infra_error",
        "hutch run killed");
  check(end_of("{\"error\": \"the worker of this task ended with status 9\"}"), "infra_error", "its worker killed");
  check(end_of("{\"error\": \"input_files is not an object\", \"exit_code\": -1}"), "task_error",
        "any other error: the task's");
  check(line("{\"id\": \"a\", \"score\": 0, \"error\": \"x\", \"end\": \"api_error\", \"elapsed_seconds\": 1}", NULL),
        "ok", "a line of a task not finished");
  check(line(LINE(", \"end\": \"finished\""), NULL), "ok", "a finished one");
  check(line(LINE(", \"end\": \"done\""), NULL),
        "\"end\" is not one of finished, timeout, task_error, scoring_error, api_error, infra_error",
        "end a known one");
  check(line("{\"id\": \"a\", \"score\": 0, \"error\": \"x\", \"end\": \"finished\", \"elapsed_seconds\": 1}", NULL),
        "\"end\" is finished, with an error", "finished without an error");
  check(line(LINE(", \"end\": \"timeout\""), NULL), "\"end\" is an error, without one", "an error's end with one");
  check(status_of("[{\"end\": \"finished\"}, {\"end\": \"scoring_error\", \"error\": \"x\"}]", 2),
        "{\"complete\":true,\"stopped\":null,\"tasks\":2,\"ends\":{\"finished\":1,\"timeout\":0,\"task_error\":0,"
        "\"scoring_error\":1,\"api_error\":0,\"infra_error\":0},\"not_run\":0}",
        "every task measured: complete");
  check(status_of("[{\"end\": \"finished\"}, {\"end\": \"api_error\", \"error\": \"x\"}]", 4),
        "{\"complete\":false,\"stopped\":null,\"tasks\":4,\"ends\":{\"finished\":1,\"timeout\":0,\"task_error\":0,"
        "\"scoring_error\":0,\"api_error\":1,\"infra_error\":0},\"not_run\":2}",
        "a task not finished, two not run: incomplete");
#define META(rest)                                                                                                     \
  "{\"taskdir\": \"/t\", \"task\": \"demo\", \"config\": {\"mode\": \"llm\", \"llm_name\": \"m\"}, \"shard\": [0, "    \
  "1]" rest "}"
  check(meta(META(", \"status\": {\"complete\": false, \"tasks\": 3}")), "/t demo llm m 0/1 [0, 1]",
        "benchmark.json with a status");
  check(meta(META(", \"status\": [true]")),
        "\"status\" is not an object with \"complete\" (true or false) and \"tasks\" (a count)", "status an object");
  check(meta(META(", \"status\": {\"complete\": 1, \"tasks\": 3}")),
        "\"status\" is not an object with \"complete\" (true or false) and \"tasks\" (a count)", "complete a boolean");
  check(meta(META(", \"status\": {\"complete\": true, \"tasks\": -1}")),
        "\"status\" is not an object with \"complete\" (true or false) and \"tasks\" (a count)", "tasks a count");
#undef META
#undef LINE
}

/* LLM-in-Sandbox's files: json.dump's layout and types, rewards, its
 * error text, its console's wrap and panels (the bytes of whole runs are
 * tests/integration/benchmark-lis-files.sh's). */
static void lis_files(void) {
  cJSON *v = cJSON_Parse("{\"a\": [1, 2.5, \"x\\u0001\\\"\\u00e9\"], \"e\": {}, \"l\": [], \"n\": null, \"t\": true}");
  check(bench_pyjson(v),
        "{\n  \"a\": [\n    1,\n    2.5,\n    \"x\\u0001\\\"\xc3\xa9\"\n  ],\n  \"e\": {},\n  \"l\": [],\n  \"n\": "
        "null,\n"
        "  \"t\": true\n}",
        "pyjson: indent 2, ensure_ascii=False, empty containers inline");
  cJSON_Delete(v);
  static const struct {
    double v;
    const char *want;
  } floats[] = {{1, "1.0"},
                {0.1, "0.1"},
                {1e-05, "1e-05"},
                {1e16, "1e+16"},
                {-0.0, "-0.0"},
                {123.0, "123.0"},
                {0.5638027191162109, "0.5638027191162109"}};
  for (size_t i = 0; i < ARRAY_SIZE(floats); i++) {
    cJSON *f = bench_pyjson_float(floats[i].v);
    check(bench_pyjson(f), floats[i].want, "pyjson: a float as Python's repr");
    cJSON_Delete(f);
  }
  static const struct {
    const char *repr, *json, *score4;
  } rewards[] = {{"1.0", "1.0", "1.0000"},         {"1", "1", "1.0000"},
                 {"True", "true", "1.0000"},       {"False", "false", "0.0000"},
                 {"0.12345", "0.12345", "0.1235"}, {"-0", "0", "-0.0000"}};
  for (size_t i = 0; i < ARRAY_SIZE(rewards); i++) {
    cJSON *r = bench_lis_reward_node(rewards[i].repr);
    check(r ? bench_pyjson(r) : xstrdup("(none)"), rewards[i].json, "reward: its type kept");
    check(r ? bench_lis_score4(r) : xstrdup("(none)"), rewards[i].score4, "reward: Score: as f\"{v:.4f}\"");
    cJSON_Delete(r);
  }
  tap_ok(bench_lis_reward_node("1.0x") == NULL && bench_lis_reward_node("") == NULL, "reward: other text is none");
  check(bench_lis_error_text("reward: ZeroDivisionError: division by zero", "ZeroDivisionError"), "division by zero",
        "the error of a reward.py that raised is str(e)");
  check(bench_lis_error_text("Timeout", NULL), "Timeout", "hutch's own errors as they are");
  cJSON *line = cJSON_Parse("{\"id\": \"a\", \"score\": 0, \"error\": \"the model's API failed\", \"lis_error\": null, "
                            "\"reward_repr\": \"1.0\"}");
  tap_ok(bench_lis_error(line) == NULL, "a line whose model API failed has no error in LLM-in-Sandbox's files");
  cJSON *rw = bench_lis_reward(line);
  check(bench_pyjson(rw), "1.0", "and the reward compute_score gave it");
  cJSON_Delete(rw);
  cJSON_Delete(line);
  line = cJSON_Parse("{\"id\": \"a\", \"score\": 0.5, \"error\": \"old\"}");
  check(xstrdup(bench_lis_error(line)), "old", "a line of an older hutch: its error");
  rw = bench_lis_reward(line);
  check(bench_pyjson(rw), "0.0", "and reward 0.0");
  cJSON_Delete(rw);
  cJSON_Delete(line);
  cJSON *meta =
      cJSON_Parse("{\"config\": {\"mode\": \"llm-in-sandbox\", \"docker_image\": null, \"llm_name\": \"openai/m\", "
                  "\"llm_base_url\": null, \"max_steps\": 5, \"temperature\": 1, \"max_token_limit\": 9, "
                  "\"max_tokens_per_call\": 8, \"max_response_len\": 7, \"extra_body\": {\"x\": 1}, "
                  "\"save_litellm_response\": false}, \"extra_body_text\": \"{'x': 1.0, 'b': 'true'}\"}");
  cJSON *cfg = bench_lis_config(meta);
  check(bench_pyjson(cfg),
        "{\n  \"mode\": \"llm-in-sandbox\",\n  \"docker_image\": \"default\",\n  \"llm_name\": \"openai/m\",\n"
        "  \"llm_base_url\": null,\n  \"max_steps\": 5,\n  \"temperature\": 1.0,\n  \"max_token_limit\": 9,\n"
        "  \"max_tokens_per_call\": 8,\n  \"max_response_len\": 7,\n  \"extra_body\": {\n    \"x\": 1.0,\n"
        "    \"b\": true\n  },\n  \"save_litellm_response\": false\n}",
        "results.json's config: LLM-in-Sandbox's keys, order and types");
  cJSON_Delete(cfg);
  cJSON_AddStringToObject(meta, "temperature_text", "1");
  cfg = bench_lis_config(meta);
  check(bench_pyjson(cJSON_GetObjectItemCaseSensitive(cfg, "temperature")), "1",
        "temperature as the int Python Fire reads from --temperature 1");
  cJSON_Delete(cfg);
  cJSON_Delete(meta);
  /* rich's widths and the console's panels */
  tap_ok(bench_lislog_cell('a') == 1 && bench_lislog_cell(0x4e2d) == 2 && bench_lislog_cell(0x301) == 0 &&
             bench_lislog_cell(0x1f600) == 2 && bench_lislog_cell(0x1b) == 0,
         "cell widths: ASCII 1, CJK 2, combining 0, emoji 2, control 0 (rich's table)");
  cJSON *steps =
      cJSON_Parse("[{\"thought\": \":smile: [b]x[/b] \\\\[STDOUT] \\u001b\", \"reasoning_content\": \"\", "
                  "\"action\": {\"function\": \"submit\", \"parameters\": {}}, \"observation\": \"a\\tb\"}]");
  _cleanup_free_ char *log = bench_lislog("S", "U", steps, 9, true);
  cJSON_Delete(steps);
  tap_ok(strstr(log, "\xf0\x9f\x98\x84 [b]x[/b] [STDOUT] \\x1b") != NULL,
         "console: emoji codes replaced, escaped markup kept, \\[ shown as [, ESC escaped");
  tap_ok(strstr(log, "\xe2\x94\x82 a       b ") != NULL, "console: tabs to the next multiple of 8");
  tap_ok(strstr(log, " Step 1/9 ") && strstr(log, " Step 2/9 "), "console: the step's rule, and the failed step's");
  size_t lines = 0, bad = 0;
  for (char *p = log, *nl; (nl = strchr(p, '\n')); p = nl + 1, lines++) {
    /* every line 100 cells: the box characters are 3 bytes, one cell */
    size_t cells = 0;
    for (char *q = p; q < nl; q++)
      cells += ((unsigned char)*q & 0xc0) != 0x80;
    bad += nl > p && cells != 100 && !strstr(p, "\xf0\x9f") && !strstr(p, "\xe2\x9a\xa1");
  }
  tap_ok(lines > 10 && bad == 0, "console: each line of a panel or rule is 100 cells wide");
  /* A thought of 8 MiB: read up to what is shown (1000 characters). */
  size_t big = 8u << 20;
  char *huge = xmalloc(big + 1);
  memset(huge, 'y', big);
  huge[big] = '\0';
  cJSON *hs = cJSON_CreateArray();
  cJSON *st = cJSON_CreateObject();
  cJSON_AddStringToObject(st, "thought", huge);
  cJSON_AddStringToObject(st, "observation", "o");
  cJSON_AddItemToArray(hs, st);
  free(huge);
  _cleanup_free_ char *cut = bench_lislog("S", "U", hs, 1, false);
  cJSON_Delete(hs);
  tap_ok(strlen(cut) < 20000 && strstr(cut, "yyy...") != NULL,
         "console: a long thought cut at 1000 characters and \"...\"");
  struct bench_range r01 = {0, 1};
  static const struct {
    const char *line;
    bool good;
  } checked[] = {
      {"{\"id\":\"a\",\"score\":0,\"error\":\"x\",\"lis_error\":null,\"reward_repr\":\"True\",\"elapsed_seconds\":1}",
       true},
      {"{\"id\":\"a\",\"score\":0,\"error\":\"x\",\"lis_error\":null,\"reward_repr\":\"7\",\"elapsed_seconds\":1}",
       false},
      {"{\"id\":\"a\",\"score\":0,\"error\":\"x\",\"lis_error\":\"x\",\"reward_repr\":\"7\",\"elapsed_seconds\":1}",
       true},
      {"{\"id\":\"a\",\"score\":1,\"lis_error\":3,\"elapsed_seconds\":1}", false},
      {"{\"id\":\"a\",\"score\":1,\"reward_repr\":\"1.0; rm\",\"elapsed_seconds\":1}", false},
      {"{\"id\":\"a\",\"score\":1,\"reward_repr\":1,\"elapsed_seconds\":1}", false},
  };
  for (size_t i = 0; i < ARRAY_SIZE(checked); i++) {
    cJSON *l = cJSON_Parse(checked[i].line);
    char *why = NULL;
    tap_ok((bench_line_check(l, &r01, NULL, &why) == 0) == checked[i].good, "line check: %s", checked[i].line);
    free(why);
    cJSON_Delete(l);
  }
}

int main(void) {
  lis_files();
  markdown();
  runfiles();
  ends();
  py_wire();
  summary_escapes();
  task_settings();
  judge();
  rows();
  answers();
  names();
  shards();
  return tap_done();
}
