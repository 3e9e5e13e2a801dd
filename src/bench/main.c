/* SPDX-License-Identifier: Apache-2.0 */
/* hutch-benchmark: the program behind `hutch benchmark` (execv()ed by hutch,
 * like hutch-agent: libyaml never loads into hutch).  The runner forks one
 * worker per task in flight; each worker runs hutch run and hutch exec. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "bench_options.h"
#include "error.h"
#include "lis_compat.h"
#include "llm_client.h"
#include "llm_gate.h"
#include "resume_opts.h"
#include "util.h"

volatile sig_atomic_t bench_stop;

static void on_signal(int sig) {
  bench_stop = sig;
}

struct slot {
  pid_t pid;
  const cJSON *row;
  /* The slot's scoring sandbox: python3 and reward.py's imports once per
   * slot, not once per task (reward.c); gen numbers its starts. */
  struct bench_py scorer;
  unsigned gen;
};

/* The slot's scoring sandbox, started (again) where it is not running: it
 * starts beside the slot's agent, off the task's path.  One that cannot
 * start leaves the slot's tasks to start their own, which report why. */
static void slot_scorer(const struct bench_opts *o, const struct bench_set *set, const char *out, struct slot *s,
                        long k) {
  if (s->scorer.running)
    return;
  /* A name no earlier run on this directory (--resume) took. */
  _cleanup_free_ char *dir = NULL;
  for (;;) {
    free(dir);
    dir = xasprintf("%s/runs/.reward-%ld-%u", out, k, s->gen++);
    _cleanup_free_ char *audit = xasprintf("%s.audit.jsonl", dir);
    if (access(audit, F_OK) != 0)
      break;
  }
  _cleanup_free_ char *why = NULL;
  bench_py_start_shared(&s->scorer, o, set, dir, &why);
}

/* Scoring sandboxes a worker stopped, on their way out: reaped by the
 * runner's wait4 loop, or at the run's end. */
static struct bench_child *retired;
static size_t n_retired;

/* A slot's scoring sandbox its worker stopped (SIGTERM sent): the slot
 * starts a new one for its next task at once, and this one is reaped when
 * it ends, so that the runner never waits on it between tasks. */
static void slot_scorer_retire(struct slot *s) {
  if (!s->scorer.running)
    return; /* ended and reaped already */
  kill(s->scorer.c.pid, SIGTERM);
  retired = xrealloc(retired, (n_retired + 1) * sizeof(*retired));
  retired[n_retired++] = s->scorer.c;
  s->scorer.running = false;
  bench_py_end(&s->scorer); /* its pipes closed, not waited for */
}

static bool retired_reaped(pid_t pid) {
  for (size_t i = 0; i < n_retired; i++)
    if (retired[i].pid == pid) {
      retired[i] = retired[--n_retired];
      return true;
    }
  return false;
}

/* The runner's end of a slot's scoring sandbox: its input closed (the
 * driver exits), and the sandbox waited for; `now`: stopped at once. */
static void slot_scorer_end(struct slot *s, bool now) {
  if (s->scorer.running && now)
    kill(s->scorer.c.pid, SIGTERM);
  s->scorer.shared = false; /* this process is its parent: bench_py_end waits */
  bench_py_end(&s->scorer);
}

/* Every slot's: all told first (their inputs closed), then waited for, so
 * that they end side by side. */
static void slot_scorers_end(struct slot *slots, long n, bool now) {
  for (long k = 0; k < n; k++)
    if (slots[k].scorer.in >= 0) {
      close(slots[k].scorer.in);
      slots[k].scorer.in = -1;
    }
  for (long k = 0; k < n; k++)
    slot_scorer_end(&slots[k], now);
}

/* LLM-in-Sandbox's llm_name: openai/ prefixed unless it names a route. */
static char *lis_llm_name(const char *model) {
  static const char *const routes[] = {"openai/", "anthropic/", "azure/", "hosted_vllm/"};
  for (size_t i = 0; i < ARRAY_SIZE(routes); i++)
    if (strncmp(model, routes[i], strlen(routes[i])) == 0)
      return xstrdup(model);
  return xasprintf("openai/%s", model);
}

