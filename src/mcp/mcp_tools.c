/* SPDX-License-Identifier: Apache-2.0 */
/* The tools of hutch mcp.  A client's sandboxes belong to its session: a
 * tool reaches only the sandboxes its own session created, and every
 * request is held to what the operator allows (struct mcp_config).  A tool
 * that cannot do what it was asked, for whatever reason (arguments that do
 * not fit its schema, a limit above the server's, a command that fails),
 * returns a result with isError and the reason, for the model to read;
 * every other result carries structuredContent that fits the tool's
 * outputSchema (mcp_schema.c). */
#include "config.h"

#include "mcp.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "util.h"

static bool arg_present(struct mcp_call *c, const char *key) {
  return cJSON_GetObjectItemCaseSensitive(c->args, key) != NULL;
}

/* A limit the client asks for: within the operator's maximum, or refused. */
static bool limit_size(struct mcp_call *c, const char *key, uint64_t max, uint64_t *out, cJSON **fail) {
  const char *v = mcp_arg_str(c, key);
  if (!arg_present(c, key))
    return true;
  uint64_t n;
  if (v == NULL || !hutch_parse_size(v, &n) || n == 0) {
    *fail = mcp_bad(c, "argument %s wants a size such as 512M or 1G", key);
    return false;
  }
  if (max == 0 || n > max) {
    char m[32] = "none";
    if (max)
      hutch_format_size(max, m, sizeof(m));
    _cleanup_free_ char *t = xasprintf("%s %s is above what this server allows (at most: %s)", key, v, m);
    *fail = mcp_result(t, NULL, true);
    return false;
  }
  *out = n;
  return true;
}

static bool listed(const char *const *list, const char *name) {
  for (const char *const *a = list; a && *a; a++)
    if (strcmp(*a, name) == 0)
      return true;
  return false;
}

/* The image a client named, when the operator lists the images clients may
 * start (--allow-image): by the name as listed, so that no other spelling
 * (a digest, another name of the same tree) slips past the list. */
cJSON *mcp_image_refused(const struct mcp_config *cfg, const char *name) {
  if (cfg->images == NULL || strcmp(name, cfg->default_image) == 0 || listed(cfg->images, name))
    return NULL;
  _cleanup_free_ char *names = xstrdup(cfg->default_image);
  for (const char **a = cfg->images; *a; a++) {
    char *t = xasprintf("%s, %s", names, *a);
    free(names);
    names = t;
  }
  _cleanup_free_ char *t = xasprintf(
      "image %s: not an image this server allows (the operator lists them with hutch mcp --allow-image): one of %s",
      name, names);
  return mcp_result(t, NULL, true);
}

