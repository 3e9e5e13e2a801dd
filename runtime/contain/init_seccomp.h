/* SPDX-License-Identifier: Apache-2.0 */
/* The sandbox's seccomp filter, loaded once into its init: every command
 * inherits it from there, and none pays for loading it again. */
#ifndef HUTCH_INIT_SECCOMP_H
#define HUTCH_INIT_SECCOMP_H

#include <stddef.h>

#include "hutch.h"

/* Loads the program into the calling process (init, with no_new_privs set)
 * when it allows every call that init and a command's pre-exec code make,
 * with the arguments they use; returns 1.  Returns 0 without loading, and
 * the name of the first refused call in *refused, when it does not: the
 * commands then load it themselves, and init stays as before. */
int init_seccomp_load(const void *bpf, size_t len, const char **refused, hutch_error_t *err);

#endif
