/* SPDX-License-Identifier: Apache-2.0 */
/* Requests to a registry of the OCI distribution API (registry.h): the
 * manifest GETs with their Accept list, the Bearer token dance on a 401,
 * and blob downloads (download.c) verified by digest.  libcurl is
 * dlopen()ed (curl_dl.h): the custom headers and the WWW-Authenticate of a
 * 401 need more than download_file() offers. */
#include "config.h"

#include "registry.h"

#include <cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <unistd.h>
#include <string.h>
#include <strings.h>

#include "curl_dl.h"
#include "download.h"
#include "util.h"

struct registry_client {
  char *origin; /* "https://host" (or http:// for loopback or --tls-verify=false) */
  char *base;   /* origin + "/v2/" + repo */
  char *host;
  char *domain; /* for credentials and messages */
  char *repo;
  char *basic;        /* base64 user:password, or NULL; never logged */
  char *authz;        /* the "Authorization: ..." header in use, or NULL; never logged */
  bool scheme_known;  /* a request has reached the registry with this scheme */
  bool http_fallback; /* plain http may be tried when TLS is not spoken */
  bool insecure;
  char *ca_pem; /* the CAs of --cert-dir, or NULL: the system's */
  size_t ca_len;
};

void registry_response_clear(struct registry_response *r) {
  free(r->body);
  free(r->content_type);
  free(r->www_authenticate);
  free(r->location);
  free(r->content_digest);
  memset(r, 0, sizeof(*r));
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata) {
  struct registry_response *r = userdata;
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

/* Headers of the last response only (a redirect starts a new set).  A
 * header longer than this is not one a registry sends. */
#define MAX_HEADER_VALUE 8192
static size_t on_header(char *data, size_t size, size_t nmemb, void *userdata) {
  struct registry_response *r = userdata;
  size_t n = size * nmemb;
  if (n >= 5 && strncmp(data, "HTTP/", 5) == 0) {
    free(r->content_type);
    free(r->www_authenticate);
    free(r->location);
    free(r->content_digest);
    r->content_type = r->www_authenticate = r->location = r->content_digest = NULL;
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
  if (vlen > MAX_HEADER_VALUE)
    return n;
  static const struct {
    const char *name;
    size_t off;
  } keep[] = {
      {"Content-Type", offsetof(struct registry_response, content_type)},
      {"WWW-Authenticate", offsetof(struct registry_response, www_authenticate)},
      {"Location", offsetof(struct registry_response, location)},
      {"Docker-Content-Digest", offsetof(struct registry_response, content_digest)},
  };
  for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
    if (klen != strlen(keep[i].name) || strncasecmp(data, keep[i].name, klen) != 0)
      continue;
    char **slot = (char **)((char *)r + keep[i].off);
    if (*slot == NULL)
      *slot = xstrndup(v, vlen);
  }
  return n;
}

struct reader {
  const char *data;
  int fd;
  uint64_t size, off;
};

static size_t on_read(char *buf, size_t size, size_t nmemb, void *userdata) {
  struct reader *rd = userdata;
  size_t want = size * nmemb;
  if (rd->off >= rd->size)
    return 0;
  if (want > rd->size - rd->off)
    want = (size_t)(rd->size - rd->off);
  if (rd->data) {
    memcpy(buf, rd->data + rd->off, want);
    rd->off += want;
    return want;
  }
  ssize_t n;
  do
    n = pread(rd->fd, buf, want, (off_t)rd->off);
  while (n < 0 && errno == EINTR);
  if (n <= 0)
    return CURL_READFUNC_ABORT;
  rd->off += (uint64_t)n;
  return (size_t)n;
}

/* The TLS and redirect rules of this registry, on every handle (blob
 * downloads too).  A redirect may not leave https for http; curl itself
 * drops the Authorization header when a redirect changes the host, port
 * or scheme, so credentials never reach another host. */
static void client_setup(void *handle, void *data) {
  const struct registry_client *c = data;
  CURL *curl = handle;
  if (c->insecure) {
    CURL(curl_easy_setopt)(curl, CURLOPT_SSL_VERIFYPEER, 0L);
    CURL(curl_easy_setopt)(curl, CURLOPT_SSL_VERIFYHOST, 0L);
  } else if (c->ca_pem) {
    struct curl_blob blob = {.data = c->ca_pem, .len = c->ca_len, .flags = CURL_BLOB_COPY};
    CURL(curl_easy_setopt)(curl, CURLOPT_CAINFO_BLOB, &blob);
  }
#if LIBCURL_VERSION_NUM >= 0x075500
  if (strncmp(c->origin, "https:", 6) == 0)
    CURL(curl_easy_setopt)(curl, CURLOPT_REDIR_PROTOCOLS_STR, "https");
#endif
}

static int on_send_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                            curl_off_t ulnow) {
  const struct registry_http *q = userdata;
  (void)dltotal, (void)dlnow;
  q->progress((uint64_t)ulnow, ultotal > 0 ? (uint64_t)ultotal : 0, q->progress_data);
  return 0;
}