static cJSON *t_create(struct mcp_call *c) {
  const struct mcp_config *cfg = c->cfg;
  unsigned n = mcp_session_count(c->s);
  if (n >= cfg->max_sandboxes) {
    _cleanup_free_ char *t = xasprintf("this session has %u sandboxes, the most allowed: destroy one first", n);
    return mcp_result(t, NULL, true);
  }
  struct hutch_limits lim = {0};
  cJSON *fail = NULL;
  if (!limit_size(c, "memory", cfg->max.memory, &lim.memory, &fail) ||
      !limit_size(c, "disk", cfg->max.disk, &lim.disk, &fail))
    return fail;
  const cJSON *cpus = cJSON_GetObjectItemCaseSensitive(c->args, "cpus");
  const cJSON *pids = cJSON_GetObjectItemCaseSensitive(c->args, "pids");
  if ((cpus && cpus->valuedouble > cfg->max.cpus) || (pids && pids->valuedouble > (double)cfg->max.pids))
    return mcp_result("cpus or pids is above what this server allows (hutch mcp --cpus, --pids)", NULL, true);
  lim.cpus = cpus ? cpus->valuedouble : 0;
  lim.pids = pids ? (uint64_t)pids->valuedouble : 0;
  const char *net = mcp_arg_str(c, "net");
  bool proxy = net && strcmp(net, "proxy") == 0;
  if (proxy && !cfg->net_proxy)
    return mcp_result("net proxy: this server gives sandboxes no network (hutch mcp --net proxy)", NULL, true);
  const cJSON *allow = cJSON_GetObjectItemCaseSensitive(c->args, "allow");
  size_t n_allow = (size_t)cJSON_GetArraySize(allow);
  if (n_allow && !proxy)
    return mcp_bad(c, "argument allow needs net proxy");
  _cleanup_free_ const char **hosts = xcalloc(n_allow + 1, sizeof(char *));
  size_t i = 0;
  const cJSON *h;
  cJSON_ArrayForEach(h, allow) {
    if (!listed(cfg->allow, h->valuestring)) {
      _cleanup_free_ char *t =
          xasprintf("allow %s: not a host this server permits (hutch mcp --allow)", h->valuestring);
      return mcp_result(t, NULL, true);
    }
    hosts[i++] = h->valuestring;
  }
  const char *image_name = mcp_arg_str(c, "image"), *snapshot = mcp_arg_str(c, "snapshot");
  if (image_name && snapshot)
    return mcp_bad(c, "arguments image and snapshot: give one (a snapshot is an image of this session's)");
  /* A snapshot of the session's own is made of an image it was allowed:
   * the list of images does not name it, and need not. */
  if (snapshot && !mcp_snapshot_own(c->s, snapshot))
    return mcp_bad(c, "snapshot \"%s\" is not one of this session's (sandbox_snapshot names them)", snapshot);
  if (snapshot)
    image_name = snapshot;
  if (image_name == NULL)
    image_name = cfg->default_image;
  cJSON *refused = snapshot ? NULL : mcp_image_refused(cfg, image_name);
  if (refused)
    return refused;
  hutch_error_t err = NULL;
  struct mcp_sandbox *m = NULL;
  if (mcp_sandbox_start(cfg, c->s, image_name, &lim, proxy, n_allow ? hosts : NULL, &m, &err) < 0)
    return mcp_tool_error(&err);
  snprintf(c->sandbox, sizeof(c->sandbox), "%s", m->id);
  cJSON *st = cJSON_CreateObject();
  cJSON_AddStringToObject(st, "id", m->id);
  cJSON_AddStringToObject(st, "image", m->image);
  cJSON_AddStringToObject(st, "limits", hutch_sandbox_limits(m->sb)->mode);
  cJSON_AddStringToObject(st, "net", proxy ? "proxy" : "none");
  _cleanup_free_ char *t = xasprintf("created sandbox %s (image %s)", m->id, m->image);
  return mcp_result(t, st, false);
}

int mcp_sandbox_start(const struct mcp_config *cfg, struct mcp_session *s, const char *image_name,
                      const struct hutch_limits *lim, bool proxy, const char *const *allow, struct mcp_sandbox **out,
                      hutch_error_t *err) {
  *out = NULL;
  struct hutch_store *store = NULL;
  struct hutch_image image = {0};
  if (hutch_store_open(cfg->store, &store, err) < 0 || hutch_image_lookup(store, image_name, &image, err) < 0) {
    if (store)
      hutch_store_close(store);
    return -1;
  }
  char **env = hutch_image_env(&image, NULL);
  struct hutch_sandbox_config sc = {
      .rootfs = image.rootfs,
      .rootfs_lowers = (const char *const *)image.lowers,
      .image = image.name ? image.name : image.digest,
      .workdir = image.workdir,
      .rootfs_subordinate_ids = image.ids_preserved,
      .policy = cfg->policy,
      .env = (const char *const *)env,
      .state_dir = cfg->state_dir,
      .store = cfg->store,
      .limits = *lim,
      .net = proxy ? HUTCH_NET_PROXY : HUTCH_NET_NONE,
      .net_allow = allow,
      /* Tied to the session's thread: a killed server takes it along. */
      .die_with_creator = true,
  };
  struct hutch_sandbox *sb = NULL;
  int r = hutch_sandbox_create(&sc, &sb, err);
  for (char **e = env; e && *e; e++)
    free(*e);
  free(env);
  if (r == 0)
    *out = mcp_session_add(cfg, s, sb, sc.image, image.workdir, err);
  hutch_image_clear(&image);
  hutch_store_close(store);
  return *out ? 0 : -1;
}

