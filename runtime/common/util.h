/* SPDX-License-Identifier: Apache-2.0 */
/* Small helpers shared by the whole tree: cleanup attributes so early returns
 * leak nothing, and allocators that abort on OOM (a sandbox runtime that runs
 * out of memory for a 100-byte string has nothing sensible left to do). */
#ifndef HUTCH_UTIL_H
#define HUTCH_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base64.h"
#include "error.h"
#include "text_escape.h"

#define _cleanup_(fn) __attribute__((cleanup(fn)))

static inline void cleanup_freep(void *p) {
  free(*(void **)p);
}
static inline void cleanup_closep(int *fd) {
  if (*fd >= 0) {
    int saved = errno;
    close(*fd);
    errno = saved;
  }
}
static inline void cleanup_fclosep(FILE **f) {
  if (*f != NULL)
    fclose(*f);
}
static inline void cleanup_closedirp(DIR **d) {
  if (*d != NULL)
    closedir(*d);
}
void cleanup_strvp(char ***strv);
static inline void cleanup_errorp(hutch_error_t *e) {
  hutch_error_free(e);
}

#define _cleanup_free_ _cleanup_(cleanup_freep)
#define _cleanup_close_ _cleanup_(cleanup_closep)
#define _cleanup_fclose_ _cleanup_(cleanup_fclosep)
#define _cleanup_dir_ _cleanup_(cleanup_closedirp)
#define _cleanup_strv_ _cleanup_(cleanup_strvp)
#define _cleanup_error_ _cleanup_(cleanup_errorp)

/* Take ownership out of a cleanup-managed variable. */
#define steal_pointer(pp)                                                                                              \
  ({                                                                                                                   \
    __typeof__(*(pp)) _stolen = *(pp);                                                                                 \
    *(pp) = NULL;                                                                                                      \
    _stolen;                                                                                                           \
  })
