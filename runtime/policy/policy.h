/* SPDX-License-Identifier: Apache-2.0 */
/* Sandbox policies: the files in policies/ that security teams read.
 *
 * A policy is a small line-based file (hutch-policy(5)):
 *
 *   # comment
 *   [sandbox]
 *   seccomp = seccomp.json      # OCI linux.seccomp JSON, relative to this file
 *   hostname = sandbox
 *   nofile = 1024               # RLIMIT_NOFILE of every sandboxed process
 *
 * Sections and keys later issues add (limits, network) are parsed by the same
 * code: one table row per key in policy_parse.c; [network] values are
 * handed to net_policy_set() (net_policy.h).  Unknown sections or keys,
 * duplicate keys and bad values are errors naming file:line: a policy that is
 * not understood is never half-applied. */
#ifndef HUTCH_POLICY_H
#define HUTCH_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "hutch.h"
#include "resource_limits.h"
#include "net_policy.h"
#include "seccomp_policy.h"

#define POLICY_MAX_BYTES (1u << 20)
#define POLICY_SECCOMP_MAX_BYTES (4u << 20)

/* [devices] allow: "no" (the default), "yes", or entries each a CDI kind
 * ("vendor/class": its every device), a CDI device ("vendor/class=name")
 * or a node ("/dev/NODE"); repeatable. */
struct policy_devices {
  bool any;
  bool said_no;
  char **allow; /* NULL-terminated, NULL: none */
  size_t n_allow;
};
/* Whether the policy lets a sandbox have `device` (as --device names it). */
bool policy_device_allowed(const struct policy_devices *d, const char *device);

struct policy_settings {
  char *seccomp; /* path as written in the file (resolved later); required */
  unsigned seccomp_line;
  char *hostname;              /* default hostname, may be NULL */
  uint64_t nofile;             /* RLIMIT_NOFILE for payloads; 0: not set, inherited */
  struct policy_limits limits; /* [limits] */
  struct net_policy network;   /* [network]; the defaults (nothing allowed) without one */
  /* [devices] */
  struct policy_devices devices;
};

/* Pure: parse policy text.  `source` names the file in messages. */
int policy_parse(const char *text, const char *source, struct policy_settings *out, hutch_error_t *err);
/* Pure: the [network] section of a --net-policy file, parsed as in a policy;
 * its other sections are passed over, and [sandbox] is not required. */
int policy_parse_network(const char *text, const char *source, struct net_policy *out, hutch_error_t *err);
void policy_settings_clear(struct policy_settings *s);

struct hutch_policy {
  char *path;         /* the policy file */
  char *seccomp_path; /* resolved OCI JSON */
  struct policy_settings settings;
  char digest[65]; /* sha256 hex of the seccomp JSON bytes + arch + libseccomp version */
  /* sha256 hex of the policy file's bytes as loaded (the audit log's
   * policy_digest: the text in force, not a later read of the file). */
  char file_digest[65];
  /* The JSON bytes the digest covers: compiled from, on a cold cache, so a
   * file changed after the load cannot slip in under the old digest.  An
   * anonymous mapping (policy.c), released once policy_seccomp_program()
   * has the program: NULL from then on, and read again (checked against
   * the digest) only for a description. */
  char *seccomp_json;
  size_t seccomp_json_len;
  /* The compiled classic-BPF program, loaded from the cache (or compiled and
   * stored there on the first use of this profile). */
  void *bpf;
  size_t bpf_len;
};

/* The compiled filter of a policy, ready for seccomp_install(); the memory
 * belongs to the policy.  Reads <cache>/seccomp/<digest>.bpf when present,
 * sound and authenticated by its HMAC under the user's key `cache_key`
 * (POLICY_CACHE_KEY_SIZE bytes, kept in the state directory: state.h; NULL:
 * no cache at all); otherwise parses and compiles the profile and stores
 * the result there (in memory only when the cache cannot be written). */
#define POLICY_CACHE_KEY_SIZE 32
int policy_seccomp_program(struct hutch_policy *policy, const uint8_t *cache_key, const void **bpf, size_t *len,
                           hutch_error_t *err);
/* The import budget of the policy at `path` (NULL: as hutch_policy_load).
 * Fails when the policy cannot be read: an import is never unbounded
 * because a file is missing. */
int policy_import_budget(const char *path, struct import_budget *out, hutch_error_t *err);
/* Where policy_seccomp_program() caches this policy's program (new string). */
char *policy_cache_file(const struct hutch_policy *policy);

/* hutch_policy_describe() and _json(): `on_host` (NULL: the policy as
 * written) is where its limits go on this host, which the host side knows
 * (cgroup.c), for --effective. */
int policy_describe(const struct hutch_policy *p, const char *on_host, FILE *out, hutch_error_t *err);
int policy_describe_json(const struct hutch_policy *p, const char *on_host, FILE *out, hutch_error_t *err);

#endif
