/* The memory watchdog of a sandbox without a memory cgroup (the rlimits
 * fallback).  RLIMIT_AS bounds one process; the watchdog bounds them all:
 * init, which the sandbox cannot kill, sums the memory of every process
 * it has under it at a short interval and kills them all when the sum
 * passes the limit.  The margin is what the sandbox can allocate within one
 * interval (hutch-security(7)). */
#ifndef HUTCH_MEMWATCH_H
#define HUTCH_MEMWATCH_H

#include <stdbool.h>
#include <stdint.h>

/* How often init looks while any process runs in the sandbox, at the
 * most; an idle sandbox (init alone) is not polled at all. */
#define MEMWATCH_INTERVAL_MS 20
/* Nearer the limit it looks sooner: when the room left would last this
 * fast an allocation (bytes a second per CPU) less than an interval; a
 * page fault loop reached 2.7 GiB/s on one core of the test host. */
#define MEMWATCH_RATE_PER_CPU (4.0 * 1024 * 1024 * 1024)

/* Pure: milliseconds until the next look, from the bytes in use, the limit
 * and the CPUs the sandbox can run on: 1 to MEMWATCH_INTERVAL_MS. */
int memwatch_next_ms(uint64_t bytes, uint64_t limit, unsigned cpus);

/* Pure: the bytes a process holds from the text of /proc/PID/status: its
 * anonymous and shared-memory resident pages (RssAnon + RssShmem); file
 * pages are the page cache's, reclaimable and shared.  false when the
 * fields are missing (a kernel thread, a process gone). */
bool memwatch_parse_status(const char *status, uint64_t *bytes);

/* The bytes all processes under the calling process hold (its children,
 * theirs, and so on, found through /proc/PID/task/TID/children), and how
 * many there are.  Memory shared between processes counts once for each:
 * the sum is never less than what the host gives them. */
void memwatch_sum(uint64_t *bytes, uint64_t *processes);

#endif
