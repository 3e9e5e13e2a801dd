/* SPDX-License-Identifier: Apache-2.0 */
/* One relayed connection (relay_conn.c): a host client's socket and a
 * socket on the sandbox's loopback, joined by one pipe per direction.
 * Nothing is buffered in the relay's memory: bytes move with splice, and
 * a side is read only while the pipe towards the other has room. */
#ifndef HUTCH_RELAY_CONN_H
#define HUTCH_RELAY_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The relay's counts (the audit's ports_summary), written whole into the
 * sandbox's directory as RELAY_STATS_NAME (port_relay.h). */
struct relay_stats {
  uint64_t accepted, refused, failed, bytes_in, bytes_out;
};

enum conn_state { CONN_FREE = 0, CONN_WAIT_SOCKET, CONN_CONNECTING, CONN_OPEN };

struct relay_dir {
  int pipe[2];
  size_t queued, cap; /* bytes in the pipe, its size */
  bool eof;           /* the source said EOF */
  bool shut;          /* and the destination was shut for writing */
};

struct relay_conn {
  enum conn_state state;
  int cfd, sfd;              /* the host client's; the sandbox's (-1 until connected) */
  uint32_t cev, sev;         /* the events each is registered for */
  struct relay_dir up, down; /* client to sandbox, sandbox to client */
  double since;              /* when it last moved a byte (or changed state) */
};

/* Epoll tags: what an event is for, and which connection. */
#define RELAY_TAG(kind, index) (((uint64_t)(kind) << 32) | (uint32_t)(index))
enum relay_kind { TAG_LISTENER = 1, TAG_CLIENT, TAG_SANDBOX, TAG_CONNECTOR, TAG_INIT, TAG_SIGNAL, TAG_TIMER };

/* A new client, waiting for its socket in the sandbox. */
void relay_conn_begin(struct relay_conn *c, int ep, size_t slot, int cfd, double now);
/* The sandbox's socket (a connect under way): the pipes are made and both
 * sockets watched.  -1 when it could not be set up (then closed). */
int relay_conn_connecting(struct relay_conn *c, int ep, size_t slot, int sfd, double now);
/* An event on one of its sockets; false when the connection is over (and
 * closed). */
bool relay_conn_event(struct relay_conn *c, int ep, size_t slot, bool client, uint32_t events, double now,
                      struct relay_stats *st);
void relay_conn_close(struct relay_conn *c, int ep);

#endif
