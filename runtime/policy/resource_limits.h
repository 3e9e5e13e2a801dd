/* SPDX-License-Identifier: Apache-2.0 */
/* Resource limits: pure value handling.  Which limits a sandbox gets (the
 * command line over the policy's [limits]), the text the cgroup files
 * want, the rlimits they degrade to, and parsing of what the kernel
 * reports.  No I/O here: runtime/sandbox/cgroup.c does the writing. */
#ifndef HUTCH_RESOURCE_LIMITS_H
#define HUTCH_RESOURCE_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hutch.h"

/* "no limit" in the policy ("max"). */
#define LIMITS_UNLIMITED UINT64_MAX

enum limits_fallback { LIMITS_FALLBACK_RLIMITS = 0, LIMITS_FALLBACK_REFUSE };

/* The policy file's [limits]; 0 = not set. */
struct policy_limits {
  uint64_t memory;         /* bytes, or LIMITS_UNLIMITED */
  uint64_t cpus_milli;     /* thousandths of a CPU, or LIMITS_UNLIMITED */
  uint64_t pids;           /* or LIMITS_UNLIMITED */
  uint64_t io_weight;      /* 1..10000 */
  uint64_t fallback;       /* enum limits_fallback */
  uint64_t required;       /* 1: the policy's limits are never dropped */
  uint64_t fallback_quiet; /* 1: the user's policy asks for no warning line on the fallback */
  uint64_t disk;           /* bytes of every writable layer together, or LIMITS_UNLIMITED */
  uint64_t image_size;     /* bytes an image import may unpack, or LIMITS_UNLIMITED */
  uint64_t image_entries;  /* entries an image import may hold, or LIMITS_UNLIMITED */
  uint64_t audit_log;      /* bytes a sandbox's audit log may hold (hutch-audit(5)); 0: its default */
  unsigned memory_line;    /* where each was set, for messages */
  unsigned cpus_line;
  unsigned pids_line;
  unsigned io_weight_line;
};

/* What a policy without the key gets: bounded all the same. */
#define LIMITS_DEFAULT_DISK (4ULL << 30)
#define LIMITS_DEFAULT_IMAGE_SIZE (64ULL << 30)
#define LIMITS_DEFAULT_IMAGE_ENTRIES 2000000ULL
/* The value in force: the policy's, or the default when it sets none. */
uint64_t limits_or_default(uint64_t policy_value, uint64_t default_value);

/* What an image import may unpack ([limits] image_size, image_entries),
 * with the policy named in the refusal. */
struct import_budget {
  uint64_t bytes;   /* of regular files' contents, all layers together */
  uint64_t entries; /* archive entries read, all layers together */
  char policy[256];
};
void limits_import_budget(const struct policy_limits *p, const char *policy_path, struct import_budget *out);

/* Where a limit in force came from. */
enum limit_source { LIMIT_UNSET = 0, LIMIT_POLICY, LIMIT_REQUIRED, LIMIT_EXPLICIT };

/* The limits a sandbox gets; a value of 0 with LIMIT_UNSET is no limit. */
struct limits_plan {
  uint64_t memory;
  enum limit_source memory_src;
  uint64_t swap; /* memory.swap.max */
  bool swap_explicit;
  uint64_t cpu_quota_usec; /* cpu.max "quota period" */
  uint64_t cpu_period_usec;
  enum limit_source cpus_src;
  double cpus;
  uint64_t pids;
  enum limit_source pids_src;
  uint64_t io_weight;
  enum limit_source io_weight_src;
  enum limits_fallback fallback;
  bool fallback_quiet;
  bool no_cgroups;
  const char *cgroup_parent;
  bool nproc_exempt; /* the sandbox's root is the host's root, whom RLIMIT_NPROC does not bind */
};

/* Merge the explicit limits over the policy's. */
void limits_plan_make(const struct hutch_limits *explicit_limits, const struct policy_limits *policy,
                      struct limits_plan *out);
