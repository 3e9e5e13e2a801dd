/* SPDX-License-Identifier: Apache-2.0 */
/* hutch run's pure parts: the observation strings the model sees (pinned
 * byte for byte), output clean-up, text tool calls, prompt templates,
 * reply parsing, the run's budget and copy-back path checks. */
#include "config.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "budget.h"
#include "llm_client.h"
#include "observation.h"
#include "git_init.h"
#include "prompt_config.h"
#include "tap.h"
#include "text_calls.h"
#include "trajectory.h"
#include "transfer.h"
#include "util.h"

static void check(char *got, const char *want, const char *desc) {
  tap_is_str(got, want, "%s", desc);
  free(got);
}

static void observations(void) {
  check(obs_bash(0, false, 120, "hi\n", ""), "Exit code: 0\nExecution output of \\[execute_bash]:\n\\[STDOUT]\nhi\n",
        "execute_bash, success, no stderr");
  check(obs_bash(2, false, 120, "", "boom"),
        "Exit code: Error: Exit code 2\nExecution output of \\[execute_bash]:\n\\[STDOUT]\n\n\\[STDERR]\nboom",
        "execute_bash, failure with stderr");
  check(
      obs_bash(124, true, 120, "partial", "x"),
      "Exit code: -1\nExecution output of \\[execute_bash]:\n\\[STDOUT]\nThe command took too long to execute (>120s)",
      "execute_bash timeout");
  check(obs_bash_failure("no sandbox"),
        "Exit code: -1\nExecution output of \\[execute_bash]:\n\\[STDOUT]\nError: no sandbox\n\\[STDERR]\nError: no "
        "sandbox",
        "execute_bash could not run");
  check(obs_editor("done"), "Execution output of \\[str_replace_editor]:\ndone", "str_replace_editor prefix");
  tap_is_str(OBS_SUBMIT, "<<< Finished >>>", "submit");
  check(obs_unknown_action("fly"), "Unknown action: fly", "unknown tool");
  check(obs_steps_remaining(7), "\nSteps Remaining: 7", "steps remaining suffix");
  /* The reference's CONTINUE_MSG (the no-call case in tests/golden/lis/obs). */
  tap_is_str(
      OBS_REMINDER,
      "\nYou forgot to use a function call in your response. \nYOU MUST USE A FUNCTION CALL IN EACH RESPONSE.\n\n"
      "IMPORTANT: YOU SHOULD NEVER ASK FOR HUMAN HELP.\n",
      "no-call reminder");
}

static void cleanup(void) {
  check(text_strip_ansi("\x1b[1;31mred\x1b[0m\r\nok"), "red\nok", "ANSI colours and \\r stripped");
  check(text_utf8_sanitize("a\xff"
                           "b",
                           3),
        "a\xef\xbf\xbd"
        "b",
        "invalid UTF-8 replaced");
  tap_ok(!text_is_utf8("\xc0\x80", 2), "overlong encoding is not UTF-8");
  tap_ok(text_is_utf8("\xe2\x82\xac", 3), "the euro sign is UTF-8");
  /* 100 lines: 1..40, marker, 61..100. */
  char big[2000] = "";
  for (int i = 1; i <= 100; i++)
    sprintf(big + strlen(big), "%d\n", i);
  char *cut = text_cut_middle(big, 40);
  char want[2000] = "";
  for (int i = 1; i <= 40; i++)
    sprintf(want + strlen(want), "%d\n", i);
  strcat(want, "--------------------------------------------------\n<Observation truncated in middle for saving "
               "context>\n--------------------------------------------------\n");
  for (int i = 61; i <= 100; i++)
    sprintf(want + strlen(want), i == 100 ? "%d" : "%d\n", i);
  tap_is_str(cut, want, "more than 80 lines: first and last 40 around the marker");
  free(cut);
  char eighty[400] = "";
  for (int i = 1; i <= 80; i++)
    sprintf(eighty + strlen(eighty), "%d\n", i);
  check(text_cut_middle(eighty, 40), eighty, "80 lines are kept whole");
  char *clipped = text_clip("abcdef", 3);
  tap_is_str(clipped, "abc" OBS_CLIPPED, "clip marker after max characters");
  free(clipped);
  check(text_clip("\xc3\xa9\xc3\xa9\xc3\xa9", 2), "\xc3\xa9\xc3\xa9" OBS_CLIPPED, "clip counts characters");
  /* As Python's decode(errors="replace"): one U+FFFD per maximal invalid subpart. */
  check(text_utf8_sanitize("a\xe2\x82"
                           "b\xed\xa0\x80",
                           7),
        "a\xef\xbf\xbd"
        "b\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd",
        "a cut sequence is one replacement, a surrogate three");
  /* Python's splitlines() also breaks at \f, \v, \x1c-\x1e, U+0085, U+2028/9. */
  char ff[600] = "a\fb\xe2\x80\xa8";
  for (int i = 3; i <= 81; i++)
    sprintf(ff + strlen(ff), "%d\n", i);
  char *cut_ff = text_cut_middle(ff, 40);
  tap_ok(strncmp(cut_ff, "a\nb\n3\n", 6) == 0 && strstr(cut_ff, "\n40\n-----") != NULL,
         "line breaks other than \\n count, and are joined with \\n when cut");
  free(cut_ff);
  check(obs_bash(0, false, 120, " \n\t\n", " \xc2\xa0\n"),
        "Exit code: 0\nExecution output of \\[execute_bash]:\n\\[STDOUT]\n",
        "white space only: no stdout, no stderr section");
}

