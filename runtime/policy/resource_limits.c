/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "resource_limits.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>

#include "util.h"

/* cpu.max's period: the kernel's default, short enough that a throttled
 * interactive process does not stall for long. */
#define CPU_PERIOD_USEC 100000

/* Positive values only; no libm for three roundings. */
static double round_pos(double v) {
  return (double)(uint64_t)(v + 0.5);
}
static double ceil_pos(double v) {
  double t = (double)(uint64_t)v;
  return t < v ? t + 1 : t;
}

static enum limit_source policy_source(const struct policy_limits *p, uint64_t v) {
  if (v == 0 || v == LIMITS_UNLIMITED)
    return LIMIT_UNSET;
  return p->required ? LIMIT_REQUIRED : LIMIT_POLICY;
}

uint64_t limits_or_default(uint64_t policy_value, uint64_t default_value) {
  return policy_value ? policy_value : default_value;
}

void limits_import_budget(const struct policy_limits *p, const char *policy_path, struct import_budget *out) {
  out->bytes = limits_or_default(p->image_size, LIMITS_DEFAULT_IMAGE_SIZE);
  out->entries = limits_or_default(p->image_entries, LIMITS_DEFAULT_IMAGE_ENTRIES);
  snprintf(out->policy, sizeof(out->policy), "%s", policy_path ? policy_path : "(none)");
}

void limits_cpu_max(double cpus, uint64_t *quota_usec, uint64_t *period_usec) {
  double q = round_pos(cpus * CPU_PERIOD_USEC);
  /* The kernel refuses quotas under 1 ms. */
  if (q < 1000)
    q = 1000;
  *quota_usec = (uint64_t)q;
  *period_usec = CPU_PERIOD_USEC;
}

void limits_plan_make(const struct hutch_limits *ex, const struct policy_limits *pol, struct limits_plan *out) {
  static const struct policy_limits none = {0};
  static const struct hutch_limits no_explicit = {0};
  if (pol == NULL)
    pol = &none;
  if (ex == NULL)
    ex = &no_explicit;
  *out = (struct limits_plan){0};
  out->fallback = pol->fallback == LIMITS_FALLBACK_REFUSE ? LIMITS_FALLBACK_REFUSE : LIMITS_FALLBACK_RLIMITS;
  out->fallback_quiet = pol->fallback_quiet != 0;
  out->no_cgroups = ex->no_cgroups;
  out->cgroup_parent = ex->cgroup_parent;

  if (ex->memory) {
    out->memory = ex->memory;
    out->memory_src = LIMIT_EXPLICIT;
  } else if ((out->memory_src = policy_source(pol, pol->memory)) != LIMIT_UNSET) {
    out->memory = pol->memory;
  }
  out->swap = ex->memory_swap_set ? ex->memory_swap : 0;
  out->swap_explicit = ex->memory_swap_set;

  if (ex->cpus > 0) {
    out->cpus = ex->cpus;
    out->cpus_src = LIMIT_EXPLICIT;
  } else if ((out->cpus_src = policy_source(pol, pol->cpus_milli)) != LIMIT_UNSET) {
    out->cpus = (double)pol->cpus_milli / 1000.0;
  }
  if (out->cpus_src != LIMIT_UNSET)
    limits_cpu_max(out->cpus, &out->cpu_quota_usec, &out->cpu_period_usec);

  if (ex->pids) {
    out->pids = ex->pids;
    out->pids_src = LIMIT_EXPLICIT;
  } else if ((out->pids_src = policy_source(pol, pol->pids)) != LIMIT_UNSET) {
    out->pids = pol->pids;
  }

  if (ex->io_weight) {
    out->io_weight = ex->io_weight;
    out->io_weight_src = LIMIT_EXPLICIT;
  } else if ((out->io_weight_src = policy_source(pol, pol->io_weight)) != LIMIT_UNSET) {
    out->io_weight = pol->io_weight;
  }
}

bool limits_plan_any(const struct limits_plan *p) {
  return p->memory_src || p->cpus_src || p->pids_src || p->io_weight_src || p->swap_explicit;
}

static bool strict_src(enum limit_source s) {
  return s == LIMIT_EXPLICIT || s == LIMIT_REQUIRED;
}

bool limits_plan_strict(const struct limits_plan *p) {
  if (strict_src(p->memory_src) || strict_src(p->cpus_src) || strict_src(p->pids_src) || strict_src(p->io_weight_src) ||
      p->swap_explicit)
    return true;
  return p->fallback == LIMITS_FALLBACK_REFUSE && limits_plan_any(p);
}

static void append(char *buf, size_t len, const char *word) {
  size_t n = strlen(buf);
  if (n + 1 >= len)
    return;
  snprintf(buf + n, len - n, "%s%s", n ? ", " : "", word);
}

