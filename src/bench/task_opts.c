/* SPDX-License-Identifier: Apache-2.0 */
/* hutch's own per-task settings, for what LLM-in-Sandbox's format cannot
 * say: a task's optional "hutch" object (which LLM-in-Sandbox passes to
 * compute_score as one more keyword) gives its image, limits, network
 * allowlist, wall-clock limit and a verifier command (hutch-tasks(5)).
 * A pure function of the row. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "util.h"

static void add(struct bench_task_opts *t, char *arg) {
  t->args = xrealloc(t->args, (t->n_args + 2) * sizeof(char *));
  t->args[t->n_args++] = arg;
  t->args[t->n_args] = NULL;
}

void bench_task_opts_free(struct bench_task_opts *t) {
  for (size_t i = 0; i < t->n_args; i++)
    free(t->args[i]);
  free(t->args);
  free(t->verifier);
  memset(t, 0, sizeof(*t));
}

int bench_task_opts(const cJSON *row, struct bench_task_opts *t, char **why) {
  memset(t, 0, sizeof(*t));
  const cJSON *h = cJSON_GetObjectItemCaseSensitive(row, "hutch");
  if (h == NULL || cJSON_IsNull(h))
    return 0;
  if (!cJSON_IsObject(h)) {
    *why = xstrdup("\"hutch\" is not an object");
    return -1;
  }
  /* hutch run's options, as strings or numbers. */
  static const char *const opts[] = {"image", "memory", "disk", "cpus", "pids"};
  static const char *const flags[] = {"--rootfs", "--memory", "--disk", "--cpus", "--pids"};
  const cJSON *e;
  cJSON_ArrayForEach(e, h) {
    const char *k = e->string;
    size_t i = 0;
    while (i < ARRAY_SIZE(opts) && strcmp(k, opts[i]) != 0)
      i++;
    if (i < ARRAY_SIZE(opts)) {
      if (cJSON_IsString(e) && e->valuestring[0])
        add(t, xasprintf("%s=%s", flags[i], e->valuestring));
      else if (cJSON_IsNumber(e) && e->valuedouble > 0)
        add(t, xasprintf("%s=%g", flags[i], e->valuedouble));
      else
        goto bad;
    } else if (strcmp(k, "verifier") == 0) {
      if (!cJSON_IsString(e) || !e->valuestring[0])
        goto bad;
      t->verifier = xstrdup(e->valuestring);
    } else if (strcmp(k, "timeout") == 0) {
      if (!cJSON_IsNumber(e) || !(e->valuedouble > 0) || !isfinite(e->valuedouble))
        goto bad;
      t->timeout = e->valuedouble;
    } else if (strcmp(k, "allow") == 0) {
      if (!cJSON_IsArray(e))
        goto bad;
      const cJSON *a;
      cJSON_ArrayForEach(a, e) if (!cJSON_IsString(a) || !a->valuestring[0]) goto bad;
      if (cJSON_GetArraySize(e) > 0)
        add(t, xstrdup("--net=proxy"));
      cJSON_ArrayForEach(a, e) add(t, xasprintf("--allow=%s", a->valuestring));
    } else {
      *why = xasprintf("\"hutch\": unknown key '%s'", k);
      bench_task_opts_free(t);
      return -1;
    }
    continue;
  bad:
    *why = xasprintf("\"hutch\": '%s' has a wrong value", k);
    bench_task_opts_free(t);
    return -1;
  }
  if (t->verifier)
    add(t, xasprintf("--verify=%s", t->verifier));
  return 0;
}

int bench_verifier_score(const cJSON *verifier, double *score, char **why) {
  const cJSON *err = cJSON_GetObjectItemCaseSensitive(verifier, "error");
  const cJSON *code = cJSON_GetObjectItemCaseSensitive(verifier, "exit_code");
  const cJSON *last = cJSON_GetObjectItemCaseSensitive(verifier, "last_line");
  if (cJSON_IsString(err)) {
    *why = xasprintf("verifier: %s", err->valuestring);
    return -1;
  }
  if (!cJSON_IsNumber(code)) {
    *why = xstrdup("verifier: it did not run (the run ended before it)");
    return -1;
  }
  if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(verifier, "timed_out"))) {
    *why = xstrdup("verifier: timed out");
    return -1;
  }
  /* A number on the last line is the score (an infinite one too, for the
   * caller to refuse with the rest out of range); else the exit status
   * says. */
  if (cJSON_IsString(last) && last->valuestring[0]) {
    char *end;
    double v = strtod(last->valuestring, &end);
    if (end != last->valuestring && *end == '\0') {
      *score = v;
      return 0;
    }
  }
  *score = code->valuedouble == 0 ? 1.0 : 0.0;
  return 0;
}
