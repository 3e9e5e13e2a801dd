/* SPDX-License-Identifier: Apache-2.0 */
/* OCI `linux.seccomp` profiles: parsing and validation (the description
 * of a parsed profile, for `hutch policy show`, is seccomp_describe.c).
 *
 * Nothing here touches the kernel: libseccomp is only asked for syscall
 * names and numbers.  Validation is strict on purpose: a profile that is not
 * fully understood must never be half-applied. */
#include "config.h"

#include <seccomp.h>

#include "seccomp_policy.h"

#include <cJSON.h>
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "util.h"

struct seccomp_stats seccomp_stats;

/* ---- names ----------------------------------------------------------- */

/* Syscalls that libseccomp releases older than its main branch (v2.6.x,
 * tables of Linux 7.1) may not know, with their numbers on the two
 * architectures hutch ships a profile for; -1: not a syscall there.  Since
 * Linux 5.1 new syscalls share one number on every architecture.  The
 * compiled programs in the cache depend on this table: a change to it
 * bumps CACHE_FORMAT in policy.c. */
static const struct newer_syscall {
  const char *name;
  int x86_64;
  int aarch64;
} newer_syscalls[] = {
    {"atomic_barrier", -1, -1},
    {"atomic_cmpxchg_32", -1, -1},
    {"cachestat", 451, 451},
    {"close_range", 436, 436},
    {"epoll_pwait2", 441, 441},
    {"fchmodat2", 452, 452},
    {"file_getattr", 468, 468},
    {"file_setattr", 469, 469},
    {"futex_requeue", 456, 456},
    {"futex_wait", 455, 455},
    {"futex_waitv", 449, 449},
    {"futex_wake", 454, 454},
    {"getpagesize", -1, -1},
    {"getxattrat", 464, 464},
    {"landlock_add_rule", 445, 445},
    {"landlock_create_ruleset", 444, 444},
    {"landlock_restrict_self", 446, 446},
    {"listmount", 458, 458},
    {"listns", 470, 470},
    {"listxattrat", 465, 465},
    {"lsm_get_self_attr", 459, 459},
    {"lsm_list_modules", 461, 461},
    {"lsm_set_self_attr", 460, 460},
    {"map_shadow_stack", 453, 453},
    {"memfd_secret", 447, 447},
    {"mount_setattr", 442, 442},
    {"mseal", 462, 462},
    {"open_tree_attr", 467, 467},
    {"process_madvise", 440, 440},
    {"process_mrelease", 448, 448},
    {"quotactl_fd", 443, 443},
    {"removexattrat", 466, 466},
    {"riscv_hwprobe", -1, -1},
    {"rseq_slice_yield", 471, 471},
    {"set_mempolicy_home_node", 450, 450},
    {"setxattrat", 463, 463},
    {"statmount", 457, 457},
    {"uprobe", 336, -1},
    {"uretprobe", 335, -1},
};

static const struct newer_syscall *newer_lookup(const char *name) {
  for (size_t i = 0; i < ARRAY_SIZE(newer_syscalls); i++)
    if (strcmp(newer_syscalls[i].name, name) == 0)
      return &newer_syscalls[i];
  return NULL;
}

enum seccomp_name_kind seccomp_resolve_name(const char *name, int *nr) {
  int n = seccomp_syscall_resolve_name_arch(SCMP_ARCH_NATIVE, name);
  if (n >= 0) {
    *nr = n;
    return SECCOMP_NAME_NATIVE;
  }
  const struct newer_syscall *ns = newer_lookup(name);
  if (ns != NULL) {
    uint32_t native = seccomp_arch_native();
    int tn = native == SCMP_ARCH_X86_64 ? ns->x86_64 : native == SCMP_ARCH_AARCH64 ? ns->aarch64 : -2;
    if (tn >= 0) {
      *nr = tn;
      return SECCOMP_NAME_NATIVE;
    }
    if (tn == -1)
      return SECCOMP_NAME_ABSENT;
  }
  if (n != __NR_SCMP_ERROR) /* a pseudo number: a syscall of another architecture */
    return SECCOMP_NAME_ABSENT;
  return ns != NULL ? SECCOMP_NAME_UNKNOWN : SECCOMP_NAME_INVALID;
}

