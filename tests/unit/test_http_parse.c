/* SPDX-License-Identifier: Apache-2.0 */
/* The proxy's request-head parser: the two accepted forms, the rebuilt
 * upstream head, and every malformed head it must refuse. */
#include "config.h"

#include <string.h>

#include "http_parse.h"
#include "tap.h"
#include "util.h"

static struct http_request req;

static enum http_parse_status parse(const char *text) {
  return http_parse_request(text, strlen(text), &req);
}

static void test_valid(void) {
  const char *get = "GET http://Example.org:8080/a/b?c=d HTTP/1.1\r\nHost: wrong.example\r\nAccept: */*\r\n"
                    "Proxy-Authorization: Basic eA==\r\nProxy-Connection: keep-alive\r\nConnection: keep-alive, "
                    "X-Secret\r\nX-Secret: 1\r\nKeep-Alive: 5\r\nUpgrade: h2c\r\nTE: trailers\r\nUser-Agent:  "
                    "curl/8  \r\n\r\nEXTRA";
  tap_is_int(parse(get), HTTP_PARSE_OK, "absolute-form GET parses");
  tap_is_str(req.method, "GET", "method");
  tap_is_str(req.host, "Example.org", "host as written");
  tap_is_int(req.port, 8080, "port");
  tap_ok(!req.connect && !req.has_body, "not CONNECT, no body");
  tap_is_int(req.head_len, strlen(get) - 5, "head length stops at the blank line");
  size_t n;
  char *up = http_upstream_head(get, &req, &n);
  tap_is_str(up,
             "GET /a/b?c=d HTTP/1.1\r\nHost: Example.org:8080\r\nAccept: */*\r\nUser-Agent: curl/8\r\n"
             "Connection: close\r\n\r\n",
             "upstream head: origin-form, Host from the URI, hop-by-hop and Proxy-* removed, Connection: close");
  tap_is_int(n, strlen(up), "upstream head length");
  free(up);

  tap_is_int(parse("GET http://a.test HTTP/1.0\r\n\r\n"), HTTP_PARSE_OK, "HTTP/1.0, no path");
  tap_is_int(req.port, 80, "default port 80");
  tap_is_int(req.minor, 0, "minor version");
  up = http_upstream_head("GET http://a.test HTTP/1.0\r\n\r\n", &req, &n);
  tap_is_str(up, "GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n", "empty path becomes /");
  free(up);
  const char *q = "GET http://a.test?x=1 HTTP/1.1\r\n\r\n";
  tap_is_int(parse(q), HTTP_PARSE_OK, "query without a path");
  up = http_upstream_head(q, &req, &n);
  tap_ok(strncmp(up, "GET /?x=1 HTTP/1.1\r\n", 20) == 0, "query gets a / in front");
  free(up);

  const char *post = "POST http://[2001:db8::1]:81/p HTTP/1.1\r\nContent-Length: 5\r\ncontent-length: 5\r\n"
                     "Connection: content-length\r\n\r\nhello";
  tap_is_int(parse(post), HTTP_PARSE_OK, "POST with identical duplicate Content-Length");
  tap_is_str(req.host, "2001:db8::1", "IPv6 host without brackets");
  tap_ok(req.has_body && req.content_length == 5, "body of 5 bytes");
  up = http_upstream_head(post, &req, &n);
  tap_ok(strstr(up, "Host: [2001:db8::1]:81\r\n") != NULL, "IPv6 Host header in brackets");
  tap_ok(strstr(up, "Content-Length: 5\r\n") != NULL, "Connection cannot remove Content-Length");
  free(up);

  /* The body's length goes up once, in plain decimal: "010" is 10 to the
   * proxy but 8 to a server that reads a leading 0 as octal. */
  const char *octal = "POST http://a.test/ HTTP/1.1\r\nContent-Length: 010\r\ncontent-length: 10\r\nX: 1\r\n\r\n";
  tap_is_int(parse(octal), HTTP_PARSE_OK, "Content-Length 010 and 10: the same length");
  tap_ok(req.content_length == 10, "read as decimal 10");
  up = http_upstream_head(octal, &req, &n);
  tap_is_str(up, "POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 10\r\nX: 1\r\nConnection: close\r\n\r\n",
             "upstream: one Content-Length: 10, the client's spellings dropped");
  free(up);

  /* '_' elsewhere is an ordinary name character. */
  const char *under = "GET http://a.test/ HTTP/1.1\r\nX_Custom: 1\r\nContent_Type: text/plain\r\nHost_: b\r\n\r\n";
  tap_is_int(parse(under), HTTP_PARSE_OK, "names with '_' that fold to no guarded header pass");
  up = http_upstream_head(under, &req, &n);
  tap_ok(strstr(up, "X_Custom: 1\r\nContent_Type: text/plain\r\nHost_: b\r\n") != NULL, "and are forwarded");
  free(up);

  tap_is_int(parse("CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n"), HTTP_PARSE_OK, "CONNECT parses");
  tap_ok(req.connect && req.port == 443 && strcmp(req.host, "pypi.org") == 0, "CONNECT host and port");
  tap_is_int(parse("CONNECT [::1]:8443 HTTP/1.1\r\n\r\n"), HTTP_PARSE_OK, "CONNECT to an IPv6 literal");
  tap_is_str(req.host, "::1", "CONNECT IPv6 host");

  tap_is_int(parse("GET http://a.test/ HTTP/1.1\r\nAcc"), HTTP_PARSE_INCOMPLETE, "incomplete head");
  tap_is_str(req.host, "a.test", "the request line is known before the head ends");
  tap_is_int(parse("GET http://a.te"), HTTP_PARSE_INCOMPLETE, "incomplete request line");
  tap_is_int(parse("GET http://a.test/ HTTP/1.1\r"), HTTP_PARSE_INCOMPLETE, "a CR at the end waits for its LF");
}

