/* SPDX-License-Identifier: Apache-2.0 */
/* run_beside_caller(): a process forked to work beside its parent is moved
 * off the parent's CPU where the parent may run on another, and left alone
 * where it may not. */
#include "config.h"

#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
#include "util.h"

static pid_t sleeper(void) {
  pid_t pid = fork();
  if (pid == 0) {
    pause();
    _exit(0);
  }
  return pid;
}

static void reap(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
}

int main(void) {
  cpu_set_t mine, theirs;
  tap_ok(sched_getaffinity(0, sizeof(mine), &mine) == 0, "the test's own CPUs");
  int n = CPU_COUNT(&mine);

  if (n > 1) {
    /* "The caller's CPU" is the one it ran on around the call: tried again
     * if the test itself moved meanwhile. */
    int cpu = -1, tries = 0;
    pid_t pid = -1;
    do {
      if (pid > 0)
        reap(pid);
      pid = sleeper();
      cpu = sched_getcpu();
      run_beside_caller(pid);
    } while (sched_getcpu() != cpu && ++tries < 100);
    tap_ok(sched_getaffinity(pid, sizeof(theirs), &theirs) == 0, "the helper's CPUs");
    tap_ok(!CPU_ISSET(cpu, &theirs), "not the caller's CPU (%d)", cpu);
    tap_is_int(CPU_COUNT(&theirs), n - 1, "every other CPU the caller may use");
    reap(pid);
  } else {
    for (int i = 0; i < 3; i++)
      tap_ok(1, "# SKIP one CPU only");
  }

  /* Confined to one CPU: nothing to move to, nothing changed. */
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu(), &one);
  tap_ok(sched_setaffinity(0, sizeof(one), &one) == 0, "the test on one CPU");
  pid_t pid = sleeper();
  run_beside_caller(pid);
  tap_ok(sched_getaffinity(pid, sizeof(theirs), &theirs) == 0 && CPU_EQUAL(&theirs, &one),
         "one CPU allowed: the helper keeps it");
  reap(pid);
  tap_ok(sched_setaffinity(0, sizeof(mine), &mine) == 0, "the test's CPUs back");
  return tap_done();
}
