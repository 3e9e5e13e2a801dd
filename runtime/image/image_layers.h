/* SPDX-License-Identifier: Apache-2.0 */
/* A stacked image as its sandboxes see it: the image's own tree over its
 * lower trees, where a layer made by `hutch rootfs build` (an overlayfs
 * upper directory) may hold whiteouts (0:0 character devices) that delete
 * a name below them and opaque directories that hide everything below.
 * Trees are given top first, NULL-terminated. */
#ifndef HUTCH_IMAGE_LAYERS_H
#define HUTCH_IMAGE_LAYERS_H

/* The path of `rel` in the topmost tree that shows it; NULL when no tree
 * does, or a whiteout or opaque directory hides it. */
char *image_layers_path(const char *const *trees, const char *rel);

/* Every name the directory `rel` shows (each once, from the topmost tree
 * that has it, whiteouts left out), with its full path. */
typedef void (*image_layers_entry_fn)(const char *path, const char *name, void *data);
void image_layers_list(const char *const *trees, const char *rel, image_layers_entry_fn fn, void *data);

#endif