static int http_do(const struct registry_client *c, const char *url, const struct registry_http *q,
                   struct curl_slist *headers, struct registry_response *r, CURLcode *rc_out, hutch_error_t *err) {
  memset(r, 0, sizeof(*r));
  r->max = q->max;
  CURL *curl = CURL(curl_easy_init)();
  if (curl == NULL)
    return hutch_error_set(err, ENOMEM, "%s %s: cannot create a curl handle", q->method, url);
  char errbuf[CURL_ERROR_SIZE] = "";
  curl_dl_http_defaults(curl, url, errbuf);
  client_setup(curl, (void *)c);
  CURL(curl_easy_setopt)(curl, CURLOPT_WRITEFUNCTION, on_body);
  CURL(curl_easy_setopt)(curl, CURLOPT_WRITEDATA, r);
  CURL(curl_easy_setopt)(curl, CURLOPT_HEADERFUNCTION, on_header);
  CURL(curl_easy_setopt)(curl, CURLOPT_HEADERDATA, r);
  struct reader rd = {.data = q->data, .fd = q->fd, .size = q->data ? q->data_len : q->fd_size};
  bool get = strcmp(q->method, "GET") == 0, head = strcmp(q->method, "HEAD") == 0;
  /* Only reads follow a redirect (blob downloads are sent to storage);
   * an upload's answer is read by the caller. */
  if (!get && !head)
    CURL(curl_easy_setopt)(curl, CURLOPT_FOLLOWLOCATION, 0L);
  if (head)
    CURL(curl_easy_setopt)(curl, CURLOPT_NOBODY, 1L);
  if (strcmp(q->method, "POST") == 0) {
    CURL(curl_easy_setopt)(curl, CURLOPT_POST, 1L);
    CURL(curl_easy_setopt)(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rd.size);
    CURL(curl_easy_setopt)(curl, CURLOPT_READFUNCTION, on_read);
    CURL(curl_easy_setopt)(curl, CURLOPT_READDATA, &rd);
  } else if (strcmp(q->method, "PUT") == 0) {
    CURL(curl_easy_setopt)(curl, CURLOPT_UPLOAD, 1L);
    CURL(curl_easy_setopt)(curl, CURLOPT_INFILESIZE_LARGE, (curl_off_t)rd.size);
    CURL(curl_easy_setopt)(curl, CURLOPT_READFUNCTION, on_read);
    CURL(curl_easy_setopt)(curl, CURLOPT_READDATA, &rd);
  }
  if (headers)
    CURL(curl_easy_setopt)(curl, CURLOPT_HTTPHEADER, headers);
  if (q->progress) {
    CURL(curl_easy_setopt)(curl, CURLOPT_XFERINFOFUNCTION, on_send_progress);
    CURL(curl_easy_setopt)(curl, CURLOPT_XFERINFODATA, (void *)q);
    CURL(curl_easy_setopt)(curl, CURLOPT_NOPROGRESS, 0L);
  }
  CURLcode rc = CURL(curl_easy_perform)(curl);
  CURL(curl_easy_getinfo)(curl, CURLINFO_RESPONSE_CODE, &r->status);
  CURL(curl_easy_cleanup)(curl);
  *rc_out = rc;
  if (r->too_big) {
    registry_response_clear(r);
    return hutch_error_set(err, EFBIG, "%s %s: the answer is larger than %zu bytes", q->method, url, q->max);
  }
  if (rc != CURLE_OK) {
    registry_response_clear(r);
    hutch_error_set(err, curl_dl_errno(rc), "%s %s: %s", q->method, url,
                    errbuf[0] ? errbuf : CURL(curl_easy_strerror)(rc));
    if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE)
      return hutch_error_hint(err, "the registry's certificate is not trusted: give its CA with --cert-dir DIR "
                                   "(DIR/*.crt), or name --tls-verify=false to skip the check");
    return hutch_error_hint(err, "check the network and the registry's address; a proxy is taken from "
                                 "https_proxy/http_proxy (and no_proxy)");
  }
  return 0;
}

