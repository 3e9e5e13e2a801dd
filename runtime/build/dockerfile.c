/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "dockerfile.h"

#include <cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "hutch.h"
#include "util.h"

static const char *const kind_names[] = {
    [DF_FROM] = "FROM",     [DF_RUN] = "RUN",         [DF_CMD] = "CMD",   [DF_ENTRYPOINT] = "ENTRYPOINT",
    [DF_SHELL] = "SHELL",   [DF_ENV] = "ENV",         [DF_ARG] = "ARG",   [DF_LABEL] = "LABEL",
    [DF_EXPOSE] = "EXPOSE", [DF_WORKDIR] = "WORKDIR", [DF_USER] = "USER", [DF_COPY] = "COPY",
    [DF_ADD] = "ADD",
};

const char *df_kind_name(enum df_kind kind) {
  return (size_t)kind < ARRAY_SIZE(kind_names) ? kind_names[kind] : "?";
}

/* Instructions Docker knows that this subset refuses, and why. */
static const struct {
  const char *name, *why;
} refused[] = {
    {"HEALTHCHECK", "health checks are not run by hutch"},
    {"ONBUILD", "triggers for later builds are not supported"},
    {"STOPSIGNAL", "not supported"},
    {"VOLUME", "volumes are not supported (use hutch exec --bind)"},
    {"MAINTAINER", "deprecated; use LABEL maintainer=..."},
};

void dockerfile_clear(struct dockerfile *df) {
  if (df == NULL)
    return;
  for (size_t i = 0; i < df->n; i++) {
    struct df_instr *in = &df->instrs[i];
    free(in->text);
    free(in->rest);
    cleanup_strvp(&in->argv);
    free(in->chown);
    free(in->from);
    free(in->chmod);
    free(in->platform);
    free(in->checksum);
  }
  free(df->instrs);
  memset(df, 0, sizeof(*df));
}

const char *df_env_get(char *const *env, const char *name) {
  const char *found = NULL;
  size_t len = strlen(name);
  for (char *const *e = env; e && *e; e++)
    if (strncmp(*e, name, len) == 0 && (*e)[len] == '=')
      found = *e + len + 1;
  return found;
}

/* ---- words and substitution ----------------------------------------------- */

struct buf {
  char *s;
  size_t len, cap;
  bool overflow;
};

