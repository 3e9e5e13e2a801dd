/* SPDX-License-Identifier: Apache-2.0 */
/* Which share of a task set this process runs: --shard K/N, else a Slurm
 * job array's SLURM_ARRAY_TASK_ID (less SLURM_ARRAY_TASK_MIN) of
 * SLURM_ARRAY_TASK_COUNT, else a Kubernetes Indexed Job's
 * JOB_COMPLETION_INDEX of --shards N.  Shard K runs the tasks whose index
 * in the chosen range is K modulo N.  A pure function of its inputs. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "util.h"

static bool number(const char *s, long *out) {
  char *end;
  if (s == NULL || *s == '\0')
    return false;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (*end || v < 0 || errno)
    return false;
  *out = v;
  return true;
}

int bench_shard(const char *opt, long shards, const char *slurm_id, const char *slurm_min, const char *slurm_count,
                const char *job_index, long *k, long *n, char **why) {
  *k = 0;
  *n = 1;
  *why = NULL;
  if (opt) {
    const char *slash = strchr(opt, '/');
    _cleanup_free_ char *kk = slash ? xstrndup(opt, (size_t)(slash - opt)) : NULL;
    if (!slash || !number(kk, k) || !number(slash + 1, n) || *n < 1 || *n > BENCH_SHARDS_MAX || *k >= *n) {
      *why = xasprintf("--shard wants K/N with 0 <= K < N <= %ld, got '%s'", BENCH_SHARDS_MAX, opt);
      return -1;
    }
    return 0;
  }
  if (slurm_id && *slurm_id && slurm_count && *slurm_count) {
    long id, min = 0;
    if (!number(slurm_id, &id) || !number(slurm_count, n) || *n < 1 || *n > BENCH_SHARDS_MAX ||
        (slurm_min && *slurm_min && !number(slurm_min, &min)) || id < min || id - min >= *n) {
      *why = xasprintf("SLURM_ARRAY_TASK_ID=%s (SLURM_ARRAY_TASK_MIN=%s) is not a shard of SLURM_ARRAY_TASK_COUNT=%s: "
                       "give the array as --array=0-%s",
                       slurm_id, slurm_min ? slurm_min : "unset", slurm_count, "N-1");
      return -1;
    }
    *k = id - min;
    return 0;
  }
  if (shards > 0) {
    if (shards > BENCH_SHARDS_MAX) {
      *why = xasprintf("--shards wants at most %ld shards, got %ld", BENCH_SHARDS_MAX, shards);
      return -1;
    }
    if (!job_index || !*job_index) {
      *n = shards;
      *why = xstrdup("--shards N wants JOB_COMPLETION_INDEX (a Kubernetes Indexed Job); elsewhere give --shard K/N");
      return -1;
    }
    *n = shards;
    if (!number(job_index, k) || *k >= *n) {
      *why = xasprintf("JOB_COMPLETION_INDEX=%s is not below --shards %ld", job_index, shards);
      return -1;
    }
  }
  return 0;
}
