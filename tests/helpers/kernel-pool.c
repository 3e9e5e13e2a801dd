/* SPDX-License-Identifier: Apache-2.0
 *
 * kernel-pool POOL [--max N] [--procs K] [--dir DIR] [--hold S] [--pace M] [--pause MS]:
 * take as much of a kernel pool as this process may, the way a hostile
 * sandbox would, and hold it until stdin ends but at least S seconds (at
 * most a minute), then exit 0.
 * kernel-pool --once POOL: take one unit, print "OK" or the errno's name,
 * give it back.  Used by tests/integration/kernel-pools.sh and limits.sh
 * to show that what a sandbox takes leaves the host's share alone.
 *
 * While taking, it prints "at N" lines (N units so far; for the byte pools,
 * MiB, at most every 4 MiB), so that a sandbox killed on the way leaves its
 * high-water mark in the output; then "took N WHY", WHY being the errno's
 * name that stopped it or "max" when --max was reached.
 *
 * Pools (units):
 *   aio             native AIO contexts (io_setup; host-wide fs.aio-max-nr)
 *   inotify         inotify instances (per-user max_inotify_instances)
 *   inotify-watches watches of one instance, on files it makes in --dir
 *   timers          POSIX timers (each holds a queued signal: RLIMIT_SIGPENDING)
 *   mqueue          POSIX message queues of the default size (RLIMIT_MSGQUEUE)
 *   ptys            pseudo-terminals of the sandbox's devpts (kernel.pty.max)
 *   unix-buffers    MiB queued in unix socket pairs, never read
 *   unix-orphans    the same, each sender closed once it has filled its queue
 *   unix-embryos    MiB a client queued to a listener, then closed: the
 *                   connection waits in the listener's backlog, never accepted
 *   tcp-buffers     MiB queued in loopback TCP connections, never read
 *   pipe-buffers    MiB queued in pipes, never read
 *   epoll-watches   MiB of epoll watches (200 bytes each in the kernel)
 *   sysv-messages   MiB of System V messages, queued and never received
 *   sysv-semaphores MiB of System V semaphore sets (64 bytes a semaphore)
 * --procs K splits the pools over K processes (each has its own
 * RLIMIT_NOFILE); the counts are summed through shared memory.  --pace M
 * pauses after each M MiB of them, 120 ms or --pause MS.
 *
 * Built static: it runs inside any rootfs, busybox's included. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SIOCOUTQ
#define SIOCOUTQ 0x5411
#endif
#ifndef F_SETPIPE_SZ
#define F_SETPIPE_SZ 1031
#endif

#define HOLD_SECONDS 60
#define MIB (1024 * 1024)

static const char *errname(int e) {
  const char *n = strerrorname_np(e);
  return n ? n : "E?";
}

/* ---- aio ---- */
typedef unsigned long aio_context_t;
static long aio_take(void) {
  /* Large contexts first, then smaller ones into what is left. */
  static unsigned nr = 4096;
  for (;;) {
    aio_context_t ctx = 0;
    if (syscall(SYS_io_setup, nr, &ctx) == 0)
      return 1;
    if (errno != EAGAIN || nr == 1)
      return -1;
    nr /= 2;
  }
}
static long aio_once(void) {
  aio_context_t ctx = 0;
  if (syscall(SYS_io_setup, 1, &ctx) < 0)
    return -1;
  syscall(SYS_io_destroy, ctx);
  return 0;
}

/* ---- inotify ---- */
static long inotify_take(void) {
  return inotify_init1(IN_CLOEXEC) < 0 ? -1 : 1;
}
static long inotify_once(void) {
  int fd = inotify_init1(IN_CLOEXEC);
  if (fd < 0)
    return -1;
  close(fd);
  return 0;
}

static const char *watch_dir = "/tmp";
static long watches_take(void) {
  static int ifd = -1;
  static unsigned long n;
  if (ifd < 0 && (ifd = inotify_init1(IN_CLOEXEC)) < 0)
    return -1;
  char path[PATH_MAX];
  snprintf(path, sizeof(path), "%s/w%lu", watch_dir, n++);
  int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0)
    return -1;
  close(fd);
  return inotify_add_watch(ifd, path, IN_MODIFY) < 0 ? -1 : 1;
}

