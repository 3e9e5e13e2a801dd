/* SPDX-License-Identifier: Apache-2.0 */
/* A sandbox's files as MCP resources: sandbox://ID/PATH names the file
 * PATH of the session's sandbox ID.  They are read through the sandbox's
 * root as the file tools read them (hutch_sandbox_read_file on a handle
 * that follows no symlink: no path leaves the sandbox, none is reached
 * through a link it planted), each at most --max-file bytes.
 *
 * A subscription (resources/subscribe) is a watch: the file is read again
 * every MCP_WATCH_SECONDS, by the session's own thread, between its calls
 * and while one waits, and a change of its bytes, of whether it can be
 * read, or the end of its sandbox is sent as notifications/resources/updated.
 * The sandbox writes these files: a session holds at most MCP_MAX_WATCHES,
 * and a look that took t waits 10 t before the next, so that large or slow
 * files cost the server at most a tenth of that thread's time. */
#include "config.h"

#include "mcp.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define SCHEME "sandbox://"

static bool unreserved(unsigned char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || strchr("-._~/", ch);
}

char *mcp_resource_uri(const char *id, const char *path) {
  size_t len = 0, cap = 0;
  char *uri = NULL;
  text_appendf(&uri, &len, &cap, SCHEME "%s", id);
  for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
    if (unreserved(*p))
      text_append(&uri, &len, &cap, (const char *)p, 1);
    else
      text_appendf(&uri, &len, &cap, "%%%02X", *p);
  }
  return uri;
}

static int hex(char ch) {
  return ch >= '0' && ch <= '9'   ? ch - '0'
         : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
         : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                  : -1;
}

bool mcp_resource_parse(const char *uri, char **id, char **path) {
  if (strncmp(uri, SCHEME, strlen(SCHEME)) != 0)
    return false;
  const char *at = uri + strlen(SCHEME), *slash = strchr(at, '/');
  if (slash == NULL || slash == at || slash - at >= 40)
    return false;
  for (const char *c = at; c < slash; c++)
    if (hex(*c) < 0)
      return false; /* sandbox ids are hex */
  char *p = xmalloc(strlen(slash) + 1), *o = p;
  for (const char *c = slash; *c; c++) {
    if (*c == '%') {
      int hi = hex(c[1]), lo = hi < 0 ? -1 : hex(c[2]);
      if (lo < 0 || (hi == 0 && lo == 0)) {
        free(p);
        return false;
      }
      *o++ = (char)(hi << 4 | lo);
      c += 2;
    } else if (*c == '?' || *c == '#') {
      free(p); /* a query or fragment names no file */
      return false;
    } else {
      *o++ = *c;
    }
  }
  *o = '\0';
  *id = xstrndup(at, (size_t)(slash - at));
  *path = p;
  return true;
}

/* The media type a file's name suggests, or NULL. */
static const char *mime_of(const char *path) {
  static const char *const types[][2] = {
      {".txt", "text/plain"},  {".log", "text/plain"},        {".md", "text/markdown"},    {".csv", "text/csv"},
      {".html", "text/html"},  {".json", "application/json"}, {".py", "text/x-python"},    {".c", "text/x-c"},
      {".h", "text/x-c"},      {".sh", "text/x-shellscript"}, {".png", "image/png"},       {".jpg", "image/jpeg"},
      {".jpeg", "image/jpeg"}, {".svg", "image/svg+xml"},     {".pdf", "application/pdf"},
  };
  const char *dot = strrchr(path, '.');
  if (dot == NULL || strchr(dot, '/'))
    return NULL;
  for (size_t i = 0; i < ARRAY_SIZE(types); i++)
    if (strcmp(dot, types[i][0]) == 0)
      return types[i][1];
  return NULL;
}

