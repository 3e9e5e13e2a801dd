/* SPDX-License-Identifier: Apache-2.0 */
/* Rules for applying an image layer onto the tree of the layers below it
 * (OCI image spec, "Representing Changes"): whiteout names and the set of
 * paths a layer has written.  Pure: no I/O. */
#ifndef HUTCH_LAYER_H
#define HUTCH_LAYER_H

#include <stdbool.h>
#include <stddef.h>

#define LAYER_WHITEOUT_PREFIX ".wh."
#define LAYER_OPAQUE_MARKER ".wh..wh..opq"

enum layer_whiteout {
  LAYER_PLAIN,    /* an ordinary entry */
  LAYER_WHITEOUT, /* ".wh.NAME": NAME is deleted from the layers below */
  LAYER_OPAQUE,   /* ".wh..wh..opq": the directory hides what the layers below put in it */
  LAYER_BAD,      /* a whiteout that names nothing a layer may delete ("", ".", "..", ".wh..wh.x") */
};

/* Normalise an archive path: no leading "./" or "/", no "." components, no
 * repeated or trailing '/'.  "." and "./" become "".  Returns a new string. */
char *layer_clean_path(const char *path);

/* Classify a cleaned path.  For LAYER_WHITEOUT, *target is the path to
 * delete; for LAYER_OPAQUE the directory ("" for the root).  Both new
 * strings, NULL otherwise. */
enum layer_whiteout layer_classify(const char *clean, char **target);

/* A set of cleaned paths: those a layer wrote, and their ancestors, so that
 * an opaque directory prunes only what the layers below left. */
struct layer_paths {
  char **slots;
  size_t cap, n;
};
void layer_paths_add(struct layer_paths *set, const char *clean); /* adds the ancestors too */
bool layer_paths_has(const struct layer_paths *set, const char *clean);
void layer_paths_clear(struct layer_paths *set);

#endif
