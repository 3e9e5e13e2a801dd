/* SPDX-License-Identifier: Apache-2.0 */
/* Fields of /proc/PID/stat: the start time that tells a live process from
 * a reused pid, and the bounds of a process's argument and environment
 * strings. */
#ifndef HUTCH_PROC_STAT_H
#define HUTCH_PROC_STAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Field numbers as proc(5) counts them (pid is 1, comm 2). */
enum {
  PROC_STAT_STATE = 3,
  PROC_STAT_START_TIME = 22,
  PROC_STAT_ARG_START = 48, /* arg_start, arg_end, env_start, env_end follow */
};

/* Pure: parses n numeric fields from field `first` on out of the text of a
 * stat file.  Returns false when the text is malformed or too short. */
bool proc_stat_parse(const char *text, int first, size_t n, uint64_t *out);

/* Pure: the state letter (field 3), or 0 when malformed. */
char proc_stat_state(const char *text);

/* Reads /proc/PID/stat (0: this process); NULL with errno set on failure. */
char *proc_stat_read(pid_t pid);

/* The start time of a live pid, 0 when it is gone (or a zombie). */
uint64_t proc_stat_start_time(pid_t pid);

/* Whether the process recorded as (pid, start_time) still lives, and is
 * not another one that reused its pid. */
bool proc_stat_alive(pid_t pid, uint64_t start_time);

#endif
