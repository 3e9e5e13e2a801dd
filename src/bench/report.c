/* report.html: one self-contained file (no network, no CDN) with the score
 * table, each task's status, time and steps, and a viewer of each task's
 * trajectory.  Everything in it that a model or a sandbox wrote is data: it
 * travels as JSON in a script element of type application/json ('<'
 * escaped, so no text ends that element) and is put on the page with
 * textContent, never as HTML. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "error.h"
#include "util.h"

/* All the images of one page, as data: URIs. */
#define REPORT_IMAGES_MAX ((size_t)8 << 20)

static const char page_head[] =
    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'; "
    "style-src 'unsafe-inline'; img-src data:\">\n"
    "<title>hutch benchmark</title>\n<style>\n"
    "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}\n"
    "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left}\n"
    "tr.task{cursor:pointer}tr.task:hover{background:#eef}.err{color:#a00}.ok{color:#070}\n"
    "pre{white-space:pre-wrap;background:#f6f6f6;padding:.4em;margin:.2em 0;max-height:40em;overflow:auto}\n"
    ".step{border-left:3px solid #99c;padding-left:.6em;margin:.8em 0}.meta{color:#666;font-size:90%}\n"
    "img.shot{max-width:100%;max-height:40em;border:1px solid #ccc;display:block;margin:.3em 0}\n"
    "</style></head><body>\n<h1 id=\"title\"></h1>\n<table id=\"summary\"></table>\n"
    "<h2>Tasks</h2><p class=\"meta\">Click a task to see its trajectory.</p>\n"
    "<table id=\"tasks\"><thead><tr><th>id</th><th>score</th><th>status</th><th>time</th><th>steps</th><th>tokens</th>"
    "<th>answer</th><th>ground truth</th></tr></thead><tbody></tbody></table>\n"
    "<div id=\"viewer\"></div>\n<script type=\"application/json\" id=\"data\">";

static const char page_tail[] =
    "</script>\n<script>\n"
    "'use strict';\n"
    "const D = JSON.parse(document.getElementById('data').textContent);\n"
    "function el(tag, text, cls) { const e = document.createElement(tag);"
    " if (text !== undefined && text !== null) e.textContent = String(text); if (cls) e.className = cls; return e; }\n"
    "function row(cells, cls) { const tr = el('tr', null, cls); for (const c of cells) tr.appendChild(el('td', c));"
    " return tr; }\n"
    "function fmt(x) { return x === null || x === undefined ? '' : Number(x).toFixed(4); }\n"
    "function short(s) { s = s === null || s === undefined ? '' : String(s);"
    " return s.length > 80 ? s.slice(0, 80) + '\\u2026' : s; }\n"
    "function block(label, text) { const d = el('div'); if (text === undefined || text === null || text === '')"
    " return d; const t = String(text);\n"
    "  if (t.length > 2000) { const det = el('details'); det.appendChild(el('summary', label + ' (' + t.length +"
    " ' characters)')); det.appendChild(el('pre', t)); d.appendChild(det); }\n"
    "  else { d.appendChild(el('div', label, 'meta')); d.appendChild(el('pre', t)); } return d; }\n"
    "document.getElementById('title').textContent = (D.config.mode === 'hutch run' ? 'hutch run: ' : 'hutch benchmark: "
    "') + D.task + ' \\u2014 ' + D.config.llm_name"
    " + ' (' + D.config.mode + ')';\n"
    "const S = document.getElementById('summary');\n"
    "S.appendChild(row(['tasks', 'mean score', 'errors', 'time']));\n"
    "S.appendChild(row([D.total, fmt(D.mean_score), D.num_errors,"
    " Number(D.elapsed_time_seconds).toFixed(1) + ' s'], 'totals'));\n"
    "const T = document.querySelector('#tasks tbody');\n"
    "function show(t) {\n"
    "  const V = document.getElementById('viewer'); V.textContent = '';\n"
    "  V.appendChild(el('h2', 'Task ' + t.id)); V.appendChild(block('problem', t.problem_statement));\n"
    "  if (t.error) V.appendChild(el('p', 'error: ' + t.error, 'err'));\n"
    "  t.steps.forEach(function (s, i) {\n"
    "    const d = el('div', null, 'step'); const m = s.metadata || {};\n"
    "    const a = s.action || {};\n"
    "    d.appendChild(el('div', 'step ' + (i + 1) + ': ' + (a.function || '(no call)') + '  exit ' +"
    " (m.exit_code === undefined ? '' : m.exit_code) + '  ' + (m.tool_time === undefined ? '' :"
    " Number(m.tool_time).toFixed(3) + ' s'), 'meta'));\n"
    "    d.appendChild(block('reasoning', s.reasoning_content)); d.appendChild(block('thought', s.thought));\n"
    "    d.appendChild(block('action', a.parameters === undefined ? '' : JSON.stringify(a.parameters, null, 1)));\n"
    "    d.appendChild(block('observation', s.observation)); V.appendChild(d); });\n"
    "  V.appendChild(block('answer', t.agent_answer));\n"
    "  for (const im of t.images || []) { V.appendChild(el('div', 'image ' + im.name +"
    " (im.omitted ? ' (not shown: ' + im.omitted + ')' : ''), 'meta'));\n"
    "    if (!im.omitted && /^data:image\\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+\\/=]*$/.test(im.src)) {"
    " const i = el('img', null, 'shot'); i.alt = im.name; i.src = im.src; V.appendChild(i); } }\n"
    "}\n"
    "for (const t of D.tasks) {\n"
    "  const status = t.error ? 'error' : 'ok';\n"
    "  const tr = row([t.id, fmt(t.score), t.error ? 'error: ' + short(t.error) : (t.status || 'ok'),"
    " Number(t.elapsed_seconds || 0).toFixed(1) + ' s', t.steps.length, t.tokens === undefined ? '' : t.tokens,"
    " short(t.agent_answer),"
    " short(t.ground_truth === null ? '' : typeof t.ground_truth === 'string' ? t.ground_truth :"
    " JSON.stringify(t.ground_truth))], 'task ' +"
    " status);\n"
    "  tr.addEventListener('click', function () { show(t); }); T.appendChild(tr);\n"
    "}\n"
    "/* report.html#ID opens task ID's trajectory: a link to one task. */\n"
    "function fromHash() { const id = decodeURIComponent(location.hash.slice(1));"
    " const t = D.tasks.find(function (x) { return x.id === id; }); if (t) show(t); }\n"
    "if (typeof location !== 'undefined') { window.addEventListener('hashchange', fromHash); fromHash(); }\n"
    "</script>\n</body></html>\n";

