/* SPDX-License-Identifier: Apache-2.0 */
/* Container Device Interface specs (CDI, as /etc/cdi and /var/run/cdi hold
 * them): pure parsing of one spec's JSON, and of a device's qualified name
 * "vendor/class=name".  What a spec names is checked against the host by
 * cdi.c; nothing here looks at a file. */
#ifndef HUTCH_CDI_SPEC_H
#define HUTCH_CDI_SPEC_H

#include <stdbool.h>
#include <stddef.h>

#include "hutch.h"

/* Bounds on what one spec may hold: a spec is the host's, but a spec
 * directory another program writes must not make hutch hold without end. */
#define CDI_SPEC_MAX_BYTES (1u << 20)
#define CDI_MAX_DEVICES 256
#define CDI_MAX_EDITS 256 /* env entries, nodes, mounts or hooks of one edit list */
#define CDI_NAME_MAX 128

struct cdi_node {
  char *path;      /* in the sandbox */
  char *host_path; /* on the host (the spec's hostPath, else path) */
  char type;       /* 'c', 'b', 'p' or 0 when the spec names none */
  bool has_rdev;   /* major and minor given */
  unsigned major, minor;
};
struct cdi_mount {
  char *host_path, *container_path;
};
struct cdi_hook {
  char *hook_name, *path; /* listed, never run */
};
struct cdi_edits {
  char **env; /* "K=V", NULL-terminated, never NULL */
  struct cdi_node *nodes;
  size_t n_nodes;
  struct cdi_mount *mounts;
  size_t n_mounts;
  struct cdi_hook *hooks;
  size_t n_hooks;
};
struct cdi_device {
  char *name;
  struct cdi_edits edits;
};
struct cdi_spec {
  char *kind;             /* "vendor/class" */
  struct cdi_edits edits; /* for every device of the spec */
  struct cdi_device *devices;
  size_t n_devices;
};

/* Parses a spec's text; `source` names it in messages.  YAML (anything
 * that is not a JSON object) is refused with the hint to generate JSON. */
int cdi_spec_parse(const char *text, size_t len, const char *source, struct cdi_spec *out, hutch_error_t *err);
void cdi_spec_clear(struct cdi_spec *s);
/* The device of that name, NULL when none. */
const struct cdi_device *cdi_spec_device(const struct cdi_spec *s, const char *name);

/* "vendor/class": vendor a domain-like name (letters, digits, '.', '-'),
 * class letters, digits, '_', '.', '-'. */
bool cdi_kind_valid(const char *kind);
/* "vendor/class=name" split at '=': the kind's length in *kind_len and the
 * name (letters, digits, '_', '.', ':', '-') in *name; false when it is not
 * such a name. */
bool cdi_qualified_split(const char *qualified, size_t *kind_len, const char **name);
/* A device hutch takes by path: "/dev/..." normalised, without "..". */
bool cdi_dev_path_valid(const char *path);
/* Either of the two: a device as --device names it. */
bool cdi_device_name_valid(const char *device);

#endif
