#include "config.h"

#include "init.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "request.h"
#include "sync.h"
#include "util.h"

struct job {
  pid_t pid;     /* also the process group: payloads call setsid() */
  int client_fd; /* receives SYNC_EXIT; -1 once the client is gone */
  int failure_fd;
};

struct init_state {
  struct init_config *cfg;
  int epfd;
  int sigfd;
  struct job *jobs;
  size_t n_jobs;
  pid_t primary_pid;
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

static void add_job(struct init_state *s, pid_t pid, int client_fd, int failure_fd) {
  s->jobs = xrealloc(s->jobs, (s->n_jobs + 1) * sizeof(*s->jobs));
  s->jobs[s->n_jobs++] = (struct job){pid, client_fd, failure_fd};
}

static void send_exit(int fd, int wstatus, int failure_fd) {
  struct sync_exit ex = {0};
  if (WIFSIGNALED(wstatus))
    ex.signal = WTERMSIG(wstatus);
  else
    ex.status = WEXITSTATUS(wstatus);
  struct payload_failure f;
  if (failure_fd >= 0 && payload_read_failure(failure_fd, &f) == 1) {
    ex.failure_stage = f.stage;
    ex.failure_errno = f.errnum;
    snprintf(ex.failure, sizeof(ex.failure), "%s", f.msg);
  }
  if (fd >= 0)
    sync_send(fd, SYNC_EXIT, &ex, sizeof(ex), NULL, 0, NULL);
}

static __attribute__((noreturn)) void shut_down(int code) {
  /* Exiting as PID 1 makes the kernel SIGKILL every other process in the
   * namespace: nothing the sandbox started can outlive it. */
  _exit(code);
}

static void reap(struct init_state *s) {
  for (;;) {
    int wstatus;
    pid_t pid = waitpid(-1, &wstatus, WNOHANG);
    if (pid <= 0)
      return;
    for (size_t i = 0; i < s->n_jobs; i++) {
      struct job *j = &s->jobs[i];
      if (j->pid != pid)
        continue;
      send_exit(j->client_fd, wstatus, j->failure_fd);
      close(j->failure_fd);
      if (j->client_fd >= 0)
        unwatch_close(s, j->client_fd);
      s->jobs[i] = s->jobs[--s->n_jobs];
      if (pid == s->primary_pid)
        shut_down(0);
      break;
    }
  }
}

static void handle_signal(struct init_state *s) {
  struct signalfd_siginfo si;
  while (read(s->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
    int sig = (int)si.ssi_signo;
    if (sig == SIGCHLD)
      continue; /* reap() runs after every wakeup */
    if (s->primary_pid > 0) {
      kill(-s->primary_pid, sig);
    } else if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) {
      /* A long-lived sandbox told to stop stops whole. */
      shut_down(0);
    }
  }
}

static void start_requested(struct init_state *s, int client_fd, const char *buf, size_t len, int *fds, size_t nfds) {
  hutch_error_t err = NULL;
  struct exec_request req;
  if (nfds != 3) {
    hutch_error_set(&err, EPROTO, "exec request without its three stdio fds");
    goto fail;
  }
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
      .rlimit_as = s->cfg->rlimit_as,
  };
  int failure_fd = -1;
  pid_t pid = payload_spawn(&spec, &failure_fd, &err);
  strv_free(envp);
  request_clear(&req);
  if (pid < 0)
    goto fail;
  for (size_t i = 0; i < nfds; i++)
    close(fds[i]);
  add_job(s, pid, client_fd, failure_fd);
  struct sync_started st = {pid};
  sync_send(client_fd, SYNC_STARTED, &st, sizeof(st), NULL, 0, NULL);
  return;
fail:
  for (size_t i = 0; i < nfds; i++)
    close(fds[i]);
  sync_send_error(client_fd, err);
  hutch_error_free(&err);
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

static void send_root(int fd) {
  int fds[2];
  if (open_root(fds) < 0) {
    hutch_error_t err = NULL;
    hutch_error_sys(&err, "init: open the sandbox's root");
    sync_send_error(fd, err);
    hutch_error_free(&err);
    return;
  }
  sync_send(fd, SYNC_ROOT_FD, NULL, 0, fds, 2, NULL);
  close(fds[0]);
  close(fds[1]);
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
    if (j != NULL) {
      kill(-j->pid, SIGKILL);
      j->client_fd = -1;
    }
    unwatch_close(s, fd);
    return;
  }
  if (type == SYNC_EXEC && j == NULL) {
    start_requested(s, fd, buf, len, fds, nfds);
  } else if (type == SYNC_ROOT_FD && j == NULL && nfds == 0) {
    send_root(fd);
  } else if (type == SYNC_SIGNAL && j != NULL && len == sizeof(int32_t)) {
    int32_t sig;
    memcpy(&sig, buf, sizeof(sig));
    if (sig > 0 && sig < NSIG)
      kill(-j->pid, sig);
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
   * the state directory's mode should already ensure that. */
  struct ucred cred;
  socklen_t clen = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 || cred.uid != 0) {
    close(fd);
    return;
  }
  watch(s, fd);
}

