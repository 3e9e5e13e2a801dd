/* SPDX-License-Identifier: Apache-2.0 */
/* LLM-in-Sandbox's --docker_image for hutch run: the store's image of that
 * name, else the image pulled from docker://REF and named so. */
#ifndef HUTCH_AGENT_DOCKER_IMAGE_H
#define HUTCH_AGENT_DOCKER_IMAGE_H

#include "settings.h"

/* Sets s->rootfs to the store name of s->docker_image, pulling it first when
 * the store lacks it.  Returns 0, or an exit code after printing why. */
int docker_image_ensure(struct settings *s);

#endif
