/* SPDX-License-Identifier: Apache-2.0 */
/* LLM-in-Sandbox's task folder, unchanged: config.yaml (dataset: json,
 * data_files resolved against the folder that holds the task folders,
 * system_prompt, instance_prompt or a legacy prompt_config file), the
 * data file and reward.py. */
#include "config.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "error.h"
#include "util.h"
#include "yaml_map.h"

/* Data files are the task set's own, but bounded all the same. */
#define DATA_MAX ((size_t)1 << 30)

char *bench_safe_name(const char *id) {
  char *s = xstrdup(*id ? id : "_");
  for (char *p = s; *p; p++)
    if (*p == '/' || (p == s && *p == '.'))
      *p = '_';
  return s;
}

/* Whether two ids get the same file name from bench_safe_name (without
 * allocating: this runs for every pair of rows). */
static bool same_file_name(const char *a, const char *b) {
  if (!*a || !*b)
    return (!*a || strcmp(a, "_") == 0) && (!*b || strcmp(b, "_") == 0);
  for (size_t i = 0;; i++) {
    char x = a[i], y = b[i];
    if (x == '/' || (i == 0 && x == '.'))
      x = '_';
    if (y == '/' || (i == 0 && y == '.'))
      y = '_';
    if (x != y)
      return false;
    if (x == '\0')
      return true;
  }
}

static int add_row(cJSON *rows, cJSON *row, const char *what, size_t n, hutch_error_t *err) {
  if (!cJSON_IsObject(row)) {
    cJSON_Delete(row);
    return hutch_error_set(err, 0, "%s %zu is not a JSON object", what, n);
  }
  cJSON *id = cJSON_GetObjectItemCaseSensitive(row, "id");
  if (cJSON_IsNumber(id)) {
    _cleanup_free_ char *text = cJSON_PrintUnformatted(id);
    cJSON_ReplaceItemInObjectCaseSensitive(row, "id", cJSON_CreateString(text));
  } else if (!cJSON_IsString(id) || !id->valuestring[0]) {
    cJSON_Delete(row);
    return hutch_error_set(err, 0, "%s %zu has no \"id\"", what, n);
  }
  if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(row, "problem_statement"))) {
    cJSON_Delete(row);
    return hutch_error_set(err, 0, "%s %zu has no \"problem_statement\" string", what, n);
  }
  const char *idv = cJSON_GetObjectItemCaseSensitive(row, "id")->valuestring;
  const cJSON *r;
  /* Resume and the file names go by id: two ids may not share a task's
   * run directory and log ('a/b' and 'a_b' do). */
  cJSON_ArrayForEach(r, rows) {
    const char *other = cJSON_GetObjectItemCaseSensitive(r, "id")->valuestring;
    if (strcmp(other, idv) == 0) {
      hutch_error_set(err, 0, "%s %zu repeats the id '%s'", what, n, idv);
      cJSON_Delete(row);
      return -1;
    }
    if (same_file_name(other, idv)) {
      hutch_error_set(err, 0, "%s %zu: the ids '%s' and '%s' name the same files (a '/' or a leading '.' becomes '_')",
                      what, n, other, idv);
      cJSON_Delete(row);
      return -1;
    }
  }
  cJSON_AddItemToArray(rows, row);
  return 0;
}

cJSON *bench_parse_rows(const char *text, size_t len, hutch_error_t *err) {
  size_t i = 0;
  while (i < len && strchr(" \t\r\n", text[i]))
    i++;
  cJSON *rows = cJSON_CreateArray();
  if (i < len && text[i] == '[') {
    cJSON *all = cJSON_ParseWithLength(text, len);
    if (cJSON_IsArray(all) && bench_json_keep_numbers(all, text, len, err) < 0) {
      cJSON_Delete(all);
      cJSON_Delete(rows);
      return NULL;
    }
    bench_json_last_wins(all);
    if (!cJSON_IsArray(all)) {
      cJSON_Delete(all);
      cJSON_Delete(rows);
      hutch_error_set(err, 0, "not a JSON array (nor JSON lines)");
      return NULL;
    }
    size_t n = 0;
    while (cJSON_GetArraySize(all) > 0) {
      cJSON *row = cJSON_DetachItemFromArray(all, 0);
      if (add_row(rows, row, "row", ++n, err) < 0) {
        cJSON_Delete(all);
        cJSON_Delete(rows);
        return NULL;
      }
    }
    cJSON_Delete(all);
    return rows;
  }
  size_t line = 0;
  while (i < len) {
    const char *nl = memchr(text + i, '\n', len - i);
    size_t end = nl ? (size_t)(nl - text) : len;
    line++;
    size_t j = i;
    while (j < end && strchr(" \t\r", text[j]))
      j++;
    if (j < end) {
      cJSON *row = cJSON_ParseWithLength(text + j, end - j);
      if (row == NULL) {
        cJSON_Delete(rows);
        hutch_error_set(err, 0, "line %zu is not JSON", line);
        return NULL;
      }
      if (bench_json_keep_numbers(row, text + j, end - j, err) < 0) {
        hutch_error_wrap(err, "line %zu", line);
        cJSON_Delete(row);
        cJSON_Delete(rows);
        return NULL;
      }
      bench_json_last_wins(row);
      if (add_row(rows, row, "line", line, err) < 0) {
        cJSON_Delete(rows);
        return NULL;
      }
    }
    i = end + 1;
  }
  return rows;
}

