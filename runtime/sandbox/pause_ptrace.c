/* SPDX-License-Identifier: Apache-2.0 */
/* The pauser (pause_ptrace.h): a process of the host user, outside the
 * sandbox's pid namespace (nothing inside can see or signal it), that seizes
 * every thread of the sandbox and keeps it in a ptrace stop until asked to
 * let go over `<id>/pause.sock`.  The host user owns the sandbox's user
 * namespace and so may trace its tasks, non-dumpable ones (init) included. */
#include "config.h"

#include "pause_ptrace.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc_stat.h"
#include "proc_tree.h"
#include "util.h"

enum task_state { T_PENDING, T_STOPPED, T_FOREIGN, T_GONE };

struct task {
  pid_t tid;
  enum task_state state;
  int sig; /* the signal of a signal-delivery stop, given back at the resume */
};

/* The held tasks, and an open-addressing index of them by tid (slot value:
 * index + 1).  Tasks are never removed: one that ended is T_GONE, and its
 * tid seen again (reused) is held anew. */
struct tasks {
  pid_t init; /* the sandbox's, on the host */
  uint64_t init_start;
  pid_t *queue; /* a walk's pids (2 * PAUSE_MAX_TASKS); NULL: no children files, scans of /proc */
  pid_t *last;  /* the pids the walk before found, in its order */
  size_t n_queue, n_last;
  struct task *v;
  size_t n;
  uint32_t *slot;
  size_t slots; /* a power of two, at least 2 * PAUSE_MAX_TASKS */
};

/* The pids a walk visits, init first. */
struct kids {
  pid_t *v;
  size_t n, cap;
};

static size_t find_slot(const struct tasks *t, pid_t tid) {
  size_t m = t->slots - 1, i = ((size_t)(uint32_t)tid * 2654435761u) & m;
  while (t->slot[i] != 0 && t->v[t->slot[i] - 1].tid != tid)
    i = (i + 1) & m;
  return i;
}

static struct task *lookup(const struct tasks *t, pid_t tid) {
  size_t i = find_slot(t, tid);
  return t->slot[i] ? &t->v[t->slot[i] - 1] : NULL;
}

/* NULL when the table is full. */
static struct task *add(struct tasks *t, pid_t tid, enum task_state state) {
  struct task *e = lookup(t, tid);
  if (e == NULL) {
    if (t->n == PAUSE_MAX_TASKS)
      return NULL;
    t->v[t->n] = (struct task){.tid = tid};
    t->slot[find_slot(t, tid)] = (uint32_t)++t->n;
    e = &t->v[t->n - 1];
  }
  e->state = state;
  e->sig = 0;
  return e;
}

/* /proc/TID/stat's state letter, or 0 when it is gone. */
static char task_letter(pid_t tid) {
  _cleanup_free_ char *stat = proc_stat_read(tid);
  return stat ? proc_stat_state(stat) : 0;
}

/* A task that waits for its vfork child cannot return to user space before
 * that child (which is held) execs or exits: it is as good as held, though
 * it never reaches the stop the interrupt asked of it.  It sleeps killable
 * ('D') in wait_for_vfork_done, which kernels inline into kernel_clone;
 * kernel_clone sleeps nowhere else itself (a sleep of copy_process, a fork
 * under way, names a function below it). */
static bool in_vfork_wait(pid_t tid) {
  if (task_letter(tid) != 'D')
    return false;
  char p[64];
  snprintf(p, sizeof(p), "/proc/%d/wchan", (int)tid);
  _cleanup_free_ char *w = read_file_at(AT_FDCWD, p, 128, NULL);
  return w && (strcmp(w, "wait_for_vfork_done") == 0 || strcmp(w, "kernel_clone") == 0);
}

/* Every report of a traced task: stops mark it held, exits mark it gone;
 * a task the kernel attached by itself (a fork, clone or vfork of a held
 * task: PTRACE_O_TRACE*) joins the table. */
