/* SPDX-License-Identifier: Apache-2.0 */
/* Resource limits: the pure parts (runtime/policy/limits.c) and the policy's
 * [limits] section. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/netlink_diag.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "resource_limits.h"
#include "memwatch.h"
#include "policy.h"
#include "tap.h"
#include "util.h"

static void test_sizes(void) {
  uint64_t v = 0;
  tap_ok(limits_parse_size("64M", false, &v) && v == 64ull << 20, "64M");
  tap_ok(limits_parse_size("2G", false, &v) && v == 2ull << 30, "2G");
  tap_ok(limits_parse_size("1.5GiB", false, &v) && v == 3ull << 29, "1.5GiB");
  tap_ok(limits_parse_size("4096", false, &v) && v == 4096, "plain bytes");
  tap_ok(limits_parse_size("max", true, &v) && v == LIMITS_UNLIMITED, "max where allowed");
  tap_ok(!limits_parse_size("max", false, &v), "max refused elsewhere");
  tap_ok(!limits_parse_size("-1G", false, &v), "negative refused");
  tap_ok(!limits_parse_size("12Q", false, &v), "unknown unit refused");
  tap_ok(!limits_parse_size("", false, &v), "empty refused");
  tap_ok(!limits_parse_size("0", false, &v), "zero refused");

  char buf[32];
  hutch_format_size(1ull << 30, buf, sizeof(buf));
  tap_is_str(buf, "1 GiB", "format 1 GiB");
  hutch_format_size(64ull << 20, buf, sizeof(buf));
  tap_is_str(buf, "64 MiB", "format 64 MiB");
  hutch_format_size(3ull << 29, buf, sizeof(buf));
  tap_is_str(buf, "1.5 GiB", "format 1.5 GiB");
  hutch_format_size(100, buf, sizeof(buf));
  tap_is_str(buf, "100 B", "format bytes");
}

static void test_cpus(void) {
  uint64_t m = 0, q = 0, p = 0;
  tap_ok(limits_parse_cpus("0.5", &m) && m == 500, "0.5 CPUs");
  tap_ok(limits_parse_cpus("2", &m) && m == 2000, "2 CPUs");
  tap_ok(!limits_parse_cpus("0", &m), "0 refused");
  tap_ok(!limits_parse_cpus("1.5x", &m), "junk refused");
  tap_ok(!limits_parse_cpus("5000", &m), "more than 4096 refused");
  limits_cpu_max(0.5, &q, &p);
  tap_ok(q == 50000 && p == 100000, "cpu.max for 0.5: 50000 100000");
  limits_cpu_max(2.25, &q, &p);
  tap_ok(q == 225000 && p == 100000, "cpu.max for 2.25: 225000 100000");
  limits_cpu_max(0.001, &q, &p);
  tap_ok(q == 1000, "the quota is at least 1 ms");
}

static void test_plan(void) {
  struct policy_limits pol = {.memory = 2ull << 30, .cpus_milli = 1000, .pids = 1024};
  struct limits_plan plan;
  limits_plan_make(NULL, &pol, &plan);
  tap_ok(plan.memory == 2ull << 30 && plan.memory_src == LIMIT_POLICY, "policy memory");
  tap_ok(plan.cpu_quota_usec == 100000 && plan.cpus_src == LIMIT_POLICY, "policy cpus");
  tap_ok(plan.pids == 1024 && plan.pids_src == LIMIT_POLICY, "policy pids");
  tap_ok(!limits_plan_strict(&plan), "policy defaults with fallback = rlimits are not strict");
  char c[64];
  limits_plan_controllers(&plan, c, sizeof(c));
  tap_is_str(c, "cpu memory pids", "controllers needed");

  struct hutch_limits ex = {.memory = 64ull << 20};
  limits_plan_make(&ex, &pol, &plan);
  tap_ok(plan.memory == 64ull << 20 && plan.memory_src == LIMIT_EXPLICIT, "an option overrides the policy");
  tap_ok(limits_plan_strict(&plan), "an explicit limit is strict");
  char names[256];
  limits_plan_strict_names(&plan, names, sizeof(names));
  tap_is_str(names, "--memory", "and is named as its option");

  pol.required = 1;
  limits_plan_make(NULL, &pol, &plan);
  tap_ok(limits_plan_strict(&plan), "required = yes is strict");
  limits_plan_strict_names(&plan, names, sizeof(names));
  tap_ok(strstr(names, "[limits] memory (required = yes)") != NULL, "named by its key: %s", names);

  pol.required = 0;
  pol.fallback = LIMITS_FALLBACK_REFUSE;
  limits_plan_make(NULL, &pol, &plan);
  tap_ok(limits_plan_strict(&plan), "fallback = refuse is strict");

  struct policy_limits unlimited = {.memory = LIMITS_UNLIMITED, .pids = LIMITS_UNLIMITED};
  limits_plan_make(NULL, &unlimited, &plan);
  tap_ok(!limits_plan_any(&plan), "\"max\" sets no limit");

  pol.fallback = LIMITS_FALLBACK_RLIMITS;
  limits_plan_make(NULL, &pol, &plan);
  struct limits_rlimits rl;
  limits_plan_rlimits(&plan, 0, &rl);
  tap_ok(rl.n == 2 && rl.r[0].resource == RLIMIT_DATA && rl.r[0].value == 2ull << 30 &&
             rl.r[1].resource == RLIMIT_NPROC && rl.r[1].value == 1024,
         "rlimits: RLIMIT_DATA and RLIMIT_NPROC");
  limits_rlimits_gaps(&plan, 0, names, sizeof(names));
  tap_ok(strstr(names, "cpus") != NULL, "without a timeout the CPU rate is named as not limited");
  limits_plan_rlimits(&plan, 10, &rl);
  tap_ok(rl.n == 3 && rl.r[2].resource == RLIMIT_CPU && rl.r[2].value == 10, "with --timeout 10: RLIMIT_CPU 10 s");
}

static void test_kernel_text(void) {
  _cleanup_free_ char *p = limits_cgroup2_path("12:pids:/x\n0::/user.slice/user-1000.slice/session-2.scope\n");
  tap_is_str(p, "/user.slice/user-1000.slice/session-2.scope", "the cgroup v2 line of /proc/self/cgroup");
  _cleanup_free_ char *none = limits_cgroup2_path("4:memory:/a\n");
  tap_ok(none == NULL, "no v2 line: NULL");
  _cleanup_free_ char *del = limits_cgroup2_path("0::/gone (deleted)\n");
  tap_ok(del == NULL, "a deleted cgroup: NULL");
  uint64_t v = 0;
  const char *events = "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n";
  tap_ok(limits_keyed_value(events, "oom_kill", &v) && v == 1, "memory.events oom_kill");
  tap_ok(limits_keyed_value(events, "oom", &v) && v == 1, "a key that prefixes another");
  tap_ok(!limits_keyed_value(events, "nope", &v), "missing key");
  tap_ok(limits_has_word("cpuset cpu io memory pids", "cpu"), "cpu in the list");
  tap_ok(!limits_has_word("cpuset io memory pids", "cpu"), "cpuset is not cpu");
}

static void expect_policy(const char *text, const char *want_error, const char *what) {
  struct policy_settings s = {0};
  hutch_error_t err = NULL;
  int r = policy_parse(text, "t.policy", &s, &err);
  if (want_error == NULL) {
    tap_ok(r == 0, "%s", what);
    if (r < 0)
      printf("#   %s\n", err->msg);
  } else {
    tap_ok(r < 0 && strstr(err->msg, want_error) != NULL, "%s", what);
    if (r == 0 || strstr(err->msg, want_error) == NULL)
      printf("#   got \"%s\"\n", r < 0 ? err->msg : "(success)");
  }
  hutch_error_free(&err);
  policy_settings_clear(&s);
}

static void test_policy(void) {
  struct policy_settings s = {0};
  hutch_error_t err = NULL;
  int r = policy_parse("[sandbox]\nseccomp = s.json\n[limits]\nmemory = 2G\ncpus = 0.5\npids = 1024\n"
                       "io_weight = 50\nfallback = refuse\nrequired = yes\n",
                       "t.policy", &s, &err);
  tap_ok(r == 0, "[limits] parses");
  tap_ok(s.limits.memory == 2ull << 30 && s.limits.memory_line == 4, "memory = 2G, line 4");
  tap_ok(s.limits.cpus_milli == 500, "cpus = 0.5");
  tap_ok(s.limits.pids == 1024 && s.limits.io_weight == 50, "pids, io_weight");
  tap_ok(s.limits.fallback == LIMITS_FALLBACK_REFUSE && s.limits.required == 1, "fallback, required");
  hutch_error_free(&err);
  policy_settings_clear(&s);
  expect_policy("[sandbox]\nseccomp = s\n[limits]\nmemory = max\npids = max\ncpus = max\n", NULL, "max everywhere");
  expect_policy("[sandbox]\nseccomp = s\n[limits]\nmemory = lots\n", "t.policy:4: bad value for memory",
                "a bad size names file:line");
  expect_policy("[sandbox]\nseccomp = s\n[limits]\nmemory = 1M\n", "too small", "1M of memory is refused");
  expect_policy("[sandbox]\nseccomp = s\n[limits]\ncpus = 0\n", "bad value for cpus", "0 CPUs refused");
  expect_policy("[sandbox]\nseccomp = s\n[limits]\npids = 2\n", "bad value for pids", "2 pids refused");
  expect_policy("[sandbox]\nseccomp = s\n[limits]\nfallback = ignore\n", "bad value for fallback",
                "fallback only rlimits or refuse");
  expect_policy("[sandbox]\nseccomp = s\n[limits]\nrequired = maybe\n", "bad value for required", "required yes/no");
  expect_policy("[sandbox]\nseccomp = s\n[limits]\nswap = 1G\n", "unknown key \"swap\" in [limits]",
                "unknown [limits] key");
}

static void test_new_limits(void) {
  struct policy_settings s = {0};
  hutch_error_t err = NULL;
  int r = policy_parse("[sandbox]\nseccomp = s.json\n[limits]\ndisk = 512M\nimage_size = 100M\nimage_entries = 10\n",
                       "t.policy", &s, &err);
  tap_ok(r == 0 && s.limits.disk == 512ull << 20, "disk = 512M");
  struct import_budget b;
  limits_import_budget(&s.limits, "t.policy", &b);
  tap_ok(b.bytes == 100ull << 20 && b.entries == 10 && strcmp(b.policy, "t.policy") == 0, "the import budget");
  hutch_error_free(&err);
  policy_settings_clear(&s);
  struct policy_limits none = {0};
  limits_import_budget(&none, NULL, &b);
  tap_ok(b.bytes == LIMITS_DEFAULT_IMAGE_SIZE && b.entries == LIMITS_DEFAULT_IMAGE_ENTRIES, "left out: the defaults");
  tap_ok(limits_or_default(0, LIMITS_DEFAULT_DISK) == 4ull << 30, "disk left out: 4 GiB");
  expect_policy("[sandbox]\nseccomp = s\n[limits]\ndisk = 4K\n", "too small", "4K of disk is refused");
  expect_policy("[sandbox]\nseccomp = s\n[limits]\nimage_entries = 0\n", "bad value for image_entries",
                "0 image entries refused");

  uint64_t v = 0;
  tap_ok(memwatch_parse_status("Name:\tx\nVmRSS:\t  900 kB\nRssAnon:\t  700 kB\nRssFile:\t 150 kB\n"
                               "RssShmem:\t  50 kB\n",
                               &v) &&
             v == 750 * 1024 + MEMWATCH_TASK_COST,
         "memwatch: RssAnon + RssShmem, not RssFile, and a thread");
  tap_ok(memwatch_parse_status("RssAnon:\t  700 kB\nRssFile:\t 150 kB\nRssShmem:\t  50 kB\nVmPTE:\t  12 kB\n"
                               "Threads:\t3\n",
                               &v) &&
             v == 762 * 1024 + 3 * MEMWATCH_TASK_COST,
         "memwatch: page tables, and each thread's kernel objects");
  tap_ok(!memwatch_parse_status("Name:\tkthreadd\nState:\tS\n", &v), "memwatch: no Rss fields, no sum");
  tap_is_int(memwatch_next_ms(0, 1ull << 30, 1), MEMWATCH_INTERVAL_MS, "far from the limit: the full interval");
  tap_is_int(memwatch_next_ms((1ull << 30) - (16ull << 20), 1ull << 30, 1), 3, "16 MiB left at 4 GiB/s: 3 ms");
  tap_is_int(memwatch_next_ms(2ull << 30, 1ull << 30, 2), 1, "past the limit: 1 ms");
}

static void test_pools(void) {
  uint64_t cur, max;
  limits_pool_rlimit(1024, 96367, 96367, &cur, &max);
  tap_ok(cur == 1024 && max == 1024, "a pool's rlimit: lowered to the sandbox's share");
  limits_pool_rlimit(1024, 0, 0, &cur, &max);
  tap_ok(cur == 0 && max == 0, "a caller's lower limit is kept (RLIMIT_MSGQUEUE 0)");
  limits_pool_rlimit(1024, 10, RLIM_INFINITY, &cur, &max);
  tap_ok(cur == 10 && max == 1024, "a lower soft limit stays, the hard one is bounded");
  limits_pool_rlimit(1024, RLIM_INFINITY, RLIM_INFINITY, &cur, &max);
  tap_ok(cur == 1024 && max == 1024, "unlimited becomes the share");
  char text[256];
  limits_pools_text(text, sizeof(text));
  tap_is_str(text,
             "16 inotify instances, 8192 inotify watches, 16 fanotify groups, 8192 fanotify marks, 1024 pending "
             "signals, 128 KiB of POSIX message queues",
             "the pools, as policy show lists them");
  size_t sysctls = 0, rlimits = 0;
  for (size_t i = 0; i < limits_n_pools; i++) {
    sysctls += limits_pools[i].sysctl != NULL;
    rlimits += limits_pools[i].resource >= 0;
    tap_ok((limits_pools[i].sysctl != NULL) != (limits_pools[i].resource >= 0) && limits_pools[i].value > 0,
           "each pool is bounded one way: %s", limits_pools[i].what);
  }
  tap_ok(sysctls == 4 && rlimits == 2, "four /proc/sys/user limits and two rlimits");
}

/* A sock_diag reply: the family's header, then attributes. */
struct reply {
  char buf[512] __attribute__((aligned(4)));
  size_t len;
};
static void reply_head(struct reply *r, const void *head, size_t n) {
  memset(r, 0, sizeof(*r));
  memcpy(r->buf, head, n);
  r->len = NLMSG_ALIGN(n);
}
static void reply_attr(struct reply *r, unsigned short type, const void *data, size_t n) {
  struct rtattr *a = (struct rtattr *)(r->buf + r->len);
  a->rta_type = type;
  a->rta_len = (unsigned short)RTA_LENGTH(n);
  memcpy(RTA_DATA(a), data, n);
  r->len += RTA_ALIGN(a->rta_len);
}
static void unix_reply(struct reply *r, uint8_t type, uint8_t state) {
  struct unix_diag_msg m = {.udiag_family = AF_UNIX, .udiag_type = type, .udiag_state = state, .udiag_ino = 7};
  reply_head(r, &m, sizeof(m));
}
static void add_rqlen(struct reply *r, uint32_t rqueue) {
  struct unix_diag_rqlen q = {rqueue, 0};
  reply_attr(r, UNIX_DIAG_RQLEN, &q, sizeof(q));
}

