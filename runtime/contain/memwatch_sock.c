/* SPDX-License-Identifier: Apache-2.0
 *
 * The memory watchdog's count of socket buffers (memwatch.h): without a
 * memory cgroup nothing else charges them to the sandbox, and a unix socket
 * holds up to twice net.core.wmem_max (8 MiB on hosts that raise it to 4
 * MiB), a TCP connection more.  sock_diag lists every socket of the
 * sandbox's network namespace, those in no process's fd table (sent over a
 * unix socket and closed) included, with the kernel's own accounting of
 * each one's queues. */
#include "config.h"

#include "memwatch.h"

#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/netlink_diag.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util.h"

#ifndef SOCK_DIAG_BY_FAMILY
#define SOCK_DIAG_BY_FAMILY 20
#endif
/* A unix socket's state and shutdown, as the kernel reports them (its TCP
 * states and SHUTDOWN_MASK). */
#define UNIX_CONNECTED 1
#define UNIX_LISTENING 10
#define UNIX_SHUT_BOTH 3

/* The queues of a socket, from its SK_MEMINFO array: receive and send
 * queues, memory reserved ahead, options, the backlog; not the buffer
 * sizes (limits, not use) nor the drop count. */
static uint64_t meminfo_bytes(const void *data, size_t len) {
  static const int used[] = {SK_MEMINFO_RMEM_ALLOC,  SK_MEMINFO_WMEM_ALLOC, SK_MEMINFO_FWD_ALLOC,
                             SK_MEMINFO_WMEM_QUEUED, SK_MEMINFO_OPTMEM,     SK_MEMINFO_BACKLOG};
  uint32_t mem[SK_MEMINFO_VARS] = {0};
  memcpy(mem, data, len < sizeof(mem) ? len : sizeof(mem));
  uint64_t sum = 0;
  for (size_t i = 0; i < ARRAY_SIZE(used); i++)
    sum += mem[used[i]];
  return sum;
}

/* What memwatch_sock_add needs of a reply: its fixed header's size, and
 * which attribute holds the SK_MEMINFO array. */
static bool family_layout(int family, size_t *head, unsigned short *meminfo) {
  switch (family) {
  case AF_UNIX:
    *head = sizeof(struct unix_diag_msg);
    *meminfo = UNIX_DIAG_MEMINFO;
    return true;
  case AF_INET:
  case AF_INET6:
    *head = sizeof(struct inet_diag_msg);
    *meminfo = INET_DIAG_SKMEMINFO;
    return true;
  case AF_NETLINK:
    *head = sizeof(struct netlink_diag_msg);
    *meminfo = NETLINK_DIAG_MEMINFO;
    return true;
  }
  return false;
}

void memwatch_sock_add(int family, const void *payload, size_t len, struct memwatch_socks *acc) {
  size_t head;
  unsigned short meminfo;
  if (!family_layout(family, &head, &meminfo) || len < head)
    return;
  acc->sockets++;
  bool has_peer = false, bound = false;
  uint32_t peer = 0, rqueue = 0;
  uint8_t shutdown = 0;
  size_t off = NLMSG_ALIGN(head);
  size_t left = len > off ? len - off : 0;
  for (const struct rtattr *a = (const struct rtattr *)((const char *)payload + off); RTA_OK(a, left);
       a = RTA_NEXT(a, left)) {
    const void *data = RTA_DATA(a);
    size_t n = RTA_PAYLOAD(a);
    if (a->rta_type == meminfo) {
      acc->bytes += meminfo_bytes(data, n);
    } else if (family != AF_UNIX) {
      continue;
    } else if (a->rta_type == UNIX_DIAG_PEER && n >= sizeof(peer)) {
      memcpy(&peer, data, sizeof(peer));
      has_peer = true;
    } else if (a->rta_type == UNIX_DIAG_RQLEN && n >= sizeof(struct unix_diag_rqlen)) {
      struct unix_diag_rqlen q;
      memcpy(&q, data, sizeof(q));
      rqueue = q.udiag_rqueue;
    } else if (a->rta_type == UNIX_DIAG_SHUTDOWN && n >= 1) {
      shutdown = *(const uint8_t *)data;
    } else if (a->rta_type == UNIX_DIAG_NAME) {
      bound = true;
    }
  }
  if (family != AF_UNIX)
    return;
  struct unix_diag_msg m;
  memcpy(&m, payload, sizeof(m));
  if (m.udiag_state == UNIX_LISTENING) {
    /* For a listener the kernel reports the connections in its backlog. */
    acc->embryos += rqueue;
    return;
  }
  /* A peer without an inode is closed, or a connection still waiting in a
   * listener's backlog (for a client that has not been accepted). */
  bool peer_gone = has_peer && peer == 0;
  if (m.udiag_type == SOCK_DGRAM) {
    /* A closed datagram peer is kept while its packets are queued here;
     * zero-length ones show in no count, so none is trusted. */
    if (peer_gone)
      acc->orphaned++;
    if (bound)
      acc->bound_dgram++;
    return;
  }
  if (peer_gone && shutdown == UNIX_SHUT_BOTH) {
    /* Its peer closed: the kernel shuts both ways.  A stream's packets
     * carry a byte at least; a seqpacket's may be empty. */
    if (m.udiag_type != SOCK_STREAM || rqueue > 0)
      acc->orphaned++;
  } else if (peer_gone && m.udiag_state == UNIX_CONNECTED) {
    acc->unaccepted++;
  }
}

