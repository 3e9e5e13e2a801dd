/* The reaper: a child forked before the first sandbox, told by a pipe
 * ("+ID\n", "-ID\n") which sandboxes the server holds.  The pipe's end is
 * the server's end, however it comes (a SIGKILL too): the sandboxes' inits
 * are already killed then (die_with_creator), and the reaper removes what
 * they left (state entry, mounts, proxy, cgroup) with hutch_sandbox_remove.
 * It runs nothing of a sandbox and holds no fd but the pipe and stderr. */
#include "config.h"

#include "mcp.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "util.h"

#define MAX_IDS 4096

static void reap(int fd, const char *state_dir) {
  static char ids[MAX_IDS][64];
  size_t n = 0;
  char line[64];
  size_t len = 0;
  for (;;) {
    char ch;
    ssize_t r = read(fd, &ch, 1);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    if (ch != '\n') {
      if (len < sizeof(line) - 1)
        line[len++] = ch;
      continue;
    }
    line[len] = '\0';
    len = 0;
    if (line[0] == '+' && n < MAX_IDS) {
      snprintf(ids[n++], sizeof(ids[0]), "%s", line + 1);
    } else if (line[0] == '-') {
      for (size_t i = 0; i < n; i++)
        if (strcmp(ids[i], line + 1) == 0) {
          memcpy(ids[i], ids[--n], sizeof(ids[0]));
          break;
        }
    }
  }
  for (size_t i = 0; i < n; i++) {
    hutch_error_t err = NULL;
    if (hutch_sandbox_remove(state_dir, ids[i], &err) < 0) {
      hutch_log_error(HUTCH_LOG_WARNING, err);
      hutch_error_free(&err);
    }
  }
}

int mcp_reaper_start(const char *state_dir, hutch_error_t *err) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0)
    return hutch_error_sys(err, "mcp: reaper pipe");
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    close(p[0]);
    close(p[1]);
    return hutch_error_sys(err, "mcp: fork the reaper");
  }
  if (pid == 0) {
    /* Signals meant for the server (a terminal's ^C, a client's SIGTERM to
     * the group) must not end the reaper before its work: the pipe's end
     * is its only signal. */
    static const int ignored[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE};
    for (size_t i = 0; i < ARRAY_SIZE(ignored); i++)
      signal(ignored[i], SIG_IGN);
    prctl(PR_SET_PDEATHSIG, 0);
    /* A session of its own: a SIGKILL to the server's process group (a
     * shell's kill -9 %1) must not take the reaper before it has reaped. */
    setsid();
    for (int fd = 0; fd < 1024; fd++)
      if (fd != p[0] && fd != STDERR_FILENO)
        close(fd);
    reap(p[0], state_dir);
    _exit(0);
  }
  close(p[0]);
  return p[1];
}

void mcp_reaper_announce(int fd, bool add, const char *id) {
  if (fd < 0)
    return;
  char line[64];
  int n = snprintf(line, sizeof(line), "%c%s\n", add ? '+' : '-', id);
  if (write_all(fd, line, (size_t)n) < 0)
    hutch_log_errno(HUTCH_LOG_WARNING, errno, "mcp: tell the reaper about sandbox %s", id);
}
