/* SPDX-License-Identifier: Apache-2.0 */
/* Compiling a parsed profile to classic BPF with libseccomp, and installing
 * a compiled program.
 *
 * libseccomp keeps one action per syscall and lets an unconditional rule
 * swallow conditional ones, so "allow ioctl, except TIOCSTI" cannot be said
 * in one filter.  The profile is therefore compiled twice: the refusing
 * rules over a default of ALLOW, then the allowing rules over the profile's
 * default.  The first program runs first, and every place where it would
 * return ALLOW becomes a jump to the start of the second: refusals take
 * precedence, and the kernel still sees a single program. */
#include "config.h"

#include <seccomp.h>

#include "seccomp_policy.h"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#include "util.h"

static uint32_t lib_action(const struct seccomp_action *a) {
  switch (a->kind) {
  case SECCOMP_ACT_ALLOW:
    return SCMP_ACT_ALLOW;
  case SECCOMP_ACT_ERRNO:
    return SCMP_ACT_ERRNO((uint32_t)a->errnum);
  case SECCOMP_ACT_KILL_THREAD:
    return SCMP_ACT_KILL_THREAD;
  case SECCOMP_ACT_KILL_PROCESS:
    return SCMP_ACT_KILL_PROCESS;
  case SECCOMP_ACT_TRAP:
    return SCMP_ACT_TRAP;
  case SECCOMP_ACT_LOG:
    return SCMP_ACT_LOG;
  }
  return SCMP_ACT_KILL_PROCESS;
}

static enum scmp_compare lib_op(enum seccomp_op op) {
  switch (op) {
  case SECCOMP_OP_NE:
    return SCMP_CMP_NE;
  case SECCOMP_OP_LT:
    return SCMP_CMP_LT;
  case SECCOMP_OP_LE:
    return SCMP_CMP_LE;
  case SECCOMP_OP_EQ:
    return SCMP_CMP_EQ;
  case SECCOMP_OP_GE:
    return SCMP_CMP_GE;
  case SECCOMP_OP_GT:
    return SCMP_CMP_GT;
  case SECCOMP_OP_MASKED_EQ:
    return SCMP_CMP_MASKED_EQ;
  }
  return _SCMP_CMP_MIN;
}

static void release_ctx(scmp_filter_ctx *ctx) {
  if (*ctx != NULL)
    seccomp_release(*ctx);
}

static scmp_filter_ctx new_ctx(uint32_t def, uint32_t badarch, hutch_error_t *err) {
  scmp_filter_ctx ctx = seccomp_init(def);
  if (ctx == NULL) {
    hutch_error_set(err, EINVAL, "seccomp: libseccomp refused the default action");
    return NULL;
  }
  int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, badarch);
  if (rc < 0) {
    seccomp_release(ctx);
    hutch_error_set(err, -rc, "seccomp: libseccomp: set the action for foreign architectures");
    return NULL;
  }
  /* A binary search over syscall numbers instead of a linear scan; older
   * libseccomp releases lack it, which only costs speed. */
  (void)seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
  return ctx;
}

/* Adds the rules of one class (allowing or refusing) to ctx, but for the
 * numbers of class `skip` in cls (when given): the prefix answers them. */
static int add_rules(scmp_filter_ctx ctx, const struct seccomp_profile *p, bool allows, uint32_t ctx_default,
                     const uint8_t *cls, uint8_t skip, hutch_error_t *err) {
  for (size_t i = 0; i < p->n_rules; i++) {
    const struct seccomp_rule *r = &p->rules[i];
    if ((r->action.kind == SECCOMP_ACT_ALLOW) != allows)
      continue;
    uint32_t act = lib_action(&r->action);
    if (act == ctx_default)
      continue; /* says what the default says (libseccomp refuses such rules) */
    struct scmp_arg_cmp cmps[6];
    for (size_t a = 0; a < r->n_args; a++) {
      cmps[a] = (struct scmp_arg_cmp){
          .arg = r->args[a].index,
          .op = lib_op(r->args[a].op),
          .datum_a = r->args[a].value,
          .datum_b = r->args[a].value_two,
      };
    }
    for (size_t k = 0; k < r->n_names; k++) {
      int nr;
      if (seccomp_resolve_name(r->names[k], &nr) != SECCOMP_NAME_NATIVE)
        continue; /* not a syscall here, or unknown: validated as harmless at parse time */
      if (cls && nr >= 0 && nr < SECCOMP_PREFIX_NRS && cls[nr] == skip)
        continue;
      int rc = seccomp_rule_add_exact_array(ctx, act, nr, (unsigned)r->n_args, cmps);
      if (rc == -EEXIST)
        continue;
      if (rc < 0)
        return hutch_error_set(err, -rc, "seccomp: %s: syscalls[%zu]: libseccomp refused the rule for %s", p->source,
                               r->index, r->names[k]);
    }
  }
  return 0;
}

