/* SPDX-License-Identifier: Apache-2.0 */
/* What the start of a long-lived sandbox records of its configuration
 * (config_record.h), with what the pure record cannot know: the working
 * directory of relative paths, and the --net-policy file's bytes for the
 * policy's fingerprint. */
#ifndef HUTCH_CONFIG_CAPTURE_H
#define HUTCH_CONFIG_CAPTURE_H

#include <cjson/cJSON.h>

#include "config_record.h"
#include "hutch.h"

/* The fingerprint of cfg's policy (loaded) and of its --net-policy file,
 * read now. */
int config_capture_fingerprint(const struct hutch_sandbox_config *cfg, char out[CONFIG_FINGERPRINT_LEN],
                               hutch_error_t *err);
/* The record of cfg and x (config_record_encode); EFBIG past its bound. */
int config_capture(const struct hutch_sandbox_config *cfg, const struct hutch_sandbox_extras *x, cJSON **out,
                   hutch_error_t *err);

#endif
