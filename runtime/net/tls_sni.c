/* SPDX-License-Identifier: Apache-2.0 */
/* SNI of a TLS ClientHello (tls_sni.h), RFC 8446 4.1.2 and RFC 6066 3.
 * Handshake bytes may span several records; they are joined first. */
#include "config.h"

#include "tls_sni.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

struct reader {
  const unsigned char *p;
  size_t left;
};

static bool take(struct reader *r, size_t n, const unsigned char **out) {
  if (r->left < n)
    return false;
  if (out)
    *out = r->p;
  r->p += n;
  r->left -= n;
  return true;
}

static bool take_u8(struct reader *r, size_t *v) {
  const unsigned char *b;
  if (!take(r, 1, &b))
    return false;
  *v = b[0];
  return true;
}

static bool take_u16(struct reader *r, size_t *v) {
  const unsigned char *b;
  if (!take(r, 2, &b))
    return false;
  *v = (size_t)b[0] << 8 | b[1];
  return true;
}

/* The body of a server_name extension.  A second host_name is refused,
 * not skipped: the server might pick the one the proxy did not check. */
static enum tls_sni_status server_name(struct reader ext, char name[256]) {
  size_t list;
  if (!take_u16(&ext, &list) || list != ext.left)
    return TLS_SNI_MALFORMED;
  bool found = false;
  while (ext.left > 0) {
    size_t type, n;
    const unsigned char *b;
    if (!take_u8(&ext, &type) || !take_u16(&ext, &n) || !take(&ext, n, &b))
      return TLS_SNI_MALFORMED;
    if (type != 0)
      continue;
    if (found || n == 0 || n > 255)
      return TLS_SNI_MALFORMED;
    for (size_t i = 0; i < n; i++)
      if (b[i] <= 0x20 || b[i] >= 0x7f)
        return TLS_SNI_MALFORMED;
    memcpy(name, b, n);
    name[n] = '\0';
    found = true;
  }
  return found ? TLS_SNI_FOUND : TLS_SNI_NONE;
}

static enum tls_sni_status client_hello(struct reader r, char name[256]) {
  size_t n;
  if (!take(&r, 2 + 32, NULL))
    return TLS_SNI_MALFORMED;
  if (!take_u8(&r, &n) || n > 32 || !take(&r, n, NULL))
    return TLS_SNI_MALFORMED;
  if (!take_u16(&r, &n) || n < 2 || n % 2 != 0 || !take(&r, n, NULL))
    return TLS_SNI_MALFORMED;
  if (!take_u8(&r, &n) || n < 1 || !take(&r, n, NULL))
    return TLS_SNI_MALFORMED;
  if (r.left == 0)
    return TLS_SNI_NONE; /* no extensions at all */
  if (!take_u16(&r, &n) || n != r.left)
    return TLS_SNI_MALFORMED;
  /* Every extension is read: two server_name extensions (RFC 8446 4.2
   * forbids repeats) are refused, since a server may use either. */
  enum tls_sni_status st = TLS_SNI_NONE;
  bool seen = false;
  while (r.left > 0) {
    size_t type, len;
    const unsigned char *b;
    if (!take_u16(&r, &type) || !take_u16(&r, &len) || !take(&r, len, &b))
      return TLS_SNI_MALFORMED;
    if (type != 0)
      continue;
    if (seen)
      return TLS_SNI_MALFORMED;
    seen = true;
    st = server_name((struct reader){b, len}, name);
    if (st == TLS_SNI_MALFORMED)
      return st;
  }
  return st;
}

enum tls_sni_status tls_sni_extract(const unsigned char *buf, size_t len, char name[256]) {
  unsigned char hs[TLS_SNI_MAX_HELLO];
  size_t hn = 0, pos = 0;
  name[0] = '\0';
  if (len == 0)
    return TLS_SNI_INCOMPLETE;
  if (buf[0] != 0x16)
    return TLS_SNI_NOT_TLS;
  for (;;) {
    if (len - pos < 5) {
      /* The first record's version byte already tells TLS from not-TLS. */
      if (pos == 0 && len >= 2 && buf[1] != 3)
        return TLS_SNI_NOT_TLS;
      return TLS_SNI_INCOMPLETE;
    }
    const unsigned char *rec = buf + pos;
    if (rec[1] != 3)
      return pos == 0 ? TLS_SNI_NOT_TLS : TLS_SNI_MALFORMED;
    if (rec[0] != 0x16)
      return TLS_SNI_MALFORMED;
    size_t rlen = (size_t)rec[3] << 8 | rec[4];
    if (rlen == 0 || rlen > 16384)
      return TLS_SNI_MALFORMED;
    size_t avail = len - pos - 5 < rlen ? len - pos - 5 : rlen;
    if (hn + avail > sizeof(hs))
      return TLS_SNI_MALFORMED;
    memcpy(hs + hn, rec + 5, avail);
    hn += avail;
    if (hn >= 4) {
      if (hs[0] != 1)
        return TLS_SNI_MALFORMED; /* the first handshake message must be a ClientHello */
      size_t mlen = (size_t)hs[1] << 16 | (size_t)hs[2] << 8 | hs[3];
      if (mlen + 4 > sizeof(hs))
        return TLS_SNI_MALFORMED;
      if (hn >= mlen + 4)
        return client_hello((struct reader){hs + 4, mlen}, name);
    }
    if (avail < rlen)
      return TLS_SNI_INCOMPLETE;
    pos += 5 + rlen;
  }
}