static void buf_add(struct buf *b, const char *s, size_t n) {
  if (b->len + n >= DF_MAX_EXPANDED) {
    b->overflow = true;
    return;
  }
  if (b->len + n + 1 > b->cap) {
    b->cap = (b->len + n + 1) * 2;
    b->s = xrealloc(b->s, b->cap);
  }
  memcpy(b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = '\0';
}

static void buf_addc(struct buf *b, char c) {
  buf_add(b, &c, 1);
}

static bool name_start(char c) {
  return isalpha((unsigned char)c) || c == '_';
}
static bool name_char(char c) {
  return isalnum((unsigned char)c) || c == '_';
}

static int expand_into(struct buf *b, const char *s, size_t n, char escape, char *const *env, int depth,
                       hutch_error_t *err);

/* At p (just after '$'): a substitution, appended to b; *used gets how many
 * bytes it took.  A '$' not followed by a name is literal. */
static int substitute(struct buf *b, const char *p, const char *end, char escape, char *const *env, int depth,
                      size_t *used, hutch_error_t *err) {
  if (p < end && name_start(*p)) {
    const char *q = p;
    while (q < end && name_char(*q))
      q++;
    _cleanup_free_ char *name = xstrndup(p, (size_t)(q - p));
    const char *v = df_env_get(env, name);
    if (v)
      buf_add(b, v, strlen(v));
    *used = (size_t)(q - p);
    return 0;
  }
  if (p >= end || *p != '{') {
    buf_addc(b, '$');
    *used = 0;
    return 0;
  }
  const char *q = p + 1;
  if (q >= end || !name_start(*q))
    return hutch_error_set(err, EINVAL, "bad substitution \"${%.*s\"", (int)(end - q > 20 ? 20 : end - q), q);
  const char *name_end = q;
  while (name_end < end && name_char(*name_end))
    name_end++;
  /* The closing brace, nested ${...} counted. */
  int level = 1;
  const char *close = name_end;
  for (; close < end; close++) {
    if (*close == escape && close + 1 < end) {
      close++;
      continue;
    }
    if (*close == '{' && close > p && close[-1] == '$')
      level++;
    else if (*close == '}' && --level == 0)
      break;
  }
  if (close >= end)
    return hutch_error_set(err, EINVAL, "unterminated substitution \"${%.*s\"", (int)(name_end - q), q);
  _cleanup_free_ char *name = xstrndup(q, (size_t)(name_end - q));
  const char *v = df_env_get(env, name);
  const char *op = name_end;
  if (op == close) {
    if (v)
      buf_add(b, v, strlen(v));
  } else {
    bool colon = *op == ':';
    if (colon)
      op++;
    if (op >= close || (*op != '-' && *op != '+'))
      return hutch_error_set(err, EINVAL,
                             "unsupported substitution \"${%.*s}\" (only ${VAR}, ${VAR:-word} and "
                             "${VAR:+word})",
                             (int)(close - q), q);
    /* With ':' an empty value counts as unset, as in the shell. */
    bool set = v != NULL && (!colon || v[0] != '\0');
    const char *word = op + 1;
    if (*op == '-') {
      if (set)
        buf_add(b, v, strlen(v));
      else if (expand_into(b, word, (size_t)(close - word), escape, env, depth + 1, err) < 0)
        return -1;
    } else if (set && expand_into(b, word, (size_t)(close - word), escape, env, depth + 1, err) < 0) {
      return -1;
    }
  }
  *used = (size_t)(close + 1 - p);
  return 0;
}

/* The word of a ${VAR:-word}: substituted, quotes kept as they are. */
static int expand_into(struct buf *b, const char *s, size_t n, char escape, char *const *env, int depth,
                       hutch_error_t *err) {
  if (depth > 8)
    return hutch_error_set(err, EINVAL, "substitutions nested too deep");
  const char *end = s + n;
  for (const char *p = s; p < end; p++) {
    if (*p == escape && p + 1 < end) {
      buf_addc(b, *++p);
    } else if (*p == '$') {
      size_t used;
      if (substitute(b, p + 1, end, escape, env, depth, &used, err) < 0)
        return -1;
      p += used;
    } else {
      buf_addc(b, *p);
    }
  }
  return 0;
}

static void push_word(char ***v, size_t *n, struct buf *w) {
  *v = xrealloc(*v, (*n + 2) * sizeof(**v));
  (*v)[(*n)++] = w->s ? w->s : xstrdup("");
  (*v)[*n] = NULL;
  w->s = NULL;
  w->len = w->cap = 0;
}

char **df_words(const char *s, char escape, char *const *env, bool expand, bool one_word, hutch_error_t *err) {
  char **words = xcalloc(1, sizeof(*words));
  size_t n = 0;
  struct buf w = {0};
  bool in_word = false;
  char quote = 0;
  const char *end = s + strlen(s);
  for (const char *p = s; p < end; p++) {
    char c = *p;
    if (quote == '\'') {
      if (c == '\'')
        quote = 0;
      else
        buf_addc(&w, c);
      continue;
    }
    if (c == escape && p + 1 < end) {
      /* Inside double quotes only the quote, the escape and '$' are escaped. */
      if (quote == '"' && p[1] != '"' && p[1] != escape && p[1] != '$')
        buf_addc(&w, c);
      buf_addc(&w, *++p);
      in_word = true;
    } else if (c == '\'' && quote == 0) {
      quote = '\'';
      in_word = true;
    } else if (c == '"') {
      quote = quote ? 0 : '"';
      in_word = true;
    } else if (c == '$' && expand) {
      /* An unquoted value is split at its blanks, as Docker splits it. */
      struct buf v = {0};
      size_t used;
      if (substitute(&v, p + 1, end, escape, env, 0, &used, err) < 0) {
        free(v.s);
        goto fail;
      }
      p += used;
      for (size_t i = 0; i < v.len; i++) {
        if (!one_word && quote == 0 && (v.s[i] == ' ' || v.s[i] == '\t')) {
          if (in_word)
            push_word(&words, &n, &w);
          in_word = false;
        } else {
          buf_addc(&w, v.s[i]);
          in_word = true;
        }
      }
      w.overflow |= v.overflow;
      free(v.s);
    } else if (!one_word && quote == 0 && (c == ' ' || c == '\t')) {
      if (in_word)
        push_word(&words, &n, &w);
      in_word = false;
    } else {
      buf_addc(&w, c);
      in_word = true;
    }
    if (w.overflow) {
      hutch_error_set(err, E2BIG, "more than %d bytes after substitution", DF_MAX_EXPANDED);
      goto fail;
    }
    if (n >= DF_MAX_WORDS) {
      hutch_error_set(err, E2BIG, "more than %d words", DF_MAX_WORDS);
      goto fail;
    }
  }
  if (quote) {
    hutch_error_set(err, EINVAL, "unterminated %s quote", quote == '"' ? "double" : "single");
    goto fail;
  }
  if (in_word || (one_word && n == 0))
    push_word(&words, &n, &w);
  return words;
fail:
  free(w.s);
  cleanup_strvp(&words);
  return NULL;
}

char **df_pairs(const char *s, char escape, char *const *env, hutch_error_t *err) {
  s += strspn(s, " \t");
  size_t key_len = strcspn(s, " \t=");
  if (key_len == 0)
    return hutch_error_set(err, EINVAL, "a name is needed"), NULL;
  if (s[key_len] != '=') {
    /* Legacy "K V W": the value is all the rest, one word. */
    _cleanup_free_ char *key = xstrndup(s, key_len);
    const char *rest = s + key_len + strspn(s + key_len, " \t");
    _cleanup_strv_ char **v = df_words(rest, escape, env, true, true, err);
    if (v == NULL)
      return NULL;
    char **out = xcalloc(2, sizeof(*out));
    out[0] = xasprintf("%s=%s", key, v[0]);
    return out;
  }
  char **words = df_words(s, escape, env, true, false, err);
  for (char **w = words; w && *w; w++) {
    const char *eq = strchr(*w, '=');
    if (eq == NULL || eq == *w) {
      hutch_error_set(err, EINVAL, "\"%s\" is not NAME=VALUE", *w);
      cleanup_strvp(&words);
      return NULL;
    }
  }
  return words;
}

/* ---- instructions ----------------------------------------------------------- */

/* The flags an instruction accepts. */
static bool flag_known(enum df_kind kind, const char *name) {
  switch (kind) {
  case DF_FROM:
    return strcmp(name, "platform") == 0;
  case DF_COPY:
    return strcmp(name, "chown") == 0 || strcmp(name, "from") == 0 || strcmp(name, "chmod") == 0;
  case DF_ADD:
    return strcmp(name, "chown") == 0 || strcmp(name, "chmod") == 0 || strcmp(name, "checksum") == 0;
  default:
    return false;
  }
}

static int take_flags(struct df_instr *in, const char **rest, hutch_error_t *err) {
  const char *p = *rest;
  while (p[0] == '-' && p[1] == '-') {
    size_t len = strcspn(p, " \t");
    _cleanup_free_ char *flag = xstrndup(p + 2, len - 2);
    char *eq = strchr(flag, '=');
    if (eq)
      *eq++ = '\0';
    if (!flag_known(in->kind, flag))
      return hutch_error_set(err, ENOTSUP, "%s --%s is not supported", df_kind_name(in->kind), flag);
    if (eq == NULL || *eq == '\0')
      return hutch_error_set(err, EINVAL, "%s --%s needs a value (--%s=VALUE)", df_kind_name(in->kind), flag, flag);
    char **slot = strcmp(flag, "chown") == 0      ? &in->chown
                  : strcmp(flag, "from") == 0     ? &in->from
                  : strcmp(flag, "chmod") == 0    ? &in->chmod
                  : strcmp(flag, "checksum") == 0 ? &in->checksum
                                                  : &in->platform;
    if (*slot)
      return hutch_error_set(err, EINVAL, "%s --%s given twice", df_kind_name(in->kind), flag);
    *slot = xstrdup(eq);
    p += len;
    p += strspn(p, " \t");
  }
  *rest = p;
  return 0;
}

/* RUN/CMD/ENTRYPOINT/SHELL ["a", "b"]: a JSON array of strings; anything
 * else is the shell form, as Docker reads it. */
static void take_exec_form(struct df_instr *in) {
  if (in->rest[0] != '[')
    return;
  cJSON *j = cJSON_Parse(in->rest);
  if (!cJSON_IsArray(j) || cJSON_GetArraySize(j) > DF_MAX_WORDS) {
    cJSON_Delete(j);
    return;
  }
  char **argv = xcalloc((size_t)cJSON_GetArraySize(j) + 1, sizeof(*argv));
  size_t n = 0;
  const cJSON *item;
  cJSON_ArrayForEach(item, j) {
    if (!cJSON_IsString(item)) {
      cleanup_strvp(&argv);
      cJSON_Delete(j);
      return;
    }
    argv[n++] = xstrdup(item->valuestring);
  }
  cJSON_Delete(j);
  in->argv = argv;
  in->exec_form = true;
}

static int check_args(struct df_instr *in, char escape, hutch_error_t *err) {
  if (in->rest[0] == '\0' && !(in->kind == DF_CMD || in->kind == DF_ENTRYPOINT))
    return hutch_error_set(err, EINVAL, "%s needs arguments", df_kind_name(in->kind));
  if (in->kind == DF_RUN || in->kind == DF_CMD || in->kind == DF_ENTRYPOINT || in->kind == DF_SHELL)
    take_exec_form(in);
  if (in->kind == DF_SHELL && (!in->exec_form || in->argv[0] == NULL))
    return hutch_error_set(err, EINVAL, "SHELL takes a JSON array: SHELL [\"/bin/sh\", \"-c\"]");
  if (in->kind == DF_RUN && in->exec_form && in->argv[0] == NULL)
    return hutch_error_set(err, EINVAL, "RUN [] runs nothing");
  if (in->kind == DF_FROM || in->kind == DF_COPY || in->kind == DF_ADD) {
    /* Word counts are checked before substitution (which may not add words). */
    _cleanup_strv_ char **w = df_words(in->rest, escape, NULL, false, false, err);
    if (w == NULL)
      return -1;
    size_t n = 0;
    while (w[n])
      n++;
    if (in->kind == DF_FROM && !(n == 1 || (n == 3 && strcasecmp(w[1], "AS") == 0)))
      return hutch_error_set(err, EINVAL, "FROM takes IMAGE [AS NAME]");
    if (in->kind != DF_FROM && n < 2 && in->rest[0] != '[')
      return hutch_error_set(err, EINVAL, "%s takes SOURCE... DEST", df_kind_name(in->kind));
  }
  return 0;
}

static int parse_instruction(struct dockerfile *df, const char *line, int lineno, hutch_error_t *err) {
  const char *p = line + strspn(line, " \t");
  size_t klen = strcspn(p, " \t");
  _cleanup_free_ char *kw = xstrndup(p, klen);
  for (size_t i = 0; i < ARRAY_SIZE(refused); i++)
    if (strcasecmp(kw, refused[i].name) == 0)
      return hutch_error_set(err, ENOTSUP, "%s is not supported: %s", refused[i].name, refused[i].why);
  int kind = -1;
  for (size_t i = 0; i < ARRAY_SIZE(kind_names); i++)
    if (strcasecmp(kw, kind_names[i]) == 0)
      kind = (int)i;
  if (kind < 0)
    return hutch_error_set(err, ENOTSUP, "unknown instruction \"%.40s\"", kw);
  if (df->n == 0 && kind != DF_FROM && kind != DF_ARG)
    return hutch_error_set(err, EINVAL, "the first instruction must be FROM (or ARG before it), not %s",
                           kind_names[kind]);
  if (df->n >= DF_MAX_INSTRUCTIONS)
    return hutch_error_set(err, E2BIG, "more than %d instructions", DF_MAX_INSTRUCTIONS);
  df->instrs = xrealloc(df->instrs, (df->n + 1) * sizeof(*df->instrs));
  struct df_instr *in = &df->instrs[df->n++];
  memset(in, 0, sizeof(*in));
  in->kind = (enum df_kind)kind;
  in->line = lineno;
  in->text = xstrdup(p);
  const char *rest = p + klen;
  rest += strspn(rest, " \t");
  if (take_flags(in, &rest, err) < 0)
    return -1;
  in->rest = xstrdup(rest);
  /* Trailing blanks are not part of the arguments. */
  for (size_t n = strlen(in->rest); n > 0 && (in->rest[n - 1] == ' ' || in->rest[n - 1] == '\t'); n--)
    in->rest[n - 1] = '\0';
  return check_args(in, df->escape, err);
}

/* "# escape=`" before anything else. */
static bool directive(const char *line, char *name, size_t name_len, const char **value) {
  const char *p = line + strspn(line, " \t");
  if (*p != '#')
    return false;
  p++;
  p += strspn(p, " \t");
  size_t n = 0;
  while (isalpha((unsigned char)p[n]))
    n++;
  const char *q = p + n + strspn(p + n, " \t");
  if (n == 0 || n >= name_len || *q != '=')
    return false;
  memcpy(name, p, n);
  name[n] = '\0';
  q++;
  *value = q + strspn(q, " \t");
  return true;
}

static bool blank(const char *s) {
  return s[strspn(s, " \t")] == '\0';
}
static bool comment(const char *s) {
  return s[strspn(s, " \t")] == '#';
}

/* Whether the line ends (trailing blanks aside) with the escape character;
 * if so it is cut there. */
static bool continues(char *line, char escape) {
  size_t n = strlen(line);
  while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t'))
    n--;
  if (n > 0 && line[n - 1] == escape) {
    line[n - 1] = '\0';
    return true;
  }
  return false;
}

/* A stage's RUN, COPY and ADD each make a layer over a base of one at
 * least: a stage of more than an image may have is refused before its
 * first step, not at its 127th.  (The builder checks each layer it makes
 * too: WORKDIR may make one, and a stage may start from another.) */
static int check_stage_layers(const struct dockerfile *df, const char *origin, hutch_error_t *err) {
  size_t layers = 0, from = 0;
  for (size_t i = 0; i <= df->n; i++) {
    if (i == df->n || df->instrs[i].kind == DF_FROM) {
      if (layers + 1 > HUTCH_IMAGE_MAX_LAYERS) {
        hutch_error_set(err, E2BIG,
                        "%s:%d: the stage makes %zu layers over its base; an image may have at most %d layers", origin,
                        df->instrs[from].line, layers, HUTCH_IMAGE_MAX_LAYERS);
        return hutch_error_hint(err, "join RUN steps (cmd1 && cmd2) and COPY steps to make fewer layers");
      }
      layers = 0;
      from = i;
      continue;
    }
    enum df_kind k = df->instrs[i].kind;
    layers += k == DF_RUN || k == DF_COPY || k == DF_ADD;
  }
  return 0;
}

int dockerfile_parse(const char *text, const char *origin, struct dockerfile *out, hutch_error_t *err) {
  memset(out, 0, sizeof(*out));
  out->escape = '\\';
  if (strlen(text) > DF_MAX_TEXT)
    return hutch_error_set(err, E2BIG, "%s: larger than %d bytes", origin, DF_MAX_TEXT);
  bool directives = true;
  struct buf logical = {0};
  int start_line = 0, lineno = 0;
  const char *p = text;
  int ret = 0;
  while (*p) {
    size_t len = strcspn(p, "\n");
    _cleanup_free_ char *line = xstrndup(p, len);
    p += len + (p[len] == '\n');
    lineno++;
    if (len > 0 && line[len - 1] == '\r')
      line[len - 1] = '\0';
    if (directives) {
      char name[32];
      const char *value;
      if (directive(line, name, sizeof(name), &value)) {
        if (strcasecmp(name, "escape") == 0) {
          if (strcmp(value, "\\") != 0 && strcmp(value, "`") != 0) {
            ret = hutch_error_set(err, EINVAL, "%s:%d: escape takes \\ or `, not \"%s\"", origin, lineno, value);
            break;
          }
          out->escape = value[0];
        }
        /* syntax= and check= name frontends and lints: nothing to do. */
        continue;
      }
      directives = false;
    }
    if (logical.len == 0 && (blank(line) || comment(line)))
      continue;
    if (logical.len > 0 && comment(line))
      continue; /* comments inside a continued instruction are dropped, as Docker does */
    if (logical.len == 0)
      start_line = lineno;
    bool more = continues(line, out->escape);
    buf_add(&logical, line, strlen(line));
    if (logical.overflow || logical.len > DF_MAX_LINE) {
      ret = hutch_error_set(err, E2BIG, "%s:%d: an instruction longer than %d bytes", origin, start_line, DF_MAX_LINE);
      break;
    }
    if (more && *p)
      continue;
    if (!blank(logical.s) && parse_instruction(out, logical.s, start_line, err) < 0) {
      ret = hutch_error_wrap(err, "%s:%d", origin, start_line);
      break;
    }
    logical.len = 0;
    logical.s[0] = '\0';
  }
  free(logical.s);
  if (ret == 0 && out->n == 0)
    ret = hutch_error_set(err, EINVAL, "%s: no instructions (a Dockerfile starts with FROM)", origin);
  if (ret == 0) {
    bool from = false;
    for (size_t i = 0; i < out->n; i++)
      from |= out->instrs[i].kind == DF_FROM;
    if (!from)
      ret = hutch_error_set(err, EINVAL, "%s: no FROM instruction", origin);
  }
  if (ret == 0)
    ret = check_stage_layers(out, origin, err);
  if (ret < 0)
    dockerfile_clear(out);
  return ret;
}