static int export_program(scmp_filter_ctx ctx, struct sock_filter **out, size_t *n, hutch_error_t *err) {
  /* libseccomp 2.5 exports to a file descriptor only. */
  _cleanup_close_ int fd = memfd_create("hutch-seccomp", MFD_CLOEXEC);
  if (fd < 0)
    return hutch_error_sys(err, "seccomp: memfd_create for the compiled program");
  int rc = seccomp_export_bpf(ctx, fd);
  if (rc < 0)
    return hutch_error_set(err, -rc, "seccomp: libseccomp: export the program");
  struct stat st;
  if (fstat(fd, &st) < 0)
    return hutch_error_sys(err, "seccomp: stat the compiled program");
  size_t len = (size_t)st.st_size;
  if (len == 0 || len % sizeof(struct sock_filter) != 0)
    return hutch_error_set(err, EINVAL, "seccomp: libseccomp produced a program of %zu bytes", len);
  _cleanup_free_ struct sock_filter *prog = xmalloc(len);
  if (pread(fd, prog, len, 0) != (ssize_t)len)
    return hutch_error_sys(err, "seccomp: read back the compiled program");
  *n = len / sizeof(struct sock_filter);
  *out = steal_pointer(&prog);
  return 0;
}

/* The profile as one program from libseccomp: the refusing rules, then
 * the allowing ones (see the top).  With cls, the numbers the prefix
 * answers are left out. */
static int compile_rules(const struct seccomp_profile *p, const uint8_t *cls, struct sock_filter **out, size_t *n_out,
                         hutch_error_t *err) {
  bool any_refusal = false;
  for (size_t i = 0; i < p->n_rules; i++)
    any_refusal = any_refusal || p->rules[i].action.kind != SECCOMP_ACT_ALLOW;

  /* Only the native ABI is filtered: calls through any other ABI (i386 or
   * x32 on x86-64) kill the process, whatever the profile says about them. */
  uint32_t def = lib_action(&p->default_action);
  _cleanup_(release_ctx) scmp_filter_ctx allow = new_ctx(def, SCMP_ACT_KILL_PROCESS, err);
  if (allow == NULL || add_rules(allow, p, true, def, cls, SECCOMP_NR_ALLOW, err) < 0)
    return -1;
  _cleanup_free_ struct sock_filter *second = NULL;
  size_t n_second;
  if (export_program(allow, &second, &n_second, err) < 0)
    return -1;

  _cleanup_free_ struct sock_filter *first = NULL;
  size_t n_first = 0;
  if (any_refusal) {
    _cleanup_(release_ctx) scmp_filter_ctx refuse = new_ctx(SCMP_ACT_ALLOW, SCMP_ACT_ALLOW, err);
    if (refuse == NULL || add_rules(refuse, p, false, SCMP_ACT_ALLOW, cls, SECCOMP_NR_DEFAULT, err) < 0)
      return -1;
    if (export_program(refuse, &first, &n_first, err) < 0)
      return -1;
    for (size_t i = 0; i < n_first; i++) {
      struct sock_filter *insn = &first[i];
      if (BPF_CLASS(insn->code) != BPF_RET)
        continue;
      if (insn->code != (BPF_RET | BPF_K))
        return hutch_error_set(err, EINVAL, "seccomp: unexpected return instruction 0x%x from libseccomp", insn->code);
      if (insn->k == SECCOMP_RET_ALLOW)
        *insn = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JA, (uint32_t)(n_first - i - 1), 0, 0);
    }
  }
  size_t n = n_first + n_second;
  if (n > SECCOMP_MAX_INSNS)
    return hutch_error_set(err, E2BIG, "seccomp: %s compiles to %zu instructions, more than the kernel's %d", p->source,
                           n, SECCOMP_MAX_INSNS);
  struct sock_filter *prog = xmalloc(n * sizeof(*prog));
  if (n_first)
    memcpy(prog, first, n_first * sizeof(*prog));
  memcpy(prog + n_first, second, n_second * sizeof(*prog));
  *out = prog;
  *n_out = n;
  return 0;
}

/* Architectures whose every syscall has a number of its own. */
static bool no_multiplexer(void) {
  uint32_t native = seccomp_arch_native();
  return native == SCMP_ARCH_X86_64 || native == SCMP_ARCH_AARCH64
#ifdef SCMP_ARCH_RISCV64
         || native == SCMP_ARCH_RISCV64
#endif
      ;
}

