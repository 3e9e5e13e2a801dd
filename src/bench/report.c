/* SPDX-License-Identifier: Apache-2.0 */
/* report.html: one self-contained page (no network, no CDN) of a hutch
 * benchmark run or of one hutch run, readable without JavaScript.  The
 * page is report/page.html of hutch's data directory (with task.html,
 * report.css and report.js), rendered from the run's view (report.h):
 * everything a model, a sandbox or a task wrote goes into it escaped, as
 * text (template.h), and its Content-Security-Policy lets only the page's
 * own script run (by a nonce made for the page) and load nothing.
 *
 * hutch benchmark writes it at the end of a run; hutch report DIR writes it
 * again, from a benchmark's run directory (benchmark.json, results.jsonl,
 * the runs' trajectories) or from a hutch run's.  A page is replaced only
 * by a whole new one: a directory it cannot read is refused, its page left
 * as it was. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "bench.h"
#include "error.h"
#include "report.h"
#include "template.h"
#include "util.h"

/* All the images of one page, as data: URIs. */
#define REPORT_IMAGES_MAX ((size_t)8 << 20)
#define REPORT_PAGE_MAX ((size_t)512 << 20)
#define TEMPLATE_MAX ((size_t)1 << 20)
#define TRAJ_MAX ((size_t)1 << 30)

/* The page's files, under $HUTCH_REPORT_DIR, else DATADIR/report/ (the
 * source tree's, run from the build tree). */
static const char *const report_files[] = {"page.html", "task.html", "report.css", "report.js"};

static cJSON *load_templates(hutch_error_t *err) {
  const char *env = getenv("HUTCH_REPORT_DIR");
  _cleanup_free_ char *dir = env && *env ? xstrdup(env) : xasprintf("%s/report", hutch_data_dir());
  cJSON *t = cJSON_CreateObject();
  for (size_t i = 0; i < sizeof(report_files) / sizeof(*report_files); i++) {
    _cleanup_free_ char *path = xasprintf("%s/%s", dir, report_files[i]);
    size_t len = 0;
    _cleanup_free_ char *text = read_regular_file_at(AT_FDCWD, path, TEMPLATE_MAX, &len);
    if (text == NULL || strlen(text) != len) {
      if (text)
        errno = EINVAL;
      hutch_error_sys(err, "read %s", path);
      hutch_error_hint(err, "report.html's files are installed by `make install` with hutch's policies");
      cJSON_Delete(t);
      return NULL;
    }
    cJSON_AddStringToObject(t, report_files[i], text);
  }
  return t;
}

/* The page's script's nonce, new for each page. */
static int make_nonce(char out[33], hutch_error_t *err) {
  unsigned char b[16];
  if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
    return hutch_error_sys(err, "getrandom for report.html's nonce");
  for (size_t i = 0; i < sizeof(b); i++)
    snprintf(out + 2 * i, 3, "%02x", b[i]);
  return 0;
}

/* view rendered by report/page.html into OUT/report.html (view freed). */
static int write_page(const char *out, cJSON *view, hutch_error_t *err) {
  cJSON *templates = load_templates(err);
  if (templates == NULL) {
    cJSON_Delete(view);
    return -1;
  }
  size_t len = 0;
  const char *page = cJSON_GetObjectItemCaseSensitive(templates, "page.html")->valuestring;
  char *text = tmpl_render("page.html", page, view, templates, REPORT_PAGE_MAX, &len, err);
  cJSON_Delete(view);
  cJSON_Delete(templates);
  if (text == NULL)
    return -1;
  return bench_save(out, "report.html", text, len, err);
}

static cJSON *read_json(int dirfd, const char *name, size_t max) {
  size_t len = 0;
  /* Never through a symlink in the run's place of the file. */
  _cleanup_free_ char *text = dirfd >= 0 ? read_regular_file_at(dirfd, name, max, &len) : NULL;
  return text ? cJSON_ParseWithLength(text, len) : NULL;
}

static int by_natural_id(const void *a, const void *b) {
  return report_natural_cmp(cJSON_GetObjectItemCaseSensitive(*(cJSON *const *)a, "id")->valuestring,
                            cJSON_GetObjectItemCaseSensitive(*(cJSON *const *)b, "id")->valuestring);
}

