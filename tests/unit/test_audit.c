/* SPDX-License-Identifier: Apache-2.0 */
/* The audit log's chain (runtime/common/audit.c): records escaped and
 * bounded, appended with their chain and head, the cap, the end; and the
 * verification against an edited byte, a removed line, a cut end, bytes
 * appended behind the writer's back; a copy's list of files (bounded, read
 * back only to its last whole entry) and the file record. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "sha256.h"
#include "tap.h"
#include "util.h"

/* What audit_files_each hands its callback: "HEX BYTES PATH" of the first
 * two entries (the path's first 40 bytes), and each path's length. */
struct collected {
  size_t n;
  char line[2][128];
  size_t path_len[2];
};

static void collect(const char *hex, uint64_t bytes, const char *path, void *data) {
  struct collected *c = data;
  if (c->n < 2) {
    snprintf(c->line[c->n], sizeof(c->line[0]), "%s %llu %.40s", hex, (unsigned long long)bytes, path);
    c->path_len[c->n] = strlen(path);
  }
  c->n++;
}

static char dir[64];
static int dfd;

static void append(const char *type, const char *key, const char *val, uint64_t cap, int *rc, int *errnum) {
  struct audit_rec r;
  audit_rec_init(&r, type);
  if (key)
    audit_rec_str(&r, key, val);
  audit_rec_u64(&r, "n", 42);
  hutch_error_t err = NULL;
  *rc = audit_append(dfd, "a.jsonl", cap, &r, &err);
  *errnum = err ? err->errnum : 0;
  hutch_error_free(&err);
  audit_rec_free(&r);
}

static struct audit_verdict verify(const char *name, bool with_head) {
  struct audit_verdict v = {0};
  _cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
  _cleanup_free_ char *head = xasprintf("%s.head", name);
  _cleanup_close_ int hfd = with_head ? openat(dfd, head, O_RDONLY | O_CLOEXEC) : -1;
  hutch_error_t err = NULL;
  if (fd < 0 || audit_verify(fd, hfd, NULL, NULL, &v, &err) < 0)
    v.ok = false;
  hutch_error_free(&err);
  return v;
}

/* The log "a.jsonl" rewritten as "b.jsonl" (with a.jsonl's head) after edit(). */
static void tampered(void (*edit)(char *data, size_t *len)) {
  size_t len;
  _cleanup_free_ char *data = read_file_at(dfd, "a.jsonl", 1 << 20, &len);
  _cleanup_free_ char *head = read_file_at(dfd, "a.jsonl.head", 4096, NULL);
  edit(data, &len);
  write_file_at(dfd, "b.jsonl", data, len, 0600);
  write_file_at(dfd, "b.jsonl.head", head, strlen(head), 0600);
}

static void edit_byte(char *data, size_t *len) {
  (void)len;
  char *p = strstr(strchr(data, '\n') + 1, "\"n\":42");
  p[5] = '3';
}

static void remove_line2(char *data, size_t *len) {
  char *l2 = strchr(data, '\n') + 1, *l3 = strchr(l2, '\n') + 1;
  memmove(l2, l3, *len - (size_t)(l3 - data));
  *len -= (size_t)(l3 - l2);
}

static void cut_last(char *data, size_t *len) {
  data[*len - 1] = '\0';
  *len = (size_t)(strrchr(data, '\n') - data) + 1;
}

static void cut_bytes(char *data, size_t *len) {
  (void)data;
  *len -= 3;
}