static int http_get(const struct registry_client *c, const char *url, struct curl_slist *headers, size_t max,
                    struct registry_response *r, hutch_error_t *err) {
  struct registry_http q = {.method = "GET", .url = url, .fd = -1, .max = max};
  CURLcode rc;
  return http_do(c, url, &q, headers, r, &rc, err);
}

/* The credentials of `domain`, from the first file that has them, in the
 * order podman reads them: --authfile alone when given, else
 * $REGISTRY_AUTH_FILE, $XDG_RUNTIME_DIR/containers/auth.json,
 * ~/.config/containers/auth.json, then Docker's config.json. */
static char *find_credentials(const char *explicit_path, const char *domain, const char *repo, char **path_out) {
  char *paths[6] = {0};
  size_t n = 0;
  const char *v;
  if (explicit_path) {
    paths[n++] = xstrdup(explicit_path);
  } else {
    if ((v = getenv("REGISTRY_AUTH_FILE")) && v[0])
      paths[n++] = xstrdup(v);
    if ((v = getenv("XDG_RUNTIME_DIR")) && v[0])
      paths[n++] = xasprintf("%s/containers/auth.json", v);
    if ((v = getenv("HOME")) && v[0])
      paths[n++] = xasprintf("%s/.config/containers/auth.json", v);
    if ((v = getenv("DOCKER_CONFIG")) && v[0])
      paths[n++] = xasprintf("%s/config.json", v);
    else if ((v = getenv("HOME")) && v[0])
      paths[n++] = xasprintf("%s/.docker/config.json", v);
  }
  char *found = NULL;
  for (size_t i = 0; i < n; i++) {
    if (found == NULL) {
      _cleanup_free_ char *text = read_file_at(AT_FDCWD, paths[i], 1 << 20, NULL);
      found = registry_auth_lookup_repo(text, domain, repo);
      if (found) {
        *path_out = paths[i];
        continue;
      }
    }
    free(paths[i]);
  }
  return found;
}

/* podman's --cert-dir: every *.crt in it is a CA to trust (bounded). */
static int read_cert_dir(struct registry_client *c, const char *dir, hutch_error_t *err) {
  DIR *d = opendir(dir);
  if (d == NULL)
    return hutch_error_sys(err, "registry %s: open the certificate directory %s", c->domain, dir);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    if (len < 5 || strcmp(e->d_name + len - 4, ".crt") != 0)
      continue;
    _cleanup_free_ char *path = xasprintf("%s/%s", dir, e->d_name);
    _cleanup_free_ char *pem = read_file_at(AT_FDCWD, path, 1 << 20, NULL);
    if (pem == NULL || c->ca_len + strlen(pem) > (4u << 20))
      continue;
    c->ca_pem = xrealloc(c->ca_pem, c->ca_len + strlen(pem) + 2);
    memcpy(c->ca_pem + c->ca_len, pem, strlen(pem));
    c->ca_len += strlen(pem);
    c->ca_pem[c->ca_len++] = '\n';
    c->ca_pem[c->ca_len] = '\0';
  }
  closedir(d);
  if (c->ca_pem == NULL) {
    hutch_error_set(err, ENOENT, "registry %s: no readable *.crt in %s", c->domain, dir);
    return hutch_error_hint(err, "put the registry's CA certificate there as ca.crt (PEM)");
  }
  return 0;
}

