/* SPDX-License-Identifier: Apache-2.0 */
/* "did you mean" (src/cli/suggest.c): the closest verb, only when close. */
#include "config.h"

#include "suggest.h"
#include "tap.h"

static const char *const verbs[] = {"exec", "create",    "ps",     "rm",     "rootfs", "build", "policy",
                                    "run",  "benchmark", "report", "doctor", "cp",     "mcp",   "audit"};
#define N_VERBS (sizeof(verbs) / sizeof(verbs[0]))

/* The suggestions for WORD, formatted ("" for none). */
static const char *suggest(const char *word) {
  static char buf[256];
  const char *found[SUGGEST_MAX];
  size_t n = suggest_closest(word, verbs, N_VERBS, found);
  suggest_format(found, n, buf, sizeof(buf));
  return buf;
}

int main(void) {
  tap_is_str(suggest("exce"), "'exec'", "a swap of two letters is one edit: exce -> exec");
  tap_is_str(suggest("exe"), "'exec'", "a letter missing");
  tap_is_str(suggest("exec"), "'exec'", "the verb itself");
  tap_is_str(suggest("EXEC"), "'exec'", "case is ignored");
  tap_is_str(suggest("benchmrak"), "'benchmark'", "a long verb takes more than one edit");
  tap_is_str(suggest("bench"), "'benchmark'", "the start of a verb");
  tap_is_str(suggest("creat"), "'create'", "create without its e");
  tap_is_str(suggest("doctr"), "'doctor'", "doctor without its o");
  tap_is_str(suggest("rn"), "'rm' or 'run'", "a tie names both, in the verbs' order");
  tap_is_str(suggest("frobnicate"), "", "nothing close: no suggestion");
  tap_is_str(suggest("x"), "", "one letter is close to nothing");
  tap_is_str(suggest("zz"), "", "two letters that share nothing with a verb");
  tap_is_str(suggest("ls"), "'ps'", "ls is one letter from ps");
  tap_is_str(suggest(""), "", "the empty word");
  char longw[200];
  memset(longw, 'e', sizeof(longw) - 1);
  longw[sizeof(longw) - 1] = '\0';
  tap_is_str(suggest(longw), "", "a word longer than any verb is not compared");

  const char *found[SUGGEST_MAX] = {"a", "b", "c"};
  char buf[64];
  suggest_format(found, 3, buf, sizeof(buf));
  tap_is_str(buf, "'a', 'b' or 'c'", "three are listed with commas and or");
  suggest_format(found, 3, buf, 8);
  tap_ok(strlen(buf) < 8, "a short buffer is not overrun (\"%s\")", buf);
  return tap_done();
}