static cJSON *make_config(const struct bench_opts *o) {
  const struct settings *s = &o->s;
  cJSON *c = cJSON_CreateObject();
  cJSON_AddStringToObject(c, "mode", o->mode);
  /* The image the tasks run in, as given; hutch's own when none is. */
  const char *image = s->docker_image ? s->docker_image : s->rootfs ? s->rootfs : "default";
  cJSON_AddStringToObject(c, "docker_image", image);
  _cleanup_free_ char *name = lis_llm_name(s->model);
  cJSON_AddStringToObject(c, "llm_name", name);
  /* As LLM-in-Sandbox records it: the URL given, null for its default. */
  cJSON_AddItemToObject(c, "llm_base_url", s->base_url_given ? cJSON_CreateString(s->base_url) : cJSON_CreateNull());
  cJSON_AddNumberToObject(c, "max_steps", (double)s->max_steps);
  cJSON_AddNumberToObject(c, "temperature", s->temperature);
  cJSON_AddNumberToObject(c, "max_token_limit", (double)s->max_token_limit);
  cJSON_AddNumberToObject(c, "max_tokens_per_call", (double)s->max_tokens_per_call);
  cJSON_AddNumberToObject(c, "max_response_len", (double)o->max_response_len);
  cJSON *eb = s->extra_body ? lis_parse_extra_body(s->extra_body) : NULL;
  lis_fix_string_bools(eb);
  cJSON_AddItemToObject(c, "extra_body", eb ? eb : cJSON_CreateNull());
  cJSON_AddBoolToObject(c, "save_litellm_response", s->save_litellm_response);
  return c;
}

static int fail(hutch_error_t *err) {
  bench_term_clear();
  hutch_error_print(stderr, "hutch benchmark", *err);
  hutch_error_free(err);
  return 125;
}

/* compute_score("test", "test") once, as LLM-in-Sandbox does: a reward.py
 * that cannot import, or a reward image without python3, stops the run
 * before any task. */
static int check_reward(const struct bench_opts *o, const struct bench_set *set, const char *out) {
  cJSON *row = cJSON_CreateObject();
  cJSON_AddStringToObject(row, "ground_truth", "test");
  _cleanup_free_ char *dir = xasprintf("%s/runs/.reward-check", out);
  _cleanup_free_ char *why = NULL, *kind = NULL;
  double score;
  mkdir_p(dir, 0755);
  int r = bench_score(o, set, dir, "test", row, &score, &why, &kind, NULL);
  cJSON_Delete(row);
  if (r == 0 || (kind && strcmp(kind, "ImportError") != 0 && strcmp(kind, "ModuleNotFoundError") != 0))
    return 0;
  /* It may end with what the scoring sandbox wrote on its stderr. */
  _cleanup_free_ char *shown = text_escape_cstr(why);
  fprintf(stderr, "hutch benchmark: %s: %s\n", set->name, shown);
  if (kind)
    fprintf(stderr, "hint: the scoring sandbox lacks a Python package reward.py imports: install it in the image "
                    "given with --reward-rootfs (see the task's README)\n");
  return bench_stop ? 130 : 125;
}

/* The agent spawner ended before the runner closed its socket (killed, or
 * out of memory): no task can start, and a task whose agent it took had no
 * end of its own.  The run stops; --resume runs the tasks not recorded. */
static void spawner_lost(int status, bool *told) {
  if (*told)
    return;
  *told = true;
  /* status -1: a worker found it gone, or stopping its agents. */
  _cleanup_free_ char *how = status < 0            ? xstrdup("the tasks' agents stopped with it")
                             : WIFSIGNALED(status) ? xasprintf("killed by signal %d", WTERMSIG(status))
                                                   : xasprintf("status %d", WEXITSTATUS(status));
  bench_term_clear();
  fprintf(stderr, "hutch benchmark: the agent spawner ended (%s): the run stops\nhint: go on with --resume\n", how);
}

/* The task's CPU time (timings.cpu, s): its agent's, which the worker got
 * from the spawner, its scoring's in the slot's scoring sandbox
 * (reward_cpu, as the driver counted it), and its worker's (the task's
 * files; a scoring sandbox of the task's own, with its python3), reaped
 * here.  The start of a slot's scoring sandbox is no task's. */
