/* SPDX-License-Identifier: Apache-2.0 */
/* try-syscall NAME: make one system call and print how it ended, as one
 * word: "OK", an errno name ("EPERM", "ENOSYS"...), or for the cases that
 * run in a child, the signal that killed it ("SIGSYS").  Exits 0; 2 on a
 * usage error.  `try-syscall --list` prints the cases.
 *
 * Arguments are chosen, where the kernel allows it, so that the call fails
 * harmlessly with EFAULT, EBADF or EINVAL when no seccomp filter refuses it
 * (bad pointers, file descriptor -1, invalid flags): "EPERM" or "ENOSYS"
 * then means the filter answered, not the kernel's capability checks.
 * Some calls check capabilities before their arguments (pivot_root, reboot,
 * acct...); inside a sandbox those say EPERM either way, and the unit tests
 * check the filter for them as root.
 *
 * Built static: it runs inside any rootfs, busybox's included. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef AF_ALG
#define AF_ALG 38
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_fsopen
#define SYS_fsopen 430
#endif
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef SYS_io_uring_setup
#define SYS_io_uring_setup 425
#endif

#define BAD_PTR ((void *)1)

static long raw(long nr, long a, long b, long c, long d, long e) {
  return syscall(nr, a, b, c, d, e, 0L);
}

static long p_mount(void) {
  return raw(SYS_mount, 1, 1, 1, 0, 1); /* unfiltered: EFAULT copying the type */
}
static long p_umount2(void) {
  return raw(SYS_umount2, (long)"/", 0x40000000, 0, 0, 0); /* invalid flag: EINVAL */
}
static long p_pivot_root(void) {
  return raw(SYS_pivot_root, 1, 1, 0, 0, 0);
}
static long p_chroot(void) {
  return raw(SYS_chroot, 1, 0, 0, 0, 0); /* EFAULT */
}
static long p_unshare(void) {
  return raw(SYS_unshare, CLONE_PTRACE, 0, 0, 0, 0); /* not an unshare flag: EINVAL */
}
static long p_setns(void) {
  return raw(SYS_setns, -1, 0, 0, 0, 0); /* EBADF */
}

/* clone, raw: the child (if any) leaves at once. */
static long do_clone(unsigned long flags) {
  long pid = raw(SYS_clone, (long)flags, 0, 0, 0, 0);
  if (pid == 0)
    _exit(0);
  if (pid > 0) {
    int status;
    while (waitpid((pid_t)pid, &status, 0) < 0 && errno == EINTR)
      ;
    return 0;
  }
  return pid;
}
static long p_clone_newuser(void) {
  return do_clone(CLONE_NEWUSER | CLONE_FS | SIGCHLD); /* invalid together: EINVAL */
}
static long p_clone_newns(void) {
  return do_clone(CLONE_NEWNS | CLONE_FS | SIGCHLD); /* invalid together: EINVAL */
}
static long p_clone_plain(void) {
  return do_clone(SIGCHLD);
}
static long p_fork(void) {
  pid_t pid = fork();
  if (pid == 0)
    _exit(0);
  if (pid < 0)
    return -1;
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
    ;
  return 0;
}
static void *thread_main(void *arg) {
  *(int *)arg = 1;
  return NULL;
}
static long p_thread(void) {
  /* glibc tries clone3 first and falls back to clone on ENOSYS. */
  pthread_t t;
  int ran = 0;
  int e = pthread_create(&t, NULL, thread_main, &ran);
  if (e != 0) {
    errno = e;
    return -1;
  }
  pthread_join(t, NULL);
  if (!ran) {
    errno = EIO;
    return -1;
  }
  return 0;
}
static long p_clone3(void) {
  return raw(SYS_clone3, 0, 0, 0, 0, 0); /* size 0: EINVAL */
}
static long p_bpf(void) {
  return raw(SYS_bpf, -1, 0, 0, 0, 0); /* no such command: EINVAL */
}
static long p_keyctl(void) {
  return raw(SYS_keyctl, 0x7fff, 0, 0, 0, 0); /* EOPNOTSUPP */
}
static long p_add_key(void) {
  return raw(SYS_add_key, 1, 1, 0, 0, 0); /* EFAULT */
}
static long p_request_key(void) {
  return raw(SYS_request_key, 1, 1, 0, 0, 0); /* EFAULT */
}
static long p_io_uring_setup(void) {
  return raw(SYS_io_uring_setup, 1, 0, 0, 0, 0); /* EFAULT */
}
/* Native AIO: a real context (its ring comes from the host-wide
 * fs.aio-max-nr), given back at once; the others on context 0, which no
 * process has: EINVAL, or EFAULT for io_cancel's result pointer. */
