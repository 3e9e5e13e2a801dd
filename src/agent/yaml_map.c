/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "yaml_map.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <yaml.h>

#include "util.h"

#define YAML_MAX_BYTES (4u << 20)

static int fail(yaml_parser_t *p, const char *what, hutch_error_t *err) {
  if (p->error != YAML_NO_ERROR)
    return hutch_error_set(err, EINVAL, "%s: line %zu, column %zu: %s", what, p->problem_mark.line + 1,
                           p->problem_mark.column + 1, p->problem ? p->problem : "invalid YAML");
  return hutch_error_set(err, EINVAL, "%s: not a YAML mapping of keys to text values", what);
}

/* Skip one whole node whose start event was just read. */
static int skip_node(yaml_parser_t *p, const yaml_event_t *start) {
  if (start->type != YAML_SEQUENCE_START_EVENT && start->type != YAML_MAPPING_START_EVENT)
    return 0;
  int depth = 1;
  while (depth > 0) {
    yaml_event_t ev;
    if (!yaml_parser_parse(p, &ev) || ev.type == YAML_NO_EVENT)
      return -1;
    if (ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT)
      depth++;
    else if (ev.type == YAML_SEQUENCE_END_EVENT || ev.type == YAML_MAPPING_END_EVENT)
      depth--;
    else if (ev.type == YAML_STREAM_END_EVENT)
      depth = 0;
    yaml_event_delete(&ev);
  }
  return 0;
}

int yaml_map_parse(const char *text, size_t len, const char *what, struct yaml_map *out, hutch_error_t *err) {
  memset(out, 0, sizeof(*out));
  yaml_parser_t p;
  yaml_parser_initialize(&p);
  yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
  int r = -1;
  bool in_map = false, done = false;
  char *key = NULL;
  while (!done) {
    yaml_event_t ev;
    /* After an error libyaml keeps "succeeding" with YAML_NO_EVENT. */
    if (!yaml_parser_parse(&p, &ev) || ev.type == YAML_NO_EVENT) {
      fail(&p, what, err);
      goto out;
    }
    switch (ev.type) {
    case YAML_STREAM_START_EVENT:
    case YAML_DOCUMENT_START_EVENT:
      break;
    case YAML_STREAM_END_EVENT:
    case YAML_DOCUMENT_END_EVENT:
      done = true;
      break;
    case YAML_MAPPING_START_EVENT:
      if (in_map) {
        if (key == NULL) {
          yaml_event_delete(&ev);
          fail(&p, what, err);
          goto out;
        }
        if (skip_node(&p, &ev) < 0) {
          yaml_event_delete(&ev);
          fail(&p, what, err);
          goto out;
        }
        free(key);
        key = NULL;
      } else {
        in_map = true;
      }
      break;
    case YAML_MAPPING_END_EVENT:
      done = true;
      break;
    case YAML_SEQUENCE_START_EVENT:
      if (!in_map || key == NULL) {
        yaml_event_delete(&ev);
        fail(&p, what, err);
        goto out;
      }
      if (skip_node(&p, &ev) < 0) {
        yaml_event_delete(&ev);
        fail(&p, what, err);
        goto out;
      }
      free(key);
      key = NULL;
      break;
    case YAML_SCALAR_EVENT: {
      if (!in_map) {
        /* An empty file or a bare scalar. */
        bool empty = ev.data.scalar.length == 0;
        yaml_event_delete(&ev);
        if (!empty) {
          fail(&p, what, err);
          goto out;
        }
        done = true;
        continue;
      }
      char *s = xstrndup((const char *)ev.data.scalar.value, ev.data.scalar.length);
      if (key == NULL) {
        key = s;
      } else {
        out->keys = xrealloc(out->keys, (out->n + 1) * sizeof(char *));
        out->values = xrealloc(out->values, (out->n + 1) * sizeof(char *));
        out->keys[out->n] = key;
        out->values[out->n] = s;
        out->n++;
        key = NULL;
      }
      break;
    }
    case YAML_ALIAS_EVENT:
      free(key);
      key = NULL;
      break;
    default:
      break;
    }
    yaml_event_delete(&ev);
  }
  r = 0;
out:
  free(key);
  yaml_parser_delete(&p);
  if (r < 0)
    yaml_map_clear(out);
  return r;
}

int yaml_map_load(const char *path, struct yaml_map *out, hutch_error_t *err) {
  size_t len = 0;
  _cleanup_free_ char *text = read_file_at(AT_FDCWD, path, YAML_MAX_BYTES, &len);
  if (text == NULL) {
    memset(out, 0, sizeof(*out));
    return hutch_error_sys(err, "read %s", path);
  }
  return yaml_map_parse(text, len, path, out, err);
}

const char *yaml_map_get(const struct yaml_map *m, const char *key) {
  for (size_t i = m->n; i-- > 0;)
    if (strcmp(m->keys[i], key) == 0)
      return m->values[i];
  return NULL;
}

void yaml_map_clear(struct yaml_map *m) {
  for (size_t i = 0; i < m->n; i++) {
    free(m->keys[i]);
    free(m->values[i]);
  }
  free(m->keys);
  free(m->values);
  memset(m, 0, sizeof(*m));
}