/* The page of the benchmark run in out, whose lines are given. */
static int bench_page(const char *out, const struct bench_meta *m, const cJSON *lines, double elapsed,
                      hutch_error_t *err) {
  char nonce[33];
  if (make_nonce(nonce, err) < 0)
    return -1;
  /* By id: the order of the task set, not the order the tasks ended in. */
  size_t n = (size_t)cJSON_GetArraySize(lines), k = 0;
  _cleanup_free_ const cJSON **order = xcalloc(n + 1, sizeof(*order));
  const cJSON *l;
  cJSON_ArrayForEach(l, lines) order[k++] = l;
  qsort(order, n, sizeof(*order), by_natural_id);
  cJSON *sorted = cJSON_CreateArray(), *details = cJSON_CreateArray();
  _cleanup_free_ struct report_sums *sums = xcalloc(n + 1, sizeof(*sums));
  struct report_ctx ctx = {.budget = REPORT_TEXTS_MAX};
  size_t images = REPORT_IMAGES_MAX;
  for (k = 0; k < n; k++) {
    cJSON_AddItemReferenceToArray(sorted, (cJSON *)order[k]);
    /* The task's own run files, beneath its run directory (a merged run's:
     * its shard's), one at a time. */
    _cleanup_close_ int run_fd = bench_open_run_dir(out, order[k]);
    cJSON *traj = read_json(run_fd, "trajectory.json", TRAJ_MAX);
    struct report_task t = {.line = order[k], .traj = traj, .images = bench_report_images(run_fd, &images)};
    cJSON_AddItemToArray(details, report_task_view(&ctx, &t, &m->range, &sums[k]));
    cJSON_Delete(traj);
  }
  cJSON *view = report_bench_view(m, sorted, details, sums, elapsed, nonce);
  cJSON_Delete(sorted);
  return write_page(out, view, err);
}

static int read_meta(const char *out, cJSON **meta, struct bench_meta *m, hutch_error_t *err) {
  _cleanup_free_ char *path = xasprintf("%s/benchmark.json", out);
  size_t len = 0;
  _cleanup_free_ char *text = read_regular_file_at(AT_FDCWD, path, 1 << 20, &len);
  if (text == NULL)
    return hutch_error_sys(err, "read %s", path);
  *meta = cJSON_ParseWithLength(text, len);
  _cleanup_free_ char *why = NULL;
  if (*meta == NULL || bench_meta_check(*meta, m, &why) < 0)
    return hutch_error_set(err, EINVAL, "%s: %s", path, why ? why : "is not JSON");
  return 0;
}

int bench_write_report(const char *out, const cJSON *lines, double elapsed, hutch_error_t *err) {
  cJSON *meta = NULL;
  struct bench_meta m;
  int r = read_meta(out, &meta, &m, err);
  if (r == 0)
    r = bench_page(out, &m, lines, elapsed, err);
  cJSON_Delete(meta);
  return r;
}

/* hutch report DIR of a benchmark's run directory: its lines as --resume
 * reads them, its time from results.json. */
static int report_bench_dir(const char *dir, hutch_error_t *err) {
  cJSON *meta = NULL;
  struct bench_meta m;
  if (read_meta(dir, &meta, &m, err) < 0) {
    cJSON_Delete(meta);
    return -1;
  }
  cJSON *refused = cJSON_CreateArray();
  cJSON *lines = bench_read_lines(dir, &m.range, m.merged_from, refused);
  if (lines == NULL) {
    hutch_error_sys(err, "read %s/results.jsonl", dir);
    cJSON_Delete(refused);
    cJSON_Delete(meta);
    return -1;
  }
  if (cJSON_GetArraySize(refused) > 0) {
    const cJSON *first = cJSON_GetArrayItem(refused, 0);
    fprintf(stderr, "hutch report: warning: %s/results.jsonl: %d lines left out (line %.0f %s)\n", dir,
            cJSON_GetArraySize(refused), cJSON_GetObjectItemCaseSensitive(first, "line")->valuedouble,
            cJSON_GetObjectItemCaseSensitive(first, "why")->valuestring);
  }
  _cleanup_close_ int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  cJSON *results = read_json(dfd, "results.json", 64 << 20);
  const cJSON *e = cJSON_GetObjectItemCaseSensitive(results, "elapsed_time_seconds");
  double elapsed = cJSON_IsNumber(e) && e->valuedouble >= 0 ? e->valuedouble : -1;
  cJSON_Delete(results);
  int r = bench_page(dir, &m, lines, elapsed, err);
  cJSON_Delete(lines);
  cJSON_Delete(refused);
  cJSON_Delete(meta);
  return r;
}

