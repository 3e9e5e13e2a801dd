/* SPDX-License-Identifier: Apache-2.0 */
/* str_replace_editor.  hutch reads and writes the files itself, from the
 * host through the sandbox's root, so any size and any bytes pass without
 * quoting, and no program of the sandbox's is trusted with them. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "observation.h"
#include "tools.h"
#include "util.h"
#include "json_num.h"

#define EDITOR_FILE_MAX (64u << 20)
#define SNIPPET_LINES 4
/* Entries a directory view lists; its text is clipped far below that. */
#define EDITOR_LIST_MAX 20000

/* The undo history lives in this process, so it is bounded: the contents
 * it keeps, at most HISTORY_BYTES in all (one file's worth: any file the
 * editor takes fits), and its entries.  Past a bound the oldest go first:
 * an entry's content is dropped but its path stays, so that an undo of
 * that file says the earlier version is no longer kept. */
#define HISTORY_BYTES ((size_t)EDITOR_FILE_MAX)
#define HISTORY_ENTRIES 1024
/* An entry's len: undoing a create removes the file; the content is gone. */
#define CREATED SIZE_MAX
#define DROPPED (SIZE_MAX - 1)

struct edit_history {
  struct edit {
    char *path;
    char *content;
    size_t len;
  } * edits;
  size_t n, cap;
  size_t bytes; /* of the contents kept */
};

struct edit_history *edit_history_new(void) {
  return xcalloc(1, sizeof(struct edit_history));
}

static void history_forget(struct edit_history *h, size_t i) {
  if (h->edits[i].len < DROPPED)
    h->bytes -= h->edits[i].len;
  free(h->edits[i].path);
  free(h->edits[i].content);
  memmove(&h->edits[i], &h->edits[i + 1], (h->n - i - 1) * sizeof(*h->edits));
  h->n--;
}

void edit_history_free(struct edit_history *h) {
  if (h == NULL)
    return;
  while (h->n > 0)
    history_forget(h, h->n - 1);
  free(h->edits);
  free(h);
}

/* Takes content (malloc'd, len bytes; NULL with CREATED). */
static void history_push(struct edit_history *h, const char *path, char *content, size_t len) {
  size_t need = len < DROPPED ? len : 0;
  for (size_t i = 0; i < h->n && h->bytes + need > HISTORY_BYTES; i++)
    if (h->edits[i].len < DROPPED) {
      h->bytes -= h->edits[i].len;
      free(h->edits[i].content);
      h->edits[i].content = NULL;
      h->edits[i].len = DROPPED;
    }
  if (h->n == HISTORY_ENTRIES)
    history_forget(h, 0);
  if (h->n == h->cap)
    h->edits = xrealloc(h->edits, (h->cap = h->cap ? h->cap * 2 : 16) * sizeof(*h->edits));
  h->edits[h->n++] = (struct edit){.path = xstrdup(path), .content = content, .len = len};
  h->bytes += need;
}

struct ed {
  struct tool_env *env;
  const char *path;
  int *exit_code;
  bool *interrupted;
};

/* hutch reads and writes the sandbox's files itself, through its root
 * (hutch.h: hutch_sandbox_read_file and the rest): no program of the
 * sandbox's runs for the editor, so a replaced cat, sh or find changes
 * nothing.  NULL, or the sandbox, with *why set when it is gone. */
static struct hutch_sandbox *sandbox(struct ed *e, char **why) {
  *e->interrupted = e->env->sandbox->removed;
  if (e->env->sandbox->removed) {
    *why = xstrdup("the sandbox was stopped");
    return NULL;
  }
  return e->env->sandbox->sb;
}

/* -1 with *why set from err. */
static int failed(hutch_error_t *err, char **why) {
  *why = hutch_error_format(*err);
  hutch_error_free(err);
  return -1;
}

/* "dir", "file", "other" or "none". */
static char *kind_of(struct ed *e, char **why) {
  struct hutch_sandbox *sb = sandbox(e, why);
  if (sb == NULL)
    return NULL;
  hutch_error_t err = NULL;
  int k = hutch_sandbox_file_kind(sb, e->path, &err);
  if (k < 0) {
    failed(&err, why);
    return NULL;
  }
  return xstrdup(k == HUTCH_FILE_DIR       ? "dir"
                 : k == HUTCH_FILE_REGULAR ? "file"
                 : k == HUTCH_FILE_OTHER   ? "other"
                                           : "none");
}