static void byte_cuts(void) {
  check(text_cut_bytes("abcdef", 6), "abcdef", "an observation of max bytes is kept whole");
  char *cut = text_cut_bytes("abcdefghij", 4);
  tap_is_str(cut,
             "ab\n--------------------------------------------------\n<Observation truncated in middle: 6 bytes left "
             "out, as one observation keeps at most 4>\n--------------------------------------------------\nij",
             "past max bytes: the first and last max/2 around a marker");
  free(cut);
  /* "é" is two bytes: a cut inside one moves to its start, or past its end. */
  cut = text_cut_bytes("a\xc3\xa9\xc3\xa9\xc3\xa9"
                       "b",
                       4);
  tap_is_str(cut,
             "a\n--------------------------------------------------\n<Observation truncated in middle: 6 bytes left "
             "out, as one observation keeps at most 4>\n--------------------------------------------------\nb",
             "never inside a UTF-8 sequence");
  free(cut);
}

static void budgets(void) {
  struct budget b = {.max_steps = 5, .max_calls = 2, .max_obs = 10, .max_conv = 100, .deadline = 50};
  tap_is_int(budget_calls_kept(&b, 3), 3, "a reply's calls up to twice max_calls are kept");
  tap_is_int(budget_calls_kept(&b, 4), 4, "four of four");
  tap_is_int(budget_calls_kept(&b, 100000), 4, "the rest are left out");
  struct budget big = b;
  big.max_calls = 0x7fffffffffffffffL;
  tap_is_int(budget_calls_kept(&big, 7), 7, "a huge max_calls does not overflow");
  tap_ok(budget_refuse(&b, 0, 3, 1) == NULL && budget_refuse(&b, 1, 3, 1) == NULL, "the first max_calls are run");
  tap_is_int(b.steps, 2, "each a step");
  check(budget_refuse(&b, 2, 3, 1),
        "ERROR: not run: this reply has 3 tool calls, and at most 2 of one reply are run (--max-calls-per-reply). "
        "Send the others in your next reply.",
        "the next is answered 'not run', with why");
  b.steps = 5;
  check(budget_refuse(&b, 0, 1, 1), "ERROR: not run: the run's step budget is spent (--max-steps 5).",
        "no call past the step budget");
  b.steps = 0;
  tap_ok(budget_tool_timeout(&b, 120, 45) == 5 && budget_tool_timeout(&b, 2, 45) == 2,
         "a tool's timeout ends by the deadline");
  check(budget_refuse(&b, 0, 1, 50), "ERROR: not run: the run's time limit is reached (--run-timeout).",
        "no call at the deadline");
  tap_is_str(budget_end_reason(&b), "time_limit", "and the run ends: time_limit");

  struct budget c = {.max_steps = 99, .max_calls = 9, .max_obs = 10, .max_conv = 1000, .deadline = 1e9};
  char *o = budget_observation(&c, "0123456789", true);
  tap_is_str(o, "0123456789", "an observation within both bounds is kept");
  free(o);
  o = budget_observation(&c, "0123456789012", true);
  tap_ok(strstr(o, "<Observation truncated in middle: 3 bytes left out") != NULL, "one past max_obs is cut");
  tap_ok(budget_end_reason(&c) == NULL, "the run goes on");
  free(o);
  tap_ok(c.conv > 100, "counted with its marker");
  c.conv = 25;
  c.max_conv = 30;
  o = budget_observation(&c, "0123456789", true);
  tap_is_str(o,
             "ERROR: the output of this call (10 bytes) was left out: the run's conversation reached "
             "--max-conversation-size (30 bytes), and the run ends.",
             "an output that would pass max_conv is replaced by a note");
  free(o);
  tap_is_str(budget_end_reason(&c), "conversation_limit", "and the run ends: conversation_limit");
  check(budget_refuse(&c, 0, 1, 1),
        "ERROR: not run: the run's conversation reached --max-conversation-size (30 bytes).", "no call after that");

  struct budget d = {.max_steps = 99, .max_calls = 9, .max_obs = 10, .max_conv = 8, .deadline = 1e9};
  struct llm_call call = {.id = "id", .name = "nm", .arguments = "{}"};
  struct llm_reply rep = {.content = "abc", .calls = &call, .n_calls = 1};
  budget_add_reply(&d, &rep, 1);
  tap_is_int(d.conv, 9, "a reply counts its content and calls");
  tap_is_str(budget_end_reason(&d), "conversation_limit", "a reply past max_conv ends the run");
}