uint64_t memwatch_socks_bytes(const struct memwatch_socks *acc, uint64_t wmem_max, uint64_t wmem_default,
                              uint64_t dgram_qlen) {
  /* The largest send buffer a sender can have (SO_SNDBUF doubles what it
   * is given, up to wmem_max), and what it can queue with it: a stream
   * sends while below it, a packet up to its size at once. */
  uint64_t sndbuf = 2 * wmem_max > wmem_default ? 2 * wmem_max : wmem_default;
  uint64_t sender = 2 * sndbuf + 64 * 1024;
  uint64_t waiting = acc->embryos > acc->unaccepted ? acc->embryos - acc->unaccepted : 0;
  uint64_t hidden = (acc->orphaned + waiting + acc->bound_dgram * (dgram_qlen + 1)) * sender;
  return acc->bytes + acc->sockets * MEMWATCH_SOCKET_COST + hidden;
}

/* One dump: a request, then replies until NLMSG_DONE.  false when the
 * kernel refused it (a family without sock_diag: not built, no module). */
static bool dump(int fd, struct nlmsghdr *req, int family, struct memwatch_socks *acc) {
  /* Each dump its own sequence number: a reply left over from another
   * (there should be none) is not counted twice. */
  static uint32_t seq;
  req->nlmsg_seq = ++seq;
  if (send(fd, req, req->nlmsg_len, 0) != (ssize_t)req->nlmsg_len)
    return false;
  static char buf[32 * 1024] __attribute__((aligned(NLMSG_ALIGNTO)));
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0)
      return false;
    size_t left = (size_t)n;
    for (const struct nlmsghdr *h = (const struct nlmsghdr *)buf; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_seq != seq)
        continue;
      if (h->nlmsg_type == NLMSG_DONE)
        return true;
      if (h->nlmsg_type == NLMSG_ERROR)
        return false;
      if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY)
        memwatch_sock_add(family, NLMSG_DATA(h), NLMSG_PAYLOAD(h, 0), acc);
    }
  }
}

bool memwatch_sockstat_field(const char *text, const char *line, const char *field, uint64_t *out) {
  size_t n = strlen(line), f = strlen(field);
  for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    if (strncmp(l, line, n) != 0 || l[n] != ' ')
      continue;
    /* "TCP: inuse 1 orphan 0 tw 2 ...": a field's name, then its value. */
    const char *end = l + strcspn(l, "\n");
    for (const char *p = l + n; p < end;) {
      p += strspn(p, " ");
      size_t w = strcspn(p, " \n");
      if (w == f && strncmp(p, field, f) == 0) {
        char *e;
        unsigned long long v = strtoull(p + w, &e, 10);
        if (e == p + w || (*e != ' ' && *e != '\n' && *e != '\0'))
          return false;
        *out = v;
        return true;
      }
      p += w;
    }
    return false;
  }
  return false;
}

/* How many sockets of a line of /proc/net/sockstat(6) the namespace has;
 * one when the text cannot be read, so that the dump is made. */
static uint64_t in_use(const char *sockstat, const char *line) {
  uint64_t n;
  if (sockstat == NULL || !memwatch_sockstat_field(sockstat, line, "inuse", &n))
    return 1;
  return n;
}

void memwatch_sockets_local(int fd, struct memwatch_socks *acc) {
  const uint16_t flags = NLM_F_REQUEST | NLM_F_DUMP;
  struct {
    struct nlmsghdr h;
    struct unix_diag_req r;
  } ux = {{sizeof(ux), SOCK_DIAG_BY_FAMILY, flags, 0, 0},
          {.sdiag_family = AF_UNIX,
           .udiag_states = ~0u,
           .udiag_show = UDIAG_SHOW_NAME | UDIAG_SHOW_PEER | UDIAG_SHOW_RQLEN | UDIAG_SHOW_MEMINFO}};
  if (!dump(fd, &ux.h, AF_UNIX, acc))
    acc->failed |= MEMWATCH_DIAG_UNIX;
  struct {
    struct nlmsghdr h;
    struct netlink_diag_req r;
  } nl = {{sizeof(nl), SOCK_DIAG_BY_FAMILY, flags, 0, 0},
          {.sdiag_family = AF_NETLINK, .sdiag_protocol = NDIAG_PROTO_ALL, .ndiag_show = NDIAG_SHOW_MEMINFO}};
  if (!dump(fd, &nl.h, AF_NETLINK, acc))
    acc->failed |= MEMWATCH_DIAG_NETLINK;
}

