/* SPDX-License-Identifier: Apache-2.0 */
/* The doctor's file system checks: the rootfs store, the state directory,
 * and an overlay mounted the way a sandbox mounts its root. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "doctor.h"
#include "mounts.h"
#include "paths.h"
#include "state.h"
#include "util.h"

struct overlay_dirs {
  const char *lower, *upper, *work, *merged;
  const char *tmpfs; /* where a sandbox's tmpfs goes, NULL: the layer stays in the state directory */
};

static int try_overlay(void *data, struct probe_result *res) {
  const struct overlay_dirs *d = data;
  hutch_error_t err = NULL;
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
    return probe_fail(res, "make / private");
  /* As a sandbox does from Linux 6.6 on (contain.c: step_sandbox_tmpfs):
   * its layer on a tmpfs of its own over its directory. */
  if (d->tmpfs != NULL) {
    if (mount("tmpfs", d->tmpfs, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700,size=1m") < 0)
      return probe_fail(res, "mount a tmpfs on %s", d->tmpfs);
    const char *dirs[] = {d->lower, d->upper, d->work, d->merged};
    for (size_t i = 0; i < ARRAY_SIZE(dirs); i++)
      if (mkdir(dirs[i], 0755) < 0)
        return probe_fail(res, "create %s", dirs[i]);
    _cleanup_free_ char *file = xasprintf("%s/lower-file", d->lower);
    if (write_file_at(AT_FDCWD, file, "", 0, 0644) < 0)
      return probe_fail(res, "create %s", file);
  }
  if (mounts_overlay(d->lower, d->upper, d->work, d->merged, &err) < 0) {
    probe_fail_error(res, err);
    hutch_error_free(&err);
    return -1;
  }
  /* A write through the overlay is a copy-up into the upper dir: what
   * fails when upper's filesystem lacks user xattrs or O_TMPFILE. */
  _cleanup_free_ char *path = xasprintf("%s/lower-file", d->merged);
  _cleanup_close_ int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0 || write(fd, "x", 1) != 1)
    return probe_fail(res, "write through the overlay (copy-up into %s)", d->upper);
  _cleanup_free_ char *dir = xasprintf("%s/new-dir", d->merged);
  if (mkdir(dir, 0755) < 0)
    return probe_fail(res, "create a directory in the overlay");
  return 0;
}

void doctor_check_store(struct ladder *l, const char *store_opt) {
  struct hutch_check *c = report_add(l->r, "store", "rootfs store", true);
  _cleanup_free_ char *path = store_opt ? xstrdup(store_opt) : paths_default_store();
  /* The store may not exist yet: then its nearest existing parent must be
   * writable, since `hutch rootfs import` creates it. */
  _cleanup_free_ char *probe = xstrdup(path);
  struct stat st;
  while (stat(probe, &st) < 0) {
    char *slash = strrchr(probe, '/');
    if (slash == NULL || slash == probe) {
      snprintf(probe, strlen(probe) + 1, "/");
      break;
    }
    *slash = '\0';
  }
  struct statfs sf;
  const char *fs = statfs(probe, &sf) == 0 ? probe_fs_name((long)sf.f_type) : "unknown";
  if (access(probe, W_OK | X_OK) < 0) {
    c->status = HUTCH_CHECK_FAIL;
    c->errnum = errno;
    report_detail_errno(c, errno, "%s%s%s is not writable", path,
                        strcmp(probe, path) ? " (does not exist; its parent " : "", strcmp(probe, path) ? probe : "");
    report_fix(c, xstrdup("Point hutch at a writable directory: --store DIR or HUTCH_STORE=DIR."));
    return;
  }
  report_detail(c, "%s (%s, %s)", path, fs, strcmp(probe, path) ? "not created yet" : "writable");
}

void doctor_check_state_and_overlay(struct ladder *l, const char *state_opt) {
  struct hutch_check *c = report_add(l->r, "state", "state directory", true);
  hutch_error_t err = NULL;
  l->state_fd = state_open_root(state_opt, &l->state_path, &err);
  struct hutch_check *o = report_add(l->r, "overlay", "overlayfs in a user namespace", true);
  if (l->state_fd < 0) {
    c->status = HUTCH_CHECK_FAIL;
    c->errnum = err->errnum;
    report_detail_errno(c, err->errnum, "%s", err->msg);
    report_fix(c, xstrdup(err->hint ? err->hint
                                    : "Use a private, writable directory: --state-dir DIR or "
                                      "HUTCH_STATE_DIR=DIR."));
    hutch_error_free(&err);
    o->status = HUTCH_CHECK_SKIP;
    report_detail(o, "needs a usable state directory");
    return;
  }
  struct statfs sf;
  const char *fs = fstatfs(l->state_fd, &sf) == 0 ? probe_fs_name((long)sf.f_type) : "unknown";
  report_detail(c, "%s (%s, private, writable)", l->state_path, fs);
  struct hutch_check *d = report_add(l->r, "state_discard", "no synchronous discard where state is kept", false);
  if (state_on_discard_mount(l->state_fd)) {
    d->status = HUTCH_CHECK_WARN;
    report_detail(d,
                  "%s is on a filesystem mounted with discard: a sandbox directory made and removed there "
                  "(more at once than hutch keeps spare) waits for a discard of its block",
                  l->state_path);
    report_fix(d, xstrdup("Put the state directory on a tmpfs (HUTCH_STATE_DIR=$XDG_RUNTIME_DIR/hutch, or "
                          "--state-dir DIR), or mount the filesystem without discard and run fstrim periodically."));
  } else {
    report_detail(d, "%s (no synchronous discard)", fs);
  }

  if (!l->userns_ok) {
    o->status = HUTCH_CHECK_SKIP;
    report_detail(o, "needs a user namespace");
    return;
  }
  /* The same layout a sandbox uses: <state>/<id>/{upper,work,root}, with a
   * tiny lower tree beside them. */
  char id[40];
  state_new_id(id);
  memcpy(id, "doctor", 6);
  _cleanup_close_ int sbfd = state_create_sandbox_dir(l->state_fd, id, true, &err);
  if (sbfd < 0) {
    o->status = HUTCH_CHECK_FAIL;
    o->errnum = err->errnum;
    report_detail_errno(o, err->errnum, "%s", err->msg);
    report_fix(o, xstrdup("Use a writable state directory: --state-dir DIR or HUTCH_STATE_DIR=DIR."));
    hutch_error_free(&err);
    return;
  }
  _cleanup_free_ char *base = xasprintf("%s/%s", l->state_path, id);
  _cleanup_free_ char *lower = xasprintf("%s/lower", base);
  _cleanup_free_ char *upper = xasprintf("%s/upper", base);
  _cleanup_free_ char *work = xasprintf("%s/work", base);
  _cleanup_free_ char *merged = xasprintf("%s/root", base);
  struct probe_result res;
  bool on_tmpfs = kernel_at_least(6, 6);
  if (!on_tmpfs && (mkdirat(sbfd, "lower", 0755) < 0 || write_file_at(sbfd, "lower/lower-file", "", 0, 0644) < 0)) {
    res = (struct probe_result){.stage = PROBE_STAGE_RUN, .errnum = errno};
    snprintf(res.what, sizeof(res.what), "create the lower tree in %s", base);
  } else {
    struct overlay_dirs dirs = {lower, upper, work, merged, on_tmpfs ? base : NULL};
    probe_run(CLONE_NEWUSER | CLONE_NEWNS, &l->single, try_overlay, &dirs, &res);
  }
  state_remove_sandbox_dir(l->state_fd, id, NULL);
  if (res.stage == PROBE_DONE) {
    report_detail(o, "mounted with userxattr, upper on %s, copy-up works", on_tmpfs ? "the sandbox's tmpfs" : fs);
    return;
  }
  report_fail(o, &res);
  report_fix(o, probe_fix_overlay(fs));
}