/* ---- architectures --------------------------------------------------- */

static const struct {
  const char *oci;
  const char *lib; /* seccomp_arch_resolve_name() spelling */
} arch_names[] = {
    {"SCMP_ARCH_X86", "x86"},
    {"SCMP_ARCH_X86_64", "x86_64"},
    {"SCMP_ARCH_X32", "x32"},
    {"SCMP_ARCH_ARM", "arm"},
    {"SCMP_ARCH_AARCH64", "aarch64"},
    {"SCMP_ARCH_LOONGARCH64", "loongarch64"},
    {"SCMP_ARCH_M68K", "m68k"},
    {"SCMP_ARCH_MIPS", "mips"},
    {"SCMP_ARCH_MIPS64", "mips64"},
    {"SCMP_ARCH_MIPS64N32", "mips64n32"},
    {"SCMP_ARCH_MIPSEL", "mipsel"},
    {"SCMP_ARCH_MIPSEL64", "mipsel64"},
    {"SCMP_ARCH_MIPSEL64N32", "mipsel64n32"},
    {"SCMP_ARCH_PPC", "ppc"},
    {"SCMP_ARCH_PPC64", "ppc64"},
    {"SCMP_ARCH_PPC64LE", "ppc64le"},
    {"SCMP_ARCH_S390", "s390"},
    {"SCMP_ARCH_S390X", "s390x"},
    {"SCMP_ARCH_PARISC", "parisc"},
    {"SCMP_ARCH_PARISC64", "parisc64"},
    {"SCMP_ARCH_RISCV64", "riscv64"},
    {"SCMP_ARCH_SH", "sh"},
    {"SCMP_ARCH_SHEB", "sheb"},
};

const char *seccomp_native_arch(void) {
  uint32_t native = seccomp_arch_native();
  for (size_t i = 0; i < ARRAY_SIZE(arch_names); i++)
    if (seccomp_arch_resolve_name(arch_names[i].lib) == native)
      return arch_names[i].lib;
  return "unknown";
}

const char *seccomp_native_oci_arch(void) {
  uint32_t native = seccomp_arch_native();
  for (size_t i = 0; i < ARRAY_SIZE(arch_names); i++)
    if (seccomp_arch_resolve_name(arch_names[i].lib) == native)
      return arch_names[i].oci;
  return NULL;
}

const char *seccomp_library_version(void) {
  static char buf[48];
  if (buf[0] == '\0') {
    const struct scmp_version *v = seccomp_version();
    snprintf(buf, sizeof(buf), "%u.%u.%u", v->major, v->minor, v->micro);
  }
  return buf;
}

/* ---- actions, ops, errno names ----------------------------------------- */

static const struct {
  const char *name;
  enum seccomp_act kind;
} action_names[] = {
    {"SCMP_ACT_ALLOW", SECCOMP_ACT_ALLOW},
    {"SCMP_ACT_ERRNO", SECCOMP_ACT_ERRNO},
    {"SCMP_ACT_KILL", SECCOMP_ACT_KILL_THREAD},
    {"SCMP_ACT_KILL_THREAD", SECCOMP_ACT_KILL_THREAD},
    {"SCMP_ACT_KILL_PROCESS", SECCOMP_ACT_KILL_PROCESS},
    {"SCMP_ACT_TRAP", SECCOMP_ACT_TRAP},
    {"SCMP_ACT_LOG", SECCOMP_ACT_LOG},
};

const char *seccomp_action_name(const struct seccomp_action *action) {
  switch (action->kind) {
  case SECCOMP_ACT_ALLOW:
    return "SCMP_ACT_ALLOW";
  case SECCOMP_ACT_ERRNO:
    return "SCMP_ACT_ERRNO";
  case SECCOMP_ACT_KILL_THREAD:
    return "SCMP_ACT_KILL_THREAD";
  case SECCOMP_ACT_KILL_PROCESS:
    return "SCMP_ACT_KILL_PROCESS";
  case SECCOMP_ACT_TRAP:
    return "SCMP_ACT_TRAP";
  case SECCOMP_ACT_LOG:
    return "SCMP_ACT_LOG";
  }
  return "?";
}

