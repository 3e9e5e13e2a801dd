/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "init.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>

#include "memwatch.h"
#include "request.h"
#include "sync.h"
#include "util.h"

/* A connection that has proven it is hutch (caller_is_hutch), with the
 * process it started.  Once that process has ended the connection stays,
 * idle (pid 0), and may start the next one without proving itself again:
 * a process handle keeps it for its sandbox's next command
 * (sandbox_proc.c), which then pays no connect and no proof. */
struct job {
  pid_t pid;                       /* also the process group: payloads call setsid(); 0: idle */
  int client_fd;                   /* receives SYNC_EXIT; -1 once the client is gone */
  struct payload_failure *failure; /* why it never ran, NULL when it did */
};

struct init_state {
  struct init_config *cfg;
  int epfd;
  int sigfd;
  struct job *jobs;
  size_t n_jobs;
  pid_t primary_pid;
  double watched_at; /* the memory watchdog's last look (monotonic seconds) */
  int watch_next_ms; /* and when the next is due after it */
  bool watch_busy;   /* it found processes then: look again */
  bool watch_killed; /* it killed them: their ends are reported as out of memory */
  struct memwatch watcher;
};

static const int forwarded_signals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};

static void watch(struct init_state *s, int fd) {
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
  epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev);
}

static void unwatch_close(struct init_state *s, int fd) {
  epoll_ctl(s->epfd, EPOLL_CTL_DEL, fd, NULL);
  close(fd);
}

static struct job *job_by_client(struct init_state *s, int fd) {
  for (size_t i = 0; i < s->n_jobs; i++)
    if (s->jobs[i].client_fd == fd)
      return &s->jobs[i];
  return NULL;
}

static void add_job(struct init_state *s, pid_t pid, int client_fd, struct payload_failure *failure) {
  s->jobs = xrealloc(s->jobs, (s->n_jobs + 1) * sizeof(*s->jobs));
  s->jobs[s->n_jobs++] = (struct job){pid, client_fd, failure};
}

static void remove_job(struct init_state *s, struct job *j) {
  *j = s->jobs[--s->n_jobs];
}

static void send_exit(int fd, int wstatus, const struct payload_failure *f, uint64_t oom_limit,
                      const struct rusage *ru) {
  struct sync_exit ex = {
      .oom_limit = oom_limit,
      .cpu_usec = (uint64_t)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000000u +
                  (uint64_t)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec),
      .maxrss = (uint64_t)ru->ru_maxrss * 1024u,
  };
  if (WIFSIGNALED(wstatus))
    ex.signal = WTERMSIG(wstatus);
  else
    ex.status = WEXITSTATUS(wstatus);
  if (f != NULL && f->stage != 0) {
    ex.failure_stage = f->stage;
    ex.failure_errno = f->errnum;
    snprintf(ex.failure, sizeof(ex.failure), "%s", f->msg);
  }
  if (fd >= 0)
    sync_send(fd, SYNC_EXIT, &ex, sizeof(ex), NULL, 0, NULL);
}

/* With a pty (exec -t), its master travels with the message to hutch and
 * is closed here: nothing in the sandbox keeps it. */
/* The answer to a start: the pid, a pidfd of the process (from it hutch
 * learns its host pid, and a caller can poll it), and with a pty its
 * master, which init keeps no copy of. */
static void send_started(int fd, pid_t pid, int master) {
  struct sync_started st = {pid};
  int fds[2] = {(int)syscall(SYS_pidfd_open, pid, 0), master};
  size_t n = master >= 0 ? 2 : fds[0] >= 0 ? 1 : 0;
  if (fds[0] < 0 && master >= 0)
    fds[0] = open("/dev/null", O_RDONLY | O_CLOEXEC); /* keeps the master second */
  sync_send(fd, SYNC_STARTED, &st, sizeof(st), fds, n, NULL);
  for (int i = 0; i < 2; i++)
    if (fds[i] >= 0)
      close(fds[i]);
}

static __attribute__((noreturn)) void shut_down(int code) {
  /* Exiting as PID 1 makes the kernel SIGKILL every other process in the
   * namespace: nothing the sandbox started can outlive it. */
  _exit(code);
}

/* A one-shot's end: what else still runs in the sandbox dies now, as it
 * would with init's exit, and what init and all it reaped used goes with
 * SYNC_EXIT, so that hutch need not wait for init's exit (the teardown of
 * the namespaces) to learn it. */
