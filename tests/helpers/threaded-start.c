/* Sandboxes started from a program with other threads, as the Python
 * package and other embedders are: one of those threads may hold a lock of
 * malloc at the very moment the sandbox's first process is cloned, and a
 * child that then calls malloc waits for that lock forever (a raw clone
 * runs none of the fork handlers that make malloc usable in a child).
 *
 * To make that moment likely rather than rare, this program brings its own
 * malloc: glibc's under one mutex, which a "holder" thread keeps taken most
 * of the time (as a thread in the middle of a long malloc would), and which
 * pthread_atfork takes around fork() and sets free in the child, as glibc
 * does for its own locks (and jemalloc or tcmalloc for theirs).  Further
 * threads malloc and free all along.  The main thread creates and destroys
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
#include <unistd.h>

#include "hutch.h"

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static pthread_mutex_t heap_lock = PTHREAD_MUTEX_INITIALIZER;

void *malloc(size_t n) {
  pthread_mutex_lock(&heap_lock);
  void *p = __libc_malloc(n);
  pthread_mutex_unlock(&heap_lock);
  return p;
}

void free(void *p) {
  if (p == NULL)
    return;
  pthread_mutex_lock(&heap_lock);
  __libc_free(p);
  pthread_mutex_unlock(&heap_lock);
}

void *calloc(size_t n, size_t m) {
  pthread_mutex_lock(&heap_lock);
  void *p = __libc_calloc(n, m);
  pthread_mutex_unlock(&heap_lock);
  return p;
}

void *realloc(void *o, size_t n) {
  pthread_mutex_lock(&heap_lock);
  void *p = __libc_realloc(o, n);
  pthread_mutex_unlock(&heap_lock);
  return p;
}

void *memalign(size_t a, size_t n) {
  pthread_mutex_lock(&heap_lock);
  void *p = __libc_memalign(a, n);
  pthread_mutex_unlock(&heap_lock);
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

static void lock_heap(void) {
  pthread_mutex_lock(&heap_lock);
}
static void unlock_heap(void) {
  pthread_mutex_unlock(&heap_lock);
}
static void reset_heap(void) {
  pthread_mutex_init(&heap_lock, NULL);
}

static atomic_bool stop;

static void pause_us(long us) {
  struct timespec ts = {0, us * 1000};
  nanosleep(&ts, NULL);
}

/* Holds the heap's lock 2 ms of every 2.1 ms. */
static void *holder(void *arg) {
  (void)arg;
  while (!atomic_load(&stop)) {
    pthread_mutex_lock(&heap_lock);
    pause_us(2000);
    pthread_mutex_unlock(&heap_lock);
    pause_us(100);
  }
  return NULL;
}

static void *hammer(void *arg) {
  (void)arg;
  while (!atomic_load(&stop)) {
    void *p = malloc(64 + (size_t)(rand() % 4096));
    free(p);
  }
  return NULL;
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
  int rounds = argc > 2 ? atoi(argv[2]) : 20;
  setvbuf(stdout, NULL, _IONBF, 0);
  printf("1..2\n");
  pthread_atfork(lock_heap, unlock_heap, reset_heap);
  hutch_error_t err = NULL;
  struct hutch_store *store = NULL;
  struct hutch_policy *policy = NULL;
  struct hutch_image image = {0};
  if (hutch_store_open(NULL, &store, &err) < 0 || hutch_policy_load(NULL, &policy, &err) < 0 ||
      hutch_image_lookup(store, argv[1], &image, &err) < 0) {
    printf("Bail out! %s\n", err->msg);
    return 1;
  }
  pthread_t t[4];
  pthread_create(&t[0], NULL, holder, NULL);
  for (int i = 1; i < 4; i++)
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
  atomic_store(&stop, true);
  for (int i = 0; i < 4; i++)
    pthread_join(t[i], NULL);
  hutch_image_clear(&image);
  hutch_policy_free(policy);
  hutch_store_close(store);
  return ok == rounds ? 0 : 1;
}
