/* SPDX-License-Identifier: Apache-2.0 */
/* Writing id maps and running helpers inside a user namespace (OS side of
 * idmap.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "idmap.h"
#include "sync.h"
#include "util.h"

extern char **environ;

int idmap_for_caller(const struct idmap_set **out, hutch_error_t *err) {
  static struct idmap_set maps;
  static bool computed;
  if (!computed) {
    uid_t uid = geteuid();
    gid_t gid = getegid();
    /* Root maps the identity and has no use for a subordinate range: no
     * passwd lookup (NSS) and no /etc/subuid, /etc/subgid for it. */
    bool root = uid == 0;
    struct passwd *pw = root ? NULL : getpwuid(uid);
    _cleanup_free_ char *subuid = root ? NULL : read_file_at(AT_FDCWD, "/etc/subuid", 1 << 20, NULL);
    _cleanup_free_ char *subgid = root ? NULL : read_file_at(AT_FDCWD, "/etc/subgid", 1 << 20, NULL);
    idmap_compute(uid, gid, pw ? pw->pw_name : NULL, subuid, subgid, &maps);
    if (maps.kind == IDMAP_ROOT) {
      _cleanup_free_ char *uid_map = read_file_at(AT_FDCWD, "/proc/self/uid_map", 1 << 16, NULL);
      _cleanup_free_ char *gid_map = read_file_at(AT_FDCWD, "/proc/self/gid_map", 1 << 16, NULL);
      struct idmap u, g;
      if (uid_map && gid_map && idmap_identity_within(uid_map, &u) && idmap_identity_within(gid_map, &g)) {
        maps.uid = u;
        maps.gid = g;
      }
      _cleanup_free_ char *setgroups = read_file_at(AT_FDCWD, "/proc/self/setgroups", 64, NULL);
      if (setgroups && strncmp(setgroups, "deny", 4) == 0)
        maps.setgroups_allowed = false;
    }
    if (maps.kind == IDMAP_SUBORDINATE && (access(NEWUIDMAP_PATH, X_OK) < 0 || access(NEWGIDMAP_PATH, X_OK) < 0)) {
      /* A range without the helpers to apply it is no range at all. */
      maps.uid.n = maps.gid.n = 1;
      maps.kind = IDMAP_SINGLE;
    }
    computed = true;
  }
  *out = &maps;
  (void)err;
  return 0;
}

int idmap_for_sandbox(bool subordinate_ids, const struct idmap_set **out, hutch_error_t *err) {
  static __thread struct idmap_set single; /* computed per call: no lock, no race */
  if (subordinate_ids || geteuid() == 0)
    return idmap_for_caller(out, err);
  /* A user's sandbox over an image without subordinate ids gets the single
   * mapping whether or not the user has a range (nothing in the image
   * belongs to ids 1..65535, and nothing in the sandbox can make them
   * appear), so the range is not looked up: no passwd lookup through NSS,
   * no /etc/subuid, /etc/subgid, no access() of the helpers. */
  idmap_compute(geteuid(), getegid(), NULL, NULL, NULL, &single);
  *out = &single;
  return 0;
}

const char *userns_failure_hint(int errnum) {
  switch (errnum) {
  case EPERM:
  case EACCES:
    return "unprivileged user namespaces are refused on this host. Check `sysctl user.max_user_namespaces` (must be "
           "> 0), `sysctl kernel.unprivileged_userns_clone` (Debian: must be 1) and, on Ubuntu 23.10+, the AppArmor "
           "restriction `kernel.apparmor_restrict_unprivileged_userns` (install hutch's AppArmor profile). Inside a "
           "container, the outer seccomp profile may refuse namespaces. Run `hutch doctor` for the exact cause";
  case ENOSPC:
    return "the user namespace limit is reached: raise `sysctl user.max_user_namespaces`";
  case EINVAL:
    return "the kernel refused the id map; a /etc/subuid or /etc/subgid range may overlap or be too large";
  default:
    return NULL;
  }
}