struct mcp_sandbox *mcp_session_add(const struct mcp_config *cfg, struct mcp_session *s, struct hutch_sandbox *sb,
                                    const char *image, const char *workdir, hutch_error_t *err) {
  /* A sandbox the reaper could not be told of would outlive a killed
   * server: it is destroyed at once and the call fails. */
  if (mcp_reaper_announce(cfg->reaper_fd, true, hutch_sandbox_id(sb), err) < 0) {
    hutch_error_t ignored = NULL;
    if (hutch_sandbox_destroy(sb, &ignored) < 0) {
      hutch_log_error(HUTCH_LOG_WARNING, ignored);
      hutch_error_free(&ignored);
    }
    return NULL;
  }
  /* The file tools go as hutch cp does: the sandbox's symlinks are its
   * own, never followed for the client, not even inside its root. */
  hutch_sandbox_set_no_symlinks(sb, true);
  struct mcp_sandbox *m = xcalloc(1, sizeof(*m));
  m->sb = sb;
  snprintf(m->id, sizeof(m->id), "%s", hutch_sandbox_id(sb));
  m->image = xstrdup(image);
  m->workdir = xstrdup(workdir && workdir[0] == '/' ? workdir : "/");
  m->created = (int64_t)time(NULL);
  m->next = s->sandboxes;
  s->sandboxes = m;
  return m;
}

unsigned mcp_session_count(const struct mcp_session *s) {
  unsigned n = 0;
  for (const struct mcp_sandbox *m = s->sandboxes; m; m = m->next)
    n++;
  return n;
}

void mcp_sandbox_drop(const struct mcp_config *cfg, struct mcp_sandbox *m) {
  hutch_error_t err = NULL;
  mcp_python_stop(m);
  if (hutch_sandbox_destroy(m->sb, &err) < 0) {
    hutch_log_error(HUTCH_LOG_WARNING, err);
    hutch_error_free(&err);
  } else if (mcp_reaper_announce(cfg->reaper_fd, false, m->id, &err) < 0) {
    hutch_log_error(HUTCH_LOG_WARNING, err); /* it would find the sandbox gone */
    hutch_error_free(&err);
  }
  free(m->image);
  free(m->workdir);
  free(m);
}

void mcp_session_end(const struct mcp_config *cfg, struct mcp_session *s) {
  mcp_watches_clear(s);
  while (s->sandboxes) {
    struct mcp_sandbox *m = s->sandboxes;
    s->sandboxes = m->next;
    mcp_sandbox_drop(cfg, m);
  }
  /* After the sandboxes: one may run on a snapshot. */
  mcp_snapshots_end(cfg, s);
}

static cJSON *t_destroy(struct mcp_call *c) {
  const char *why;
  struct mcp_sandbox **p = mcp_find(c, &why);
  if (p == NULL)
    return mcp_no_sandbox(why);
  struct mcp_sandbox *m = *p;
  *p = m->next;
  _cleanup_free_ char *t = xasprintf("destroyed sandbox %s", m->id);
  cJSON *st = cJSON_CreateObject();
  cJSON_AddStringToObject(st, "id", m->id);
  mcp_sandbox_drop(c->cfg, m);
  return mcp_result(t, st, false);
}

static cJSON *t_list(struct mcp_call *c) {
  cJSON *arr = cJSON_CreateArray();
  _cleanup_free_ char *text = xstrdup("");
  for (struct mcp_sandbox *m = c->s->sandboxes; m; m = m->next) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", m->id);
    cJSON_AddStringToObject(o, "image", m->image);
    cJSON_AddNumberToObject(o, "created", (double)m->created);
    cJSON_AddItemToArray(arr, o);
    char *t = xasprintf("%s%s %s\n", text, m->id, m->image);
    free(text);
    text = t;
  }
  cJSON *st = cJSON_CreateObject();
  cJSON_AddItemToObject(st, "sandboxes", arr);
  return mcp_result(text[0] ? text : "no sandboxes\n", st, false);
}

/* The call's timeout: the client's (its schema holds it above 0), within
 * the operator's bound. */
