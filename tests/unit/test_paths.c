/* SPDX-License-Identifier: Apache-2.0 */
/* Name and in-sandbox path checks, exec requests and environment merging. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paths.h"
#include "request.h"
#include "tap.h"

static void norm(const char *in, const char *want) {
  char *got = paths_normalize_inside(in);
  tap_is_str(got, want, "normalize '%s'", in ? in : "(null)");
  free(got);
}

/* The names paths_next_name() gives for path, joined by '|', with the
 * prefix each ends ('>' before it). */
static void names(const char *path, const char *want) {
  char got[256] = "";
  size_t n = 0;
  for (size_t at = 0, start; paths_next_name(path, &at, &start);)
    n += (size_t)snprintf(got + n, sizeof(got) - n, "%s%.*s>%.*s", n ? "|" : "", (int)(at - start), path + start,
                          (int)at, path);
  tap_is_str(got, want, "the names of '%s'", path);
}

int main(void) {
  names("/etc/apt//conf.d/", "etc>/etc|apt>/etc/apt|conf.d>/etc/apt//conf.d");
  names("a", "a>a");
  names("", "");
  names("///", "");
  tap_ok(paths_led_into("/proc", "/tmp", "/proc"), "/tmp resolved to /proc: led into it");
  tap_ok(paths_led_into("/proc/1", "/mnt", "/proc"), "/mnt resolved to /proc/1: led into it");
  tap_ok(!paths_led_into("/dev/kvm", "/dev/kvm", "/dev"), "/dev/kvm named as such: not led");
  tap_ok(!paths_led_into("/devices", "/mnt", "/dev"), "/devices is not below /dev");
  tap_ok(!paths_led_into("/srv/a", "/mnt/a", "/proc"), "elsewhere: not led");
  tap_ok(paths_valid_name("default"), "plain name");
  tap_ok(paths_valid_name("ubuntu:24.04"), "name with colon and dots");
  tap_ok(!paths_valid_name(""), "empty name refused");
  tap_ok(!paths_valid_name("../etc"), "leading dots refused");
  tap_ok(!paths_valid_name("a/b"), "slash refused");
  tap_ok(!paths_valid_name("a..b"), "'..' anywhere refused");
  tap_ok(!paths_valid_name("-rf"), "leading dash refused");
  char longname[200];
  memset(longname, 'a', sizeof(longname) - 1);
  longname[sizeof(longname) - 1] = '\0';
  tap_ok(!paths_valid_name(longname), "over 128 characters refused");

  norm("/", "/");
  norm("//usr///bin/", "/usr/bin");
  norm("/./a/./b", "/a/b");
  norm("/a/../b", NULL);
  norm("/..", NULL);
  norm("relative", NULL);
  norm(NULL, NULL);
  norm("/a/..b/c", "/a/..b/c");

  const char *base[] = {"PATH=/bin", "HOME=/root", NULL};
  const char *over[] = {"HOME=/home/x", "NEW=1", "junk", "=nokey", NULL};
  const char *const *layers[] = {base, NULL, over};
  char **env = env_merge(layers, 3);
  tap_is_int(strv_length((const char *const *)env), 3, "merged env has 3 entries");
  tap_is_str(env[0], "PATH=/bin", "untouched key keeps its place");
  tap_is_str(env[1], "HOME=/home/x", "later layer overrides");
  tap_is_str(env[2], "NEW=1", "new key appended; entries without a key dropped");
  strv_free(env);

  char *argv[] = {"sh", "-c", "echo 'a b'", NULL};
  char *renv[] = {"X=1", NULL};
  struct exec_request req = {.argv = argv, .env = renv, .workdir = "/testbed"};
  char *buf = NULL;
  size_t len = 0;
  hutch_error_t err = NULL;
  tap_is_int(request_encode(&req, 65536, &buf, &len, &err), 0, "encode a request");
  struct exec_request back;
  tap_is_int(request_decode(buf, len, &back, &err), 0, "decode it");
  tap_is_str(back.argv[2], "echo 'a b'", "argument survives");
  tap_ok(back.argv[3] == NULL, "argv terminated");
  tap_is_str(back.env[0], "X=1", "env survives");
  tap_is_str(back.workdir, "/testbed", "workdir survives");
  request_clear(&back);
  tap_is_int(request_decode(buf, len - 1, &back, &err), -1, "truncated request refused");
  tap_ok(err != NULL && err->errnum != 0, "with an error");
  hutch_error_free(&err);
  buf[0] = 'Z';
  tap_is_int(request_decode(buf, len, &back, &err), -1, "unknown tag refused");
  hutch_error_free(&err);
  free(buf);
  tap_is_int(request_encode(&req, 10, &buf, &len, &err), -1, "over the size limit refused");
  tap_ok(err && err->hint != NULL, "with a hint");
  hutch_error_free(&err);
  /* exec -t: the pty and its size travel with the request; a size that
   * is not two numbers, or over 65535, is refused. */
  struct exec_request tty = {.argv = argv, .tty = true, .rows = 31, .cols = 97};
  tap_is_int(request_encode(&tty, 65536, &buf, &len, &err), 0, "encode a request with a pty");
  tap_is_int(request_decode(buf, len, &back, &err), 0, "decode it");
  tap_ok(back.tty && back.rows == 31 && back.cols == 97, "the pty and its size survive");
  request_clear(&back);
  free(buf);
  tap_is_int(request_encode(&req, 65536, &buf, &len, &err), 0, "encode a request without one");
  tap_is_int(request_decode(buf, len, &back, &err), 0, "decode it");
  tap_ok(!back.tty && back.rows == 0, "no pty");
  request_clear(&back);
  free(buf);
  char bad_size[32] = "A";
  uint32_t n2 = 2, n8 = 8;
  memcpy(bad_size + 1, &n2, 4);
  memcpy(bad_size + 5, "shT", 3);
  memcpy(bad_size + 8, &n8, 4);
  memcpy(bad_size + 12, "70000 80", 8);
  tap_is_int(request_decode(bad_size, 20, &back, &err), -1, "a pty size over 65535 is refused");
  hutch_error_free(&err);
  struct exec_request empty = {0};
  tap_is_int(request_encode(&empty, 100, &buf, &len, &err), 0, "encode an empty request");
  tap_is_int(request_decode(buf, len, &back, &err), -1, "a request without a command is refused");
  hutch_error_free(&err);
  free(buf);
  return tap_done();
}
