/* SPDX-License-Identifier: Apache-2.0 */
/* How many sandboxes may live at once here: every limit an idle sandbox
 * from `hutch create` counts against, with what it allows and, when hutch
 * cannot raise it itself, the command that does.
 *
 * An idle sandbox is one process (its init, one thread) holding one user,
 * mount, pid, network, IPC, UTS and cgroup namespace, about four open files
 * and three inodes in the state directory (its directory, state.json,
 * ctl.sock); a command run in it adds one process while it runs.  No
 * long-lived process of hutch holds a descriptor per sandbox, so
 * RLIMIT_NOFILE does not bound their number.  The soft RLIMIT_NPROC is
 * raised to the hard one by every start (sandbox_start.c), so only the hard
 * limit counts.  Read-only: nothing is created here. */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "doctor.h"
#include "resource_limits.h"
#include "util.h"

/* Below this many, a limit is a warning: hutch is built to hold 10,000
 * live sandboxes on one machine (bench/many-sandboxes). */
#define CAPACITY_TARGET 10000
/* Memory per idle sandbox, kernel included, as bench/many-sandboxes
 * measures it (MemAvailable before and after, 10,000 live). */
#define SANDBOX_KIB 600
#define SANDBOX_FILES 4
#define SANDBOX_INODES 3

struct capacity {
  long allows;     /* sandboxes the tightest limit allows, -1: none seen */
  size_t tightest; /* its row: an index, the rows move as the report grows */
};

static long allows(long value, long used, long per) {
  if (value < 0)
    return -1;
  long left = value - (used > 0 ? used : 0);
  return left > 0 ? left / per : 0;
}

/* One row: INFO when it allows CAPACITY_TARGET or more, WARN below; fix
 * is shown with a warning (and always in --json). */
static struct hutch_check *row(struct ladder *l, struct capacity *cap, const char *id, const char *title, long n,
                               char *fix) {
  struct hutch_check *c = report_add(l->r, id, title, false);
  c->status = n >= 0 && n < CAPACITY_TARGET ? HUTCH_CHECK_WARN : HUTCH_CHECK_INFO;
  report_fix(c, fix);
  if (n >= 0 && (cap->allows < 0 || n < cap->allows)) {
    cap->allows = n;
    cap->tightest = (size_t)(c - l->r->checks);
  }
  return c;
}

/* Threads on the host: the fourth field of /proc/loadavg, "running/total". */
static long host_threads(void) {
  _cleanup_free_ char *s = read_file_at(AT_FDCWD, "/proc/loadavg", 256, NULL);
  const char *slash = s ? strchr(s, '/') : NULL;
  return slash ? strtol(slash + 1, NULL, 10) : -1;
}

/* Threads whose real uid is ours: what RLIMIT_NPROC counts. */
static long own_threads(void) {
  _cleanup_dir_ DIR *d = opendir("/proc");
  if (d == NULL)
    return -1;
  long n = 0;
  unsigned uid = (unsigned)getuid();
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] < '0' || de->d_name[0] > '9')
      continue;
    char path[64];
    snprintf(path, sizeof(path), "/proc/%.20s/status", de->d_name);
    _cleanup_free_ char *st = read_file_at(AT_FDCWD, path, 16384, NULL);
    const char *u = st ? strstr(st, "\nUid:\t") : NULL;
    const char *t = st ? strstr(st, "\nThreads:\t") : NULL;
    if (u && t && strtoul(u + 6, NULL, 10) == uid)
      n += strtol(t + 10, NULL, 10);
  }
  return n;
}