static char *fail(struct ed *e, char *msg) {
  *e->exit_code = 1;
  char *r = xasprintf("ERROR: %s", msg);
  free(msg);
  return r;
}

/* Reads a text file; NULL with an error message for the model in *msg. */
static char *read_text(struct ed *e, size_t *len, char **msg) {
  _cleanup_free_ char *why = NULL;
  _cleanup_free_ char *kind = kind_of(e, &why);
  if (kind == NULL) {
    *msg = xasprintf("could not inspect %s: %s", e->path, why);
    return NULL;
  }
  if (strcmp(kind, "none") == 0) {
    *msg = xasprintf("The path %s does not exist. Please provide a valid path.", e->path);
    return NULL;
  }
  if (strcmp(kind, "file") != 0) {
    *msg = xasprintf("The path %s is %s, not a regular file.", e->path,
                     strcmp(kind, "dir") == 0 ? "a directory" : "a special file");
    return NULL;
  }
  struct hutch_sandbox *sb = sandbox(e, &why);
  hutch_error_t err = NULL;
  char *data = NULL;
  size_t n = 0;
  if (sb == NULL || hutch_sandbox_read_file(sb, e->path, EDITOR_FILE_MAX, &data, &n, &err) < 0) {
    if (err != NULL && err->errnum == EFBIG) {
      hutch_error_free(&err);
      *msg = xasprintf("%s is larger than %u MiB; inspect it with execute_bash (head, grep, sed -n).", e->path,
                       EDITOR_FILE_MAX >> 20);
      return NULL;
    }
    if (err != NULL)
      failed(&err, &why);
    *msg = xasprintf("could not read %s: %s", e->path, why);
    return NULL;
  }
  if (memchr(data, '\0', n) != NULL || !text_is_utf8(data, n)) {
    free(data);
    *msg = xasprintf("%s is a binary file (not UTF-8 text); the editor only handles text. Inspect it with "
                     "execute_bash (e.g. `file`, `xxd | head`).",
                     e->path);
    return NULL;
  }
  *len = n;
  return data;
}

static int write_text(struct ed *e, const char *data, size_t len, bool create, char **why) {
  struct hutch_sandbox *sb = sandbox(e, why);
  if (sb == NULL)
    return -1;
  hutch_error_t err = NULL;
  if (hutch_sandbox_write_file(sb, e->path, data, len, create, &err) < 0)
    return failed(&err, why);
  return 0;
}

static size_t count_lines(const char *s, size_t len) {
  size_t n = 0;
  for (size_t i = 0; i < len; i++)
    if (s[i] == '\n')
      n++;
  if (len > 0 && s[len - 1] != '\n')
    n++;
  return n;
}

/* Offset of the start of line `line` (1-based); len when past the end. */
static size_t line_offset(const char *s, size_t len, size_t line) {
  size_t off = 0;
  for (size_t l = 1; l < line && off < len; off++)
    if (s[off] == '\n')
      l++;
  return off;
}

/* Lines first..last (1-based, inclusive) numbered like `cat -n`. */
static char *numbered(const char *s, size_t len, size_t first, size_t last) {
  size_t cap = 64, o = 0;
  char *out = xmalloc(cap);
  out[0] = '\0';
  size_t off = line_offset(s, len, first);
  for (size_t l = first; l <= last && off < len; l++) {
    const char *nl = memchr(s + off, '\n', len - off);
    size_t ll = nl ? (size_t)(nl - (s + off)) : len - off;
    if (o + ll + 16 > cap) {
      cap = (o + ll + 16) * 2;
      out = xrealloc(out, cap);
    }
    o += (size_t)sprintf(out + o, "%6zu\t", l);
    memcpy(out + o, s + off, ll);
    o += ll;
    out[o++] = '\n';
    out[o] = '\0';
    off += ll + 1;
  }
  return out;
}

static bool get_int(const cJSON *v, long *out) {
  if (cJSON_IsNumber(v))
    return json_whole_long(v, out);
  if (cJSON_IsString(v)) {
    char *end;
    *out = strtol(v->valuestring, &end, 10);
    return end != v->valuestring && *end == '\0';
  }
  return false;
}

