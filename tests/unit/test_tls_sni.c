/* SPDX-License-Identifier: Apache-2.0 */
/* SNI extraction from a TLS ClientHello: a real one (captured from
 * `openssl s_client -servername pypi.example.org`), the same split over
 * two records, truncations, and garbage. */
#include "config.h"

#include <string.h>

#include "tap.h"
#include "tls_sni.h"
#include "util.h"

/* OpenSSL 3 ClientHello with SNI "pypi.example.org" (322 bytes). */
static const unsigned char hello[] = {
    0x16, 0x03, 0x01, 0x01, 0x3d, 0x01, 0x00, 0x01, 0x39, 0x03, 0x03, 0xd2, 0x34, 0x48, 0x5a, 0xf2, 0x9e, 0x03, 0xe8,
    0x03, 0x4f, 0xd0, 0x4f, 0x90, 0xbe, 0x00, 0x54, 0x96, 0x40, 0xfc, 0x9f, 0xb1, 0x5e, 0xf0, 0x11, 0x22, 0x9e, 0x6c,
    0x51, 0x82, 0x71, 0x24, 0x02, 0x20, 0x1d, 0x48, 0x59, 0x1c, 0x1a, 0x4f, 0xfe, 0xf7, 0x18, 0xc8, 0xe3, 0xe6, 0x73,
    0x08, 0xd6, 0xa6, 0x4a, 0x76, 0x1e, 0xfb, 0x66, 0xfa, 0x4d, 0x6e, 0x47, 0x62, 0xeb, 0x5c, 0xce, 0x28, 0xb9, 0x22,
    0x00, 0x3e, 0x13, 0x02, 0x13, 0x03, 0x13, 0x01, 0xc0, 0x2c, 0xc0, 0x30, 0x00, 0x9f, 0xcc, 0xa9, 0xcc, 0xa8, 0xcc,
    0xaa, 0xc0, 0x2b, 0xc0, 0x2f, 0x00, 0x9e, 0xc0, 0x24, 0xc0, 0x28, 0x00, 0x6b, 0xc0, 0x23, 0xc0, 0x27, 0x00, 0x67,
    0xc0, 0x0a, 0xc0, 0x14, 0x00, 0x39, 0xc0, 0x09, 0xc0, 0x13, 0x00, 0x33, 0x00, 0x9d, 0x00, 0x9c, 0x00, 0x3d, 0x00,
    0x3c, 0x00, 0x35, 0x00, 0x2f, 0x00, 0xff, 0x01, 0x00, 0x00, 0xb2, 0x00, 0x00, 0x00, 0x15, 0x00, 0x13, 0x00, 0x00,
    0x10, 0x70, 0x79, 0x70, 0x69, 0x2e, 0x65, 0x78, 0x61, 0x6d, 0x70, 0x6c, 0x65, 0x2e, 0x6f, 0x72, 0x67, 0x00, 0x0b,
    0x00, 0x04, 0x03, 0x00, 0x01, 0x02, 0x00, 0x0a, 0x00, 0x16, 0x00, 0x14, 0x00, 0x1d, 0x00, 0x17, 0x00, 0x1e, 0x00,
    0x19, 0x00, 0x18, 0x01, 0x00, 0x01, 0x01, 0x01, 0x02, 0x01, 0x03, 0x01, 0x04, 0x00, 0x23, 0x00, 0x00, 0x00, 0x16,
    0x00, 0x00, 0x00, 0x17, 0x00, 0x00, 0x00, 0x0d, 0x00, 0x2a, 0x00, 0x28, 0x04, 0x03, 0x05, 0x03, 0x06, 0x03, 0x08,
    0x07, 0x08, 0x08, 0x08, 0x09, 0x08, 0x0a, 0x08, 0x0b, 0x08, 0x04, 0x08, 0x05, 0x08, 0x06, 0x04, 0x01, 0x05, 0x01,
    0x06, 0x01, 0x03, 0x03, 0x03, 0x01, 0x03, 0x02, 0x04, 0x02, 0x05, 0x02, 0x06, 0x02, 0x00, 0x2b, 0x00, 0x09, 0x08,
    0x03, 0x04, 0x03, 0x03, 0x03, 0x02, 0x03, 0x01, 0x00, 0x2d, 0x00, 0x02, 0x01, 0x01, 0x00, 0x33, 0x00, 0x26, 0x00,
    0x24, 0x00, 0x1d, 0x00, 0x20, 0xe8, 0xed, 0x09, 0xa2, 0x69, 0xf9, 0x02, 0x83, 0x9e, 0xc6, 0x5c, 0xd3, 0x43, 0x0e,
    0xd5, 0x84, 0x00, 0xc9, 0x9e, 0xf2, 0xd4, 0x95, 0xfc, 0xba, 0x04, 0xbd, 0x55, 0xa5, 0x2c, 0xe9, 0xde, 0x5b,
};

