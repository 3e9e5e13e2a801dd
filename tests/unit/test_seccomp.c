/* SPDX-License-Identifier: Apache-2.0 */
/* Seccomp profiles: the shipped allowlist, compiled and installed in forked
 * children that then probe system calls; malformed profiles; the cache. */
#include "config.h"

#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include <cJSON.h>
#include <seccomp.h>

#include "policy.h"
#include "seccomp_policy.h"
#include "sha256.h"
#include "state.h"
#include "tap.h"
#include "util.h"

static char *srcdir;

static char *read_text(const char *path, size_t *len) {
  char *text = read_file_at(AT_FDCWD, path, 1 << 22, len);
  if (text == NULL) {
    printf("Bail out! cannot read %s: %s\n", path, strerror(errno));
    exit(1);
  }
  return text;
}

/* ---- probing a compiled program ------------------------------------------ */

#define PROBE_OK 0
#define PROBE_KILLED_SIGSYS 250

static long raw(long nr, long a, long b, long c, long d, long e) {
  return syscall(nr, a, b, c, d, e, 0L);
}

/* Runs fn in a child under the program; returns 0 when the call succeeded,
 * its errno when it failed, PROBE_KILLED_SIGSYS when SIGSYS killed it. */
static int probe(const void *bpf, size_t len, long (*fn)(void)) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    hutch_error_t err = NULL;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || seccomp_install(bpf, len, &err) < 0)
      _exit(254);
    errno = 0;
    long r = fn();
    /* exit_group itself: _exit() may run sanitizer code that the filter
     * under test does not allow. */
    syscall(SYS_exit_group, r >= 0 ? PROBE_OK : (errno > 0 && errno < 250 ? errno : 253));
    _exit(252);
  }
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  if (WIFSIGNALED(status))
    return WTERMSIG(status) == SIGSYS ? PROBE_KILLED_SIGSYS : 200 + WTERMSIG(status) % 40;
  return WEXITSTATUS(status);
}

