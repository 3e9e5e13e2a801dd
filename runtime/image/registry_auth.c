/* SPDX-License-Identifier: Apache-2.0 */
/* The credentials of a registry in a Docker or podman auth file
 * (registry.h).  Strings in, strings out, but the file's keys are URLs,
 * read by libcurl's parser (curl_dl.h), which is loaded for it. */
#include "config.h"

#include "registry.h"

#include <cJSON.h>
#include <string.h>

#include "curl_dl.h"
#include "util.h"

/* A key of "auths": "[scheme://]host[:port][/path]", read as libcurl reads
 * a URL (https:// when the scheme is left out).  Docker's own keys carry an
 * API path ("https://index.docker.io/v1/"), which names the host only;
 * podman's may name a namespace or a repository ("host/team").  false for
 * a key libcurl refuses, which names no registry. */
static bool auth_key_split(const char *key, char **host, char **path) {
  struct curl_dl_url u;
  if (curl_dl_url_parse(key, CURLU_DEFAULT_SCHEME | CURLU_NON_SUPPORT_SCHEME, &u, NULL) < 0)
    return false;
  if (u.host == NULL) {
    curl_dl_url_clear(&u);
    return false;
  }
  *host = u.port ? xasprintf("%s:%s", u.host, u.port) : xstrdup(u.host);
  const char *p = u.path ? u.path : "";
  while (*p == '/')
    p++;
  size_t plen = strlen(p);
  while (plen > 0 && p[plen - 1] == '/')
    plen--;
  if ((plen == 2 && (strncmp(p, "v1", 2) == 0 || strncmp(p, "v2", 2) == 0)))
    plen = 0;
  *path = xstrndup(p, plen);
  curl_dl_url_clear(&u);
  return true;
}

char *registry_auth_lookup_repo(const char *auth_json, const char *domain, const char *repo) {
  cJSON *j = auth_json ? cJSON_Parse(auth_json) : NULL;
  const cJSON *auths = cJSON_GetObjectItemCaseSensitive(j, "auths");
  char *found = NULL;
  size_t found_len = 0;
  bool hub = registry_domain_is_hub(domain);
  const cJSON *entry;
  cJSON_ArrayForEach(entry, auths) {
    if (entry->string == NULL)
      continue;
    _cleanup_free_ char *host = NULL, *path = NULL;
    if (!auth_key_split(entry->string, &host, &path))
      continue;
    if (!(strcmp(host, domain) == 0 || (hub && registry_domain_is_hub(host))))
      continue;
    /* The most specific key that holds the repository wins, as podman
     * chooses. */
    size_t plen = strlen(path);
    if (plen > 0 && (repo == NULL || strncmp(repo, path, plen) != 0 || (repo[plen] != '\0' && repo[plen] != '/')))
      continue;
    if (found && plen + 1 <= found_len)
      continue;
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(entry, "auth");
    if (cJSON_IsString(a) && a->valuestring[0]) {
      free(found);
      found = xstrdup(a->valuestring);
      found_len = plen + 1;
    }
  }
  cJSON_Delete(j);
  return found;
}

char *registry_auth_lookup(const char *auth_json, const char *domain) {
  return registry_auth_lookup_repo(auth_json, domain, NULL);
}