static double call_timeout(struct mcp_call *c) {
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(c->args, "timeout");
  return t && t->valuedouble < c->cfg->max_timeout ? t->valuedouble : c->cfg->max_timeout;
}

static cJSON *exec_result(struct mcp_exec_result *r) {
  int code = hutch_exit_code(&r->exit);
  _cleanup_free_ char *out = mcp_utf8(r->out, r->out_len);
  _cleanup_free_ char *err = mcp_utf8(r->err, r->err_len);
  cJSON *st = cJSON_CreateObject();
  cJSON_AddNumberToObject(st, "exit_code", code);
  cJSON_AddStringToObject(st, "stdout", out);
  cJSON_AddStringToObject(st, "stderr", err);
  cJSON_AddBoolToObject(st, "timed_out", r->exit.timed_out);
  cJSON_AddBoolToObject(st, "truncated", r->out_cut || r->err_cut);
  if (r->exit.signal)
    cJSON_AddNumberToObject(st, "signal", r->exit.signal);
  _cleanup_free_ char *text =
      xasprintf("exit code: %d%s%s\n%s%s%s%s%s", code, r->exit.timed_out ? " (timed out: killed)" : "",
                r->out_cut || r->err_cut ? " (output truncated)" : "", out[0] ? "--- stdout ---\n" : "", out,
                out[0] && out[strlen(out) - 1] != '\n' ? "\n" : "", err[0] ? "--- stderr ---\n" : "", err);
  /* A command that failed is the model's to see as such: a tool error,
   * with everything a successful one returns. */
  return mcp_result(text, st, code != 0);
}

static cJSON *run(struct mcp_call *c, struct mcp_sandbox *m, const char *const *argv, const char *workdir,
                  const char *input) {
  double timeout = call_timeout(c);
  hutch_error_t err = NULL;
  struct mcp_exec_result r;
  if (mcp_exec(c->cfg, m->sb, argv, workdir, input, input ? strlen(input) : 0, timeout, c->cancel, &r, &err) < 0) {
    mcp_exec_result_clear(&r);
    return mcp_tool_error(&err);
  }
  cJSON *out = r.cancelled ? mcp_result("cancelled: the process was killed", NULL, true) : exec_result(&r);
  mcp_exec_result_clear(&r);
  return out;
}

static cJSON *t_exec(struct mcp_call *c) {
  const char *why;
  struct mcp_sandbox **p = mcp_find(c, &why);
  if (p == NULL)
    return mcp_no_sandbox(why);
  const char *cmd = mcp_arg_str(c, "command");
  const char *workdir = mcp_arg_str(c, "workdir");
  if (workdir && workdir[0] != '/')
    return mcp_bad(c, "argument workdir wants an absolute path, such as /tmp");
  const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
  return run(c, *p, argv, workdir, mcp_arg_str(c, "stdin"));
}

/* How each language runs its code ("$0" in the script); compiled ones
 * build in a fresh directory under /tmp.  The tool named first is looked
 * for, so a missing one is named as such rather than as exit code 127. */
static const struct {
  const char *lang, *tool, *script;
} langs[] = {
    {"python", "python3", "exec python3 -c \"$0\""},
    {"bash", "bash", "exec bash -c \"$0\""},
    {"sh", "sh", "exec sh -c \"$0\""},
    {"javascript", "node", "exec node -e \"$0\""},
    {"ruby", "ruby", "exec ruby -e \"$0\""},
    {"perl", "perl", "exec perl -e \"$0\""},
    {"r", "Rscript", "exec Rscript -e \"$0\""},
    {"c", "cc",
     "d=$(mktemp -d) && printf %s \"$0\" >\"$d/main.c\" && cc -o \"$d/main\" \"$d/main.c\" -lm && exec \"$d/main\""},
    {"cpp", "c++",
     "d=$(mktemp -d) && printf %s \"$0\" >\"$d/main.cpp\" && c++ -o \"$d/main\" \"$d/main.cpp\" && exec \"$d/main\""},
    {"go", "go", "d=$(mktemp -d) && printf %s \"$0\" >\"$d/main.go\" && cd \"$d\" && exec go run main.go"},
    {"java", "java", "d=$(mktemp -d) && printf %s \"$0\" >\"$d/Main.java\" && exec java \"$d/Main.java\""},
};