static void add_cpu(cJSON *line, const struct rusage *ru) {
  cJSON *tm = cJSON_GetObjectItemCaseSensitive(line, "timings");
  const cJSON *agent = cJSON_GetObjectItemCaseSensitive(tm, "agent_cpu");
  const cJSON *reward = cJSON_GetObjectItemCaseSensitive(tm, "reward_cpu");
  double scoring = cJSON_IsNumber(reward) ? reward->valuedouble : 0;
  if (cJSON_IsObject(tm) && cJSON_IsNumber(agent))
    cJSON_AddNumberToObject(tm, "cpu", agent->valuedouble + scoring + (double)bench_rusage_us(ru) / 1e6);
}

static void set_key(cJSON *o, const char *key, cJSON *v) {
  if (cJSON_GetObjectItemCaseSensitive(o, key))
    cJSON_ReplaceItemInObjectCaseSensitive(o, key, v);
  else
    cJSON_AddItemToObject(o, key, v);
}

/* benchmark.json with its score_range (the task set's, which a merge
 * checks the shards' scores against) and its status (what the run has
 * measured, which a merge requires complete). */
static int record_meta(const char *out, cJSON *meta, const struct bench_range *r, const struct bench_status *st,
                       hutch_error_t *err) {
  cJSON *range = cJSON_CreateArray();
  cJSON_AddItemToArray(range, cJSON_CreateNumber(r->min));
  cJSON_AddItemToArray(range, cJSON_CreateNumber(r->max));
  set_key(meta, "score_range", range);
  set_key(meta, "status", bench_status_json(st));
  _cleanup_free_ char *text = cJSON_Print(meta);
  _cleanup_free_ char *path = xasprintf("%s/benchmark.json", out);
  if (write_file_atomic(path, text, strlen(text), 0644) < 0)
    return hutch_error_sys(err, "write %s", path);
  return 0;
}

/* The run directory: a new one, or --resume's, whose benchmark.json names
 * the task set (and so replaces TASKDIR and --task). */
static char *open_run(struct bench_opts *o, cJSON **meta, hutch_error_t *err) {
  if (o->resume) {
    _cleanup_free_ char *path = xasprintf("%s/benchmark.json", o->resume);
    size_t len = 0;
    _cleanup_free_ char *text = read_regular_file_at(AT_FDCWD, path, 1 << 20, &len);
    int e = errno;
    *meta = text ? cJSON_ParseWithLength(text, len) : NULL;
    struct bench_meta m;
    _cleanup_free_ char *why = NULL;
    if (text == NULL) {
      hutch_error_set(err, e, "--resume %s: no benchmark.json of hutch benchmark", o->resume);
      return NULL;
    }
    if (*meta == NULL || bench_meta_check(*meta, &m, &why) < 0) {
      hutch_error_set(err, EINVAL, "--resume %s: %s", path, why ? why : "is not JSON");
      return NULL;
    }
    if ((o->task && strcmp(o->task, m.task) != 0)) {
      hutch_error_set(err, EINVAL, "--resume %s ran task '%s', not '%s'", o->resume, m.task, o->task);
      return NULL;
    }
    o->shard_k = m.shard_k;
    o->shard_n = m.shard_n;
    free(o->taskdir), o->taskdir = xstrdup(m.taskdir);
    free(o->task), o->task = xstrdup(m.task);
    /* The finished tasks' results hold only if the rest run the same way;
     * the server's address may change between the two. */
    cJSON *now = make_config(o);
    cJSON *then = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(*meta, "config"), true);
    cJSON_DeleteItemFromObjectCaseSensitive(now, "llm_base_url");
    cJSON_DeleteItemFromObjectCaseSensitive(then, "llm_base_url");
    _cleanup_free_ char *diff = resume_config_diff(then, now);
    cJSON_Delete(now);
    cJSON_Delete(then);
    if (diff) {
      hutch_error_set(err, 0, "--resume %s ran with other settings: %s", o->resume, diff);
      hutch_error_hint(err, "give the options of the first run again, or none: --resume DIR alone takes those its "
                            "benchmark.json recorded");
      return NULL;
    }
    return realpath(o->resume, NULL);
  }
  _cleanup_free_ char *llm = lis_llm_name(o->s.model);
  _cleanup_free_ char *shard = o->shard_n > 1
                                   ? xasprintf("%s_shard%ldof%ld", bench_mode_suffix(o->mode), o->shard_k, o->shard_n)
                                   : xstrdup(bench_mode_suffix(o->mode));
  char *abs = bench_make_run_dir(o->output_dir, o->task, llm, shard, err);
  if (abs == NULL)
    return NULL;
  _cleanup_free_ char *td = realpath(o->taskdir, NULL);
  *meta = cJSON_CreateObject();
  cJSON_AddStringToObject(*meta, "taskdir", td ? td : o->taskdir);
  cJSON_AddStringToObject(*meta, "task", o->task);
  cJSON_AddItemToObject(*meta, "config", make_config(o));
  /* What --resume DIR alone goes on with (resume_opts.h). */
  cJSON *opts = cJSON_AddArrayToObject(*meta, "options");
  for (size_t i = 0; i < o->n_record; i++)
    cJSON_AddItemToArray(opts, cJSON_CreateString(o->record[i]));
  cJSON *sh = cJSON_AddArrayToObject(*meta, "shard");
  cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)o->shard_k));
  cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)o->shard_n));
  cJSON_AddNumberToObject(*meta, "start_id", (double)o->start_id);
  cJSON_AddNumberToObject(*meta, "end_id", (double)o->end_id);
  /* As the command line wrote them: results.json types them as
   * LLM-in-Sandbox does (an int temperature, extra_body's numbers). */
  if (o->s.temperature_text)
    cJSON_AddStringToObject(*meta, "temperature_text", o->s.temperature_text);
  if (o->s.extra_body)
    cJSON_AddStringToObject(*meta, "extra_body_text", o->s.extra_body);
  _cleanup_free_ char *text = cJSON_Print(*meta);
  _cleanup_free_ char *path = xasprintf("%s/benchmark.json", abs);
  if (write_file_atomic(path, text, strlen(text), 0644) < 0) {
    hutch_error_sys(err, "write %s", path);
    free(abs);
    return NULL;
  }
  return abs;
}

