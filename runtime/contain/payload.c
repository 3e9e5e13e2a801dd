/* SPDX-License-Identifier: Apache-2.0 */
/* The last steps before untrusted code runs.  Capabilities are already
 * gone and no_new_privs and RLIMIT_CORE = 0 set in init (see contain.c), and
 * the seccomp filter is normally init's too (init_seccomp.c), so everything
 * here is what differs per process.
 *
 * The payload is started the way posix_spawn() does it: clone(CLONE_VM |
 * CLONE_VFORK) on a stack of its own.  It shares init's memory until
 * execve, so no page table is copied and nothing is copied on write: the
 * per-command cost of every agent step.  The price is discipline in
 * payload_child(): no malloc, no stdio, no global state written but the
 * failure report, which it writes straight into init's memory: init reads
 * it once clone returns, when the child has either exec'd or exited (no
 * pipe to make, read and close per command). */
#include "config.h"

#include "payload.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "seccomp_policy.h"
#include "util.h"

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

struct spawn_ctx {
  const struct payload_spec *spec;
  struct payload_failure *report; /* shared with init: CLONE_VM, or MAP_SHARED */
};

__attribute__((noreturn)) static void fail(struct payload_failure *f, int stage, int errnum, const char *what,
                                           const char *arg) {
  snprintf(f->msg, sizeof(f->msg), "%s%s", what, arg ? arg : "");
  f->errnum = errnum;
  f->stage = stage;
  _exit(stage == PAYLOAD_EXEC && errnum == ENOENT ? 127 : 126);
}

static const char *env_lookup(char *const *envp, const char *key) {
  size_t n = strlen(key);
  for (; envp && *envp; envp++)
    if (strncmp(*envp, key, n) == 0 && (*envp)[n] == '=')
      return *envp + n + 1;
  return NULL;
}

/* execvp with the PATH of the payload's own environment (execvp would read
 * init's), written to need no allocation. */
static void exec_in_path(char *const *argv, char *const *envp, struct payload_failure *report) {
  const char *file = argv[0];
  if (strchr(file, '/') != NULL) {
    execve(file, argv, envp);
    fail(report, PAYLOAD_EXEC, errno, "execute ", file);
  }
  const char *path = env_lookup(envp, "PATH");
  if (path == NULL)
    path = "/usr/local/bin:/usr/bin:/bin";
  char buf[PATH_MAX];
  int saved = ENOENT;
  for (const char *p = path;; p++) {
    const char *end = strchrnul(p, ':');
    size_t dirlen = (size_t)(end - p);
    if (dirlen + 1 + strlen(file) + 1 <= sizeof(buf)) {
      memcpy(buf, p, dirlen);
      size_t off = dirlen;
      if (off > 0)
        buf[off++] = '/';
      strcpy(buf + off, file);
      execve(buf, argv, envp);
      /* Like execvp: a file that exists but cannot run is the answer; a
       * missing one means "look further". */
      if (errno == EACCES || errno == ENOEXEC || errno == EPERM || errno == ETXTBSY)
        saved = errno;
      else if (errno != ENOENT && errno != ENOTDIR)
        saved = errno;
    }
    if (*end == '\0')
      break;
    p = end;
  }
  fail(report, PAYLOAD_EXEC, saved, "execute ", file);
}

