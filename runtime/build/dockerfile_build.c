/* SPDX-License-Identifier: Apache-2.0 */
/* hutch_dockerfile_build: the instructions of a Dockerfile in order, stage
 * by stage, with the build's state (ARG, ENV, WORKDIR, USER, SHELL, the
 * image's defaults) that substitution and the RUN steps see. */
#include "config.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "build_layer.h"
#include "build_sweep.h"
#include "dockerfile_build.h"
#include "idmap.h"
#include "image_layers.h"
#include "manifest.h"
#include "store.h"
#include "text_escape.h"
#include "util.h"

static void strv_set(char ***v, const char *kv) {
  size_t klen = strcspn(kv, "=") + 1, n = 0;
  for (; *v && (*v)[n]; n++)
    if (strncmp((*v)[n], kv, klen) == 0) {
      free((*v)[n]);
      (*v)[n] = xstrdup(kv);
      return;
    }
  *v = xrealloc(*v, (n + 2) * sizeof(**v));
  (*v)[n] = xstrdup(kv);
  (*v)[n + 1] = NULL;
}

static char **strv_copy(char *const *v) {
  size_t n = 0;
  while (v && v[n])
    n++;
  char **out = xcalloc(n + 1, sizeof(*out));
  for (size_t i = 0; i < n; i++)
    out[i] = xstrdup(v[i]);
  return out;
}

static char *strv_join(char *const *v, const char *sep) {
  char *out = xstrdup("");
  for (size_t i = 0; v && v[i]; i++) {
    char *t = xasprintf("%s%s%s", out, i ? sep : "", v[i]);
    free(out);
    out = t;
  }
  return out;
}

static size_t strv_bytes(char *const *v) {
  size_t n = 0;
  for (; v && *v; v++)
    n += strlen(*v) + 1;
  return n;
}

/* What a build keeps of its instructions' values grows by n bytes. */
static int state_add(struct df_builder *b, size_t n, hutch_error_t *err) {
  b->state_bytes += n;
  if (b->state_bytes <= DF_MAX_STATE)
    return 0;
  hutch_error_set(err, E2BIG, "the build's ENV, ARG, LABEL, EXPOSE, WORKDIR and USER values come to more than %d MiB",
                  DF_MAX_STATE >> 20);
  return hutch_error_hint(err, "values that large are not an image's settings: put the data in a file");
}

static void stage_clear(struct df_stage *st) {
  free(st->name);
  hutch_image_clear(&st->top);
  cleanup_strvp(&st->env);
  cleanup_strvp(&st->args);
  free(st->workdir);
  free(st->user);
  cleanup_strvp(&st->shell);
  cJSON_Delete(st->config);
  memset(st, 0, sizeof(*st));
}

/* What substitution sees: ARGs, then ENV (which wins). */
static char **subst_env(const struct df_stage *st) {
  char **env = strv_copy(st->args);
  for (char **e = st->env; e && *e; e++)
    strv_set(&env, *e);
  return env;
}

static const char *machine_platform(void) {
  struct utsname u;
  if (uname(&u) < 0)
    return "linux/unknown";
  if (strcmp(u.machine, "x86_64") == 0)
    return "linux/amd64";
  if (strcmp(u.machine, "aarch64") == 0)
    return "linux/arm64";
  return "linux/unknown";
}

/* ---- FROM --------------------------------------------------------------------------- */

