/* SPDX-License-Identifier: Apache-2.0 */
/* The configuration a long-lived init carries over to hutch-init. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "init_exec.h"
#include "tap.h"

int main(void) {
  char *env[] = {"PATH=/usr/bin:/bin", "HOME=/root", "EMPTY=", NULL};
  unsigned char bpf[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  struct init_config in = {
      .parent_fd = 9,
      .listen_fd = 6,
      .sandbox_env = env,
      .bpf = bpf,
      .bpf_len = sizeof(bpf),
      .nofile = 1024,
      .rlimit_data = 1ull << 33,
      .memory_watch = 1ull << 30,
      .die_with_creator = true,
      .exec_fd = 5,
      .scratch_fd = 7,
      .netns_fd = -1,
  };
  size_t len;
  char *blob = init_config_encode(&in, &len);
  struct init_config out;
  tap_is_int(init_config_decode(blob, len, &out), 0, "a blob decodes");
  tap_is_int(out.listen_fd, 6, "the control socket");
  tap_is_int(out.parent_fd, -1, "no creator any more");
  tap_is_int(out.exec_fd, -1, "nothing more to exec");
  tap_is_int(out.scratch_fd, 7, "the tmpfs's root held for hutch");
  tap_is_int(out.netns_fd, -1, "no network namespace held");
  tap_ok(out.nofile == 1024 && out.rlimit_data == 1ull << 33 && out.memory_watch == 1ull << 30, "the limits");
  tap_ok(out.die_with_creator, "die_with_creator");
  tap_ok(out.bpf_len == sizeof(bpf) && memcmp(out.bpf, bpf, sizeof(bpf)) == 0, "the seccomp program");
  tap_ok(out.sandbox_env[0] && strcmp(out.sandbox_env[0], env[0]) == 0 && strcmp(out.sandbox_env[2], "EMPTY=") == 0 &&
             out.sandbox_env[3] == NULL,
         "the environment, in order");
  free(out.sandbox_env);

  tap_is_int(init_config_decode(blob, len - 1, &out), -1, "a short blob is refused");
  blob[len - 1] = 'x';
  tap_is_int(init_config_decode(blob, len, &out), -1, "an unterminated last string is refused");
  blob[len - 1] = '\0';
  blob[0] = 'X';
  tap_is_int(init_config_decode(blob, len, &out), -1, "a wrong magic is refused");
  free(blob);

  in.bpf_len = 12; /* not whole instructions */
  blob = init_config_encode(&in, &len);
  tap_is_int(init_config_decode(blob, len, &out), -1, "a program of part instructions is refused");
  free(blob);
  in.bpf_len = sizeof(bpf);
  in.listen_fd = -1;
  blob = init_config_encode(&in, &len);
  tap_is_int(init_config_decode(blob, len, &out), -1, "no control socket is refused");
  free(blob);
  in.listen_fd = 6;
  in.scratch_fd = -2;
  blob = init_config_encode(&in, &len);
  tap_is_int(init_config_decode(blob, len, &out), -1, "a held fd below -1 is refused");
  free(blob);
  in.scratch_fd = 7;
  blob = init_config_encode(&in, &len);
  blob[8] = 2; /* the version: a blob of an older hutch */
  tap_is_int(init_config_decode(blob, len, &out), -1, "a blob of another version is refused");
  free(blob);
  return tap_done();
}
