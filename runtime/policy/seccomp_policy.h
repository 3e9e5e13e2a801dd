/* SPDX-License-Identifier: Apache-2.0 */
/* Seccomp: OCI runtime-spec `linux.seccomp` JSON profiles, compiled once
 * with libseccomp and cached as classic BPF by digest, so no compilation
 * happens on a sandbox start.
 *
 * The accepted subset and its semantics are in hutch-policy(5).  Two points
 * differ from a naive libseccomp translation:
 *  - rules that refuse (any action but SCMP_ACT_ALLOW) take precedence over
 *    rules that allow, whatever their order: the program runs the refusing
 *    rules first and falls through to the allowing ones;
 *  - a syscall name libseccomp does not know yet is resolved from hutch's own
 *    table of newer syscalls where possible, skipped (and reported) when the
 *    default action refuses it anyway, and an error otherwise. */

#ifndef HUTCH_SECCOMP_H
#define HUTCH_SECCOMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "hutch.h"

/* BPF_MAXINSNS: the kernel refuses longer classic programs. */
#define SECCOMP_MAX_INSNS 4096
#define SECCOMP_INSN_SIZE 8 /* sizeof(struct sock_filter) */

enum seccomp_act {
  SECCOMP_ACT_ALLOW,
  SECCOMP_ACT_ERRNO,
  SECCOMP_ACT_KILL_THREAD,
  SECCOMP_ACT_KILL_PROCESS,
  SECCOMP_ACT_TRAP,
  SECCOMP_ACT_LOG,
};

struct seccomp_action {
  enum seccomp_act kind;
  int errnum; /* SECCOMP_ACT_ERRNO only */
};

enum seccomp_op {
  SECCOMP_OP_NE,
  SECCOMP_OP_LT,
  SECCOMP_OP_LE,
  SECCOMP_OP_EQ,
  SECCOMP_OP_GE,
  SECCOMP_OP_GT,
  SECCOMP_OP_MASKED_EQ,
};

struct seccomp_arg {
  unsigned index;
  enum seccomp_op op;
  uint64_t value;     /* the mask for MASKED_EQ */
  uint64_t value_two; /* MASKED_EQ: the value the masked argument must equal */
};

struct seccomp_rule {
  size_t index; /* position in "syscalls", for messages */
  char **names;
  size_t n_names;
  struct seccomp_action action;
  struct seccomp_arg args[6]; /* AND'd; at most one per argument index */
  size_t n_args;
  char *comment;
};

struct seccomp_profile {
  char *source; /* file name, for messages */
  char *comment;
  struct seccomp_action default_action;
  char **arches; /* OCI names (SCMP_ARCH_X86_64...), as written */
  size_t n_arches;
  struct seccomp_rule *rules;
  size_t n_rules;
};

/* Parse and validate a profile (unknown actions, ops, syscall names, an
 * errnoRet on an action that takes none... are errors naming `source`). */
int seccomp_profile_parse(const char *json, size_t len, const char *source, struct seccomp_profile **out,
                          hutch_error_t *err);
void seccomp_profile_free(struct seccomp_profile *profile);
/* Compile for the host's native architecture into one classic BPF program
 * (malloc'd, a multiple of SECCOMP_INSN_SIZE bytes). */
int seccomp_profile_compile(const struct seccomp_profile *profile, void **bpf, size_t *len, hutch_error_t *err);
/* Print allowed/denied syscalls and argument filters (for `hutch policy show`). */
int seccomp_profile_describe(const struct seccomp_profile *profile, bool effective, FILE *out, hutch_error_t *err);
/* The same as members of a cJSON object. */
struct cJSON;
int seccomp_profile_describe_json(const struct seccomp_profile *profile, bool effective, struct cJSON *obj,
                                  hutch_error_t *err);

/* Install a compiled program on the calling thread (no_new_privs must be set). */
int seccomp_install(const void *bpf, size_t len, hutch_error_t *err);
/* Structural check of a program read back from the cache: size, opcodes,
 * jumps inside the program, a return at the end.  The kernel checks again. */
bool seccomp_program_valid(const void *bpf, size_t len);

/* One syscall as a process would make it: the native number, its arguments
 * (those a profile cannot judge, pointers, as 0). */