/* A dump of one family's TCP or UDP sockets in the given states. */
static bool inet_dump(int fd, uint8_t family, uint8_t protocol, uint32_t states, struct memwatch_socks *acc) {
  struct {
    struct nlmsghdr h;
    struct inet_diag_req_v2 r;
  } in = {{sizeof(in), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP, 0, 0},
          {.sdiag_family = family,
           .sdiag_protocol = protocol,
           .idiag_ext = 1u << (INET_DIAG_SKMEMINFO - 1),
           .idiag_states = states}};
  return dump(fd, &in.h, family, acc);
}

void memwatch_sockets_inet(int fd, const char *sockstat, const char *sockstat6, struct memwatch_socks *acc) {
  /* TIME_WAIT is counted on sockstat's TCP line, for both families. */
  uint64_t time_wait = 0;
  if (sockstat != NULL)
    (void)memwatch_sockstat_field(sockstat, "TCP:", "tw", &time_wait);
  const struct {
    uint8_t family, protocol;
    uint64_t sockets;
  } inet[] = {{AF_INET, IPPROTO_TCP, in_use(sockstat, "TCP:") + time_wait},
              {AF_INET6, IPPROTO_TCP, in_use(sockstat6, "TCP6:") + time_wait},
              {AF_INET, IPPROTO_UDP, in_use(sockstat, "UDP:")},
              {AF_INET6, IPPROTO_UDP, in_use(sockstat6, "UDP6:")}};
  for (size_t i = 0; i < ARRAY_SIZE(inet); i++)
    if (inet[i].sockets > 0 && !inet_dump(fd, inet[i].family, inet[i].protocol, ~0u, acc))
      acc->failed |= MEMWATCH_DIAG_INET;
}

/* Whether the kernel lists TCP and UDP sockets, asked without a walk of
 * the host's connection table: a TCP dump of no state returns before it
 * (inet_diag_dump_icsk), where a dump of every state took 1.3-3.5 ms for
 * each family, at every start under the watchdog.  The new namespace has
 * no such socket to count yet. */
static void inet_probe(int fd, struct memwatch_socks *acc) {
  static const uint8_t families[] = {AF_INET, AF_INET6}, protocols[] = {IPPROTO_TCP, IPPROTO_UDP};
  for (size_t f = 0; f < ARRAY_SIZE(families); f++)
    for (size_t p = 0; p < ARRAY_SIZE(protocols); p++)
      if (!inet_dump(fd, families[f], protocols[p], 0, acc))
        acc->failed |= MEMWATCH_DIAG_INET;
}

bool memwatch_inet_due(double since_ms, uint64_t bytes, uint64_t limit, unsigned cpus) {
  if (since_ms >= MEMWATCH_INET_INTERVAL_MS || bytes >= limit)
    return true;
  /* Within what the sandbox could queue before the next one is due. */
  double reach = MEMWATCH_RATE_PER_CPU * (cpus ? cpus : 1) * MEMWATCH_INET_INTERVAL_MS / 1000.0;
  return (double)(limit - bytes) <= reach;
}

int memwatch_open(hutch_error_t *err) {
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (fd < 0)
    return hutch_error_sys(err, "memory watchdog: a sock_diag socket to count socket buffers");
  struct memwatch_socks acc = {0};
  memwatch_sockets_local(fd, &acc);
  inet_probe(fd, &acc);
  static const struct {
    unsigned bit;
    const char *what;
  } families[] = {{MEMWATCH_DIAG_UNIX, "unix (CONFIG_UNIX_DIAG)"},
                  {MEMWATCH_DIAG_INET, "TCP and UDP (CONFIG_INET_DIAG)"},
                  {MEMWATCH_DIAG_NETLINK, "netlink (CONFIG_NETLINK_DIAG)"}};
  for (size_t i = 0; i < ARRAY_SIZE(families); i++)
    if (acc.failed & families[i].bit)
      dprintf(STDERR_FILENO,
              "%s: warning: memory watchdog: this kernel cannot list %s sockets, whose buffers it then does not "
              "count\n",
              hutch_program_name, families[i].what);
  return fd;
}
