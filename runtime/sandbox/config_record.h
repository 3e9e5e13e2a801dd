/* SPDX-License-Identifier: Apache-2.0 */
/* The creation record of a long-lived sandbox: what its configuration and
 * extras were, as JSON ("config" in its state.json), so that a reset (or a
 * fork) starts an identical sandbox from it without its creator.  Pure:
 * no file is read or written here.
 *
 * The policy goes in by its path and a fingerprint of what it was made
 * with (the policy file, its seccomp profile and a --net-policy file): a
 * policy changed since is refused with ESTALE rather than applied to a
 * sandbox that was made under another (config_record_check_policy). */
#ifndef HUTCH_CONFIG_RECORD_H
#define HUTCH_CONFIG_RECORD_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "hutch.h"

/* The record is refused past this size (EFBIG), before anything of the
 * sandbox exists: state.json is read with a bound (state.c). */
#define CONFIG_RECORD_MAX (256u * 1024)
#define CONFIG_RECORD_VERSION 1
/* "sha256:" and 64 hex digits. */
#define CONFIG_FINGERPRINT_LEN 72

/* The fingerprint of a policy as loaded (its file's and its seccomp
 * profile's digests) and of a --net-policy file's bytes (NULL: none). */
void config_record_fingerprint(const struct hutch_policy *policy, const char *net_policy, size_t net_policy_len,
                               char out[CONFIG_FINGERPRINT_LEN]);

/* Whether a path of cfg is relative: the record makes every path absolute
 * with the caller's working directory, which it then needs. */
bool config_record_needs_cwd(const struct hutch_sandbox_config *cfg);

/* cfg and x (may be NULL) as a record; cwd (NULL when no path is relative)
 * makes relative paths absolute.  EFBIG past CONFIG_RECORD_MAX. */
int config_record_encode(const struct hutch_sandbox_config *cfg, const struct hutch_sandbox_extras *x,
                         const char *fingerprint, const char *cwd, cJSON **out, hutch_error_t *err);

/* A record read back: cfg and x point into it.  cfg.policy is NULL: the
 * caller loads policy_path and checks it (config_record_check_policy);
 * cfg.state_dir and cfg.audit_copy are not recorded (NULL). */
struct config_record {
  struct hutch_sandbox_config cfg;
  struct hutch_sandbox_extras x;
  const char *policy_path;
  char fingerprint[CONFIG_FINGERPRINT_LEN];
  /* what cfg and x point into */
  cJSON *json;
  struct hutch_bind *binds;
  struct hutch_port *ports;
  const char **lists[7];
};

/* EINVAL (naming the member) for a record that is not one this hutch
 * wrote; ESTALE for one of another version.  `id` names the sandbox in
 * messages.  o is copied: the caller keeps it. */
int config_record_decode(const cJSON *o, const char *id, struct config_record *out, hutch_error_t *err);
void config_record_clear(struct config_record *r);
/* ESTALE, with the hint to recreate the sandbox, when `fingerprint` (of
 * the policy loaded now) is not the recorded one. */
int config_record_check_policy(const struct config_record *r, const char *fingerprint, const char *id,
                               hutch_error_t *err);

#endif
