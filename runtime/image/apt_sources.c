/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "apt_sources.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "util.h"

void apt_sources_free(struct apt_source *list, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(list[i].uri);
    cleanup_strvp(&list[i].suites);
  }
  free(list);
}

static char **split_words(const char *s) {
  char **v = xcalloc(1, sizeof(*v));
  size_t n = 0;
  _cleanup_free_ char *copy = xstrdup(s);
  char *save = NULL;
  for (char *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
    v = xrealloc(v, (n + 2) * sizeof(*v));
    v[n++] = xstrdup(w);
    v[n] = NULL;
  }
  return v;
}

static void add(struct apt_source **list, size_t *n, const char *uri, char **suites, bool deb) {
  *list = xrealloc(*list, (*n + 1) * sizeof(**list));
  (*list)[*n] = (struct apt_source){.uri = xstrdup(uri), .suites = suites, .deb = deb};
  (*n)++;
}

static char **strv_copy(char **v) {
  size_t n = 0;
  while (v && v[n])
    n++;
  char **c = xcalloc(n + 1, sizeof(*c));
  for (size_t i = 0; i < n; i++)
    c[i] = xstrdup(v[i]);
  return c;
}

static void parse_oneline(char *line, struct apt_source **list, size_t *n) {
  char *p = line;
  while (isspace((unsigned char)*p))
    p++;
  bool deb;
  if (strncmp(p, "deb-src", 7) == 0 && isspace((unsigned char)p[7])) {
    deb = false;
    p += 7;
  } else if (strncmp(p, "deb", 3) == 0 && isspace((unsigned char)p[3])) {
    deb = true;
    p += 3;
  } else {
    return;
  }
  while (isspace((unsigned char)*p))
    p++;
  if (*p == '[') {
    char *end = strchr(p, ']');
    if (end == NULL)
      return;
    p = end + 1;
  }
  _cleanup_strv_ char **w = split_words(p);
  if (w[0] == NULL || w[1] == NULL)
    return;
  char **suites = xcalloc(2, sizeof(*suites));
  suites[0] = xstrdup(w[1]);
  add(list, n, w[0], suites, deb);
}

struct stanza {
  char *types, *uris, *suites, *enabled;
};

static void stanza_flush(struct stanza *s, struct apt_source **list, size_t *n) {
  if (s->uris && s->types && (s->enabled == NULL || strcasecmp(s->enabled, "no") != 0)) {
    _cleanup_strv_ char **types = split_words(s->types);
    _cleanup_strv_ char **uris = split_words(s->uris);
    _cleanup_strv_ char **suites = split_words(s->suites ? s->suites : "");
    for (char **t = types; *t; t++)
      for (char **u = uris; *u; u++)
        if (strcmp(*t, "deb") == 0 || strcmp(*t, "deb-src") == 0)
          add(list, n, *u, strv_copy(suites), strcmp(*t, "deb") == 0);
  }
  free(s->types);
  free(s->uris);
  free(s->suites);
  free(s->enabled);
  memset(s, 0, sizeof(*s));
}

void apt_sources_parse(const char *text, bool deb822, struct apt_source **list, size_t *n) {
  _cleanup_free_ char *copy = xstrdup(text);
  struct stanza st = {0};
  char *line = copy;
  while (line) {
    char *next = strchr(line, '\n');
    if (next)
      *next++ = '\0';
    char *hash = strchr(line, '#');
    if (hash)
      *hash = '\0';
    if (!deb822) {
      parse_oneline(line, list, n);
    } else {
      char *p = line;
      while (*p == ' ' || *p == '\t')
        p++;
      size_t len = strlen(p);
      while (len > 0 && isspace((unsigned char)p[len - 1]))
        p[--len] = '\0';
      if (*p == '\0') {
        /* A line that was a comment does not end a stanza; a blank one does. */
        if (hash == NULL)
          stanza_flush(&st, list, n);
      } else if (line[0] != ' ' && line[0] != '\t') {
        char *colon = strchr(p, ':');
        if (colon) {
          *colon = '\0';
          char *val = colon + 1;
          while (*val == ' ' || *val == '\t')
            val++;
          char **field = strcasecmp(p, "Types") == 0     ? &st.types
                         : strcasecmp(p, "URIs") == 0    ? &st.uris
                         : strcasecmp(p, "Suites") == 0  ? &st.suites
                         : strcasecmp(p, "Enabled") == 0 ? &st.enabled
                                                         : NULL;
          if (field) {
            free(*field);
            *field = xstrdup(val);
          }
        }
      }
    }
    line = next;
  }
  if (deb822)
    stanza_flush(&st, list, n);
}

char *apt_uri_host(const char *uri) {
  const char *p;
  if (strncmp(uri, "http://", 7) == 0)
    p = uri + 7;
  else if (strncmp(uri, "https://", 8) == 0)
    p = uri + 8;
  else
    return NULL;
  const char *at = strchr(p, '@');
  const char *slash = strchr(p, '/');
  if (at && (slash == NULL || at < slash))
    p = at + 1;
  size_t len = slash ? (size_t)(slash - p) : strlen(p);
  return len ? xstrndup(p, len) : NULL;
}

const char *apt_sources_mirror(const struct apt_source *list, size_t n, const char *suite) {
  for (size_t i = 0; i < n; i++) {
    _cleanup_free_ char *host = apt_uri_host(list[i].uri);
    if (!list[i].deb || host == NULL)
      continue;
    for (char **s = list[i].suites; s && *s; s++)
      if (strcmp(*s, suite) == 0)
        return list[i].uri;
  }
  return NULL;
}
