/* SPDX-License-Identifier: Apache-2.0 */
/* The syntax of sandbox names, labels and `ps --filter` filters, and the
 * matching of a filter (pure: no system call). */
#ifndef HUTCH_LABELS_H
#define HUTCH_LABELS_H

#include <stdbool.h>

#include "hutch.h"

/* Whether s could be an id (state_new_id: 12 lowercase hex digits). */
bool labels_id_like(const char *s);
int labels_check_name(const char *name, hutch_error_t *err);
int labels_check_label(const char *label, hutch_error_t *err);
/* Whether the NULL-terminated labels have one with key (key_len bytes)
 * and, when value is not NULL, that value; of a key given twice the last
 * counts. */
bool labels_match(const char *const *labels, const char *key, size_t key_len, const char *value);
/* Whether filter matches a sandbox with this name (NULL: none), labels
 * and state; an invalid filter matches nothing. */
bool labels_filter_match(const char *filter, const char *name, const char *const *labels,
                         enum hutch_sandbox_state state);

#endif