static long p_getpid(void) {
  return getpid();
}
static long p_pipe_rw(void) {
  int fds[2];
  char c = 'x';
  if (pipe2(fds, O_CLOEXEC) < 0 || write(fds[1], &c, 1) != 1 || read(fds[0], &c, 1) != 1)
    return -1;
  return 0;
}
static long p_open_devnull(void) {
  int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  return fd < 0 ? -1 : close(fd);
}
static long p_fork(void) {
  pid_t pid = fork();
  if (pid == 0)
    _exit(0);
  if (pid < 0)
    return -1;
  int status;
  return waitpid(pid, &status, 0) == pid && WIFEXITED(status) ? 0 : -1;
}
static void *thread_main(void *arg) {
  *(int *)arg = 1;
  return NULL;
}
static long p_thread(void) {
  pthread_t t;
  int ran = 0;
  if (pthread_create(&t, NULL, thread_main, &ran) != 0)
    return -1;
  pthread_join(t, NULL);
  return ran ? 0 : -1;
}
static long p_exec_true(void) {
  pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", "exit 7", (char *)NULL);
    _exit(99);
  }
  int status;
  if (pid < 0 || waitpid(pid, &status, 0) != pid)
    return -1;
  errno = EIO;
  return WIFEXITED(status) && WEXITSTATUS(status) == 7 ? 0 : -1;
}
static long sock(int domain, int type, int protocol) {
  int fd = socket(domain, type, protocol);
  return fd < 0 ? -1 : close(fd);
}
static long p_inet_stream(void) {
  return sock(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
}
static long p_inet_dgram(void) {
  return sock(AF_INET, SOCK_DGRAM, 0);
}
static long p_inet6_stream(void) {
  return sock(AF_INET6, SOCK_STREAM, 0);
}
static long p_inet_tcp(void) {
  return sock(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
}
static long p_inet6_udp(void) {
  return sock(AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK, IPPROTO_UDP);
}
static long p_unix(void) {
  return sock(AF_UNIX, SOCK_SEQPACKET, 0);
}
static long p_netlink_route(void) {
  return sock(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
}
static long p_socketpair_unix(void) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
    return -1;
  close(sv[0]);
  return close(sv[1]);
}
static long p_ioctl_winsz(void) {
  return raw(SYS_ioctl, -1, TIOCGWINSZ, 1, 0, 0); /* EBADF from the kernel */
}
static long p_personality_query(void) {
  return raw(SYS_personality, 0xffffffff, 0, 0, 0, 0);
}

static long p_mount(void) {
  return raw(SYS_mount, 1, 1, 1, 0, 1);
}
static long p_umount2(void) {
  return raw(SYS_umount2, (long)"/", 0x40000000, 0, 0, 0);
}
static long p_pivot_root(void) {
  return raw(SYS_pivot_root, 1, 1, 0, 0, 0);
}
static long p_chroot(void) {
  return raw(SYS_chroot, 1, 0, 0, 0, 0);
}
static long p_unshare_user(void) {
  return raw(SYS_unshare, CLONE_NEWUSER, 0, 0, 0, 0);
}
static long p_setns(void) {
  return raw(SYS_setns, -1, 0, 0, 0, 0);
}
static long clone_flags(unsigned long flags) {
  long pid = raw(SYS_clone, (long)flags, 0, 0, 0, 0);
  if (pid == 0)
    _exit(0);
  if (pid > 0)
    waitpid((pid_t)pid, NULL, 0);
  return pid < 0 ? -1 : 0;
}
static long p_clone_newuser(void) {
  return clone_flags(CLONE_NEWUSER | CLONE_FS | SIGCHLD); /* EINVAL if it reached the kernel */
}
static long p_clone_newns(void) {
  return clone_flags(CLONE_NEWNS | CLONE_FS | SIGCHLD);
}
static long p_clone_newnet_high(void) {
  /* bits above 32 must not hide a namespace flag */
  return clone_flags(0x100000000UL | CLONE_NEWUSER | CLONE_FS | SIGCHLD);
}
static long p_clone3(void) {
  return raw(435 /* clone3 */, 0, 0, 0, 0, 0);
}
static long p_fsopen(void) {
  return raw(430, 1, 0, 0, 0, 0);
}
static long p_fsconfig(void) {
  return raw(431, -1, 0, 0, 0, 0);
}
static long p_fsmount(void) {
  return raw(432, -1, 0, 0, 0, 0);
}
static long p_fspick(void) {
  return raw(433, -1, 1, 0, 0, 0);
}
static long p_move_mount(void) {
  return raw(429, -1, 1, -1, 1, -1);
}
static long p_open_tree(void) {
  return raw(428, -1, 1, -1, 0, 0);
}
static long p_mount_setattr(void) {
  return raw(442, -1, 1, -1, 0, 0);
}
static long p_bpf(void) {
  return raw(SYS_bpf, -1, 0, 0, 0, 0);
}
static long p_keyctl(void) {
  return raw(SYS_keyctl, 0x7fff, 0, 0, 0, 0);
}
static long p_add_key(void) {
  return raw(SYS_add_key, 1, 1, 0, 0, 0);
}
static long p_request_key(void) {
  return raw(SYS_request_key, 1, 1, 0, 0, 0);
}
static long p_io_uring_setup(void) {
  return raw(425, 1, 0, 0, 0, 0);
}
static long p_io_uring_enter(void) {
  return raw(426, -1, 0, 0, 0, 0);
}
static long p_io_uring_register(void) {
  return raw(427, -1, 0, 0, 0, 0);
}
static long p_io_setup(void) {
  return raw(SYS_io_setup, 1, 1, 0, 0, 0); /* unfiltered: EFAULT writing the context */
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
  return raw(SYS_userfaultfd, 1 | 2, 0, 0, 0, 0);
}
static long p_perf_event_open(void) {
  return raw(SYS_perf_event_open, 0, 0, -1, -1, ~0L);
}
static long p_ptrace(void) {
  return raw(SYS_ptrace, 2 /* PEEKDATA */, 0, 0, 0, 0);
}
static long p_process_vm_readv(void) {
  return syscall(SYS_process_vm_readv, getpid(), 0, 0, 0, 0, ~0L);
}
static long p_process_vm_writev(void) {
  return syscall(SYS_process_vm_writev, getpid(), 0, 0, 0, 0, ~0L);
}
static long p_kexec_load(void) {
  return raw(SYS_kexec_load, 0, 0, 0, 0x7fff0000, 0);
}
static long p_kexec_file_load(void) {
  return raw(SYS_kexec_file_load, -1, -1, 0, 0, 0x7fff0000);
}
static long p_init_module(void) {
  return raw(SYS_init_module, 0, 0, 0, 0, 0);
}
static long p_finit_module(void) {
  return raw(SYS_finit_module, -1, 0, 0, 0, 0);
}
static long p_delete_module(void) {
  return raw(SYS_delete_module, 1, 0, 0, 0, 0);
}
static long p_open_by_handle_at(void) {
  return raw(SYS_open_by_handle_at, -1, 1, 0, 0, 0);
}
static long p_name_to_handle_at(void) {
  return raw(SYS_name_to_handle_at, -1, 1, 1, 1, 0x40000000);
}
static long p_clock_settime(void) {
  return raw(SYS_clock_settime, CLOCK_REALTIME, 1, 0, 0, 0);
}
static long p_settimeofday(void) {
  return raw(SYS_settimeofday, 1, 0, 0, 0, 0);
}
static long p_adjtimex(void) {
  return raw(SYS_adjtimex, 1, 0, 0, 0, 0);
}
static long p_clock_adjtime(void) {
  return raw(SYS_clock_adjtime, CLOCK_REALTIME, 1, 0, 0, 0);
}
static long p_swapon(void) {
  return raw(SYS_swapon, 1, 0x40000000, 0, 0, 0);
}
static long p_swapoff(void) {
  return raw(SYS_swapoff, 1, 0, 0, 0, 0);
}
static long p_reboot(void) {
  return raw(SYS_reboot, 0, 0, 0, 0, 0); /* wrong magic: EINVAL if it reached the kernel */
}
static long p_acct(void) {
  return raw(SYS_acct, 1, 0, 0, 0, 0);
}
static long p_quotactl(void) {
  return raw(SYS_quotactl, -1, 0, 0, 0, 0);
}
static long p_syslog(void) {
  return raw(SYS_syslog, 10 /* SIZE_BUFFER */, 0, 0, 0, 0);
}
static long p_sethostname(void) {
  return raw(SYS_sethostname, 1, 1, 0, 0, 0);
}
static long p_personality_bad(void) {
  return raw(SYS_personality, 0x0040000 /* ADDR_NO_RANDOMIZE */, 0, 0, 0, 0);
}
static long p_packet(void) {
  return sock(AF_PACKET, SOCK_RAW, 0);
}
static long p_inet_raw(void) {
  return sock(AF_INET, SOCK_RAW, 1);
}
static long p_inet_raw_flags(void) {
  return sock(AF_INET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, 1);
}
static long p_inet6_raw(void) {
  return sock(AF_INET6, SOCK_RAW, 58);
}
static long p_inet_mptcp(void) {
  return sock(AF_INET, SOCK_STREAM, 262 /* IPPROTO_MPTCP */);
}
static long p_inet6_mptcp_flags(void) {
  return sock(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 262 /* IPPROTO_MPTCP */);
}
static long p_inet_udplite(void) {
  return sock(AF_INET, SOCK_DGRAM, 136 /* IPPROTO_UDPLITE */);
}
static long p_inet_proto_high(void) {
  /* The kernel reads the protocol as an int: bits above 32 must not help. */
  return raw(SYS_socket, AF_INET, SOCK_STREAM, 0x100000000L | 262, 0, 0);
}
static long p_unix_proto(void) {
  return sock(AF_UNIX, SOCK_STREAM, 1 /* PF_UNIX: the kernel takes it, the profile names 0 only */);
}
static long p_socketpair_unix_proto(void) {
  int sv[2];
  return socketpair(AF_UNIX, SOCK_STREAM, 1, sv);
}
static long p_inet_seqpacket(void) {
  return sock(AF_INET, SOCK_SEQPACKET, 0);
}
static long p_inet_high_domain(void) {
  return raw(SYS_socket, 0x100000002L, SOCK_STREAM, 0, 0, 0);
}
static long p_netlink_audit(void) {
  return sock(AF_NETLINK, SOCK_RAW, 9 /* NETLINK_AUDIT */);
}
static long p_vsock(void) {
  return sock(40, SOCK_STREAM, 0);
}
static long p_alg(void) {
  return sock(38, SOCK_SEQPACKET, 0);
}
static long p_socketpair_inet(void) {
  int sv[2];
  return socketpair(AF_INET, SOCK_STREAM, 0, sv);
}
static long p_tcp_ulp(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return -1;
  long r = setsockopt(fd, IPPROTO_TCP, 31 /* TCP_ULP */, "tls", 3);
  int e = errno;
  close(fd);
  errno = e;
  return r;
}
static long p_tcp_nodelay(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  if (fd < 0)
    return -1;
  long r = setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  close(fd);
  return r;
}
static long p_tiocsti(void) {
  return raw(SYS_ioctl, -1, TIOCSTI, 1, 0, 0);
}
static long p_tiocsti_high(void) {
  return raw(SYS_ioctl, -1, (long)(0x100000000UL | TIOCSTI), 1, 0, 0);
}
static long p_tioclinux(void) {
  return raw(SYS_ioctl, -1, TIOCLINUX, 1, 0, 0);
}
#if defined(__x86_64__)
static long p_x32(void) {
  return syscall(0x40000000L | SYS_getpid);
}
#endif

static const struct {
  const char *what;
  long (*fn)(void);
  int want;
} cases[] = {
    {"getpid", p_getpid, PROBE_OK},
    {"pipe, write, read", p_pipe_rw, PROBE_OK},
    {"open /dev/null", p_open_devnull, PROBE_OK},
    {"fork (clone without namespace flags)", p_fork, PROBE_OK},
    {"pthread_create (clone3 ENOSYS, then clone)", p_thread, PROBE_OK},
    {"exec /bin/sh", p_exec_true, PROBE_OK},
    {"socket AF_INET SOCK_STREAM|SOCK_CLOEXEC|SOCK_NONBLOCK", p_inet_stream, PROBE_OK},
    {"socket AF_INET SOCK_DGRAM", p_inet_dgram, PROBE_OK},
    {"socket AF_INET6 SOCK_STREAM", p_inet6_stream, PROBE_OK},
    {"socket AF_INET SOCK_STREAM IPPROTO_TCP", p_inet_tcp, PROBE_OK},
    {"socket AF_INET6 SOCK_DGRAM|SOCK_NONBLOCK IPPROTO_UDP", p_inet6_udp, PROBE_OK},
    {"socket AF_UNIX", p_unix, PROBE_OK},
    {"socket AF_NETLINK NETLINK_ROUTE", p_netlink_route, PROBE_OK},
    {"socketpair AF_UNIX", p_socketpair_unix, PROBE_OK},
    {"ioctl TIOCGWINSZ reaches the kernel (EBADF)", p_ioctl_winsz, EBADF},
    {"personality query", p_personality_query, PROBE_OK},
    {"mount", p_mount, EPERM},
    {"umount2", p_umount2, EPERM},
    {"pivot_root", p_pivot_root, EPERM},
    {"chroot", p_chroot, EPERM},
    {"unshare(CLONE_NEWUSER)", p_unshare_user, EPERM},
    {"setns", p_setns, EPERM},
    {"clone with CLONE_NEWUSER", p_clone_newuser, EPERM},
    {"clone with CLONE_NEWNS", p_clone_newns, EPERM},
    {"clone with CLONE_NEWUSER and a bit above 32", p_clone_newnet_high, EPERM},
    {"clone3", p_clone3, ENOSYS},
    {"fsopen", p_fsopen, ENOSYS},
    {"fsconfig", p_fsconfig, ENOSYS},
    {"fsmount", p_fsmount, ENOSYS},
    {"fspick", p_fspick, ENOSYS},
    {"move_mount", p_move_mount, ENOSYS},
    {"open_tree", p_open_tree, ENOSYS},
    {"mount_setattr", p_mount_setattr, ENOSYS},
    {"bpf", p_bpf, EPERM},
    {"keyctl", p_keyctl, EPERM},
    {"add_key", p_add_key, EPERM},
    {"request_key", p_request_key, EPERM},
    {"io_uring_setup", p_io_uring_setup, EPERM},
    {"io_uring_enter", p_io_uring_enter, EPERM},
    {"io_uring_register", p_io_uring_register, EPERM},
    {"io_setup", p_io_setup, ENOSYS},
    {"io_submit", p_io_submit, ENOSYS},
    {"io_getevents", p_io_getevents, ENOSYS},
    {"io_pgetevents", p_io_pgetevents, ENOSYS},
    {"io_cancel", p_io_cancel, ENOSYS},
    {"io_destroy", p_io_destroy, ENOSYS},
    {"userfaultfd", p_userfaultfd, EPERM},
    {"perf_event_open", p_perf_event_open, EPERM},
    {"ptrace", p_ptrace, EPERM},
    {"process_vm_readv", p_process_vm_readv, EPERM},
    {"process_vm_writev", p_process_vm_writev, EPERM},
    {"kexec_load", p_kexec_load, EPERM},
    {"kexec_file_load", p_kexec_file_load, EPERM},
    {"init_module", p_init_module, EPERM},
    {"finit_module", p_finit_module, EPERM},
    {"delete_module", p_delete_module, EPERM},
    {"open_by_handle_at", p_open_by_handle_at, EPERM},
    {"name_to_handle_at", p_name_to_handle_at, EPERM},
    {"clock_settime", p_clock_settime, EPERM},
    {"settimeofday", p_settimeofday, EPERM},
    {"adjtimex", p_adjtimex, EPERM},
    {"clock_adjtime", p_clock_adjtime, EPERM},
    {"swapon", p_swapon, EPERM},
    {"swapoff", p_swapoff, EPERM},
    {"reboot", p_reboot, EPERM},
    {"acct", p_acct, EPERM},
    {"quotactl", p_quotactl, EPERM},
    {"syslog", p_syslog, EPERM},
    {"sethostname", p_sethostname, EPERM},
    {"personality(ADDR_NO_RANDOMIZE)", p_personality_bad, EPERM},
    {"socket AF_PACKET", p_packet, EPERM},
    {"socket AF_INET SOCK_RAW", p_inet_raw, EPERM},
    {"socket AF_INET SOCK_RAW|SOCK_CLOEXEC|SOCK_NONBLOCK", p_inet_raw_flags, EPERM},
    {"socket AF_INET6 SOCK_RAW", p_inet6_raw, EPERM},
    {"socket AF_INET SOCK_SEQPACKET", p_inet_seqpacket, EPERM},
    {"socket AF_INET SOCK_STREAM IPPROTO_MPTCP", p_inet_mptcp, EPERM},
    {"socket AF_INET6 SOCK_STREAM|SOCK_CLOEXEC|SOCK_NONBLOCK IPPROTO_MPTCP", p_inet6_mptcp_flags, EPERM},
    {"socket AF_INET SOCK_DGRAM IPPROTO_UDPLITE", p_inet_udplite, EPERM},
    {"socket with IPPROTO_MPTCP above 32 bits", p_inet_proto_high, EPERM},
    {"socket AF_UNIX protocol 1", p_unix_proto, EPERM},
    {"socketpair AF_UNIX protocol 1", p_socketpair_unix_proto, EPERM},
    {"socket with AF_INET in the low 32 bits only", p_inet_high_domain, EPERM},
    {"socket AF_NETLINK NETLINK_AUDIT", p_netlink_audit, EPERM},
    {"socket AF_VSOCK", p_vsock, EPERM},
    {"socket AF_ALG", p_alg, EPERM},
    {"socketpair AF_INET", p_socketpair_inet, EPERM},
    {"setsockopt TCP_ULP", p_tcp_ulp, EPERM},
    {"setsockopt TCP_NODELAY", p_tcp_nodelay, PROBE_OK},
    {"ioctl TIOCSTI", p_tiocsti, EPERM},
    {"ioctl TIOCSTI with bits above 32", p_tiocsti_high, EPERM},
    {"ioctl TIOCLINUX", p_tioclinux, EPERM},
#if defined(__x86_64__)
    {"an x32 system call kills the process", p_x32, PROBE_KILLED_SIGSYS},
#endif
};

static void run_cases(const void *bpf, size_t len) {
  for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
    int got = probe(bpf, len, cases[i].fn);
    tap_ok(got == cases[i].want, "shipped profile: %s -> %s", cases[i].what,
           cases[i].want == PROBE_OK              ? "works"
           : cases[i].want == PROBE_KILLED_SIGSYS ? "SIGSYS"
                                                  : seccomp_errno_name(cases[i].want));
    if (got != cases[i].want)
      printf("#   got %d (%s)\n", got, got > 0 && got < 200 ? seccomp_errno_name(got) : "see probe()");
  }
}

/* ---- tools work under the filter --------------------------------------- */

static char *bpf_file;

static void tool_case(const char *what, const char *tool, const char *script) {
  if (access(tool, X_OK) != 0) {
    tap_ok(1, "# SKIP %s: %s is not installed", what, tool);
    return;
  }
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    size_t len;
    void *bpf = read_file_at(AT_FDCWD, bpf_file, 1 << 20, &len);
    hutch_error_t err = NULL;
    int null = open("/dev/null", O_RDWR);
    dup2(null, 1);
    if (bpf == NULL || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || seccomp_install(bpf, len, &err) < 0)
      _exit(254);
    execl("/bin/sh", "sh", "-ec", script, (char *)NULL);
    _exit(255);
  }
  int status = -1;
  waitpid(pid, &status, 0);
  tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "under the shipped profile: %s", what);
  if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0))
    printf("#   status 0x%x\n", status);
}

