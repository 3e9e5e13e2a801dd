/* SPDX-License-Identifier: Apache-2.0 */
/* One /run_code request, in a sandbox made for it from the server's image
 * and destroyed after: no network (loopback of its own only), the
 * request's memory limit, the policy's other limits.  Its files and the
 * code go into WORKDIR (paths in `files` relative to it, or absolute
 * inside the sandbox); a compiled language's compile step runs first, with
 * compile_timeout, and the program only when it succeeded; fetch_files are
 * read back (a path that is not a regular file is left out, as
 * SandboxFusion does).  The answer is SandboxFusion's RunCodeResponse, its
 * status decided as its server decides it: a step that could not be run
 * (Error) makes SandboxError, a time limit or a non-zero exit Failed,
 * else Success. */
#include "config.h"

#include "serve.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util.h"

#define WORKDIR "/workspace"

cJSON *serve_sandbox_error(const char *message) {
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "status", "SandboxError");
  cJSON_AddStringToObject(j, "message", message);
  cJSON_AddNullToObject(j, "compile_result");
  cJSON_AddNullToObject(j, "run_result");
  cJSON_AddNullToObject(j, "executor_pod_name");
  cJSON_AddObjectToObject(j, "files");
  return j;
}

/* The client hung up: its request's steps are killed.  Bytes it sent
 * beyond its request are dropped (no request follows on a connection),
 * so that they do not keep the wait's poll awake. */
static bool client_gone(void *data, const cJSON *request) {
  (void)request;
  struct serve_client *c = data;
  char junk[4096];
  for (int i = 0; i < 16; i++) {
    ssize_t n = recv(c->fd, junk, sizeof(junk), MSG_DONTWAIT);
    if (n == 0)
      return true;
    if (n < 0)
      return errno != EAGAIN && errno != EINTR;
  }
  return false;
}

/* A path of the request inside the sandbox. */
static char *inside(const char *path) {
  return path[0] == '/' ? xstrdup(path) : xasprintf(WORKDIR "/%s", path);
}

struct step {
  bool ran;   /* it was started */
  bool error; /* it could not be run: status Error */
  char *why;  /* then why */
  double seconds;
  struct mcp_exec_result r;
};

static void step_run(const struct serve_config *cfg, struct hutch_sandbox *sb, const char *const *argv,
                     const char *input, size_t input_len, double timeout, struct mcp_cancel *cancel, struct step *s) {
  hutch_error_t err = NULL;
  double t0 = monotonic_seconds();
  s->ran = true;
  if (mcp_exec(&cfg->exec, sb, argv, WORKDIR, input, input_len, timeout, cancel, &s->r, &err) < 0) {
    s->error = true;
    s->why = hutch_error_format(err);
    hutch_error_free(&err);
  }
  s->seconds = monotonic_seconds() - t0;
  if (s->r.exit.timed_out)
    serve_metrics_count(cfg->metrics, &cfg->metrics->timeouts);
}

static cJSON *step_json(const struct step *s) {
  if (!s->ran)
    return cJSON_CreateNull();
  cJSON *j = cJSON_CreateObject();
  const struct hutch_exit *e = &s->r.exit;
  cJSON_AddStringToObject(j, "status", s->error ? "Error" : e->timed_out ? "TimeLimitExceeded" : "Finished");
  cJSON_AddNumberToObject(j, "execution_time", s->seconds);
  /* As Python's subprocess says it: a signal is its negative number. */
  if (s->error || e->timed_out)
    cJSON_AddNullToObject(j, "return_code");
  else
    cJSON_AddNumberToObject(j, "return_code", e->signal ? -e->signal : e->status);
  _cleanup_free_ char *out = mcp_utf8(s->r.out ? s->r.out : "", s->r.out_len);
  _cleanup_free_ char *errs = s->error ? xstrdup(s->why) : mcp_utf8(s->r.err ? s->r.err : "", s->r.err_len);
  cJSON_AddStringToObject(j, "stdout", out);
  cJSON_AddStringToObject(j, "stderr", errs);
  return j;
}

static bool step_ok(const struct step *s) {
  return !s->error && !s->r.exit.timed_out && s->r.exit.signal == 0 && s->r.exit.status == 0;
}

static void step_clear(struct step *s) {
  free(s->why);
  mcp_exec_result_clear(&s->r);
}