static int write_proc_file(pid_t pid, const char *name, const char *content, hutch_error_t *err) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
  _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0 || write_all(fd, content, strlen(content)) < 0) {
    hutch_error_sys(err, "user namespace: write %s", path);
    const char *hint = userns_failure_hint(errno);
    if (hint)
      hutch_error_hint(err, "%s", hint);
    return -1;
  }
  return 0;
}

static pid_t spawn_idmap_helper(const char *helper, pid_t pid, const struct idmap *map, hutch_error_t *err) {
  char *argv[2 + 3 * IDMAP_MAX_RANGES + 1];
  char numbers[1 + 3 * IDMAP_MAX_RANGES][16];
  size_t a = 0, k = 0;
  argv[a++] = (char *)helper;
  snprintf(numbers[k], 16, "%d", (int)pid);
  argv[a++] = numbers[k++];
  for (size_t i = 0; i < map->n; i++) {
    uint32_t v[3] = {map->ranges[i].inside, map->ranges[i].outside, map->ranges[i].count};
    for (int j = 0; j < 3; j++) {
      snprintf(numbers[k], 16, "%" PRIu32, v[j]);
      argv[a++] = numbers[k++];
    }
  }
  argv[a] = NULL;
  pid_t child;
  int r = posix_spawn(&child, helper, NULL, NULL, argv, environ);
  if (r != 0) {
    hutch_error_set(err, r, "user namespace: run %s", helper);
    hutch_error_hint(err, "install the uidmap package (newuidmap and newgidmap), or remove your /etc/subuid range to "
                          "run with a single-id mapping");
    return -1;
  }
  return child;
}

static int wait_idmap_helper(pid_t child, const char *helper, pid_t target, hutch_error_t *err) {
  int status;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR)
      return hutch_error_sys(err, "user namespace: wait for %s", helper);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    hutch_error_set(err, EPERM, "user namespace: %s %d failed (status %d)", helper, (int)target, status);
    hutch_error_hint(err,
                     "check that %s is setuid root (or has cap_setuid/cap_setgid) and that your ranges in "
                     "/etc/subuid and /etc/subgid are valid; its own message is printed above; `hutch doctor` "
                     "checks both",
                     helper);
    return -1;
  }
  return 0;
}

int userns_write_maps(pid_t pid, const struct idmap_set *maps, hutch_error_t *err) {
  if (maps->kind == IDMAP_SUBORDINATE) {
    /* The two setuid helpers are independent: run them side by side, so a
     * sandbox start pays for one exec round trip, not two. */
    pid_t u = spawn_idmap_helper(NEWUIDMAP_PATH, pid, &maps->uid, err);
    if (u < 0)
      return -1;
    pid_t g = spawn_idmap_helper(NEWGIDMAP_PATH, pid, &maps->gid, err);
    int ru = wait_idmap_helper(u, NEWUIDMAP_PATH, pid, err);
    if (g < 0)
      return -1;
    int rg = wait_idmap_helper(g, NEWGIDMAP_PATH, pid, err);
    return ru < 0 || rg < 0 ? -1 : 0;
  }
  _cleanup_free_ char *uid_map = idmap_format(&maps->uid);
  _cleanup_free_ char *gid_map = idmap_format(&maps->gid);
  if (maps->kind == IDMAP_SINGLE) {
    /* An unprivileged writer may map its own gid only after giving up
     * setgroups(2), or it could drop a group that denies it access. */
    if (write_proc_file(pid, "setgroups", "deny", err) < 0)
      return -1;
  }
  if (write_proc_file(pid, "uid_map", uid_map, err) < 0)
    return -1;
  if (write_proc_file(pid, "gid_map", gid_map, err) < 0)
    return -1;
  return 0;
}

struct userns_result {
  int32_t value;
};