static void test_tools(const void *bpf, size_t len, const char *tmp) {
  bpf_file = xasprintf("%s/tools.bpf", tmp);
  write_file_atomic(bpf_file, bpf, len, 0600);
  _cleanup_free_ char *sh_script = xasprintf("cd %s && mkdir d && echo hi > d/f && cat d/f | grep -q hi && "
                                             "ls -la d && rm -r d && (sleep 0.01 &) && wait",
                                             tmp);
  tool_case("a shell: files, pipes, background jobs", "/bin/sh", sh_script);
  _cleanup_free_ char *py = xasprintf(
      "cd %s && python3 -c '\n"
      "import socket, subprocess, threading, multiprocessing, asyncio, ssl, sqlite3\n"
      "s = socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen()\n"
      "c = socket.create_connection(s.getsockname()); a, _ = s.accept(); c.send(b\"x\"); assert a.recv(1) == b\"x\"\n"
      "assert subprocess.run([\"true\"]).returncode == 0\n"
      "t = threading.Thread(target=print); t.start(); t.join()\n"
      "with multiprocessing.Pool(2) as p: assert p.map(abs, [-1, -2]) == [1, 2]\n"
      "asyncio.run(asyncio.sleep(0))\n"
      "socket.getaddrinfo(\"localhost\", 80)\n"
      "'",
      tmp);
  tool_case("python3: sockets, subprocesses, threads, multiprocessing, asyncio", "/usr/bin/python3", py);
  tool_case("pip --version", "/usr/bin/python3", "python3 -m pip --version");
  _cleanup_free_ char *git = xasprintf("cd %s && git init -q g && cd g && git config user.email t@t && "
                                       "git config user.name t && echo x > f && git add f && git commit -qm m && "
                                       "git log --oneline | grep -q m",
                                       tmp);
  tool_case("git init, add, commit, log", "/usr/bin/git", git);
  _cleanup_free_ char *gcc =
      xasprintf("cd %s && printf 'int main(void){return 0;}\\n' > t.c && gcc -O2 t.c -o t && ./t", tmp);
  tool_case("gcc compiles and the program runs", "/usr/bin/gcc", gcc);
  free(bpf_file);
}

