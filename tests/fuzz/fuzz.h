/* SPDX-License-Identifier: Apache-2.0 */
/* What every fuzz harness shares.  A harness is one LLVMFuzzerTestOneInput()
 * built twice: with clang -fsanitize=fuzzer for `make fuzz`, and with
 * replay.c's main() for `make check`, which feeds it the seed corpus and
 * every crash found (tests/fuzz/README.md). */
#ifndef HUTCH_FUZZ_H
#define HUTCH_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The parsers that take C strings get the input NUL-terminated (a NUL
 * inside it ends the text early, as it would for a file read with one). */
static inline char *fuzz_cstring(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (s == NULL)
    abort();
  memcpy(s, data, size);
  s[size] = '\0';
  return s;
}

#endif