static int payload_child(void *arg) {
  const struct spawn_ctx *c = arg;
  const struct payload_spec *spec = c->spec;
  struct payload_failure *report = c->report;
  /* init reads its signals through signalfd with them blocked; a command
   * must start with nothing blocked or it could not be interrupted. */
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  /* Nor anything ignored: exec keeps an ignored signal ignored, and init
   * is a fork of its creator (hutch-agent ignores SIGPIPE, nohup SIGHUP).
   * A command starts as in a fresh container, `yes | head -1` ending yes
   * by SIGPIPE.  This child has its own copy of the handlers (no
   * CLONE_SIGHAND): init's stay as they are. */
  for (int sig = 1; sig < NSIG; sig++) {
    struct sigaction sa;
    if (sigaction(sig, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN) {
      sa.sa_handler = SIG_DFL;
      sigaction(sig, &sa, NULL);
    }
  }
  /* Own session, no controlling terminal: TIOCSTI cannot push keystrokes
   * into the caller's terminal, and the process group is ours to kill. */
  if (setsid() < 0)
    fail(report, PAYLOAD_SETUP, errno, "payload: setsid", NULL);
  for (int i = 0; i < 3; i++)
    if (spec->stdio[i] >= 0 && spec->stdio[i] != i && dup2(spec->stdio[i], i) < 0)
      fail(report, PAYLOAD_SETUP, errno, "payload: install standard streams", NULL);
  /* A new session leader takes the pty's slave as its controlling terminal:
   * then the line discipline turns ^C into SIGINT and a shell has job
   * control.  The terminal is the sandbox's own, not the caller's. */
  if (spec->tty && ioctl(0, TIOCSCTTY, 0) < 0)
    fail(report, PAYLOAD_SETUP, errno, "payload: controlling terminal (TIOCSCTTY)", NULL);
  /* Nothing init or hutch holds may leak in: only 0, 1 and 2 stay open. */
  if (syscall(SYS_close_range, 3, ~0U, 0) < 0)
    fail(report, PAYLOAD_SETUP, errno, "payload: close inherited fds", NULL);
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
    fail(report, PAYLOAD_SETUP, errno, "payload: PR_SET_PDEATHSIG", NULL);
  /* RLIMIT_CORE = 0 and no_new_privs come from init (contain.c).
   * RLIMIT_NOFILE stays per command: set in init it would bound init's own
   * fds, one per connected client, by the commands' limit. */
  if (spec->nofile > 0) {
    struct rlimit nofile = {spec->nofile, spec->nofile};
    if (setrlimit(RLIMIT_NOFILE, &nofile) < 0)
      fail(report, PAYLOAD_SETUP, errno, "payload: RLIMIT_NOFILE", NULL);
  }
  if (spec->rlimit_data > 0) {
    struct rlimit data = {spec->rlimit_data, spec->rlimit_data};
    if (setrlimit(RLIMIT_DATA, &data) < 0)
      fail(report, PAYLOAD_SETUP, errno, "payload: RLIMIT_DATA", NULL);
  }
  const char *wd = spec->workdir ? spec->workdir : "/";
  if (chdir(wd) < 0)
    fail(report, PAYLOAD_CHDIR, errno, "working directory ", wd);
  /* The seccomp filter goes last: every step above may use syscalls the
   * payload itself must not.  With err NULL it allocates nothing.  Without
   * a program the filter is init's, inherited (init_seccomp.c). */
  if (spec->bpf != NULL && seccomp_install(spec->bpf, spec->bpf_len, NULL) < 0)
    fail(report, PAYLOAD_SETUP, errno, "payload: install the seccomp filter", NULL);
  exec_in_path(spec->argv, spec->envp, report);
  return 127;
}

/* One stack is enough: init is single-threaded and CLONE_VFORK keeps it
 * suspended until the child has exec'd or exited. */
#ifndef __SANITIZE_ADDRESS__
static char child_stack[256 * 1024] __attribute__((aligned(16)));
#endif

/* A pty pair from the devpts of the caller's mount namespace (in init:
 * the sandbox's own instance, mounts_setup_dev).  O_NOCTTY: init must
 * never take it as its own controlling terminal. */
static int open_pty(unsigned short rows, unsigned short cols, int *master, int *slave, hutch_error_t *err) {
  _cleanup_close_ int m = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (m < 0)
    return hutch_error_sys(err, "payload: open the sandbox's /dev/ptmx");
  int unlock = 0;
  if (ioctl(m, TIOCSPTLCK, &unlock) < 0)
    return hutch_error_sys(err, "payload: unlock the pty");
  /* TIOCGPTPEER (4.13) opens the slave through the master: no path that
   * the sandbox could have replaced is looked up. */
  int s = ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (s < 0 && (errno == EINVAL || errno == ENOTTY)) {
    unsigned n;
    char path[32];
    if (ioctl(m, TIOCGPTN, &n) < 0)
      return hutch_error_sys(err, "payload: the pty's number");
    snprintf(path, sizeof(path), "/dev/pts/%u", n);
    s = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC | O_NOFOLLOW);
  }
  if (s < 0)
    return hutch_error_sys(err, "payload: open the pty's slave");
  struct winsize ws = {.ws_row = rows, .ws_col = cols};
  if ((rows || cols) && ioctl(m, TIOCSWINSZ, &ws) < 0) {
    close(s);
    return hutch_error_sys(err, "payload: the pty's window size");
  }
  *master = steal_fd(&m);
  *slave = s;
  return 0;
}

pid_t payload_spawn(const struct payload_spec *spec, struct payload_failure **failure, int *pty_master,
                    hutch_error_t *err) {
  struct payload_spec with_tty;
  _cleanup_close_ int master = -1, slave = -1;
  if (spec->tty) {
    if (open_pty(spec->rows, spec->cols, &master, &slave, err) < 0)
      return -1;
    with_tty = *spec;
    with_tty.stdio[0] = with_tty.stdio[1] = with_tty.stdio[2] = slave;
    spec = &with_tty;
  }
  *failure = NULL;
#ifdef __SANITIZE_ADDRESS__
  /* AddressSanitizer cannot follow a child running on a stack it did not
   * allocate: sanitizer builds pay for a plain fork() instead, and the
   * report goes to a shared page read once the child has exited. */
  struct payload_failure *report =
      mmap(NULL, sizeof(*report), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (report == MAP_FAILED)
    return hutch_error_sys(err, "payload: map the failure report");
  memset(report, 0, sizeof(*report));
  struct spawn_ctx ctx = {spec, report};
  pid_t pid = fork();
  if (pid == 0)
    _exit(payload_child(&ctx));
  if (pid < 0) {
    int saved = errno;
    munmap(report, sizeof(*report));
    errno = saved;
    return hutch_error_sys(err, "payload: clone");
  }
  *failure = report;
#else
  struct payload_failure report = {0};
  struct spawn_ctx ctx = {spec, &report};
  pid_t pid = clone(payload_child, child_stack + sizeof(child_stack), CLONE_VM | CLONE_VFORK | SIGCHLD, &ctx);
  if (pid < 0)
    return hutch_error_sys(err, "payload: clone");
  /* CLONE_VFORK: the child has exec'd (the report is untouched) or ended. */
  if (report.stage != 0) {
    *failure = xmalloc(sizeof(report));
    **failure = report;
  }
#endif
  if (pty_master != NULL)
    *pty_master = steal_fd(&master);
  return pid;
}

void payload_failure_free(struct payload_failure *f) {
  if (f == NULL)
    return;
#ifdef __SANITIZE_ADDRESS__
  munmap(f, sizeof(*f));
#else
  free(f);
#endif
}
