/* SPDX-License-Identifier: Apache-2.0 */
/* The process handle of hutch.h (hutch_proc_*), driven from a program that
 * links the runtime as an embedder would: spawn, read a line of stdout
 * while the process runs, stdin, signals seen by a trap, kill, a wait that
 * times out, a process that closes stdout early and runs on, exit codes and
 * signals, and 1,000 spawns with no fd leaked and no zombie left.  TAP.
 *
 *   proc-handle IMAGE    (HUTCH_STORE, HUTCH_POLICY, HUTCH_STATE_DIR as for hutch) */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hutch.h"
#include "tap.h"

static struct hutch_sandbox *sb;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void report(hutch_error_t *err) {
  if (*err) {
    printf("# %s: %s\n", (*err)->msg, strerror((*err)->errnum));
    hutch_error_free(err);
  }
}

/* Spawns argv with the given stream kinds (stdin, stdout, stderr). */
static struct hutch_proc *spawn(const char *const *argv, enum hutch_stdio_kind in, enum hutch_stdio_kind out,
                                enum hutch_stdio_kind errk) {
  struct hutch_spawn spec = {.argv = argv, .stdio = {{in, -1}, {out, -1}, {errk, -1}}};
  struct hutch_proc *p = NULL;
  hutch_error_t err = NULL;
  if (hutch_proc_spawn(sb, &spec, &p, &err) < 0)
    report(&err);
  return p;
}

static struct hutch_proc *sh(const char *script, enum hutch_stdio_kind in) {
  const char *argv[] = {"sh", "-c", script, NULL};
  return spawn(argv, in, HUTCH_STDIO_PIPE, HUTCH_STDIO_NULL);
}

/* Reads fd until `want` shows in what was read, EOF or the deadline;
 * returns what was read (static). */
static const char *read_until(int fd, const char *want, double seconds, bool *eof) {
  static char buf[4096];
  size_t len = 0;
  buf[0] = '\0';
  *eof = false;
  double end = now() + seconds;
  while ((want == NULL || strstr(buf, want) == NULL) && now() < end) {
    struct pollfd pfd = {fd, POLLIN, 0};
    if (poll(&pfd, 1, (int)((end - now()) * 1000) + 1) <= 0)
      continue;
    ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
    if (n == 0) {
      *eof = true;
      break;
    }
    if (n > 0) {
      len += (size_t)n;
      buf[len] = '\0';
    }
  }
  return buf;
}

static int wait_for(struct hutch_proc *p, double timeout, struct hutch_exit *ex) {
  hutch_error_t err = NULL;
  int r = hutch_proc_wait(p, timeout, ex, &err);
  report(&err);
  return r;
}

static void test_stdout_while_running(void) {
  struct hutch_proc *p = sh("echo first; read line; echo \"got $line\"; exit 3", HUTCH_STDIO_PIPE);
  tap_ok(p != NULL, "spawn a shell with stdin and stdout pipes");
  if (p == NULL)
    return;
  bool eof;
  tap_ok(strstr(read_until(hutch_proc_fd(p, 1), "first\n", 10, &eof), "first\n") != NULL,
         "a line of stdout is read while the process runs");
  struct hutch_exit ex;
  tap_is_int(wait_for(p, 0, &ex), 1, "and it still runs then (wait with timeout 0)");
  tap_ok(ex.timed_out, "the wait that found it running says timed_out");
  tap_ok(hutch_proc_fd(p, 2) < 0, "no fd for a /dev/null stream");
  tap_ok(hutch_proc_pid(p) > 0 && kill(hutch_proc_pid(p), 0) == 0, "its host pid is alive");
  tap_ok(hutch_proc_sandbox_pid(p) > 1, "its pid inside the sandbox is known");
  tap_ok(hutch_proc_pidfd(p) >= 0, "and a pidfd");
  tap_ok(write(hutch_proc_fd(p, 0), "hello\n", 6) == 6, "write to its stdin");
  hutch_proc_close_fd(p, 0);
  tap_ok(strstr(read_until(hutch_proc_fd(p, 1), "got hello\n", 10, &eof), "got hello\n") != NULL,
         "it read the line from stdin");
  tap_is_int(wait_for(p, 10, &ex), 0, "wait returns once it ends");
  tap_is_int(ex.status, 3, "its exit status");
  tap_is_int(ex.signal, 0, "no signal");
  tap_ok(!ex.timed_out, "not timed out");
  struct pollfd pfd = {hutch_proc_pidfd(p), POLLIN, 0};
  tap_is_int(poll(&pfd, 1, 5000), 1, "its pidfd is readable once it has ended");
  hutch_proc_free(p);
}