static void check_pids(struct ladder *l, struct capacity *cap) {
  long threads = host_threads();
  long pid_max = probe_read_sysctl("/proc/sys/kernel/pid_max");
  long n = allows(pid_max, threads, 1);
  struct hutch_check *c = row(l, cap, "capacity.pid_max", "live sandboxes: kernel.pid_max", n,
                              xstrdup("As root: `sysctl -w kernel.pid_max=4194304`, and the same line in a file "
                                      "under /etc/sysctl.d/ to keep it."));
  if (pid_max < 0) {
    c->status = HUTCH_CHECK_SKIP;
    report_detail(c, "not readable");
  } else {
    report_detail(c, "%ld (%ld in use): about %ld more sandboxes, one pid each", pid_max, threads, n);
  }
  long tmax = probe_read_sysctl("/proc/sys/kernel/threads-max");
  n = allows(tmax, threads, 1);
  c = row(l, cap, "capacity.threads_max", "live sandboxes: kernel.threads-max", n,
          xasprintf("As root: `sysctl -w kernel.threads-max=%ld`, and the same line in a file under /etc/sysctl.d/.",
                    tmax > 0 ? tmax * 2 : 4194304));
  if (tmax < 0) {
    c->status = HUTCH_CHECK_SKIP;
    report_detail(c, "not readable");
  } else {
    report_detail(c, "%ld (%ld threads in use): about %ld more sandboxes, one thread each", tmax, threads, n);
  }
}

static void check_nproc(struct ladder *l, struct capacity *cap) {
  struct rlimit rl = l->nproc;
  if (geteuid() == 0 && !l->env.nested_userns) {
    struct hutch_check *c = report_add(l->r, "capacity.nproc", "live sandboxes: RLIMIT_NPROC", false);
    c->status = HUTCH_CHECK_SKIP;
    report_detail(c, "does not bind root");
    return;
  }
  const struct passwd *pw = getpwuid(getuid());
  const char *user = pw ? pw->pw_name : "USER";
  if (rl.rlim_max == RLIM_INFINITY) {
    struct hutch_check *c = row(l, cap, "capacity.nproc", "live sandboxes: RLIMIT_NPROC", -1, NULL);
    report_detail(c, "hard limit unlimited%s",
                  rl.rlim_cur != RLIM_INFINITY ? " (hutch raises the soft limit to it)" : "");
    return;
  }
  long used = own_threads();
  long n = allows((long)rl.rlim_max, used, 1);
  struct hutch_check *c =
      row(l, cap, "capacity.nproc", "live sandboxes: RLIMIT_NPROC", n,
          xasprintf("As root: raise the hard limit of %s, e.g. the line `%s hard nproc unlimited` in "
                    "/etc/security/limits.conf (a new login applies it), or LimitNPROC= of the systemd unit "
                    "hutch runs in.",
                    user, user));
  if (rl.rlim_cur < rl.rlim_max)
    report_detail(c,
                  "soft %lu, hard %lu (%ld processes of uid %u): about %ld more sandboxes; hutch raises the "
                  "soft limit to the hard one",
                  (unsigned long)rl.rlim_cur, (unsigned long)rl.rlim_max, used, (unsigned)getuid(), n);
  else
    report_detail(c, "%lu (%ld processes of uid %u): about %ld more sandboxes", (unsigned long)rl.rlim_max, used,
                  (unsigned)getuid(), n);
}

/* The per-user namespace counts are not readable: each limit is an upper
 * bound on all of this user's sandboxes together. */
static void check_namespaces(struct ladder *l, struct capacity *cap) {
  static const char *const kinds[] = {"user", "mnt", "pid", "net", "ipc", "uts", "cgroup"};
  long values[ARRAY_SIZE(kinds)];
  long lowest = -1;
  size_t which = 0;
  for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
    char path[80];
    snprintf(path, sizeof(path), "/proc/sys/user/max_%s_namespaces", kinds[i]);
    values[i] = probe_read_sysctl(path);
    if (values[i] >= 0 && (lowest < 0 || values[i] < lowest))
      lowest = values[i], which = i;
  }
  /* The fix raises every one that is low, or else the lowest. */
  char fix[512] = "As root: `sysctl -w";
  size_t off = strlen(fix), base = off;
  for (size_t i = 0; i < ARRAY_SIZE(kinds); i++)
    if (values[i] >= 0 && (values[i] < CAPACITY_TARGET * 2 || (i == which && off == base)) && off < sizeof(fix))
      off += (size_t)snprintf(fix + off, sizeof(fix) - off, " user.max_%s_namespaces=%ld", kinds[i],
                              values[i] < CAPACITY_TARGET * 2 ? (long)CAPACITY_TARGET * 4 : values[i] * 2);
  if (off < sizeof(fix))
    snprintf(fix + off, sizeof(fix) - off, "`, and the same in a file under /etc/sysctl.d/.");
  struct hutch_check *c =
      row(l, cap, "capacity.namespaces", "live sandboxes: user.max_*_namespaces", lowest, xstrdup(fix));
  if (lowest < 0) {
    c->status = HUTCH_CHECK_SKIP;
    report_detail(c, "not present on this kernel");
    return;
  }
  report_detail(c,
                "lowest: user.max_%s_namespaces = %ld: at most %ld sandboxes of this user (each holds one user, "
                "mount, pid, network, IPC, UTS and cgroup namespace)",
                kinds[which], lowest, lowest);
}

