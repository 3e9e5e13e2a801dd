/* hutch benchmark merge DIR...: the run directories of the shards of one
 * run (--shard K/N, a Slurm job array, an Indexed Job) combined into one
 * run directory, as if one machine had run every task.  Shards of another
 * task set or configuration, a shard given twice, a task in two shards are
 * refused; a shard missing is said.  A shard may come from another machine
 * and be anything: every field of its files is checked (runfiles.c) before
 * use, and a malformed one is refused naming its file and field. */
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

/* Missing shards named one by one, at most. */
#define MISSING_NAMED 10

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

/* Shard DIR's results.jsonl and results.json into lines and *elapsed; 2
 * when a line or field is malformed. */
static int read_shard(const char *dir, const char *abs, const struct bench_meta *m, cJSON *lines, double *elapsed) {
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
  while (rc == 0 && cJSON_GetArraySize(ls) > 0) {
    cJSON *l = cJSON_DetachItemFromArray(ls, 0);
    /* Its run_dir stays relative, beneath the shard's directory. */
    cJSON_AddStringToObject(l, "shard_dir", abs);
    cJSON_AddItemToArray(lines, l);
  }
  cJSON_Delete(ls);
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

/* The missing shards, the first few by number (the count can be large). */
static void tell_missing(const long *given, size_t n, long shards) {
  long missing = shards - (long)n, named = 0;
  if (missing <= 0)
    return;
  fprintf(stderr,
          "hutch benchmark merge: warning: %ld of %ld shards are missing: their tasks are not in the result:", missing,
          shards);
  for (long k = 0, i = 0; k < shards && named < MISSING_NAMED; k++) {
    while ((size_t)i < n && given[i] < k)
      i++;
    if ((size_t)i < n && given[i] == k)
      continue;
    fprintf(stderr, " %ld", k);
    named++;
  }
  fprintf(stderr, "%s\n", missing > named ? " ..." : "");
}

static int write_merged(const char *output_dir, const char *task, const struct bench_meta *m, const cJSON *first,
                        const cJSON *from, const cJSON *lines, double elapsed, size_t n_dirs) {
  hutch_error_t err = NULL;
  _cleanup_free_ char *out = bench_make_run_dir(output_dir, task, m->llm_name, bench_mode_suffix(m->mode), &err);
  struct bench_opts o;
  memset(&o, 0, sizeof(o));
  o.task = (char *)task;
  if (out == NULL) {
    hutch_error_print(stderr, "hutch benchmark merge", err);
    hutch_error_free(&err);
    return 125;
  }
  cJSON *meta = cJSON_Duplicate(first, true);
  cJSON_ReplaceItemInObjectCaseSensitive(meta, "shard", cJSON_Parse("[0, 1]"));
  cJSON_AddItemToObject(meta, "merged_from", cJSON_Duplicate(from, true));
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
  fprintf(stderr, "hutch benchmark merge: %s: %d tasks from %zu shards\n", task, cJSON_GetArraySize(lines), n_dirs);
  printf("%s\n", out);
  return 0;
}

int bench_merge(int argc, char **argv) {
  const char *output_dir = "./output";
  _cleanup_free_ char **dirs = xcalloc((size_t)argc, sizeof(char *));
  size_t n = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      printf("Usage: hutch benchmark merge DIR... [--output-dir DIR]\n\n"
             "Combine the run directories of the shards of one hutch benchmark run into a\n"
             "new run directory under --output-dir (./output), printed on stdout.\n");
      return 0;
    }
    if (strcmp(argv[i], "--output-dir") == 0 || strcmp(argv[i], "--output_dir") == 0) {
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
    if ((rc = read_shard(dirs[d], abs, &m, lines, &elapsed)) != 0)
      goto out;
    rc = 2;
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
  tell_missing(given, n, m0.shard_n);
  rc = write_merged(output_dir, m0.task, &m0, first, from, lines, elapsed, n);
out:
  cJSON_Delete(first);
  cJSON_Delete(lines);
  cJSON_Delete(from);
  return rc;
}