static void test_malformed(void) {
  static const struct {
    const char *text;
    int status;
    const char *what;
  } cases[] = {
      {"GET http://a.test/ HTTP/1.1\n\n", 400, "LF without CR"},
      {"GET  http://a.test/ HTTP/1.1\r\n\r\n", 400, "double space in the request line"},
      {"GET http://a.test/\r\n\r\n", 400, "request line without version"},
      {"GET http://a.test/ HTTP/2.0\r\n\r\n", 400, "HTTP/2.0"},
      {"GET http://a.test/ HTTP/1.10\r\n\r\n", 400, "HTTP/1.10"},
      {"GET http://a.test/ HTTP/0.9\r\n\r\n", 400, "HTTP/0.9"},
      {"GET http://a.test/ FOO/1.1\r\n\r\n", 400, "not HTTP"},
      {"G(T http://a.test/ HTTP/1.1\r\n\r\n", 400, "bad method character"},
      {"\r\n\r\n", 400, "empty request line"},
      {"GET /index.html HTTP/1.1\r\nHost: a.test\r\n\r\n", 400, "origin-form (not a proxy request)"},
      {"GET https://a.test/ HTTP/1.1\r\n\r\n", 400, "https:// absolute form"},
      {"GET ftp://a.test/ HTTP/1.1\r\n\r\n", 400, "ftp scheme"},
      {"GET http://user:pw@a.test/ HTTP/1.1\r\n\r\n", 400, "userinfo"},
      {"GET http:///x HTTP/1.1\r\n\r\n", 400, "empty host"},
      {"GET http://a.test:99999/ HTTP/1.1\r\n\r\n", 400, "port out of range"},
      {"GET http://a.test:0/ HTTP/1.1\r\n\r\n", 400, "port 0"},
      {"GET http://a.test:8x/ HTTP/1.1\r\n\r\n", 400, "port not a number"},
      {"GET http://a%2e.test/ HTTP/1.1\r\n\r\n", 400, "percent in the host"},
      {"GET http://a.test/#frag HTTP/1.1\r\n\r\n", 400, "fragment"},
      {"GET http://[::1/ HTTP/1.1\r\n\r\n", 400, "unterminated IPv6 literal"},
      {"CONNECT a.test HTTP/1.1\r\n\r\n", 400, "CONNECT without a port"},
      {"CONNECT a.test: HTTP/1.1\r\n\r\n", 400, "CONNECT with an empty port"},
      {"CONNECT a.test:443/x HTTP/1.1\r\n\r\n", 400, "CONNECT with a path"},
      {"CONNECT http://a.test:443 HTTP/1.1\r\n\r\n", 400, "CONNECT with a URI"},
      {"CONNECT u@a.test:443 HTTP/1.1\r\n\r\n", 400, "CONNECT with userinfo"},
      {"GET http://a.test/ HTTP/1.1\r\nX: a\r\n folded\r\n\r\n", 400, "obs-fold"},
      {"GET http://a.test/ HTTP/1.1\r\nBad Name: x\r\n\r\n", 400, "space in a header name"},
      {"GET http://a.test/ HTTP/1.1\r\nBad : x\r\n\r\n", 400, "space before the colon"},
      {"GET http://a.test/ HTTP/1.1\r\nNoColon\r\n\r\n", 400, "header without colon"},
      {"GET http://a.test/ HTTP/1.1\r\n: x\r\n\r\n", 400, "empty header name"},
      {"GET http://a.test/ HTTP/1.1\r\nX: a\rb\r\n\r\n", 400, "bare CR in a value"},
      {"GET http://a.test/ HTTP/1.1\r\nX: a\x01z\r\n\r\n", 400, "control character in a value"},
      {"GET http://a.test/ HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400,
       "differing Content-Length"},
      {"GET http://a.test/ HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n", 400, "Content-Length list"},
      {"GET http://a.test/ HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400, "negative Content-Length"},
      {"GET http://a.test/ HTTP/1.1\r\nContent-Length: \r\n\r\n", 400, "empty Content-Length"},
      {"POST http://a.test/ HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400,
       "Content-Length with Transfer-Encoding"},
      {"POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 411, "Transfer-Encoding body"},
      /* Names that fold to a framing or hop-by-hop header where '_' is read
       * as '-' (CGI, WSGI, PHP, some servers): refused, whatever the case. */
      {"POST http://a.test/ HTTP/1.1\r\nTransfer_Encoding: chunked\r\n\r\n0\r\n\r\n", 400, "Transfer_Encoding"},
      {"POST http://a.test/ HTTP/1.1\r\ntransfer_ENCODING: chunked\r\n\r\n", 400, "transfer_ENCODING"},
      {"POST http://a.test/ HTTP/1.1\r\nContent-Length: 0\r\nContent_Length: 5\r\n\r\nhello", 400,
       "Content_Length beside Content-Length"},
      {"POST http://a.test/ HTTP/1.1\r\nContent_Length: 5\r\n\r\nhello", 400, "Content_Length alone"},
      {"GET http://a.test/ HTTP/1.1\r\nKeep_Alive: 5\r\n\r\n", 400, "Keep_Alive"},
      {"GET http://a.test/ HTTP/1.1\r\nProxy_Authorization: Basic eA==\r\n\r\n", 400, "Proxy_Authorization"},
      {"GET http://a.test/ HTTP/1.1\r\nproxy_anything: 1\r\n\r\n", 400, "proxy_anything"},
      /* Other lookalikes: white space before the colon, folding, bytes
       * outside ASCII, and case. */
      {"POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n", 400, "space before the colon"},
      {"POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding\t: chunked\r\n\r\n", 400, "tab before the colon"},
      {"POST http://a.test/ HTTP/1.1\r\nX: 1\r\n Transfer-Encoding: chunked\r\n\r\n", 400,
       "Transfer-Encoding folded into another header"},
      {"POST http://a.test/ HTTP/1.1\r\nContent-Length: 5\r\n 6\r\n\r\nhello", 400, "Content-Length folded"},
      {"POST http://a.test/ HTTP/1.1\r\nContent-Lengt\xe8: 5\r\n\r\nhello", 400, "a Latin-1 letter in a name"},
      {"POST http://a.test/ HTTP/1.1\r\nTransfer-Encod\xc4\xb1ng: chunked\r\n\r\n", 400, "a UTF-8 dotless i"},
      {"POST http://a.test/ HTTP/1.1\r\ncontent-length: 3\r\nTRANSFER-ENCODING: chunked\r\n\r\n", 400,
       "Content-Length with Transfer-Encoding, other cases"},
      {"POST http://a.test/ HTTP/1.1\r\nContent-Length: 5\r\ncontent-LENGTH: 6\r\n\r\nhello", 400,
       "differing Content-Length, other cases"},
  };
  for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
    enum http_parse_status st = parse(cases[i].text);
    tap_ok(st == HTTP_PARSE_ERROR && req.status == cases[i].status && req.error != NULL, "refused with %d: %s",
           cases[i].status, cases[i].what);
    if (st != HTTP_PARSE_ERROR || req.status != cases[i].status)
      printf("#   got status %d (%d) %s\n", st, req.status, req.error ? req.error : "");
  }
  /* NUL needs an explicit length. */
  static const char nul[] = "GET http://a.test/ HTTP/1.1\r\nX: a\0b\r\n\r\n";
  tap_ok(http_parse_request(nul, sizeof(nul) - 1, &req) == HTTP_PARSE_ERROR && req.status == 400,
         "NUL in the head refused");
  tap_ok(parse("GET https://a.test/ HTTP/1.1\r\n\r\n") == HTTP_PARSE_ERROR && strstr(req.error, "CONNECT"),
         "https:// refusal tells to use CONNECT");
  tap_ok(parse("GET http://a.test/ HTTP/1.1\r\nX: 1\r\n\x01\r\n") == HTTP_PARSE_ERROR, "garbage header line");

  /* Sizes: a head over 16 KiB, and too many header lines. */
  size_t big = HTTP_MAX_HEAD + 100;
  char *buf = xmalloc(big + 1);
  int n = snprintf(buf, big, "GET http://a.test/ HTTP/1.1\r\nX: ");
  memset(buf + n, 'a', big - (size_t)n);
  buf[big] = '\0';
  tap_ok(http_parse_request(buf, big, &req) == HTTP_PARSE_ERROR && req.status == 431, "16 KiB head: 431");
  tap_ok(http_parse_request(buf, 200, &req) == HTTP_PARSE_INCOMPLETE, "the same, early: still incomplete");
  size_t len = (size_t)snprintf(buf, big, "GET http://a.test/ HTTP/1.1\r\n");
  for (int i = 0; i < HTTP_MAX_HEADERS + 1; i++)
    len += (size_t)snprintf(buf + len, big - len, "X%d: y\r\n", i);
  len += (size_t)snprintf(buf + len, big - len, "\r\n");
  tap_ok(http_parse_request(buf, len, &req) == HTTP_PARSE_ERROR && req.status == 431, "too many headers: 431");
  free(buf);
}

int main(void) {
  test_valid();
  test_malformed();
  return tap_done();
}
