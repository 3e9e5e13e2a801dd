/* SPDX-License-Identifier: Apache-2.0 */
/* The options a run records (benchmark.json's "options": "--name=value"
 * or "--name", names canonical) and their check against a --resume
 * command line's (resume_opts.c, pure). */
#ifndef HUTCH_BENCH_RESUME_OPTS_H
#define HUTCH_BENCH_RESUME_OPTS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

/* An option that may change between a run and its --resume (the server's
 * address, how many tasks at once, retries, the terminal): NAME without
 * its dashes. */
bool resume_opt_free(const char *name);
/* The canonical name of "--name[=value]" ("llm_name" -> "model"). */
char *resume_opt_name(const char *entry);
/* hutch run's options as given (argv, n of them: "--name=value", or
 * "--name" then its value, or a yes/no "--name") as "--name=value" or
 * "--name", names canonical; *out_n of them, NULL-terminated. */
char **resume_opts_normal(char *const *argv, size_t n, size_t *out_n);
/* The first option given (not a free one) whose values differ from those
 * recorded, said with both ("--max-steps: the run began with '5'; this
 * command gives '9'"), or NULL when none does; malloc'd. */
char *resume_opts_mismatch(char *const *recorded, size_t n_rec, char *const *given, size_t n_given);
/* The recorded options whose names are not given: those --resume adds;
 * *out_n of them, NULL-terminated. */
char **resume_opts_missing(char *const *recorded, size_t n_rec, char *const *given, size_t n_given, size_t *out_n);
/* The first key of two runs' "config" objects whose values differ, said
 * with both, or NULL; malloc'd. */
char *resume_config_diff(const cJSON *then, const cJSON *now);

#endif