static const char *op_names[] = {
    [SECCOMP_OP_NE] = "SCMP_CMP_NE",
    [SECCOMP_OP_LT] = "SCMP_CMP_LT",
    [SECCOMP_OP_LE] = "SCMP_CMP_LE",
    [SECCOMP_OP_EQ] = "SCMP_CMP_EQ",
    [SECCOMP_OP_GE] = "SCMP_CMP_GE",
    [SECCOMP_OP_GT] = "SCMP_CMP_GT",
    [SECCOMP_OP_MASKED_EQ] = "SCMP_CMP_MASKED_EQ",
};

const char *seccomp_op_name(enum seccomp_op op) {
  return (size_t)op < ARRAY_SIZE(op_names) ? op_names[op] : "?";
}

const char *seccomp_errno_name(int errnum) {
  const char *name = strerrorname_np(errnum);
  return name ? name : "errno";
}

/* ---- parsing ---------------------------------------------------------- */

void seccomp_profile_free(struct seccomp_profile *p) {
  if (p == NULL)
    return;
  for (size_t i = 0; i < p->n_rules; i++) {
    struct seccomp_rule *r = &p->rules[i];
    for (size_t j = 0; j < r->n_names; j++)
      free(r->names[j]);
    free(r->names);
    free(r->comment);
  }
  free(p->rules);
  for (size_t i = 0; i < p->n_arches; i++)
    free(p->arches[i]);
  free(p->arches);
  free(p->comment);
  free(p->source);
  free(p);
}

static void free_profilep(struct seccomp_profile **p) {
  seccomp_profile_free(*p);
}
static void free_jsonp(cJSON **j) {
  cJSON_Delete(*j);
}

/* Every member of an object must be one of `fields`, at most once: a typo
 * in a field name would otherwise silently drop a restriction. */
static int check_members(const cJSON *obj, const char *const *fields, const char *source, const char *where,
                         hutch_error_t *err) {
  const cJSON *m;
  cJSON_ArrayForEach(m, obj) {
    bool known = false;
    for (size_t i = 0; fields[i]; i++)
      if (strcmp(m->string, fields[i]) == 0)
        known = true;
    if (!known) {
      hutch_error_set(err, 0, "%s: %sunknown field \"%s\"", source, where, m->string);
      if (strcmp(m->string, "includes") == 0 || strcmp(m->string, "excludes") == 0 || strcmp(m->string, "archMap") == 0)
        hutch_error_hint(err,
                         "\"%s\" belongs to Docker's profile generator, not to the OCI format: "
                         "resolve it for your case and remove it",
                         m->string);
      else if (strcmp(m->string, "flags") == 0 || strcmp(m->string, "listenerPath") == 0 ||
               strcmp(m->string, "listenerMetadata") == 0)
        hutch_error_hint(err, "hutch does not support seccomp filter flags or user notification");
      return -1;
    }
    for (const cJSON *o = obj->child; o != m; o = o->next)
      if (strcmp(o->string, m->string) == 0)
        return hutch_error_set(err, 0, "%s: %sfield \"%s\" given twice", source, where, m->string);
  }
  return 0;
}

/* JSON numbers are doubles: only integers that a double holds exactly are
 * accepted, so no value is ever rounded into a different one. */
#define MAX_EXACT_INTEGER 9007199254740992.0 /* 2^53 */

static int get_u64(const cJSON *item, const char *source, const char *where, uint64_t *out, hutch_error_t *err) {
  if (!cJSON_IsNumber(item))
    return hutch_error_set(err, 0, "%s: %s: expected a number", source, where);
  double d = item->valuedouble;
  if (d < 0 || d > MAX_EXACT_INTEGER || d != (double)(uint64_t)d)
    return hutch_error_set(err, 0, "%s: %s: %.17g is not an integer from 0 to 2^53", source, where, d);
  *out = (uint64_t)d;
  return 0;
}

static int parse_errno(const cJSON *item, const char *source, const char *where, int *out, hutch_error_t *err) {
  uint64_t v;
  if (get_u64(item, source, where, &v, err) < 0)
    return -1;
  if (v < 1 || v > 4095)
    return hutch_error_set(err, 0, "%s: %s: errno %" PRIu64 " is not between 1 and 4095", source, where, v);
  *out = (int)v;
  return 0;
}

