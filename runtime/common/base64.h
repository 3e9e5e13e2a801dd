/* SPDX-License-Identifier: Apache-2.0 */
/* Base64, RFC 4648 section 4: the standard alphabet, padded with '='.
 * Below util.h (which includes it for src/), so it includes nothing of the
 * runtime. */
#ifndef HUTCH_BASE64_H
#define HUTCH_BASE64_H

#include <stdbool.h>
#include <stddef.h>

/* The encoding of len bytes, padded and NUL-terminated; malloc'd (never
 * NULL: out of memory aborts, as xmalloc does). */
char *base64_encode(const void *data, size_t len);

/* The most bytes base64_decode writes for len characters of text. */
#define BASE64_DECODED_MAX(len) ((len) / 4 * 3 + 2)

/* Decodes len characters into out (room for BASE64_DECODED_MAX(len)
 * bytes), *out_len set; false, with nothing promised of out, for text that
 * is not canonical base64: a character outside the alphabet (white space
 * and the URL-safe "-_" included), '=' anywhere but in the last group,
 * more than two of them, a last group of one character, or bits after the
 * last byte that are not zero.  The padding may be left out (a last group
 * of two or three characters). */
bool base64_decode(const char *text, size_t len, unsigned char *out, size_t *out_len);

#endif