static pid_t start_worker(const struct bench_opts *o, const struct bench_set *set, struct slot *slots, long k,
                          const char *out) {
  pid_t parent = getpid();
  fflush(NULL);
  pid_t pid = fork();
  if (pid != 0)
    return pid;
  /* Its own slot's scoring sandbox, and none of the others'. */
  for (long j = 0; j < o->num_workers; j++)
    if (j != k) {
      slots[j].scorer.shared = true; /* not this process's child: closed, not waited for */
      slots[j].scorer.running = false;
      bench_py_end(&slots[j].scorer);
    }
  bench_scorer = &slots[k].scorer;
  bool scorer = bench_scorer->running;
  const cJSON *row = slots[k].row;
  /* The runner's death (even SIGKILL) stops the worker, which stops its
   * hutch run; that run's own die-with-parent covers the worker's. */
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent)
    _exit(130);
  int rc = bench_run_task(o, set, row, out);
  _exit(rc == 0 && scorer && !bench_scorer->running ? BENCH_EXIT_SCORER_STOPPED : rc);
}

/* The model's API answers (bench_preflight), else the run ends before
 * any task: 3, or 130 when interrupted while it waited. */
static int preflight(const struct bench_opts *o) {
  hutch_error_t err = NULL;
  if (bench_preflight(o, &err) == 0)
    return 0;
  if (bench_stop) {
    hutch_error_free(&err);
    return 130;
  }
  hutch_error_print(stderr, "hutch benchmark", err);
  hutch_error_free(&err);
  return 3;
}

/* Why a run stops after tasks in a row that its model's API (api of them)
 * or hutch (infra) failed. */
static char *failures_in_a_row(long api, long infra) {
  return xasprintf("%ld tasks in a row ended on a failure of %s", api + infra,
                   infra == 0 ? "the model's API"
                   : api == 0 ? "hutch"
                              : "the model's API or of hutch");
}