static void test_signal(void) {
  struct hutch_proc *p = sh("trap 'echo TERM; exit 7' TERM; echo armed; while :; do sleep 0.1; done", HUTCH_STDIO_NULL);
  if (p == NULL) {
    tap_ok(false, "spawn a shell with a trap");
    return;
  }
  bool eof;
  read_until(hutch_proc_fd(p, 1), "armed\n", 10, &eof);
  hutch_error_t err = NULL;
  tap_is_int(hutch_proc_signal(p, SIGTERM, &err), 0, "send SIGTERM");
  report(&err);
  tap_ok(strstr(read_until(hutch_proc_fd(p, 1), "TERM\n", 10, &eof), "TERM\n") != NULL, "the trap saw SIGTERM");
  struct hutch_exit ex;
  tap_is_int(wait_for(p, 10, &ex), 0, "it ends");
  tap_is_int(ex.status, 7, "with the trap's exit status");
  tap_is_int(hutch_proc_signal(p, SIGTERM, &err), 0, "a signal after the end is no error");
  report(&err);
  hutch_proc_free(p);
}

static void test_kill_and_timeout(void) {
  const char *argv[] = {"sleep", "30", NULL};
  struct hutch_proc *p = spawn(argv, HUTCH_STDIO_NULL, HUTCH_STDIO_NULL, HUTCH_STDIO_NULL);
  if (p == NULL) {
    tap_ok(false, "spawn sleep 30");
    return;
  }
  struct hutch_exit ex;
  double t0 = now();
  tap_is_int(wait_for(p, 0.3, &ex), 1, "a wait of 0.3 s on sleep 30 times out");
  double waited = now() - t0;
  tap_ok(waited >= 0.25 && waited < 5, "after about 0.3 s (%.3f s)", waited);
  tap_ok(ex.timed_out && ex.signal == 0 && ex.status == 0, "timed_out set, nothing else");
  hutch_error_t err = NULL;
  tap_is_int(hutch_proc_kill(p, &err), 0, "kill it");
  report(&err);
  tap_is_int(wait_for(p, 10, &ex), 0, "then it ends");
  tap_is_int(ex.signal, SIGKILL, "killed by SIGKILL");
  tap_ok(!ex.timed_out, "the end itself is no timeout");
  tap_is_int(hutch_exit_code(&ex), 137, "exit code 137");
  tap_is_int(wait_for(p, 0, &ex), 0, "asking again repeats the end");
  tap_is_int(ex.signal, SIGKILL, "the same end");
  hutch_proc_free(p);

  /* Freeing a handle whose process runs kills it. */
  p = spawn(argv, HUTCH_STDIO_NULL, HUTCH_STDIO_NULL, HUTCH_STDIO_NULL);
  int pidfd = p ? dup(hutch_proc_pidfd(p)) : -1;
  hutch_proc_free(p);
  struct pollfd pfd = {pidfd, POLLIN, 0};
  tap_ok(pidfd >= 0 && poll(&pfd, 1, 5000) == 1, "freeing the handle of a running process ends it");
  if (pidfd >= 0)
    close(pidfd);
}

static void test_closed_stdout(void) {
  struct hutch_proc *p = sh("exec >&-; read x; exit 4", HUTCH_STDIO_PIPE);
  if (p == NULL) {
    tap_ok(false, "spawn a shell that closes stdout");
    return;
  }
  bool eof;
  read_until(hutch_proc_fd(p, 1), NULL, 10, &eof);
  tap_ok(eof, "EOF on stdout when the process closes it");
  struct hutch_exit ex;
  tap_is_int(wait_for(p, 0.3, &ex), 1, "and it keeps running");
  tap_ok(write(hutch_proc_fd(p, 0), "x\n", 2) == 2, "its stdin still takes a line");
  tap_is_int(wait_for(p, 10, &ex), 0, "then it ends");
  tap_is_int(ex.status, 4, "with its own status");
  hutch_proc_free(p);
}

