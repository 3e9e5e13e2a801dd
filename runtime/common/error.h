/* SPDX-License-Identifier: Apache-2.0 */
/* The runtime's error contract (see hutch.h): a failing function fills *err
 * and returns -1.  hutch_error_wrap() prefixes the caller's context so that
 * the final message reads from the outermost step inwards. */
#ifndef HUTCH_ERROR_H
#define HUTCH_ERROR_H

#include "hutch.h"

#define HUTCH_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))

/* Always returns -1 so callers can `return hutch_error_set(...)`. */
int hutch_error_set(hutch_error_t *err, int errnum, const char *fmt, ...) HUTCH_PRINTF(3, 4);
/* hutch_error_set with errnum = errno. */
int hutch_error_sys(hutch_error_t *err, const char *fmt, ...) HUTCH_PRINTF(2, 3);
/* Prefix "context: " to an existing error; returns -1. */
int hutch_error_wrap(hutch_error_t *err, const char *fmt, ...) HUTCH_PRINTF(2, 3);
/* Attach (or replace) the fix hint of an existing error; returns -1. */
int hutch_error_hint(hutch_error_t *err, const char *fmt, ...) HUTCH_PRINTF(2, 3);
/* Move an error object from src to *dst (which must be empty). */
void hutch_error_move(hutch_error_t *dst, hutch_error_t *src);

#endif