static void text_calls(void) {
  struct text_call *c;
  size_t n =
      text_calls_parse("I will look.\n<tool_call>\n{\"name\": \"execute_bash\", \"arguments\": {\"command\": "
                       "\"ls\"}}\n</tool_call>\n<tool_call>{\"name\": \"submit\", \"arguments\": {}}</tool_call>",
                       &c);
  tap_is_int(n, 2, "Hermes: two calls");
  if (n == 2) {
    tap_is_str(c[0].name, "execute_bash", "Hermes: first name");
    tap_is_str(c[0].arguments, "{\"command\":\"ls\"}", "Hermes: arguments");
    tap_is_str(c[1].name, "submit", "Hermes: second name");
  }
  text_calls_free(c, n);
  n = text_calls_parse("<tool_call>\n<function=str_replace_editor>\n<parameter=command>\nview\n</parameter>\n"
                       "<parameter=path>\n/testbed\n</parameter>\n</function>\n</tool_call>",
                       &c);
  tap_is_int(n, 1, "Qwen3-Coder: one call");
  if (n == 1) {
    tap_is_str(c[0].name, "str_replace_editor", "Qwen3-Coder: name");
    tap_is_str(c[0].arguments, "{\"command\":\"view\",\"path\":\"/testbed\"}", "Qwen3-Coder: parameters");
  }
  text_calls_free(c, n);
  n = text_calls_parse("just words, <tool_call>not json</tool_call>", &c);
  tap_is_int(n, 0, "no call in plain text or broken JSON");
  text_calls_free(c, n);
}

static void prompts(void) {
  const char *yaml = "system_prompt: |\n  Work in {working_dir}; keep {{braces}}.\ninstance_prompt: \"Task: "
                     "{problem_statement} -> {output_dir}/answer.txt {unknown}\"\noutput_dir: /testbed\n";
  struct prompt_config pc;
  hutch_error_t err = NULL;
  tap_ok(prompt_config_parse(yaml, strlen(yaml), "test", &pc, &err) == 0, "reference-style prompt YAML loads");
  if (err)
    hutch_error_free(&err);
  tap_is_str(pc.working_dir, "/testbed", "working_dir defaults to /testbed");
  tap_is_str(pc.input_dir, "/testbed/input", "input_dir defaults to /testbed/input");
  tap_is_str(pc.output_dir, "/testbed", "output_dir from the file");
  check(prompt_expand(pc.system_prompt, &pc, NULL), "Work in /testbed; keep {braces}.\n", "{{ is a literal brace");
  check(prompt_expand(pc.instance_prompt, &pc, "add {x}"), "Task: add {x} -> /testbed/answer.txt {unknown}",
        "problem statement inserted verbatim, unknown placeholders kept");
  prompt_config_clear(&pc);
  const char *bad = "system_prompt: x\n";
  tap_ok(prompt_config_parse(bad, strlen(bad), "bad", &pc, &err) < 0, "instance_prompt is required");
  hutch_error_free(&err);
  const char *notyaml = "system_prompt: [unclosed\n";
  tap_ok(prompt_config_parse(notyaml, strlen(notyaml), "bad", &pc, &err) < 0, "invalid YAML is an error");
  tap_ok(err && strstr(err->msg, "line") != NULL, "which names the line");
  hutch_error_free(&err);
}

