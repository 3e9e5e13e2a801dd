/* SPDX-License-Identifier: Apache-2.0 */
/* HTTP/1.1 framing for hutch serve, kept small and strict: a request line
 * of three words, header lines "Name: value" (no folded lines, no bytes
 * below space but tab), at most SERVE_MAX_HEADERS of them in at most
 * SERVE_MAX_HEAD bytes; every answer is whole, with Content-Length, and
 * closes the connection. */
#include "config.h"

#include "serve.h"

#include "../mcp/mcp_http.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "util.h"

const char *serve_reason(int status) {
  switch (status) {
  case 200:
    return "OK";
  case 400:
    return "Bad Request";
  case 401:
    return "Unauthorized";
  case 403:
    return "Forbidden";
  case 404:
    return "Not Found";
  case 405:
    return "Method Not Allowed";
  case 408:
    return "Request Timeout";
  case 411:
    return "Length Required";
  case 413:
    return "Content Too Large";
  case 415:
    return "Unsupported Media Type";
  case 422:
    return "Unprocessable Content";
  case 431:
    return "Request Header Fields Too Large";
  case 500:
    return "Internal Server Error";
  case 501:
    return "Not Implemented";
  case 503:
    return "Service Unavailable";
  case 504:
    return "Gateway Timeout";
  default:
    return "Error";
  }
}

static bool token_char(char c) {
  return c > ' ' && c < 127 && !strchr("()<>@,;:\\\"/[]?={}", c);
}

bool serve_head_parse(const char *buf, size_t len, struct serve_head *out, const char **why) {
  memset(out, 0, sizeof(*out));
  if (memchr(buf, '\0', len)) {
    *why = "a NUL byte in the request head";
    return false;
  }
  out->storage = xstrndup(buf, len);
  char *save = NULL, *line = strtok_r(out->storage, "\n", &save);
  if (line == NULL) {
    *why = "an empty request";
    return false;
  }
  line[strcspn(line, "\r")] = '\0';
  char version[16];
  int end = 0;
  if (sscanf(line, "%15s %1023s %15s%n", out->method, out->target, version, &end) != 3 || line[end] != '\0' ||
      strncmp(version, "HTTP/1.", 7) != 0) {
    *why = "the request line is not METHOD TARGET HTTP/1.x";
    return false;
  }
  for (const char *m = out->method; *m; m++)
    if (!token_char(*m)) {
      *why = "the method is not a token";
      return false;
    }
  while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
    size_t l = strlen(line);
    if (l && line[l - 1] == '\r')
      line[--l] = '\0';
    if (l == 0)
      continue;
    char *colon = strchr(line, ':');
    if (colon == NULL || colon == line || line[0] == ' ' || line[0] == '\t') {
      *why = "a header line is not NAME: VALUE (folded lines are not taken)";
      return false;
    }
    for (char *c = line; c < colon; c++)
      if (!token_char(*c)) {
        *why = "a header name is not a token";
        return false;
      }
    for (char *c = colon + 1; *c; c++)
      if ((unsigned char)*c < ' ' && *c != '\t') {
        *why = "a control character in a header value";
        return false;
      }
    if (out->n == SERVE_MAX_HEADERS) {
      *why = "more than " SERVE_STR(SERVE_MAX_HEADERS) " header lines";
      return false;
    }
    *colon = '\0';
    char *v = colon + 1;
    v += strspn(v, " \t");
    size_t vl = strlen(v);
    while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
      v[--vl] = '\0';
    out->h[out->n].name = line;
    out->h[out->n++].value = v;
  }
  return true;
}

const char *serve_header(const struct serve_head *h, const char *name) {
  for (size_t i = 0; i < h->n; i++)
    if (strcasecmp(h->h[i].name, name) == 0)
      return h->h[i].value;
  return NULL;
}

void serve_head_clear(struct serve_head *h) {
  free(h->storage);
  memset(h, 0, sizeof(*h));
}

bool serve_respond(int fd, int status, const char *content_type, const char *extra, const char *body, size_t len,
                   double seconds) {
  _cleanup_free_ char *head =
      xasprintf("HTTP/1.1 %d %s\r\nServer: hutch/%s\r\nConnection: close\r\nContent-Length: %zu\r\n%s%s%s%s\r\n",
                status, serve_reason(status), PACKAGE_VERSION, len, content_type ? "Content-Type: " : "",
                content_type ? content_type : "", content_type ? "\r\n" : "", extra ? extra : "");
  double deadline = monotonic_seconds() + seconds;
  bool ok = mcp_http_send(fd, head, strlen(head), deadline) && (len == 0 || mcp_http_send(fd, body, len, deadline));
  /* What the client sent beyond what was read (a refused body) is dropped
   * before closing, so that the close does not reset the answer away. */
  shutdown(fd, SHUT_WR);
  char junk[4096];
  for (int i = 0; i < 16 && recv(fd, junk, sizeof(junk), MSG_DONTWAIT) > 0; i++)
    ;
  return ok;
}

bool serve_respond_json(int fd, int status, const char *extra, const cJSON *j) {
  _cleanup_free_ char *text = cJSON_PrintUnformatted(j);
  return serve_respond(fd, status, "application/json", extra, text, strlen(text), 30);
}

bool serve_respond_detail(int fd, int status, const char *extra, const char *msg) {
  _cleanup_cjson_ cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "detail", msg);
  return serve_respond_json(fd, status, extra, j);
}
