/* SPDX-License-Identifier: Apache-2.0 */
/* hutch benchmark's command line: its own options (hutch spellings and
 * LLM-in-Sandbox's), and every other option passed through to each task's
 * hutch run, which resolves and checks them once before any task starts. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "bench_options.h"
#include "lis_compat.h"
#include "lis_package.h"
#include "options.h"
#include "resume_opts.h"
#include "util.h"

void bench_usage(FILE *out) {
  fprintf(out, "Usage: hutch benchmark [TASKDIR] --task NAME [OPTIONS] [hutch run OPTIONS]\n\n"
               "Evaluate a model on a task folder of LLM-in-Sandbox's format, TASKDIR/NAME:\n"
               "config.yaml, its data file and reward.py.  Each task is a hutch run in a sandbox\n"
               "of its own; its answer is scored by reward.py's compute_score in another sandbox\n"
               "(no network, bounded).  Results go to OUTPUT-DIR/YYYYMMDD_HHMMSS_NAME_MODEL_LLMinSandbox/:\n"
               "results.jsonl (a line per task that ended), logs/ID.txt, runs/ID/, and at the\n"
               "end of a complete run results.json and trajectory.json.  Every other option is\n"
               "hutch run's (hutch-run(1)): --model, --base-url, --rootfs, --max-steps... and\n"
               "LLM_NAME, LLM_BASE_URL, LLM_API_KEY.\n"
               "Before any task, one request (GET BASE-URL/models) checks that the model's API\n"
               "answers; a task the API or hutch failed is not finished, and --resume runs it.\n"
               "Exit status: 0 complete: every task ended as the model made it (some may have\n"
               "failed: see num_errors); 2 usage (a task folder not there too); 3 the model's\n"
               "API failed (the pre-flight: nothing written; or tasks unfinished: --resume\n"
               "goes on); 125 hutch failed (tasks unfinished: --resume goes on); 130\n"
               "interrupted (--resume goes on).\n"
               "Only a complete run writes results.json and trajectory.json.\n\n"
               "`hutch benchmark merge DIR... [--output-dir DIR] [--allow-partial]` combines\n"
               "the run directories of the shards of one task set into one (status 4: a shard\n"
               "is missing or incomplete, and nothing is written).\n\n"
               "Options:\n"
               "  --task NAME                the task folder in TASKDIR (task)\n"
               "  --num-workers N            tasks at once, each in its own sandbox (num_workers;\n"
               "                             default $LLM_NUM_WORKERS, else 1)\n"
               "  --max-inflight N           requests to the model in flight at once, across all\n"
               "                             workers (default: --num-workers); a 429 holds them all\n"
               "  --start-id N               first task, 0-based (start_id)\n"
               "  --end-id N                 stop before this task (end_id)\n"
               "  --output-dir DIR           where the run directory is made (output_dir; ./output)\n"
               "  --resume DIR               go on with the run in DIR: finished tasks are skipped;\n"
               "                             the options it recorded are taken (those given again\n"
               "                             must match, but --base-url, --num-workers, retries)\n"
               "  --retry-errors             with --resume: run the tasks that ended in an error\n"
               "                             (timeout, task_error, scoring_error) again too\n"
               "  --max-api-failures N       stop the run when N tasks in a row end on a failure\n"
               "                             of the model's API or of hutch (3; 0: never)\n"
               "  --wait-for-endpoint DURATION\n"
               "                             wait up to DURATION (30s, 10m, 1h) for the model's\n"
               "                             API to answer before the first task (a server\n"
               "                             still loading)\n"
               "  --task-timeout SECONDS     wall-clock limit of one task's hutch run (1800),\n"
               "                             given to it as its --run-timeout\n"
               "  --mode MODE                llm-in-sandbox (default), or llm: the model answers\n"
               "                             without a sandbox (vanilla_llm_prompt.py)\n"
               "  --max-response-len N       recorded in results.json (max_response_len; 65536)\n"
               "  --shard K/N                run only the tasks whose index is K modulo N (0 <= K < N;\n"
               "                             default from SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT)\n"
               "  --shards N                 N shards, K from JOB_COMPLETION_INDEX (Kubernetes)\n"
               "  --reward-rootfs NAME       image of the scoring sandbox, with python3 (default:\n"
               "                             the tasks' image)\n"
               "  --reward-timeout SECONDS   time limit of one compute_score (60)\n"
               "  --reward-memory SIZE       memory limit of the scoring sandbox (default: the\n"
               "                             policy's, 2G as shipped)\n"
               "  --lis[=DIR]                the tasks get the tool schemas of the installed\n"
               "                             LLM-in-Sandbox (or its package directory DIR)\n"
               "  --quiet                    print warnings and errors only (on stderr)\n"
               "  --json                     stdout gets one JSON object per event (start, task,\n"
               "                             end) and nothing else; stderr as --quiet\n"
               "Without TASKDIR, the task folders are those of the installed LLM-in-Sandbox.\n"
               "LLM-in-Sandbox's command line works too: -d -o -a -n, \"no\" before a yes/no\n"
               "option's name, and the words\n"
               "TASK MODEL IMAGE MAX_STEPS TEMPERATURE after TASKDIR.\n"
               "  -h, --help                 show this help\n");
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "hutch benchmark: ");
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\nTry `hutch benchmark --help`.\n");
  return 2;
}

enum {
  O_TASK,
  O_WORKERS,
  O_START,
  O_END,
  O_OUT,
  O_RESUME,
  O_TTIMEOUT,
  O_MODE,
  O_MRL,
  O_RROOTFS,
  O_RTIMEOUT,
  O_RMEM,
  O_SHARD,
  O_SHARDS,
  O_INFLIGHT,
  O_APIFAIL,
  O_WAIT,
  O_LIS
};
static const char *const own[] = {
    "task",         "num-workers", "start-id",         "end-id",           "output-dir",        "resume",
    "task-timeout", "mode",        "max-response-len", "reward-rootfs",    "reward-timeout",    "reward-memory",
    "shard",        "shards",      "max-inflight",     "max-api-failures", "wait-for-endpoint", "lis"};
/* hutch benchmark sets these for each task itself (--run-timeout from
 * --task-timeout). */
