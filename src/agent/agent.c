/* SPDX-License-Identifier: Apache-2.0 */
/* The agent loop: ask the model, run its tool calls in the task's sandbox,
 * answer each call, until it submits or a budget runs out. */
#include "config.h"

#include "agent.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "budget.h"
#include "console.h"
#include "copy_back.h"
#include "git_init.h"
#include "lis_compat.h"
#include "llm_client.h"
#include "llm_saved.h"
#include "observation.h"
#include "prompt_config.h"
#include "sandbox_io.h"
#include "tools.h"
#include "shell_session.h"
#include "transfer.h"
#include "trajectory.h"
#include "util.h"
#include "verify.h"

#define MIN_MAX_TOKENS 1024
#define SANDBOX_PATH "/root/.local/bin:/root/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

struct run {
  const struct settings *s;
  struct console con;
  char *dir;
  struct prompt_config pc;
  struct trajectory traj;
  struct task_sandbox task;
  struct git_init git;
  struct hutch_store *store;
  struct hutch_policy *policy;
  struct hutch_image image;
  char **env;
  bool net_proxy; /* --net, or the policy's `run` when not given */
  const char *end_reason;
  struct budget b; /* steps, conversation bytes, time */
  struct copy_back cb;
  long prompt_tokens, completion_tokens;
  long last_total;
  long replies;  /* the model's replies so far: the number of the one in hand */
  double cost;   /* the cost of the calls, where the endpoint reported it */
  bool has_cost; /* any call's */
  long model_calls;
  double model_seconds, tool_seconds;
  /* The run did not end on its own (yet): true while it goes on, so that
   * the trajectory of a killed hutch run says so, and after a stop. */
  bool partial;
  int exit_code;
};

