/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "curl_dl.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define MAX_REDIRECTS 10L
#define CONNECT_TIMEOUT 30L
/* A transfer that moves less than this many bytes for STALL_SECONDS is dropped. */
#define STALL_BYTES 1L
#define STALL_SECONDS 60L

struct curl_dl curl_dl;

int curl_dl_load(hutch_error_t *err) {
  static bool loaded;
  if (loaded)
    return 0;
  void *handle = dlopen(LIBCURL_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    hutch_error_set(err, ELIBACC, "load %s: %s", LIBCURL_SONAME, dlerror());
    return hutch_error_hint(err, "install libcurl (Debian and Ubuntu: apt-get install libcurl4)");
  }
#define HUTCH_CURL_RESOLVE(f)                                                                                          \
  if ((*(void **)&curl_dl.f = dlsym(handle, #f)) == NULL)                                                              \
    return hutch_error_set(err, ELIBBAD, "%s has no symbol %s", LIBCURL_SONAME, #f);
  HUTCH_CURL_FUNCTIONS(HUTCH_CURL_RESOLVE)
#undef HUTCH_CURL_RESOLVE
  CURLcode rc = curl_dl.curl_global_init(CURL_GLOBAL_DEFAULT);
  if (rc != CURLE_OK)
    return hutch_error_set(err, ELIBBAD, "initialise %s: %s", LIBCURL_SONAME, curl_dl.curl_easy_strerror(rc));
  loaded = true;
  return 0;
}

void curl_dl_http_defaults(CURL *curl, const char *url, char *errbuf) {
  CURL(curl_easy_setopt)(curl, CURLOPT_URL, url);
  CURL(curl_easy_setopt)(curl, CURLOPT_ERRORBUFFER, errbuf);
  CURL(curl_easy_setopt)(curl, CURLOPT_NOSIGNAL, 1L);
  CURL(curl_easy_setopt)(curl, CURLOPT_FOLLOWLOCATION, 1L);
  CURL(curl_easy_setopt)(curl, CURLOPT_MAXREDIRS, MAX_REDIRECTS);
#if LIBCURL_VERSION_NUM >= 0x075500
  CURL(curl_easy_setopt)(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  CURL(curl_easy_setopt)(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#endif
  CURL(curl_easy_setopt)(curl, CURLOPT_USERAGENT, "hutch/" PACKAGE_VERSION);
  CURL(curl_easy_setopt)(curl, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT);
  CURL(curl_easy_setopt)(curl, CURLOPT_LOW_SPEED_LIMIT, STALL_BYTES);
  CURL(curl_easy_setopt)(curl, CURLOPT_LOW_SPEED_TIME, STALL_SECONDS);
}

/* A part, copied off libcurl's allocator; NULL when the URL has none. */
static char *url_part(CURLU *h, CURLUPart part) {
  char *v = NULL;
  if (CURL(curl_url_get)(h, part, &v, 0) != CURLUE_OK || v == NULL)
    return NULL;
  char *copy = xstrdup(v);
  CURL(curl_free)(v);
  return copy;
}

static CURLU *url_open(const char *url, unsigned flags, hutch_error_t *err) {
  if (curl_dl_load(err) < 0)
    return NULL;
  CURLU *h = CURL(curl_url)();
  if (h == NULL) {
    hutch_error_set(err, ENOMEM, "libcurl: make a URL handle");
    return NULL;
  }
  CURLUcode rc = CURL(curl_url_set)(h, CURLUPART_URL, url, flags);
  if (rc != CURLUE_OK) {
    CURL(curl_url_cleanup)(h);
    hutch_error_set(err, EINVAL, "libcurl's URL parser refuses it (CURLUcode %d)", (int)rc);
    return NULL;
  }
  return h;
}

int curl_dl_url_parse(const char *url, unsigned flags, struct curl_dl_url *out, hutch_error_t *err) {
  memset(out, 0, sizeof(*out));
  CURLU *h = url_open(url, flags, err);
  if (h == NULL)
    return -1;
  out->scheme = url_part(h, CURLUPART_SCHEME);
  out->host = url_part(h, CURLUPART_HOST);
  out->port = url_part(h, CURLUPART_PORT);
  out->path = url_part(h, CURLUPART_PATH);
  /* A password alone is userinfo too. */
  out->user = url_part(h, CURLUPART_USER);
  if (out->user == NULL && (out->user = url_part(h, CURLUPART_PASSWORD)) != NULL)
    out->user[0] = '\0';
  CURL(curl_url_cleanup)(h);
  return 0;
}

void curl_dl_url_clear(struct curl_dl_url *u) {
  free(u->scheme);
  free(u->user);
  free(u->host);
  free(u->port);
  free(u->path);
  memset(u, 0, sizeof(*u));
}

/* Network failures, as opposed to a server's answer or a local problem. */
int curl_dl_errno(CURLcode rc) {
  switch (rc) {
  case CURLE_COULDNT_RESOLVE_HOST:
  case CURLE_COULDNT_RESOLVE_PROXY:
    return EHOSTUNREACH;
  case CURLE_COULDNT_CONNECT:
    return ECONNREFUSED;
  case CURLE_OPERATION_TIMEDOUT:
    return ETIMEDOUT;
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_PEER_FAILED_VERIFICATION:
  case CURLE_SSL_CACERT_BADFILE:
    /* The peer answered and was not trusted: no network failure to retry
     * or fall back from (a mirror that fails the check is not skipped). */
    return EPROTO;
  case CURLE_SEND_ERROR:
  case CURLE_RECV_ERROR:
  case CURLE_GOT_NOTHING:
  case CURLE_PARTIAL_FILE:
#if LIBCURL_VERSION_NUM >= 0x074900
  case CURLE_PROXY:
#endif
    return ENETUNREACH;
  case CURLE_TOO_MANY_REDIRECTS:
    return ELOOP;
  default:
    return EIO;
  }
}
