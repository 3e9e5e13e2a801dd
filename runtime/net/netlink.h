/* SPDX-License-Identifier: Apache-2.0 */
/* rtnetlink over libmnl.  Every request waits for its ACK: replies are
 * matched by sequence number and port id, attributes of replies are
 * bounds-checked, and a kernel error becomes an errno with a message naming
 * the operation and the interface ("create veth eth0/gw0: File exists"). */
#ifndef HUTCH_NETLINK_H
#define HUTCH_NETLINK_H

#include <stdint.h>

#include "hutch.h"

/* Create a veth pair in the current network namespace: `name` stays here,
 * `peer` is created directly in the namespace of `peer_netns_fd`. */
int netlink_veth_create(const char *name, const char *peer, int peer_netns_fd, hutch_error_t *err);
/* The index of an interface of the current namespace (RTM_GETLINK). */
int netlink_ifindex(const char *name, hutch_error_t *err);
/* Give the interface an IPv4 address (host byte order) with its prefix
 * length and no IPv6 link-local address, set it up, and when `gateway` is
 * not 0 add a default route through it. */
int netlink_configure_link(const char *name, uint32_t addr, unsigned prefix, uint32_t gateway, hutch_error_t *err);

#endif
