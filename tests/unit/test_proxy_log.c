/* SPDX-License-Identifier: Apache-2.0 */
/* The proxy's log (runtime/net/proxy_audit.c, proxy_summary.c): the
 * refusals' rate, log_max and the lines that count what was not logged;
 * the totals that add them back; the reader's lines, cut where too long,
 * through a buffer of fixed size. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proxy_internal.h"
#include "tap.h"
#include "util.h"

static char dir[64];

static void request(struct listener *l, const char *decision, const char *host, double now) {
  struct audit_record r = {
      .sandbox = l->sandbox_id,
      .method = "CONNECT",
      .host = host,
      .port = 443,
      .decision = decision,
      .rule = "host not listed",
      .bytes_up = 3,
  };
  proxy_log_request(l, &r, now);
}

static size_t count(const char *text, const char *what) {
  size_t n = 0;
  for (const char *p = text; (p = strstr(p, what)) != NULL; p += strlen(what))
    n++;
  return n;
}

static void test_bucket(void) {
  struct proxy_bucket b = {0};
  int took = 0;
  for (int i = 0; i < 5; i++)
    took += proxy_bucket_take(&b, 1, 3, 10.0);
  tap_is_int(took, 3, "a bucket gives its burst at once");
  tap_ok(!proxy_bucket_take(&b, 1, 3, 10.5) && proxy_bucket_take(&b, 1, 3, 11.0), "then one a second");
  tap_ok(!proxy_bucket_take(&b, 1, 3, 9.0), "a clock going back gives nothing");
  took = 0;
  for (int i = 0; i < 10; i++)
    took += proxy_bucket_take(&b, 1, 3, 100.0);
  tap_is_int(took, 3, "and it holds no more than its burst");
}

static void test_log(void) {
  _cleanup_free_ char *path = xasprintf("%s/proxy.log", dir);
  struct net_policy policy;
  net_policy_init(&policy);
  policy.log_max = 64 << 10;
  char id[] = "sb1";
  struct listener l = {.sandbox_id = id, .policy = &policy};
  l.audit_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  for (int i = 0; i < 150; i++)
    request(&l, "refuse", "evil.example", 100.0);
  size_t len;
  _cleanup_free_ char *text = read_file_at(AT_FDCWD, path, 1 << 20, &len);
  tap_is_int(count(text, "\"decision\":\"refuse\""), NET_LOG_REFUSAL_BURST,
             "150 refusals at once: the burst is logged");
  proxy_log_tick(&l, 100.5);
  free(text);
  text = read_file_at(AT_FDCWD, path, 1 << 20, &len);
  tap_is_int(count(text, "\"unlogged\""), 0, "the rest is counted, not reported before a second");
  proxy_log_tick(&l, 101.2);
  free(text);
  text = read_file_at(AT_FDCWD, path, 1 << 20, &len);
  tap_ok(strstr(text, "\"decision\":\"unlogged\",\"requests\":50,\"allowed\":0,\"refused\":50,\"errors\":0,"
                      "\"bytes_up\":150,") != NULL,
         "a second later one line counts the 50 others");
  request(&l, "error", "evil.example", 101.2);
  free(text);
  text = read_file_at(AT_FDCWD, path, 1 << 20, &len);
  tap_is_int(count(text, "\"decision\":\"error\""), 1, "the bucket refilled: an error is logged again");

  /* Allowed requests are never rated, but the bound holds them too. */
  char host[200];
  memset(host, 'a', sizeof(host) - 1);
  host[sizeof(host) - 1] = '\0';
  for (int i = 0; i < 200; i++)
    request(&l, "allow", host, 102.0);
  free(text);
  text = read_file_at(AT_FDCWD, path, 1 << 20, &len);
  tap_ok(len <= 64 << 10, "past log_max nothing more is written (%zu bytes)", len);
  tap_ok(count(text, "the log reached log_max (64 KiB): these requests and every later one") == 1,
         "one line says the bound was reached");
  for (int i = 0; i < 30; i++)
    request(&l, "refuse", "evil.example", 200.0 + i);
  proxy_log_tick(&l, 240.0);
  proxy_log_end(&l);
  proxy_log_end(&l);
  free(text);
  text = read_file_at(AT_FDCWD, path, 1 << 20, &len);
  tap_ok(len <= 64 << 10, "the last count fits in the room kept (%zu bytes)", len);
  const char *last = text + len - 1;
  while (last > text && last[-1] != '\n')
    last--;
  tap_ok(strstr(last, "\"decision\":\"unlogged\"") && strstr(last, "these requests since were counted, not logged"),
         "when the proxy ends, a last line counts what the bound kept out (once)");
  close(l.audit_fd);

  struct proxy_audit_summary s;
  _cleanup_error_ hutch_error_t err = NULL;
  tap_ok(proxy_audit_summarize(path, &s, &err) == 0, "the log's totals");
  tap_ok(s.requests == 381 && s.refused == 180 && s.allowed == 200 && s.errors == 1,
         "count every request, logged or not (%llu: %llu allowed, %llu refused, %llu errors)",
         (unsigned long long)s.requests, (unsigned long long)s.allowed, (unsigned long long)s.refused,
         (unsigned long long)s.errors);
  tap_ok(s.unlogged == s.requests - count(text, "\"method\":") && s.bad_lines == 0,
         "and say how many were not logged (%llu)", (unsigned long long)s.unlogged);
  net_policy_clear(&policy);
}