int serve_sandbox_make(const struct serve_config *cfg, uint64_t memory, struct hutch_sandbox **sb, hutch_error_t *err) {
  const struct hutch_image *im = &cfg->image;
  struct hutch_sandbox_config sc = {
      .rootfs = im->rootfs,
      .rootfs_lowers = (const char *const *)im->lowers,
      .image = im->name ? im->name : im->digest,
      .workdir = im->workdir,
      .rootfs_subordinate_ids = im->ids_preserved,
      .policy = cfg->policy,
      .env = (const char *const *)cfg->env,
      .state_dir = cfg->state_dir,
      .store = cfg->store,
      .limits = {.memory = memory, .no_cgroups = memory && cfg->no_cgroups},
      .net = HUTCH_NET_NONE,
      /* Tied to the thread that made it (a worker, or --warm's): a killed
       * server takes it along. */
      .die_with_creator = true,
  };
  /* The reaper is told of its name before it starts: a server killed
   * while it starts leaves none behind either. */
  static atomic_uint seq;
  char name[64];
  snprintf(name, sizeof(name), "serve-%d-%u", (int)getpid(), atomic_fetch_add(&seq, 1));
  struct hutch_sandbox_extras x = {.name = name};
  if (mcp_reaper_announce(cfg->reaper_fd, true, name, err) < 0)
    return -1;
  int r = hutch_sandbox_create_with(&sc, &x, sb, err);
  hutch_error_t ignored = NULL;
  if (r < 0) {
    if (mcp_reaper_announce(cfg->reaper_fd, false, name, &ignored) < 0)
      hutch_error_free(&ignored);
    return -1;
  }
  if (mcp_reaper_announce(cfg->reaper_fd, true, hutch_sandbox_id(*sb), err) < 0 ||
      mcp_reaper_announce(cfg->reaper_fd, false, name, err) < 0) {
    if (hutch_sandbox_destroy(*sb, &ignored) < 0)
      hutch_error_free(&ignored);
    *sb = NULL;
    return -1;
  }
  serve_metrics_gauge(cfg->metrics, &cfg->metrics->sandboxes, 1);
  return 0;
}

void serve_sandbox_drop(const struct serve_config *cfg, struct hutch_sandbox *sb) {
  hutch_error_t err = NULL;
  char id[40];
  snprintf(id, sizeof(id), "%s", hutch_sandbox_id(sb));
  if (hutch_sandbox_destroy(sb, &err) < 0) {
    hutch_log_error(HUTCH_LOG_WARNING, err); /* the reaper removes it when the server ends */
    hutch_error_free(&err);
  } else if (mcp_reaper_announce(cfg->reaper_fd, false, id, &err) < 0) {
    hutch_log_error(HUTCH_LOG_WARNING, err);
    hutch_error_free(&err);
  }
  serve_metrics_gauge(cfg->metrics, &cfg->metrics->sandboxes, -1);
}

/* A file made, or replaced when the request's files put one there. */
static int put_file(struct hutch_sandbox *sb, const char *path, const void *data, size_t len, hutch_error_t *err) {
  if (hutch_sandbox_write_file(sb, path, data, len, true, err) == 0)
    return 0;
  if ((*err)->errnum != EEXIST)
    return -1;
  hutch_error_free(err);
  return hutch_sandbox_write_file(sb, path, data, len, false, err);
}

/* The request's files and its code into the sandbox. */
static int put_files(struct hutch_sandbox *sb, const struct serve_run_request *rq, const struct serve_lang *lang,
                     hutch_error_t *err) {
  if (hutch_sandbox_mkdirs(sb, WORKDIR, err) < 0)
    return -1;
  for (size_t i = 0; i < rq->n_files; i++) {
    _cleanup_free_ char *p = inside(rq->files[i].path);
    if (put_file(sb, p, rq->files[i].data, rq->files[i].len, err) < 0)
      return hutch_error_wrap(err, "files: %s", rq->files[i].path);
  }
  _cleanup_free_ char *src = inside(lang->source);
  return put_file(sb, src, rq->code, strlen(rq->code), err);
}

/* fetch_files: each regular file, base64, under the name asked; bounded
 * by --max-file each, and by the answer's worth of them together. */
static void fetch_files(const struct serve_config *cfg, struct hutch_sandbox *sb, const struct serve_run_request *rq,
                        cJSON *files, char **note) {
  size_t total = 0;
  for (size_t i = 0; i < rq->n_fetch; i++) {
    _cleanup_free_ char *p = inside(rq->fetch[i]);
    hutch_error_t err = NULL;
    if (hutch_sandbox_file_kind(sb, p, &err) != HUTCH_FILE_REGULAR) {
      hutch_error_free(&err);
      continue;
    }
    char *data = NULL;
    size_t len = 0;
    if (total > cfg->max_body || hutch_sandbox_read_file(sb, p, cfg->max_file, &data, &len, &err) < 0) {
      _cleanup_free_ char *why =
          err ? hutch_error_format(err) : xstrdup("left out: the files fetched together are past --max-body");
      char *t = xasprintf("%s%s%s: %s", *note ? *note : "", *note ? "; " : "", rq->fetch[i], why);
      free(*note);
      *note = t;
      hutch_error_free(&err);
      continue;
    }
    total += len;
    char *b64 = base64_encode(data, len);
    cJSON_AddStringToObject(files, rq->fetch[i], b64);
    free(b64);
    free(data);
  }
}