/* ---- timers ---- */
static long timer_take(void) {
  struct sigevent sev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGRTMIN};
  int t; /* the kernel's timer id */
  return syscall(SYS_timer_create, CLOCK_MONOTONIC, &sev, &t) < 0 ? -1 : 1;
}
static long timer_once(void) {
  struct sigevent sev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGRTMIN};
  int t;
  if (syscall(SYS_timer_create, CLOCK_MONOTONIC, &sev, &t) < 0)
    return -1;
  syscall(SYS_timer_delete, t);
  return 0;
}

/* ---- ptys of the sandbox's devpts ---- */
static long pty_take(void) {
  return open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC) < 0 ? -1 : 1;
}
static long pty_once(void) {
  int fd = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  close(fd);
  return 0;
}

/* ---- POSIX message queues ---- */
static long mq_take(void) {
  static unsigned long n;
  char name[64];
  snprintf(name, sizeof(name), "kernel-pool-%d-%lu", (int)getpid(), n++);
  /* NULL attributes: the default size (10 messages of 8 KiB). */
  long fd = syscall(SYS_mq_open, name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600, NULL);
  if (fd < 0)
    return -1;
  /* Unlinked, it still counts while open, and none is left behind. */
  syscall(SYS_mq_unlink, name);
  return 1;
}
static long mq_once(void) {
  char name[64];
  snprintf(name, sizeof(name), "kernel-pool-once-%d", (int)getpid());
  long fd = syscall(SYS_mq_open, name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600, NULL);
  if (fd < 0)
    return -1;
  syscall(SYS_mq_unlink, name);
  close((int)fd);
  return 0;
}

/* ---- buffers: bytes queued where nobody reads them ---- */
static char chunk[64 * 1024];

/* The total of every process, kept up to date write by write, so that a
 * process killed in the middle of a queue has counted what it queued. */
static _Atomic long long *shared_total;

/* --pace N: after each N MiB queued (all processes together), a pause (of
 * --pause milliseconds), so that a watchdog on a busy machine gets to look; what a
 * test then sees is the watchdog's count, not its race with the filling. */
static long long pace_bytes;
static int pace_pause_ms = 120; /* --pause MS */

static void paced(void) {
  static long long next;
  if (pace_bytes <= 0)
    return;
  long long now = atomic_load(shared_total);
  if (next == 0)
    next = pace_bytes;
  if (now >= next) {
    usleep((useconds_t)pace_pause_ms * 1000);
    next = (now / pace_bytes + 1) * pace_bytes;
  }
}

/* Fills fd; returns the bytes the kernel now holds for it.  For a unix
 * socket, SIOCOUTQ is what its queued packets cost (their true size), not
 * just their data. */
static long long fill(int fd, bool unix_socket) {
  long long queued = 0;
  for (;;) {
    ssize_t n = write(fd, chunk, sizeof(chunk));
    if (n <= 0)
      break;
    queued += n;
    atomic_fetch_add(shared_total, n);
    paced();
  }
  int outq;
  if (unix_socket && ioctl(fd, SIOCOUTQ, &outq) == 0 && outq > queued) {
    atomic_fetch_add(shared_total, outq - queued);
    queued = outq;
  }
  return queued;
}

static void big_buffer(int fd, int which) {
  int big = INT_MAX; /* the kernel caps it at net.core.wmem_max or rmem_max */
  setsockopt(fd, SOL_SOCKET, which, &big, sizeof(big));
}

enum buffers {
  UNIX_BUFFERS,
  UNIX_ORPHANS,
  UNIX_EMBRYOS,
  TCP_BUFFERS,
  PIPE_BUFFERS,
  EPOLL_WATCHES,
  SYSV_MESSAGES,
  SYSV_SEMAPHORES,
  COUNTED
};

/* A socket pair's sender filled, kept (UNIX_BUFFERS) or closed with its
 * data still queued at the other end (UNIX_ORPHANS). */
static long long take_unix_pair(bool close_sender) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) < 0)
    return -errno;
  big_buffer(fds[0], SO_SNDBUF);
  long long got = fill(fds[0], true);
  if (close_sender)
    close(fds[0]);
  return got;
}

/* A client connects to a listener nobody accepts from, fills its queue and
 * closes: the data waits in the listener's backlog. */
