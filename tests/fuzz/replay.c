/* SPDX-License-Identifier: Apache-2.0 */
/* The replay driver of `make check`: feeds every file of the harness's seed
 * corpus (tests/fuzz/corpus/NAME) and crash cases (tests/fuzz/crashes/NAME)
 * to LLVMFuzzerTestOneInput, one TAP line each.  A crash, a leak or
 * undefined behaviour ends the program under the sanitizers, which the TAP
 * driver reports as an error.  Arguments (files) replace the directories. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

#ifndef FUZZ_NAME
#error FUZZ_NAME must name the harness
#endif

static int count;

static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    printf("not ok %d - open %s: %s\n", ++count, path, strerror(errno));
    return -1;
  }
  size_t cap = 4096, len = 0;
  uint8_t *buf = malloc(cap);
  size_t n;
  while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
    len += n;
    if (len == cap)
      buf = realloc(buf, cap *= 2);
  }
  fclose(f);
  if (buf == NULL)
    abort();
  /* An exact-size copy, so that reading one byte past the input is caught. */
  uint8_t *exact = malloc(len ? len : 1);
  if (exact == NULL)
    abort();
  memcpy(exact, buf, len);
  free(buf);
  printf("# %s (%zu bytes)\n", path, len);
  fflush(stdout);
  LLVMFuzzerTestOneInput(exact, len);
  free(exact);
  printf("ok %d - %s\n", ++count, path);
  fflush(stdout);
  return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b) {
  return strcmp((*a)->d_name, (*b)->d_name);
}

static int replay_dir(const char *dir) {
  struct dirent **names;
  int n = scandir(dir, &names, NULL, by_name);
  if (n < 0)
    return errno == ENOENT ? 0 : (printf("not ok %d - read %s: %s\n", ++count, dir, strerror(errno)), -1);
  int failed = 0;
  for (int i = 0; i < n; i++) {
    char path[4096];
    struct stat st;
    snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
    if (names[i]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode) && replay_file(path) < 0)
      failed++;
    free(names[i]);
  }
  free(names);
  return failed ? -1 : 0;
}

int main(int argc, char **argv) {
  int failed = 0;
  if (argc > 1) {
    for (int i = 1; i < argc; i++)
      failed += replay_file(argv[i]) < 0;
  } else {
    const char *src = getenv("HUTCH_SRCDIR");
    if (src == NULL || *src == '\0')
      src = HUTCH_SRCDIR;
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/%s", src, FUZZ_NAME);
    int before = count;
    failed += replay_dir(dir) < 0;
    if (count == before)
      printf("not ok %d - no seed inputs in %s\n", ++count, dir), failed++;
    snprintf(dir, sizeof(dir), "%s/tests/fuzz/crashes/%s", src, FUZZ_NAME);
    failed += replay_dir(dir) < 0;
  }
  printf("1..%d\n", count);
  return failed ? 1 : 0;
}
