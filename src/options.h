/* SPDX-License-Identifier: Apache-2.0 */
/* Pure parsers for command-line values, shared by the verbs. */
#ifndef HUTCH_OPTIONS_H
#define HUTCH_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hutch.h"

/* "30", "1.5", "250ms", "2m", "1h" -> seconds; false on anything else or <= 0. */
bool parse_duration(const char *s, double *out);
/* Seconds for people, in its two largest units: "2d03h", "1h05m", "9m30s",
 * "45s", "4.5s" (under 10 s); buf of at least 32 bytes. */
void format_duration(double seconds, char *buf, size_t len);
/* Sizes: hutch_parse_size() in hutch.h. */
/* "SRC:DST", "SRC:DST:ro", "SRC:DST:rw"; SRC and DST must be absolute.
 * The strings point into a copy owned by the caller (*storage). */
bool parse_bind(const char *spec, struct hutch_bind *out, char **storage);
/* `-p`: "HOSTPORT:PORT", "ADDR:HOSTPORT:PORT" or "[V6ADDR]:HOSTPORT:PORT"
 * (HOSTPORT 0: any; PORT 1..65535).  ADDR is copied into addr (a buffer of
 * addr_len) and out->host_addr points to it; without one it is NULL. */
bool parse_publish(const char *spec, struct hutch_port *out, char *addr, size_t addr_len);
/* "KEY=VALUE" with a non-empty KEY of [A-Za-z0-9_] not starting with a digit. */
bool valid_env_assignment(const char *kv);

#endif
