/* SPDX-License-Identifier: Apache-2.0 */
/* The agents' spawner: a process the runner forks before it reads the task
 * set, which forks each task's agent when that task's worker asks.  An
 * agent is a fork with no exec (child.c says why); forked from here, it
 * holds what the runner had before the task set, its options, and none of
 * the rows, answers, results or scoring secrets a worker's memory holds.
 *
 * A worker sends its agent's argv with four fds (stdin, stdout, stderr and
 * the worker's end of a socket pair of its own): the agent's pid comes back
 * on that socket with a pidfd, then its wait status once it has ended.  A
 * worker gone (its end closed) has its agent stopped with SIGTERM, as the
 * agent's die-with-parent did when the worker was its parent; the
 * spawner's own end (the runner closed its socket, or died) stops every
 * agent and waits for them, so that each removes its sandbox. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "error.h"
#include "util.h"

/* A task's argv (options and paths: the statement goes on a pipe) and
 * environment. */
#define SPAWN_ARGV_MAX (128u << 10) /* within a socket's default send buffer */
/* What the environment leaves of it for a task's argv (options, paths, a
 * --verify command) and $HUTCH_LLM_GATE. */
#define SPAWN_ARGV_ROOM (16u << 10)

enum { REPLY_STARTED = 1, REPLY_FAILED, REPLY_EXITED };
struct reply {
  int32_t kind, pid, status, errnum;
  /* REPLY_EXITED: the agent's CPU time (user + system, its reaped
   * descendants' included: its sandbox, the tools' commands), in us. */
  int64_t cpu_us;
};

int bench_spawner_fd = -1;
static pid_t spawner_pid = -1;
bool bench_spawner_lost;

