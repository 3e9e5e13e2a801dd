/* SPDX-License-Identifier: Apache-2.0 */
/* The model API's URL as it may be shown: read by libcurl's URL parser,
 * the one that connects to it, so that what is taken out is exactly what
 * libcurl would send as credentials. */
#include "config.h"

#include <curl/curl.h>
#include <string.h>

#include "llm_client.h"
#include "util.h"

/* How libcurl's transfers read a URL (CURLOPT_URL): a URL without a scheme
 * is guessed (http:// for most hosts), and any scheme is parsed. */
#define CONNECT_FLAGS (CURLU_GUESS_SCHEME | CURLU_NON_SUPPORT_SCHEME)

static bool has_part(CURLU *u, CURLUPart part) {
  char *v = NULL;
  bool has = curl_url_get(u, part, &v, 0) == CURLUE_OK && v != NULL;
  curl_free(v);
  return has;
}

/* A URL libcurl refuses is never fetched, but it is still shown: all that
 * comes before its last '@' goes, after the scheme, since any reading of a
 * user or a password puts them before an '@'. */
static char *redact_unparsed(const char *url) {
  const char *at = strrchr(url, '@');
  if (at == NULL)
    return xstrdup(url);
  const char *scheme = strstr(url, "://");
  size_t keep = scheme && scheme < at ? (size_t)(scheme + 3 - url) : 0;
  return xasprintf("%.*s%s", (int)keep, url, at + 1);
}

char *llm_redact_url(const char *url) {
  CURLU *u = curl_url();
  if (u == NULL)
    return redact_unparsed(url);
  char *out = NULL;
  if (curl_url_set(u, CURLUPART_URL, url, CONNECT_FLAGS) != CURLUE_OK) {
    out = redact_unparsed(url);
  } else if (!has_part(u, CURLUPART_USER) && !has_part(u, CURLUPART_PASSWORD) && !has_part(u, CURLUPART_OPTIONS)) {
    out = xstrdup(url); /* as written: nothing to take out */
  } else {
    char *text = NULL;
    if (curl_url_set(u, CURLUPART_USER, NULL, 0) == CURLUE_OK &&
        curl_url_set(u, CURLUPART_PASSWORD, NULL, 0) == CURLUE_OK &&
        curl_url_set(u, CURLUPART_OPTIONS, NULL, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_URL, &text, 0) == CURLUE_OK)
      out = xstrdup(text);
    else
      out = redact_unparsed(url);
    curl_free(text);
  }
  curl_url_cleanup(u);
  return out;
}
