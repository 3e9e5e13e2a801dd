/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "netlink.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <net/if.h>
#include <string.h>
#include <time.h>

#include "util.h"

struct nl_socket {
  struct mnl_socket *sock;
  unsigned int portid;
  unsigned int seq;
};

static void nl_close(struct nl_socket *s) {
  if (s->sock)
    mnl_socket_close(s->sock);
}

static int nl_open(struct nl_socket *s, hutch_error_t *err) {
  s->sock = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
  if (s->sock == NULL)
    return hutch_error_sys(err, "netlink: open NETLINK_ROUTE socket");
  if (mnl_socket_bind(s->sock, 0, MNL_SOCKET_AUTOPID) < 0)
    return hutch_error_sys(err, "netlink: bind");
  s->portid = mnl_socket_get_portid(s->sock);
  s->seq = (unsigned int)time(NULL);
  return 0;
}

static struct nlmsghdr *nl_header(struct nl_socket *s, char *buf, uint16_t type, uint16_t flags) {
  struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = type;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
  nlh->nlmsg_seq = ++s->seq;
  return nlh;
}

/* Send one request and run `cb` on each reply until the ACK.  Replies with
 * another sequence number or port id are errors (mnl_cb_run: ESRCH,
 * EPROTO), and NLMSG_ERROR sets errno to the kernel's error. */
static int nl_request_cb(struct nl_socket *s, struct nlmsghdr *nlh, mnl_cb_t cb, void *data, const char *what,
                         hutch_error_t *err) {
  char buf[MNL_SOCKET_BUFFER_SIZE];
  if (mnl_socket_sendto(s->sock, nlh, nlh->nlmsg_len) < 0)
    return hutch_error_sys(err, "netlink: send %s", what);
  for (;;) {
    ssize_t n = mnl_socket_recvfrom(s->sock, buf, sizeof(buf));
    if (n < 0)
      return hutch_error_sys(err, "netlink: receive reply to %s", what);
    int r = mnl_cb_run(buf, (size_t)n, nlh->nlmsg_seq, s->portid, cb, data);
    if (r == MNL_CB_ERROR)
      return hutch_error_sys(err, "netlink: %s", what);
    if (r == MNL_CB_STOP)
      return 0;
  }
}

static int nl_request(struct nl_socket *s, struct nlmsghdr *nlh, const char *what, hutch_error_t *err) {
  return nl_request_cb(s, nlh, NULL, NULL, what, err);
}

static int set_link_flags(struct nl_socket *s, int ifindex, const char *what, hutch_error_t *err) {
  char buf[MNL_SOCKET_BUFFER_SIZE];
  struct nlmsghdr *nlh = nl_header(s, buf, RTM_NEWLINK, 0);
  struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
  ifm->ifi_family = AF_UNSPEC;
  ifm->ifi_index = ifindex;
  ifm->ifi_flags = IFF_UP;
  ifm->ifi_change = IFF_UP;
  return nl_request(s, nlh, what, err);
}

struct link_query {
  const char *name;
  int index;
  bool bad_reply;
};

static int link_attr_cb(const struct nlattr *attr, void *data) {
  const struct nlattr **tb = data;
  int type = mnl_attr_get_type(attr);
  /* Unknown (newer) attributes are skipped, known ones must be well-formed. */
  if (mnl_attr_type_valid(attr, IFLA_MAX) < 0)
    return MNL_CB_OK;
  if (type == IFLA_IFNAME && mnl_attr_validate(attr, MNL_TYPE_NUL_STRING) < 0)
    return MNL_CB_ERROR;
  tb[type] = attr;
  return MNL_CB_OK;
}

static int link_reply_cb(const struct nlmsghdr *nlh, void *data) {
  struct link_query *q = data;
  const struct nlattr *tb[IFLA_MAX + 1] = {NULL};
  if (nlh->nlmsg_type != RTM_NEWLINK || mnl_nlmsg_get_payload_len(nlh) < sizeof(struct ifinfomsg) ||
      mnl_attr_parse(nlh, sizeof(struct ifinfomsg), link_attr_cb, tb) != MNL_CB_OK) {
    q->bad_reply = true;
    return MNL_CB_OK;
  }
  const struct ifinfomsg *ifm = mnl_nlmsg_get_payload(nlh);
  if (tb[IFLA_IFNAME] && strcmp(mnl_attr_get_str(tb[IFLA_IFNAME]), q->name) == 0)
    q->index = ifm->ifi_index;
  return MNL_CB_OK;
}

static int nl_ifindex(struct nl_socket *s, const char *name, hutch_error_t *err) {
  char buf[MNL_SOCKET_BUFFER_SIZE];
  struct nlmsghdr *nlh = nl_header(s, buf, RTM_GETLINK, 0);
  struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
  ifm->ifi_family = AF_UNSPEC;
  mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
  struct link_query q = {.name = name};
  _cleanup_free_ char *what = xasprintf("find interface %s", name);
  if (nl_request_cb(s, nlh, link_reply_cb, &q, what, err) < 0)
    return -1;
  if (q.bad_reply)
    return hutch_error_set(err, EPROTO, "netlink: %s: malformed RTM_NEWLINK reply", what);
  if (q.index <= 0)
    return hutch_error_set(err, ENODEV, "netlink: %s", what);
  return q.index;
}

