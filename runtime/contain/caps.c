/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "caps.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <linux/securebits.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util.h"

/* Run as another user of the sandbox: after the securebits (NO_SETUID_FIXUP
 * keeps the capabilities across the change of uid, so the last step still
 * empties the sets itself, and CAP_SETPCAP was needed for the bounding
 * set), before the sets are emptied (setresuid needs CAP_SETUID).  Raw
 * syscalls: glibc's would make every thread change, and this child of a
 * raw clone may carry the thread list of a caller that has threads (the
 * same reason as step_drop_host_groups).  All three ids of each: none is
 * left to setuid back to. */
static int switch_user(const struct user_ident *as, hutch_error_t *err) {
  if (syscall(SYS_setgroups, 0, NULL) < 0) {
    /* Denied in this user namespace (a parent wrote "deny"): then there
     * must be no group to drop, or one would stay. */
    if (errno != EPERM || getgroups(0, NULL) != 0)
      return hutch_error_sys(err, "user: drop the supplementary groups");
  }
  if (syscall(SYS_setresgid, as->gid, as->gid, as->gid) < 0)
    return hutch_error_sys(err, "user: switch to gid %u", as->gid);
  if (syscall(SYS_setresuid, as->uid, as->uid, as->uid) < 0)
    return hutch_error_sys(err, "user: switch to uid %u", as->uid);
  return 0;
}

int caps_drop_all(const struct user_ident *as, hutch_error_t *err) {
  /* CAP_LAST_CAP of the headers we built with may be older than the
   * kernel's: up to the kernel's own last, which refuses the next with
   * EINVAL (no read of /proc/sys/kernel/cap_last_cap needed), so that a
   * capability added later is dropped too. */
  for (int cap = 0; cap <= 63; cap++) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
      if (errno == EINVAL && cap > 0)
        break; /* beyond the kernel's last capability */
      return hutch_error_sys(err, "capabilities: drop %d from the bounding set", cap);
    }
  }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
    return hutch_error_sys(err, "capabilities: clear the ambient set");
  /* Root inside the namespace would regain a full permitted set on every
   * execve; NOROOT (locked) makes uid 0 an ordinary uid for exec. */
  if (prctl(PR_SET_SECUREBITS,
            SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP | SECBIT_NO_SETUID_FIXUP_LOCKED |
                SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
            0, 0, 0) < 0)
    return hutch_error_sys(err, "capabilities: set securebits");
  if (as != NULL && switch_user(as, err) < 0)
    return -1;
  cap_t empty = cap_init();
  if (empty == NULL)
    return hutch_error_sys(err, "capabilities: cap_init");
  int r = cap_set_proc(empty);
  int saved = errno;
  cap_free(empty);
  if (r < 0) {
    errno = saved;
    return hutch_error_sys(err, "capabilities: clear the effective, permitted and inheritable sets");
  }
  return 0;
}

static const cap_value_t build_caps[] = {CAP_CHOWN,  CAP_DAC_OVERRIDE, CAP_FOWNER,  CAP_FSETID,
                                         CAP_SETUID, CAP_SETGID,       CAP_SETFCAP, CAP_KILL};

static bool is_build_cap(int cap) {
  for (size_t i = 0; i < sizeof(build_caps) / sizeof(build_caps[0]); i++)
    if (build_caps[i] == cap)
      return true;
  return false;
}

int caps_keep_for_build(hutch_error_t *err) {
  for (int cap = 0; cap <= 63; cap++) {
    if (is_build_cap(cap))
      continue;
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
      if (errno == EINVAL)
        break;
      return hutch_error_sys(err, "capabilities: drop %d from the bounding set", cap);
    }
  }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
    return hutch_error_sys(err, "capabilities: clear the ambient set");
  /* Ambient capabilities, not root's exec fixup, carry the set across
   * execve: NOROOT stays locked, raising ambient ones is allowed. */
  if (prctl(PR_SET_SECUREBITS,
            SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP | SECBIT_NO_SETUID_FIXUP_LOCKED, 0, 0, 0) < 0)
    return hutch_error_sys(err, "capabilities: set securebits");
  cap_t set = cap_init();
  if (set == NULL)
    return hutch_error_sys(err, "capabilities: cap_init");
  int n = (int)(sizeof(build_caps) / sizeof(build_caps[0]));
  int r = cap_set_flag(set, CAP_PERMITTED, n, build_caps, CAP_SET);
  if (r == 0)
    r = cap_set_flag(set, CAP_EFFECTIVE, n, build_caps, CAP_SET);
  if (r == 0)
    r = cap_set_flag(set, CAP_INHERITABLE, n, build_caps, CAP_SET);
  if (r == 0)
    r = cap_set_proc(set);
  int saved = errno;
  cap_free(set);
  if (r < 0) {
    errno = saved;
    return hutch_error_sys(err, "capabilities: keep the build set");
  }
  for (int i = 0; i < n; i++)
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, build_caps[i], 0, 0) < 0)
      return hutch_error_sys(err, "capabilities: raise %d in the ambient set", build_caps[i]);
  return 0;
}

int caps_set_no_new_privs(hutch_error_t *err) {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
    return hutch_error_sys(err, "set no_new_privs");
  return 0;
}
