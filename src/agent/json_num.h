/* SPDX-License-Identifier: Apache-2.0 */
/* JSON numbers from a model's tool call, as C integers.  The model is
 * hostile input: a number such as 1e300 or -1e19 converted with a plain
 * (long) cast is undefined behaviour, so every conversion goes through
 * here, which clamps to the range of long (NaN cannot occur in JSON). */
#pragma once

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdbool.h>

/* The number clamped to the range of long, truncated toward zero.
 * LONG_MAX + 1.0 is a power of two, exactly representable as a double. */
static inline long json_number_to_long(double d) {
  if (!(d < (double)LONG_MAX + 1.0))
    return LONG_MAX;
  if (!(d >= -(double)LONG_MAX - 1.0))
    return -LONG_MAX - 1;
  return (long)d;
}

/* True when V is a JSON number that is a whole number within long's range;
 * *OUT gets it (clamped when not). */
static inline bool json_whole_long(const cJSON *v, long *out) {
  if (!cJSON_IsNumber(v))
    return false;
  *out = json_number_to_long(v->valuedouble);
  return v->valuedouble == (double)*out && v->valuedouble < (double)LONG_MAX + 1.0;
}
