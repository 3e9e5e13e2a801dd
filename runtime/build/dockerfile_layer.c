/* SPDX-License-Identifier: Apache-2.0 */
/* The layers of a Dockerfile build.  Each is a store entry whose name is
 * its cache key (the parent's key, the instruction, the build arguments in
 * effect, and for COPY the content hash of its sources): a rebuild finds
 * the entry and reuses it, and a changed input gives another key. */
#include "config.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "build_audit.h"
#include "build_layer.h"
#include "dockerfile_build.h"
#include "idmap.h"
#include "sandbox.h"
#include "store.h"
#include "text_escape.h"
#include "util.h"

void df_say(struct df_builder *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  _cleanup_free_ char *line = xvasprintf(fmt, ap);
  va_end(ap);
  _cleanup_free_ char *safe = text_escape_cstr(line);
  dprintf(b->o->output_fd, "%s\n", safe);
  if (b->log_fd >= 0)
    dprintf(b->log_fd, "%s\n", safe);
}

void df_key_next(char key[SHA256_HEX_SIZE], const char *kind, const char *text, const char *extra) {
  struct sha256_ctx ctx;
  sha256_init(&ctx);
  const char *parts[] = {"hutch-dockerfile-v1", key, kind, text, extra ? extra : ""};
  for (size_t i = 0; i < ARRAY_SIZE(parts); i++)
    sha256_update(&ctx, parts[i], strlen(parts[i]) + 1);
  uint8_t d[SHA256_DIGEST_SIZE];
  sha256_final(&ctx, d);
  sha256_hex(d, key);
}

static int set_top(struct df_builder *b, struct df_stage *st, const char *key, hutch_error_t *err) {
  _cleanup_free_ char *digest = xasprintf("sha256:%s", key);
  struct hutch_image img = {0};
  if (hutch_image_lookup(b->store, digest, &img, err) < 0)
    return -1;
  hutch_image_clear(&st->top);
  st->top = img;
  return 0;
}

bool df_layer_cached(struct df_builder *b, struct df_stage *st, const char *key, hutch_error_t *err) {
  if (b->o->no_cache || !store_has_entry(b->store, key))
    return false;
  return set_top(b, st, key, err) == 0;
}

/* The layer's meta.json: what every entry has, and its lowers. */
static cJSON *layer_meta(struct df_builder *b, struct df_stage *st, const char *key, const char *tree,
                         const struct df_instr *in) {
  struct build_tree_stats t;
  build_tree_stats(tree, &t);
  cJSON *j = build_layer_meta(key, b->origin, b->maps, &st->top, &t);
  if (in)
    cJSON_AddStringToObject(j, "dockerfile_step", in->text);
  return j;
}

static int commit(struct df_builder *b, struct df_stage *st, struct store_stage *stage, const char *key,
                  const struct df_instr *in, cJSON *image, hutch_error_t *err) {
  cJSON *meta = layer_meta(b, st, key, stage->rootfs, in);
  if (image)
    cJSON_AddItemToObject(meta, "image", image);
  int r = store_stage_commit(b->store, stage, key, meta, err);
  cJSON_Delete(meta);
  stage->fd = -1;
  return r < 0 ? -1 : set_top(b, st, key, err);
}

/* ---- RUN ------------------------------------------------------------------------ */

static char **step_env(const struct df_stage *st) {
  size_t n = 0;
  for (char **e = st->args; e && *e; e++)
    n++;
  for (char **e = st->env; e && *e; e++)
    n++;
  char **env = xcalloc(n + 1, sizeof(*env));
  size_t k = 0;
  /* ARGs first: an ENV of the same name wins, as in Docker. */
  for (char **e = st->args; e && *e; e++)
    env[k++] = xstrdup(*e);
  for (char **e = st->env; e && *e; e++)
    env[k++] = xstrdup(*e);
  return env;
}

static int run_in(struct df_builder *b, struct df_stage *st, struct hutch_sandbox *sb, char **argv, int *code,
                  hutch_error_t *err) {
  _cleanup_close_ int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  _cleanup_strv_ char **env = step_env(st);
  struct hutch_process proc = {
      .argv = (const char *const *)argv,
      .env = (const char *const *)env,
      .workdir = st->workdir ? st->workdir : "/",
      .stdio = {devnull},
  };
  struct hutch_exit ex = {0};
  double timeout = b->o->step_timeout > 0 ? b->o->step_timeout : BUILD_STEP_DEFAULT_TIMEOUT;
  if (build_step_exec(sb, &proc, timeout, &b->out, &ex, err) < 0)
    return -1;
  *code = hutch_exit_code(&ex);
  if (*code != 0)
    df_say(b, "  %s %d%s%s", ex.signal ? "killed by signal" : "exit status", ex.signal ? ex.signal : ex.status,
           ex.failure[0] ? ": " : "", ex.failure);
  return 0;
}

