/* SPDX-License-Identifier: Apache-2.0 */
/* HTTP/1.x request heads for the proxy (http_parse.h): strict on purpose,
 * since every request the proxy lets through is rebuilt from what it
 * understood, and anything it would have to guess about is refused. */
#include "config.h"

#include "http_parse.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "util.h"

/* ASCII only, whatever the locale: in a single-byte locale isalnum() takes
 * bytes above 0x7f, which some servers fold to ASCII lookalikes. */
static bool is_alnum(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_tchar(unsigned char c) {
  return is_alnum(c) || (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static bool is_host_char(unsigned char c) {
  return is_alnum(c) || c == '-' || c == '.' || c == '_';
}

static enum http_parse_status fail(struct http_request *req, int status, const char *why) {
  req->status = status;
  req->error = why;
  return HTTP_PARSE_ERROR;
}

static bool span_ieq(const char *buf, struct http_span s, const char *word) {
  return s.len == strlen(word) && strncasecmp(buf + s.off, word, s.len) == 0;
}

/* The first len bytes of name equal the lower-case `word` once read the way
 * CGI gateways, WSGI, PHP and some servers read header names: without
 * regard to case, and '_' as '-' (HTTP_TRANSFER_ENCODING). */
static bool name_folds_to(const char *name, size_t len, const char *word) {
  for (size_t i = 0; i < len; i++) {
    char c = name[i] == '_' ? '-' : (char)tolower((unsigned char)name[i]);
    if (word[i] == '\0' || c != word[i])
      return false;
  }
  return true;
}

/* Framing and hop-by-hop headers (RFC 9110 7.6.1), Host, and the proxy's
 * own (Proxy-*): the ones the proxy reads, rebuilds or removes. */
static const struct {
  const char *name;
  bool hop; /* removed on the way up */
} guarded_headers[] = {
    {"host", true},    {"connection", true}, {"keep-alive", true},        {"te", true},
    {"trailer", true}, {"upgrade", true},    {"transfer-encoding", true}, {"content-length", false},
};

/* A name that folds to a guarded header (or to Proxy-*); *hop: it is one
 * that is removed.  Exact spellings and lookalikes both answer true. */
static bool guarded_name(const char *name, size_t len, bool *hop) {
  for (size_t i = 0; i < ARRAY_SIZE(guarded_headers); i++) {
    if (len == strlen(guarded_headers[i].name) && name_folds_to(name, len, guarded_headers[i].name)) {
      *hop = guarded_headers[i].hop;
      return true;
    }
  }
  *hop = true;
  return len >= 6 && name_folds_to(name, 6, "proxy-");
}

/* host[:port] or [v6][:port] of `len` bytes; port_required for CONNECT. */
static enum http_parse_status parse_authority(const char *a, size_t len, bool port_required, uint16_t default_port,
                                              struct http_request *req) {
  const char *host = a, *port = NULL;
  size_t host_len, port_len = 0;
  if (memchr(a, '@', len))
    return fail(req, 400, "user information in the URI is not allowed");
  if (len > 0 && a[0] == '[') {
    const char *end = memchr(a, ']', len);
    if (end == NULL)
      return fail(req, 400, "unterminated IPv6 address in the request target");
    host = a + 1;
    host_len = (size_t)(end - host);
    size_t rest = len - (size_t)(end + 1 - a);
    if (rest > 0) {
      if (end[1] != ':')
        return fail(req, 400, "text after the IPv6 address in the request target");
      port = end + 2;
      port_len = rest - 1;
    }
    for (size_t i = 0; i < host_len; i++)
      if (!isxdigit((unsigned char)host[i]) && host[i] != ':' && host[i] != '.')
        return fail(req, 400, "bad IPv6 address in the request target");
  } else {
    const char *colon = memchr(a, ':', len);
    host_len = colon ? (size_t)(colon - a) : len;
    if (colon) {
      port = colon + 1;
      port_len = len - host_len - 1;
    }
    for (size_t i = 0; i < host_len; i++)
      if (!is_host_char((unsigned char)host[i]))
        return fail(req, 400, "bad character in the host name");
  }
  if (host_len == 0)
    return fail(req, 400, "empty host in the request target");
  if (host_len >= sizeof(req->host))
    return fail(req, 400, "host name too long");
  memcpy(req->host, host, host_len);
  req->host[host_len] = '\0';
  if (port == NULL || port_len == 0) {
    if (port_required)
      return fail(req, 400, "CONNECT needs host:port");
    req->port = default_port;
    return HTTP_PARSE_OK;
  }
  unsigned long v = 0;
  if (port_len > 5)
    return fail(req, 400, "bad port in the request target");
  for (size_t i = 0; i < port_len; i++) {
    if (!isdigit((unsigned char)port[i]))
      return fail(req, 400, "bad port in the request target");
    v = v * 10 + (unsigned long)(port[i] - '0');
  }
  if (v == 0 || v > 65535)
    return fail(req, 400, "bad port in the request target");
  req->port = (uint16_t)v;
  return HTTP_PARSE_OK;
}

static enum http_parse_status parse_target(const char *buf, size_t off, size_t len, struct http_request *req) {
  const char *t = buf + off;
  if (req->connect) {
    if (memchr(t, '/', len) || memchr(t, '?', len))
      return fail(req, 400, "CONNECT takes host:port, not a URI");
    return parse_authority(t, len, true, 0, req);
  }
  if (len >= 8 && strncasecmp(t, "https://", 8) == 0)
    return fail(req, 400, "https:// URLs are not proxied as such: use CONNECT (an https proxy tunnel)");
  if (len < 7 || strncasecmp(t, "http://", 7) != 0) {
    if (memmem(t, len, "://", 3))
      return fail(req, 400, "only http:// URIs and CONNECT are proxied");
    return fail(req, 400, "not a proxy request: an absolute http:// URI or CONNECT is expected");
  }
  if (memchr(t, '#', len))
    return fail(req, 400, "a fragment in the request target");
  size_t a = 7, end = a;
  while (end < len && t[end] != '/' && t[end] != '?')
    end++;
  enum http_parse_status s = parse_authority(t + a, end - a, false, 80, req);
  if (s != HTTP_PARSE_OK)
    return s;
  req->path = (struct http_span){off + end, len - end};
  return HTTP_PARSE_OK;
}

static enum http_parse_status parse_request_line(const char *buf, size_t len, struct http_request *req) {
  const char *sp1 = memchr(buf, ' ', len);
  if (sp1 == NULL || sp1 == buf)
    return fail(req, 400, "malformed request line");
  size_t mlen = (size_t)(sp1 - buf);
  if (mlen >= sizeof(req->method))
    return fail(req, 400, "method too long");
  for (size_t i = 0; i < mlen; i++)
    if (!is_tchar((unsigned char)buf[i]))
      return fail(req, 400, "bad character in the method");
  memcpy(req->method, buf, mlen);
  req->method[mlen] = '\0';
  req->connect = strcmp(req->method, "CONNECT") == 0;
  size_t toff = mlen + 1;
  const char *sp2 = memchr(buf + toff, ' ', len - toff);
  if (sp2 == NULL || sp2 == buf + toff)
    return fail(req, 400, "malformed request line");
  size_t tlen = (size_t)(sp2 - buf) - toff;
  for (size_t i = 0; i < tlen; i++) {
    unsigned char c = (unsigned char)buf[toff + i];
    if (c <= ' ' || c >= 0x7f)
      return fail(req, 400, "bad character in the request target");
  }
  const char *ver = sp2 + 1;
  size_t vlen = len - (size_t)(ver - buf);
  if (vlen != 8 || strncmp(ver, "HTTP/1.", 7) != 0 || !isdigit((unsigned char)ver[7]))
    return fail(req, 400, "only HTTP/1.x requests are proxied");
  req->minor = ver[7] - '0';
  return parse_target(buf, toff, tlen, req);
}

/* One header line (without CRLF) at buf[off..off+len). */
static enum http_parse_status parse_header(const char *buf, size_t off, size_t len, struct http_request *req,
                                           bool *has_te, bool *has_cl) {
  const char *l = buf + off;
  if (l[0] == ' ' || l[0] == '\t')
    return fail(req, 400, "obsolete line folding in a header");
  const char *colon = memchr(l, ':', len);
  if (colon == NULL)
    return fail(req, 400, "header line without ':'");
  size_t nlen = (size_t)(colon - l);
  if (nlen == 0)
    return fail(req, 400, "empty header name");
  for (size_t i = 0; i < nlen; i++) {
    if (l[i] == ' ' || l[i] == '\t')
      return fail(req, 400, "white space in a header name");
    if (!is_tchar((unsigned char)l[i]))
      return fail(req, 400, "bad character in a header name");
  }
  size_t v = nlen + 1, vend = len;
  while (v < vend && (l[v] == ' ' || l[v] == '\t'))
    v++;
  while (vend > v && (l[vend - 1] == ' ' || l[vend - 1] == '\t'))
    vend--;
  for (size_t i = v; i < vend; i++) {
    unsigned char c = (unsigned char)l[i];
    if ((c < 0x20 && c != '\t') || c == 0x7f)
      return fail(req, 400, "control character in a header value");
  }
  /* "Transfer_Encoding: chunked" is an ordinary header to the proxy but
   * Transfer-Encoding to a server that folds '_' into '-': the two would
   * disagree about where the request ends. */
  bool hop;
  if (memchr(l, '_', nlen) && guarded_name(l, nlen, &hop))
    return fail(req, 400, "a header name with '_' that reads as a framing, hop-by-hop or Proxy- header");
  if (req->n_headers == HTTP_MAX_HEADERS)
    return fail(req, 431, "too many header lines");
  struct http_header *h = &req->headers[req->n_headers++];
  h->name = (struct http_span){off, nlen};
  h->value = (struct http_span){off + v, vend - v};

  if (span_ieq(buf, h->name, "transfer-encoding"))
    *has_te = true;
  if (span_ieq(buf, h->name, "content-length")) {
    if (h->value.len == 0 || h->value.len > 18)
      return fail(req, 400, "bad Content-Length");
    uint64_t n = 0;
    for (size_t i = 0; i < h->value.len; i++) {
      char c = buf[h->value.off + i];
      if (!isdigit((unsigned char)c))
        return fail(req, 400, "bad Content-Length");
      n = n * 10 + (uint64_t)(c - '0');
    }
    if (*has_cl && n != req->content_length)
      return fail(req, 400, "differing Content-Length headers");
    *has_cl = true;
    req->content_length = n;
  }
  return HTTP_PARSE_OK;
}

enum http_parse_status http_parse_request(const char *buf, size_t len, struct http_request *req) {
  *req = (struct http_request){0};
  bool has_te = false, has_cl = false;
  size_t pos = 0;
  for (unsigned line = 0;; line++) {
    size_t scan = len < HTTP_MAX_HEAD ? len : HTTP_MAX_HEAD;
    const char *nl = pos < scan ? memchr(buf + pos, '\n', scan - pos) : NULL;
    /* The bytes already here are checked now: a bad request is answered
     * at once, not after the idle timeout. */
    size_t end = nl ? (size_t)(nl - buf) : scan;
    for (size_t i = pos; i < end; i++) {
      if (buf[i] == '\0')
        return fail(req, 400, "NUL byte in the request head");
      if (buf[i] == '\r' && i + 1 < len && buf[i + 1] != '\n')
        return fail(req, 400, "bare CR in the request head");
    }
    if (nl == NULL) {
      if (len >= HTTP_MAX_HEAD)
        return fail(req, 431, "request head larger than 16 KiB");
      return HTTP_PARSE_INCOMPLETE;
    }
    if (end == pos || buf[end - 1] != '\r')
      return fail(req, 400, "line not ended by CRLF");
    size_t llen = end - 1 - pos;
    if (line == 0) {
      if (llen == 0)
        return fail(req, 400, "empty request line");
      enum http_parse_status s = parse_request_line(buf + pos, llen, req);
      if (s != HTTP_PARSE_OK)
        return s;
      /* path offsets were relative to the line, which starts at 0 */
    } else if (llen == 0) {
      req->head_len = end + 1;
      break;
    } else {
      enum http_parse_status s = parse_header(buf, pos, llen, req, &has_te, &has_cl);
      if (s != HTTP_PARSE_OK)
        return s;
    }
    pos = end + 1;
  }
  if (has_te && has_cl)
    return fail(req, 400, "both Content-Length and Transfer-Encoding");
  if (has_te && !req->connect)
    return fail(req, 411, "Transfer-Encoding request bodies are not proxied: send Content-Length");
  req->has_content_length = has_cl;
  req->has_body = !req->connect && req->content_length > 0;
  return HTTP_PARSE_OK;
}

/* Hop-by-hop headers (RFC 9110 7.6.1) and the proxy's own. */
static bool hop_by_hop(const char *buf, struct http_span name) {
  bool hop;
  return guarded_name(buf + name.off, name.len, &hop) && hop;
}

/* True when a Connection header lists `name`.  Content-Length is never
 * dropped that way: the upstream would then frame the body differently. */
static bool named_by_connection(const char *buf, const struct http_request *req, struct http_span name) {
  if (span_ieq(buf, name, "content-length"))
    return false;
  for (size_t i = 0; i < req->n_headers; i++) {
    if (!span_ieq(buf, req->headers[i].name, "connection"))
      continue;
    const char *v = buf + req->headers[i].value.off, *vend = v + req->headers[i].value.len;
    while (v < vend) {
      while (v < vend && (*v == ',' || *v == ' ' || *v == '\t'))
        v++;
      const char *tok = v;
      while (v < vend && *v != ',' && *v != ' ' && *v != '\t')
        v++;
      if ((size_t)(v - tok) == name.len && strncasecmp(tok, buf + name.off, name.len) == 0)
        return true;
    }
  }
  return false;
}

char *http_upstream_head(const char *buf, const struct http_request *req, size_t *out_len) {
  size_t cap = req->head_len + 1024, n = 0;
  char *out = xmalloc(cap);
  const char *path = buf + req->path.off;
  size_t plen = req->path.len;
  bool v6 = strchr(req->host, ':') != NULL;
  char port[8] = "";
  if (req->port != 80)
    snprintf(port, sizeof(port), ":%u", req->port);
  n += (size_t)snprintf(out + n, cap - n, "%s %s%.*s HTTP/1.1\r\nHost: %s%s%s%s\r\n", req->method,
                        plen == 0 || path[0] != '/' ? "/" : "", (int)plen, path, v6 ? "[" : "", req->host,
                        v6 ? "]" : "", port);
  /* The length the proxy framed the body with, and no other spelling of
   * it: "010" is 10 here but 8 to a server that reads it as octal, and
   * repeats are refused by some servers. */
  if (req->has_content_length)
    n += (size_t)snprintf(out + n, cap - n, "Content-Length: %" PRIu64 "\r\n", req->content_length);
  for (size_t i = 0; i < req->n_headers; i++) {
    const struct http_header *h = &req->headers[i];
    if (hop_by_hop(buf, h->name) || span_ieq(buf, h->name, "content-length") || named_by_connection(buf, req, h->name))
      continue;
    memcpy(out + n, buf + h->name.off, h->name.len);
    n += h->name.len;
    memcpy(out + n, ": ", 2);
    n += 2;
    memcpy(out + n, buf + h->value.off, h->value.len);
    n += h->value.len;
    memcpy(out + n, "\r\n", 2);
    n += 2;
  }
  static const char close_line[] = "Connection: close\r\n\r\n";
  memcpy(out + n, close_line, sizeof(close_line) - 1);
  n += sizeof(close_line) - 1;
  out[n] = '\0';
  *out_len = n;
  return out;
}