static cJSON *t_run_code(struct mcp_call *c) {
  const char *why;
  struct mcp_sandbox **p = mcp_find(c, &why);
  if (p == NULL)
    return mcp_no_sandbox(why);
  const char *lang = mcp_arg_str(c, "language"), *code = mcp_arg_str(c, "code");
  for (size_t i = 0; i < ARRAY_SIZE(langs); i++) {
    if (strcmp(lang, langs[i].lang) != 0)
      continue;
    _cleanup_free_ char *script =
        xasprintf("command -v %s >/dev/null || { echo 'hutch: %s (for %s) is not in this sandbox image' >&2; exit "
                  "127; }; %s",
                  langs[i].tool, langs[i].tool, langs[i].lang, langs[i].script);
    const char *argv[] = {"/bin/sh", "-c", script, code, NULL};
    return run(c, *p, argv, NULL, NULL);
  }
  return mcp_bad(c, "unknown language %s", lang); /* the schema's enum names those of langs[] */
}

/* The interpreter's answer, as the schema has it.  The code it ran can
 * rewrite the driver's answer (json.dumps is in its reach): each field is
 * taken only with its type, and nothing else is. */
static cJSON *python_structured(const cJSON *answer, unsigned figures) {
  cJSON *st = cJSON_CreateObject();
  static const char *const strings[] = {"stdout", "stderr"}, *const optional[] = {"result", "error"};
  for (size_t i = 0; i < ARRAY_SIZE(strings); i++) {
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(answer, strings[i]));
    cJSON_AddStringToObject(st, strings[i], v ? v : "");
  }
  for (size_t i = 0; i < ARRAY_SIZE(optional); i++) {
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(answer, optional[i]));
    if (v) /* absent when there is none: a nullable type ports badly to some model providers' schemas */
      cJSON_AddStringToObject(st, optional[i], v);
  }
  cJSON_AddNumberToObject(st, "figures", figures);
  cJSON_AddBoolToObject(st, "truncated", cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(answer, "truncated")));
  return st;
}

static cJSON *t_python(struct mcp_call *c) {
  const char *why;
  struct mcp_sandbox **p = mcp_find(c, &why);
  if (p == NULL)
    return mcp_no_sandbox(why);
  const char *code = mcp_arg_str(c, "code");
  hutch_error_t err = NULL;
  _cleanup_free_ char *reply = NULL, *ended = NULL;
  int r = mcp_python_call(c->cfg, *p, code, call_timeout(c), c->cancel, &reply, &ended, &err);
  if (r < 0)
    return mcp_tool_error(&err);
  if (r > 0)
    return mcp_result(ended, NULL, true);
  cJSON *answer = cJSON_Parse(reply);
  if (!cJSON_IsObject(answer)) {
    cJSON_Delete(answer);
    mcp_python_stop(*p);
    return mcp_result("the interpreter answered something that is not its protocol: it was killed", NULL, true);
  }
  /* Text for the model: what it printed, the value, the exception. */
  const char *fields[][2] = {{"stdout", "--- stdout ---\n"},
                             {"stderr", "--- stderr ---\n"},
                             {"result", "--- value ---\n"},
                             {"error", "--- exception ---\n"}};
  _cleanup_free_ char *text = xstrdup("");
  for (size_t i = 0; i < ARRAY_SIZE(fields); i++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(answer, fields[i][0]);
    if (!cJSON_IsString(v) || v->valuestring[0] == '\0')
      continue;
    size_t l = strlen(v->valuestring);
    char *t = xasprintf("%s%s%s%s", text, fields[i][1], v->valuestring, v->valuestring[l - 1] == '\n' ? "" : "\n");
    free(text);
    text = t;
  }
  const cJSON *error = cJSON_GetObjectItemCaseSensitive(answer, "error");
  cJSON *out = mcp_result(text[0] ? text : "(no output)\n", NULL, cJSON_IsString(error));
  /* Each figure as an image the client can show. */
  const cJSON *figures = cJSON_GetObjectItemCaseSensitive(answer, "figures"), *f;
  if (!cJSON_IsArray(figures))
    figures = NULL;
  cJSON *content = cJSON_GetObjectItem(out, "content");
  unsigned n = 0;
  cJSON_ArrayForEach(f, figures) {
    if (!cJSON_IsString(f))
      continue;
    cJSON *img = cJSON_CreateObject();
    cJSON_AddStringToObject(img, "type", "image");
    cJSON_AddStringToObject(img, "data", f->valuestring);
    cJSON_AddStringToObject(img, "mimeType", "image/png");
    cJSON_AddItemToArray(content, img);
    n++;
  }
  cJSON_AddItemToObject(out, "structuredContent", python_structured(answer, n));
  cJSON_Delete(answer);
  return out;
}