bool limits_plan_any(const struct limits_plan *p);
/* True when some limit must be applied with a cgroup or not at all. */
bool limits_plan_strict(const struct limits_plan *p);
/* "--memory" / "[limits] memory (required)": the strict limits, for messages. */
void limits_plan_strict_names(const struct limits_plan *p, char *buf, size_t len);
/* The cgroup controllers the plan needs, as "cpu memory pids" (space-separated). */
void limits_plan_controllers(const struct limits_plan *p, char *buf, size_t len);

/* cpus -> cpu.max: a 100 ms period, the quota scaled (at least 1 ms). */
void limits_cpu_max(double cpus, uint64_t *quota_usec, uint64_t *period_usec);

/* What rlimits cannot hold of the plan: with the reason of each
 * ("cpus (a rate: ...)"), or by name alone ("cpus"), comma-separated. */
void limits_rlimits_gap_names(const struct limits_plan *p, double timeout, char *buf, size_t len);

/* The rlimits a plan degrades to. */
struct limits_rlimit {
  int resource;
  uint64_t value;
};
struct limits_rlimits {
  struct limits_rlimit r[4];
  size_t n;
};
/* timeout: the primary process's, in seconds (0: none); RLIMIT_CPU bounds
 * total CPU time, so it can only stand in for a rate over a known time. */
void limits_plan_rlimits(const struct limits_plan *p, double timeout, struct limits_rlimits *out);
/* What rlimits leave out, for the degradation note ("" when nothing). */
void limits_rlimits_gaps(const struct limits_plan *p, double timeout, char *buf, size_t len);

/* Per-user kernel pools (hutch-policy(5), "KERNEL POOLS").  The kernel
 * counts these per user, and a sandbox's processes are its user's on the
 * host (uid 0 inside maps to the caller), so one sandbox could take its
 * user's whole share and leave the user's host processes and other
 * sandboxes none.  Each sandbox has a user namespace of its own: the
 * kernel counts the pool there as well as for the user, and stops the
 * sandbox at these values, set in that namespace (its /proc/sys/user) or
 * as rlimits of its processes before anything of the sandbox runs.
 * Neither a cgroup nor the absence of one changes them. */
struct limits_pool {
  const char *key;    /* "inotify_instances", for policy show --json */
  const char *what;   /* "inotify instances", for messages and policy show */
  const char *sysctl; /* its file under /proc/sys/user, or NULL */
  int resource;       /* its RLIMIT_*, or -1 */
  uint64_t value;     /* a count; bytes for RLIMIT_MSGQUEUE */
};
extern const struct limits_pool limits_pools[];
extern const size_t limits_n_pools;
/* "16 inotify instances, ..., 128 KiB of POSIX message queues". */
void limits_pools_text(char *buf, size_t len);
/* An rlimit lowered to `value`, never raised past what the caller had
 * (which no process in a user namespace may raise). */
void limits_pool_rlimit(uint64_t value, uint64_t cur, uint64_t max, uint64_t *new_cur, uint64_t *new_max);

/* "512M", "2G", "1.5GiB", "1024", "max" (-> LIMITS_UNLIMITED if allow_max). */
bool limits_parse_size(const char *s, bool allow_max, uint64_t *out);
/* "1", "0.5", "2.25" -> thousandths; 0.001 to 4096 CPUs. */
bool limits_parse_cpus(const char *s, uint64_t *milli);

/* Parsing what the kernel writes. */
/* The cgroup v2 path in /proc/self/cgroup text (the "0::" line); new string or NULL. */
char *limits_cgroup2_path(const char *proc_self_cgroup);
/* "key value" lines (memory.events, cpu.stat; "Key:\tvalue" of
 * /proc/PID/status with the colon in key): the value of key. */
bool limits_keyed_value(const char *text, const char *key, uint64_t *out);
/* Whether a space-separated list (cgroup.controllers) holds word. */
bool limits_has_word(const char *list, const char *word);

#endif
