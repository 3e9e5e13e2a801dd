/* SPDX-License-Identifier: Apache-2.0 */
/* The [network] policy: host matching, address classes, CIDRs, overrides,
 * and the [network] section of a policy file. */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "net_policy.h"
#include "policy.h"
#include "tap.h"
#include "util.h"

static struct sockaddr_storage addr(const char *text) {
  struct sockaddr_storage ss = {0};
  if (inet_pton(AF_INET, text, &((struct sockaddr_in *)&ss)->sin_addr) == 1)
    ss.ss_family = AF_INET;
  else if (inet_pton(AF_INET6, text, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1)
    ss.ss_family = AF_INET6;
  return ss;
}

static const char *class_of(const char *text) {
  struct sockaddr_storage ss = addr(text);
  const char *c = net_address_class((struct sockaddr *)&ss);
  return c ? c : "public";
}

static bool host_ok(const struct net_policy *p, const char *host, unsigned port) {
  struct net_decision d;
  net_policy_decide_host(p, host, (uint16_t)port, &d);
  if (!d.allowed && d.reason[0] == '\0')
    printf("# refusal without a reason for %s:%u\n", host, port);
  return d.allowed && d.reason[0] == '\0';
}

static void set(struct net_policy *p, const char *key, const char *value) {
  _cleanup_error_ hutch_error_t err = NULL;
  if (net_policy_set(p, key, value, 7, &err) < 0)
    printf("# unexpected error for %s = %s\n", key, value);
}

static char *set_error(const char *key, const char *value) {
  struct net_policy p;
  net_policy_init(&p);
  hutch_error_t err = NULL;
  char *msg = NULL;
  if (net_policy_set(&p, key, value, 3, &err) < 0)
    msg = xstrdup(err->msg);
  hutch_error_free(&err);
  net_policy_clear(&p);
  return msg;
}

static void test_hosts(void) {
  struct net_policy p;
  net_policy_init(&p);
  tap_ok(!host_ok(&p, "pypi.org", 443), "nothing is allowed by default");
  set(&p, "allow", "pypi.org");
  set(&p, "allow", "*.pythonhosted.org");
  set(&p, "allow", "Example.COM:8443");
  set(&p, "allow", "10.1.2.3");
  set(&p, "allow", "[2001:db8::1]:8080");
  tap_ok(host_ok(&p, "pypi.org", 443), "exact host, port 443");
  tap_ok(host_ok(&p, "pypi.org", 80), "exact host, port 80");
  tap_ok(!host_ok(&p, "pypi.org", 8080), "exact host, another port refused");
  tap_ok(host_ok(&p, "PyPI.Org", 443), "matching ignores case");
  tap_ok(host_ok(&p, "pypi.org.", 443), "a trailing dot is ignored");
  tap_ok(!host_ok(&p, "www.pypi.org", 443), "an exact entry does not match subdomains");
  tap_ok(!host_ok(&p, "evilpypi.org", 443), "an exact entry does not match a longer name");
  tap_ok(host_ok(&p, "files.pythonhosted.org", 443), "wildcard matches a subdomain");
  tap_ok(host_ok(&p, "a.b.pythonhosted.org", 443), "wildcard matches deeper subdomains");
  tap_ok(!host_ok(&p, "pythonhosted.org", 443), "wildcard does not match the apex");
  tap_ok(!host_ok(&p, "evilpythonhosted.org", 443), "wildcard needs a label boundary");
  tap_ok(!host_ok(&p, "pythonhosted.org.evil.com", 443), "wildcard is a suffix match only");
  tap_ok(host_ok(&p, "example.com", 8443), "host:port entry allows its port");
  tap_ok(!host_ok(&p, "example.com", 443), "host:port entry allows only its port");
  tap_ok(host_ok(&p, "10.1.2.3", 80), "a listed IPv4 literal is allowed");
  tap_ok(!host_ok(&p, "10.1.2.4", 80), "an unlisted IPv4 literal is refused");
  tap_ok(host_ok(&p, "2001:db8:0::1", 8080), "a listed IPv6 literal matches in any spelling");
  tap_ok(!host_ok(&p, "2001:db8::1", 443), "the IPv6 entry's port only");
  tap_ok(!host_ok(&p, "", 443), "empty host refused");
  tap_ok(!host_ok(&p, "pypi.org", 0), "port 0 refused");

  struct net_decision d;
  net_policy_decide_host(&p, "files.pythonhosted.org", 443, &d);
  tap_is_str(d.rule, "allow *.pythonhosted.org (policy:7)", "the rule names the entry and its line");
  net_policy_decide_host(&p, "1.2.3.4", 443, &d);
  tap_is_str(d.rule, "address literal not listed", "IP literal refusal rule");
  tap_ok(strstr(d.reason, "1.2.3.4") != NULL, "IP literal refusal reason names it");
  net_policy_decide_host(&p, "nope.example", 443, &d);
  tap_is_str(d.rule, "host not listed", "unlisted host rule");
  net_policy_decide_host(&p, "pypi.org", 22, &d);
  tap_is_str(d.rule, "port not allowed", "listed host, wrong port rule");

  set(&p, "allow_address", "192.168.7.0/24");
  tap_ok(host_ok(&p, "192.168.7.9", 443), "a literal inside allow_address is allowed");
  tap_ok(!host_ok(&p, "192.168.7.9", 22), "allow_address literal: the policy's ports only");
  set(&p, "ports", "22, 443");
  tap_ok(host_ok(&p, "pypi.org", 22) && !host_ok(&p, "pypi.org", 80), "ports replaces the default list");

  struct net_policy copy;
  net_policy_copy(&copy, &p);
  net_policy_clear(&p);
  tap_ok(host_ok(&copy, "a.pythonhosted.org", 443), "a deep copy outlives the original");
  net_policy_clear(&copy);
}

static void test_classes(void) {
  static const struct {
    char addr[40];
    char class[16];
  } cases[] = {
      {"8.8.8.8", "public"},
      {"151.101.0.223", "public"},
      {"127.0.0.1", "loopback"},
      {"127.255.255.254", "loopback"},
      {"10.0.0.1", "private"},
      {"172.16.0.1", "private"},
      {"172.31.255.255", "private"},
      {"172.32.0.1", "public"},
      {"192.168.1.1", "private"},
      {"169.254.169.254", "link-local"},
      {"100.64.0.1", "cgnat"},
      {"100.127.255.255", "cgnat"},
      {"100.128.0.1", "public"},
      {"224.0.0.251", "multicast"},
      {"239.255.255.250", "multicast"},
      {"0.0.0.0", "unspecified"},
      {"0.1.2.3", "unspecified"},
      {"240.0.0.1", "reserved"},
      {"255.255.255.255", "reserved"},
      {"192.0.2.5", "reserved"},
      {"198.18.0.1", "reserved"},
      {"2606:4700::1111", "public"},
      {"::1", "loopback"},
      {"::", "unspecified"},
      {"fc00::1", "private"},
      {"fd12:3456::1", "private"},
      {"fe80::1", "link-local"},
      {"ff02::1", "multicast"},
      {"2001:db8::1", "reserved"},
      {"2001:0:4136:e378:8000:63bf:3fff:fdd2", "reserved"},
      {"2001:2::1", "reserved"},
      {"3fff::1", "reserved"},
      {"2001:4860:4860::8888", "public"},
      {"::ffff:127.0.0.1", "loopback"},
      {"::ffff:169.254.169.254", "link-local"},
      {"::ffff:10.0.0.1", "private"},
      {"::ffff:8.8.8.8", "public"},
      {"64:ff9b::7f00:1", "loopback"},
      {"64:ff9b::a9fe:a9fe", "link-local"},
      {"64:ff9b::808:808", "public"},
      {"::127.0.0.1", "loopback"},
      {"2002:7f00:1::", "loopback"},
      {"2002:0808:0808::", "public"},
      {"4000::1", "reserved"},
  };
  for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
    const char *got = class_of(cases[i].addr);
    tap_ok(strcmp(got, cases[i].class) == 0, "%s is %s", cases[i].addr, cases[i].class);
    if (strcmp(got, cases[i].class) != 0)
      printf("#   got %s\n", got);
  }
}