static int resolve_image(struct df_builder *b, const char *ref, struct hutch_image *out, hutch_error_t *err) {
  _cleanup_error_ hutch_error_t e = NULL;
  if (hutch_image_lookup(b->store, ref, out, &e) == 0)
    return 0;
  if (strcmp(ref, "scratch") == 0)
    return hutch_error_set(err, ENOTSUP, "FROM scratch is not supported: start from an image");
  struct manifest m = {0};
  _cleanup_error_ hutch_error_t me = NULL;
  if (manifest_load(ref, &m, &me) == 0) {
    manifest_clear(&m);
    struct hutch_build_options bo = {.from = ref,
                                     .arch = b->o->arch,
                                     .output_fd = b->o->output_fd,
                                     .progress = b->o->progress,
                                     .phase = b->o->phase,
                                     .data = b->o->data};
    return build_resolve_base(b->store, &bo, out, err);
  }
  /* A registry reference, pulled on demand. */
  _cleanup_free_ char *docker = strncmp(ref, "docker://", 9) == 0 ? xstrdup(ref) : xasprintf("docker://%s", ref);
  df_say(b, "  %s is not in the store: pulling %s", ref, docker);
  struct hutch_pull_options po = {.arch = b->o->arch,
                                  .progress = b->o->progress,
                                  .phase = b->o->phase,
                                  .data = b->o->data,
                                  .auth_file = b->o->auth_file,
                                  .tls_insecure = b->o->tls_insecure};
  if (hutch_image_pull(b->store, docker, &po, out, err) < 0)
    return hutch_error_hint(err, "import or pull the base first (`hutch rootfs pull`, `hutch rootfs import`)");
  return 0;
}

static int do_from(struct df_builder *b, struct df_stage *stages, size_t n_stages, struct df_stage *st,
                   const struct df_instr *in, char **global_args, hutch_error_t *err) {
  _cleanup_strv_ char **w = df_words(in->rest, b->df.escape, global_args, true, false, err);
  if (w == NULL)
    return -1;
  if (!(w[0] && (!w[1] || (w[1] && w[2] && !w[3] && strcasecmp(w[1], "AS") == 0))))
    return hutch_error_set(err, EINVAL, "FROM takes IMAGE [AS NAME]");
  if (in->platform) {
    _cleanup_strv_ char **p = df_words(in->platform, b->df.escape, global_args, true, true, err);
    if (p == NULL)
      return -1;
    if (strcmp(p[0], machine_platform()) != 0)
      return hutch_error_set(err, ENOTSUP, "--platform=%s: this machine builds %s only", p[0], machine_platform());
  }
  st->name = w[1] ? xstrdup(w[2]) : NULL;
  st->shell = xcalloc(3, sizeof(char *));
  st->shell[0] = xstrdup("/bin/sh");
  st->shell[1] = xstrdup("-c");
  for (size_t i = 0; i < n_stages; i++)
    if (stages[i].name && strcasecmp(stages[i].name, w[0]) == 0) {
      struct df_stage *from = &stages[i];
      if (hutch_image_lookup(b->store, from->top.digest, &st->top, err) < 0)
        return -1;
      memcpy(st->key, from->key, sizeof(st->key));
      st->env = strv_copy(from->env);
      st->workdir = from->workdir ? xstrdup(from->workdir) : NULL;
      st->user = from->user ? xstrdup(from->user) : NULL;
      cleanup_strvp(&st->shell);
      st->shell = strv_copy(from->shell);
      st->config = cJSON_Duplicate(from->config, true);
      _cleanup_free_ char *config = cJSON_PrintUnformatted(st->config);
      return state_add(b,
                       strv_bytes(st->env) + strlen(config) + (st->workdir ? strlen(st->workdir) : 0) +
                           (st->user ? strlen(st->user) : 0),
                       err);
    }
  if (resolve_image(b, w[0], &st->top, err) < 0)
    return -1;
  memset(st->key, 0, sizeof(st->key));
  df_key_next(st->key, "FROM", st->top.digest, NULL);
  st->env = strv_copy(st->top.env);
  st->workdir = st->top.workdir ? xstrdup(st->top.workdir) : NULL;
  st->user = st->top.user ? xstrdup(st->top.user) : NULL;
  st->config = cJSON_CreateObject();
  return state_add(b, strv_bytes(st->env), err);
}

/* ---- ARG, ENV and the image's defaults ---------------------------------------------- */