static long long take_embryo(void) {
  static int listener = -1;
  static struct sockaddr_un addr;
  static unsigned n;
  for (int tries = 0; tries < 2; tries++) {
    if (listener < 0) {
      listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (listener < 0)
        return -errno;
      addr = (struct sockaddr_un){.sun_family = AF_UNIX};
      /* abstract: leaves no file */
      snprintf(addr.sun_path + 1, sizeof(addr.sun_path) - 1, "kernel-pool-%d-%u", (int)getpid(), n++);
      if (bind(listener, (struct sockaddr *)&addr, sizeof(addr)) < 0 || listen(listener, INT_MAX) < 0)
        return -errno;
    }
    int c = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c < 0)
      return -errno;
    if (connect(c, (struct sockaddr *)&addr, sizeof(addr)) == 0) {
      big_buffer(c, SO_SNDBUF);
      long long got = fill(c, true);
      close(c);
      return got;
    }
    int e = errno;
    close(c);
    if (e != EAGAIN)
      return -e;
    listener = -1; /* its backlog is full: the next one (this one stays open) */
  }
  return -EAGAIN;
}

/* A loopback TCP connection: the client's send buffer and the server's
 * receive buffer filled (the bytes written). */
static long long take_tcp(void) {
  static int listener = -1;
  static struct sockaddr_in addr;
  if (listener < 0) {
    listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listener < 0)
      return -errno;
    big_buffer(listener, SO_RCVBUF);
    addr = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(addr);
    if (bind(listener, (struct sockaddr *)&addr, sizeof(addr)) < 0 || listen(listener, 64) < 0 ||
        getsockname(listener, (struct sockaddr *)&addr, &len) < 0)
      return -errno;
  }
  int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (c < 0)
    return -errno;
  big_buffer(c, SO_SNDBUF);
  if (connect(c, (struct sockaddr *)&addr, sizeof(addr)) < 0)
    return -errno;
  int s = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
  if (s < 0)
    return -errno;
  fcntl(c, F_SETFL, O_NONBLOCK);
  long long got = 0;
  /* The receiver's window opens as the sender fills it: a few rounds. */
  for (int round = 0; round < 20; round++) {
    long long more = fill(c, false);
    got += more;
    if (more == 0 && round > 2)
      break;
    usleep(1000);
  }
  return got;
}

static long long take_pipe(void) {
  int fds[2];
  if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0)
    return -errno;
  fcntl(fds[1], F_SETPIPE_SZ, 1 << 20); /* refused past the user's share: the default size then */
  return fill(fds[1], false);
}

/* Epoll watches: 32 instances, each watching the same eventfds, one more
 * eventfd a unit.  The bytes are the kernel's objects for them (an item
 * and a wait-queue entry: 200 bytes, from slabinfo). */
#define EPOLL_INSTANCES 32
#define EPOLL_WATCH_BYTES 200
static long long take_epoll(void) {
  static int ep[EPOLL_INSTANCES];
  static bool made;
  if (!made) {
    for (int i = 0; i < EPOLL_INSTANCES; i++)
      if ((ep[i] = epoll_create1(EPOLL_CLOEXEC)) < 0)
        return -errno;
    made = true;
  }
  int fd = eventfd(0, EFD_CLOEXEC);
  if (fd < 0)
    return -errno;
  struct epoll_event ev = {.events = EPOLLIN};
  for (int i = 0; i < EPOLL_INSTANCES; i++) {
    if (epoll_ctl(ep[i], EPOLL_CTL_ADD, fd, &ev) < 0)
      return -errno;
    atomic_fetch_add(shared_total, EPOLL_WATCH_BYTES);
    paced();
  }
  return EPOLL_INSTANCES * EPOLL_WATCH_BYTES;
}

/* System V messages of 8 KiB, in queues of the sandbox's IPC namespace,
 * each as full as kernel.msgmnb lets it be. */
static long long take_sysv_message(void) {
  static int q = -1;
  static struct {
    long type;
    char text[8192];
  } m = {1, {0}};
  for (int tries = 0; tries < 2; tries++) {
    if (q < 0 && (q = msgget(IPC_PRIVATE, IPC_CREAT | 0600)) < 0)
      return -errno;
    if (msgsnd(q, &m, sizeof(m.text), IPC_NOWAIT) == 0) {
      atomic_fetch_add(shared_total, (long long)sizeof(m.text));
      paced();
      return (long long)sizeof(m.text);
    }
    if (errno != EAGAIN)
      return -errno;
    q = -1; /* full: the next queue */
  }
  return -EAGAIN;
}