static enum tls_sni_status sni(const unsigned char *b, size_t n, char name[256]) {
  return tls_sni_extract(b, n, name);
}

/* Offset of the server_name extension's host name in `hello`. */
static size_t name_offset(void) {
  for (size_t i = 0; i + 16 <= sizeof(hello); i++)
    if (memcmp(hello + i, "pypi.example.org", 16) == 0)
      return i;
  return 0;
}

static void add_u16(unsigned char *b, size_t at, size_t n) {
  size_t v = ((size_t)b[at] << 8 | b[at + 1]) + n;
  b[at] = (unsigned char)(v >> 8);
  b[at + 1] = (unsigned char)v;
}

/* `hello` with n bytes from src inserted at `at`; the record, handshake
 * and extension-block lengths grow by n, and so do the 16-bit lengths at
 * the offsets in grow[] (0-terminated).  Returns the new length. */
static size_t hello_insert(unsigned char *out, size_t at, const unsigned char *src, size_t n, const size_t *grow) {
  memcpy(out, hello, at);
  memcpy(out + at, src, n);
  memcpy(out + at + n, hello + at, sizeof(hello) - at);
  add_u16(out, 3, n);
  size_t hs = ((size_t)out[6] << 16 | (size_t)out[7] << 8 | out[8]) + n;
  out[6] = (unsigned char)(hs >> 16);
  out[7] = (unsigned char)(hs >> 8);
  out[8] = (unsigned char)hs;
  for (; *grow; grow++)
    add_u16(out, *grow, n);
  return sizeof(hello) + n;
}

