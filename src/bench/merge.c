/* hutch benchmark merge DIR...: the run directories of the shards of one
 * run (--shard K/N, a Slurm job array, an Indexed Job) combined into one
 * run directory, as if one machine had run every task.  Shards of another
 * task set or configuration, a shard given twice, a task in two shards are
 * refused; a shard missing is said. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "error.h"
#include "util.h"
#include "json_num.h"

static cJSON *read_json(const char *dir, const char *name) {
  _cleanup_free_ char *path = xasprintf("%s/%s", dir, name);
  size_t len = 0;
  _cleanup_free_ char *text = read_file_at(AT_FDCWD, path, 1 << 20, &len);
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

int bench_merge(int argc, char **argv) {
  const char *output_dir = "./output";
  char **dirs = xcalloc((size_t)argc, sizeof(char *));
  size_t n = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      printf("Usage: hutch benchmark merge DIR... [--output-dir DIR]\n\n"
             "Combine the run directories of the shards of one hutch benchmark run into a\n"
             "new run directory under --output-dir (./output), printed on stdout.\n");
      free(dirs);
      return 0;
    }
    if (strcmp(argv[i], "--output-dir") == 0 || strcmp(argv[i], "--output_dir") == 0) {
      if (++i >= argc) {
        free(dirs);
        return refuse("%s", "--output-dir wants a directory");
      }
      output_dir = argv[i];
    } else if (strncmp(argv[i], "--output-dir=", 13) == 0 || strncmp(argv[i], "--output_dir=", 13) == 0)
      output_dir = argv[i] + 13;
    else
      dirs[n++] = argv[i];
  }
  int rc = 2;
  cJSON *first = NULL, *lines = cJSON_CreateArray(), *from = cJSON_CreateArray();
  _cleanup_free_ char *first_id = NULL;
  _cleanup_free_ bool *seen = NULL;
  long shards = 0;
  double elapsed = 0;
  if (n == 0) {
    rc = refuse("%s", "merge wants the run directories of the shards");
    goto out;
  }
  for (size_t d = 0; d < n; d++) {
    _cleanup_free_ char *abs = realpath(dirs[d], NULL);
    cJSON *meta = abs ? read_json(abs, "benchmark.json") : NULL;
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(meta, "shard");
    if (meta == NULL || cJSON_GetArraySize(sh) != 2) {
      cJSON_Delete(meta);
      rc = refuse("%s: %s", dirs[d], "not a run directory of hutch benchmark (no benchmark.json)");
      goto out;
    }
    long k = json_number_to_long(cJSON_GetArrayItem(sh, 0)->valuedouble),
         nn = json_number_to_long(cJSON_GetArrayItem(sh, 1)->valuedouble);
    _cleanup_free_ char *id = identity(meta);
    if (first == NULL) {
      first = meta;
      first_id = xstrdup(id);
      shards = nn;
      seen = xcalloc((size_t)nn, sizeof(bool));
    } else {
      cJSON_Delete(meta);
      if (strcmp(id, first_id) != 0 || nn != shards) {
        rc = refuse("%s is a run of another task set or configuration than %s", dirs[d], dirs[0]);
        goto out;
      }
    }
    if (k < 0 || k >= shards || seen[k]) {
      rc = refuse("%s: shard %ld of %ld given twice (or out of range)", dirs[d], k, shards);
      goto out;
    }
    seen[k] = true;
    cJSON_AddItemToArray(from, cJSON_CreateString(abs));
    _cleanup_free_ char *jsonl = xasprintf("%s/results.jsonl", abs);
    cJSON *ls = bench_read_lines(jsonl);
    while (cJSON_GetArraySize(ls) > 0) {
      cJSON *l = cJSON_DetachItemFromArray(ls, 0);
      const char *tid = cJSON_GetObjectItemCaseSensitive(l, "id")->valuestring;
      const cJSON *o;
      cJSON_ArrayForEach(o, lines) if (strcmp(cJSON_GetObjectItemCaseSensitive(o, "id")->valuestring, tid) == 0) {
        cJSON_Delete(l);
        cJSON_Delete(ls);
        rc = refuse("the task '%s' is in two shards (%s among them)", tid, dirs[d]);
        goto out;
      }
      const cJSON *rd = cJSON_GetObjectItemCaseSensitive(l, "run_dir");
      if (cJSON_IsString(rd) && rd->valuestring[0] != '/') {
        _cleanup_free_ char *full = xasprintf("%s/%s", abs, rd->valuestring);
        cJSON_ReplaceItemInObjectCaseSensitive(l, "run_dir", cJSON_CreateString(full));
      }
      cJSON_AddStringToObject(l, "shard_dir", abs);
      cJSON_AddItemToArray(lines, l);
    }
    cJSON_Delete(ls);
    cJSON *res = read_json(abs, "results.json");
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(res, "elapsed_time_seconds");
    if (cJSON_IsNumber(e) && e->valuedouble > elapsed)
      elapsed = e->valuedouble; /* the shards ran side by side */
    cJSON_Delete(res);
  }
  for (long k = 0; k < shards; k++)
    if (!seen[k])
      fprintf(stderr, "hutch benchmark merge: warning: shard %ld of %ld is missing: its tasks are not in the result\n",
              k, shards);
  {
    hutch_error_t err = NULL;
    const cJSON *config = cJSON_GetObjectItemCaseSensitive(first, "config");
    const cJSON *llm = cJSON_GetObjectItemCaseSensitive(config, "llm_name");
    const char *task = cJSON_GetObjectItemCaseSensitive(first, "task")->valuestring;
    _cleanup_free_ char *out =
        bench_make_run_dir(output_dir, task, cJSON_IsString(llm) ? llm->valuestring : "model",
                           bench_mode_suffix(cJSON_GetObjectItemCaseSensitive(config, "mode")->valuestring), &err);
    struct bench_opts o;
    memset(&o, 0, sizeof(o));
    o.task = (char *)task;
    rc = 125;
    if (out == NULL) {
      hutch_error_print(stderr, "hutch benchmark merge", err);
      hutch_error_free(&err);
      goto out;
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
      bench_write_outputs(out, &o, config, lines, elapsed, &err);
    if (err) {
      hutch_error_print(stderr, "hutch benchmark merge", err);
      hutch_error_free(&err);
      goto out;
    }
    int total = cJSON_GetArraySize(lines);
    fprintf(stderr, "hutch benchmark merge: %s: %d tasks from %zu shards\n", task, total, n);
    printf("%s\n", out);
    rc = 0;
  }
out:
  cJSON_Delete(first);
  cJSON_Delete(lines);
  cJSON_Delete(from);
  free(dirs);
  return rc;
}