int netlink_veth_create(const char *name, const char *peer, int peer_netns_fd, hutch_error_t *err) {
  _cleanup_(nl_close) struct nl_socket s = {0};
  if (nl_open(&s, err) < 0)
    return -1;
  char buf[MNL_SOCKET_BUFFER_SIZE];
  struct nlmsghdr *nlh = nl_header(&s, buf, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
  struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
  ifm->ifi_family = AF_UNSPEC;
  mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
  struct nlattr *linkinfo = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
  mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "veth");
  struct nlattr *data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
  struct nlattr *peer_info = mnl_attr_nest_start(nlh, VETH_INFO_PEER);
  /* The peer's own ifinfomsg, then its attributes: its name, and the
   * namespace it is created in. */
  struct ifinfomsg *pifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*pifm));
  memset(pifm, 0, sizeof(*pifm));
  pifm->ifi_family = AF_UNSPEC;
  mnl_attr_put_strz(nlh, IFLA_IFNAME, peer);
  mnl_attr_put_u32(nlh, IFLA_NET_NS_FD, (uint32_t)peer_netns_fd);
  mnl_attr_nest_end(nlh, peer_info);
  mnl_attr_nest_end(nlh, data);
  mnl_attr_nest_end(nlh, linkinfo);
  _cleanup_free_ char *what = xasprintf("create veth %s/%s", name, peer);
  return nl_request(&s, nlh, what, err);
}

int netlink_ifindex(const char *name, hutch_error_t *err) {
  _cleanup_(nl_close) struct nl_socket s = {0};
  if (nl_open(&s, err) < 0)
    return -1;
  return nl_ifindex(&s, name, err);
}

/* The link carries IPv4 to the proxy only: no IPv6 link-local address,
 * so no duplicate address detection or router solicitation either.  Best
 * effort: a kernel without IPv6 refuses the attribute. */
static void no_ipv6_link_local(struct nl_socket *s, int index) {
  char buf[MNL_SOCKET_BUFFER_SIZE];
  struct nlmsghdr *nlh = nl_header(s, buf, RTM_NEWLINK, 0);
  struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
  ifm->ifi_family = AF_UNSPEC;
  ifm->ifi_index = index;
  struct nlattr *spec = mnl_attr_nest_start(nlh, IFLA_AF_SPEC);
  struct nlattr *inet6 = mnl_attr_nest_start(nlh, AF_INET6);
  mnl_attr_put_u8(nlh, IFLA_INET6_ADDR_GEN_MODE, IN6_ADDR_GEN_MODE_NONE);
  mnl_attr_nest_end(nlh, inet6);
  mnl_attr_nest_end(nlh, spec);
  hutch_error_t ignored = NULL;
  if (nl_request(s, nlh, "no IPv6 link-local address", &ignored) < 0) {
    _cleanup_free_ char *why = hutch_error_format(ignored);
    hutch_debug("netlink: %s", why);
    hutch_error_free(&ignored);
  }
}

static int addr_add(struct nl_socket *s, const char *name, int index, uint32_t addr, unsigned prefix,
                    hutch_error_t *err) {
  char buf[MNL_SOCKET_BUFFER_SIZE];
  struct nlmsghdr *nlh = nl_header(s, buf, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL);
  struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
  ifa->ifa_family = AF_INET;
  ifa->ifa_prefixlen = (unsigned char)prefix;
  ifa->ifa_scope = RT_SCOPE_UNIVERSE;
  ifa->ifa_index = (unsigned)index;
  uint32_t be = htonl(addr);
  mnl_attr_put_u32(nlh, IFA_LOCAL, be);
  mnl_attr_put_u32(nlh, IFA_ADDRESS, be);
  char text[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &be, text, sizeof(text));
  _cleanup_free_ char *what = xasprintf("add address %s/%u to %s", text, prefix, name);
  return nl_request(s, nlh, what, err);
}

static int route_default(struct nl_socket *s, const char *name, int index, uint32_t gateway, hutch_error_t *err) {
  char buf[MNL_SOCKET_BUFFER_SIZE];
  struct nlmsghdr *nlh = nl_header(s, buf, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL);
  struct rtmsg *rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
  rtm->rtm_family = AF_INET;
  rtm->rtm_dst_len = 0;
  rtm->rtm_table = RT_TABLE_MAIN;
  rtm->rtm_protocol = RTPROT_BOOT;
  rtm->rtm_scope = RT_SCOPE_UNIVERSE;
  rtm->rtm_type = RTN_UNICAST;
  mnl_attr_put_u32(nlh, RTA_GATEWAY, htonl(gateway));
  mnl_attr_put_u32(nlh, RTA_OIF, (uint32_t)index);
  _cleanup_free_ char *what = xasprintf("add default route via %s", name);
  return nl_request(s, nlh, what, err);
}

int netlink_configure_link(const char *name, uint32_t addr, unsigned prefix, uint32_t gateway, hutch_error_t *err) {
  /* One socket and one lookup for the whole link. */
  _cleanup_(nl_close) struct nl_socket s = {0};
  if (nl_open(&s, err) < 0)
    return -1;
  int index = nl_ifindex(&s, name, err);
  if (index < 0)
    return -1;
  no_ipv6_link_local(&s, index);
  _cleanup_free_ char *what = xasprintf("set %s up", name);
  if (addr_add(&s, name, index, addr, prefix, err) < 0 || set_link_flags(&s, index, what, err) < 0)
    return -1;
  return gateway ? route_default(&s, name, index, gateway, err) : 0;
}
