/* The run's records: results.jsonl (one line per finished task, appended
 * whole and synced, so a crash loses at most the tasks in flight), and at
 * the end LLM-in-Sandbox's results.json and trajectory.json. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
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
#define TRAJ_MAX ((size_t)1 << 30)

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

cJSON *bench_read_lines(const char *path) {
  cJSON *lines = cJSON_CreateArray();
  size_t len = 0;
  _cleanup_free_ char *text = read_file_at(AT_FDCWD, path, LINES_MAX, &len);
  for (size_t i = 0; text && i < len;) {
    char *nl = memchr(text + i, '\n', len - i);
    if (nl == NULL)
      break; /* torn: the task runs again */
    cJSON *l = cJSON_ParseWithLength(text + i, (size_t)(nl - text) - i);
    /* Only a line of the shape the runner writes counts as a finished task
     * (the readers take id, score and elapsed_seconds as given); anything
     * else, an edited or foreign line, is run again. */
    if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(l, "id")) &&
        cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(l, "score")) &&
        cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(l, "elapsed_seconds")))
      cJSON_AddItemToArray(lines, l);
    else
      cJSON_Delete(l);
    i = (size_t)(nl - text) + 1;
  }
  return lines;
}

/* The steps of a task's run, from its own trajectory.json. */
static cJSON *steps_of(const char *out, const cJSON *line) {
  const cJSON *rd = cJSON_GetObjectItemCaseSensitive(line, "run_dir");
  if (!cJSON_IsString(rd))
    return cJSON_CreateArray();
  /* Relative to the run directory, or absolute (a merged run's lines). */
  _cleanup_free_ char *path = rd->valuestring[0] == '/' ? xasprintf("%s/trajectory.json", rd->valuestring)
                                                        : xasprintf("%s/%s/trajectory.json", out, rd->valuestring);
  size_t len = 0;
  _cleanup_free_ char *text = read_file_at(AT_FDCWD, path, TRAJ_MAX, &len);
  cJSON *t = text ? cJSON_ParseWithLength(text, len) : NULL;
  cJSON *steps = cJSON_DetachItemFromObjectCaseSensitive(t, "steps");
  cJSON_Delete(t);
  return cJSON_IsArray(steps) ? steps : (cJSON_Delete(steps), cJSON_CreateArray());
}

static int write_json(const char *path, cJSON *j, hutch_error_t *err) {
  _cleanup_free_ char *text = cJSON_Print(j);
  if (text == NULL || write_file_atomic(path, text, strlen(text), 0644) < 0)
    return hutch_error_sys(err, "write %s", path);
  return 0;
}

int bench_save(const char *out, const char *name, char *text, size_t len, hutch_error_t *err) {
  _cleanup_free_ char *path = xasprintf("%s/%s", out, name);
  int r = write_file_atomic(path, text, len, 0644);
  free(text);
  if (r < 0)
    return hutch_error_sys(err, "write %s", path);
  return 0;
}

/* A table cell: one line, '|' escaped, at most 80 characters.  Markdown
 * viewers render HTML: '<' and '&' (an error may quote the model's answer)
 * are written as entities, which show as themselves. */
static void cell(FILE *f, const char *text) {
  size_t n = 0;
  for (const char *p = text; *p && n < 80; p++, n++) {
    if (*p == '|')
      fputs("\\|", f);
    else if (*p == '<')
      fputs("&lt;", f);
    else if (*p == '&')
      fputs("&amp;", f);
    else if (*p == '\n' || *p == '\r' || *p == '\t')
      fputc(' ', f);
    else
      fputc(*p, f);
  }
  if (strlen(text) > 80)
    fputs("...", f);
}

