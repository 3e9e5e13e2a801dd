/* SPDX-License-Identifier: Apache-2.0 */
/* One task, in a worker process of its own: input files and prompts
 * written beside the task's run, hutch run (a sandbox of its own, its
 * deadline), the answer read back bounded, the score computed in another
 * sandbox, the log and result.json written, with how the task ended
 * (bench_end).  A worker stopped by a signal writes no result: the task is
 * not finished, and --resume runs it again.  The task's time limit is its
 * hutch run's own (--run-timeout): the run ends by itself, with its files
 * copied back, and is stopped from here only when it does not. */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "error.h"
#include "prompt_config.h"
#include "util.h"

#define ANSWER_MAX (16u << 20)
/* hutch run's time after its --run-timeout to copy its files back and
 * remove its sandbox, before it is stopped; then as long again before it
 * is killed. */
#define AGENT_GRACE 60.0
/* What of a failed hutch run's error a result quotes, at most. */
#define ERROR_QUOTED 1000
#define AGENT_STDOUT_MAX (1u << 20)
/* Within a pipe's default capacity: written whole before hutch run starts. */
#define QUERY_PIPE_MAX 65536

static const char *str_field(const cJSON *row, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* ground_truth as LLM-in-Sandbox's f-strings print it. */
static char *text_of(const cJSON *v) {
  if (v == NULL || cJSON_IsNull(v))
    return xstrdup("None");
  if (cJSON_IsString(v))
    return xstrdup(v->valuestring);
  return cJSON_PrintUnformatted(v);
}

/* input_files: {name: text} (or that object as a JSON string, as the hub
 * stores it); names stay inside the input directory.  -1: the files could
 * not be written (hutch's failure), -2: input_files is not of that shape
 * (the task's). */
static int write_inputs(const cJSON *row, const char *dir, char **why) {
  const cJSON *f = cJSON_GetObjectItemCaseSensitive(row, "input_files");
  cJSON *parsed = NULL;
  if (cJSON_IsString(f) && f->valuestring[0])
    f = parsed = cJSON_Parse(f->valuestring);
  /* No input directory for an empty object either: LLM-in-Sandbox makes
   * it only for input files (`if input_files:`). */
  if (f == NULL || cJSON_IsNull(f) || cJSON_IsString(f) || (cJSON_IsObject(f) && f->child == NULL)) {
    cJSON_Delete(parsed);
    return 0;
  }
  int r = -1;
  if (!cJSON_IsObject(f)) {
    *why = xstrdup("input_files is not an object of file names and contents");
    r = -2;
    goto out;
  }
  if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
    *why = hutch_errno_format(errno, "mkdir %s", dir);
    goto out;
  }
  const cJSON *e;
  cJSON_ArrayForEach(e, f) {
    const char *name = e->string;
    if (cJSON_IsNull(e))
      continue;
    bool bad = name[0] == '\0' || name[0] == '/';
    for (const char *p = name; !bad && *p; p = strchr(p, '/') ? strchr(p, '/') + 1 : p + strlen(p))
      bad = strncmp(p, "..", 2) == 0 && (p[2] == '/' || p[2] == '\0');
    if (bad || !cJSON_IsString(e)) {
      *why = xasprintf("input_files: '%s' is not a relative file name with text", name);
      r = -2;
      goto out;
    }
    _cleanup_free_ char *path = xasprintf("%s/%s", dir, name);
    char *slash = strrchr(path, '/');
    *slash = '\0';
    if (mkdir_p(path, 0700) < 0) {
      *why = hutch_errno_format(errno, "mkdir %s", path);
      goto out;
    }
    *slash = '/';
    if (write_file_at(AT_FDCWD, path, e->valuestring, strlen(e->valuestring), 0644) < 0) {
      *why = hutch_errno_format(errno, "write %s", path);
      goto out;
    }
  }
  r = 0;
out:
  cJSON_Delete(parsed);
  return r;
}

