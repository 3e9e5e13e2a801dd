/* SPDX-License-Identifier: Apache-2.0 */
/* The [network] policy: parsing its values and deciding requests.  Pure
 * code (no I/O, no resolving) so that every rule has a unit test. */
#include "config.h"

#include "net_policy.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <math.h>
#include <netinet/in.h>
#include <string.h>
#include <strings.h>

#include "resource_limits.h"
#include "util.h"

#define DEFAULT_MAX_CONNECTIONS 256
#define DEFAULT_IDLE_TIMEOUT 300.0
/* The proxy's log: about 14,000 requests of a few hundred bytes each, far
 * more than a session of package installs makes, and little on the disk
 * of a host that runs many sandboxes (or keeps many run directories). */
#define DEFAULT_LOG_MAX ((uint64_t)4 << 20)

void net_policy_init(struct net_policy *p) {
  *p = (struct net_policy){0};
  p->ports[0] = 80;
  p->ports[1] = 443;
  p->n_ports = 2;
  p->max_connections = DEFAULT_MAX_CONNECTIONS;
  p->idle_timeout = DEFAULT_IDLE_TIMEOUT;
  p->log_max = DEFAULT_LOG_MAX;
  p->sni_check = true;
  p->tls_required[0] = 443;
  p->n_tls_required = 1;
  net_cidr_parse("10.89.0.0/16", &p->subnet);
}

void net_policy_clear(struct net_policy *p) {
  if (p == NULL)
    return;
  for (size_t i = 0; i < p->n_allow; i++)
    free(p->allow[i].pattern);
  free(p->allow);
  free(p->allow_address);
  free(p->publish_address);
  for (size_t i = 0; i < p->n_resolve; i++)
    free(p->resolve[i].name);
  free(p->resolve);
  free(p->source);
  *p = (struct net_policy){0};
}

void net_policy_copy(struct net_policy *dst, const struct net_policy *src) {
  *dst = *src;
  dst->allow = xcalloc(src->n_allow ? src->n_allow : 1, sizeof(*dst->allow));
  for (size_t i = 0; i < src->n_allow; i++) {
    dst->allow[i] = src->allow[i];
    dst->allow[i].pattern = xstrdup(src->allow[i].pattern);
  }
  dst->allow_address = xcalloc(src->n_allow_address ? src->n_allow_address : 1, sizeof(*dst->allow_address));
  if (src->n_allow_address)
    memcpy(dst->allow_address, src->allow_address, src->n_allow_address * sizeof(*dst->allow_address));
  dst->publish_address = xcalloc(src->n_publish_address ? src->n_publish_address : 1, sizeof(*dst->publish_address));
  if (src->n_publish_address)
    memcpy(dst->publish_address, src->publish_address, src->n_publish_address * sizeof(*dst->publish_address));
  dst->resolve = xcalloc(src->n_resolve ? src->n_resolve : 1, sizeof(*dst->resolve));
  for (size_t i = 0; i < src->n_resolve; i++) {
    dst->resolve[i] = src->resolve[i];
    dst->resolve[i].name = xstrdup(src->resolve[i].name);
  }
  dst->source = src->source ? xstrdup(src->source) : NULL;
}

/* ---- small parsers ------------------------------------------------------ */

bool net_host_normalize(const char *host, char *buf, size_t len) {
  size_t n = strlen(host);
  if (n > 0 && host[n - 1] == '.')
    n--;
  if (n == 0 || n >= len)
    return false;
  for (size_t i = 0; i < n; i++)
    buf[i] = (char)tolower((unsigned char)host[i]);
  buf[n] = '\0';
  return true;
}

/* An address literal into sockaddr form (port 0). */
static bool parse_ip(const char *text, struct sockaddr_storage *ss) {
  memset(ss, 0, sizeof(*ss));
  struct sockaddr_in *in = (struct sockaddr_in *)ss;
  struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
  if (inet_pton(AF_INET, text, &in->sin_addr) == 1) {
    in->sin_family = AF_INET;
    return true;
  }
  if (inet_pton(AF_INET6, text, &in6->sin6_addr) == 1) {
    in6->sin6_family = AF_INET6;
    return true;
  }
  return false;
}

