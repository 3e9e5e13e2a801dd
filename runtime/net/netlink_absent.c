/* SPDX-License-Identifier: Apache-2.0 */
/* netlink.h in the musl front end, which is built without libmnl: the
 * front end hands every sandbox with --net proxy to hutch-full (front.c)
 * before anything of it exists, so none of these runs.  Should one be
 * reached all the same, it fails closed. */
#include "config.h"

#include "netlink.h"

#include <errno.h>

#include "util.h"

static int absent(const char *what, hutch_error_t *err) {
  hutch_error_set(err, ENOTSUP, "netlink: %s: this is hutch's musl front end, built without libmnl", what);
  return hutch_error_hint(err, "run the command with hutch-full from hutch's libexec directory");
}

int netlink_veth_create(const char *name, const char *peer, int peer_netns_fd, hutch_error_t *err) {
  (void)name, (void)peer, (void)peer_netns_fd;
  return absent("create a veth pair", err);
}

int netlink_ifindex(const char *name, hutch_error_t *err) {
  (void)name;
  return absent("find an interface", err);
}

int netlink_configure_link(const char *name, uint32_t addr, unsigned prefix, uint32_t gateway, hutch_error_t *err) {
  (void)name, (void)addr, (void)prefix, (void)gateway;
  return absent("configure a link", err);
}
