/* SPDX-License-Identifier: Apache-2.0 */
/* The record of a sandbox whose owner died (orphan_sweep.c). */
#ifndef HUTCH_ORPHAN_SWEEP_H
#define HUTCH_ORPHAN_SWEEP_H

#include "state.h"

/* When st is tied to a process (a one-shot's hutch, a die_with_creator
 * creator) that is gone, and its init is gone too: removes it as `hutch
 * rm` does (its cgroup, proxy, audit log archived, directory) and returns
 * 1 (st is stale then); else 0. */
int sandbox_orphan_backstop(int rootfd, const struct sandbox_state *st);
/* sandbox_orphan_backstop() for every sandbox of the state directory
 * (sandbox_live.c, where a listing makes the same rounds). */
void sandbox_orphan_sweep(int rootfd);

#endif
