/* SPDX-License-Identifier: Apache-2.0 */
/* The network part of a policy ([network] in hutch-policy(5)) and the
 * proxy's decisions: pure code, no I/O, so every rule is unit-tested.
 *
 * A sandbox started with --net proxy reaches the outside only through
 * hutch's HTTP proxy; this file decides, for each request, whether the host,
 * the port and the addresses the name resolves to are allowed, and says why
 * in one line (the 403 body and the audit log's "rule"). */
#ifndef HUTCH_NET_POLICY_H
#define HUTCH_NET_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "hutch.h"

#define NET_POLICY_MAX_PORTS 32

/* An address range: IPv4 or IPv6, with a prefix length. */
struct net_cidr {
  int family; /* AF_INET or AF_INET6 */
  uint8_t addr[16];
  unsigned prefix;
  unsigned line; /* where it was written (0: not from a file) */
};

/* One `allow` entry: "pypi.org", "*.pythonhosted.org", "10.0.0.5",
 * "[2001:db8::1]", each optionally ":PORT" (then only that port), or the
 * word "public": any host name whose addresses are all public. */
struct net_allow {
  char *pattern;     /* lower-case host, "*.suffix", an IP literal, or "public" */
  uint16_t port;     /* 0: the policy's ports */
  unsigned line;     /* where it was written, for the audit log's "rule" */
  bool public_hosts; /* the "public" entry */
};

/* `allow = public`: the entry's word, not a host name (a single-label name
 * would resolve to the local network, which the entry refuses anyway). */
#define NET_ALLOW_PUBLIC "public"

/* `resolve NAME=ADDR`: a resolver override meant for tests; explicit, and
 * every use is logged. */
struct net_resolve {
  char *name;
  struct sockaddr_storage addr; /* port 0 */
  unsigned line;
};

struct net_policy {
  struct net_allow *allow;
  size_t n_allow;
  uint16_t ports[NET_POLICY_MAX_PORTS]; /* default 80, 443 */
  size_t n_ports;
  struct net_cidr *allow_address; /* addresses allowed although private/loopback/... */
  size_t n_allow_address;
  struct net_cidr *publish_address; /* where `create -p` may listen beyond loopback */
  size_t n_publish_address;
  struct net_resolve *resolve;
  size_t n_resolve;
  unsigned max_connections; /* concurrent connections per sandbox; default 256 */
  double idle_timeout;      /* seconds without traffic before a connection is closed; default 300 */
  uint64_t byte_budget;     /* bytes both ways per sandbox, 0 = none */
  uint64_t log_max;         /* bytes of the proxy's log per sandbox (proxy_audit.c); default 4 MiB */
  bool sni_check;           /* CONNECT: a TLS ClientHello's SNI must equal the CONNECT host; default yes */
  struct net_cidr subnet;   /* range the per-sandbox /30 links come from; default 10.89.0.0/16 */
  char *source;             /* file the network part came from, for messages */
  /* CONNECT to these ports (or every port, tls_required_all): the tunnel
   * must start with a TLS ClientHello naming the CONNECT host; default 443 */
  uint16_t tls_required[NET_POLICY_MAX_PORTS];
  size_t n_tls_required;
  bool tls_required_all;
  /* `run = proxy`: the sandboxes `hutch run` starts get --net proxy unless
   * their command line says otherwise; `hutch exec` is never affected. */
  bool run_proxy;
  unsigned run_line;
};

/* The smallest log_max: room for a burst of refusals and the records
 * that say what was not logged. */
#define NET_LOG_MAX_MIN ((uint64_t)16 << 10)
/* Refusals and errors the proxy logs a second, after a first burst of
 * NET_LOG_REFUSAL_BURST; the others are answered and counted
 * (proxy_audit.c). */
#define NET_LOG_REFUSALS_PER_SECOND 10
#define NET_LOG_REFUSAL_BURST 100

void net_policy_init(struct net_policy *p); /* the defaults above, nothing allowed */
void net_policy_clear(struct net_policy *p);
/* Deep copy (the CLI's --allow is merged into a copy). */
void net_policy_copy(struct net_policy *dst, const struct net_policy *src);

/* Parse one value of a [network] key; the policy parser calls this with
 * key, value and line.  Repeatable keys (allow, allow_address, resolve)
 * append. */
int net_policy_set(struct net_policy *p, const char *key, const char *value, unsigned line, hutch_error_t *err);
/* True for the keys net_policy_set() knows. */
bool net_policy_known_key(const char *key);
/* `--allow HOST[:PORT]` on the command line. */
int net_policy_add_allow(struct net_policy *p, const char *entry, hutch_error_t *err);
/* `--resolve NAME=ADDR` on the command line. */
int net_policy_add_resolve(struct net_policy *p, const char *mapping, hutch_error_t *err);

/* The decision for one request. */
struct net_decision {
  bool allowed;
  /* Allowed by `allow = public` only: every address the name has must be
   * public, or the request is refused (net_policy_decide_address). */
  bool public_only;
  char rule[160];   /* the entry that allowed it ("allow *.pypi.org (default.policy:40)") or why not */
  char reason[160]; /* one line for the 403 body; empty when allowed */
};

/* Host and port of a request, before resolving.  `host` is as the client
 * wrote it (no brackets for IPv6 literals); matching is case-insensitive,
 * a trailing dot is ignored. */
void net_policy_decide_host(const struct net_policy *p, const char *host, uint16_t port, struct net_decision *out);
/* Each address the name resolved to (or the literal): loopback, private,
 * link-local (metadata endpoints), CGNAT, multicast, unspecified and the
 * IPv6 equivalents are refused unless allow_address lists them or the
 * address came from a `resolve` override.  public_only (the host decision's):
 * the host was admitted by `allow = public`, and only a public address will
 * do, whatever allow_address and the overrides say. */
void net_policy_decide_address(const struct net_policy *p, const struct sockaddr *addr, bool from_override,
                               bool public_only, struct net_decision *out);
/* "loopback", "private", "link-local", "cgnat", "multicast", "unspecified",
 * "reserved", or NULL for a public unicast address. */
const char *net_address_class(const struct sockaddr *addr);
/* The override for `host`, or NULL. */
const struct net_resolve *net_policy_find_resolve(const struct net_policy *p, const char *host);

/* True when a CONNECT tunnel to `port` must start with a TLS ClientHello
 * whose server name is the CONNECT host (tls_required). */
bool net_policy_tls_required(const struct net_policy *p, uint16_t port);

/* Human-readable text of the network part, for `hutch policy show`. */
void net_policy_describe(const struct net_policy *p, FILE *out);

/* "10.0.0.0/8", "fc00::/7", "127.0.0.1" (a single address); pure. */
bool net_cidr_parse(const char *text, struct net_cidr *out);
bool net_cidr_contains(const struct net_cidr *c, const struct sockaddr *addr);
/* The address as text, without port or brackets ("?" for other families). */
void net_address_format(const struct sockaddr *addr, char *buf, size_t len);
/* Lower-cases `host` into buf without one trailing dot; false when it does
 * not fit or is empty. */
bool net_host_normalize(const char *host, char *buf, size_t len);

#endif
