/* SPDX-License-Identifier: Apache-2.0
 *
 * What a run directory has finished already (--resume, and a new run's
 * empty results.jsonl): the lines of its results.jsonl that are tasks of
 * this run, each once and checked (bench_read_lines).  A line refused (of
 * another shape, a run_dir out of runs/, a score out of range, a task this
 * run does not have, an id twice) is said on stderr and kept aside in
 * results.refused.jsonl, and its task runs again; results.jsonl is
 * rewritten with the lines kept, without a torn last one.  A line of a
 * task that did not finish (the model's API or hutch failed it), or that
 * ended in an error when --retry-errors asks, is no finished task either:
 * it is moved to results.retried.jsonl, and its task runs again. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "error.h"
#include "util.h"

struct row_ref {
  const char *id;
  size_t i; /* its place in the run's rows */
};

static int by_id(const void *a, const void *b) {
  return strcmp(((const struct row_ref *)a)->id, ((const struct row_ref *)b)->id);
}

static int append_text(const char *path, const char *text, size_t len, hutch_error_t *err) {
  _cleanup_close_ int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0 || write_all(fd, text, len) < 0 || write_all(fd, "\n", 1) < 0)
    return hutch_error_sys(err, "append to %s", path);
  return 0;
}

/* The lines as results.jsonl holds them, one a line. */
static char *jsonl(const cJSON *lines, size_t *len) {
  char *text = NULL;
  FILE *f = open_memstream(&text, len);
  const cJSON *l;
  cJSON_ArrayForEach(l, lines) {
    _cleanup_free_ char *t = cJSON_PrintUnformatted(l);
    fprintf(f, "%s\n", t);
  }
  fclose(f);
  return text;
}

int bench_resume_lines(const char *out, const struct bench_set *set, const cJSON *merged_from, const cJSON **rows,
                       size_t n_rows, bool retry_errors, bool *done, cJSON **lines, hutch_error_t *err) {
  _cleanup_free_ char *path = xasprintf("%s/results.jsonl", out);
  _cleanup_free_ char *aside = xasprintf("%s/results.refused.jsonl", out);
  _cleanup_free_ char *retried = xasprintf("%s/results.retried.jsonl", out);
  cJSON *refused = cJSON_CreateArray();
  *lines = bench_read_lines(out, &set->range, merged_from, refused);
  if (*lines == NULL) {
    int e = errno;
    cJSON_Delete(refused);
    return hutch_error_set(err, e, "read %s", path);
  }
  /* The run's tasks by id: a line of another task (another range or
   * shard, another task set) is no task of this run. */
  _cleanup_free_ struct row_ref *ids = xcalloc(n_rows + 1, sizeof(*ids));
  for (size_t i = 0; i < n_rows; i++)
    ids[i] = (struct row_ref){cJSON_GetObjectItemCaseSensitive(rows[i], "id")->valuestring, i};
  qsort(ids, n_rows, sizeof(*ids), by_id);
  memset(done, 0, n_rows * sizeof(*done));
  for (cJSON *l = (*lines)->child, *next; l; l = next) {
    next = l->next;
    struct row_ref key = {cJSON_GetObjectItemCaseSensitive(l, "id")->valuestring, 0};
    const struct row_ref *r = bsearch(&key, ids, n_rows, sizeof(*ids), by_id);
    int end = bench_line_end(l);
    if (r && (bench_end_measured(end) && !(retry_errors && end != BENCH_END_FINISHED))) {
      done[r->i] = true;
      continue;
    }
    if (r) {
      /* Its task runs again; its line is kept for the record. */
      cJSON *line = cJSON_DetachItemViaPointer(*lines, l);
      _cleanup_free_ char *raw = cJSON_PrintUnformatted(line);
      cJSON_Delete(line);
      if (append_text(retried, raw, strlen(raw), err) < 0) {
        cJSON_Delete(refused);
        return -1;
      }
      continue;
    }
    cJSON *line = cJSON_DetachItemViaPointer(*lines, l);
    _cleanup_free_ char *shown = text_escape_cstr(key.id);
    _cleanup_free_ char *why =
        xasprintf("\"id\" '%.200s' is not a task of this run (its task set, range and shard)", shown);
    _cleanup_free_ char *raw = cJSON_PrintUnformatted(line);
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "why", why);
    cJSON_AddStringToObject(e, "text", raw);
    cJSON_AddItemToArray(refused, e);
    cJSON_Delete(line);
  }
  int r = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, refused) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(e, "line");
    _cleanup_free_ char *where = cJSON_IsNumber(n) ? xasprintf(" line %.0f", n->valuedouble) : xstrdup("");
    fprintf(stderr, "hutch benchmark: %s%s: %s: refused (kept in %s), its task runs again\n", path, where,
            cJSON_GetObjectItemCaseSensitive(e, "why")->valuestring, aside);
    const char *text = cJSON_GetObjectItemCaseSensitive(e, "text")->valuestring;
    if (r == 0)
      r = append_text(aside, text, strlen(text), err);
  }
  cJSON_Delete(refused);
  if (r < 0)
    return r;
  /* The file as the lines kept: no torn last line, none refused. */
  size_t len = 0;
  _cleanup_free_ char *text = jsonl(*lines, &len);
  if (write_file_atomic(path, text, len, 0644) < 0)
    return hutch_error_sys(err, "write %s", path);
  return 0;
}
