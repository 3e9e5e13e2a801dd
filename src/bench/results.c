/* SPDX-License-Identifier: Apache-2.0 */
/* The run's records: results.jsonl (one line per finished task, appended
 * whole and synced, so a crash loses at most the tasks in flight), and at
 * the end LLM-in-Sandbox's results.json and trajectory.json (lisfiles.c)
 * with hutch's summary.md and report.html. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "error.h"
#include "util.h"

#define LINES_MAX ((size_t)4 << 30)

int bench_append_line(const char *path, const cJSON *line, hutch_error_t *err) {
  _cleanup_free_ char *text = cJSON_PrintUnformatted(line);
  _cleanup_free_ char *rec = xasprintf("%s\n", text);
  _cleanup_close_ int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  /* One write of O_APPEND: lines never interleave, and a torn last line
   * (a crash mid-write) is what a reader skips. */
  if (fd < 0 || write_all(fd, rec, strlen(rec)) < 0 || fsync(fd) < 0)
    return hutch_error_sys(err, "append to %s", path);
  return 0;
}

int bench_open_run_dir(const char *out, const cJSON *line) {
  const cJSON *rd = cJSON_GetObjectItemCaseSensitive(line, "run_dir");
  const cJSON *sd = cJSON_GetObjectItemCaseSensitive(line, "shard_dir");
  if (!cJSON_IsString(rd)) {
    errno = ENOENT;
    return -1;
  }
  _cleanup_close_ int base = open(cJSON_IsString(sd) ? sd->valuestring : out, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (base < 0)
    return -1;
  /* The run files name it, and they may have been edited: never above
   * its base, never through a symlink (which could lead anywhere). */
  return openat2_retry(base, rd->valuestring, O_PATH | O_DIRECTORY, 0,
                       RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
}

static void refuse(cJSON *refused, size_t n, const char *text, size_t len, char *why) {
  cJSON *r = cJSON_CreateObject();
  cJSON_AddNumberToObject(r, "line", (double)n);
  cJSON_AddStringToObject(r, "why", why);
  _cleanup_free_ char *raw = xstrndup(text, len);
  cJSON_AddStringToObject(r, "text", raw);
  cJSON_AddItemToArray(refused, r);
  free(why);
}

/* A line's problem with its run_dir on the disk (a symlink out of it),
 * NULL when there is none (or no run_dir, or one that is gone). */
static char *run_dir_problem(const char *dir, const cJSON *line) {
  int fd = bench_open_run_dir(dir, line);
  if (fd >= 0) {
    close(fd);
    return NULL;
  }
  if (errno == ENOENT)
    return NULL;
  const char *rd = cJSON_GetObjectItemCaseSensitive(line, "run_dir")->valuestring;
  _cleanup_free_ char *shown = text_escape_cstr(rd);
  if (errno == ELOOP || errno == EXDEV)
    return xasprintf("\"run_dir\" '%.200s' leads out of its run directory (through a symlink)", shown);
  return hutch_errno_format(errno, "\"run_dir\" '%.200s'", shown);
}

struct kept {
  cJSON *line;
  size_t n; /* its line number */
  bool dup;
};

static int by_id(const void *a, const void *b) {
  const struct kept *x = *(const struct kept *const *)a, *y = *(const struct kept *const *)b;
  int c = strcmp(cJSON_GetObjectItemCaseSensitive(x->line, "id")->valuestring,
                 cJSON_GetObjectItemCaseSensitive(y->line, "id")->valuestring);
  return c ? c : (x->n > y->n) - (x->n < y->n);
}

cJSON *bench_read_lines(const char *dir, const struct bench_range *r, const cJSON *shard_dirs, cJSON *refused) {
  _cleanup_free_ char *path = xasprintf("%s/results.jsonl", dir);
  size_t len = 0, n = 0, count = 0, cap = 0;
  struct kept *all = NULL;
  /* A regular file only: a symlink or a FIFO in its place is no record.
   * None is no line; one that cannot be read is the caller's error (a run
   * must not go on as if it had finished nothing, and rewrite it). */
  _cleanup_free_ char *text = read_regular_file_at(AT_FDCWD, path, LINES_MAX, &len);
  if (text == NULL && errno != ENOENT)
    return NULL;
  for (size_t i = 0; text && i < len;) {
    char *nl = memchr(text + i, '\n', len - i);
    if (nl == NULL)
      break; /* torn: the task runs again */
    size_t ll = (size_t)(nl - text) - i;
    n++;
    cJSON *l = cJSON_ParseWithLength(text + i, ll);
    char *why = NULL;
    /* Only a line of the shape the runner writes counts as a finished
     * task; anything else, an edited or foreign line, is refused (and the
     * task runs again). */
    if (l == NULL)
      why = xstrdup("is not JSON");
    else if (bench_line_check(l, r, shard_dirs, &why) == 0)
      why = run_dir_problem(dir, l);
    if (why) {
      refuse(refused, n, text + i, ll, why);
      cJSON_Delete(l);
    } else {
      if (count == cap)
        all = xrealloc(all, (cap = cap * 2 + 64) * sizeof(*all));
      all[count++] = (struct kept){l, n, false};
    }
    i = (size_t)(nl - text) + 1;
  }
  /* An id's second line is refused: sorted by id, then by line number. */
  struct kept **order = xcalloc(count + 1, sizeof(*order));
  for (size_t k = 0; k < count; k++)
    order[k] = &all[k];
  qsort(order, count, sizeof(*order), by_id);
  for (size_t k = 1; k < count; k++)
    order[k]->dup = strcmp(cJSON_GetObjectItemCaseSensitive(order[k - 1]->line, "id")->valuestring,
                           cJSON_GetObjectItemCaseSensitive(order[k]->line, "id")->valuestring) == 0;
  cJSON *lines = cJSON_CreateArray();
  for (size_t k = 0; k < count; k++) {
    if (!all[k].dup) {
      cJSON_AddItemToArray(lines, all[k].line);
      continue;
    }
    _cleanup_free_ char *shown = text_escape_cstr(cJSON_GetObjectItemCaseSensitive(all[k].line, "id")->valuestring);
    _cleanup_free_ char *raw = cJSON_PrintUnformatted(all[k].line);
    refuse(refused, all[k].n, raw, strlen(raw), xasprintf("\"id\" '%.200s' has a line already", shown));
    cJSON_Delete(all[k].line);
  }
  free(order);
  free(all);
  return lines;
}

int bench_save(const char *out, const char *name, char *text, size_t len, hutch_error_t *err) {
  _cleanup_free_ char *path = xasprintf("%s/%s", out, name);
  int r = write_file_atomic(path, text, len, 0644);
  free(text);
  if (r < 0)
    return hutch_error_sys(err, "write %s", path);
  return 0;
}

int bench_write_outputs(const char *out, const struct bench_opts *o, const cJSON *meta, const cJSON *lines,
                        double elapsed, hutch_error_t *err) {
  /* LLM-in-Sandbox's files hold a run that ran every task (its runner
   * writes them only at its end), as it would have written them: a task
   * whose model API failed is scored as it ended, where hutch's files say
   * it is not finished.  A run stopped early has none, not even an earlier
   * try's.  report.html, whose head is hutch's mean score, is a complete
   * run's (or a partial merge's, which names what is missing). */
  const struct bench_status *st = o->status;
  bool whole = st == NULL || st->complete || st->partial;
  bool ran_all = whole || (st->stopped == NULL && st->not_run == 0);
  if (ran_all && bench_write_lis(out, o->task, meta, lines, st, elapsed, err) < 0)
    return -1;
  static const char *const names[] = {"trajectory.json", "results.json", "report.html"};
  for (size_t i = ran_all ? 2 : 0; !whole && i < ARRAY_SIZE(names); i++) {
    _cleanup_free_ char *path = xasprintf("%s/%s", out, names[i]);
    unlink(path);
  }
  const cJSON *config = cJSON_GetObjectItemCaseSensitive(meta, "config");
  int r = bench_write_summary(out, o->task, config, lines, st, elapsed, err);
  if (r >= 0 && whole)
    r = bench_write_report(out, lines, elapsed, err);
  return r;
}

const char *bench_mode_suffix(const char *mode) {
  return mode && strcmp(mode, "llm") == 0 ? "vanillaLLM" : "LLMinSandbox";
}

char *bench_make_run_dir(const char *output_dir, const char *task, const char *llm_name, const char *suffix,
                         hutch_error_t *err) {
  char stamp[32];
  time_t now = time(NULL);
  strftime(stamp, sizeof(stamp), "%Y%m%d_%H%M%S", localtime(&now));
  /* The names as file names ('/' and control characters as '_'): a merge
   * takes them from a shard's benchmark.json, and the directory's name is
   * printed as a line of its own. */
  _cleanup_free_ char *base = xasprintf("%s/%s_%s_%s_%s", output_dir, stamp, task, llm_name, suffix);
  for (char *p = base + strlen(output_dir) + 1; *p; p++)
    if (*p == '/' || (unsigned char)*p < 0x20 || *p == 0x7f)
      *p = '_';
  _cleanup_free_ char *dir = xstrdup(base);
  if (mkdir_p(output_dir, 0755) < 0) {
    hutch_error_sys(err, "mkdir %s", output_dir);
    return NULL;
  }
  /* Two runs started in the same second get directories of their own. */
  for (int k = 2; mkdir(dir, 0755) < 0; k++) {
    if (errno != EEXIST || k > 1000) {
      hutch_error_sys(err, "mkdir %s", dir);
      return NULL;
    }
    free(dir);
    dir = xasprintf("%s_%d", base, k);
  }
  /* Its runs/ gets the sandboxes' files: hutch reads no settings there. */
  if (hutch_output_mark(dir, err) < 0)
    return NULL;
  char *abs = realpath(dir, NULL);
  if (abs == NULL)
    hutch_error_sys(err, "realpath %s", dir);
  return abs;
}

char *bench_clean_answer(const char *bytes, size_t len) {
  const unsigned char *p = (const unsigned char *)bytes;
  /* Python's str.strip() of ASCII whitespace, both ends. */
  while (len > 0 && strchr(" \t\n\r\v\f", p[0]) && p[0])
    p++, len--;
  while (len > 0 && strchr(" \t\n\r\v\f", p[len - 1]) && p[len - 1])
    len--;
  char *out = xmalloc(len * 3 + 1);
  size_t o = 0;
  for (size_t i = 0; i < len;) {
    uint32_t cp;
    size_t n = p[i] ? utf8_decode(p + i, len - i, &cp) : 0;
    if (n == 0) {
      memcpy(out + o, "\xef\xbf\xbd", 3);
      o += 3;
      i++;
    } else {
      memcpy(out + o, p + i, n);
      o += n;
      i += n;
    }
  }
  out[o] = '\0';
  return out;
}
