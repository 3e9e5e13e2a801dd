/* SPDX-License-Identifier: Apache-2.0 */
/* The sandbox side of --net proxy: run by the sandbox's setup process (root
 * with every capability in the sandbox's user namespace) before it drops
 * them.  It builds the sandbox's only path out: a veth from the sandbox's
 * network namespace to a gateway namespace private to this sandbox, where
 * one listening socket, the proxy's, is the only thing to talk to. */
#ifndef HUTCH_NET_SANDBOX_H
#define HUTCH_NET_SANDBOX_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "hutch.h"

#define NET_PROXY_PORT 3128
#define NET_SANDBOX_IFNAME "eth0"
#define NET_GATEWAY_IFNAME "gw0"

struct net_sandbox_config {
  bool enabled;   /* --net proxy */
  uint32_t block; /* the sandbox's /30, host byte order: gateway .1, sandbox .2 */
  uint16_t port;  /* the proxy's port on the gateway */
};

static inline uint32_t net_gateway_addr(const struct net_sandbox_config *c) {
  return c->block + 1;
}
static inline uint32_t net_sandbox_addr(const struct net_sandbox_config *c) {
  return c->block + 2;
}

/* The sandbox's network namespace is made by a helper process the setup
 * process forks early (net_sandbox_start), so that creating it (the
 * costliest namespace) and, with --net proxy, the gateway namespace and the
 * veth overlap with the mounts.  The helper brings lo up, builds the way
 * out, and sends the namespace (and the proxy's listening socket).
 * net_sandbox_finish waits for it, reaps it, enters the namespace, and
 * sends the listening socket to the parent over `parent_fd`
 * (SYNC_NET_LISTENER). */
struct net_start {
  pid_t pid;
  int sock;
};
/* `then`, when not NULL, is more work for the helper: run once the namespace
 * is made and the setup process has called net_sandbox_go(), with the
 * string that call passes (at most NET_GO_ARG_MAX bytes), before the helper
 * answers; its failure is the helper's.  The helper shares the setup
 * process's mount namespace, so a mount step whose cost is mostly waiting
 * (for an RCU grace period) can leave the setup process's path this way.
 * The helper starts in "/", so that pivot_root moves its working directory
 * along with its root (nothing of the host shows through /proc/PID/cwd). */
#define NET_GO_ARG_MAX 128
int net_sandbox_start(const struct net_sandbox_config *c, int (*then)(const char *arg, hutch_error_t *err),
                      struct net_start *ns, hutch_error_t *err);
int net_sandbox_go(struct net_start *ns, const char *arg, hutch_error_t *err);
int net_sandbox_finish(const struct net_sandbox_config *c, struct net_start *ns, int parent_fd, hutch_error_t *err);

/* /etc/resolv.conf's text for the sandbox. */
const char *net_sandbox_resolv_conf(const struct net_sandbox_config *c);
/* Point apt (only where /etc/apt exists), pip and git (only where the image
 * has no configuration of its own) at the proxy.  Runs after pivot_root. */
int net_sandbox_write_tool_config(const struct net_sandbox_config *c, hutch_error_t *err);

#endif
