/* SPDX-License-Identifier: Apache-2.0 */
/* errno_text() gives what glibc's strerror() gives, for every number: the
 * musl front end, whose strerror words many differently, must print and
 * record what hutch-full does. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "errno_text.h"
#include "tap.h"

int main(void) {
  int same = 0;
  char buf[32];
  for (int e = 1; e <= 200; e++) {
    const char *ours = errno_text(e, buf), *libc = strerror(e);
    if (strcmp(ours, libc) == 0)
      same++;
    else
      tap_ok(0, "errno %d: \"%s\", glibc says \"%s\"", e, ours, libc);
  }
  tap_is_int(same, 200, "errnos 1 to 200 read as glibc words them");
  tap_is_str(errno_text(ELOOP, buf), "Too many levels of symbolic links", "ELOOP (musl: \"Symbolic link loop\")");
  tap_is_str(errno_text(-3, buf), "Unknown error -3", "a negative number is unknown");
  return tap_done();
}
