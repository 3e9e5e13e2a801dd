/* SPDX-License-Identifier: Apache-2.0 */
/* What the musl front end (configure --with-musl-front-end) needs from its
 * C library and musl 1.2 does not declare, where glibc 2.36 does: the new
 * mount API's constants, statx(), renameat2().  Forced into every file of
 * the musl build (-include), before config.h; the glibc build never reads
 * it.  Each wrapper is the plain system call glibc's is. */
#ifndef HUTCH_MUSL_COMPAT_H
#define HUTCH_MUSL_COMPAT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <stddef.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* fsopen, fsconfig, fsmount, open_tree, move_mount: called through
 * syscall(2) everywhere; only their flags are missing. */
#ifndef FSOPEN_CLOEXEC
#include <linux/mount.h>
#endif

#ifndef STATX_TYPE
#include <linux/stat.h>
static inline int statx(int dirfd, const char *path, int flags, unsigned int mask, struct statx *buf) {
  return (int)syscall(SYS_statx, dirfd, path, flags, mask, buf);
}
#endif

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#define RENAME_EXCHANGE (1 << 1)
static inline int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned int flags) {
  return (int)syscall(SYS_renameat2, olddirfd, oldpath, newdirfd, newpath, flags);
}
#endif

/* Only `hutch policy` names a seccomp errno (seccomp_describe.c), a verb
 * the front end hands to hutch-full; its "errno N" fallback stands here. */
static inline const char *strerrorname_np(int errnum) {
  (void)errnum;
  return NULL;
}

/* musl's allocator returns freed memory to the kernel itself. */
static inline int malloc_trim(size_t pad) {
  (void)pad;
  return 0;
}

#endif
