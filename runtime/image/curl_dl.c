/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "curl_dl.h"

#include <dlfcn.h>
#include <errno.h>

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
