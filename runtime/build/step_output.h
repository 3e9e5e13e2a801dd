/* SPDX-License-Identifier: Apache-2.0
 *
 * A build step's output as the host keeps it (the build log, the
 * terminal): escaped as text_escape escapes what a sandbox wrote, and
 * capped, per step and for the whole build.  Past a cap, bytes are still
 * read (the step never blocks on a full pipe) and counted, not kept; the
 * step's output ends with a line saying how many were dropped.  Pure: the
 * bytes kept go to a callback. */
#ifndef HUTCH_STEP_OUTPUT_H
#define HUTCH_STEP_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Defaults of --step-log-max and --log-max. */
#define STEP_OUTPUT_DEFAULT_STEP_MAX (8ULL << 20)
#define STEP_OUTPUT_DEFAULT_TOTAL_MAX (64ULL << 20)

/* What the whole build may still keep. */
struct step_budget {
  uint64_t max, used;
};

struct step_output {
  uint64_t max;     /* bytes of this step's output kept, escaped */
  uint64_t written; /* kept so far */
  uint64_t dropped; /* bytes of output (before escaping) not kept */
  struct step_budget *total;
  unsigned char held[4]; /* a UTF-8 sequence cut by the end of a read */
  size_t n_held;
  bool mid_line; /* the last byte kept was not a newline */
};

typedef void (*step_emit_fn)(const char *buf, size_t len, void *data);

void step_output_init(struct step_output *o, uint64_t max, struct step_budget *total);
/* The next bytes of the output. */
void step_output_feed(struct step_output *o, const char *buf, size_t len, step_emit_fn emit, void *data);
/* The end of the output: a sequence held back is escaped, and when bytes
 * were dropped, a line "output truncated, N bytes dropped (...)". */
void step_output_end(struct step_output *o, step_emit_fn emit, void *data);

#endif
