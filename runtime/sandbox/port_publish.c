/* SPDX-License-Identifier: Apache-2.0 */
/* Published ports, the creator's side: the requested ports checked, their
 * host listeners bound (before the sandbox starts: a port in use starts
 * nothing), the relay started and recorded, and stopped by the teardown
 * with its counts in the audit log. */
#include "config.h"

#include "port_relay.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "audit.h"
#include "net_policy.h"
#include "proc_stat.h"
#include "relay_conn.h"
#include "sandbox.h"
#include "state.h"
#include "util.h"

#define LOOPBACK_DEFAULT "127.0.0.1"

static const char *addr_of(const struct hutch_port *p) {
  return p->host_addr ? p->host_addr : LOOPBACK_DEFAULT;
}

/* A literal address as a socket address with the port. */
static bool to_sockaddr(const char *addr, unsigned short port, struct sockaddr_storage *ss, socklen_t *len) {
  memset(ss, 0, sizeof(*ss));
  struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
  struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
  if (inet_pton(AF_INET, addr, &in4->sin_addr) == 1) {
    in4->sin_family = AF_INET;
    in4->sin_port = htons(port);
    *len = sizeof(*in4);
    return true;
  }
  if (inet_pton(AF_INET6, addr, &in6->sin6_addr) == 1) {
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(port);
    *len = sizeof(*in6);
    return true;
  }
  return false;
}

int ports_check(const struct hutch_port *ports, size_t n, hutch_error_t *err) {
  if (n > PORTS_MAX)
    return hutch_error_set(err, EINVAL, "more than %d published ports", PORTS_MAX);
  if (n > 0 && ports == NULL)
    return hutch_error_set(err, EINVAL, "published ports: n_ports without ports");
  for (size_t i = 0; i < n; i++) {
    struct sockaddr_storage ss;
    socklen_t len;
    if (ports[i].port == 0)
      return hutch_error_set(err, EINVAL, "published port %zu: the sandbox's port must be 1 to 65535", i + 1);
    if (!to_sockaddr(addr_of(&ports[i]), 0, &ss, &len)) {
      hutch_error_set(err, EINVAL, "published port %zu: '%.64s' is not an IPv4 or IPv6 address", i + 1,
                      addr_of(&ports[i]));
      return hutch_error_hint(err, "give an address literal, such as 127.0.0.1 or ::1");
    }
  }
  return 0;
}

static bool is_loopback(const struct sockaddr_storage *ss) {
  if (ss->ss_family == AF_INET)
    return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
  return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr);
}

bool ports_address_allowed(const struct net_policy *p, const char *addr) {
  struct sockaddr_storage ss;
  socklen_t len;
  if (!to_sockaddr(addr, 0, &ss, &len))
    return false;
  if (is_loopback(&ss))
    return true;
  for (size_t i = 0; p && i < p->n_publish_address; i++)
    if (net_cidr_contains(&p->publish_address[i], (struct sockaddr *)&ss))
      return true;
  return false;
}

static int bind_one(const char *addr, unsigned short host_port, struct hutch_published_port *pub, hutch_error_t *err) {
  struct sockaddr_storage ss;
  socklen_t len;
  to_sockaddr(addr, host_port, &ss, &len);
  _cleanup_close_ int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return hutch_error_sys(err, "published port %s:%u: socket", addr, host_port);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (ss.ss_family == AF_INET6)
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  if (bind(fd, (struct sockaddr *)&ss, len) < 0) {
    int e = errno;
    hutch_error_set(err, e, "published port %s:%u: bind: %s", addr, host_port, strerror(e));
    return hutch_error_hint(err, e == EADDRINUSE      ? "another process listens there: choose another host port, or 0"
                                 : e == EADDRNOTAVAIL ? "the address is not one of this host's"
                                                      : "check the address and port");
  }
  if (listen(fd, 128) < 0)
    return hutch_error_sys(err, "published port %s:%u: listen", addr, host_port);
  if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
    return hutch_error_sys(err, "published port %s:%u: getsockname", addr, host_port);
  pub->host_port =
      ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port : ((struct sockaddr_in6 *)&ss)->sin6_port);
  snprintf(pub->host_addr, sizeof(pub->host_addr), "%s", addr);
  return steal_fd(&fd);
}

int ports_bind(const struct hutch_policy *policy, const struct hutch_port *ports, size_t n, struct port_set *out,
               hutch_error_t *err) {
  *out = (struct port_set){0};
  port_set_close(out);
  if (ports_check(ports, n, err) < 0)
    return -1;
  for (size_t i = 0; i < n; i++) {
    const char *addr = addr_of(&ports[i]);
    if (!ports_address_allowed(policy ? &policy->settings.network : NULL, addr)) {
      port_set_close(out);
      hutch_error_set(err, EPERM, "published port %s:%u: only a loopback address may be published by this policy", addr,
                      ports[i].host_port);
      return hutch_error_hint(err,
                              "publish on 127.0.0.1 (the default) or ::1; or allow the address with "
                              "`publish_address = %s` in the policy's [network] section (hutch-policy(5))",
                              addr);
    }
    int fd = bind_one(addr, ports[i].host_port, &out->pub[i], err);
    if (fd < 0) {
      port_set_close(out);
      return -1;
    }
    out->fds[i] = fd;
    out->pub[i].port = ports[i].port;
    out->n = i + 1;
  }
  return 0;
}

