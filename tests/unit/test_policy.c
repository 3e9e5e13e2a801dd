/* SPDX-License-Identifier: Apache-2.0 */
/* Policy files: parsing (every error names file:line) and loading. */
#include "config.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "policy.h"
#include "tap.h"
#include "util.h"

/* Parses text; returns the error message (or NULL on success). */
static char *parse_msg(const char *text, struct policy_settings *out) {
  struct policy_settings s = {0};
  hutch_error_t err = NULL;
  int r = policy_parse(text, "t.policy", &s, &err);
  if (r == 0) {
    if (out)
      *out = s;
    else
      policy_settings_clear(&s);
    return NULL;
  }
  char *msg = xasprintf("%s%s%s", err->msg, err->hint ? " | hint: " : "", err->hint ? err->hint : "");
  hutch_error_free(&err);
  return msg;
}

static void expect_error(const char *text, const char *want, const char *what) {
  _cleanup_free_ char *msg = parse_msg(text, NULL);
  tap_ok(msg != NULL && strstr(msg, want) != NULL, "%s", what);
  if (msg == NULL || strstr(msg, want) == NULL)
    printf("#   got \"%s\", want it to contain \"%s\"\n", msg ? msg : "(success)", want);
}

static void test_good(void) {
  struct policy_settings s;
  char *msg = parse_msg("# comment\n"
                        "\n"
                        "[sandbox]\n"
                        "  seccomp = seccomp.json   # trailing comment\n"
                        "hostname=box-1.example\n"
                        "nofile = 2048\n",
                        &s);
  tap_ok(msg == NULL, "a full policy parses");
  free(msg);
  if (msg != NULL)
    return;
  tap_is_str(s.seccomp, "seccomp.json", "seccomp value, comment stripped");
  tap_is_int(s.seccomp_line, 4, "seccomp line recorded");
  tap_is_str(s.hostname, "box-1.example", "hostname without blanks around '='");
  tap_is_int(s.nofile, 2048, "nofile");
  policy_settings_clear(&s);

  msg = parse_msg("[sandbox]\r\nseccomp = \"my profile #1.json\"  # quoted\r\n", &s);
  tap_ok(msg == NULL, "CRLF line ends and a quoted value parse");
  free(msg);
  if (msg == NULL) {
    tap_is_str(s.seccomp, "my profile #1.json", "a quoted value keeps blanks and '#'");
    tap_ok(s.hostname == NULL, "hostname unset is NULL");
    tap_is_int(s.nofile, 0, "nofile unset is 0 (inherited)");
    policy_settings_clear(&s);
  }

  msg = parse_msg("[ sandbox ]   # header comment\nseccomp = a#b.json\n", &s);
  tap_ok(msg == NULL, "blanks inside the header and a comment after it");
  free(msg);
  if (msg == NULL) {
    tap_is_str(s.seccomp, "a#b.json", "'#' inside a word is part of the value");
    policy_settings_clear(&s);
  }
  msg = parse_msg("[sandbox]\nseccomp = /abs/x.json\nnofile = 16\nhostname = a\n[sandbox.more]", NULL);
  tap_ok(msg != NULL && strstr(msg, "t.policy:5: unknown section [sandbox.more]"), "section names are checked");
  free(msg);
}

