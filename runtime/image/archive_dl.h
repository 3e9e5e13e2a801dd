/* SPDX-License-Identifier: Apache-2.0 */
/* libarchive, loaded on first use.
 *
 * Only an image import needs libarchive, and loading it (with libxml2 and
 * ICU behind it) costs milliseconds at every process start: the sandbox
 * verbs would pay that for nothing.  So it is dlopen()ed by import, and its
 * functions are called through ARCHIVE(name), typed from <archive.h>. */
#ifndef HUTCH_ARCHIVE_DL_H
#define HUTCH_ARCHIVE_DL_H

#include <archive.h>
#include <archive_entry.h>

#include "hutch.h"

#define HUTCH_ARCHIVE_FUNCTIONS(X)                                                                                     \
  X(archive_entry_clear)                                                                                               \
  X(archive_entry_copy_stat)                                                                                           \
  X(archive_entry_filetype)                                                                                            \
  X(archive_entry_free)                                                                                                \
  X(archive_entry_linkify)                                                                                             \
  X(archive_entry_linkresolver_free)                                                                                   \
  X(archive_entry_linkresolver_new)                                                                                    \
  X(archive_entry_linkresolver_set_strategy)                                                                           \
  X(archive_entry_new)                                                                                                 \
  X(archive_entry_set_filetype)                                                                                        \
  X(archive_entry_set_pathname)                                                                                        \
  X(archive_entry_set_size)                                                                                            \
  X(archive_entry_set_symlink)                                                                                         \
  X(archive_entry_gid)                                                                                                 \
  X(archive_entry_hardlink)                                                                                            \
  X(archive_entry_pathname)                                                                                            \
  X(archive_entry_perm)                                                                                                \
  X(archive_entry_set_gid)                                                                                             \
  X(archive_entry_set_perm)                                                                                            \
  X(archive_entry_set_uid)                                                                                             \
  X(archive_entry_size)                                                                                                \
  X(archive_entry_size_is_set)                                                                                         \
  X(archive_entry_sparse_count)                                                                                        \
  X(archive_entry_symlink)                                                                                             \
  X(archive_entry_uid)                                                                                                 \
  X(archive_entry_xattr_add_entry)                                                                                     \
  X(archive_entry_xattr_clear)                                                                                         \
  X(archive_entry_xattr_count)                                                                                         \
  X(archive_entry_xattr_next)                                                                                          \
  X(archive_entry_xattr_reset)                                                                                         \
  X(archive_errno)                                                                                                     \
  X(archive_filter_bytes)                                                                                              \
  X(archive_filter_count)                                                                                              \
  X(archive_error_string)                                                                                              \
  X(archive_read_data_block)                                                                                           \
  X(archive_read_free)                                                                                                 \
  X(archive_read_new)                                                                                                  \
  X(archive_read_next_header)                                                                                          \
  X(archive_read_open)                                                                                                 \
  X(archive_read_open_fd)                                                                                              \
  X(archive_read_open2)                                                                                                \
  X(archive_read_support_filter_bzip2)                                                                                 \
  X(archive_read_support_filter_gzip)                                                                                  \
  X(archive_read_support_filter_lz4)                                                                                   \
  X(archive_read_support_filter_lzma)                                                                                  \
  X(archive_read_support_filter_xz)                                                                                    \
  X(archive_read_support_filter_zstd)                                                                                  \
  X(archive_read_support_format_raw)                                                                                   \
  X(archive_read_support_format_tar)                                                                                   \
  X(archive_set_error)                                                                                                 \
  X(archive_write_close)                                                                                               \
  X(archive_write_data)                                                                                                \
  X(archive_write_data_block)                                                                                          \
  X(archive_write_disk_new)                                                                                            \
  X(archive_write_disk_set_options)                                                                                    \
  X(archive_write_finish_entry)                                                                                        \
  X(archive_write_free)                                                                                                \
  X(archive_write_header)                                                                                              \
  X(archive_write_new)                                                                                                 \
  X(archive_write_open_fd)                                                                                             \
  X(archive_write_set_format_pax_restricted)

struct archive_dl {
#define HUTCH_ARCHIVE_MEMBER(f) __typeof__(&f) f;
  HUTCH_ARCHIVE_FUNCTIONS(HUTCH_ARCHIVE_MEMBER)
#undef HUTCH_ARCHIVE_MEMBER
};

extern struct archive_dl archive_dl;

/* Load the library and every function once; later calls are free. */
int archive_dl_load(hutch_error_t *err);

/* The compressions hutch reads: gzip, xz, zstd, bzip2, lzma, lz4.  Debian's
 * libarchive decodes them itself; where one is missing it falls back to an
 * external program, spawned when the archive is opened. */
void archive_dl_support_filters(struct archive *a);

#define ARCHIVE(f) (archive_dl.f)

#endif