/* The proxy's audit lines of a RUN step (its sandbox's every request and
 * decision, written by hutch's proxy when the sandbox is destroyed) go to
 * the build log, as ADD's do: the log then says what the build reached.
 * Copied through a buffer (the proxy bounded them: log_max in
 * hutch-policy(5)) and removed, so the stage commits without it; what the
 * step chose to ask for is capped and escaped as its output is. */
static void log_proxy_lines(struct df_builder *b, int stage_fd) {
  _cleanup_close_ int fd = openat(stage_fd, "proxy.log", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  unlinkat(stage_fd, "proxy.log", 0);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
    return;
  char buf[16384];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    build_output_log(&b->out, buf, (size_t)n);
  }
}

int df_layer_run(struct df_builder *b, struct df_stage *st, const struct df_instr *in, char **argv, const char *key,
                 hutch_error_t *err) {
  struct store_stage stage = {.fd = -1};
  struct hutch_sandbox *sb = NULL;
  int ret = -1, code = 0;
  if (build_check_depth(&st->top, err) < 0 || store_stage_begin(b->store, &stage, err) < 0)
    return -1;
  _cleanup_free_ char *state_dir = xasprintf("%s/tmp/%s/state", hutch_store_path(b->store), stage.name);
  _cleanup_free_ char *proxy_log = xasprintf("%s/tmp/%s/proxy.log", hutch_store_path(b->store), stage.name);
  struct hutch_sandbox_config cfg = {
      .rootfs = st->top.rootfs,
      .rootfs_lowers = (const char *const *)st->top.lowers,
      .image = st->top.name ? st->top.name : st->top.digest,
      .rootfs_subordinate_ids = st->top.ids_preserved || (b->maps && b->maps->kind != IDMAP_SINGLE),
      .build_caps = true,
      .policy = b->policy,
      .hostname = "build",
      .state_dir = state_dir,
      .net = b->net ? HUTCH_NET_PROXY : HUTCH_NET_NONE,
      .net_allow = (const char *const *)b->allow,
      .net_policy = b->net ? b->o->net_policy : NULL,
      .net_audit_log = b->net ? proxy_log : NULL,
      /* The build's own: gone with a killed build (build_sweep.c). */
      .die_with_creator = true,
  };
  if (hutch_sandbox_create(&cfg, &sb, err) < 0)
    goto out;
  if (run_in(b, st, sb, argv, &code, err) < 0)
    goto out;
  if (code != 0) {
    ret = code;
    goto out;
  }
  if (build_copy_sandbox_layer(sb, stage.rootfs, err) < 0)
    goto out;
  build_prune_sandbox_files(stage.rootfs, &st->top, false);
  int r = hutch_sandbox_destroy(sb, err);
  sb = NULL;
  if (b->net)
    log_proxy_lines(b, stage.fd);
  if (r < 0 || remove_tree_at(stage.fd, "state") < 0) {
    if (err && *err == NULL)
      hutch_error_sys(err, "remove %s", state_dir);
    goto out;
  }
  ret = commit(b, st, &stage, key, in, NULL, err);
out:
  if (sb) {
    _cleanup_error_ hutch_error_t e = NULL;
    if (hutch_sandbox_destroy(sb, &e) < 0)
      hutch_warn("build: %s", e->msg);
    if (b->net && stage.fd >= 0)
      log_proxy_lines(b, stage.fd);
  }
  if (stage.fd >= 0)
    store_stage_abort(b->store, &stage);
  return ret;
}

/* ---- COPY, ADD, WORKDIR ------------------------------------------------------------ */

struct copy_job {
  const struct df_copy *copy;
  const char *dir;
  int layer_fd;
  int list_fd; /* where the child hands back what it copied (copied_header, then the list), -1: nowhere */
};

struct copied_header {
  uint64_t files, bytes, list_len;
};

/* In a user namespace with the caller's maps: the owners COPY --chown
 * names are the sandbox's ids. */
static int copy_child(void *data, hutch_error_t *err) {
  struct copy_job *job = data;
  if (job->copy == NULL) {
    _cleanup_close_ int fd = -1;
    return df_layer_mkdirs(job->layer_fd, job->dir, 0, 0, &fd, err);
  }
  struct df_copied copied = {0};
  struct df_copy c = *job->copy;
  c.copied = job->list_fd >= 0 ? &copied : NULL;
  int r = df_copy_into(&c, job->layer_fd, err);
  /* What was copied is handed back whether or not the copy went through. */
  struct copied_header h = {copied.files, copied.bytes, copied.list.len};
  if (job->list_fd >= 0 && (write_all(job->list_fd, &h, sizeof(h)) < 0 ||
                            (h.list_len && write_all(job->list_fd, copied.list.data, copied.list.len) < 0)))
    r = r < 0 ? r : hutch_error_sys(err, "hand back the files copied");
  free(copied.list.data);
  return r;
}

