/* SPDX-License-Identifier: Apache-2.0 */
/* hutch benchmark merge DIR...: the run directories of the shards of one
 * run (--shard K/N, a Slurm job array, an Indexed Job) combined into one
 * run directory, as if one machine had run every task.  Shards of another
 * task set or configuration, a shard given twice, a task in two shards are
 * refused.  A shard missing, or one whose run did not complete (its
 * benchmark.json's status: stopped, killed, tasks the model's API failed),
 * makes the merge no whole run: it is refused with status 4 and nothing
 * written, unless --allow-partial, which merges what was measured and
 * names what is missing in the merged run's files.  A shard may come from
 * another machine and be anything: every field of its files is checked
 * (runfiles.c) before use, and a malformed one is refused naming its file
 * and field. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "error.h"
#include "util.h"

/* Shards named one by one on stderr, at most. */
#define MISSING_NAMED 10
/* The exit status of a merge that is no whole run (hutch-benchmark(1)). */
#define EXIT_PARTIAL 4

static cJSON *read_json(const char *dir, const char *name, bool *exists) {
  _cleanup_free_ char *path = xasprintf("%s/%s", dir, name);
  size_t len = 0;
  /* A regular file only: a symlink or a FIFO in its place is none. */
  _cleanup_free_ char *text = read_regular_file_at(AT_FDCWD, path, 1 << 20, &len);
  *exists = text != NULL || errno != ENOENT;
  return text ? cJSON_ParseWithLength(text, len) : NULL;
}

static int refuse(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int refuse(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "hutch benchmark merge: ");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return 2;
}

/* The parts of benchmark.json that must agree: the task set and the
 * configuration (the shard and the range apart). */
static char *identity(const cJSON *meta) {
  cJSON *m = cJSON_Duplicate(meta, true);
  cJSON_DeleteItemFromObjectCaseSensitive(m, "shard");
  cJSON_DeleteItemFromObjectCaseSensitive(m, "merged_from");
  cJSON_DeleteItemFromObjectCaseSensitive(m, "status");
  /* The options as given (for --resume): shards may differ in those that
   * change no result (workers, retries); "config" holds those that do. */
  cJSON_DeleteItemFromObjectCaseSensitive(m, "options");
  char *text = cJSON_PrintUnformatted(m);
  cJSON_Delete(m);
  return text;
}

static int by_id(const void *a, const void *b) {
  return strcmp(cJSON_GetObjectItemCaseSensitive(*(const cJSON *const *)a, "id")->valuestring,
                cJSON_GetObjectItemCaseSensitive(*(const cJSON *const *)b, "id")->valuestring);
}

static int by_long(const void *a, const void *b) {
  long x = *(const long *)a, y = *(const long *)b;
  return (x > y) - (x < y);
}

/* Shard DIR's results.jsonl and results.json into lines (its measured
 * tasks') and *elapsed; *complete: its status says complete, and its
 * lines are its tasks, each measured.  2 when a line or field is
 * malformed. */
static int read_shard(const char *dir, const char *abs, const struct bench_meta *m, cJSON *lines, double *elapsed,
                      bool *complete) {
  cJSON *refused = cJSON_CreateArray();
  cJSON *ls = bench_read_lines(abs, &m->range, NULL, refused);
  const cJSON *r = cJSON_GetArrayItem(refused, 0);
  int rc = 0;
  if (ls == NULL)
    rc = refuse("%s/results.jsonl: %s", dir, strerror(errno));
  else if (r)
    rc = refuse("%s/results.jsonl line %.0f: %s", dir, cJSON_GetObjectItemCaseSensitive(r, "line")->valuedouble,
                cJSON_GetObjectItemCaseSensitive(r, "why")->valuestring);
  cJSON_Delete(refused);
  long measured = 0, n = 0;
  while (rc == 0 && cJSON_GetArraySize(ls) > 0) {
    cJSON *l = cJSON_DetachItemFromArray(ls, 0);
    n++;
    /* A task its shard did not finish is not merged as if it had been. */
    if (!bench_end_measured(bench_line_end(l))) {
      cJSON_Delete(l);
      continue;
    }
    measured++;
    /* Its run_dir stays relative, beneath the shard's directory. */
    cJSON_AddStringToObject(l, "shard_dir", abs);
    cJSON_AddItemToArray(lines, l);
  }
  cJSON_Delete(ls);
  *complete = m->has_status && m->complete && measured == n && measured == m->tasks;
  bool exists;
  cJSON *res = read_json(abs, "results.json", &exists);
  const cJSON *e = cJSON_GetObjectItemCaseSensitive(res, "elapsed_time_seconds");
  if (rc == 0 && exists && !cJSON_IsObject(res))
    rc = refuse("%s/results.json: is not a JSON object", dir);
  else if (rc == 0 && e && (!cJSON_IsNumber(e) || !isfinite(e->valuedouble) || e->valuedouble < 0))
    rc = refuse("%s/results.json: \"elapsed_time_seconds\" is not a time in seconds", dir);
  else if (e && e->valuedouble > *elapsed)
    *elapsed = e->valuedouble; /* the shards ran side by side */
  cJSON_Delete(res);
  return rc;
}