static void primary_usage(struct rusage *ru) {
  kill(-1, SIGKILL);
  for (;;) {
    pid_t p = wait4(-1, NULL, 0, NULL);
    if (p < 0 && errno != EINTR)
      break;
  }
  struct rusage self, kids;
  if (getrusage(RUSAGE_SELF, &self) < 0 || getrusage(RUSAGE_CHILDREN, &kids) < 0)
    return; /* the command's own, as wait4 gave it */
  *ru = (struct rusage){.ru_maxrss = self.ru_maxrss > kids.ru_maxrss ? self.ru_maxrss : kids.ru_maxrss};
  timeradd(&self.ru_utime, &kids.ru_utime, &ru->ru_utime);
  timeradd(&self.ru_stime, &kids.ru_stime, &ru->ru_stime);
}

static void reap(struct init_state *s) {
  for (;;) {
    int wstatus;
    struct rusage ru;
    pid_t pid = wait4(-1, &wstatus, WNOHANG, &ru);
    if (pid < 0 && errno == ECHILD && s->watch_busy) {
      /* Init alone: nothing for the memory watchdog to look at until the
       * next command (watch_started), which would otherwise find the look
       * still due from this one's and walk /proc while it execs. */
      s->watch_busy = false;
      s->watch_killed = false;
    }
    if (pid <= 0)
      return;
    for (size_t i = 0; i < s->n_jobs; i++) {
      struct job *j = &s->jobs[i];
      if (j->pid != pid)
        continue;
      bool oom = s->watch_killed && WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL;
      if (pid == s->primary_pid)
        primary_usage(&ru);
      send_exit(j->client_fd, wstatus, j->failure, oom ? s->cfg->memory_watch : 0, &ru);
      payload_failure_free(j->failure);
      if (pid == s->primary_pid)
        shut_down(0);
      if (j->client_fd >= 0) {
        j->pid = 0; /* idle, ready for the client's next command */
        j->failure = NULL;
      } else {
        remove_job(s, j);
      }
      break;
    }
  }
}

/* Returns whether a child changed state (SIGCHLD): then reap() runs.  A
 * child that ends after the signal was read raises it again. */
static bool handle_signal(struct init_state *s) {
  /* Pending signals do not queue up: one read takes them all. */
  struct signalfd_siginfo si[ARRAY_SIZE(forwarded_signals) + 1];
  bool child = false;
  ssize_t n;
  while ((n = read(s->sigfd, si, sizeof(si))) >= (ssize_t)sizeof(si[0])) {
    for (size_t i = 0; i < (size_t)n / sizeof(si[0]); i++) {
      int sig = (int)si[i].ssi_signo;
      if (sig == SIGCHLD) {
        child = true;
      } else if (s->primary_pid > 0) {
        kill(-s->primary_pid, sig);
        /* A stopped process holds a terminating signal pending until it
         * runs again: one the sandbox stopped (a SIGSTOP of the command by
         * a process of its own) would otherwise never end, nor would hutch
         * waiting for it. */
        if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT)
          kill(-s->primary_pid, SIGCONT);
      } else if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) {
        /* A long-lived sandbox told to stop stops whole. */
        shut_down(0);
      }
    }
    if ((size_t)n < sizeof(si))
      break;
  }
  return child;
}

/* The sandbox's uid 0 is the same host user as hutch's, so SO_PEERCRED
 * cannot tell hutch from another sandbox of that user that reached the
 * socket.  hutch proves itself with a pidfd of this init, which only a
 * process that sees our pid, in an ancestor pid namespace, can open
 * (sandbox.c: sandbox_init_pidfd).  The fd's fdinfo names the pid it refers
 * to as this /proc counts pids; /proc/self, read from the same /proc, is
 * ours (1 in a fresh procfs, the host's pid with --proc host-ro). */
static bool caller_is_hutch(int fd) {
  char path[64], self[32];
  snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
  _cleanup_free_ char *info = read_file_at(AT_FDCWD, path, 4096, NULL);
  ssize_t n = readlink("/proc/self", self, sizeof(self) - 1);
  if (info == NULL || n <= 0)
    return false;
  self[n] = '\0';
  const char *pid = strncmp(info, "Pid:", 4) == 0 ? info : strstr(info, "\nPid:");
  if (pid == NULL)
    return false;
  pid += pid[0] == '\n' ? 5 : 4;
  char *end;
  long v = strtol(pid, &end, 10);
  return end != pid && (*end == '\n' || *end == '\0') && v > 0 && v == strtol(self, NULL, 10);
}

/* A command has just started.  When init was alone at the last look, that
 * look stands for now: the new process holds nothing yet, and the next
 * look is one interval away, the margin memwatch.h allows between looks.
 * Looking at once would walk /proc while the command execs, on every
 * command. */
