/* SPDX-License-Identifier: Apache-2.0 */
/* Who a sandbox's processes run as (hutch_sandbox_extras.user): the
 * spelling "USER[:GROUP]", each a number or a name, as Docker's --user
 * takes it, and what it means against the sandbox's own /etc/passwd and
 * /etc/group.  Pure: the files' contents are passed in (the sandbox's
 * setup reads them, contain/identity.c), and they are the sandbox's, so
 * hostile: every line is parsed within its own bounds. */
#ifndef HUTCH_USER_SPEC_H
#define HUTCH_USER_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"

#define USER_SPEC_NAME_MAX 32
/* The largest id: (uint32_t)-1 is the kernel's "no id". */
#define USER_SPEC_ID_MAX 4294967294u

struct user_spec {
  bool set;
  bool uid_numeric, group_given, gid_numeric;
  uint32_t uid, gid; /* the numbers given, when numeric */
  char user[USER_SPEC_NAME_MAX + 1], group[USER_SPEC_NAME_MAX + 1];
};

/* What a spec comes to in a sandbox. */
struct user_ident {
  uint32_t uid, gid;
  char home[256]; /* its /etc/passwd home, "" when it has no line there */
};

/* "1000", "1000:1000", "nobody", "nobody:nogroup", "app:100": EINVAL with
 * what is wrong otherwise.  NULL or "": out->set false. */
int user_spec_parse(const char *s, struct user_spec *out, hutch_error_t *err);
/* The spec names uid 0 and gid 0 whatever the files say ("0", "root",
 * "0:0", "root:root"): nothing to switch to, and nothing to map. */
bool user_spec_is_root(const struct user_spec *s);
/* The ids a spec names, as Docker resolves them: a name is looked up in
 * passwd (group), ENOENT when absent; a number is taken as it is, with
 * its passwd line's group and home when it has one, else gid 0 (Docker's
 * default).  passwd and group may be NULL (no such file). */
int user_spec_resolve(const struct user_spec *s, const char *passwd, const char *group, struct user_ident *out,
                      hutch_error_t *err);

#endif
