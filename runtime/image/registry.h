/* SPDX-License-Identifier: Apache-2.0 */
/* Registries of the OCI distribution API: references and authentication
 * challenges (registry_ref.c, pure), credentials (registry_auth.c) and the
 * requests (registry.c), these two through the dlopen()ed libcurl. */
#ifndef HUTCH_REGISTRY_H
#define HUTCH_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>

#include "hutch.h"
#include "oci_image.h"

/* Docker's naming rules, as data: a name without a registry host is on
 * Docker Hub, and a one-component name there is an official image. */
struct registry_defaults {
  const char *hub_domain;          /* what users write: "docker.io" */
  const char *const *hub_aliases;  /* other spellings of it, NULL-terminated */
  const char *hub_api_host;        /* where its API answers */
  const char *hub_official_prefix; /* "library" */
  const char *hub_auth_key;        /* its key in ~/.docker/config.json "auths" */
  const char *default_tag;         /* "latest" */
};
extern const struct registry_defaults registry_defaults;

struct registry_ref {
  char *domain;    /* as written or defaulted: "docker.io", "127.0.0.1:5000" */
  char *host;      /* where the API is: hub_api_host for Docker Hub, else domain */
  char *repo;      /* "library/ubuntu" */
  char *tag;       /* NULL when pulled by digest only */
  char *digest;    /* "sha256:<hex>" or NULL */
  bool plain_http; /* a loopback registry: http://, as Docker allows for localhost */
};

/* "[docker://][DOMAIN/]PATH[:TAG][@DIGEST]". */
int registry_ref_parse(const char *ref, struct registry_ref *out, hutch_error_t *err);
void registry_ref_clear(struct registry_ref *ref);
/* Is "host[:port]" (or "[v6]:port") localhost or a loopback address
 * (127.0.0.0/8, ::1)?  Only there may plain http carry an image or
 * credentials. */
bool registry_host_is_loopback(const char *domain);
/* Is it Docker Hub, under any of its names? */
bool registry_domain_is_hub(const char *domain);
/* "docker.io/library/ubuntu:latest" or "...@sha256:..." (new string). */
char *registry_ref_format(const struct registry_ref *ref);

/* WWW-Authenticate: `Bearer realm="...",service="...",scope="..."`. */
struct registry_challenge {
  char *scheme; /* "Bearer", "Basic" */
  char *realm, *service, *scope;
};
int registry_challenge_parse(const char *header, struct registry_challenge *out);
void registry_challenge_clear(struct registry_challenge *c);

/* The base64 "user:password" of `domain` in a Docker/podman auth file's
 * "auths" (keys may carry a scheme and a path); NULL when none, or when
 * libcurl, which reads the keys, cannot be loaded. */
char *registry_auth_lookup(const char *auth_json, const char *domain);
/* The same for a repository: a key "host/ns" or "host/ns/repo" (podman's)
 * applies to the repositories under it, and the longest one wins. */
char *registry_auth_lookup_repo(const char *auth_json, const char *domain, const char *repo);

/* ---- requests (registry.c) ---- */

struct registry_options {
  const char *auth_file; /* NULL: $REGISTRY_AUTH_FILE, $DOCKER_CONFIG/config.json, ~/.docker/config.json */
  bool tls_insecure;     /* --tls-verify=false: no certificate check, plain http allowed */
  const char *cert_dir;  /* podman's --cert-dir: its *.crt are the CAs trusted */
};

struct registry_client;
int registry_client_new(const struct registry_ref *ref, const struct registry_options *opts,
                        struct registry_client **out, hutch_error_t *err);
void registry_client_free(struct registry_client *c);
/* GET /v2/<repo>/manifests/<reference>: the document, its media type, and
 * the digest of its bytes (checked against a digest reference). */
int registry_get_manifest(struct registry_client *c, const char *reference, char **body, size_t *len, char **media_type,
                          char digest[SHA256_HEX_SIZE], hutch_error_t *err);
/* GET /v2/<repo>/blobs/<digest> into dest, verified against the digest and
 * refused past max_size bytes (0: no bound). */
int registry_get_blob(struct registry_client *c, const char *digest, uint64_t max_size, const char *dest,
                      hutch_progress_fn progress, void *progress_data, hutch_error_t *err);

/* One request to the registry, with its credentials (a 401 is answered
 * once, registry.c); what registry_push.c builds on. */
struct registry_http {
  const char *method; /* "GET", "HEAD", "POST", "PUT" */
  const char *url;    /* absolute, on the registry's own origin */
  const char *content_type;
  const char *accept;
  const char *data; /* the body from memory (data_len bytes), or */
  size_t data_len;
  int fd; /* from a file (when data is NULL and fd >= 0) */
  uint64_t fd_size;
  size_t max;                 /* the answer's body is refused past this */
  hutch_progress_fn progress; /* bytes of the body sent; may be NULL */
  void *progress_data;
};
struct registry_response {
  long status;
  char *body;
  size_t len, max;
  bool too_big;
  char *content_type, *www_authenticate, *location, *content_digest;
};
void registry_response_clear(struct registry_response *r);
int registry_request(struct registry_client *c, const struct registry_http *q, struct registry_response *r,
                     hutch_error_t *err);
/* "https://host" of the registry, once a request settled the scheme. */
const char *registry_origin(const struct registry_client *c);
const char *registry_base(const struct registry_client *c); /* origin + "/v2/" + repo */
const char *registry_domain(const struct registry_client *c);

/* ---- pushing (registry_push.c) ---- */

/* Upload a blob unless the registry has it: HEAD, then POST and one PUT
 * with the bytes (from data, or fd when data is NULL).  *sent: uploaded. */
int registry_put_blob(struct registry_client *c, const char *digest, const char *data, int fd, uint64_t size,
                      hutch_progress_fn progress, void *progress_data, bool *sent, hutch_error_t *err);
/* PUT /v2/<repo>/manifests/<tag>; checks the digest the registry names. */
int registry_put_manifest(struct registry_client *c, const char *tag, const char *media_type, const char *body,
                          const char digest[SHA256_HEX_SIZE], hutch_error_t *err);

#endif
