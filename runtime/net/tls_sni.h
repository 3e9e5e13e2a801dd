/* SPDX-License-Identifier: Apache-2.0 */
/* The server name (SNI) of a TLS ClientHello: pure parsing, no I/O.
 *
 * A CONNECT tunnel's first client bytes are checked against the CONNECT
 * host, so that a tunnel opened to an allowed name cannot carry a TLS
 * session for another name hosted behind the same address. */
#ifndef HUTCH_TLS_SNI_H
#define HUTCH_TLS_SNI_H

#include <stddef.h>

/* A ClientHello split over more bytes than this is not waited for. */
#define TLS_SNI_MAX_HELLO 16384

enum tls_sni_status {
  TLS_SNI_FOUND,      /* name[] holds the host_name */
  TLS_SNI_NONE,       /* a complete ClientHello without a server_name */
  TLS_SNI_INCOMPLETE, /* a ClientHello has started: more bytes needed */
  TLS_SNI_NOT_TLS,    /* the bytes are not a TLS handshake */
  TLS_SNI_MALFORMED,  /* a TLS handshake record that does not parse */
};

/* Looks at the first `len` bytes a client sent; name gets the SNI
 * (NUL-terminated, at most 255 bytes) when FOUND. */
enum tls_sni_status tls_sni_extract(const unsigned char *buf, size_t len, char name[256]);

#endif
