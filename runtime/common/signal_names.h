/* SPDX-License-Identifier: Apache-2.0 */
/* A signal's abbreviation ("KILL" for SIGKILL), as hutch-audit(5) records
 * it: the same text from every build, whatever its C library (glibc's
 * sigabbrev_np() is not in musl). */
#ifndef HUTCH_SIGNAL_NAMES_H
#define HUTCH_SIGNAL_NAMES_H

/* NULL for a signal without a name of its own (0, the real-time ones). */
const char *signal_abbrev(int sig);

#endif
