/* SPDX-License-Identifier: Apache-2.0 */
/* Sandboxes started from a program with other threads, as the Python
 * package and other embedders are: one of those threads may hold a lock of
 * malloc at the very moment the sandbox's first process is cloned, and a
 * child that then calls malloc waits for that lock forever (a raw clone
 * runs none of the fork handlers that make malloc usable in a child).
 *
 * To make that moment certain rather than rare, this program brings its own
 * malloc: glibc's under one lock that counts as held by another thread
 * whenever none is in malloc (heap_enter below).  Two threads malloc and
 * free all along.  The main thread creates and destroys
 * sandboxes, each running a command, in a loop; an alarm ends a hang.  TAP.
 *
 *   threaded-start IMAGE [ROUNDS]   (HUTCH_STORE, HUTCH_POLICY, HUTCH_STATE_DIR as for hutch) */
#include "config.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <sched.h>
#include <unistd.h>

#include "hutch.h"

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

/* The heap's lock: FREE, BUSY (a thread of this process is in malloc), or
 * PARKED: once the process has other threads, whenever none of its
 * threads is in malloc, the lock counts as held by one of the others, in
 * the middle of a malloc of its own: the worst moment for a clone.  A
 * thread of the process that owns it (heap_pid) may take it from there; a
 * process cloned meanwhile, whose pid differs, may not: it has no such
 * thread, and waits forever, as it would for glibc's lock.  fork() runs
 * the handlers that make the child's heap usable (as glibc's fork does for
 * its own locks, and jemalloc or tcmalloc for theirs). */
enum { FREE, BUSY, PARKED };
static atomic_int heap_word;
static atomic_bool heap_threaded;
static pid_t heap_pid;

static void heap_enter(void) {
  if (heap_pid == 0)
    heap_pid = getpid();
  for (;;) {
    int w = FREE;
    if (atomic_compare_exchange_weak(&heap_word, &w, BUSY))
      return;
    w = PARKED;
    if (getpid() == heap_pid && atomic_compare_exchange_weak(&heap_word, &w, BUSY))
      return;
    sched_yield();
  }
}

static void heap_leave(void) {
  atomic_store(&heap_word, atomic_load(&heap_threaded) ? PARKED : FREE);
}

void *malloc(size_t n) {
  heap_enter();
  void *p = __libc_malloc(n);
  heap_leave();
  return p;
}

void free(void *p) {
  if (p == NULL)
    return;
  heap_enter();
  __libc_free(p);
  heap_leave();
}

void *calloc(size_t n, size_t m) {
  heap_enter();
  void *p = __libc_calloc(n, m);
  heap_leave();
  return p;
}

void *realloc(void *o, size_t n) {
  heap_enter();
  void *p = __libc_realloc(o, n);
  heap_leave();
  return p;
}

void *memalign(size_t a, size_t n) {
  heap_enter();
  void *p = __libc_memalign(a, n);
  heap_leave();
  return p;
}

void *aligned_alloc(size_t a, size_t n) {
  return memalign(a, n);
}

int posix_memalign(void **out, size_t a, size_t n) {
  void *p = memalign(a, n);
  if (p == NULL)
    return 12; /* ENOMEM */
  *out = p;
  return 0;
}

static void fork_prepare(void) {
  heap_enter();
}
static void fork_parent(void) {
  heap_leave();
}
/* The child of fork() has one thread: nobody else holds its heap. */
static void fork_child(void) {
  heap_pid = getpid();
  atomic_store(&heap_threaded, false);
  atomic_store(&heap_word, FREE);
}

static atomic_bool stop;

static void pause_us(long us) {
  struct timespec ts = {0, us * 1000};
  nanosleep(&ts, NULL);
}

static void *hammer(void *arg) {
  (void)arg;
  while (!atomic_load(&stop)) {
    void *p = malloc(64 + (size_t)(rand() % 4096));
    free(p);
  }
  return NULL;
}

struct tied {
  const struct hutch_image *image;
  struct hutch_policy *policy;
  char id[40];
};

/* Creates a sandbox tied to this thread (die_with_creator) and ends. */
static void *create_tied(void *arg) {
  struct tied *t = arg;
  struct hutch_sandbox_config cfg = {.rootfs = t->image->rootfs,
                                     .image = t->image->name,
                                     .policy = t->policy,
                                     .rootfs_subordinate_ids = t->image->ids_preserved,
                                     .die_with_creator = true};
  struct hutch_sandbox *sb = NULL;
  hutch_error_t err = NULL;
  if (hutch_sandbox_create(&cfg, &sb, &err) < 0) {
    printf("# tied: %s\n", err->msg);
    hutch_error_free(&err);
    return NULL;
  }
  snprintf(t->id, sizeof(t->id), "%s", hutch_sandbox_id(sb));
  hutch_sandbox_close(sb);
  return NULL;
}

