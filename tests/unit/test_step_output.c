/* SPDX-License-Identifier: Apache-2.0
 *
 * A build step's output as hutch keeps it (runtime/build/step_output.h):
 * escaped, a UTF-8 sequence cut between two reads kept whole, capped per
 * step and for the whole build, with the dropped bytes counted. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "step_output.h"
#include "tap.h"
#include "util.h"

struct sink {
  char buf[4096];
  size_t len;
};

static void collect(const char *buf, size_t len, void *data) {
  struct sink *s = data;
  if (s->len + len < sizeof(s->buf)) {
    memcpy(s->buf + s->len, buf, len);
    s->len += len;
    s->buf[s->len] = '\0';
  }
}

/* The pieces (NULL-terminated) fed one by one, then the end: what is kept. */
static const char *run(struct step_output *o, const char *const *pieces, struct sink *s) {
  memset(s, 0, sizeof(*s));
  for (size_t i = 0; pieces[i]; i++)
    step_output_feed(o, pieces[i], strlen(pieces[i]), collect, s);
  step_output_end(o, collect, s);
  return s->buf;
}

static void check(uint64_t max, const char *const *pieces, const char *want, uint64_t dropped, const char *what) {
  struct step_budget all = {.max = 1 << 20};
  struct step_output o;
  struct sink s;
  step_output_init(&o, max, &all);
  const char *got = run(&o, pieces, &s);
  if (dropped == 0) {
    tap_is_str(got, want, "%s", what);
  } else {
    tap_ok(strncmp(got, want, strlen(want)) == 0 && strstr(got + strlen(want), "output truncated") != NULL,
           "%s: \"%s\" kept, then the line", what, want);
  }
  tap_is_int(o.dropped, dropped, "%s: %llu bytes dropped", what, (unsigned long long)dropped);
  tap_ok(o.written == all.used && o.written <= max, "%s: the kept bytes are counted in the build's budget", what);
}

int main(void) {
  check(100, (const char *const[]){"hello\n", "world\n", NULL}, "hello\nworld\n", 0, "text under the cap");
  check(10, (const char *const[]){"0123456789abcdef", "more", NULL}, "0123456789", 10, "text past the cap");
  check(100, (const char *const[]){"\x1b]52;c;aGk=\a \xe2\x80\xae\r\n", NULL}, "\\x1b]52;c;aGk=\\x07 \\u202e\\x0d\n", 0,
        "control and bidirectional characters are escaped");
  check(5,
        (const char *const[]){"\x1b"
                              "ab",
                              NULL},
        "\\x1ba", 1, "an escape counts its own length against the cap");
  check(3, (const char *const[]){"ab\x1b", NULL}, "ab", 1, "an escape that does not fit whole is dropped whole");
  check(100, (const char *const[]){"caf\xc3", "\xa9!\n", NULL}, "caf\xc3\xa9!\n", 0,
        "a two-byte character cut between two reads");
  check(100, (const char *const[]){"\xf0", "\x9f", "\x98", "\x80.", NULL}, "\xf0\x9f\x98\x80.", 0,
        "a four-byte character in four reads");
  check(100, (const char *const[]){"x\xe2", "A", NULL}, "x\\xe2A", 0, "a cut sequence that does not go on");
  check(100, (const char *const[]){"end\xe2\x82", NULL}, "end\\xe2\\x82", 0, "a sequence the output ends in");
  check(100, (const char *const[]){"\xff\xfe ok", NULL}, "\\xff\\xfe ok", 0, "bytes that are not UTF-8");

  /* The line says how much, on a line of its own. */
  struct step_budget all = {.max = 1 << 20};
  struct step_output o;
  struct sink s;
  step_output_init(&o, 4, &all);
  const char *got = run(&o, (const char *const[]){"abcdefgh", NULL}, &s);
  tap_is_str(got,
             "abcd\noutput truncated, 4 bytes dropped (a build keeps 4 B of a step's output and 1 MiB in all; "
             "--step-log-max and --log-max keep more)\n",
             "the line, after the cut line ends");

  /* The whole build's budget: the second step gets what the first left. */
  all = (struct step_budget){.max = 15};
  step_output_init(&o, 10, &all);
  run(&o, (const char *const[]){"0123456789ab", NULL}, &s);
  tap_is_int(o.dropped, 2, "first step: 10 kept, 2 dropped");
  step_output_init(&o, 10, &all);
  got = run(&o, (const char *const[]){"0123456789ab", NULL}, &s);
  tap_ok(strncmp(got, "01234\noutput truncated", 22) == 0, "second step: the 5 bytes the build has left");
  tap_is_int(o.dropped, 7, "second step: 7 dropped");
  tap_is_int(all.used, 15, "the build's budget is spent");

  /* Past the cap every byte is still counted, however it comes. */
  step_output_init(&o, 40, &(struct step_budget){.max = 100});
  memset(&s, 0, sizeof(s));
  for (int i = 0; i < 1000; i++)
    step_output_feed(&o, "\xc3", 1, collect, &s);
  step_output_end(&o, collect, &s);
  tap_is_int(o.written, 40, "1000 lone bytes in 1000 reads: ten escaped");
  tap_is_int(o.dropped, 990, "and the others dropped");
  tap_ok(strncmp(s.buf, "\\xc3\\xc3", 8) == 0, "each escaped on its own (%.8s)", s.buf);
  return tap_done();
}
