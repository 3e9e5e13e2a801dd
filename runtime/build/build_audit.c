/* SPDX-License-Identifier: Apache-2.0 */
/* A Dockerfile build's audit log (build_audit.h). */
#include "config.h"

#include "build_audit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy.h"
#include "util.h"

char *build_audit_path(const char *build_log) {
  size_t n = strlen(build_log);
  if (n > 4 && strcmp(build_log + n - 4, ".log") == 0)
    n -= 4;
  return xasprintf("%.*s.audit.jsonl", (int)n, build_log);
}

/* A record that cannot be written is a warning, not the build's failure:
 * the gap shows in the verification. */
static void append(struct build_audit *a, const struct audit_rec *recs, size_t n) {
  if (a->log.log_fd < 0)
    return;
  hutch_error_t err = NULL;
  if (audit_log_append_n(&a->log, a->cap, recs, n, &err) < 0) {
    hutch_log_error(HUTCH_LOG_WARNING, err);
    hutch_error_free(&err);
  }
}

static void append_one(struct build_audit *a, struct audit_rec *r) {
  append(a, r, 1);
  audit_rec_free(r);
}

int build_audit_start(struct build_audit *a, const char *build_log, const struct hutch_dockerfile_options *o,
                      const char *dockerfile_text, size_t len, const struct hutch_policy *policy, bool net,
                      hutch_error_t *err) {
  *a = (struct build_audit){.log = {.log_fd = -1, .head_fd = -1}};
  a->path = build_audit_path(build_log);
  const char *base = strrchr(a->path, '/');
  const char *name = base ? base + 1 : a->path;
  _cleanup_free_ char *dir = base ? xstrndup(a->path, base == a->path ? 1 : (size_t)(base - a->path)) : NULL;
  _cleanup_close_ int dfd = open(dir ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  /* An earlier build's log of this name goes, as its build log does: a
   * chain is never continued from another build's. */
  _cleanup_free_ char *head = xasprintf("%s" AUDIT_HEAD_SUFFIX, name);
  if (dfd < 0 || (unlinkat(dfd, name, 0) < 0 && errno != ENOENT) || (unlinkat(dfd, head, 0) < 0 && errno != ENOENT) ||
      audit_log_open(dfd, name, &a->log, err) < 0) {
    if (err && *err == NULL)
      hutch_error_sys(err, "replace the build's audit log %s", a->path);
    free(steal_pointer(&a->path));
    return -1;
  }
  a->cap = policy->settings.limits.audit_log ? policy->settings.limits.audit_log : AUDIT_DEFAULT_CAP;
  struct audit_rec r;
  audit_rec_init(&r, "start");
  audit_rec_str(&r, "kind", "build");
  audit_rec_caller(&r);
  audit_rec_str(&r, "image", o->name);
  audit_rec_str(&r, "dockerfile", o->dockerfile);
  uint8_t d[SHA256_DIGEST_SIZE];
  char hex[SHA256_HEX_SIZE];
  sha256_buffer(dockerfile_text, len, d);
  sha256_hex(d, hex);
  _cleanup_free_ char *df_digest = xasprintf("sha256:%s", hex);
  audit_rec_str(&r, "dockerfile_digest", df_digest);
  audit_rec_str(&r, "context", o->context);
  audit_rec_str(&r, "target", o->target);
  audit_rec_str(&r, "policy", policy->path);
  _cleanup_free_ char *policy_digest = xasprintf("sha256:%s", policy->file_digest);
  audit_rec_str(&r, "policy_digest", policy_digest);
  audit_rec_str(&r, "network", net ? "proxy" : "none");
  audit_rec_strv(&r, "allow", o->allow);
  audit_rec_u64(&r, "cap", a->cap);
  append_one(a, &r);
  return 0;
}

void build_audit_copy(struct build_audit *a, const char *from, const char *const *sources, const char *to,
                      const char *list, size_t len, uint64_t files, uint64_t bytes, bool ok) {
  if (a->log.log_fd < 0)
    return;
  struct audit_recs rs = {0};
  size_t listed = audit_recs_files(&rs, "in", list, len);
  struct audit_rec *r = audit_recs_add(&rs, "copy");
  audit_rec_str(r, "direction", "in");
  audit_rec_str(r, "kind", "build");
  audit_rec_str(r, "from", from);
  audit_rec_strv(r, "sources", sources);
  audit_rec_str(r, "to", to);
  static const char *const keys[] = {"files", "listed", "bytes"};
  const uint64_t counts[] = {files, listed, bytes};
  audit_rec_u64s(r, keys, counts, ARRAY_SIZE(keys));
  audit_rec_bool(r, "ok", ok);
  append(a, rs.v, rs.n);
  audit_recs_free(&rs);
}

void build_audit_file(struct build_audit *a, const char *op, const char *path, const char *to, uint64_t bytes,
                      const uint8_t digest[SHA256_DIGEST_SIZE]) {
  if (a->log.log_fd < 0)
    return;
  char hex[SHA256_HEX_SIZE];
  sha256_hex(digest, hex);
  struct audit_rec r;
  audit_rec_init(&r, "file");
  audit_rec_file(&r, "in", op, path, bytes, hex);
  audit_rec_str(&r, "to", to);
  append_one(a, &r);
}

void build_audit_step(struct build_audit *a, const char *file, int line, const char *text, const char *result,
                      const char *layer, int exit_code) {
  if (a->log.log_fd < 0)
    return;
  struct audit_rec r;
  audit_rec_init(&r, "step");
  audit_rec_str(&r, "file", file);
  audit_rec_i64(&r, "line", line);
  audit_rec_str(&r, "instruction", text);
  audit_rec_str(&r, "result", result);
  _cleanup_free_ char *key = layer ? xasprintf("sha256:%s", layer) : NULL;
  audit_rec_str(&r, "layer", key);
  if (exit_code >= 0)
    audit_rec_i64(&r, "exit_code", exit_code);
  append_one(a, &r);
}

void build_audit_end(struct build_audit *a, bool ok, const char *error) {
  if (a->log.log_fd >= 0) {
    struct audit_rec r;
    audit_rec_init(&r, "end");
    audit_rec_str(&r, "reason", ok ? "built" : "failed");
    if (!ok)
      audit_rec_str(&r, "error", error);
    append_one(a, &r);
  }
  audit_log_close(&a->log);
  free(a->path);
  a->path = NULL;
}
