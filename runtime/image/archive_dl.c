/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "archive_dl.h"

#include <dlfcn.h>
#include <errno.h>

#include "util.h"

struct archive_dl archive_dl;

int archive_dl_load(hutch_error_t *err) {
  static bool loaded;
  if (loaded)
    return 0;
  void *handle = dlopen(LIBARCHIVE_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    hutch_error_set(err, ELIBACC, "load %s: %s", LIBARCHIVE_SONAME, dlerror());
    return hutch_error_hint(err, "install libarchive (Debian and Ubuntu: apt-get install libarchive13)");
  }
#define HUTCH_ARCHIVE_RESOLVE(f)                                                                                       \
  if ((*(void **)&archive_dl.f = dlsym(handle, #f)) == NULL)                                                           \
    return hutch_error_set(err, ELIBBAD, "%s has no symbol %s", LIBARCHIVE_SONAME, #f);
  HUTCH_ARCHIVE_FUNCTIONS(HUTCH_ARCHIVE_RESOLVE)
#undef HUTCH_ARCHIVE_RESOLVE
  loaded = true;
  return 0;
}

void archive_dl_support_filters(struct archive *a) {
  ARCHIVE(archive_read_support_filter_gzip)(a);
  ARCHIVE(archive_read_support_filter_xz)(a);
  ARCHIVE(archive_read_support_filter_zstd)(a);
  ARCHIVE(archive_read_support_filter_bzip2)(a);
  ARCHIVE(archive_read_support_filter_lzma)(a);
  ARCHIVE(archive_read_support_filter_lz4)(a);
}
