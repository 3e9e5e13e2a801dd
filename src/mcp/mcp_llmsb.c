/* SPDX-License-Identifier: Apache-2.0 */
/* llm-sandbox's MCP server's tools on hutch mcp, so that a client set up
 * for that server works with the command swapped: execute_code (code,
 * language, libraries, timeout), get_supported_languages,
 * get_language_details (language).  Their text is what that server's is
 * (execute_code: JSON of exit_code, stderr, stdout, after an image of the
 * last figure when there is one); on top, as hutch's own tools do, each
 * result has structuredContent, and a failure is a tool error (isError)
 * whose text keeps that JSON shape, where llm-sandbox's server returns a
 * plain result.
 *
 * Each execute_code runs in a sandbox of its own, started for the call
 * and destroyed at its end, as llm-sandbox's server opens a session per
 * call: nothing of one call reaches the next.  It has no network, except
 * when libraries are asked for and the operator allows the proxy (hutch
 * mcp --net proxy): then the libraries are installed through it (the
 * policy's allowlist), and the code runs with it too. */
#include "config.h"

#include "mcp.h"

#include <ctype.h>
#include <string.h>

#include "util.h"

/* Libraries one call installs at most, and the length of a name. */
#define MAX_LIBRARIES 64
#define MAX_LIBRARY_NAME 200

/* The text of an execute_code result: llm-sandbox's ExecutionResult as
 * JSON, two-space indented as it prints it. */
static char *result_text(int exit_code, const char *stderr_text, const char *stdout_text) {
  /* cJSON's formatting indents with tabs: the object is laid out here,
   * each string escaped by cJSON. */
  cJSON *e = cJSON_CreateString(stderr_text), *s = cJSON_CreateString(stdout_text);
  _cleanup_free_ char *es = cJSON_PrintUnformatted(e), *ss = cJSON_PrintUnformatted(s);
  cJSON_Delete(e);
  cJSON_Delete(s);
  return xasprintf("{\n  \"exit_code\": %d,\n  \"stderr\": %s,\n  \"stdout\": %s\n}", exit_code, es, ss);
}

/* A result of execute_code: the image of the last figure first when there
 * is one, then the JSON text; a tool error when the code did not exit 0. */
static cJSON *code_result(const char *lang, const char *image, int exit_code, const char *err, const char *out,
                          const char *figure, unsigned plots) {
  _cleanup_free_ char *text = result_text(exit_code, err, out);
  cJSON *st = cJSON_CreateObject();
  cJSON_AddNumberToObject(st, "exit_code", exit_code);
  cJSON_AddStringToObject(st, "stderr", err);
  cJSON_AddStringToObject(st, "stdout", out);
  if (lang)
    cJSON_AddStringToObject(st, "language", lang);
  if (image)
    cJSON_AddStringToObject(st, "image", image);
  cJSON_AddNumberToObject(st, "plots", plots);
  cJSON *r = mcp_result(text, st, exit_code != 0);
  if (figure) {
    cJSON *img = cJSON_CreateObject();
    cJSON_AddStringToObject(img, "type", "image");
    cJSON_AddStringToObject(img, "data", figure);
    cJSON_AddStringToObject(img, "mimeType", "image/png");
    cJSON_InsertItemInArray(cJSON_GetObjectItem(r, "content"), 0, img);
  }
  return r;
}

/* A failure before or around the code: exit code 1 and why, as
 * llm-sandbox's server reports its exceptions. */
static cJSON *code_failed(const char *lang, const char *why) {
  return code_result(lang, NULL, 1, why, "", NULL, 0);
}

/* The libraries' names, checked: each goes to the package manager as one
 * argument, never through the shell's text, and none may pass for an
 * option.  NULL and *why on a bad one. */
static const char **library_names(const cJSON *libs, size_t *n, char **why) {
  *n = (size_t)cJSON_GetArraySize(libs);
  if (*n > MAX_LIBRARIES) {
    *why = xasprintf("libraries: %zu names, more than the %d a call installs", *n, MAX_LIBRARIES);
    return NULL;
  }
  const char **names = xcalloc(*n + 1, sizeof(char *));
  size_t i = 0;
  const cJSON *l;
  cJSON_ArrayForEach(l, libs) {
    const char *v = l->valuestring;
    bool ok = v[0] != '\0' && v[0] != '-' && strlen(v) <= MAX_LIBRARY_NAME;
    for (const char *p = v; ok && *p; p++)
      ok = isgraph((unsigned char)*p);
    if (!ok) {
      *why = xasprintf("libraries: \"%.64s\" is not a package name (no spaces or control characters, not starting "
                       "with -, at most %d bytes)",
                       v, MAX_LIBRARY_NAME);
      free(names);
      return NULL;
    }
    names[i++] = v;
  }
  return names;
}

