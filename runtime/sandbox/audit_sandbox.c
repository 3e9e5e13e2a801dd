/* SPDX-License-Identifier: Apache-2.0 */
/* The records of a sandbox's audit log (audit_sandbox.h, hutch-audit(5)).
 * Every value a sandbox chose (argv, paths, proxy lines) is escaped and
 * bounded by the record builder (audit.c); the log itself is hutch's. */
#include "config.h"

#include "audit_sandbox.h"
#include "cdi.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit.h"
#include "audit_proxy.h"
#include "policy.h"
#include "request.h"
#include "sha256.h"
#include "signal_names.h"
#include "util.h"

static int sandbox_dir(int state_fd, const char *id) {
  return openat(state_fd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* A record that cannot be written is logged, not fatal: the sandbox's
 * work goes on, and the gap shows in the verification (or the warning).
 * A sandbox removed meanwhile (`hutch rm` while exec --in ran: its
 * directory gone, or its log ended) is no news. */
static void warn_unless_gone(hutch_error_t *err) {
  if (*err) {
    bool gone = (*err)->errnum == ENOENT || (*err)->errnum == EPIPE;
    hutch_log_error(gone ? HUTCH_LOG_DEBUG : HUTCH_LOG_WARNING, *err);
    hutch_error_free(err);
  }
}

/* ---- a handle's sink ---- */

struct audit_sink {
  int refs;
  pthread_mutex_t lock; /* the log's lock is its open file's: threads of this process take turns here */
  int state_fd;
  char id[40];
  struct audit_log log; /* log_fd -1: not open yet */
};

struct audit_sink *audit_sink_new(int state_fd, const char *id) {
  struct audit_sink *s = xcalloc(1, sizeof(*s));
  s->refs = 1;
  pthread_mutex_init(&s->lock, NULL);
  s->state_fd = fcntl(state_fd, F_DUPFD_CLOEXEC, 3);
  snprintf(s->id, sizeof(s->id), "%s", id);
  s->log = (struct audit_log){.log_fd = -1, .head_fd = -1};
  return s;
}

static struct audit_sink *sink_ref(struct audit_sink *s) {
  if (s)
    __atomic_add_fetch(&s->refs, 1, __ATOMIC_ACQ_REL);
  return s;
}

void audit_sink_unref(struct audit_sink *s) {
  if (s == NULL || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) > 0)
    return;
  audit_log_close(&s->log);
  if (s->state_fd >= 0)
    close(s->state_fd);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

/* Opened at the first command or record: a sandbox opened by id may have
 * none, and one whose directory is gone (removed meanwhile) is tried again
 * next time. */
static int sink_open_locked(struct audit_sink *s, hutch_error_t *err) {
  if (s->log.log_fd >= 0)
    return 0;
  _cleanup_close_ int dfd = s->state_fd >= 0 ? sandbox_dir(s->state_fd, s->id) : -1;
  if (dfd < 0)
    return hutch_error_sys(err, "audit log: open sandbox %s's directory", s->id);
  return audit_log_open(dfd, AUDIT_LOG_NAME, &s->log, err);
}

int audit_sink_ready(struct audit_sink *s, hutch_error_t *err) {
  if (s == NULL)
    return 0;
  pthread_mutex_lock(&s->lock);
  int rc = sink_open_locked(s, err);
  pthread_mutex_unlock(&s->lock);
  return rc;
}

static void sink_append(struct audit_sink *s, const struct audit_rec *recs, size_t n) {
  hutch_error_t err = NULL;
  pthread_mutex_lock(&s->lock);
  if (sink_open_locked(s, &err) == 0)
    audit_log_append_n(&s->log, 0, recs, n, &err);
  pthread_mutex_unlock(&s->lock);
  warn_unless_gone(&err);
}

/* "sha256:HEX" of an image from its tree's place in the store
 * (.../images/sha256-HEX/rootfs), else NULL. */
static char *image_digest(const char *rootfs) {
  const char *p = rootfs ? strstr(rootfs, "/sha256-") : NULL;
  if (p == NULL || strlen(p + 8) < 64)
    return NULL;
  return xasprintf("sha256:%.64s", p + 8);
}

int audit_sandbox_start(int sbfd, const char *id, const struct hutch_sandbox_config *cfg,
                        const struct hutch_policy *policy, const struct hutch_limits_status *limits,
                        const struct net_host *net, bool long_lived, const char *name, const char *const *labels,
                        const struct cdi_resolved *devices, const char *const *ports, const char *forked_from,
                        const char *user, hutch_error_t *err) {
  struct audit_rec r;
  audit_rec_init(&r, "start");
  audit_rec_str(&r, "sandbox", id);
  audit_rec_str(&r, "kind", long_lived ? "long-lived" : "one-shot");
  audit_rec_caller(&r);
  audit_rec_str(&r, "policy", policy->path);
  _cleanup_free_ char *policy_digest = xasprintf("sha256:%s", policy->file_digest);
  audit_rec_str(&r, "policy_digest", policy_digest);
  _cleanup_free_ char *seccomp = xasprintf("sha256:%s", policy->digest);
  audit_rec_str(&r, "seccomp_digest", seccomp);
  audit_rec_str(&r, "image", cfg->image);
  _cleanup_free_ char *digest = image_digest(cfg->rootfs);
  audit_rec_str(&r, "image_digest", digest);
  audit_rec_str(&r, "rootfs", cfg->rootfs);
  audit_rec_str(&r, "limits", limits->mode);
  audit_rec_str(&r, "cgroup", limits->cgroup[0] ? limits->cgroup : NULL);
  audit_rec_str(&r, "limits_reason", limits->reason[0] ? limits->reason : NULL);
  const char *degraded[5];
  size_t nd = 0;
  if (limits->degraded)
    degraded[nd++] = "limits";
  if (cfg->overlay == HUTCH_OVERLAY_FUSE)
    degraded[nd++] = HUTCH_DEGRADED_OVERLAY_FUSE;
  if (cfg->proc_host_ro)
    degraded[nd++] = HUTCH_DEGRADED_PROC_HOST_RO;
  if (limits->disk_unbounded)
    degraded[nd++] = HUTCH_DEGRADED_DISK_UNBOUNDED;
  degraded[nd] = NULL;
  audit_rec_strv(&r, "degraded", degraded);
  audit_rec_str(&r, "network", net->enabled ? "proxy" : "none");
  if (net->enabled) {
    _cleanup_strv_ char **allow = xcalloc(net->policy.n_allow + 1, sizeof(char *));
    for (size_t i = 0; i < net->policy.n_allow; i++)
      allow[i] = net->policy.allow[i].port ? xasprintf("%s:%u", net->policy.allow[i].pattern, net->policy.allow[i].port)
                                           : xstrdup(net->policy.allow[i].pattern);
    audit_rec_strv(&r, "allow", (const char *const *)allow);
    audit_rec_str(&r, "address", net->address);
  }
  _cleanup_strv_ char **binds = xcalloc(cfg->n_binds + 1, sizeof(char *));
  for (size_t i = 0; i < cfg->n_binds; i++)
    binds[i] = xasprintf("%s:%s:%s", cfg->binds[i].source, cfg->binds[i].dest, cfg->binds[i].readonly ? "ro" : "rw");
  audit_rec_strv(&r, "binds", (const char *const *)binds);
  audit_rec_bool(&r, "read_only_root", cfg->read_only_root);
  audit_rec_bool(&r, "build", cfg->build_caps);
  uint64_t cap = policy->settings.limits.audit_log ? policy->settings.limits.audit_log : AUDIT_DEFAULT_CAP;
  audit_rec_u64(&r, "cap", cap);
  if (name)
    audit_rec_str(&r, "name", name);
  if (labels && labels[0])
    audit_rec_strv(&r, "labels", labels);
  if (devices && devices->names) {
    /* The mounts are among "binds" (read-only); the env's keys only, as
     * their values may be the host's. */
    _cleanup_strv_ char **env_keys = xcalloc(strv_length((const char *const *)devices->env) + 1, sizeof(char *));
    for (size_t i = 0; devices->env && devices->env[i]; i++)
      env_keys[i] = xstrndup(devices->env[i], strcspn(devices->env[i], "="));
    audit_rec_strv(&r, "devices", (const char *const *)devices->names);
    audit_rec_strv(&r, "device_nodes", (const char *const *)devices->nodes_text);
    audit_rec_strv(&r, "device_env", (const char *const *)env_keys);
    audit_rec_strv(&r, "device_hooks_skipped", (const char *const *)devices->hooks);
  }
  if (ports && ports[0])
    audit_rec_strv(&r, "ports", ports);
  if (forked_from)
    audit_rec_str(&r, "forked_from", forked_from);
  /* Who its processes run as: a name is the image's /etc/passwd's, whose
   * digest is above; a fork's is the parent's ids, by number. */
  if (user)
    audit_rec_str(&r, "user", user);
  int rc = audit_append(sbfd, AUDIT_LOG_NAME, cap, &r, err);
  audit_rec_free(&r);
  return rc;
}

/* ---- commands ---- */

struct audit_cmd {
  struct audit_sink *sink;
  struct audit_rec rec;
  double start;
  /* Output into regular files: their sizes at the start (-1: not a file). */
  int out_fd[2];
  int64_t out_size[2];
};

static int64_t regular_size(int fd) {
  struct stat st;
  return fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? (int64_t)st.st_size : -1;
}

struct audit_cmd *audit_cmd_begin(struct audit_sink *sink, const char *const *argv, const char *workdir,
                                  const int stdio[3], bool tty, double start) {
  struct audit_cmd *c = xcalloc(1, sizeof(*c));
  c->sink = sink_ref(sink);
  c->start = start > 0 ? start : audit_now();
  audit_rec_init(&c->rec, "command");
  audit_rec_strv(&c->rec, "argv", argv);
  audit_rec_str(&c->rec, "cwd", workdir ? workdir : "/");
  audit_rec_bool(&c->rec, "tty", tty);
  for (int i = 0; i < 2; i++) {
    c->out_fd[i] = stdio ? stdio[i + 1] : -1;
    /* 2>&1: counted once (and not looked at twice) */
    c->out_size[i] = i == 1 && c->out_fd[1] == c->out_fd[0] ? -1 : regular_size(c->out_fd[i]);
  }
  return c;
}

struct audit_rec audit_cmd_finish(struct audit_cmd *c, const struct hutch_exit *ex, const char *how,
                                  const struct rusage *ru) {
  char when[40];
  audit_format_time(c->start, when, sizeof(when));
  audit_rec_str(&c->rec, "start", when);
  double end = audit_now();
  audit_format_time(end, when, sizeof(when));
  audit_rec_str(&c->rec, "end", when);
  audit_rec_double(&c->rec, "wall_seconds", end - c->start);
  if (ex == NULL) {
    audit_rec_str(&c->rec, "result", how);
  } else {
    const char *result = ex->timed_out          ? "timeout"
                         : ex->setup_failed     ? "setup failed"
                         : ex->exec_errno       ? "not started"
                         : ex->usage.oom_killed ? "out of memory"
                         : ex->signal           ? "signal"
                                                : "exited";
    audit_rec_str(&c->rec, "result", result);
    audit_rec_i64(&c->rec, "exit_code", hutch_exit_code(ex));
    if (ex->signal) {
      audit_rec_i64(&c->rec, "signal", ex->signal);
      audit_rec_str(&c->rec, "signal_name", signal_abbrev(ex->signal));
    } else {
      audit_rec_i64(&c->rec, "status", ex->status);
    }
    audit_rec_str(&c->rec, "failure", ex->failure[0] ? ex->failure : NULL);
    /* CPU and memory: the cgroup's counts, else what the reaped processes
     * used (a one-shot's init and all it reaped), else unknown. */
    if (ex->usage.cpu_usec || ex->usage.memory_peak) {
      audit_rec_double(&c->rec, "cpu_seconds", (double)ex->usage.cpu_usec / 1e6);
      audit_rec_u64(&c->rec, "memory_peak", ex->usage.memory_peak);
      audit_rec_str(&c->rec, "usage_from", "cgroup");
    } else if (ru != NULL) {
      audit_rec_double(&c->rec, "cpu_seconds",
                       (double)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) +
                           (double)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1e6);
      audit_rec_u64(&c->rec, "memory_peak", (uint64_t)ru->ru_maxrss * 1024);
      audit_rec_str(&c->rec, "usage_from", "wait4");
    } else {
      audit_rec_null(&c->rec, "cpu_seconds");
      audit_rec_null(&c->rec, "memory_peak");
      audit_rec_null(&c->rec, "usage_from");
    }
  }
  /* Bytes of output: known where it went into regular files. */
  bool known = false;
  uint64_t bytes = 0;
  for (int i = 0; i < 2; i++) {
    if (c->out_size[i] < 0)
      continue;
    int64_t now = regular_size(c->out_fd[i]);
    if (now >= c->out_size[i]) {
      bytes += (uint64_t)(now - c->out_size[i]);
      known = true;
    }
  }
  if (known)
    audit_rec_u64(&c->rec, "output_bytes", bytes);
  else
    audit_rec_null(&c->rec, "output_bytes");
  struct audit_rec r = c->rec;
  audit_sink_unref(c->sink);
  free(c);
  return r;
}

void audit_cmd_end(struct audit_cmd *c, const struct hutch_exit *ex, const char *how, const struct rusage *ru) {
  if (c == NULL)
    return;
  struct audit_sink *sink = sink_ref(c->sink);
  struct audit_rec r = audit_cmd_finish(c, ex, how, ru);
  if (sink != NULL)
    sink_append(sink, &r, 1);
  audit_sink_unref(sink);
  audit_rec_free(&r);
}

/* ---- files ---- */

/* The host side of a copy as an absolute path: the log does not record
 * the directory the caller worked in.  Joined, not resolved (no link on the
 * host is followed for the log). */
static char *host_path(const char *p) {
  char cwd[4096];
  if (p == NULL || p[0] == '/' || getcwd(cwd, sizeof(cwd)) == NULL)
    return xstrdup(p ? p : "");
  return xasprintf("%s%s%s", cwd, strcmp(cwd, "/") == 0 ? "" : "/", p);
}

void audit_sandbox_copy(struct audit_sink *sink, const struct audit_copy_desc *d, const char *files, size_t len,
                        const struct hutch_copy_report *rep, int result) {
  struct audit_recs rs = {0};
  size_t listed = audit_recs_files(&rs, d->direction, files, len);
  bool in = strcmp(d->direction, "in") == 0;
  _cleanup_free_ char *host = host_path(in ? d->src : d->dest);
  struct audit_rec *r = audit_recs_add(&rs, "copy");
  audit_rec_str(r, "direction", d->direction);
  audit_rec_str(r, "kind", d->kind);
  audit_rec_str(r, "from", in ? host : d->src);
  audit_rec_str(r, "to", in ? d->dest : host);
  static const char *const keys[] = {"files", "listed", "dirs", "bytes", "skipped", "renamed"};
  const uint64_t counts[] = {rep->files, listed, rep->dirs, rep->bytes, rep->skipped, rep->renamed};
  audit_rec_u64s(r, keys, counts, ARRAY_SIZE(keys));
  audit_rec_str(r, "stopped", rep->stopped);
  audit_rec_bool(r, "ok", result >= 0);
  if (sink != NULL)
    sink_append(sink, rs.v, rs.n);
  audit_recs_free(&rs);
}

void audit_sandbox_file(struct audit_sink *sink, const char *op, const char *direction, const char *path,
                        const void *data, size_t len, bool ok) {
  if (sink == NULL)
    return;
  char hex[SHA256_HEX_SIZE];
  if (data != NULL) {
    uint8_t digest[SHA256_DIGEST_SIZE];
    sha256_buffer(data, len, digest);
    sha256_hex(digest, hex);
  }
  struct audit_rec r;
  audit_rec_init(&r, "file");
  audit_rec_file(&r, direction, op, path, len, data ? hex : NULL);
  audit_rec_bool(&r, "ok", ok);
  sink_append(sink, &r, 1);
  audit_rec_free(&r);
}

/* ---- the end ---- */

static bool is_log_name(const char *name) {
  size_t l = strlen(name);
  return l >= 7 && l < 58 && strcmp(name + l - 6, ".jsonl") == 0;
}

struct archived {
  int64_t mtime;
  char name[64];
};

static int newest_first(const void *a, const void *b) {
  const struct archived *x = a, *y = b;
  return x->mtime < y->mtime ? 1 : x->mtime > y->mtime ? -1 : strcmp(x->name, y->name);
}

/* The logs in the archive, read from the directory; *e (may be NULL): each
 * one's name and age, newest first. */
static size_t archive_list(int adfd, struct archived **e) {
  int dup_fd = dup(adfd);
  _cleanup_dir_ DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
  if (d == NULL) {
    if (dup_fd >= 0)
      close(dup_fd);
    return 0;
  }
  size_t n = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    struct stat st;
    if (!is_log_name(de->d_name))
      continue;
    if (e == NULL) {
      n++;
      continue;
    }
    if (fstatat(adfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
      continue;
    *e = xrealloc(*e, (n + 1) * sizeof(**e));
    (*e)[n].mtime = st.st_mtime;
    /* is_log_name bounds the name; the precision says so to
     * -Wformat-truncation, which cannot see that at -O1. */
    snprintf((*e)[n].name, sizeof((*e)[n].name), "%.*s", (int)sizeof((*e)[n].name) - 1, de->d_name);
    n++;
  }
  if (e != NULL && n > 0)
    qsort(*e, n, sizeof(**e), newest_first);
  return n;
}

/* Past AUDIT_ARCHIVE_KEEP logs, the oldest go, down to AUDIT_ARCHIVE_TRIM;
 * returns how many are left. */
static size_t prune_archive(int adfd) {
  struct archived *e = NULL;
  size_t n = archive_list(adfd, &e);
  size_t left = n;
  if (n > AUDIT_ARCHIVE_KEEP) {
    for (size_t i = AUDIT_ARCHIVE_TRIM; i < n; i++) {
      unlinkat(adfd, e[i].name, 0);
      _cleanup_free_ char *head = xasprintf("%s" AUDIT_HEAD_SUFFIX, e[i].name);
      unlinkat(adfd, head, 0);
    }
    left = AUDIT_ARCHIVE_TRIM;
  }
  free(e);
  return left;
}

/* The tally: a file in the archive one byte longer per log moved in, so
 * that an end knows the count from one O_APPEND write and its size, without
 * reading the directory: at a thousand logs that read cost every one-shot
 * exec about 0.4 ms.  Appends need no lock (each adds its byte), and the
 * tally is only a hint of when to read the directory: past
 * AUDIT_ARCHIVE_KEEP the archive is counted for real and pruned, and the
 * tally set to what is left.  Without a tally (a first end, or an archive
 * filled by hand) the archive is counted at once. */
#define ARCHIVE_TALLY ".tally"

static void archive_bound(int adfd) {
  int fd = openat(adfd, ARCHIVE_TALLY, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (fd >= 0 && write(fd, "+", 1) == 1 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
      (uint64_t)st.st_size <= AUDIT_ARCHIVE_KEEP) {
    close(fd);
    return;
  }
  if (fd < 0)
    fd = openat(adfd, ARCHIVE_TALLY, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  size_t left = prune_archive(adfd);
  if (fd >= 0) {
    char fill[AUDIT_ARCHIVE_KEEP];
    memset(fill, '+', sizeof(fill));
    if (ftruncate(fd, 0) < 0 || pwrite(fd, fill, left, 0) < 0)
      unlinkat(adfd, ARCHIVE_TALLY, 0); /* counted again at the next end */
    close(fd);
  }
}

/* The log and its head renamed into the archive: no copy, and no fsync
 * (see audit.c's append_one). */
static void archive_log(int state_fd, const char *id) {
  int adfd = openat(state_fd, AUDIT_ARCHIVE_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (adfd < 0 && errno == ENOENT) {
    if (mkdirat(state_fd, AUDIT_ARCHIVE_DIR, 0700) < 0 && errno != EEXIST) {
      hutch_log_errno(HUTCH_LOG_WARNING, errno, "audit log: create %s", AUDIT_ARCHIVE_DIR);
      return;
    }
    adfd = openat(state_fd, AUDIT_ARCHIVE_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  }
  if (adfd < 0)
    return;
  /* The head first: a log without its head would pass as complete only
   * with its end record, which it has. */
  for (int i = 1; i >= 0; i--) {
    const char *suffix = i ? AUDIT_HEAD_SUFFIX : "";
    _cleanup_free_ char *from = xasprintf("%s/" AUDIT_LOG_NAME "%s", id, suffix);
    _cleanup_free_ char *to = xasprintf("%s.jsonl%s", id, suffix);
    if (renameat(state_fd, from, adfd, to) < 0 && errno != ENOENT)
      hutch_log_errno(HUTCH_LOG_WARNING, errno, "audit log: keep %s", from);
  }
  archive_bound(adfd);
  close(adfd);
}

void audit_sandbox_end(int state_fd, const char *id, const struct audit_rec *last_cmd, const char *reason,
                       const char *proxy_log, const char *copy_to, bool archive) {
  _cleanup_close_ int dfd = sandbox_dir(state_fd, id);
  struct stat st;
  if (dfd < 0 || fstatat(dfd, AUDIT_LOG_NAME, &st, AT_SYMLINK_NOFOLLOW) < 0)
    return; /* no log: the start failed before it, or it has been archived */
  struct audit_log log;
  hutch_error_t err = NULL;
  if (audit_log_open(dfd, AUDIT_LOG_NAME, &log, &err) < 0) {
    hutch_log_error(HUTCH_LOG_WARNING, err);
    hutch_error_free(&err);
    return;
  }
  /* The command, the proxy's lines and the end: one append, one head
   * update, unless the proxy's lines are many. */
  struct audit_batch b;
  audit_batch_init(&b, &log);
  if (last_cmd != NULL)
    audit_batch_borrow(&b, last_cmd);
  if (proxy_log != NULL)
    audit_proxy_join(&b, proxy_log);
  audit_rec_str(audit_batch_add(&b, "end"), "reason", reason);
  audit_batch_flush(&b);
  audit_batch_free(&b);
  audit_log_close(&log);
  if (copy_to && audit_copy_to(dfd, AUDIT_LOG_NAME, copy_to, &err) < 0) {
    hutch_log_error(HUTCH_LOG_WARNING, err);
    hutch_error_free(&err);
  }
  if (archive)
    archive_log(state_fd, id);
}