/* The prompt config of the tasks' hutch run: JSON, which YAML reads. */
int bench_write_prompt(const struct bench_set *set, const char *path) {
  cJSON *p = cJSON_CreateObject();
  cJSON_AddStringToObject(p, "system_prompt", set->system_prompt);
  cJSON_AddStringToObject(p, "instance_prompt", set->instance_prompt);
  cJSON_AddStringToObject(p, "working_dir", set->working_dir);
  cJSON_AddStringToObject(p, "input_dir", set->input_dir);
  cJSON_AddStringToObject(p, "output_dir", set->output_dir);
  _cleanup_free_ char *text = cJSON_Print(p);
  cJSON_Delete(p);
  /* By a rename: a run's tasks read it while another run on the same
   * directory may write it. */
  return write_file_atomic(path, text, strlen(text), 0644);
}

static char *read_answer(const char *run_dir, const struct bench_set *set, char **why) {
  /* output_dir's answer.txt, as copied back into the run's files/. */
  _cleanup_free_ char *files = xasprintf("%s/files", run_dir);
  int dfd = open(files, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0)
    return xstrdup("");
  (void)set;
  size_t len = 0;
  char *raw = read_regular_file_at(dfd, "answer.txt", ANSWER_MAX, &len);
  int e = errno;
  close(dfd);
  if (raw == NULL) {
    if (e == EFBIG)
      *why = xasprintf("answer.txt is larger than %u bytes", ANSWER_MAX);
    return xstrdup("");
  }
  char *clean = bench_clean_answer(raw, len);
  free(raw);
  return clean;
}

/* The last line of text (modified), a copy; NULL when there is none. */
static char *last_line(char *text) {
  if (text == NULL)
    return NULL;
  size_t len = strlen(text);
  while (len > 0 && text[len - 1] == '\n')
    text[--len] = '\0';
  char *nl = strrchr(text, '\n');
  return len ? xstrdup(nl ? nl + 1 : text) : NULL;
}

static bool auth_failure(const char *log_path) {
  size_t len = 0;
  _cleanup_free_ char *text = read_file_at(AT_FDCWD, log_path, 16 << 20, &len);
  return text && (strstr(text, "answered HTTP 401") || strstr(text, "answered HTTP 403"));
}

/* The error a failed hutch run wrote last to its run.log ("error: ..."),
 * at most ERROR_QUOTED bytes; NULL when there is none. */
static char *run_error(const char *run_dir) {
  if (run_dir == NULL)
    return NULL;
  _cleanup_free_ char *path = xasprintf("%s/run.log", run_dir);
  size_t len = 0;
  _cleanup_free_ char *text = read_regular_file_at(AT_FDCWD, path, 16 << 20, &len);
  const char *last = NULL;
  for (char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
    if (strncmp(p, "error: ", 7) == 0 && strncmp(p, "error: hint: ", 13) != 0)
      last = p + 7;
  if (last == NULL)
    return NULL;
  size_t n = strcspn(last, "\n");
  return xstrndup(last, n < ERROR_QUOTED ? n : ERROR_QUOTED);
}

/* The run's trajectory.json, read once for its usage and timings; NULL
 * without one. */
static cJSON *load_trajectory(const char *run_dir) {
  if (run_dir == NULL)
    return NULL;
  _cleanup_free_ char *path = xasprintf("%s/trajectory.json", run_dir);
  size_t len = 0;
  _cleanup_free_ char *text = read_file_at(AT_FDCWD, path, (size_t)1 << 30, &len);
  return text ? cJSON_ParseWithLength(text, len) : NULL;
}

/* The run's steps and token counts (hutch.usage), for the terminal's
 * line and totals and for the report. */
static void add_usage(cJSON *res, const cJSON *t) {
  const cJSON *steps = cJSON_GetObjectItemCaseSensitive(t, "steps");
  if (cJSON_IsArray(steps))
    cJSON_AddNumberToObject(res, "steps", cJSON_GetArraySize(steps));
  const cJSON *u = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(t, "hutch"), "usage");
  static const char *const keys[][2] = {
      {"total_tokens", "tokens"}, {"prompt_tokens", "tokens_in"}, {"completion_tokens", "tokens_out"}};
  for (size_t k = 0; k < ARRAY_SIZE(keys); k++) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(u, keys[k][0]);
    if (cJSON_IsNumber(n))
      cJSON_AddNumberToObject(res, keys[k][1], n->valuedouble);
  }
}

/* hutch's own cost of the task, by phase (results.jsonl "timings"): from
 * the run's hutch.timings (monotonic times, the same clock as ours) and
 * its steps' model and tool times; "own" is the task's time less the
 * model's and the tools'. */
