/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>

#include "policy.h"
#include "util.h"

#define CGROUP_MOUNT "/sys/fs/cgroup"
#define HYBRID_MOUNT "/sys/fs/cgroup/unified"
/* hutch's own leaf under the parent, used when it must leave a cgroup to
 * enable controllers there. */
#define SELF_LEAF "self"

#define FIX_DELEGATE                                                                                                   \
  "have root delegate the controllers to users: a drop-in /etc/systemd/system/user@.service.d/delegate.conf with "     \
  "\"[Service]\" and \"Delegate=cpu cpuset io memory pids\", then systemctl daemon-reload and log in again"
#define FIX_SCOPE "run hutch in a delegated scope: systemd-run --user --scope -p Delegate=yes hutch ..."
#define FIX_CONTAINER                                                                                                  \
  "inside a container, give it a writable cgroup of its own (docker/podman --cgroupns=private with a read-write "      \
  "cgroup mount, podman --cgroups=split)"
#define FIX_NOCG "or pass --no-cgroups to use rlimits"

const char *cgroup_mode_name(enum cgroup_mode mode) {
  switch (mode) {
  case CGROUP_MODE_V2:
    return "cgroup v2";
  case CGROUP_MODE_HYBRID:
    return "hybrid (cgroup v1 controllers, cgroup2 without them)";
  case CGROUP_MODE_V1:
    return "cgroup v1";
  default:
    return "no cgroup file system";
  }
}

