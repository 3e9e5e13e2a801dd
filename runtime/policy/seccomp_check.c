/* SPDX-License-Identifier: Apache-2.0 */
/* Checks of a compiled program, run in user space on sample calls before
 * the program is used:
 *  - seccomp_program_means: it gives what the profile's rules say, read
 *    from the profile itself (libseccomp releases have compiled argument
 *    comparisons wrongly: a profile of ranged comparisons that libseccomp
 *    2.5.4 turns into a program allowing calls no rule allows is refused
 *    rather than installed);
 *  - seccomp_programs_agree: two programs give the same answers (the prefix
 *    of seccomp_prefix.c against libseccomp's whole program).
 * The samples: every number of the table and a little past it, with no
 * arguments and with all bits set; each rule's numbers with arguments built
 * from that rule (its comparisons all met, then each one missed by one, in
 * the low and in the high word); every named number with each value the
 * rules compare against in every argument.  Linear in the profile's size.
 * Pure: no syscall. */
#include "config.h"

#include <seccomp.h>

#include "seccomp_policy.h"

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

#define MAX_VALUES 96

typedef bool (*sample_fn)(const struct seccomp_data *d, void *ctx);

static void add_value(uint64_t *vals, size_t *n, uint64_t v) {
  for (size_t i = 0; i < *n; i++)
    if (vals[i] == v)
      return;
  if (*n < MAX_VALUES)
    vals[(*n)++] = v;
}

/* A value that satisfies one comparison, to build calls that get past it. */
static uint64_t satisfying(const struct seccomp_arg *a) {
  switch (a->op) {
  case SECCOMP_OP_NE:
  case SECCOMP_OP_GT:
  case SECCOMP_OP_GE:
    return a->value + 1;
  case SECCOMP_OP_LT:
    return a->value - 1;
  case SECCOMP_OP_LE:
  case SECCOMP_OP_EQ:
    return a->value;
  case SECCOMP_OP_MASKED_EQ:
    return a->value_two;
  }
  return 0;
}

/* Runs fn on each sample call on the native architecture, and with
 * `foreign` on others too (and on x32's and out-of-range numbers); false
 * as soon as fn says so. */
static bool each_sample(const struct seccomp_profile *p, bool foreign, sample_fn fn, void *ctx) {
  static const uint32_t arches[] = {0, AUDIT_ARCH_I386, AUDIT_ARCH_X86_64, AUDIT_ARCH_AARCH64, AUDIT_ARCH_ARM};
  static const int far[] = {0x40000000, 0x40000001, 0x400001ff, 0x7fffffff, -1, INT32_MIN};
  const uint32_t native = seccomp_arch_native();
  struct seccomp_data d;
  size_t n_arches = foreign ? ARRAY_SIZE(arches) + 1 : 1;
  size_t n_numbers = SECCOMP_PREFIX_NRS + 64 + (foreign ? ARRAY_SIZE(far) : 0);
  for (size_t ai = 0; ai < n_arches; ai++) {
    for (size_t i = 0; i < n_numbers; i++) {
      memset(&d, 0, sizeof(d));
      d.arch = ai + 1 < n_arches ? arches[ai] : native;
      d.nr = i < SECCOMP_PREFIX_NRS + 64 ? (int)i : far[i - SECCOMP_PREFIX_NRS - 64];
      if (!fn(&d, ctx))
        return false;
      memset(d.args, 0xff, sizeof(d.args));
      d.instruction_pointer = ~0ULL;
      if (!fn(&d, ctx))
        return false;
    }
  }
  uint64_t vals[MAX_VALUES];
  size_t nv = 0;
  add_value(vals, &nv, 0);
  add_value(vals, &nv, ~0ULL);
  size_t n_names = 0;
  for (size_t i = 0; i < p->n_rules; i++) {
    n_names += p->rules[i].n_names;
    for (size_t k = 0; k < p->rules[i].n_args; k++) {
      uint64_t v = satisfying(&p->rules[i].args[k]);
      add_value(vals, &nv, v);
      add_value(vals, &nv, v ^ 1);
      add_value(vals, &nv, v ^ (1ULL << 32));
    }
  }
  _cleanup_free_ int *nrs = xcalloc(n_names + 1, sizeof(int));
  _cleanup_free_ uint8_t *seen = xcalloc(SECCOMP_PREFIX_NRS, 1);
  size_t n_nrs = 0;
  memset(&d, 0, sizeof(d));
  d.arch = native;
  for (size_t i = 0; i < p->n_rules; i++) {
    const struct seccomp_rule *r = &p->rules[i];
    for (size_t k = 0; k < r->n_names; k++) {
      int nr;
      if (seccomp_resolve_name(r->names[k], &nr) != SECCOMP_NAME_NATIVE)
        continue;
      bool in_table = nr >= 0 && nr < SECCOMP_PREFIX_NRS;
      if (!in_table || !seen[nr])
        nrs[n_nrs++] = nr;
      if (in_table)
        seen[nr] = 1;
      d.nr = nr;
      memset(d.args, 0, sizeof(d.args));
      for (size_t c = 0; c < r->n_args; c++)
        d.args[r->args[c].index] = satisfying(&r->args[c]);
      if (!fn(&d, ctx))
        return false;
      for (size_t c = 0; c < r->n_args; c++) {
        uint64_t keep = d.args[r->args[c].index];
        for (int bit = 0; bit < 2; bit++) {
          d.args[r->args[c].index] = keep ^ (bit ? 1ULL << 32 : 1);
          if (!fn(&d, ctx))
            return false;
        }
        d.args[r->args[c].index] = keep;
      }
    }
  }
  for (size_t i = 0; i < n_nrs; i++) {
    d.nr = nrs[i];
    for (size_t v = 0; v < nv; v++) {
      for (int arg = 0; arg < 6; arg++)
        d.args[arg] = vals[v];
      if (!fn(&d, ctx))
        return false;
    }
  }
  return true;
}