/* The shards of n that are not in given (sorted), the first
 * BENCH_SHARDS_LISTED into list; their count. */
static long missing_shards(const long *given, size_t n_given, long n, cJSON *list) {
  long missing = n - (long)n_given;
  for (long k = 0, i = 0, listed = 0; k < n && listed < BENCH_SHARDS_LISTED && listed < missing; k++) {
    while ((size_t)i < n_given && given[i] < k)
      i++;
    if ((size_t)i < n_given && given[i] == k)
      continue;
    cJSON_AddItemToArray(list, cJSON_CreateNumber((double)k));
    listed++;
  }
  return missing;
}

/* The missing shards on one line, the first few by number (the count can
 * be large). */
static void tell_missing(const cJSON *list, long count, long n) {
  if (count == 1) {
    fprintf(stderr, "hutch benchmark merge: shard %.0f of %ld is missing\n", cJSON_GetArrayItem(list, 0)->valuedouble,
            n);
    return;
  }
  fprintf(stderr, "hutch benchmark merge: %ld of %ld shards are missing:", count, n);
  long named = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, list) {
    if (named == MISSING_NAMED)
      break;
    fprintf(stderr, " %.0f", e->valuedouble);
    named++;
  }
  fprintf(stderr, "%s\n", count > named ? " ..." : "");
}

/* Why a shard's run is not complete, from its status (text of another
 * machine's file: escaped, cut). */
static char *why_incomplete(const cJSON *meta, const struct bench_meta *m) {
  if (!m->has_status)
    return xstrdup("its benchmark.json has no status (run by an older hutch, or killed before its first task)");
  const cJSON *st = cJSON_GetObjectItemCaseSensitive(meta, "status");
  const cJSON *stopped = cJSON_GetObjectItemCaseSensitive(st, "stopped");
  if (!m->complete && cJSON_IsString(stopped)) {
    _cleanup_free_ char *shown = text_escape_cstr(stopped->valuestring);
    return xasprintf("its run did not complete (%.200s)", shown);
  }
  if (!m->complete)
    return xstrdup("its run did not complete");
  return xasprintf("its results.jsonl does not hold its %ld tasks, each measured", m->tasks);
}