/* An absolute path argument, or NULL. */
static const char *path_arg(struct mcp_call *c) {
  const char *path = mcp_arg_str(c, "path");
  return path && path[0] == '/' ? path : NULL;
}

static cJSON *t_write(struct mcp_call *c) {
  const char *why;
  struct mcp_sandbox **p = mcp_find(c, &why);
  if (p == NULL)
    return mcp_no_sandbox(why);
  const char *path = path_arg(c), *content = mcp_arg_str(c, "content"), *enc = mcp_arg_str(c, "encoding");
  if (path == NULL)
    return mcp_bad(c, "argument path wants an absolute path, such as /tmp/notes.txt");
  _cleanup_free_ unsigned char *bytes = NULL;
  size_t len = strlen(content);
  if (enc && strcmp(enc, "base64") == 0) {
    bytes = xmalloc(len / 4 * 3 + 3);
    if (!mcp_base64_decode(content, bytes, &len))
      return mcp_bad(c, "argument content is not base64 (encoding base64)");
  }
  if (len > c->cfg->max_file) {
    _cleanup_free_ char *t = xasprintf("content: %zu bytes, more than this server writes (%zu: hutch mcp --max-file)",
                                       len, c->cfg->max_file);
    return mcp_result(t, NULL, true);
  }
  hutch_error_t err = NULL;
  _cleanup_free_ char *parent = xstrdup(path);
  char *slash = strrchr(parent, '/');
  slash[slash == parent ? 1 : 0] = '\0';
  if (hutch_sandbox_mkdirs((*p)->sb, parent, &err) < 0 ||
      hutch_sandbox_write_file((*p)->sb, path, bytes ? (const void *)bytes : content, len, false, &err) < 0)
    return mcp_tool_error(&err);
  _cleanup_free_ char *t = xasprintf("wrote %zu bytes to %s", len, path);
  cJSON *st = cJSON_CreateObject();
  cJSON_AddStringToObject(st, "path", path);
  cJSON_AddNumberToObject(st, "bytes", (double)len);
  return mcp_result(t, st, false);
}

static cJSON *t_read(struct mcp_call *c) {
  const char *why;
  struct mcp_sandbox **p = mcp_find(c, &why);
  if (p == NULL)
    return mcp_no_sandbox(why);
  const char *path = path_arg(c);
  if (path == NULL)
    return mcp_bad(c, "argument path wants an absolute path, such as /etc/os-release");
  hutch_error_t err = NULL;
  _cleanup_free_ char *data = NULL;
  size_t len;
  if (hutch_sandbox_read_file((*p)->sb, path, c->cfg->max_file, &data, &len, &err) < 0)
    return mcp_tool_error(&err);
  cJSON *st = cJSON_CreateObject();
  cJSON_AddStringToObject(st, "path", path);
  cJSON_AddNumberToObject(st, "size", (double)len);
  _cleanup_free_ char *text = mcp_utf8(data, len);
  bool utf8 = strlen(text) == len && memcmp(text, data, len) == 0;
  _cleanup_free_ char *b64 = utf8 ? NULL : mcp_base64_encode((const unsigned char *)data, len);
  cJSON_AddStringToObject(st, "encoding", utf8 ? "utf-8" : "base64");
  cJSON_AddStringToObject(st, "content", utf8 ? text : b64);
  return mcp_result(utf8 ? text : b64, st, false);
}

/* Paths sandbox_list_dir returns at most. */
#define MAX_LISTED 10000

