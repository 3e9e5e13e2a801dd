/* SPDX-License-Identifier: Apache-2.0 */
/* Base64 (base64.h). */
#include "config.h"

#include "base64.h"

#include <stdint.h>
#include <stdlib.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *base64_encode(const void *data, size_t len) {
  const unsigned char *b = data;
  /* (len + 2) / 3 * 4 + 1 must not wrap. */
  if (len / 3 >= (SIZE_MAX - 5) / 4)
    abort();
  char *out = malloc((len + 2) / 3 * 4 + 1), *o = out;
  if (out == NULL) /* as xmalloc, which lives above this file */
    abort();
  size_t i = 0;
  for (; len - i >= 3; i += 3) {
    uint32_t v = (uint32_t)b[i] << 16 | (uint32_t)b[i + 1] << 8 | b[i + 2];
    *o++ = alphabet[v >> 18];
    *o++ = alphabet[v >> 12 & 63];
    *o++ = alphabet[v >> 6 & 63];
    *o++ = alphabet[v & 63];
  }
  if (i < len) {
    uint32_t v = (uint32_t)b[i] << 16 | (i + 1 < len ? (uint32_t)b[i + 1] << 8 : 0);
    *o++ = alphabet[v >> 18];
    *o++ = alphabet[v >> 12 & 63];
    *o++ = i + 1 < len ? alphabet[v >> 6 & 63] : '=';
    *o++ = '=';
  }
  *o = '\0';
  return out;
}

/* The value of an alphabet character, or -1. */
static int value(unsigned char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+')
    return 62;
  if (c == '/')
    return 63;
  return -1;
}

bool base64_decode(const char *text, size_t len, unsigned char *out, size_t *out_len) {
  /* The padding: one or two '=' that complete the last group of four. */
  size_t pad = 0;
  while (pad < len && text[len - 1 - pad] == '=')
    pad++;
  if (pad > 2 || (pad > 0 && len % 4 != 0))
    return false;
  size_t chars = len - pad;
  if (chars % 4 == 1)
    return false;
  uint32_t acc = 0;
  unsigned bits = 0;
  size_t n = 0;
  for (size_t i = 0; i < chars; i++) {
    int v = value((unsigned char)text[i]);
    if (v < 0)
      return false;
    acc = (acc << 6 | (uint32_t)v) & 0xffffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[n++] = (unsigned char)(acc >> bits);
    }
  }
  /* What is left of the last character must be zero bits: otherwise two
   * texts would decode to the same bytes. */
  if ((acc & ((1u << bits) - 1)) != 0)
    return false;
  *out_len = n;
  return true;
}