static void replies(void) {
  struct llm_reply r;
  hutch_error_t err = NULL;
  const char *ok = "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"hm\",\"reasoning_content\":"
                   "\"think\",\"tool_calls\":[{\"id\":\"a\",\"type\":\"function\",\"function\":{\"name\":"
                   "\"execute_bash\",\"arguments\":\"{\\\"command\\\":\\\"ls\\\"}\"}}]}}],\"usage\":{"
                   "\"prompt_tokens\":10,\"completion_tokens\":5,\"total_tokens\":15}}";
  tap_ok(llm_parse_reply(ok, strlen(ok), &r, &err) == 0, "a reply with a tool call parses");
  tap_is_int(r.n_calls, 1, "one call");
  tap_is_str(r.reasoning, "think", "reasoning_content kept");
  tap_is_int(r.total_tokens, 15, "usage read");
  tap_ok(!r.has_cost, "no cost when the endpoint reports none");
  llm_reply_clear(&r);
  const char *costs[] = {"1.5e-3", "-1", "\"0.1\""};
  for (size_t i = 0; i < ARRAY_SIZE(costs); i++) {
    _cleanup_free_ char *text = xasprintf("{\"choices\":[{\"message\":{\"content\":\"x\"}}],\"usage\":{"
                                          "\"prompt_tokens\":1,\"completion_tokens\":1,\"cost\":%s}}",
                                          costs[i]);
    tap_ok(llm_parse_reply(text, strlen(text), &r, &err) == 0, "a reply with usage.cost %s parses", costs[i]);
    tap_ok(i == 0 ? r.has_cost && r.cost == 1.5e-3 : !r.has_cost,
           i == 0 ? "its cost is read" : "a cost that is no finite number >= 0 is not");
    llm_reply_clear(&r);
  }
  const char *garbage[] = {"<html>502 Bad Gateway</html>", "{\"choices\": []}",
                           "{\"choices\":[{\"message\":"
                           "{\"tool_calls\":[{}]}}]}",
                           "\xff\xfe", "{\"error\": {\"message\": \"overloaded\"}}"};
  for (size_t i = 0; i < ARRAY_SIZE(garbage); i++) {
    int rc = llm_parse_reply(garbage[i], strlen(garbage[i]), &r, &err);
    tap_ok(rc < 0 && err && err->msg[0], "garbage reply %zu is a clear error: %s", i, err ? err->msg : "(none)");
    hutch_error_free(&err);
  }
  tap_is_int(llm_shrink_max_tokens("This model's maximum context length is 32768 tokens. However, you requested "
                                   "65536 output tokens and your prompt contains at least 2000 input tokens",
                                   65536, 1024),
             32768 - 2000 - 100, "context-length error: max_tokens fitted to what is left");
  tap_is_int(llm_shrink_max_tokens("context length exceeded", 4000, 1024), 2000, "else halved");
  tap_is_int(llm_shrink_max_tokens("context length exceeded", 1024, 1024), 0, "not below the floor");
  tap_is_int(llm_shrink_max_tokens("invalid model", 4000, 1024), 0, "other errors are not context errors");
  const char *parts = "{\"choices\":[{\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":"
                      "\"image\"},{\"type\":\"text\",\"text\":\"bc\"}],\"tool_calls\":[{\"function\":{\"name\":"
                      "\"x\"}},{\"id\":\"q\",\"function\":{\"name\":\"y\",\"arguments\":{\"k\":1}}}]}}]}";
  tap_ok(llm_parse_reply(parts, strlen(parts), &r, &err) == 0, "content parts and two calls parse");
  tap_is_str(r.content, "abc", "the text parts joined");
  tap_ok(r.n_calls == 2 && strcmp(r.calls[0].id, "call_1") == 0 && strcmp(r.calls[0].arguments, "{}") == 0 &&
             strcmp(r.calls[1].id, "q") == 0 && strcmp(r.calls[1].name, "y") == 0 &&
             strcmp(r.calls[1].arguments, "{\"k\":1}") == 0,
         "the calls in order, with their ids and arguments");
  llm_reply_clear(&r);
  check(llm_redact_url("https://user:secret@api.example/v1"), "https://api.example/v1", "credentials left out of URLs");
  check(llm_redact_url("http://localhost:8000/v1"), "http://localhost:8000/v1", "a URL without credentials as written");
  check(llm_redact_url("http://user:s3cret@[::1]:8000/v1"), "http://[::1]:8000/v1",
        "credentials before an IPv6 literal and a port");
  check(llm_redact_url("http://key@api.example:443/v1?x=1"), "http://api.example:443/v1?x=1",
        "a user without password");
  check(llm_redact_url("user:secret@api.example:8000/v1"), "http://api.example:8000/v1",
        "no scheme: read as libcurl connects (http)");
  check(llm_redact_url("http://api.example/v1?mail=a@b.example"), "http://api.example/v1?mail=a@b.example",
        "an '@' in the query is no credential");
  check(llm_redact_url("http://user:p@ss@api.example/v1"), "http://api.example/v1",
        "a URL libcurl refuses: nothing of the password (up to the last '@') shown");
  check(llm_redact_url("http://u:p;auth=x@api.example/"), "http://api.example/", "login options go too");
}