/* ---- malformed profiles ------------------------------------------------- */

static char *parse_error(const char *json) {
  struct seccomp_profile *p = NULL;
  hutch_error_t err = NULL;
  if (seccomp_profile_parse(json, strlen(json), "p.json", &p, &err) == 0) {
    seccomp_profile_free(p);
    return NULL;
  }
  char *msg = xasprintf("%s%s%s", err->msg, err->hint ? " | hint: " : "", err->hint ? err->hint : "");
  hutch_error_free(&err);
  return msg;
}

#define RULE(body) "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": [" body "]}"

static void test_malformed(void) {
  static const struct {
    const char *json;
    const char *want;
    const char *what;
  } bad[] = {
      {"{\"defaultAction\": \"SCMP_ACT_ERRNO\",\n  \"syscalls\": [}", "p.json:2:16: not valid JSON",
       "a JSON syntax error with line:column"},
      {"{\"defaultAction\": \"SCMP_ACT_ERRNO\"} x", "p.json:1:37: not valid JSON", "data after the JSON value"},
      {"[]", "expected a JSON object", "not an object"},
      {"{}", "\"defaultAction\" is required", "defaultAction is required"},
      {"{\"defaultAction\": \"SCMP_ACT_FOO\"}", "defaultAction: unsupported action \"SCMP_ACT_FOO\"",
       "unknown default action"},
      {"{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"defaultErrnoRet\": 1}",
       "defaultErrnoRet: SCMP_ACT_ALLOW returns no errno", "defaultErrnoRet without ERRNO"},
      {"{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": 0}", "errno 0 is not between 1 and 4095",
       "errno 0"},
      {"{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"flags\": []}", "unknown field \"flags\"",
       "filter flags are not supported"},
      {"{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultAction\": \"SCMP_ACT_ALLOW\"}",
       "field \"defaultAction\" given twice", "duplicate field"},
      {"{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"architectures\": [\"SCMP_ARCH_Z80\"]}",
       "architectures[0]: unknown architecture SCMP_ARCH_Z80", "unknown architecture"},
      {RULE("{\"names\": [\"read\"], \"action\": \"SCMP_ACT_BOGUS\"}"),
       "syscalls[0].action: unsupported action \"SCMP_ACT_BOGUS\"", "bad rule action"},
      {RULE("{\"names\": [\"read\"], \"action\": \"SCMP_ACT_TRACE\"}"), "hint: a sandbox has no tracer",
       "SCMP_ACT_TRACE is refused with a hint"},
      {RULE("{\"names\": [\"read\"], \"action\": \"SCMP_ACT_ALLOW\", \"errnoRet\": 1}"),
       "syscalls[0].errnoRet: SCMP_ACT_ALLOW returns no errno", "errnoRet on ALLOW"},
      {RULE("{\"names\": [\"read\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 5000}"),
       "errno 5000 is not between 1 and 4095", "errnoRet out of range"},
      {RULE("{\"action\": \"SCMP_ACT_ALLOW\"}"), "syscalls[0]: \"names\" is required", "missing names"},
      {RULE("{\"names\": [], \"action\": \"SCMP_ACT_ALLOW\"}"), "syscalls[0].names: expected a non-empty array",
       "empty names"},
      {RULE("{\"names\": [\"\"], \"action\": \"SCMP_ACT_ALLOW\"}"), "syscalls[0].names[0]: expected a syscall name",
       "empty syscall name"},
      {RULE("{\"names\": [\"read\", \"write\", \"read\"], \"action\": \"SCMP_ACT_ALLOW\"}"),
       "syscalls[0].names[2]: \"read\" is listed twice", "a name twice in one rule"},
      {RULE("{\"names\": [\"read\"], \"action\": \"SCMP_ACT_ALLOW\"}, {\"names\": [\"raed\"], \"action\": "
            "\"SCMP_ACT_ALLOW\"}"),
       "syscalls[1].names[0]: unknown syscall name \"raed\"", "unknown syscall name"},
      {RULE("{\"names\": [\"read\"], \"action\": \"SCMP_ACT_ALLOW\", \"includes\": {}}"),
       "syscalls[0]: unknown field \"includes\" | hint: \"includes\" belongs to Docker's profile generator",
       "Docker's includes are refused with a hint"},
      {RULE("{\"names\": [\"read\"], \"action\": \"SCMP_ACT_ALLOW\", \"args\": [{\"index\": 6, \"value\": 1, "
            "\"op\": \"SCMP_CMP_EQ\"}]}"),
       "syscalls[0].args[0].index: argument index 6 is not between 0 and 5", "argument index > 5"},
      {RULE("{\"names\": [\"read\"], \"action\": \"SCMP_ACT_ALLOW\", \"args\": [{\"index\": 0, \"value\": 1, "
            "\"op\": \"SCMP_CMP_SORTA\"}]}"),
       "syscalls[0].args[0].op: unknown comparison \"SCMP_CMP_SORTA\"", "unknown op"},
      {RULE("{\"names\": [\"read\"], \"action\": \"SCMP_ACT_ALLOW\", \"args\": [{\"index\": 0, \"value\": 1}]}"),
       "\"index\", \"value\" and \"op\" are required", "an arg without op"},
      {RULE("{\"names\": [\"read\"], \"action\": \"SCMP_ACT_ALLOW\", \"args\": [{\"index\": 0, \"value\": -1, "
            "\"op\": \"SCMP_CMP_EQ\"}]}"),
       "syscalls[0].args[0].value: -1 is not an integer from 0 to 2^53", "negative value"},
      {RULE("{\"names\": [\"read\"], \"action\": \"SCMP_ACT_ALLOW\", \"args\": [{\"index\": 0, \"value\": 1.5, "
            "\"op\": \"SCMP_CMP_EQ\"}]}"),
       "1.5 is not an integer", "fractional value"},
      {RULE("{\"names\": [\"read\"], \"action\": \"SCMP_ACT_ALLOW\", \"args\": [{\"index\": 0, \"value\": "
            "18446744073709551615, \"op\": \"SCMP_CMP_EQ\"}]}"),
       "is not an integer from 0 to 2^53", "a value a JSON number cannot hold exactly"},
      {RULE("{\"names\": [\"read\"], \"action\": \"SCMP_ACT_ALLOW\", \"args\": [{\"index\": 0, \"value\": 1, "
            "\"valueTwo\": 2, \"op\": \"SCMP_CMP_EQ\"}]}"),
       "only SCMP_CMP_MASKED_EQ uses valueTwo", "valueTwo with EQ"},
      {RULE("{\"names\": [\"read\"], \"action\": \"SCMP_ACT_ALLOW\", \"args\": [{\"index\": 0, \"value\": 1, "
            "\"valueTwo\": 2, \"op\": \"SCMP_CMP_MASKED_EQ\"}]}"),
       "the rule would never match", "MASKED_EQ that can never match"},
      {RULE("{\"names\": [\"read\"], \"action\": \"SCMP_ACT_ALLOW\", \"args\": [{\"index\": 0, \"value\": 1, "
            "\"op\": \"SCMP_CMP_NE\"}, {\"index\": 0, \"value\": 2, \"op\": \"SCMP_CMP_NE\"}]}"),
       "argument 0 is compared twice in one rule | hint: libseccomp cannot AND", "one argument compared twice"},
      {RULE("{\"names\": [\"mount\"], \"action\": \"SCMP_ACT_ERRNO\"}, {\"names\": [\"mount\"], \"action\": "
            "\"SCMP_ACT_ERRNO\", \"errnoRet\": 38}"),
       "syscalls[1]: \"mount\" is already refused by syscalls[0] with another action", "conflicting refusals"},
      {RULE("{\"names\": [\"ioctl\"], \"action\": \"SCMP_ACT_ALLOW\"}, {\"names\": [\"ioctl\"], \"action\": "
            "\"SCMP_ACT_ALLOW\", \"args\": [{\"index\": 1, \"value\": 1, \"op\": \"SCMP_CMP_EQ\"}]}"),
       "\"ioctl\" is allowed unconditionally by syscalls[0], so the argument filter",
       "an allow filter shadowed by an unconditional allow"},
  };
  for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
    _cleanup_free_ char *msg = parse_error(bad[i].json);
    bool good = msg != NULL && strstr(msg, bad[i].want) != NULL;
    tap_ok(good, "refused: %s", bad[i].what);
    if (!good)
      printf("#   got \"%s\"\n#   want \"%s\"\n", msg ? msg : "(accepted)", bad[i].want);
  }
  char nul[] = "{\"defaultAction\": \"SCMP_ACT_ERRNO\"}\0";
  struct seccomp_profile *p = NULL;
  hutch_error_t err = NULL;
  tap_ok(seccomp_profile_parse(nul, sizeof(nul) - 1, "p.json", &p, &err) < 0 && strstr(err->msg, "NUL byte"),
         "refused: a NUL byte");
  hutch_error_free(&err);

  /* Accepted variants: duplicates of one unconditional action, refusals
   * over allows, KILL as an alias, null args. */
  const char *ok = RULE("{\"names\": [\"read\"], \"action\": \"SCMP_ACT_ALLOW\"}, {\"names\": [\"read\"], "
                        "\"action\": \"SCMP_ACT_ALLOW\", \"args\": null}, {\"names\": [\"read\"], \"action\": "
                        "\"SCMP_ACT_KILL\", \"args\": [{\"index\": 0, \"value\": 99, \"op\": \"SCMP_CMP_EQ\"}]}");
  _cleanup_free_ char *msg = parse_error(ok);
  tap_ok(msg == NULL, "accepted: a repeated allow, and a refusal with arguments over an allow");
  if (msg)
    printf("#   %s\n", msg);
}