static const char *const refused[] = {"query", "input-dir", "prompt-config", "no-die-with-parent", "run-timeout"};

static bool parse_long(const char *v, long *out) {
  char *end;
  long n = strtol(v, &end, 10);
  if (end == v || *end || n < 0)
    return false;
  *out = n;
  return true;
}

static bool parse_seconds(const char *v, double *out) {
  char *end;
  double d = strtod(v, &end);
  if (end == v || *end || !(d > 0))
    return false;
  *out = d;
  return true;
}

static int set_own(struct bench_opts *o, int which, const char *v) {
  bool ok = true;
  switch (which) {
  case O_TASK:
    free(o->task), o->task = xstrdup(v);
    break;
  case O_WORKERS:
    ok = parse_long(v, &o->num_workers) && o->num_workers > 0;
    break;
  case O_INFLIGHT:
    ok = parse_long(v, &o->max_inflight) && o->max_inflight > 0 && o->max_inflight <= 1024;
    break;
  case O_START:
    ok = parse_long(v, &o->start_id);
    break;
  case O_END:
    ok = parse_long(v, &o->end_id);
    break;
  case O_OUT:
    free(o->output_dir), o->output_dir = xstrdup(v);
    break;
  case O_RESUME:
    free(o->resume), o->resume = xstrdup(v);
    break;
  case O_TTIMEOUT:
    ok = parse_seconds(v, &o->task_timeout);
    break;
  case O_MODE:
    free(o->mode), o->mode = xstrdup(v);
    break;
  case O_MRL:
    ok = parse_long(v, &o->max_response_len) && o->max_response_len > 0;
    break;
  case O_RROOTFS:
    free(o->reward_rootfs), o->reward_rootfs = xstrdup(v);
    break;
  case O_RTIMEOUT:
    ok = parse_seconds(v, &o->reward_timeout);
    break;
  case O_RMEM:
    free(o->reward_memory), o->reward_memory = xstrdup(v);
    break;
  case O_SHARD:
    free(o->shard), o->shard = xstrdup(v);
    break;
  case O_SHARDS:
    ok = parse_long(v, &o->shards) && o->shards > 0;
    break;
  case O_APIFAIL:
    if (!parse_long(v, &o->max_api_failures))
      return usage_error("--%s wants a count (0: never stop)", own[which]);
    break;
  case O_WAIT:
    if (!parse_duration(v, &o->wait_endpoint))
      return usage_error("--%s wants a duration (30s, 10m, 1h), got '%s'", own[which], v);
    break;
  case O_LIS:
    free(o->lis), o->lis = xstrdup(v);
    break;
  }
  if (!ok)
    return usage_error("--%s wants a positive number", own[which]);
  return -1;
}

