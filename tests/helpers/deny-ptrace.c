/* SPDX-License-Identifier: Apache-2.0 */
/* deny-ptrace CMD [ARGS...]: run CMD under a seccomp filter that refuses
 * ptrace(2) with EPERM, as a container engine's profile may: what
 * `hutch pause` and `hutch doctor` say where a sandbox cannot be held by
 * ptrace (live-pause.sh). */
#include "config.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define HELPER_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define HELPER_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "deny-ptrace: add this architecture's AUDIT_ARCH"
#endif

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: deny-ptrace CMD [ARGS...]\n");
    return 2;
  }
  struct sock_filter insns[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, HELPER_AUDIT_ARCH, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ptrace, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {.len = sizeof(insns) / sizeof(insns[0]), .filter = insns};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0) {
    perror("deny-ptrace: install the filter");
    return 125;
  }
  execvp(argv[1], argv + 1);
  fprintf(stderr, "deny-ptrace: %s: %s\n", argv[1], strerror(errno));
  return 127;
}