/* ---- semantics of small profiles ------------------------------------------ */

static int compile_json(const char *json, void **bpf, size_t *len, char **msg) {
  struct seccomp_profile *p = NULL;
  hutch_error_t err = NULL;
  int r = seccomp_profile_parse(json, strlen(json), "t.json", &p, &err);
  if (r == 0)
    r = seccomp_profile_compile(p, bpf, len, &err);
  seccomp_profile_free(p);
  if (r < 0 && msg)
    *msg = xstrdup(err->msg);
  hutch_error_free(&err);
  return r;
}

static long p_getppid_7(void) {
  return raw(SYS_getppid, 7, 0, 0, 0, 0);
}
static long p_getppid_0(void) {
  return raw(SYS_getppid, 0, 0, 0, 0, 0);
}
static long p_gettid(void) {
  return raw(SYS_gettid, 0, 0, 0, 0, 0);
}
static long p_getuid(void) {
  return raw(SYS_getuid, 0, 0, 0, 0, 0);
}
static long p_mseal(void) {
  return raw(462, 0, 0, ~0L, 0, 0);
}

static void test_semantics(void) {
  void *bpf = NULL;
  size_t len;
  char *msg = NULL;
  /* The allowlist, with a refusal that takes precedence over it. */
  const char *allowlist = "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": 13, \"syscalls\": ["
                          "{\"names\": [\"exit_group\", \"exit\", \"getppid\"], \"action\": \"SCMP_ACT_ALLOW\"},"
                          "{\"names\": [\"getppid\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 33, \"args\": "
                          "[{\"index\": 0, \"value\": 7, \"op\": \"SCMP_CMP_EQ\"}]},"
                          "{\"names\": [\"getuid\"], \"action\": \"SCMP_ACT_KILL_PROCESS\"},"
                          "{\"names\": [\"mseal\"], \"action\": \"SCMP_ACT_ALLOW\"}]}";
  int r = compile_json(allowlist, &bpf, &len, &msg);
  tap_ok(r == 0, "a small allowlist compiles");
  if (r == 0) {
    tap_is_int(probe(bpf, len, p_getppid_0), PROBE_OK, "allowed syscall works");
    tap_is_int(probe(bpf, len, p_getppid_7), 33, "a refusal with arguments beats the unconditional allow");
    tap_is_int(probe(bpf, len, p_gettid), 13, "anything else gets defaultErrnoRet");
    tap_is_int(probe(bpf, len, p_getuid), PROBE_KILLED_SIGSYS, "SCMP_ACT_KILL_PROCESS kills");
    int m = probe(bpf, len, p_mseal);
    tap_ok(m != 13, "a syscall newer than libseccomp %s is allowed by number (got %d)", seccomp_library_version(), m);
  } else {
    printf("#   %s\n", msg);
  }
  free(bpf);
  bpf = NULL;
  free(msg);
  msg = NULL;

  /* A blocklist: default allow, one refusal. */
  r = compile_json("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"getppid\", \"vm86\"], "
                   "\"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 1}, {\"names\": [\"gettid\"], \"action\": "
                   "\"SCMP_ACT_ALLOW\"}]}",
                   &bpf, &len, &msg);
  tap_ok(r == 0, "a blocklist compiles (redundant allow rules ignored)");
  if (r == 0) {
    tap_is_int(probe(bpf, len, p_getppid_0), EPERM, "blocklist: the refused syscall gets EPERM");
    tap_is_int(probe(bpf, len, p_gettid), PROBE_OK, "blocklist: others work");
  }
  free(bpf);
  bpf = NULL;
  free(msg);
  msg = NULL;

  /* A profile for another architecture only. */
  const char *other = strcmp(seccomp_native_arch(), "aarch64") == 0 ? "SCMP_ARCH_X86_64" : "SCMP_ARCH_AARCH64";
  _cleanup_free_ char *foreign =
      xasprintf("{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"architectures\": [\"%s\"]}", other);
  r = compile_json(foreign, &bpf, &len, &msg);
  tap_ok(r < 0 && msg && strstr(msg, "does not list this host's architecture"),
         "a profile that does not list the host's architecture does not compile");
  free(bpf);
  free(msg);

  int nr = -1;
  tap_is_int(seccomp_resolve_name("read", &nr), SECCOMP_NAME_NATIVE, "resolve: read is native");
  tap_is_int(seccomp_resolve_name("no_such_call", &nr), SECCOMP_NAME_INVALID, "resolve: a made-up name is invalid");
  nr = -1;
  enum seccomp_name_kind k = seccomp_resolve_name("mseal", &nr);
  tap_ok(k == SECCOMP_NAME_NATIVE && nr == 462, "resolve: mseal is 462 whatever libseccomp knows");
#if defined(__x86_64__)
  tap_is_int(seccomp_resolve_name("vm86", &nr), SECCOMP_NAME_ABSENT, "resolve: vm86 is not an x86-64 syscall");
#else
  tap_is_int(seccomp_resolve_name("arch_prctl", &nr), SECCOMP_NAME_ABSENT, "resolve: arch_prctl is x86 only");
#endif

  static const unsigned char junk[16] = {0};
  tap_ok(!seccomp_program_valid(junk, sizeof(junk)), "a program not ending in a return is malformed");
  tap_ok(!seccomp_program_valid(junk, 12), "a program of 12 bytes is malformed");
  hutch_error_t err = NULL;
  tap_ok(seccomp_install(junk, sizeof(junk), &err) < 0 && strstr(err->msg, "seccomp: install the filter"),
         "seccomp_install refuses a malformed program, naming the step");
  hutch_error_free(&err);
}