static long p_io_setup(void) {
  unsigned long ctx = 0;
  long r = raw(SYS_io_setup, 1, (long)&ctx, 0, 0, 0);
  if (r == 0)
    raw(SYS_io_destroy, (long)ctx, 0, 0, 0, 0);
  return r;
}
static long p_io_submit(void) {
  return raw(SYS_io_submit, 0, 0, 0, 0, 0);
}
static long p_io_getevents(void) {
  return raw(SYS_io_getevents, 0, 0, 0, 0, 0);
}
static long p_io_pgetevents(void) {
  return raw(SYS_io_pgetevents, 0, 0, 0, 0, 0);
}
static long p_io_cancel(void) {
  return raw(SYS_io_cancel, 0, 1, 1, 0, 0);
}
static long p_io_destroy(void) {
  return raw(SYS_io_destroy, 0, 0, 0, 0, 0);
}
static long p_userfaultfd(void) {
  return raw(SYS_userfaultfd, 1 | 2, 0, 0, 0, 0); /* UFFD_USER_MODE_ONLY + a bad flag: EINVAL */
}
static long p_perf_event_open(void) {
  return raw(SYS_perf_event_open, 0, 0, -1, -1, ~0L); /* bad flags: EINVAL */
}
static long p_ptrace(void) {
  return raw(SYS_ptrace, 2 /* PTRACE_PEEKDATA */, 0, 0, 0, 0); /* no pid 0: ESRCH */
}
static long p_process_vm_readv(void) {
  return syscall(SYS_process_vm_readv, getpid(), 0, 0, 0, 0, ~0L); /* bad flags: EINVAL */
}
static long p_process_vm_writev(void) {
  return syscall(SYS_process_vm_writev, getpid(), 0, 0, 0, 0, ~0L); /* bad flags: EINVAL */
}
static long p_kexec_load(void) {
  return raw(SYS_kexec_load, 0, 0, 0, 0x7fff0000, 0); /* bad flags: EINVAL (after CAP_SYS_BOOT) */
}
static long p_init_module(void) {
  return raw(SYS_init_module, 0, 0, 0, 0, 0); /* ENOEXEC (after CAP_SYS_MODULE) */
}
static long p_finit_module(void) {
  return raw(SYS_finit_module, -1, 0, 0, 0, 0); /* EBADF (after CAP_SYS_MODULE) */
}
static long p_delete_module(void) {
  return raw(SYS_delete_module, 1, 0, 0, 0, 0); /* EFAULT (after CAP_SYS_MODULE) */
}
static long p_open_by_handle_at(void) {
  return raw(SYS_open_by_handle_at, -1, 1, 0, 0, 0); /* EBADF/EFAULT (after CAP_DAC_READ_SEARCH) */
}
static long p_name_to_handle_at(void) {
  return raw(SYS_name_to_handle_at, -1, 1, 1, 1, 0x40000000); /* bad flag: EINVAL */
}
static long p_clock_settime(void) {
  return raw(SYS_clock_settime, CLOCK_REALTIME, 1, 0, 0, 0); /* EFAULT */
}
static long p_settimeofday(void) {
  return raw(SYS_settimeofday, 1, 0, 0, 0, 0); /* EFAULT */
}
static long p_adjtimex(void) {
  return raw(SYS_adjtimex, 1, 0, 0, 0, 0); /* EFAULT */
}
static long p_swapon(void) {
  return raw(SYS_swapon, 1, 0x40000000, 0, 0, 0); /* bad flag: EINVAL */
}
static long p_reboot(void) {
  return raw(SYS_reboot, 0, 0, 0, 0, 0); /* bad magic: EINVAL (after CAP_SYS_BOOT) */
}
static long p_acct(void) {
  return raw(SYS_acct, 1, 0, 0, 0, 0); /* EFAULT (after CAP_SYS_PACCT) */
}
static long p_quotactl(void) {
  return raw(SYS_quotactl, -1, 0, 0, 0, 0); /* bad type: EINVAL */
}
static long p_fsopen(void) {
  return raw(SYS_fsopen, 1, 0, 0, 0, 0);
}
static long p_open_tree(void) {
  return raw(SYS_open_tree, -1, 1, -1, 0, 0); /* bad flags: EINVAL */
}
static long p_move_mount(void) {
  return raw(SYS_move_mount, -1, 1, -1, 1, -1);
}
static long p_mount_setattr(void) {
  return raw(SYS_mount_setattr, -1, 1, -1, 0, 0); /* bad flags: EINVAL */
}
static long p_fcntl_setlease(void) {
  return raw(SYS_fcntl, -1, 1024 /* F_SETLEASE */, 0, 0, 0); /* unfiltered: EBADF */
}
static long p_personality_query(void) {
  return raw(SYS_personality, 0xffffffff, 0, 0, 0, 0);
}
static long p_personality_bad(void) {
  return raw(SYS_personality, 0x0040000 /* ADDR_NO_RANDOMIZE */, 0, 0, 0, 0);
}
static long sock(int domain, int type, int protocol) {
  int fd = socket(domain, type, protocol);
  if (fd >= 0)
    close(fd);
  return fd;
}
static long p_socket_packet(void) {
  return sock(AF_PACKET, SOCK_RAW, 0);
}
static long p_socket_raw(void) {
  return sock(AF_INET, SOCK_RAW, 1 /* IPPROTO_ICMP */);
}
static long p_socket_raw6(void) {
  return sock(AF_INET6, SOCK_RAW, 58 /* IPPROTO_ICMPV6 */);
}
static long p_socket_netlink_audit(void) {
  return sock(AF_NETLINK, SOCK_RAW, NETLINK_AUDIT);
}
static long p_socket_netlink_route(void) {
  return sock(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
}
static long p_socket_vsock(void) {
  return sock(AF_VSOCK, SOCK_STREAM, 0);
}
static long p_socket_alg(void) {
  return sock(AF_ALG, SOCK_SEQPACKET, 0);
}
static long p_socket_inet_stream(void) {
  return sock(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
}
static long p_socket_inet_dgram(void) {
  return sock(AF_INET, SOCK_DGRAM, 0);
}
static long p_socket_inet6_stream(void) {
  return sock(AF_INET6, SOCK_STREAM, 0);
}
static long p_socket_inet_tcp(void) {
  return sock(AF_INET, SOCK_STREAM, IPPROTO_TCP);
}
static long p_socket_inet_udp(void) {
  return sock(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_UDP);
}
static long p_socket_inet6_dgram(void) {
  return sock(AF_INET6, SOCK_DGRAM, 0);
}
static long p_socket_mptcp(void) {
  return sock(AF_INET, SOCK_STREAM, 262 /* IPPROTO_MPTCP */);
}
static long p_socket_mptcp6(void) {
  return sock(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 262 /* IPPROTO_MPTCP */);
}
static long p_socket_udplite(void) {
  return sock(AF_INET, SOCK_DGRAM, 136 /* IPPROTO_UDPLITE */);
}
static long p_socket_unix(void) {
  return sock(AF_UNIX, SOCK_STREAM, 0);
}
static long pair(int domain) {
  int sv[2];
  int r = socketpair(domain, SOCK_STREAM, 0, sv);
  if (r == 0) {
    close(sv[0]);
    close(sv[1]);
  }
  return r;
}
static long p_socketpair_unix(void) {
  return pair(AF_UNIX);
}
static long p_socketpair_inet(void) {
  return pair(AF_INET); /* unfiltered: EOPNOTSUPP */
}
static long p_setsockopt_tcp_ulp(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return -1;
  long r = setsockopt(fd, IPPROTO_TCP, 31 /* TCP_ULP */, "tls", 3);
  int e = errno;
  close(fd);
  errno = e;
  return r;
}
static long p_tiocsti(void) {
  return raw(SYS_ioctl, -1, TIOCSTI, 1, 0, 0); /* EBADF */
}
static long p_tiocsti_high(void) {
  /* The kernel reads the request as 32 bits: bits above must not help. */
  return raw(SYS_ioctl, -1, (long)(0x100000000UL | TIOCSTI), 1, 0, 0);
}
static long p_tioclinux(void) {
  return raw(SYS_ioctl, -1, TIOCLINUX, 1, 0, 0); /* EBADF */
}
static long p_ioctl_other(void) {
  return raw(SYS_ioctl, -1, TIOCGWINSZ, 1, 0, 0); /* EBADF: allowed */
}
static long p_getpid(void) {
  return raw(SYS_getpid, 0, 0, 0, 0, 0);
}
/* Becoming root again, for real: "OK" in a sandbox that runs as root (no
 * change), EPERM in one that runs as another user (hutch exec --user). */
static long p_setuid_root(void) {
  return raw(SYS_setuid, 0, 0, 0, 0, 0);
}
static long p_setresuid_root(void) {
  return raw(SYS_setresuid, 0, 0, 0, 0, 0);
}
static long p_setresgid_root(void) {
  return raw(SYS_setresgid, 0, 0, 0, 0, 0);
}
static long p_setgroups_root(void) {
  static const gid_t root[] = {0};
  return raw(SYS_setgroups, 1, (long)root, 0, 0, 0);
}

#if defined(__x86_64__)
static long p_compat_i386(void) {
  long ret;
  __asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L /* i386 getpid */) : "memory");
  if (ret < 0 && ret > -4096) {
    errno = (int)-ret;
    return -1;
  }
  return ret;
}
static long p_x32(void) {
  return syscall(0x40000000L | SYS_getpid);
}
#endif