/* Its init, this process's child (also when a helper cloned it), dies
 * with the thread that created it: reaped here within 10 s. */
static bool tied_dies(struct hutch_image *image, struct hutch_policy *policy) {
  struct tied t = {.image = image, .policy = policy};
  pthread_t th;
  pthread_create(&th, NULL, create_tied, &t);
  pthread_join(th, NULL);
  struct hutch_sandbox_info *infos = NULL;
  size_t n = 0;
  pid_t pid = -1;
  hutch_error_t err = NULL;
  if (t.id[0] && hutch_sandbox_list(NULL, &infos, &n, &err) == 0)
    for (size_t i = 0; i < n; i++)
      if (strcmp(infos[i].id, t.id) == 0)
        pid = infos[i].pid;
  hutch_sandbox_info_free(infos, n);
  hutch_error_free(&err);
  bool died = false;
  for (int i = 0; pid > 0 && i < 1000 && !died; i++) {
    died = waitpid(pid, NULL, WNOHANG) == pid;
    if (!died)
      pause_us(10000);
  }
  if (t.id[0])
    hutch_sandbox_remove(NULL, t.id, NULL);
  return died;
}

/* Each start warns alike (no cgroup here): the first few lines are enough. */
static void log_few(enum hutch_log_level level, const char *line, void *data) {
  (void)level;
  (void)data;
  static atomic_int n;
  if (atomic_fetch_add(&n, 1) < 3)
    printf("# %s\n", line);
}

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "not ok - a sandbox start hung (deadlock with another thread's malloc lock)\n";
  (void)!write(1, msg, sizeof(msg) - 1);
  _exit(1);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: threaded-start IMAGE [ROUNDS]\n");
    return 2;
  }
#ifdef __SANITIZE_ADDRESS__
  /* This program brings its own malloc, and AddressSanitizer's runtime
   * replaces malloc: the two cannot share a process. */
  fprintf(stderr, "threaded-start: its own malloc cannot run under AddressSanitizer\n");
  return 77;
#endif
  int rounds = argc > 2 ? atoi(argv[2]) : 20;
  setvbuf(stdout, NULL, _IONBF, 0);
  printf("1..3\n");
  pthread_atfork(fork_prepare, fork_parent, fork_child);
  hutch_set_log_handler(log_few, NULL);
  hutch_error_t err = NULL;
  struct hutch_store *store = NULL;
  struct hutch_policy *policy = NULL;
  struct hutch_image image = {0};
  if (hutch_store_open(NULL, &store, &err) < 0 || hutch_policy_load(NULL, &policy, &err) < 0 ||
      hutch_image_lookup(store, argv[1], &image, &err) < 0) {
    printf("Bail out! %s\n", err->msg);
    return 1;
  }
  pthread_t t[2];
  atomic_store(&heap_threaded, true);
  for (int i = 0; i < 2; i++)
    pthread_create(&t[i], NULL, hammer, NULL);
  signal(SIGALRM, on_alarm);
  int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  const char *const true_argv[] = {"/bin/true", NULL};
  int ok = 0;
  for (int i = 0; i < rounds; i++) {
    alarm(30); /* a start takes milliseconds: thirty seconds is a hang */
    struct hutch_sandbox_config cfg = {
        .rootfs = image.rootfs, .image = argv[1], .policy = policy, .rootfs_subordinate_ids = image.ids_preserved};
    struct hutch_sandbox *sb = NULL;
    struct hutch_process proc = {.argv = true_argv, .stdio = {devnull, devnull, devnull}};
    struct hutch_exit ex;
    if (hutch_sandbox_create(&cfg, &sb, &err) < 0 || hutch_sandbox_exec(sb, &proc, &ex, &err) < 0) {
      printf("# round %d: %s\n", i, err->msg);
      hutch_error_free(&err);
    } else if (hutch_exit_code(&ex) == 0) {
      ok++;
    }
    if (sb != NULL)
      hutch_sandbox_destroy(sb, NULL);
  }
  alarm(0);
  printf("ok 1 - %d sandboxes started and ran a command while other threads held malloc's lock\n", rounds);
  printf("%s 2 - every one of them ran it (%d of %d)\n", ok == rounds ? "ok" : "not ok", ok, rounds);
  alarm(30);
  bool died = tied_dies(&image, policy);
  printf("%s 3 - a sandbox tied to the thread that created it dies with that thread, as this process's child\n",
         died ? "ok" : "not ok");
  alarm(0);
  atomic_store(&stop, true);
  for (int i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  hutch_image_clear(&image);
  hutch_policy_free(policy);
  hutch_store_close(store);
  return ok == rounds && died ? 0 : 1;
}
