/* SPDX-License-Identifier: Apache-2.0 */
/* Tries, from inside a sandbox, to undo a pause (live-pause.sh): a timer
 * armed before the pause has the kernel send SIGCONT to the whole process
 * every 10 ms (what would end a freeze made of SIGSTOP), and a fork loop
 * keeps making new processes.  Each loop writes its count to a file, so
 * the host sees whether anything ran.
 *   pause-escape timer FILE   the SIGCONT timer, counting the signals taken
 *   pause-escape forks FILE   fork, reap, count, forever */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: pause-escape timer|forks FILE\n");
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
  fprintf(stderr, "pause-escape: unknown mode %s\n", argv[1]);
  return 2;
}
