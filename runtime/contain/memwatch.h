/* SPDX-License-Identifier: Apache-2.0 */
/* The memory watchdog of a sandbox without a memory cgroup (the rlimits
 * fallback).  RLIMIT_DATA bounds one process; the watchdog bounds them all:
 * init, which the sandbox cannot kill, sums the memory of every process
 * it has under it at a short interval and kills them all when the sum
 * passes the limit.  The margin is what the sandbox can allocate within one
 * interval (hutch-security(7)).
 *
 * The sum is the processes' pages and what the kernel holds for them that
 * no process maps and a memory cgroup would have charged: memfds, System V
 * segments, messages and semaphores, socket buffers (every socket of the sandbox's network
 * namespace, from the kernel's sock_diag), pipe buffers, epoll watches,
 * and a fixed cost per thread, open file, socket and pipe for the kernel's
 * own objects. */
#ifndef HUTCH_MEMWATCH_H
#define HUTCH_MEMWATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hutch.h"

/* How often init looks while any process runs in the sandbox, at the
 * most; an idle sandbox (init alone) is not polled at all. */
#define MEMWATCH_INTERVAL_MS 20
/* Nearer the limit it looks sooner: when the room left would last this
 * fast an allocation (bytes a second per CPU) less than an interval; a
 * page fault loop reached 2.7 GiB/s on one core of the test host. */
#define MEMWATCH_RATE_PER_CPU (4.0 * 1024 * 1024 * 1024)

/* The kernel's objects, at about what they cost on x86-64 (slabinfo),
 * rounded up: */
/* a thread: its kernel stack (16 KiB), task, and its share of the
 * process's signal, file and memory tables */
#define MEMWATCH_TASK_COST (32u * 1024)
/* an open file: its description and its slot in the fd table */
#define MEMWATCH_FD_COST 256u
/* a socket besides its buffers: the protocol's sock (up to 2.5 KiB for
 * TCP over IPv6), its inode and dentry */
#define MEMWATCH_SOCKET_COST 4096u
/* a pipe: its inode, ring and the page it keeps, and the buffers of its
 * default size (16 pages); a larger one (F_SETPIPE_SZ) takes from its
 * user's fs.pipe-user-pages-soft, 64 MiB by default, which bounds the rest */
#define MEMWATCH_PIPE_COST (8192u + 65536u)
/* an epoll watch: the item and its wait-queue entry */
#define MEMWATCH_EPOLL_WATCH_COST 256u
/* a System V message queue or semaphore set, each message's header besides
 * its text, each semaphore */
#define MEMWATCH_SYSV_QUEUE_COST 256u
#define MEMWATCH_SYSV_MESSAGE_COST 64u
#define MEMWATCH_SYSV_SEMAPHORE_COST 64u

/* Pure: milliseconds until the next look, from the bytes in use, the limit
 * and the CPUs the sandbox can run on: 1 to MEMWATCH_INTERVAL_MS. */
int memwatch_next_ms(uint64_t bytes, uint64_t limit, unsigned cpus);

/* Pure: the bytes a process holds from the text of /proc/PID/status: its
 * anonymous and shared-memory resident pages (RssAnon + RssShmem; file
 * pages are the page cache's, reclaimable and shared), its page tables
 * (VmPTE) and MEMWATCH_TASK_COST per thread.  false when the Rss fields
 * are missing (a kernel thread, a process gone). */
bool memwatch_parse_status(const char *status, uint64_t *bytes);

/* The sockets of the sandbox's network namespace, as sock_diag lists them.
 * A unix socket's queued packets are charged to their sender, which the
 * kernel keeps, unlisted, once it is closed: the data a closed sender left
 * is not in any listed socket's numbers.  What can hold such data is
 * counted instead, and charged what one sender can leave (see
 * memwatch_socks_bytes). */
struct memwatch_socks {
  uint64_t bytes;       /* every listed socket's buffers (exact) */
  uint64_t sockets;     /* listed sockets */
  uint64_t orphaned;    /* unix sockets whose peer is closed, with data from it possibly queued */
  uint64_t embryos;     /* connections waiting in unix listeners' backlogs */
  uint64_t unaccepted;  /* live unix clients connected to such a waiting connection */
  uint64_t bound_dgram; /* bound unix datagram sockets, which any sender may fill */
  unsigned failed;      /* families the kernel would not list (MEMWATCH_DIAG_*) */
};
#define MEMWATCH_DIAG_UNIX 1u
#define MEMWATCH_DIAG_INET 2u
#define MEMWATCH_DIAG_NETLINK 4u