void limits_plan_strict_names(const struct limits_plan *p, char *buf, size_t len) {
  buf[0] = '\0';
  static const struct {
    size_t off;
    const char *opt, *key;
  } names[] = {
      {offsetof(struct limits_plan, memory_src), "--memory", "memory"},
      {offsetof(struct limits_plan, cpus_src), "--cpus", "cpus"},
      {offsetof(struct limits_plan, pids_src), "--pids", "pids"},
      {offsetof(struct limits_plan, io_weight_src), "--io-weight", "io_weight"},
  };
  bool refuse = p->fallback == LIMITS_FALLBACK_REFUSE;
  for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
    enum limit_source s = *(const enum limit_source *)((const char *)p + names[i].off);
    char word[64];
    if (s == LIMIT_EXPLICIT)
      snprintf(word, sizeof(word), "%s", names[i].opt);
    else if (s == LIMIT_REQUIRED)
      snprintf(word, sizeof(word), "[limits] %s (required = yes)", names[i].key);
    else if (s == LIMIT_POLICY && refuse)
      snprintf(word, sizeof(word), "[limits] %s (fallback = refuse)", names[i].key);
    else
      continue;
    append(buf, len, word);
  }
  if (p->swap_explicit)
    append(buf, len, "--memory-swap");
}

void limits_plan_controllers(const struct limits_plan *p, char *buf, size_t len) {
  buf[0] = '\0';
  const char *sep = "";
  size_t n = 0;
#define ADD(cond, name)                                                                                                \
  do {                                                                                                                 \
    if ((cond) && n < len) {                                                                                           \
      n += (size_t)snprintf(buf + n, len - n, "%s%s", sep, name);                                                      \
      sep = " ";                                                                                                       \
    }                                                                                                                  \
  } while (0)
  ADD(p->cpus_src, "cpu");
  ADD(p->io_weight_src, "io");
  ADD(p->memory_src || p->swap_explicit, "memory");
  ADD(p->pids_src, "pids");
#undef ADD
}

void limits_plan_rlimits(const struct limits_plan *p, double timeout, struct limits_rlimits *out) {
  out->n = 0;
  /* RLIMIT_DATA, not RLIMIT_AS: it counts the private memory a process
   * can write (its heap, its private maps), which is what it can use,
   * and not the address space it only reserves.  A JVM reserves a GiB of
   * class space and its whole heap at start, V8 and sanitizers more: under
   * RLIMIT_AS of the default 2 GiB not one of them starts. */
  if (p->memory_src)
    out->r[out->n++] = (struct limits_rlimit){RLIMIT_DATA, p->memory};
  if (p->pids_src)
    out->r[out->n++] = (struct limits_rlimit){RLIMIT_NPROC, p->pids};
  if (p->cpus_src && timeout > 0) {
    /* Each process may use cpus × timeout seconds of CPU time: what the
     * rate would have allowed it before the timeout ends it anyway. */
    double secs = ceil_pos(p->cpus * timeout);
    out->r[out->n++] = (struct limits_rlimit){RLIMIT_CPU, secs < 1 ? 1 : (uint64_t)secs};
  }
}

/* What per-process rlimits cannot hold, and why. */
static void gaps(const struct limits_plan *p, double timeout, bool why, char *buf, size_t len) {
  const struct {
    bool gap;
    const char *name, *reason;
  } table[] = {
      {p->cpus_src && timeout <= 0, "cpus", " (a rate: RLIMIT_CPU only bounds CPU time, and only with --timeout)"},
      {p->pids_src && p->nproc_exempt, "pids for uid 0", " (the host's root: RLIMIT_NPROC does not bind it)"},
      {p->io_weight_src, "io_weight", ""},
      {p->swap_explicit, "memory_swap", ""},
  };
  buf[0] = '\0';
  for (size_t i = 0; i < ARRAY_SIZE(table); i++) {
    if (!table[i].gap)
      continue;
    char item[160];
    snprintf(item, sizeof(item), "%s%s", table[i].name, why ? table[i].reason : "");
    append(buf, len, item);
  }
}

void limits_rlimits_gaps(const struct limits_plan *p, double timeout, char *buf, size_t len) {
  gaps(p, timeout, true, buf, len);
}

void limits_rlimits_gap_names(const struct limits_plan *p, double timeout, char *buf, size_t len) {
  gaps(p, timeout, false, buf, len);
}

/* A few of each for a sandbox's own programs (a file watcher, tail -f, a
 * build tool's), an eighth of the usual per-user defaults or less. */
const struct limits_pool limits_pools[] = {
    {"inotify_instances", "inotify instances", "max_inotify_instances", -1, 16},
    {"inotify_watches", "inotify watches", "max_inotify_watches", -1, 8192},
    {"fanotify_groups", "fanotify groups", "max_fanotify_groups", -1, 16},
    {"fanotify_marks", "fanotify marks", "max_fanotify_marks", -1, 8192},
    /* A POSIX timer holds one pending signal from timer_create on. */
    {"pending_signals", "pending signals", NULL, RLIMIT_SIGPENDING, 1024},
    /* One queue of the default size (10 messages of 8 KiB: 82 KiB as the
     * kernel counts it) and some small ones. */
    {"msgqueue_bytes", "POSIX message queues", NULL, RLIMIT_MSGQUEUE, 128 * 1024},
};
const size_t limits_n_pools = ARRAY_SIZE(limits_pools);