/* ---- two programs ------------------------------------------------------- */

struct pair {
  const void *a, *b;
  size_t alen, blen;
};

static bool same_answer(const struct seccomp_data *d, void *ctx) {
  const struct pair *pr = ctx;
  return seccomp_emulate_valid(pr->a, pr->alen, d) == seccomp_emulate_valid(pr->b, pr->blen, d);
}

bool seccomp_programs_agree(const struct seccomp_profile *p, const void *a, size_t alen, const void *b, size_t blen) {
  if (!seccomp_program_valid(a, alen) || !seccomp_program_valid(b, blen))
    return false;
  struct pair pr = {.a = a, .b = b, .alen = alen, .blen = blen};
  return each_sample(p, true, same_answer, &pr);
}

/* ---- a program and its profile ------------------------------------------ */

static uint32_t kernel_return(const struct seccomp_action *a) {
  switch (a->kind) {
  case SECCOMP_ACT_ALLOW:
    return SECCOMP_RET_ALLOW;
  case SECCOMP_ACT_ERRNO:
    return SECCOMP_RET_ERRNO | ((uint32_t)a->errnum & SECCOMP_RET_DATA);
  case SECCOMP_ACT_KILL_THREAD:
    return SECCOMP_RET_KILL_THREAD;
  case SECCOMP_ACT_KILL_PROCESS:
    return SECCOMP_RET_KILL_PROCESS;
  case SECCOMP_ACT_TRAP:
    return SECCOMP_RET_TRAP;
  case SECCOMP_ACT_LOG:
    return SECCOMP_RET_LOG;
  }
  return SECCOMP_RET_KILL_PROCESS;
}

static bool holds(const struct seccomp_arg *a, uint64_t v) {
  switch (a->op) {
  case SECCOMP_OP_NE:
    return v != a->value;
  case SECCOMP_OP_LT:
    return v < a->value;
  case SECCOMP_OP_LE:
    return v <= a->value;
  case SECCOMP_OP_EQ:
    return v == a->value;
  case SECCOMP_OP_GE:
    return v >= a->value;
  case SECCOMP_OP_GT:
    return v > a->value;
  case SECCOMP_OP_MASKED_EQ:
    return (v & a->value) == a->value_two;
  }
  return false;
}

/* The profile with its names resolved once: rule i names the native
 * numbers nrs[first[i] .. first[i + 1]). */
struct meaning {
  const struct seccomp_profile *p;
  const void *bpf;
  size_t len;
  int *nrs;
  size_t *first;
  /* the first call the program answers otherwise */
  struct seccomp_data bad;
  uint32_t got, want;
};