int main(void) {
  char name[256];
  tap_is_int(sni(hello, sizeof(hello), name), TLS_SNI_FOUND, "the captured ClientHello has an SNI");
  tap_is_str(name, "pypi.example.org", "the SNI is the -servername");

  /* Every strict prefix is incomplete, never a wrong answer. */
  int bad = 0;
  for (size_t n = 1; n < sizeof(hello); n++)
    if (sni(hello, n, name) != TLS_SNI_INCOMPLETE)
      bad++;
  tap_is_int(bad, 0, "every truncation is incomplete");
  tap_is_int(sni(hello, 0, name), TLS_SNI_INCOMPLETE, "no bytes: incomplete");

  /* The same handshake split over two records. */
  size_t body = sizeof(hello) - 5, first = 100;
  unsigned char split[sizeof(hello) + 5];
  memcpy(split, hello, 5);
  split[3] = (unsigned char)(first >> 8);
  split[4] = (unsigned char)first;
  memcpy(split + 5, hello + 5, first);
  split[5 + first] = 0x16;
  split[6 + first] = hello[1];
  split[7 + first] = hello[2];
  split[8 + first] = (unsigned char)((body - first) >> 8);
  split[9 + first] = (unsigned char)(body - first);
  memcpy(split + 10 + first, hello + 5 + first, body - first);
  tap_is_int(sni(split, sizeof(split), name), TLS_SNI_FOUND, "a ClientHello over two records");
  tap_is_str(name, "pypi.example.org", "the SNI across records");
  tap_is_int(sni(split, 5 + first + 3, name), TLS_SNI_INCOMPLETE, "the second record's header cut: incomplete");

  /* A different name of the same length, patched in. */
  unsigned char other[sizeof(hello)];
  memcpy(other, hello, sizeof(hello));
  size_t off = name_offset();
  tap_ok(off > 0, "the fixture's name is found");
  memcpy(other + off, "evil.example.net", 16);
  tap_is_int(sni(other, sizeof(other), name), TLS_SNI_FOUND, "patched name found");
  tap_is_str(name, "evil.example.net", "patched name read");

  /* A host name with a control byte is malformed, not a name. */
  memcpy(other, hello, sizeof(hello));
  other[off + 4] = '\n';
  tap_is_int(sni(other, sizeof(other), name), TLS_SNI_MALFORMED, "control byte in the SNI: malformed");

  /* The server_name extension renamed to another type: no SNI. */
  memcpy(other, hello, sizeof(hello));
  /* ext type (2) + ext len (2) + list len (2) + name type (1) + name len (2) precede the name */
  tap_ok(other[off - 9] == 0 && other[off - 8] == 0, "the extension type before the name is 0");
  other[off - 8] = 0x77;
  tap_is_int(sni(other, sizeof(other), name), TLS_SNI_NONE, "without server_name: none");

  /* Two names: a server could use the one not checked, so neither is
   * taken. */
  unsigned char two[sizeof(hello) + 64];
  const unsigned char second_ext[] = {0x00, 0x00, 0x00, 0x0e, 0x00, 0x0c, 0x00, 0x00, 0x09,
                                      'e',  'v',  'i',  'l',  '.',  't',  'e',  's',  't'};
  size_t ext_end = off + 16; /* the first server_name extension ends with its name */
  size_t n = hello_insert(two, ext_end, second_ext, sizeof(second_ext), (const size_t[]){off - 11, 0});
  tap_is_int(sni(two, n, name), TLS_SNI_MALFORMED, "two server_name extensions: malformed");
  const unsigned char second_name[] = {0x00, 0x00, 0x09, 'e', 'v', 'i', 'l', '.', 't', 'e', 's', 't'};
  n = hello_insert(two, ext_end, second_name, sizeof(second_name), (const size_t[]){off - 11, off - 7, off - 5, 0});
  tap_is_int(sni(two, n, name), TLS_SNI_MALFORMED, "two host_name entries in one extension: malformed");
  const unsigned char other_type[] = {0x07, 0x00, 0x03, 'a', 'b', 'c'};
  n = hello_insert(two, ext_end, other_type, sizeof(other_type), (const size_t[]){off - 11, off - 7, off - 5, 0});
  tap_is_int(sni(two, n, name), TLS_SNI_FOUND, "an entry of another name type after the host_name is skipped");
  tap_is_str(name, "pypi.example.org", "and the host_name is the one found");

  /* Lengths that lie. */
  memcpy(other, hello, sizeof(hello));
  other[off - 1] = 200; /* the name's length */
  tap_is_int(sni(other, sizeof(other), name), TLS_SNI_MALFORMED, "name length past the extension: malformed");
  memcpy(other, hello, sizeof(hello));
  other[5] = 2; /* handshake type ServerHello */
  tap_is_int(sni(other, sizeof(other), name), TLS_SNI_MALFORMED, "not a ClientHello: malformed");
  memcpy(other, hello, sizeof(hello));
  other[3] = 0;
  other[4] = 0;
  tap_is_int(sni(other, sizeof(other), name), TLS_SNI_MALFORMED, "empty record: malformed");
  memcpy(other, hello, sizeof(hello));
  other[3] = 0x48; /* record longer than 16 KiB */
  tap_is_int(sni(other, sizeof(other), name), TLS_SNI_MALFORMED, "oversized record: malformed");

  /* Not TLS at all. */
  const char *get = "GET / HTTP/1.1\r\n\r\n";
  tap_is_int(sni((const unsigned char *)get, strlen(get), name), TLS_SNI_NOT_TLS, "plain HTTP is not TLS");
  const unsigned char ssh[] = "SSH-2.0-OpenSSH_9.2\r\n";
  tap_is_int(sni(ssh, sizeof(ssh) - 1, name), TLS_SNI_NOT_TLS, "an SSH banner is not TLS");
  const unsigned char fake[] = {0x16, 0x42, 0x00, 0x00, 0x10};
  tap_is_int(sni(fake, sizeof(fake), name), TLS_SNI_NOT_TLS, "0x16 without the TLS version is not TLS");
  unsigned char noise[4096];
  unsigned seed = 12345;
  int crashes_or_found = 0;
  for (int round = 0; round < 2000; round++) {
    for (size_t i = 0; i < sizeof(noise); i++) {
      seed = seed * 1103515245u + 12345u;
      noise[i] = (unsigned char)(seed >> 16);
    }
    noise[0] = 0x16;
    noise[1] = 3;
    noise[5] = 1;
    enum tls_sni_status st = sni(noise, (size_t)(seed % sizeof(noise)), name);
    if (st == TLS_SNI_FOUND && strlen(name) == 0)
      crashes_or_found++;
  }
  tap_is_int(crashes_or_found, 0, "2000 random handshakes: no empty names");
  return tap_done();
}