/* System V semaphore sets of kernel.semmsl semaphores (32000 by default),
 * 64 bytes each in the kernel (a cache line). */
#define SEM_BYTES 64
static long long take_sysv_semaphores(void) {
  static int per_set = 32000;
  for (;;) {
    if (semget(IPC_PRIVATE, per_set, IPC_CREAT | 0600) >= 0) {
      long long got = (long long)per_set * SEM_BYTES;
      atomic_fetch_add(shared_total, got);
      paced();
      return got;
    }
    if (errno != EINVAL || per_set <= 250)
      return -errno;
    per_set /= 2; /* a smaller kernel.semmsl */
  }
}

/* A count pool (struct pool) split over --procs processes. */
static long (*counted_take)(void);
static long long take_counted(void) {
  if (counted_take() < 0)
    return -errno;
  atomic_fetch_add(shared_total, 1);
  return 1;
}

static long long take_unit(enum buffers kind) {
  switch (kind) {
  case UNIX_BUFFERS:
    return take_unix_pair(false);
  case UNIX_ORPHANS:
    return take_unix_pair(true);
  case UNIX_EMBRYOS:
    return take_embryo();
  case TCP_BUFFERS:
    return take_tcp();
  case PIPE_BUFFERS:
    return take_pipe();
  case EPOLL_WATCHES:
    return take_epoll();
  case SYSV_MESSAGES:
    return take_sysv_message();
  case SYSV_SEMAPHORES:
    return take_sysv_semaphores();
  case COUNTED:
    return take_counted();
  }
  return -EINVAL;
}

/* One process's share: units until the fds or the pool run out, or the
 * shared total reaches the ceiling.  Returns the errno that stopped it, 0
 * for the ceiling. */
static int take_buffers(enum buffers kind, long long max_bytes, _Atomic long long *total) {
  for (;;) {
    if (atomic_load(total) >= max_bytes)
      return 0;
    long long got = take_unit(kind);
    if (got < 0)
      return (int)-got;
  }
}

/* --hold N: seconds to hold at least, whatever stdin does. */
static int min_hold;

static void hold(void) {
  struct pollfd p = {0, POLLIN, 0};
  time_t start = time(NULL), end = start + HOLD_SECONDS;
  char buf[64];
  while (time(NULL) < end) {
    int r = poll(&p, 1, 100);
    if (r > 0 && (read(0, buf, sizeof(buf)) <= 0 || (p.revents & (POLLHUP | POLLERR)))) {
      if (time(NULL) >= start + min_hold)
        return;
      p.fd = -1; /* stdin is done: only the time is left */
    }
    if (p.fd < 0 && time(NULL) >= start + min_hold)
      return;
  }
}