int bench_write_report(const char *out, const char *task, const cJSON *config, const cJSON *lines, const cJSON *traj,
                       double mean, int errors, double elapsed, hutch_error_t *err) {
  cJSON *d = cJSON_CreateObject();
  cJSON_AddStringToObject(d, "task", task);
  cJSON_AddItemToObject(d, "config", cJSON_Duplicate(config, true));
  cJSON_AddNumberToObject(d, "total", cJSON_GetArraySize(lines));
  cJSON_AddItemToObject(d, "mean_score", mean < 0 ? cJSON_CreateNull() : cJSON_CreateNumber(mean));
  cJSON_AddNumberToObject(d, "num_errors", errors);
  cJSON_AddNumberToObject(d, "elapsed_time_seconds", elapsed);
  cJSON *tasks = cJSON_AddArrayToObject(d, "tasks");
  size_t budget = REPORT_IMAGES_MAX;
  const cJSON *l;
  cJSON_ArrayForEach(l, lines) {
    cJSON *t = cJSON_Duplicate(l, true);
    const char *id = cJSON_GetObjectItemCaseSensitive(l, "id")->valuestring;
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(traj, id), "trajectory");
    cJSON_AddItemToObject(t, "steps", cJSON_IsArray(steps) ? cJSON_Duplicate(steps, true) : cJSON_CreateArray());
    /* The images the agent wrote, from the task's files/, beneath its run
     * directory (a merged run's: its shard's). */
    _cleanup_close_ int run_fd = bench_open_run_dir(out, l);
    cJSON *images = bench_report_images(run_fd, &budget);
    if (cJSON_GetArraySize(images) > 0)
      cJSON_AddItemToObject(t, "images", images);
    else
      cJSON_Delete(images);
    cJSON_AddItemToArray(tasks, t);
  }
  char *json = cJSON_PrintUnformatted(d);
  cJSON_Delete(d);
  if (json == NULL)
    return hutch_error_set(err, ENOMEM, "report.html: the data");
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  fputs(page_head, f);
  /* '<' only occurs inside JSON strings: as \u003c it ends no element. */
  for (const char *p = json; *p; p++)
    if (*p == '<')
      fputs("\\u003c", f);
    else
      fputc(*p, f);
  fputs(page_tail, f);
  fclose(f);
  free(json);
  return bench_save(out, "report.html", text, len, err);
}

