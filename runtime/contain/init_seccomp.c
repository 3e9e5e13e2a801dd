/* SPDX-License-Identifier: Apache-2.0 */
/* Why init can carry the filter: the profile is the same for every command
 * of a sandbox, and a filter survives clone and execve, so a command that
 * inherits it is filtered exactly as if it had loaded it itself (one filter,
 * not two: /proc/PID/status shows Seccomp_filters: 1).  Loading costs about
 * 0.1 ms (the kernel builds its per-syscall cache from the whole program),
 * more than the rest of starting a command.  Init gains a filter too, as
 * defence in depth.
 *
 * The risk is that the profile refuses something init itself needs, which
 * would break the sandbox rather than a command.  So the program is first
 * run in user space (seccomp_first_refused) on every call init and a
 * command's pre-exec code (payload.c) make after this point, with the
 * arguments they pass.  Any call not plainly allowed (an errno, a trap, a
 * kill, a log) keeps the old way: each command loads the filter just
 * before its execve.
 *
 * The list must follow init.c, payload.c, init_exec.c with hutch_init.c
 * and what they call in libc (malloc, the /proc reads of memwatch.c and
 * caller_is_hutch, a static program's start-up), in glibc and, in the musl
 * front end, in musl. */
#include "config.h"

#include "init_seccomp.h"

#if defined(__x86_64__) || defined(__i386__)
#include <asm/prctl.h>
#endif
#include <fcntl.h>
#include <sys/random.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "seccomp_policy.h"
#include "util.h"

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

#define CALL(name, ...)                                                                                                \
  {                                                                                                                    \
#name, SYS_##name, {                                                                                               \
      __VA_ARGS__                                                                                                      \
    }                                                                                                                  \
  }

