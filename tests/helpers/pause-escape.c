/* SPDX-License-Identifier: Apache-2.0 */
/* Tries, from inside a sandbox, to undo a pause (live-pause.sh): a timer
 * armed before the pause has the kernel send SIGCONT to the whole process
 * every 10 ms (what would end a freeze made of SIGSTOP), and a fork loop
 * keeps making new processes.  Each loop writes its count to a file, so
 * the host sees whether anything ran.
 *   pause-escape timer FILE   the SIGCONT timer, counting the signals taken
 *   pause-escape forks FILE   fork, reap, count, forever
 *   pause-escape threads FILE four threads counting
 *   pause-escape vforks FILE  vfork and exec /bin/true, count, forever
 *   pause-escape orphans FILE each process forks the next and exits: the
 *                             one alive is always new, an orphan given to
 *                             init, counting
 *   pause-escape traced FILE  a child traced by its parent (a debugger
 *                             inside), counting; exit 4 when ptrace is
 *                             refused here */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t conts;

static void on_cont(int sig) {
  (void)sig;
  conts++;
}

static void put(int fd, unsigned long n) {
  char buf[32];
  int len = snprintf(buf, sizeof(buf), "%lu\n", n);
  if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)len, 0) != len)
    _exit(3);
}

static unsigned long shared;

static void *spin(void *arg) {
  (void)arg;
  for (;;) {
    __atomic_add_fetch(&shared, 1, __ATOMIC_RELAXED);
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

static int threads(int fd) {
  for (int i = 0; i < 4; i++) {
    pthread_t t;
    if (pthread_create(&t, NULL, spin, NULL) != 0)
      return 1;
  }
  for (;;) {
    struct timespec ts = {0, 5000000};
    nanosleep(&ts, NULL);
    put(fd, __atomic_load_n(&shared, __ATOMIC_RELAXED));
  }
}

static int vforks(int fd) {
  for (volatile unsigned long n = 1;; n++) {
    pid_t pid = vfork();
    if (pid == 0) {
      execl("/bin/true", "true", (char *)NULL);
      _exit(127);
    }
    if (pid > 0)
      waitpid(pid, NULL, 0);
    put(fd, n);
  }
}

static int traced(int fd) {
  pid_t pid = fork();
  if (pid == 0) {
    if (ptrace(PTRACE_TRACEME, 0, 0, 0) < 0)
      _exit(4);
    raise(SIGSTOP);
    for (unsigned long n = 1;; n++) {
      struct timespec ts = {0, 5000000};
      nanosleep(&ts, NULL);
      put(fd, n);
    }
  }
  for (;;) {
    int st;
    if (waitpid(pid, &st, 0) < 0)
      return 1;
    if (WIFEXITED(st))
      return WEXITSTATUS(st);
    if (WIFSIGNALED(st))
      return 1;
    /* The debugger's part: every stop, the signal given back. */
    int sig = WSTOPSIG(st) == SIGSTOP || WSTOPSIG(st) == SIGTRAP ? 0 : WSTOPSIG(st);
    ptrace(PTRACE_CONT, pid, 0, sig);
  }
}

/* What a walk down the tree from init must still catch: its parent gone
 * by the time the walk reads that parent's children. */
static int orphans(int fd) {
  for (unsigned long n = 0;;) {
    pid_t pid = fork();
    if (pid > 0)
      _exit(0);
    if (pid == 0)
      put(fd, ++n);
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: pause-escape timer|forks|threads|vforks|orphans|traced FILE\n");
    return 2;
  }
  int fd = open(argv[2], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    perror(argv[2]);
    return 1;
  }
  unsigned long n = 0;
  if (strcmp(argv[1], "timer") == 0) {
    signal(SIGCONT, on_cont);
    struct sigevent ev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGCONT};
    timer_t t;
    struct itimerspec its = {.it_interval = {0, 10000000}, .it_value = {0, 10000000}};
    if (timer_create(CLOCK_MONOTONIC, &ev, &t) < 0 || timer_settime(t, 0, &its, NULL) < 0) {
      perror("timer");
      return 1;
    }
    for (;;) {
      struct timespec ts = {0, 5000000};
      nanosleep(&ts, NULL);
      put(fd, (unsigned long)conts); /* the timer's SIGCONTs, taken while it ran */
    }
  }
  if (strcmp(argv[1], "forks") == 0) {
    for (;;) {
      pid_t pid = fork();
      if (pid == 0)
        _exit(0);
      if (pid > 0)
        waitpid(pid, NULL, 0);
      put(fd, ++n);
    }
  }
  if (strcmp(argv[1], "threads") == 0)
    return threads(fd);
  if (strcmp(argv[1], "vforks") == 0)
    return vforks(fd);
  if (strcmp(argv[1], "orphans") == 0)
    return orphans(fd);
  if (strcmp(argv[1], "traced") == 0)
    return traced(fd);
  fprintf(stderr, "pause-escape: unknown mode %s\n", argv[1]);
  return 2;
}