/* unit: MIB for the byte pools, 1 for a count pool. */
static int run_buffers(enum buffers kind, long long max_units, long long unit, int procs) {
  _Atomic long long *total = mmap(NULL, sizeof(*total), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (total == MAP_FAILED)
    return perror("mmap"), 1;
  shared_total = total;
  long long max_bytes = max_units * unit;
  long long every = unit == 1 ? 1024 : 4 * MIB;
  puts("at 0"); /* a sandbox killed before the first report held less than it */
  fflush(stdout);
  int pipe_done[2];
  if (pipe(pipe_done) < 0)
    return perror("pipe"), 1;
  for (int i = 0; i < procs; i++) {
    pid_t pid = fork();
    if (pid < 0)
      return perror("fork"), 1;
    if (pid == 0) {
      close(pipe_done[0]);
      int why = take_buffers(kind, max_bytes, total);
      (void)!write(pipe_done[1], &why, sizeof(why));
      close(pipe_done[1]);
      hold();
      _exit(0);
    }
  }
  close(pipe_done[1]);
  /* Report the total as it grows, until every process has said why it
   * stopped. */
  long long shown = 0;
  int done = 0, why = 0;
  struct pollfd p = {pipe_done[0], POLLIN, 0};
  while (done < procs) {
    long long now = atomic_load(total);
    if (now - shown >= every) {
      printf("at %lld\n", now / unit);
      fflush(stdout);
      shown = now;
    }
    if (poll(&p, 1, 1) > 0) {
      int w;
      if (read(pipe_done[0], &w, sizeof(w)) != sizeof(w))
        break;
      if (w != 0 && why == 0)
        why = w;
      done++;
    }
  }
  long long now = atomic_load(total);
  printf("at %lld\ntook %lld %s\n", now / unit, now / unit, why ? errname(why) : "max");
  fflush(stdout);
  hold();
  while (wait(NULL) > 0)
    ;
  return 0;
}

static const struct pool {
  const char *name;
  long (*take)(void);
  long (*once)(void);
} pools[] = {
    {"aio", aio_take, aio_once},
    {"inotify", inotify_take, inotify_once},
    {"inotify-watches", watches_take, NULL},
    {"timers", timer_take, timer_once},
    {"mqueue", mq_take, mq_once},
    {"ptys", pty_take, pty_once},
};
static const char *const buffer_pools[] = {"unix-buffers", "unix-orphans",  "unix-embryos",  "tcp-buffers",
                                           "pipe-buffers", "epoll-watches", "sysv-messages", "sysv-semaphores"};

static int usage(FILE *out) {
  fprintf(out, "usage: kernel-pool POOL [--max N] [--procs K] [--dir DIR] [--hold S] [--pace M] [--pause MS]\n"
               "       kernel-pool --once POOL\n"
               "pools: aio inotify inotify-watches timers mqueue ptys unix-buffers unix-orphans\n"
               "       unix-embryos tcp-buffers pipe-buffers epoll-watches sysv-messages sysv-semaphores\n");
  return out == stdout ? 0 : 2;
}

int main(int argc, char **argv) {
  bool once = false;
  long long max = 1000000;
  int procs = 1;
  const char *name = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0)
      return usage(stdout);
    if (strcmp(argv[i], "--once") == 0)
      once = true;
    else if (strcmp(argv[i], "--max") == 0 && i + 1 < argc)
      max = atoll(argv[++i]);
    else if (strcmp(argv[i], "--procs") == 0 && i + 1 < argc)
      procs = atoi(argv[++i]);
    else if (strcmp(argv[i], "--pace") == 0 && i + 1 < argc)
      pace_bytes = atoll(argv[++i]) * MIB;
    else if (strcmp(argv[i], "--pause") == 0 && i + 1 < argc)
      pace_pause_ms = atoi(argv[++i]);
    else if (strcmp(argv[i], "--hold") == 0 && i + 1 < argc)
      min_hold = atoi(argv[++i]);
    else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
      watch_dir = argv[++i];
    else if (name == NULL && argv[i][0] != '-')
      name = argv[i];
    else
      return usage(stderr);
  }
  if (name == NULL || max < 1 || procs < 1 || procs > 4096)
    return usage(stderr);
  for (size_t i = 0; i < sizeof(buffer_pools) / sizeof(buffer_pools[0]); i++)
    if (!once && strcmp(buffer_pools[i], name) == 0)
      return run_buffers((enum buffers)i, max, MIB, procs);
  const struct pool *p = NULL;
  for (size_t i = 0; i < sizeof(pools) / sizeof(pools[0]); i++)
    if (strcmp(pools[i].name, name) == 0)
      p = &pools[i];
  if (p == NULL || (once && p->once == NULL)) {
    fprintf(stderr, "kernel-pool: no such pool%s: %s\n", once ? " for --once" : "", name);
    return 2;
  }
  if (once) {
    errno = 0;
    puts(p->once() < 0 ? errname(errno) : "OK");
    return 0;
  }
  if (procs > 1) {
    counted_take = p->take;
    return run_buffers(COUNTED, max, 1, procs);
  }
  long long n = 0;
  int why = 0;
  while (n < max) {
    errno = 0;
    if (p->take() < 0) {
      why = errno;
      break;
    }
    n++;
    if (n % 1024 == 0) {
      printf("at %lld\n", n);
      fflush(stdout);
    }
  }
  printf("took %lld %s\n", n, why ? errname(why) : "max");
  fflush(stdout);
  hold();
  return 0;
}