static void strv_add(char ***list, size_t *n, char *s) {
  *list = xrealloc(*list, (*n + 2) * sizeof(char *));
  (*list)[(*n)++] = s;
  (*list)[*n] = NULL;
}

static void strv_free(char **list, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(list[i]);
  free(list);
}

/* hutch benchmark's own options a run records for its --resume: those of
 * how its tasks run (the task set, its range and shard are recorded on
 * their own; where the run goes and the first wait are the first
 * command's). */
static bool own_recorded(int which) {
  return which != O_TASK && which != O_START && which != O_END && which != O_OUT && which != O_RESUME &&
         which != O_SHARD && which != O_SHARDS && which != O_WAIT;
}

static void add_agent(struct bench_opts *o, const char *arg) {
  o->agent_argv = xrealloc(o->agent_argv, (o->n_agent + 2) * sizeof(char *));
  o->agent_argv[o->n_agent++] = xstrdup(arg);
  o->agent_argv[o->n_agent] = NULL;
}

/* LLM-in-Sandbox's benchmark command's parameters in its order, as Python
 * Fire binds words to those not given as options (benchmark TASK MODEL
 * ...); hutch takes the first five that way. */
static const char *const fire_bench[] = {"task", "model", "docker-image", "max-steps", "temperature"};

/* Its short flags: the unique first letters (benchmark --help lists them),
 * the others ambiguous to Fire. */
static const struct {
  char letter;
  const char *name;
  const char *ambiguous;
} fire_short[] = {
    {'d', "--docker-image", NULL},
    {'o', "--output-dir", NULL},
    {'a', "--api-key", NULL},
    {'n', "--num-workers", NULL},
    {'t', NULL, "['task', 'temperature']"},
    {'l', NULL, "['llm_name', 'llm_base_url']"},
    {'m', NULL, "['max_steps', 'max_token_limit', 'max_tokens_per_call', 'max_response_len', 'mode']"},
    {'e', NULL, "['extra_body', 'end_id']"},
    {'s', NULL, "['settings', 'start_id', 'save_litellm_response']"},
};

/* A TASKDIR, the folder that holds task folders: a directory that is not
 * one itself (a word that is not is LLM-in-Sandbox's TASK). */
static bool taskdir_like(const char *a) {
  struct stat st;
  _cleanup_free_ char *cfg = xasprintf("%s/config.yaml", a);
  return stat(a, &st) == 0 && S_ISDIR(st.st_mode) && access(cfg, F_OK) != 0;
}

/* A first word that is a path (no task's name has a '/') but no TASKDIR:
 * a task folder itself, or nothing. */
static int taskdir_mistake(const char *a) {
  struct stat st;
  if (stat(a, &st) != 0 || !S_ISDIR(st.st_mode))
    return usage_error("TASKDIR '%s' is no directory: give the folder that holds the task folders", a);
  _cleanup_free_ char *copy = xstrdup(a);
  size_t n = strlen(copy);
  while (n > 1 && copy[n - 1] == '/')
    copy[--n] = '\0';
  char *slash = strrchr(copy, '/');
  const char *name = slash ? slash + 1 : copy;
  const char *parent = slash == copy ? "/" : slash ? (*slash = '\0', copy) : ".";
  return usage_error("'%s' is a task folder itself: TASKDIR is the folder that holds it (hutch benchmark %s --task %s)",
                     a, parent, name);
}