struct seccomp_call {
  const char *name; /* for messages */
  int nr;
  uint64_t args[6];
};
struct seccomp_data;
/* What a valid program (seccomp_program_valid) returns for `d`, run in user
 * space as the kernel would; SECCOMP_RET_KILL_PROCESS for a malformed one. */
uint32_t seccomp_emulate(const void *bpf, size_t len, const struct seccomp_data *d);
/* The same on a program seccomp_program_valid has accepted (no check). */
uint32_t seccomp_emulate_valid(const void *bpf, size_t len, const struct seccomp_data *d);
/* The index of the first call the program does not ALLOW on the native
 * architecture (an errno, a kill, a trap, even a log), -1 when it allows all. */
ssize_t seccomp_first_refused(const void *bpf, size_t len, const struct seccomp_call *calls, size_t n);

/* ---- the prefix (seccomp_prefix.c) ---- */

/* Native syscall numbers below this are answered by the prefix where they can be. */
#define SECCOMP_PREFIX_NRS 1024
/* The prefix's longest form; longer ones are not made. */
#define SECCOMP_PREFIX_MAX 255
/* What the prefix does with a number. */
enum seccomp_nr_class {
  SECCOMP_NR_REST,    /* libseccomp's program judges it */
  SECCOMP_NR_ALLOW,   /* allowed whatever the arguments: no rule refuses it */
  SECCOMP_NR_DEFAULT, /* the default action: no rule names it, or only to say the same */
};
/* Each native number's class under the profile. */
void seccomp_split_profile(const struct seccomp_profile *profile, uint8_t cls[SECCOMP_PREFIX_NRS]);
/* The prefix for the classes, for calls on `arch` (the native audit
 * architecture), into out; its length, 0 when no prefix is worth it (or it
 * would not fit).  It falls through, past its end, to the rest.  out holds
 * SECCOMP_PREFIX_MAX instructions. */
struct sock_filter;
size_t seccomp_prefix_build(const uint8_t cls[SECCOMP_PREFIX_NRS], uint32_t arch, uint32_t default_ret,
                            struct sock_filter *out);
/* ---- checks on sample calls (seccomp_check.c) ---- */

/* Whether two programs answer alike every number on every architecture,
 * and the numbers the profile's rules name with arguments built from its
 * comparisons. */
bool seccomp_programs_agree(const struct seccomp_profile *profile, const void *a, size_t alen, const void *b,
                            size_t blen);
/* 0 when a program gives, on the native architecture, what the profile's
 * rules say for the same sample calls; -1 with err naming the first call
 * it answers otherwise. */
int seccomp_program_means(const struct seccomp_profile *profile, const void *bpf, size_t len, hutch_error_t *err);

/* ---- what the cache key and `policy show` need to know about the host ---- */

/* Name of the native architecture as libseccomp spells it ("x86_64"). */
const char *seccomp_native_arch(void);
/* The same as an OCI name ("SCMP_ARCH_X86_64"), NULL if it has none. */
const char *seccomp_native_oci_arch(void);
/* Whether the profile's "architectures" include the native one (or are empty). */
bool seccomp_profile_covers_native(const struct seccomp_profile *profile);
/* "2.5.4": the libseccomp the program runs with. */
const char *seccomp_library_version(void);

/* How a syscall name resolves on the native architecture. */
enum seccomp_name_kind {
  SECCOMP_NAME_NATIVE,  /* a syscall here; *nr is its number */
  SECCOMP_NAME_ABSENT,  /* a syscall on other architectures only */
  SECCOMP_NAME_UNKNOWN, /* newer than libseccomp and absent from hutch's table for this architecture */
  SECCOMP_NAME_INVALID, /* not a Linux syscall at all */
};
enum seccomp_name_kind seccomp_resolve_name(const char *name, int *nr);

/* Counters for tests: profiles parsed and programs compiled by this process. */
struct seccomp_stats {
  unsigned long parses;
  unsigned long compiles;
};
extern struct seccomp_stats seccomp_stats;

/* Shared by parse and describe. */
const char *seccomp_action_name(const struct seccomp_action *action);
/* The same action (kind and errno). */
bool seccomp_action_same(const struct seccomp_action *a, const struct seccomp_action *b);
const char *seccomp_op_name(enum seccomp_op op);
const char *seccomp_errno_name(int errnum);

#endif