/* ---- the shipped profile, the cache, policy show ------------------------- */

static void cleanup_tree(const char *dir) {
  _cleanup_free_ char *cmd = xasprintf("chmod -R u+w '%s' 2>/dev/null; rm -rf '%s'", dir, dir);
  if (system(cmd) != 0)
    printf("# could not remove %s\n", dir);
}

/* The state directory that holds the cache's key (test_shipped). */
static int state_fd = -1;

/* The cache's key as a start reads it (sandbox.c): NULL, no cache, without
 * a state directory. */
static const uint8_t *cache_key(void) {
  static uint8_t key[STATE_CACHE_KEY_SIZE];
  return state_fd >= 0 && state_cache_key(state_fd, key, NULL) == 0 ? key : NULL;
}

static int load_program(const char *policy_path, struct hutch_policy **out, const void **bpf, size_t *len) {
  hutch_error_t err = NULL;
  if (hutch_policy_load(policy_path, out, &err) < 0 || policy_seccomp_program(*out, cache_key(), bpf, len, &err) < 0) {
    printf("#   %s\n", err->msg);
    hutch_error_free(&err);
    return -1;
  }
  return 0;
}

static char *describe(struct hutch_policy *p, bool effective, bool json) {
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  hutch_error_t err = NULL;
  int r = json ? hutch_policy_describe_json(p, effective, f, &err) : hutch_policy_describe(p, effective, f, &err);
  fclose(f);
  if (r < 0) {
    printf("#   %s\n", err->msg);
    hutch_error_free(&err);
    free(buf);
    return NULL;
  }
  return buf;
}