static const char *build_arg(struct df_builder *b, const char *name) {
  size_t len = strlen(name);
  const char *found = NULL;
  for (const char *const *a = b->o->build_args; a && *a; a++)
    if (strncmp(*a, name, len) == 0 && (*a)[len] == '=')
      found = *a + len + 1;
  return found;
}

/* ARG NAME[=default]: the --build-arg value, else (in a stage) the global
 * ARG's, else the default. */
static int do_arg(struct df_builder *b, char ***args, char **global_args, const struct df_instr *in, char **env,
                  hutch_error_t *err) {
  _cleanup_strv_ char **w = df_words(in->rest, b->df.escape, env, true, false, err);
  if (w == NULL)
    return -1;
  for (char **a = w; *a; a++) {
    _cleanup_free_ char *name = xstrndup(*a, strcspn(*a, "="));
    const char *dflt = strchr(*a, '=') ? strchr(*a, '=') + 1 : NULL;
    const char *v = build_arg(b, name);
    if (v == NULL && dflt == NULL && global_args)
      v = df_env_get(global_args, name);
    if (v == NULL)
      v = dflt;
    if (v) {
      _cleanup_free_ char *kv = xasprintf("%s=%s", name, v);
      if (state_add(b, strlen(kv), err) < 0)
        return -1;
      strv_set(args, kv);
    }
  }
  return 0;
}

static cJSON *strv_json_dup(char *const *v) {
  cJSON *a = cJSON_CreateArray();
  for (; v && *v; v++)
    cJSON_AddItemToArray(a, cJSON_CreateString(*v));
  return a;
}

static cJSON *cmd_json(const struct df_stage *st, const struct df_instr *in) {
  if (in->exec_form)
    return strv_json_dup(in->argv);
  _cleanup_strv_ char **v = strv_copy(st->shell);
  size_t n = 0;
  while (v[n])
    n++;
  v = xrealloc(v, (n + 2) * sizeof(*v));
  v[n] = xstrdup(in->rest);
  v[n + 1] = NULL;
  return strv_json_dup(v);
}

/* ---- COPY and ADD -------------------------------------------------------------------- */

/* NAME or ID in the image's /etc/passwd or /etc/group. */
static int lookup_id(const struct df_stage *st, const char *file, const char *name, unsigned *out, hutch_error_t *err) {
  char *end;
  unsigned long n = strtoul(name, &end, 10);
  if (*name && *end == '\0' && n < 0x7fffffff) {
    *out = (unsigned)n;
    return 0;
  }
  _cleanup_free_ const char **trees = build_image_trees(&st->top);
  _cleanup_free_ char *rel = xasprintf("etc/%s", file);
  _cleanup_free_ char *path = image_layers_path(trees, rel);
  _cleanup_free_ char *text = path ? read_regular_file_at(AT_FDCWD, path, 4 << 20, NULL) : NULL;
  for (char *line = text, *next; line && *line; line = next) {
    next = strchr(line, '\n');
    if (next)
      *next++ = '\0';
    char *f[4] = {0};
    char *p = line;
    for (int i = 0; i < 4 && p; i++) {
      f[i] = p;
      p = strchr(p, ':');
      if (p)
        *p++ = '\0';
    }
    if (f[2] && strcmp(f[0], name) == 0) {
      *out = (unsigned)strtoul(f[2], NULL, 10);
      return 0;
    }
  }
  return hutch_error_set(err, ENOENT, "--chown: no %s \"%s\" in the image's /etc/%s",
                         strcmp(file, "passwd") == 0 ? "user" : "group", name, file);
}

static bool image_is_dir(const struct df_stage *st, const char *abs) {
  _cleanup_free_ const char **trees = build_image_trees(&st->top);
  _cleanup_free_ char *path = image_layers_path(trees, abs + strspn(abs, "/"));
  struct stat s;
  return path && lstat(path, &s) == 0 && S_ISDIR(s.st_mode);
}

static char *abs_path(const struct df_stage *st, const char *p) {
  return df_image_path(st->workdir, p);
}