static void run_log(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void run_log(struct run *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  _cleanup_free_ char *raw = xvasprintf(fmt, ap);
  va_end(ap);
  console_log(&r->con, "", raw);
}

/* The runtime's log lines (hutch_set_log_handler), escaped already: into
 * run.log, and on stderr as without a handler (progress only without
 * --quiet). */
static void runtime_log(enum hutch_log_level level, const char *line, void *data) {
  struct run *r = data;
  console_log(&r->con, hutch_log_level_prefix(level), line);
}

static void log_msg(void *data, const char *msg) {
  run_log(data, "%s", msg);
}

static int fail_error(struct run *r, hutch_error_t *err, int code) {
  console_error(&r->con, *err);
  hutch_error_free(err);
  return code;
}

/* The working directory's git init, done before anything may look at it
 * (the copy-in when it writes there, the first tool, --verify, the
 * copy-back); logged once. */
static void git_wait(struct run *r) {
  if (git_init_finish(&r->git, &r->task))
    run_log(r, "git init in %s: %d", r->pc.working_dir, r->git.status);
}

/* <output-dir>/YYYYMMDD_HHMMSS, with _1, _2... when taken. */
static char *make_run_dir(const char *parent, hutch_error_t *err) {
  if (mkdir_p(parent, 0755) < 0) {
    hutch_error_sys(err, "create the output directory %s", parent);
    return NULL;
  }
  time_t now = time(NULL);
  struct tm tm;
  char ts[32];
  strftime(ts, sizeof(ts), "%Y%m%d_%H%M%S", localtime_r(&now, &tm));
  for (int i = 0; i < 10000; i++) {
    char *d = i == 0 ? xasprintf("%s/%s", parent, ts) : xasprintf("%s/%s_%d", parent, ts, i);
    if (mkdir(d, 0755) == 0) {
      /* Marked before anything of the sandbox's lands in it, so that hutch
       * run never takes its settings from a copied-back file. */
      if (hutch_output_mark(d, err) < 0) {
        free(d);
        return NULL;
      }
      return d;
    }
    int e = errno;
    free(d);
    if (e != EEXIST) {
      errno = e;
      hutch_error_sys(err, "create a run directory in %s", parent);
      return NULL;
    }
  }
  hutch_error_set(err, EEXIST, "no free run directory name in %s", parent);
  return NULL;
}

static int setup_sandbox(struct run *r, hutch_error_t *err) {
  const struct settings *s = r->s;
  if (hutch_policy_load(s->policy, &r->policy, err) < 0)
    return -1;
  /* Without --net (or `net:` in the settings) the policy decides: the
   * shipped one gives runs its package-index allowlist (run = proxy). */
  r->net_proxy = s->net ? strcmp(s->net, "proxy") == 0 : hutch_policy_run_proxy(r->policy);
  if (!r->net_proxy && (s->n_allow || s->n_resolve || s->net_policy)) {
    hutch_error_set(err, EINVAL, "--allow, --net-policy and --resolve need --net proxy");
    return hutch_error_hint(err, "the policy %s gives runs no network (`run = none` in [network]): add --net proxy",
                            hutch_policy_path(r->policy));
  }
  if (hutch_store_open(s->store, &r->store, err) < 0)
    return -1;
  const char *name = s->rootfs ? s->rootfs : "default";
  if (hutch_image_lookup(r->store, name, &r->image, err) < 0) {
    if (s->rootfs == NULL)
      hutch_error_hint(err,
                       "hutch run needs a rootfs image named `default`: build the agent image with `hutch rootfs "
                       "build --from ubuntu:24.04 --recipe %s/rootfs/agent.recipe --name default`, "
                       "or import any tarball of a Linux tree with a shell with `hutch rootfs import FILE.tar "
                       "--name default`, or name another image with --rootfs NAME",
                       hutch_data_dir());
    return -1;
  }
  size_t n = 0;
  hutch_image_user_notice(&r->image);
  size_t n_image_env = 0;
  while (r->image.env && r->image.env[n_image_env])
    n_image_env++;
  r->env = xcalloc(s->n_env + n_image_env + 6, sizeof(char *));
  r->env[n++] = xstrdup("PATH=" SANDBOX_PATH);
  r->env[n++] = xstrdup("HOME=/root");
  r->env[n++] = xstrdup("PIP_DISABLE_PIP_VERSION_CHECK=1");
  r->env[n++] = xstrdup("PIP_ROOT_USER_ACTION=ignore");
  r->env[n++] = xstrdup("PIP_NO_WARN_SCRIPT_LOCATION=1");
  /* An OCI image's Env (a later entry of a name wins, --env last). */
  for (size_t i = 0; i < n_image_env; i++)
    r->env[n++] = xstrdup(r->image.env[i]);
  for (size_t i = 0; i < s->n_env; i++)
    r->env[n++] = xstrdup(s->env[i]);
  struct hutch_sandbox_config cfg = {
      .rootfs = r->image.rootfs,
      .rootfs_lowers = (const char *const *)r->image.lowers,
      .image = r->image.name ? r->image.name : r->image.digest,
      .rootfs_subordinate_ids = r->image.ids_preserved,
      .policy = r->policy,
      .hostname = s->hostname,
      .env = (const char *const *)r->env,
      .binds = s->binds,
      .n_binds = s->n_binds,
      .state_dir = s->state_dir,
      .store = s->store,
      /* Degraded modes, only when asked for, announced as hutch exec does. */
      .overlay = s->overlay && strcmp(s->overlay, "fuse") == 0 ? HUTCH_OVERLAY_FUSE : HUTCH_OVERLAY_KERNEL,
      .proc_host_ro = s->proc && strcmp(s->proc, "host-ro") == 0,
      /* The proxy's audit log goes beside the trajectory. */
      .net = r->net_proxy ? HUTCH_NET_PROXY : HUTCH_NET_NONE,
      .net_allow = (const char *const *)s->allow,
      .net_policy = s->net_policy,
      .net_resolve = (const char *const *)s->resolve,
      .limits =
          {
              .memory = s->memory,
              .memory_swap = s->memory_swap,
              .memory_swap_set = s->memory_swap > 0,
              .disk = s->disk,
              .cpus = s->cpus,
              .pids = (uint64_t)s->pids,
              .io_weight = (uint32_t)s->io_weight,
              .cgroup_parent = s->cgroup_parent,
              .no_cgroups = s->no_cgroups,
          },
  };
  if (cfg.overlay == HUTCH_OVERLAY_FUSE)
    run_log(r, "warning: degraded mode --overlay fuse, as asked: the sandbox's root is served by fuse-overlayfs "
               "instead of the kernel's overlayfs");
  if (cfg.proc_host_ro)
    run_log(r, "warning: degraded mode --proc host-ro, as asked: the sandbox gets the host's /proc read-only and "
               "sees the host's processes");
  _cleanup_free_ char *audit_log = NULL;
  if (cfg.net == HUTCH_NET_PROXY)
    cfg.net_audit_log = audit_log = xasprintf("%s/proxy.log", r->dir);
  for (size_t i = 0; i < s->n_resolve; i++)
    run_log(r, "--resolve %s: the proxy resolves this name to this address, not through DNS", s->resolve[i]);
  cfg.die_with_creator = !s->no_die_with_parent;
  /* The sandbox's audit log (hutch-audit(5)) is also left in the run
   * directory when the sandbox is destroyed. */
  _cleanup_free_ char *audit_copy = xasprintf("%s/audit.jsonl", r->dir);
  cfg.audit_copy = audit_copy;
  if (hutch_sandbox_create(&cfg, &r->task.sb, err) < 0) {
    /* The user did not ask for the network: say where it came from. */
    if (s->net == NULL && r->net_proxy && *err && strstr((*err)->msg, "network") != NULL && (*err)->hint == NULL)
      hutch_error_hint(err,
                       "the policy gives runs --net proxy (`run = proxy` in [network] of %s); --net none runs "
                       "without a network",
                       hutch_policy_path(r->policy));
    return -1;
  }
  r->task.id = xstrdup(hutch_sandbox_id(r->task.sb));
  r->task.stop = &agent_stop;
  r->task.progress = console_tool_progress;
  r->task.progress_data = &r->con;
  return 0;
}

/* bash when the image has it on PATH, else sh: looked up by hutch in the
 * sandbox's files, not by running anything there. */
static const char *pick_shell(struct run *r) {
  _cleanup_free_ char *path = xstrdup(SANDBOX_PATH);
  char *save = NULL;
  for (char *dir = strtok_r(path, ":", &save); dir != NULL; dir = strtok_r(NULL, ":", &save)) {
    _cleanup_free_ char *bash = xasprintf("%s/bash", dir);
    hutch_error_t err = NULL;
    int kind = hutch_sandbox_file_kind(r->task.sb, bash, &err);
    hutch_error_free(&err);
    if (kind == HUTCH_FILE_REGULAR)
      return "bash";
  }
  return "sh";
}

/* Made by hutch itself through the sandbox's root, owned by its root: the
 * ones LLM-in-Sandbox's container set-up makes whatever the prompt config
 * says (WORKING_DIR, WORKING_DIR/input, WORKING_DIR/output), the input
 * directory only when there is input to copy into it (as its copy does),
 * and the output directory, which the copy-back reads. */
static int prepare_dirs(struct run *r, bool with_input, hutch_error_t *err) {
  _cleanup_free_ char *in = xasprintf("%s/input", r->pc.working_dir);
  _cleanup_free_ char *out = xasprintf("%s/output", r->pc.working_dir);
  const char *dirs[] = {r->pc.working_dir, in, out, r->pc.output_dir, with_input ? r->pc.input_dir : NULL};
  for (size_t i = 0; i < ARRAY_SIZE(dirs); i++)
    if (dirs[i] && hutch_sandbox_mkdirs(r->task.sb, dirs[i], err) < 0)
      return hutch_error_wrap(err, "create the task directories in the sandbox");
  return 0;
}

static cJSON *message(const char *role, const char *content) {
  cJSON *m = cJSON_CreateObject();
  cJSON_AddStringToObject(m, "role", role);
  cJSON_AddStringToObject(m, "content", content);
  return m;
}

static void append_steps_remaining(cJSON *messages, long left) {
  cJSON *last = cJSON_GetArrayItem(messages, cJSON_GetArraySize(messages) - 1);
  cJSON *content = cJSON_GetObjectItemCaseSensitive(last, "content");
  if (!cJSON_IsString(content))
    return;
  _cleanup_free_ char *suffix = obs_steps_remaining(left);
  _cleanup_free_ char *text = xasprintf("%s%s", content->valuestring, suffix);
  cJSON_ReplaceItemInObjectCaseSensitive(last, "content", cJSON_CreateString(text));
}

/* The reply as it goes back into the conversation.  Its reasoning stays
 * (as the reference's does: thinking models keep their thread) unless
 * --no-reasoning-echo; with --tools lis a null content is left out, as the
 * reference's model_dump(exclude_none=True) does. */
static cJSON *assistant_message(const struct run *r, const struct llm_reply *rep, bool with_calls) {
  bool lis = strcmp(r->s->tools, "lis") == 0;
  cJSON *m = cJSON_CreateObject();
  if (rep->content)
    cJSON_AddStringToObject(m, "content", rep->content);
  else if (rep->n_calls && with_calls && !lis)
    cJSON_AddNullToObject(m, "content");
  else if (!rep->n_calls || !with_calls)
    cJSON_AddStringToObject(m, "content", "");
  cJSON_AddStringToObject(m, "role", "assistant");
  if (rep->n_calls && with_calls) {
    cJSON *calls = cJSON_AddArrayToObject(m, "tool_calls");
    for (size_t i = 0; i < rep->n_calls; i++) {
      cJSON *c = cJSON_CreateObject();
      cJSON_AddStringToObject(c, "id", rep->calls[i].id);
      cJSON_AddStringToObject(c, "type", "function");
      cJSON *fn = cJSON_AddObjectToObject(c, "function");
      cJSON_AddStringToObject(fn, "name", rep->calls[i].name);
      cJSON_AddStringToObject(fn, "arguments", rep->calls[i].arguments);
      cJSON_AddItemToArray(calls, c);
    }
  }
  if (rep->reasoning && !r->s->no_reasoning_echo)
    cJSON_AddStringToObject(m, "reasoning_content", rep->reasoning);
  return m;
}

static void save(struct run *r) {
  trajectory_set_steps(&r->traj, r->b.steps);
  cJSON *usage = cJSON_CreateObject();
  cJSON_AddNumberToObject(usage, "prompt_tokens", (double)r->prompt_tokens);
  cJSON_AddNumberToObject(usage, "completion_tokens", (double)r->completion_tokens);
  cJSON_AddNumberToObject(usage, "total_tokens", (double)(r->prompt_tokens + r->completion_tokens));
  if (r->has_cost)
    cJSON_AddNumberToObject(usage, "cost", r->cost);
  trajectory_set(&r->traj, "usage", usage);
  trajectory_set(&r->traj, "end_reason", r->end_reason ? cJSON_CreateString(r->end_reason) : cJSON_CreateNull());
  trajectory_set(&r->traj, "partial", cJSON_CreateBool(r->partial));
  copy_back_record(&r->cb, &r->traj);
  hutch_error_t err = NULL;
  if (trajectory_save(&r->traj, &err) < 0) {
    console_clear(&r->con);
    hutch_error_print(stderr, "hutch run", err);
    hutch_error_free(&err);
  }
}

static void record_settings(struct run *r) {
  const struct settings *s = r->s;
  _cleanup_free_ char *url = llm_redact_url(s->base_url);
  trajectory_set(&r->traj, "model", cJSON_CreateString(s->model));
  trajectory_set(&r->traj, "base_url", cJSON_CreateString(url));
  trajectory_set(&r->traj, "run_dir", cJSON_CreateString(r->dir));
  cJSON *lim = cJSON_CreateObject();
  cJSON_AddNumberToObject(lim, "max_steps", (double)s->max_steps);
  cJSON_AddNumberToObject(lim, "max_tokens_per_call", (double)s->max_tokens_per_call);
  cJSON_AddNumberToObject(lim, "max_token_limit", (double)s->max_token_limit);
  cJSON_AddNumberToObject(lim, "tool_timeout", s->tool_timeout);
  cJSON_AddNumberToObject(lim, "llm_timeout", s->llm_timeout);
  cJSON_AddNumberToObject(lim, "max_calls_per_reply", (double)s->max_calls_per_reply);
  cJSON_AddNumberToObject(lim, "max_observation_size", (double)s->max_observation_size);
  cJSON_AddNumberToObject(lim, "max_conversation_size", (double)s->max_conversation_size);
  cJSON_AddNumberToObject(lim, "run_timeout", s->run_timeout);
  trajectory_set(&r->traj, "limits", lim);
  cJSON *sb = cJSON_CreateObject();
  cJSON_AddStringToObject(sb, "image", s->rootfs ? s->rootfs : "default");
  cJSON_AddStringToObject(sb, "policy", r->policy ? hutch_policy_path(r->policy) : "");
  cJSON *net = cJSON_AddObjectToObject(sb, "network");
  cJSON_AddStringToObject(net, "mode", r->net_proxy ? "proxy" : "none");
  if (r->task.sb != NULL && hutch_sandbox_audit_log(r->task.sb))
    cJSON_AddStringToObject(net, "audit_log", hutch_sandbox_audit_log(r->task.sb));
  if (r->task.sb != NULL) {
    const struct hutch_limits_status *ls = hutch_sandbox_limits(r->task.sb);
    cJSON *lj = cJSON_AddObjectToObject(sb, "resource_limits");
    cJSON_AddStringToObject(lj, "mode", ls->mode);
    cJSON_AddBoolToObject(lj, "degraded", ls->degraded);
    if (ls->reason[0])
      cJSON_AddStringToObject(lj, "reason", ls->reason);
    /* Every time, though stderr says it once a day: a trajectory read
     * later must show its limits were rlimits, not a cgroup's. */
    if (ls->warning[0])
      cJSON_AddStringToObject(lj, "warning", ls->warning);
  }
  cJSON_AddStringToObject(sb, "working_dir", r->pc.working_dir);
  cJSON_AddStringToObject(sb, "input_dir", r->pc.input_dir);
  cJSON_AddStringToObject(sb, "output_dir", r->pc.output_dir);
  trajectory_set(&r->traj, "sandbox", sb);
  trajectory_set(&r->traj, "prompt_config", cJSON_CreateString(r->pc.path));
}

/* Estimated tokens in the conversation: the server's count when known,
 * else LLM-in-Sandbox's (four characters of content a token). */
static long conversation_tokens(struct run *r, cJSON *messages) {
  long est = lis_count_tokens(messages);
  return est > r->last_total ? est : r->last_total;
}

/* The step just added came from the reply in hand (its first step: the
 * one that carries the reply's usage). */
static void note_reply(struct run *r, const struct llm_reply *rep, bool first) {
  struct trajectory_reply tr = {.n = r->replies,
                                .first = first,
                                .has_usage = rep->has_usage,
                                .prompt_tokens = rep->prompt_tokens,
                                .completion_tokens = rep->completion_tokens,
                                .has_cost = rep->has_cost,
                                .cost = rep->cost};
  trajectory_note_reply(&r->traj, &tr);
}

static const char *interrupted_reason(void) {
  return "interrupted";
}

/* The reason in a "not run" answer, for the step's line. */
static const char *not_run_reason(const char *observation) {
  const char *p = "ERROR: not run: ";
  return strncmp(observation, p, strlen(p)) == 0 ? observation + strlen(p) : observation;
}

/* Answers each call of the reply that goes into the conversation: the
 * first --max-calls-per-reply are run while the budget lasts, the others
 * answered "not run"; those past twice that were left out of the reply as
 * it went back (kept < n_all), which the last answer says.  True when the
 * model submitted; *ran_any when a call was run. */
static bool answer_calls(struct run *r, struct tool_env *env, cJSON *messages, const struct llm_reply *rep,
                         bool text_mode, size_t n_all, bool *ran_any) {
  bool submitted = false;
  size_t kept = rep->n_calls;
  for (size_t i = 0; i < kept; i++) {
    const struct llm_call *c = &rep->calls[i];
    struct tool_result tr;
    memset(&tr, 0, sizeof(tr));
    tr.exit_code = -1;
    /* Calls after submit are answered, not run: the task is over. */
    tr.observation = submitted ? xstrdup("ERROR: not run: submit was called before this call.")
                               : budget_refuse(&r->b, i, n_all, monotonic_seconds());
    bool ran = tr.observation == NULL;
    struct step_view v = {.step = r->b.steps,
                          .tool = c->name,
                          .arguments = c->arguments,
                          .call_id = c->id,
                          .outcome = TOOL_NOT_RUN,
                          .with_model = i == 0,
                          .model_seconds = rep->seconds,
                          .prompt_tokens = rep->prompt_tokens,
                          .completion_tokens = rep->completion_tokens};
    if (ran) {
      git_wait(r);
      env->timeout = budget_tool_timeout(&r->b, r->s->tool_timeout, monotonic_seconds());
      console_tool_begin(&r->con, r->b.steps, c->name, c->arguments, c->id);
      tools_run(env, c->name, c->arguments, &tr);
      console_tool_end(&r->con);
      budget_check_time(&r->b, monotonic_seconds());
      r->tool_seconds += tr.seconds;
      *ran_any = true;
      v.outcome = tr.outcome;
      v.exit_code = tr.exit_code;
      v.error = tr.error;
      v.timeout = tr.timeout;
      v.seconds = tr.seconds;
    } else {
      v.error = not_run_reason(tr.observation);
    }
    console_step(&r->con, &v);
    if (i + 1 == kept && kept < n_all) {
      _cleanup_free_ char *note = obs_calls_left_out(n_all - kept);
      char *with = xasprintf("%s%s", tr.observation, note);
      free(tr.observation);
      tr.observation = with;
    }
    _cleanup_free_ char *obs = budget_observation(&r->b, tr.observation, ran);
    if (text_mode) {
      cJSON_AddItemToArray(messages, message("user", obs));
    } else {
      cJSON *tm = message("tool", obs);
      cJSON_AddStringToObject(tm, "tool_call_id", c->id);
      /* The reference's tool messages carry no name. */
      if (env->profile == TOOLS_HUTCH)
        cJSON_AddStringToObject(tm, "name", c->name);
      cJSON_AddItemToArray(messages, tm);
    }
    trajectory_add(&r->traj, r->b.steps, i == 0 ? rep->content : "", i == 0 ? rep->reasoning : "", c->name,
                   c->arguments, obs, rep->seconds, tr.seconds, tr.exit_code, c->id);
    note_reply(r, rep, i == 0);
    if (tr.submitted)
      submitted = true;
    bool stopped = tr.interrupted;
    tool_result_clear(&tr);
    if (stopped || agent_stop)
      break;
  }
  if (kept > 0 && kept < n_all)
    run_log(r, "step %ld: the reply had %zu tool calls: %zu were answered, the others left out", r->b.steps, n_all,
            kept);
  return submitted;
}

static void loop(struct run *r, cJSON *body, struct llm_client *llm) {
  const struct settings *s = r->s;
  cJSON *messages = cJSON_GetObjectItemCaseSensitive(body, "messages");
  struct edit_history *history = edit_history_new();
  struct tool_env env = {.profile = strcmp(s->tools, "lis") == 0 ? TOOLS_LIS : TOOLS_HUTCH,
                         .sandbox = &r->task,
                         .shell = pick_shell(r),
                         .working_dir = r->pc.working_dir,
                         .timeout = s->tool_timeout,
                         .history = history};
  if (strcmp(s->shell, "persistent") == 0)
    env.session = shell_session_new(&r->task, env.shell, r->pc.working_dir);
  console_sandbox(&r->con, r->task.id, env.shell, env.session != NULL);
  bool submitted = false;
  long replies = 0;
  while (!submitted) {
    if (agent_stop) {
      r->end_reason = interrupted_reason();
      break;
    }
    if (r->b.steps >= s->max_steps) {
      r->end_reason = "max_steps";
      r->exit_code = AGENT_EXIT_UNFINISHED;
      break;
    }
    if (budget_check_time(&r->b, monotonic_seconds()) || r->b.ended != BUDGET_GOES_ON)
      break;
    append_steps_remaining(messages, s->max_steps - r->b.steps);
    long tokens = conversation_tokens(r, messages);
    if (tokens > s->max_token_limit) {
      run_log(r, "token budget spent: about %ld tokens of %ld", tokens, s->max_token_limit);
      r->end_reason = "token_limit";
      r->exit_code = AGENT_EXIT_UNFINISHED;
      break;
    }
    struct llm_reply rep;
    hutch_error_t err = NULL;
    enum llm_status st = llm_chat(llm, body, &rep, &err);
    if (st == LLM_INTERRUPTED) {
      r->end_reason = interrupted_reason();
      break;
    }
    if (st == LLM_TIMED_OUT) {
      budget_check_time(&r->b, monotonic_seconds());
      break;
    }
    if (st != LLM_OK) {
      r->end_reason = "error";
      r->exit_code = fail_error(r, &err, AGENT_EXIT_LLM);
      break;
    }
    replies++;
    r->replies = replies;
    if (rep.has_cost) {
      r->cost += rep.cost;
      r->has_cost = true;
    }
    if (s->save_litellm_response)
      llm_saved_write(r->dir, replies, body, &rep, s->base_url, s->api_key);
    r->prompt_tokens += rep.prompt_tokens;
    r->completion_tokens += rep.completion_tokens;
    if (rep.has_usage)
      r->last_total = rep.total_tokens;
    r->model_calls++;
    r->model_seconds += rep.seconds;
    console_reply(&r->con, r->model_calls, &rep);
    /* Calls written as text are hutch's addition: the reference answers
     * such a reply with the no-call reminder. */
    bool text_mode = rep.n_calls == 0 && env.profile == TOOLS_HUTCH && llm_reply_text_calls(&rep);
    size_t n_all = rep.n_calls;
    llm_reply_keep_calls(&rep, budget_calls_kept(&r->b, n_all));
    budget_add_reply(&r->b, &rep, rep.n_calls);
    cJSON_AddItemToArray(messages, assistant_message(r, &rep, !text_mode));
    if (rep.n_calls == 0) {
      /* A reply without a call is a step too. */
      r->b.steps++;
      struct step_view v = {.step = r->b.steps,
                            .tool = "",
                            .outcome = TOOL_NO_CALL,
                            .with_model = true,
                            .model_seconds = rep.seconds,
                            .prompt_tokens = rep.prompt_tokens,
                            .completion_tokens = rep.completion_tokens};
      console_step(&r->con, &v);
      cJSON_AddItemToArray(messages, message("user", OBS_REMINDER));
      trajectory_add(&r->traj, r->b.steps, rep.content, rep.reasoning, "", NULL, OBS_REMINDER, rep.seconds, 0, -1,
                     NULL);
      note_reply(r, &rep, true);
    }
    bool ran_any = false;
    submitted = answer_calls(r, &env, messages, &rep, text_mode, n_all, &ran_any);
    llm_reply_clear(&rep);
    /* What the step made, into files/ before the trajectory that says so:
     * not after submit or a stop, when the copy at the end follows. */
    if (ran_any && !submitted && !agent_stop && r->b.ended == BUDGET_GOES_ON)
      copy_back_step(&r->cb, &r->task, r->b.steps, monotonic_seconds() - r->traj.start);
    save(r);
  }
  if (submitted) {
    r->end_reason = "submitted";
    r->exit_code = AGENT_EXIT_SUBMITTED;
  } else if (budget_end_reason(&r->b) && r->end_reason == NULL) {
    r->end_reason = budget_end_reason(&r->b);
    r->exit_code = r->b.ended == BUDGET_TIME ? AGENT_EXIT_TIMEOUT : AGENT_EXIT_UNFINISHED;
    run_log(r, "%s",
            r->b.ended == BUDGET_TIME ? "the run's time limit (--run-timeout) is reached"
                                      : "the run's conversation reached its size limit (--max-conversation-size)");
  }
  if (agent_stop && !submitted) {
    r->end_reason = interrupted_reason();
    r->exit_code = 128 + agent_stop;
  }
  shell_session_free(env.session);
  edit_history_free(history);
}

static void print_answer(struct run *r) {
  _cleanup_free_ char *path = xasprintf("%s/files/answer.txt", r->dir);
  size_t len = 0;
  _cleanup_free_ char *answer = read_file_at(AT_FDCWD, path, 1 << 20, &len);
  if (answer == NULL) {
    run_log(r, "no answer.txt was written");
    return;
  }
  _cleanup_free_ char *clean = text_utf8_sanitize(answer, len);
  run_log(r, "answer (%s):\n%.2000s", path, clean);
}

int agent_run(const struct settings *s) {
  /* hutch's own phases (hutch.timings): monotonic times, so that hutch
   * benchmark can put them beside its own clock. */
  double t_begin = monotonic_seconds(), t_sb = 0, t_sb_end = 0, t_in = 0, t_in_end = 0, t_out = 0, t_out_end = 0;
  struct run r = {.s = s, .exit_code = AGENT_EXIT_RUNTIME};
  console_init(&r.con, s->quiet, s->json);
  r.b = (struct budget){.max_steps = s->max_steps,
                        .max_calls = s->max_calls_per_reply,
                        .max_obs = (size_t)s->max_observation_size,
                        .max_conv = s->max_conversation_size,
                        .deadline = t_begin + s->run_timeout};
  hutch_error_t err = NULL;
  int code;
  if (prompt_config_load(s->prompt_config, &r.pc, &err) < 0)
    return fail_error(&r, &err, AGENT_EXIT_USAGE);
  cJSON *extra = NULL;
  if (s->extra_body) {
    extra = lis_parse_extra_body(s->extra_body);
    lis_fix_string_bools(extra);
    if (!cJSON_IsObject(extra)) {
      cJSON_Delete(extra);
      prompt_config_clear(&r.pc);
      fprintf(stderr, "hutch run: --extra-body wants a JSON object, got '%s'\n", s->extra_body);
      return AGENT_EXIT_USAGE;
    }
  }
  cJSON *tools = NULL;
  if (strcmp(s->tools, "lis") != 0 && strcmp(s->tools, "hutch") != 0) {
    fprintf(stderr, "hutch run: --tools wants lis or hutch, got '%s'\n", s->tools);
    cJSON_Delete(extra);
    prompt_config_clear(&r.pc);
    return AGENT_EXIT_USAGE;
  }
  tools = s->tools_file   ? tools_load_file(s->tools_file, &err)
          : s->tools_json ? tools_parse(s->tools_json, strlen(s->tools_json), "--lis: tools.py's schemas", &err)
                          : tools_schema(strcmp(s->tools, "lis") == 0 ? TOOLS_LIS : TOOLS_HUTCH,
                                         strcmp(s->shell, "persistent") == 0);
  if (tools == NULL) {
    cJSON_Delete(extra);
    prompt_config_clear(&r.pc);
    return fail_error(&r, &err, AGENT_EXIT_USAGE);
  }
  r.dir = make_run_dir(s->output_dir, &err);
  if (r.dir == NULL) {
    cJSON_Delete(tools);
    cJSON_Delete(extra);
    prompt_config_clear(&r.pc);
    return fail_error(&r, &err, AGENT_EXIT_RUNTIME);
  }
  /* The sandbox's files are copied into the run directory, the input
   * directory into the sandbox: neither may be one of hutch's own. */
  if (hutch_check_host_path(r.dir, true, s->store, s->state_dir, NULL, &err) < 0 ||
      (s->input_dir && hutch_check_host_path(s->input_dir, false, s->store, s->state_dir, NULL, &err) < 0)) {
    cJSON_Delete(tools);
    rmdir(r.dir);
    free(r.dir);
    cJSON_Delete(extra);
    prompt_config_clear(&r.pc);
    return fail_error(&r, &err, AGENT_EXIT_USAGE);
  }
  _cleanup_free_ char *log_path = xasprintf("%s/run.log", r.dir);
  r.con.log = fopen(log_path, "we");
  hutch_set_log_handler(runtime_log, &r);
  _cleanup_free_ char *traj_path = xasprintf("%s/trajectory.json", r.dir);
  trajectory_init(&r.traj, traj_path, s->query);
  copy_back_init(&r.cb, r.dir, r.pc.output_dir, s->copy_limit, log_msg, &r);
  r.partial = true;
  _cleanup_free_ char *url = llm_redact_url(s->base_url);
  console_start(&r.con, r.dir, s->model, url);
  if (s->settings_file)
    run_log(&r, "settings from %s", s->settings_file);

  cJSON *body = cJSON_CreateObject();
  struct llm_client *llm = NULL;
  t_sb = monotonic_seconds();
  int sb_rc = setup_sandbox(&r, &err);
  t_sb_end = t_in = monotonic_seconds();
  if (sb_rc < 0) {
    record_settings(&r);
    r.end_reason = "error";
    r.partial = false;
    save(&r);
    code = fail_error(&r, &err, AGENT_EXIT_RUNTIME);
    goto out;
  }
  record_settings(&r);
  if (prepare_dirs(&r, s->input_dir != NULL, &err) < 0) {
    r.end_reason = "error";
    code = fail_error(&r, &err, AGENT_EXIT_RUNTIME);
    goto teardown;
  }
  git_init_start(&r.git, &r.task, r.pc.working_dir);
  if (s->input_dir) {
    struct hutch_copy_report rep;
    if (git_init_overlaps(r.pc.working_dir, r.pc.input_dir))
      git_wait(&r);
    if (transfer_in(&r.task, s->input_dir, r.pc.input_dir, &rep, &err) < 0) {
      r.end_reason = agent_stop ? "interrupted" : "error";
      code = fail_error(&r, &err, AGENT_EXIT_RUNTIME);
      goto teardown;
    }
    run_log(&r, "copied %llu files (%llu bytes) from %s to %s%s", (unsigned long long)rep.files,
            (unsigned long long)rep.bytes, s->input_dir, r.pc.input_dir,
            rep.skipped ? " (symlinks and special files skipped)" : "");
  }
  t_in_end = monotonic_seconds();

  {
    _cleanup_free_ char *sys = prompt_expand(r.pc.system_prompt, &r.pc, NULL);
    _cleanup_free_ char *inst = prompt_expand(r.pc.instance_prompt, &r.pc, s->query);
    cJSON_AddStringToObject(body, "model", lis_request_model(s->model));
    cJSON *messages = cJSON_AddArrayToObject(body, "messages");
    cJSON_AddItemToArray(messages, message("system", sys));
    cJSON_AddItemToArray(messages, message("user", inst));
    cJSON_AddItemToObject(body, "tools", tools);
    tools = NULL;
    cJSON_AddNumberToObject(body, "max_tokens", (double)s->max_tokens_per_call);
    if (s->has_temperature)
      cJSON_AddNumberToObject(body, "temperature", s->temperature);
    for (cJSON *e = extra ? extra->child : NULL; e; e = e->next) {
      cJSON_DeleteItemFromObjectCaseSensitive(body, e->string);
      cJSON_AddItemToObject(body, e->string, cJSON_Duplicate(e, true));
    }
    struct llm_options lo = {
        .base_url = s->base_url,
        .api_key = s->api_key,
        .timeout = s->llm_timeout,
        .max_tries = (int)s->max_tries,
        .retry_delay = s->retry_delay,
        .max_reply = (size_t)s->max_reply_size,
        .min_max_tokens = MIN_MAX_TOKENS,
        .stop = &agent_stop,
        .deadline = r.b.deadline,
        .log = log_msg,
        .log_data = &r,
    };
    llm = llm_client_new(&lo);
    save(&r);
    loop(&r, body, llm);
    code = r.exit_code;
    git_wait(&r);
    /* --verify: in the sandbox as the model left it, before the copy-back. */
    /* Not after the time limit: the run is over. */
    if (s->verify && !agent_stop && !r.task.removed && r.b.ended != BUDGET_TIME)
      verify_run(&r.task, s->verify, r.pc.working_dir, s->tool_timeout, &r.traj);
  }

teardown:
  git_wait(&r);
  /* The copy-back runs even after a stop request: that is when it matters.
   * What still runs in the sandbox is killed first; its files stay. */
  r.task.stop = NULL;
  if (agent_stop && !r.task.removed) {
    task_sandbox_halt(&r.task);
    run_log(&r, "stopped: copying back %s (bounded by --copy-limit and %.0f s)", r.pc.output_dir, HUTCH_COPY_SECONDS);
  }
  r.partial = agent_stop != 0;
  if (agent_stop)
    r.end_reason = "interrupted";
  t_out = monotonic_seconds();
  if (!r.task.removed) {
    hutch_error_t cerr = NULL;
    if (copy_back_final(&r.cb, &r.task, &cerr) < 0) {
      trajectory_set(&r.traj, "copy_back_error", cJSON_CreateString(cerr->msg));
      fail_error(&r, &cerr, 0);
    }
  }
  t_out_end = monotonic_seconds();
  if (agent_stop)
    code = 128 + agent_stop;
  {
    cJSON *tm = cJSON_CreateObject();
    cJSON_AddNumberToObject(tm, "begin", t_begin);
    cJSON_AddNumberToObject(tm, "sandbox", t_sb_end - t_sb);
    cJSON_AddNumberToObject(tm, "input_copy", t_in_end > t_in ? t_in_end - t_in : 0);
    cJSON_AddNumberToObject(tm, "copy_back", t_out_end - t_out);
    cJSON_AddNumberToObject(tm, "saved", monotonic_seconds());
    trajectory_set(&r.traj, "timings", tm);
  }
  save(&r);
  {
    hutch_error_t derr = NULL;
    if (!r.task.removed && hutch_sandbox_destroy(r.task.sb, &derr) < 0)
      fail_error(&r, &derr, 0);
    else if (r.task.removed)
      hutch_sandbox_close(r.task.sb);
    r.task.sb = NULL;
  }
  if (r.net_proxy) {
    _cleanup_free_ char *audit_log = xasprintf("%s/proxy.log", r.dir);
    struct hutch_net_summary ns = {0};
    hutch_error_t nerr = NULL; /* in ns.unread, which the line says */
    hutch_net_summarize(audit_log, &ns, &nerr);
    hutch_error_free(&nerr);
    char line[512];
    hutch_net_summary_format(&ns, line, sizeof(line));
    console_clear(&r.con);
    fprintf(stderr, "network: %s\n", line);
  }
  print_answer(&r);
  struct run_totals t = {.end_reason = r.end_reason,
                         .steps = r.b.steps,
                         .model_calls = r.model_calls,
                         .prompt_tokens = r.prompt_tokens,
                         .completion_tokens = r.completion_tokens,
                         .seconds = monotonic_seconds() - t_begin,
                         .model_seconds = r.model_seconds,
                         .tool_seconds = r.tool_seconds};
  console_end(&r.con, &t, code, r.partial, r.cb.from, r.dir);
out:
  cJSON_Delete(tools);
  llm_client_free(llm);
  cJSON_Delete(body);
  cJSON_Delete(extra);
  trajectory_free(&r.traj);
  prompt_config_clear(&r.pc);
  hutch_image_clear(&r.image);
  if (r.policy)
    hutch_policy_free(r.policy);
  if (r.store)
    hutch_store_close(r.store);
  if (r.env) {
    for (char **e = r.env; *e; e++)
      free(*e);
    free(r.env);
  }
  free(r.task.id);
  hutch_set_log_handler(NULL, NULL);
  if (r.con.log)
    fclose(r.con.log);
  console_free(&r.con);
  free(r.dir);
  return code;
}