static void set_scheme(struct registry_client *c, const char *scheme) {
  free(c->origin);
  free(c->base);
  c->origin = xasprintf("%s://%s", scheme, c->host);
  c->base = xasprintf("%s/v2/%s", c->origin, c->repo);
}

int registry_client_new(const struct registry_ref *ref, const struct registry_options *opts,
                        struct registry_client **out, hutch_error_t *err) {
  static const struct registry_options none;
  if (opts == NULL)
    opts = &none;
  if (curl_dl_load(err) < 0)
    return -1;
  struct registry_client *c = xcalloc(1, sizeof(*c));
  c->host = xstrdup(ref->host);
  c->domain = xstrdup(ref->domain);
  c->repo = xstrdup(ref->repo);
  c->insecure = opts->tls_insecure;
  /* https first, as skopeo and podman do; a loopback registry (as Docker
   * allows for localhost) or --tls-verify=false may fall back to plain
   * http when the server does not speak TLS at all.  A certificate that
   * does not verify is never a reason to fall back. */
  c->http_fallback = ref->plain_http || opts->tls_insecure;
  set_scheme(c, "https");
  if (opts->cert_dir && read_cert_dir(c, opts->cert_dir, err) < 0) {
    registry_client_free(c);
    return -1;
  }
  _cleanup_free_ char *path = NULL;
  c->basic = find_credentials(opts->auth_file, ref->domain, ref->repo, &path);
  if (c->basic)
    hutch_debug("registry %s: credentials from %s", ref->domain, path);
  *out = c;
  return 0;
}

void registry_client_free(struct registry_client *c) {
  if (c == NULL)
    return;
  free(c->origin);
  free(c->base);
  free(c->host);
  free(c->domain);
  free(c->repo);
  if (c->basic)
    explicit_bzero(c->basic, strlen(c->basic));
  free(c->basic);
  if (c->authz)
    explicit_bzero(c->authz, strlen(c->authz));
  free(c->authz);
  free(c->ca_pem);
  free(c);
}

