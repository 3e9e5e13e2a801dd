/* SPDX-License-Identifier: Apache-2.0 */
/* str_replace_editor as LLM-in-Sandbox 0.2.0 answers it (--tools lis).
 *
 * The reference runs its editor as shell commands in the container (`test`,
 * `find`, `cat`, `echo '...' > path`) and formats what they print; the model
 * was trained on those answers, quirks included: only .py and .rst files
 * may be viewed, `create` overwrites, every write ends in one more newline
 * (echo's), tabs are expanded and carriage returns dropped on the way, and a
 * missing file reads as cat's error message.  hutch runs none of the
 * sandbox's programs for it: it reads and writes through the sandbox's root
 * (hutch.h) and reproduces what those commands would have printed.  The
 * expected answers are tests/golden/lis/, made by the reference's own code. */
#include "config.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "observation.h"
#include "tools.h"
#include "lis_compat.h"
#include "util.h"
#include "json_num.h"

#define SNIPPET_LINES 4
#define MAX_RESPONSE_LEN 10000
#define FILE_MAX (64u << 20)
#define LIST_MAX 20000
#define LIST_SHOWN 100 /* find ... | head -100 */

struct lis {
  struct tool_env *env;
  const char *path; /* as the model wrote it: every message names it so */
  char *abs;        /* relative paths are relative to the working directory */
  bool *interrupted;
};

/* A view of a string split at '\n', as Python's str.split("\n"). */
struct lines {
  const char **p;
  size_t *len;
  size_t n;
};

static void lines_split(struct lines *l, const char *s) {
  l->n = 0;
  for (const char *q = s;; q++)
    if (*q == '\n' || *q == '\0') {
      l->n++;
      if (*q == '\0')
        break;
    }
  l->p = xcalloc(l->n, sizeof(*l->p));
  l->len = xcalloc(l->n, sizeof(*l->len));
  size_t i = 0;
  const char *start = s;
  for (const char *q = s;; q++)
    if (*q == '\n' || *q == '\0') {
      l->p[i] = start;
      l->len[i++] = (size_t)(q - start);
      start = q + 1;
      if (*q == '\0')
        break;
    }
}

static void lines_free(struct lines *l) {
  free(l->p);
  free(l->len);
}

/* Lines [from, to) of l (clamped as a Python slice) onto f, '\n' between. */
static void put_lines(FILE *f, const struct lines *l, size_t from, size_t to, bool *first) {
  if (to > l->n)
    to = l->n;
  for (size_t i = from; i < to; i++) {
    if (!*first)
      fputc('\n', f);
    *first = false;
    fwrite(l->p[i], 1, l->len[i], f);
  }
}

struct buf {
  FILE *f;
  char *data;
  size_t len;
};

static void buf_open(struct buf *b) {
  b->data = NULL;
  b->len = 0;
  b->f = open_memstream(&b->data, &b->len);
  if (b->f == NULL)
    abort();
}

static char *buf_close(struct buf *b) {
  fclose(b->f);
  return b->data;
}

/* Python's str.expandtabs(): tab stops every 8 characters (code points),
 * the column starting again after '\n' and '\r'. */
static char *expandtabs(const char *s) {
  struct buf b;
  buf_open(&b);
  size_t col = 0;
  for (const char *p = s; *p; p++) {
    if (*p == '\t') {
      size_t n = 8 - col % 8;
      for (size_t i = 0; i < n; i++)
        fputc(' ', b.f);
      col += n;
      continue;
    }
    fputc(*p, b.f);
    if (*p == '\n' || *p == '\r')
      col = 0;
    else if ((*p & 0xc0) != 0x80)
      col++;
  }
  return buf_close(&b);
}

static size_t count_char(const char *s, char c) {
  size_t n = 0;
  for (; *s; s++)
    n += *s == c;
  return n;
}

static size_t count_occurrences(const char *s, const char *needle) {
  size_t n = 0, l = strlen(needle);
  for (const char *p = s; (p = strstr(p, needle)) != NULL; p += l)
    n++;
  return n;
}

/* Python's str() of a JSON value (strings, null, booleans, integers; other
 * values as their JSON text). */