void init_main(struct init_config *cfg) {
  struct init_state s = {.cfg = cfg, .epfd = -1, .sigfd = -1};
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  for (size_t i = 0; i < ARRAY_SIZE(forwarded_signals); i++)
    sigaddset(&mask, forwarded_signals[i]);
  /* Blocked signals are never "ignored" for PID 1, so signalfd receives
   * what would otherwise be dropped by the namespace's init protection. */
  sigprocmask(SIG_BLOCK, &mask, NULL);
  s.sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  s.epfd = epoll_create1(EPOLL_CLOEXEC);
  hutch_error_t err = NULL;
  if (s.sigfd < 0 || s.epfd < 0) {
    hutch_error_sys(&err, "init: signalfd/epoll");
    sync_send_error(cfg->parent_fd, err);
    shut_down(125);
  }
  watch(&s, s.sigfd);
  if (cfg->listen_fd >= 0)
    watch(&s, cfg->listen_fd);
  if (cfg->primary != NULL) {
    int failure_fd = -1;
    pid_t pid = payload_spawn(cfg->primary, &failure_fd, &err);
    if (pid < 0) {
      sync_send_error(cfg->parent_fd, err);
      shut_down(125);
    }
    s.primary_pid = pid;
    add_job(&s, pid, cfg->parent_fd, failure_fd);
    struct sync_started st = {pid};
    sync_send(cfg->parent_fd, SYNC_STARTED, &st, sizeof(st), NULL, 0, NULL);
    watch(&s, cfg->parent_fd);
  } else {
    /* The root travels with the ready message: the creator keeps it. */
    int fds[2];
    bool root = open_root(fds) == 0;
    sync_send(cfg->parent_fd, SYNC_READY, NULL, 0, fds, root ? 2 : 0, NULL);
    for (int i = 0; root && i < 2; i++)
      close(fds[i]);
    /* hutch create exits now; the sandbox lives on without it. */
    close(cfg->parent_fd);
    cfg->parent_fd = -1;
  }
  for (;;) {
    struct epoll_event events[16];
    int n = epoll_wait(s.epfd, events, ARRAY_SIZE(events), -1);
    if (n < 0 && errno != EINTR)
      shut_down(125);
    for (int i = 0; i < n; i++) {
      int fd = events[i].data.fd;
      if (fd == s.sigfd)
        handle_signal(&s);
      else if (fd == cfg->listen_fd)
        accept_client(&s);
      else if (fd == cfg->parent_fd && cfg->primary != NULL)
        handle_client(&s, fd);
      else
        handle_client(&s, fd);
    }
    reap(&s);
  }
}