/* Runs argv in the sandbox: 0 with the exit code and the output's text,
 * or a tool result (cancelled, or an error of hutch's) in *fail. */
static int run_cmd(struct mcp_call *c, struct mcp_sandbox *m, const char *const *argv, double timeout, int *code,
                   char **out, char **err, cJSON **fail) {
  hutch_error_t e = NULL;
  struct mcp_exec_result r;
  if (mcp_exec(c->cfg, m->sb, argv, NULL, NULL, 0, timeout, c->cancel, &r, &e) < 0) {
    mcp_exec_result_clear(&r);
    *fail = mcp_tool_error(&e);
    return -1;
  }
  if (r.cancelled) {
    mcp_exec_result_clear(&r);
    *fail = mcp_result("cancelled: the process was killed", NULL, true);
    return -1;
  }
  *code = hutch_exit_code(&r.exit);
  *out = mcp_utf8(r.out, r.out_len);
  *err = mcp_utf8(r.err, r.err_len);
  if (r.exit.timed_out) {
    char *t = xasprintf("%s%stimed out after %g s: killed", *err, (*err)[0] ? "\n" : "", timeout);
    free(*err);
    *err = t;
  }
  mcp_exec_result_clear(&r);
  return 0;
}

/* Python in the sandbox's interpreter, whose answer carries the
 * matplotlib figures; an exception is exit code 1 with its traceback on
 * stderr, as running the code as a script gives. */
static cJSON *run_python(struct mcp_call *c, struct mcp_sandbox *m, const char *code, double timeout) {
  hutch_error_t e = NULL;
  _cleanup_free_ char *reply = NULL, *ended = NULL;
  int r = mcp_python_call(c->cfg, m, code, timeout, c->cancel, &reply, &ended, &e);
  if (r < 0)
    return mcp_tool_error(&e);
  if (r > 0)
    return code_result("python", m->image, 124, ended, "", NULL, 0);
  _cleanup_cjson_ cJSON *answer = cJSON_Parse(reply);
  if (!cJSON_IsObject(answer))
    return code_failed("python", "the interpreter answered something that is not its protocol: it was killed");
  const char *out = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(answer, "stdout"));
  const char *err = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(answer, "stderr"));
  const char *exc = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(answer, "error"));
  _cleanup_free_ char *err_all = xasprintf("%s%s", err ? err : "", exc ? exc : "");
  const cJSON *figures = cJSON_GetObjectItemCaseSensitive(answer, "figures"), *f;
  const char *last = NULL;
  unsigned plots = 0;
  if (cJSON_IsArray(figures)) {
    cJSON_ArrayForEach(f, figures) {
      if (cJSON_IsString(f)) {
        last = f->valuestring;
        plots++;
      }
    }
  }
  return code_result("python", m->image, exc ? 1 : 0, err_all, out ? out : "", last, plots);
}

/* Installs the libraries, then runs the code, in the sandbox m. */
static cJSON *install_and_run(struct mcp_call *c, struct mcp_sandbox *m, const struct mcp_llmsb_lang *l,
                              const char **libs, size_t n_libs, const char *code, double timeout) {
  int code_rc = 0;
  cJSON *fail = NULL;
  if (n_libs) {
    _cleanup_free_ const char **argv = xcalloc(n_libs + 5, sizeof(char *));
    argv[0] = "/bin/sh";
    argv[1] = "-c";
    argv[2] = l->install;
    argv[3] = "install";
    memcpy(argv + 4, libs, n_libs * sizeof(char *));
    _cleanup_free_ char *out = NULL, *err = NULL;
    if (run_cmd(c, m, argv, timeout, &code_rc, &out, &err, &fail) < 0)
      return fail;
    if (code_rc != 0) {
      _cleanup_free_ char *why = xasprintf("installing libraries failed (exit code %d):\n%s", code_rc, err);
      return code_result(l->name, m->image, code_rc, why, out, NULL, 0);
    }
  }
  if (l->run == NULL)
    return run_python(c, m, code, timeout);
  const char *argv[] = {"/bin/sh", "-c", l->run, code, NULL};
  _cleanup_free_ char *out = NULL, *err = NULL;
  if (run_cmd(c, m, argv, timeout, &code_rc, &out, &err, &fail) < 0)
    return fail;
  return code_result(l->name, m->image, code_rc, err, out, NULL, 0);
}