/* hutch report DIR of a hutch run's directory. */
static int report_run_dir(const char *dir, cJSON *t, hutch_error_t *err) {
  char nonce[33];
  if (make_nonce(nonce, err) < 0)
    return -1;
  _cleanup_free_ char *abs = realpath(dir, NULL);
  const char *slash = abs ? strrchr(abs, '/') : NULL;
  const char *name = slash && slash[1] ? slash + 1 : dir;
  /* The answer: files/answer.txt as hutch run copied it back, bounded. */
  _cleanup_close_ int run_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  _cleanup_close_ int dfd = run_fd >= 0 ? openat(run_fd, "files", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
  size_t alen = 0;
  _cleanup_free_ char *raw = dfd >= 0 ? read_regular_file_at(dfd, "answer.txt", 1 << 20, &alen) : NULL;
  _cleanup_free_ char *answer = bench_clean_answer(raw ? raw : "", raw ? alen : 0);
  size_t images = REPORT_IMAGES_MAX;
  struct report_task task = {.traj = t, .images = bench_report_images(run_fd, &images), .name = name, .answer = answer};
  struct report_ctx ctx = {.budget = REPORT_TEXTS_MAX};
  struct report_sums sums;
  cJSON *detail = report_task_view(&ctx, &task, &(struct bench_range){0, 1}, &sums);
  return write_page(dir, report_run_view(detail, &task, &sums, nonce), err);
}

/* hutch report DIR: a benchmark's run directory (benchmark.json) or a hutch
 * run's (trajectory.json with its steps); anything else is refused. */
int bench_report_run(int argc, char **argv) {
  if (argc != 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
    fprintf(argc == 2 ? stdout : stderr,
            "Usage: hutch report DIR\n\n"
            "Write DIR/report.html again: one self-contained page of the hutch benchmark\n"
            "run in DIR (its benchmark.json, results.jsonl and each task's trajectory), or\n"
            "of the hutch run in DIR (its trajectory.json and answer): results, totals,\n"
            "and each step's reasoning, call, observation, exit status, times and tokens.\n"
            "A directory that is neither is refused and its report.html left as it was.\n\n"
            "Options:\n"
            "  -h, --help  show this help\n");
    return argc == 2 ? 0 : 2;
  }
  const char *dir = argv[1];
  hutch_error_t err = NULL;
  int r;
  _cleanup_free_ char *bpath = xasprintf("%s/benchmark.json", dir);
  _cleanup_free_ char *tpath = xasprintf("%s/trajectory.json", dir);
  if (faccessat(AT_FDCWD, bpath, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
    r = report_bench_dir(dir, &err);
    if (r < 0 && err && err->errnum == EINVAL) {
      hutch_error_print(stderr, "hutch report", err);
      hutch_error_free(&err);
      return 2;
    }
  } else {
    size_t len = 0;
    _cleanup_free_ char *text = read_regular_file_at(AT_FDCWD, tpath, TRAJ_MAX, &len);
    cJSON *t = text ? cJSON_ParseWithLength(text, len) : NULL;
    if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(t, "steps"))) {
      _cleanup_free_ char *shown = text_escape_cstr(dir);
      if (text == NULL)
        fprintf(stderr,
                "hutch report: %s: no benchmark.json of hutch benchmark nor trajectory.json of hutch run (%s)\n", shown,
                strerror(errno));
      else
        fprintf(stderr,
                "hutch report: %s: trajectory.json has no steps of hutch run, and there is no benchmark.json of "
                "hutch benchmark (LLM-in-Sandbox's own output is not read)\n",
                shown);
      cJSON_Delete(t);
      return 2;
    }
    r = report_run_dir(dir, t, &err);
    cJSON_Delete(t);
  }
  if (r < 0) {
    hutch_error_print(stderr, "hutch report", err);
    hutch_error_free(&err);
    return 125;
  }
  printf("%s/report.html\n", dir);
  return 0;
}