/* A --resume that cannot go on with what its run recorded: said as an
 * error (escaped: benchmark.json may have been edited), status 2. */
static int resume_refused(const struct bench_opts *o, const char *why) {
  hutch_error_t err = NULL;
  hutch_error_set(&err, 0, "--resume %s: %s", o->resume, why);
  hutch_error_hint(&err, "leave the option out: --resume DIR alone goes on with the options DIR/benchmark.json "
                         "recorded (those that may change: --base-url, --num-workers, --max-inflight, --max-tries, "
                         "--retry-delay, --llm-timeout, --max-api-failures)");
  hutch_error_print(stderr, "hutch benchmark", err);
  hutch_error_free(&err);
  return 2;
}

/* benchmark.json of --resume's run, when it is the user's own (owned by
 * them, writable by nobody else, a regular file reached without a
 * symlink): its recorded options become this command's.  NULL when it is
 * not there or not JSON (open_run says why), or not the user's (a warning:
 * the options come from this command line alone). */
static cJSON *resume_meta(const struct bench_opts *o) {
  _cleanup_free_ char *path = xasprintf("%s/benchmark.json", o->resume);
  _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
    return NULL;
  if (st.st_uid != geteuid() || (st.st_mode & 022)) {
    fprintf(stderr,
            "hutch benchmark: warning: --resume %s: benchmark.json is not yours alone (another owner, or writable by "
            "others): its recorded options are not used, give them\n",
            o->resume);
    return NULL;
  }
  _cleanup_free_ char *self = xasprintf("/proc/self/fd/%d", fd);
  size_t len = 0;
  _cleanup_free_ char *text = read_file_at(AT_FDCWD, self, 1 << 20, &len);
  cJSON *meta = text ? cJSON_ParseWithLength(text, len) : NULL;
  if (!cJSON_IsObject(meta)) {
    cJSON_Delete(meta);
    return NULL;
  }
  return meta;
}

/* A long of benchmark.json (-1 when absent). */
static long meta_long(const cJSON *meta, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(meta, key);
  return cJSON_IsNumber(v) ? (long)v->valuedouble : -1;
}

static char *range_mismatch(const char *opt, long then, long now) {
  if (then < 0)
    return xasprintf("%s: the run began without it; this command gives %ld", opt, now);
  return xasprintf("%s: the run began with %ld; this command gives %ld", opt, then, now);
}

/* --resume DIR: the options DIR's run recorded, for those this command
 * line does not give; those it gives again must be the same (but the free
 * ones, resume_opt_free).  -1 to go on, else an exit code. */