static void watch_started(struct init_state *s) {
  if (s->cfg->memory_watch == 0 || s->watch_busy)
    return;
  s->watched_at = monotonic_seconds();
  s->watch_busy = true;
}

/* `idle`: the connection's idle job, when it has proven itself before. */
static void start_requested(struct init_state *s, int client_fd, struct job *idle, const char *buf, size_t len,
                            int *fds, size_t nfds) {
  hutch_error_t err = NULL;
  struct exec_request req;
  if (!(nfds == 3 && idle != NULL) && !(nfds == 4 && (idle != NULL || caller_is_hutch(fds[3])))) {
    hutch_error_set(&err, EPERM,
                    "control socket: the caller did not prove it is hutch (a pidfd of this sandbox's init)");
    goto fail;
  }
  if (nfds == 4)
    close(fds[3]);
  nfds = 3;
  /* The client refuses these already; init, which hands them to the
   * command, does not take its word for it. */
  for (int i = 0; i < 3; i++)
    if (stdio_refuse_directory(fds[i], i, &err) < 0)
      goto fail;
  if (request_decode(buf, len, &req, &err) < 0)
    goto fail;
  const char *const *layers[] = {(const char *const *)s->cfg->sandbox_env, (const char *const *)req.env};
  char **envp = env_merge(layers, 2);
  struct payload_spec spec = {
      .argv = req.argv,
      .envp = envp,
      .workdir = req.workdir,
      .stdio = {fds[0], fds[1], fds[2]},
      .bpf = s->cfg->bpf,
      .bpf_len = s->cfg->bpf_len,
      .nofile = s->cfg->nofile,
      .rlimit_data = s->cfg->rlimit_data,
      .tty = req.tty,
      .rows = req.rows,
      .cols = req.cols,
  };
  struct payload_failure *failure = NULL;
  int master = -1;
  pid_t pid = payload_spawn(&spec, &failure, &master, &err);
  strv_free(envp);
  request_clear(&req);
  if (pid < 0)
    goto fail;
  for (size_t i = 0; i < nfds; i++)
    close(fds[i]);
  if (idle != NULL)
    *idle = (struct job){pid, client_fd, failure};
  else
    add_job(s, pid, client_fd, failure);
  watch_started(s);
  send_started(client_fd, pid, master);
  return;
fail:
  for (size_t i = 0; i < nfds; i++)
    close(fds[i]);
  sync_send_error(client_fd, err);
  hutch_error_free(&err);
  if (idle != NULL)
    remove_job(s, idle);
  unwatch_close(s, client_fd);
}

/* The sandbox's root as an O_PATH fd, and its user namespace: hutch reads
 * and writes the sandbox's files from the host through them
 * (sandbox_fs.c), without running any program of the sandbox's. */
static int open_root(int fds[2]) {
  fds[0] = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  fds[1] = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
  if (fds[0] >= 0 && fds[1] >= 0)
    return 0;
  int saved = errno;
  for (int i = 0; i < 2; i++)
    if (fds[i] >= 0)
      close(fds[i]);
  errno = saved;
  return -1;
}

/* The root and userns, then the sandbox's tmpfs and network namespace
 * that init holds (init.h), when it holds both. */
static void send_root(const struct init_config *cfg, int fd) {
  int fds[4];
  if (open_root(fds) < 0) {
    hutch_error_t err = NULL;
    hutch_error_sys(&err, "init: open the sandbox's root");
    sync_send_error(fd, err);
    hutch_error_free(&err);
    return;
  }
  fds[2] = cfg->scratch_fd;
  fds[3] = cfg->netns_fd;
  sync_send(fd, SYNC_ROOT_FD, NULL, 0, fds, fds[2] >= 0 && fds[3] >= 0 ? 4 : 2, NULL);
  close(fds[0]);
  close(fds[1]);
}

/* A command and everything it started.  Its process group is its own
 * only once it has called setsid(): where it is made by a plain fork (the
 * sanitizer builds) rather than a vfork, init answers before that, and a
 * signal to the group alone would find no group yet. */
static void signal_job(const struct job *j, int sig) {
  if (kill(-j->pid, sig) < 0 && errno == ESRCH)
    kill(j->pid, sig);
}

