/* SPDX-License-Identifier: Apache-2.0 */
/* `hutch rootfs` verbs spread over several files: pull (rootfs_pull.c),
 * build (rootfs_build.c), the rest in cmd_rootfs.c. */
#ifndef HUTCH_SRC_ROOTFS_H
#define HUTCH_SRC_ROOTFS_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>

#include "hutch.h"

/* A progress bar on stderr, drawn by cli_draw_progress (a hutch_progress_fn)
 * at most ten times a second; callers install it only when stderr is a
 * terminal and erase it with cli_progress_end(). */
struct cli_progress {
  const char *label;
  double last;
  bool drawn;
};
void cli_draw_progress(uint64_t done, uint64_t total, void *data);
void cli_progress_end(struct cli_progress *p);
/* hutch_phase_fn for a struct cli_progress: a new label, or the bar erased. */
void cli_progress_phase(const char *label, void *data);
void cli_format_size(uint64_t bytes, char *buf, size_t len);
/* A usage error for getopt_long's ':' (missing argument) or '?' (unknown
 * option) c, naming the option it stopped at. */
int cli_bad_option(const char *verb, int argc, char **argv, int c);

/* The bounds of a build's steps, options of both kinds of build
 * (getopt_long values of their own). */
enum { ROOTFS_OPT_STEP_TIMEOUT = 512, ROOTFS_OPT_STEP_LOG_MAX, ROOTFS_OPT_LOG_MAX };
#define ROOTFS_STEP_LONGOPTS                                                                                           \
  {"step-timeout", required_argument, NULL, ROOTFS_OPT_STEP_TIMEOUT},                                                  \
      {"step-log-max", required_argument, NULL, ROOTFS_OPT_STEP_LOG_MAX}, {                                            \
    "log-max", required_argument, NULL, ROOTFS_OPT_LOG_MAX                                                             \
  }
/* c one of those: its value parsed into the three; 0, or a usage error's status. */
int rootfs_step_option(const char *verb, int c, const char *arg, double *timeout, uint64_t *step_max,
                       uint64_t *all_max);

int rootfs_pull(int argc, char **argv, const char *store_path);
int rootfs_build(int argc, char **argv, const char *store_path);
/* -f DOCKERFILE (rootfs_dockerfile.c); lis: `hutch build`, LIS's spellings. */
int rootfs_dockerfile(int argc, char **argv, const char *store_path, bool lis);
/* Its options, for `rootfs build` to tell a Dockerfile build from a recipe's. */
extern const struct option rootfs_dockerfile_longopts[];
int rootfs_push(int argc, char **argv, const char *store_path);

/* `docker://` references (OCI registries). */
#define ROOTFS_DOCKER_PREFIX "docker://"

#endif
