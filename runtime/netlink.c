#include "config.h"

#include "netlink.h"

#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <string.h>
#include <time.h>

#include "util.h"

struct nl_socket {
  struct mnl_socket *sock;
};

static void nl_close(struct nl_socket *s) {
  if (s->sock)
    mnl_socket_close(s->sock);
}

/* Send one request and wait for its ACK: replies are matched by sequence
 * number and port id, and the kernel's error becomes our errno. */
static int nl_request(struct mnl_socket *sock, struct nlmsghdr *nlh, const char *what, hutch_error_t *err) {
  char buf[MNL_SOCKET_BUFFER_SIZE];
  unsigned int portid = mnl_socket_get_portid(sock);
  if (mnl_socket_sendto(sock, nlh, nlh->nlmsg_len) < 0)
    return hutch_error_sys(err, "netlink: send %s", what);
  for (;;) {
    ssize_t n = mnl_socket_recvfrom(sock, buf, sizeof(buf));
    if (n < 0)
      return hutch_error_sys(err, "netlink: receive reply to %s", what);
    int r = mnl_cb_run(buf, (size_t)n, nlh->nlmsg_seq, portid, NULL, NULL);
    if (r == MNL_CB_ERROR)
      return hutch_error_sys(err, "netlink: %s", what);
    if (r == MNL_CB_STOP)
      return 0;
  }
}

int netlink_loopback_up(hutch_error_t *err) {
  _cleanup_(nl_close) struct nl_socket s = {mnl_socket_open(NETLINK_ROUTE)};
  if (s.sock == NULL)
    return hutch_error_sys(err, "netlink: open NETLINK_ROUTE socket");
  if (mnl_socket_bind(s.sock, 0, MNL_SOCKET_AUTOPID) < 0)
    return hutch_error_sys(err, "netlink: bind");
  char buf[MNL_SOCKET_BUFFER_SIZE];
  struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = RTM_NEWLINK;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  nlh->nlmsg_seq = (unsigned int)time(NULL);
  struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
  ifm->ifi_family = AF_UNSPEC;
  ifm->ifi_index = (int)if_nametoindex("lo");
  if (ifm->ifi_index == 0)
    return hutch_error_sys(err, "netlink: find interface lo");
  ifm->ifi_flags = IFF_UP;
  ifm->ifi_change = IFF_UP;
  return nl_request(s.sock, nlh, "RTM_NEWLINK set lo up", err);
}