static int send_fds(int sock, const void *data, size_t len, const int *fds, size_t nfds) {
  char cbuf[CMSG_SPACE(4 * sizeof(int))];
  struct iovec iov = {(void *)data, len};
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
  if (nfds > 0) {
    memset(cbuf, 0, sizeof(cbuf));
    mh.msg_control = cbuf;
    mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
    memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
  }
  ssize_t n;
  while ((n = sendmsg(sock, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR)
    ;
  return n == (ssize_t)len ? 0 : -1;
}

/* One message, at most cap bytes (a longer one is an error: EMSGSIZE), and
 * up to want fds (the rest closed); 0 at EOF. */
static ssize_t recv_fds(int sock, void *buf, size_t cap, int *fds, size_t want, size_t *got, int flags) {
  char cbuf[CMSG_SPACE(8 * sizeof(int))];
  struct iovec iov = {buf, cap};
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
  ssize_t n;
  while ((n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | flags)) < 0 && errno == EINTR)
    ;
  *got = 0;
  for (struct cmsghdr *c = n >= 0 ? CMSG_FIRSTHDR(&mh) : NULL; c; c = CMSG_NXTHDR(&mh, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
      continue;
    size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    int *in = (int *)CMSG_DATA(c);
    for (size_t i = 0; i < k; i++) {
      if (*got < want)
        fds[(*got)++] = in[i];
      else
        close(in[i]);
    }
  }
  if (n >= 0 && (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
    for (size_t i = 0; i < *got; i++)
      close(fds[i]);
    *got = 0;
    errno = EMSGSIZE;
    return -1;
  }
  return n;
}

/* ---- the spawner ---- */

struct agent {
  pid_t pid;
  int chan; /* the worker's socket; -1 once the worker has gone */
};

static struct agent *agents;
static size_t n_agents;
/* The spawner stops its agents (told SIGTERM, or its runner gone): their
 * tasks did not end on their own. */
static bool stopping;

static void reply(int chan, int kind, pid_t pid, int status, int errnum, int pidfd, int64_t cpu_us) {
  struct reply r = {kind, pid, status, errnum, cpu_us};
  (void)send_fds(chan, &r, sizeof(r), &pidfd, pidfd >= 0 ? 1 : 0);
}

/* A request: argc (32 bits), then argv and the environment as strings,
 * each NUL-terminated; and the fds stdin, stdout, stderr, the worker's
 * socket.  The agent's child is set up as child.c's would be. */
static void start_agent(char *buf, size_t len, const int fds[4], const sigset_t *mask) {
  uint32_t argc = 0;
  size_t n_str = 0;
  if (len >= sizeof(argc)) {
    memcpy(&argc, buf, sizeof(argc));
    for (size_t i = sizeof(argc); i < len; i++)
      n_str += buf[i] == '\0';
  }
  if (len <= sizeof(argc) || buf[len - 1] != '\0' || argc == 0 || argc > n_str) {
    reply(fds[3], REPLY_FAILED, 0, 0, EINVAL, -1, 0);
    close(fds[3]);
    return;
  }
  char **strs = xcalloc(n_str + 2, sizeof(*strs));
  size_t k = 0;
  for (size_t i = sizeof(argc); i < len; i += strlen(buf + i) + 1)
    strs[k++] = buf + i;
  /* argv, its NULL, then the environment (the worker's), its NULL. */
  memmove(strs + argc + 1, strs + argc, (n_str - argc) * sizeof(*strs));
  strs[argc] = NULL;
  strs[n_str + 1] = NULL;
  pid_t pid = bench_fork_agent(strs, strs + argc + 1, fds[0], fds[1], fds[2], mask);
  int e = errno;
  free(strs);
  if (pid < 0) {
    reply(fds[3], REPLY_FAILED, 0, 0, e, -1, 0);
    close(fds[3]);
    return;
  }
  int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
  reply(fds[3], REPLY_STARTED, pid, 0, 0, pidfd, 0);
  if (pidfd >= 0)
    close(pidfd);
  agents = xrealloc(agents, (n_agents + 1) * sizeof(*agents));
  agents[n_agents++] = (struct agent){pid, fds[3]};
}

static void reap(void) {
  int status;
  pid_t pid;
  struct rusage ru;
  while ((pid = wait4(-1, &status, WNOHANG, &ru)) > 0) {
    int64_t cpu_us = bench_rusage_us(&ru);
    for (size_t i = 0; i < n_agents; i++) {
      if (agents[i].pid != pid)
        continue;
      if (agents[i].chan >= 0) {
        reply(agents[i].chan, REPLY_EXITED, pid, status, stopping ? ECANCELED : 0, -1, cpu_us);
        close(agents[i].chan);
      }
      agents[i] = agents[--n_agents];
      break;
    }
  }
}

static void stop_all(void) {
  for (size_t i = 0; i < n_agents; i++)
    kill(agents[i].pid, SIGTERM);
}

__attribute__((noreturn)) static void spawner_main(int ctl, pid_t runner, const sigset_t *mask) {
  prctl(PR_SET_NAME, "hutch-spawner", 0, 0, 0);
  /* The runner's death (even SIGKILL) is a SIGTERM here: the agents are
   * stopped and waited for.  Ctrl-C reaches the agents themselves (the
   * terminal's process group): the spawner goes on reaping them. */
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGCHLD);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGHUP);
  sigprocmask(SIG_BLOCK, &sigs, NULL);
  int sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0 || getppid() != runner)
    _exit(1);
  char *buf = xmalloc(SPAWN_ARGV_MAX);
  bool ending = false;
  while (!ending || n_agents > 0) {
    size_t np = 0;
    struct pollfd *p = xcalloc(n_agents + 2, sizeof(*p));
    p[np++] = (struct pollfd){sfd, POLLIN, 0};
    if (!ending)
      p[np++] = (struct pollfd){ctl, POLLIN, 0};
    for (size_t i = 0; i < n_agents; i++)
      p[np++] = (struct pollfd){agents[i].chan, agents[i].chan >= 0 ? POLLIN : 0, 0};
    if (poll(p, np, -1) < 0 && errno != EINTR)
      _exit(1);
    size_t base = ending ? 1 : 2;
    /* A worker that has gone (or says anything: it has nothing to say)
     * takes its agent with it. */
    for (size_t i = 0; i < n_agents && base + i < np; i++) {
      if (agents[i].chan >= 0 && p[base + i].revents) {
        close(agents[i].chan);
        agents[i].chan = -1;
        kill(agents[i].pid, SIGTERM);
      }
    }
    if (!ending && (p[1].revents & POLLIN)) {
      int fds[4];
      size_t got = 0;
      ssize_t n = recv_fds(ctl, buf, SPAWN_ARGV_MAX, fds, 4, &got, 0);
      if (n == 0 || (n < 0 && errno != EMSGSIZE)) {
        ending = true;
      } else if (got == 4) {
        start_agent(buf, (size_t)n, fds, mask);
        close(fds[0]);
        close(fds[1]);
        close(fds[2]);
      } else {
        for (size_t i = 0; i < got; i++)
          close(fds[i]);
      }
      /* The next agent forks from this buffer too: a longer request
       * (another task's paths and --verify command) must not stay in it
       * past a shorter one. */
      if (n != 0)
        explicit_bzero(buf, n > 0 ? (size_t)n : SPAWN_ARGV_MAX);
    } else if (!ending && (p[1].revents & (POLLHUP | POLLERR))) {
      ending = true;
    }
    free(p);
    struct signalfd_siginfo si;
    bool term = false;
    while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
      term |= si.ssi_signo == SIGTERM;
    reap();
    /* Normally every agent has ended when the runner closes its socket. */
    if ((term || ending) && !stopping) {
      ending = stopping = true;
      stop_all();
    }
  }
  _exit(0);
}

