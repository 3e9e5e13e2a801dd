/* SPDX-License-Identifier: Apache-2.0 */
/* The policy file format (hutch-policy(5)): pure parsing, no I/O.
 *
 * Every key is one row of `keys`: adding a section or a key ([limits],
 * [network]...) means adding rows and fields, not code paths. */
#include "config.h"

#include "policy.h"

#include <ctype.h>
#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include "util.h"

struct key_spec;
/* Returns NULL when `value` is accepted, else why not (static text). */
typedef const char *(*key_parser)(const char *value, const struct key_spec *spec, struct policy_settings *out);

struct key_spec {
  const char *section;
  const char *key;
  key_parser parse;
  size_t offset; /* of the field in struct policy_settings */
  uint64_t min;  /* numbers only */
  uint64_t max;
  bool required;
  size_t line_offset; /* where to record the line number, or (size_t)-1 */
  bool repeatable;    /* each line adds an entry ([network] allow, ...) */
};

static const char *parse_path(const char *value, const struct key_spec *spec, struct policy_settings *out) {
  for (const char *p = value; *p; p++)
    if (iscntrl((unsigned char)*p))
      return "control characters in a path";
  char **field = (char **)((char *)out + spec->offset);
  *field = xstrdup(value);
  return NULL;
}

/* RFC 1123 host name: dot-separated labels of letters, digits and '-',
 * no label starting or ending with '-', at most 64 bytes (HOST_NAME_MAX). */
static const char *parse_hostname(const char *value, const struct key_spec *spec, struct policy_settings *out) {
  size_t n = strlen(value);
  if (n > 64)
    return "longer than 64 characters";
  size_t label = 0;
  for (size_t i = 0; i <= n; i++) {
    char c = value[i];
    if (c == '.' || c == '\0') {
      if (label == 0)
        return "empty label (leading, trailing or doubled '.')";
      if (value[i - 1] == '-')
        return "a label ends with '-'";
      label = 0;
      continue;
    }
    if (!isalnum((unsigned char)c) && c != '-')
      return "only letters, digits, '-' and '.' are allowed";
    if (c == '-' && label == 0)
      return "a label starts with '-'";
    label++;
    if (label > 63)
      return "a label is longer than 63 characters";
  }
  char **field = (char **)((char *)out + spec->offset);
  *field = xstrdup(value);
  return NULL;
}

static const char *parse_uint(const char *value, const struct key_spec *spec, struct policy_settings *out) {
  uint64_t v = 0;
  for (const char *p = value; *p; p++) {
    if (!isdigit((unsigned char)*p))
      return "not a decimal number";
    unsigned d = (unsigned)(*p - '0');
    if (v > (UINT64_MAX - d) / 10)
      return "out of range";
    v = v * 10 + d;
  }
  if (v < spec->min || v > spec->max)
    return "out of range";
  *(uint64_t *)((char *)out + spec->offset) = v;
  return NULL;
}

/* [limits]: sizes ("2G"), CPUs ("0.5"), counts, with "max" for none. */
static const char *parse_limit_size(const char *value, const struct key_spec *spec, struct policy_settings *out) {
  uint64_t v;
  if (!limits_parse_size(value, true, &v))
    return "not a size (such as 512M, 2G, 1.5GiB) or \"max\"";
  if (v != LIMITS_UNLIMITED && v < spec->min)
    return "too small";
  *(uint64_t *)((char *)out + spec->offset) = v;
  return NULL;
}

static const char *parse_limit_cpus(const char *value, const struct key_spec *spec, struct policy_settings *out) {
  uint64_t milli;
  if (strcmp(value, "max") == 0)
    milli = LIMITS_UNLIMITED;
  else if (!limits_parse_cpus(value, &milli))
    return "not a number of CPUs from 0.001 to 4096 (such as 1, 0.5, 2.5) or \"max\"";
  *(uint64_t *)((char *)out + spec->offset) = milli;
  return NULL;
}

