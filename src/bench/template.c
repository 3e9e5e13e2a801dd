/* SPDX-License-Identifier: Apache-2.0
 *
 * The Mustache subset of report.html's templates (template.h). */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "template.h"
#include "util.h"

#define NEST_MAX 32
#define KEY_MAX 64

struct render {
  const cJSON *partials;
  char *out;
  size_t len, cap, max;
  const cJSON *stack[NEST_MAX + 1];
  int depth; /* contexts on the stack */
  int nest;  /* sections and partials entered */
  hutch_error_t *err;
};

void tmpl_escape(char **out, size_t *len, size_t *cap, const char *text, size_t n) {
  size_t from = 0;
  for (size_t i = 0; i < n; i++) {
    const char *rep = NULL;
    switch (text[i]) {
    case '&':
      rep = "&amp;";
      break;
    case '<':
      rep = "&lt;";
      break;
    case '>':
      rep = "&gt;";
      break;
    case '"':
      rep = "&quot;";
      break;
    case '\'':
      rep = "&#39;";
      break;
    default:
      continue;
    }
    text_append(out, len, cap, text + from, i - from);
    text_append(out, len, cap, rep, strlen(rep));
    from = i + 1;
  }
  text_append(out, len, cap, text + from, n - from);
}

static int fail(struct render *r, const char *name, const char *tmpl, const char *at, const char *what) {
  return hutch_error_set(r->err, EINVAL, "report/%s: at offset %zu: %s", name, (size_t)(at - tmpl), what);
}

static int emit(struct render *r, const char *text, size_t n, bool escape) {
  size_t before = r->len;
  if (escape)
    tmpl_escape(&r->out, &r->len, &r->cap, text, n);
  else
    text_append(&r->out, &r->len, &r->cap, text, n);
  if (r->len > r->max) {
    r->len = before;
    return hutch_error_set(r->err, EFBIG, "report.html would be larger than %zu bytes", r->max);
  }
  return 0;
}

/* A name (a, a.b, .) from the innermost context outwards. */
static const cJSON *lookup(const struct render *r, const char *key) {
  if (strcmp(key, ".") == 0)
    return r->depth ? r->stack[r->depth - 1] : NULL;
  char part[KEY_MAX + 1];
  const char *dot = strchr(key, '.');
  size_t n = dot ? (size_t)(dot - key) : strlen(key);
  memcpy(part, key, n);
  part[n] = '\0';
  const cJSON *v = NULL;
  for (int i = r->depth - 1; i >= 0 && v == NULL; i--)
    if (cJSON_IsObject(r->stack[i]))
      v = cJSON_GetObjectItemCaseSensitive(r->stack[i], part);
  while (v && dot) {
    key = dot + 1;
    dot = strchr(key, '.');
    n = dot ? (size_t)(dot - key) : strlen(key);
    memcpy(part, key, n);
    part[n] = '\0';
    v = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, part) : NULL;
  }
  return v;
}

static bool truthy(const cJSON *v) {
  if (cJSON_IsArray(v))
    return cJSON_GetArraySize(v) > 0;
  if (cJSON_IsString(v))
    return v->valuestring[0] != '\0';
  if (cJSON_IsNumber(v))
    return v->valuedouble != 0;
  return cJSON_IsObject(v) || cJSON_IsTrue(v);
}

static int value(struct render *r, const cJSON *v) {
  if (cJSON_IsString(v))
    return emit(r, v->valuestring, strlen(v->valuestring), true);
  if (cJSON_IsNumber(v)) {
    char buf[64];
    double d = v->valuedouble;
    if (d == (double)(long long)d && d > -1e15 && d < 1e15)
      snprintf(buf, sizeof(buf), "%lld", (long long)d);
    else
      snprintf(buf, sizeof(buf), "%.15g", d);
    return emit(r, buf, strlen(buf), false);
  }
  if (cJSON_IsTrue(v))
    return emit(r, "true", 4, false);
  return 0;
}

/* One tag: its kind, its key, and where the text after it begins. */
struct tag {
  char kind; /* '#', '^', '/', '>', '!' or 'v' */
  char key[KEY_MAX + 1];
  const char *start, *after;
};

/* The next tag at or after s, before end: 1 with *t, 0 for none, -1 for a
 * malformed one. */
