/* SPDX-License-Identifier: Apache-2.0 */
/* The loopback interface of a new network namespace, which starts down. */
#ifndef HUTCH_LOOPBACK_H
#define HUTCH_LOOPBACK_H

#include "hutch.h"

/* Set lo of the current network namespace up (SIOCSIFFLAGS: one flag on
 * one interface needs no netlink conversation). */
int loopback_up(hutch_error_t *err);

#endif