static bool parse_uint_range(const char *s, unsigned long min, unsigned long max, unsigned long *out) {
  if (*s == '\0' || strlen(s) > 10)
    return false;
  unsigned long v = 0;
  for (; *s; s++) {
    if (!isdigit((unsigned char)*s))
      return false;
    v = v * 10 + (unsigned long)(*s - '0');
  }
  if (v < min || v > max)
    return false;
  *out = v;
  return true;
}

bool net_cidr_parse(const char *text, struct net_cidr *out) {
  char addr[64];
  const char *slash = strchr(text, '/');
  size_t n = slash ? (size_t)(slash - text) : strlen(text);
  if (n == 0 || n >= sizeof(addr))
    return false;
  memcpy(addr, text, n);
  addr[n] = '\0';
  struct net_cidr c = {0};
  if (inet_pton(AF_INET, addr, c.addr) == 1)
    c.family = AF_INET;
  else if (inet_pton(AF_INET6, addr, c.addr) == 1)
    c.family = AF_INET6;
  else
    return false;
  unsigned max = c.family == AF_INET ? 32 : 128;
  unsigned long prefix = max;
  if (slash && !parse_uint_range(slash + 1, 0, max, &prefix))
    return false;
  c.prefix = (unsigned)prefix;
  /* Host bits must be zero: "10.1.2.3/8" is more likely a typo than meant. */
  for (unsigned bit = c.prefix; bit < max; bit++)
    if (c.addr[bit / 8] & (0x80 >> (bit % 8)))
      return false;
  *out = c;
  return true;
}

static const uint8_t *sockaddr_bytes(const struct sockaddr *a, int *family) {
  *family = a->sa_family;
  if (a->sa_family == AF_INET)
    return (const uint8_t *)&((const struct sockaddr_in *)a)->sin_addr;
  if (a->sa_family == AF_INET6)
    return ((const struct sockaddr_in6 *)a)->sin6_addr.s6_addr;
  return NULL;
}

static bool prefix_match(const uint8_t *a, const uint8_t *b, unsigned prefix) {
  unsigned full = prefix / 8, rest = prefix % 8;
  if (memcmp(a, b, full) != 0)
    return false;
  if (rest == 0)
    return true;
  uint8_t mask = (uint8_t)(0xff << (8 - rest));
  return (a[full] & mask) == (b[full] & mask);
}

bool net_cidr_contains(const struct net_cidr *c, const struct sockaddr *addr) {
  int family;
  const uint8_t *b = sockaddr_bytes(addr, &family);
  if (b == NULL)
    return false;
  if (family == c->family)
    return prefix_match(c->addr, b, c->prefix);
  /* An IPv4-mapped IPv6 address is the IPv4 address. */
  static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (family == AF_INET6 && c->family == AF_INET && memcmp(b, mapped, 12) == 0)
    return prefix_match(c->addr, b + 12, c->prefix);
  return false;
}

void net_address_format(const struct sockaddr *addr, char *buf, size_t len) {
  int family;
  const uint8_t *b = sockaddr_bytes(addr, &family);
  if (b == NULL || inet_ntop(family, b, buf, (socklen_t)len) == NULL)
    snprintf(buf, len, "?");
}

/* ---- address classes ---------------------------------------------------- */

struct range {
  const char *cidr;
  const char *class;
};

/* Order matters only where ranges nest: the first match wins. */
static const struct range v4_ranges[] = {
    {"0.0.0.0/8", "unspecified"},    {"127.0.0.0/8", "loopback"},    {"10.0.0.0/8", "private"},
    {"172.16.0.0/12", "private"},    {"192.168.0.0/16", "private"},  {"169.254.0.0/16", "link-local"},
    {"100.64.0.0/10", "cgnat"},      {"224.0.0.0/4", "multicast"},   {"240.0.0.0/4", "reserved"},
    {"192.0.0.0/24", "reserved"},    {"192.0.2.0/24", "reserved"},   {"198.18.0.0/15", "reserved"},
    {"198.51.100.0/24", "reserved"}, {"203.0.113.0/24", "reserved"}, {"192.88.99.0/24", "reserved"},
};

