/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "prompt_config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "yaml_map.h"

static int fill(const struct yaml_map *m, const char *what, struct prompt_config *out, hutch_error_t *err) {
  memset(out, 0, sizeof(*out));
  const char *sys = yaml_map_get(m, "system_prompt");
  const char *inst = yaml_map_get(m, "instance_prompt");
  if (sys == NULL || inst == NULL) {
    hutch_error_set(err, EINVAL, "prompt config %s: %s is missing", what, sys ? "instance_prompt" : "system_prompt");
    return hutch_error_hint(err, "a prompt config has system_prompt and instance_prompt (see hutch-prompt(5))");
  }
  const char *dirs[3] = {yaml_map_get(m, "working_dir"), yaml_map_get(m, "input_dir"), yaml_map_get(m, "output_dir")};
  const char *defaults[3] = {"/testbed", "/testbed/input", "/testbed/output"};
  const char *names[3] = {"working_dir", "input_dir", "output_dir"};
  for (int i = 0; i < 3; i++) {
    if (dirs[i] == NULL)
      dirs[i] = defaults[i];
    if (dirs[i][0] != '/' || strstr(dirs[i], "/../") != NULL || strlen(dirs[i]) > 1024)
      return hutch_error_set(err, EINVAL, "prompt config %s: %s must be an absolute path inside the sandbox, got '%s'",
                             what, names[i], dirs[i]);
  }
  out->path = xstrdup(what);
  out->system_prompt = xstrdup(sys);
  out->instance_prompt = xstrdup(inst);
  out->working_dir = xstrdup(dirs[0]);
  out->input_dir = xstrdup(dirs[1]);
  out->output_dir = xstrdup(dirs[2]);
  out->working_dir_text = xstrdup(dirs[0]);
  out->input_dir_text = xstrdup(dirs[1]);
  out->output_dir_text = xstrdup(dirs[2]);
  /* "/testbed/" and "/testbed" are the same directory. */
  char **all[3] = {&out->working_dir, &out->input_dir, &out->output_dir};
  for (int i = 0; i < 3; i++) {
    size_t l = strlen(*all[i]);
    while (l > 1 && (*all[i])[l - 1] == '/')
      (*all[i])[--l] = '\0';
  }
  return 0;
}

int prompt_config_parse(const char *text, size_t len, const char *what, struct prompt_config *out, hutch_error_t *err) {
  struct yaml_map m;
  if (yaml_map_parse(text, len, what, &m, err) < 0)
    return hutch_error_wrap(err, "prompt config");
  int r = fill(&m, what, out, err);
  yaml_map_clear(&m);
  return r;
}

int prompt_config_load(const char *path, struct prompt_config *out, hutch_error_t *err) {
  _cleanup_free_ char *fallback = NULL;
  if (path == NULL) {
    const char *env = getenv("HUTCH_PROMPT_CONFIG");
    path = env && *env ? env : (fallback = xasprintf("%s/prompts/default.yaml", hutch_data_dir()));
  }
  struct yaml_map m;
  if (yaml_map_load(path, &m, err) < 0) {
    hutch_error_wrap(err, "prompt config");
    return hutch_error_hint(err, "give one with --prompt-config FILE (see hutch-prompt(5))");
  }
  int r = fill(&m, path, out, err);
  yaml_map_clear(&m);
  return r;
}

void prompt_config_clear(struct prompt_config *pc) {
  free(pc->path);
  free(pc->system_prompt);
  free(pc->instance_prompt);
  free(pc->working_dir);
  free(pc->input_dir);
  free(pc->output_dir);
  free(pc->working_dir_text);
  free(pc->input_dir_text);
  free(pc->output_dir_text);
  memset(pc, 0, sizeof(*pc));
}

struct buf {
  char *s;
  size_t len, cap;
};

static void buf_add(struct buf *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    b->cap = (b->len + n + 1) * 2;
    b->s = xrealloc(b->s, b->cap);
  }
  memcpy(b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = '\0';
}

static char *replace_all(const char *text, const char *what, const char *with) {
  struct buf b = {0};
  buf_add(&b, "", 0);
  size_t n = strlen(what);
  for (const char *p = text;;) {
    const char *hit = strstr(p, what);
    if (hit == NULL) {
      buf_add(&b, p, strlen(p));
      return b.s;
    }
    buf_add(&b, p, (size_t)(hit - p));
    buf_add(&b, with, strlen(with));
    p = hit + n;
  }
}

char *prompt_expand(const char *tmpl, const struct prompt_config *pc, const char *problem) {
  if (problem != NULL && tmpl[0] == '\0')
    return xstrdup(problem);
  /* cli.py's str.replace chain, before any brace is looked at. */
  _cleanup_free_ char *a = replace_all(tmpl, "{input_dir}", pc->input_dir_text);
  _cleanup_free_ char *b2 = replace_all(a, "{output_dir}", pc->output_dir_text);
  _cleanup_free_ char *text = replace_all(b2, "{working_dir}", pc->working_dir_text);
  const struct {
    const char *name;
    const char *value;
  } vars[] = {
      {"{problem_statement}", problem},
      {"{command_docs}", ""},
      {"{demo}", ""},
  };
  /* agent.py's str.format, one pass: a value is never looked into. */
  struct buf b = {0};
  buf_add(&b, "", 0);
  for (const char *p = text; *p;) {
    if ((p[0] == '{' && p[1] == '{') || (p[0] == '}' && p[1] == '}')) {
      buf_add(&b, p, 1);
      p += 2;
      continue;
    }
    if (p[0] == '{') {
      bool hit = false;
      for (size_t i = 0; i < ARRAY_SIZE(vars); i++) {
        size_t n = strlen(vars[i].name);
        if (vars[i].value != NULL && strncmp(p, vars[i].name, n) == 0) {
          buf_add(&b, vars[i].value, strlen(vars[i].value));
          p += n;
          hit = true;
          break;
        }
      }
      if (hit)
        continue;
    }
    buf_add(&b, p, 1);
    p++;
  }
  return b.s;
}