int main(void) {
  snprintf(dir, sizeof(dir), "%s/test-audit.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (mkdtemp(dir) == NULL || (dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
    printf("Bail out! mkdtemp: %s\n", strerror(errno));
    return 1;
  }
  int rc, e;
  char big[6000];
  memset(big, 'x', sizeof(big) - 1);
  big[sizeof(big) - 1] = '\0';
  append("start", "s", "one\x1b[31m\"\\\nnext\x80", 0, &rc, &e);
  tap_is_int(rc, 0, "a start record is appended");
  append("command", "argv", big, 0, &rc, &e);
  append("command", "argv", "two", 0, &rc, &e);
  append("end", "reason", "done", 0, &rc, &e);
  tap_is_int(rc, 0, "an end record is appended");
  append("command", NULL, NULL, 0, &rc, &e);
  tap_ok(rc < 0 && e == EPIPE, "nothing is appended after the end (EPIPE)");
  size_t len;
  _cleanup_free_ char *text = read_file_at(dfd, "a.jsonl", 1 << 20, &len);
  tap_ok(strstr(text, "one\\u001b[31m\\\"\\\\\\u000anext\\u0080\"") != NULL,
         "control characters, quotes, backslashes and non-ASCII bytes are escaped");
  tap_ok(strstr(text, "\"s_truncated\"") == NULL && strstr(text, "\"argv_truncated\":true,\"n\":42") != NULL,
         "a value over AUDIT_VALUE_MAX is cut and marked, and the numbers after it stay");
  tap_ok(strncmp(text, "{\"seq\":1,\"prev\":\"0000000000000000000000000000000000000000000000000000000000000000\"",
                 82) == 0,
         "line 1 is anchored on zeros");
  struct audit_verdict v = verify("a.jsonl", true);
  tap_ok(v.ok && v.lines == 4 && v.ended && v.headed, "the log verifies: 4 lines, ended, against its head");
  v = verify("a.jsonl", false);
  tap_ok(v.ok, "without its head, the end record closes it");

  tampered(edit_byte);
  v = verify("b.jsonl", true);
  tap_ok(!v.ok && v.broken_line == 3, "an edited byte in line 2 breaks line 3's hash (line %llu: %s)",
         (unsigned long long)v.broken_line, v.reason);
  tampered(remove_line2);
  v = verify("b.jsonl", true);
  tap_ok(!v.ok && v.broken_line == 2, "a removed middle line breaks the numbering at line 2");
  tampered(cut_last);
  v = verify("b.jsonl", true);
  tap_ok(!v.ok, "a cut-off last line disagrees with the head (%s)", v.reason);
  v = verify("b.jsonl", false);
  tap_ok(!v.ok, "and without the head, no end record is found (%s)", v.reason);
  tampered(cut_bytes);
  v = verify("b.jsonl", true);
  tap_ok(!v.ok && v.broken_line == 4, "a partial last line is found (%s)", v.reason);

  /* An open log (the sandbox still runs): only its head shows a cut end. */
  unlinkat(dfd, "a.jsonl", 0);
  unlinkat(dfd, "a.jsonl.head", 0);
  append("start", NULL, NULL, 0, &rc, &e);
  append("command", "argv", "one", 0, &rc, &e);
  append("command", "argv", "two", 0, &rc, &e);
  v = verify("a.jsonl", true);
  tap_ok(v.ok && !v.ended && v.lines == 3, "an open log verifies against its head");
  tampered(cut_last);
  v = verify("b.jsonl", true);
  tap_ok(!v.ok && strstr(v.reason, "its head records 3") != NULL, "its last line cut off: the head says so (%s)",
         v.reason);

  /* A log changed behind the writer's back is not appended to. */
  unlinkat(dfd, "a.jsonl", 0);
  unlinkat(dfd, "a.jsonl.head", 0);
  append("start", NULL, NULL, 0, &rc, &e);
  int fd = openat(dfd, "a.jsonl", O_WRONLY | O_APPEND | O_CLOEXEC);
  tap_ok(fd >= 0 && write(fd, "junk\n", 5) == 5, "bytes appended by someone else");
  close(fd);
  append("command", NULL, NULL, 0, &rc, &e);
  tap_ok(rc < 0 && e == EBADMSG, "the next append is refused: the log does not match its head");

  /* The cap: one "capped" record, then only the end. */
  unlinkat(dfd, "a.jsonl", 0);
  unlinkat(dfd, "a.jsonl.head", 0);
  append("start", NULL, NULL, 3000, &rc, &e);
  for (int i = 0; i < 40; i++)
    append("command", "argv", "some command line", 0, &rc, &e);
  tap_is_int(rc, 0, "appends past the cap succeed (dropped)");
  append("end", "reason", "done", 0, &rc, &e);
  free(text);
  text = read_file_at(dfd, "a.jsonl", 1 << 20, &len);
  tap_ok(len <= 3000 + 300, "the log stays within its cap and the end (%zu bytes)", len);
  tap_ok(strstr(text, "\"type\":\"capped\",\"cap\":3000,\"dropped\":\"command\"") != NULL,
         "a capped record says what was dropped");
  tap_ok(strstr(strstr(text, "\"capped\""), "\"type\":\"end\"") != NULL &&
             strstr(strstr(text, "\"type\":\"capped\""), "\"type\":\"command\"") == NULL,
         "after it, no command, but the end");
  v = verify("a.jsonl", true);
  tap_ok(v.ok && v.capped && v.ended, "the capped log verifies, and says it was capped");

  /* The head: one fixed-size record, rewritten in place, its own checksum. */
  unlinkat(dfd, "a.jsonl", 0);
  unlinkat(dfd, "a.jsonl.head", 0);
  append("start", NULL, NULL, 0, &rc, &e);
  struct stat h1, h2;
  fstatat(dfd, "a.jsonl.head", &h1, 0);
  _cleanup_free_ char *old_head = read_file_at(dfd, "a.jsonl.head", 4096, NULL);
  append("command", "argv", "one", 0, &rc, &e);
  fstatat(dfd, "a.jsonl.head", &h2, 0);
  tap_ok(h1.st_ino == h2.st_ino && h1.st_size == h2.st_size && h1.st_size > 0,
         "the head is updated in place, at one size (%lld bytes; no new file per record)", (long long)h2.st_size);
  v = verify("a.jsonl", true);
  tap_ok(v.ok && v.lines == 2, "and the log verifies against it");
  /* Torn: the new head's first part over the old one's rest, as a crash
   * in the middle of its pwrite would leave it. */
  {
    _cleanup_free_ char *new_head = read_file_at(dfd, "a.jsonl.head", 4096, NULL);
    _cleanup_free_ char *torn = xstrdup(old_head);
    memcpy(torn, new_head, 100); /* past its numbers, into its hash */
    size_t tlen = strlen(torn);
    write_file_at(dfd, "b.jsonl.head", torn, tlen, 0600);
    size_t loglen;
    _cleanup_free_ char *log = read_file_at(dfd, "a.jsonl", 1 << 20, &loglen);
    write_file_at(dfd, "b.jsonl", log, loglen, 0600);
    v = verify("b.jsonl", true);
    tap_ok(!v.ok && strstr(v.reason, "torn") != NULL, "a torn head is found as such (%s)", v.reason);
    struct audit_rec r;
    audit_rec_init(&r, "command");
    hutch_error_t err = NULL;
    int arc = audit_append(dfd, "b.jsonl", 0, &r, &err);
    tap_ok(arc < 0 && err->errnum == EBADMSG && strstr(err->msg, "torn") != NULL,
           "and nothing is appended after it (%s)", err ? err->msg : "appended");
    hutch_error_free(&err);
    audit_rec_free(&r);
    /* Edited: a number changed, the checksum left. */
    char *lines = strstr(new_head, "lines 0");
    lines[strlen("lines 0000000000000000000")] = '1';
    write_file_at(dfd, "b.jsonl.head", new_head, strlen(new_head), 0600);
    v = verify("b.jsonl", true);
    tap_ok(!v.ok && strstr(v.reason, "checksum") != NULL, "an edited head fails its checksum (%s)", v.reason);
  }
  /* Heads of version 1 (logs from before) are still read, and upgraded. */
  {
    size_t loglen;
    _cleanup_free_ char *log = read_file_at(dfd, "a.jsonl", 1 << 20, &loglen);
    const char *last = log + loglen - 1;
    while (last > log && last[-1] != '\n')
      last--;
    uint8_t d[SHA256_DIGEST_SIZE];
    char hex[SHA256_HEX_SIZE];
    sha256_buffer(last, (size_t)(log + loglen - 1 - last), d);
    sha256_hex(d, hex);
    _cleanup_free_ char *v1 = xasprintf("hutch-audit-head 1\nlines 2\nbytes %zu\ncap %llu\nsha256 %s\nstate open\n",
                                        loglen, (unsigned long long)AUDIT_DEFAULT_CAP, hex);
    write_file_at(dfd, "a.jsonl.head", v1, strlen(v1), 0600);
    v = verify("a.jsonl", true);
    tap_ok(v.ok, "a version 1 head verifies (%s)", v.reason);
    append("command", "argv", "two", 0, &rc, &e);
    v = verify("a.jsonl", true);
    _cleanup_free_ char *up = read_file_at(dfd, "a.jsonl.head", 4096, NULL);
    tap_ok(rc == 0 && v.ok && v.lines == 3 && strncmp(up, "hutch-audit-head 2\n", 19) == 0,
           "an append goes on from it and writes version 2");
  }
  /* Kept open (a sandbox's handle), next to other appenders. */
  {
    struct audit_log l1, l2;
    hutch_error_t err = NULL;
    tap_ok(audit_log_open(dfd, "a.jsonl", &l1, &err) == 0 && audit_log_open(dfd, "a.jsonl", &l2, &err) == 0,
           "two handles on one log");
    int bad = 0;
    for (int i = 0; i < 30; i++) {
      struct audit_rec r;
      audit_rec_init(&r, "command");
      audit_rec_u64(&r, "i", (uint64_t)i);
      if (i % 3 == 2)
        bad += audit_append(dfd, "a.jsonl", 0, &r, &err) < 0;
      else
        bad += audit_log_append_n(i % 3 ? &l2 : &l1, 0, &r, 1, &err) < 0;
      hutch_error_free(&err);
      audit_rec_free(&r);
    }
    audit_log_close(&l1);
    audit_log_close(&l2);
    v = verify("a.jsonl", true);
    tap_ok(bad == 0 && v.ok && v.lines == 33, "appends through both and by name, interleaved, verify (%s)", v.reason);
  }

  /* The room left under the cap, what a record's line takes at most, and
   * what the records about the proxy's log tell the verification. */
  {
    unlinkat(dfd, "a.jsonl", 0);
    unlinkat(dfd, "a.jsonl.head", 0);
    append("start", NULL, NULL, 100000, &rc, &e);
    struct audit_log l;
    hutch_error_t err = NULL;
    uint64_t room = 0;
    struct stat st;
    tap_ok(audit_log_open(dfd, "a.jsonl", &l, &err) == 0 && audit_log_room(&l, &room, &err) == 0 &&
               fstatat(dfd, "a.jsonl", &st, 0) == 0 && room == 100000 - (uint64_t)st.st_size,
           "audit_log_room: the cap less the log's bytes (%llu)", (unsigned long long)room);
    struct audit_rec r[3];
    audit_rec_init(&r[0], "net");
    audit_rec_str(&r[0], "proxy", "{\"decision\":\"refuse\",\"requests\":7}");
    audit_rec_init(&r[1], "net_summary");
    audit_rec_u64(&r[1], "requests", 1234);
    audit_rec_u64(&r[1], "unlogged", 1000);
    audit_rec_u64(&r[1], "not_joined", 5);
    audit_rec_init(&r[2], "net_unread");
    audit_rec_str(&r[2], "error", "proxy log x is not a regular file");
    fstatat(dfd, "a.jsonl", &st, 0);
    off_t before = st.st_size;
    tap_ok(audit_log_append_n(&l, 0, r, 2, &err) == 0, "a net and a net_summary record");
    fstatat(dfd, "a.jsonl", &st, 0);
    tap_ok((size_t)(st.st_size - before) <= audit_rec_line_max(&r[0]) + audit_rec_line_max(&r[1]),
           "audit_rec_line_max: no line is longer (%lld bytes)", (long long)(st.st_size - before));
    v = verify("a.jsonl", true);
    tap_ok(v.ok && v.net && !v.net_unread && v.net_requests == 1234 && v.net_unlogged == 1000 && v.net_not_joined == 5,
           "the verdict has the summary's requests, those not logged, the lines not joined (not the net line's)");
    tap_ok(audit_log_append_n(&l, 0, &r[2], 1, &err) == 0, "a net_unread record");
    v = verify("a.jsonl", true);
    tap_ok(v.ok && v.net && v.net_unread, "the verdict says the proxy's log was not read");
    for (int i = 0; i < 3; i++)
      audit_rec_free(&r[i]);
    append("end", "reason", "done", 0, &rc, &e);
    tap_ok(audit_log_room(&l, &room, &err) == 0 && room == 0, "an ended log has no room");
    audit_log_close(&l);
    hutch_error_free(&err);
  }

  {
    /* A copy's list of files: paths kept to one byte past the value's
     * bound, the list bounded, and a list cut short (as a helper's answer
     * could be) read only up to its last whole entry. */
    struct audit_files f = {0};
    uint8_t d[SHA256_DIGEST_SIZE];
    sha256_buffer("abc", 3, d);
    audit_files_add(&f, d, 3, "dir/a.txt");
    char *long_path = xmalloc(AUDIT_VALUE_MAX + 100);
    memset(long_path, 'p', AUDIT_VALUE_MAX + 99);
    long_path[AUDIT_VALUE_MAX + 99] = '\0';
    audit_files_add(&f, d, 7, long_path);
    struct collected c = {0};
    size_t n = audit_files_each(f.data, f.len, collect, &c);
    tap_ok(n == 2 && c.n == 2, "two files listed, two read back");
    tap_is_str(c.line[0], "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad 3 dir/a.txt",
               "an entry: the sha256 (of \"abc\"), the size, the path");
    tap_ok(c.path_len[1] == AUDIT_VALUE_MAX + 1, "a long path is kept to one byte past the bound (%zu)", c.path_len[1]);
    c = (struct collected){0};
    tap_ok(audit_files_each(f.data, f.len - 1, collect, &c) == 1 && c.n == 1,
           "a list cut short is read to its last whole entry");
    c = (struct collected){0};
    tap_ok(audit_files_each(NULL, 0, collect, &c) == 0, "no list, no entry");
    struct audit_files many = {0};
    for (int i = 0; i < 5000; i++)
      audit_files_add(&many, d, 1, long_path);
    tap_ok(many.len <= AUDIT_FILES_MAX && many.len + 4200 > AUDIT_FILES_MAX, "the list stops at its bound (%zu bytes)",
           many.len);
    free(many.data);
    free(long_path);

    struct audit_rec r;
    audit_rec_init(&r, "file");
    audit_rec_file(&r, "in", "write", "/t/we\"ird\nname", 3,
                   "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    tap_ok(r.data != NULL && strstr(r.data, ",\"path\":\"/t/we\\\"ird\\u000aname\"") != NULL,
           "a file record's path is escaped (%s)", r.data ? r.data : "");
    audit_rec_free(&r);
    audit_rec_init(&r, "file");
    audit_rec_file(&r, "in", "remove", "/t/x", 0, NULL);
    tap_ok(strstr(r.data, "bytes") == NULL && strstr(r.data, "sha256") == NULL, "a removal has no size nor sha256");
    audit_rec_free(&r);
    free(f.data);
  }

  char when[40];
  audit_format_time(0.25, when, sizeof(when));
  tap_is_str(when, "1970-01-01T00:00:00.250Z", "the epoch");
  audit_format_time(951782400.0 + 86399, when, sizeof(when));
  tap_is_str(when, "2000-02-29T23:59:59.000Z", "a leap day");
  audit_format_time(1796172000.5, when, sizeof(when));
  tap_is_str(when, "2026-12-02T00:40:00.500Z", "today");
  for (int64_t t = -86400 * 400; t < 4102444800; t += 86400 * 37 + 3671) {
    time_t tt = (time_t)t;
    struct tm tm;
    char want[40];
    gmtime_r(&tt, &tm);
    strftime(want, sizeof(want), "%Y-%m-%dT%H:%M:%S.000Z", &tm);
    audit_format_time((double)t, when, sizeof(when));
    if (strcmp(when, want) != 0) {
      tap_is_str(when, want, "as gmtime_r at %lld", (long long)t);
      break;
    }
  }
  tap_ok(1, "the calendar agrees with gmtime_r from 1968 to 2100");

  remove_tree_at(AT_FDCWD, dir);
  return tap_done();
}
