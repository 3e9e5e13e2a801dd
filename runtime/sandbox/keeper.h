/* SPDX-License-Identifier: Apache-2.0 */
/* The keeper (keeper.c): the host process that ends, or pauses, a live
 * sandbox when its time limit runs out.  One per sandbox that has a limit,
 * none for one without. */
#ifndef HUTCH_KEEPER_H
#define HUTCH_KEEPER_H

#include "hutch.h"
#include "state.h"

/* In a state_update of sandbox st (the lock held): when st has a limit and
 * no live keeper, starts one and records it in st.  The keeper takes the
 * lock itself before it reads anything, so it sees the record once
 * written; one that finds another keeper recorded ends. */
int keeper_ensure(int rootfd, struct sandbox_state *st, hutch_error_t *err);

#endif
