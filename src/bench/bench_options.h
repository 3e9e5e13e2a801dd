/* SPDX-License-Identifier: Apache-2.0 */
/* hutch benchmark's command line (options.c). */
#ifndef HUTCH_BENCH_OPTIONS_H
#define HUTCH_BENCH_OPTIONS_H

#include <stdio.h>

#include "bench.h"

/* -1 to go on, else an exit code (0 after --help, 2: a usage error, said). */
int bench_parse(int argc, char **argv, struct bench_opts *o);
void bench_opts_free(struct bench_opts *o);
void bench_usage(FILE *out);

#endif