static const struct seccomp_call init_calls[] = {
    /* init_main: signals, the event loop, the control socket */
    CALL(rt_sigprocmask, SIG_BLOCK),
    CALL(rt_sigprocmask, SIG_SETMASK),
    CALL(signalfd4, (uint64_t)-1, 0, 8, SFD_CLOEXEC | SFD_NONBLOCK),
    CALL(epoll_create1, EPOLL_CLOEXEC),
    CALL(epoll_ctl, 3, EPOLL_CTL_ADD, 4),
    CALL(epoll_ctl, 3, EPOLL_CTL_DEL, 4),
#ifdef SYS_epoll_wait
    CALL(epoll_wait, 3, 0, 16, (uint64_t)-1),
#else
    CALL(epoll_pwait, 3, 0, 16, (uint64_t)-1, 0, 8),
#endif
    CALL(accept4, 4, 0, 0, SOCK_CLOEXEC),
    CALL(getsockopt, 5, SOL_SOCKET, SO_PEERCRED),
    CALL(recvmsg, 5, 0, MSG_CMSG_CLOEXEC),
    CALL(sendmsg, 5, 0, MSG_NOSIGNAL),
    CALL(read, 5),
    CALL(write, 5),
    CALL(close, 5),
    CALL(prctl, PR_SET_PDEATHSIG, 0),
    /* reaping and signalling its commands; the memory watchdog.  wait4
     * passes a status and a rusage (what each command used, for its exit
     * and the audit log): pointers, whose values no profile can know, but
     * not NULL, so not 0 here: a rule that allows only a NULL rusage
     * must be caught by this check, not by init at its first reap. */
    CALL(wait4, (uint64_t)-1, 1, WNOHANG, 1),
    CALL(kill, (uint64_t)-2, SIGKILL),
    CALL(kill, 2, SIGKILL),
    CALL(kill, (uint64_t)-2, SIGTERM),
    CALL(kill, (uint64_t)-1, SIGKILL),
    /* a one-shot's end: the rest killed and reaped, and the usage of all */
    CALL(wait4, (uint64_t)-1, 0, 0, 0),
    CALL(getrusage, RUSAGE_SELF),
    CALL(getrusage, (uint64_t)RUSAGE_CHILDREN),
    CALL(pidfd_open, 2, 0),
    CALL(sched_getaffinity, 0, 128),
    CALL(clock_gettime, CLOCK_MONOTONIC),
    /* /proc: caller_is_hutch, memwatch, the root sent to hutch */
    CALL(openat, (uint64_t)AT_FDCWD, 0, O_RDONLY | O_CLOEXEC),
    CALL(openat, (uint64_t)AT_FDCWD, 0, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_DIRECTORY),
    CALL(openat, (uint64_t)AT_FDCWD, 0, O_PATH | O_DIRECTORY | O_CLOEXEC),
    CALL(openat, (uint64_t)AT_FDCWD, 0, O_RDWR | O_NOCTTY | O_CLOEXEC),
    CALL(getdents64, 5),
    CALL(newfstatat, 5, 0, 0, AT_EMPTY_PATH),
#ifdef SYS_readlink
    CALL(readlink),
#endif
    CALL(readlinkat, (uint64_t)AT_FDCWD),
    CALL(readlinkat, 5),
    CALL(lseek, 5),
    /* memwatch: a memfd's size by its fd's link (memwatch.c), the sockets
     * through its sock_diag socket (memwatch_sock.c) */
    CALL(newfstatat, 5, 0, 0, 0),
    CALL(sendto, 5, 0, 0, 0, 0, 0),
    CALL(recvfrom, 5, 0, 0, 0, 0, 0),
    /* malloc */
    CALL(brk),
    CALL(mmap, 0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, (uint64_t)-1, 0),
    CALL(munmap),
    CALL(mmap, 0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, (uint64_t)-1, 0),
    CALL(mremap),
    /* starting a command (payload_spawn); a plain fork in sanitizer builds */
    CALL(clone, CLONE_VM | CLONE_VFORK | SIGCHLD),
    CALL(clone, CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD),
    CALL(ioctl, 5, TIOCSPTLCK),
    CALL(ioctl, 5, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC),
    CALL(ioctl, 5, TIOCGPTN),
    CALL(ioctl, 5, TIOCSWINSZ),
    /* the command's own pre-exec steps (payload_child) */
    CALL(setsid),
    CALL(rt_sigaction, 1, 0, 1, 8), /* an ignored signal looked up, */
    CALL(rt_sigaction, 1, 1, 0, 8), /* and set back to its default */
#ifdef SYS_dup2
    CALL(dup2, 5, 0),
#else
    CALL(dup3, 5, 0, 0),
#endif
    CALL(ioctl, 0, TIOCSCTTY, 0),
    CALL(close_range, 3, ~0U, 0),
    CALL(prctl, PR_SET_PDEATHSIG, SIGKILL),
    CALL(prlimit64, 0, RLIMIT_DATA, 0, 0),
    CALL(chdir),
    CALL(execve),
    CALL(exit_group, 0),
    /* a long-lived init becoming hutch-init (init_exec.c: its sealed
     * configuration, the exec), and that static program's own start-up */
    CALL(memfd_create, 0, MFD_ALLOW_SEALING),
    CALL(fcntl, 5, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL),
    CALL(fcntl, 5, F_SETFD, 0),
    CALL(fcntl, 5, F_SETFD, FD_CLOEXEC),
    CALL(execveat, 5, 0, 0, 0, AT_EMPTY_PATH),
#ifdef SYS_arch_prctl
    CALL(arch_prctl, ARCH_SET_FS),
#endif
    CALL(set_tid_address),
    CALL(set_robust_list, 0, 24),
    CALL(rseq, 0, 0x20, 0, 0x53053053),
    CALL(prlimit64, 0, RLIMIT_STACK, 0),
    CALL(getrandom, 0, 8, GRND_NONBLOCK),
    CALL(mprotect, 0, 4096, PROT_READ),
    CALL(prctl, PR_SET_DUMPABLE, 0),
    CALL(pread64, 5),
    CALL(madvise, 0, 4096, MADV_DONTNEED),
#ifdef HUTCH_MUSL_FRONT_END
    /* A one-shot's init is a fork of the musl front end, and musl makes
     * other calls for the same functions: open (with O_LARGEFILE, then
     * fcntl FD_CLOEXEC again) for openat, fstat for newfstatat,
     * epoll_pwait for epoll_wait. */
    CALL(open, 0, O_RDONLY | O_LARGEFILE | O_CLOEXEC),
    CALL(open, 0, O_RDONLY | O_LARGEFILE | O_CLOEXEC | O_DIRECTORY),
    CALL(open, 0, O_RDONLY | O_NONBLOCK | O_LARGEFILE | O_CLOEXEC | O_DIRECTORY),
    CALL(open, 0, O_PATH | O_LARGEFILE | O_CLOEXEC | O_DIRECTORY),
    CALL(open, 0, O_RDWR | O_NOCTTY | O_LARGEFILE | O_CLOEXEC),
    CALL(openat, (uint64_t)AT_FDCWD, 0, O_RDONLY | O_LARGEFILE | O_CLOEXEC),
    CALL(fstat, 5),
    CALL(epoll_pwait, 3, 0, 16, (uint64_t)-1, 0, 8),
    CALL(mmap, 0, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, (uint64_t)-1, 0),
#endif
};

int init_seccomp_load(const void *bpf, size_t len, const char **refused, hutch_error_t *err) {
  ssize_t i = seccomp_first_refused(bpf, len, init_calls, ARRAY_SIZE(init_calls));
  if (i >= 0) {
    *refused = init_calls[i].name;
    return 0;
  }
  *refused = NULL;
  if (seccomp_install(bpf, len, err) < 0)
    return hutch_error_wrap(err, "init");
  return 1;
}
