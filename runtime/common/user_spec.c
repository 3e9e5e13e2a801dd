/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "user_spec.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

/* An id: digits, up to USER_SPEC_ID_MAX. */
static bool parse_id(const char *s, size_t len, uint32_t *out) {
  uint32_t v;
  if (!parse_u32_digits(s, len, &v) || v > USER_SPEC_ID_MAX)
    return false;
  *out = v;
  return true;
}

/* A user or group name as useradd takes it: letters, digits, '.', '_',
 * '-' (not first), and a '$' last (machine accounts). */
static bool valid_name(const char *s, size_t len) {
  if (len == 0 || len > USER_SPEC_NAME_MAX || s[0] == '-')
    return false;
  for (size_t i = 0; i < len; i++) {
    char c = s[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-' || (c == '$' && i == len - 1);
    if (!ok)
      return false;
  }
  return true;
}

/* One half of the spec: a number, or a name copied into name. */
static bool parse_half(const char *s, size_t len, bool *numeric, uint32_t *id, char name[USER_SPEC_NAME_MAX + 1]) {
  if (parse_id(s, len, id)) {
    *numeric = true;
    return true;
  }
  bool digits = len > 0;
  for (size_t i = 0; i < len; i++)
    digits = digits && s[i] >= '0' && s[i] <= '9';
  if (digits || !valid_name(s, len))
    return false; /* a number too large is no name */
  memcpy(name, s, len);
  name[len] = '\0';
  return true;
}

int user_spec_parse(const char *s, struct user_spec *out, hutch_error_t *err) {
  memset(out, 0, sizeof(*out));
  if (s == NULL || s[0] == '\0')
    return 0;
  const char *colon = strchr(s, ':');
  size_t ulen = colon ? (size_t)(colon - s) : strlen(s);
  bool ok = parse_half(s, ulen, &out->uid_numeric, &out->uid, out->user);
  if (ok && colon) {
    out->group_given = true;
    ok = parse_half(colon + 1, strlen(colon + 1), &out->gid_numeric, &out->gid, out->group);
  }
  if (!ok) {
    memset(out, 0, sizeof(*out));
    hutch_error_set(err, EINVAL, "user \"%.64s\": not USER[:GROUP]", s);
    return hutch_error_hint(err,
                            "each of USER and GROUP is an id from 0 to %u or a name of letters, digits, '.', "
                            "'_' and '-' (at most %d): 1000, 1000:1000, nobody, app:staff",
                            USER_SPEC_ID_MAX, USER_SPEC_NAME_MAX);
  }
  out->set = true;
  return 0;
}

bool user_spec_is_root(const struct user_spec *s) {
  bool user = s->uid_numeric ? s->uid == 0 : strcmp(s->user, "root") == 0;
  bool group = !s->group_given || (s->gid_numeric ? s->gid == 0 : strcmp(s->group, "root") == 0);
  return s->set && user && group;
}

/* Field `index` (0-based, ':'-separated) of the line [line, end): its
 * start and length, false when the line has fewer fields. */
static bool field(const char *line, const char *end, int index, const char **start, size_t *len) {
  const char *p = line;
  for (int i = 0; i < index; i++) {
    const char *c = memchr(p, ':', (size_t)(end - p));
    if (c == NULL)
      return false;
    p = c + 1;
  }
  const char *c = memchr(p, ':', (size_t)(end - p));
  *start = p;
  *len = c ? (size_t)(c - p) : (size_t)(end - p);
  return true;
}

/* The first line of a passwd- or group-style text whose name (field 0)
 * is `name`, or with `name` NULL whose id (field 2) is `id`: its bounds. */
static bool find_line(const char *text, const char *name, uint32_t id, const char **line, const char **line_end) {
  for (const char *p = text; p && *p;) {
    const char *nl = strchr(p, '\n');
    const char *end = nl ? nl : p + strlen(p);
    const char *f;
    size_t len;
    uint32_t v;
    if (*p != '#' && *p != '+' && *p != '-') {
      if (name ? field(p, end, 0, &f, &len) && len == strlen(name) && memcmp(f, name, len) == 0
               : field(p, end, 2, &f, &len) && parse_id(f, len, &v) && v == id) {
        *line = p;
        *line_end = end;
        return true;
      }
    }
    p = nl ? nl + 1 : NULL;
  }
  return false;
}

/* Field `index` of a line as an id; false when missing or not one. */
static bool id_field(const char *line, const char *end, int index, uint32_t *out) {
  const char *f;
  size_t len;
  return field(line, end, index, &f, &len) && parse_id(f, len, out);
}

int user_spec_resolve(const struct user_spec *s, const char *passwd, const char *group, struct user_ident *out,
                      hutch_error_t *err) {
  memset(out, 0, sizeof(*out));
  const char *line, *end;
  bool listed =
      s->uid_numeric ? find_line(passwd, NULL, s->uid, &line, &end) : find_line(passwd, s->user, 0, &line, &end);
  if (!listed && !s->uid_numeric) {
    hutch_error_set(err, ENOENT, "user %s: no such user in the sandbox's /etc/passwd", s->user);
    return hutch_error_hint(err, "name a user of the image, or give a number (--user 1000:1000)");
  }
  out->uid = s->uid;
  if (listed) {
    const char *home;
    size_t len;
    if (!id_field(line, end, 2, &out->uid) || !id_field(line, end, 3, &out->gid)) {
      hutch_error_set(err, EINVAL, "user %s: its line in the sandbox's /etc/passwd has no valid uid and gid",
                      s->uid_numeric ? "given by number" : s->user);
      return hutch_error_hint(err, "give the ids by number (--user UID:GID)");
    }
    if (field(line, end, 5, &home, &len) && len > 0 && len < sizeof(out->home) && home[0] == '/')
      memcpy(out->home, home, len);
  }
  /* A name other than root's that the image gives uid 0 is root all the
   * same: whoever asked for it meant another user, and would not know. */
  if (!s->uid_numeric && out->uid == 0 && strcmp(s->user, "root") != 0) {
    hutch_error_set(err, EPERM, "user %s: the sandbox's /etc/passwd gives it uid 0, root's", s->user);
    return hutch_error_hint(err, "leave out --user to run as the sandbox's root, or give the ids by number "
                                 "(--user UID:GID)");
  }
  if (!s->group_given)
    return 0;
  if (s->gid_numeric) {
    out->gid = s->gid;
    return 0;
  }
  if (!find_line(group, s->group, 0, &line, &end)) {
    hutch_error_set(err, ENOENT, "group %s: no such group in the sandbox's /etc/group", s->group);
    return hutch_error_hint(err, "name a group of the image, or give a number (--user USER:GID)");
  }
  if (!id_field(line, end, 2, &out->gid)) {
    hutch_error_set(err, EINVAL, "group %s: its line in the sandbox's /etc/group has no valid gid", s->group);
    return hutch_error_hint(err, "give the group by number (--user USER:GID)");
  }
  return 0;
}