int bench_spawner_start(hutch_error_t *err) {
  /* Every task's request carries the environment: one too large for it
   * stops the run here, not each task on its own. */
  size_t env = 0;
  for (char **e = environ; *e; e++)
    env += strlen(*e) + 1;
  if (env > SPAWN_ARGV_MAX - SPAWN_ARGV_ROOM) {
    hutch_error_set(err, E2BIG, "the environment (%zu bytes) is too large for the tasks' agents (at most %u)", env,
                    SPAWN_ARGV_MAX - SPAWN_ARGV_ROOM);
    return hutch_error_hint(err, "unset the variables the run does not need (env -u NAME hutch benchmark ...)");
  }
  int sp[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
    return hutch_error_sys(err, "agent spawner: socketpair");
  sigset_t mask;
  sigprocmask(SIG_SETMASK, NULL, &mask);
  pid_t runner = getpid();
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(sp[0]);
    close(sp[1]);
    return hutch_error_set(err, e, "agent spawner: fork");
  }
  if (pid == 0) {
    close(sp[0]);
    spawner_main(sp[1], runner, &mask);
  }
  close(sp[1]);
  bench_spawner_fd = sp[0];
  spawner_pid = pid;
  return 0;
}

bool bench_spawner_is(pid_t pid) {
  if (pid <= 0 || pid != spawner_pid)
    return false;
  spawner_pid = -1; /* reaped by the caller: not to be waited for again */
  return true;
}

void bench_spawner_stop(void) {
  if (bench_spawner_fd >= 0)
    close(bench_spawner_fd);
  bench_spawner_fd = -1;
  /* It ends once its agents have (each removes its sandbox). */
  while (spawner_pid > 0 && waitpid(spawner_pid, NULL, 0) < 0 && errno == EINTR)
    ;
  spawner_pid = -1;
}

/* ---- a worker's side ---- */

/* A channel closed with no word: the spawner ended (the runner's socket
 * shows it too, within the same exit), or it could not take the request
 * (out of fds, say). */
static bool spawner_gone(void) {
  struct pollfd p = {bench_spawner_fd, 0, 0};
  return bench_spawner_fd >= 0 && poll(&p, 1, 1000) > 0 && (p.revents & POLLHUP);
}