static void test_reader(void) {
  _cleanup_free_ char *path = xasprintf("%s/lines.log", dir);
  size_t big = 100 * 1024;
  _cleanup_free_ char *data = xmalloc(big + 64);
  memset(data, 'x', big);
  memcpy(data + big, "\nshort\n\nlast", 12);
  write_file_at(AT_FDCWD, path, data, big + 12, 0600);
  struct proxy_log_reader *r;
  _cleanup_error_ hutch_error_t err = NULL;
  tap_ok(proxy_log_open(path, &r, &err) == 0, "the reader opens a regular file");
  const char *line;
  tap_ok(proxy_log_next(r, &line, &err) == 1 && strlen(line) == PROXY_LOG_LINE_MAX,
         "a line of 100 KiB is cut at PROXY_LOG_LINE_MAX");
  tap_ok(proxy_log_next(r, &line, &err) == 1 && strcmp(line, "short") == 0, "its rest is skipped");
  tap_ok(proxy_log_next(r, &line, &err) == 1 && line[0] == '\0', "an empty line");
  tap_ok(proxy_log_next(r, &line, &err) == 1 && strcmp(line, "last") == 0, "a last line without its newline");
  tap_is_int(proxy_log_next(r, &line, &err), 0, "then the end");
  proxy_log_close(r);

  _cleanup_free_ char *fifo = xasprintf("%s/fifo", dir);
  mkfifo(fifo, 0600);
  int rc = proxy_log_open(fifo, &r, &err);
  tap_ok(rc < 0 && strstr(err->msg, "not a regular file") != NULL, "a FIFO is refused at once (%s)",
         err ? err->msg : "opened");
  hutch_error_free(&err);
  _cleanup_free_ char *link = xasprintf("%s/link", dir);
  symlink(path, link);
  tap_ok(proxy_log_open(link, &r, &err) < 0 && err->errnum == ELOOP, "a symbolic link is not followed");
  hutch_error_free(&err);
  struct proxy_audit_summary s;
  _cleanup_free_ char *none = xasprintf("%s/none", dir);
  tap_ok(proxy_audit_summarize(none, &s, &err) < 0 && err->errnum == ENOENT,
         "a missing log is an error, not zero requests");
}

int main(void) {
  snprintf(dir, sizeof(dir), "%s/test-proxy-log.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (mkdtemp(dir) == NULL) {
    printf("Bail out! mkdtemp: %s\n", strerror(errno));
    return 1;
  }
  test_bucket();
  test_log();
  test_reader();
  remove_tree_at(AT_FDCWD, dir);
  return tap_done();
}