static const char *get_str(const cJSON *args, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static char *snippet_result(struct ed *e, const char *what, const char *s, size_t len, size_t line, size_t n_new) {
  size_t total = count_lines(s, len);
  size_t first = line > SNIPPET_LINES ? line - SNIPPET_LINES : 1;
  size_t last = line + n_new + SNIPPET_LINES;
  if (last > total)
    last = total;
  _cleanup_free_ char *snip = numbered(s, len, first, last);
  /* Clipped as a view is: a snippet's lines may be of any length. */
  _cleanup_free_ char *clipped = text_clip(snip, OBS_EDITOR_MAX_CHARS);
  return xasprintf("The file %s has been %s. Here's the result of running `cat -n` on a snippet of %s:\n%s"
                   "Review the changes and make sure they are as expected. Edit the file again if necessary.",
                   e->path, what, e->path, clipped);
}

static int by_bytes(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* What `find PATH -maxdepth 2 ! -path '*\/.*' | sort` printed, hidden
 * names left out, in byte order; sanitized for the model. */
static char *list_dir(struct ed *e, char **why) {
  struct hutch_sandbox *sb = sandbox(e, why);
  if (sb == NULL)
    return NULL;
  hutch_error_t err = NULL;
  _cleanup_strv_ char **paths = NULL;
  if (hutch_sandbox_list_dir(sb, e->path, 2, EDITOR_LIST_MAX, &paths, &err) < 0) {
    failed(&err, why);
    return NULL;
  }
  size_t n = 0, total = 0;
  while (paths[n])
    n++;
  qsort(paths, n, sizeof(char *), by_bytes);
  for (size_t i = 0; i < n; i++)
    total += strlen(paths[i]) + 1;
  _cleanup_free_ char *out = xmalloc(total + 1);
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    if (strstr(paths[i], "/.") != NULL)
      continue;
    size_t l = strlen(paths[i]);
    memcpy(out + o, paths[i], l);
    o += l;
    out[o++] = '\n';
  }
  out[o] = '\0';
  return text_utf8_sanitize(out, o);
}

static char *do_view(struct ed *e, const cJSON *args) {
  _cleanup_free_ char *why = NULL;
  _cleanup_free_ char *kind = kind_of(e, &why);
  if (kind == NULL)
    return fail(e, xasprintf("could not inspect %s: %s", e->path, why));
  if (strcmp(kind, "dir") == 0) {
    if (cJSON_GetObjectItemCaseSensitive(args, "view_range"))
      return fail(e, xstrdup("The `view_range` parameter is not allowed when `path` points to a directory."));
    _cleanup_free_ char *list = list_dir(e, &why);
    if (list == NULL)
      return fail(e, xasprintf("could not list %s: %s", e->path, why));
    _cleanup_free_ char *r = xasprintf(
        "Here's the files and directories up to 2 levels deep in %s, excluding hidden items:\n%s", e->path, list);
    *e->exit_code = 0;
    return text_clip(r, OBS_EDITOR_MAX_CHARS);
  }
  size_t len = 0;
  char *msg = NULL;
  _cleanup_free_ char *text = read_text(e, &len, &msg);
  if (text == NULL)
    return fail(e, msg);
  size_t total = count_lines(text, len);
  size_t first = 1, last = total;
  const cJSON *vr = cJSON_GetObjectItemCaseSensitive(args, "view_range");
  cJSON *parsed = NULL;
  if (cJSON_IsString(vr))
    vr = parsed = cJSON_Parse(vr->valuestring);
  if (vr != NULL) {
    long a, b;
    if (!cJSON_IsArray(vr) || cJSON_GetArraySize(vr) != 2 || !get_int(cJSON_GetArrayItem(vr, 0), &a) ||
        !get_int(cJSON_GetArrayItem(vr, 1), &b)) {
      cJSON_Delete(parsed);
      return fail(e, xstrdup("Invalid `view_range`: it should be a list of two integers, [start, end]."));
    }
    cJSON_Delete(parsed);
    if (a < 1 || (size_t)a > (total ? total : 1))
      return fail(e, xasprintf("Invalid `view_range`: [%ld, %ld]. Its first element `%ld` should be within the "
                               "range of lines of the file: [1, %zu].",
                               a, b, a, total));
    if (b != -1 && (b < a || (size_t)b > total))
      return fail(e, xasprintf("Invalid `view_range`: [%ld, %ld]. Its second element `%ld` should be -1 or between "
                               "the first element `%ld` and the number of lines in the file: %zu.",
                               a, b, b, a, total));
    first = (size_t)a;
    last = b == -1 ? total : (size_t)b;
  }
  _cleanup_free_ char *body = numbered(text, len, first, last);
  _cleanup_free_ char *r = xasprintf("Here's the result of running `cat -n` on %s:\n%s", e->path, body);
  *e->exit_code = 0;
  return text_clip(r, OBS_EDITOR_MAX_CHARS);
}

static char *do_create(struct ed *e, const cJSON *args) {
  const char *text = get_str(args, "file_text");
  if (text == NULL)
    return fail(e, xstrdup("Parameter `file_text` is required for command: create."));
  _cleanup_free_ char *why = NULL;
  _cleanup_free_ char *kind = kind_of(e, &why);
  if (kind == NULL)
    return fail(e, xasprintf("could not inspect %s: %s", e->path, why));
  if (strcmp(kind, "none") != 0)
    return fail(e, xasprintf("File already exists at: %s. Cannot overwrite files using command `create`.", e->path));
  if (write_text(e, text, strlen(text), true, &why) < 0)
    return fail(e, xasprintf("could not create %s: %s", e->path, why));
  history_push(e->env->history, e->path, NULL, CREATED);
  *e->exit_code = 0;
  return xasprintf("File created successfully at: %s", e->path);
}

static char *do_str_replace(struct ed *e, const cJSON *args) {
  const char *old = get_str(args, "old_str");
  const char *new = get_str(args, "new_str");
  if (old == NULL || old[0] == '\0')
    return fail(e, xstrdup("Parameter `old_str` is required for command: str_replace."));
  if (new == NULL)
    new = "";
  size_t len = 0;
  char *msg = NULL;
  _cleanup_free_ char *text = read_text(e, &len, &msg);
  if (text == NULL)
    return fail(e, msg);
  size_t olen = strlen(old), count = 0;
  const char *hit = NULL;
  for (const char *p = text; (p = strstr(p, old)) != NULL; p += olen) {
    if (hit == NULL)
      hit = p;
    count++;
  }
  if (count == 0)
    return fail(e,
                xasprintf("No replacement was performed, old_str `%s` did not appear verbatim in %s.", old, e->path));
  if (count > 1)
    return fail(e, xasprintf("No replacement was performed. Multiple occurrences (%zu) of old_str `%s` in %s. "
                             "Please ensure it is unique.",
                             count, old, e->path));
  size_t at = (size_t)(hit - text), nlen = strlen(new);
  size_t out_len = len - olen + nlen;
  _cleanup_free_ char *out = xmalloc(out_len + 1);
  memcpy(out, text, at);
  memcpy(out + at, new, nlen);
  memcpy(out + at + nlen, text + at + olen, len - at - olen);
  out[out_len] = '\0';
  _cleanup_free_ char *why = NULL;
  if (write_text(e, out, out_len, false, &why) < 0)
    return fail(e, xasprintf("could not write %s: %s", e->path, why));
  *e->exit_code = 0;
  size_t line = 1;
  for (size_t i = 0; i < at; i++)
    if (text[i] == '\n')
      line++;
  history_push(e->env->history, e->path, steal_pointer(&text), len);
  size_t new_lines = 0;
  for (const char *p = new; *p; p++)
    if (*p == '\n')
      new_lines++;
  return snippet_result(e, "edited", out, out_len, line, new_lines);
}

static char *do_insert(struct ed *e, const cJSON *args) {
  const char *new = get_str(args, "new_str");
  long line;
  if (!get_int(cJSON_GetObjectItemCaseSensitive(args, "insert_line"), &line))
    return fail(e, xstrdup("Parameter `insert_line` (an integer) is required for command: insert."));
  if (new == NULL)
    return fail(e, xstrdup("Parameter `new_str` is required for command: insert."));
  size_t len = 0;
  char *msg = NULL;
  _cleanup_free_ char *text = read_text(e, &len, &msg);
  if (text == NULL)
    return fail(e, msg);
  size_t total = count_lines(text, len);
  if (line < 0 || (size_t)line > total)
    return fail(e, xasprintf("Invalid `insert_line` parameter: %ld. It should be within the range of lines of the "
                             "file: [0, %zu].",
                             line, total));
  size_t at = line == 0 ? 0 : line_offset(text, len, (size_t)line + 1);
  bool need_nl_before = at == len && len > 0 && text[len - 1] != '\n';
  size_t nlen = strlen(new);
  bool need_nl_after = nlen == 0 || new[nlen - 1] != '\n';
  size_t out_len = len + nlen + need_nl_before + need_nl_after;
  _cleanup_free_ char *out = xmalloc(out_len + 1);
  size_t o = 0;
  memcpy(out, text, at);
  o = at;
  if (need_nl_before)
    out[o++] = '\n';
  memcpy(out + o, new, nlen);
  o += nlen;
  if (need_nl_after)
    out[o++] = '\n';
  memcpy(out + o, text + at, len - at);
  o += len - at;
  out[o] = '\0';
  _cleanup_free_ char *why = NULL;
  if (write_text(e, out, o, false, &why) < 0)
    return fail(e, xasprintf("could not write %s: %s", e->path, why));
  history_push(e->env->history, e->path, steal_pointer(&text), len);
  *e->exit_code = 0;
  size_t new_lines = count_lines(new, nlen);
  return snippet_result(e, "edited", out, o, (size_t)line + 1, new_lines ? new_lines - 1 : 0);
}

static char *do_undo(struct ed *e) {
  struct edit_history *h = e->env->history;
  size_t i = h->n;
  while (i > 0 && strcmp(h->edits[i - 1].path, e->path) != 0)
    i--;
  if (i == 0)
    return fail(e, xasprintf("No edit history found for %s.", e->path));
  if (h->edits[i - 1].len == DROPPED)
    return fail(e, xasprintf("The version of %s before its last edit is no longer kept: the undo history keeps at "
                             "most %zu MiB of earlier versions, and the oldest go first.",
                             e->path, HISTORY_BYTES >> 20));
  struct edit ed = h->edits[i - 1]; /* ours now */
  h->bytes -= ed.len < DROPPED ? ed.len : 0;
  h->edits[i - 1] = (struct edit){.len = 0};
  history_forget(h, i - 1);
  _cleanup_free_ char *why = NULL;
  char *r;
  if (ed.len == CREATED) {
    struct hutch_sandbox *sb = sandbox(e, &why);
    hutch_error_t err = NULL;
    int rr = sb == NULL ? -1 : hutch_sandbox_remove_file(sb, e->path, &err) < 0 ? failed(&err, &why) : 0;
    r = rr < 0 ? fail(e, xasprintf("could not remove %s: %s", e->path, why))
               : xasprintf("Last edit to %s undone successfully: the file it created was removed.", e->path);
  } else if (write_text(e, ed.content, ed.len, false, &why) < 0) {
    r = fail(e, xasprintf("could not write %s: %s", e->path, why));
  } else {
    _cleanup_free_ char *body = numbered(ed.content, ed.len, 1, count_lines(ed.content, ed.len));
    _cleanup_free_ char *full =
        xasprintf("Last edit to %s undone successfully. Here's the result of running `cat -n` on %s:\n%s", e->path,
                  e->path, body);
    r = text_clip(full, OBS_EDITOR_MAX_CHARS);
  }
  if (*e->exit_code != 1)
    *e->exit_code = 0;
  free(ed.path);
  free(ed.content);
  return r;
}

char *editor_run(struct tool_env *env, const cJSON *args, int *exit_code, bool *interrupted) {
  struct ed e = {.env = env, .exit_code = exit_code, .interrupted = interrupted};
  *exit_code = 1;
  const char *cmd = get_str(args, "command");
  e.path = get_str(args, "path");
  if (cmd == NULL)
    return fail(&e, xstrdup("Parameter `command` is required: view, create, str_replace, insert or undo_edit."));
  if (e.path == NULL)
    return fail(&e, xstrdup("Parameter `path` is required."));
  if (e.path[0] != '/')
    return fail(&e, xasprintf("The path %s is not an absolute path, it should start with `/`.", e.path));
  if (strcmp(cmd, "view") == 0)
    return do_view(&e, args);
  if (strcmp(cmd, "create") == 0)
    return do_create(&e, args);
  if (strcmp(cmd, "str_replace") == 0)
    return do_str_replace(&e, args);
  if (strcmp(cmd, "insert") == 0)
    return do_insert(&e, args);
  if (strcmp(cmd, "undo_edit") == 0)
    return do_undo(&e);
  return fail(&e, xasprintf("Unrecognized command %s. The allowed commands are: view, create, str_replace, insert, "
                            "undo_edit.",
                            cmd));
}