static bool addr_ok(const struct net_policy *p, const char *text, bool override) {
  struct sockaddr_storage ss = addr(text);
  struct net_decision d;
  net_policy_decide_address(p, (struct sockaddr *)&ss, override, false, &d);
  return d.allowed;
}

static void test_addresses(void) {
  struct net_policy p;
  net_policy_init(&p);
  tap_ok(addr_ok(&p, "93.184.216.34", false), "a public address is allowed");
  tap_ok(!addr_ok(&p, "127.0.0.1", false), "loopback refused");
  tap_ok(!addr_ok(&p, "169.254.169.254", false), "the metadata endpoint refused");
  tap_ok(!addr_ok(&p, "::ffff:127.0.0.1", false), "IPv4-mapped loopback refused");
  tap_ok(addr_ok(&p, "127.0.0.1", true), "an address from a resolve override is allowed");
  set(&p, "allow_address", "10.0.0.0/8");
  set(&p, "allow_address", "fd00::/8");
  tap_ok(addr_ok(&p, "10.200.0.1", false), "allow_address IPv4 range");
  tap_ok(addr_ok(&p, "::ffff:10.200.0.1", false), "allow_address covers the IPv4-mapped form");
  tap_ok(addr_ok(&p, "fd00::5", false), "allow_address IPv6 range");
  tap_ok(!addr_ok(&p, "fe80::5", false), "outside allow_address still refused");
  struct sockaddr_storage ss = addr("169.254.169.254");
  struct net_decision d;
  net_policy_decide_address(&p, (struct sockaddr *)&ss, false, false, &d);
  tap_is_str(d.rule, "link-local address", "refusal rule names the class");
  tap_ok(strstr(d.reason, "169.254.169.254") != NULL, "refusal reason names the address");
  net_policy_clear(&p);
}

