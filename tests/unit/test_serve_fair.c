/* SPDX-License-Identifier: Apache-2.0 */
/* hutch serve's fair queue (src/serve/serve_fair.c): who a request counts
 * under, the clients served in turn, a full queue's place given from the
 * client holding the most to one holding fewer, and no client entry kept
 * once its requests are gone. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/serve/serve.h"
#include "tap.h"

static struct serve_job *job(const char *peer, unsigned client, int id) {
  struct serve_job *j = calloc(1, sizeof(*j));
  snprintf(j->peer, sizeof(j->peer), "%s", peer);
  j->client = client;
  j->fd = id; /* the test's own id: these jobs are never run */
  return j;
}

static void test_key(void) {
  char k[64];
  struct serve_job *j = job("10.1.2.3:40000", 0, 0);
  serve_fair_key(j, k);
  tap_is_str(k, "10.1.2.3", "an address is a client, whatever its port");
  snprintf(j->peer, sizeof(j->peer), "[::1]:5");
  serve_fair_key(j, k);
  tap_is_str(k, "[::1]", "an IPv6 address too");
  j->client = 3;
  serve_fair_key(j, k);
  tap_is_str(k, "token 3", "with tokens, the token is the client, whatever its address");
  free(j);
}

/* The ids popped, as a string such as "a1 b1 a2". */
static void drain(struct serve_fair *f, char *out, size_t len) {
  out[0] = '\0';
  for (struct serve_job *j; (j = serve_fair_pop(f));) {
    size_t n = strlen(out);
    snprintf(out + n, len - n, "%s%c%d", n ? " " : "", 'a' + j->peer[0] - '1', j->fd);
    free(j);
  }
}

static void test_turns(void) {
  struct serve_fair f = {0};
  struct serve_job *out;
  for (int i = 1; i <= 4; i++)
    tap_ok(serve_fair_push(&f, job("1.1.1.1:1", 0, i), 8, &out) && out == NULL, "client a's request %d waits", i);
  tap_ok(serve_fair_push(&f, job("2.2.2.2:1", 0, 1), 8, &out), "client b's waits too");
  tap_ok(serve_fair_push(&f, job("2.2.2.2:9", 0, 2), 8, &out), "and its second, from another port");
  tap_is_int(f.n_clients, 2, "two clients");
  char got[128];
  drain(&f, got, sizeof(got));
  tap_is_str(got, "a1 b1 a2 b2 a3 a4", "the clients are served in turn, each in its order");
  tap_ok(f.n_jobs == 0 && f.n_clients == 0 && f.turn == NULL, "nothing is kept once all are taken");
  for (int i = 1; i <= 3; i++)
    serve_fair_push(&f, job("1.1.1.1:1", 0, i), 8, &out);
  free(serve_fair_pop(&f));
  serve_fair_push(&f, job("2.2.2.2:1", 0, 1), 8, &out);
  serve_fair_push(&f, job("3.3.3.3:1", 0, 1), 8, &out);
  serve_fair_push(&f, job("2.2.2.2:1", 0, 2), 8, &out);
  drain(&f, got, sizeof(got));
  tap_is_str(got, "b1 c1 a2 b2 a3", "clients that had nothing waiting go first, in the order they came, then in turn");
}

static void test_full(void) {
  struct serve_fair f = {0};
  struct serve_job *out = NULL;
  for (int i = 1; i <= 4; i++)
    serve_fair_push(&f, job("1.1.1.1:1", 0, i), 4, &out);
  struct serve_job *extra = job("1.1.1.1:1", 0, 5);
  tap_ok(!serve_fair_push(&f, extra, 4, &out) && out == NULL, "a full queue refuses the client that fills it");
  free(extra);
  tap_ok(serve_fair_push(&f, job("2.2.2.2:1", 0, 1), 4, &out), "but takes another client's request");
  tap_ok(out && out->fd == 4, "in the place of the flooding client's newest (%d)", out ? out->fd : -1);
  free(out);
  tap_ok(serve_fair_push(&f, job("2.2.2.2:1", 0, 2), 4, &out) && out && out->fd == 3,
         "and of its next newest for the second, a holding 3 to b's 1");
  free(out);
  extra = job("2.2.2.2:1", 0, 3);
  tap_ok(!serve_fair_push(&f, extra, 4, &out) && out == NULL, "at two each, the shares are even: the third is refused");
  free(extra);
  tap_is_int(f.n_jobs, 4, "the queue holds --max-queue, never more");
  char got[128];
  drain(&f, got, sizeof(got));
  tap_is_str(got, "a1 b1 a2 b2", "and serves them in turn");
  serve_fair_push(&f, job("1.1.1.1:1", 0, 1), 1, &out);
  extra = job("2.2.2.2:1", 0, 1);
  tap_ok(!serve_fair_push(&f, extra, 1, &out) && out == NULL, "a queue of one is nobody's to give away");
  free(extra);
  drain(&f, got, sizeof(got));
}

/* Many clients: one entry each while they wait, none after. */
static void test_many(void) {
  struct serve_fair f = {0};
  struct serve_job *out;
  char peer[64];
  for (int i = 0; i < 1000; i++) {
    snprintf(peer, sizeof(peer), "10.0.%d.%d:1", i / 256, i % 256);
    serve_fair_push(&f, job(peer, 0, i), 1000, &out);
  }
  tap_is_int(f.n_clients, 1000, "a thousand clients, an entry each");
  int in_order = 1, i = 0;
  for (struct serve_job *j; (j = serve_fair_pop(&f)); i++) {
    in_order &= j->fd == i;
    free(j);
  }
  tap_ok(in_order && i == 1000, "one request each: first come, first served");
  tap_ok(f.n_clients == 0 && f.turn == NULL, "and no entry is left");
}

int main(void) {
  test_key();
  test_turns();
  test_full();
  test_many();
  return tap_done();
}