__attribute__((format(printf, 3, 4))) static cJSON *fail(int *code, char **message, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  *code = -32002;
  *message = xvasprintf(fmt, ap);
  va_end(ap);
  return NULL;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The regular files resources/list names of sandbox m, sorted. */
static void list_files(struct mcp_sandbox *m, char ***files, size_t *n) {
  hutch_error_t err = NULL;
  char **paths = NULL;
  /* Directories and other files are listed too, and dropped here: a few
   * times as many entries as files are looked at, no more. */
  if (hutch_sandbox_list_dir(m->sb, m->workdir, MCP_RESOURCE_DEPTH, MCP_RESOURCE_FILES * 4, &paths, &err) < 0) {
    hutch_error_free(&err); /* its working directory is gone: nothing to name */
    return;
  }
  size_t start = *n;
  for (char **p = paths; *p; p++) {
    if (*n - start < MCP_RESOURCE_FILES && hutch_sandbox_file_kind(m->sb, *p, &err) == HUTCH_FILE_REGULAR) {
      *files = xrealloc(*files, (*n + 1) * sizeof(char *));
      (*files)[(*n)++] = mcp_resource_uri(m->id, *p);
    } else {
      hutch_error_free(&err);
    }
    free(*p);
  }
  free(paths);
  qsort(*files + start, *n - start, sizeof(char *), cmp_str);
}

cJSON *mcp_resources_list(const struct mcp_config *cfg, struct mcp_session *s, const cJSON *params, int *code,
                          char **message) {
  (void)cfg;
  const cJSON *cursor = cJSON_GetObjectItemCaseSensitive(params, "cursor");
  size_t from = 0;
  if (cursor) {
    char *end;
    const char *v = cJSON_GetStringValue(cursor);
    from = v ? strtoul(v, &end, 10) : 0;
    if (v == NULL || *end || end == v) {
      *code = -32602;
      *message = xstrdup("invalid params: not a cursor of resources/list");
      return NULL;
    }
  }
  char **files = NULL;
  size_t n = 0;
  for (struct mcp_sandbox *m = s->sandboxes; m; m = m->next)
    list_files(m, &files, &n);
  cJSON *r = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(r, "resources");
  if (from == 0) /* llm-sandbox's, on the first page besides the files */
    mcp_llmsb_resource_entry(a);
  for (size_t i = 0; i < n; i++) {
    if (i >= from && i < from + MCP_RESOURCE_PAGE) {
      _cleanup_free_ char *id = NULL, *path = NULL;
      mcp_resource_parse(files[i], &id, &path);
      _cleanup_free_ char *shown = mcp_utf8(path, strlen(path));
      _cleanup_free_ char *title = xasprintf("%s in sandbox %s", shown, id);
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "uri", files[i]);
      cJSON_AddStringToObject(o, "name", shown);
      cJSON_AddStringToObject(o, "title", title);
      if (mime_of(path))
        cJSON_AddStringToObject(o, "mimeType", mime_of(path));
      cJSON_AddItemToArray(a, o);
    }
    free(files[i]);
  }
  free(files);
  if (from + MCP_RESOURCE_PAGE < n) {
    char next[32];
    snprintf(next, sizeof(next), "%zu", from + MCP_RESOURCE_PAGE);
    cJSON_AddStringToObject(r, "nextCursor", next);
  }
  return r;
}

cJSON *mcp_resource_templates(void) {
  cJSON *r = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(r, "resourceTemplates");
  cJSON *t = cJSON_CreateObject();
  cJSON_AddStringToObject(t, "uriTemplate", SCHEME "{id}{+path}");
  cJSON_AddStringToObject(t, "name", "sandbox file");
  cJSON_AddStringToObject(t, "title", "A file of a sandbox");
  cJSON_AddStringToObject(t, "description",
                          "The regular file at absolute path PATH of this session's sandbox ID (no symlink followed, "
                          "at most the server's --max-file bytes)");
  cJSON_AddItemToArray(a, t);
  return r;
}