void port_set_close(struct port_set *s) {
  for (size_t i = 0; i < s->n; i++)
    if (s->fds[i] >= 0)
      close(s->fds[i]);
  for (size_t i = 0; i < PORTS_MAX; i++)
    s->fds[i] = -1;
}

static char *port_text(const struct hutch_published_port *p) {
  bool v6 = strchr(p->host_addr, ':') != NULL;
  return xasprintf("%s%s%s:%u:%u", v6 ? "[" : "", p->host_addr, v6 ? "]" : "", p->host_port, p->port);
}

/* ---- the relay process: started, recorded, stopped ---- */

int port_relay_start(int state_fd, const char *id, int init_pidfd, struct port_set *s, pid_t *pid, uint64_t *start_time,
                     hutch_error_t *err) {
  _cleanup_close_ int sbfd = openat(state_fd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (sbfd < 0)
    return hutch_error_sys(err, "published ports: open sandbox %s's directory", id);
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) < 0)
    return hutch_error_sys(err, "published ports: pipe");
  /* Forked twice: the relay is nobody's child but init's (or the
   * subreaper's), so a long-running caller keeps no zombie of it. */
  pid_t mid = fork();
  if (mid < 0) {
    close(ready[0]);
    close(ready[1]);
    return hutch_error_sys(err, "published ports: fork the relay");
  }
  if (mid == 0) {
    close(ready[0]);
    pid_t r = fork();
    if (r == 0)
      relay_main(sbfd, init_pidfd, ready[1], s);
    _exit(r < 0 ? 1 : 0);
  }
  close(ready[1]);
  _cleanup_close_ int rfd = ready[0];
  int status = 0;
  while (waitpid(mid, &status, 0) < 0 && errno == EINTR)
    ;
  port_set_close(s);
  /* The relay says its pid and 0 once its connector has joined the
   * sandbox's namespaces, or an errno. */
  int32_t msg[2] = {0, 0};
  struct pollfd pfd = {rfd, POLLIN, 0};
  int n = 0;
  while ((n = poll(&pfd, 1, 10000)) < 0 && errno == EINTR)
    ;
  ssize_t got = n > 0 ? read(rfd, msg, sizeof(msg)) : -1;
  if (got != (ssize_t)sizeof(msg) || msg[1] != 0 || msg[0] <= 0) {
    if (got == (ssize_t)sizeof(msg) && msg[0] > 0)
      kill(msg[0], SIGKILL);
    int e = got == (ssize_t)sizeof(msg) && msg[1] > 0 ? msg[1] : (n == 0 ? ETIMEDOUT : EIO);
    hutch_error_set(err, e, "published ports: the relay could not reach the sandbox's network namespace: %s",
                    strerror(e));
    return hutch_error_hint(err, "joining a sandbox's namespaces needs Linux 5.8 or later (setns on a pidfd)");
  }
  *pid = msg[0];
  *start_time = proc_stat_start_time(*pid);
  return 0;
}

cJSON *ports_state_json(const struct port_set *s, pid_t relay_pid, uint64_t relay_start_time) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "relay_pid", relay_pid);
  char t[32];
  snprintf(t, sizeof(t), "%" PRIu64, relay_start_time);
  cJSON_AddStringToObject(o, "relay_start_time", t);
  /* Each [ADDR, HOSTPORT, PORT]. */
  cJSON *a = cJSON_AddArrayToObject(o, "published");
  for (size_t i = 0; i < s->n; i++) {
    cJSON *p = cJSON_CreateArray();
    cJSON_AddItemToArray(p, cJSON_CreateString(s->pub[i].host_addr));
    cJSON_AddItemToArray(p, cJSON_CreateNumber(s->pub[i].host_port));
    cJSON_AddItemToArray(p, cJSON_CreateNumber(s->pub[i].port));
    cJSON_AddItemToArray(a, p);
  }
  return o;
}

static bool port_number(const cJSON *v, unsigned short *out) {
  if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 65535)
    return false;
  *out = (unsigned short)v->valuedouble;
  return true;
}

void ports_from_state(const cJSON *rec, struct hutch_published_port **out, size_t *n) {
  *out = NULL;
  *n = 0;
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(rec, "published");
  if (!cJSON_IsArray(a))
    return;
  *out = xcalloc(PORTS_MAX, sizeof(**out));
  const cJSON *p;
  cJSON_ArrayForEach(p, a) {
    if (*n == PORTS_MAX)
      break;
    struct hutch_published_port pp = {0};
    const cJSON *addr = cJSON_GetArrayItem(p, 0);
    if (!cJSON_IsArray(p) || !cJSON_IsString(addr) || !port_number(cJSON_GetArrayItem(p, 1), &pp.host_port) ||
        !port_number(cJSON_GetArrayItem(p, 2), &pp.port))
      continue;
    snprintf(pp.host_addr, sizeof(pp.host_addr), "%s", addr->valuestring);
    (*out)[(*n)++] = pp;
  }
}

