/* What image_pull.c and image_build.c share. */
#ifndef HUTCH_IMAGE_H
#define HUTCH_IMAGE_H

#include "error.h"
#include "hutch.h"

/* One line to a hutch_message_fn, formatted; nothing when message is NULL. */
void image_say(hutch_message_fn message, void *data, const char *fmt, ...) HUTCH_PRINTF(3, 4);

#endif
