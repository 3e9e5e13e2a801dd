/* SPDX-License-Identifier: Apache-2.0 */
/* The waiting requests, shared fairly between clients: each client (its
 * token's line with --token-file, else its address, the port left out) has
 * a queue of its own, and the workers take from the clients in turn, one
 * request each, so a client that sends a thousand requests waits behind
 * its own, not in front of everyone else's.  A client that had nothing
 * waiting is served before those with a backlog (in the order such clients
 * came), as fq_codel favours new flows: the second client's request waits
 * for a free worker only.  When the queue is full, a
 * request from a client holding fewer waiting requests than the client
 * holding the most takes the place of that client's newest: a flood fills
 * the queue only while nobody else wants it.  A client's entry lives only
 * while it has a request waiting, so there are never more entries than
 * --max-queue.  No lock here: serve_queue.c holds its own around these. */
#include "config.h"

#include "serve.h"

#include <stdio.h>
#include <string.h>

#include "util.h"

struct serve_fair_client {
  char key[64];
  struct serve_job *head, *tail;
  unsigned n;
  struct serve_fair_client *next, *prev; /* the ring of clients with requests waiting */
};

void serve_fair_key(const struct serve_job *j, char key[64]) {
  if (j->client) {
    snprintf(key, 64, "token %u", j->client);
    return;
  }
  /* "a.b.c.d:port" or "[v6]:port": the address alone. */
  const char *colon = strrchr(j->peer, ':');
  size_t n = colon ? (size_t)(colon - j->peer) : strlen(j->peer);
  snprintf(key, 64, "%.*s", (int)n, j->peer);
}

/* The ring from turn: the clients that came with nothing waiting, up to
 * f->last_new, then the others in turn.  A client served goes to the end
 * of the round as turn moves past it. */
static struct serve_fair_client *find(const struct serve_fair *f, const char *key) {
  struct serve_fair_client *c = f->turn;
  for (unsigned i = 0; i < f->n_clients; i++, c = c->next)
    if (strcmp(c->key, key) == 0)
      return c;
  return NULL;
}

static void append(struct serve_fair *f, struct serve_fair_client *c, struct serve_job *j) {
  j->next = NULL;
  if (c->tail)
    c->tail->next = j;
  else
    c->head = j;
  c->tail = j;
  c->n++;
  f->n_jobs++;
}

/* A client with nothing waiting leaves the ring. */
static void unlink_client(struct serve_fair *f, struct serve_fair_client *c) {
  if (--f->n_clients == 0) {
    f->turn = NULL;
  } else {
    c->prev->next = c->next;
    c->next->prev = c->prev;
    if (f->turn == c)
      f->turn = c->next;
  }
  free(c);
}

/* The newest request of c, out of the queue. */
static struct serve_job *take_newest(struct serve_fair *f, struct serve_fair_client *c) {
  struct serve_job *j = c->tail;
  if (c->head == j) {
    c->head = c->tail = NULL;
  } else {
    struct serve_job *p = c->head;
    while (p->next != j)
      p = p->next;
    p->next = NULL;
    c->tail = p;
  }
  c->n--;
  f->n_jobs--;
  return j;
}

bool serve_fair_push(struct serve_fair *f, struct serve_job *j, unsigned max, struct serve_job **pushed_out) {
  *pushed_out = NULL;
  char key[64];
  serve_fair_key(j, key);
  struct serve_fair_client *c = find(f, key);
  if (f->n_jobs >= max) {
    struct serve_fair_client *p = f->turn, *most = p;
    for (unsigned i = 0; i < f->n_clients; i++, p = p->next)
      if (p->n > most->n)
        most = p;
    /* Two more than this client's: one fewer for it and one more here
     * still leaves it at least as many. */
    if (most == NULL || most->n < (c ? c->n : 0) + 2)
      return false;
    *pushed_out = take_newest(f, most); /* it keeps one at least */
  }
  if (c == NULL) {
    c = xcalloc(1, sizeof(*c));
    snprintf(c->key, sizeof(c->key), "%s", key);
    if (f->turn == NULL) {
      c->next = c->prev = c;
      f->turn = c;
    } else { /* after the clients that came before it with nothing waiting */
      struct serve_fair_client *after = f->last_new ? f->last_new : f->turn->prev;
      c->prev = after;
      c->next = after->next;
      after->next->prev = c;
      after->next = c;
      if (f->last_new == NULL)
        f->turn = c;
    }
    f->last_new = c;
    f->n_clients++;
  }
  append(f, c, j);
  return true;
}

struct serve_job *serve_fair_pop(struct serve_fair *f) {
  struct serve_fair_client *c = f->turn;
  if (c == NULL)
    return NULL;
  struct serve_job *j = c->head;
  c->head = j->next;
  if (c->head == NULL)
    c->tail = NULL;
  j->next = NULL;
  c->n--;
  f->n_jobs--;
  if (f->last_new == c)
    f->last_new = NULL;
  f->turn = c->next;
  if (c->n == 0)
    unlink_client(f, c);
  return j;
}
