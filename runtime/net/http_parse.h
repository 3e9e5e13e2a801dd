/* SPDX-License-Identifier: Apache-2.0 */
/* The head of an HTTP/1.x proxy request: pure parsing, no I/O.
 *
 * The proxy accepts two forms only: an absolute URI with the http scheme
 * ("GET http://host:port/path HTTP/1.1") and CONNECT host:port.  Anything
 * ambiguous is refused rather than guessed at (obs-fold, bare CR, NUL,
 * Content-Length with Transfer-Encoding, differing Content-Lengths, header
 * names that read as a framing or hop-by-hop header with '_' as '-'): the
 * proxy and the origin must never disagree about where a request ends. */
#ifndef HUTCH_HTTP_PARSE_H
#define HUTCH_HTTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HTTP_MAX_HEAD 16384
#define HTTP_MAX_HEADERS 100

enum http_parse_status {
  HTTP_PARSE_INCOMPLETE = 0, /* no blank line yet, and under HTTP_MAX_HEAD */
  HTTP_PARSE_OK = 1,
  HTTP_PARSE_ERROR = -1, /* status and error say what to answer */
};

struct http_span {
  size_t off, len; /* into the parsed buffer */
};

struct http_header {
  struct http_span name, value;
};

struct http_request {
  char method[24];
  bool connect;
  char host[256]; /* as written, IPv6 without brackets */
  uint16_t port;
  struct http_span path; /* origin-form target ("/x?y"); empty for CONNECT */
  int minor;             /* HTTP/1.<minor> */
  size_t head_len;       /* bytes up to and including the blank line */
  bool has_body;
  bool has_content_length; /* sent upstream once, in plain decimal */
  uint64_t content_length;
  struct http_header headers[HTTP_MAX_HEADERS];
  size_t n_headers;
  /* On HTTP_PARSE_ERROR: the status to answer (400, 411, 431) and why. */
  int status;
  const char *error;
};

/* Parses buf[0..len).  The request line is parsed as soon as it is complete,
 * so method and host are known for the log even when the headers fail. */
enum http_parse_status http_parse_request(const char *buf, size_t len, struct http_request *req);

/* The head to send upstream (a new string, *out_len bytes): origin-form,
 * Host from the URI, Proxy-* and hop-by-hop headers (and those Connection
 * names) removed, one Content-Length in plain decimal, "Connection: close"
 * added. */
char *http_upstream_head(const char *buf, const struct http_request *req, size_t *out_len);

#endif
