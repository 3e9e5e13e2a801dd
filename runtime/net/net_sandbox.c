#include "config.h"

#include "net_sandbox.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "loopback.h"
#include "netlink.h"
#include "subnet.h"
#include "sync.h"
#include "util.h"

static int open_netns(hutch_error_t *err) {
  int fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return hutch_error_sys(err, "network: open the network namespace");
  return fd;
}

static int enter_netns(int fd, const char *which, hutch_error_t *err) {
  if (setns(fd, CLONE_NEWNET) < 0)
    return hutch_error_sys(err, "network: enter the %s network namespace", which);
  return 0;
}

/* In the gateway namespace: its link, and the proxy's listening socket. */
static int gateway_side(const struct net_sandbox_config *c, int parent_fd, hutch_error_t *err) {
  if (loopback_up(err) < 0 || netlink_configure_link(NET_GATEWAY_IFNAME, net_gateway_addr(c), 30, 0, err) < 0)
    return -1;
  _cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return hutch_error_sys(err, "network: proxy socket");
  int one = 1;
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
    return hutch_error_sys(err, "network: SO_REUSEADDR on the proxy socket");
  struct sockaddr_in sin = {
      .sin_family = AF_INET,
      .sin_port = htons(c->port),
      .sin_addr = {htonl(net_gateway_addr(c))},
  };
  char gw[16];
  subnet_ntoa(net_gateway_addr(c), gw);
  if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
    return hutch_error_sys(err, "network: bind the proxy socket to %s:%u", gw, (unsigned)c->port);
  if (listen(fd, 1024) < 0)
    return hutch_error_sys(err, "network: listen on %s:%u", gw, (unsigned)c->port);
  /* The parent's proxy serves it from the host's namespaces; our copy goes. */
  return sync_send(parent_fd, SYNC_NET_LISTENER, NULL, 0, &fd, 1, err);
}

int net_sandbox_setup(const struct net_sandbox_config *c, int parent_fd, hutch_error_t *err) {
  if (!c->enabled)
    return 0;
  double start = monotonic_seconds();
  _cleanup_close_ int sandbox_ns = open_netns(err);
  if (sandbox_ns < 0)
    return -1;
  /* The gateway namespace is owned by the sandbox's user namespace, like
   * every namespace of the sandbox.  No sandboxed process can enter it:
   * they hold no capability in that user namespace (setns needs
   * CAP_SYS_ADMIN over the target), run with no_new_privs, and the seccomp
   * filter refuses setns and unshare.  Nothing forwards packets there
   * (ip_forward is 0 in a new namespace), so from the sandbox the proxy's
   * port is the only thing that answers.  It lives as long as the proxy
   * keeps the listening socket open; the veth goes with the sandbox's
   * namespace. */
  if (unshare(CLONE_NEWNET) < 0)
    return hutch_error_sys(err, "network: create the gateway network namespace");
  _cleanup_close_ int gateway_ns = open_netns(err);
  if (gateway_ns < 0)
    return -1;
  if (enter_netns(sandbox_ns, "sandbox's", err) < 0)
    return -1;
  if (netlink_veth_create(NET_SANDBOX_IFNAME, NET_GATEWAY_IFNAME, gateway_ns, err) < 0 ||
      netlink_configure_link(NET_SANDBOX_IFNAME, net_sandbox_addr(c), 30, net_gateway_addr(c), err) < 0)
    return -1;
  if (enter_netns(gateway_ns, "gateway", err) < 0)
    return -1;
  double veth_done = monotonic_seconds();
  int r = gateway_side(c, parent_fd, err);
  if (enter_netns(sandbox_ns, "sandbox's", r < 0 ? NULL : err) < 0)
    return -1;
  hutch_debug("network: gateway namespace and veth in %.3f ms, gateway side in %.3f ms", (veth_done - start) * 1e3,
              (monotonic_seconds() - veth_done) * 1e3);
  return r;
}

const char *net_sandbox_resolv_conf(const struct net_sandbox_config *c) {
  if (!c->enabled)
    return "# Written by hutch. This sandbox has no network but loopback: no DNS server is\n"
           "# reachable. Names resolve only through /etc/hosts.\n";
  return "# Written by hutch. This sandbox reaches the outside only through hutch's HTTP\n"
         "# proxy (HTTP_PROXY/HTTPS_PROXY): no DNS server is reachable. The proxy resolves\n"
         "# the names it is asked for and applies the sandbox's allowlist.\n";
}

/* Create `path` with `content` unless it exists (the image's own
 * configuration wins). */
static int write_if_absent(const char *path, const char *content, hutch_error_t *err) {
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST)
      return 0;
    return hutch_error_sys(err, "network: write %s", path);
  }
  int r = write_all(fd, content, strlen(content));
  close(fd);
  if (r < 0)
    return hutch_error_sys(err, "network: write %s", path);
  return 0;
}

int net_sandbox_write_tool_config(const struct net_sandbox_config *c, hutch_error_t *err) {
  if (!c->enabled)
    return 0;
  char gw[16];
  subnet_ntoa(net_gateway_addr(c), gw);
  _cleanup_free_ char *url = xasprintf("http://%s:%u", gw, (unsigned)c->port);
  struct stat st;
  if (stat("/etc/apt", &st) == 0 && S_ISDIR(st.st_mode)) {
    if (mkdir("/etc/apt/apt.conf.d", 0755) < 0 && errno != EEXIST)
      return hutch_error_sys(err, "network: create /etc/apt/apt.conf.d");
    _cleanup_free_ char *apt =
        xasprintf("// Written by hutch: this sandbox reaches the outside only through its proxy.\n"
                  "Acquire::http::Proxy \"%s/\";\n"
                  "Acquire::https::Proxy \"%s/\";\n",
                  url, url);
    static const char apt_conf[] = "/etc/apt/apt.conf.d/00hutch-proxy";
    if (unlink(apt_conf) < 0 && errno != ENOENT)
      return hutch_error_sys(err, "network: replace %s", apt_conf);
    if (write_if_absent(apt_conf, apt, err) < 0)
      return -1;
  }
  _cleanup_free_ char *pip = xasprintf("# Written by hutch: this sandbox reaches the outside only through its proxy.\n"
                                       "[global]\nproxy = %s\n",
                                       url);
  _cleanup_free_ char *git = xasprintf("# Written by hutch: this sandbox reaches the outside only through its proxy.\n"
                                       "[http]\n\tproxy = %s\n",
                                       url);
  if (write_if_absent("/etc/pip.conf", pip, err) < 0 || write_if_absent("/etc/gitconfig", git, err) < 0)
    return -1;
  return 0;
}
