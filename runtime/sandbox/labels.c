/* SPDX-License-Identifier: Apache-2.0 */
/* Names, labels and filters (labels.h), and the public checks of hutch.h
 * built on them. */
#include "config.h"

#include "labels.h"

#include <errno.h>
#include <string.h>

#include "cdi_spec.h"
#include "port_relay.h"
#include "ttl_plan.h"
#include "user_spec.h"
#include "util.h"

bool labels_id_like(const char *s) {
  size_t n = strspn(s, "0123456789abcdef");
  return n == 12 && s[n] == '\0';
}

static bool is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Length of the token at s (a name, or a label key when `slash`), up to
 * max + 1 so a long one is told from a good one; 0 when its first
 * character cannot start one. */
static size_t token_len(const char *s, size_t max, bool slash) {
  if (!is_alnum(s[0]))
    return 0;
  size_t n = 1;
  while (n <= max && (is_alnum(s[n]) || s[n] == '_' || s[n] == '.' || s[n] == '-' || (slash && s[n] == '/')))
    n++;
  return n;
}

int labels_check_name(const char *name, hutch_error_t *err) {
  size_t n = token_len(name, HUTCH_NAME_MAX, false);
  if (n == 0 || n > HUTCH_NAME_MAX || name[n] != '\0') {
    hutch_error_set(err, EINVAL, "invalid sandbox name '%s'", name);
    return hutch_error_hint(err, "a name is a letter or digit, then up to %d of letters, digits, '_', '.' and '-'",
                            HUTCH_NAME_MAX - 1);
  }
  if (labels_id_like(name)) {
    hutch_error_set(err, EINVAL, "invalid sandbox name '%s': it could be a sandbox's id", name);
    return hutch_error_hint(err, "ids are 12 lowercase hex digits: choose a name that is not one");
  }
  return 0;
}

/* The value: printable ASCII (a label is shown by `ps` and written into
 * logs: no control characters, no other encodings to mislead a reader). */
static bool value_ok(const char *v) {
  size_t n = 0;
  for (; v[n] != '\0'; n++)
    if (n >= HUTCH_LABEL_VALUE_MAX || (unsigned char)v[n] < 0x20 || (unsigned char)v[n] > 0x7e)
      return false;
  return true;
}

int labels_check_label(const char *label, hutch_error_t *err) {
  size_t n = token_len(label, HUTCH_LABEL_KEY_MAX, true);
  if (n == 0 || n > HUTCH_LABEL_KEY_MAX || label[n] != '=') {
    hutch_error_set(err, EINVAL, "invalid label '%s'", label);
    return hutch_error_hint(err,
                            "a label is KEY=VALUE, the key a letter or digit, then up to %d of letters, digits, "
                            "'_', '.', '/' and '-'",
                            HUTCH_LABEL_KEY_MAX - 1);
  }
  if (!value_ok(label + n + 1)) {
    hutch_error_set(err, EINVAL, "invalid label '%s': its value", label);
    return hutch_error_hint(err, "a label's value is printable ASCII, at most %d bytes", HUTCH_LABEL_VALUE_MAX);
  }
  return 0;
}

int hutch_sandbox_extras_check(const struct hutch_sandbox_extras *x, hutch_error_t *err) {
  if (x == NULL)
    return 0;
  if (x->name && labels_check_name(x->name, err) < 0)
    return -1;
  size_t n = 0;
  for (const char *const *l = x->labels; l && *l; l++, n++) {
    if (n == HUTCH_LABELS_MAX)
      return hutch_error_set(err, EINVAL, "more than %d labels", HUTCH_LABELS_MAX);
    if (labels_check_label(*l, err) < 0)
      return -1;
  }
  n = 0;
  for (const char *const *d = x->devices; d && *d; d++, n++) {
    if (n == HUTCH_DEVICES_MAX)
      return hutch_error_set(err, EINVAL, "more than %d devices", HUTCH_DEVICES_MAX);
    if (!cdi_device_name_valid(*d)) {
      hutch_error_set(err, EINVAL, "invalid device '%s'", *d);
      return hutch_error_hint(err, "a device is a CDI name (vendor/class=name, such as nvidia.com/gpu=all) or "
                                   "/dev/NODE");
    }
  }
  if (ports_check(x->ports, x->n_ports, err) < 0)
    return -1;
  struct user_spec user;
  if (user_spec_parse(x->user, &user, err) < 0)
    return -1;
  if (x->ttl != 0 && !ttl_seconds_valid(x->ttl)) {
    hutch_error_set(err, EINVAL, "invalid time limit: %g seconds", x->ttl);
    return hutch_error_hint(err, "a time limit is more than 0 seconds and at most ten years; 0: none");
  }
  if ((x->on_ttl != HUTCH_TTL_REMOVE && x->on_ttl != HUTCH_TTL_PAUSE) || (x->on_ttl != HUTCH_TTL_REMOVE && x->ttl == 0))
    return hutch_error_set(err, EINVAL, "an action at the end of a time limit (on_ttl) needs a time limit (ttl)");
  return 0;
}

