/* SPDX-License-Identifier: Apache-2.0 */
/* hutch_version(): configure.ac's version, and git describe's where the
 * library was built from a git checkout. */
#include "config.h"

#include "git_describe.h"
#include "hutch.h"

const char *hutch_version(void) {
  /* Both halves are string constants: nothing is built at run time. */
  return sizeof(HUTCH_GIT_DESCRIBE) > 1 ? PACKAGE_VERSION " (git " HUTCH_GIT_DESCRIBE ")" : PACKAGE_VERSION;
}