/* seccomp_emulate() against what the kernel does with the same program
 * (probe() in a child, the seccomp.sh cases in a sandbox): init trusts it
 * to decide whether it can carry the filter itself. */
static uint32_t emulate(const void *bpf, size_t len, int nr, uint64_t a0, uint64_t a1) {
  struct seccomp_data d = {.nr = nr, .arch = seccomp_arch_native(), .args = {a0, a1}};
  return seccomp_emulate(bpf, len, &d);
}

static void test_emulate(const void *bpf, size_t len) {
  uint32_t eperm = SECCOMP_RET_ERRNO | EPERM;
  tap_is_int(emulate(bpf, len, SYS_getpid, 0, 0), SECCOMP_RET_ALLOW, "emulated: getpid is allowed");
  tap_is_int(probe(bpf, len, p_getpid), PROBE_OK, "and the kernel agrees");
  tap_is_int(emulate(bpf, len, SYS_mount, 0, 0), eperm, "emulated: mount gets EPERM");
  tap_is_int(probe(bpf, len, p_mount), EPERM, "and the kernel agrees");
  tap_is_int(emulate(bpf, len, SYS_unshare, CLONE_NEWUSER, 0), eperm, "emulated: unshare(CLONE_NEWUSER) gets EPERM");
  tap_is_int(emulate(bpf, len, SYS_clone, CLONE_NEWUSER | SIGCHLD, 0), eperm,
             "emulated: clone with CLONE_NEWUSER gets EPERM (an argument check)");
  tap_is_int(probe(bpf, len, p_clone_newuser), EPERM, "and the kernel agrees");
  tap_is_int(emulate(bpf, len, SYS_clone, CLONE_VM | CLONE_VFORK | SIGCHLD, 0), SECCOMP_RET_ALLOW,
             "emulated: clone(CLONE_VM|CLONE_VFORK) is allowed");
  tap_is_int(emulate(bpf, len, SYS_ioctl, 0, TIOCSTI), eperm, "emulated: ioctl TIOCSTI gets EPERM");
  tap_is_int(emulate(bpf, len, SYS_ioctl, 0, TIOCSWINSZ), SECCOMP_RET_ALLOW, "emulated: ioctl TIOCSWINSZ is allowed");
  struct seccomp_data foreign = {.nr = SYS_getpid, .arch = 0x40000003 /* AUDIT_ARCH_I386 */};
  tap_is_int(seccomp_emulate(bpf, len, &foreign) & SECCOMP_RET_ACTION_FULL, SECCOMP_RET_KILL_PROCESS,
             "emulated: a foreign architecture is killed");
  struct seccomp_call calls[] = {{"getpid", SYS_getpid, {0}}, {"mount", SYS_mount, {0}}};
  tap_is_int((int)seccomp_first_refused(bpf, len, calls, 2), 1, "seccomp_first_refused names mount");
  tap_is_int((int)seccomp_first_refused(bpf, len, calls, 1), -1, "and nothing when all are allowed");
  uint32_t bad[2] = {0xffff, 0};
  tap_is_int(seccomp_emulate(bad, sizeof(bad), &foreign), SECCOMP_RET_KILL_PROCESS, "a malformed program kills");
}