/* action + optional errno; `errno_item` may be NULL. */
static int parse_action(const cJSON *item, const cJSON *errno_item, const char *source, const char *where,
                        const char *errno_field, struct seccomp_action *out, hutch_error_t *err) {
  if (!cJSON_IsString(item))
    return hutch_error_set(err, 0, "%s: %s: expected a string", source, where);
  const char *name = item->valuestring;
  bool found = false;
  for (size_t i = 0; i < ARRAY_SIZE(action_names); i++) {
    if (strcmp(action_names[i].name, name) == 0) {
      out->kind = action_names[i].kind;
      found = true;
    }
  }
  if (!found) {
    hutch_error_set(err, 0, "%s: %s: unsupported action \"%s\"", source, where, name);
    if (strcmp(name, "SCMP_ACT_TRACE") == 0 || strcmp(name, "SCMP_ACT_NOTIFY") == 0)
      return hutch_error_hint(err, "a sandbox has no tracer or notification listener: use SCMP_ACT_ERRNO");
    return hutch_error_hint(err, "use SCMP_ACT_ALLOW, SCMP_ACT_ERRNO, SCMP_ACT_KILL_PROCESS, SCMP_ACT_KILL_THREAD "
                                 "(SCMP_ACT_KILL), SCMP_ACT_TRAP or SCMP_ACT_LOG");
  }
  out->errnum = 0;
  if (out->kind == SECCOMP_ACT_ERRNO) {
    out->errnum = 1; /* EPERM, as the runtime spec says */
    if (errno_item != NULL && parse_errno(errno_item, source, errno_field, &out->errnum, err) < 0)
      return -1;
  } else if (errno_item != NULL) {
    return hutch_error_set(err, 0, "%s: %s: %s returns no errno", source, errno_field, name);
  }
  return 0;
}

static int parse_arg(const cJSON *item, const char *source, const char *where, struct seccomp_arg *out,
                     hutch_error_t *err) {
  static const char *const fields[] = {"index", "value", "valueTwo", "op", NULL};
  if (!cJSON_IsObject(item))
    return hutch_error_set(err, 0, "%s: %s: expected an object", source, where);
  _cleanup_free_ char *prefix = xasprintf("%s: ", where);
  if (check_members(item, fields, source, prefix, err) < 0)
    return -1;
  const cJSON *index = cJSON_GetObjectItemCaseSensitive(item, "index");
  const cJSON *value = cJSON_GetObjectItemCaseSensitive(item, "value");
  const cJSON *value_two = cJSON_GetObjectItemCaseSensitive(item, "valueTwo");
  const cJSON *op = cJSON_GetObjectItemCaseSensitive(item, "op");
  if (index == NULL || value == NULL || op == NULL)
    return hutch_error_set(err, 0, "%s: %s: \"index\", \"value\" and \"op\" are required", source, where);
  _cleanup_free_ char *w_index = xasprintf("%s.index", where);
  _cleanup_free_ char *w_value = xasprintf("%s.value", where);
  _cleanup_free_ char *w_two = xasprintf("%s.valueTwo", where);
  uint64_t idx;
  if (get_u64(index, source, w_index, &idx, err) < 0)
    return -1;
  if (idx > 5)
    return hutch_error_set(err, 0, "%s: %s: argument index %" PRIu64 " is not between 0 and 5", source, w_index, idx);
  out->index = (unsigned)idx;
  if (get_u64(value, source, w_value, &out->value, err) < 0)
    return -1;
  out->value_two = 0;
  if (value_two != NULL && get_u64(value_two, source, w_two, &out->value_two, err) < 0)
    return -1;
  if (!cJSON_IsString(op))
    return hutch_error_set(err, 0, "%s: %s.op: expected a string", source, where);
  bool found = false;
  for (size_t i = 0; i < ARRAY_SIZE(op_names); i++) {
    if (strcmp(op_names[i], op->valuestring) == 0) {
      out->op = (enum seccomp_op)i;
      found = true;
    }
  }
  if (!found) {
    hutch_error_set(err, 0, "%s: %s.op: unknown comparison \"%s\"", source, where, op->valuestring);
    return hutch_error_hint(err, "use SCMP_CMP_NE, SCMP_CMP_LT, SCMP_CMP_LE, SCMP_CMP_EQ, SCMP_CMP_GE, "
                                 "SCMP_CMP_GT or SCMP_CMP_MASKED_EQ");
  }
  if (out->op != SECCOMP_OP_MASKED_EQ && value_two != NULL && out->value_two != 0)
    return hutch_error_set(err, 0, "%s: %s: only SCMP_CMP_MASKED_EQ uses valueTwo", source, w_two);
  if (out->op == SECCOMP_OP_MASKED_EQ && (out->value_two & ~out->value) != 0)
    return hutch_error_set(
        err, 0, "%s: %s: (argument & 0x%" PRIx64 ") can never equal 0x%" PRIx64 ": the rule would never match", source,
        where, out->value, out->value_two);
  return 0;
}

