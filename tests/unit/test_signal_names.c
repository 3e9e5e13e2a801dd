/* SPDX-License-Identifier: Apache-2.0 */
/* signal_abbrev() gives what glibc's sigabbrev_np() gives, for every
 * signal: hutch-audit(5) records it, and the musl front end, which has no
 * sigabbrev_np(), must write the same log as the glibc build. */
#include "config.h"

#include <signal.h>
#include <string.h>

#include "signal_names.h"
#include "tap.h"

int main(void) {
  int same = 0, named = 0;
  for (int sig = 0; sig <= 70; sig++) {
    const char *ours = signal_abbrev(sig), *libc = sigabbrev_np(sig);
    if ((ours == NULL && libc == NULL) || (ours && libc && strcmp(ours, libc) == 0))
      same++;
    else
      tap_ok(0, "signal %d: %s, glibc says %s", sig, ours ? ours : "(none)", libc ? libc : "(none)");
    named += ours != NULL;
  }
  tap_is_int(same, 71, "signals 0 to 70 are named as glibc names them");
  tap_is_int(named, 31, "31 of them have names (1 to 31: no real-time signal)");
  tap_is_str(signal_abbrev(SIGKILL), "KILL", "SIGKILL is KILL, without the prefix");
  tap_ok(signal_abbrev(-1) == NULL && signal_abbrev(SIGRTMIN) == NULL, "a negative or real-time signal has none");
  return tap_done();
}