/* SIGTERM first, so that it writes its counts; killed if it does not end
 * within a second.  Only the process recorded: the pidfd pins it while
 * its start time is compared. */
static void stop_process(pid_t pid, uint64_t start_time) {
  int pidfd = pid > 0 ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
  if (pidfd < 0)
    return;
  if (start_time == 0 || proc_stat_start_time(pid) != start_time) {
    close(pidfd);
    return;
  }
  struct pollfd pfd = {pidfd, POLLIN, 0};
  syscall(SYS_pidfd_send_signal, pidfd, SIGTERM, NULL, 0);
  if (poll(&pfd, 1, 1000) <= 0) {
    syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
    poll(&pfd, 1, 5000);
  }
  close(pidfd);
}

static const char *const stat_keys[] = {"accepted", "refused", "failed", "bytes_in", "bytes_out"};

void port_relay_stop(int state_fd, const char *id, const cJSON *rec) {
  if (rec == NULL)
    return;
  const cJSON *pid = cJSON_GetObjectItemCaseSensitive(rec, "relay_pid");
  const cJSON *st = cJSON_GetObjectItemCaseSensitive(rec, "relay_start_time");
  if (cJSON_IsNumber(pid) && cJSON_IsString(st))
    stop_process((pid_t)pid->valuedouble, strtoull(st->valuestring, NULL, 10));
  _cleanup_close_ int sbfd = openat(state_fd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (sbfd < 0)
    return;
  /* Its counts, as it wrote them: a binary record of fixed size. */
  struct relay_stats s = {0};
  bool known = false;
  _cleanup_close_ int fd = openat(sbfd, RELAY_STATS_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    known = read(fd, &s, sizeof(s)) == (ssize_t)sizeof(s);
    unlinkat(sbfd, RELAY_STATS_NAME, 0);
  }
  struct audit_rec r;
  audit_rec_init(&r, "ports_summary");
  if (known) {
    uint64_t v[] = {s.accepted, s.refused, s.failed, s.bytes_in, s.bytes_out};
    audit_rec_u64s(&r, stat_keys, v, ARRAY_SIZE(v));
  } else
    audit_rec_str(&r, "counts", "unknown: the relay wrote none");
  hutch_error_t err = NULL;
  if (audit_append(sbfd, AUDIT_LOG_NAME, 0, &r, &err) < 0) {
    hutch_log_error(HUTCH_LOG_DEBUG, err);
    hutch_error_free(&err);
  }
  audit_rec_free(&r);
}

/* ---- a create's ports ---- */

int ports_bind_extras(const struct hutch_sandbox_config *cfg, const struct hutch_sandbox_extras *x,
                      struct port_set *set, struct hutch_sandbox_extras *xc, struct hutch_port chosen[PORTS_MAX],
                      hutch_error_t *err) {
  *set = (struct port_set){0};
  port_set_close(set);
  if (x == NULL)
    return 0;
  *xc = *x;
  if (x->n_ports == 0)
    return 0;
  if (ports_bind(cfg->policy, x->ports, x->n_ports, set, err) < 0)
    return -1;
  for (size_t i = 0; i < set->n; i++)
    chosen[i] = (struct hutch_port){
        .host_addr = x->ports[i].host_addr, .host_port = set->pub[i].host_port, .port = x->ports[i].port};
  xc->ports = chosen;
  return 0;
}

char **ports_strv(const struct hutch_port *ports, size_t n) {
  char **v = xcalloc(n + 1, sizeof(char *));
  for (size_t i = 0; i < n; i++) {
    struct hutch_published_port p = {.host_port = ports[i].host_port, .port = ports[i].port};
    snprintf(p.host_addr, sizeof(p.host_addr), "%s", addr_of(&ports[i]));
    v[i] = port_text(&p);
  }
  return v;
}

static int record_relay(struct sandbox_state *st, void *data, hutch_error_t *err) {
  (void)err;
  cJSON_Delete(st->live.ports);
  st->live.ports = cJSON_Duplicate(data, true);
  return 0;
}

int ports_publish(struct hutch_sandbox *sb, struct port_set *set, int lockfd, hutch_error_t *err) {
  if (set->n == 0)
    return 0;
  pid_t pid = -1;
  uint64_t start_time = 0;
  if (port_relay_start(sb->state_fd, sb->id, sb->init_pidfd, set, &pid, &start_time, err) < 0)
    return -1;
  cJSON *rec = ports_state_json(set, pid, start_time);
  int r = lockfd >= 0 ? state_update_locked(lockfd, sb->state_fd, sb->id, record_relay, rec, err)
                      : state_update(sb->state_fd, sb->id, record_relay, rec, err);
  if (r < 0)
    port_relay_stop(sb->state_fd, sb->id, rec);
  cJSON_Delete(rec);
  return r < 0 ? hutch_error_wrap(err, "published ports: record the relay") : 0;
}