static int parse_rule(const cJSON *item, size_t index, bool default_allows, const char *source,
                      struct seccomp_rule *out, hutch_error_t *err) {
  static const char *const fields[] = {"names", "action", "errnoRet", "args", "comment", NULL};
  _cleanup_free_ char *where = xasprintf("syscalls[%zu]", index);
  out->index = index;
  if (!cJSON_IsObject(item))
    return hutch_error_set(err, 0, "%s: %s: expected an object", source, where);
  _cleanup_free_ char *prefix = xasprintf("%s: ", where);
  if (check_members(item, fields, source, prefix, err) < 0)
    return -1;

  const cJSON *comment = cJSON_GetObjectItemCaseSensitive(item, "comment");
  if (comment != NULL) {
    if (!cJSON_IsString(comment))
      return hutch_error_set(err, 0, "%s: %s.comment: expected a string", source, where);
    out->comment = xstrdup(comment->valuestring);
  }

  const cJSON *action = cJSON_GetObjectItemCaseSensitive(item, "action");
  if (action == NULL)
    return hutch_error_set(err, 0, "%s: %s: \"action\" is required", source, where);
  _cleanup_free_ char *w_action = xasprintf("%s.action", where);
  _cleanup_free_ char *w_errno = xasprintf("%s.errnoRet", where);
  if (parse_action(action, cJSON_GetObjectItemCaseSensitive(item, "errnoRet"), source, w_action, w_errno, &out->action,
                   err) < 0)
    return -1;

  const cJSON *names = cJSON_GetObjectItemCaseSensitive(item, "names");
  if (names == NULL)
    return hutch_error_set(err, 0, "%s: %s: \"names\" is required", source, where);
  if (!cJSON_IsArray(names) || cJSON_GetArraySize(names) == 0)
    return hutch_error_set(err, 0, "%s: %s.names: expected a non-empty array of syscall names", source, where);
  out->names = xcalloc((size_t)cJSON_GetArraySize(names), sizeof(char *));
  const cJSON *n;
  cJSON_ArrayForEach(n, names) {
    size_t i = out->n_names;
    if (!cJSON_IsString(n) || n->valuestring[0] == '\0')
      return hutch_error_set(err, 0, "%s: %s.names[%zu]: expected a syscall name", source, where, i);
    for (size_t j = 0; j < i; j++)
      if (strcmp(out->names[j], n->valuestring) == 0)
        return hutch_error_set(err, 0, "%s: %s.names[%zu]: \"%s\" is listed twice", source, where, i, n->valuestring);
    int nr;
    enum seccomp_name_kind kind = seccomp_resolve_name(n->valuestring, &nr);
    if (kind == SECCOMP_NAME_INVALID) {
      hutch_error_set(err, 0, "%s: %s.names[%zu]: unknown syscall name \"%s\"", source, where, i, n->valuestring);
      return hutch_error_hint(err,
                              "neither libseccomp %s nor hutch knows it as a system call of any "
                              "architecture: check the spelling",
                              seccomp_library_version());
    }
    /* Skipping a name is only safe when the default refuses it anyway. */
    if (kind == SECCOMP_NAME_UNKNOWN && default_allows && out->action.kind != SECCOMP_ACT_ALLOW)
      return hutch_error_set(err, 0,
                             "%s: %s.names[%zu]: \"%s\" is unknown to libseccomp %s on %s, so this rule "
                             "could not refuse it, and the default action would allow it",
                             source, where, i, n->valuestring, seccomp_library_version(), seccomp_native_arch());
    out->names[out->n_names++] = xstrdup(n->valuestring);
  }

  const cJSON *args = cJSON_GetObjectItemCaseSensitive(item, "args");
  if (args != NULL && !cJSON_IsNull(args)) {
    if (!cJSON_IsArray(args))
      return hutch_error_set(err, 0, "%s: %s.args: expected an array", source, where);
    if (cJSON_GetArraySize(args) > 6)
      return hutch_error_set(err, 0, "%s: %s.args: more than 6 comparisons", source, where);
    const cJSON *a;
    cJSON_ArrayForEach(a, args) {
      size_t i = out->n_args;
      _cleanup_free_ char *w_arg = xasprintf("%s.args[%zu]", where, i);
      if (parse_arg(a, source, w_arg, &out->args[i], err) < 0)
        return -1;
      for (size_t j = 0; j < i; j++) {
        if (out->args[j].index == out->args[i].index) {
          hutch_error_set(err, 0, "%s: %s: argument %u is compared twice in one rule", source, w_arg,
                          out->args[i].index);
          return hutch_error_hint(err, "libseccomp cannot AND two comparisons of one argument: write one rule "
                                       "per comparison (rules are OR'd)");
        }
      }
      out->n_args++;
    }
  }
  return 0;
}