static void test_errors(void) {
  expect_error("[network9]\nx = 1\n", "t.policy:1: unknown section [network9]", "unknown section");
  expect_error("[network9]\n", "hint: known sections: [sandbox], [limits]",
               "unknown section: hint lists the known ones");
  expect_error("[sandbox\n", "t.policy:1: unterminated section header", "unterminated section header");
  expect_error("\n[sandbox] seccomp = x\n", "t.policy:2: text after the section header", "text after a header");
  expect_error("seccomp = x\n", "t.policy:1: key \"seccomp\" outside of a section", "key before any section");
  expect_error("[sandbox]\nseccomp\n", "t.policy:2: expected \"key = value\"", "line without '='");
  expect_error("[sandbox]\nSeccomp = x\n", "t.policy:2: bad key \"Seccomp\"", "keys are lower case");
  expect_error("[sandbox]\n = x\n", "t.policy:2: bad key \"\"", "empty key");
  expect_error("[sandbox]\nseccomp = x\nmemory = 1G\n", "t.policy:3: unknown key \"memory\" in [sandbox]",
               "unknown key");
  expect_error("[sandbox]\nmemory = 1G\n", "keys of [sandbox]: seccomp, hostname, nofile",
               "unknown key: hint lists the section's keys");
  expect_error("[sandbox]\nseccomp = a\n\nseccomp = b\n", "t.policy:4: duplicate key \"seccomp\" (first set on line 2)",
               "duplicate key");
  expect_error("[sandbox]\nseccomp = a\n[sandbox]\n", "t.policy:3: section [sandbox] given twice (first on line 1)",
               "duplicate section");
  expect_error("[sandbox]\nseccomp = a\nhostname =   # nothing\n", "t.policy:3: hostname: empty value", "empty value");
  expect_error("[sandbox]\nseccomp = \"a\n", "t.policy:2: seccomp: unterminated quoted value", "unterminated quote");
  expect_error("[sandbox]\nseccomp = \"a\" b\n", "t.policy:2: seccomp: text after the quoted value",
               "text after a quoted value");
  expect_error("[sandbox]\nseccomp = a\nnofile = many\n", "t.policy:3: bad value for nofile: \"many\": not a decimal",
               "nofile not a number");
  expect_error("[sandbox]\nseccomp = a\nnofile = -5\n", "t.policy:3: bad value for nofile", "nofile negative");
  expect_error("[sandbox]\nseccomp = a\nnofile = 0\n", "t.policy:3: bad value for nofile: \"0\": out of range",
               "nofile 0 is out of range");
  expect_error("[sandbox]\nseccomp = a\nnofile = 2000000\n", "from 16 to 1048576",
               "nofile too large: hint has the range");
  expect_error("[sandbox]\nseccomp = a\nnofile = 99999999999999999999999\n", "out of range", "nofile overflow");
  expect_error("[sandbox]\nseccomp = a\nhostname = -box\n", "t.policy:3: bad value for hostname: \"-box\"",
               "hostname starting with '-'");
  expect_error("[sandbox]\nseccomp = a\nhostname = a..b\n", "empty label", "hostname with an empty label");
  expect_error("[sandbox]\nseccomp = a\nhostname = a_b\n", "only letters, digits", "hostname with '_'");
  expect_error("[sandbox]\nseccomp = a\nhostname = "
               "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
               "longer than 64", "hostname too long");
  expect_error("[sandbox]\nseccomp = a\x01"
               "b\n",
               "t.policy:2: bad value for seccomp", "control character in a path");
  expect_error("[sandbox]\nhostname = box\n", "t.policy: [sandbox] seccomp is required", "seccomp is required");
  expect_error("", "t.policy: [sandbox] seccomp is required", "an empty file lacks seccomp");
}

/* ---- loading ----------------------------------------------------------- */

static char *tmpdir;

static void write_text(const char *name, const char *text) {
  _cleanup_free_ char *path = xasprintf("%s/%s", tmpdir, name);
  if (write_file_atomic(path, text, strlen(text), 0644) < 0) {
    printf("Bail out! cannot write %s\n", path);
    exit(1);
  }
}

static const char minimal_json[] = "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"architectures\": [], "
                                   "\"syscalls\": [{\"names\": [\"read\"], \"action\": \"SCMP_ACT_ALLOW\"}]}";

static char *load_msg(const char *path, struct hutch_policy **out) {
  hutch_error_t err = NULL;
  struct hutch_policy *p = NULL;
  if (hutch_policy_load(path, &p, &err) == 0) {
    if (out)
      *out = p;
    else
      hutch_policy_free(p);
    return NULL;
  }
  char *msg = xasprintf("%s%s%s", err->msg, err->errnum ? ": " : "", err->errnum ? strerror(err->errnum) : "");
  hutch_error_free(&err);
  return msg;
}