static void add_timings(cJSON *res, const cJSON *t, double spawned, double exited, double reward, double elapsed,
                        double agent_cpu, double reward_cpu) {
  cJSON *tm = cJSON_CreateObject();
  double model = 0, tools = 0;
  if (t && spawned > 0) {
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(t, "hutch"), "timings");
    const cJSON *st;
    double last_reply = -1;
    cJSON_ArrayForEach(st, cJSON_GetObjectItemCaseSensitive(t, "steps")) {
      const cJSON *m = cJSON_GetObjectItemCaseSensitive(st, "metadata");
      const cJSON *e = cJSON_GetObjectItemCaseSensitive(m, "exec_time");
      const cJSON *u = cJSON_GetObjectItemCaseSensitive(m, "tool_time");
      const cJSON *reply = cJSON_GetObjectItemCaseSensitive(m, "reply");
      /* The steps of one reply (its calls) each carry its latency: once. */
      if (!cJSON_IsNumber(reply) || reply->valuedouble != last_reply)
        model += cJSON_IsNumber(e) ? e->valuedouble : 0;
      last_reply = cJSON_IsNumber(reply) ? reply->valuedouble : -1;
      tools += cJSON_IsNumber(u) ? u->valuedouble : 0;
    }
    const cJSON *begin = cJSON_GetObjectItemCaseSensitive(h, "begin");
    const cJSON *saved = cJSON_GetObjectItemCaseSensitive(h, "saved");
    if (cJSON_IsNumber(begin) && cJSON_IsNumber(saved)) {
      /* The hutch process's start (exec, settings, policy, image lookup). */
      cJSON_AddNumberToObject(tm, "start", begin->valuedouble - spawned);
      static const char *const phases[] = {"sandbox", "input_copy", "copy_back"};
      for (size_t i = 0; i < sizeof(phases) / sizeof(*phases); i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(h, phases[i]);
        if (cJSON_IsNumber(v))
          cJSON_AddNumberToObject(tm, phases[i], v->valuedouble);
      }
      /* The sandbox's removal and the process's exit. */
      cJSON_AddNumberToObject(tm, "teardown", exited - saved->valuedouble);
    }
  }
  cJSON_AddNumberToObject(tm, "model", model);
  cJSON_AddNumberToObject(tm, "tools", tools);
  cJSON_AddNumberToObject(tm, "reward", reward);
  /* The runner's own share: the task's files before the agent, the answer
   * and the log after it. */
  if (spawned > 0)
    cJSON_AddNumberToObject(tm, "runner", elapsed - (exited - spawned) - reward);
  cJSON_AddNumberToObject(tm, "own", elapsed - model - tools);
  /* The agent's CPU time, its sandbox's and tools' included; the runner
   * adds the scoring's and this worker's (its files) as "cpu". */
  if (spawned > 0)
    cJSON_AddNumberToObject(tm, "agent_cpu", agent_cpu);
  /* The scoring's, where the slot's scoring sandbox (not this worker's
   * child) did it: as its driver counted it. */
  if (reward_cpu > 0)
    cJSON_AddNumberToObject(tm, "reward_cpu", reward_cpu);
  cJSON_AddItemToObject(res, "timings", tm);
}

/* The task's log, logs/ID.txt, as LLM-in-Sandbox's runner writes it: the
 * console log of its agent (lislog.c) and its result block, or its error
 * block alone.  hutch run's own output, which went there while the task
 * ran, is kept as runs/ID/hutch-run.log.  The texts of the model and the
 * sandbox have their control characters escaped, so that reading the log
 * in a terminal runs no escape sequence of theirs. */