static void test_cidr(void) {
  struct net_cidr c;
  tap_ok(net_cidr_parse("10.0.0.0/8", &c) && c.family == AF_INET && c.prefix == 8, "IPv4 CIDR");
  tap_ok(net_cidr_parse("127.0.0.1", &c) && c.prefix == 32, "a single IPv4 address is /32");
  tap_ok(net_cidr_parse("fc00::/7", &c) && c.family == AF_INET6 && c.prefix == 7, "IPv6 CIDR");
  tap_ok(net_cidr_parse("::1", &c) && c.prefix == 128, "a single IPv6 address is /128");
  tap_ok(!net_cidr_parse("10.0.0.1/8", &c), "host bits set: refused");
  tap_ok(!net_cidr_parse("10.0.0.0/33", &c), "IPv4 prefix over 32 refused");
  tap_ok(!net_cidr_parse("::/129", &c), "IPv6 prefix over 128 refused");
  tap_ok(!net_cidr_parse("10.0.0.0/", &c), "empty prefix refused");
  tap_ok(!net_cidr_parse("example.com/8", &c), "a name is not a CIDR");
  tap_ok(!net_cidr_parse("10.0.0.0/8x", &c), "trailing garbage refused");
  net_cidr_parse("192.168.0.0/16", &c);
  struct sockaddr_storage in = addr("192.168.44.1"), out = addr("192.169.0.1");
  tap_ok(net_cidr_contains(&c, (struct sockaddr *)&in) && !net_cidr_contains(&c, (struct sockaddr *)&out),
         "contains checks the prefix");
}

