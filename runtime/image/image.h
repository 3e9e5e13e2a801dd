/* SPDX-License-Identifier: Apache-2.0 */
/* What image_pull.c and image_build.c share. */
#ifndef HUTCH_IMAGE_H
#define HUTCH_IMAGE_H

#include "error.h"
#include "hutch.h"

/* One line of a pull's or a build's progress to the log (HUTCH_LOG_INFO). */
void image_say(const char *fmt, ...) HUTCH_PRINTF(1, 2);

#endif