static void drain(struct tasks *t) {
  int st;
  pid_t w;
  while ((w = waitpid(-1, &st, __WALL | WNOHANG)) > 0) {
    struct task *e = lookup(t, w);
    if (WIFEXITED(st) || WIFSIGNALED(st)) {
      if (e)
        e->state = T_GONE;
      continue;
    }
    if (!WIFSTOPPED(st))
      continue;
    if (e == NULL || e->state == T_GONE)
      e = add(t, w, T_STOPPED);
    if (e == NULL)
      continue; /* full: the scan fails the pause */
    e->state = T_STOPPED;
    /* A stop with no event is a signal-delivery stop: the signal was taken
     * from the task, which gets it back when it goes on. */
    if ((st >> 16) == 0)
      e->sig = WSTOPSIG(st);
  }
}

/* Whether every task of the table is held: stopped, in a vfork wait, or
 * (traced by a process of the sandbox) in a tracing stop. */
static bool settled(const struct tasks *t, pid_t *unsettled) {
  for (size_t i = 0; i < t->n; i++) {
    const struct task *e = &t->v[i];
    if (e->state == T_STOPPED || e->state == T_GONE)
      continue;
    char c = task_letter(e->tid);
    if (c == 0 || c == 'Z' || c == 'X' || (e->state == T_FOREIGN && c == 't') ||
        (e->state == T_PENDING && in_vfork_wait(e->tid)))
      continue;
    *unsettled = e->tid;
    return false;
  }
  return true;
}

static pid_t status_field(pid_t pid, const char *key) {
  char p[64];
  snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
  _cleanup_free_ char *status = read_file_at(AT_FDCWD, p, 16384, NULL);
  const char *f = status ? strstr(status, key) : NULL;
  return f ? (pid_t)strtol(f + strlen(key), NULL, 10) : 0;
}

/* Whether thread `tid` is the sandbox's: its process is init or descends
 * from it.  Asked once the thread is seized, when its tid can no longer be
 * reused: a tid that a process outside the sandbox took since the scan is
 * let go before anything stops it. */
static bool of_sandbox(pid_t init, pid_t tid) {
  pid_t pid = status_field(tid, "\nTgid:");
  for (int depth = 0; pid > 1 && depth < 4096; depth++) {
    if (pid == init)
      return true;
    pid = status_field(pid, "\nPPid:");
  }
  return false;
}

/* A detach needs a stopped tracee: the stranger is stopped for as long
 * as that takes, then let go (what its stop took, given back). */
