/* SPDX-License-Identifier: Apache-2.0 */
/* The names a tree copied out of a sandbox may not take on the host.
 *
 * Host programs load some files by their name alone, from the directory
 * they are started in or one above it: git runs the commands of a
 * repository's config (core.fsmonitor, core.pager, hooks) on `git status`,
 * direnv sources .envrc on `cd`, editors run a folder's tasks, hutch run
 * takes ./hutch.yaml's endpoint and sends it the API key.  A sandbox
 * chooses the names in its output, so what hutch copies out lands under a
 * name none of them loads: a name on the list below (compared without
 * regard to ASCII case, for case-insensitive file systems) gets the suffix
 * ".sandbox", and so does a name that is such a name followed by the
 * suffix any number of times, which keeps the map one-to-one (".git" and
 * ".git.sandbox" become ".git.sandbox" and ".git.sandbox.sandbox").
 * "HEAD" is on the list because it is what makes a directory a git
 * repository (a bare one needs no ".git"): without it, no directory of the
 * copy is one.  Pure; unit-tested in tests/unit/test_outname.c. */
#ifndef HUTCH_OUTNAME_H
#define HUTCH_OUTNAME_H

#include <stdbool.h>
#include <stddef.h>

#define OUTNAME_SUFFIX ".sandbox"

/* Whether name (one path component) must not land under itself. */
bool outname_is_live(const char *name);
/* The name to use on the host: name itself, or name with OUTNAME_SUFFIX;
 * malloc'd. */
char *outname_map(const char *name);
/* The list, for documentation and tests: n names, each either a name or a
 * prefix ending in '*'. */
const char *const *outname_list(size_t *n);

#endif
