/* SPDX-License-Identifier: Apache-2.0 */
/* A YAML file whose top level is a mapping of scalars (prompt configs and
 * settings files).  Values that are lists or mappings are skipped. */
#ifndef HUTCH_AGENT_YAML_MAP_H
#define HUTCH_AGENT_YAML_MAP_H

#include <stddef.h>

#include "hutch.h"

struct yaml_map {
  char **keys;
  char **values;
  size_t n;
};

int yaml_map_load(const char *path, struct yaml_map *out, hutch_error_t *err);
int yaml_map_parse(const char *text, size_t len, const char *what, struct yaml_map *out, hutch_error_t *err);
/* The last value of key, or NULL. */
const char *yaml_map_get(const struct yaml_map *m, const char *key);
void yaml_map_clear(struct yaml_map *m);

#endif