static void let_go_stranger(pid_t tid) {
  ptrace(PTRACE_INTERRUPT, tid, 0, 0);
  for (int i = 0; i < 1000; i++) {
    int st;
    pid_t w = waitpid(tid, &st, __WALL | WNOHANG);
    if (w == tid && WIFSTOPPED(st)) {
      ptrace(PTRACE_DETACH, tid, 0, (st >> 16) == 0 ? WSTOPSIG(st) : 0);
      return;
    }
    if (w < 0 || (w == tid && !WIFSTOPPED(st)))
      return; /* it ended */
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
}

/* Seizes one thread and asks it to stop; *fresh counts the new ones.  1:
 * the thread is not the sandbox's (let go). */
static int hold(struct tasks *t, pid_t pid, pid_t tid, size_t *fresh, char *msg, size_t len) {
  struct task *e = lookup(t, tid);
  if (e && e->state != T_GONE)
    return 0;
  const long opts = PTRACE_O_EXITKILL | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE;
  if (ptrace(PTRACE_SEIZE, tid, 0, opts) < 0) {
    int saved = errno;
    char c = task_letter(tid);
    if (saved == ESRCH || c == 0 || c == 'Z' || c == 'X')
      return 0; /* ended: it runs no more */
    if (saved != EPERM) {
      snprintf(msg, len, "seize task %d: %s", (int)tid, strerror(saved));
      return -saved;
    }
    /* Traced by this pauser already: a child the kernel attached at a held
     * task's fork, whose first stop is yet to be reported. */
    pid_t tracer = status_field(tid, "\nTracerPid:");
    if (tracer == getpid()) {
      if (add(t, tid, T_PENDING) == NULL)
        goto full;
      (*fresh)++;
      return 0;
    }
    /* Traced already, by a process of the sandbox (a debugger inside): a
     * SIGSTOP puts it into a signal-delivery stop that only its tracer,
     * which is held, could end. */
    if (tracer == 0 || !of_sandbox(t->init, tid)) {
      snprintf(msg, len, "seize task %d: %s", (int)tid, strerror(saved));
      return -saved;
    }
    if ((e = add(t, tid, T_FOREIGN)) == NULL)
      goto full;
    syscall(SYS_tgkill, pid, tid, SIGSTOP);
    (*fresh)++;
    return 0;
  }
  if (!of_sandbox(t->init, tid)) {
    let_go_stranger(tid);
    return 1; /* a tid reused outside the sandbox: nothing below it is held */
  }
  if ((e = add(t, tid, T_PENDING)) == NULL) {
    let_go_stranger(tid);
    goto full;
  }
  ptrace(PTRACE_INTERRUPT, tid, 0, 0);
  (*fresh)++;
  return 0;
full:
  snprintf(msg, len, "the sandbox has more than %d tasks", PAUSE_MAX_TASKS);
  return -E2BIG;
}

/* Holds every thread of process `pid`; with `kids`, also appends each
 * thread's children (its `children` file) there.  A process or thread gone
 * meanwhile holds nothing. */
static int hold_process(struct tasks *t, pid_t pid, struct kids *kids, size_t *fresh, char *msg, size_t len) {
  char p[64];
  snprintf(p, sizeof(p), "/proc/%d/task", (int)pid);
  _cleanup_dir_ DIR *d = opendir(p);
  struct dirent *de;
  while (d && (de = readdir(d)) != NULL) {
    char *end;
    long tid = strtol(de->d_name, &end, 10);
    if (*end != '\0' || tid <= 0)
      continue;
    int r = hold(t, pid, (pid_t)tid, fresh, msg, len);
    if (r < 0)
      return r;
    if (kids == NULL || r == 1)
      continue;
    /* Read after the stop was asked for: the pass that ends the freeze
     * finds every task stopped, and a stopped task's list is exact. */
    snprintf(p, sizeof(p), "/proc/%d/task/%ld/children", (int)pid, tid);
    errno = 0;
    _cleanup_free_ char *text = read_file_at(AT_FDCWD, p, 1 << 20, NULL);
    /* A list that cannot be read while its task lives would leave its
     * children running: the pause fails instead. */
    int saved = errno;
    char c = text ? 0 : task_letter((pid_t)tid);
    if (text == NULL && c != 0 && c != 'Z' && c != 'X') {
      snprintf(msg, len, "read %s: %s", p, strerror(saved ? saved : EIO));
      return -(saved ? saved : EIO);
    }
    if (text && proc_children_parse(text, kids->v, &kids->n, kids->cap) > 0) {
      snprintf(msg, len, "the sandbox has more than %d tasks", PAUSE_MAX_TASKS);
      return -E2BIG;
    }
  }
  return 0;
}

/* One pass down init's tree by the children files: as many reads as the
 * sandbox has tasks, whatever else the host runs.  Every process of a
 * sandbox descends from its init (orphans are given to it). */
static int walk(struct tasks *t, size_t *fresh, char *msg, size_t len) {
  struct kids k = {.v = t->queue, .cap = 2 * PAUSE_MAX_TASKS};
  k.v[k.n++] = t->init;
  for (size_t i = 0; i < k.n; i++) {
    int r = hold_process(t, k.v[i], &k, fresh, msg, len);
    if (r < 0)
      return r;
  }
  t->n_queue = k.n;
  return 0;
}

/* Whether this walk found what the one before found, in the same order,
 * and keeps it for the next: every list read twice over, unchanged. */
static bool walk_same_as_last(struct tasks *t) {
  bool same = t->n_last == t->n_queue && memcmp(t->last, t->queue, t->n_queue * sizeof(pid_t)) == 0;
  memcpy(t->last, t->queue, t->n_queue * sizeof(pid_t));
  t->n_last = t->n_queue;
  return same;
}

/* One pass over the whole of /proc, for kernels without children files
 * (CONFIG_PROC_CHILDREN unset). */
static int scan_all(struct tasks *t, size_t *fresh, char *msg, size_t len) {
  size_t n;
  _cleanup_free_ struct proc_entry *e = proc_tree_read(&n);
  if (e == NULL) {
    snprintf(msg, len, "read /proc: %s", strerror(errno));
    return -EIO;
  }
  if (proc_tree_select(e, n, t->init, 1, true) == 0) {
    snprintf(msg, len, "the sandbox's init (pid %d) is gone", (int)t->init);
    return -ESRCH;
  }
  for (size_t i = 0; i < n; i++) {
    int r = e[i].chosen ? hold_process(t, e[i].pid, NULL, fresh, msg, len) : 0;
    if (r < 0)
      return r;
  }
  return 0;
}

/* One pass: every thread of every process of init's tree (init too). */
static int scan(struct tasks *t, size_t *fresh, char *msg, size_t len) {
  if (t->queue == NULL)
    return scan_all(t, fresh, msg, len);
  if (!proc_stat_alive(t->init, t->init_start)) {
    snprintf(msg, len, "the sandbox's init (pid %d) is gone", (int)t->init);
    return -ESRCH;
  }
  return walk(t, fresh, msg, len);
}

static void wait_sigchld(int sfd, int ms) {
  struct pollfd p = {.fd = sfd, .events = POLLIN};
  if (poll(&p, 1, ms) > 0) {
    struct signalfd_siginfo si;
    while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
      ;
  }
}

/* Holds every task: passes until one, made once every task known was
 * held, finds none new.  A held task cannot run, so it cannot make
 * another: the set is then closed.  A task made by a fork that was under
 * way at the seize is not attached by the kernel; the next pass finds it.
 * A walk reads each list once, at its own moment: a task not yet known may
 * fork and exit after init's list was read and before its parent's was,
 * its child given to init unseen.  So a walk ends the freeze only when
 * the walk before it was clean too and found the same pids in the same
 * order: an orphan given to a held reaper (init, a subreaper inside)
 * stays in that reaper's list, which no held task can reap, and would
 * have changed it. */
static int freeze(struct tasks *t, int sfd, struct pause_report *rep) {
  double start = monotonic_seconds();
  bool clean_before = false;
  for (;;) {
    drain(t);
    pid_t unsettled = 0;
    bool all = settled(t, &unsettled);
    size_t fresh = 0;
    rep->scans++;
    int r = scan(t, &fresh, rep->message, sizeof(rep->message));
    if (r < 0)
      return r;
    bool clean = all && fresh == 0;
    bool same = t->queue ? walk_same_as_last(t) : true;
    if (clean && same && (t->queue == NULL || clean_before))
      break;
    clean_before = clean;
    if (monotonic_seconds() - start > PAUSE_SETTLE_SECONDS) {
      snprintf(rep->message, sizeof(rep->message), "task %d did not stop within %.0f s", (int)unsettled,
               PAUSE_SETTLE_SECONDS);
      return -ETIMEDOUT;
    }
    if (!all)
      wait_sigchld(sfd, 2);
  }
  rep->seconds = monotonic_seconds() - start;
  for (size_t i = 0; i < t->n; i++)
    rep->tasks += t->v[i].state != T_GONE;
  return 0;
}

/* Lets every task go on, each with the signal its stop took; a task that
 * had not stopped yet (a vfork parent, whose child goes on first) is let
 * go once it has. */
static int let_go(struct tasks *t, int sfd, struct pause_report *rep) {
  double start = monotonic_seconds();
  uint32_t done = 0;
  for (;;) {
    drain(t);
    size_t left = 0;
    for (size_t i = 0; i < t->n; i++) {
      struct task *e = &t->v[i];
      if (e->state == T_STOPPED) {
        if (ptrace(PTRACE_DETACH, e->tid, 0, e->sig) == 0 || errno == ESRCH) {
          e->state = T_GONE;
          done++;
          continue;
        }
      }
      left += e->state == T_PENDING || e->state == T_STOPPED;
    }
    if (left == 0)
      break;
    if (monotonic_seconds() - start > PAUSE_SETTLE_SECONDS) {
      snprintf(rep->message, sizeof(rep->message), "%zu tasks did not come back to be let go within %.0f s", left,
               PAUSE_SETTLE_SECONDS);
      return -ETIMEDOUT;
    }
    wait_sigchld(sfd, 2);
  }
  rep->tasks = done;
  rep->seconds = monotonic_seconds() - start;
  return 0;
}

/* Whether the peer is this user (or root): the socket's directory is the
 * user's own already; this is the second lock. */
static bool peer_allowed(int fd) {
  struct ucred cr;
  socklen_t len = sizeof(cr);
  return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 && (cr.uid == getuid() || cr.uid == 0);
}

/* The pauser's life: hold, report on `report`, then wait for the resume
 * on `listen_fd`, or for every task to end (the sandbox removed), or,
 * holding for a caller (`holder`, its pidfd; -1: a pause, which outlives
 * whoever made it), for that caller's end, however it comes: a snapshot
 * SIGKILLed during its copy would otherwise leave the sandbox stopped for
 * ever, for a copy nobody will finish. */
__attribute__((noreturn)) static void pauser_main(pid_t init, uint64_t init_start, int report, int listen_fd,
                                                  int holder) {
  struct pause_report rep = {.pid = getpid()};
  struct tasks t = {.init = init,
                    .init_start = init_start,
                    .v = xcalloc(PAUSE_MAX_TASKS, sizeof(struct task)),
                    .slots = 4 * PAUSE_MAX_TASKS};
  t.slot = xcalloc(t.slots, sizeof(*t.slot));
  /* The walk down the children files where the kernel keeps them; init's
   * own tells (a file kept for every task, or for none). */
  char kp[64];
  snprintf(kp, sizeof(kp), "/proc/%d/task/%d/children", (int)init, (int)init);
  if (access(kp, R_OK) == 0) {
    t.queue = xcalloc(2 * PAUSE_MAX_TASKS, sizeof(pid_t));
    t.last = xcalloc(2 * PAUSE_MAX_TASKS, sizeof(pid_t));
  }
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  sigprocmask(SIG_SETMASK, &mask, NULL);
  int sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  int r = sfd < 0 ? -errno : 0;
  if (r < 0)
    snprintf(rep.message, sizeof(rep.message), "signalfd: %s", strerror(-r));
  else if (proc_stat_start_time(init) != init_start) {
    snprintf(rep.message, sizeof(rep.message), "the sandbox's init (pid %d) is gone", (int)init);
    r = -ESRCH;
  } else
    r = freeze(&t, sfd, &rep);
  if (r < 0) {
    rep.error = -r;
    let_go(&t, sfd, &(struct pause_report){0});
    write_all(report, &rep, sizeof(rep));
    _exit(1);
  }
  write_all(report, &rep, sizeof(rep));
  close(report);
  for (;;) {
    struct pollfd p[3] = {
        {.fd = sfd, .events = POLLIN}, {.fd = listen_fd, .events = POLLIN}, {.fd = holder, .events = POLLIN}};
    if (poll(p, 3, -1) < 0 && errno != EINTR)
      _exit(1);
    if (p[2].revents)
      _exit(let_go(&t, sfd, &(struct pause_report){0}) < 0);
    if (p[0].revents) {
      wait_sigchld(sfd, 0);
      drain(&t);
      /* Every task ended (the sandbox was removed): nothing is left to hold. */
      if (waitpid(-1, NULL, __WALL | WNOHANG) < 0 && errno == ECHILD)
        _exit(0);
    }
    if (p[1].revents == 0)
      continue;
    _cleanup_close_ int c = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
    char req = 0;
    if (c < 0 || !peer_allowed(c) || read(c, &req, 1) != 1 || req != 'R')
      continue;
    struct pause_report out = {.pid = getpid()};
    r = let_go(&t, sfd, &out);
    out.error = r < 0 ? -r : 0;
    write_all(c, &out, sizeof(out));
    _exit(r < 0);
  }
}

static void sock_path(struct sockaddr_un *a, int dirfd) {
  *a = (struct sockaddr_un){.sun_family = AF_UNIX};
  snprintf(a->sun_path, sizeof(a->sun_path), "/proc/self/fd/%d/" PAUSE_SOCK, dirfd);
}

/* Reads the pauser's report; EOF (it died) or a timeout is a failure. */
static int read_report(int fd, int timeout_ms, struct pause_report *rep, const char *what, hutch_error_t *err) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  int r = poll(&p, 1, timeout_ms);
  if (r <= 0)
    return hutch_error_set(err, r == 0 ? ETIMEDOUT : errno, "%s: the pauser did not answer", what);
  if (read_all(fd, rep, sizeof(*rep)) != (ssize_t)sizeof(*rep))
    return hutch_error_set(err, EPIPE, "%s: the pauser ended without an answer", what);
  rep->message[sizeof(rep->message) - 1] = '\0';
  if (rep->error != 0)
    return hutch_error_set(err, rep->error, "%s: %s", what, rep->message);
  return 0;
}