static char *py_str(const cJSON *v) {
  if (cJSON_IsString(v))
    return xstrdup(v->valuestring);
  if (v == NULL)
    return xstrdup("");
  if (cJSON_IsNull(v))
    return xstrdup("None");
  if (cJSON_IsBool(v))
    return xstrdup(cJSON_IsTrue(v) ? "True" : "False");
  long n;
  if (json_whole_long(v, &n))
    return xasprintf("%ld", n);
  return cJSON_PrintUnformatted(v);
}

static const char *arg_str(const cJSON *args, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The sandbox, or NULL once it is gone. */
static struct hutch_sandbox *sandbox(struct lis *e) {
  *e->interrupted = e->env->sandbox->removed;
  return e->env->sandbox->removed ? NULL : e->env->sandbox->sb;
}

/* `test -d` / `test -f` (both follow symlinks). */
static int kind(struct lis *e, const char *abs) {
  struct hutch_sandbox *sb = sandbox(e);
  hutch_error_t err = NULL;
  int k = sb ? hutch_sandbox_file_kind(sb, abs, &err) : -1;
  hutch_error_free(&err);
  return k;
}

/* Command output as the reference's runtime hands it over: UTF-8 with
 * replacement characters, colour codes and carriage returns dropped. */
static char *as_output(const char *s, size_t len) {
  _cleanup_free_ char *u = text_utf8_sanitize(s, len);
  return text_strip_ansi(u);
}

/* What `cat PATH` printed, stderr included: the file's text, or cat's
 * complaint, which the reference takes for the file's text. */
static char *cat(struct lis *e) {
  struct hutch_sandbox *sb = sandbox(e);
  if (sb == NULL)
    return xstrdup("");
  hutch_error_t err = NULL;
  char *data = NULL;
  size_t n = 0;
  if (hutch_sandbox_read_file(sb, e->abs, FILE_MAX, &data, &n, &err) < 0) {
    int errnum = err && err->errnum ? err->errnum : EIO;
    hutch_error_free(&err);
    return xasprintf("cat: %s: %s\n", e->path, strerror(errnum));
  }
  char *r = as_output(data, n);
  free(data);
  return r;
}

/* `echo 'TEXT' > PATH`: TEXT and a newline, unless TEXT is one of echo's
 * own options (-n, -e, -E and their combinations). 0, or an errno. */
static int echo_to(struct lis *e, const char *text) {
  size_t tl = strlen(text);
  bool option = tl >= 2 && text[0] == '-' && strspn(text + 1, "neE") == tl - 1;
  _cleanup_free_ char *data = option ? xstrdup(strchr(text, 'n') ? "" : "\n") : xasprintf("%s\n", text);
  struct hutch_sandbox *sb = sandbox(e);
  if (sb == NULL)
    return ESRCH;
  hutch_error_t err = NULL;
  int errnum = 0;
  if (hutch_sandbox_write_file(sb, e->abs, data, strlen(data), false, &err) < 0)
    errnum = err && err->errnum ? err->errnum : EIO;
  hutch_error_free(&err);
  return errnum;
}

/* The reference's make_output(): TEXT clipped, tabs expanded, numbered
 * from `first`, a newline after the last line. */
static void make_output(FILE *f, const char *text, const char *descriptor, size_t first) {
  _cleanup_free_ char *clipped = text_clip(text, MAX_RESPONSE_LEN);
  _cleanup_free_ char *expanded = expandtabs(clipped);
  struct lines l;
  lines_split(&l, expanded);
  fprintf(f, "Here's the result of running `cat -n` on %s:\n", descriptor);
  for (size_t i = 0; i < l.n; i++)
    fprintf(f, "%s%6zu\t%.*s", i ? "\n" : "", i + first, (int)l.len[i], l.p[i]);
  fputc('\n', f);
  lines_free(&l);
}

static bool hidden(const char *p) {
  return strstr(p, "/.") != NULL;
}

static bool name_matches(const char *p) {
  const char *slash = strrchr(p, '/');
  const char *base = slash && slash[1] ? slash + 1 : p;
  return fnmatch("*.py", base, 0) == 0 || fnmatch("*.rst", base, 0) == 0;
}

/* find PATH -maxdepth 2 -not -path '*\/.*' \( -type d -o -name '*.py' -o
 *   -name '*.rst' \) | head -100 */
static char *view_dir(struct lis *e) {
  struct hutch_sandbox *sb = sandbox(e);
  hutch_error_t err = NULL;
  _cleanup_strv_ char **paths = NULL;
  if (sb == NULL || hutch_sandbox_list_dir(sb, e->abs, 2, LIST_MAX, &paths, &err) < 0) {
    hutch_error_free(&err);
    return xasprintf("(empty directory: %s)", e->path);
  }
  struct buf b;
  buf_open(&b);
  size_t shown = 0, prefix = strlen(e->abs);
  for (size_t i = 0; paths[i] && shown < LIST_SHOWN; i++) {
    /* find names each entry after the path as given. */
    _cleanup_free_ char *as_given = xasprintf("%s%s", e->path, paths[i] + prefix);
    if (hidden(as_given))
      continue;
    if (!name_matches(as_given) && (i > 0 && kind(e, paths[i]) != HUTCH_FILE_DIR))
      continue;
    fprintf(b.f, "%s\n", as_given);
    shown++;
  }
  _cleanup_free_ char *raw = buf_close(&b);
  if (raw[0] == '\0')
    return xasprintf("(empty directory: %s)", e->path);
  _cleanup_free_ char *out = as_output(raw, strlen(raw));
  return xasprintf("Here's the files and directories up to 2 levels deep in %s, excluding hidden:\n%s", e->path, out);
}

static char *view_file(struct lis *e, const cJSON *args) {
  size_t pl = strlen(e->path);
  if (!((pl >= 3 && strcmp(e->path + pl - 3, ".py") == 0) || (pl >= 4 && strcmp(e->path + pl - 4, ".rst") == 0)))
    return xasprintf("ERROR: Viewing non-Python files is disallowed for saving context. File '%s' is not a .py or "
                     ".rst file.",
                     e->path);
  _cleanup_free_ char *raw = cat(e);
  if (raw[0] == '\0')
    return xasprintf("(empty file: %s)", e->path);
  _cleanup_free_ char *text = expandtabs(raw);
  struct lines l;
  lines_split(&l, text);
  size_t first = 1, last = l.n;
  const cJSON *vr = cJSON_GetObjectItemCaseSensitive(args, "view_range");
  if (cJSON_IsArray(vr) && cJSON_GetArraySize(vr) == 2 && cJSON_IsNumber(cJSON_GetArrayItem(vr, 0)) &&
      cJSON_IsNumber(cJSON_GetArrayItem(vr, 1))) {
    long start = json_number_to_long(cJSON_GetArrayItem(vr, 0)->valuedouble),
         end = json_number_to_long(cJSON_GetArrayItem(vr, 1)->valuedouble);
    if (start < 1 || (size_t)start > l.n) {
      lines_free(&l);
      return xasprintf("Error: Invalid view_range [%ld, %ld]: start line must be in [1, %zu]", start, end, l.n);
    }
    if (end != -1 && (end < start || (size_t)end > l.n)) {
      lines_free(&l);
      return xasprintf("Error: Invalid view_range [%ld, %ld]: end must be >= start and <= %zu, or -1 to view until "
                       "end.",
                       start, end, l.n);
    }
    first = (size_t)start;
    last = end == -1 ? l.n : (size_t)end;
  }
  struct buf b;
  buf_open(&b);
  fprintf(b.f, "Here's the result of running `cat -n` on %s:\n", e->path);
  for (size_t i = first; i <= last; i++)
    fprintf(b.f, "%s%6zu\t%.*s", i > first ? "\n" : "", i, (int)l.len[i - 1], l.p[i - 1]);
  lines_free(&l);
  _cleanup_free_ char *r = buf_close(&b);
  return text_clip(r, MAX_RESPONSE_LEN);
}

static char *do_view(struct lis *e, const cJSON *args) {
  int k = kind(e, e->abs);
  if (k == HUTCH_FILE_DIR)
    return view_dir(e);
  if (k == HUTCH_FILE_REGULAR)
    return view_file(e, args);
  return xasprintf("Error: Path not found: %s", e->path);
}

/* dirname(1) of the path as given. */
static char *dir_name(const char *p) {
  size_t l = strlen(p);
  while (l > 1 && p[l - 1] == '/')
    l--;
  while (l > 0 && p[l - 1] != '/')
    l--;
  if (l == 0)
    return xstrdup(".");
  while (l > 1 && p[l - 1] == '/')
    l--;
  return xstrndup(p, l);
}

static char *do_create(struct lis *e, const cJSON *args) {
  _cleanup_free_ char *text = py_str(cJSON_GetObjectItemCaseSensitive(args, "file_text"));
  /* mkdir -p $(dirname PATH) && echo '...' > PATH */
  _cleanup_free_ char *dir = dir_name(e->path);
  _cleanup_free_ char *abs_dir = dir_name(e->abs);
  int dk = kind(e, abs_dir);
  if (dk != HUTCH_FILE_DIR) {
    int mkerr = dk == HUTCH_FILE_NONE ? 0 : EEXIST;
    struct hutch_sandbox *sb = sandbox(e);
    hutch_error_t err = NULL;
    if (mkerr == 0 && (sb == NULL || hutch_sandbox_mkdirs(sb, abs_dir, &err) < 0))
      mkerr = err && err->errnum ? err->errnum : EIO;
    hutch_error_free(&err);
    if (mkerr)
      return xasprintf("Error creating file: mkdir: cannot create directory \u2018%s\u2019: %s\n", dir,
                       strerror(mkerr));
  }
  int errnum = echo_to(e, text);
  if (errnum)
    return xasprintf("Error creating file: bash: line 1: %s: %s\n", e->path, strerror(errnum));
  struct buf b;
  buf_open(&b);
  fprintf(b.f, "File created at %s. ", e->path);
  make_output(b.f, text, e->path, 1);
  fputs("Review the file and make sure that it is as expected. Edit the file if necessary.", b.f);
  return buf_close(&b);
}

static char *do_str_replace(struct lis *e, const cJSON *args) {
  const char *old_arg = arg_str(args, "old_str");
  const char *new_arg = arg_str(args, "new_str");
  if (old_arg == NULL || old_arg[0] == '\0')
    return xstrdup("Error: old_str is required for str_replace.");
  _cleanup_free_ char *raw = cat(e);
  if (raw[0] == '\0')
    return xasprintf("Error: Could not read file %s", e->path);
  _cleanup_free_ char *text = expandtabs(raw);
  _cleanup_free_ char *old = expandtabs(old_arg);
  _cleanup_free_ char *new = expandtabs(new_arg ? new_arg : "");
  size_t n = count_occurrences(text, old);
  if (n == 0)
    return xasprintf("Error: No occurrences of old_str found in %s for replacement.", e->path);
  if (n > 1)
    return xasprintf("Error: Multiple occurrences (%zu) of old_str found in %s. Please ensure it is unique before "
                     "using str_replace.",
                     n, e->path);
  const char *hit = strstr(text, old);
  size_t at = (size_t)(hit - text), line = 0;
  for (size_t i = 0; i < at; i++)
    line += text[i] == '\n';
  _cleanup_free_ char *content = xasprintf("%.*s%s%s", (int)at, text, new, hit + strlen(old));
  if (echo_to(e, content) != 0)
    return xasprintf("Error writing file: %s", e->path);
  struct lines l;
  lines_split(&l, content);
  size_t start = line > SNIPPET_LINES ? line - SNIPPET_LINES : 0;
  size_t end = line + SNIPPET_LINES + count_char(new, '\n');
  struct buf snip;
  buf_open(&snip);
  bool first = true;
  put_lines(snip.f, &l, start, end + 1, &first);
  lines_free(&l);
  _cleanup_free_ char *snippet = buf_close(&snip);
  _cleanup_free_ char *descriptor = xasprintf("a snippet of %s", e->path);
  struct buf b;
  buf_open(&b);
  fprintf(b.f, "The file %s has been edited. ", e->path);
  make_output(b.f, snippet, descriptor, start + 1);
  fputs("Review the changes and make sure they are as expected. Edit the file again if necessary.", b.f);
  return buf_close(&b);
}

static char *do_insert(struct lis *e, const cJSON *args) {
  const cJSON *il = cJSON_GetObjectItemCaseSensitive(args, "insert_line");
  /* Python takes true for 1. */
  long at = cJSON_IsNumber(il) ? json_number_to_long(il->valuedouble) : cJSON_IsTrue(il) ? 1 : 0;
  const char *new_arg = arg_str(args, "new_str");
  if (new_arg == NULL || new_arg[0] == '\0')
    return xstrdup("Error: new_str is required for insert.");
  _cleanup_free_ char *raw = cat(e);
  _cleanup_free_ char *text = expandtabs(raw);
  _cleanup_free_ char *new = expandtabs(new_arg);
  struct lines l = {0}, nl;
  if (text[0] != '\0')
    lines_split(&l, text);
  if (at < 0 || (size_t)at > l.n) {
    lines_free(&l);
    return xasprintf("Error: Invalid insert_line %ld. Must be in [0, %zu].", at, l.n);
  }
  lines_split(&nl, new);
  size_t n = (size_t)at;
  struct buf c;
  buf_open(&c);
  bool first = true;
  put_lines(c.f, &l, 0, n, &first);
  put_lines(c.f, &nl, 0, nl.n, &first);
  put_lines(c.f, &l, n, l.n, &first);
  _cleanup_free_ char *content = buf_close(&c);
  if (echo_to(e, content) != 0) {
    lines_free(&l);
    lines_free(&nl);
    return xasprintf("Error writing file: %s", e->path);
  }
  struct buf s;
  buf_open(&s);
  first = true;
  put_lines(s.f, &l, n > SNIPPET_LINES ? n - SNIPPET_LINES : 0, n, &first);
  put_lines(s.f, &nl, 0, nl.n, &first);
  put_lines(s.f, &l, n, n + SNIPPET_LINES, &first);
  lines_free(&l);
  lines_free(&nl);
  _cleanup_free_ char *snippet = buf_close(&s);
  struct buf b;
  buf_open(&b);
  fprintf(b.f, "The file %s has been edited. ", e->path);
  make_output(b.f, snippet, "a snippet of the edited file", n > SNIPPET_LINES ? n - SNIPPET_LINES + 1 : 1);
  fputs("Review the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). Edit "
        "the file again if necessary.",
        b.f);
  return buf_close(&b);
}

char *editor_lis_run(struct tool_env *env, const cJSON *args, int *exit_code, bool *interrupted, bool *failed) {
  const cJSON *cmd_v = cJSON_GetObjectItemCaseSensitive(args, "command");
  const cJSON *path_v = cJSON_GetObjectItemCaseSensitive(args, "path");
  *exit_code = 0;
  *failed = true;
  if (!lis_truthy(cmd_v) || !lis_truthy(path_v))
    return xstrdup("Error: command and path are required.");
  _cleanup_free_ char *cmd = py_str(cmd_v);
  _cleanup_free_ char *path = py_str(path_v);
  struct lis e = {.env = env,
                  .path = path,
                  .abs = path[0] == '/' ? xstrdup(path) : xasprintf("%s/%s", env->working_dir, path),
                  .interrupted = interrupted};
  char *r;
  if (strcmp(cmd, "view") == 0)
    r = do_view(&e, args);
  else if (strcmp(cmd, "create") == 0)
    r = do_create(&e, args);
  else if (strcmp(cmd, "str_replace") == 0)
    r = do_str_replace(&e, args);
  else if (strcmp(cmd, "insert") == 0)
    r = do_insert(&e, args);
  else
    r = xasprintf("Unknown command: %s", cmd);
  free(e.abs);
  /* Every refusal and failure of the reference's editor begins so. */
  *failed = strncmp(r, "Error", 5) == 0 || strncmp(r, "ERROR", 5) == 0 || strncmp(r, "Unknown command: ", 17) == 0;
  return r;
}
