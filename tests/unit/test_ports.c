/* SPDX-License-Identifier: Apache-2.0 */
/* Published ports: the requested ports' syntax, which addresses a policy
 * lets a port be published on, and the state.json member read back. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "net_policy.h"
#include "port_relay.h"
#include "tap.h"
#include "util.h"

static bool check(const char *addr, unsigned short port) {
  struct hutch_port p = {.host_addr = addr, .host_port = 0, .port = port};
  _cleanup_error_ hutch_error_t err = NULL;
  return ports_check(&p, 1, &err) == 0;
}

int main(void) {
  tap_ok(check(NULL, 80), "no address: loopback");
  tap_ok(check("::1", 80), "an IPv6 literal");
  tap_ok(!check("localhost", 80), "a host name refused: literals only");
  tap_ok(!check("127.0.0.1", 0), "sandbox port 0 refused");
  struct hutch_port many[PORTS_MAX + 1];
  for (size_t i = 0; i < ARRAY_SIZE(many); i++)
    many[i] = (struct hutch_port){.port = 80};
  _cleanup_error_ hutch_error_t err = NULL;
  tap_ok(ports_check(many, PORTS_MAX, &err) == 0, "%d ports", PORTS_MAX);
  tap_ok(ports_check(many, PORTS_MAX + 1, &err) < 0 && err->errnum == EINVAL, "one more refused");

  struct net_policy p;
  net_policy_init(&p);
  tap_ok(ports_address_allowed(&p, "127.0.0.1"), "127.0.0.1 always");
  tap_ok(ports_address_allowed(&p, "127.255.0.9"), "all of 127/8");
  tap_ok(ports_address_allowed(&p, "::1"), "::1");
  tap_ok(!ports_address_allowed(&p, "0.0.0.0"), "0.0.0.0 refused by default");
  tap_ok(!ports_address_allowed(&p, "::"), ":: refused by default");
  tap_ok(!ports_address_allowed(&p, "192.168.1.5"), "a private address refused by default");
  tap_ok(!ports_address_allowed(&p, "::ffff:127.0.0.1"), "a v4-mapped loopback is not ::1");
  tap_ok(!ports_address_allowed(&p, "not an address"), "garbage refused");
  _cleanup_error_ hutch_error_t perr = NULL;
  tap_ok(net_policy_set(&p, "publish_address", "192.168.1.0/24", 3, &perr) == 0, "publish_address parses");
  tap_ok(ports_address_allowed(&p, "192.168.1.5"), "an address in its range allowed");
  tap_ok(!ports_address_allowed(&p, "192.168.2.5"), "one outside still refused");
  tap_ok(!ports_address_allowed(&p, "0.0.0.0"), "0.0.0.0 is not in a /24");
  tap_ok(net_policy_set(&p, "publish_address", "0.0.0.0", 4, &perr) == 0, "a second one");
  tap_ok(ports_address_allowed(&p, "0.0.0.0"), "0.0.0.0 when listed");
  tap_ok(net_policy_set(&p, "publish_address", "10.0.0.1/8", 5, &perr) < 0, "host bits set refused");
  net_policy_clear(&p);

  struct port_set s = {.n = 2};
  snprintf(s.pub[0].host_addr, sizeof(s.pub[0].host_addr), "127.0.0.1");
  s.pub[0].host_port = 8080;
  s.pub[0].port = 80;
  snprintf(s.pub[1].host_addr, sizeof(s.pub[1].host_addr), "::1");
  s.pub[1].host_port = 40000;
  s.pub[1].port = 8888;
  cJSON *rec = ports_state_json(&s, 1234, 99);
  struct hutch_published_port *got = NULL;
  size_t n = 0;
  ports_from_state(rec, &got, &n);
  tap_ok(n == 2 && memcmp(got, s.pub, 2 * sizeof(*got)) == 0, "the state member reads back as written");
  free(got);
  cJSON_Delete(rec);
  cJSON *bad = cJSON_Parse("{\"published\":[[\"127.0.0.1\",70000,80],[\"127.0.0.1\",1],\"x\",[\"::1\",5,6]]}");
  ports_from_state(bad, &got, &n);
  tap_ok(n == 1 && strcmp(got[0].host_addr, "::1") == 0 && got[0].host_port == 5 && got[0].port == 6,
         "a bad entry is left out");
  free(got);
  cJSON_Delete(bad);
  ports_from_state(NULL, &got, &n);
  tap_ok(n == 0 && got == NULL, "no member: no ports");
  return tap_done();
}
