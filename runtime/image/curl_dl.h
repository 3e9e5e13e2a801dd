/* SPDX-License-Identifier: Apache-2.0 */
/* libcurl, loaded on first use.
 *
 * Only pulling an image needs HTTP, and loading libcurl (with its TLS and
 * compression libraries) costs about 14 ms at every process start: the
 * sandbox verbs must not pay that.  So the pull path dlopen()s it and calls
 * it through curl_dl.<function> (or CURL(function)), typed from
 * <curl/curl.h>.  curl_dl_load() also runs curl_global_init() once. */
#ifndef HUTCH_CURL_DL_H
#define HUTCH_CURL_DL_H

/* curl's type-checking wrappers are function-like macros named after the
 * functions; they would also expand in `curl_dl.curl_easy_setopt(...)`. */
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>
#undef curl_easy_setopt
#undef curl_easy_getinfo

#include "hutch.h"

#define HUTCH_CURL_FUNCTIONS(X)                                                                                        \
  X(curl_global_init)                                                                                                  \
  X(curl_version)                                                                                                      \
  X(curl_easy_init)                                                                                                    \
  X(curl_easy_setopt)                                                                                                  \
  X(curl_easy_perform)                                                                                                 \
  X(curl_easy_getinfo)                                                                                                 \
  X(curl_easy_reset)                                                                                                   \
  X(curl_easy_cleanup)                                                                                                 \
  X(curl_easy_strerror)                                                                                                \
  X(curl_easy_escape)                                                                                                  \
  X(curl_free)                                                                                                         \
  X(curl_slist_append)                                                                                                 \
  X(curl_slist_free_all)                                                                                               \
  X(curl_url)                                                                                                          \
  X(curl_url_cleanup)                                                                                                  \
  X(curl_url_get)                                                                                                      \
  X(curl_url_set)

struct curl_dl {
#define HUTCH_CURL_MEMBER(f) __typeof__(&f) f;
  HUTCH_CURL_FUNCTIONS(HUTCH_CURL_MEMBER)
#undef HUTCH_CURL_MEMBER
};

extern struct curl_dl curl_dl;

/* Load the library and every function, and initialise it, once; later
 * calls are free.  Not thread-safe: call it before starting threads. */
int curl_dl_load(hutch_error_t *err);

#define CURL(f) (curl_dl.f)

/* The errno of a failed transfer: EHOSTUNREACH (name not resolved),
 * ECONNREFUSED (no connection), ETIMEDOUT, ENETUNREACH (a connection cut
 * or a proxy's failure), EPROTO (TLS: the peer is not trusted), ELOOP
 * (redirects), EIO otherwise.  Callers tell a network failure (retry,
 * fall back) from a server's answer by it. */
int curl_dl_errno(CURLcode rc);

/* What every hutch transfer sets on a handle: the URL, errbuf (at least
 * CURL_ERROR_SIZE bytes) for curl's message, http(s) only with a bounded
 * number of redirects, our user agent, and timeouts that drop a stalled
 * connection instead of hanging. */
void curl_dl_http_defaults(CURL *curl, const char *url, char *errbuf);

/* A URL as libcurl's URL parser (CURLU) reads it, the parser of the
 * transfer that will fetch it: hutch reads no URL by hand.  Each part is
 * malloc'd, NULL when the URL has none; host keeps an IPv6 literal's
 * brackets ("[::1]"), port is only one written in the URL, path is
 * normalised ("a/../b" is "b") and left percent-encoded, and a user or
 * password makes user non-NULL.  flags are curl_url_set()'s
 * (CURLU_DEFAULT_SCHEME for a URL whose scheme may be left out).  Loads
 * libcurl; -1 when it cannot, or when the parser refuses the URL. */
struct curl_dl_url {
  char *scheme, *user, *host, *port, *path;
};
int curl_dl_url_parse(const char *url, unsigned flags, struct curl_dl_url *out, hutch_error_t *err);
void curl_dl_url_clear(struct curl_dl_url *u);

#endif
