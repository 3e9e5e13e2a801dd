/* SPDX-License-Identifier: Apache-2.0 */
/* The audit log of a Dockerfile build (hutch-audit(5)), a chain like a
 * sandbox's (common/audit.c), beside the build log: the build log's path
 * without its ".log", with ".audit.jsonl".  It holds the build's start,
 * each file COPY and ADD wrote into the image (its path there, size and
 * sha256, hashed as it was copied; an archive ADD unpacked and a URL it
 * downloaded), each step's outcome and the end.  The files come from the
 * build context or an earlier stage's trees, which a RUN step wrote:
 * their paths are escaped and cut by the record builder, and the log is
 * bounded by the policy's [limits] audit_log as a sandbox's is. */
#ifndef HUTCH_BUILD_AUDIT_H
#define HUTCH_BUILD_AUDIT_H

#include <stdbool.h>
#include <stdint.h>

#include "audit.h"
#include "hutch.h"

struct build_audit {
  struct audit_log log; /* log_fd -1: none */
  uint64_t cap;
  char *path;
};

/* The log's path for the build log `build_log` (malloc'd). */
char *build_audit_path(const char *build_log);
/* The log made anew (one of an earlier build of the same name is
 * replaced, as the build log is) and its start record written. */
int build_audit_start(struct build_audit *a, const char *build_log, const struct hutch_dockerfile_options *o,
                      const char *dockerfile_text, size_t len, const struct hutch_policy *policy, bool net,
                      hutch_error_t *err);
/* A copy into the image from `from` ("context", "stage NAME", a URL):
 * its files (an audit_files list) as "file" records (op "copy"), then its
 * "copy" record. */
void build_audit_copy(struct build_audit *a, const char *from, const char *const *sources, const char *to,
                      const char *list, size_t len, uint64_t files, uint64_t bytes, bool ok);
/* One file read whole into the image by `op` ("unpack": an archive ADD
 * unpacked into `to`). */
void build_audit_file(struct build_audit *a, const char *op, const char *path, const char *to, uint64_t bytes,
                      const uint8_t digest[SHA256_DIGEST_SIZE]);
/* An instruction done: `result` "made" (a layer), "cached" (one reused),
 * "done" (no layer), "failed"; `layer` its key or NULL; `exit_code` a
 * failed RUN's, else -1. */
void build_audit_step(struct build_audit *a, const char *file, int line, const char *text, const char *result,
                      const char *layer, int exit_code);
/* The end record ("built", or "failed" with the error), and the log closed. */
void build_audit_end(struct build_audit *a, bool ok, const char *error);

#endif
