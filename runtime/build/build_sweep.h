/* SPDX-License-Identifier: Apache-2.0 */
/* What killed builds left in the store's tmp/, removed before a build
 * (build_sweep.c). */
#ifndef HUTCH_BUILD_SWEEP_H
#define HUTCH_BUILD_SWEEP_H

#include "hutch.h"

/* The stale directories of the store's tmp/ (nobody holds their lock),
 * and first, in a build's stage, the sandbox its steps ran in: removed as
 * `hutch rm` removes one.  A stage whose sandbox cannot be removed stays,
 * for the next build to try again.  Best effort: nothing fails a build. */
void build_sweep_stale(struct hutch_store *store);

#endif