static void test_values(void) {
  struct net_policy p;
  net_policy_init(&p);
  tap_is_int(p.n_ports, 2, "default ports: two");
  tap_ok(p.ports[0] == 80 && p.ports[1] == 443, "default ports: 80 and 443");
  tap_is_int(p.max_connections, 256, "default max_connections");
  tap_ok(p.idle_timeout == 300.0, "default idle_timeout 300 s");
  tap_ok(p.sni_check && p.byte_budget == 0, "default sni_check yes, no byte budget");
  tap_ok(p.log_max == 4u << 20, "default log_max 4 MiB");
  _cleanup_error_ hutch_error_t err = NULL;
  tap_ok(net_policy_add_resolve(&p, "Mirror.Test.=127.0.0.1", &err) == 0, "--resolve NAME=ADDR");
  tap_ok(net_policy_add_resolve(&p, "v6.test=[::1]", &err) == 0, "--resolve with a bracketed IPv6 address");
  const struct net_resolve *r = net_policy_find_resolve(&p, "mirror.test");
  tap_ok(r != NULL && r->addr.ss_family == AF_INET, "the override is found case-insensitively, without the dot");
  tap_ok(net_policy_find_resolve(&p, "MIRROR.TEST.") != NULL, "lookup normalizes too");
  tap_ok(net_policy_find_resolve(&p, "other.test") == NULL, "no override for other names");
  r = net_policy_find_resolve(&p, "v6.test");
  tap_ok(r != NULL && r->addr.ss_family == AF_INET6, "IPv6 override");
  tap_ok(net_policy_add_allow(&p, "a.test:8080", &err) == 0 && p.allow[p.n_allow - 1].port == 8080,
         "--allow HOST:PORT");
  set(&p, "idle_timeout", "5m");
  tap_ok(p.idle_timeout == 300, "idle_timeout 5m");
  set(&p, "idle_timeout", "1.5");
  tap_ok(p.idle_timeout == 1.5, "idle_timeout 1.5 (seconds)");
  set(&p, "byte_budget", "10M");
  tap_ok(p.byte_budget == 10u << 20, "byte_budget 10M");
  set(&p, "byte_budget", "none");
  tap_ok(p.byte_budget == 0, "byte_budget none");
  set(&p, "log_max", "16K");
  tap_ok(p.log_max == 16u << 10, "log_max 16K, the least");
  set(&p, "log_max", "1G");
  tap_ok(p.log_max == 1u << 30, "log_max 1G");
  set(&p, "sni_check", "no");
  tap_ok(!p.sni_check, "sni_check no");
  tap_ok(net_policy_tls_required(&p, 443) && !net_policy_tls_required(&p, 80), "default tls_required: 443 only");
  set(&p, "tls_required", "443, 8443");
  tap_ok(net_policy_tls_required(&p, 8443) && net_policy_tls_required(&p, 443) && !net_policy_tls_required(&p, 80),
         "tls_required 443, 8443");
  set(&p, "tls_required", "all");
  tap_ok(net_policy_tls_required(&p, 80) && net_policy_tls_required(&p, 22), "tls_required all: every port");
  set(&p, "tls_required", "none");
  tap_ok(!net_policy_tls_required(&p, 443), "tls_required none");
  set(&p, "tls_required", "443");
  tap_ok(net_policy_tls_required(&p, 443) && !net_policy_tls_required(&p, 22), "tls_required after all: the list");
  set(&p, "max_connections", "2000");
  tap_is_int(p.max_connections, 2000, "max_connections");
  set(&p, "subnet", "10.90.0.0/16");
  tap_ok(p.subnet.addr[1] == 90 && p.subnet.prefix == 16, "subnet");
  net_policy_clear(&p);

  static const struct {
    const char *key, *value, *want;
  } bad[] = {
      {"allow", "*", "is only allowed as the first label"},
      {"allow", "*.", "empty name"},
      {"allow", "a.*.org", "'*' is only allowed as the first label"},
      {"allow", "exa mple.org", "only letters"},
      {"allow", "a..org", "empty label"},
      {"allow", "pypi.org:0", "bad port"},
      {"allow", "pypi.org:70000", "bad port"},
      {"allow", "pypi.org:x", "bad port"},
      {"allow", "[::1", "unterminated"},
      {"allow", "[nothex]:80", "bad IPv6 address"},
      {"allow", "2001:db8::1:80:zz", "not a host name or address"},
      {"allow_address", "10.0.0.1/8", "host bits must be zero"},
      {"allow_address", "nowhere", "not an address or range"},
      {"resolve", "name", "NAME=ADDRESS"},
      {"resolve", "name=host.example", "not an IPv4 or IPv6 address"},
      {"resolve", "=1.2.3.4", "bad name"},
      {"ports", "80,,x", "not a list of ports"},
      {"ports", "0", "not a list of ports"},
      {"max_connections", "0", "1 to 1000000"},
      {"max_connections", "-5", "1 to 1000000"},
      {"idle_timeout", "soon", "not a duration"},
      {"idle_timeout", "0", "out of range"},
      {"byte_budget", "lots", "not a size"},
      {"log_max", "8K", "at least 16K"},
      {"log_max", "none", "at least 16K"},
      {"log_max", "max", "at least 16K"},
      {"sni_check", "maybe", "not \"yes\" or \"no\""},
      {"tls_required", "yes", "not a list of ports"},
      {"tls_required", "", "empty list"},
      {"tls_required", "443,0", "not a list of ports"},
      {"subnet", "10.0.0.0/31", "IPv4 range from /8 to /30"},
      {"subnet", "fd00::/64", "IPv4 range"},
      {"frobnicate", "1", "unknown key"},
  };
  for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
    _cleanup_free_ char *msg = set_error(bad[i].key, bad[i].value);
    tap_ok(msg != NULL && strstr(msg, bad[i].want) != NULL, "%s = %s refused (%s)", bad[i].key, bad[i].value,
           bad[i].want);
    if (msg && !strstr(msg, bad[i].want))
      printf("#   got: %s\n", msg);
  }
}

