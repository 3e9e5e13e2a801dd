/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "net_sandbox.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/sockios.h>

#include "in_root.h"
#include "loopback.h"
#include "netlink.h"
#include "subnet.h"
#include "sync.h"
#include "util.h"

/* The current network namespace as an fd, asked of a socket made in it
 * (SIOCGSKNS): the helper below runs while the setup process rearranges
 * the mount namespace they share, so no /proc path is to be trusted. */
static int current_netns(hutch_error_t *err) {
  _cleanup_close_ int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0)
    return hutch_error_sys(err, "network: a socket to name the network namespace by");
  int fd = ioctl(s, SIOCGSKNS);
  if (fd < 0)
    return hutch_error_sys(err, "network: open the network namespace (SIOCGSKNS)");
  return fd;
}

static int enter_netns(int fd, const char *which, hutch_error_t *err) {
  if (setns(fd, CLONE_NEWNET) < 0)
    return hutch_error_sys(err, "network: enter the %s network namespace", which);
  return 0;
}

/* In the gateway namespace: its link, and the proxy's listening socket,
 * returned. */
static int gateway_side(const struct net_sandbox_config *c, hutch_error_t *err) {
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
  return steal_fd(&fd);
}

/* --net proxy, from the sandbox's namespace: the gateway namespace and the
 * veth between them; returns the proxy's listening socket. */
static int gateway_setup(const struct net_sandbox_config *c, int sandbox_ns, hutch_error_t *err) {
  double start = monotonic_seconds();
  /* The gateway namespace is owned by the sandbox's user namespace, like
   * every namespace of the sandbox.  No sandboxed process can enter it:
   * they hold no capability in that user namespace (setns needs
   * CAP_SYS_ADMIN over the target), run with no_new_privs, and the seccomp
   * filter refuses setns and unshare.  Nothing is forwarded from there:
   * it has no interface but gw0 and lo and no route beyond the /30 (its
   * IPv4 forwarding setting is inherited from the host's, with nowhere to
   * send a packet), so from the sandbox the proxy's port is the only
   * thing that answers.  It lives as long as the proxy
   * keeps the listening socket open; the veth goes with the sandbox's
   * namespace. */
  if (unshare(CLONE_NEWNET) < 0)
    return hutch_error_sys(err, "network: create the gateway network namespace");
  _cleanup_close_ int gateway_ns = current_netns(err);
  if (gateway_ns < 0 || enter_netns(sandbox_ns, "sandbox's", err) < 0)
    return -1;
  if (netlink_veth_create(NET_SANDBOX_IFNAME, NET_GATEWAY_IFNAME, gateway_ns, err) < 0 ||
      netlink_configure_link(NET_SANDBOX_IFNAME, net_sandbox_addr(c), 30, net_gateway_addr(c), err) < 0 ||
      enter_netns(gateway_ns, "gateway", err) < 0)
    return -1;
  double veth_done = monotonic_seconds();
  int listener = gateway_side(c, err);
  hutch_debug("network: gateway namespace and veth in %.3f ms, gateway side in %.3f ms", (veth_done - start) * 1e3,
              (monotonic_seconds() - veth_done) * 1e3);
  return listener;
}

/* The helper: the sandbox's network namespace with lo up and, with --net
 * proxy, the way out; both fds go to the setup process. */
static int net_helper(const struct net_sandbox_config *c, int (*then)(const char *arg, hutch_error_t *err), int sock,
                      hutch_error_t *err) {
  if (unshare(CLONE_NEWNET) < 0)
    return hutch_error_sys(err, "network: create the sandbox's network namespace");
  /* A new namespace starts with lo down: even loopback would fail. */
  if (loopback_up(err) < 0)
    return -1;
  _cleanup_close_ int sandbox_ns = current_netns(err);
  if (sandbox_ns < 0)
    return -1;
  _cleanup_close_ int listener = -1;
  if (c->enabled && (listener = gateway_setup(c, sandbox_ns, err)) < 0)
    return -1;
  /* By now the setup process has usually said go: it was building the
   * mounts meanwhile.  EOF is its end, before it could. */
  char arg[NET_GO_ARG_MAX + 1] = "";
  size_t arg_len = 0;
  if (then != NULL &&
      (sync_expect(sock, SYNC_GO, arg, NET_GO_ARG_MAX, &arg_len, "the setup process", err) < 0 || then(arg, err) < 0))
    return -1;
  int fds[2] = {sandbox_ns, listener};
  return sync_send(sock, SYNC_NETNS, NULL, 0, fds, c->enabled ? 2 : 1, err);
}