static const struct range v6_ranges[] = {
    {"::/128", "unspecified"},
    {"::1/128", "loopback"},
    {"fc00::/7", "private"},
    {"fec0::/10", "private"},
    {"fe80::/10", "link-local"},
    {"ff00::/8", "multicast"},
    {"2001:db8::/32", "reserved"},
    {"100::/64", "reserved"},
    {"64:ff9b:1::/48", "private"},
    /* IETF protocol assignments, Teredo (2001::/32, whose tunnels carry an
     * IPv4 address of any class) among them; and documentation. */
    {"2001::/23", "reserved"},
    {"3fff::/20", "reserved"},
};

static const char *class_v4(const uint8_t *b) {
  struct sockaddr_in in = {.sin_family = AF_INET};
  memcpy(&in.sin_addr, b, 4);
  for (size_t i = 0; i < ARRAY_SIZE(v4_ranges); i++) {
    struct net_cidr c;
    if (net_cidr_parse(v4_ranges[i].cidr, &c) && net_cidr_contains(&c, (struct sockaddr *)&in))
      return v4_ranges[i].class;
  }
  return NULL;
}

const char *net_address_class(const struct sockaddr *addr) {
  int family;
  const uint8_t *b = sockaddr_bytes(addr, &family);
  if (b == NULL)
    return "reserved";
  if (family == AF_INET)
    return class_v4(b);
  /* Forms that carry an IPv4 address are judged by it: IPv4-mapped
   * (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d), NAT64 (64:ff9b::/96)
   * and 6to4 (2002:AABB:CCDD::). */
  static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  static const uint8_t compat[12] = {0};
  static const uint8_t nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
  if (memcmp(b, mapped, 12) == 0 || memcmp(b, nat64, 12) == 0)
    return class_v4(b + 12);
  if (memcmp(b, compat, 12) == 0 && (b[12] | b[13] | b[14] | b[15]) != 0 &&
      !(b[12] == 0 && b[13] == 0 && b[14] == 0 && b[15] == 1)) {
    const char *c = class_v4(b + 12);
    return c ? c : "reserved";
  }
  if (b[0] == 0x20 && b[1] == 0x02)
    return class_v4(b + 2);
  for (size_t i = 0; i < ARRAY_SIZE(v6_ranges); i++) {
    struct net_cidr c;
    if (net_cidr_parse(v6_ranges[i].cidr, &c) && net_cidr_contains(&c, addr))
      return v6_ranges[i].class;
  }
  /* Global unicast is 2000::/3; everything else is not assigned for it. */
  if ((b[0] & 0xe0) != 0x20)
    return "reserved";
  return NULL;
}

/* ---- keys --------------------------------------------------------------- */

static bool valid_host_char(char c) {
  return isalnum((unsigned char)c) || c == '-' || c == '.' || c == '_';
}

/* "host", "*.suffix", "1.2.3.4", "[::1]", "::1", each with an optional
 * ":PORT" (IPv6 only in brackets then).  Returns why not, or NULL. */