static int resume_merge(struct bench_opts *o) {
  _cleanup_free_ char *path = xasprintf("%s/benchmark.json", o->resume);
  struct stat st;
  if (lstat(path, &st) < 0 && (errno == ENOENT || errno == ENOTDIR))
    return usage_error("--resume %s: no benchmark.json there: not a run directory of hutch benchmark", o->resume);
  cJSON *meta = resume_meta(o);
  const cJSON *opts = cJSON_GetObjectItemCaseSensitive(meta, "options");
  if (!cJSON_IsArray(opts)) {
    cJSON_Delete(meta); /* a run of an older hutch: open_run's checks alone */
    return -1;
  }
  char **rec = NULL, **agent = NULL, **given = NULL, **missing = NULL;
  size_t n_rec = 0, n_agent = 0, n_given = 0, n_missing = 0;
  _cleanup_free_ char *why = NULL, *td = NULL;
  int rc = -1;
  const cJSON *e;
  cJSON_ArrayForEach(e, opts) {
    if (!cJSON_IsString(e) || strncmp(e->valuestring, "--", 2) != 0) {
      why = xstrdup("benchmark.json's \"options\" holds other than options");
      goto out;
    }
    strv_add(&rec, &n_rec, xstrdup(e->valuestring));
  }
  agent = resume_opts_normal(o->agent_argv, o->n_agent, &n_agent);
  for (size_t i = 0; i < o->n_own_given; i++)
    strv_add(&given, &n_given, xstrdup(o->own_given[i]));
  for (size_t i = 0; i < n_agent; i++)
    strv_add(&given, &n_given, xstrdup(agent[i]));
  why = resume_opts_mismatch(rec, n_rec, given, n_given);
  const cJSON *task = cJSON_GetObjectItemCaseSensitive(meta, "task");
  const cJSON *taskdir = cJSON_GetObjectItemCaseSensitive(meta, "taskdir");
  td = o->taskdir ? realpath(o->taskdir, NULL) : NULL;
  if (why == NULL && o->task && cJSON_IsString(task) && strcmp(o->task, task->valuestring) != 0)
    why = xasprintf("--task: the run began with '%s'; this command gives '%s'", task->valuestring, o->task);
  if (why == NULL && o->taskdir && cJSON_IsString(taskdir) && strcmp(td ? td : o->taskdir, taskdir->valuestring) != 0)
    why = xasprintf("TASKDIR: the run began with '%s'; this command gives '%s'", taskdir->valuestring, o->taskdir);
  long then_start = meta_long(meta, "start_id"), then_end = meta_long(meta, "end_id");
  if (why == NULL && o->start_id >= 0 && o->start_id != then_start)
    why = range_mismatch("--start-id", then_start, o->start_id);
  if (why == NULL && o->end_id >= 0 && o->end_id != then_end)
    why = range_mismatch("--end-id", then_end, o->end_id);
  if (why)
    goto out;
  o->start_id = then_start;
  o->end_id = then_end;
  missing = resume_opts_missing(rec, n_rec, given, n_given, &n_missing);
  for (size_t i = 0; i < n_missing && rc < 0 && why == NULL; i++) {
    _cleanup_free_ char *name = resume_opt_name(missing[i]);
    const char *eq = strchr(missing[i], '=');
    int which = -1;
    for (size_t k = 0; k < ARRAY_SIZE(own); k++)
      if (strcmp(name, own[k]) == 0)
        which = (int)k;
    /* The server's address of this command's environment, if it has one. */
    const char *env_url = getenv("LLM_BASE_URL");
    if (strcmp(name, "base-url") == 0 && env_url && *env_url)
      continue;
    bool refused_name = strcmp(name, "api-key") == 0;
    for (size_t k = 0; k < ARRAY_SIZE(refused); k++)
      refused_name |= strcmp(name, refused[k]) == 0;
    if (which == O_LIS && !eq) {
      free(o->lis);
      o->lis = xstrdup("true");
    } else if (which >= 0 && own_recorded(which))
      rc = set_own(o, which, eq ? eq + 1 : "");
    else if (which < 0 && !refused_name && settings_option_arg(name) >= 0)
      add_agent(o, missing[i]);
    else
      why = xasprintf("benchmark.json records an option hutch benchmark does not take there: --%s", name);
  }
out:
  if (why && rc < 0)
    rc = resume_refused(o, why);
  strv_free(rec, n_rec);
  strv_free(agent, n_agent);
  strv_free(given, n_given);
  strv_free(missing, n_missing);
  cJSON_Delete(meta);
  return rc;
}

/* What a new run records of its options (benchmark.json's "options"):
 * hutch benchmark's own and hutch run's as given (not --api-key), and the
 * model, the server's address and the temperature as resolved from the
 * environment or a settings file when no option gave them. */
