/* SPDX-License-Identifier: Apache-2.0 */
/* One request policy shared by several LLM clients in several processes (the
 * workers of hutch benchmark): a cap on requests in flight and a backoff on
 * HTTP 429 that holds every client back, not only the one that was told.
 *
 * The state is a directory (hutch benchmark makes it in its run directory and
 * names it in $HUTCH_LLM_GATE): files slot.0 ... slot.N-1, one per request
 * allowed in flight, held with flock while a request is out, and a file
 * "backoff" with UNTIL: no request leaves before UNTIL (CLOCK_REALTIME
 * seconds), the longest wait a 429 gave any client.  Kernel locks
 * end with their holder, so a worker killed mid-request frees its slot; the
 * backoff is a time, stale by itself: nothing a dead worker leaves blocks the
 * others.  Each client opens its own descriptions of the files, so clients in
 * one process's threads exclude each other too. */
#include "config.h"

#include "llm_gate.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

#define GATE_SLOTS_MAX 1024
/* The longest shared backoff, as a client's own (llm_client.c). */
#define GATE_BACKOFF_MAX 60.0

struct llm_gate {
  int *slots;
  int n_slots;
  int held; /* index of the slot held, -1 */
  int backoff;
};

static double now_real(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct llm_gate *llm_gate_open(const char *dir) {
  if (dir == NULL || *dir == '\0')
    return NULL;
  _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return NULL;
  struct llm_gate *g = xcalloc(1, sizeof(*g));
  g->held = -1;
  g->backoff = openat(dfd, "backoff", O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  g->slots = xcalloc(GATE_SLOTS_MAX, sizeof(int));
  for (; g->n_slots < GATE_SLOTS_MAX; g->n_slots++) {
    char name[32];
    snprintf(name, sizeof(name), "slot.%d", g->n_slots);
    int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
      break;
    g->slots[g->n_slots] = fd;
  }
  return g;
}

void llm_gate_close(struct llm_gate *g) {
  if (g == NULL)
    return;
  for (int i = 0; i < g->n_slots; i++)
    close(g->slots[i]);
  if (g->backoff >= 0)
    close(g->backoff);
  free(g->slots);
  free(g);
}

/* UNTIL, under a lock the caller holds; 0 when unreadable. */
static double read_backoff(int fd) {
  char buf[64] = "";
  ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
  buf[n > 0 ? n : 0] = '\0';
  double until = 0;
  return sscanf(buf, "%lf", &until) == 1 && until > 0 ? until : 0;
}

static void write_backoff(int fd, double until) {
  char buf[64];
  int n = snprintf(buf, sizeof(buf), "%.3f\n", until);
  if (pwrite(fd, buf, (size_t)n, 0) == n)
    (void)!ftruncate(fd, n);
}

static bool nap(double s, volatile sig_atomic_t *stop) {
  while (s > 0) {
    if (stop && *stop)
      return false;
    double step = s < 0.05 ? s : 0.05;
    struct timespec ts = {(time_t)step, (long)((step - (double)(time_t)step) * 1e9)};
    nanosleep(&ts, NULL);
    s -= step;
  }
  return !(stop && *stop);
}

bool llm_gate_enter(struct llm_gate *g, volatile sig_atomic_t *stop) {
  if (g == NULL)
    return true;
  for (;;) {
    /* The shared backoff first: a 429 anyone got holds every request. */
    if (g->backoff >= 0) {
      flock(g->backoff, LOCK_SH);
      double until = read_backoff(g->backoff);
      flock(g->backoff, LOCK_UN);
      double left = until - now_real();
      if (left > GATE_BACKOFF_MAX)
        left = GATE_BACKOFF_MAX;
      if (left > 0) {
        if (!nap(left, stop))
          return false;
        continue;
      }
    }
    if (g->n_slots == 0)
      return true;
    /* A free slot, starting from a different one in each process. */
    int start = (int)(getpid() % g->n_slots);
    for (int k = 0; k < g->n_slots; k++) {
      int i = (start + k) % g->n_slots;
      if (flock(g->slots[i], LOCK_EX | LOCK_NB) == 0) {
        g->held = i;
        return true;
      }
    }
    if (!nap(0.005, stop))
      return false;
  }
}

void llm_gate_leave(struct llm_gate *g) {
  if (g == NULL || g->held < 0)
    return;
  flock(g->slots[g->held], LOCK_UN);
  g->held = -1;
}

double llm_gate_throttled(struct llm_gate *g, double wait) {
  if (g == NULL || g->backoff < 0)
    return wait;
  if (wait > GATE_BACKOFF_MAX)
    wait = GATE_BACKOFF_MAX;
  flock(g->backoff, LOCK_EX);
  double until = read_backoff(g->backoff);
  double now = now_real();
  if (now + wait > until)
    until = now + wait;
  write_backoff(g->backoff, until);
  flock(g->backoff, LOCK_UN);
  return until - now;
}

int llm_gate_create(const char *dir, long slots, hutch_error_t *err) {
  if (mkdir(dir, 0700) < 0 && errno != EEXIST)
    return hutch_error_sys(err, "mkdir %s", dir);
  for (long i = 0; i < slots && i < GATE_SLOTS_MAX; i++) {
    _cleanup_free_ char *p = xasprintf("%s/slot.%ld", dir, i);
    int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
      return hutch_error_sys(err, "create %s", p);
    close(fd);
  }
  /* Slots beyond the cap, from an earlier run with a larger one. */
  for (long i = slots;; i++) {
    _cleanup_free_ char *p = xasprintf("%s/slot.%ld", dir, i);
    if (unlink(p) < 0)
      break;
  }
  _cleanup_free_ char *b = xasprintf("%s/backoff", dir);
  int fd = open(b, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return hutch_error_sys(err, "create %s", b);
  close(fd);
  return 0;
}