static const char *parse_allow(const char *entry, struct net_allow *out) {
  size_t word = strlen(NET_ALLOW_PUBLIC);
  if (strncmp(entry, NET_ALLOW_PUBLIC, word) == 0 && (entry[word] == '\0' || entry[word] == ':')) {
    unsigned long port = 0;
    if (entry[word] == ':' && !parse_uint_range(entry + word + 1, 1, 65535, &port))
      return "bad port (1 to 65535)";
    out->pattern = xstrdup(NET_ALLOW_PUBLIC);
    out->port = (uint16_t)port;
    out->public_hosts = true;
    return NULL;
  }
  char host[256];
  unsigned long port = 0;
  const char *port_text = NULL;
  size_t n;
  if (entry[0] == '[') {
    const char *end = strchr(entry, ']');
    if (end == NULL)
      return "unterminated '[' of an IPv6 address";
    n = (size_t)(end - entry - 1);
    if (n == 0 || n >= sizeof(host))
      return "bad IPv6 address";
    memcpy(host, entry + 1, n);
    host[n] = '\0';
    if (end[1] == ':')
      port_text = end + 2;
    else if (end[1] != '\0')
      return "text after ']'";
    struct in6_addr a;
    if (inet_pton(AF_INET6, host, &a) != 1)
      return "bad IPv6 address";
  } else {
    const char *colon = strchr(entry, ':');
    if (colon && strchr(colon + 1, ':')) {
      /* Several colons: a bare IPv6 address, which cannot carry a port. */
      struct in6_addr a;
      if (strlen(entry) >= sizeof(host) || inet_pton(AF_INET6, entry, &a) != 1)
        return "not a host name or address (write an IPv6 address with a port as [ADDR]:PORT)";
      snprintf(host, sizeof(host), "%s", entry);
    } else {
      n = colon ? (size_t)(colon - entry) : strlen(entry);
      if (n == 0)
        return "empty host";
      if (n >= sizeof(host))
        return "host name longer than 253 characters";
      memcpy(host, entry, n);
      host[n] = '\0';
      if (colon)
        port_text = colon + 1;
      const char *name = host;
      if (strncmp(name, "*.", 2) == 0)
        name += 2;
      if (*name == '\0' || *name == '.')
        return "empty name after \"*.\"";
      for (const char *c = name; *c; c++) {
        if (*c == '*')
          return "'*' is only allowed as the first label (\"*.example.org\")";
        if (!valid_host_char(*c))
          return "only letters, digits, '-', '_' and '.' are allowed in a host name";
      }
      if (strstr(name, ".."))
        return "empty label in the host name";
      if (strlen(name) > 253)
        return "host name longer than 253 characters";
    }
  }
  if (port_text && !parse_uint_range(port_text, 1, 65535, &port))
    return "bad port (1 to 65535)";
  char norm[256];
  if (!net_host_normalize(host, norm, sizeof(norm)))
    return "empty host";
  /* IPv6 literals are kept in inet_ntop's canonical form so that matching
   * is a string compare. */
  struct sockaddr_storage ss;
  if (parse_ip(norm, &ss))
    net_address_format((struct sockaddr *)&ss, norm, sizeof(norm));
  out->pattern = xstrdup(norm);
  out->port = (uint16_t)port;
  return NULL;
}

static const char *parse_resolve(const char *mapping, struct net_resolve *out) {
  const char *eq = strchr(mapping, '=');
  if (eq == NULL)
    return "expected NAME=ADDRESS";
  char name[256], addr[64];
  size_t n = (size_t)(eq - mapping);
  if (n == 0 || n >= sizeof(name))
    return "bad name";
  memcpy(name, mapping, n);
  name[n] = '\0';
  for (const char *c = name; *c; c++)
    if (!valid_host_char(*c))
      return "only letters, digits, '-', '_' and '.' are allowed in the name";
  const char *a = eq + 1;
  n = strlen(a);
  if (n >= 2 && a[0] == '[' && a[n - 1] == ']') {
    a++;
    n -= 2;
  }
  if (n == 0 || n >= sizeof(addr))
    return "bad address";
  memcpy(addr, a, n);
  addr[n] = '\0';
  char norm[256];
  if (!net_host_normalize(name, norm, sizeof(norm)))
    return "bad name";
  if (!parse_ip(addr, &out->addr))
    return "not an IPv4 or IPv6 address";
  out->name = xstrdup(norm);
  return NULL;
}

/* "80, 443" into out[NET_POLICY_MAX_PORTS]; *n untouched on error. */
static const char *parse_port_list(const char *value, uint16_t *out, size_t *n_out) {
  uint16_t ports[NET_POLICY_MAX_PORTS];
  size_t n = 0;
  _cleanup_free_ char *copy = xstrdup(value);
  char *cursor = copy, *tok;
  while ((tok = strsep(&cursor, ", \t")) != NULL) {
    if (*tok == '\0')
      continue;
    unsigned long v;
    if (!parse_uint_range(tok, 1, 65535, &v))
      return "not a list of ports from 1 to 65535 (\"80, 443\")";
    if (n == NET_POLICY_MAX_PORTS)
      return "more than 32 ports";
    ports[n++] = (uint16_t)v;
  }
  if (n == 0)
    return "empty list";
  memcpy(out, ports, sizeof(ports[0]) * n);
  *n_out = n;
  return NULL;
}

/* "443, 8443", "all" or "none". */
static const char *parse_tls_required(const char *value, struct net_policy *p) {
  if (strcmp(value, "none") == 0 || strcmp(value, "all") == 0) {
    p->n_tls_required = 0;
    p->tls_required_all = strcmp(value, "all") == 0;
    return NULL;
  }
  const char *why = parse_port_list(value, p->tls_required, &p->n_tls_required);
  if (why == NULL)
    p->tls_required_all = false;
  return why;
}