static int do_copy(struct df_builder *b, struct df_stage *stages, size_t n_stages, struct df_stage *st,
                   const struct df_instr *in, char **env, hutch_error_t *err) {
  _cleanup_strv_ char **w = NULL;
  cJSON *j = in->rest[0] == '[' ? cJSON_Parse(in->rest) : NULL;
  if (j) {
    w = xcalloc((size_t)cJSON_GetArraySize(j) + 1, sizeof(*w));
    size_t k = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, j) {
      if (cJSON_IsString(item))
        w[k++] = xstrdup(item->valuestring);
    }
    cJSON_Delete(j);
  } else {
    w = df_words(in->rest, b->df.escape, env, true, false, err);
    if (w == NULL)
      return -1;
  }
  size_t n = 0;
  while (w[n])
    n++;
  if (n < 2)
    return hutch_error_set(err, EINVAL, "%s takes SOURCE... DEST", df_kind_name(in->kind));
  for (size_t i = 0; in->kind == DF_ADD && i + 1 < n; i++) {
    if (df_add_is_url(w[i]) && n != 2)
      return hutch_error_set(err, ENOTSUP, "ADD of a URL (%s) takes one source: one ADD for each URL", w[i]);
    if (!df_add_is_url(w[i]) && (strstr(w[i], "://") || strncmp(w[i], "git@", 4) == 0))
      return hutch_error_set(err, ENOTSUP,
                             "ADD of %s is not supported (http and https URLs are): RUN git with --allow HOST", w[i]);
  }
  bool url = in->kind == DF_ADD && df_add_is_url(w[0]);
  if (in->checksum && !url)
    return hutch_error_set(err, EINVAL, "ADD --checksum is for a URL source only");
  _cleanup_free_ char *dest = abs_path(st, w[n - 1]);
  struct df_copy c = {
      .ignore = &b->ignore,
      .sources = w,
      .n_sources = n - 1,
      .dest = dest,
      .dest_is_dir = n > 2 || w[n - 1][strlen(w[n - 1]) - 1] == '/' || image_is_dir(st, dest),
      .chmod = -1,
  };
  if (in->chown) {
    _cleanup_strv_ char **o = df_words(in->chown, b->df.escape, env, true, true, err);
    if (o == NULL)
      return -1;
    char *colon = strchr(o[0], ':');
    if (colon)
      *colon++ = '\0';
    unsigned uid = 0, gid = 0;
    if (lookup_id(st, "passwd", o[0], &uid, err) < 0)
      return -1;
    gid = uid;
    if (colon && lookup_id(st, "group", colon, &gid, err) < 0)
      return -1;
    c.uid = uid;
    c.gid = gid;
  }
  if (in->chmod) {
    char *end;
    long m = strtol(in->chmod, &end, 8);
    if (*end || m < 0 || m > 07777)
      return hutch_error_set(err, EINVAL, "--chmod=%s: an octal mode is needed", in->chmod);
    c.chmod = (int)m;
  }
  if (url)
    return df_add_url(b, st, in, w[0], &c, err);
  _cleanup_free_ char *extra = NULL, *sources = NULL, *text = NULL, *from = NULL;
  int tree_fds[512];
  size_t n_trees = 0;
  int ret = -1;
  if (in->from) {
    struct df_stage *src = NULL;
    char *end;
    unsigned long idx = strtoul(in->from, &end, 10);
    for (size_t i = 0; i < n_stages; i++)
      if ((stages[i].name && strcasecmp(stages[i].name, in->from) == 0) || (*end == '\0' && idx == i))
        src = &stages[i];
    if (src == NULL)
      return hutch_error_set(err, ENOENT, "COPY --from=%s: no earlier stage of that name", in->from);
    _cleanup_free_ const char **trees = build_image_trees(&src->top);
    for (size_t i = 0; trees[i] && n_trees < ARRAY_SIZE(tree_fds); i++) {
      tree_fds[n_trees] = open(trees[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (tree_fds[n_trees] < 0) {
        hutch_error_sys(err, "open %s", trees[i]);
        goto out;
      }
      n_trees++;
    }
    /* A stage's layers are named by their keys: its key stands for its content. */
    extra = xasprintf("from %s", src->key);
    from = xasprintf("stage %s", in->from);
    c.audit_from = from;
  } else {
    tree_fds[0] = dup(b->ctx_fd);
    n_trees = 1;
    c.context = true;
  }
  c.trees = tree_fds;
  c.n_trees = n_trees;
  sources = strv_join(w, " ");
  if (c.context) {
    struct sha256_ctx ctx;
    sha256_init(&ctx);
    if (df_copy_hash(&c, &ctx, err) < 0)
      goto out;
    uint8_t d[SHA256_DIGEST_SIZE];
    char hex[SHA256_HEX_SIZE];
    sha256_final(&ctx, d);
    sha256_hex(d, hex);
    extra = xasprintf("content %s", hex);
  }
  /* ADD unpacks archives: not the same layer as a COPY of them. */
  text = xasprintf("%s --chown=%u:%u --chmod=%d %s", in->kind == DF_ADD ? "ADD-unpack" : "COPY", c.uid, c.gid, c.chmod,
                   sources);
  df_key_next(st->key, "COPY", text, extra);
  if (df_layer_cached(b, st, st->key, err)) {
    ret = 1;
    goto out;
  }
  if (err && *err)
    goto out;
  ret =
      in->kind == DF_ADD ? df_add_local(b, st, in, &c, st->key, err) : df_layer_copy(b, st, in, &c, NULL, st->key, err);
out:
  for (size_t i = 0; i < n_trees; i++)
    close(tree_fds[i]);
  return ret;
}

/* ---- one instruction ------------------------------------------------------------------- */

/* Returns 0 (done), 1 (a layer reused), -1, or a RUN's exit code (> 1 is
 * returned as 128 + ... by the caller: here, a code >= 2 or the value 1
 * could be ambiguous, so RUN failures come back in *code). */
static int do_instr(struct df_builder *b, struct df_stage *stages, size_t n_stages, struct df_stage *st,
                    const struct df_instr *in, int *code, hutch_error_t *err) {
  _cleanup_strv_ char **env = subst_env(st);
  switch (in->kind) {
  case DF_ARG: {
    /* Values are not part of the key here: the RUN steps that see them
     * are keyed by them, as in Docker (a changed value rebuilds from the
     * first RUN, or the first instruction that substitutes it). */
    df_key_next(st->key, "ARG", in->text, NULL);
    return do_arg(b, &st->args, b->global_args, in, env, err);
  }
  case DF_ENV:
  case DF_LABEL: {
    _cleanup_strv_ char **pairs = df_pairs(in->rest, b->df.escape, env, err);
    if (pairs == NULL || state_add(b, strv_bytes(pairs), err) < 0)
      return -1;
    cJSON *labels = cJSON_GetObjectItemCaseSensitive(st->config, "labels");
    if (in->kind == DF_LABEL && labels == NULL)
      labels = cJSON_AddObjectToObject(st->config, "labels");
    for (char **p = pairs; *p; p++) {
      if (in->kind == DF_ENV) {
        strv_set(&st->env, *p);
        continue;
      }
      _cleanup_free_ char *k = xstrndup(*p, strcspn(*p, "="));
      cJSON_DeleteItemFromObjectCaseSensitive(labels, k);
      cJSON_AddStringToObject(labels, k, strchr(*p, '=') + 1);
    }
    _cleanup_free_ char *all = strv_join(pairs, "\n");
    df_key_next(st->key, df_kind_name(in->kind), all, NULL);
    return 0;
  }
  case DF_EXPOSE: {
    _cleanup_strv_ char **w = df_words(in->rest, b->df.escape, env, true, false, err);
    if (w == NULL || state_add(b, strv_bytes(w), err) < 0)
      return -1;
    cJSON *ports = cJSON_GetObjectItemCaseSensitive(st->config, "exposed_ports");
    if (ports == NULL)
      ports = cJSON_AddArrayToObject(st->config, "exposed_ports");
    for (char **p = w; *p; p++)
      cJSON_AddItemToArray(ports, cJSON_CreateString(*p));
    _cleanup_free_ char *all = strv_join(w, " ");
    df_key_next(st->key, "EXPOSE", all, NULL);
    return 0;
  }
  case DF_USER:
  case DF_WORKDIR: {
    _cleanup_strv_ char **w = df_words(in->rest, b->df.escape, env, true, true, err);
    if (w == NULL || state_add(b, strv_bytes(w), err) < 0)
      return -1;
    if (in->kind == DF_USER) {
      free(st->user);
      st->user = xstrdup(w[0]);
      df_key_next(st->key, "USER", w[0], NULL);
      return 0;
    }
    char *wd = abs_path(st, w[0]);
    free(st->workdir);
    st->workdir = wd;
    df_key_next(st->key, "WORKDIR", wd, NULL);
    if (image_is_dir(st, wd))
      return 0;
    /* Docker makes the directory: a layer of its own. */
    if (df_layer_cached(b, st, st->key, err))
      return 1;
    return df_layer_copy(b, st, in, NULL, wd, st->key, err);
  }
  case DF_CMD:
  case DF_ENTRYPOINT: {
    const char *k = in->kind == DF_CMD ? "cmd" : "entrypoint";
    cJSON_DeleteItemFromObjectCaseSensitive(st->config, k);
    cJSON_AddItemToObject(st->config, k, cmd_json(st, in));
    if (in->kind == DF_ENTRYPOINT)
      cJSON_DeleteItemFromObjectCaseSensitive(st->config, "cmd"); /* as Docker: ENTRYPOINT resets CMD */
    df_key_next(st->key, k, in->text, NULL);
    return 0;
  }
  case DF_SHELL:
    cleanup_strvp(&st->shell);
    st->shell = strv_copy(in->argv);
    df_key_next(st->key, "SHELL", in->text, NULL);
    return 0;
  case DF_RUN: {
    _cleanup_strv_ char **argv = NULL;
    if (in->exec_form) {
      argv = strv_copy(in->argv);
    } else {
      argv = strv_copy(st->shell);
      size_t n = 0;
      while (argv[n])
        n++;
      argv = xrealloc(argv, (n + 2) * sizeof(*argv));
      argv[n] = xstrdup(in->rest);
      argv[n + 1] = NULL;
    }
    _cleanup_free_ char *args = strv_join(st->args, "\n");
    _cleanup_free_ char *cmd = strv_join(argv, "\n");
    _cleanup_free_ char *envs = strv_join(st->env, "\n");
    _cleanup_free_ char *extra = xasprintf("%s\n--\n%s\n--\n%s", args, envs, st->workdir ? st->workdir : "/");
    df_key_next(st->key, "RUN", cmd, extra);
    if (df_layer_cached(b, st, st->key, err))
      return 1;
    if (err && *err)
      return -1;
    int r = df_layer_run(b, st, in, argv, st->key, err);
    if (r > 0) {
      *code = r;
      return -1;
    }
    return r;
  }
  case DF_COPY:
  case DF_ADD:
    return do_copy(b, stages, n_stages, st, in, env, err);
  case DF_FROM:
    break;
  }
  return 0;
}

/* ---- the build ------------------------------------------------------------------------ */

static int open_context(struct df_builder *b, hutch_error_t *err) {
  _cleanup_free_ char *dir = NULL;
  if (b->o->context)
    dir = xstrdup(b->o->context);
  else {
    const char *slash = strrchr(b->o->dockerfile, '/');
    dir = slash ? xstrndup(b->o->dockerfile, (size_t)(slash - b->o->dockerfile) + 1) : xstrdup(".");
  }
  b->ctx_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (b->ctx_fd < 0)
    return hutch_error_sys(err, "open the build context %s", dir);
  if (hutch_check_host_path(dir, false, hutch_store_path(b->store), NULL, NULL, err) < 0)
    return -1;
  _cleanup_free_ char *ignore = read_regular_file_at(b->ctx_fd, ".dockerignore", 1 << 20, NULL);
  if (ignore == NULL && errno != ENOENT)
    return hutch_error_sys(err, "read %s/.dockerignore", dir);
  df_ignore_parse(ignore, &b->ignore);
  return 0;
}

/* The last instruction to run: the end of the target stage, or of the file. */
static int last_instruction(const struct dockerfile *df, const char *target, size_t *last, hutch_error_t *err) {
  *last = df->n;
  if (target == NULL)
    return 0;
  bool in_target = false;
  for (size_t i = 0; i < df->n; i++) {
    if (df->instrs[i].kind != DF_FROM)
      continue;
    if (in_target) {
      *last = i;
      return 0;
    }
    _cleanup_strv_ char **w = df_words(df->instrs[i].rest, df->escape, NULL, false, false, NULL);
    in_target = w && w[0] && w[1] && w[2] && strcasecmp(w[2], target) == 0;
  }
  if (in_target)
    return 0;
  return hutch_error_set(err, ENOENT, "--target %s: no stage of that name (FROM IMAGE AS %s)", target, target);
}

static int build(struct df_builder *b, struct hutch_build_result *out, hutch_error_t *err) {
  size_t last;
  if (last_instruction(&b->df, b->o->target, &last, err) < 0)
    return -1;
  struct df_stage *stages = NULL;
  size_t n_stages = 0;
  int ret = -1, code = 0;
  double t_all = monotonic_seconds();
  for (size_t i = 0; i < last; i++) {
    const struct df_instr *in = &b->df.instrs[i];
    double t0 = monotonic_seconds();
    df_say(b, "Step %zu/%zu (%s:%d): %s", i + 1, last, b->origin, in->line, in->text);
    int r;
    if (in->kind == DF_FROM) {
      stages = xrealloc(stages, (n_stages + 1) * sizeof(*stages));
      memset(&stages[n_stages], 0, sizeof(*stages));
      r = do_from(b, stages, n_stages, &stages[n_stages], in, b->global_args, err);
      n_stages++;
    } else if (n_stages == 0) {
      _cleanup_strv_ char **env = strv_copy(b->global_args);
      r = do_arg(b, &b->global_args, NULL, in, env, err);
    } else {
      r = do_instr(b, stages, n_stages - 1, &stages[n_stages - 1], in, &code, err);
    }
    const char *key = n_stages ? stages[n_stages - 1].key : NULL;
    bool layered = in->kind == DF_RUN || in->kind == DF_COPY || in->kind == DF_ADD || in->kind == DF_WORKDIR;
    build_audit_step(&b->audit, b->origin, in->line, in->text,
                     r < 0     ? "failed"
                     : r == 1  ? "cached"
                     : layered ? "made"
                               : "done",
                     r >= 0 ? key : NULL, r < 0 && code > 0 ? code : -1);
    if (r < 0) {
      if (code > 0) {
        df_say(b, "%s:%d: %s failed; no image was made", b->origin, in->line, df_kind_name(in->kind));
        ret = code;
      } else {
        hutch_error_wrap(err, "%s:%d: %s", b->origin, in->line, df_kind_name(in->kind));
      }
      goto out;
    }
    if (r == 1) {
      b->n_cached++;
      df_say(b, " ---> cached %.12s", stages[n_stages - 1].key);
    } else if (layered) {
      b->n_built++;
      df_say(b, " ---> %.12s in %.2f s", stages[n_stages - 1].key, monotonic_seconds() - t0);
    }
  }
  if (n_stages == 0) {
    hutch_error_set(err, EINVAL, "%s: no FROM", b->origin);
    goto out;
  }
  struct df_stage *st = &stages[n_stages - 1];
  char digest[80];
  if (df_layer_config(b, st, digest, err) < 0 || hutch_image_tag(b->store, digest, b->o->name, err) < 0)
    goto out;
  snprintf(out->digest, sizeof(out->digest), "%s", digest);
  snprintf(out->base, sizeof(out->base), "%s", stages[0].top.name ? stages[0].top.name : "layers");
  df_say(b, "built %s in %.2f s: %zu layers made, %zu reused", b->o->name, monotonic_seconds() - t_all, b->n_built,
         b->n_cached);
  ret = 0;
out:
  for (size_t i = 0; i < n_stages; i++)
    stage_clear(&stages[i]);
  free(stages);
  return ret;
}

int hutch_dockerfile_build(const char *store_path, const struct hutch_dockerfile_options *o,
                           struct hutch_build_result *out, hutch_error_t *err) {
  size_t len = 0;
  _cleanup_free_ char *text = read_regular_file_at(AT_FDCWD, o->dockerfile, DF_MAX_TEXT, &len);
  if (text == NULL)
    return hutch_error_sys(err, "read %s", o->dockerfile);
  if (strlen(text) != len)
    return hutch_error_set(err, EINVAL, "%s: a NUL byte in a Dockerfile", o->dockerfile);
  struct df_builder b = {
      .o = o, .origin = o->dockerfile, .ctx_fd = -1, .log_fd = -1, .audit = {.log = {.log_fd = -1, .head_fd = -1}}};
  if (dockerfile_parse(text, o->dockerfile, &b.df, err) < 0)
    return -1;
  int ret = -1;
  _cleanup_free_ char *log = NULL;
  if (hutch_store_open(store_path, &b.store, err) < 0)
    goto out;
  build_sweep_stale(b.store);
  if (o->log_file == NULL) {
    /* By default in the store: logs/build-NAME.log. */
    _cleanup_free_ char *dir = xasprintf("%s/logs", hutch_store_path(b.store));
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
      hutch_error_sys(err, "create %s", dir);
      goto out;
    }
    log = xasprintf("%s/build-%s.log", dir, o->name);
    for (char *p = log + strlen(dir) + 1; *p; p++)
      if (*p == '/')
        *p = '_';
  }
  b.log_fd = open(log ? log : o->log_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (b.log_fd < 0) {
    hutch_error_sys(err, "open the build log %s", log ? log : o->log_file);
    goto out;
  }
  build_output_init(&b.out, o->output_fd, b.log_fd, o->step_log_max, o->log_max);
  df_say(&b, "building %s from %s (log: %s)", o->name, o->dockerfile, log ? log : o->log_file);
  if (hutch_policy_load(o->policy, &b.policy, err) < 0 || idmap_for_caller(&b.maps, err) < 0 ||
      open_context(&b, err) < 0)
    goto out;
  b.allow = xcalloc(1, sizeof(char *));
  for (const char *const *h = o->allow; h && *h; h++)
    strv_set(&b.allow, *h);
  b.net = o->net >= 0 ? o->net == HUTCH_NET_PROXY : b.allow[0] != NULL;
  if (build_audit_start(&b.audit, log ? log : o->log_file, o, text, len, b.policy, b.net, err) < 0)
    goto out;
  ret = build(&b, out, err);
  build_audit_end(&b.audit, ret == 0, ret < 0 && err && *err ? (*err)->msg : NULL);
  if (ret < 0 && b.log_fd >= 0 && err && *err) {
    _cleanup_free_ char *msg = text_escape_cstr((*err)->msg);
    dprintf(b.log_fd, "error: %s\n", msg);
  }
out:
  if (b.log_fd >= 0)
    close(b.log_fd);
  if (b.ctx_fd >= 0)
    close(b.ctx_fd);
  df_ignore_clear(&b.ignore);
  cleanup_strvp(&b.allow);
  cleanup_strvp(&b.global_args);
  dockerfile_clear(&b.df);
  if (b.policy)
    hutch_policy_free(b.policy);
  if (b.store)
    hutch_store_close(b.store);
  return ret;
}
