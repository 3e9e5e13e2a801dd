/* SPDX-License-Identifier: Apache-2.0 */
/* Uploads to a registry of the OCI distribution API (registry.h): a blob
 * is checked for with HEAD and sent with a POST and one PUT (the spec's
 * "monolithic" upload after a session is opened), then the manifest is
 * PUT under its tag.  The registry's answers are bounded and its upload
 * Location must stay on its own origin: the credentials go with it. */
#include "config.h"

#include "registry.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "util.h"

/* Answers to uploads are short JSON errors at most. */
#define MAX_ANSWER (64 * 1024)

static int http_error(struct registry_client *c, const char *what, const struct registry_response *r,
                      hutch_error_t *err) {
  hutch_error_set(err,
                  r->status == 401 || r->status == 403 ? EACCES
                  : r->status == 404                   ? ENOENT
                                                       : EPROTO,
                  "registry %s: %s answered HTTP %ld", registry_domain(c), what, r->status);
  if (r->status == 401 || r->status == 403)
    return hutch_error_hint(err, "pushing needs credentials with write access: log in (docker login / podman "
                                 "login) or give them in $REGISTRY_AUTH_FILE or --authfile");
  return -1;
}

/* The upload URL of a Location header: a path on the registry, or an
 * absolute URL on the same origin (scheme, host and port). */
static char *upload_url(struct registry_client *c, const char *location, hutch_error_t *err) {
  const char *origin = registry_origin(c);
  if (location == NULL || location[0] == '\0') {
    hutch_error_set(err, EPROTO, "registry %s: an upload was opened without a Location", registry_domain(c));
    return NULL;
  }
  if (location[0] == '/' && location[1] != '/')
    return xasprintf("%s%s", origin, location);
  size_t olen = strlen(origin);
  if (strncmp(location, origin, olen) == 0 && (location[olen] == '/' || location[olen] == '?'))
    return xstrdup(location);
  hutch_error_set(err, EPROTO, "registry %s: the upload Location %.200s is not on %s", registry_domain(c), location,
                  origin);
  hutch_error_hint(err, "hutch sends its credentials to the registry's own address only");
  return NULL;
}

static int blob_exists(struct registry_client *c, const char *digest, bool *exists, hutch_error_t *err) {
  _cleanup_free_ char *url = xasprintf("%s/blobs/%s", registry_base(c), digest);
  struct registry_http q = {.method = "HEAD", .url = url, .fd = -1, .max = MAX_ANSWER};
  struct registry_response r;
  if (registry_request(c, &q, &r, err) < 0)
    return -1;
  long status = r.status;
  registry_response_clear(&r);
  *exists = status == 200;
  if (status == 200 || status == 404)
    return 0;
  /* Some registries refuse HEAD to anonymous pushers: upload anyway. */
  *exists = false;
  return 0;
}

int registry_put_blob(struct registry_client *c, const char *digest, const char *data, int fd, uint64_t size,
                      hutch_progress_fn progress, void *progress_data, bool *sent, hutch_error_t *err) {
  *sent = false;
  bool exists;
  if (blob_exists(c, digest, &exists, err) < 0)
    return -1;
  if (exists) {
    hutch_debug("registry %s: blob %.19s is there already", registry_domain(c), digest);
    return 0;
  }
  _cleanup_free_ char *url = xasprintf("%s/blobs/uploads/", registry_base(c));
  struct registry_http q = {.method = "POST", .url = url, .data = "", .data_len = 0, .fd = -1, .max = MAX_ANSWER};
  struct registry_response r;
  if (registry_request(c, &q, &r, err) < 0)
    return -1;
  if (r.status != 202) {
    http_error(c, "POST blobs/uploads/", &r, err);
    registry_response_clear(&r);
    return -1;
  }
  _cleanup_free_ char *loc = upload_url(c, r.location, err);
  registry_response_clear(&r);
  if (loc == NULL)
    return -1;
  _cleanup_free_ char *put = xasprintf("%s%cdigest=%s", loc, strchr(loc, '?') ? '&' : '?', digest);
  struct registry_http pq = {
      .method = "PUT",
      .url = put,
      .content_type = "application/octet-stream",
      .data = data,
      .data_len = data ? size : 0,
      .fd = fd,
      .fd_size = size,
      .max = MAX_ANSWER,
      .progress = progress,
      .progress_data = progress_data,
  };
  if (registry_request(c, &pq, &r, err) < 0)
    return -1;
  if (r.status != 201) {
    _cleanup_free_ char *what = xasprintf("PUT blob %.19s (%" PRIu64 " bytes)", digest, size);
    http_error(c, what, &r, err);
    registry_response_clear(&r);
    return -1;
  }
  if (r.content_digest && strcmp(r.content_digest, digest) != 0) {
    hutch_error_set(err, EBADMSG, "registry %s: blob %.19s stored as %.80s", registry_domain(c), digest,
                    r.content_digest);
    registry_response_clear(&r);
    return -1;
  }
  registry_response_clear(&r);
  *sent = true;
  return 0;
}

int registry_put_manifest(struct registry_client *c, const char *tag, const char *media_type, const char *body,
                          const char digest[SHA256_HEX_SIZE], hutch_error_t *err) {
  _cleanup_free_ char *url = xasprintf("%s/manifests/%s", registry_base(c), tag);
  struct registry_http q = {
      .method = "PUT",
      .url = url,
      .content_type = media_type,
      .data = body,
      .data_len = strlen(body),
      .fd = -1,
      .max = MAX_ANSWER,
  };
  struct registry_response r;
  if (registry_request(c, &q, &r, err) < 0)
    return -1;
  if (r.status != 201) {
    _cleanup_free_ char *what = xasprintf("PUT manifests/%s", tag);
    http_error(c, what, &r, err);
    registry_response_clear(&r);
    return -1;
  }
  _cleanup_free_ char *want = xasprintf("sha256:%s", digest);
  if (r.content_digest && strcmp(r.content_digest, want) != 0) {
    hutch_error_set(err, EBADMSG, "registry %s: the manifest was stored as %.80s, not %s", registry_domain(c),
                    r.content_digest, want);
    registry_response_clear(&r);
    return -1;
  }
  registry_response_clear(&r);
  return 0;
}