/* What the child copied, into the build's audit log. */
static void audit_copied(struct df_builder *b, const struct df_copy *copy, int fd, bool ok) {
  struct copied_header h = {0};
  _cleanup_free_ char *list = NULL;
  if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
    h = (struct copied_header){0};
  if (h.list_len > AUDIT_FILES_MAX)
    h.list_len = 0;
  if (h.list_len) {
    list = xmalloc(h.list_len);
    if (pread(fd, list, h.list_len, sizeof(h)) != (ssize_t)h.list_len)
      h.list_len = 0;
  }
  _cleanup_free_ const char **sources = xcalloc(copy->n_sources + 1, sizeof(*sources));
  for (size_t i = 0; i < copy->n_sources; i++)
    sources[i] = copy->sources[i];
  build_audit_copy(&b->audit,
                   copy->audit_from ? copy->audit_from
                   : copy->context  ? "context"
                                    : "stage",
                   sources, copy->dest, list, h.list_len, h.files, h.bytes, ok);
}

int df_layer_make(struct df_builder *b, struct df_stage *st, const struct df_instr *in, const char *key,
                  df_layer_fill_fn fill, void *data, hutch_error_t *err) {
  struct store_stage stage = {.fd = -1};
  if (build_check_depth(&st->top, err) < 0 || store_stage_begin(b->store, &stage, err) < 0)
    return -1;
  int ret = -1;
  _cleanup_close_ int layer_fd = open(stage.rootfs, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (layer_fd < 0) {
    hutch_error_sys(err, "open %s", stage.rootfs);
    goto out;
  }
  if (fill(b, stage.rootfs, layer_fd, data, err) < 0)
    goto out;
  ret = commit(b, st, &stage, key, in, NULL, err);
out:
  if (stage.fd >= 0)
    store_stage_abort(b->store, &stage);
  return ret;
}

int df_layer_fill_copy(struct df_builder *b, const struct df_copy *copy, const char *dir, int layer_fd,
                       hutch_error_t *err) {
  _cleanup_close_ int list_fd = -1;
  if (copy != NULL && b->audit.log.log_fd >= 0) {
    list_fd = memfd_create("hutch-copied", MFD_CLOEXEC);
    if (list_fd < 0)
      return hutch_error_sys(err, "COPY: memfd_create for the audit log's list of files");
  }
  struct copy_job job = {copy, dir, layer_fd, list_fd};
  int r = userns_run(b->maps, 0, copy_child, &job, err);
  if (list_fd >= 0)
    audit_copied(b, copy, list_fd, r >= 0);
  return r;
}

struct copy_fill {
  const struct df_copy *copy;
  const char *dir;
};

static int fill_copy(struct df_builder *b, const char *layer, int layer_fd, void *data, hutch_error_t *err) {
  struct copy_fill *f = data;
  (void)layer;
  return df_layer_fill_copy(b, f->copy, f->dir, layer_fd, err);
}

int df_layer_copy(struct df_builder *b, struct df_stage *st, const struct df_instr *in, const struct df_copy *copy,
                  const char *dir, const char *key, hutch_error_t *err) {
  struct copy_fill f = {copy, dir};
  return df_layer_make(b, st, in, key, fill_copy, &f, err);
}

/* ---- the image's defaults ------------------------------------------------------------ */

static cJSON *strv_json(char **v) {
  cJSON *a = cJSON_CreateArray();
  for (; v && *v; v++)
    cJSON_AddItemToArray(a, cJSON_CreateString(*v));
  return a;
}

int df_layer_config(struct df_builder *b, struct df_stage *st, char digest[80], hutch_error_t *err) {
  cJSON *image = cJSON_Duplicate(st->config, true);
  cJSON_AddItemToObject(image, "env", strv_json(st->env));
  if (st->workdir)
    cJSON_AddStringToObject(image, "workdir", st->workdir);
  if (st->user)
    cJSON_AddStringToObject(image, "user", st->user);
  _cleanup_free_ char *text = cJSON_PrintUnformatted(image);
  char key[SHA256_HEX_SIZE];
  memcpy(key, st->key, sizeof(key));
  df_key_next(key, "config", text, NULL);
  snprintf(digest, 80, "sha256:%s", key);
  if (store_has_entry(b->store, key)) {
    cJSON_Delete(image);
    return 0;
  }
  struct store_stage stage = {.fd = -1};
  if (store_stage_begin(b->store, &stage, err) < 0) {
    cJSON_Delete(image);
    return -1;
  }
  int r = commit(b, st, &stage, key, NULL, image, err);
  if (stage.fd >= 0)
    store_stage_abort(b->store, &stage);
  return r;
}