static void make_record(struct bench_opts *o) {
  size_t n_agent = 0;
  char **agent = resume_opts_normal(o->agent_argv, o->n_agent, &n_agent);
  for (size_t i = 0; i < o->n_own_given; i++)
    strv_add(&o->record, &o->n_record, xstrdup(o->own_given[i]));
  bool model = false, url = false, temp = false;
  for (size_t i = 0; i < n_agent; i++) {
    _cleanup_free_ char *name = resume_opt_name(agent[i]);
    model |= strcmp(name, "model") == 0;
    url |= strcmp(name, "base-url") == 0;
    temp |= strcmp(name, "temperature") == 0;
    if (strcmp(name, "api-key") == 0)
      free(agent[i]);
    else
      strv_add(&o->record, &o->n_record, agent[i]);
  }
  free(agent);
  if (!model && o->s.model)
    strv_add(&o->record, &o->n_record, xasprintf("--model=%s", o->s.model));
  if (!url && o->s.base_url_given)
    strv_add(&o->record, &o->n_record, xasprintf("--base-url=%s", o->s.base_url));
  const char *env_temp = getenv("LLM_TEMPERATURE");
  if (!temp && env_temp && *env_temp)
    strv_add(&o->record, &o->n_record, xasprintf("--temperature=%s", env_temp));
}

