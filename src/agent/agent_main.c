/* SPDX-License-Identifier: Apache-2.0 */
/* hutch-agent's entry point, apart from main(): `hutch run` execs the
 * hutch-agent program, whose main() is only this; hutch benchmark calls it
 * in a forked child instead (src/bench/child.c), sparing each task an exec
 * and the dynamic loader's start of libcurl and its libraries. */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "docker_image.h"
#include "util.h"

volatile sig_atomic_t agent_stop;

static void on_signal(int sig) {
  agent_stop = sig;
}

int agent_main(int argc, char **argv) {
  /* Before anything else: a parent that dies from here on is seen. */
  pid_t parent = getppid();
  hutch_program_name = "hutch run";
  /* argv[0] is "run" when hutch passes its verb through. */
  struct settings s;
  int r = settings_parse(argc, argv, &s);
  if (r >= 0) {
    settings_free(&s);
    return r;
  }
  /* Before the handlers: Ctrl-C stops a pull at once (it resumes next time). */
  r = docker_image_ensure(&s);
  if (r != 0) {
    settings_free(&s);
    return r;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  /* No SA_RESTART: a blocking poll must return to look at agent_stop. */
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  /* The caller's death is a SIGTERM: the run stops as interrupted and
   * removes its sandbox, which its init's own parent-death signal ties to
   * this process should it be SIGKILLed (die_with_creator). */
  hutch_error_t err = NULL;
  if (!s.no_die_with_parent && hutch_die_with_parent(parent, &err) < 0) {
    hutch_error_print(stderr, hutch_program_name, err);
    hutch_error_free(&err);
    settings_free(&s);
    return 125;
  }
  r = agent_run(&s);
  settings_free(&s);
  return r;
}