static int write_merged(const char *output_dir, const char *task, const struct bench_meta *m, const cJSON *first,
                        const cJSON *from, const cJSON *lines, double elapsed, size_t n_dirs,
                        const struct bench_status *st) {
  hutch_error_t err = NULL;
  _cleanup_free_ char *out = bench_make_run_dir(output_dir, task, m->llm_name, bench_mode_suffix(m->mode), &err);
  struct bench_opts o;
  memset(&o, 0, sizeof(o));
  o.task = (char *)task;
  o.status = st;
  if (out == NULL) {
    hutch_error_print(stderr, "hutch benchmark merge", err);
    hutch_error_free(&err);
    return 125;
  }
  cJSON *meta = cJSON_Duplicate(first, true);
  cJSON_ReplaceItemInObjectCaseSensitive(meta, "shard", cJSON_Parse("[0, 1]"));
  cJSON_AddItemToObject(meta, "merged_from", cJSON_Duplicate(from, true));
  cJSON_DeleteItemFromObjectCaseSensitive(meta, "status");
  cJSON_AddItemToObject(meta, "status", bench_status_json(st));
  _cleanup_free_ char *mtext = cJSON_Print(meta);
  cJSON_Delete(meta);
  _cleanup_free_ char *mpath = xasprintf("%s/benchmark.json", out);
  _cleanup_free_ char *jsonl = xasprintf("%s/results.jsonl", out);
  _cleanup_free_ char *logs = xasprintf("%s/logs", out);
  mkdir(logs, 0755);
  const cJSON *l;
  cJSON_ArrayForEach(l, lines) {
    if (bench_append_line(jsonl, l, &err) < 0)
      break;
    /* logs/ID.txt: the shard's own, linked. */
    _cleanup_free_ char *safe = bench_safe_name(cJSON_GetObjectItemCaseSensitive(l, "id")->valuestring);
    _cleanup_free_ char *target =
        xasprintf("%s/logs/%s.txt", cJSON_GetObjectItemCaseSensitive(l, "shard_dir")->valuestring, safe);
    _cleanup_free_ char *link = xasprintf("%s/%s.txt", logs, safe);
    if (symlink(target, link) < 0 && errno != EEXIST)
      fprintf(stderr, "hutch benchmark merge: warning: %s: %s\n", link, strerror(errno));
  }
  if (err == NULL && write_file_atomic(mpath, mtext, strlen(mtext), 0644) < 0)
    hutch_error_sys(&err, "write %s", mpath);
  if (err == NULL)
    bench_write_outputs(out, &o, first, lines, elapsed, &err);
  if (err) {
    hutch_error_print(stderr, "hutch benchmark merge", err);
    hutch_error_free(&err);
    return 125;
  }
  fprintf(stderr, "hutch benchmark merge: %s: %d tasks from %zu shards%s\n", task, cJSON_GetArraySize(lines), n_dirs,
          st->partial ? " (partial: --allow-partial)" : "");
  printf("%s\n", out);
  return 0;
}

