/* SPDX-License-Identifier: Apache-2.0 */
/* The options a run records in its benchmark.json ("options"), so that
 * --resume DIR alone goes on as the run began, and the check of those a
 * --resume command line gives again (pure: strings and JSON, no I/O). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resume_opts.h"
#include "settings.h"
#include "util.h"

/* Options that may differ between a run and its --resume: where the
 * model's server and hutch's files are, how many tasks run at once, how
 * requests are retried, what the terminal shows.  A given one wins. */
static const char *const free_names[] = {
    "base-url",         "api-key", "num-workers", "max-inflight", "max-tries",         "retry-delay", "llm-timeout",
    "max-api-failures", "quiet",   "state-dir",   "store",        "wait-for-endpoint", "json",        "retry-errors"};

bool resume_opt_free(const char *name) {
  for (size_t i = 0; i < ARRAY_SIZE(free_names); i++)
    if (strcmp(name, free_names[i]) == 0)
      return true;
  return false;
}

char *resume_opt_name(const char *entry) {
  const char *a = strncmp(entry, "--", 2) == 0 ? entry + 2 : entry;
  size_t n = strcspn(a, "=");
  char *name = xstrndup(a, n);
  for (char *p = name; *p; p++)
    if (*p == '_')
      *p = '-';
  const char *canon = settings_canonical(name);
  if (canon && strcmp(canon, name) != 0) {
    free(name);
    name = xstrdup(canon);
  }
  return name;
}

/* The value of "--name=value", NULL for a bare "--name". */
static const char *entry_value(const char *entry) {
  const char *eq = strchr(entry, '=');
  return eq ? eq + 1 : NULL;
}

char **resume_opts_normal(char *const *argv, size_t n, size_t *out_n) {
  char **out = xcalloc(n + 1, sizeof(char *));
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    const char *a = argv[i];
    if (strncmp(a, "--", 2) != 0)
      continue; /* a value, taken with its option below */
    _cleanup_free_ char *name = resume_opt_name(a);
    const char *v = entry_value(a);
    if (v == NULL && settings_option_arg(name) == 1 && i + 1 < n)
      v = argv[++i];
    out[k++] = v ? xasprintf("--%s=%s", name, v) : xasprintf("--%s", name);
  }
  *out_n = k;
  return out;
}

/* The values of NAME in list (a bare option's: ""), comma-separated, and
 * how many. */
static size_t values_of(char *const *list, size_t n, const char *name, char **joined) {
  size_t count = 0;
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  for (size_t i = 0; i < n; i++) {
    _cleanup_free_ char *nm = resume_opt_name(list[i]);
    if (strcmp(nm, name) != 0)
      continue;
    const char *v = entry_value(list[i]);
    fprintf(f, "%s'%s'", count++ ? ", " : "", v ? v : "");
  }
  fclose(f);
  *joined = text;
  return count;
}

static bool has_name(char *const *list, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++) {
    _cleanup_free_ char *nm = resume_opt_name(list[i]);
    if (strcmp(nm, name) == 0)
      return true;
  }
  return false;
}

char *resume_opts_mismatch(char *const *recorded, size_t n_rec, char *const *given, size_t n_given) {
  for (size_t i = 0; i < n_given; i++) {
    _cleanup_free_ char *name = resume_opt_name(given[i]);
    if (resume_opt_free(name) || has_name(given, i, name))
      continue; /* free, or seen with its first value */
    _cleanup_free_ char *then = NULL, *now = NULL;
    size_t n_then = values_of(recorded, n_rec, name, &then);
    values_of(given, n_given, name, &now);
    if (n_then == 0)
      return xasprintf("--%s: the run began without it (its default); this command gives %s", name, now);
    if (strcmp(then, now) != 0)
      return xasprintf("--%s: the run began with %s; this command gives %s", name, then, now);
  }
  return NULL;
}

char **resume_opts_missing(char *const *recorded, size_t n_rec, char *const *given, size_t n_given, size_t *out_n) {
  char **out = xcalloc(n_rec + 1, sizeof(char *));
  size_t k = 0;
  for (size_t i = 0; i < n_rec; i++) {
    _cleanup_free_ char *name = resume_opt_name(recorded[i]);
    if (!has_name(given, n_given, name))
      out[k++] = xstrdup(recorded[i]);
  }
  *out_n = k;
  return out;
}

char *resume_config_diff(const cJSON *then, const cJSON *now) {
  const cJSON *t;
  cJSON_ArrayForEach(t, then) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(now, t->string);
    if (n == NULL || !cJSON_Compare(t, n, true)) {
      _cleanup_free_ char *a = cJSON_PrintUnformatted(t);
      _cleanup_free_ char *b = n ? cJSON_PrintUnformatted(n) : xstrdup("nothing");
      return xasprintf("%s: the run began with %s; this command gives %s", t->string, a, b);
    }
  }
  cJSON_ArrayForEach(t, now) {
    if (cJSON_GetObjectItemCaseSensitive(then, t->string) == NULL) {
      _cleanup_free_ char *b = cJSON_PrintUnformatted(t);
      return xasprintf("%s: the run began without it; this command gives %s", t->string, b);
    }
  }
  return NULL;
}