static const char *parse_limit_count(const char *value, const struct key_spec *spec, struct policy_settings *out) {
  if (strcmp(value, "max") == 0) {
    *(uint64_t *)((char *)out + spec->offset) = LIMITS_UNLIMITED;
    return NULL;
  }
  return parse_uint(value, spec, out);
}

/* One of two words, stored as 0 (the first) or 1. */
static const char *parse_choice(const char *value, const char *zero, const char *one, const struct key_spec *spec,
                                struct policy_settings *out) {
  uint64_t *field = (uint64_t *)((char *)out + spec->offset);
  if (strcmp(value, zero) == 0)
    *field = 0;
  else if (strcmp(value, one) == 0)
    *field = 1;
  else
    return "not one of the allowed words";
  return NULL;
}

static const char *parse_fallback(const char *value, const struct key_spec *spec, struct policy_settings *out) {
  return parse_choice(value, "rlimits", "refuse", spec, out) ? "not \"rlimits\" or \"refuse\"" : NULL;
}

static const char *parse_yes_no(const char *value, const struct key_spec *spec, struct policy_settings *out) {
  return parse_choice(value, "no", "yes", spec, out) ? "not \"yes\" or \"no\"" : NULL;
}

/* [devices] allow: no, yes, or one entry a line (policy.h).  The syntax
 * of an entry is cdi_spec.h's, checked here again since policy cannot use
 * sandbox/: the kind's characters and a '/' in it, or a /dev path. */
static bool device_entry_valid(const char *v) {
  if (strncmp(v, "/dev/", 5) == 0)
    return v[5] != '\0' && strstr(v, "/..") == NULL && strstr(v, "/./") == NULL && strstr(v, "//") == NULL;
  const char *slash = strchr(v, '/');
  if (slash == NULL || slash == v || strchr(slash + 1, '/') != NULL || strlen(v) > 256)
    return false;
  for (const char *c = v; *c; c++)
    if (!isalnum((unsigned char)*c) && strchr("/._-=:", *c) == NULL)
      return false;
  return slash[1] != '\0' && slash[1] != '=';
}

static const char *parse_devices_allow(const char *value, const struct key_spec *spec, struct policy_settings *out) {
  (void)spec;
  struct policy_devices *d = &out->devices;
  if (strcmp(value, "no") == 0)
    d->said_no = true;
  else if (strcmp(value, "yes") == 0)
    d->any = true;
  else if (!device_entry_valid(value))
    return "not no, yes, a CDI kind (vendor/class), a CDI device (vendor/class=name) or /dev/NODE";
  else {
    d->allow = xrealloc(d->allow, (d->n_allow + 2) * sizeof(char *));
    d->allow[d->n_allow++] = xstrdup(value);
    d->allow[d->n_allow] = NULL;
  }
  if (d->said_no && (d->any || d->n_allow))
    return "\"no\" and other values together";
  return NULL;
}

bool policy_device_allowed(const struct policy_devices *d, const char *device) {
  if (d->any)
    return true;
  size_t kind = strcspn(device, "=");
  for (size_t i = 0; i < d->n_allow; i++) {
    const char *a = d->allow[i];
    if (strcmp(a, device) == 0 ||
        (device[0] != '/' && device[kind] == '=' && strlen(a) == kind && strncmp(a, device, kind) == 0))
      return true;
  }
  return false;
}

#define NO_LINE ((size_t)-1)
#define LIMIT_FIELD(f) offsetof(struct policy_settings, limits.f)

