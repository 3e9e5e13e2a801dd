/* SPDX-License-Identifier: Apache-2.0 */
/* Running a compiled seccomp program on a given syscall, in user space,
 * as the kernel would (kernel/bpf/core.c, classic BPF as seccomp accepts
 * it): to know before loading a profile into a process what that process's
 * own calls would meet (contain/init_seccomp.c).  Pure: no syscall. */
#include "config.h"

#include "seccomp_policy.h"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <string.h>

/* A 32-bit word of the seccomp_data at byte offset k, as BPF_LD|BPF_W|BPF_ABS
 * loads it (host byte order); false when out of bounds or unaligned, which
 * the kernel's checker would have refused. */
static bool load_word(const struct seccomp_data *d, uint32_t k, uint32_t *out) {
  if (k % 4 != 0 || k > sizeof(*d) - 4)
    return false;
  memcpy(out, (const char *)d + k, 4);
  return true;
}

static bool jump_taken(uint16_t code, uint32_t a, uint32_t operand) {
  switch (BPF_OP(code)) {
  case BPF_JEQ:
    return a == operand;
  case BPF_JGT:
    return a > operand;
  case BPF_JGE:
    return a >= operand;
  case BPF_JSET:
    return (a & operand) != 0;
  }
  return false;
}

static bool alu(uint16_t code, uint32_t *a, uint32_t operand) {
  switch (BPF_OP(code)) {
  case BPF_ADD:
    *a += operand;
    return true;
  case BPF_SUB:
    *a -= operand;
    return true;
  case BPF_MUL:
    *a *= operand;
    return true;
  case BPF_DIV:
    if (operand == 0)
      return false;
    *a /= operand;
    return true;
  case BPF_MOD:
    if (operand == 0)
      return false;
    *a %= operand;
    return true;
  case BPF_AND:
    *a &= operand;
    return true;
  case BPF_OR:
    *a |= operand;
    return true;
  case BPF_XOR:
    *a ^= operand;
    return true;
  case BPF_LSH:
    *a = operand >= 32 ? 0 : *a << operand;
    return true;
  case BPF_RSH:
    *a = operand >= 32 ? 0 : *a >> operand;
    return true;
  case BPF_NEG:
    *a = -*a;
    return true;
  }
  return false;
}

/* seccomp_emulate on a program already found valid: the check reads the
 * whole program (about 560 instructions for the default profile), the run
 * a dozen, and init asks about some forty calls at every start. */
uint32_t seccomp_emulate_valid(const void *bpf, size_t len, const struct seccomp_data *d) {
  const struct sock_filter *f = bpf;
  size_t n = len / sizeof(*f);
  uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {0};
  for (size_t pc = 0; pc < n; pc++) {
    const struct sock_filter *i = &f[pc];
    uint32_t operand = BPF_SRC(i->code) == BPF_X ? x : i->k;
    switch (BPF_CLASS(i->code)) {
    case BPF_LD:
      if (i->code == (BPF_LD | BPF_W | BPF_ABS)) {
        if (!load_word(d, i->k, &a))
          return SECCOMP_RET_KILL_PROCESS;
      } else if (i->code == (BPF_LD | BPF_W | BPF_LEN)) {
        a = sizeof(*d);
      } else if (i->code == (BPF_LD | BPF_IMM)) {
        a = i->k;
      } else if (i->code == (BPF_LD | BPF_MEM) && i->k < BPF_MEMWORDS) {
        a = mem[i->k];
      } else {
        return SECCOMP_RET_KILL_PROCESS;
      }
      break;
    case BPF_LDX:
      if (i->code == (BPF_LDX | BPF_W | BPF_LEN)) {
        x = sizeof(*d);
      } else if (i->code == (BPF_LDX | BPF_IMM)) {
        x = i->k;
      } else if (i->code == (BPF_LDX | BPF_MEM) && i->k < BPF_MEMWORDS) {
        x = mem[i->k];
      } else {
        return SECCOMP_RET_KILL_PROCESS;
      }
      break;
    case BPF_ST:
    case BPF_STX:
      if (i->k >= BPF_MEMWORDS)
        return SECCOMP_RET_KILL_PROCESS;
      mem[i->k] = BPF_CLASS(i->code) == BPF_ST ? a : x;
      break;
    case BPF_ALU:
      if (!alu(i->code, &a, operand))
        return SECCOMP_RET_KILL_PROCESS;
      break;
    case BPF_JMP:
      /* seccomp_program_valid() has checked every target is in range. */
      if (BPF_OP(i->code) == BPF_JA)
        pc += i->k;
      else
        pc += jump_taken(i->code, a, operand) ? i->jt : i->jf;
      break;
    case BPF_RET:
      return BPF_RVAL(i->code) == BPF_A ? a : i->k;
    case BPF_MISC:
      if (BPF_MISCOP(i->code) == BPF_TAX)
        x = a;
      else
        a = x;
      break;
    default:
      return SECCOMP_RET_KILL_PROCESS;
    }
  }
  return SECCOMP_RET_KILL_PROCESS; /* fell off the end: not a valid program */
}

uint32_t seccomp_emulate(const void *bpf, size_t len, const struct seccomp_data *d) {
  /* Anything the program does that the kernel would not accept counts as
   * a kill: the caller treats every answer but ALLOW as a refusal. */
  if (!seccomp_program_valid(bpf, len))
    return SECCOMP_RET_KILL_PROCESS;
  return seccomp_emulate_valid(bpf, len, d);
}

ssize_t seccomp_first_refused(const void *bpf, size_t len, const struct seccomp_call *calls, size_t n) {
  struct seccomp_data d = {.arch = seccomp_arch_native()};
  if (n > 0 && !seccomp_program_valid(bpf, len))
    return 0;
  for (size_t i = 0; i < n; i++) {
    d.nr = calls[i].nr;
    memcpy(d.args, calls[i].args, sizeof(d.args));
    uint32_t ret = seccomp_emulate_valid(bpf, len, &d);
    if ((ret & SECCOMP_RET_ACTION_FULL) != SECCOMP_RET_ALLOW)
      return (ssize_t)i;
  }
  return -1;
}
