/* SPDX-License-Identifier: Apache-2.0 */
/* A veth pair created over rtnetlink: what a networked sandbox needs on top
 * of its loopback.  Run only inside a throwaway network namespace. */
#include "config.h"

#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <net/if.h>
#include <string.h>
#include <time.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "net_sandbox.h"
#include "probe.h"
#include "sync.h"
#include "util.h"

int probe_net_veth(hutch_error_t *err) {
  struct mnl_socket *sock = mnl_socket_open(NETLINK_ROUTE);
  if (sock == NULL)
    return hutch_error_sys(err, "netlink: open NETLINK_ROUTE socket");
  int ret = -1;
  char buf[MNL_SOCKET_BUFFER_SIZE];
  if (mnl_socket_bind(sock, 0, MNL_SOCKET_AUTOPID) < 0) {
    hutch_error_sys(err, "netlink: bind");
    goto out;
  }
  struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = RTM_NEWLINK;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL | NLM_F_ACK;
  nlh->nlmsg_seq = (unsigned int)time(NULL);
  struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
  ifm->ifi_family = AF_UNSPEC;
  mnl_attr_put_strz(nlh, IFLA_IFNAME, "hutch0");
  struct nlattr *linkinfo = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
  mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "veth");
  struct nlattr *data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
  struct nlattr *peer = mnl_attr_nest_start(nlh, VETH_INFO_PEER);
  struct ifinfomsg *pifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*pifm));
  pifm->ifi_family = AF_UNSPEC;
  mnl_attr_put_strz(nlh, IFLA_IFNAME, "hutch1");
  mnl_attr_nest_end(nlh, peer);
  mnl_attr_nest_end(nlh, data);
  mnl_attr_nest_end(nlh, linkinfo);

  unsigned int portid = mnl_socket_get_portid(sock);
  unsigned int seq = nlh->nlmsg_seq;
  if (mnl_socket_sendto(sock, nlh, nlh->nlmsg_len) < 0) {
    hutch_error_sys(err, "netlink: send RTM_NEWLINK veth");
    goto out;
  }
  for (;;) {
    /* The reply lands in buf: nlh is dead from here on. */
    ssize_t n = mnl_socket_recvfrom(sock, buf, sizeof(buf));
    if (n < 0) {
      hutch_error_sys(err, "netlink: receive reply to RTM_NEWLINK veth");
      goto out;
    }
    int r = mnl_cb_run(buf, (size_t)n, seq, portid, NULL, NULL);
    if (r == MNL_CB_ERROR) {
      hutch_error_sys(err, "netlink: RTM_NEWLINK veth hutch0/hutch1");
      goto out;
    }
    if (r == MNL_CB_STOP)
      break;
  }
  if (if_nametoindex("hutch1") == 0) {
    hutch_error_sys(err, "netlink: the veth peer hutch1 did not appear");
    goto out;
  }
  ret = 0;
out:
  mnl_socket_close(sock);
  return ret;
}

int probe_net_proxy(hutch_error_t *err) {
  /* What `--net proxy` does at a sandbox's start, from this throwaway
   * namespace: the helper's network namespace, the gateway namespace, the
   * veth, addresses and route, the listening socket handed over a socket
   * pair; then a connection from the sandbox's side to the gateway proves
   * the path. */
  int sp[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
    return hutch_error_sys(err, "socketpair");
  _cleanup_close_ int mine = sp[0];
  _cleanup_close_ int theirs = sp[1];
  struct net_sandbox_config c = {.enabled = true, .block = 0x0a590000, .port = NET_PROXY_PORT};
  struct net_start ns;
  if (net_sandbox_start(&c, NULL, &ns, err) < 0 || net_sandbox_finish(&c, &ns, theirs, err) < 0)
    return -1;
  uint32_t type;
  int fds[SYNC_MAX_FDS];
  size_t nfds = 0;
  if (sync_recv(mine, &type, NULL, 0, NULL, fds, &nfds, err) <= 0 || nfds != 1)
    return hutch_error_set(err, EPROTO, "no listening socket came back from the gateway namespace");
  _cleanup_close_ int listener = fds[0];
  _cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return hutch_error_sys(err, "socket");
  struct sockaddr_in sin = {
      .sin_family = AF_INET, .sin_port = htons(c.port), .sin_addr = {htonl(net_gateway_addr(&c))}};
  if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
    return hutch_error_sys(err, "connect from the sandbox's side to the gateway's port %u", (unsigned)c.port);
  return 0;
}