const char *registry_origin(const struct registry_client *c) {
  return c->origin;
}
const char *registry_base(const struct registry_client *c) {
  return c->base;
}
const char *registry_domain(const struct registry_client *c) {
  return c->domain;
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
  struct curl_dl_url realm;
  if (curl_dl_url_parse(ch.realm, 0, &realm, NULL) < 0 || realm.host == NULL || realm.scheme == NULL ||
      (strcmp(realm.scheme, "https") != 0 && strcmp(realm.scheme, "http") != 0)) {
    curl_dl_url_clear(&realm);
    hutch_error_set(err, EACCES, "registry %s: the token realm \"%s\" is not an http(s) URL", c->domain, ch.realm);
    goto out;
  }
  /* A token service on plain http would see the credentials in clear:
   * only a loopback one may (the same rule as for registries). */
  bool clear_text = strcmp(realm.scheme, "http") == 0 && !registry_host_is_loopback(realm.host);
  curl_dl_url_clear(&realm);
  if (clear_text) {
    hutch_error_set(err, EACCES, "registry %s: the token realm %s is plain http on a host that is not loopback",
                    c->domain, ch.realm);
    goto out;
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
  struct registry_response r;
  int rc = http_get(c, url, headers, 1 << 20, &r, err);
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
    registry_response_clear(&r);
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
  registry_response_clear(&r);
out:
  registry_challenge_clear(&ch);
  return ret;
}

int registry_request(struct registry_client *c, const struct registry_http *q, struct registry_response *r,
                     hutch_error_t *err) {
  /* The URL is rebuilt on the origin when the scheme changes: callers
   * pass URLs made from registry_base(). */
  _cleanup_free_ char *url = xstrdup(q->url);
  for (int attempt = 0;; attempt++) {
    struct curl_slist *h = NULL;
    _cleanup_free_ char *ct = q->content_type ? xasprintf("Content-Type: %s", q->content_type) : NULL;
    _cleanup_free_ char *accept = q->accept ? xasprintf("Accept: %s", q->accept) : NULL;
    if (ct)
      h = CURL(curl_slist_append)(h, ct);
    if (accept)
      h = CURL(curl_slist_append)(h, accept);
    /* No "Expect: 100-continue" wait before an upload's body. */
    h = CURL(curl_slist_append)(h, "Expect:");
    if (c->authz)
      h = CURL(curl_slist_append)(h, c->authz);
    CURLcode rc = CURLE_OK;
    _cleanup_error_ hutch_error_t e = NULL;
    int ret = http_do(c, url, q, h, r, &rc, &e);
    CURL(curl_slist_free_all)(h);
    if (ret < 0 && !c->scheme_known && c->http_fallback && strncmp(url, "https://", 8) == 0 &&
        (rc == CURLE_SSL_CONNECT_ERROR || rc == CURLE_RECV_ERROR || rc == CURLE_GOT_NOTHING)) {
      /* The server does not speak TLS: plain http, where that is allowed. */
      hutch_debug("registry %s: no TLS (%s); plain http", c->domain, e->msg);
      _cleanup_free_ char *rest = xstrdup(url + strlen(c->origin));
      set_scheme(c, "http");
      free(url);
      url = xasprintf("%s%s", c->origin, rest);
      c->scheme_known = true;
      attempt--;
      continue;
    }
    if (ret < 0) {
      hutch_error_move(err, &e);
      return hutch_error_wrap(err, "registry %s", c->domain);
    }
    c->scheme_known = true;
    if (r->status == 401 && attempt == 0) {
      _cleanup_free_ char *challenge = r->www_authenticate ? xstrdup(r->www_authenticate) : NULL;
      registry_response_clear(r);
      if (authenticate(c, challenge, err) < 0)
        return -1;
      continue;
    }
    return 0;
  }
}

int registry_get_manifest(struct registry_client *c, const char *reference, char **body, size_t *len, char **media_type,
                          char digest[SHA256_HEX_SIZE], hutch_error_t *err) {
  _cleanup_free_ char *url = xasprintf("%s/manifests/%s", c->base, reference);
  struct registry_response r;
  struct registry_http q = {
      .method = "GET",
      .url = url,
      .accept = OCI_MT_INDEX ", " OCI_MT_MANIFEST ", " DOCKER_MT_LIST ", " DOCKER_MT_MANIFEST,
      .fd = -1,
      .max = OCI_MAX_DOCUMENT,
  };
  if (registry_request(c, &q, &r, err) < 0)
    return -1;
  if (r.status != 200) {
    long status = r.status;
    registry_response_clear(&r);
    hutch_error_set(err,
                    status == 404                    ? ENOENT
                    : status == 401 || status == 403 ? EACCES
                                                     : EPROTO,
                    "registry %s: GET %s/manifests/%s answered HTTP %ld", c->domain, c->repo, reference, status);
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
  registry_response_clear(&r);
  return 0;
}

int registry_get_blob(struct registry_client *c, const char *digest, uint64_t max_size, const char *dest,
                      hutch_progress_fn progress, void *progress_data, hutch_error_t *err) {
  _cleanup_free_ char *url = xasprintf("%s/blobs/%s", c->base, digest);
  const char *headers[] = {c->authz, NULL};
  struct download_request req = {
      .url = url,
      .dest = dest,
      .sha256 = digest,
      .headers = c->authz ? headers : NULL,
      .progress = progress,
      .progress_data = progress_data,
      .max_size = max_size,
      .setup = client_setup,
      .setup_data = c,
  };
  if (download_file(&req, err) < 0)
    return hutch_error_wrap(err, "registry %s: blob %.19s", c->domain, digest);
  return 0;
}