int seccomp_profile_compile(const struct seccomp_profile *p, void **bpf, size_t *len, hutch_error_t *err) {
  seccomp_stats.compiles++;
  if (!seccomp_profile_covers_native(p)) {
    const char *native_oci = seccomp_native_oci_arch();
    hutch_error_set(err, 0, "seccomp: %s does not list this host's architecture (%s)", p->source,
                    native_oci ? native_oci : seccomp_native_arch());
    return hutch_error_hint(err, "add it to \"architectures\" once the profile has been checked on it");
  }
  _cleanup_free_ struct sock_filter *whole = NULL;
  size_t n_whole;
  if (compile_rules(p, NULL, &whole, &n_whole, err) < 0)
    return -1;
  /* libseccomp's program is run on sample calls against the rules
   * themselves: a miscompiled profile is refused, not installed. */
  if (seccomp_program_means(p, whole, n_whole * sizeof(*whole), err) < 0)
    return -1;

  /* The prefix, then libseccomp's program without what the prefix answers;
   * used only when shorter and when it answers as the whole one does.
   * Only where no syscall multiplexes others: on i386, s390 and ppc
   * libseccomp turns a rule on socket into one on socketcall too, which
   * the split by name (seccomp_split_profile) would not see. */
  uint8_t cls[SECCOMP_PREFIX_NRS];
  struct sock_filter prefix[SECCOMP_PREFIX_MAX];
  size_t n_prefix = 0;
  if (no_multiplexer()) {
    seccomp_split_profile(p, cls);
    n_prefix = seccomp_prefix_build(cls, seccomp_arch_native(), lib_action(&p->default_action), prefix);
  }
  _cleanup_free_ struct sock_filter *rest = NULL;
  size_t n_rest = 0;
  hutch_error_t rest_err = NULL;
  if (n_prefix > 0 && compile_rules(p, cls, &rest, &n_rest, &rest_err) < 0) {
    /* Not expected either; the whole program is as strict. */
    hutch_warn("seccomp: %s: the shortened program: %s; using libseccomp's whole one", p->source, rest_err->msg);
    hutch_error_free(&rest_err);
    n_prefix = 0;
  }
  if (n_prefix > 0 && n_prefix + n_rest < n_whole) {
    size_t n = n_prefix + n_rest;
    _cleanup_free_ struct sock_filter *both = xmalloc(n * sizeof(*both));
    memcpy(both, prefix, n_prefix * sizeof(*both));
    memcpy(both + n_prefix, rest, n_rest * sizeof(*both));
    if (seccomp_programs_agree(p, whole, n_whole * sizeof(*whole), both, n * sizeof(*both))) {
      *bpf = steal_pointer(&both);
      *len = n * sizeof(struct sock_filter);
      return 0;
    }
    /* Not expected: a fault of the prefix's, which must not change what a
     * sandbox may do.  libseccomp's whole program is as strict, and longer. */
    hutch_warn("seccomp: %s: the shortened program does not answer as libseccomp's does; using libseccomp's",
               p->source);
  }
  *len = n_whole * sizeof(*whole);
  *bpf = steal_pointer(&whole);
  return 0;
}

bool seccomp_program_valid(const void *bpf, size_t len) {
  if (bpf == NULL || len == 0 || len % sizeof(struct sock_filter) != 0 ||
      len / sizeof(struct sock_filter) > SECCOMP_MAX_INSNS)
    return false;
  const struct sock_filter *f = bpf;
  size_t n = len / sizeof(*f);
  for (size_t i = 0; i < n; i++) {
    switch (BPF_CLASS(f[i].code)) {
    case BPF_LD:
    case BPF_LDX:
    case BPF_ST:
    case BPF_STX:
    case BPF_ALU:
    case BPF_RET:
    case BPF_MISC:
      break;
    case BPF_JMP:
      if (BPF_OP(f[i].code) == BPF_JA) {
        if (f[i].k >= n - i - 1)
          return false;
      } else if ((size_t)f[i].jt >= n - i - 1 || (size_t)f[i].jf >= n - i - 1) {
        return false;
      }
      break;
    default:
      return false;
    }
  }
  return BPF_CLASS(f[n - 1].code) == BPF_RET;
}

int seccomp_install(const void *bpf, size_t len, hutch_error_t *err) {
  if (!seccomp_program_valid(bpf, len))
    return hutch_error_set(err, EINVAL, "seccomp: install the filter: malformed program of %zu bytes", len);
  struct sock_fprog prog = {
      .len = (unsigned short)(len / sizeof(struct sock_filter)),
      .filter = (struct sock_filter *)bpf,
  };
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0) {
    hutch_error_sys(err, "seccomp: install the filter (prctl PR_SET_SECCOMP)");
    if (errno == EACCES)
      return hutch_error_hint(err, "set no_new_privs first (prctl PR_SET_NO_NEW_PRIVS)");
    if (errno == EINVAL)
      return hutch_error_hint(err, "the kernel refused the program: it needs CONFIG_SECCOMP_FILTER; "
                                   "a stale cached program is dropped by emptying $HUTCH_CACHE_DIR/seccomp");
    return -1;
  }
  return 0;
}