static int run_tasks(struct bench_opts *o) {
  hutch_error_t err = NULL;
  cJSON *meta = NULL;
  /* A new run's directory is made once the task set is read and the
   * model's API answers: a run that cannot start writes nothing. */
  _cleanup_free_ char *out = o->resume ? open_run(o, &meta, &err) : NULL;
  if (o->resume && out == NULL) {
    cJSON_Delete(meta);
    return fail(&err);
  }
  struct bench_set set;
  int loaded = bench_set_load(o->taskdir, o->task, &set, &err);
  if (loaded < 0) {
    cJSON_Delete(meta);
    bench_set_free(&set);
    if (loaded != BENCH_SET_MISSING)
      return fail(&err);
    /* A task that is not there is the command line's mistake: which are. */
    fail(&err);
    _cleanup_free_ char *tasks = bench_task_list(o->taskdir);
    fprintf(stderr, "hutch benchmark: %s\n", tasks);
    return 2;
  }
  int pre = preflight(o);
  if (pre == 0 && out == NULL && (out = open_run(o, &meta, &err)) == NULL)
    pre = fail(&err);
  if (pre != 0) {
    cJSON_Delete(meta);
    bench_set_free(&set);
    return pre;
  }
  _cleanup_free_ char *logs = xasprintf("%s/logs", out);
  _cleanup_free_ char *jsonl = xasprintf("%s/results.jsonl", out);
  mkdir_p(logs, 0755);
  /* One request policy for every worker's LLM client (each a hutch run of
   * its own, and vanilla mode's threads): --max-inflight slots and a shared
   * backoff on 429, in files whose locks die with their holders. */
  _cleanup_free_ char *gate = xasprintf("%s/.llm-gate", out);
  if (llm_gate_create(gate, o->max_inflight, &err) < 0) {
    cJSON_Delete(meta);
    bench_set_free(&set);
    return fail(&err);
  }
  setenv("HUTCH_LLM_GATE", gate, 1);
  size_t n_rows = (size_t)cJSON_GetArraySize(set.rows);
  size_t first = o->start_id >= 0 ? (size_t)o->start_id : 0;
  /* LLM-in-Sandbox's `end_id or len(problems)`: 0 is the end too. */
  size_t end = o->end_id > 0 && (size_t)o->end_id < n_rows ? (size_t)o->end_id : n_rows;
  const cJSON **todo = xcalloc(n_rows + 1, sizeof(*todo));
  size_t n_todo = 0, total = 0;
  /* This run's tasks (its range, its shard), then those not finished. */
  {
    const cJSON *r;
    size_t at = 0;
    cJSON_ArrayForEach(r, set.rows) {
      if (at >= first && at < end && (long)((at - first) % (size_t)o->shard_n) == o->shard_k)
        todo[total++] = r;
      at++;
    }
  }
  cJSON *lines = NULL;
  _cleanup_free_ bool *finished = xcalloc(total + 1, sizeof(bool));
  /* Until it ends, the run is not complete, whatever stops it. */
  struct bench_status status = {.stopped = "it has not ended (it is running, or was killed)", .tasks = (long)total};
  int r0 = bench_resume_lines(out, &set, cJSON_GetObjectItemCaseSensitive(meta, "merged_from"), todo, total,
                              o->retry_errors, finished, &lines, &err);
  if (r0 == 0) {
    bench_status_count(&status, lines, (long)total);
    status.complete = false;
    r0 = record_meta(out, meta, &set.range, &status, &err);
  }
  if (r0 < 0) {
    cJSON_Delete(lines);
    cJSON_Delete(meta);
    bench_set_free(&set);
    free(todo);
    return fail(&err);
  }
  for (size_t at = 0; at < total; at++)
    if (!finished[at])
      todo[n_todo++] = todo[at];
  {
    _cleanup_free_ char *shard = o->shard_n > 1 ? xasprintf(" of shard %ld/%ld", o->shard_k, o->shard_n) : xstrdup("");
    _cleanup_free_ char *name = text_escape_cstr(set.name);
    _cleanup_free_ char *model = text_escape_cstr(o->s.model);
    _cleanup_free_ char *where = text_escape_cstr(out);
    bench_term_say("hutch benchmark: %s: %zu tasks (%zu to run)%s, %ld workers, model %s; output %s", name, total,
                   n_todo, shard, o->num_workers, model, where);
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddStringToObject(ev, "event", "start");
    cJSON_AddNumberToObject(ev, "schema", BENCH_JSON_SCHEMA);
    cJSON_AddStringToObject(ev, "task_set", set.name);
    cJSON_AddNumberToObject(ev, "tasks", (double)total);
    cJSON_AddNumberToObject(ev, "to_run", (double)n_todo);
    cJSON_AddNumberToObject(ev, "shard", (double)o->shard_k);
    cJSON_AddNumberToObject(ev, "shards", (double)o->shard_n);
    cJSON_AddNumberToObject(ev, "workers", (double)o->num_workers);
    cJSON_AddStringToObject(ev, "model", o->s.model);
    cJSON_AddStringToObject(ev, "output", out);
    bench_term_event(ev);
  }
  int rc = 0;
  double start = monotonic_seconds();
  /* One scoring driver and one prompt config for all the run's tasks:
   * three files fewer per task (on ext4 each new file costs about 0.3 ms). */
  if (n_todo > 0 && set.has_reward)
    o->driver_dir = bench_py_driver_dir(out);
  if (n_todo > 0) {
    _cleanup_free_ char *runs_dir = xasprintf("%s/runs", out);
    o->prompt_path = xasprintf("%s/.prompt.yaml", runs_dir);
    if (mkdir_p(runs_dir, 0755) < 0 || bench_write_prompt(&set, o->prompt_path) < 0) {
      free(o->prompt_path);
      o->prompt_path = NULL;
    }
  }
  _cleanup_free_ char *stopped = NULL;
  if (n_todo > 0 && o->lis_tools) {
    /* --lis: the package's tool schemas, read once, for every task. */
    o->lis_tools_path = xasprintf("%s/runs/.lis-tools.json", out);
    if (write_file_atomic(o->lis_tools_path, o->lis_tools, strlen(o->lis_tools), 0644) < 0) {
      hutch_error_sys(&err, "write %s", o->lis_tools_path);
      rc = fail(&err);
      stopped = xstrdup("the --lis tool schemas could not be written");
    }
  }
  if (rc == 0 && n_todo > 0 && set.has_reward && (rc = check_reward(o, &set, out)) != 0)
    stopped = xstrdup(rc == 130 ? "interrupted" : "the task set's reward.py cannot be used");
  struct slot *slots = xcalloc((size_t)o->num_workers, sizeof(*slots));
  for (long k = 0; k < o->num_workers; k++)
    slots[k].scorer.in = slots[k].scorer.out = slots[k].scorer.err = -1;
  bool scoring = set.has_reward && rc == 0;
  size_t next = 0, running = 0;
  struct bench_totals tot = {0};
  bool redraw = true; /* the live line, once the tasks start */
  bool fatal = false, told = false, lost = false;
  /* Tasks in a row that ended on a failure of the model's API, of hutch. */
  long api_row = 0, infra_row = 0;
  const cJSON *l;
  cJSON_ArrayForEach(l, lines) bench_totals_add(&tot, l);
  while (rc == 0 || running > 0) {
    while (rc == 0 && !bench_stop && !fatal && next < n_todo && running < (size_t)o->num_workers) {
      size_t k = 0;
      while (slots[k].pid)
        k++;
      slots[k].row = todo[next++];
      if (scoring)
        slot_scorer(o, &set, out, &slots[k], (long)k);
      slots[k].pid = start_worker(o, &set, slots, (long)k, out);
      if (slots[k].pid < 0) {
        hutch_error_sys(&err, "fork");
        rc = fail(&err);
        slots[k].pid = 0;
        break;
      }
      running++;
    }
    if (running == 0)
      break;
    /* After the tasks that ended were replaced: the count running is
     * right. */
    if (redraw)
      bench_term_live(&tot, total, running, monotonic_seconds() - start);
    redraw = false;
    if ((bench_stop || fatal) && !told) {
      /* Ctrl-C reaches every process of the terminal; SIGTERM only us. */
      for (long k = 0; k < o->num_workers; k++)
        if (slots[k].pid > 0)
          kill(slots[k].pid, SIGTERM);
      told = true;
    }
    int st;
    struct rusage ru;
    bench_term_arm();
    pid_t pid = wait4(-1, &st, 0, &ru);
    int e = errno;
    bench_term_disarm();
    if (pid < 0) {
      if (e != EINTR)
        break;
      bench_term_live(&tot, total, running, monotonic_seconds() - start);
      continue;
    }
    if (bench_spawner_is(pid)) {
      spawner_lost(st, &lost);
      fatal = true;
      if (rc == 0)
        rc = 125;
      continue;
    }
    long k = 0;
    while (k < o->num_workers && slots[k].pid != pid)
      k++;
    if (k == o->num_workers) {
      /* A scoring sandbox its worker stopped (retired), or a slot's that
       * ended on its own: the slot's next task starts a new one. */
      if (retired_reaped(pid))
        continue;
      for (long j = 0; j < o->num_workers; j++)
        if (slots[j].scorer.running && slots[j].scorer.c.pid == pid) {
          slots[j].scorer.running = false;
          bench_py_end(&slots[j].scorer);
        }
      continue;
    }
    /* The worker found the spawner gone before the runner did. */
    if (WIFEXITED(st) && WEXITSTATUS(st) == BENCH_EXIT_NO_SPAWNER) {
      spawner_lost(-1, &lost);
      fatal = true;
      if (rc == 0)
        rc = 125;
    }
    /* A worker that stopped using its slot's scoring sandbox, or that
     * ended other than cleanly (perhaps in the middle of a request): the
     * slot's next task gets a new one. */
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
      slot_scorer_retire(&slots[k]);
    const cJSON *row = slots[k].row;
    slots[k].pid = 0;
    running--;
    const char *id = cJSON_GetObjectItemCaseSensitive(row, "id")->valuestring;
    _cleanup_free_ char *safe = bench_safe_name(id);
    _cleanup_free_ char *rpath = xasprintf("%s/runs/%s/result.json", out, safe);
    size_t len = 0;
    _cleanup_free_ char *text = read_file_at(AT_FDCWD, rpath, 64 << 20, &len);
    cJSON *line = text ? cJSON_ParseWithLength(text, len) : NULL;
    if (line == NULL) {
      if (bench_stop || fatal)
        continue; /* stopped: not finished, --resume runs it */
      line = cJSON_CreateObject();
      cJSON_AddStringToObject(line, "id", id);
      cJSON_AddNumberToObject(line, "score", 0);
      _cleanup_free_ char *why = xasprintf("the worker of this task ended with status %d", st);
      cJSON_AddStringToObject(line, "error", why);
      cJSON_AddStringToObject(line, "end", bench_end_names[BENCH_END_INFRA]);
      cJSON_AddStringToObject(line, "agent_answer", "");
      cJSON_AddItemToObject(line, "ground_truth",
                            cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(row, "ground_truth"), true));
      cJSON_AddItemToObject(line, "problem_statement",
                            cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(row, "problem_statement"), true));
      cJSON_AddNumberToObject(line, "elapsed_seconds", 0);
    }
    add_cpu(line, &ru);
    /* Its record, however it ended: an unfinished task's says why, and
     * --resume runs it again. */
    bool auth = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(line, "fatal"));
    cJSON_DeleteItemFromObjectCaseSensitive(line, "fatal");
    if (bench_append_line(jsonl, line, &err) < 0) {
      cJSON_Delete(line);
      rc = fail(&err);
      continue;
    }
    bench_totals_add(&tot, line);
    int ended = bench_line_end(line);
    if (bench_end_measured(ended)) {
      api_row = infra_row = 0;
    } else {
      api_row += ended == BENCH_END_API;
      infra_row += ended != BENCH_END_API;
    }
    bench_term_task(tot.done, total, line);
    redraw = true;
    cJSON_AddItemToArray(lines, line);
    if (stopped || rc != 0)
      continue;
    if (auth) {
      /* As LLM-in-Sandbox: an authentication error ends the run. */
      _cleanup_free_ char *shown = text_escape_cstr(id);
      _cleanup_free_ char *why = text_escape_cstr(cJSON_GetObjectItemCaseSensitive(line, "error")->valuestring);
      bench_term_clear();
      fprintf(stderr, "hutch benchmark: %s: %s\nhint: check the API key (--api-key, $LLM_API_KEY)\n", shown, why);
      stopped = xstrdup("the model's API refused the key");
    } else if (o->max_api_failures > 0 && api_row + infra_row >= o->max_api_failures) {
      stopped = failures_in_a_row(api_row, infra_row);
      _cleanup_free_ char *why = text_escape_cstr(cJSON_GetObjectItemCaseSensitive(line, "error")->valuestring);
      bench_term_clear();
      fprintf(stderr, "hutch benchmark: the run stops: %s (--max-api-failures %ld); the last: %s\n", stopped,
              o->max_api_failures, why);
    }
    if (stopped) {
      fatal = true;
      rc = infra_row > 0 && api_row == 0 && !auth ? 125 : 3;
    }
  }
  bench_term_clear();
  slot_scorers_end(slots, o->num_workers, bench_stop || fatal || rc != 0);
  /* hutch exec removes a sandbox on SIGTERM (init continues a stopped
   * command); one that does not end is killed after the grace. */
  for (size_t i = 0; i < n_retired; i++)
    bench_wait(&retired[i], 30, 10, -1, NULL, 0);
  free(retired);
  retired = NULL;
  n_retired = 0;
  if (rc == 0 && bench_stop)
    rc = 130;
  /* What the run measured, and why it stopped if it did. */
  status.stopped = stopped     ? stopped
                   : lost      ? "the agent spawner ended"
                   : rc == 130 ? "interrupted"
                   : rc != 0   ? "hutch failed"
                               : NULL;
  bench_status_count(&status, lines, (long)total);
  /* Unfinished tasks without a stop: the run went on past them. */
  if (!status.complete && rc == 0)
    rc = status.ends[BENCH_END_API] > 0 ? 3 : 125;
  o->status = &status;
  double elapsed = monotonic_seconds() - start;
  if (bench_write_outputs(out, o, meta, lines, elapsed, &err) < 0 ||
      record_meta(out, meta, &set.range, &status, &err) < 0)
    rc = fail(&err);
  _cleanup_free_ char *name = text_escape_cstr(set.name);
  _cleanup_free_ char *where = text_escape_cstr(out);
  if (status.complete) {
    bench_term_say("hutch benchmark: %s: mean score %.4f over %zu tasks, %d errors, %.1f s%s", name,
                   tot.measured ? tot.sum / (double)tot.measured : 0.0, tot.measured, tot.errors, elapsed,
                   rc == 130 ? "; interrupted: go on with --resume" : "");
  } else {
    fprintf(
        stderr,
        "hutch benchmark: %s: incomplete, no score: %zu of %zu tasks measured, %ld not finished (%ld the model's API "
        "failed, %ld hutch), %ld not run%s%s, %.1f s; go on with --resume %s\n",
        name, tot.measured, total, status.ends[BENCH_END_API] + status.ends[BENCH_END_INFRA],
        status.ends[BENCH_END_API], status.ends[BENCH_END_INFRA], status.not_run, status.stopped ? "; stopped: " : "",
        status.stopped ? status.stopped : "", elapsed, where);
  }
  if (tot.done > 0) {
    _cleanup_free_ char *totals = bench_totals_line(&tot);
    bench_term_say("hutch benchmark: %s", totals);
  }
  bench_term_event(bench_end_event(&tot, &status, elapsed, rc, out));
  if (bench_term_mode() != BENCH_TERM_JSON)
    printf("%s\n", out);
  free(slots);
  free(todo);
  cJSON_Delete(lines);
  cJSON_Delete(meta);
  bench_set_free(&set);
  return rc;
}

