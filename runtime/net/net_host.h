/* SPDX-License-Identifier: Apache-2.0 */
/* The host side of --net proxy: the sandbox's effective network policy,
 * its /30, the environment that points its programs at the proxy, and the
 * proxy itself (a thread for a one-shot run, a process for a long-lived
 * sandbox), which runs in hutch's (host) namespaces and serves the
 * listening socket the sandbox's setup created in the gateway namespace. */
#ifndef HUTCH_NET_HOST_H
#define HUTCH_NET_HOST_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "hutch.h"
#include "net_policy.h"
#include "net_sandbox.h"

struct net_host {
  bool enabled;
  struct net_policy policy;
  struct net_sandbox_config sandbox; /* what the child gets */
  char gateway[16], address[16];
  char *audit_log;
  bool audit_log_in_state; /* removed with the sandbox's state directory */
  char **env;              /* HTTP_PROXY and friends */
  int state_fd;            /* borrowed: the state root, where the subnet table is */
  char id[40];
  bool subnet_held;
  pid_t proxy_pid;
  uint64_t proxy_start_time;
  int channel;     /* to the proxy; it closes its end once its audit log is complete */
  bool reap_proxy; /* net_host_finish saw it done: net_host_clear reaps it */
  /* A one-shot run's proxy is a thread of this process. */
  bool proxy_threaded;
  pthread_t proxy_thread;
};

/* Before anything of the sandbox exists: the effective policy (the
 * policy's [network], replaced by --net-policy's, plus --allow and
 * --resolve).  Does nothing else without --net proxy; refuses
 * --allow/--resolve/--net-policy without it.  Initialises `nh`. */
int net_host_resolve(struct net_host *nh, const struct hutch_sandbox_config *cfg, const struct hutch_policy *policy,
                     hutch_error_t *err);
/* Once the sandbox has its id and directory: its /30 in the state root's
 * subnet table, its audit log and the proxy's environment. */
int net_host_reserve(struct net_host *nh, const struct hutch_sandbox_config *cfg, int state_fd, const char *sandbox_dir,
                     const char *id, hutch_error_t *err);
/* Start the proxy, which starts up while the sandbox is set up: a thread
 * for a one-shot run, a process for a long-lived sandbox (it outlives the
 * caller). */
int net_host_spawn_proxy(struct net_host *nh, bool long_lived, hutch_error_t *err);
/* After the child sent the listening socket: hand it and `stop_fd` (a
 * pidfd of the sandbox's init; borrowed) to the proxy.  `listen_fd` is
 * taken over.  Connections wait in its backlog until the proxy serves it. */
int net_host_start_proxy(struct net_host *nh, int listen_fd, int stop_fd, hutch_error_t *err);
/* Wait until the proxy serves the listener (or say why it cannot): done
 * once the sandbox's setup is over, so that both start side by side. */
int net_host_proxy_ready(struct net_host *nh, hutch_error_t *err);
/* One-shot end: wait for the proxy (it stops when init has died), fill the
 * summary, give the /30 back. */
void net_host_finish(struct net_host *nh, struct hutch_net_summary *summary);
/* A failed start: kill the proxy if it runs, give the /30 back. */
void net_host_abort(struct net_host *nh);
void net_host_clear(struct net_host *nh);

/* hutch rm: kill a proxy recorded in a sandbox's state (only if it is still
 * the same process), then free the sandbox's /30. */
void net_host_teardown(int state_fd, const char *id, pid_t proxy_pid, uint64_t proxy_start_time);

/* Read a --net-policy file: its [network] section only. */
int net_host_load_policy_file(const char *path, struct net_policy *out, hutch_error_t *err);

#endif