static void paths(void) {
  tap_ok(transfer_safe_relpath("./a/b.txt"), "a plain relative path is safe");
  tap_ok(!transfer_safe_relpath("./../x"), ".. is refused");
  tap_ok(!transfer_safe_relpath("./a/../../x"), "inner .. is refused");
  tap_ok(!transfer_safe_relpath("/etc/passwd"), "absolute is refused");
  tap_ok(!transfer_safe_relpath("./a//b"), "empty components are refused");
}

static long saved_steps(const char *path) {
  size_t len = 0;
  _cleanup_free_ char *text = read_file_at(AT_FDCWD, path, 1 << 20, &len);
  cJSON *t = text ? cJSON_ParseWithLength(text, len) : NULL;
  long n = t ? (long)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(t, "steps")) : -1;
  cJSON_Delete(t);
  return n;
}

/* trajectory.json is whole after every save, and the run uses two files
 * for all its saves (a new file per save costs an inode each time). */
static void trajectory_saves(void) {
  char dir[] = "/tmp/hutch-traj.XXXXXX";
  if (mkdtemp(dir) == NULL) {
    tap_ok(0, "mkdtemp for the trajectory saves");
    return;
  }
  _cleanup_free_ char *path = xasprintf("%s/trajectory.json", dir);
  _cleanup_free_ char *tmp = xasprintf("%s/trajectory.json.tmp", dir);
  struct trajectory t;
  trajectory_init(&t, path, "p");
  hutch_error_t err = NULL;
  int held = -1; /* the first save's file, kept open */
  bool whole = true, reused = false;
  for (long i = 0; i < 5; i++) {
    if (i > 0)
      trajectory_add(&t, i, "t", "", "execute_bash", "{\"command\": \"true\"}", "ok", 0.1, 0.1, 0, "c");
    if (trajectory_save(&t, &err) < 0) {
      hutch_error_free(&err);
      whole = false;
      break;
    }
    whole = whole && saved_steps(path) == i;
    struct stat st, hst;
    if (i == 0)
      held = open(path, O_RDONLY | O_CLOEXEC);
    /* A new file per save would have left the first one unlinked. */
    if (i == 2 && held >= 0 && stat(path, &st) == 0 && fstat(held, &hst) == 0)
      reused = st.st_ino == hst.st_ino && hst.st_nlink == 1;
  }
  if (held >= 0)
    close(held);
  tap_ok(whole, "trajectory.json holds every step saved so far, after each save");
  tap_ok(reused, "the third save is written in the file of the first (two files swapped, none made per step)");
  trajectory_free(&t);
  tap_ok(access(tmp, F_OK) < 0, "the spare file is gone at the end");
  tap_is_int(saved_steps(path), 4, "and trajectory.json is the last save");
  unlink(path);
  rmdir(dir);
}

static void git_overlap(void) {
  tap_ok(!git_init_overlaps("/testbed", "/testbed/documents"), "an input directory beside .git does not wait for git");
  tap_ok(!git_init_overlaps("/testbed", "/testbed/.github"), "(.github is not .git)");
  tap_ok(git_init_overlaps("/testbed", "/testbed"), "the working directory itself waits");
  tap_ok(git_init_overlaps("/testbed", "/"), "so does /");
  tap_ok(git_init_overlaps("/testbed", "/testbed/.git/hooks"), "and a directory inside .git");
  tap_ok(git_init_overlaps("/testbed", "/testbed/x/.."), "a trailing /.. hides where it leads: it waits");
  tap_ok(git_init_overlaps("/testbed", "/testbed/x/../.git"), "so does a /../ inside");
  tap_ok(git_init_overlaps("/", "/.git"), "(a working directory of /)");
  tap_ok(git_init_overlaps("/testbed", "/testbed/./x"), "a path spelled with /./ waits");
}

int main(void) {
  trajectory_saves();
  git_overlap();
  observations();
  cleanup();
  byte_cuts();
  budgets();
  text_calls();
  prompts();
  replies();
  paths();
  return tap_done();
}
