/* SPDX-License-Identifier: Apache-2.0 */
/* "did you mean": the names closest to a mistyped word (suggest.c, pure). */
#ifndef HUTCH_CLI_SUGGEST_H
#define HUTCH_CLI_SUGGEST_H

#include <stdbool.h>
#include <stddef.h>

#define SUGGEST_MAX 4

/* The names of `names` (n of them) close enough to `word` to be what was
 * meant, the closest only (a tie gives several, in the order of `names`,
 * at most SUGGEST_MAX), into out; returns how many (0: none is close). */
size_t suggest_closest(const char *word, const char *const *names, size_t n, const char **out);

/* "'exec'", "'rm' or 'run'", "'a', 'b' or 'c'" of what suggest_closest
 * found, into buf. */
void suggest_format(const char *const *found, size_t n, char *buf, size_t len);

#endif