/* summary.md: the run at a glance, for people (results.json is for programs). */
static int write_summary(const char *out, const char *task, const cJSON *config, const cJSON *lines, double mean,
                         int errors, double elapsed, hutch_error_t *err) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  const cJSON *llm = cJSON_GetObjectItemCaseSensitive(config, "llm_name");
  const cJSON *mode = cJSON_GetObjectItemCaseSensitive(config, "mode");
  fprintf(f, "# %s: %s, %s\n\n", task, cJSON_IsString(llm) ? llm->valuestring : "?",
          cJSON_IsString(mode) ? mode->valuestring : "?");
  fprintf(f, "| tasks | mean score | errors | time |\n|---:|---:|---:|---:|\n| %d | %.4f | %d | %.1f s |\n\n",
          cJSON_GetArraySize(lines), mean, errors, elapsed);
  fprintf(f, "| id | score | time | error |\n|---|---:|---:|---|\n");
  const cJSON *l;
  cJSON_ArrayForEach(l, lines) {
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(l, "error");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(l, "elapsed_seconds");
    fputs("| ", f);
    cell(f, cJSON_GetObjectItemCaseSensitive(l, "id")->valuestring);
    fprintf(f, " | %.4f | %.1f s | ", cJSON_GetObjectItemCaseSensitive(l, "score")->valuedouble,
            cJSON_IsNumber(t) ? t->valuedouble : 0.0);
    _cleanup_free_ char *safe = text_escape_cstr(cJSON_IsString(e) ? e->valuestring : "");
    cell(f, safe);
    fputs(" |\n", f);
  }
  fclose(f);
  return bench_save(out, "summary.md", text, len, err);
}

int bench_write_outputs(const char *out, const struct bench_opts *o, const cJSON *config, const cJSON *lines,
                        double elapsed, hutch_error_t *err) {
  cJSON *traj = cJSON_CreateObject();
  double sum = 0;
  int total = 0, errors = 0;
  const cJSON *l;
  cJSON_ArrayForEach(l, lines) {
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(l, "score");
    sum += cJSON_IsNumber(s) ? s->valuedouble : 0;
    total++;
    if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(l, "error")))
      errors++;
    cJSON *e = cJSON_CreateObject();
    cJSON_AddItemToObject(e, "problem_statement",
                          cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(l, "problem_statement"), true));
    cJSON_AddItemToObject(e, "trajectory", steps_of(out, l));
    cJSON_AddNumberToObject(e, "reward", cJSON_IsNumber(s) ? s->valuedouble : 0);
    cJSON_AddItemToObject(e, "agent_answer",
                          cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(l, "agent_answer"), true));
    cJSON_AddItemToObject(e, "ground_truth",
                          cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(l, "ground_truth"), true));
    const char *id = cJSON_GetObjectItemCaseSensitive(l, "id")->valuestring;
    cJSON_DeleteItemFromObjectCaseSensitive(traj, id);
    cJSON_AddItemToObject(traj, id, e);
  }
  _cleanup_free_ char *tpath = xasprintf("%s/trajectory.json", out);
  int r = write_json(tpath, traj, err);
  if (r < 0) {
    cJSON_Delete(traj);
    return r;
  }
  cJSON *res = cJSON_CreateObject();
  cJSON_AddItemToObject(res, "config", cJSON_Duplicate(config, true));
  cJSON_AddStringToObject(res, "task", o->task);
  cJSON_AddNumberToObject(res, "total", total);
  cJSON_AddNumberToObject(res, "mean_score", total ? sum / total : 0.0);
  cJSON_AddNumberToObject(res, "num_errors", errors);
  cJSON_AddNumberToObject(res, "elapsed_time_seconds", elapsed);
  _cleanup_free_ char *rpath = xasprintf("%s/results.json", out);
  r = write_json(rpath, res, err);
  cJSON_Delete(res);
  if (r >= 0)
    r = write_summary(out, o->task, config, lines, total ? sum / total : 0.0, errors, elapsed, err);
  if (r >= 0)
    r = bench_write_report(out, o->task, config, lines, traj, total ? sum / total : 0.0, errors, elapsed, err);
  cJSON_Delete(traj);
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
  _cleanup_free_ char *llm = xstrdup(llm_name);
  for (char *p = llm; *p; p++)
    if (*p == '/')
      *p = '_';
  _cleanup_free_ char *base = xasprintf("%s/%s_%s_%s_%s", output_dir, stamp, task, llm, suffix);
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
