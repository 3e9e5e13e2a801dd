/* SPDX-License-Identifier: Apache-2.0 */
/* OCI image and Docker v2 documents: indexes (manifest lists), manifests,
 * image configs, `docker save`'s manifest.json, and choosing the entry of an
 * index for this host's platform.  Pure: text in, structs out. */
#ifndef HUTCH_OCI_IMAGE_H
#define HUTCH_OCI_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hutch.h"
#include "sha256.h"

#define OCI_MT_INDEX "application/vnd.oci.image.index.v1+json"
#define OCI_MT_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define DOCKER_MT_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
#define DOCKER_MT_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
/* Small documents: a bound on what a hostile source can make us parse. */
#define OCI_MAX_DOCUMENT (4u << 20)

struct oci_descriptor {
  char *media_type;
  char *digest; /* "sha256:<64 hex>", checked */
  uint64_t size;
  char *os, *arch, *variant; /* platform, index entries only; NULL when absent */
  char *ref_name;            /* the image's name in a layout's index.json, else NULL */
};

struct oci_manifest {
  struct oci_descriptor config;
  struct oci_descriptor *layers;
  size_t n_layers;
};

struct oci_config {
  char **env; /* NULL-terminated, never NULL after a successful parse */
  char *workdir, *user, *os, *arch;
  char **diff_ids; /* NULL-terminated */
  size_t n_diff_ids;
};

struct docker_save {
  char *config;  /* member name of the config */
  char **layers; /* member names, bottom first, NULL-terminated */
  size_t n_layers;
};

enum oci_doc_kind { OCI_DOC_UNKNOWN, OCI_DOC_INDEX, OCI_DOC_MANIFEST };

/* From the Content-Type (may be NULL), else from the document's members. */
enum oci_doc_kind oci_doc_kind(const char *media_type, const char *json, size_t len);

/* "sha256:<64 lower-case hex>": copies the hex out.  Other algorithms are refused. */
bool oci_digest_hex(const char *digest, char hex[SHA256_HEX_SIZE]);

/* Refuses more than HUTCH_IMAGE_MAX_LAYERS layers (oci_parse_manifest and
 * docker_parse_save call it before reading one). */
int oci_check_layer_count(size_t n, hutch_error_t *err);
int oci_parse_index(const char *json, size_t len, struct oci_descriptor **out, size_t *n, hutch_error_t *err);
int oci_parse_manifest(const char *json, size_t len, struct oci_manifest *out, hutch_error_t *err);
int oci_parse_config(const char *json, size_t len, struct oci_config *out, hutch_error_t *err);
/* One image of a `docker save` manifest.json: the one whose RepoTags (or
 * config digest, "sha256:" and 12 or more hex digits) match `want`, or with
 * want NULL the only one; refused with the list of names otherwise. */
int docker_parse_save(const char *json, size_t len, const char *want, struct docker_save *out, hutch_error_t *err);
/* Whether an image named `name` in an archive is the one a user asked for
 * as `want`: "busybox", "busybox:latest", "docker.io/library/busybox:latest"
 * and "localhost/busybox" (podman's name for a local image) all match. */
bool oci_ref_matches(const char *name, const char *want);

/* The entries of a layout's index.json that are the image a user named
 * (`want`, see oci_ref_matches, or "sha256:" and 12 or more hex digits of
 * its manifest); the others are cleared and *n shrinks.  With want NULL,
 * refuses an index of several named images, listing the names. */
int oci_filter_by_name(struct oci_descriptor *d, size_t *n, const char *want, hutch_error_t *err);

/* This build's platform in OCI terms ("linux", "amd64", NULL or "v8", ...). */
void oci_host_platform(const char **os, const char **arch, const char **variant);
/* The entry of an index for a platform: exact variant first, then one
 * without a variant (arm64 means v8 when none is given).  -1 when none fits. */
ssize_t oci_select_platform(const struct oci_descriptor *d, size_t n, const char *os, const char *arch,
                            const char *variant);

/* Layers hutch can apply: tar, optionally gzip or zstd compressed. */
bool oci_layer_media_type_ok(const char *media_type);

/* A name an image archive holds: oci-layout, index.json, manifest.json,
 * repositories, blobs/..., <hex>.json, <hex>/... (and "" for its root). */
bool oci_archive_member_name(const char *clean);

/* A name that makes a tarball an image archive, at its top: manifest.json,
 * index.json or oci-layout.  Such a tarball is never unpacked as a tree. */
bool oci_archive_marker(const char *clean);

/* The image's User as hutch applies it: true for "", "root", "0", "0:0", "root:root"... */
bool oci_user_is_root(const char *user);

void oci_descriptor_clear(struct oci_descriptor *d);
void oci_descriptors_free(struct oci_descriptor *d, size_t n);
void oci_manifest_clear(struct oci_manifest *m);
void oci_config_clear(struct oci_config *c);
void docker_save_clear(struct docker_save *d);

#endif