static cJSON *t_execute_code(struct mcp_call *c) {
  const struct mcp_config *cfg = c->cfg;
  const char *code = mcp_arg_str(c, "code"), *lang = mcp_arg_str(c, "language");
  if (lang == NULL)
    lang = "python";
  const struct mcp_llmsb_lang *l = mcp_llmsb_lang_named(lang);
  if (l == NULL) {
    _cleanup_free_ char *t = xasprintf("Language %.64s is not supported: one of python, java, javascript, cpp, go, "
                                       "ruby, r (get_supported_languages)",
                                       lang);
    return code_failed(NULL, t);
  }
  const cJSON *libs_arg = cJSON_GetObjectItemCaseSensitive(c->args, "libraries");
  size_t n_libs = 0;
  _cleanup_free_ char *why = NULL;
  _cleanup_free_ const char **libs = cJSON_IsArray(libs_arg) ? library_names(libs_arg, &n_libs, &why) : NULL;
  if (why)
    return code_failed(l->name, why);
  if (n_libs && l->install == NULL) {
    _cleanup_free_ char *t =
        xasprintf("libraries: not offered for %s here (install them in an image instead)", l->name);
    return code_failed(l->name, t);
  }
  if (n_libs && !cfg->net_proxy)
    return code_failed(l->name, "libraries: installing needs the network, and this server gives sandboxes none "
                                "(the operator starts it with hutch mcp --net proxy)");
  _cleanup_free_ char *image = mcp_llmsb_image(cfg, l);
  if (image == NULL) {
    _cleanup_free_ char *t = mcp_llmsb_unavailable(l);
    return code_failed(l->name, t);
  }
  unsigned n = mcp_session_count(c->s);
  if (n >= cfg->max_sandboxes) {
    _cleanup_free_ char *t = xasprintf("this session has %u sandboxes, the most allowed: destroy one first", n);
    return code_failed(l->name, t);
  }
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(c->args, "timeout");
  double timeout = t ? t->valuedouble : 30;
  if (timeout > cfg->max_timeout)
    timeout = cfg->max_timeout;
  struct hutch_limits lim = {0};
  hutch_error_t err = NULL;
  struct mcp_sandbox *m = NULL;
  if (mcp_sandbox_start(cfg, c->s, image, &lim, n_libs > 0, NULL, &m, &err) < 0)
    return mcp_tool_error(&err);
  snprintf(c->sandbox, sizeof(c->sandbox), "%s", m->id);
  cJSON *r = install_and_run(c, m, l, libs, n_libs, code, timeout);
  /* The call's sandbox goes with the call. */
  for (struct mcp_sandbox **p = &c->s->sandboxes; *p; p = &(*p)->next) {
    if (*p == m) {
      *p = m->next;
      break;
    }
  }
  mcp_sandbox_drop(cfg, m);
  return r;
}

/* A JSON array of strings as Python's json.dumps(indent=2) prints it. */
static char *names_text(const struct mcp_llmsb_lang *langs, size_t n) {
  _cleanup_free_ char *text = NULL;
  size_t len = 0, cap = 0;
  text_append(&text, &len, &cap, "[", 1);
  for (size_t i = 0; i < n; i++)
    text_appendf(&text, &len, &cap, "%s\n  \"%s\"", i ? "," : "", langs[i].name);
  text_append(&text, &len, &cap, "\n]", 2);
  char *out = text;
  text = NULL;
  return out;
}

static cJSON *t_supported(struct mcp_call *c) {
  size_t n;
  const struct mcp_llmsb_lang *langs = mcp_llmsb_langs(&n);
  cJSON *st = cJSON_CreateObject();
  cJSON *all = cJSON_AddArrayToObject(st, "languages"), *avail = cJSON_AddArrayToObject(st, "available");
  for (size_t i = 0; i < n; i++) {
    cJSON_AddItemToArray(all, cJSON_CreateString(langs[i].name));
    _cleanup_free_ char *image = mcp_llmsb_image(c->cfg, &langs[i]);
    if (image)
      cJSON_AddItemToArray(avail, cJSON_CreateString(langs[i].name));
  }
  _cleanup_free_ char *text = names_text(langs, n);
  return mcp_result(text, st, false);
}

static cJSON *t_details(struct mcp_call *c) {
  const char *name = mcp_arg_str(c, "language");
  const struct mcp_llmsb_lang *l = mcp_llmsb_lang_named(name);
  if (l == NULL) {
    cJSON *o = cJSON_CreateObject();
    _cleanup_free_ char *msg = xasprintf("Unsupported language: %.64s", name);
    cJSON_AddStringToObject(o, "error", msg);
    _cleanup_free_ char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return mcp_result(text, NULL, true);
  }
  cJSON *d = mcp_llmsb_details(c->cfg, l);
  _cleanup_free_ char *text = cJSON_Print(d);
  return mcp_result(text, d, false);
}

cJSON *mcp_llmsb_call(struct mcp_call *c) {
  if (strcmp(c->tool, "execute_code") == 0)
    return t_execute_code(c);
  if (strcmp(c->tool, "get_supported_languages") == 0)
    return t_supported(c);
  if (strcmp(c->tool, "get_language_details") == 0)
    return t_details(c);
  return NULL;
}