static void peer_gone(struct memwatch_socks *acc, uint8_t type, uint32_t rqueue, uint8_t shutdown) {
  struct reply r;
  uint32_t peer = 0;
  unix_reply(&r, type, 1);
  reply_attr(&r, UNIX_DIAG_PEER, &peer, sizeof(peer));
  add_rqlen(&r, rqueue);
  reply_attr(&r, UNIX_DIAG_SHUTDOWN, &shutdown, 1);
  memwatch_sock_add(AF_UNIX, r.buf, r.len, acc);
}

static void test_memwatch_socks(void) {
  struct memwatch_socks acc = {0};
  struct reply r;
  uint32_t mem[SK_MEMINFO_VARS] = {0};
  mem[SK_MEMINFO_RMEM_ALLOC] = 100;
  mem[SK_MEMINFO_RCVBUF] = 212992;
  mem[SK_MEMINFO_WMEM_ALLOC] = 20000;
  mem[SK_MEMINFO_SNDBUF] = 212992;
  mem[SK_MEMINFO_FWD_ALLOC] = 3;
  mem[SK_MEMINFO_WMEM_QUEUED] = 4;
  mem[SK_MEMINFO_OPTMEM] = 5;
  mem[SK_MEMINFO_BACKLOG] = 6;
  mem[SK_MEMINFO_DROPS] = 1000;

  unix_reply(&r, SOCK_STREAM, 1);
  uint32_t peer = 9;
  reply_attr(&r, UNIX_DIAG_PEER, &peer, sizeof(peer));
  reply_attr(&r, UNIX_DIAG_MEMINFO, mem, sizeof(mem));
  memwatch_sock_add(AF_UNIX, r.buf, r.len, &acc);
  tap_ok(acc.sockets == 1 && acc.bytes == 20118 && acc.orphaned == 0,
         "a connected unix socket: its queues, not its buffer sizes nor its drops");

  /* A connected socket whose peer has no inode: closed (shut both ways) or
   * waiting in a listener's backlog (not shut). */
  peer_gone(&acc, SOCK_STREAM, 10, 3);
  tap_ok(acc.orphaned == 1, "a stream whose peer closed, with data queued: orphaned");
  peer_gone(&acc, SOCK_STREAM, 0, 3);
  tap_ok(acc.orphaned == 1, "the same with nothing queued: nothing hidden");
  peer_gone(&acc, SOCK_SEQPACKET, 0, 3);
  tap_ok(acc.orphaned == 2, "a seqpacket whose peer closed: orphaned even at 0 bytes (empty packets)");
  peer_gone(&acc, SOCK_STREAM, 0, 0);
  tap_ok(acc.unaccepted == 1 && acc.orphaned == 2, "a client still waiting to be accepted: unaccepted");
  uint32_t no_peer = 0;
  unix_reply(&r, SOCK_STREAM, 10);
  add_rqlen(&r, 5);
  memwatch_sock_add(AF_UNIX, r.buf, r.len, &acc);
  tap_ok(acc.embryos == 5, "a listener: the connections in its backlog");
  unix_reply(&r, SOCK_DGRAM, 7);
  reply_attr(&r, UNIX_DIAG_NAME, "\0x", 2);
  memwatch_sock_add(AF_UNIX, r.buf, r.len, &acc);
  tap_ok(acc.bound_dgram == 1, "a bound datagram socket");
  unix_reply(&r, SOCK_DGRAM, 1);
  reply_attr(&r, UNIX_DIAG_PEER, &no_peer, sizeof(no_peer));
  memwatch_sock_add(AF_UNIX, r.buf, r.len, &acc);
  tap_ok(acc.orphaned == 3 && acc.bound_dgram == 1, "a datagram socket whose peer closed: orphaned");
  tap_ok(acc.sockets == 8, "eight unix sockets");

  struct inet_diag_msg im = {.idiag_family = AF_INET6};
  reply_head(&r, &im, sizeof(im));
  reply_attr(&r, INET_DIAG_SKMEMINFO, mem, sizeof(mem));
  uint64_t before = acc.bytes;
  memwatch_sock_add(AF_INET6, r.buf, r.len, &acc);
  tap_ok(acc.bytes == before + 20118 && acc.sockets == 9, "a TCP socket: its queues");
  reply_head(&r, &im, sizeof(im));
  reply_attr(&r, INET_DIAG_SKMEMINFO, mem, 2 * sizeof(uint32_t));
  memwatch_sock_add(AF_INET, r.buf, r.len, &acc);
  tap_ok(acc.bytes == before + 20218, "an older kernel's shorter meminfo: what it has");
  struct netlink_diag_msg nm = {.ndiag_family = AF_NETLINK};
  reply_head(&r, &nm, sizeof(nm));
  reply_attr(&r, NETLINK_DIAG_MEMINFO, mem, sizeof(mem));
  memwatch_sock_add(AF_NETLINK, r.buf, r.len, &acc);
  tap_ok(acc.bytes == before + 40336 && acc.sockets == 11, "a netlink socket: its queues");
  memwatch_sock_add(AF_UNIX, r.buf, 3, &acc);
  memwatch_sock_add(AF_PACKET, r.buf, r.len, &acc);
  tap_ok(acc.sockets == 11, "a short reply, another family: nothing");
  /* An attribute that claims more than the reply holds. */
  unix_reply(&r, SOCK_STREAM, 1);
  reply_attr(&r, UNIX_DIAG_MEMINFO, mem, sizeof(mem));
  memwatch_sock_add(AF_UNIX, r.buf, r.len - 8, &acc);
  tap_ok(acc.sockets == 12 && acc.bytes == before + 40336, "a cut attribute is not read");

  struct memwatch_socks s = {
      .bytes = 1000, .sockets = 2, .orphaned = 1, .embryos = 3, .unaccepted = 1, .bound_dgram = 1};
  uint64_t sender = 2 * 425984 + 65536;
  tap_ok(memwatch_socks_bytes(&s, 212992, 212992, 10) == 1000 + 2 * MEMWATCH_SOCKET_COST + (1 + 2 + 11) * sender,
         "hidden: a sender's worst behind each orphan, waiting connection and bound datagram socket's queue");
  s.unaccepted = 5;
  tap_ok(memwatch_socks_bytes(&s, 212992, 212992, 10) == 1000 + 2 * MEMWATCH_SOCKET_COST + (1 + 11) * sender,
         "waiting connections of live clients: charged to the clients");
  tap_ok(memwatch_socks_bytes(&s, 4 << 20, 212992, 0) == 1000 + 2 * MEMWATCH_SOCKET_COST + 2 * ((16u << 20) + 65536),
         "wmem_max 4 MiB: 16 MiB and a packet per sender");
}