int bench_spawner_request(struct bench_child *c, char *const argv[], const int stdio[3], hutch_error_t *err) {
  if (bench_spawner_fd < 0)
    return hutch_error_set(err, ENOTCONN, "the agent spawner is not running");
  /* The worker's environment goes along, as an exec would pass it (the
   * runner sets HUTCH_LLM_GATE after the spawner's fork). */
  uint32_t argc = 0;
  size_t len = sizeof(argc);
  for (; argv[argc]; argc++)
    len += strlen(argv[argc]) + 1;
  for (char **e = environ; *e; e++)
    len += strlen(*e) + 1;
  if (len > SPAWN_ARGV_MAX)
    return hutch_error_set(err, E2BIG, "the agent's arguments and environment (%zu bytes) are too long", len);
  _cleanup_free_ char *buf = xmalloc(len);
  memcpy(buf, &argc, sizeof(argc));
  size_t off = sizeof(argc);
  for (int pass = 0; pass < 2; pass++) {
    for (char *const *v = pass ? environ : argv; *v; v++) {
      size_t n = strlen(*v) + 1;
      memcpy(buf + off, *v, n);
      off += n;
    }
  }
  int sp[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
    return hutch_error_sys(err, "agent spawner: socketpair");
  _cleanup_close_ int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  int fds[4] = {stdio[0] >= 0 ? stdio[0] : null, stdio[1] >= 0 ? stdio[1] : null, stdio[2] >= 0 ? stdio[2] : null,
                sp[1]};
  int r = send_fds(bench_spawner_fd, buf, len, fds, 4);
  int e = errno;
  close(sp[1]);
  if (r < 0) {
    close(sp[0]);
    bench_spawner_lost = e == EPIPE || e == ECONNRESET || e == ENOTCONN;
    return hutch_error_set(err, e, "agent spawner: send the request");
  }
  struct reply rep;
  int pidfd = -1;
  size_t got = 0;
  ssize_t n = recv_fds(sp[0], &rep, sizeof(rep), &pidfd, 1, &got, 0);
  if (n != (ssize_t)sizeof(rep) || rep.kind != REPLY_STARTED) {
    e = n < 0 ? errno : n == (ssize_t)sizeof(rep) && rep.kind == REPLY_FAILED ? rep.errnum : EPROTO;
    /* No word at all: the spawner ended with the request unread. */
    bench_spawner_lost = (n == 0 || (n < 0 && errno == ECONNRESET)) && spawner_gone();
    if (got)
      close(pidfd);
    close(sp[0]);
    return hutch_error_set(err, e, "agent spawner: start the agent");
  }
  c->pid = rep.pid;
  c->pidfd = got ? pidfd : -1;
  c->chan = sp[0];
  c->remote = true;
  return 0;
}

/* The agent's end, from its channel: 1 with c->status, 0 when there is
 * nothing yet.  The spawner gone without a word: the agent died with it. */
int bench_spawner_ended(struct bench_child *c) {
  struct reply rep;
  int fd = -1;
  size_t got = 0;
  ssize_t n = recv_fds(c->chan, &rep, sizeof(rep), &fd, 1, &got, MSG_DONTWAIT);
  if (got)
    close(fd);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
    return 0;
  bool told = n == (ssize_t)sizeof(rep) && rep.kind == REPLY_EXITED;
  c->status = told ? rep.status : SIGKILL;
  c->cpu = told ? (double)rep.cpu_us / 1e6 : 0;
  /* Its end untold (the spawner ended, its agents with it), or the spawner
   * stopped it: the task did not end on its own. */
  if (told ? rep.errnum == ECANCELED : spawner_gone())
    bench_spawner_lost = true;
  close(c->chan);
  c->chan = -1;
  if (c->pidfd >= 0)
    close(c->pidfd);
  c->pidfd = -1;
  c->remote = false;
  return 1;
}

void bench_child_signal(const struct bench_child *c, int sig) {
  if (c->remote && c->pidfd >= 0)
    syscall(SYS_pidfd_send_signal, c->pidfd, sig, NULL, 0);
  else
    kill(c->pid, sig);
}