static void test_shipped(const char *tmp) {
  _cleanup_free_ char *json_path = xasprintf("%s/policies/seccomp.json", srcdir);
  _cleanup_free_ char *policy_path = xasprintf("%s/policies/default.policy", srcdir);
  size_t json_len;
  _cleanup_free_ char *json = read_text(json_path, &json_len);

  struct seccomp_profile *profile = NULL;
  hutch_error_t err = NULL;
  int r = seccomp_profile_parse(json, json_len, json_path, &profile, &err);
  tap_ok(r == 0, "the shipped seccomp.json parses");
  if (r < 0) {
    printf("#   %s\n", err->msg);
    hutch_error_free(&err);
    return;
  }
  bool commented = true;
  for (size_t i = 0; i < profile->n_rules; i++)
    commented = commented && profile->rules[i].comment && profile->rules[i].comment[0];
  tap_ok(commented, "every rule group of seccomp.json has a comment");
  tap_ok(profile->default_action.kind == SECCOMP_ACT_ERRNO && profile->default_action.errnum == EPERM,
         "the default action is EPERM");
  seccomp_profile_free(profile);

  _cleanup_free_ char *cache = xasprintf("%s/cache", tmp);
  setenv("HUTCH_CACHE_DIR", cache, 1);
  _cleanup_free_ char *state = xasprintf("%s/state", tmp);
  mkdir(state, 0700);
  state_fd = open(state, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  tap_ok(state_fd >= 0, "a state directory for the cache's key");

  /* Cold: parse and compile once, write the cache. */
  struct seccomp_stats before = seccomp_stats;
  struct hutch_policy *p1 = NULL;
  const void *bpf1 = NULL;
  size_t len1 = 0;
  double t0 = monotonic_seconds();
  r = load_program(policy_path, &p1, &bpf1, &len1);
  double cold = monotonic_seconds() - t0;
  tap_ok(r == 0, "default.policy: load and program (cold cache)");
  if (r < 0)
    return;
  tap_is_int(seccomp_stats.compiles - before.compiles, 1, "cold: one compile");
  tap_ok(seccomp_program_valid(bpf1, len1), "the program is well-formed (%zu instructions)", len1 / 8);
  _cleanup_free_ char *file = policy_cache_file(p1);
  struct stat st;
  tap_ok(stat(file, &st) == 0 && (size_t)st.st_size == len1 + SHA256_DIGEST_SIZE,
         "the program is cached in %s/seccomp, after its MAC", cache);
  struct stat key_st;
  tap_ok(fstatat(state_fd, ".seccomp-cache.key", &key_st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(key_st.st_mode) &&
             key_st.st_size == 32 && (key_st.st_mode & 0777) == 0600,
         "the cache's key is a 0600 file of 32 bytes in the state directory");
  tap_ok(strstr(file, p1->digest) != NULL, "the cache file is named by the digest");
  const void *again;
  size_t again_len;
  policy_seccomp_program(p1, cache_key(), &again, &again_len, NULL);
  tap_ok(again == bpf1, "a second call on one policy reuses its program");

  run_cases(bpf1, len1);
  test_emulate(bpf1, len1);
  test_tools(bpf1, len1, tmp);

  /* Warm: a fresh policy object reads the file, parses and compiles nothing. */
  before = seccomp_stats;
  struct hutch_policy *p2 = NULL;
  const void *bpf2 = NULL;
  size_t len2 = 0;
  t0 = monotonic_seconds();
  r = load_program(policy_path, &p2, &bpf2, &len2);
  double warm = monotonic_seconds() - t0;
  tap_ok(r == 0, "default.policy: load and program (warm cache)");
  tap_is_int(seccomp_stats.compiles - before.compiles, 0, "warm: no compile");
  tap_is_int(seccomp_stats.parses - before.parses, 0, "warm: no JSON parse");
  tap_ok(r == 0 && len2 == len1 && memcmp(bpf1, bpf2, len1) == 0, "warm: the same program, byte for byte");
  printf("# policy load + program: cold %.2f ms (compile), warm %.2f ms (cache)\n", cold * 1e3, warm * 1e3);
  hutch_policy_free(p2);

  /* A corrupt cache file is replaced. */
  static const struct {
    const char *what;
    size_t size;
    int mode;
  } corrupt[] = {
      {"a truncated cache file (5 bytes)", 5, 0644},
      {"a cache file that is not a program", 64, 0644},
      {"a cache file others can write", 0, 0666},
      {"a program that allows everything, without a MAC", 8, 0644},
      {"a program that allows everything, after a MAC not made with the key", 40, 0644},
  };
  /* BPF_RET|BPF_K SECCOMP_RET_ALLOW: the one-instruction program of the
   * attack (issue 13, finding 1), well-formed but not the policy's. */
  static const uint8_t allow_all[8] = {0x06, 0, 0, 0, 0, 0, 0xff, 0x7f};
  tap_ok(seccomp_program_valid(allow_all, sizeof(allow_all)), "a lone RET_ALLOW is a well-formed program");
  for (size_t i = 0; i < ARRAY_SIZE(corrupt); i++) {
    _cleanup_free_ uint8_t *zeros = xcalloc(1, len1 + SHA256_DIGEST_SIZE);
    if (corrupt[i].size >= sizeof(allow_all))
      memcpy(zeros + corrupt[i].size - sizeof(allow_all), allow_all, sizeof(allow_all));
    if (corrupt[i].size)
      write_file_atomic(file, zeros, corrupt[i].size, corrupt[i].mode);
    else
      chmod(file, (mode_t)corrupt[i].mode);
    before = seccomp_stats;
    struct hutch_policy *p3 = NULL;
    const void *bpf3;
    size_t len3;
    r = load_program(policy_path, &p3, &bpf3, &len3);
    tap_ok(r == 0 && seccomp_stats.compiles - before.compiles == 1 && len3 == len1 && memcmp(bpf3, bpf1, len1) == 0,
           "%s is recompiled", corrupt[i].what);
    tap_ok(stat(file, &st) == 0 && (size_t)st.st_size == len1 + SHA256_DIGEST_SIZE && (st.st_mode & 022) == 0,
           "and rewritten");
    hutch_policy_free(p3);
  }

  /* A cache that cannot be created does not stop a sandbox. */
  _cleanup_free_ char *blocker = xasprintf("%s/not-a-dir", tmp);
  write_file_atomic(blocker, "x", 1, 0644);
  _cleanup_free_ char *bad_cache = xasprintf("%s/sub", blocker);
  setenv("HUTCH_CACHE_DIR", bad_cache, 1);
  struct hutch_policy *p4 = NULL;
  const void *bpf4;
  size_t len4;
  r = load_program(policy_path, &p4, &bpf4, &len4);
  tap_ok(r == 0 && len4 == len1, "an unusable cache directory: compiled in memory");
  hutch_policy_free(p4);
  setenv("HUTCH_CACHE_DIR", cache, 1);

  /* policy show */
  _cleanup_free_ char *text = describe(p1, false, false);
  tap_ok(text && strstr(text, "clone: allowed only when flags & 0x7e020000 == 0"), "show: the clone filter, readable");
  tap_ok(text && strstr(text, "namespaces: user, mount, pid, net (loopback only), ipc, uts, cgroup"),
         "show: namespaces");
  tap_ok(text && strstr(text, "capabilities: none"), "show: capabilities");
  tap_ok(text && strstr(text, "no_new_privs: yes"), "show: no_new_privs");
  tap_ok(text && strstr(text, "default action: errno EPERM (1)"), "show: default action");
  tap_ok(text && strstr(text, "errno ENOSYS (38) for 16 system calls"), "show: the ENOSYS refusals");
  tap_ok(text && strstr(text, "ioctl: errno EPERM (1) when request & 0xffffffff == 0x5412 (TIOCSTI)"),
         "show: the TIOCSTI refusal");
  tap_ok(text && strstr(text, "allowed: ") && strstr(text, " system calls\n"), "show: the allowed count");
  _cleanup_free_ char *eff = describe(p1, true, false);
  tap_ok(eff && strstr(eff, "this host: ") && strstr(eff, "clone(") && strstr(eff, "compiled: "),
         "show --effective: architecture, numbers, compiled size");
  unsigned allowed_here = 0;
  const char *at = eff ? strstr(eff, "  allowed: ") : NULL;
  if (at)
    sscanf(at, "  allowed: %u", &allowed_here);
  printf("# allowed unconditionally on %s: %u system calls\n", seccomp_native_arch(), allowed_here);
  tap_ok(allowed_here > 250 && allowed_here < 400, "show --effective: a plausible count of allowed syscalls");

  _cleanup_free_ char *js = describe(p1, true, true);
  cJSON *doc = js ? cJSON_Parse(js) : NULL;
  tap_ok(doc != NULL, "show --json is JSON");
  const cJSON *sc = cJSON_GetObjectItemCaseSensitive(doc, "seccomp");
  const cJSON *count = cJSON_GetObjectItemCaseSensitive(sc, "allowed_count");
  tap_ok(cJSON_IsNumber(count) && (unsigned)count->valuedouble == allowed_here,
         "show --json: allowed_count agrees with the text");
  bool clone3_enosys = false;
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(sc, "refused")) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(e, "action");
    const cJSON *en = cJSON_GetObjectItemCaseSensitive(act, "errno");
    if (cJSON_IsString(name) && strcmp(name->valuestring, "clone3") == 0 && cJSON_IsString(en))
      clone3_enosys = strcmp(en->valuestring, "ENOSYS") == 0;
  }
  tap_ok(clone3_enosys, "show --json: clone3 refused with ENOSYS");
  cJSON_Delete(doc);
  hutch_policy_free(p1);
}

int main(void) {
  const char *env = getenv("HUTCH_SRCDIR");
  srcdir = xstrdup(env ? env : "..");
  const char *base = getenv("TMPDIR");
  _cleanup_free_ char *tmpl = xasprintf("%s/test-seccomp.XXXXXX", base && base[0] == '/' ? base : "/tmp");
  char *tmp = mkdtemp(tmpl);
  if (tmp == NULL) {
    printf("Bail out! mkdtemp: %s\n", strerror(errno));
    return 1;
  }
  test_malformed();
  test_semantics();
  test_shipped(tmp);
  cleanup_tree(tmp);
  free(srcdir);
  return tap_done();
}