/* hutch report RUN_DIR: the same page for one hutch run, from its
 * trajectory.json and files/answer.txt, written as RUN_DIR/report.html. */
int bench_report_run(int argc, char **argv) {
  if (argc != 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
    fprintf(argc == 2 ? stdout : stderr,
            "Usage: hutch report RUN_DIR\n\n"
            "Write RUN_DIR/report.html: one self-contained page with the trajectory of the\n"
            "hutch run in RUN_DIR (each step's reasoning, action, observation, exit status\n"
            "and time) and its answer.\n\n"
            "Options:\n"
            "  -h, --help  show this help\n");
    return argc == 2 ? 0 : 2;
  }
  const char *dir = argv[1];
  _cleanup_free_ char *tpath = xasprintf("%s/trajectory.json", dir);
  size_t len = 0;
  _cleanup_free_ char *text = read_file_at(AT_FDCWD, tpath, (size_t)1 << 30, &len);
  cJSON *t = text ? cJSON_ParseWithLength(text, len) : NULL;
  if (!cJSON_IsObject(t)) {
    fprintf(stderr, "hutch report: %s: %s\n", tpath, text ? "not a trajectory.json of hutch run" : strerror(errno));
    cJSON_Delete(t);
    return 2;
  }
  _cleanup_free_ char *abs = realpath(dir, NULL);
  const char *slash = abs ? strrchr(abs, '/') : NULL;
  const char *name = slash && slash[1] ? slash + 1 : dir;
  const cJSON *h = cJSON_GetObjectItemCaseSensitive(t, "hutch");
  const cJSON *model = cJSON_GetObjectItemCaseSensitive(h, "model");
  const cJSON *end = cJSON_GetObjectItemCaseSensitive(h, "end_reason");
  /* The answer: files/answer.txt as hutch run copied it back, bounded. */
  _cleanup_free_ char *files = xasprintf("%s/files", dir);
  _cleanup_close_ int dfd = open(files, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  size_t alen = 0;
  _cleanup_free_ char *raw = dfd >= 0 ? read_regular_file_at(dfd, "answer.txt", 1 << 20, &alen) : NULL;
  _cleanup_free_ char *answer = bench_clean_answer(raw ? raw : "", raw ? alen : 0);
  cJSON *config = cJSON_CreateObject();
  cJSON_AddStringToObject(config, "llm_name", cJSON_IsString(model) ? model->valuestring : "?");
  cJSON_AddStringToObject(config, "mode", "hutch run");
  cJSON *line = cJSON_CreateObject();
  cJSON_AddStringToObject(line, "id", name);
  cJSON_AddNullToObject(line, "score");
  cJSON_AddNullToObject(line, "error");
  cJSON_AddStringToObject(line, "status", cJSON_IsString(end) ? end->valuestring : "");
  cJSON_AddStringToObject(line, "agent_answer", answer);
  cJSON_AddNullToObject(line, "ground_truth");
  cJSON_AddStringToObject(line, "run_dir", "."); /* RUN_DIR itself */
  cJSON_AddItemToObject(line, "problem_statement",
                        cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(t, "problem_statement"), true));
  double elapsed = 0;
  const cJSON *st;
  cJSON_ArrayForEach(st, cJSON_GetObjectItemCaseSensitive(t, "steps")) {
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(st, "metadata"), "elapsed");
    elapsed += cJSON_IsNumber(e) ? e->valuedouble : 0;
  }
  cJSON_AddNumberToObject(line, "elapsed_seconds", elapsed);
  const cJSON *tokens = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(h, "usage"), "total_tokens");
  if (cJSON_IsNumber(tokens))
    cJSON_AddNumberToObject(line, "tokens", tokens->valuedouble);
  cJSON *lines = cJSON_CreateArray();
  cJSON_AddItemToArray(lines, line);
  cJSON *traj = cJSON_CreateObject();
  cJSON *entry = cJSON_AddObjectToObject(traj, name);
  cJSON_AddItemToObject(entry, "trajectory", cJSON_DetachItemFromObjectCaseSensitive(t, "steps"));
  hutch_error_t err = NULL;
  int r = bench_write_report(dir, name, config, lines, traj, -1, 0, elapsed, &err);
  cJSON_Delete(t);
  cJSON_Delete(traj);
  cJSON_Delete(lines);
  cJSON_Delete(config);
  if (r < 0) {
    hutch_error_print(stderr, "hutch report", err);
    hutch_error_free(&err);
    return 125;
  }
  printf("%s/report.html\n", dir);
  return 0;
}
