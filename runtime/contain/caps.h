/* SPDX-License-Identifier: Apache-2.0 */
/* Dropping every capability and privilege gain before anything untrusted runs. */
#ifndef HUTCH_CAPS_H
#define HUTCH_CAPS_H

#include "hutch.h"
#include "user_spec.h"

/* Empties the bounding, ambient, inheritable, effective and permitted sets
 * (in that order: the bounding set needs CAP_SETPCAP, which the last step
 * gives up).  With `as`, the process switches to its uid and gid (real,
 * effective and saved) and drops its supplementary groups before the
 * last step, which needs no capability: it ends with none, as that user,
 * and cannot switch back (no CAP_SETUID; no_new_privs follows). */
int caps_drop_all(const struct user_ident *as, hutch_error_t *err);
/* For image builds (hutch_sandbox_config.build_caps): the same, but
 * CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_FSETID, CAP_SETUID,
 * CAP_SETGID, CAP_SETFCAP and CAP_KILL stay in the permitted, effective,
 * inheritable, ambient and bounding sets, so every program run keeps them:
 * package scripts chown files to system groups and users.  They act in the
 * sandbox's user namespace only (on the ids it maps). */
int caps_keep_for_build(hutch_error_t *err);
/* PR_SET_NO_NEW_PRIVS: execve can never grant privileges again (setuid
 * bits, file capabilities); also what lets an unprivileged seccomp filter load. */
int caps_set_no_new_privs(hutch_error_t *err);

#endif