static int next_tag(struct render *r, const char *name, const char *tmpl, const char *s, const char *end,
                    struct tag *t) {
  const char *open = memmem(s, (size_t)(end - s), "{{", 2);
  if (open == NULL)
    return 0;
  const char *close = memmem(open + 2, (size_t)(end - open - 2), "}}", 2);
  if (close == NULL)
    return fail(r, name, tmpl, open, "{{ without }}");
  const char *k = open + 2;
  t->kind = strchr("#^/>!", *k) && *k ? *k++ : 'v';
  t->start = open;
  t->after = close + 2;
  if (t->kind == '!')
    return 1;
  while (k < close && *k == ' ')
    k++;
  const char *ke = close;
  while (ke > k && ke[-1] == ' ')
    ke--;
  size_t n = (size_t)(ke - k);
  if (n == 0 || n > KEY_MAX)
    return fail(r, name, tmpl, open, "a tag's name is empty or too long");
  for (size_t i = 0; i < n; i++)
    if (!(k[i] == '.' || k[i] == '_' || k[i] == '-' || (k[i] >= 'a' && k[i] <= 'z') || (k[i] >= 'A' && k[i] <= 'Z') ||
          (k[i] >= '0' && k[i] <= '9')))
      return fail(r, name, tmpl, open, "a tag's name holds a character other than letters, digits, '.', '_', '-'");
  memcpy(t->key, k, n);
  t->key[n] = '\0';
  return 1;
}

static int render(struct render *r, const char *name, const char *tmpl, const char *s, const char *end);

static int section(struct render *r, const char *name, const char *tmpl, const struct tag *t, const char *inner,
                   const char *inner_end) {
  const cJSON *v = lookup(r, t->key);
  if (r->nest >= NEST_MAX)
    return fail(r, name, tmpl, t->start, "sections and partials nested too deep");
  r->nest++;
  int rc = 0;
  if (t->kind == '^') {
    if (!truthy(v))
      rc = render(r, name, tmpl, inner, inner_end);
  } else if (cJSON_IsArray(v)) {
    const cJSON *e;
    cJSON_ArrayForEach(e, v) {
      r->stack[r->depth++] = e;
      rc = render(r, name, tmpl, inner, inner_end);
      r->depth--;
      if (rc < 0)
        break;
    }
  } else if (truthy(v)) {
    bool push = !cJSON_IsTrue(v);
    if (push)
      r->stack[r->depth++] = v;
    rc = render(r, name, tmpl, inner, inner_end);
    if (push)
      r->depth--;
  }
  r->nest--;
  return rc;
}

static int partial(struct render *r, const char *name, const char *tmpl, const struct tag *t) {
  const cJSON *p = cJSON_GetObjectItemCaseSensitive(r->partials, t->key);
  if (!cJSON_IsString(p))
    return fail(r, name, tmpl, t->start, "a partial that is not among the report's files");
  if (r->nest >= NEST_MAX)
    return fail(r, name, tmpl, t->start, "sections and partials nested too deep");
  r->nest++;
  const char *text = p->valuestring;
  int rc = render(r, t->key, text, text, text + strlen(text));
  r->nest--;
  return rc;
}

static int render(struct render *r, const char *name, const char *tmpl, const char *s, const char *end) {
  struct tag t;
  int found;
  while ((found = next_tag(r, name, tmpl, s, end, &t)) > 0) {
    if (emit(r, s, (size_t)(t.start - s), false) < 0)
      return -1;
    s = t.after;
    int rc = 0;
    if (t.kind == 'v') {
      rc = value(r, lookup(r, t.key));
    } else if (t.kind == '>') {
      rc = partial(r, name, tmpl, &t);
    } else if (t.kind == '/') {
      rc = fail(r, name, tmpl, t.start, "a section's end without its start");
    } else if (t.kind == '#' || t.kind == '^') {
      /* Its end: the {{/key}} at the same depth of sections of that key. */
      int depth = 1;
      struct tag u;
      const char *p = s;
      while (depth > 0 && (found = next_tag(r, name, tmpl, p, end, &u)) > 0) {
        if ((u.kind == '#' || u.kind == '^') && strcmp(u.key, t.key) == 0)
          depth++;
        else if (u.kind == '/' && strcmp(u.key, t.key) == 0)
          depth--;
        p = u.after;
      }
      if (found < 0)
        return -1;
      if (depth > 0)
        return fail(r, name, tmpl, t.start, "a section without its end");
      rc = section(r, name, tmpl, &t, s, u.start);
      s = u.after;
    }
    if (rc < 0)
      return -1;
  }
  if (found < 0)
    return -1;
  return emit(r, s, (size_t)(end - s), false);
}

char *tmpl_render(const char *name, const char *tmpl, const cJSON *view, const cJSON *partials, size_t max, size_t *len,
                  hutch_error_t *err) {
  struct render r = {.partials = partials, .max = max, .err = err};
  r.stack[r.depth++] = view;
  if (render(&r, name, tmpl, tmpl, tmpl + strlen(tmpl)) < 0) {
    free(r.out);
    return NULL;
  }
  text_append(&r.out, &r.len, &r.cap, "", 0);
  *len = r.len;
  return r.out;
}
