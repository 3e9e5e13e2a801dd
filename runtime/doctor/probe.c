/* SPDX-License-Identifier: Apache-2.0 */
/* `hutch doctor`: the probe harness.  Each namespace check is the real
 * operation a sandbox start makes, attempted in a forked child that then
 * exits, so a refusal is seen where it happens (the unshare, the id map
 * write, the mount inside) and named with its errno and its fix. */
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe.h"
#include "idmap.h"
#include "util.h"

/* A probe that hangs (a helper waiting on a terminal, a wedged FUSE
 * mount) must not hang the doctor. */
#define PROBE_TIMEOUT_SECONDS 20

int probe_fail(struct probe_result *res, const char *fmt, ...) {
  res->errnum = errno;
  res->stage = PROBE_STAGE_RUN;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(res->what, sizeof(res->what), fmt, ap);
  va_end(ap);
  return -1;
}

int probe_fail_error(struct probe_result *res, hutch_error_t err) {
  res->stage = PROBE_STAGE_RUN;
  res->errnum = err ? err->errnum : EIO;
  snprintf(res->what, sizeof(res->what), "%s", err && err->msg ? err->msg : "failed");
  return -1;
}

static void send_result(int fd, const struct probe_result *res) {
  (void)!write(fd, res, sizeof(*res));
}

int probe_run(unsigned long flags, const struct idmap_set *maps, probe_fn fn, void *data, struct probe_result *res) {
  memset(res, 0, sizeof(*res));
  int sp[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
    res->stage = PROBE_STAGE_CRASH;
    res->errnum = errno;
    snprintf(res->what, sizeof(res->what), "socketpair");
    return -1;
  }
  bool userns = (flags & CLONE_NEWUSER) != 0;
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    res->stage = PROBE_STAGE_CRASH;
    res->errnum = errno;
    snprintf(res->what, sizeof(res->what), "fork");
    close(sp[0]);
    close(sp[1]);
    return -1;
  }
  if (pid == 0) {
    close(sp[0]);
    alarm(PROBE_TIMEOUT_SECONDS);
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    struct probe_result r = {0};
    if (flags != 0 && unshare((int)flags) < 0) {
      r.stage = PROBE_STAGE_UNSHARE;
      r.errnum = errno;
      static const struct {
        unsigned long flag;
        const char *name;
      } names[] = {{CLONE_NEWUSER, "CLONE_NEWUSER"}, {CLONE_NEWNS, "CLONE_NEWNS"},   {CLONE_NEWPID, "CLONE_NEWPID"},
                   {CLONE_NEWNET, "CLONE_NEWNET"},   {CLONE_NEWIPC, "CLONE_NEWIPC"}, {CLONE_NEWUTS, "CLONE_NEWUTS"}};
      size_t off = (size_t)snprintf(r.what, sizeof(r.what), "unshare(");
      for (size_t i = 0; i < ARRAY_SIZE(names); i++)
        if ((flags & names[i].flag) && off < sizeof(r.what))
          off += (size_t)snprintf(r.what + off, sizeof(r.what) - off, "%s%s", off > 8 ? "|" : "", names[i].name);
      if (off < sizeof(r.what))
        snprintf(r.what + off, sizeof(r.what) - off, ")");
      send_result(sp[1], &r);
      _exit(1);
    }
    if (userns) {
      char c = 'R';
      if (write(sp[1], &c, 1) != 1 || read(sp[1], &c, 1) != 1 || c != 'G')
        _exit(1);
      if (maps->kind != IDMAP_SINGLE)
        setgroups(0, NULL);
    }
    if (fn(data, &r) < 0) {
      if (r.stage == PROBE_DONE)
        r.stage = PROBE_STAGE_RUN;
    } else {
      r = (struct probe_result){0};
    }
    send_result(sp[1], &r);
    _exit(0);
  }
  close(sp[1]);
  _cleanup_close_ int fd = sp[0];
  bool have = false;
  char buf[sizeof(*res)];
  if (userns) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n == (ssize_t)sizeof(*res)) {
      memcpy(res, buf, sizeof(*res));
      have = true;
    } else if (n == 1) {
      hutch_error_t err = NULL;
      if (userns_write_maps(pid, maps, &err) < 0) {
        res->stage = PROBE_STAGE_MAPS;
        res->errnum = err ? err->errnum : EPERM;
        snprintf(res->what, sizeof(res->what), "%s", err && err->msg ? err->msg : "write the id maps");
        hutch_error_free(&err);
        have = true;
        kill(pid, SIGKILL);
      } else {
        (void)!write(fd, "G", 1);
      }
    }
  }
  if (!have) {
    ssize_t n;
    while ((n = read(fd, res, sizeof(*res))) < 0 && errno == EINTR)
      ;
    have = n == (ssize_t)sizeof(*res);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  if (!have) {
    memset(res, 0, sizeof(*res));
    res->stage = PROBE_STAGE_CRASH;
    if (WIFSIGNALED(status)) {
      res->signal = WTERMSIG(status);
      snprintf(res->what, sizeof(res->what), "the probe was killed by signal %d (%s)", res->signal,
               strsignal(res->signal));
    } else {
      snprintf(res->what, sizeof(res->what), "the probe exited with status %d without a result",
               WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
  }
  return res->stage == PROBE_DONE ? 0 : -1;
}