int net_sandbox_start(const struct net_sandbox_config *c, int (*then)(const char *arg, hutch_error_t *err),
                      struct net_start *ns, hutch_error_t *err) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
    return hutch_error_sys(err, "network: a socket pair for the namespace's helper");
  /* The setup process is a raw clone of the caller and keeps its signal
   * handlers until init's own: the helper's end must not run a caller's
   * SIGCHLD handler here. */
  struct sigaction dfl = {.sa_handler = SIG_DFL};
  sigemptyset(&dfl.sa_mask);
  (void)sigaction(SIGCHLD, &dfl, NULL);
  pid_t parent = getpid();
  /* The caller's soft RLIMIT_NPROC is in force again here (clone_sandbox
   * put it back), and this user namespace counts its processes against it
   * from now on: the helper is forked at the hard limit too. */
  struct rlimit old;
  bool raised = nproc_raise(&old);
  /* The helper starts in "/", not in the caller's working directory, which
   * the sandbox's procfs would show as /proc/2/cwd: a way to the host for
   * any path the setup follows.  pivot_root moves a working directory that
   * is the old root, and no other; set before the fork, since a chdir of
   * the helper's own could come after the pivot.  This process goes back
   * to where it was (the state directory may be a relative path). */
  _cleanup_close_ int here = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  const char *failed = NULL;
  pid_t pid = -1;
  if (here < 0 || chdir("/") < 0)
    failed = "the namespace's helper starts in /";
  else if ((pid = fork()) < 0)
    failed = "fork the namespace's helper";
  nproc_restore(raised, &old); /* keeps errno */
  int e = errno;
  if (pid != 0 && here >= 0 && fchdir(here) < 0 && failed == NULL) {
    failed = "back to the working directory after forking the helper";
    e = errno;
  }
  if (failed != NULL) {
    close(sv[0]);
    close(sv[1]);
    errno = e;
    return hutch_error_sys(err, "network: %s", failed);
  }
  if (pid == 0) {
    /* In a sandbox the setup process is the PID namespace's init, whose
     * end kills the helper; hutch doctor's probes are not, and a helper
     * stuck in the kernel must not outlive them. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
      _exit(1);
    /* Only its own socket: not the parent's sync socket, a long-lived
     * sandbox's control socket or a probe's result pipe. */
    close(sv[0]);
    int sock = sv[1];
    if (sock != 3 && (sock = dup3(sv[1], 3, O_CLOEXEC)) < 0)
      _exit(1);
    if (syscall(SYS_close_range, 4, ~0U, 0) < 0)
      _exit(1);
    hutch_error_t herr = NULL;
    if (net_helper(c, then, sock, &herr) < 0) {
      sync_send_error(sock, herr);
      _exit(1);
    }
    _exit(0);
  }
  close(sv[1]);
  /* Beside this process, not after it: that is the helper's point. */
  run_beside_caller(pid);
  ns->pid = pid;
  ns->sock = sv[0];
  return 0;
}

/* The helper's answer.  A helper that ended with our go unread leaves the
 * socket reset (ECONNRESET), which the first receive reports in place of
 * what the helper sent before it ended: its error, read by a second. */
static int helper_answer(struct net_start *ns, int *fds, size_t nfds, hutch_error_t *err) {
  const char *what = "the network namespace's helper";
  int r = sync_expect_fds(ns->sock, SYNC_NETNS, NULL, 0, NULL, fds, nfds, what, err);
  if (r < 0 && err != NULL && *err != NULL && (*err)->errnum == ECONNRESET) {
    hutch_error_free(err);
    r = sync_expect_fds(ns->sock, SYNC_NETNS, NULL, 0, NULL, fds, nfds, what, err);
  }
  return r;
}

int net_sandbox_go(struct net_start *ns, const char *arg, hutch_error_t *err) {
  size_t len = arg ? strlen(arg) : 0;
  if (len > NET_GO_ARG_MAX)
    return hutch_error_set(err, EINVAL, "network: %zu bytes for the namespace's helper, at most %d", len,
                           NET_GO_ARG_MAX);
  if (sync_send(ns->sock, SYNC_GO, arg, len, NULL, 0, err) == 0)
    return 0;
  /* A helper that failed has gone, its reason queued on the socket: that
   * reason, not the broken pipe, is the error.  (Only then: a helper still
   * there would wait for the go, and we for it.) */
  if (err == NULL || *err == NULL || ((*err)->errnum != EPIPE && (*err)->errnum != ECONNRESET))
    return -1;
  hutch_error_t why = NULL;
  if (helper_answer(ns, NULL, 0, &why) < 0 && why != NULL) {
    hutch_error_free(err);
    if (err != NULL)
      *err = steal_pointer(&why);
  }
  hutch_error_free(&why);
  return -1;
}