static const struct key_spec keys[] = {
    {"sandbox", "seccomp", parse_path, offsetof(struct policy_settings, seccomp), 0, 0, true,
     offsetof(struct policy_settings, seccomp_line)},
    {"sandbox", "hostname", parse_hostname, offsetof(struct policy_settings, hostname), 0, 0, false, NO_LINE},
    /* 1048576 is the kernel's default fs.nr_open: more cannot be set anyway. */
    {"sandbox", "nofile", parse_uint, offsetof(struct policy_settings, nofile), 16, 1048576, false, NO_LINE},
    /* Under 4 MiB nothing starts; the kernel takes any larger value. */
    {"limits", "memory", parse_limit_size, LIMIT_FIELD(memory), 4u << 20, 0, false, LIMIT_FIELD(memory_line)},
    {"limits", "cpus", parse_limit_cpus, LIMIT_FIELD(cpus_milli), 0, 0, false, LIMIT_FIELD(cpus_line)},
    /* Fewer than 8 and the sandbox's own init and shell cannot start. */
    {"limits", "pids", parse_limit_count, LIMIT_FIELD(pids), 8, 4194304, false, LIMIT_FIELD(pids_line)},
    {"limits", "io_weight", parse_uint, LIMIT_FIELD(io_weight), 1, 10000, false, LIMIT_FIELD(io_weight_line)},
    /* Under 1 MiB a sandbox's own /etc files and a shell's history do not fit. */
    {"limits", "disk", parse_limit_size, LIMIT_FIELD(disk), 1u << 20, 0, false, NO_LINE},
    {"limits", "image_size", parse_limit_size, LIMIT_FIELD(image_size), 1u << 20, 0, false, NO_LINE},
    {"limits", "image_entries", parse_limit_count, LIMIT_FIELD(image_entries), 1, UINT64_MAX - 1, false, NO_LINE},
    /* Under 64 KiB not even a start and an end record fit with a command. */
    {"limits", "audit_log", parse_limit_size, LIMIT_FIELD(audit_log), 64u << 10, 0, false, NO_LINE},
    {"limits", "fallback", parse_fallback, LIMIT_FIELD(fallback), 0, 0, false, NO_LINE},
    {"limits", "required", parse_yes_no, LIMIT_FIELD(required), 0, 0, false, NO_LINE},
    {"limits", "fallback_quiet", parse_yes_no, LIMIT_FIELD(fallback_quiet), 0, 0, false, NO_LINE},
/* [network]: no parser here, the value goes to net_policy_set(). */
#define NETWORK_KEY(name, repeat)                                                                                      \
  { "network", name, NULL, 0, 0, 0, false, NO_LINE, repeat }
    NETWORK_KEY("allow", true),
    NETWORK_KEY("allow_address", true),
    NETWORK_KEY("publish_address", true),
    NETWORK_KEY("resolve", true),
    NETWORK_KEY("ports", false),
    NETWORK_KEY("max_connections", false),
    NETWORK_KEY("idle_timeout", false),
    NETWORK_KEY("byte_budget", false),
    NETWORK_KEY("log_max", false),
    NETWORK_KEY("sni_check", false),
    NETWORK_KEY("tls_required", false),
    NETWORK_KEY("subnet", false),
    NETWORK_KEY("run", false),
#undef NETWORK_KEY
    {"devices", "allow", parse_devices_allow, 0, 0, 0, false, NO_LINE, true},
};

void policy_settings_clear(struct policy_settings *s) {
  if (s == NULL)
    return;
  free(s->seccomp);
  free(s->hostname);
  net_policy_clear(&s->network);
  cleanup_strvp(&s->devices.allow);
  *s = (struct policy_settings){0};
}

/* The table's spelling of a known section (outlives the parsed text). */
static const char *section_name(const char *name) {
  for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
    if (strcmp(keys[i].section, name) == 0)
      return keys[i].section;
  return NULL;
}

static char *section_list(void) {
  char *list = xstrdup("");
  for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
    bool first = true;
    for (size_t j = 0; j < i && first; j++)
      first = strcmp(keys[j].section, keys[i].section) != 0;
    if (!first)
      continue;
    char *next = xasprintf("%s%s[%s]", list, list[0] ? ", " : "", keys[i].section);
    free(list);
    list = next;
  }
  return list;
}