static void test_memwatch_inet(void) {
  const char *st = "sockets: used 21\nTCP: inuse 1 orphan 0 tw 12 alloc 1 mem 37\nUDP: inuse 0 mem 0\n"
                   "UDPLITE: inuse 0\n";
  uint64_t v = 99;
  tap_ok(memwatch_sockstat_field(st, "TCP:", "inuse", &v) && v == 1, "sockstat: TCP inuse");
  tap_ok(memwatch_sockstat_field(st, "TCP:", "tw", &v) && v == 12, "sockstat: TCP tw");
  tap_ok(memwatch_sockstat_field(st, "UDP:", "inuse", &v) && v == 0, "sockstat: UDP inuse, not UDPLITE's");
  tap_ok(!memwatch_sockstat_field(st, "TCP6:", "inuse", &v), "sockstat: no such line");
  tap_ok(!memwatch_sockstat_field(st, "TCP:", "in", &v), "sockstat: a field's name whole, not a prefix");
  tap_ok(!memwatch_sockstat_field("TCP: inuse x\n", "TCP:", "inuse", &v), "sockstat: no number");
  tap_ok(memwatch_sockstat_field("TCP6: inuse 3", "TCP6:", "inuse", &v) && v == 3, "sockstat6, no newline at the end");

  uint64_t g = 1ull << 30;
  tap_ok(memwatch_inet_due(MEMWATCH_INET_INTERVAL_MS, 0, 2 * g, 2), "TCP and UDP: due after their interval");
  tap_ok(!memwatch_inet_due(20, 0, 2 * g, 2), "not at every look, far from the limit");
  tap_ok(memwatch_inet_due(20, 2 * g - (512ull << 20), 2 * g, 2),
         "at every look within what 2 CPUs could queue in an interval (819 MiB)");
  tap_ok(!memwatch_inet_due(20, 2 * g - (900ull << 20), 2 * g, 2), "but not 900 MiB away");
  tap_ok(memwatch_inet_due(0, 3 * g, 2 * g, 1), "past the limit: at once");
}

int main(void) {
  test_new_limits();
  test_memwatch_inet();
  test_memwatch_socks();
  test_pools();
  test_sizes();
  test_cpus();
  test_plan();
  test_kernel_text();
  test_policy();
  return tap_done();
}
