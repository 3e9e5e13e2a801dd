/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "recipe.h"

#include <ctype.h>
#include <string.h>

#include "util.h"

static const char *const kind_names[] = {
    [RECIPE_APT] = "apt",
    [RECIPE_PIP] = "pip",
    [RECIPE_RUN] = "run",
    [RECIPE_ENV] = "env",
};

const char *recipe_kind_name(enum recipe_kind kind) {
  return (size_t)kind < ARRAY_SIZE(kind_names) ? kind_names[kind] : "?";
}

void recipe_clear(struct recipe *r) {
  if (r == NULL)
    return;
  for (size_t i = 0; i < r->n_steps; i++)
    cleanup_strvp(&r->steps[i].args);
  free(r->steps);
  cleanup_strvp(&r->allow);
  memset(r, 0, sizeof(*r));
}

bool recipe_uses_apt(const struct recipe *r) {
  for (size_t i = 0; i < r->n_steps; i++)
    if (r->steps[i].kind == RECIPE_APT)
      return true;
  return false;
}

bool recipe_needs_network(const struct recipe *r) {
  if (r->n_allow > 0)
    return true;
  for (size_t i = 0; i < r->n_steps; i++)
    if (r->steps[i].kind == RECIPE_APT || r->steps[i].kind == RECIPE_PIP)
      return true;
  return false;
}

static void strv_push(char ***v, size_t *n, const char *s) {
  *v = xrealloc(*v, (*n + 2) * sizeof(**v));
  (*v)[(*n)++] = xstrdup(s);
  (*v)[*n] = NULL;
}

/* Debian package names (policy 5.6.7), optionally with =VERSION or /SUITE. */
static bool valid_apt_package(const char *s) {
  if (!isalnum((unsigned char)s[0]) || isupper((unsigned char)s[0]))
    return false;
  for (const char *p = s; *p; p++)
    if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || strchr("+-.=:~/", *p)))
      return false;
  return true;
}

/* A requirement specifier without options or URLs: "numpy", "requests[socks]>=2,<3". */
static bool valid_pip_package(const char *s) {
  if (!isalnum((unsigned char)s[0]))
    return false;
  for (const char *p = s; *p; p++)
    if (!(isalnum((unsigned char)*p) || strchr("._-[],<>=!~*", *p)))
      return false;
  return true;
}

static bool valid_env(const char *s) {
  if (!(isalpha((unsigned char)s[0]) || s[0] == '_'))
    return false;
  const char *p = s;
  while (isalnum((unsigned char)*p) || *p == '_')
    p++;
  return *p == '=';
}

static bool valid_host(const char *s) {
  if (*s == '\0' || *s == '-' || *s == '.')
    return false;
  for (const char *p = s; *p; p++)
    if (!(isalnum((unsigned char)*p) || strchr(".-:*[]", *p)))
      return false;
  return true;
}

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t')
    s++;
  size_t len = strlen(s);
  while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r'))
    s[--len] = '\0';
  return s;
}