#define steal_fd(fdp)                                                                                                  \
  ({                                                                                                                   \
    int _fd = *(fdp);                                                                                                  \
    *(fdp) = -1;                                                                                                       \
    _fd;                                                                                                               \
  })

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* A growable NUL-terminated text: *DATA holds *LEN bytes in *CAP.  The
 * one implementation behind the record builders (the audit log, the
 * proxy's log lines). */
void text_append(char **data, size_t *len, size_t *cap, const char *s, size_t n);
/* The same with printf formatting, cut at 127 bytes (numbers, not text). */
void text_appendf(char **data, size_t *len, size_t *cap, const char *fmt, ...) HUTCH_PRINTF(4, 5);
char *xasprintf(const char *fmt, ...) HUTCH_PRINTF(1, 2);
char *xvasprintf(const char *fmt, va_list ap) HUTCH_PRINTF(1, 0);

/* Retry on EINTR; return -1/errno on error, bytes otherwise. */
ssize_t read_all(int fd, void *buf, size_t len);
int write_all(int fd, const void *buf, size_t len);
/* Closes every fd from 3 up but the n in keep (a process that may outlive
 * its caller holds nothing of the caller's). */
void close_fds_except(const int *keep, size_t n);
/* What is left to read of src_fd, written to fd through a buffer of fixed
 * size; -1/errno on a failed read or write. */
int copy_all(int fd, int src_fd);
/* A directory (or an O_PATH fd of one) as a sandboxed command's stdin,
 * stdout or stderr (stream 0-2) would hand it the host's file tree: its
 * /proc/self/fd/N, then "..", walks the host's mounts.  Refused (EISDIR),
 * as is an fd that fstat() cannot read; a closed one (EBADF) is not. */
int stdio_refuse_directory(int fd, int stream, hutch_error_t *err);
/* Write a whole file (O_CREAT|O_TRUNC, mode) relative to dirfd. */
int write_file_at(int dirfd, const char *path, const void *data, size_t len, int mode);
/* Write data to a temp file beside path, fsync it and rename() it over
 * path: whole (old or new) even after a crash of the host. */
int write_file_atomic(const char *path, const void *data, size_t len, int mode);
/* The same without the fsync: whole (old or new) to every reader, and
 * after a crash of hutch; a crash of the host before the kernel's
 * writeback may leave it empty. */
int write_file_replace(const char *path, const void *data, size_t len, int mode);
/* The same with what is left to read of src_fd, copied through a buffer of
 * fixed size (a file of any size, in bounded memory). */
int copy_file_replace(const char *path, int src_fd, int mode);
/* s[0..len) as a number of 1 to 10 decimal digits up to UINT32_MAX. */
bool parse_u32_digits(const char *s, size_t len, uint32_t *out);
/* Read a whole file (at most max bytes, NUL-terminated); NULL on error with errno set. */
char *read_file_at(int dirfd, const char *path, size_t max, size_t *len_out);

/* The absolute path the kernel has for what fd is open on (one readlink of
 * /proc/self/fd/FD, where realpath() walks every component): malloc'd, or
 * NULL with errno. */
char *fd_path(int fd);
/* mkdir -p with mode for every created component. */
int mkdir_p(const char *path, int mode);
/* Remove a tree below dirfd/name without following symlinks; ENOENT is success. */
int remove_tree_at(int dirfd, const char *name);
/* Remove everything in the directory open on dfd (which stays open), the
 * same way; 0 or -1 with errno. */
int remove_dir_contents_fd(int dfd);
/* 1 when the directory open on dfd has no entry but . and .. (read from its
 * start with getdents64), 0 when it has one, -1 with errno. */
int dir_is_empty(int dfd);
/* The first executable dir/prog for dir in $PATH, or in default_path when
 * PATH is unset or empty; a malloc'd path, or NULL when there is none. */
char *find_in_path(const char *prog, const char *default_path);

/* Monotonic time in seconds. */
double monotonic_seconds(void);

/* The running kernel is at least major.minor (uname, read once). */
bool kernel_at_least(int major, int minor);

/* openat2(2), retried on EAGAIN (a rename raced with a lookup that
 * RESOLVE_IN_ROOT or RESOLVE_BENEATH keeps inside); O_CLOEXEC always,
 * O_NOCTTY unless O_PATH.  ENOSYS before Linux 5.6. */
int openat2_retry(int dirfd, const char *path, uint64_t flags, mode_t mode, uint64_t resolve);
/* A regular file at dirfd/path, never through a symlink as its last
 * component, never a FIFO or a device (opened O_NONBLOCK, checked with
 * fstat), at most max bytes: for files something else wrote.  NULL with
 * errno (ELOOP: a symlink, EINVAL: not a regular file, EFBIG: larger). */
char *read_regular_file_at(int dirfd, const char *path, size_t max, size_t *len_out);

/* The library's log lines, escaped as above, to the handler of
 * hutch_set_log_handler() (hutch.h), by default to stderr with the program
 * prefix; all printf-checked.  hutch_debug only with $HUTCH_DEBUG set. */
void hutch_log(enum hutch_log_level level, const char *fmt, ...) HUTCH_PRINTF(2, 3);
void hutch_warn(const char *fmt, ...) HUTCH_PRINTF(1, 2);
void hutch_notice(const char *fmt, ...) HUTCH_PRINTF(1, 2);
void hutch_debug(const char *fmt, ...) HUTCH_PRINTF(1, 2);
/* "FMT: strerror(errnum)" (hutch_errno_format) as one log line. */
void hutch_log_errno(enum hutch_log_level level, int errnum, const char *fmt, ...) HUTCH_PRINTF(3, 4);
/* hutch_error_format(err) as one log line. */
void hutch_log_error(enum hutch_log_level level, const hutch_error_t err);
extern const char *hutch_program_name;

/* RLIMIT_NPROC counts every process of the user (and, in a sandbox's new
 * user namespace, every process there): a low soft limit must not fail a
 * fork or clone hutch makes for a start (the sandbox's clone, its network
 * helper, the doctor's probes), so it is raised to the hard limit around
 * them.  *old gets the limits as they were (unlimited if unknown); the
 * return says whether nproc_restore() has anything to put back. */
bool nproc_raise(struct rlimit *old);
void nproc_restore(bool raised, const struct rlimit *old);

/* Moves process `pid`, just forked to work beside the caller, off the
 * caller's CPU when the caller may run on another: the scheduler can queue
 * a new process on its parent's CPU while another CPU idles, and the two
 * then take turns instead of running side by side.  Best effort: no error,
 * and nothing done where only one CPU is allowed. */
void run_beside_caller(pid_t pid);

#endif
