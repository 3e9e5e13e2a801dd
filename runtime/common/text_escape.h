/* SPDX-License-Identifier: Apache-2.0 */
/* Text a sandbox wrote, made safe to print: a UTF-8 decoder and the
 * escaping of control and bidirectional characters.  Below util.h and
 * error.h (both use it), so it includes nothing of the runtime. */
#ifndef HUTCH_TEXT_ESCAPE_H
#define HUTCH_TEXT_ESCAPE_H

#include <stddef.h>
#include <stdint.h>

/* Length of the well-formed UTF-8 sequence at s (1..4; left > 0 bytes
 * there), with its code point, or 0 when the bytes there are not one
 * (overlong, surrogate, past U+10FFFF, truncated). */
size_t utf8_decode(const unsigned char *s, size_t left, uint32_t *cp);

/* text with C0 (but tab and newline), DEL, C1, bidirectional controls and
 * bytes that are not UTF-8 written as visible escapes (\x1b, \u009b), for
 * printing what a sandbox wrote; malloc'd. */
char *text_escape_controls(const char *text, size_t len);
/* The same for the one character at s (left > 0 bytes): its bytes or its
 * escape in out (not NUL-terminated; out has room for the NUL sprintf
 * writes), its length returned, and in *used how many bytes of s it took. */
#define TEXT_ESCAPE_MAX 6
size_t text_escape_char(const unsigned char *s, size_t left, char out[TEXT_ESCAPE_MAX + 1], size_t *used);
char *text_escape_cstr(const char *text);

#endif
