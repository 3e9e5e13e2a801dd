/* SPDX-License-Identifier: Apache-2.0 */
/* Per-sandbox /30 links for --net proxy: the gateway is .1, the sandbox .2
 * of each block, taken from the policy's [network] subnet.
 *
 * Blocks are handed out through one small file in the state directory,
 * "net-subnets", read and rewritten under flock(): concurrent sandboxes and
 * concurrent hutch processes of the same user never get the same block.
 * Each line names the sandbox and the process that keeps the block alive
 * (pid and start time); a line whose process is gone is reclaimed. */
#ifndef HUTCH_SUBNET_H
#define HUTCH_SUBNET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hutch.h"
#include "net_policy.h"

#define SUBNET_FILE "net-subnets"

struct subnet_entry {
  uint32_t block; /* the /30's first address, host byte order */
  char id[40];
  pid_t pid;
  uint64_t start_time;
};

/* Pure: the lowest /30 of `range` (IPv4, prefix at most 30) that no entry of
 * `used` holds.  -1 with errno EINVAL for an unusable range, ENOSPC when
 * every block is taken. */
int subnet_pick(const struct net_cidr *range, const struct subnet_entry *used, size_t n_used, uint32_t *out);
/* Pure: "10.89.0.4 ID PID START" <-> entry.  Returns false for a malformed line. */
bool subnet_parse_line(const char *line, struct subnet_entry *out);
/* The file's text for `n` entries (new string). */
char *subnet_format(const struct subnet_entry *e, size_t n);
/* Pure: dotted quad of a host-order address into buf (at least 16 bytes). */
void subnet_ntoa(uint32_t addr, char *buf);

/* Allocate a block for sandbox `id`, kept alive by `pid`; reclaims the
 * blocks of dead processes first. */
int subnet_allocate(int state_fd, const struct net_cidr *range, const char *id, pid_t pid, uint32_t *block,
                    hutch_error_t *err);
/* The process that now keeps the block alive (the sandbox's init). */
int subnet_set_owner(int state_fd, const char *id, pid_t pid, hutch_error_t *err);
/* Give back the block of `id`; best effort, silent when there is none. */
void subnet_release(int state_fd, const char *id);

#endif
