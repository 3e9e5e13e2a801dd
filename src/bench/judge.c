/* SPDX-License-Identifier: Apache-2.0 */
/* hutch benchmark judge TRAJECTORY.json: LLM-in-Sandbox's judge.py (the
 * physics and long_context tasks score 0 until judged): each answer is
 * assessed CORRECT or INCORRECT against the official one by a judge model
 * on any OpenAI-compatible endpoint, --num-repeats times; the score is the
 * mean, the verdict the majority, and the output its _judged.json.  The
 * judge's prompt is LLM-in-Sandbox's, so that scores compare. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "error.h"
#include "lis_compat.h"
#include "llm_client.h"
#include "options.h"
#include "util.h"

struct judge_opts {
  const char *input, *model, *base_url, *api_key, *output;
  double temperature, wait_endpoint;
  long max_tokens, num_workers, num_repeats;
  bool allow_errors;
};

static int usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "hutch benchmark judge: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\nTry `hutch benchmark judge --help`.\n");
  va_end(ap);
  return 2;
}

static void judge_one(const struct judge_opts *o, const char *question, const char *truth, const char *answer,
                      const char *out_path) {
  _cleanup_free_ char *prompt = bench_judge_prompt(question, truth, answer);
  cJSON *body = bench_one_message(o->model, prompt, o->max_tokens);
  cJSON_AddNumberToObject(body, "temperature", o->temperature);
  struct llm_options lo = {.base_url = o->base_url,
                           .api_key = o->api_key,
                           .timeout = 600,
                           .max_tries = 5,
                           .retry_delay = 1,
                           .max_reply = 16u << 20,
                           .min_max_tokens = 1024,
                           .stop = &bench_stop};
  struct llm_client *c = llm_client_new(&lo);
  struct llm_reply rep;
  memset(&rep, 0, sizeof(rep));
  hutch_error_t err = NULL;
  cJSON *res = cJSON_CreateObject();
  if (llm_chat(c, body, &rep, &err) == LLM_OK) {
    const char *text = rep.content ? rep.content : "";
    const char *v = bench_judge_verdict(text);
    cJSON_AddStringToObject(res, "verdict", v);
    cJSON_AddNumberToObject(res, "score", strcmp(v, "CORRECT") == 0 ? 1.0 : 0.0);
    cJSON_AddStringToObject(res, "judge_response", text);
    cJSON_AddNullToObject(res, "error");
  } else {
    _cleanup_free_ char *why = hutch_error_format(err);
    cJSON_AddStringToObject(res, "verdict", "ERROR");
    cJSON_AddNumberToObject(res, "score", 0.0);
    cJSON_AddStringToObject(res, "judge_response", "");
    cJSON_AddStringToObject(res, "error", why);
  }
  hutch_error_free(&err);
  llm_reply_clear(&rep);
  llm_client_free(c);
  cJSON_Delete(body);
  _cleanup_free_ char *text = cJSON_PrintUnformatted(res);
  cJSON_Delete(res);
  write_file_atomic(out_path, text, strlen(text), 0600);
}

static const char *str_or(const cJSON *j, const char *key, const char *dflt) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
  return cJSON_IsString(v) ? v->valuestring : dflt;
}

static int parse(int argc, char **argv, struct judge_opts *o) {
  memset(o, 0, sizeof(*o));
  o->temperature = 0.7;
  o->max_tokens = 16384;
  o->num_workers = 16;
  o->num_repeats = 4;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      printf("Usage: hutch benchmark judge --input TRAJECTORY.json --judge-model NAME [OPTIONS]\n\n"
             "LLM-in-Sandbox's judge.py: a judge model assesses each agent_answer of a run's\n"
             "trajectory.json against its ground_truth, --num-repeats times; writes the\n"
             "scores, majority verdicts and statistics to --output (TRAJECTORY_judged.json).\n\n"
             "Options (LLM-in-Sandbox's spellings with '_' too):\n"
             "  --input FILE            a trajectory.json of hutch benchmark (or LLM-in-Sandbox)\n"
             "  --judge-model NAME      the judge model\n"
             "  --judge-base-url URL    its OpenAI-compatible API (http://localhost:8000/v1)\n"
             "  --api-key KEY           bearer key (default $OPENAI_API_KEY, else dummy)\n"
             "  --temperature T         (0.7)\n"
             "  --max-tokens N          (16384)\n"
             "  --num-workers N         requests at once (16)\n"
             "  --num-repeats N         judgments per answer (4)\n"
             "  --output FILE           where the result goes\n"
             "  --wait-for-endpoint DURATION\n"
             "                          wait up to DURATION (30s, 10m) for the judge's API\n"
             "  --allow-errors          write the result even when judgments failed, each\n"
             "                          scored 0 as LLM-in-Sandbox's judge.py does\n\n"
             "Before any judgment, one request (GET JUDGE-BASE-URL/models) checks that the\n"
             "judge's API answers.  Exit status: 0 every judgment made; 2 usage; 3 the judge's\n"
             "API failed (the pre-flight, or judgments: nothing is written without\n"
             "--allow-errors); 125 hutch failed; 130 interrupted (nothing written).\n");
      return 0;
    }
    _cleanup_free_ char *name = xstrdup(argv[i]);
    for (char *p = name; *p; p++)
      if (*p == '_')
        *p = '-';
    if (strcmp(name, "--allow-errors") == 0) {
      o->allow_errors = true;
      continue;
    }
    char *eq = strchr(name, '=');
    const char *v = eq ? strchr(argv[i], '=') + 1 : i + 1 < argc ? argv[i + 1] : NULL;
    if (eq)
      *eq = '\0';
    else
      i++;
    if (v == NULL)
      return usage("%s wants a value", argv[i - 1]);
    char *end;
    if (strcmp(name, "--input") == 0)
      o->input = v;
    else if (strcmp(name, "--judge-model") == 0)
      o->model = v;
    else if (strcmp(name, "--judge-base-url") == 0)
      o->base_url = v;
    else if (strcmp(name, "--api-key") == 0)
      o->api_key = v;
    else if (strcmp(name, "--output") == 0)
      o->output = v;
    else if (strcmp(name, "--wait-for-endpoint") == 0 && parse_duration(v, &o->wait_endpoint))
      ;
    else if (strcmp(name, "--temperature") == 0)
      o->temperature = strtod(v, &end);
    else if (strcmp(name, "--max-tokens") == 0 && (o->max_tokens = strtol(v, &end, 10)) > 0)
      ;
    else if (strcmp(name, "--num-workers") == 0 && (o->num_workers = strtol(v, &end, 10)) > 0)
      ;
    else if (strcmp(name, "--num-repeats") == 0 && (o->num_repeats = strtol(v, &end, 10)) > 0)
      ;
    else
      return usage("unknown option or bad value: '%s'", argv[eq ? i : i - 1]);
  }
  if (o->input == NULL || o->model == NULL)
    return usage("%s", "--input and --judge-model are required");
  if (o->base_url == NULL)
    o->base_url = "http://localhost:8000/v1";
  if (o->api_key == NULL)
    o->api_key = getenv("OPENAI_API_KEY") && *getenv("OPENAI_API_KEY") ? getenv("OPENAI_API_KEY") : "dummy";
  return -1;
}

int bench_judge(int argc, char **argv) {
  struct judge_opts o;
  int r = parse(argc, argv, &o);
  if (r >= 0)
    return r;
  size_t len = 0;
  _cleanup_free_ char *text = read_file_at(AT_FDCWD, o.input, (size_t)1 << 32, &len);
  cJSON *traj = text ? cJSON_ParseWithLength(text, len) : NULL;
  if (!cJSON_IsObject(traj)) {
    fprintf(stderr, "hutch benchmark judge: %s: not a trajectory.json\n", o.input);
    cJSON_Delete(traj);
    return 2;
  }
  /* A judge that is down would make every verdict ERROR and every score 0:
   * it is asked once before any judgment (preflight.c). */
  {
    struct bench_opts po;
    memset(&po, 0, sizeof(po));
    po.s.model = (char *)o.model;
    po.s.base_url = (char *)o.base_url;
    po.s.api_key = (char *)o.api_key;
    po.s.llm_timeout = 600;
    po.s.max_tries = 5;
    po.s.retry_delay = 1;
    po.s.max_reply_size = 16u << 20;
    po.wait_endpoint = o.wait_endpoint;
    hutch_error_t err = NULL;
    if (bench_preflight(&po, &err) < 0) {
      int rc = bench_stop ? 130 : 3;
      if (!bench_stop)
        hutch_error_print(stderr, "hutch benchmark judge", err);
      hutch_error_free(&err);
      cJSON_Delete(traj);
      return rc;
    }
  }
  char tmpl[] = "/tmp/hutch-judge.XXXXXX";
  if (mkdtemp(tmpl) == NULL) {
    fprintf(stderr, "hutch benchmark judge: mkdtemp: %s\n", strerror(errno));
    cJSON_Delete(traj);
    return 125;
  }
  size_t n_items = (size_t)cJSON_GetArraySize(traj), total = n_items * (size_t)o.num_repeats;
  size_t next = 0, running = 0;
  fprintf(stderr, "hutch benchmark judge: %zu answers, %ld repeats, judge %s at %s\n", n_items, o.num_repeats, o.model,
          o.base_url);
  while (next < total || running > 0) {
    while (!bench_stop && next < total && running < (size_t)o.num_workers) {
      const cJSON *e = cJSON_GetArrayItem(traj, (int)(next % n_items));
      _cleanup_free_ char *path = xasprintf("%s/%zu.json", tmpl, next);
      _cleanup_free_ char *truth = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "ground_truth"))
                                       ? xstrdup(str_or(e, "ground_truth", ""))
                                       : cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(e, "ground_truth"));
      fflush(NULL);
      pid_t pid = fork();
      if (pid == 0) {
        judge_one(&o, str_or(e, "problem_statement", ""), truth ? truth : "None", str_or(e, "agent_answer", ""), path);
        _exit(0);
      }
      if (pid < 0)
        break;
      next++;
      running++;
    }
    if (running == 0)
      break;
    if (wait(NULL) > 0)
      running--;
  }
  /* Per answer: the mean score, the majority verdict (ties in
   * LLM-in-Sandbox's order: CORRECT, INCORRECT, UNKNOWN, ERROR). */
  static const char *const order[] = {"CORRECT", "INCORRECT", "UNKNOWN", "ERROR"};
  cJSON *results = cJSON_CreateObject();
  long correct = 0, incorrect = 0, unknown = 0, errors = 0, judged = 0, failed = 0;
  _cleanup_free_ char *failed_why = NULL;
  double sum = 0;
  for (size_t k = 0; k < n_items; k++) {
    const cJSON *e = cJSON_GetArrayItem(traj, (int)k);
    cJSON *verdicts = cJSON_CreateArray(), *scores = cJSON_CreateArray();
    long counts[4] = {0};
    double s = 0;
    const char *first_error = NULL;
    cJSON *parts = cJSON_CreateArray();
    for (long rep = 0; rep < o.num_repeats; rep++) {
      _cleanup_free_ char *path = xasprintf("%s/%zu.json", tmpl, (size_t)rep * n_items + k);
      size_t plen = 0;
      _cleanup_free_ char *ptext = read_file_at(AT_FDCWD, path, 64 << 20, &plen);
      cJSON *p = ptext ? cJSON_ParseWithLength(ptext, plen) : NULL;
      unlink(path);
      if (p == NULL)
        continue;
      judged++;
      const char *v = str_or(p, "verdict", "ERROR");
      for (int i = 0; i < 4; i++)
        counts[i] += strcmp(v, order[i]) == 0;
      double sc = cJSON_GetObjectItemCaseSensitive(p, "score")->valuedouble;
      s += sc;
      cJSON_AddItemToArray(verdicts, cJSON_CreateString(v));
      cJSON_AddItemToArray(scores, cJSON_CreateNumber(sc));
      cJSON_AddItemToArray(parts, p);
      if (!first_error && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(p, "error")))
        first_error = str_or(p, "error", NULL);
      if (strcmp(v, "ERROR") == 0) {
        failed++;
        if (failed_why == NULL)
          failed_why = xstrdup(str_or(p, "error", "no verdict"));
      }
    }
    int best = 0;
    for (int i = 1; i < 4; i++)
      if (counts[i] > counts[best])
        best = i;
    int runs = cJSON_GetArraySize(verdicts);
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "problem_id", e->string);
    cJSON_AddStringToObject(a, "verdict", order[best]);
    cJSON_AddNumberToObject(a, "score", runs ? s / runs : 0.0);
    cJSON_AddNumberToObject(a, "num_runs", runs);
    cJSON_AddItemToObject(a, "individual_verdicts", verdicts);
    cJSON_AddItemToObject(a, "individual_scores", scores);
    cJSON_AddItemToObject(a, "error", first_error ? cJSON_CreateString(first_error) : cJSON_CreateNull());
    cJSON_Delete(parts);
    correct += best == 0;
    incorrect += best == 1;
    unknown += best == 2;
    errors += first_error != NULL;
    sum += runs ? s / runs : 0.0;
    cJSON_AddItemToObject(results, e->string, a);
  }
  rmdir(tmpl);
  /* A judgment not made is not a verdict of INCORRECT: without
   * --allow-errors, nothing is written that would count it as one. */
  long not_made = (long)total - judged + failed;
  if (bench_stop || (not_made > 0 && !o.allow_errors)) {
    cJSON_Delete(results);
    cJSON_Delete(traj);
    if (bench_stop) {
      fprintf(stderr, "hutch benchmark judge: interrupted: nothing written\n");
      return 130;
    }
    _cleanup_free_ char *why = failed_why ? text_escape_cstr(failed_why) : xstrdup("a judge's process ended");
    fprintf(stderr,
            "hutch benchmark judge: %ld of %zu judgments were not made (the first: %s): nothing written\n"
            "hint: check the judge's API and run again; --allow-errors writes them as LLM-in-Sandbox's judge.py "
            "does, each scored 0\n",
            not_made, total, why);
    return 3;
  }
  cJSON *outj = cJSON_CreateObject();
  _cleanup_free_ char *model =
      lis_refused_prefix(o.model) || strncmp(o.model, "openai/", 7) == 0 || strncmp(o.model, "hosted_vllm/", 12) == 0
          ? xstrdup(o.model)
          : xasprintf("openai/%s", o.model);
  cJSON_AddStringToObject(outj, "judge_model", model);
  cJSON_AddNumberToObject(outj, "num_repeats", (double)o.num_repeats);
  cJSON *st = cJSON_AddObjectToObject(outj, "stats");
  cJSON_AddNumberToObject(st, "num_problems", (double)n_items);
  cJSON_AddNumberToObject(st, "total_judgments", (double)judged);
  cJSON_AddNumberToObject(st, "correct", (double)correct);
  cJSON_AddNumberToObject(st, "incorrect", (double)incorrect);
  cJSON_AddNumberToObject(st, "unknown", (double)unknown);
  cJSON_AddNumberToObject(st, "errors", (double)errors);
  cJSON_AddNumberToObject(st, "mean_score", n_items ? sum / (double)n_items : 0.0);
  cJSON_AddItemToObject(outj, "results", results);
  /* LLM-in-Sandbox's default: every ".json" of the input's path replaced. */
  _cleanup_free_ char *dflt = NULL;
  if (o.output == NULL) {
    dflt = xstrdup("");
    for (const char *p = o.input; *p;) {
      const char *hit = strstr(p, ".json");
      size_t n = hit ? (size_t)(hit - p) : strlen(p);
      char *next_s = xasprintf("%s%.*s%s", dflt, (int)n, p, hit ? "_judged.json" : "");
      free(dflt);
      dflt = next_s;
      p += n + (hit ? 5 : 0);
    }
  }
  const char *out = o.output ? o.output : dflt;
  _cleanup_free_ char *json = cJSON_Print(outj);
  cJSON_Delete(outj);
  cJSON_Delete(traj);
  if (write_file_atomic(out, json, strlen(json), 0644) < 0) {
    fprintf(stderr, "hutch benchmark judge: write %s: %s\n", out, strerror(errno));
    return 125;
  }
  if (not_made > 0)
    fprintf(stderr,
            "hutch benchmark judge: warning: %ld of %zu judgments were not made, each scored 0 (--allow-errors)\n",
            not_made, total);
  fprintf(stderr, "hutch benchmark judge: %ld correct of %zu, mean score %.4f, %ld errors\n", correct, n_items,
          n_items ? sum / (double)n_items : 0.0, errors);
  printf("%s\n", out);
  return 0;
}