/* What the profile says `d` gets on the native architecture (see
 * hutch-policy(5)): a refusing rule that matches, else ALLOW if an
 * allowing rule matches, else the default. */
static uint32_t profile_answer(const struct meaning *m, const struct seccomp_data *d) {
  bool allowed = false;
  for (size_t i = 0; i < m->p->n_rules; i++) {
    const struct seccomp_rule *r = &m->p->rules[i];
    bool named = false;
    for (size_t k = m->first[i]; k < m->first[i + 1] && !named; k++)
      named = m->nrs[k] == d->nr;
    if (!named)
      continue;
    bool match = true;
    for (size_t c = 0; c < r->n_args && match; c++)
      match = holds(&r->args[c], d->args[r->args[c].index]);
    if (!match)
      continue;
    if (r->action.kind != SECCOMP_ACT_ALLOW)
      return kernel_return(&r->action); /* refusals take precedence */
    allowed = true;
  }
  return allowed ? SECCOMP_RET_ALLOW : kernel_return(&m->p->default_action);
}

static bool answers_as_said(const struct seccomp_data *d, void *ctx) {
  struct meaning *m = ctx;
  m->got = seccomp_emulate_valid(m->bpf, m->len, d);
  m->want = profile_answer(m, d);
  if (m->got == m->want)
    return true;
  m->bad = *d;
  return false;
}

static void answer_text(uint32_t ret, char *buf, size_t len) {
  switch (ret & SECCOMP_RET_ACTION_FULL) {
  case SECCOMP_RET_ALLOW:
    snprintf(buf, len, "allowed");
    break;
  case SECCOMP_RET_ERRNO:
    snprintf(buf, len, "errno %u", ret & SECCOMP_RET_DATA);
    break;
  default:
    snprintf(buf, len, "action 0x%08x", ret);
  }
}

int seccomp_program_means(const struct seccomp_profile *p, const void *bpf, size_t len, hutch_error_t *err) {
  if (!seccomp_program_valid(bpf, len))
    return hutch_error_set(err, 0, "seccomp: %s: libseccomp produced a malformed program", p->source);
  size_t n_names = 0;
  for (size_t i = 0; i < p->n_rules; i++)
    n_names += p->rules[i].n_names;
  _cleanup_free_ int *nrs = xcalloc(n_names + 1, sizeof(int));
  _cleanup_free_ size_t *first = xcalloc(p->n_rules + 1, sizeof(size_t));
  size_t n = 0;
  for (size_t i = 0; i < p->n_rules; i++) {
    first[i] = n;
    for (size_t k = 0; k < p->rules[i].n_names; k++) {
      int nr;
      if (seccomp_resolve_name(p->rules[i].names[k], &nr) == SECCOMP_NAME_NATIVE)
        nrs[n++] = nr;
    }
  }
  first[p->n_rules] = n;
  struct meaning m = {.p = p, .bpf = bpf, .len = len, .nrs = nrs, .first = first};
  if (each_sample(p, false, answers_as_said, &m))
    return 0;
  char got[32], want[32];
  answer_text(m.got, got, sizeof(got));
  answer_text(m.want, want, sizeof(want));
  const char *name = seccomp_syscall_resolve_num_arch(seccomp_arch_native(), m.bad.nr);
  const __u64 *a = m.bad.args;
  hutch_error_set(err, 0,
                  "seccomp: %s: libseccomp %s compiled the profile wrongly: %s (%d) with arguments (0x%llx, 0x%llx, "
                  "0x%llx, 0x%llx, 0x%llx, 0x%llx) is %s, where the rules say %s",
                  p->source, seccomp_library_version(), name ? name : "?", m.bad.nr, (unsigned long long)a[0],
                  (unsigned long long)a[1], (unsigned long long)a[2], (unsigned long long)a[3],
                  (unsigned long long)a[4], (unsigned long long)a[5], got, want);
  free((void *)name);
  return hutch_error_hint(err, "libseccomp gets some combinations of ranged comparisons (SCMP_CMP_LT, _LE, _GT, "
                               "_GE) on one system call wrong: say the rules with SCMP_CMP_EQ or SCMP_CMP_MASKED_EQ, "
                               "or use another libseccomp release");
}
