/* SPDX-License-Identifier: Apache-2.0 */
/* The answer for most syscalls, put in front of libseccomp's program.
 *
 * The kernel compiles a seccomp program to machine code on every load,
 * once per sandbox: for the default profile libseccomp's program is about
 * 560 instructions (one comparison per syscall named, and the search tree
 * over them), and the load took 0.19 ms of a 2.4 ms start.  Most of those
 * syscalls are allowed whatever their arguments, and most of the rest get
 * the default action.  Both are ranges of syscall numbers: a binary search
 * over the ranges' starts answers them in about 80 instructions, and only
 * the syscalls a rule looks at more closely (arguments, another action) are
 * left to libseccomp's program, compiled without the others.
 *
 * The prefix uses only what the kernel's per-syscall action cache
 * understands (loads of the number and architecture, constant comparisons,
 * returns), so a syscall allowed here is still allowed without running the
 * filter at all.  Pure: no syscall. */
#include "config.h"

#include <seccomp.h>

#include "seccomp_policy.h"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <string.h>

#include "util.h"

void seccomp_split_profile(const struct seccomp_profile *p, uint8_t cls[SECCOMP_PREFIX_NRS]) {
  enum { ALLOW_ANY = 1, ALLOW_IF = 2, REFUSE_ANY = 4, REFUSE_OTHER = 8 };
  uint8_t seen[SECCOMP_PREFIX_NRS] = {0};
  bool default_allows = p->default_action.kind == SECCOMP_ACT_ALLOW;
  for (size_t i = 0; i < p->n_rules; i++) {
    const struct seccomp_rule *r = &p->rules[i];
    bool allows = r->action.kind == SECCOMP_ACT_ALLOW;
    /* As the compiler does: an allowing rule under an allowing default
     * adds nothing. */
    if (allows && default_allows)
      continue;
    uint8_t mark;
    if (allows)
      mark = r->n_args == 0 ? ALLOW_ANY : ALLOW_IF;
    else if (r->n_args == 0 && seccomp_action_same(&r->action, &p->default_action))
      mark = REFUSE_ANY; /* says what the default says */
    else
      mark = REFUSE_ANY | REFUSE_OTHER;
    for (size_t k = 0; k < r->n_names; k++) {
      int nr;
      if (seccomp_resolve_name(r->names[k], &nr) == SECCOMP_NAME_NATIVE && nr >= 0 && nr < SECCOMP_PREFIX_NRS)
        seen[nr] |= mark;
    }
  }
  for (int nr = 0; nr < SECCOMP_PREFIX_NRS; nr++) {
    uint8_t s = seen[nr];
    if ((s & ALLOW_ANY) && !(s & REFUSE_ANY))
      cls[nr] = SECCOMP_NR_ALLOW; /* refusals take precedence: none here */
    else if (!(s & (ALLOW_ANY | ALLOW_IF | REFUSE_OTHER)))
      cls[nr] = SECCOMP_NR_DEFAULT;
    else
      cls[nr] = SECCOMP_NR_REST;
  }
}

/* Runs of numbers in one class: run i is [start[i], start[i + 1]), the
 * last one up to 2^32 (the numbers past the table, which go on to the
 * rest of the program). */
struct runs {
  uint32_t start[SECCOMP_PREFIX_NRS + 1];
  uint8_t cls[SECCOMP_PREFIX_NRS + 1];
  size_t n;
};

static void make_runs(const uint8_t cls[SECCOMP_PREFIX_NRS], struct runs *r) {
  r->n = 0;
  for (uint32_t nr = 0; nr <= SECCOMP_PREFIX_NRS; nr++) {
    uint8_t c = nr < SECCOMP_PREFIX_NRS ? cls[nr] : SECCOMP_NR_REST;
    if (r->n == 0 || r->cls[r->n - 1] != c) {
      r->start[r->n] = nr;
      r->cls[r->n] = c;
      r->n++;
    }
  }
}

struct layout {
  const struct runs *runs;
  struct sock_filter *out;
  size_t target[3]; /* where each class's answer is, by enum seccomp_nr_class */
};

/* Where a jump to runs [lo, hi] goes: the answer itself for one run, else
 * the search node for them, emitted at `at` (preorder: a node, the nodes
 * of its lower half, then those of its upper half). */
static size_t subtree(const struct layout *l, size_t lo, size_t hi, size_t at) {
  return lo == hi ? l->target[l->runs->cls[lo]] : at;
}

static void emit(struct layout *l, size_t lo, size_t hi, size_t at) {
  if (lo == hi)
    return;
  size_t mid = lo + (hi - lo + 1) / 2;
  /* runs [lo, mid) have mid - 1 - lo nodes of their own */
  size_t below = at + 1, above = at + 1 + (mid - 1 - lo);
  size_t jt = subtree(l, mid, hi, above), jf = subtree(l, lo, mid - 1, below);
  l->out[at] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, l->runs->start[mid], (uint8_t)(jt - at - 1),
                                            (uint8_t)(jf - at - 1));
  emit(l, lo, mid - 1, below);
  emit(l, mid, hi, above);
}

size_t seccomp_prefix_build(const uint8_t cls[SECCOMP_PREFIX_NRS], uint32_t arch, uint32_t default_ret,
                            struct sock_filter *out) {
  _cleanup_free_ struct runs *runs = xmalloc(sizeof(*runs));
  make_runs(cls, runs);
  bool has[3] = {false, false, false};
  for (size_t i = 0; i < runs->n; i++)
    has[runs->cls[i]] = true;
  if (!has[SECCOMP_NR_ALLOW] && !has[SECCOMP_NR_DEFAULT])
    return 0;
  /* The architecture, the number, the search (one node fewer than runs),
   * and an answer per class that occurs; the rest of the program follows. */
  size_t nodes = runs->n - 1, head = 3;
  size_t n = head + nodes + has[SECCOMP_NR_ALLOW] + has[SECCOMP_NR_DEFAULT];
  /* Conditional jumps reach 255 instructions ahead. */
  if (n > SECCOMP_PREFIX_MAX || n > 255)
    return 0;
  struct layout l = {.runs = runs, .out = out};
  size_t next = head + nodes;
  if (has[SECCOMP_NR_ALLOW])
    out[l.target[SECCOMP_NR_ALLOW] = next++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  if (has[SECCOMP_NR_DEFAULT])
    out[l.target[SECCOMP_NR_DEFAULT] = next++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, default_ret);
  l.target[SECCOMP_NR_REST] = n;
  out[0] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
  /* Another ABI (i386, x32's numbers come later) is the rest's to judge. */
  out[1] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 0, (uint8_t)(n - 2));
  out[2] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
  emit(&l, 0, runs->n - 1, head);
  return n;
}