/* config.yaml's KEY as a finite number (*v untouched when absent). */
static int range_key(const struct yaml_map *m, const char *cfg_path, const char *key, double *v, hutch_error_t *err) {
  const char *text = yaml_map_get(m, key);
  if (text == NULL)
    return 0;
  char *end;
  errno = 0;
  double d = strtod(text, &end);
  if (end == text || *end != '\0' || errno || !isfinite(d))
    return hutch_error_set(err, EINVAL, "%s: %s '%s' is not a finite number", cfg_path, key, text);
  *v = d;
  return 0;
}

static char *absolute(const char *path) {
  char *r = realpath(path, NULL);
  return r ? r : xstrdup(path);
}

static char *dup_or(const char *v, const char *dflt) {
  return xstrdup(v ? v : dflt);
}

int bench_set_load(const char *taskdir, const char *name, struct bench_set *set, hutch_error_t *err) {
  memset(set, 0, sizeof(*set));
  _cleanup_free_ char *root = absolute(taskdir);
  set->name = xstrdup(name);
  set->dir = xasprintf("%s/%s", root, name);
  _cleanup_free_ char *cfg_path = xasprintf("%s/config.yaml", set->dir);
  _cleanup_free_ char *reward = xasprintf("%s/reward.py", set->dir);
  _cleanup_free_ char *text = NULL;
  struct yaml_map m;
  if (strchr(name, '/') || strcmp(name, "..") == 0 || name[0] == '.') {
    hutch_error_set(err, EINVAL, "--task wants the name of a folder in %s, got '%s'", root, name);
    return BENCH_SET_MISSING;
  }
  if (yaml_map_load(cfg_path, &m, err) < 0) {
    bool absent = (*err)->errnum == ENOENT || (*err)->errnum == ENOTDIR;
    hutch_error_wrap(err, "task '%s'", name);
    hutch_error_hint(err, "TASKDIR is the folder that holds the task folders (each with config.yaml, "
                          "reward.py and its data); see hutch-benchmark(1)");
    return absent ? BENCH_SET_MISSING : -1;
  }
  int r = -1;
  const char *dataset = yaml_map_get(&m, "dataset");
  if (dataset == NULL) {
    hutch_error_set(err, EINVAL, "%s names no dataset", cfg_path);
    goto out;
  }
  if (strcmp(dataset, "json") != 0) {
    const char *cfg = yaml_map_get(&m, "config");
    const char *split = yaml_map_get(&m, "split");
    hutch_error_set(err, ENOTSUP,
                    "%s names the Hugging Face hub dataset '%s' (config %s, split %s): hutch reads "
                    "only local files",
                    cfg_path, dataset, cfg ? cfg : "none", split ? split : "test");
    hutch_error_hint(err,
                     "download it once to a local JSON lines file, e.g. python3 -c \"import datasets; "
                     "datasets.load_dataset('%s', %s%s%s, split='%s').to_json('%s/%s/data.jsonl')\", then set "
                     "dataset: \"json\" and data_files: \"%s/data.jsonl\" in config.yaml",
                     dataset, cfg ? "'" : "", cfg ? cfg : "None", cfg ? "'" : "", split ? split : "test", root, name,
                     name);
    goto out;
  }
  const char *files = yaml_map_get(&m, "data_files");
  if (files == NULL) {
    hutch_error_set(err, EINVAL, "%s: dataset json wants data_files (one file)", cfg_path);
    goto out;
  }
  /* LLM-in-Sandbox resolves it against its benchmark folder, the one that
   * holds the task folders. */
  set->data = files[0] == '/' ? xstrdup(files) : xasprintf("%s/%s", root, files);
  if (yaml_map_get(&m, "system_prompt")) {
    set->system_prompt = xstrdup(yaml_map_get(&m, "system_prompt"));
    set->instance_prompt = dup_or(yaml_map_get(&m, "instance_prompt"), "");
    set->working_dir = xstrdup("/testbed");
    set->input_dir = xstrdup("/testbed/documents");
    set->output_dir = xstrdup("/testbed");
  } else if (yaml_map_get(&m, "prompt_config")) {
    /* The legacy form: the whole file is the prompt dict, directories too
     * (opened as given, as LLM-in-Sandbox opens it). */
    struct yaml_map pm;
    if (yaml_map_load(yaml_map_get(&m, "prompt_config"), &pm, err) < 0) {
      hutch_error_wrap(err, "%s: prompt_config", cfg_path);
      goto out;
    }
    set->system_prompt = dup_or(yaml_map_get(&pm, "system_prompt"), "");
    set->instance_prompt = dup_or(yaml_map_get(&pm, "instance_prompt"), "");
    set->working_dir = dup_or(yaml_map_get(&pm, "working_dir"), "/testbed");
    set->input_dir = dup_or(yaml_map_get(&pm, "input_dir"), "/testbed/documents");
    set->output_dir = dup_or(yaml_map_get(&pm, "output_dir"), "/testbed");
    yaml_map_clear(&pm);
  } else {
    hutch_error_set(err, EINVAL, "%s must have either system_prompt or prompt_config", cfg_path);
    goto out;
  }
  /* The scores a task may have (hutch's keys: LLM-in-Sandbox's format has
   * none); one outside is the task's scoring error. */
  set->range = (struct bench_range){0, 1};
  if (range_key(&m, cfg_path, "hutch_score_min", &set->range.min, err) < 0 ||
      range_key(&m, cfg_path, "hutch_score_max", &set->range.max, err) < 0)
    goto out;
  if (!(set->range.min < set->range.max)) {
    char lo[32], hi[32];
    bench_fmt_double(lo, set->range.min);
    bench_fmt_double(hi, set->range.max);
    hutch_error_set(err, EINVAL, "%s: hutch_score_min (%s) is not below hutch_score_max (%s)", cfg_path, lo, hi);
    goto out;
  }
  /* Without reward.py, every task needs a verifier (checked per task). */
  set->has_reward = access(reward, R_OK) == 0;
  size_t len = 0;
  text = read_file_at(AT_FDCWD, set->data, DATA_MAX, &len);
  if (text == NULL) {
    if (errno == ENOENT || errno == ENOTDIR)
      r = BENCH_SET_MISSING;
    hutch_error_sys(err, "task '%s': data file %s (config.yaml's data_files)", name, set->data);
    goto out;
  }
  set->rows = bench_parse_rows(text, len, err);
  if (set->rows == NULL) {
    hutch_error_wrap(err, "%s", set->data);
    goto out;
  }
  r = 0;
out:
  yaml_map_clear(&m);
  return r;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Shown by name: a folder's name of no control character. */
static bool plain_name(const char *name) {
  for (const unsigned char *c = (const unsigned char *)name; *c; c++)
    if (*c < 0x20 || *c == 0x7f)
      return false;
  return name[0] != '.';
}

char *bench_task_list(const char *taskdir) {
  DIR *d = opendir(taskdir);
  if (d == NULL)
    return hutch_errno_format(errno, "TASKDIR %s cannot be read", taskdir);
  char **names = NULL;
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (!plain_name(e->d_name))
      continue;
    _cleanup_free_ char *cfg = xasprintf("%s/%s/config.yaml", taskdir, e->d_name);
    if (access(cfg, R_OK) != 0)
      continue;
    names = xrealloc(names, (n + 1) * sizeof(*names));
    names[n++] = xstrdup(e->d_name);
  }
  closedir(d);
  if (n == 0)
    return xasprintf("%s holds no task folder (a folder with a config.yaml)", taskdir);
  qsort(names, n, sizeof(*names), by_name);
  char *list = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&list, &len);
  fprintf(f, "the tasks in %s: ", taskdir);
  for (size_t i = 0; i < n; i++) {
    if (i < BENCH_TASK_LIST_MAX)
      fprintf(f, "%s%s", i ? ", " : "", names[i]);
    free(names[i]);
  }
  if (n > BENCH_TASK_LIST_MAX)
    fprintf(f, " and %zu more", n - BENCH_TASK_LIST_MAX);
  fclose(f);
  free(names);
  return list;
}

void bench_set_free(struct bench_set *set) {
  free(set->name);
  free(set->dir);
  free(set->data);
  free(set->system_prompt);
  free(set->instance_prompt);
  free(set->working_dir);
  free(set->input_dir);
  free(set->output_dir);
  cJSON_Delete(set->rows);
}