static int run(struct bench_opts *o) {
  /* libcurl's global set-up (OpenSSL's) once, not in every task's agent
   * (about 0.5 ms of CPU each): the agents are forks of the spawner.  No
   * handle, connection or gate file goes with it, and OpenSSL reseeds its
   * random generator in a fork. */
  llm_client_global_init();
  /* The agents' spawner, before anything of the task set is read. */
  hutch_error_t err = NULL;
  if (bench_spawner_start(&err) < 0)
    return fail(&err);
  int r = run_tasks(o);
  bench_spawner_stop();
  return r;
}

int main(int argc, char **argv) {
  hutch_program_name = "hutch benchmark";
  /* Its tasks' settings in LLM-in-Sandbox's benchmark order (flag, LLM_*,
   * file), in this process and the agents forked from it. */
  settings_benchmark_order = true;
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  /* No SA_RESTART: waitpid returns to look at bench_stop. */
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  /* hutch report is this program too: hutch passes its verb as argv[0]. */
  if (strcmp(argv[0], "report") == 0)
    return bench_report_run(argc, argv);
  if (argc > 1 && strcmp(argv[1], "merge") == 0)
    return bench_merge(argc - 1, argv + 1);
  if (argc > 1 && strcmp(argv[1], "judge") == 0)
    return bench_judge(argc - 1, argv + 1);
  struct bench_opts o;
  int r = bench_parse(argc, argv, &o);
  if (r >= 0) {
    bench_opts_free(&o);
    return r;
  }
  bench_term_init(o.json ? BENCH_TERM_JSON : o.quiet ? BENCH_TERM_QUIET : BENCH_TERM_LINES);
  const char *self = getenv("HUTCH_SELF");
  o.hutch = self && *self ? self : HUTCH_BINDIR "/hutch";
  r = run(&o);
  free(o.driver_dir);
  free(o.prompt_path);
  bench_opts_free(&o);
  return r;
}