/* The session's sandbox and the path a uri names, or a JSON-RPC error. */
static struct mcp_sandbox *resolve(struct mcp_session *s, const cJSON *params, const char **uri, char **path, int *code,
                                   char **message) {
  *uri = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(params, "uri"));
  if (*uri == NULL) {
    *code = -32602;
    *message = xstrdup("invalid params: wants a uri");
    return NULL;
  }
  _cleanup_free_ char *id = NULL;
  struct mcp_sandbox *m = NULL;
  if (!mcp_resource_parse(*uri, &id, path) || (m = mcp_sandbox_find(s, id)) == NULL) {
    free(*path);
    *path = NULL;
    fail(code, message, "resource not found: not a sandbox://ID/PATH of a sandbox of this session");
  }
  return m;
}

/* The file's bytes, or a JSON-RPC error: a file that is not there, or not
 * a regular file reached without a symlink, is not found (-32002). */
static char *read_resource(const struct mcp_config *cfg, struct mcp_sandbox *m, const char *path, size_t *len,
                           int *code, char **message) {
  hutch_error_t err = NULL;
  char *data = NULL;
  if (hutch_sandbox_read_file(m->sb, path, cfg->max_file, &data, len, &err) == 0)
    return data;
  int e = err->errnum;
  _cleanup_free_ char *why = hutch_error_format(err);
  hutch_error_free(&err);
  bool missing = e == ENOENT || e == ENOTDIR || e == EISDIR || e == ELOOP || e == EINVAL || e == EACCES;
  *code = missing ? -32002 : -32603;
  *message = xasprintf("%s%s", missing ? "resource not found: " : "", why);
  return NULL;
}

cJSON *mcp_resources_read(const struct mcp_config *cfg, struct mcp_session *s, const cJSON *params, int *code,
                          char **message) {
  const char *uri = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(params, "uri"));
  if (uri && strcmp(uri, MCP_LLMSB_RESOURCE) == 0)
    return mcp_llmsb_resource(cfg);
  _cleanup_free_ char *path = NULL;
  struct mcp_sandbox *m = resolve(s, params, &uri, &path, code, message);
  if (m == NULL)
    return NULL;
  size_t len;
  _cleanup_free_ char *data = read_resource(cfg, m, path, &len, code, message);
  if (data == NULL)
    return NULL;
  _cleanup_free_ char *text = mcp_utf8(data, len);
  bool utf8 = strlen(text) == len && memcmp(text, data, len) == 0;
  const char *mime = mime_of(path);
  cJSON *r = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(r, "contents"), *c = cJSON_CreateObject();
  cJSON_AddStringToObject(c, "uri", uri);
  cJSON_AddStringToObject(c, "mimeType", mime ? mime : utf8 ? "text/plain" : "application/octet-stream");
  if (utf8) {
    cJSON_AddStringToObject(c, "text", text);
  } else {
    _cleanup_free_ char *b64 = mcp_base64_encode((const unsigned char *)data, len);
    cJSON_AddStringToObject(c, "blob", b64);
  }
  cJSON_AddItemToArray(a, c);
  return r;
}

/* FNV-1a: a change of the bytes, not a secret, is what it tells. */
static uint64_t fnv1a(const char *data, size_t len) {
  uint64_t h = 14695981039346656037ull;
  for (size_t i = 0; i < len; i++)
    h = (h ^ (unsigned char)data[i]) * 1099511628211ull;
  return h;
}

/* Reads the watched file: whether it changed since the last look. */
static bool look(const struct mcp_config *cfg, struct mcp_sandbox *m, struct mcp_watch *w) {
  hutch_error_t err = NULL;
  _cleanup_free_ char *data = NULL;
  size_t len = 0;
  int state = 0;
  uint64_t hash = 0;
  if (hutch_sandbox_read_file(m->sb, w->path, cfg->max_file, &data, &len, &err) < 0) {
    state = err->errnum ? err->errnum : EIO;
    len = 0;
    hutch_error_free(&err);
  } else {
    hash = fnv1a(data, len);
  }
  bool changed = state != w->state || len != w->size || hash != w->hash;
  w->state = state;
  w->size = len;
  w->hash = hash;
  return changed;
}