static char *parse_msg(const char *text, struct policy_settings *out) {
  hutch_error_t err = NULL;
  struct policy_settings s;
  char *msg = NULL;
  if (policy_parse(text, "t.policy", &s, &err) < 0)
    msg = xstrdup(err->msg);
  else if (out)
    *out = s;
  else
    policy_settings_clear(&s);
  hutch_error_free(&err);
  return msg;
}

static void test_policy_section(void) {
  struct policy_settings s;
  const char *text = "[sandbox]\nseccomp = s.json\n[network]\n"
                     "allow = pypi.org   # the index\n"
                     "allow = *.pythonhosted.org\n"
                     "allow_address = 10.0.0.0/8\n"
                     "allow_address = fd00::/8\n"
                     "resolve = mirror.test=127.0.0.1\n"
                     "resolve = other.test=127.0.0.2\n"
                     "ports = 80, 443, 8080\n"
                     "max_connections = 64\n"
                     "idle_timeout = 30s\n"
                     "byte_budget = 1G\n"
                     "sni_check = no\n";
  _cleanup_free_ char *msg = parse_msg(text, &s);
  tap_ok(msg == NULL, "a [network] section parses");
  if (msg)
    printf("#   %s\n", msg);
  if (msg == NULL) {
    tap_is_int(s.network.n_allow, 2, "allow repeats");
    tap_is_int(s.network.allow[1].line, 5, "allow entries keep their line");
    tap_is_int(s.network.n_allow_address, 2, "allow_address repeats");
    tap_is_int(s.network.n_resolve, 2, "resolve repeats");
    tap_is_int(s.network.n_ports, 3, "ports list");
    tap_is_int(s.network.max_connections, 64, "max_connections");
    tap_ok(s.network.idle_timeout == 30 && s.network.byte_budget == 1ull << 30 && !s.network.sni_check,
           "idle_timeout, byte_budget, sni_check");
    struct net_decision d;
    net_policy_decide_host(&s.network, "files.pythonhosted.org", 443, &d);
    tap_is_str(d.rule, "allow *.pythonhosted.org (t.policy:5)", "the rule names file and line");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    net_policy_describe(&s.network, f);
    fclose(f);
    tap_ok(strstr(buf, "*.pythonhosted.org (t.policy:5)") && strstr(buf, "max_connections: 64") &&
               strstr(buf, "resolve: mirror.test -> 127.0.0.1"),
           "describe lists entries, limits and overrides");
    tap_ok(strstr(buf, "  tls_required: 443 (") != NULL, "describe shows tls_required, 443 by default");
    tap_ok(strstr(buf, "  log_max: 4 MiB (") != NULL, "describe shows log_max, 4 MiB by default");
    free(buf);
    policy_settings_clear(&s);
  }
  char *none = parse_msg("[sandbox]\nseccomp = s.json\n", &s);
  tap_ok(none == NULL && s.network.n_allow == 0 && s.network.n_ports == 2 && s.network.sni_check,
         "without [network]: the defaults, nothing allowed");
  if (none == NULL)
    policy_settings_clear(&s);
  free(none);

  static const struct {
    const char *text, *want;
  } bad[] = {
      {"[sandbox]\nseccomp = s\n[network]\nports = 80\nports = 443\n",
       "t.policy:5: duplicate key \"ports\" (first set on line 4)"},
      {"[sandbox]\nseccomp = s\n[network]\nsni_check = yes\nsni_check = no\n",
       "t.policy:5: duplicate key \"sni_check\""},
      {"[sandbox]\nseccomp = s\n[network]\ntls_required = 443\ntls_required = none\n",
       "t.policy:5: duplicate key \"tls_required\""},
      {"[sandbox]\nseccomp = s\n[network]\nallow = a b\n", "t.policy:4: bad value for allow: \"a b\""},
      {"[sandbox]\nseccomp = s\n[network]\nallow = ok.org\nallow = *\n", "t.policy:5: bad value for allow: \"*\""},
      {"[sandbox]\nseccomp = s\n[network]\nallow_address = 1.2.3.4/40\n", "t.policy:4: bad value for allow_address"},
      {"[sandbox]\nseccomp = s\n[network]\nresolve = x\n",
       "t.policy:4: bad value for resolve: \"x\": expected NAME=ADDRESS"},
      {"[sandbox]\nseccomp = s\n[network]\nidle_timeout = never\n", "t.policy:4: bad value for idle_timeout"},
      {"[sandbox]\nseccomp = s\n[network]\nproxy = yes\n", "t.policy:4: unknown key \"proxy\" in [network]"},
      {"[sandbox]\nseccomp = s\n[network]\nallow =\n", "t.policy:4: allow: empty value"},
  };
  for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
    _cleanup_free_ char *m = parse_msg(bad[i].text, NULL);
    tap_ok(m != NULL && strstr(m, bad[i].want) != NULL, "[network] error: %s", bad[i].want);
    if (m && !strstr(m, bad[i].want))
      printf("#   got: %s\n", m);
  }
}