static char *key_list(const char *section) {
  char *list = xstrdup("");
  for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
    if (strcmp(keys[i].section, section) != 0)
      continue;
    char *next = xasprintf("%s%s%s", list, list[0] ? ", " : "", keys[i].key);
    free(list);
    list = next;
  }
  return list;
}

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t')
    s++;
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
    s[--n] = '\0';
  return s;
}

/* True when `rest` is empty or only a comment. */
static bool only_comment(const char *rest) {
  while (*rest == ' ' || *rest == '\t')
    rest++;
  return *rest == '\0' || *rest == '#';
}

/* Splits "value   # comment" or "\"value\" # comment"; NULL + *why on error. */
static char *parse_value(char *raw, const char **why) {
  raw = trim(raw);
  if (raw[0] == '"') {
    char *end = strchr(raw + 1, '"');
    if (end == NULL) {
      *why = "unterminated quoted value";
      return NULL;
    }
    *end = '\0';
    if (!only_comment(end + 1)) {
      *why = "text after the quoted value";
      return NULL;
    }
    return raw + 1;
  }
  /* A '#' starts a comment at the start of the value or after blanks;
   * inside a word ("a#b") it is part of the value. */
  for (char *p = raw; *p; p++) {
    if (*p == '#' && (p == raw || p[-1] == ' ' || p[-1] == '\t')) {
      *p = '\0';
      break;
    }
  }
  return trim(raw);
}

static bool valid_word(const char *s) {
  if (*s == '\0')
    return false;
  for (; *s; s++)
    if (!islower((unsigned char)*s) && !isdigit((unsigned char)*s) && *s != '_' && *s != '-')
      return false;
  return true;
}

/* network_only: a --net-policy file, where only [network] counts; the other
 * sections (a whole policy file may be given) are passed over unread. */
