/* SPDX-License-Identifier: Apache-2.0 */
/* Image manifests (hutch-manifest(5)): where an image's root filesystem
 * tarball is downloaded from, per architecture, and the sha256 it must
 * have.  One small line-based file per image in the rootfs data directory:
 *
 *   name ubuntu:24.04
 *   arch amd64 https://.../ubuntu-base-24.04.1-base-amd64.tar.gz 5b0f...
 *   fallback debian bookworm
 *
 * The parser is pure (no I/O); manifest_load() reads a file by image name. */
#ifndef HUTCH_MANIFEST_H
#define HUTCH_MANIFEST_H

#include <stddef.h>

#include "hutch.h"
#include "sha256.h"

struct manifest_source {
  char *arch;                   /* Debian architecture name: amd64, arm64, ... */
  char *url;                    /* http:// or https:// */
  char sha256[SHA256_HEX_SIZE]; /* lower-case hex */
};

struct manifest {
  char *name;            /* the image reference it describes, e.g. "ubuntu:24.04" */
  char *description;     /* free text, may be NULL */
  char *fallback_distro; /* "debian" when the base can be bootstrapped instead, else NULL */
  char *fallback_suite;  /* e.g. "bookworm" */
  struct manifest_source *sources;
  size_t n_sources;
};

/* Parse a manifest; `origin` (a file name) prefixes error messages as
 * "origin:LINE: ...". */
int manifest_parse(const char *text, const char *origin, struct manifest *out, hutch_error_t *err);
void manifest_clear(struct manifest *m);

/* The source for `arch`, or NULL. */
const struct manifest_source *manifest_find_arch(const struct manifest *m, const char *arch);

/* The Debian architecture name of this machine (amd64, arm64, ...), from uname. */
const char *manifest_host_arch(void);

/* The directory manifests are looked up in: $HUTCH_ROOTFS_DIR, else the
 * installed data directory. */
const char *manifest_dir(void);

/* "ubuntu:24.04" -> "ubuntu-24.04.manifest"; NULL when the reference
 * cannot name a manifest (empty, '/', "..", characters outside
 * [A-Za-z0-9._:-]). */
char *manifest_file_name(const char *ref);

/* Load the manifest for `ref` from manifest_dir(): errnum ENOENT when there
 * is none (the hint lists what exists). */
int manifest_load(const char *ref, struct manifest *out, hutch_error_t *err);

#endif
