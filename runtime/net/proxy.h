/* SPDX-License-Identifier: Apache-2.0 */
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

/* A proxy audit log read line by line, in memory of a fixed size whatever
 * the file's: only a regular file, never through a link.  proxy_log_next
 * returns 1 with the next line (without its newline, NUL-terminated, cut
 * at PROXY_LOG_LINE_MAX bytes, valid until the next call), 0 at the end,
 * -1 when the file cannot be read. */
#define PROXY_LOG_LINE_MAX (16 * 1024)
struct proxy_log_reader;
int proxy_log_open(const char *path, struct proxy_log_reader **out, hutch_error_t *err);
int proxy_log_next(struct proxy_log_reader *r, const char **line, hutch_error_t *err);
void proxy_log_close(struct proxy_log_reader *r);

/* Totals of an audit log, for the line `hutch` prints after a run and the
 * audit log's net_summary.  Lines whose decision is "unlogged" add the
 * requests the proxy counted without logging them (rate, log_max). */
struct proxy_refusals;
struct proxy_audit_summary {
  uint64_t requests, allowed, refused, errors;
  uint64_t unlogged; /* of the requests, counted without a line of their own */
  uint64_t bytes_up, bytes_down;
  uint64_t lines, bad_lines; /* non-empty lines; those not a line of the proxy's */
  char top_refused[5][256];  /* "host:port (reason) xN" for the most frequent refusals */
  size_t n_top_refused;
  struct proxy_refusals *refusals; /* while lines are added */
};
/* Starting from a zeroed summary: each line, then finish (which frees). */
void proxy_summary_add_line(struct proxy_audit_summary *s, const char *line);
void proxy_summary_finish(struct proxy_audit_summary *s);
/* The whole log, streamed. */
int proxy_audit_summarize(const char *path, struct proxy_audit_summary *out, hutch_error_t *err);

#endif
