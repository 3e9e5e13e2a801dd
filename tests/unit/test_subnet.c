/* SPDX-License-Identifier: Apache-2.0 */
/* The pure part of the per-sandbox subnet allocation. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>

#include "subnet.h"
#include "tap.h"

static struct net_cidr cidr(const char *addr, unsigned prefix) {
  struct net_cidr c = {.family = AF_INET, .prefix = prefix};
  inet_pton(AF_INET, addr, c.addr);
  return c;
}

static uint32_t ip(const char *addr) {
  struct in_addr in;
  inet_pton(AF_INET, addr, &in);
  return ntohl(in.s_addr);
}

int main(void) {
  struct net_cidr range = cidr("10.89.0.0", 16);
  uint32_t b = 0;
  char s[16];

  tap_is_int(subnet_pick(&range, NULL, 0, &b), 0, "an empty table gives a block");
  subnet_ntoa(b, s);
  tap_is_str(s, "10.89.0.0", "the first block of the range: gateway .1, sandbox .2");

  struct subnet_entry used[3] = {{.block = ip("10.89.0.0")}, {.block = ip("10.89.0.8")}, {.block = ip("10.89.0.4")}};
  subnet_pick(&range, used, 3, &b);
  subnet_ntoa(b, s);
  tap_is_str(s, "10.89.0.12", "the lowest free block after the used ones, whatever their order");
  subnet_pick(&range, used, 2, &b);
  subnet_ntoa(b, s);
  tap_is_str(s, "10.89.0.4", "a hole left by a freed block is reused");

  struct net_cidr unaligned = cidr("10.89.3.77", 24);
  subnet_pick(&unaligned, NULL, 0, &b);
  subnet_ntoa(b, s);
  tap_is_str(s, "10.89.3.0", "host bits of the range are ignored");

  struct net_cidr tiny = cidr("192.168.7.8", 30);
  struct subnet_entry one = {.block = ip("192.168.7.8")};
  tap_is_int(subnet_pick(&tiny, NULL, 0, &b), 0, "a /30 range holds one block");
  errno = 0;
  tap_ok(subnet_pick(&tiny, &one, 1, &b) < 0 && errno == ENOSPC, "a full range: ENOSPC");
  struct net_cidr too_small = cidr("10.0.0.0", 31);
  errno = 0;
  tap_ok(subnet_pick(&too_small, NULL, 0, &b) < 0 && errno == EINVAL, "a /31 range: EINVAL");
  struct net_cidr v6 = {.family = AF_INET6, .prefix = 64};
  errno = 0;
  tap_ok(subnet_pick(&v6, NULL, 0, &b) < 0 && errno == EINVAL, "an IPv6 range: EINVAL");

  /* A /22 has 256 blocks: fill them all, the next pick fails. */
  struct net_cidr r22 = cidr("10.1.4.0", 22);
  struct subnet_entry *all = calloc(256, sizeof(*all));
  size_t n = 0;
  while (n < 256 && subnet_pick(&r22, all, n, &all[n].block) == 0)
    n++;
  tap_is_int(n, 256, "a /22 gives 256 distinct blocks");
  subnet_ntoa(all[255].block, s);
  tap_is_str(s, "10.1.7.252", "the last block of the /22");
  errno = 0;
  tap_ok(subnet_pick(&r22, all, n, &b) < 0 && errno == ENOSPC, "then the range is full");
  free(all);

  struct subnet_entry e;
  tap_ok(subnet_parse_line("10.89.0.4 0a1b2c3d4e5f 1234 987654321", &e), "a table line parses");
  subnet_ntoa(e.block, s);
  tap_is_str(s, "10.89.0.4", "its block");
  tap_is_str(e.id, "0a1b2c3d4e5f", "its sandbox");
  tap_is_int(e.pid, 1234, "its pid");
  tap_ok(e.start_time == 987654321ULL, "its start time");
  tap_ok(!subnet_parse_line("10.89.0.5 id 1 2", &e), "an unaligned block is refused");
  tap_ok(!subnet_parse_line("10.89.0.4 id 1", &e), "a short line is refused");
  tap_ok(!subnet_parse_line("10.89.0.4 id 1 2 extra", &e), "a long line is refused");
  tap_ok(!subnet_parse_line("10.89.0.400 id 1 2", &e), "a bad address is refused");
  tap_ok(!subnet_parse_line("10.89.0.4 id -3 2", &e), "a bad pid is refused");

  struct subnet_entry two[2] = {{.block = ip("10.89.0.0"), .id = "aa", .pid = 10, .start_time = 5},
                                {.block = ip("10.89.1.0"), .id = "bb", .pid = 11, .start_time = 6}};
  char *text = subnet_format(two, 2);
  tap_is_str(text, "10.89.0.0 aa 10 5\n10.89.1.0 bb 11 6\n", "the table's text");
  free(text);
  return tap_done();
}