bool seccomp_action_same(const struct seccomp_action *a, const struct seccomp_action *b) {
  return a->kind == b->kind && a->errnum == b->errnum;
}

/* libseccomp keeps one action per syscall and silently drops a rule that
 * disagrees with an unconditional one.  Refuse the profiles where that
 * would matter instead of compiling something else than what they say. */
static int check_conflicts(const struct seccomp_profile *p, hutch_error_t *err) {
  for (size_t i = 0; i < p->n_rules; i++) {
    const struct seccomp_rule *r = &p->rules[i];
    bool allows = r->action.kind == SECCOMP_ACT_ALLOW;
    for (size_t k = 0; k < r->n_names; k++) {
      for (size_t j = 0; j < i; j++) {
        const struct seccomp_rule *o = &p->rules[j];
        if ((o->action.kind == SECCOMP_ACT_ALLOW) != allows)
          continue; /* refusals take precedence: no conflict */
        bool named = false;
        for (size_t m = 0; m < o->n_names && !named; m++)
          named = strcmp(o->names[m], r->names[k]) == 0;
        if (!named)
          continue;
        if (!allows && !seccomp_action_same(&o->action, &r->action)) {
          hutch_error_set(err, 0, "%s: syscalls[%zu]: \"%s\" is already refused by syscalls[%zu] with another action",
                          p->source, r->index, r->names[k], o->index);
          return hutch_error_hint(err, "the rules that refuse one syscall must agree on the action and errno");
        }
        /* Two unconditional rules with one action only repeat each other. */
        if ((o->n_args == 0) != (r->n_args == 0)) {
          hutch_error_set(err, 0,
                          "%s: syscalls[%zu]: \"%s\" is %s unconditionally by syscalls[%zu], so the argument "
                          "filter of the other rule would have no effect",
                          p->source, r->index, r->names[k], allows ? "allowed" : "refused",
                          o->n_args == 0 ? o->index : r->index);
          return hutch_error_hint(err, "remove one of the two rules");
        }
      }
    }
  }
  return 0;
}

static int json_error(const char *json, size_t len, const char *end, const char *source, hutch_error_t *err) {
  size_t off = end && end >= json && end <= json + len ? (size_t)(end - json) : 0;
  unsigned line = 1, col = 1;
  for (size_t i = 0; i < off; i++) {
    if (json[i] == '\n') {
      line++;
      col = 1;
    } else {
      col++;
    }
  }
  return hutch_error_set(err, 0, "%s:%u:%u: not valid JSON", source, line, col);
}