/* "300", "30s", "5m", "1h", "0.5": seconds. */
static const char *parse_seconds(const char *value, double *out) {
  char *end;
  errno = 0;
  double v = strtod(value, &end);
  if (end == value || errno != 0 || !isdigit((unsigned char)value[0]))
    return "not a duration (such as 30, 30s, 5m, 1h)";
  double scale = 1;
  if (strcmp(end, "s") == 0 || *end == '\0')
    scale = 1;
  else if (strcmp(end, "m") == 0)
    scale = 60;
  else if (strcmp(end, "h") == 0)
    scale = 3600;
  else
    return "not a duration (such as 30, 30s, 5m, 1h)";
  v *= scale;
  if (!isfinite(v) || v < 0.1 || v > 7 * 86400)
    return "out of range (0.1 s to 7 days)";
  *out = v;
  return NULL;
}

/* One more range of an address list (allow_address, publish_address). */
static const char *add_cidr(struct net_cidr **list, size_t *n, const char *value, unsigned line) {
  struct net_cidr c;
  if (!net_cidr_parse(value, &c))
    return "not an address or range (\"192.168.1.0/24\", \"fd00::/8\", \"127.0.0.1\"; host bits must be zero)";
  c.line = line;
  *list = xrealloc(*list, (*n + 1) * sizeof(**list));
  (*list)[(*n)++] = c;
  return NULL;
}

static const char *set_value(struct net_policy *p, const char *key, const char *value, unsigned line) {
  if (strcmp(key, "allow") == 0) {
    struct net_allow a = {.line = line};
    const char *why = parse_allow(value, &a);
    if (why)
      return why;
    p->allow = xrealloc(p->allow, (p->n_allow + 1) * sizeof(*p->allow));
    p->allow[p->n_allow++] = a;
    return NULL;
  }
  if (strcmp(key, "allow_address") == 0)
    return add_cidr(&p->allow_address, &p->n_allow_address, value, line);
  if (strcmp(key, "publish_address") == 0)
    return add_cidr(&p->publish_address, &p->n_publish_address, value, line);
  if (strcmp(key, "resolve") == 0) {
    struct net_resolve r = {.line = line};
    const char *why = parse_resolve(value, &r);
    if (why)
      return why;
    p->resolve = xrealloc(p->resolve, (p->n_resolve + 1) * sizeof(*p->resolve));
    p->resolve[p->n_resolve++] = r;
    return NULL;
  }
  if (strcmp(key, "ports") == 0)
    return parse_port_list(value, p->ports, &p->n_ports);
  if (strcmp(key, "tls_required") == 0)
    return parse_tls_required(value, p);
  if (strcmp(key, "max_connections") == 0) {
    unsigned long v;
    if (!parse_uint_range(value, 1, 1000000, &v))
      return "not a whole number from 1 to 1000000";
    p->max_connections = (unsigned)v;
    return NULL;
  }
  if (strcmp(key, "idle_timeout") == 0)
    return parse_seconds(value, &p->idle_timeout);
  if (strcmp(key, "byte_budget") == 0) {
    uint64_t v;
    if (strcmp(value, "none") == 0 || strcmp(value, "0") == 0)
      v = 0;
    else if (!limits_parse_size(value, false, &v))
      return "not a size (such as 100M, 2G) or \"none\"";
    p->byte_budget = v;
    return NULL;
  }
  if (strcmp(key, "log_max") == 0) {
    uint64_t v;
    /* No "none": the log is on the host's disk, written at the sandbox's
     * pace. */
    if (!limits_parse_size(value, false, &v) || v < NET_LOG_MAX_MIN)
      return "not a size of at least 16K (such as 4M, 64M)";
    p->log_max = v;
    return NULL;
  }
  if (strcmp(key, "sni_check") == 0) {
    if (strcmp(value, "yes") == 0)
      p->sni_check = true;
    else if (strcmp(value, "no") == 0)
      p->sni_check = false;
    else
      return "not \"yes\" or \"no\"";
    return NULL;
  }
  if (strcmp(key, "run") == 0) {
    if (strcmp(value, "proxy") != 0 && strcmp(value, "none") != 0)
      return "not \"proxy\" or \"none\"";
    p->run_proxy = strcmp(value, "proxy") == 0;
    p->run_line = line;
    return NULL;
  }
  if (strcmp(key, "subnet") == 0) {
    struct net_cidr c;
    if (!net_cidr_parse(value, &c) || c.family != AF_INET || c.prefix > 30 || c.prefix < 8)
      return "not an IPv4 range from /8 to /30 (\"10.89.0.0/16\")";
    p->subnet = c;
    return NULL;
  }
  return "unknown key";
}