int pause_ptrace_start(int dirfd, pid_t init, uint64_t init_start, struct pause_report *rep, hutch_error_t *err) {
  pid_t mid;
  int rd = pause_ptrace_launch(dirfd, init, init_start, false, &mid, err);
  return rd < 0 ? -1 : pause_ptrace_wait(dirfd, rd, mid, rep, err);
}

int pause_ptrace_launch(int dirfd, pid_t init, uint64_t init_start, bool hold, pid_t *mid_out, hutch_error_t *err) {
  struct sockaddr_un a;
  sock_path(&a, dirfd);
  unlinkat(dirfd, PAUSE_SOCK, 0);
  _cleanup_close_ int lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(lfd, 4) < 0)
    return hutch_error_sys(err, "pause: the pauser's socket");
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) < 0)
    return hutch_error_sys(err, "pause: pipe");
  _cleanup_close_ int rd = pipefd[0];
  _cleanup_close_ int wr = pipefd[1];
  _cleanup_close_ int self = hold ? (int)syscall(SYS_pidfd_open, getpid(), 0) : -1;
  if (hold && self < 0)
    return hutch_error_sys(err, "pause: a pidfd of this process, for the pauser to let go when it ends");
  /* Twice forked: the pauser is nobody's child here, so a caller that
   * lives on (a library's) has nothing to reap, and it outlives `hutch pause`. */
  pid_t mid = fork();
  if (mid < 0)
    return hutch_error_sys(err, "pause: fork");
  if (mid == 0) {
    pid_t pid = fork();
    if (pid != 0)
      _exit(pid < 0);
    setsid();
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    signal(SIGPIPE, SIG_IGN);
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    for (int i = 0; devnull >= 0 && i < 3; i++)
      dup2(devnull, i);
    /* Nothing of the caller's (its terminal, state directory, sockets)
     * stays open in a process that may outlive it. */
    if (dup2(wr, 3) < 0 || dup2(lfd, 4) < 0 || (hold && dup2(self, 5) < 0))
      _exit(1);
    syscall(SYS_close_range, hold ? 6 : 5, ~0U, 0);
    pauser_main(init, init_start, 3, 4, hold ? 5 : -1);
  }
  /* Reaped by the wait: it forks the pauser and exits meanwhile. */
  *mid_out = mid;
  return steal_fd(&rd);
}

int pause_ptrace_wait(int dirfd, int report_fd, pid_t mid, struct pause_report *rep, hutch_error_t *err) {
  _cleanup_close_ int rd = report_fd;
  *rep = (struct pause_report){0};
  int st;
  while (waitpid(mid, &st, 0) < 0 && errno == EINTR)
    ;
  if (read_report(rd, (int)(PAUSE_SETTLE_SECONDS * 2000), rep, "pause", err) < 0) {
    unlinkat(dirfd, PAUSE_SOCK, 0);
    return -1;
  }
  return 0;
}

int pause_ptrace_resume(int dirfd, struct pause_report *rep, hutch_error_t *err) {
  *rep = (struct pause_report){0};
  struct sockaddr_un a;
  sock_path(&a, dirfd);
  _cleanup_close_ int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
    return hutch_error_sys(err, "resume: reach the pauser");
  if (write_all(fd, "R", 1) < 0)
    return hutch_error_sys(err, "resume: ask the pauser");
  int r = read_report(fd, (int)(PAUSE_SETTLE_SECONDS * 2000), rep, "resume", err);
  unlinkat(dirfd, PAUSE_SOCK, 0);
  return r;
}