static cJSON *t_list_dir(struct mcp_call *c) {
  const char *why;
  struct mcp_sandbox **p = mcp_find(c, &why);
  if (p == NULL)
    return mcp_no_sandbox(why);
  const char *path = path_arg(c);
  const cJSON *d = cJSON_GetObjectItemCaseSensitive(c->args, "depth");
  if (path == NULL)
    return mcp_bad(c, "argument path wants an absolute directory, such as /tmp");
  hutch_error_t err = NULL;
  char **paths = NULL;
  /* One more than is returned: whether there were more is said. */
  if (hutch_sandbox_list_dir((*p)->sb, path, d ? (unsigned)d->valuedouble : 1, MAX_LISTED + 1, &paths, &err) < 0)
    return mcp_tool_error(&err);
  cJSON *arr = cJSON_CreateArray();
  _cleanup_free_ char *text = NULL;
  size_t len = 0, cap = 0, n = 0;
  for (char **q = paths; *q; q++, n++) {
    if (n < MAX_LISTED) {
      _cleanup_free_ char *u = mcp_utf8(*q, strlen(*q));
      cJSON_AddItemToArray(arr, cJSON_CreateString(u));
      text_append(&text, &len, &cap, u, strlen(u));
      text_append(&text, &len, &cap, "\n", 1);
    }
    free(*q);
  }
  free(paths);
  if (n > MAX_LISTED)
    text_appendf(&text, &len, &cap, "(more than %d paths: the rest are left out)\n", MAX_LISTED);
  cJSON *st = cJSON_CreateObject();
  cJSON_AddStringToObject(st, "path", path);
  cJSON_AddItemToObject(st, "paths", arr);
  cJSON_AddBoolToObject(st, "truncated", n > MAX_LISTED);
  return mcp_result(text ? text : "", st, false);
}

static const struct {
  const char *name;
  cJSON *(*fn)(struct mcp_call *c);
} handlers[] = {
    {"sandbox_create", t_create},     {"sandbox_exec", t_exec},        {"sandbox_run_code", t_run_code},
    {"sandbox_python", t_python},     {"sandbox_write_file", t_write}, {"sandbox_read_file", t_read},
    {"sandbox_list_dir", t_list_dir}, {"sandbox_list", t_list},        {"sandbox_destroy", t_destroy},
};

cJSON *mcp_tools_call(const struct mcp_config *cfg, struct mcp_session *s, const char *name, const cJSON *args,
                      struct mcp_cancel *cancel, int *code, char **message) {
  *code = 0;
  *message = NULL;
  if (!mcp_tool_known(name)) {
    /* A protocol error, as the specification has it.  The name is the
     * client's text, of any length: the audit line does not hold it. */
    *code = -32602;
    *message = xasprintf("unknown tool: %.64s%s (tools/list names them)", name, strlen(name) > 64 ? "..." : "");
    mcp_audit(cfg, s, "(unknown)", NULL, "invalid", 0);
    return NULL;
  }
  cJSON *empty = args ? NULL : cJSON_CreateObject();
  struct mcp_call c = {.cfg = cfg, .s = s, .tool = name, .args = args ? args : empty, .cancel = cancel};
  double t0 = monotonic_seconds();
  cJSON *r = NULL;
  _cleanup_free_ char *why = mcp_args_check(name, c.args);
  if (why)
    r = mcp_bad(&c, "%s", why);
  for (size_t i = 0; r == NULL && i < ARRAY_SIZE(handlers); i++)
    if (strcmp(name, handlers[i].name) == 0)
      r = handlers[i].fn(&c);
  if (r == NULL)
    r = mcp_llmsb_call(&c); /* llm-sandbox's tools, mcp_llmsb.c */
  if (r == NULL)
    r = mcp_lifecycle_call(&c); /* the tools of mcp_lifecycle.c */
  const char *outcome = c.invalid ? "invalid" : cJSON_IsTrue(cJSON_GetObjectItem(r, "isError")) ? "error" : "ok";
  mcp_audit(cfg, s, name, c.sandbox[0] ? c.sandbox : NULL, outcome, monotonic_seconds() - t0);
  cJSON_Delete(empty);
  return r;
}