static void test_load(void) {
  const char *base = getenv("TMPDIR");
  _cleanup_free_ char *tmpl = xasprintf("%s/test-policy.XXXXXX", base && base[0] == '/' ? base : "/tmp");
  tmpdir = mkdtemp(tmpl);
  if (tmpdir == NULL) {
    printf("Bail out! mkdtemp\n");
    exit(1);
  }
  write_text("seccomp.json", minimal_json);
  write_text("p.policy", "[sandbox]\nseccomp = seccomp.json\nhostname = h\n");
  _cleanup_free_ char *ppath = xasprintf("%s/p.policy", tmpdir);
  _cleanup_free_ char *jpath = xasprintf("%s/seccomp.json", tmpdir);

  struct hutch_policy *p = NULL;
  char *msg = load_msg(ppath, &p);
  tap_ok(msg == NULL, "a policy with a relative seccomp path loads");
  free(msg);
  if (p != NULL) {
    tap_is_str(hutch_policy_path(p), ppath, "hutch_policy_path");
    tap_is_str(p->seccomp_path, jpath, "the seccomp path is resolved from the policy's directory");
    tap_is_int(strlen(p->digest), 64, "a sha256 hex digest");
    tap_ok(p->bpf == NULL, "loading compiles nothing");
    tap_is_int(p->seccomp_json_len, strlen(minimal_json), "the profile bytes are kept for a cold compile");
  }

  /* Same bytes, same digest; other bytes, other digest. */
  struct hutch_policy *q = NULL;
  msg = load_msg(ppath, &q);
  free(msg);
  tap_ok(p && q && strcmp(p->digest, q->digest) == 0, "the digest is stable for the same profile");
  hutch_policy_free(q);
  q = NULL;
  write_text("other.json", "{\"defaultAction\": \"SCMP_ACT_ERRNO\"}");
  _cleanup_free_ char *abs_policy = xasprintf("[sandbox]\nseccomp = %s/other.json\n", tmpdir);
  write_text("abs.policy", abs_policy);
  _cleanup_free_ char *apath = xasprintf("%s/abs.policy", tmpdir);
  msg = load_msg(apath, &q);
  tap_ok(msg == NULL, "an absolute seccomp path loads");
  free(msg);
  tap_ok(p && q && strcmp(p->digest, q->digest) != 0, "another profile has another digest");
  hutch_policy_free(q);
  hutch_policy_free(p);

  /* NULL: $HUTCH_POLICY */
  setenv("HUTCH_POLICY", ppath, 1);
  p = NULL;
  msg = load_msg(NULL, &p);
  tap_ok(msg == NULL && p != NULL && strcmp(hutch_policy_path(p), ppath) == 0, "a NULL path loads $HUTCH_POLICY");
  free(msg);
  hutch_policy_free(p);

  _cleanup_free_ char *missing = xasprintf("%s/missing.policy", tmpdir);
  msg = load_msg(missing, NULL);
  tap_ok(msg && strstr(msg, "missing.policy: read: No such file"), "a missing policy file is named");
  if (msg && !strstr(msg, "missing.policy: read: No such file"))
    printf("#   got %s\n", msg);
  free(msg);

  write_text("nojson.policy", "# x\n[sandbox]\nseccomp = nowhere.json\n");
  _cleanup_free_ char *npath = xasprintf("%s/nojson.policy", tmpdir);
  msg = load_msg(npath, NULL);
  tap_ok(msg && strstr(msg, "nojson.policy:3: seccomp profile ") && strstr(msg, "nowhere.json: read: No such file"),
         "a missing profile names the policy's file:line and the profile");
  if (msg && !strstr(msg, "nojson.policy:3"))
    printf("#   got %s\n", msg);
  free(msg);

  write_text("bad.policy", "[sandbox]\nseccomp = seccomp.json\nsize = 3\n");
  _cleanup_free_ char *bpath = xasprintf("%s/bad.policy", tmpdir);
  msg = load_msg(bpath, NULL);
  tap_ok(msg && strstr(msg, "bad.policy:3: unknown key \"size\""), "a parse error names the file and line");
  free(msg);

  _cleanup_free_ char *nul_path = xasprintf("%s/nul.policy", tmpdir);
  write_file_atomic(nul_path, "[sandbox]\0x", 11, 0644);
  msg = load_msg(nul_path, NULL);
  tap_ok(msg && strstr(msg, "NUL byte"), "a policy with a NUL byte is refused");
  free(msg);

  /* A profile that does not parse: the load succeeds (it only hashes), the
   * description refuses it, as the compile of a sandbox start would. */
  write_text("broken.json", "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": [{\"names\": [\"nosuchcall\"], "
                            "\"action\": \"SCMP_ACT_ALLOW\"}]}");
  write_text("broken.policy", "[sandbox]\nseccomp = broken.json\n");
  _cleanup_free_ char *brpath = xasprintf("%s/broken.policy", tmpdir);
  p = NULL;
  msg = load_msg(brpath, &p);
  free(msg);
  if (p != NULL) {
    hutch_error_t err = NULL;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    int r = hutch_policy_describe(p, false, f, &err);
    fclose(f);
    tap_ok(r < 0 && err && strstr(err->msg, "broken.policy") && strstr(err->msg, "broken.json") &&
               strstr(err->msg, "unknown syscall name \"nosuchcall\""),
           "describing a policy with an unknown syscall fails, naming both files and the name");
    if (err)
      printf("#   %s\n", err->msg);
    tap_ok(len == 0, "and prints nothing");
    hutch_error_free(&err);
    const void *bpf;
    size_t bpf_len;
    setenv("HUTCH_CACHE_DIR", tmpdir, 1);
    r = policy_seccomp_program(p, NULL, &bpf, &bpf_len, &err);
    tap_ok(r < 0 && err && strstr(err->msg, "unknown syscall name"), "and no program is made from it");
    hutch_error_free(&err);
    free(buf);
    hutch_policy_free(p);
  } else {
    tap_ok(0, "broken.policy loads");
  }

  /* The start path keeps the program, not the JSON text: a long-lived
   * sandbox's init is a fork of this process.  A description afterwards
   * reads the file again, and refuses it when it no longer has the digest
   * the program was made under. */
  write_text("kept.json", minimal_json);
  write_text("kept.policy", "[sandbox]\nseccomp = kept.json\n");
  _cleanup_free_ char *kept = xasprintf("%s/kept.policy", tmpdir);
  p = NULL;
  msg = load_msg(kept, &p);
  tap_ok(msg == NULL && p != NULL && p->seccomp_json != NULL, "a loaded policy holds its profile's text");
  free(msg);
  if (p != NULL) {
    hutch_error_t err = NULL;
    const void *bpf;
    size_t bpf_len;
    int r = policy_seccomp_program(p, NULL, &bpf, &bpf_len, &err);
    tap_ok(r == 0 && p->seccomp_json == NULL && p->seccomp_json_len == 0,
           "once the program is made, the text is released");
    hutch_error_free(&err);
    FILE *f = fopen("/dev/null", "w");
    r = hutch_policy_describe(p, false, f, &err);
    tap_ok(r == 0, "a description after that reads the profile again");
    hutch_error_free(&err);
    write_text("kept.json", "{\"defaultAction\": \"SCMP_ACT_ALLOW\"}");
    r = hutch_policy_describe(p, false, f, &err);
    tap_ok(r < 0 && err && strstr(err->msg, "changed after the policy was loaded"),
           "and refuses a profile changed since the load");
    if (err)
      printf("#   %s\n", err->msg);
    hutch_error_free(&err);
    fclose(f);
    hutch_policy_free(p);
  }

  _cleanup_free_ char *cmd = xasprintf("rm -rf '%s'", tmpdir);
  if (system(cmd) != 0)
    printf("# could not remove %s\n", tmpdir);
}

static void test_shipped(void) {
  const char *src = getenv("HUTCH_SRCDIR");
  _cleanup_free_ char *path =
      src ? xasprintf("%s/policies/default.policy", src) : xstrdup("../policies/default.policy");
  struct hutch_policy *p = NULL;
  char *msg = load_msg(path, &p);
  tap_ok(msg == NULL, "the shipped default.policy loads (%s)", path);
  if (msg)
    printf("#   %s\n", msg);
  free(msg);
  if (p != NULL) {
    tap_is_str(p->settings.hostname, "sandbox", "default.policy: hostname");
    tap_is_int(p->settings.nofile, 1024, "default.policy: nofile");
    tap_ok(strstr(p->seccomp_path, "policies/seccomp.json") != NULL, "default.policy: seccomp.json beside it");
  }
  hutch_policy_free(p);
}

int main(void) {
  test_good();
  test_errors();
  test_load();
  test_shipped();
  return tap_done();
}
