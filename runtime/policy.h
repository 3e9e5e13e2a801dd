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
 * code.  Unknown sections or keys, duplicate keys and bad values are errors
 * naming file:line: a policy that is not understood is never half-applied. */
#ifndef HUTCH_POLICY_H
#define HUTCH_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "hutch.h"
#include "seccomp.h"

struct policy_settings {
  char *seccomp;   /* path as written in the file (resolved later) */
  char *hostname;  /* default hostname, may be NULL */
  uint64_t nofile; /* RLIMIT_NOFILE for payloads */
};

/* Pure: parse policy text.  `source` names the file in messages. */
int policy_parse(const char *text, const char *source, struct policy_settings *out, hutch_error_t *err);
void policy_settings_clear(struct policy_settings *s);

struct hutch_policy {
  char *path;         /* the policy file */
  char *seccomp_path; /* resolved OCI JSON */
  struct policy_settings settings;
  char digest[65];    /* sha256 hex of the seccomp JSON bytes + arch + libseccomp version */
  /* The compiled classic-BPF program, loaded from the cache (or compiled and
   * stored there on the first use of this profile). */
  void *bpf;
  size_t bpf_len;
};

/* The compiled filter of a policy, ready for seccomp_install(); the memory
 * belongs to the policy. */
int policy_seccomp_program(struct hutch_policy *policy, const void **bpf, size_t *len, hutch_error_t *err);

#endif