static void check_files(struct ladder *l, struct capacity *cap) {
  long max = probe_read_sysctl("/proc/sys/fs/file-max");
  _cleanup_free_ char *nr = read_file_at(AT_FDCWD, "/proc/sys/fs/file-nr", 256, NULL);
  long used = nr ? strtol(nr, NULL, 10) : 0;
  long n = allows(max, used, SANDBOX_FILES);
  struct hutch_check *c =
      row(l, cap, "capacity.file_max", "live sandboxes: fs.file-max", n,
          xstrdup("As root: `sysctl -w fs.file-max=9223372036854775807`, and a file under /etc/sysctl.d/."));
  if (max < 0) {
    c->status = HUTCH_CHECK_SKIP;
    report_detail(c, "not readable");
    return;
  }
  report_detail(c, "%ld (%ld open): about %ld more sandboxes, %d open files each", max, used, n, SANDBOX_FILES);
}

/* pids.max of our cgroup and every one above it: sandboxes stay under the
 * cgroup hutch runs in (in their own cgroups below it, or in it). */
static void check_pids_cgroup(struct ladder *l, struct capacity *cap) {
  enum cgroup_mode mode = cgroup_detect_mode();
  const char *mount = cgroup_v2_mount(mode);
  _cleanup_free_ char *self = read_file_at(AT_FDCWD, "/proc/self/cgroup", 64 * 1024, NULL);
  _cleanup_free_ char *path = NULL;
  _cleanup_free_ char *v1root = NULL;
  if (mode == CGROUP_MODE_V2) {
    path = self ? limits_cgroup2_path(self) : NULL;
  } else if (mode != CGROUP_MODE_NONE && self) {
    /* The pids controller on v1: "N:pids:/path". */
    const char *p = strstr(self, ":pids:/");
    if (p) {
      path = xstrndup(p + 6, strcspn(p + 6, "\n"));
      mount = v1root = xstrdup("/sys/fs/cgroup/pids");
    }
  }
  struct hutch_check *c = NULL;
  if (mount == NULL || path == NULL) {
    c = report_add(l->r, "capacity.pids_cgroup", "live sandboxes: cgroup pids.max", false);
    c->status = HUTCH_CHECK_SKIP;
    report_detail(c, "no pids controller over this process");
    return;
  }
  long best = -1, best_max = 0, best_cur = 0;
  _cleanup_free_ char *where = NULL;
  _cleanup_free_ char *walk = xstrdup(path);
  for (;;) {
    _cleanup_free_ char *dir = xasprintf("%s%s", mount, strcmp(walk, "/") == 0 ? "" : walk);
    _cleanup_free_ char *fmax = xasprintf("%s/pids.max", dir), *fcur = xasprintf("%s/pids.current", dir);
    _cleanup_free_ char *smax = read_file_at(AT_FDCWD, fmax, 64, NULL), *scur = read_file_at(AT_FDCWD, fcur, 64, NULL);
    if (smax && scur && strncmp(smax, "max", 3) != 0) {
      long m = strtol(smax, NULL, 10), cur = strtol(scur, NULL, 10);
      long n = allows(m, cur, 1);
      if (best < 0 || n < best) {
        best = n, best_max = m, best_cur = cur;
        free(where);
        where = xstrdup(walk);
      }
    }
    char *slash = strrchr(walk, '/');
    if (slash == NULL || strcmp(walk, "/") == 0)
      break;
    if (slash == walk)
      slash[1] = '\0';
    else
      *slash = '\0';
  }
  if (best < 0) {
    c = row(l, cap, "capacity.pids_cgroup", "live sandboxes: cgroup pids.max", -1, NULL);
    report_detail(c, "max in %s and every cgroup above it", path);
    return;
  }
  /* systemd's per-user TasksMax is the usual one (user-UID.slice). */
  char slice[64];
  snprintf(slice, sizeof(slice), "user-%u.slice", (unsigned)getuid());
  char *fix = strstr(where, slice)
                  ? xasprintf("As root: `systemctl set-property %s TasksMax=infinity` (or UserTasksMax= in "
                              "/etc/systemd/logind.conf on older systemd).",
                              slice)
                  : xasprintf("Raise pids.max of the cgroup %s (as its owner: `echo max > %s%s/pids.max`), or "
                              "TasksMax= of the systemd unit that owns it.",
                              where, mount, where);
  c = row(l, cap, "capacity.pids_cgroup", "live sandboxes: cgroup pids.max", best, fix);
  report_detail(c, "%ld in %s (%ld in use): about %ld more sandboxes", best_max, where, best_cur, best);
}

