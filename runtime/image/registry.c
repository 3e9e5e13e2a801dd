/* Requests to a registry of the OCI distribution API (registry.h): the
 * manifest GETs with their Accept list, the Bearer token dance on a 401,
 * and blob downloads (download.c) verified by digest.  libcurl is
 * dlopen()ed (curl_dl.h): the custom headers and the WWW-Authenticate of a
 * 401 need more than download_file() offers. */
#include "config.h"

#include "registry.h"

#include <cJSON.h>
#include <fcntl.h>
#include <string.h>
#include <strings.h>

#include "curl_dl.h"
#include "download.h"
#include "util.h"

struct registry_client {
  char *base;   /* "https://host/v2/REPO" */
  char *domain; /* for credentials and messages */
  char *repo;
  char *basic;      /* base64 user:password, or NULL */
  char *authz;      /* the "Authorization: ..." header in use, or NULL */
  bool tried_token; /* a token was fetched for this client already */
};

struct response {
  long status;
  char *body;
  size_t len, max;
  bool too_big;
  char *content_type, *www_authenticate;
};

static void response_clear(struct response *r) {
  free(r->body);
  free(r->content_type);
  free(r->www_authenticate);
  memset(r, 0, sizeof(*r));
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata) {
  struct response *r = userdata;
  size_t n = size * nmemb;
  if (r->len + n > r->max) {
    r->too_big = true;
    return 0;
  }
  r->body = xrealloc(r->body, r->len + n + 1);
  memcpy(r->body + r->len, data, n);
  r->len += n;
  r->body[r->len] = '\0';
  return n;
}

/* Headers of the last response only (a redirect starts a new set). */
static size_t on_header(char *data, size_t size, size_t nmemb, void *userdata) {
  struct response *r = userdata;
  size_t n = size * nmemb;
  if (n >= 5 && strncmp(data, "HTTP/", 5) == 0) {
    free(r->content_type);
    free(r->www_authenticate);
    r->content_type = r->www_authenticate = NULL;
    return n;
  }
  const char *colon = memchr(data, ':', n);
  if (colon == NULL)
    return n;
  size_t klen = (size_t)(colon - data);
  const char *v = colon + 1;
  size_t vlen = n - klen - 1;
  while (vlen > 0 && (*v == ' ' || *v == '\t'))
    v++, vlen--;
  while (vlen > 0 && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' '))
    vlen--;
  char **slot = NULL;
  if (klen == 12 && strncasecmp(data, "Content-Type", 12) == 0)
    slot = &r->content_type;
  else if (klen == 16 && strncasecmp(data, "WWW-Authenticate", 16) == 0)
    slot = &r->www_authenticate;
  if (slot && *slot == NULL)
    *slot = xstrndup(v, vlen);
  return n;
}

static int http_get(const char *url, struct curl_slist *headers, size_t max, struct response *r, hutch_error_t *err) {
  memset(r, 0, sizeof(*r));
  r->max = max;
  CURL *curl = CURL(curl_easy_init)();
  if (curl == NULL)
    return hutch_error_set(err, ENOMEM, "GET %s: cannot create a curl handle", url);
  char errbuf[CURL_ERROR_SIZE] = "";
  curl_dl_http_defaults(curl, url, errbuf);
  CURL(curl_easy_setopt)(curl, CURLOPT_WRITEFUNCTION, on_body);
  CURL(curl_easy_setopt)(curl, CURLOPT_WRITEDATA, r);
  CURL(curl_easy_setopt)(curl, CURLOPT_HEADERFUNCTION, on_header);
  CURL(curl_easy_setopt)(curl, CURLOPT_HEADERDATA, r);
  if (headers)
    CURL(curl_easy_setopt)(curl, CURLOPT_HTTPHEADER, headers);
  CURLcode rc = CURL(curl_easy_perform)(curl);
  CURL(curl_easy_getinfo)(curl, CURLINFO_RESPONSE_CODE, &r->status);
  CURL(curl_easy_cleanup)(curl);
  if (r->too_big) {
    response_clear(r);
    return hutch_error_set(err, EFBIG, "GET %s: the answer is larger than %zu bytes", url, max);
  }
  if (rc != CURLE_OK) {
    response_clear(r);
    hutch_error_set(err, ECONNREFUSED, "GET %s: %s", url, errbuf[0] ? errbuf : CURL(curl_easy_strerror)(rc));
    return hutch_error_hint(err, "check the network and the registry's address; a proxy is taken from "
                                 "https_proxy/http_proxy (and no_proxy)");
  }
  return 0;
}