static void handle_client(struct init_state *s, int fd) {
  static char buf[SYNC_MAX_PAYLOAD];
  int fds[SYNC_MAX_FDS];
  size_t nfds = 0, len = 0;
  uint32_t type = 0;
  hutch_error_t err = NULL;
  int r = sync_recv(fd, &type, buf, sizeof(buf), &len, fds, &nfds, &err);
  struct job *j = job_by_client(s, fd);
  if (r <= 0) {
    hutch_error_free(&err);
    for (size_t i = 0; i < nfds; i++)
      close(fds[i]);
    /* The client is gone (killed, or its caller gave up): what it started
     * must not run on unattended. */
    if (j != NULL && j->pid > 0) {
      signal_job(j, SIGKILL);
      j->client_fd = -1;
    } else if (j != NULL) {
      remove_job(s, j);
    }
    unwatch_close(s, fd);
    return;
  }
  bool running = j != NULL && j->pid > 0;
  if (type == SYNC_EXEC && !running) {
    start_requested(s, fd, j, buf, len, fds, nfds);
  } else if (type == SYNC_ROOT_FD && !running && nfds == 1) {
    /* The sandbox's root and user namespace go to hutch alone. */
    bool hutch = caller_is_hutch(fds[0]);
    close(fds[0]);
    if (hutch) {
      send_root(s->cfg, fd);
    } else {
      hutch_error_set(&err, EPERM,
                      "control socket: the caller did not prove it is hutch (a pidfd of this sandbox's init)");
      sync_send_error(fd, err);
      hutch_error_free(&err);
      if (j != NULL)
        remove_job(s, j);
      unwatch_close(s, fd);
    }
  } else if (type == SYNC_SIGNAL && j != NULL && len == sizeof(int32_t)) {
    /* An idle connection's signal was meant for a process that has ended
     * meanwhile: nothing to do, and no answer (the client reads none). */
    int32_t sig;
    memcpy(&sig, buf, sizeof(sig));
    if (running && sig > 0 && sig < NSIG)
      signal_job(j, sig);
  } else {
    for (size_t i = 0; i < nfds; i++)
      close(fds[i]);
    hutch_error_set(&err, EPROTO, "unexpected message type %u on the control socket", type);
    sync_send_error(fd, err);
    hutch_error_free(&err);
    if (j == NULL)
      unwatch_close(s, fd);
  }
}

static void accept_client(struct init_state *s) {
  int fd = accept4(s->cfg->listen_fd, NULL, NULL, SOCK_CLOEXEC);
  if (fd < 0)
    return;
  /* Only the sandbox's owner (uid 0 here, the user outside) may command it;
   * the state directory's mode should already ensure that.  Of those, only
   * hutch: see caller_is_hutch(). */
  struct ucred cred;
  socklen_t clen = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 || cred.uid != 0) {
    close(fd);
    return;
  }
  watch(s, fd);
}

/* The rlimits fallback's bound on the whole sandbox (memwatch.h).  Returns
 * the epoll timeout until the next look: an interval while any process
 * runs, none (-1) while init is alone. */
static int watch_memory(struct init_state *s) {
  if (s->cfg->memory_watch == 0)
    return -1;
  double now = monotonic_seconds();
  double due = s->watched_at + s->watch_next_ms / 1000.0;
  if (s->watch_busy && now < due)
    return (int)((due - now) * 1000) + 1;
  cpu_set_t set;
  unsigned cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? (unsigned)CPU_COUNT(&set) : 1;
  uint64_t bytes, procs;
  memwatch_sum(&s->watcher, s->cfg->memory_watch, cpus, &bytes, &procs);
  s->watched_at = now;
  s->watch_busy = procs > 0;
  if (procs == 0)
    s->watch_killed = false;
  if (bytes > s->cfg->memory_watch) {
    /* From PID 1, -1 is every other process of the namespace: whatever
     * session or group it made, nothing is missed. */
    kill(-1, SIGKILL);
    s->watch_killed = true;
  }
  s->watch_next_ms = memwatch_next_ms(bytes, s->cfg->memory_watch, cpus);
  return s->watch_busy ? s->watch_next_ms : -1;
}

/* A long-lived init idles for hours in as many sandboxes as a user runs:
 * give back what it touched only to get here.  It is a fork of the hutch
 * that started it, so its stack pages below this frame hold the returned
 * frames of the start (mounts, the CLI's parsing) and its heap the free
 * chunks of that work.  Both are dead; a page touched again comes back
 * zero-filled.  (The stack above holds live frames: init_config is one.) */
static __attribute__((noinline)) void shed_memory(void) {
  char here;
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  /* From a page under this frame (and its red zone) down 1 MiB at most, and
   * no further than RLIMIT_STACK: the kernel keeps that much (and at least
   * 128 MiB) below the stack's top free of other mappings, so nothing but
   * the stack is touched; madvise skips the unmapped part of the range
   * (ENOMEM) and still drops the rest. */
  uintptr_t top = ((uintptr_t)&here & ~(page - 1)) - page;
  uintptr_t span = (uintptr_t)1 << 20;
  struct rlimit rl;
  if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < span)
    span = (uintptr_t)rl.rlim_cur & ~(page - 1);
  madvise((void *)(top - span), span, MADV_DONTNEED);
  malloc_trim(0);
}