int bench_parse(int argc, char **argv_in, struct bench_opts *o) {
  memset(o, 0, sizeof(*o));
  o->num_workers = o->start_id = o->end_id = o->max_inflight = -1;
  o->max_response_len = 65536;
  o->task_timeout = 1800;
  o->reward_timeout = 60;
  o->max_api_failures = 3;
  o->mode = xstrdup("llm-in-sandbox");
  /* Fire's short flags as the long options. */
  _cleanup_free_ char **argv = xcalloc((size_t)argc + 1, sizeof(char *));
  _cleanup_free_ char **made = xcalloc((size_t)argc + 1, sizeof(char *));
  size_t n_made = 0;
  for (int i = 0; i < argc; i++) {
    const char *a = argv_in[i];
    argv[i] = argv_in[i];
    if (i == 0 || a[0] != '-' || a[1] == '\0' || a[1] == '-' || (a[2] != '\0' && a[2] != '=') || a[1] == 'h')
      continue;
    for (size_t k = 0; k < ARRAY_SIZE(fire_short); k++) {
      if (fire_short[k].letter != a[1])
        continue;
      if (fire_short[k].name == NULL) {
        for (size_t j = 0; j < n_made; j++)
          free(made[j]);
        return usage_error("The argument '-%c' is ambiguous as it could refer to any of the following arguments: "
                           "%s (LLM-in-Sandbox's Fire refuses it too): give the long option",
                           a[1], fire_short[k].ambiguous);
      }
      argv[i] = made[n_made++] =
          a[2] == '=' ? xasprintf("%s=%s", fire_short[k].name, a + 3) : xstrdup(fire_short[k].name);
    }
  }
  const char *words[16];
  size_t n_words = 0;
  bool model_given = false, image_given = false, steps_given = false, temp_given = false;
  int rc = -1;
  for (int i = 1; i < argc && rc < 0; i++) {
    const char *a = argv[i];
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      bench_usage(stdout);
      rc = 0;
      break;
    }
    if (strncmp(a, "--", 2) != 0 || a[2] == '\0') {
      if (n_words == ARRAY_SIZE(words)) {
        rc = usage_error("unexpected argument '%s'", a);
        break;
      }
      words[n_words++] = a;
      continue;
    }
    _cleanup_free_ char *name = xstrdup(a + 2);
    char *eq = strchr(name, '=');
    if (eq)
      *eq = '\0';
    for (char *p = name; *p; p++)
      if (*p == '_')
        *p = '-';
    /* Yes/no options of hutch benchmark's own. */
    bool *flag = strcmp(name, "retry-errors") == 0 ? &o->retry_errors
                 : strcmp(name, "quiet") == 0      ? &o->quiet
                 : strcmp(name, "json") == 0       ? &o->json
                                                   : NULL;
    if (flag) {
      if (eq) {
        rc = usage_error("--%s takes no value", name);
        break;
      }
      *flag = true;
      continue;
    }
    int which = -1;
    for (size_t k = 0; k < ARRAY_SIZE(own); k++)
      if (strcmp(name, own[k]) == 0)
        which = (int)k;
    if (which == O_LIS && !eq) {
      /* --lis alone: the installed package; --lis=DIR: that one. */
      free(o->lis), o->lis = xstrdup("true");
      strv_add(&o->own_given, &o->n_own_given, xstrdup("--lis"));
      continue;
    }
    if (which >= 0) {
      const char *v = eq ? strchr(a, '=') + 1 : i + 1 < argc ? argv[++i] : NULL;
      if (v == NULL) {
        rc = usage_error("%s wants a value", a);
        break;
      }
      rc = set_own(o, which, v);
      if (own_recorded(which))
        strv_add(&o->own_given, &o->n_own_given, xasprintf("--%s=%s", own[which], v));
      continue;
    }
    for (size_t k = 0; k < ARRAY_SIZE(refused) && rc < 0; k++)
      if (strcmp(name, refused[k]) == 0)
        rc = usage_error("--%s is set by hutch benchmark for each task%s", name,
                         strcmp(name, "run-timeout") == 0 ? ": give --task-timeout" : "");
    if (rc >= 0)
      break;
    int kind = settings_option_arg(name);
    if (kind < 0 && strncmp(name, "no", 2) == 0 && settings_option_arg(name + 2) >= 0) {
      /* Python Fire's --noX: X set to False, which hutch takes for a
       * yes/no option only. */
      if (settings_option_arg(name + 2) != 2 || eq) {
        rc = usage_error("'%s': Python Fire sets %s to False with it, which hutch takes only for a yes/no option "
                         "(such as --nosave_litellm_response): leave it out",
                         a, name + 2);
        break;
      }
      _cleanup_free_ char *off = xasprintf("--%s=false", name + 2);
      add_agent(o, off);
      continue;
    }
    if (kind < 0) {
      rc = usage_error("unknown option '%s'", a);
      break;
    }
    const char *canon = settings_canonical(name);
    if (canon) {
      model_given |= strcmp(canon, "model") == 0;
      image_given |= strcmp(canon, "docker-image") == 0 || strcmp(canon, "rootfs") == 0;
      steps_given |= strcmp(canon, "max-steps") == 0;
      temp_given |= strcmp(canon, "temperature") == 0;
    }
    add_agent(o, a);
    if (kind == 1 && !eq) {
      if (i + 1 >= argc) {
        rc = usage_error("%s wants a value", a);
        break;
      }
      add_agent(o, argv[++i]);
    }
  }
  for (size_t j = 0; j < n_made; j++)
    free(made[j]);
  if (rc >= 0)
    return rc;
  /* The words: TASKDIR first when it is one, then LLM-in-Sandbox's TASK,
   * MODEL, ... for those not given as options. */
  size_t w = 0;
  if (w < n_words && taskdir_like(words[w]))
    o->taskdir = xstrdup(words[w++]);
  else if (w < n_words && strchr(words[w], '/'))
    return taskdir_mistake(words[w]);
  const bool given[] = {o->task != NULL, model_given, image_given, steps_given, temp_given};
  for (size_t k = 0; k < ARRAY_SIZE(fire_bench) && w < n_words; k++) {
    if (given[k])
      continue;
    if (k == 0) {
      o->task = xstrdup(words[w++]);
      continue;
    }
    _cleanup_free_ char *opt = xasprintf("--%s=%s", fire_bench[k], words[w++]);
    add_agent(o, opt);
  }
  if (w < n_words)
    return usage_error("unexpected argument '%s': give it as an option (TASKDIR comes first, then the task, the model, "
                       "the image, max_steps and temperature as LLM-in-Sandbox's benchmark takes them)",
                       words[w]);
  if (o->resume) {
    int r = resume_merge(o);
    if (r >= 0)
      return r;
  }
  /* No TASKDIR: LLM-in-Sandbox's own task folders, in its package. */
  if (o->taskdir == NULL && o->resume == NULL && o->task != NULL) {
    hutch_error_t err = NULL;
    _cleanup_free_ char *pkg = lis_package_find(o->lis && strcmp(o->lis, "true") != 0 ? o->lis : NULL, &err);
    if (pkg == NULL) {
      _cleanup_free_ char *why = hutch_error_format(err);
      hutch_error_free(&err);
      return usage_error("TASKDIR is required, the folder that holds the task folders; without it LLM-in-Sandbox's "
                         "own are taken from its package, but %s: pip install llm-in-sandbox",
                         why);
    }
    o->taskdir = xasprintf("%s/benchmark", pkg);
  }
  /* --lis: the tasks get the package's tool schemas (the task set's
   * prompts stay theirs): read once, written into the run directory. */
  if (o->lis) {
    hutch_error_t err = NULL;
    _cleanup_free_ char *pkg = lis_package_find(o->lis, &err);
    if (pkg)
      o->lis_tools = lis_package_tools(pkg, &err);
    if (o->lis_tools == NULL) {
      hutch_error_print(stderr, "hutch benchmark: --lis", err);
      hutch_error_free(&err);
      return 2;
    }
  }
  if (o->taskdir == NULL && o->resume == NULL)
    return usage_error("%s", "TASKDIR is required: the folder that holds the task folders");
  if (o->task == NULL && o->resume == NULL)
    return usage_error("%s", "--task NAME is required");
  if (o->retry_errors && o->resume == NULL)
    return usage_error("%s", "--retry-errors goes with --resume DIR: the run whose tasks ended in errors");
  if (strcmp(o->mode, "llm-in-sandbox") != 0 && strcmp(o->mode, "llm") != 0)
    return usage_error("--mode wants llm-in-sandbox or llm, got '%s'", o->mode);
  if (o->num_workers < 0) {
    const char *env = getenv("LLM_NUM_WORKERS");
    if (env && *env && !(parse_long(env, &o->num_workers) && o->num_workers > 0))
      return usage_error("LLM_NUM_WORKERS wants a positive integer, got '%s'", env);
    if (o->num_workers < 0)
      o->num_workers = 1;
  }
  if (o->max_inflight < 0)
    o->max_inflight = o->num_workers;
  if (o->output_dir == NULL)
    o->output_dir = xstrdup("./output");
  _cleanup_free_ char *why = NULL;
  if (bench_shard(o->shard, o->shards, getenv("SLURM_ARRAY_TASK_ID"), getenv("SLURM_ARRAY_TASK_MIN"),
                  getenv("SLURM_ARRAY_TASK_COUNT"), getenv("JOB_COMPLETION_INDEX"), &o->shard_k, &o->shard_n, &why) < 0)
    return usage_error("%s", why);
  /* hutch run's own check of its options, once, before any task starts. */
  char **av = xcalloc(o->n_agent + 3, sizeof(char *));
  av[0] = "run";
  for (size_t i = 0; i < o->n_agent; i++)
    av[i + 1] = o->agent_argv[i];
  av[o->n_agent + 1] = "--query=x";
  int r = settings_parse((int)o->n_agent + 2, av, &o->s);
  free(av);
  if (r >= 0)
    return r == 0 ? 2 : r;
  make_record(o);
  /* Scores are computed in the tasks' image unless told otherwise. */
  if (o->reward_rootfs == NULL && o->s.rootfs)
    o->reward_rootfs = xstrdup(o->s.rootfs);
  if (o->reward_rootfs == NULL && o->s.docker_image)
    o->reward_rootfs = lis_store_name(o->s.docker_image);
  return -1;
}

void bench_opts_free(struct bench_opts *o) {
  free(o->lis);
  free(o->lis_tools);
  free(o->lis_tools_path);
  free(o->taskdir);
  free(o->task);
  free(o->mode);
  free(o->output_dir);
  free(o->resume);
  free(o->reward_rootfs);
  free(o->reward_memory);
  free(o->shard);
  strv_free(o->own_given, o->n_own_given);
  strv_free(o->record, o->n_record);
  for (size_t i = 0; i < o->n_agent; i++)
    free(o->agent_argv[i]);
  free(o->agent_argv);
  settings_free(&o->s);
}
