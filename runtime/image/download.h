/* SPDX-License-Identifier: Apache-2.0 */
/* Downloading one file over HTTP(S) into place, resumably and verified.
 *
 * The file is written to DEST.part and renamed to DEST only once it is
 * complete (and its sha256 matches, when one is expected): DEST is never
 * half a file.  A .part left by an interrupted download is resumed with a
 * Range request when the server honours it, else started over.  libcurl is
 * dlopen()ed (curl_dl.h) on the first download.  The host's proxy variables
 * (http_proxy, https_proxy, no_proxy, ...) apply, as libcurl reads them. */
#ifndef HUTCH_DOWNLOAD_H
#define HUTCH_DOWNLOAD_H

#include <stdbool.h>

#include "hutch.h"
#include "sha256.h"

struct download_request {
  const char *url;
  const char *dest;           /* final path; the download goes to DEST.part */
  const char *sha256;         /* expected digest, 64 lower-case hex (a "sha256:" prefix is accepted); NULL: none */
  const char *const *headers; /* extra "Name: value" request headers, NULL-terminated; may be NULL */
  hutch_progress_fn progress; /* done/total bytes of the whole file; total 0 when unknown */
  void *progress_data;
  char *sha256_out;  /* when not NULL: SHA256_HEX_SIZE bytes receiving the file's digest */
  uint64_t max_size; /* refuse (EFBIG) a file larger than this; 0: no bound */
  /* Called on each curl handle after the defaults (TLS and redirect rules
   * of a registry); may be NULL. */
  void (*setup)(void *curl, void *setup_data);
  void *setup_data;
};

/* Errors: errnum is ENOENT for HTTP 404/410, EACCES for 401/403, EPROTO for
 * other HTTP errors, EBADMSG for a digest mismatch (the download is then
 * deleted), and a network errno (download_network_error()) when no server
 * could be reached. */
int download_file(const struct download_request *req, hutch_error_t *err);

/* The error says that the network (a DNS lookup, a connection, a proxy, a
 * TLS handshake, a timeout) failed, rather than the server answering no. */
bool download_network_error(const hutch_error_t err);

#endif
