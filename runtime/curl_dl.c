#include "config.h"

#include "curl_dl.h"

#include <dlfcn.h>
#include <errno.h>

#include "util.h"

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
