/* SPDX-License-Identifier: Apache-2.0 */
/* The text of an errno, as hutch prints it and records it (an audit log's
 * "failure", exec --json's "error"): glibc's wording, from every build,
 * whatever its C library (musl words many differently: "Symbolic link
 * loop" for ELOOP).  tests/unit/test_errno_text.c compares it with
 * glibc's strerror() for every number. */
#ifndef HUTCH_ERRNO_TEXT_H
#define HUTCH_ERRNO_TEXT_H

/* "Unknown error N" for a number without a text, as glibc says. */
const char *errno_text(int errnum, char buf[32]);

#endif