int bench_merge(int argc, char **argv) {
  const char *output_dir = "./output";
  _cleanup_free_ char **dirs = xcalloc((size_t)argc, sizeof(char *));
  size_t n = 0;
  bool allow_partial = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      printf("Usage: hutch benchmark merge DIR... [--output-dir DIR] [--allow-partial]\n\n"
             "Combine the run directories of the shards of one hutch benchmark run into a\n"
             "new run directory under --output-dir (./output), printed on stdout.\n"
             "A shard missing, or one whose run is incomplete, is refused with status 4 and\n"
             "nothing written; --allow-partial merges the tasks measured all the same, naming\n"
             "what is missing in benchmark.json, results.json and summary.md.\n");
      return 0;
    }
    if (strcmp(argv[i], "--allow-partial") == 0 || strcmp(argv[i], "--allow_partial") == 0)
      allow_partial = true;
    else if (strcmp(argv[i], "--output-dir") == 0 || strcmp(argv[i], "--output_dir") == 0) {
      if (++i >= argc)
        return refuse("%s", "--output-dir wants a directory");
      output_dir = argv[i];
    } else if (strncmp(argv[i], "--output-dir=", 13) == 0 || strncmp(argv[i], "--output_dir=", 13) == 0)
      output_dir = argv[i] + 13;
    else
      dirs[n++] = argv[i];
  }
  if (n == 0)
    return refuse("%s", "merge wants the run directories of the shards");
  int rc = 2;
  cJSON *first = NULL, *lines = cJSON_CreateArray(), *from = cJSON_CreateArray();
  _cleanup_free_ char *first_id = NULL;
  /* The shards given, by number: as many as the directories, never as
   * many as a file says there are. */
  _cleanup_free_ long *given = xcalloc(n, sizeof(long));
  struct bench_meta m0 = {0};
  double elapsed = 0;
  cJSON *incomplete = cJSON_CreateArray();
  long n_incomplete = 0, tasks = 0;
  for (size_t d = 0; d < n; d++) {
    _cleanup_free_ char *abs = realpath(dirs[d], NULL);
    bool exists = false;
    cJSON *meta = abs ? read_json(abs, "benchmark.json", &exists) : NULL;
    struct bench_meta m;
    _cleanup_free_ char *why = NULL;
    if (!exists) {
      cJSON_Delete(meta);
      rc = refuse("%s: %s", dirs[d], "not a run directory of hutch benchmark (no benchmark.json)");
      goto out;
    }
    if (meta == NULL || bench_meta_check(meta, &m, &why) < 0) {
      rc = refuse("%s/benchmark.json: %s", dirs[d], why ? why : "is not JSON");
      cJSON_Delete(meta);
      goto out;
    }
    if (m.merged_from) {
      cJSON_Delete(meta);
      rc = refuse("%s is a merge of shards itself: give its shards (its benchmark.json's merged_from)", dirs[d]);
      goto out;
    }
    _cleanup_free_ char *unfinished = why_incomplete(meta, &m);
    _cleanup_free_ char *id = identity(meta);
    if (first == NULL) {
      first = meta;
      first_id = xstrdup(id);
      m0 = m;
    } else {
      cJSON_Delete(meta);
      if (strcmp(id, first_id) != 0 || m.shard_n != m0.shard_n) {
        rc = refuse("%s is a run of another task set or configuration than %s", dirs[d], dirs[0]);
        goto out;
      }
    }
    for (size_t j = 0; j < d; j++)
      if (given[j] == m.shard_k) {
        rc = refuse("%s: shard %ld of %ld is given twice", dirs[d], m.shard_k, m.shard_n);
        goto out;
      }
    given[d] = m.shard_k;
    cJSON_AddItemToArray(from, cJSON_CreateString(abs));
    bool complete;
    int before = cJSON_GetArraySize(lines);
    if ((rc = read_shard(dirs[d], abs, &m, lines, &elapsed, &complete)) != 0)
      goto out;
    rc = 2;
    /* Its tasks: as its status counts them, else those it measured. */
    tasks += m.has_status ? m.tasks : cJSON_GetArraySize(lines) - before;
    if (!complete) {
      if (n_incomplete < MISSING_NAMED)
        fprintf(stderr, "hutch benchmark merge: shard %ld of %ld (%s) is incomplete: %s\n", m.shard_k, m.shard_n,
                dirs[d], unfinished);
      else if (n_incomplete == MISSING_NAMED)
        fprintf(stderr, "hutch benchmark merge: and more shards are incomplete\n");
      if (n_incomplete < BENCH_SHARDS_LISTED)
        cJSON_AddItemToArray(incomplete, cJSON_CreateNumber((double)m.shard_k));
      n_incomplete++;
    }
  }
  /* A task in two shards: the lines sorted by id, neighbours compared. */
  {
    size_t count = (size_t)cJSON_GetArraySize(lines), k = 0;
    _cleanup_free_ const cJSON **by = xcalloc(count + 1, sizeof(*by));
    const cJSON *l;
    cJSON_ArrayForEach(l, lines) by[k++] = l;
    qsort(by, count, sizeof(*by), by_id);
    for (k = 1; k < count; k++)
      if (by_id(&by[k - 1], &by[k]) == 0) {
        _cleanup_free_ char *shown = text_escape_cstr(cJSON_GetObjectItemCaseSensitive(by[k], "id")->valuestring);
        rc = refuse("the task '%s' is in two shards (%s and %s)", shown,
                    cJSON_GetObjectItemCaseSensitive(by[k - 1], "shard_dir")->valuestring,
                    cJSON_GetObjectItemCaseSensitive(by[k], "shard_dir")->valuestring);
        goto out;
      }
  }
  qsort(given, n, sizeof(*given), by_long);
  cJSON *missing = cJSON_CreateArray();
  long n_missing = missing_shards(given, n, m0.shard_n, missing);
  if (n_missing > 0)
    tell_missing(missing, n_missing, m0.shard_n);
  if ((n_missing > 0 || n_incomplete > 0) && !allow_partial) {
    fprintf(stderr, "hutch benchmark merge: the shards given are not the whole run: nothing is written\n"
                    "hint: complete them (hutch benchmark --resume DIR goes on with an incomplete shard; run a "
                    "missing one), then merge again; --allow-partial merges what was measured and names what is "
                    "missing\n");
    cJSON_Delete(missing);
    rc = EXIT_PARTIAL;
    goto out;
  }
  struct bench_status st = {.missing_shards = missing,
                            .incomplete_shards = incomplete,
                            .missing = n_missing,
                            .incomplete = n_incomplete,
                            .shards = m0.shard_n};
  bench_status_count(&st, lines, tasks);
  st.complete = st.complete && n_missing == 0 && n_incomplete == 0;
  st.partial = !st.complete;
  rc = write_merged(output_dir, m0.task, &m0, first, from, lines, elapsed, n, &st);
  cJSON_Delete(missing);
out:
  cJSON_Delete(incomplete);
  cJSON_Delete(first);
  cJSON_Delete(lines);
  cJSON_Delete(from);
  return rc;
}