static const struct probe {
  const char *name;
  long (*fn)(void);
  bool in_child; /* may be killed: run in a child and report its fate */
} probes[] = {
    {"mount", p_mount, false},
    {"fcntl-setlease", p_fcntl_setlease, false},
    {"umount2", p_umount2, false},
    {"pivot_root", p_pivot_root, false},
    {"chroot", p_chroot, false},
    {"unshare", p_unshare, false},
    {"setns", p_setns, false},
    {"clone-newuser", p_clone_newuser, false},
    {"clone-newns", p_clone_newns, false},
    {"clone3", p_clone3, false},
    {"bpf", p_bpf, false},
    {"keyctl", p_keyctl, false},
    {"add_key", p_add_key, false},
    {"request_key", p_request_key, false},
    {"io_uring_setup", p_io_uring_setup, false},
    {"io_setup", p_io_setup, false},
    {"io_submit", p_io_submit, false},
    {"io_getevents", p_io_getevents, false},
    {"io_pgetevents", p_io_pgetevents, false},
    {"io_cancel", p_io_cancel, false},
    {"io_destroy", p_io_destroy, false},
    {"userfaultfd", p_userfaultfd, false},
    {"perf_event_open", p_perf_event_open, false},
    {"ptrace", p_ptrace, false},
    {"process_vm_readv", p_process_vm_readv, false},
    {"process_vm_writev", p_process_vm_writev, false},
    {"kexec_load", p_kexec_load, false},
    {"init_module", p_init_module, false},
    {"finit_module", p_finit_module, false},
    {"delete_module", p_delete_module, false},
    {"open_by_handle_at", p_open_by_handle_at, false},
    {"name_to_handle_at", p_name_to_handle_at, false},
    {"clock_settime", p_clock_settime, false},
    {"settimeofday", p_settimeofday, false},
    {"adjtimex", p_adjtimex, false},
    {"swapon", p_swapon, false},
    {"reboot", p_reboot, false},
    {"acct", p_acct, false},
    {"quotactl", p_quotactl, false},
    {"fsopen", p_fsopen, false},
    {"open_tree", p_open_tree, false},
    {"move_mount", p_move_mount, false},
    {"mount_setattr", p_mount_setattr, false},
    {"personality-query", p_personality_query, false},
    {"personality-bad", p_personality_bad, true},
    {"socket-packet", p_socket_packet, false},
    {"socket-raw", p_socket_raw, false},
    {"socket-raw6", p_socket_raw6, false},
    {"socket-netlink-audit", p_socket_netlink_audit, false},
    {"socket-netlink-route", p_socket_netlink_route, false},
    {"socket-vsock", p_socket_vsock, false},
    {"socket-alg", p_socket_alg, false},
    {"socket-inet-stream", p_socket_inet_stream, false},
    {"socket-inet-dgram", p_socket_inet_dgram, false},
    {"socket-inet6-stream", p_socket_inet6_stream, false},
    {"socket-inet-tcp", p_socket_inet_tcp, false},
    {"socket-inet-udp", p_socket_inet_udp, false},
    {"socket-inet6-dgram", p_socket_inet6_dgram, false},
    {"socket-mptcp", p_socket_mptcp, false},
    {"socket-mptcp6", p_socket_mptcp6, false},
    {"socket-udplite", p_socket_udplite, false},
    {"socket-unix", p_socket_unix, false},
    {"socketpair-unix", p_socketpair_unix, false},
    {"socketpair-inet", p_socketpair_inet, false},
    {"setsockopt-tcp-ulp", p_setsockopt_tcp_ulp, false},
    {"tiocsti", p_tiocsti, false},
    {"tiocsti-high", p_tiocsti_high, false},
    {"tioclinux", p_tioclinux, false},
    {"ioctl-other", p_ioctl_other, false},
    {"getpid", p_getpid, false},
    {"setuid-root", p_setuid_root, false},
    {"setresuid-root", p_setresuid_root, false},
    {"setresgid-root", p_setresgid_root, false},
    {"setgroups-root", p_setgroups_root, false},
    {"clone-plain", p_clone_plain, false},
    {"fork", p_fork, false},
    {"thread", p_thread, false},
#if defined(__x86_64__)
    {"compat-i386", p_compat_i386, true},
    {"x32", p_x32, true},
#endif
};