int seccomp_profile_parse(const char *json, size_t len, const char *source, struct seccomp_profile **out,
                          hutch_error_t *err) {
  static const char *const fields[] = {"defaultAction", "defaultErrnoRet", "architectures",
                                       "syscalls",      "comment",         NULL};
  seccomp_stats.parses++;
  if (memchr(json, '\0', len) != NULL)
    return hutch_error_set(err, 0, "%s: contains a NUL byte: not a JSON text file", source);
  const char *end = NULL;
  _cleanup_(free_jsonp) cJSON *root = cJSON_ParseWithLengthOpts(json, len, &end, false);
  if (root == NULL)
    return json_error(json, len, end, source, err);
  while (end && end < json + len && strchr(" \t\r\n", *end))
    end++;
  if (end && end < json + len)
    return json_error(json, len, end, source, err);
  if (!cJSON_IsObject(root))
    return hutch_error_set(err, 0, "%s: expected a JSON object (the OCI linux.seccomp section)", source);
  if (check_members(root, fields, source, "", err) < 0)
    return -1;

  _cleanup_(free_profilep) struct seccomp_profile *p = xcalloc(1, sizeof(*p));
  p->source = xstrdup(source);

  const cJSON *comment = cJSON_GetObjectItemCaseSensitive(root, "comment");
  if (comment != NULL) {
    if (!cJSON_IsString(comment))
      return hutch_error_set(err, 0, "%s: comment: expected a string", source);
    p->comment = xstrdup(comment->valuestring);
  }

  const cJSON *def = cJSON_GetObjectItemCaseSensitive(root, "defaultAction");
  if (def == NULL)
    return hutch_error_set(err, 0, "%s: \"defaultAction\" is required", source);
  if (parse_action(def, cJSON_GetObjectItemCaseSensitive(root, "defaultErrnoRet"), source, "defaultAction",
                   "defaultErrnoRet", &p->default_action, err) < 0)
    return -1;

  const cJSON *arches = cJSON_GetObjectItemCaseSensitive(root, "architectures");
  if (arches != NULL && !cJSON_IsNull(arches)) {
    if (!cJSON_IsArray(arches))
      return hutch_error_set(err, 0, "%s: architectures: expected an array", source);
    p->arches = xcalloc((size_t)cJSON_GetArraySize(arches), sizeof(char *));
    const cJSON *a;
    cJSON_ArrayForEach(a, arches) {
      size_t i = p->n_arches;
      bool known = false;
      for (size_t j = 0; cJSON_IsString(a) && j < ARRAY_SIZE(arch_names); j++)
        known = known || strcmp(arch_names[j].oci, a->valuestring) == 0;
      if (!known) {
        hutch_error_set(err, 0, "%s: architectures[%zu]: unknown architecture%s%s", source, i,
                        cJSON_IsString(a) ? " " : "", cJSON_IsString(a) ? a->valuestring : "");
        return hutch_error_hint(err, "use the SCMP_ARCH_* names of the runtime spec, e.g. SCMP_ARCH_X86_64");
      }
      for (size_t j = 0; j < i; j++)
        if (strcmp(p->arches[j], a->valuestring) == 0)
          return hutch_error_set(err, 0, "%s: architectures[%zu]: %s is listed twice", source, i, a->valuestring);
      p->arches[p->n_arches++] = xstrdup(a->valuestring);
    }
  }

  bool default_allows = p->default_action.kind == SECCOMP_ACT_ALLOW || p->default_action.kind == SECCOMP_ACT_LOG;
  const cJSON *syscalls = cJSON_GetObjectItemCaseSensitive(root, "syscalls");
  if (syscalls != NULL && !cJSON_IsNull(syscalls)) {
    if (!cJSON_IsArray(syscalls))
      return hutch_error_set(err, 0, "%s: syscalls: expected an array", source);
    p->rules = xcalloc((size_t)cJSON_GetArraySize(syscalls), sizeof(*p->rules));
    const cJSON *r;
    cJSON_ArrayForEach(r, syscalls) {
      /* counted before parsing so that free() sees a half-filled rule */
      struct seccomp_rule *rule = &p->rules[p->n_rules++];
      if (parse_rule(r, p->n_rules - 1, default_allows, source, rule, err) < 0)
        return -1;
    }
  }
  if (check_conflicts(p, err) < 0)
    return -1;
  *out = steal_pointer(&p);
  return 0;
}
