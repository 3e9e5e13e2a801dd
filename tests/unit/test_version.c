/* SPDX-License-Identifier: Apache-2.0 */
/* The version comes from one place (configure.ac): hutch_version(), the
 * header's HUTCH_VERSION_* and the package's version agree. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "git_describe.h"
#include "hutch.h"
#include "tap.h"

int main(void) {
  char want[64];
  snprintf(want, sizeof(want), "%d.%d.%d", HUTCH_VERSION_MAJOR, HUTCH_VERSION_MINOR, HUTCH_VERSION_PATCH);
  tap_is_str(HUTCH_VERSION_STRING, want, "HUTCH_VERSION_STRING is MAJOR.MINOR.PATCH");
  tap_is_str(PACKAGE_VERSION, want, "and configure's package version");
  const char *v = hutch_version();
  tap_ok(strncmp(v, want, strlen(want)) == 0, "hutch_version() begins with it: %s", v);
  if (HUTCH_GIT_DESCRIBE[0])
    tap_ok(strstr(v, " (git " HUTCH_GIT_DESCRIBE ")") != NULL, "built from git: it names git describe's %s",
           HUTCH_GIT_DESCRIBE);
  else
    tap_is_str(v, want, "built from no git checkout: the version alone");
  tap_ok(HUTCH_VERSION_NUMBER == ((HUTCH_VERSION_MAJOR << 16) | (HUTCH_VERSION_MINOR << 8) | HUTCH_VERSION_PATCH),
         "HUTCH_VERSION_NUMBER orders versions");
  return tap_done();
}
