/* SPDX-License-Identifier: Apache-2.0 */
/* The ld.so cache of a live sandbox given a spec's libraries (cdi.h). */
#include "config.h"

#include "cdi.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <unistd.h>

#include "sandbox.h"
#include "util.h"

void cdi_update_ld_cache(struct hutch_sandbox *sb) {
  hutch_error_t err = NULL;
  /* Looked up in the sandbox's root as its processes would, never
   * through one of its symlinks to the host's tree. */
  int root = sandbox_root_fd(sb, &err);
  _cleanup_close_ int conf = root < 0 ? -1
                                      : openat2_retry(root, "etc/ld.so.conf.d/000-hutch-cdi.conf", O_PATH, 0,
                                                      RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
  if (conf < 0) {
    hutch_error_free(&err);
    return;
  }
  _cleanup_close_ int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  const char *argv[] = {"ldconfig", NULL};
  struct hutch_process proc = {.argv = argv, .stdio = {null, null, null}, .timeout = 60, .keep_caller_signals = true};
  struct hutch_exit ex;
  if (null < 0 || hutch_sandbox_exec(sb, &proc, &ex, &err) < 0) {
    if (err)
      hutch_log_error(HUTCH_LOG_WARNING, err);
    hutch_error_free(&err);
    return;
  }
  if (ex.exec_errno == ENOENT)
    hutch_debug("sandbox %s: no ldconfig in the image: the spec's libraries are found through LD_LIBRARY_PATH",
                hutch_sandbox_id(sb));
  else if (hutch_exit_code(&ex) != 0)
    hutch_warn("sandbox %s: ldconfig exited with %d: the spec's libraries are found through LD_LIBRARY_PATH only",
               hutch_sandbox_id(sb), hutch_exit_code(&ex));
}
