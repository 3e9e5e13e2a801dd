/* SPDX-License-Identifier: Apache-2.0 */
/* `hutch rootfs import` of a file: a tarball, a `docker save` or OCI
 * archive, compressed or not.  Each input is imported into a new store in a
 * private temporary directory, removed afterwards, so that no input sees
 * what an earlier one left (the store would otherwise find the same bytes
 * already imported). */
#define _GNU_SOURCE
#include "config.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "hutch.h"

static char base[] = "/tmp/hutch-fuzz-import.XXXXXX";
static bool ready;

/* Imported trees are read-only: open every directory up before removing. */
static int open_up(const char *path, const struct stat *st, int type, struct FTW *ftw) {
  if (type == FTW_D)
    chmod(path, 0700);
  return 0;
}
static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw) {
  remove(path);
  return 0;
}
static void remove_tree(const char *path) {
  nftw(path, open_up, 16, FTW_PHYS);
  nftw(path, remove_one, 16, FTW_PHYS | FTW_DEPTH);
}

static void cleanup(void) {
  if (ready)
    remove_tree(base);
}

static void quiet(enum hutch_log_level level, const char *msg, void *data) {
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (1u << 20))
    return 0;
  if (!ready) {
    if (mkdtemp(base) == NULL)
      abort();
    ready = true;
    atexit(cleanup);
    hutch_set_log_handler(quiet, NULL);
  }
  char store_dir[sizeof(base) + 16], file[sizeof(base) + 16];
  snprintf(store_dir, sizeof(store_dir), "%s/store", base);
  snprintf(file, sizeof(file), "%s/input", base);
  int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
    abort();
  close(fd);
  hutch_error_t err = NULL;
  struct hutch_store *store = NULL;
  if (hutch_store_open(store_dir, &store, &err) < 0) {
    hutch_error_print(stderr, "fuzz import", err);
    abort(); /* the harness's own directory: not the input's fault */
  }
  struct hutch_image image = {0};
  if (hutch_image_import(store, file, NULL, &image, &err) >= 0) {
    char **env = hutch_image_env(&image, NULL);
    for (char **e = env; e && *e; e++)
      free(*e);
    free(env);
    hutch_image_clear(&image);
  }
  hutch_error_free(&err);
  hutch_store_close(store);
  remove_tree(store_dir);
  unlink(file);
  return 0;
}