static void test_ends(void) {
  struct {
    const char *script;
    int status, signal;
  } cases[] = {{"exit 42", 42, 0}, {"kill -USR1 $$", 0, SIGUSR1}, {"kill -9 $$", 0, SIGKILL}, {"true", 0, 0}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct hutch_proc *p = sh(cases[i].script, HUTCH_STDIO_NULL);
    struct hutch_exit ex = {0};
    int r = p ? wait_for(p, 10, &ex) : -1;
    tap_ok(r == 0 && ex.status == cases[i].status && ex.signal == cases[i].signal, "sh -c '%s': status %d, signal %d",
           cases[i].script, ex.status, ex.signal);
    hutch_proc_free(p);
  }
  const char *argv[] = {"no-such-program", NULL};
  struct hutch_proc *p = spawn(argv, HUTCH_STDIO_NULL, HUTCH_STDIO_NULL, HUTCH_STDIO_NULL);
  struct hutch_exit ex = {0};
  tap_ok(p && wait_for(p, 10, &ex) == 0 && ex.exec_errno == ENOENT && hutch_exit_code(&ex) == 127,
         "a missing program: ENOENT, exit code 127");
  hutch_proc_free(p);

  /* A caller's own fd as stdout. */
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) < 0)
    abort();
  const char *echo[] = {"echo", "via-fd", NULL};
  struct hutch_spawn spec = {.argv = echo, .stdio = {{HUTCH_STDIO_NULL, -1}, {HUTCH_STDIO_FD, fds[1]}, {0, -1}}};
  hutch_error_t err = NULL;
  p = NULL;
  tap_is_int(hutch_proc_spawn(sb, &spec, &p, &err), 0, "spawn with the caller's fd as stdout");
  report(&err);
  close(fds[1]);
  tap_ok(hutch_proc_fd(p, 1) < 0, "the handle holds no end of it");
  bool eof;
  tap_is_str(read_until(fds[0], "\n", 10, &eof), "via-fd\n", "the output came through the caller's fd");
  tap_ok(p && wait_for(p, 10, &ex) == 0 && ex.status == 0, "and it ended with 0");
  hutch_proc_free(p);
  close(fds[0]);
}

static int count_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

/* The host pid of the process's parent: the sandbox's init. */
static pid_t parent_of(pid_t pid) {
  char path[64], buf[512];
  snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "re");
  if (f == NULL)
    return -1;
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *rp = strrchr(buf, ')');
  int ppid = -1;
  if (rp == NULL || sscanf(rp + 2, "%*c %d", &ppid) != 1)
    return -1;
  return ppid;
}

/* Children of init the host can see, zombies too. */
static int children_of(pid_t pid, char *list, size_t size) {
  char path[96];
  snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
  FILE *f = fopen(path, "re");
  if (f == NULL)
    return -1;
  size_t n = fread(list, 1, size - 1, f);
  fclose(f);
  list[n] = '\0';
  return (int)n;
}

static void test_many(void) {
  const char *argv[] = {"sh", "-c", "sleep 5", NULL};
  struct hutch_proc *probe = spawn(argv, HUTCH_STDIO_NULL, HUTCH_STDIO_NULL, HUTCH_STDIO_NULL);
  pid_t init = probe ? parent_of(hutch_proc_pid(probe)) : -1;
  tap_ok(init > 1, "the sandbox's init is the process's parent (host pid %d)", (int)init);
  hutch_proc_free(probe);
  const char *true_argv[] = {"true", NULL};
  /* The sandbox's handle keeps one idle connection to its init for the
   * next command (sandbox_proc.c): counted from after the first. */
  struct hutch_exit warm;
  struct hutch_proc *first = spawn(true_argv, HUTCH_STDIO_NULL, HUTCH_STDIO_NULL, HUTCH_STDIO_NULL);
  if (first != NULL)
    wait_for(first, 10, &warm);
  hutch_proc_free(first);
  int before = count_fds();
  int failed = 0, nonzero = 0;
  double t0 = now();
  for (int i = 0; i < 1000; i++) {
    struct hutch_proc *p =
        spawn(true_argv, HUTCH_STDIO_PIPE, i % 2 ? HUTCH_STDIO_PIPE : HUTCH_STDIO_NULL, HUTCH_STDIO_PIPE);
    struct hutch_exit ex;
    if (p == NULL || wait_for(p, 10, &ex) != 0)
      failed++;
    else if (hutch_exit_code(&ex) != 0)
      nonzero++;
    hutch_proc_free(p);
  }
  double took = now() - t0;
  tap_is_int(failed, 0, "1,000 spawns and waits (%.2f s)", took);
  tap_is_int(nonzero, 0, "each ended with 0");
  tap_is_int(count_fds(), before, "no fd leaked (%d open before and after)", before);
  char kids[4096] = "";
  int n = -1;
  for (int i = 0; i < 50 && n != 0; i++) {
    n = init > 1 ? children_of(init, kids, sizeof(kids)) : -1;
    if (n != 0)
      usleep(100000);
  }
  tap_is_int(n, 0, "the sandbox's init has no child left, zombie or not (%s)", kids);
}