static char *read_auth_file(const char *explicit_path, char **path_out) {
  _cleanup_free_ char *path = NULL;
  if (explicit_path)
    path = xstrdup(explicit_path);
  else if (getenv("REGISTRY_AUTH_FILE") && getenv("REGISTRY_AUTH_FILE")[0])
    path = xstrdup(getenv("REGISTRY_AUTH_FILE"));
  else if (getenv("DOCKER_CONFIG") && getenv("DOCKER_CONFIG")[0])
    path = xasprintf("%s/config.json", getenv("DOCKER_CONFIG"));
  else if (getenv("HOME"))
    path = xasprintf("%s/.docker/config.json", getenv("HOME"));
  if (path == NULL)
    return NULL;
  char *text = read_file_at(AT_FDCWD, path, 1 << 20, NULL);
  if (text && path_out)
    *path_out = steal_pointer(&path);
  return text;
}

int registry_client_new(const struct registry_ref *ref, const char *auth_file, struct registry_client **out,
                        hutch_error_t *err) {
  if (curl_dl_load(err) < 0)
    return -1;
  struct registry_client *c = xcalloc(1, sizeof(*c));
  c->base = xasprintf("%s://%s/v2/%s", ref->plain_http ? "http" : "https", ref->host, ref->repo);
  c->domain = xstrdup(ref->domain);
  c->repo = xstrdup(ref->repo);
  _cleanup_free_ char *path = NULL;
  _cleanup_free_ char *text = read_auth_file(auth_file, &path);
  c->basic = registry_auth_lookup(text, ref->domain);
  if (c->basic)
    hutch_debug("registry %s: credentials from %s", ref->domain, path);
  *out = c;
  return 0;
}

void registry_client_free(struct registry_client *c) {
  if (c == NULL)
    return;
  free(c->base);
  free(c->domain);
  free(c->repo);
  free(c->basic);
  free(c->authz);
  free(c);
}

/* After a 401: a Bearer token from the challenge's realm (with the
 * credentials when there are any), or the credentials themselves for a
 * Basic challenge. */
static int authenticate(struct registry_client *c, const char *www_authenticate, hutch_error_t *err) {
  struct registry_challenge ch;
  if (www_authenticate == NULL || registry_challenge_parse(www_authenticate, &ch) < 0)
    return hutch_error_set(err, EACCES, "registry %s: 401 Unauthorized without a usable WWW-Authenticate", c->domain);
  int ret = -1;
  _cleanup_free_ char *scope = NULL, *url = NULL, *basic = NULL;
  free(c->authz);
  c->authz = NULL;
  if (strcasecmp(ch.scheme, "Basic") == 0) {
    if (c->basic == NULL) {
      hutch_error_set(err, EACCES, "registry %s: credentials are required", c->domain);
      hutch_error_hint(err, "log in (docker login / podman login) or put them in $REGISTRY_AUTH_FILE");
      goto out;
    }
    c->authz = xasprintf("Authorization: Basic %s", c->basic);
    ret = 0;
    goto out;
  }
  if (strcasecmp(ch.scheme, "Bearer") != 0 || ch.realm == NULL) {
    hutch_error_set(err, EACCES, "registry %s: unsupported authentication \"%s\"", c->domain, www_authenticate);
    goto out;
  }
  if (strncmp(ch.realm, "https://", 8) != 0 && strncmp(ch.realm, "http://", 7) != 0) {
    hutch_error_set(err, EACCES, "registry %s: the token realm \"%s\" is not an http(s) URL", c->domain, ch.realm);
    goto out;
  }
  /* A token service on plain http would see the credentials in clear:
   * only a loopback one may (the same rule as for registries). */
  if (strncmp(ch.realm, "http://", 7) == 0) {
    struct registry_ref tmp;
    _cleanup_free_ char *fake = xasprintf("%.*s/x", (int)strcspn(ch.realm + 7, "/"), ch.realm + 7);
    bool loop = registry_ref_parse(fake, &tmp, NULL) == 0 && tmp.plain_http;
    registry_ref_clear(&tmp);
    if (!loop) {
      hutch_error_set(err, EACCES, "registry %s: the token realm %s is plain http on a host that is not loopback",
                      c->domain, ch.realm);
      goto out;
    }
  }
  scope = ch.scope ? xstrdup(ch.scope) : xasprintf("repository:%s:pull", c->repo);
  char *esc_service = ch.service ? CURL(curl_easy_escape)(NULL, ch.service, 0) : NULL;
  char *esc_scope = CURL(curl_easy_escape)(NULL, scope, 0);
  url = xasprintf("%s%sscope=%s%s%s", ch.realm, strchr(ch.realm, '?') ? "&" : "?", esc_scope,
                  esc_service ? "&service=" : "", esc_service ? esc_service : "");
  CURL(curl_free)(esc_service);
  CURL(curl_free)(esc_scope);
  struct curl_slist *headers = NULL;
  basic = c->basic ? xasprintf("Authorization: Basic %s", c->basic) : NULL;
  if (basic)
    headers = CURL(curl_slist_append)(headers, basic);
  struct response r;
  int rc = http_get(url, headers, 1 << 20, &r, err);
  CURL(curl_slist_free_all)(headers);
  if (rc < 0) {
    hutch_error_wrap(err, "registry %s: get a token", c->domain);
    goto out;
  }
  if (r.status != 200) {
    hutch_error_set(err, EACCES, "registry %s: the token service %s answered HTTP %ld", c->domain, ch.realm, r.status);
    hutch_error_hint(err,
                     c->basic ? "check the credentials for %s in the auth file"
                              : "the image may be private: log in (docker login / podman login) or give the "
                                "credentials in $REGISTRY_AUTH_FILE",
                     c->domain);
    response_clear(&r);
    goto out;
  }
  cJSON *j = cJSON_ParseWithLength(r.body ? r.body : "", r.len);
  const cJSON *tok = cJSON_GetObjectItemCaseSensitive(j, "token");
  if (!cJSON_IsString(tok))
    tok = cJSON_GetObjectItemCaseSensitive(j, "access_token");
  if (cJSON_IsString(tok) && tok->valuestring[0]) {
    c->authz = xasprintf("Authorization: Bearer %s", tok->valuestring);
    ret = 0;
  } else {
    hutch_error_set(err, EPROTO, "registry %s: the token service's answer holds no token", c->domain);
  }
  cJSON_Delete(j);
  response_clear(&r);
out:
  registry_challenge_clear(&ch);
  return ret;
}

