/* hutch's allowlist HTTP proxy: the only way out of a --net proxy sandbox.
 *
 * One event loop (epoll) serves any number of listeners, one per sandbox;
 * each listening socket was created inside that sandbox's gateway network
 * namespace and handed over with SCM_RIGHTS, while the upstream connections
 * are opened from the proxy's own (host) namespace.  HTTP/1.1 absolute-URI
 * requests and CONNECT tunnels; every request decided by the sandbox's
 * net_policy and written as one JSON line to its audit log. */
#ifndef HUTCH_PROXY_H
#define HUTCH_PROXY_H

#include <sys/types.h>
#include <stdint.h>

#include "hutch.h"
#include "net_policy.h"

struct proxy;

struct proxy_listener_config {
  int listen_fd;                   /* listening TCP socket, taken over (closed by the proxy) */
  const char *sandbox_id;          /* copied; written into every audit line */
  const struct net_policy *policy; /* must outlive the proxy */
  int audit_fd;                    /* O_APPEND file for JSON lines, taken over; -1: none */
  pid_t peer_pid;                  /* > 0, a Unix socket: serve only this process's connections */
};

int proxy_new(struct proxy **out, hutch_error_t *err);
int proxy_add_listener(struct proxy *p, const struct proxy_listener_config *cfg, hutch_error_t *err);
/* Serve until stop_fd becomes readable (an eventfd, a pidfd of the
 * sandbox's init, a pipe's read end) or fails; -1 means no stop fd.  Open
 * connections are closed and logged before it returns. */
int proxy_run(struct proxy *p, int stop_fd, hutch_error_t *err);
void proxy_free(struct proxy *p);

/* Totals of an audit log, for the line `hutch` prints after a run. */
struct proxy_audit_summary {
  uint64_t requests, allowed, refused, errors;
  uint64_t bytes_up, bytes_down;
  char top_refused[5][256]; /* "host:port (reason) xN" for the most frequent refusals */
  size_t n_top_refused;
};
int proxy_audit_summarize(const char *path, struct proxy_audit_summary *out, hutch_error_t *err);

#endif