static const char *const known_keys[] = {
    "allow",     "allow_address", "resolve", "ports", "max_connections", "idle_timeout", "byte_budget", "log_max",
    "sni_check", "tls_required",  "subnet",  "run",   "publish_address"};

bool net_policy_known_key(const char *key) {
  for (size_t i = 0; i < ARRAY_SIZE(known_keys); i++)
    if (strcmp(known_keys[i], key) == 0)
      return true;
  return false;
}

int net_policy_set(struct net_policy *p, const char *key, const char *value, unsigned line, hutch_error_t *err) {
  if (!net_policy_known_key(key))
    return hutch_error_set(err, 0, "unknown key \"%s\" in [network]", key);
  const char *why = set_value(p, key, value, line);
  if (why)
    return hutch_error_set(err, 0, "bad value for %s: \"%s\": %s", key, value, why);
  return 0;
}

int net_policy_add_allow(struct net_policy *p, const char *entry, hutch_error_t *err) {
  const char *why = set_value(p, "allow", entry, 0);
  if (why)
    return hutch_error_set(err, 0, "--allow \"%s\": %s", entry, why);
  return 0;
}

int net_policy_add_resolve(struct net_policy *p, const char *mapping, hutch_error_t *err) {
  const char *why = set_value(p, "resolve", mapping, 0);
  if (why)
    return hutch_error_set(err, 0, "--resolve \"%s\": %s", mapping, why);
  return 0;
}

/* ---- decisions ---------------------------------------------------------- */

/* "default.policy:40", or the option it came from. */
static void where(const struct net_policy *p, unsigned line, const char *option, char *buf, size_t len) {
  if (line == 0) {
    snprintf(buf, len, "%s", option);
    return;
  }
  const char *src = p->source ? p->source : "policy";
  const char *slash = strrchr(src, '/');
  snprintf(buf, len, "%s:%u", slash ? slash + 1 : src, line);
}

static bool port_in_policy(const struct net_policy *p, uint16_t port) {
  for (size_t i = 0; i < p->n_ports; i++)
    if (p->ports[i] == port)
      return true;
  return false;
}

static bool pattern_matches(const char *pattern, const char *host) {
  if (strncmp(pattern, "*.", 2) == 0) {
    const char *suffix = pattern + 1; /* ".example.org" */
    size_t hn = strlen(host), sn = strlen(suffix);
    return hn > sn && strcmp(host + hn - sn, suffix) == 0;
  }
  return strcmp(pattern, host) == 0;
}

/* The text of a range for rules and descriptions: "10.0.0.0/8". */
static void cidr_format(const struct net_cidr *c, char *buf, size_t len) {
  struct sockaddr_storage cs = {.ss_family = (sa_family_t)c->family};
  if (c->family == AF_INET)
    memcpy(&((struct sockaddr_in *)&cs)->sin_addr, c->addr, 4);
  else
    memcpy(&((struct sockaddr_in6 *)&cs)->sin6_addr, c->addr, 16);
  char text[64];
  net_address_format((struct sockaddr *)&cs, text, sizeof(text));
  snprintf(buf, len, "%s/%u", text, c->prefix);
}