static struct curl_slist *auth_headers(const struct registry_client *c, struct curl_slist *h) {
  return c->authz ? CURL(curl_slist_append)(h, c->authz) : h;
}

int registry_get_manifest(struct registry_client *c, const char *reference, char **body, size_t *len, char **media_type,
                          char digest[SHA256_HEX_SIZE], hutch_error_t *err) {
  _cleanup_free_ char *url = xasprintf("%s/manifests/%s", c->base, reference);
  struct response r;
  for (int attempt = 0;; attempt++) {
    struct curl_slist *h = NULL;
    h = CURL(curl_slist_append)(h, "Accept: " OCI_MT_INDEX ", " OCI_MT_MANIFEST ", " DOCKER_MT_LIST
                                   ", " DOCKER_MT_MANIFEST);
    h = auth_headers(c, h);
    int rc = http_get(url, h, OCI_MAX_DOCUMENT, &r, err);
    CURL(curl_slist_free_all)(h);
    if (rc < 0)
      return hutch_error_wrap(err, "registry %s", c->domain);
    if (r.status == 401 && attempt == 0) {
      _cleanup_free_ char *challenge = r.www_authenticate ? xstrdup(r.www_authenticate) : NULL;
      response_clear(&r);
      if (authenticate(c, challenge, err) < 0)
        return -1;
      continue;
    }
    break;
  }
  if (r.status != 200) {
    long status = r.status;
    response_clear(&r);
    hutch_error_set(err,
                    status == 404                    ? ENOENT
                    : status == 401 || status == 403 ? EACCES
                                                     : EPROTO,
                    "registry %s: GET %s answered HTTP %ld", c->domain, url, status);
    if (status == 404)
      return hutch_error_hint(err, "check the name and the tag or digest (%s%s%s)", c->repo,
                              strncmp(reference, "sha256:", 7) == 0 ? "@" : ":", reference);
    if (status == 401 || status == 403)
      return hutch_error_hint(err, "the image may be private: log in (docker login / podman login) or give the "
                                   "credentials in $REGISTRY_AUTH_FILE");
    return -1;
  }
  uint8_t d[SHA256_DIGEST_SIZE];
  sha256_buffer(r.body ? r.body : "", r.len, d);
  sha256_hex(d, digest);
  *body = r.body ? steal_pointer(&r.body) : xstrdup("");
  *len = r.len;
  *media_type = r.content_type ? steal_pointer(&r.content_type) : NULL;
  response_clear(&r);
  return 0;
}

int registry_get_blob(struct registry_client *c, const char *digest, const char *dest, hutch_progress_fn progress,
                      void *progress_data, hutch_error_t *err) {
  _cleanup_free_ char *url = xasprintf("%s/blobs/%s", c->base, digest);
  const char *headers[] = {c->authz, NULL};
  struct download_request req = {
      .url = url,
      .dest = dest,
      .sha256 = digest,
      .headers = c->authz ? headers : NULL,
      .progress = progress,
      .progress_data = progress_data,
  };
  if (download_file(&req, err) < 0)
    return hutch_error_wrap(err, "registry %s: blob %.19s", c->domain, digest);
  return 0;
}