cJSON *serve_run(const struct serve_config *cfg, const struct serve_run_request *rq, struct serve_client *client,
                 enum serve_outcome *outcome, char sandbox_id[40]) {
  sandbox_id[0] = '\0';
  const struct serve_lang *lang = serve_lang_find(rq->language);
  size_t li = 0;
  while (lang && serve_lang_at(li) != lang)
    li++;
  if (lang == NULL || !cfg->languages[li]) {
    *outcome = SERVE_SANDBOX_ERROR;
    _cleanup_free_ char *have = xstrdup("");
    for (size_t i = 0; serve_lang_at(i); i++)
      if (cfg->languages[i]) {
        char *t = xasprintf("%s%s%s", have, have[0] ? ", " : "", serve_lang_at(i)->name);
        free(have);
        have = t;
      }
    _cleanup_free_ char *m =
        lang ? xasprintf("language %s is not available on this server: its image %s has no %s (languages here: %s)",
                         rq->language, cfg->image_name, lang->tool, have)
             : xasprintf("language %s is not supported by hutch serve (languages here: %s)", rq->language, have);
    return serve_sandbox_error(m);
  }
  hutch_error_t err = NULL;
  struct hutch_sandbox *sb = NULL;
  uint64_t memory = rq->memory_mb > 0 ? (uint64_t)rq->memory_mb << 20 : 0;
  double t0 = monotonic_seconds(), t1 = 0, t2 = 0, t3 = 0;
  sb = serve_warm_take(cfg->warmer, memory);
  if ((sb == NULL && serve_sandbox_make(cfg, memory, &sb, &err) < 0) ||
      (snprintf(sandbox_id, 40, "%s", hutch_sandbox_id(sb)), t1 = monotonic_seconds(),
       put_files(sb, rq, lang, &err) < 0)) {
    serve_metrics_count(cfg->metrics, &cfg->metrics->sandbox_failures);
    _cleanup_free_ char *m = hutch_error_format(err);
    hutch_error_free(&err);
    if (sb)
      serve_sandbox_drop(cfg, sb);
    *outcome = SERVE_SANDBOX_ERROR;
    return serve_sandbox_error(m);
  }
  t2 = monotonic_seconds();
  struct mcp_cancel cancel = {.fd = client->fd, .gone = client_gone, .data = client};
  struct step compile = {0}, run = {0};
  if (lang->compile[0])
    step_run(cfg, sb, lang->compile, NULL, 0, rq->compile_timeout, &cancel, &compile);
  if (!compile.ran || step_ok(&compile))
    step_run(cfg, sb, lang->run, rq->has_stdin ? rq->stdin_text : NULL, rq->stdin_len, rq->run_timeout, &cancel, &run);
  cJSON *files = cJSON_CreateObject();
  char *note = NULL;
  if (!compile.r.cancelled && !run.r.cancelled)
    fetch_files(cfg, sb, rq, files, &note);
  t3 = monotonic_seconds();
  serve_sandbox_drop(cfg, sb);
  hutch_debug("serve: %s: sandbox %.1f ms, files in %.1f ms, steps and files out %.1f ms, removal %.1f ms", sandbox_id,
              (t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3, (monotonic_seconds() - t3) * 1e3);

  const char *status = "Success";
  _cleanup_free_ char *message = NULL;
  if (compile.error || run.error) {
    status = "SandboxError";
    message = xstrdup(compile.error ? compile.why : run.why);
    serve_metrics_count(cfg->metrics, &cfg->metrics->sandbox_failures);
  } else if ((compile.ran && !step_ok(&compile)) || !step_ok(&run)) {
    status = "Failed";
  }
  /* What was cut is said: never a silently shorter output. */
  const struct mcp_exec_result *cut[] = {&compile.r, &run.r};
  for (size_t i = 0; i < ARRAY_SIZE(cut); i++)
    if (cut[i]->out_cut || cut[i]->err_cut) {
      char *t = xasprintf("%s%s%s output past %zu bytes was cut (hutch serve --max-output)", message ? message : "",
                          message ? "; " : "", i == 0 ? "the compile step's" : "the program's", cfg->exec.max_output);
      free(message);
      message = t;
    }
  if (note) {
    char *t = xasprintf("%s%sfetch_files: %s", message ? message : "", message ? "; " : "", note);
    free(message);
    message = t;
    free(note);
  }
  *outcome = compile.r.cancelled || run.r.cancelled ? SERVE_REJECTED
             : strcmp(status, "Success") == 0       ? SERVE_SUCCESS
             : strcmp(status, "Failed") == 0        ? SERVE_FAILED
                                                    : SERVE_SANDBOX_ERROR;
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "status", status);
  cJSON_AddStringToObject(j, "message", message ? message : "");
  cJSON_AddItemToObject(j, "compile_result", step_json(&compile));
  cJSON_AddItemToObject(j, "run_result", step_json(&run));
  cJSON_AddNullToObject(j, "executor_pod_name");
  cJSON_AddItemToObject(j, "files", files);
  step_clear(&compile);
  step_clear(&run);
  return j;
}