static void write_log(const struct bench_opts *o, bool vanilla, const char *log_path, const char *dir, const char *id,
                      const char *problem, const char *answer, const char *gt, const char *lis_error,
                      const char *reward_repr, double score, const cJSON *traj) {
  _cleanup_free_ char *shown_id = text_escape_cstr(id), *shown_answer = text_escape_cstr(answer);
  _cleanup_free_ char *shown_gt = text_escape_cstr(gt);
  _cleanup_free_ char *console = NULL;
  if (vanilla) {
    /* --mode llm: its Query and Response, as written (bench_vanilla). */
    size_t len = 0;
    console = read_file_at(AT_FDCWD, log_path, 16 << 20, &len);
  } else {
    _cleanup_free_ char *kept = xasprintf("%s/hutch-run.log", dir);
    if (rename(log_path, kept) < 0 && errno != ENOENT)
      unlink(log_path);
  }
  if (lis_error) {
    _cleanup_free_ char *shown_why = text_escape_cstr(lis_error);
    _cleanup_free_ char *text =
        xasprintf("Problem ID: %s\nERROR: %s\nGround Truth: %s\n", shown_id, shown_why, shown_gt);
    write_file_atomic(log_path, text, strlen(text), 0644);
    return;
  }
  if (!vanilla) {
    /* The prompts as the task's hutch run rendered them. */
    struct prompt_config pc;
    hutch_error_t err = NULL;
    _cleanup_free_ char *ppath = o->prompt_path ? xstrdup(o->prompt_path) : xasprintf("%s/prompt.yaml", dir);
    _cleanup_free_ char *sys = NULL, *user = NULL;
    if (prompt_config_load(ppath, &pc, &err) == 0) {
      sys = prompt_expand(pc.system_prompt, &pc, NULL);
      user = prompt_expand(pc.instance_prompt, &pc, problem);
      prompt_config_clear(&pc);
    }
    hutch_error_free(&err);
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(traj, "hutch");
    const cJSON *end = cJSON_GetObjectItemCaseSensitive(h, "end_reason");
    /* Its loop had begun another step whose model call failed. */
    bool trailing = cJSON_IsString(end) &&
                    (strcmp(end->valuestring, "error") == 0 || strcmp(end->valuestring, "token_limit") == 0 ||
                     strcmp(end->valuestring, "conversation_limit") == 0);
    console = bench_lislog(sys ? sys : "", user ? user : problem, cJSON_GetObjectItemCaseSensitive(traj, "steps"),
                           o->s.max_steps, trailing);
  }
  cJSON *reward = reward_repr ? bench_lis_reward_node(reward_repr) : NULL;
  if (reward == NULL)
    reward = bench_pyjson_float(score);
  _cleanup_free_ char *score4 = bench_lis_score4(reward);
  cJSON_Delete(reward);
  static const char rule[] = "================================================================================";
  _cleanup_free_ char *text =
      xasprintf("%s\n%s\n### Result ###\nProblem ID: %s\nAgent Answer: %s\nGround Truth: %s\nScore: %s\n%s\n",
                console ? console : "", rule, shown_id, shown_answer, shown_gt, score4, rule);
  write_file_atomic(log_path, text, strlen(text), 0644);
}