int net_sandbox_finish(const struct net_sandbox_config *c, struct net_start *ns, int parent_fd, hutch_error_t *err) {
  int fds[2] = {-1, -1};
  int r = helper_answer(ns, fds, 2, err);
  close(ns->sock);
  ns->sock = -1;
  /* Reaped before anything else runs: it held every capability in the
   * sandbox's user namespace. */
  while (waitpid(ns->pid, NULL, 0) < 0 && errno == EINTR)
    ;
  ns->pid = -1;
  if (r >= 0 && (fds[0] < 0 || (c->enabled && fds[1] < 0))) {
    errno = EPROTO;
    r = hutch_error_sys(err, "network: the namespace's helper sent no namespace");
  }
  if (r >= 0)
    r = enter_netns(fds[0], "sandbox's", err);
  /* The parent's proxy serves the listening socket from the host's
   * namespaces; our copies go. */
  if (r >= 0 && c->enabled)
    r = sync_send(parent_fd, SYNC_NET_LISTENER, NULL, 0, &fds[1], 1, err);
  for (size_t i = 0; i < 2; i++)
    if (fds[i] >= 0)
      close(fds[i]);
  return r < 0 ? -1 : 0;
}

const char *net_sandbox_resolv_conf(const struct net_sandbox_config *c) {
  if (!c->enabled)
    return "# Written by hutch. This sandbox has no network but loopback: no DNS server is\n"
           "# reachable. Names resolve only through /etc/hosts.\n";
  return "# Written by hutch. This sandbox reaches the outside only through hutch's HTTP\n"
         "# proxy (HTTP_PROXY/HTTPS_PROXY): no DNS server is reachable. The proxy resolves\n"
         "# the names it is asked for and applies the sandbox's allowlist.\n";
}

/* name with content in the directory dir (in_root.h: never through a
 * symlink) unless the image has it: the image's own configuration wins. */
static int write_if_absent(int dir, const char *name, const char *shown, const char *content, hutch_error_t *err) {
  if (in_root_create_file(dir, name, content, 0644) < 0 && errno != EEXIST)
    return hutch_error_sys(err, "network: write %s", shown);
  return 0;
}

int net_sandbox_write_tool_config(const struct net_sandbox_config *c, hutch_error_t *err) {
  if (!c->enabled)
    return 0;
  char gw[16];
  subnet_ntoa(net_gateway_addr(c), gw);
  _cleanup_free_ char *url = xasprintf("http://%s:%u", gw, (unsigned)c->port);
  /* /proc is mounted by now: the image's /etc is followed in its root, never
   * through a magic link to what the setup holds (in_root.h). */
  _cleanup_close_ int apt = in_root_open("/etc/apt", O_PATH | O_DIRECTORY, 0);
  if (apt >= 0) {
    if (mkdirat(apt, "apt.conf.d", 0755) < 0 && errno != EEXIST)
      return hutch_error_sys(err, "network: create /etc/apt/apt.conf.d");
    _cleanup_close_ int d = in_root_open("/etc/apt/apt.conf.d", O_PATH | O_DIRECTORY, 0);
    if (d < 0)
      return hutch_error_sys(err, "network: open /etc/apt/apt.conf.d");
    _cleanup_free_ char *apt_text =
        xasprintf("// Written by hutch: this sandbox reaches the outside only through its proxy.\n"
                  "Acquire::http::Proxy \"%s/\";\n"
                  "Acquire::https::Proxy \"%s/\";\n",
                  url, url);
    static const char apt_conf[] = "/etc/apt/apt.conf.d/00hutch-proxy";
    if (unlinkat(d, "00hutch-proxy", 0) < 0 && errno != ENOENT)
      return hutch_error_sys(err, "network: replace %s", apt_conf);
    if (write_if_absent(d, "00hutch-proxy", apt_conf, apt_text, err) < 0)
      return -1;
  } else if (errno != ENOENT && errno != ENOTDIR) {
    return hutch_error_sys(err, "network: open /etc/apt");
  }
  _cleanup_close_ int etc = in_root_open("/etc", O_PATH | O_DIRECTORY, 0);
  if (etc < 0)
    return hutch_error_sys(err, "network: open /etc");
  _cleanup_free_ char *pip = xasprintf("# Written by hutch: this sandbox reaches the outside only through its proxy.\n"
                                       "[global]\nproxy = %s\n",
                                       url);
  _cleanup_free_ char *git = xasprintf("# Written by hutch: this sandbox reaches the outside only through its proxy.\n"
                                       "[http]\n\tproxy = %s\n",
                                       url);
  if (write_if_absent(etc, "pip.conf", "/etc/pip.conf", pip, err) < 0 ||
      write_if_absent(etc, "gitconfig", "/etc/gitconfig", git, err) < 0)
    return -1;
  return 0;
}