/* The helper's next message.  EOF alone does not prove it sent nothing: a
 * blocking receive checks the queue and the peer's shutdown one after the
 * other, so a helper that answers and exits at once can be reported gone
 * with its answer still queued.  Once it is reaped its end is closed and
 * whatever it sent is queued for good: look once more, then say how it
 * ended. */
static int expect_from_helper(int fd, pid_t pid, bool *reaped, uint32_t want, void *payload, size_t cap,
                              const char *what, hutch_error_t *err) {
  uint32_t type = 0;
  int r = sync_recv(fd, &type, payload, cap, NULL, NULL, NULL, err);
  if (r == 0) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
      ;
    *reaped = true;
    r = sync_recv(fd, &type, payload, cap, NULL, NULL, NULL, err);
    if (r == 0 && WIFSIGNALED(status))
      return hutch_error_set(err, 0, "%s: killed by signal %d (%s) before answering", what, WTERMSIG(status),
                             strsignal(WTERMSIG(status)));
    if (r == 0)
      return hutch_error_set(err, 0, "%s: exited with status %d before answering", what, WEXITSTATUS(status));
  }
  if (r < 0)
    return -1;
  if (type != want)
    return hutch_error_set(err, EPROTO, "%s: unexpected message type %u (wanted %u)", what, type, want);
  return 0;
}

int userns_run(const struct idmap_set *maps, unsigned long extra_clone_flags, int (*fn)(void *data, hutch_error_t *err),
               void *data, hutch_error_t *err) {
  int sp[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
    return hutch_error_sys(err, "user namespace: socketpair");
  /* fork + unshare rather than a raw clone: the caller may have threads
   * (libcurl's resolver), and only fork() makes the child's libc sane. */
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(sp[0]);
    close(sp[1]);
    return hutch_error_sys(err, "user namespace: fork");
  }
  if (pid == 0) {
    close(sp[0]);
    hutch_error_t cerr = NULL;
    if (unshare(CLONE_NEWUSER | (int)extra_clone_flags) < 0) {
      hutch_error_sys(&cerr, "user namespace: unshare");
      const char *hint = userns_failure_hint(errno);
      if (hint)
        hutch_error_hint(&cerr, "%s", hint);
      sync_send_error(sp[1], cerr);
      _exit(1);
    }
    if (sync_send(sp[1], SYNC_READY, NULL, 0, NULL, 0, &cerr) < 0 ||
        sync_expect(sp[1], SYNC_GO, NULL, 0, NULL, "user namespace: wait for id maps", &cerr) < 0)
      _exit(1);
    if (maps->setgroups_allowed)
      setgroups(0, NULL);
    /* Its work (a copy, a removal, an unpack) is the caller's alone: it
     * stops with the caller, even a SIGKILLed one, rather than run on for
     * nobody.  Set here, in its user namespace: entering one clears it. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
      _exit(1);
    int r = fn(data, &cerr);
    if (r < 0) {
      sync_send_error(sp[1], cerr);
      _exit(1);
    }
    struct userns_result res = {r};
    sync_send(sp[1], SYNC_EXIT, &res, sizeof(res), NULL, 0, NULL);
    _exit(0);
  }
  close(sp[1]);
  _cleanup_close_ int fd = sp[0];
  int ret = -1;
  bool reaped = false;
  struct userns_result res = {0};
  if (expect_from_helper(fd, pid, &reaped, SYNC_READY, NULL, 0, "user namespace: create", err) < 0)
    goto out;
  if (userns_write_maps(pid, maps, err) < 0)
    goto out;
  if (sync_send(fd, SYNC_GO, NULL, 0, NULL, 0, err) < 0)
    goto out;
  if (expect_from_helper(fd, pid, &reaped, SYNC_EXIT, &res, sizeof(res), "user namespace helper", err) < 0)
    goto out;
  ret = res.value;
out:
  /* Once reaped, its pid may already belong to another process. */
  if (!reaped) {
    if (ret < 0)
      kill(pid, SIGKILL);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
      ;
  }
  return ret;
}