static void check_memory(struct ladder *l, struct capacity *cap) {
  _cleanup_free_ char *mi = read_file_at(AT_FDCWD, "/proc/meminfo", 16384, NULL);
  const char *a = mi ? strstr(mi, "MemAvailable:") : NULL;
  if (a == NULL)
    return;
  long kib = strtol(a + 13, NULL, 10);
  long n = allows(kib, 0, SANDBOX_KIB);
  struct hutch_check *c = row(l, cap, "capacity.memory", "live sandboxes: available memory", n,
                              xstrdup("More memory, or fewer live sandboxes: hutch cannot raise this one."));
  report_detail(c, "%ld MiB available: about %ld more sandboxes at about %d KiB each (kernel included)", kib / 1024, n,
                SANDBOX_KIB);
}

static void check_state_inodes(struct ladder *l, struct capacity *cap) {
  struct statvfs vf;
  if (l->state_fd < 0 || fstatvfs(l->state_fd, &vf) < 0 || vf.f_files == 0)
    return; /* no state directory (its own row says why), or no inode limit (btrfs) */
  long n = allows((long)vf.f_favail, 0, SANDBOX_INODES);
  struct hutch_check *c =
      row(l, cap, "capacity.state_inodes", "live sandboxes: inodes of the state directory", n,
          xstrdup("Use a state directory on a file system with free inodes: --state-dir DIR or HUTCH_STATE_DIR=DIR."));
  report_detail(c, "%lu free in %s: about %ld more sandboxes, %d inodes each", (unsigned long)vf.f_favail,
                l->state_path, n, SANDBOX_INODES);
}

void doctor_check_capacity(struct ladder *l) {
  struct capacity cap = {.allows = -1};
  check_pids(l, &cap);
  check_nproc(l, &cap);
  check_namespaces(l, &cap);
  check_files(l, &cap);
  check_pids_cgroup(l, &cap);
  check_memory(l, &cap);
  check_state_inodes(l, &cap);
  struct hutch_check *c = report_add(l->r, "capacity", "live sandboxes (the tightest limit)", false);
  if (cap.allows < 0) {
    c->status = HUTCH_CHECK_SKIP;
    report_detail(c, "no limit could be read");
    return;
  }
  c->status = cap.allows < CAPACITY_TARGET ? HUTCH_CHECK_WARN : HUTCH_CHECK_INFO;
  const struct hutch_check *t = &l->r->checks[cap.tightest];
  const char *name = strchr(t->title, ':');
  report_detail(c, "about %ld more idle sandboxes from `hutch create`; %s is reached first", cap.allows,
                name ? name + 2 : t->title);
  if (t->fix)
    report_fix(c, xstrdup(t->fix));
}