static void report(long r) {
  if (r >= 0) {
    puts("OK");
  } else {
    const char *name = strerrorname_np(errno);
    if (name)
      puts(name);
    else
      printf("E%d\n", errno);
  }
  fflush(stdout);
}

static int usage(FILE *out) {
  fprintf(out, "usage: try-syscall NAME | --list\n");
  return out == stdout ? 0 : 2;
}

int main(int argc, char **argv) {
  if (argc != 2)
    return usage(stderr);
  if (strcmp(argv[1], "--help") == 0)
    return usage(stdout);
  if (strcmp(argv[1], "--list") == 0) {
    for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)
      puts(probes[i].name);
    return 0;
  }
  for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
    const struct probe *p = &probes[i];
    if (strcmp(p->name, argv[1]) != 0)
      continue;
    if (!p->in_child) {
      errno = 0;
      report(p->fn());
      return 0;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
      report(-1);
      return 0;
    }
    if (pid == 0) {
      errno = 0;
      report(p->fn());
      _exit(0);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
      ;
    if (WIFSIGNALED(status)) {
      const char *sig = sigabbrev_np(WTERMSIG(status));
      printf("SIG%s\n", sig ? sig : "?");
    }
    return 0;
  }
  fprintf(stderr, "try-syscall: unknown case '%s' (--list shows them)\n", argv[1]);
  return 2;
}
