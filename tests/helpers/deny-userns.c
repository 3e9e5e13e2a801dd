/* SPDX-License-Identifier: Apache-2.0 */
/* deny-userns CMD [ARGS...]: run CMD under a seccomp filter that refuses
 * new namespaces the way Docker's default profile does: unshare(2) and
 * clone(2) with any namespace flag fail with EPERM, clone3(2) with ENOSYS
 * (so callers fall back to clone), setns(2) with EPERM.  Used to test what
 * hutch says inside such a container, without a container engine.
 * deny-userns --ptrace CMD [ARGS...]: ptrace(2) and pidfd_getfd(2) fail
 * with EPERM instead, and nothing else (what hutch meets where ptrace is
 * refused: Yama's ptrace_scope 3 refuses both). */
#include "config.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

#if defined(__x86_64__)
#define HELPER_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define HELPER_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "deny-userns: add this architecture's AUDIT_ARCH"
#endif

/* Docker's mask: CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET. */
#define NS_FLAGS 0x7E020000u

#define DENY(errnum) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((errnum)&SECCOMP_RET_DATA))

int main(int argc, char **argv) {
  bool ptrace_only = argc > 1 && strcmp(argv[1], "--ptrace") == 0;
  if (ptrace_only) {
    argv++;
    argc--;
  }
  if (argc < 2) {
    fprintf(stderr, "usage: deny-userns [--ptrace] CMD [ARGS...]\n");
    return 2;
  }
  struct sock_filter ptrace_insns[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ptrace, 1, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pidfd_getfd, 0, 1),
      DENY(EPERM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_filter insns[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, HELPER_AUDIT_ARCH, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1),
      DENY(ENOSYS),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_setns, 0, 1),
      DENY(EPERM),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unshare, 1, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 3),
      /* The flags are the first argument of both (low 32 bits). */
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
      BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, NS_FLAGS, 0, 1),
      DENY(EPERM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {.len = sizeof(insns) / sizeof(insns[0]), .filter = insns};
  /* The architecture is checked first either way: the ptrace filter takes
   * the place of what follows that check. */
  if (ptrace_only) {
    memcpy(&insns[3], ptrace_insns, sizeof(ptrace_insns));
    prog.len = 3 + sizeof(ptrace_insns) / sizeof(ptrace_insns[0]);
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0) {
    perror("deny-userns: install the filter");
    return 125;
  }
  execvp(argv[1], argv + 1);
  fprintf(stderr, "deny-userns: %s: %s\n", argv[1], strerror(errno));
  return 127;
}
