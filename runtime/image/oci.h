/* SPDX-License-Identifier: Apache-2.0 */
/* OCI and Docker images in the rootfs store: `docker save` archives and OCI
 * image layouts (a directory or a tarball of one) imported from a file, and
 * images pulled from a registry (`hutch rootfs pull docker://...`).
 *
 * An image's layers are applied in order, each by the same confined child
 * as a rootfs tarball (unpack.c, with whiteouts), into one new store entry
 * keyed by the digest of the image manifest (`docker save`: of the image
 * config).  Every blob is checked against its sha256 digest before it is
 * used.  The config's Env, WorkingDir and User are kept in the entry's
 * meta.json as the image's defaults (hutch_image.env, workdir, user). */
#ifndef HUTCH_OCI_H
#define HUTCH_OCI_H

#include <stdio.h>

#include "hutch.h"
#include "registry.h"
#include "sha256.h"

struct hutch_store;
struct cJSON;

/* oci_import's answer for a file that is not an image archive or layout. */
#define OCI_NOT_AN_IMAGE 2

/* Import `file` (open as fd) when it is an image archive or layout: 0 when
 * a new entry was made, 1 when it was in the store already (hex filled
 * either way), OCI_NOT_AN_IMAGE, or -1.  Names are left to the caller. */
int oci_import(struct hutch_store *store, const char *file, int fd, const struct hutch_import_options *opts,
               char hex[SHA256_HEX_SIZE], hutch_error_t *err);

/* hutch_image_env and hutch_image_user_notice (hutch.h) are in oci.c. */

struct oci_pull_options {
  hutch_progress_fn progress; /* per blob: done/total bytes */
  void *progress_data;
  struct registry_options registry; /* credentials and TLS */
};

/* `hutch rootfs pull docker://NAME[:TAG|@DIGEST]` (ref with or without the
 * "docker://" prefix): resolve it for this host's platform, fetch and
 * verify what the store lacks, apply it, and name the image `name` (NULL:
 * leave it unnamed).  store NULL: the default store.  Fills out (may be
 * NULL); returns 1 when the image was in the store already, else 0. */
int rootfs_pull_oci(const char *store, const char *ref, const char *name, const struct oci_pull_options *opts,
                    struct hutch_image *out, hutch_error_t *err);

#endif