enum cgroup_mode cgroup_detect_mode(void) {
  struct statfs fs;
  if (statfs(CGROUP_MOUNT, &fs) < 0)
    return CGROUP_MODE_NONE;
  if (fs.f_type == CGROUP2_SUPER_MAGIC)
    return CGROUP_MODE_V2;
  if (statfs(HYBRID_MOUNT, &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC)
    return CGROUP_MODE_HYBRID;
  if (statfs(CGROUP_MOUNT, &fs) == 0 && fs.f_type == TMPFS_MAGIC)
    return CGROUP_MODE_V1;
  return CGROUP_MODE_NONE;
}

const char *cgroup_v2_mount(enum cgroup_mode mode) {
  return mode == CGROUP_MODE_V2 ? CGROUP_MOUNT : mode == CGROUP_MODE_HYBRID ? HYBRID_MOUNT : NULL;
}

void cgroup_where_clear(struct cgroup_where *w) {
  free(w->mount);
  free(w->self);
  free(w->base);
  free(w->parent);
  w->mount = w->self = w->base = w->parent = NULL;
}

static char *join(const char *a, const char *b) {
  /* Relative cgroup paths start with '/'; "/" itself adds nothing. */
  if (strcmp(b, "/") == 0)
    return xstrdup(a);
  size_t n = strlen(a);
  return xasprintf("%s%s%s", a, n && a[n - 1] == '/' ? "" : "/", b[0] == '/' ? b + 1 : b);
}

static char *read_cg(const char *mount, const char *rel, const char *file) {
  _cleanup_free_ char *dir = join(mount, rel);
  _cleanup_free_ char *path = join(dir, file);
  return read_file_at(AT_FDCWD, path, 64 * 1024, NULL);
}

static bool under(const char *path, const char *prefix) {
  if (strcmp(prefix, "/") == 0)
    return true;
  size_t n = strlen(prefix);
  return strncmp(path, prefix, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* A --cgroup-parent given as a path under the mount or relative to it. */
static char *normalize_parent(const char *mount, const char *p, hutch_error_t *err) {
  if (under(p, mount))
    p += strlen(mount);
  if (p[0] == '\0')
    return xstrdup("/");
  if (p[0] != '/') {
    hutch_error_set(err, EINVAL, "--cgroup-parent %s: not an absolute cgroup path", p);
    hutch_error_hint(err, "name it as shown in /proc/self/cgroup, e.g. /hutch.slice, or as %s/...", mount);
    return NULL;
  }
  for (const char *c = p; *c;) {
    c += strspn(c, "/");
    size_t n = strcspn(c, "/");
    if ((n == 2 && strncmp(c, "..", 2) == 0) || (n == 1 && c[0] == '.')) {
      hutch_error_set(err, EINVAL, "--cgroup-parent %s: '.' and '..' are not allowed", p);
      return NULL;
    }
    c += n;
  }
  size_t n = strlen(p);
  while (n > 1 && p[n - 1] == '/')
    n--;
  return xstrndup(p, n);
}

static int missing_controllers(const char *have, const char *want, char *buf, size_t len) {
  buf[0] = '\0';
  _cleanup_free_ char *copy = xstrdup(want);
  char *save = NULL;
  int n = 0;
  for (char *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
    if (!limits_has_word(have, w)) {
      size_t l = strlen(buf);
      snprintf(buf + l, len - l, "%s%s", l ? " " : "", w);
      n++;
    }
  }
  return n;
}

static int locate(const struct limits_plan *plan, struct cgroup_where *w, hutch_error_t *err) {
  w->mode = cgroup_detect_mode();
  if (w->mode != CGROUP_MODE_V2) {
    if (w->mode == CGROUP_MODE_HYBRID)
      hutch_error_set(err, 0,
                      "cgroups: hybrid cgroup setup on this host (cpu, memory and pids are cgroup v1 controllers, the "
                      "cgroup2 hierarchy at " HYBRID_MOUNT " has none), and hutch uses cgroup v2 only");
    else if (w->mode == CGROUP_MODE_V1)
      hutch_error_set(err, 0,
                      "cgroups: this host uses cgroup v1 (" CGROUP_MOUNT " is not cgroup2), and hutch uses cgroup v2 "
                      "only");
    else
      hutch_error_set(err, ENOENT, "cgroups: no cgroup file system at " CGROUP_MOUNT);
    return hutch_error_hint(err,
                            "boot the host with the unified cgroup v2 hierarchy (kernel parameter "
                            "systemd.unified_cgroup_hierarchy=1); %s; " FIX_NOCG,
                            FIX_CONTAINER);
  }
  w->mount = xstrdup(CGROUP_MOUNT);
  _cleanup_free_ char *proc = read_file_at(AT_FDCWD, "/proc/self/cgroup", 64 * 1024, NULL);
  w->self = proc ? limits_cgroup2_path(proc) : NULL;
  if (w->self == NULL) {
    hutch_error_set(err, proc ? ENOENT : errno, "cgroups: no cgroup v2 path in /proc/self/cgroup");
    return -1;
  }
  bool root = geteuid() == 0;
  _cleanup_free_ char *parent = NULL;
  if (plan->cgroup_parent) {
    if ((parent = normalize_parent(w->mount, plan->cgroup_parent, err)) == NULL)
      return -1;
  }
  if (root) {
    w->base = xstrdup("/");
    w->parent = parent ? steal_pointer(&parent) : xstrdup("/hutch");
  } else {
    /* hutch's own leaf: the cgroup to start from is the one above it. */
    _cleanup_free_ char *own = xstrdup(w->self);
    static const char tail[] = "/hutch/" SELF_LEAF;
    size_t n = strlen(own), t = sizeof(tail) - 1;
    if (n > t && strcmp(own + n - t, tail) == 0)
      own[n - t] = '\0';
    if (parent && !under(parent, own))
      w->base = xstrdup(parent);
    else
      w->base = steal_pointer(&own);
    w->parent = parent ? steal_pointer(&parent) : join(w->base, "hutch");
  }

  _cleanup_free_ char *basedir = join(w->mount, w->base);
  if (access(basedir, W_OK) < 0) {
    int e = errno;
    if (e == EROFS) {
      hutch_error_set(err, e, "cgroups: %s is mounted read-only", w->mount);
      hutch_error_hint(err, "%s; " FIX_NOCG, FIX_CONTAINER);
      return -1;
    }
    if (root) {
      hutch_error_set(err, e, "cgroups: cannot write %s", basedir);
      hutch_error_hint(err, "%s; " FIX_NOCG, FIX_CONTAINER);
      return -1;
    }
    hutch_error_set(err, e, "cgroups: cgroup %s is not delegated to uid %d (hutch may not write %s)", w->base,
                    (int)geteuid(), basedir);
    hutch_error_hint(err, FIX_SCOPE "; " FIX_DELEGATE "; or run hutch as root; %s; " FIX_NOCG, FIX_CONTAINER);
    return -1;
  }
  if (!root) {
    static const char *const files[] = {"cgroup.procs", "cgroup.subtree_control"};
    for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
      _cleanup_free_ char *f = join(basedir, files[i]);
      if (access(f, W_OK) < 0) {
        hutch_error_set(err, errno, "cgroups: cgroup %s is not delegated to uid %d (%s is not writable)", w->base,
                        (int)geteuid(), f);
        hutch_error_hint(err, FIX_SCOPE "; " FIX_DELEGATE "; or run hutch as root; " FIX_NOCG);
        return -1;
      }
    }
  }
  _cleanup_free_ char *have = read_cg(w->mount, w->base, "cgroup.controllers");
  if (have == NULL) {
    hutch_error_sys(err, "cgroups: read %s/cgroup.controllers", basedir);
    return -1;
  }
  have[strcspn(have, "\n")] = '\0';
  snprintf(w->controllers, sizeof(w->controllers), "%s", have);
  char want[64], missing[64];
  limits_plan_controllers(plan, want, sizeof(want));
  if (missing_controllers(have, want, missing, sizeof(missing)) > 0) {
    hutch_error_set(err, 0, "cgroups: controller%s %s not available in cgroup %s (cgroup.controllers: %s)",
                    strchr(missing, ' ') ? "s" : "", missing, w->base, have[0] ? have : "empty");
    if (root)
      hutch_error_hint(err, "enable them in the cgroups above (cgroup.subtree_control); %s; " FIX_NOCG, FIX_CONTAINER);
    else
      hutch_error_hint(err, FIX_DELEGATE "; " FIX_SCOPE "; or run hutch as root; " FIX_NOCG);
    return -1;
  }
  return 0;
}

int cgroup_locate(const struct limits_plan *plan, struct cgroup_where *w, hutch_error_t *err) {
  *w = (struct cgroup_where){0};
  if (locate(plan, w, err) == 0)
    return 0;
  cgroup_where_clear(w);
  return -1;
}

static int write_cg_file(const char *dir, const char *file, const char *value) {
  _cleanup_free_ char *path = join(dir, file);
  _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t n = write(fd, value, strlen(value));
  return n == (ssize_t)strlen(value) ? 0 : -1;
}

/* Enable the wanted controllers in dir's cgroup.subtree_control (only
 * those missing: writing needs no permission when nothing changes, and
 * every write costs). */
static int enable_controllers(const char *dir, const char *want) {
  _cleanup_free_ char *path = join(dir, "cgroup.subtree_control");
  _cleanup_free_ char *have = read_file_at(AT_FDCWD, path, 4096, NULL);
  if (have == NULL)
    return -1;
  char missing[64], line[128] = "";
  if (missing_controllers(have, want, missing, sizeof(missing)) == 0)
    return 0;
  _cleanup_free_ char *copy = xstrdup(missing);
  char *save = NULL;
  for (char *c = strtok_r(copy, " ", &save); c; c = strtok_r(NULL, " ", &save)) {
    size_t l = strlen(line);
    snprintf(line + l, sizeof(line) - l, "%s+%s", l ? " " : "", c);
  }
  return write_cg_file(dir, "cgroup.subtree_control", line);
}

static int mkdir_cg(const char *path) {
  if (mkdir(path, 0755) < 0 && errno != EEXIST)
    return -1;
  return 0;
}

/* Move hutch into <parent>/self, so that the cgroup it was in holds no
 * process and may get controllers. */
static int move_self(struct cgroup_where *w, hutch_error_t *err) {
  _cleanup_free_ char *rel = join(w->parent, SELF_LEAF);
  _cleanup_free_ char *dir = join(w->mount, rel);
  if (mkdir_cg(dir) < 0)
    return hutch_error_sys(err, "cgroups: create %s", dir);
  if (write_cg_file(dir, "cgroup.procs", "0") < 0)
    return hutch_error_sys(err, "cgroups: move hutch into %s", dir);
  free(w->self);
  w->self = steal_pointer(&rel);
  return 0;
}

static int write_limits(const char *dir, const struct limits_plan *plan, hutch_error_t *err) {
  char v[64];
  if (plan->memory_src) {
    snprintf(v, sizeof(v), "%llu", (unsigned long long)plan->memory);
    if (write_cg_file(dir, "memory.max", v) < 0)
      return hutch_error_sys(err, "cgroups: write memory.max %s in %s", v, dir);
  }
  if (plan->memory_src || plan->swap_explicit) {
    snprintf(v, sizeof(v), "%llu", (unsigned long long)plan->swap);
    /* Kernels without swap accounting have no memory.swap.max: nothing
     * can swap then, which is what 0 asks for. */
    if (write_cg_file(dir, "memory.swap.max", v) < 0 && (errno != ENOENT || plan->swap_explicit))
      return hutch_error_sys(err, "cgroups: write memory.swap.max %s in %s", v, dir);
  }
  if (plan->cpus_src) {
    snprintf(v, sizeof(v), "%llu %llu", (unsigned long long)plan->cpu_quota_usec,
             (unsigned long long)plan->cpu_period_usec);
    if (write_cg_file(dir, "cpu.max", v) < 0)
      return hutch_error_sys(err, "cgroups: write cpu.max \"%s\" in %s", v, dir);
  }
  if (plan->pids_src) {
    snprintf(v, sizeof(v), "%llu", (unsigned long long)plan->pids);
    if (write_cg_file(dir, "pids.max", v) < 0)
      return hutch_error_sys(err, "cgroups: write pids.max %s in %s", v, dir);
  }
  if (plan->io_weight_src) {
    snprintf(v, sizeof(v), "default %llu", (unsigned long long)plan->io_weight);
    if (write_cg_file(dir, "io.weight", v) < 0)
      return hutch_error_sys(err, "cgroups: write io.weight \"%s\" in %s", v, dir);
  }
  return 0;
}

int cgroup_create(struct cgroup_where *w, const struct limits_plan *plan, const char *id, struct sandbox_cgroup *out,
                  hutch_error_t *err) {
  *out = (struct sandbox_cgroup){.fd = -1};
  char want[64];
  limits_plan_controllers(plan, want, sizeof(want));
  /* The cgroups from base down to the parent: each is created, and gets
   * the controllers enabled so that the leaf below the parent has them. */
  char *levels[64];
  size_t n_levels = 0;
  levels[n_levels++] = xstrdup(w->base);
  size_t from = strcmp(w->base, "/") == 0 ? 0 : strlen(w->base);
  for (size_t i = from + 1; w->parent[i - 1] != '\0' && n_levels < ARRAY_SIZE(levels); i++)
    if (w->parent[i] == '/' || w->parent[i] == '\0')
      levels[n_levels++] = xstrndup(w->parent, i);
  int r = 0;
  for (size_t l = 0; l < n_levels && r == 0; l++) {
    _cleanup_free_ char *dir = join(w->mount, levels[l]);
    if (l > 0 && mkdir_cg(dir) < 0)
      r = hutch_error_sys(err, "cgroups: create %s", dir);
  }
  for (size_t l = 0; l < n_levels && r == 0; l++) {
    _cleanup_free_ char *dir = join(w->mount, levels[l]);
    if (enable_controllers(dir, want) == 0)
      continue;
    if (errno == EBUSY && strcmp(w->self, levels[l]) == 0) {
      /* The "no internal processes" rule: hutch itself is in this cgroup. */
      if ((r = move_self(w, err)) < 0)
        break;
      if (enable_controllers(dir, want) == 0)
        continue;
    }
    int e = errno;
    r = hutch_error_set(err, e, "cgroups: enable %s in %s/cgroup.subtree_control", want, dir);
    if (e == EBUSY)
      hutch_error_hint(err,
                       "cgroup %s holds processes other than hutch, and a cgroup with processes cannot give "
                       "controllers to the cgroups below it (\"no internal processes\"): " FIX_SCOPE
                       ", or move those processes into a leaf cgroup first; " FIX_NOCG,
                       levels[l]);
    else
      hutch_error_hint(err, FIX_DELEGATE "; " FIX_NOCG);
  }
  for (size_t l = 0; l < n_levels; l++)
    free(levels[l]);
  if (r < 0)
    return -1;
  _cleanup_free_ char *parent_dir = join(w->mount, w->parent);
  _cleanup_free_ char *leaf = join(parent_dir, id);
  if (mkdir(leaf, 0755) < 0)
    return hutch_error_sys(err, "cgroups: create %s", leaf);
  if (write_limits(leaf, plan, err) < 0) {
    rmdir(leaf);
    return -1;
  }
  out->fd = open(leaf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (out->fd < 0) {
    hutch_error_sys(err, "cgroups: open %s", leaf);
    rmdir(leaf);
    return -1;
  }
  out->path = steal_pointer(&leaf);
  return 0;
}

void sandbox_cgroup_release(struct sandbox_cgroup *cg) {
  if (cg->fd >= 0)
    close(cg->fd);
  cg->fd = -1;
  free(cg->path);
  cg->path = NULL;
}

int cgroup_enter(const char *path, pid_t pid, hutch_error_t *err) {
  char v[32];
  snprintf(v, sizeof(v), "%d", (int)pid);
  if (write_cg_file(path, "cgroup.procs", v) < 0)
    return hutch_error_sys(err, "cgroups: move the sandbox into %s", path);
  return 0;
}

static bool populated(const char *path) {
  _cleanup_free_ char *events = read_cg(path, "/", "cgroup.events");
  uint64_t v = 0;
  return events == NULL || !limits_keyed_value(events, "populated", &v) || v != 0;
}

int cgroup_remove(const char *path, hutch_error_t *err) {
  if (path == NULL || path[0] == '\0')
    return 0;
  if (rmdir(path) == 0 || errno == ENOENT)
    return 0;
  if (errno != EBUSY)
    return hutch_error_sys(err, "cgroups: remove %s", path);
  /* Something still lives there: cgroup.kill (5.14+) takes every process
   * of the subtree at once, including those forked meanwhile. */
  if (write_cg_file(path, "cgroup.kill", "1") < 0 && errno != ENOENT)
    return hutch_error_sys(err, "cgroups: kill the processes of %s", path);
  if (errno == ENOENT) {
    _cleanup_free_ char *procs = read_cg(path, "/", "cgroup.procs");
    for (char *p = procs; p && *p;) {
      kill((pid_t)strtol(p, &p, 10), SIGKILL);
      p += strspn(p, "\n");
    }
  }
  double deadline = monotonic_seconds() + 5;
  _cleanup_free_ char *events = join(path, "cgroup.events");
  for (;;) {
    if (rmdir(path) == 0 || errno == ENOENT)
      return 0;
    if (errno != EBUSY || monotonic_seconds() > deadline)
      return hutch_error_sys(err, "cgroups: remove %s", path);
    /* cgroup.events signals POLLPRI when "populated" changes. */
    _cleanup_close_ int fd = open(events, O_RDONLY | O_CLOEXEC);
    if (fd >= 0 && populated(path)) {
      struct pollfd pfd = {fd, POLLPRI, 0};
      poll(&pfd, 1, 50);
    } else {
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, NULL);
    }
  }
}

int cgroup_freeze(const char *path, bool on, double timeout, hutch_error_t *err) {
  if (cgroup_freeze_set(path, on, err) < 0)
    return -1;
  return cgroup_freeze_wait(path, on, timeout, err);
}

int cgroup_freeze_set(const char *path, bool on, hutch_error_t *err) {
  if (write_cg_file(path, "cgroup.freeze", on ? "1" : "0") < 0)
    return hutch_error_sys(err, "cgroups: write %s/cgroup.freeze", path);
  return 0;
}

int cgroup_freeze_wait(const char *path, bool on, double timeout, hutch_error_t *err) {
  _cleanup_free_ char *events = join(path, "cgroup.events");
  double deadline = monotonic_seconds() + timeout;
  for (;;) {
    _cleanup_free_ char *text = read_cg(path, "/", "cgroup.events");
    uint64_t v = 2;
    if (text == NULL)
      return hutch_error_sys(err, "cgroups: read %s", events);
    if (limits_keyed_value(text, "frozen", &v) && v == (on ? 1 : 0))
      return 0;
    if (monotonic_seconds() > deadline)
      return hutch_error_set(err, ETIMEDOUT, "cgroups: %s did not become %s within %.0f s", path,
                             on ? "frozen" : "thawed", timeout);
    /* cgroup.events signals POLLPRI when "frozen" changes. */
    _cleanup_close_ int fd = open(events, O_RDONLY | O_CLOEXEC);
    struct pollfd pfd = {fd, POLLPRI, 0};
    if (fd < 0 || poll(&pfd, 1, 20) < 0) {
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, NULL);
    }
  }
}

void cgroup_read_usage(const char *path, struct hutch_usage *u) {
  *u = (struct hutch_usage){0};
  if (path == NULL || path[0] == '\0')
    return;
  _cleanup_free_ char *events = read_cg(path, "/", "memory.events");
  if (events)
    limits_keyed_value(events, "oom_kill", &u->oom_kills);
  _cleanup_free_ char *peak = read_cg(path, "/", "memory.peak");
  if (peak)
    u->memory_peak = strtoull(peak, NULL, 10);
  _cleanup_free_ char *max = read_cg(path, "/", "memory.max");
  if (max && strncmp(max, "max", 3) != 0)
    u->memory_max = strtoull(max, NULL, 10);
  _cleanup_free_ char *cpu = read_cg(path, "/", "cpu.stat");
  if (cpu) {
    limits_keyed_value(cpu, "usage_usec", &u->cpu_usec);
    limits_keyed_value(cpu, "nr_throttled", &u->nr_throttled);
    limits_keyed_value(cpu, "throttled_usec", &u->throttled_usec);
  }
}

int cgroup_peak_reset(const char *path) {
  _cleanup_free_ char *file = join(path, "memory.peak");
  int fd = open(file, O_RDWR | O_CLOEXEC);
  if (fd < 0)
    return -1;
  /* Any write resets the peak as seen through this fd (6.12+). */
  if (write(fd, "reset\n", 6) != 6) {
    close(fd);
    return -1;
  }
  return fd;
}

uint64_t cgroup_peak_read(int fd) {
  char buf[32];
  ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  return strtoull(buf, NULL, 10);
}

char *cgroup_explain(const struct limits_plan *plan) {
  if (!limits_plan_any(plan))
    return xstrdup("no limits set: no cgroup");
  if (plan->no_cgroups)
    return xstrdup("rlimits (--no-cgroups)");
  struct cgroup_where w;
  hutch_error_t err = NULL;
  if (cgroup_locate(plan, &w, &err) < 0) {
    char *s = xasprintf("%s: %s%s%s",
                        limits_plan_strict(plan) ? "refused"
                                                 : "rlimits (RLIMIT_DATA and the memory watchdog, RLIMIT_NPROC, "
                                                   "RLIMIT_CPU with --timeout)",
                        err->msg, err->hint ? "; fix: " : "", err->hint ? err->hint : "");
    hutch_error_free(&err);
    return s;
  }
  char want[64];
  limits_plan_controllers(plan, want, sizeof(want));
  _cleanup_free_ char *parent = join(w.mount, w.parent);
  char *s = xasprintf("cgroup v2: each sandbox in %s/<id> (controllers %s; delegated from %s, hutch in %s)", parent,
                      want, w.base, w.self);
  cgroup_where_clear(&w);
  return s;
}

static void status_set(struct hutch_limits_status *st, const char *mode, bool degraded, const char *reason) {
  snprintf(st->mode, sizeof(st->mode), "%s", mode);
  st->degraded = degraded;
  snprintf(st->reason, sizeof(st->reason), "%s", reason ? reason : "");
}

int cgroup_setup_limits(const struct limits_plan *plan, const char *id, double timeout, struct sandbox_cgroup *cg,
                        struct limits_rlimits *rl, struct hutch_limits_status *st, hutch_error_t *err) {
  *cg = (struct sandbox_cgroup){.fd = -1};
  rl->n = 0;
  *st = (struct hutch_limits_status){0};
  if (!limits_plan_any(plan)) {
    status_set(st, "none", false, NULL);
    return 0;
  }
  char gaps[256];
  limits_rlimits_gaps(plan, timeout, gaps, sizeof(gaps));
  if (plan->no_cgroups) {
    limits_plan_rlimits(plan, timeout, rl);
    _cleanup_free_ char *why =
        xasprintf("--no-cgroups: rlimits per process instead of a cgroup%s%s", gaps[0] ? "; not limited: " : "", gaps);
    status_set(st, "rlimits", true, why);
    return 0;
  }
  struct cgroup_where w;
  hutch_error_t cause = NULL;
  if (cgroup_locate(plan, &w, &cause) == 0) {
    int r = cgroup_create(&w, plan, id, cg, &cause);
    cgroup_where_clear(&w);
    if (r == 0) {
      status_set(st, "cgroup", false, NULL);
      snprintf(st->cgroup, sizeof(st->cgroup), "%s", cg->path);
      return 0;
    }
  }
  if (limits_plan_strict(plan)) {
    char names[256];
    limits_plan_strict_names(plan, names, sizeof(names));
    hutch_error_move(err, &cause);
    return hutch_error_wrap(err, "resource limits: %s cannot be applied without a cgroup, and hutch does not drop them",
                            names);
  }
  limits_plan_rlimits(plan, timeout, rl);
  /* errno adds nothing to these causes but EACCES/EBUSY, which they name. */
  _cleanup_free_ char *why = xasprintf("%s%s%s", cause->msg, gaps[0] ? "; not limited: " : "", gaps);
  status_set(st, "rlimits", true, why);
  /* One short line: what is not limited, and where the cause and the fix
   * are (the whole of it is in state.json and --json).  The start prints
   * it (sandbox_start.c: once a day; a policy the user writes may silence
   * it); --json always carries it. */
  char names[128];
  limits_rlimits_gap_names(plan, timeout, names, sizeof(names));
  snprintf(st->warning, sizeof(st->warning), "limits: no cgroup here: rlimits per process%s%s%s; see `hutch doctor`",
           plan->memory_src ? ", memory watched by init" : "", names[0] ? "; not limited: " : "", names);
  hutch_error_free(&cause);
  return 0;
}

/* `hutch policy show [--effective]`: the policy is described by policy.c;
 * where its limits go on this host is known here, and passed in. */
static char *limits_on_host(const struct hutch_policy *p) {
  struct limits_plan plan;
  limits_plan_make(NULL, &p->settings.limits, &plan);
  return cgroup_explain(&plan);
}

int hutch_policy_describe(const struct hutch_policy *p, bool effective, FILE *out, hutch_error_t *err) {
  _cleanup_free_ char *on_host = effective ? limits_on_host(p) : NULL;
  return policy_describe(p, on_host, out, err);
}

int hutch_policy_describe_json(const struct hutch_policy *p, bool effective, FILE *out, hutch_error_t *err) {
  _cleanup_free_ char *on_host = effective ? limits_on_host(p) : NULL;
  return policy_describe_json(p, on_host, out, err);
}
