/* SPDX-License-Identifier: Apache-2.0
 *
 * What hutch benchmark shows while it works (hutch-benchmark(1), OUTPUT):
 * the one sink of the runner's terminal.  Lines (the default): stderr gets
 * hutch's messages and a line per task, and when it is a terminal a live
 * line below them, redrawn every second while tasks run.  --quiet: stderr
 * gets warnings and errors only.  --json: the same on stderr, and stdout
 * one JSON object per event (start, task, end).  The text is
 * progress_text.c's: escaped, one line each. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/time.h>
#include <unistd.h>

#include "bench.h"
#include "console_text.h"
#include "util.h"

static struct {
  enum bench_term_mode mode;
  bool live;       /* lines, and stderr is a terminal */
  bool shown;      /* the live line is on the screen */
  bool have_alarm; /* SIGALRM's handler is ours */
} term;

static void on_alarm(int sig) {
  (void)sig;
}

void bench_term_init(enum bench_term_mode mode) {
  term.mode = mode;
  term.live = mode == BENCH_TERM_LINES && isatty(2);
  if (!term.live)
    return;
  /* No SA_RESTART: the alarm's only purpose is to end the runner's wait for
   * a worker, which it is armed around (bench_term_arm), so that the live
   * line is redrawn; no other call of the runner ever sees it. */
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_alarm;
  sigemptyset(&sa.sa_mask);
  term.have_alarm = sigaction(SIGALRM, &sa, NULL) == 0;
}

enum bench_term_mode bench_term_mode(void) {
  return term.mode;
}

void bench_term_arm(void) {
  if (!term.have_alarm)
    return;
  struct itimerval it = {.it_value = {.tv_sec = 1}};
  setitimer(ITIMER_REAL, &it, NULL);
}

void bench_term_disarm(void) {
  if (!term.have_alarm)
    return;
  struct itimerval it = {0};
  setitimer(ITIMER_REAL, &it, NULL);
}

void bench_term_clear(void) {
  if (!term.shown)
    return;
  fputs("\r\033[K", stderr);
  fflush(stderr);
  term.shown = false;
}

void bench_term_say(const char *fmt, ...) {
  if (term.mode != BENCH_TERM_LINES)
    return;
  bench_term_clear();
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

void bench_term_event(cJSON *event) {
  if (term.mode != BENCH_TERM_JSON) {
    cJSON_Delete(event);
    return;
  }
  _cleanup_free_ char *text = cJSON_PrintUnformatted(event);
  cJSON_Delete(event);
  /* A task's id and error are the task set's and the sandbox's: no
   * control a terminal acts on, even in JSON. */
  _cleanup_free_ char *safe = console_json_safe(text);
  printf("%s\n", safe);
  fflush(stdout);
}

void bench_term_task(size_t done, size_t total, const cJSON *line) {
  if (term.mode == BENCH_TERM_JSON) {
    bench_term_event(bench_task_event(done, total, line));
    return;
  }
  if (term.mode != BENCH_TERM_LINES)
    return;
  _cleanup_free_ char *text = bench_task_line(done, total, line);
  bench_term_say("%s", text);
}

void bench_term_live(const struct bench_totals *t, size_t total, size_t running, double elapsed) {
  if (!term.live)
    return;
  struct winsize ws;
  size_t width = ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
  _cleanup_free_ char *text = bench_live_line(t, total, running, elapsed, width);
  fprintf(stderr, "\r\033[K%s", text);
  fflush(stderr);
  term.shown = true;
}