static void watch_free(struct mcp_watch *w) {
  free(w->uri);
  free(w->sandbox);
  free(w->path);
  free(w);
}

static void notify_updated(struct mcp_session *s, const char *uri) {
  if (s->notify == NULL)
    return;
  cJSON *n = cJSON_CreateObject();
  cJSON_AddStringToObject(n, "jsonrpc", "2.0");
  cJSON_AddStringToObject(n, "method", "notifications/resources/updated");
  cJSON_AddStringToObject(cJSON_AddObjectToObject(n, "params"), "uri", uri);
  _cleanup_free_ char *text = cJSON_PrintUnformatted(n);
  cJSON_Delete(n);
  s->notify(s, text);
}

cJSON *mcp_resources_subscribe(const struct mcp_config *cfg, struct mcp_session *s, const cJSON *params, bool on,
                               int *code, char **message) {
  const char *uri;
  _cleanup_free_ char *path = NULL;
  struct mcp_sandbox *m = NULL;
  if (on && (m = resolve(s, params, &uri, &path, code, message)) == NULL)
    return NULL;
  /* An unsubscribe needs no sandbox: its watch may outlive it. */
  uri = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(params, "uri"));
  if (uri == NULL) {
    *code = -32602;
    *message = xstrdup("invalid params: wants a uri");
    return NULL;
  }
  for (struct mcp_watch **p = &s->watches; *p; p = &(*p)->next) {
    if (strcmp((*p)->uri, uri) != 0)
      continue;
    if (!on) {
      struct mcp_watch *w = *p;
      *p = w->next;
      watch_free(w);
      s->n_watches--;
    }
    return cJSON_CreateObject();
  }
  if (!on)
    return cJSON_CreateObject(); /* nothing to end: as asked */
  if (s->n_watches >= MCP_MAX_WATCHES) {
    *code = -32000;
    *message = xasprintf("this session holds %d subscriptions, the most it may: resources/unsubscribe one first",
                         MCP_MAX_WATCHES);
    return NULL;
  }
  struct mcp_watch *w = xcalloc(1, sizeof(*w));
  w->uri = xstrdup(uri);
  w->sandbox = xstrdup(m->id);
  w->path = steal_pointer(&path);
  look(cfg, m, w); /* what it holds now: a change is told from it */
  w->next = s->watches;
  s->watches = w;
  s->n_watches++;
  if (s->next_poll == 0)
    s->next_poll = monotonic_seconds() + MCP_WATCH_SECONDS;
  return cJSON_CreateObject();
}

void mcp_watches_poll(const struct mcp_config *cfg, struct mcp_session *s) {
  double start = monotonic_seconds();
  if (s->watches == NULL || start < s->next_poll)
    return;
  for (struct mcp_watch **p = &s->watches; *p;) {
    struct mcp_watch *w = *p;
    struct mcp_sandbox *m = mcp_sandbox_find(s, w->sandbox);
    if (m == NULL) {
      /* Its sandbox is gone, and the file with it: told once, then dropped. */
      notify_updated(s, w->uri);
      *p = w->next;
      watch_free(w);
      s->n_watches--;
      continue;
    }
    if (look(cfg, m, w))
      notify_updated(s, w->uri);
    p = &w->next;
  }
  double took = monotonic_seconds() - start;
  s->next_poll = monotonic_seconds() + (took * 10 > MCP_WATCH_SECONDS ? took * 10 : MCP_WATCH_SECONDS);
}

void mcp_watches_clear(struct mcp_session *s) {
  while (s->watches) {
    struct mcp_watch *w = s->watches;
    s->watches = w->next;
    watch_free(w);
  }
  s->n_watches = 0;
}
