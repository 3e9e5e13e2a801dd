/* SPDX-License-Identifier: Apache-2.0 */
/* Sandbox names, unique per state directory: <state>/.names/NAME is a
 * symbolic link to ../ID (hidden from listings: no id starts with a dot). */
#ifndef HUTCH_NAMES_H
#define HUTCH_NAMES_H

#include "hutch.h"

#define NAMES_DIR ".names"

/* Claims `name` for the sandbox `id`, whose directory exists: EEXIST when
 * another sandbox has it.  A link left by a sandbox whose directory is gone
 * (a crash) is replaced. */
int names_claim(int rootfd, const char *name, const char *id, hutch_error_t *err);
/* Gives `name` back if it is still `id`'s; nothing to report. */
void names_release(int rootfd, const char *name, const char *id);
/* The id `name` belongs to: 0, or -1 with errno ENOENT when no live link
 * has that name. */
int names_lookup(int rootfd, const char *name, char id[40]);
/* The id of name_or_id (an id is taken as it is; a name is looked up, then
 * taken as an id of another form if there is such a directory): ENOENT. */
int names_resolve(int rootfd, const char *name_or_id, char id[40], hutch_error_t *err);

#endif