static int parse(const char *text, const char *source, bool network_only, struct policy_settings *out,
                 hutch_error_t *err) {
  struct policy_settings s = {0};
  net_policy_init(&s.network);
  s.network.source = xstrdup(source);
  unsigned key_lines[ARRAY_SIZE(keys)] = {0};
  _cleanup_free_ char *copy = xstrdup(text);
  const char *section = NULL; /* the table's string */
  struct {
    const char *name;
    unsigned line;
  } sections[ARRAY_SIZE(keys)];
  size_t n_sections = 0;
  unsigned line = 0;
  bool skip = network_only; /* in a section network_only passes over */

  /* strsep, not strtok: empty lines must still count. */
  char *cursor = copy;
  while (cursor != NULL) {
    char *raw = strsep(&cursor, "\n");
    line++;
    size_t n = strlen(raw);
    if (n > 0 && raw[n - 1] == '\r')
      raw[n - 1] = '\0';
    char *l = trim(raw);
    if (*l == '\0' || *l == '#')
      continue;

    if (*l == '[') {
      char *end = strchr(l, ']');
      if (end == NULL) {
        hutch_error_set(err, 0, "%s:%u: unterminated section header", source, line);
        goto fail;
      }
      *end = '\0';
      char *name = trim(l + 1);
      skip = network_only && strcmp(name, "network") != 0;
      if (skip)
        continue;
      if (!only_comment(end + 1)) {
        hutch_error_set(err, 0, "%s:%u: text after the section header [%s]", source, line, name);
        goto fail;
      }
      if (!valid_word(name) || section_name(name) == NULL) {
        _cleanup_free_ char *known = section_list();
        hutch_error_set(err, 0, "%s:%u: unknown section [%s]", source, line, name);
        hutch_error_hint(err, "known sections: %s", known);
        goto fail;
      }
      for (size_t i = 0; i < n_sections; i++) {
        if (strcmp(sections[i].name, name) == 0) {
          hutch_error_set(err, 0, "%s:%u: section [%s] given twice (first on line %u)", source, line, name,
                          sections[i].line);
          goto fail;
        }
      }
      /* known sections are table rows, so there is room for each once */
      section = section_name(name);
      sections[n_sections].name = section;
      sections[n_sections++].line = line;
      continue;
    }
    if (skip)
      continue;

    char *eq = strchr(l, '=');
    if (eq == NULL) {
      hutch_error_set(err, 0, "%s:%u: expected \"key = value\" or \"[section]\"", source, line);
      goto fail;
    }
    *eq = '\0';
    char *key = trim(l);
    if (!valid_word(key)) {
      hutch_error_set(err, 0, "%s:%u: bad key \"%s\"", source, line, key);
      hutch_error_hint(err, "keys are lower-case words: a-z, 0-9, '_' and '-'");
      goto fail;
    }
    if (section == NULL) {
      hutch_error_set(err, 0, "%s:%u: key \"%s\" outside of a section", source, line, key);
      hutch_error_hint(err, "start the file with a section header such as [sandbox]");
      goto fail;
    }
    size_t k;
    for (k = 0; k < ARRAY_SIZE(keys); k++)
      if (strcmp(keys[k].section, section) == 0 && strcmp(keys[k].key, key) == 0)
        break;
    if (k == ARRAY_SIZE(keys)) {
      _cleanup_free_ char *known = key_list(section);
      hutch_error_set(err, 0, "%s:%u: unknown key \"%s\" in [%s]", source, line, key, section);
      hutch_error_hint(err, "keys of [%s]: %s", section, known);
      goto fail;
    }
    if (key_lines[k] != 0 && !keys[k].repeatable) {
      hutch_error_set(err, 0, "%s:%u: duplicate key \"%s\" (first set on line %u)", source, line, key, key_lines[k]);
      goto fail;
    }
    const char *why = NULL;
    char *value = parse_value(eq + 1, &why);
    if (value == NULL) {
      hutch_error_set(err, 0, "%s:%u: %s: %s", source, line, key, why);
      goto fail;
    }
    if (*value == '\0') {
      hutch_error_set(err, 0, "%s:%u: %s: empty value", source, line, key);
      goto fail;
    }
    if (keys[k].parse == NULL) {
      if (net_policy_set(&s.network, key, value, line, err) < 0) {
        hutch_error_wrap(err, "%s:%u", source, line);
        goto fail;
      }
      key_lines[k] = line;
      continue;
    }
    why = keys[k].parse(value, &keys[k], &s);
    if (why != NULL) {
      hutch_error_set(err, 0, "%s:%u: bad value for %s: \"%s\": %s", source, line, key, value, why);
      if (keys[k].parse == parse_uint)
        hutch_error_hint(err, "%s takes a whole number from %" PRIu64 " to %" PRIu64, key, keys[k].min, keys[k].max);
      goto fail;
    }
    key_lines[k] = line;
    if (keys[k].line_offset != NO_LINE)
      *(unsigned *)((char *)&s + keys[k].line_offset) = line;
  }

  if (network_only && n_sections == 0) {
    hutch_error_set(err, EINVAL, "%s has no [network] section", source);
    goto fail;
  }
  for (size_t k = 0; k < ARRAY_SIZE(keys) && !network_only; k++) {
    if (keys[k].required && key_lines[k] == 0) {
      hutch_error_set(err, 0, "%s: [%s] %s is required", source, keys[k].section, keys[k].key);
      goto fail;
    }
  }
  *out = s;
  return 0;

fail:
  policy_settings_clear(&s);
  return -1;
}

int policy_parse(const char *text, const char *source, struct policy_settings *out, hutch_error_t *err) {
  return parse(text, source, false, out, err);
}

int policy_parse_network(const char *text, const char *source, struct net_policy *out, hutch_error_t *err) {
  struct policy_settings s;
  if (parse(text, source, true, &s, err) < 0)
    return -1;
  *out = s.network;
  net_policy_init(&s.network);
  policy_settings_clear(&s);
  return 0;
}