int bench_run_task(const struct bench_opts *o, const struct bench_set *set, const cJSON *row, const char *out) {
  double start = monotonic_seconds();
  const char *id = str_field(row, "id");
  const char *problem = str_field(row, "problem_statement");
  _cleanup_free_ char *gt = text_of(cJSON_GetObjectItemCaseSensitive(row, "ground_truth"));
  _cleanup_free_ char *safe = bench_safe_name(id);
  _cleanup_free_ char *dir = xasprintf("%s/runs/%s", out, safe);
  _cleanup_free_ char *log_path = xasprintf("%s/logs/%s.txt", out, safe);
  _cleanup_free_ char *result_path = xasprintf("%s/result.json", dir);
  _cleanup_free_ char *query = xasprintf("%s/query.txt", dir);
  _cleanup_free_ char *prompt = xasprintf("%s/prompt.yaml", dir);
  _cleanup_free_ char *inputs = xasprintf("%s/input", dir);
  _cleanup_free_ char *why = NULL;
  _cleanup_free_ char *answer = xstrdup("");
  _cleanup_free_ char *run_dir = NULL;
  _cleanup_free_ char *out_opt = xasprintf("--output-dir=%s", dir);
  /* The run's one prompt config, else the task's own. */
  _cleanup_free_ char *prompt_opt = xasprintf("--prompt-config=%s", o->prompt_path ? o->prompt_path : prompt);
  _cleanup_free_ char *input_opt = xasprintf("--input-dir=%s", inputs);
  double score = 0;
  int agent_exit = -1;
  struct bench_task_opts topts = {0};
  bool fatal = false;
  /* How the task ended: hutch's failure until the task is under way. */
  int end = BENCH_END_INFRA;
  double spawned = 0, exited = 0, reward_time = 0, agent_cpu = 0, reward_cpu = 0;
  /* LLM-in-Sandbox's view of the task (lisfiles.c): what compute_score
   * returned, as Python's repr, and the scoring exception's class.  A model
   * API that kept failing is hutch's error (api_why: the task is not
   * finished) and none of LLM-in-Sandbox's, which scores the run as it
   * ended. */
  _cleanup_free_ char *reward_repr = NULL, *kind = NULL, *api_why = NULL, *lis_error = NULL;
  /* hutch run's stdin: the problem statement on a pipe, -1: in query.txt. */
  _cleanup_close_ int qin = -1;

  /* A task run again (--resume) starts from nothing. */
  _cleanup_close_ int runs = open(out, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  _cleanup_free_ char *rel = xasprintf("runs/%s", safe);
  remove_tree_at(runs, rel);
  unlink(log_path);
  if (mkdir_p(dir, 0755) < 0) {
    why = hutch_errno_format(errno, "mkdir %s", dir);
    goto done;
  }
  /* The task's scratch files, in a directory made afresh: no fsync (a
   * crash runs the task again from nothing).  A problem statement that
   * fits in a pipe reaches hutch run through one instead of a file (on
   * ext4 every new file costs about 0.3 ms). */
  size_t qlen = strlen(problem);
  int qp[2];
  if (qlen <= QUERY_PIPE_MAX && pipe2(qp, O_CLOEXEC) == 0) {
    /* Only when it fits: nobody reads the pipe until hutch run starts, and
     * a user past fs.pipe-user-pages-soft gets pipes of one page. */
    int cap = fcntl(qp[1], F_GETPIPE_SZ);
    if (cap > 0 && (size_t)cap >= qlen) {
      qin = qp[0];
      int w = write_all(qp[1], problem, qlen), e = errno;
      close(qp[1]);
      if (w < 0) {
        why = hutch_errno_format(e, "write the problem statement to hutch run");
        goto done;
      }
    } else {
      close(qp[0]);
      close(qp[1]);
    }
  }
  if ((qin < 0 && write_file_at(AT_FDCWD, query, problem, qlen, 0644) < 0) ||
      (o->prompt_path == NULL && bench_write_prompt(set, prompt) < 0)) {
    why = hutch_errno_format(errno, "write %s", dir);
    goto done;
  }
  int wr = write_inputs(row, inputs, &why);
  if (wr < 0) {
    end = wr == -2 ? BENCH_END_TASK : BENCH_END_INFRA;
    goto done;
  }
  end = BENCH_END_TASK;
  if (strcmp(o->mode, "llm") == 0) {
    /* LLM-in-Sandbox's vanilla mode: the reply is the answer, as it is. */
    FILE *lf = fopen(log_path, "we");
    char *ans = NULL;
    int r = bench_vanilla(o, set, row, dir, lf, &ans, &why, &fatal, &end);
    if (lf)
      fclose(lf);
    if (bench_stop)
      _exit(130);
    if (r < 0)
      goto done;
    free(answer);
    answer = ans;
    goto score;
  }
  if (bench_task_opts(row, &topts, &why) < 0)
    goto done;
  if (!topts.verifier && !set->has_reward) {
    why = xasprintf("the task has no verifier and %s/reward.py is missing", set->dir);
    goto done;
  }
  {
    const char **argv = xcalloc(o->n_agent + topts.n_args + 12, sizeof(char *));
    size_t n = 0;
    _cleanup_free_ char *tools_opt = o->lis_tools_path ? xasprintf("--tools-file=%s", o->lis_tools_path) : NULL;
    /* hutch-agent's command line as `hutch run` would exec it (its argv[0]
     * is the verb), run in the forked child itself (bench_spawn_agent). */
    argv[n++] = "run";
    /* --lis's tools, unless the options give a tools file of their own. */
    if (tools_opt)
      argv[n++] = tools_opt;
    for (size_t i = 0; i < o->n_agent; i++)
      argv[n++] = o->agent_argv[i];
    /* The task's own settings come last: they win. */
    for (size_t i = 0; i < topts.n_args; i++)
      argv[n++] = topts.args[i];
    double limit = topts.timeout > 0 ? topts.timeout : o->task_timeout;
    _cleanup_free_ char *limit_opt = xasprintf("--run-timeout=%.17g", limit);
    argv[n++] = limit_opt;
    argv[n++] = "--query=-";
    argv[n++] = out_opt;
    argv[n++] = prompt_opt;
    if (access(inputs, F_OK) == 0)
      argv[n++] = input_opt;
    argv[n] = NULL;
    end = BENCH_END_INFRA;
    /* The statement on its pipe, else in query.txt. */
    if (qin < 0 && (qin = open(query, O_RDONLY | O_CLOEXEC)) < 0) {
      why = hutch_errno_format(errno, "open %s", query);
      free(argv);
      goto done;
    }
    /* hutch run's stdout (the run directory, its last line) comes back
     * on a pipe, read while it runs. */
    int opipe[2] = {-1, -1};
    if (pipe2(opipe, O_CLOEXEC) < 0) {
      why = hutch_errno_format(errno, "pipe");
      free(argv);
      goto done;
    }
    int lfd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    struct bench_child c;
    hutch_error_t err = NULL;
    spawned = monotonic_seconds();
    int r = bench_spawn_agent(&c, (char **)argv, qin, opipe[1], lfd, &err);
    free(argv);
    close(opipe[1]);
    if (lfd >= 0)
      close(lfd);
    if (r < 0) {
      if (bench_spawner_lost)
        _exit(BENCH_EXIT_NO_SPAWNER);
      close(opipe[0]);
      why = hutch_error_format(err);
      hutch_error_free(&err);
      goto done;
    }
    {
      _cleanup_free_ char *out_text = NULL;
      bench_wait(&c, limit + AGENT_GRACE, AGENT_GRACE, opipe[0], &out_text, AGENT_STDOUT_MAX);
      close(opipe[0]);
      run_dir = last_line(out_text);
    }
    exited = monotonic_seconds();
    agent_cpu = c.cpu;
    if (c.stopped)
      _exit(130);
    if (bench_spawner_lost)
      _exit(BENCH_EXIT_NO_SPAWNER);
    agent_exit = WIFEXITED(c.status) ? WEXITSTATUS(c.status) : 128 + WTERMSIG(c.status);
    _cleanup_free_ char *failed = agent_exit != 0 && agent_exit != 1 ? run_error(run_dir) : NULL;
    if (c.timed_out) {
      /* hutch run did not end by itself at its limit: hutch's failure. */
      why = xasprintf("Timeout: hutch run was stopped %g s past its --run-timeout of %g s", AGENT_GRACE, limit);
      goto done;
    }
    if (agent_exit == 124) {
      end = BENCH_END_TIMEOUT;
      why = xstrdup("Timeout"); /* LLM-in-Sandbox's word */
      goto done;
    }
    if (agent_exit == 3) {
      end = BENCH_END_API;
      fatal = auth_failure(log_path) ||
              (failed && (strstr(failed, "answered HTTP 401") || strstr(failed, "answered HTTP 403")));
      if (fatal) {
        why = xstrdup("AuthenticationError: the model's API refused the key (HTTP 401/403)");
        goto done;
      }
      /* Not finished for hutch (--resume runs it again), but scored as it
       * ended for LLM-in-Sandbox's files, which record no error for it. */
      api_why = xasprintf("the model's API failed: %s", failed ? failed : "hutch run exited with status 3");
    }
    if (agent_exit != 0 && agent_exit != 1 && agent_exit != 3) {
      why = xasprintf("hutch run exited with status %d (see runs/%s/hutch-run.log)%s%s", agent_exit, safe,
                      failed ? ": " : "", failed ? failed : "");
      goto done;
    }
  }
  end = BENCH_END_TASK;
  if (run_dir) {
    free(answer);
    answer = read_answer(run_dir, set, &why);
    if (why)
      goto done;
  }
  if (topts.verifier) {
    /* The verifier's record in the run's trajectory.json is the score. */
    _cleanup_free_ char *tpath = xasprintf("%s/trajectory.json", run_dir ? run_dir : dir);
    size_t tlen = 0;
    _cleanup_free_ char *ttext = read_file_at(AT_FDCWD, tpath, (size_t)1 << 30, &tlen);
    cJSON *t = ttext ? cJSON_ParseWithLength(ttext, tlen) : NULL;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(t, "hutch"), "verifier");
    end = BENCH_END_SCORING;
    bench_verifier_score(v, &score, &why);
    cJSON_Delete(t);
    goto in_range;
  }
score : {
  end = BENCH_END_SCORING;
  _cleanup_free_ char *rdir = xasprintf("%s/reward", dir);
  double r0 = monotonic_seconds();
  /* The slot's scoring sandbox, which the runner started beside the
   * slot's agent and keeps; else one of this task's own. */
  bool shared = bench_py_usable(bench_scorer);
  int sr = shared ? bench_score_finish(bench_scorer, o, answer, row, &score, &why, &kind, &reward_repr)
                  : bench_score(o, set, rdir, answer, row, &score, &why, &kind, &reward_repr);
  reward_time = monotonic_seconds() - r0;
  if (shared)
    reward_cpu = bench_scorer->cpu;
  if (sr < 0) {
    if (bench_stop)
      _exit(130);
    score = 0;
  }
}
in_range:
  /* A score outside the task set's range (1e300 from a reward.py, or from a
   * verifier the model could tamper with) is the task's scoring error: it
   * would be averaged into the run's mean. */
  if (why == NULL) {
    _cleanup_free_ char *outside = bench_score_outside(score, &set->range);
    if (outside)
      why = xasprintf("%s %s", topts.verifier ? "verifier: scored" : "reward: compute_score returned", outside);
  }
done:;
  if (why)
    lis_error = bench_lis_error_text(why, kind);
  if (api_why) {
    char *both = why ? xasprintf("%s; then %s", api_why, why) : xstrdup(api_why);
    free(why);
    why = both;
    end = BENCH_END_API;
  }
  if (why)
    score = 0;
  else
    end = BENCH_END_FINISHED;
  cJSON *traj = load_trajectory(run_dir);
  write_log(o, strcmp(o->mode, "llm") == 0, log_path, dir, id, problem, answer, gt, lis_error, reward_repr, score,
            traj);
  cJSON *res = cJSON_CreateObject();
  cJSON_AddStringToObject(res, "id", id);
  cJSON_AddNumberToObject(res, "score", score);
  cJSON_AddItemToObject(res, "error", why ? cJSON_CreateString(why) : cJSON_CreateNull());
  cJSON_AddStringToObject(res, "end", bench_end_names[end]);
  cJSON_AddStringToObject(res, "agent_answer", answer);
  const cJSON *g = cJSON_GetObjectItemCaseSensitive(row, "ground_truth");
  cJSON_AddItemToObject(res, "ground_truth", g ? cJSON_Duplicate(g, true) : cJSON_CreateNull());
  cJSON_AddStringToObject(res, "problem_statement", problem);
  cJSON_AddItemToObject(res, "lis_error", lis_error ? cJSON_CreateString(lis_error) : cJSON_CreateNull());
  if (reward_repr)
    cJSON_AddStringToObject(res, "reward_repr", reward_repr);
  double elapsed = monotonic_seconds() - start;
  cJSON_AddNumberToObject(res, "elapsed_seconds", elapsed);
  cJSON_AddNumberToObject(res, "exit_code", agent_exit);
  add_usage(res, traj);
  add_timings(res, traj, spawned, exited, reward_time, elapsed, agent_cpu, reward_cpu);
  cJSON_Delete(traj);
  if (run_dir && strncmp(run_dir, out, strlen(out)) == 0 && run_dir[strlen(out)] == '/')
    cJSON_AddStringToObject(res, "run_dir", run_dir + strlen(out) + 1);
  if (fatal)
    cJSON_AddTrueToObject(res, "fatal");
  _cleanup_free_ char *text = cJSON_PrintUnformatted(res);
  cJSON_Delete(res);
  bench_task_opts_free(&topts);
  /* Whole or absent (a rename), but not fsynced: the runner reads it once
   * this worker has exited and makes it durable in results.jsonl; after a
   * crash the task is run again either way. */
  _cleanup_free_ char *tmp_path = xasprintf("%s.tmp", result_path);
  int rc = write_file_at(AT_FDCWD, tmp_path, text, strlen(text), 0644) < 0 || rename(tmp_path, result_path) < 0;
  return rc;
}