void net_policy_decide_host(const struct net_policy *p, const char *host, uint16_t port, struct net_decision *out) {
  *out = (struct net_decision){0};
  char norm[256];
  if (!net_host_normalize(host, norm, sizeof(norm))) {
    snprintf(out->rule, sizeof(out->rule), "bad host");
    snprintf(out->reason, sizeof(out->reason), "empty or overlong host name");
    return;
  }
  if (port == 0) {
    snprintf(out->rule, sizeof(out->rule), "bad port");
    snprintf(out->reason, sizeof(out->reason), "port 0 is not allowed");
    return;
  }
  struct sockaddr_storage ss;
  bool literal = parse_ip(norm, &ss);
  if (literal)
    net_address_format((struct sockaddr *)&ss, norm, sizeof(norm));

  bool name_listed = false;
  char at[128];
  /* Entries naming the host first: they may reach addresses `public` would
   * not (a resolve override, allow_address), and their rule is the one the
   * audit log should name.  `public` admits names, never address literals. */
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < p->n_allow; i++) {
      const struct net_allow *a = &p->allow[i];
      if (a->public_hosts != (pass == 1))
        continue;
      if (a->public_hosts ? literal : !pattern_matches(a->pattern, norm))
        continue;
      name_listed = true;
      if (a->port ? a->port != port : !port_in_policy(p, port))
        continue;
      out->allowed = true;
      out->public_only = a->public_hosts;
      where(p, a->line, "--allow", at, sizeof(at));
      if (a->port)
        snprintf(out->rule, sizeof(out->rule), "allow %s:%u (%s)", a->pattern, a->port, at);
      else
        snprintf(out->rule, sizeof(out->rule), "allow %s (%s)", a->pattern, at);
      return;
    }
  }
  if (literal && port_in_policy(p, port)) {
    for (size_t i = 0; i < p->n_allow_address; i++) {
      const struct net_cidr *c = &p->allow_address[i];
      if (!net_cidr_contains(c, (struct sockaddr *)&ss))
        continue;
      char range[80];
      cidr_format(c, range, sizeof(range));
      where(p, c->line, "allow_address", at, sizeof(at));
      out->allowed = true;
      snprintf(out->rule, sizeof(out->rule), "allow_address %.60s (%.80s)", range, at);
      return;
    }
  }
  if (name_listed) {
    snprintf(out->rule, sizeof(out->rule), "port not allowed");
    snprintf(out->reason, sizeof(out->reason), "%.100s is allowed, but not on port %u", norm, port);
  } else if (literal) {
    snprintf(out->rule, sizeof(out->rule), "address literal not listed");
    snprintf(out->reason, sizeof(out->reason), "%.100s: IP addresses are refused unless listed in allow", norm);
  } else {
    snprintf(out->rule, sizeof(out->rule), "host not listed");
    snprintf(out->reason, sizeof(out->reason), "%.100s is not in the sandbox's network allowlist", norm);
  }
}

void net_policy_decide_address(const struct net_policy *p, const struct sockaddr *addr, bool from_override,
                               bool public_only, struct net_decision *out) {
  *out = (struct net_decision){0};
  char text[64], at[128];
  net_address_format(addr, text, sizeof(text));
  /* `allow = public` promises the open internet and nothing of the host's:
   * no override or allow_address widens it. */
  if (from_override && !public_only) {
    out->allowed = true;
    snprintf(out->rule, sizeof(out->rule), "resolve override %s", text);
    return;
  }
  for (size_t i = 0; i < p->n_allow_address && !public_only; i++) {
    if (net_cidr_contains(&p->allow_address[i], addr)) {
      where(p, p->allow_address[i].line, "allow_address", at, sizeof(at));
      out->allowed = true;
      char range[80];
      cidr_format(&p->allow_address[i], range, sizeof(range));
      snprintf(out->rule, sizeof(out->rule), "allow_address %.60s (%.80s)", range, at);
      return;
    }
  }
  const char *class = net_address_class(addr);
  if (class == NULL) {
    out->allowed = true;
    snprintf(out->rule, sizeof(out->rule), "public address");
    return;
  }
  snprintf(out->rule, sizeof(out->rule), "%s address", class);
  snprintf(out->reason, sizeof(out->reason), "address %s is %s: %s", text, class,
           public_only ? "`allow public` reaches public addresses only (list the name to reach it)"
                       : "refused unless listed in allow_address");
}

const struct net_resolve *net_policy_find_resolve(const struct net_policy *p, const char *host) {
  char norm[256];
  if (!net_host_normalize(host, norm, sizeof(norm)))
    return NULL;
  for (size_t i = 0; i < p->n_resolve; i++)
    if (strcmp(p->resolve[i].name, norm) == 0)
      return &p->resolve[i];
  return NULL;
}

/* ---- description -------------------------------------------------------- */