bool labels_match(const char *const *labels, const char *key, size_t key_len, const char *value) {
  const char *found = NULL;
  for (const char *const *l = labels; l && *l; l++)
    if (strncmp(*l, key, key_len) == 0 && (*l)[key_len] == '=')
      found = *l + key_len + 1;
  return found && (value == NULL || strcmp(found, value) == 0);
}

static const char *const state_names[] = {
    [HUTCH_SANDBOX_DEAD] = "dead",
    [HUTCH_SANDBOX_RUNNING] = "running",
    [HUTCH_SANDBOX_PAUSED] = "paused",
};

/* Parses a filter: its kind's index (0 name, 1 label, 2 status) and its
 * argument; -1 when it is none of them. */
static int filter_kind(const char *filter, const char **arg) {
  static const char *const kinds[] = {"name=", "label=", "status="};
  for (int i = 0; i < (int)ARRAY_SIZE(kinds); i++)
    if (strncmp(filter, kinds[i], strlen(kinds[i])) == 0) {
      *arg = filter + strlen(kinds[i]);
      return i;
    }
  return -1;
}

int hutch_sandbox_filter_check(const char *filter, hutch_error_t *err) {
  const char *arg = NULL;
  switch (filter_kind(filter, &arg)) {
  case 0:
    return labels_check_name(arg, err) < 0 ? hutch_error_wrap(err, "filter '%s'", filter) : 0;
  case 1: {
    /* label=KEY alone is a label's key with no '=' after it. */
    _cleanup_free_ char *kv = strchr(arg, '=') ? xstrdup(arg) : xasprintf("%s=", arg);
    return labels_check_label(kv, err) < 0 ? hutch_error_wrap(err, "filter '%s'", filter) : 0;
  }
  case 2:
    for (size_t i = 0; i < ARRAY_SIZE(state_names); i++)
      if (strcmp(arg, state_names[i]) == 0)
        return 0;
    return hutch_error_set(err, EINVAL, "filter '%s': the status is running, paused or dead", filter);
  default:
    hutch_error_set(err, EINVAL, "invalid filter '%s'", filter);
    return hutch_error_hint(err, "filters are name=NAME, label=KEY, label=KEY=VALUE and status=running|paused|dead");
  }
}

bool labels_filter_match(const char *filter, const char *name, const char *const *labels,
                         enum hutch_sandbox_state state) {
  if (hutch_sandbox_filter_check(filter, NULL) < 0)
    return false;
  const char *arg = NULL;
  switch (filter_kind(filter, &arg)) {
  case 0:
    return name && strcmp(name, arg) == 0;
  case 1: {
    const char *eq = strchr(arg, '=');
    return labels_match(labels, arg, eq ? (size_t)(eq - arg) : strlen(arg), eq ? eq + 1 : NULL);
  }
  default:
    return (size_t)state < ARRAY_SIZE(state_names) && strcmp(arg, state_names[state]) == 0;
  }
}

bool hutch_sandbox_status_matches(const struct hutch_sandbox_status *s, const char *const *filters) {
  for (const char *const *f = filters; f && *f; f++)
    if (!labels_filter_match(*f, s->name, (const char *const *)s->labels, s->state))
      return false;
  return true;
}
