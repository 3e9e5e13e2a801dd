/* SPDX-License-Identifier: Apache-2.0 */
/* The reaper: a child forked before the first sandbox, told by a pipe
 * ("+ID\n", "-ID\n") which sandboxes the server holds, and ("*NAME\n",
 * "/NAME\n") which images of the store its sessions keep (snapshots).  The pipe's end is
 * the server's end, however it comes (a SIGKILL too): the sandboxes' inits
 * are already killed then (die_with_creator), and the reaper removes what
 * they left (state entry, mounts, proxy, cgroup) with hutch_sandbox_remove,
 * then the images with hutch_image_remove.
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

/* The ids it was told of and not told to forget: as many as the server
 * holds, with no fixed table (a sandbox past a table's end would outlive a
 * killed server).  Memory grows by 64 bytes a sandbox; when it cannot, the
 * reaper ends (xrealloc aborts) and the server, finding its pipe closed,
 * makes no more sandboxes (mcp_reaper_announce fails). */
struct ids {
  char (*id)[64];
  size_t n, cap;
};

static void ids_add(struct ids *t, const char *id) {
  if (t->n == t->cap) {
    t->cap = t->cap ? t->cap * 2 : 64;
    t->id = xrealloc(t->id, t->cap * sizeof(t->id[0]));
  }
  snprintf(t->id[t->n++], sizeof(t->id[0]), "%s", id);
}

static void ids_drop(struct ids *t, const char *id) {
  for (size_t i = 0; i < t->n; i++)
    if (strcmp(t->id[i], id) == 0) {
      memcpy(t->id[i], t->id[--t->n], sizeof(t->id[0]));
      return;
    }
}

static void reap(int fd, const char *state_dir, const char *store_dir) {
  struct ids ids = {0}, images = {0};
  char buf[4096], line[64];
  size_t len = 0;
  bool cut = false; /* a line longer than an id: not one of ours, skipped */
  for (;;) {
    ssize_t r = read(fd, buf, sizeof(buf));
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    for (ssize_t k = 0; k < r; k++) {
      char ch = buf[k];
      if (ch != '\n') {
        if (len < sizeof(line) - 1)
          line[len++] = ch;
        else
          cut = true;
        continue;
      }
      line[len] = '\0';
      if (!cut && line[0] == '+')
        ids_add(&ids, line + 1);
      else if (!cut && line[0] == '-')
        ids_drop(&ids, line + 1);
      else if (!cut && line[0] == '*')
        ids_add(&images, line + 1);
      else if (!cut && line[0] == '/')
        ids_drop(&images, line + 1);
      len = 0;
      cut = false;
    }
  }
  for (size_t i = 0; i < ids.n; i++) {
    hutch_error_t err = NULL;
    if (hutch_sandbox_remove(state_dir, ids.id[i], &err) < 0) {
      hutch_log_error(HUTCH_LOG_WARNING, err);
      hutch_error_free(&err);
    }
  }
  free(ids.id);
  /* After the sandboxes: a snapshot may be the image one runs. */
  struct hutch_store *store = NULL;
  hutch_error_t err = NULL;
  if (images.n && hutch_store_open(store_dir, &store, &err) < 0) {
    hutch_log_error(HUTCH_LOG_WARNING, err);
    hutch_error_free(&err);
  }
  /* A snapshot may be a layer over another (a sandbox reset to one, then
   * snapshotted), and the list's order is not theirs: passes until one
   * removes nothing; what is left then is said. */
  for (size_t removed = 1; store && images.n && removed;) {
    removed = 0;
    for (size_t i = images.n; i-- > 0;) {
      /* ENOENT: announced before it was made, and it never was. */
      if (hutch_image_remove(store, images.id[i], &err) == 0 || err->errnum == ENOENT) {
        memmove(images.id[i], images.id[--images.n], sizeof(images.id[0]));
        removed++;
      }
      hutch_error_free(&err);
    }
  }
  for (size_t i = 0; store && i < images.n; i++)
    if (hutch_image_remove(store, images.id[i], &err) < 0) {
      hutch_log_error(HUTCH_LOG_WARNING, err);
      hutch_error_free(&err);
    }
  hutch_store_close(store);
  free(images.id);
}

int mcp_reaper_start(const char *state_dir, const char *store, hutch_error_t *err) {
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
    reap(p[0], state_dir, store);
    _exit(0);
  }
  close(p[0]);
  return p[1];
}

static int announce(int fd, char op, const char *id, hutch_error_t *err) {
  if (fd < 0)
    return 0;
  char line[64];
  int n = snprintf(line, sizeof(line), "%c%s\n", op, id);
  if (n < 0 || (size_t)n >= sizeof(line))
    return hutch_error_set(err, ENAMETOOLONG, "mcp: sandbox id %s is too long to tell the reaper", id);
  if (write_all(fd, line, (size_t)n) < 0) {
    hutch_error_sys(err, "mcp: tell the reaper about sandbox %s", id);
    return hutch_error_hint(err, "the process that removes this server's sandboxes when it is killed is gone; "
                                 "restart hutch mcp");
  }
  return 0;
}

int mcp_reaper_announce(int fd, bool add, const char *id, hutch_error_t *err) {
  return announce(fd, add ? '+' : '-', id, err);
}

int mcp_reaper_announce_image(int fd, bool add, const char *name, hutch_error_t *err) {
  return announce(fd, add ? '*' : '/', name, err);
}