void limits_pools_text(char *buf, size_t len) {
  buf[0] = '\0';
  for (size_t i = 0; i < limits_n_pools; i++) {
    const struct limits_pool *p = &limits_pools[i];
    char item[96];
    if (p->resource == RLIMIT_MSGQUEUE) {
      char size[32];
      hutch_format_size(p->value, size, sizeof(size));
      snprintf(item, sizeof(item), "%s of %s", size, p->what);
    } else {
      snprintf(item, sizeof(item), "%llu %s", (unsigned long long)p->value, p->what);
    }
    append(buf, len, item);
  }
}

void limits_pool_rlimit(uint64_t value, uint64_t cur, uint64_t max, uint64_t *new_cur, uint64_t *new_max) {
  *new_max = value < max ? value : max;
  *new_cur = cur < *new_max ? cur : *new_max;
}

void hutch_format_size(uint64_t bytes, char *buf, size_t len) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  size_t u = 0;
  double v = (double)bytes;
  while (v >= 1024 && u + 1 < ARRAY_SIZE(units)) {
    v /= 1024;
    u++;
  }
  if (u == 0 || v == (double)(uint64_t)v)
    snprintf(buf, len, "%.0f %s", v, units[u]);
  else if (v >= 100)
    snprintf(buf, len, "%.0f %s", v, units[u]);
  else
    snprintf(buf, len, "%.3g %s", v, units[u]);
}

bool hutch_parse_size(const char *s, uint64_t *out) {
  if (s == NULL || !isdigit((unsigned char)*s))
    return false;
  char *end;
  double v = strtod(s, &end);
  if (end == s || !isfinite(v) || v < 0)
    return false;
  /* Powers of 1024 whatever the spelling: "M", "MB" and "MiB" all mean MiB,
   * as memory sizes do in Docker, systemd and the kernel's own files. */
  static const struct {
    const char *suffix;
    double mult;
  } units[] = {
      {"", 1},
      {"B", 1},
      {"K", 1024.0},
      {"KB", 1024.0},
      {"KiB", 1024.0},
      {"M", 1048576.0},
      {"MB", 1048576.0},
      {"MiB", 1048576.0},
      {"G", 1073741824.0},
      {"GB", 1073741824.0},
      {"GiB", 1073741824.0},
      {"T", 1099511627776.0},
      {"TB", 1099511627776.0},
      {"TiB", 1099511627776.0},
  };
  while (*end == ' ')
    end++;
  for (size_t i = 0; i < ARRAY_SIZE(units); i++) {
    if (strcasecmp(end, units[i].suffix) == 0) {
      double bytes = v * units[i].mult;
      if (bytes >= 18446744073709551615.0)
        return false;
      *out = (uint64_t)bytes;
      return true;
    }
  }
  return false;
}

bool limits_parse_size(const char *s, bool allow_max, uint64_t *out) {
  if (s == NULL)
    return false;
  if (allow_max && strcmp(s, "max") == 0) {
    *out = LIMITS_UNLIMITED;
    return true;
  }
  uint64_t v;
  if (!hutch_parse_size(s, &v) || v < 1)
    return false;
  *out = v;
  return true;
}

bool limits_parse_cpus(const char *s, uint64_t *milli) {
  if (s == NULL || !isdigit((unsigned char)*s))
    return false;
  char *end;
  double v = strtod(s, &end);
  if (*end != '\0' || !isfinite(v))
    return false;
  if (v <= 0 || v > 4096)
    return false;
  double m = round_pos(v * 1000);
  if (m < 1)
    return false;
  *milli = (uint64_t)m;
  return true;
}

char *limits_cgroup2_path(const char *text) {
  for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    if (strncmp(l, "0::", 3) == 0) {
      const char *p = l + 3;
      size_t n = strcspn(p, "\n");
      if (n == 0 || p[0] != '/')
        return NULL;
      /* " (deleted)" marks a cgroup removed under us: unusable. */
      static const char deleted[] = " (deleted)";
      if (n > sizeof(deleted) - 1 && strncmp(p + n - (sizeof(deleted) - 1), deleted, sizeof(deleted) - 1) == 0)
        return NULL;
      return xstrndup(p, n);
    }
  }
  return NULL;
}

bool limits_keyed_value(const char *text, const char *key, uint64_t *out) {
  size_t k = strlen(key);
  for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    if (strncmp(l, key, k) == 0 && (l[k] == ' ' || l[k] == '\t')) {
      char *end;
      unsigned long long v = strtoull(l + k + 1, &end, 10);
      if (end == l + k + 1)
        return false;
      *out = v;
      return true;
    }
  }
  return false;
}

bool limits_has_word(const char *list, const char *word) {
  size_t n = strlen(word);
  for (const char *p = list; p && *p;) {
    p += strspn(p, " \t\n");
    size_t w = strcspn(p, " \t\n");
    if (w == n && strncmp(p, word, n) == 0)
      return true;
    p += w;
  }
  return false;
}