/* Validate and append the whitespace-separated words of `rest` as one step. */
static int add_words(struct recipe_step *step, char *rest, bool (*valid)(const char *), const char *what,
                     const char *origin, int lineno, hutch_error_t *err) {
  char *save = NULL;
  for (char *w = strtok_r(rest, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
    if (!valid(w))
      return hutch_error_set(err, EINVAL, "%s:%d: \"%s\" is not %s", origin, lineno, w, what);
    strv_push(&step->args, &step->n_args, w);
  }
  if (step->n_args == 0)
    return hutch_error_set(err, EINVAL, "%s:%d: `%s` needs at least one %s", origin, lineno,
                           recipe_kind_name(step->kind), what);
  return 0;
}

int recipe_parse(const char *text, const char *origin, struct recipe *out, hutch_error_t *err) {
  struct recipe r = {0};
  r.allow = xcalloc(1, sizeof(*r.allow));
  _cleanup_free_ char *copy = xstrdup(text);
  char *line = copy;
  int lineno = 0;
  int ret = 0;
  while (line && ret == 0) {
    char *next = strchr(line, '\n');
    if (next)
      *next++ = '\0';
    int start = ++lineno;
    /* A trailing backslash joins the next line (for long `run` commands),
     * in a buffer that grows by doubling: a recipe of many short continued
     * lines costs its length, not its length squared. */
    size_t len = strlen(line), cap = len + 1;
    _cleanup_free_ char *joined = xmalloc(cap);
    memcpy(joined, line, cap);
    for (;;) {
      while (len > 0 && (joined[len - 1] == '\r' || joined[len - 1] == ' ' || joined[len - 1] == '\t'))
        joined[--len] = '\0';
      if (len == 0 || joined[len - 1] != '\\' || next == NULL)
        break;
      char *after = strchr(next, '\n');
      if (after)
        *after++ = '\0';
      size_t more = strlen(next);
      if (len + more + 1 > cap) {
        cap = (len + more + 1) * 2;
        joined = xrealloc(joined, cap);
      }
      joined[len - 1] = '\n';
      memcpy(joined + len, next, more + 1);
      len += more;
      next = after;
      lineno++;
    }
    line = next;
    char *p = trim(joined);
    if (*p == '\0' || *p == '#')
      continue;
    char *keyword = p;
    while (*p && *p != ' ' && *p != '\t')
      p++;
    if (*p)
      *p++ = '\0';
    p = trim(p);
    if (strcmp(keyword, "allow") == 0) {
      char *save = NULL;
      size_t before = r.n_allow;
      for (char *w = strtok_r(p, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        if (!valid_host(w)) {
          ret = hutch_error_set(err, EINVAL, "%s:%d: \"%s\" is not HOST or HOST:PORT", origin, start, w);
          break;
        }
        if (r.n_allow == RECIPE_MAX_ALLOW) {
          ret = hutch_error_set(err, E2BIG, "%s:%d: more than %d `allow` hosts", origin, start, RECIPE_MAX_ALLOW);
          break;
        }
        strv_push(&r.allow, &r.n_allow, w);
      }
      if (ret == 0 && r.n_allow == before)
        ret = hutch_error_set(err, EINVAL, "%s:%d: `allow` needs at least one HOST", origin, start);
      continue;
    }
    if (r.n_steps == RECIPE_MAX_STEPS) {
      ret = hutch_error_set(err, E2BIG, "%s:%d: more than %d steps", origin, start, RECIPE_MAX_STEPS);
      break;
    }
    struct recipe_step step = {.line = start};
    if (strcmp(keyword, "apt") == 0) {
      step.kind = RECIPE_APT;
      ret = add_words(&step, p, valid_apt_package, "a Debian package name", origin, start, err);
    } else if (strcmp(keyword, "pip") == 0) {
      step.kind = RECIPE_PIP;
      ret = add_words(&step, p, valid_pip_package, "a Python requirement (NAME, NAME[extra], NAME>=VERSION)", origin,
                      start, err);
    } else if (strcmp(keyword, "run") == 0) {
      step.kind = RECIPE_RUN;
      if (*p == '\0')
        ret = hutch_error_set(err, EINVAL, "%s:%d: `run` needs a shell command", origin, start);
      else
        strv_push(&step.args, &step.n_args, p);
    } else if (strcmp(keyword, "env") == 0) {
      step.kind = RECIPE_ENV;
      if (!valid_env(p) || strchr(p, '\n'))
        ret = hutch_error_set(err, EINVAL, "%s:%d: `env` takes one NAME=VALUE", origin, start);
      else
        strv_push(&step.args, &step.n_args, p);
    } else {
      ret = hutch_error_set(err, EINVAL, "%s:%d: unknown step \"%s\" (apt, pip, run, env, allow)", origin, start,
                            keyword);
    }
    if (ret < 0) {
      cleanup_strvp(&step.args);
      break;
    }
    r.steps = xrealloc(r.steps, (r.n_steps + 1) * sizeof(*r.steps));
    r.steps[r.n_steps++] = step;
  }
  if (ret == 0 && r.n_steps == 0)
    ret = hutch_error_set(err, EINVAL, "%s: the recipe has no steps", origin);
  if (ret < 0) {
    hutch_error_hint(err, "the format is described in hutch-recipe(5)");
    recipe_clear(&r);
    return -1;
  }
  *out = r;
  return 0;
}

static char *join(char **words) {
  char *s = xstrdup("");
  for (char **w = words; w && *w; w++) {
    char *t = xasprintf("%s%s%s", s, *s ? " " : "", *w);
    free(s);
    s = t;
  }
  return s;
}

/* Package words are validated to hold no shell metacharacters but '<', '>',
 * '[', ']', '*', '!' and '~' (pip specifiers): quote each one. */
static char *join_quoted(char **words) {
  char *s = xstrdup("");
  for (char **w = words; w && *w; w++) {
    char *t = xasprintf("%s%s'%s'", s, *s ? " " : "", *w);
    free(s);
    s = t;
  }
  return s;
}

char *recipe_step_script(const struct recipe_step *step, bool first_apt) {
  _cleanup_free_ char *words = join_quoted(step->args);
  switch (step->kind) {
  case RECIPE_APT:
    /* The sandbox may map one uid only: apt must not switch to _apt to
     * download, and the download directories an image gives to _apt are
     * replaced by root's own (an empty directory can be removed whoever
     * owns it; root may lack the ids or capabilities to use _apt's).  No
     * recommends: the image gets what the recipe names. */
    return xasprintf("%sapt-get -o APT::Sandbox::User=root install -y --no-install-recommends %s && apt-get clean",
                     first_apt ? "for d in /var/lib/apt/lists/partial /var/cache/apt/archives/partial; do "
                                 "if [ -d \"$d\" ] && [ ! -O \"$d\" ]; then rmdir \"$d\" && mkdir -m 0700 \"$d\"; "
                                 "fi; done; apt-get -o APT::Sandbox::User=root update && "
                               : "",
                     words);
  case RECIPE_PIP:
    return xasprintf("python3 -m pip install --no-cache-dir %s", words);
  case RECIPE_RUN:
    return xstrdup(step->args[0]);
  case RECIPE_ENV:
    return NULL;
  }
  return NULL;
}

char *recipe_step_describe(const struct recipe_step *step) {
  _cleanup_free_ char *words = join(step->args);
  return xasprintf("%s %s", recipe_kind_name(step->kind), words);
}