/* The connection of an ended process is kept for the next command
 * (sandbox_proc.c): a signal sent after the end but before the wait must
 * leave it usable, and a process may outlive the sandbox handle that
 * holds the idle connection. */
static void test_reused_connection(void) {
  const char *true_argv[] = {"true", NULL};
  struct hutch_proc *p = spawn(true_argv, HUTCH_STDIO_NULL, HUTCH_STDIO_NULL, HUTCH_STDIO_NULL);
  usleep(300000); /* it has ended; its end is not read yet */
  hutch_error_t err = NULL;
  tap_ok(p != NULL && hutch_proc_signal(p, SIGTERM, &err) == 0,
         "a signal to a process that has just ended is no error");
  report(&err);
  struct hutch_exit ex;
  tap_ok(p != NULL && wait_for(p, 10, &ex) == 0 && hutch_exit_code(&ex) == 0, "and its end is still its own: 0");
  hutch_proc_free(p);
  int ok = 0;
  for (int i = 0; i < 3; i++) {
    struct hutch_proc *q = sh("echo again", HUTCH_STDIO_NULL);
    bool eof;
    if (q != NULL && strstr(read_until(hutch_proc_fd(q, 1), "again", 10, &eof), "again") != NULL &&
        wait_for(q, 10, &ex) == 0 && hutch_exit_code(&ex) == 0)
      ok++;
    hutch_proc_free(q);
  }
  tap_is_int(ok, 3, "the next commands run on the kept connection");

  struct hutch_sandbox *other = NULL;
  tap_ok(hutch_sandbox_open(NULL, hutch_sandbox_id(sb), &other, &err) == 0, "a second handle of the sandbox");
  report(&err);
  if (other == NULL)
    return;
  struct hutch_spawn spec = {.argv = true_argv};
  struct hutch_proc *a = NULL, *b = NULL;
  hutch_proc_spawn(other, &spec, &a, &err);
  report(&err);
  tap_ok(a != NULL && wait_for(a, 10, &ex) == 0, "a process of it ends");
  hutch_proc_free(a); /* its connection is kept by `other` */
  hutch_proc_spawn(other, &spec, &b, &err);
  report(&err);
  hutch_sandbox_close(other); /* with the kept connection; b outlives it */
  tap_ok(b != NULL && wait_for(b, 10, &ex) == 0 && hutch_exit_code(&ex) == 0,
         "a process outlives the handle that started it, on a kept connection");
  hutch_proc_free(b);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: proc-handle IMAGE\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  hutch_error_t err = NULL;
  struct hutch_store *store = NULL;
  struct hutch_policy *policy = NULL;
  struct hutch_image image = {0};
  if (hutch_store_open(NULL, &store, &err) < 0 || hutch_policy_load(NULL, &policy, &err) < 0 ||
      hutch_image_lookup(store, argv[1], &image, &err) < 0) {
    hutch_error_print(stderr, "proc-handle", err);
    return 1;
  }
  struct hutch_sandbox_config cfg = {
      .rootfs = image.rootfs, .image = argv[1], .policy = policy, .rootfs_subordinate_ids = image.ids_preserved};
  if (hutch_sandbox_create(&cfg, &sb, &err) < 0) {
    hutch_error_print(stderr, "proc-handle", err);
    return 1;
  }
  test_stdout_while_running();
  test_signal();
  test_kill_and_timeout();
  test_closed_stdout();
  test_ends();
  test_many();
  test_reused_connection();
  tap_ok(hutch_sandbox_destroy(sb, &err) == 0, "the sandbox is removed");
  report(&err);
  hutch_image_clear(&image);
  hutch_policy_free(policy);
  hutch_store_close(store);
  return tap_done();
}