/* The address decision for a host admitted by `allow = public`. */
static bool public_addr_ok(const struct net_policy *p, const char *text, bool override) {
  struct sockaddr_storage ss = addr(text);
  struct net_decision d;
  net_policy_decide_address(p, (struct sockaddr *)&ss, override, true, &d);
  return d.allowed;
}

static void test_public(void) {
  struct net_policy p;
  net_policy_init(&p);
  set(&p, "allow", "pypi.org");
  struct net_decision d;
  net_policy_decide_host(&p, "example.org", 443, &d);
  tap_ok(!d.allowed, "without `allow = public` an unlisted name is refused");
  set(&p, "allow", "public");
  net_policy_decide_host(&p, "example.org", 443, &d);
  tap_ok(d.allowed && d.public_only, "`allow = public` admits any name, addresses to be checked");
  tap_is_str(d.rule, "allow public (policy:7)", "its rule names the entry");
  net_policy_decide_host(&p, "PyPI.org.", 443, &d);
  tap_ok(d.allowed && !d.public_only, "a name listed itself is allowed by its own entry first");
  tap_is_str(d.rule, "allow pypi.org (policy:7)", "and its rule is that entry's");
  net_policy_decide_host(&p, "example.org", 22, &d);
  tap_ok(!d.allowed, "public: only the policy's ports");
  net_policy_decide_host(&p, "93.184.216.34", 443, &d);
  tap_ok(!d.allowed, "public: an address literal is not a name, refused unless listed");
  tap_ok(public_addr_ok(&p, "93.184.216.34", false), "public: a public IPv4 address");
  tap_ok(public_addr_ok(&p, "2606:4700::1111", false), "public: a public IPv6 address");
  static const char *const internal[] = {
      "127.0.0.1",  "10.1.2.3",      "172.16.0.1", "192.168.1.1",      "169.254.169.254",
      "100.64.0.1", "0.0.0.0",       "224.0.0.1",  "240.0.0.1",        "192.0.2.1",
      "::1",        "fd00:ec2::254", "fe80::1",    "::ffff:127.0.0.1", "2002:7f00:1::1",
  };
  for (size_t i = 0; i < ARRAY_SIZE(internal); i++)
    tap_ok(!public_addr_ok(&p, internal[i], false), "public: %s (%s) refused", internal[i], class_of(internal[i]));
  tap_ok(!public_addr_ok(&p, "127.0.0.1", true), "public: a resolve override to loopback is refused too");
  set(&p, "allow_address", "10.0.0.0/8");
  tap_ok(!public_addr_ok(&p, "10.1.2.3", false), "public: allow_address does not widen it");
  tap_ok(addr_ok(&p, "10.1.2.3", false), "while a listed name still gets allow_address");
  struct sockaddr_storage ss = addr("192.168.1.1");
  net_policy_decide_address(&p, (struct sockaddr *)&ss, false, true, &d);
  tap_is_str(d.rule, "private address", "public: the refusal names the class");
  tap_ok(strstr(d.reason, "allow public") != NULL, "and says why public does not reach it");
  net_policy_clear(&p);

  net_policy_init(&p);
  set(&p, "allow", "public:8080");
  net_policy_decide_host(&p, "example.org", 8080, &d);
  tap_ok(d.allowed && d.public_only, "public:PORT admits that port");
  net_policy_decide_host(&p, "example.org", 443, &d);
  tap_ok(!d.allowed, "and no other");
  net_policy_clear(&p);
  _cleanup_free_ char *bad = set_error("allow", "public:0");
  tap_ok(bad && strstr(bad, "bad port"), "public:0 refused");
  _cleanup_free_ char *bad2 = set_error("allow", "*.public");
  tap_ok(bad2 == NULL, "*.public is an ordinary pattern");
}

static void test_run_key(void) {
  struct net_policy p;
  net_policy_init(&p);
  tap_ok(!p.run_proxy, "hutch run: --net none without `run`");
  set(&p, "run", "proxy");
  tap_ok(p.run_proxy && p.run_line == 7, "run = proxy");
  set(&p, "run", "none");
  tap_ok(!p.run_proxy, "run = none");
  _cleanup_free_ char *bad = set_error("run", "host");
  tap_ok(bad && strstr(bad, "not \"proxy\" or \"none\""), "run = host refused");
  set(&p, "run", "proxy");
  set(&p, "allow", "public");
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  net_policy_describe(&p, f);
  fclose(f);
  tap_ok(strstr(buf, "hutch run: --net proxy by default") != NULL, "describe says what hutch run gets");
  tap_ok(strstr(buf, "hutch exec and hutch create: --net none") != NULL, "and what hutch exec gets");
  tap_ok(strstr(buf, "public: any host name whose addresses are all public") != NULL, "describe explains public");
  free(buf);
  net_policy_clear(&p);
}

int main(void) {
  test_hosts();
  test_classes();
  test_addresses();
  test_cidr();
  test_values();
  test_policy_section();
  test_public();
  test_run_key();
  return tap_done();
}
