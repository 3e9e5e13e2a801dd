/* The last steps before untrusted code runs.  Capabilities and
 * no_new_privs are already gone in init (see contain.c), so everything here
 * is what differs per process. */
#include "config.h"

#include "payload.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "caps.h"
#include "seccomp_policy.h"
#include "util.h"

extern char **environ;

static void report(int fd, int stage, int errnum, const char *msg) {
  struct payload_failure f = {.errnum = errnum, .stage = stage};
  snprintf(f.msg, sizeof(f.msg), "%s", msg);
  write_all(fd, &f, sizeof(f));
}

static void fail_with(int fd, int stage, hutch_error_t *err) {
  report(fd, stage, (*err)->errnum, (*err)->msg);
  _exit(stage == PAYLOAD_EXEC && (*err)->errnum == ENOENT ? 127 : 126);
}

/* Each step is one reason the payload is contained; see hutch-security(7). */
static int step_new_session(hutch_error_t *err) {
  /* Own session, no controlling terminal: TIOCSTI cannot push keystrokes
   * into the caller's terminal, and the process group is ours to kill. */
  if (setsid() < 0)
    return hutch_error_sys(err, "payload: setsid");
  return 0;
}

static int step_install_stdio(const struct payload_spec *spec, int keep_fd, hutch_error_t *err) {
  for (int i = 0; i < 3; i++) {
    if (spec->stdio[i] < 0 || spec->stdio[i] == i)
      continue;
    if (dup2(spec->stdio[i], i) < 0)
      return hutch_error_sys(err, "payload: install fd %d", i);
  }
  /* Nothing the init or hutch holds may leak in: only 0, 1, 2 (and the
   * failure pipe, close-on-exec) stay open. */
  int lo = 3;
  if (keep_fd >= lo) {
    if (keep_fd > lo && syscall(SYS_close_range, lo, keep_fd - 1, 0) < 0)
      return hutch_error_sys(err, "payload: close inherited fds");
    lo = keep_fd + 1;
  }
  if (syscall(SYS_close_range, lo, ~0U, 0) < 0)
    return hutch_error_sys(err, "payload: close inherited fds");
  return 0;
}

static int step_die_with_init(hutch_error_t *err) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
    return hutch_error_sys(err, "payload: PR_SET_PDEATHSIG");
  return 0;
}

static int step_rlimits(const struct payload_spec *spec, hutch_error_t *err) {
  /* No core files: they would land in the overlay and can hold secrets. */
  struct rlimit core = {0, 0};
  if (setrlimit(RLIMIT_CORE, &core) < 0)
    return hutch_error_sys(err, "payload: RLIMIT_CORE");
  if (spec->nofile > 0) {
    struct rlimit nofile = {spec->nofile, spec->nofile};
    if (setrlimit(RLIMIT_NOFILE, &nofile) < 0)
      return hutch_error_sys(err, "payload: RLIMIT_NOFILE %llu", (unsigned long long)spec->nofile);
  }
  return 0;
}

static void reset_signals(void) {
  /* init blocks the signals it handles through signalfd; a child must start
   * with the defaults or it could not be interrupted. */
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  for (int sig = 1; sig < NSIG; sig++)
    if (sig != SIGKILL && sig != SIGSTOP)
      signal(sig, SIG_DFL);
}

pid_t payload_spawn(const struct payload_spec *spec, int *failure_fd, hutch_error_t *err) {
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) < 0)
    return hutch_error_sys(err, "payload: pipe");
  pid_t pid = fork();
  if (pid < 0) {
    close(pipefd[0]);
    close(pipefd[1]);
    return hutch_error_sys(err, "payload: fork");
  }
  if (pid > 0) {
    close(pipefd[1]);
    *failure_fd = pipefd[0];
    return pid;
  }
  close(pipefd[0]);
  int fd = pipefd[1];
  hutch_error_t perr = NULL;
  reset_signals();
  if (step_new_session(&perr) < 0 || step_install_stdio(spec, fd, &perr) < 0 || step_die_with_init(&perr) < 0 ||
      step_rlimits(spec, &perr) < 0 || caps_set_no_new_privs(&perr) < 0)
    fail_with(fd, PAYLOAD_SETUP, &perr);
  const char *wd = spec->workdir ? spec->workdir : "/";
  if (chdir(wd) < 0) {
    hutch_error_sys(&perr, "working directory %s", wd);
    fail_with(fd, PAYLOAD_CHDIR, &perr);
  }
  /* execvp searches the PATH of `environ`, so the sandbox's environment
   * must be in place before the lookup. */
  environ = (char **)spec->envp;
  /* The seccomp filter goes last: every step above may use syscalls the
   * payload itself must not. */
  if (seccomp_install(spec->bpf, spec->bpf_len, &perr) < 0)
    fail_with(fd, PAYLOAD_SETUP, &perr);
  execvp(spec->argv[0], spec->argv);
  hutch_error_sys(&perr, "execute %s", spec->argv[0]);
  fail_with(fd, PAYLOAD_EXEC, &perr);
  return -1;
}

int payload_read_failure(int failure_fd, struct payload_failure *out) {
  ssize_t n = read_all(failure_fd, out, sizeof(*out));
  return n == (ssize_t)sizeof(*out) ? 1 : 0;
}