/* Pure: one sock_diag reply (the message's payload) of `family` (AF_UNIX,
 * AF_INET, AF_INET6, AF_NETLINK) added to acc. */
void memwatch_sock_add(int family, const void *payload, size_t len, struct memwatch_socks *acc);
/* Pure: what the listed sockets hold, MEMWATCH_SOCKET_COST each, and what
 * closed unix senders may have left: at most twice the largest send
 * buffer (2 x max(2 x wmem_max, wmem_default), net.core) and a packet's
 * overhead each, behind every orphaned socket and every waiting connection
 * without a live client, and dgram_qlen + 1 of them (net.unix.
 * max_dgram_qlen) behind every bound datagram socket. */
uint64_t memwatch_socks_bytes(const struct memwatch_socks *acc, uint64_t wmem_max, uint64_t wmem_default,
                              uint64_t dgram_qlen);

/* A sock_diag socket in the calling process's network namespace (init's,
 * the sandbox's), opened before init's seccomp filter, which refuses
 * NETLINK_SOCK_DIAG; -1 with err set.  Listing the namespace's sockets
 * once, it warns on stderr about the families the kernel cannot list. */
int memwatch_open(hutch_error_t *err);
/* The namespace's unix and netlink sockets through diag_fd; what it failed
 * to list is in acc->failed. */
void memwatch_sockets_local(int diag_fd, struct memwatch_socks *acc);
/* Its TCP and UDP sockets.  A dump of those walks the host's whole
 * connection table (1.3 ms for each family on a 24 GiB host), so it is
 * made only for a family the namespace has sockets of, by the texts of
 * /proc/net/sockstat and sockstat6 (NULL: not read, dump), and only as
 * often as memwatch_inet_due says. */
void memwatch_sockets_inet(int diag_fd, const char *sockstat, const char *sockstat6, struct memwatch_socks *acc);
/* TCP and UDP are counted again at least this often, and at every look
 * once the sandbox is near enough its limit to pass it before then. */
#define MEMWATCH_INET_INTERVAL_MS 100
/* Pure: whether they are due, since_ms after their last count, with the
 * sandbox at `bytes` (that count included) of `limit`: when the interval
 * has passed, or when the room left is less than what cpus CPUs can queue
 * in one (at MEMWATCH_RATE_PER_CPU). */
bool memwatch_inet_due(double since_ms, uint64_t bytes, uint64_t limit, unsigned cpus);
/* Pure: the value of `field` on the line that starts with `line` in the
 * text of /proc/net/sockstat ("TCP:", "tw" in "TCP: inuse 1 orphan 0 tw 2"). */
bool memwatch_sockstat_field(const char *text, const char *line, const char *field, uint64_t *out);

/* What the watchdog keeps from one look to the next: its socket, and the
 * last count of TCP and UDP sockets, which it does not make at each look. */
struct memwatch {
  int diag_fd; /* -1: sockets not counted */
  double inet_at;
  uint64_t inet_bytes;
  /* net.core.wmem_max and wmem_default, net.unix.max_dgram_qlen: read at
   * the first look (the sandbox cannot change them) */
  uint64_t wmem_max, wmem_default, dgram_qlen;
};

/* The bytes all processes under the calling process hold (its children,
 * theirs, and so on, found through /proc/PID/task/TID/children), with the
 * kernel memory above and, through w->diag_fd, the sockets of their network
 * namespace; and how many processes it looked at (at least one while any
 * runs).  Memory shared between processes counts once for each: the sum is
 * never less than what the host gives them.  The look stops once the sum
 * passes `limit`: the sandbox is over it.  cpus: what the sandbox can run
 * on, for memwatch_inet_due. */
void memwatch_sum(struct memwatch *w, uint64_t limit, unsigned cpus, uint64_t *bytes, uint64_t *processes);

#endif