/* The signals init takes through a signalfd, and its epoll set. */
static void init_setup(struct init_state *s, struct init_config *cfg) {
  *s = (struct init_state){.cfg = cfg, .epfd = -1, .sigfd = -1, .watcher = {.diag_fd = cfg->memwatch_fd}};
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  for (size_t i = 0; i < ARRAY_SIZE(forwarded_signals); i++)
    sigaddset(&mask, forwarded_signals[i]);
  /* Blocked signals are never "ignored" for PID 1, so signalfd receives
   * what would otherwise be dropped by the namespace's init protection. */
  sigprocmask(SIG_BLOCK, &mask, NULL);
  s->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  s->epfd = epoll_create1(EPOLL_CLOEXEC);
  if (s->sigfd < 0 || s->epfd < 0) {
    hutch_error_t err = NULL;
    hutch_error_sys(&err, "init: signalfd/epoll");
    sync_send_error(cfg->parent_fd, err);
    shut_down(125);
  }
  watch(s, s->sigfd);
  if (cfg->listen_fd >= 0)
    watch(s, cfg->listen_fd);
}

static __attribute__((noreturn)) void serve(struct init_state *s) {
  struct init_config *cfg = s->cfg;
  int timeout = watch_memory(s);
  for (;;) {
    struct epoll_event events[16];
    int n = epoll_wait(s->epfd, events, ARRAY_SIZE(events), timeout);
    if (n < 0 && errno != EINTR)
      shut_down(125);
    bool child = false;
    for (int i = 0; i < n; i++) {
      int fd = events[i].data.fd;
      if (fd == s->sigfd)
        child = handle_signal(s) || child;
      else if (fd == cfg->listen_fd)
        accept_client(s);
      else
        handle_client(s, fd);
    }
    /* Only a SIGCHLD means there is anything to reap. */
    if (child)
      reap(s);
    timeout = watch_memory(s);
  }
}

void init_main(struct init_config *cfg) {
  struct init_state s;
  init_setup(&s, cfg);
  hutch_error_t err = NULL;
  if (cfg->primary != NULL) {
    struct payload_failure *failure = NULL;
    int master = -1;
    pid_t pid = payload_spawn(cfg->primary, &failure, &master, &err);
    if (pid < 0) {
      sync_send_error(cfg->parent_fd, err);
      shut_down(125);
    }
    s.primary_pid = pid;
    add_job(&s, pid, cfg->parent_fd, failure);
    send_started(cfg->parent_fd, pid, master);
    watch(&s, cfg->parent_fd);
  } else {
    /* The root travels with the ready message: the creator keeps it.  It
     * records where init holds the tmpfs and network namespace: hutch
     * takes them from a frozen init (paused) with pidfd_getfd. */
    int fds[2];
    bool root = open_root(fds) == 0;
    struct sync_held_fds held = {cfg->scratch_fd, cfg->netns_fd};
    sync_send(cfg->parent_fd, SYNC_READY, &held, sizeof(held), fds, root ? 2 : 0, NULL);
    for (int i = 0; root && i < 2; i++)
      close(fds[i]);
    /* Handed over: once the creator has recorded the sandbox it says so
     * (SYNC_GO), and only then may init outlive it; until then the
     * parent-death signal (contain.c) kills an unrecorded sandbox along
     * with a creator that died.  EOF: the creator died first. */
    if (sync_expect(cfg->parent_fd, SYNC_GO, NULL, 0, NULL, "wait to be recorded", &err) < 0 ||
        (!cfg->die_with_creator && prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0) < 0))
      shut_down(125);
    sync_send(cfg->parent_fd, SYNC_READY, NULL, 0, NULL, 0, NULL);
    /* hutch create exits now; the sandbox lives on without it (unless
     * its creator asked to keep it tied: die_with_creator). */
    close(cfg->parent_fd);
    cfg->parent_fd = -1;
    /* Nothing runs in the sandbox yet: become the small init, or, where
     * there is none, shed what this fork can. */
    if (cfg->become != NULL)
      cfg->become(cfg);
    shed_memory();
  }
  serve(&s);
}

void init_idle_main(struct init_config *cfg) {
  struct init_state s;
  init_setup(&s, cfg);
  shed_memory(); /* what its own start-up touched */
  serve(&s);
}