bool net_policy_tls_required(const struct net_policy *p, uint16_t port) {
  if (p->tls_required_all)
    return true;
  for (size_t i = 0; i < p->n_tls_required; i++)
    if (p->tls_required[i] == port)
      return true;
  return false;
}

static void print_cidrs(FILE *out, const struct net_policy *p, const char *key, const struct net_cidr *list, size_t n) {
  char at[128];
  for (size_t i = 0; i < n; i++) {
    char range[80];
    cidr_format(&list[i], range, sizeof(range));
    where(p, list[i].line, key, at, sizeof(at));
    fprintf(out, "  %s: %s (%s)\n", key, range, at);
  }
}

void net_policy_describe(const struct net_policy *p, FILE *out) {
  char at[128], text[64];
  fprintf(out, "network:\n");
  fprintf(out, "  allow:%s\n", p->n_allow ? "" : " nothing (no host is reachable)");
  for (size_t i = 0; i < p->n_allow; i++) {
    where(p, p->allow[i].line, "--allow", at, sizeof(at));
    if (p->allow[i].public_hosts && p->allow[i].port)
      fprintf(out, "    public port %u: any host name whose addresses are all public (%s)\n", p->allow[i].port, at);
    else if (p->allow[i].public_hosts)
      fprintf(out, "    public: any host name whose addresses are all public (%s)\n", at);
    else if (p->allow[i].port)
      fprintf(out, "    %s port %u (%s)\n", p->allow[i].pattern, p->allow[i].port, at);
    else
      fprintf(out, "    %s (%s)\n", p->allow[i].pattern, at);
  }
  fprintf(out, "  hutch run: %s (run%s%s; hutch exec and hutch create: --net none unless they say --net proxy)\n",
          p->run_proxy ? "--net proxy by default, this allowlist" : "--net none by default, loopback only",
          p->run_line ? " = " : " not set", p->run_line ? (p->run_proxy ? "proxy" : "none") : "");
  fprintf(out, "  ports:");
  for (size_t i = 0; i < p->n_ports; i++)
    fprintf(out, "%s %u", i ? "," : "", p->ports[i]);
  fprintf(out, "\n");
  fprintf(out, "  refused address classes: loopback, private, link-local, cgnat, multicast, unspecified, reserved\n");
  print_cidrs(out, p, "allow_address", p->allow_address, p->n_allow_address);
  print_cidrs(out, p, "publish_address", p->publish_address, p->n_publish_address);
  for (size_t i = 0; i < p->n_resolve; i++) {
    net_address_format((struct sockaddr *)&p->resolve[i].addr, text, sizeof(text));
    where(p, p->resolve[i].line, "--resolve", at, sizeof(at));
    fprintf(out, "  resolve: %s -> %s (%s; for tests, every use logged)\n", p->resolve[i].name, text, at);
  }
  fprintf(out, "  max_connections: %u\n", p->max_connections);
  fprintf(out, "  idle_timeout: %gs\n", p->idle_timeout);
  if (p->byte_budget) {
    char size[32];
    hutch_format_size(p->byte_budget, size, sizeof(size));
    fprintf(out, "  byte_budget: %s\n", size);
  } else {
    fprintf(out, "  byte_budget: none\n");
  }
  char log_max[32];
  hutch_format_size(p->log_max, log_max, sizeof(log_max));
  fprintf(out, "  log_max: %s (the proxy's log of one sandbox; refusals past %d a second are counted, not logged)\n",
          log_max, NET_LOG_REFUSALS_PER_SECOND);
  fprintf(out, "  sni_check: %s\n", p->sni_check ? "yes" : "no");
  fprintf(out, "  tls_required:");
  if (p->tls_required_all)
    fprintf(out, " all ports");
  else if (p->n_tls_required == 0)
    fprintf(out, " none");
  for (size_t i = 0; i < p->n_tls_required; i++)
    fprintf(out, "%s %u", i ? "," : "", p->tls_required[i]);
  fprintf(out, " (a CONNECT tunnel to %s must start with a TLS ClientHello naming its host)\n",
          p->tls_required_all || p->n_tls_required != 1 ? "these ports" : "this port");
  char range[80];
  cidr_format(&p->subnet, range, sizeof(range));
  fprintf(out, "  subnet: %s\n", range);
}
