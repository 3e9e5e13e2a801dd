/* SPDX-License-Identifier: Apache-2.0 */
/* Published ports (`hutch create -p`): host listeners bound by the creating
 * process (port_publish.c), relayed by a per-sandbox host process to the
 * sandbox's loopback (port_relay.c, its connections in relay_conn.c).  A
 * sandbox made without -p has neither. */
#ifndef HUTCH_PORT_RELAY_H
#define HUTCH_PORT_RELAY_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hutch.h"
#include "policy.h"

#define PORTS_MAX 32
/* Connections relayed at once; more are accepted and closed at once. */
#define RELAY_MAX_CONNS 256
/* A connection that has not reached the sandbox's port by then is closed. */
#define RELAY_CONNECT_TIMEOUT 10.0
/* An open connection that moves no byte for this long is closed. */
#define RELAY_IDLE_TIMEOUT 300.0
/* The relay's counts, written into the sandbox's directory when it ends. */
#define RELAY_STATS_NAME "ports.stats"

/* The host side of the ports: listening sockets bound and what they are. */
struct port_set {
  size_t n;
  int fds[PORTS_MAX];
  struct hutch_published_port pub[PORTS_MAX];
};

/* Syntax of the requested ports: at most PORTS_MAX, a sandbox port of 1 to
 * 65535, an address that is an IPv4 or IPv6 literal (EINVAL). */
int ports_check(const struct hutch_port *ports, size_t n, hutch_error_t *err);
/* Whether the policy lets a port be published on `addr` (a literal):
 * loopback always, another address only inside a [network]
 * publish_address range.  Pure. */
bool ports_address_allowed(const struct net_policy *p, const char *addr);
/* Binds (SO_REUSEADDR, listen) every port on the host: EPERM for an
 * address the policy does not allow, EADDRINUSE for one taken; a host
 * port 0 is chosen by the kernel and recorded in out->pub. */
int ports_bind(const struct hutch_policy *policy, const struct hutch_port *ports, size_t n, struct port_set *out,
               hutch_error_t *err);
void port_set_close(struct port_set *s);
/* "ADDR:HOSTPORT:PORT" for each, NULL-terminated (the audit's start). */
char **ports_strv(const struct hutch_port *ports, size_t n);
/* A create's ports bound before its sandbox starts: *xc is x with the
 * host ports chosen (in `chosen`), for the start's records. */
int ports_bind_extras(const struct hutch_sandbox_config *cfg, const struct hutch_sandbox_extras *x,
                      struct port_set *set, struct hutch_sandbox_extras *xc, struct hutch_port chosen[PORTS_MAX],
                      hutch_error_t *err);
/* Once it runs: the relay started and recorded in its state.json (lockfd:
 * the state lock the caller holds, state_lock's; -1: taken here). */
struct hutch_sandbox;
int ports_publish(struct hutch_sandbox *sb, struct port_set *set, int lockfd, hutch_error_t *err);

/* The relay: a process of its own (not the caller's child), holding the
 * listeners (taken from s: closed here), init's pidfd and the sandbox's
 * directory; it ends when init does.  Returns once its connector has
 * joined the sandbox's network namespace. */
int port_relay_start(int state_fd, const char *id, int init_pidfd, struct port_set *s, pid_t *pid, uint64_t *start_time,
                     hutch_error_t *err);
/* The "ports" member of state.json: the relay and the ports published. */
cJSON *ports_state_json(const struct port_set *s, pid_t relay_pid, uint64_t relay_start_time);
/* The ports recorded in a state's "ports" member (NULL: none); *out is
 * malloc'd. */
void ports_from_state(const cJSON *rec, struct hutch_published_port **out, size_t *n);
/* Stops the relay recorded (if it is still that process), then writes its
 * counts to the audit log as "ports_summary".  rec NULL: nothing. */
void port_relay_stop(int state_fd, const char *id, const cJSON *rec);

/* The relay process itself (port_relay.c). */
__attribute__((noreturn)) void relay_main(int sbfd, int init_pidfd, int ready_fd, const struct port_set *s);

#endif
