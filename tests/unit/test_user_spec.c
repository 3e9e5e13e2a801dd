/* SPDX-License-Identifier: Apache-2.0 */
/* --user USER[:GROUP]: its spelling, and what it comes to against a
 * sandbox's /etc/passwd and /etc/group (which are hostile). */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "tap.h"
#include "user_spec.h"

static const char passwd[] = "root:x:0:0:root:/root:/bin/bash\n"
                             "# a comment:x:5:5::/c:\n"
                             "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
                             "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
                             "app:x:1000:100:App,,,:/home/app:/bin/sh\n"
                             "broken:x:12x:1:::\n"
                             "short:x\n"
                             "toor:x:0:0::/root:/bin/sh\n"
                             "relhome:x:1001:1001::home:/bin/sh"; /* no newline last */
static const char group[] = "root:x:0:\nusers:x:100:\nnogroup:x:65534:\nstaff:x:50:app\nbad:x::\n";

static int resolve(const char *spec, struct user_ident *id, int *errnum) {
  struct user_spec s;
  hutch_error_t err = NULL;
  int r = user_spec_parse(spec, &s, &err);
  if (r == 0)
    r = user_spec_resolve(&s, passwd, group, id, &err);
  *errnum = err ? err->errnum : 0;
  hutch_error_free(&err);
  return r;
}

int main(void) {
  struct user_spec s;
  hutch_error_t err = NULL;

  tap_is_int(user_spec_parse(NULL, &s, NULL), 0, "no spec");
  tap_ok(!s.set, "no spec: nothing set");
  tap_is_int(user_spec_parse("1000:1000", &s, NULL), 0, "uid:gid parses");
  tap_ok(s.set && s.uid_numeric && s.uid == 1000 && s.group_given && s.gid_numeric && s.gid == 1000, "uid:gid");
  tap_is_int(user_spec_parse("nobody", &s, NULL), 0, "a name parses");
  tap_ok(!s.uid_numeric && strcmp(s.user, "nobody") == 0 && !s.group_given, "a name alone");
  tap_is_int(user_spec_parse("4294967294", &s, NULL), 0, "the largest id");
  const char *bad[] = {"4294967295", "99999999999", ":",   "1000:",       ":1000",
                       "a b",        "-x",          "x/y", "1000:1000:1", "a234567890123456789012345678901234",
                       "$x"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    int r = user_spec_parse(bad[i], &s, &err);
    tap_ok(r < 0 && err && err->errnum == EINVAL && err->hint && !s.set, "refused: '%s'", bad[i]);
    hutch_error_free(&err);
  }
  tap_ok(user_spec_parse("root\n", &s, NULL) < 0, "refused: a name with a newline");
  tap_is_int(user_spec_parse("machine$", &s, NULL), 0, "a machine account's name");

  user_spec_parse("root", &s, NULL);
  tap_ok(user_spec_is_root(&s), "root is root");
  user_spec_parse("0:root", &s, NULL);
  tap_ok(user_spec_is_root(&s), "0:root is root");
  user_spec_parse("0:100", &s, NULL);
  tap_ok(!user_spec_is_root(&s), "0:100 is not");
  user_spec_parse("nobody", &s, NULL);
  tap_ok(!user_spec_is_root(&s), "nobody is not");

  struct user_ident id;
  int e;
  tap_is_int(resolve("1000:1000", &id, &e), 0, "numbers resolve");
  tap_ok(id.uid == 1000 && id.gid == 1000 && strcmp(id.home, "/home/app") == 0, "numbers: as given, home from passwd");
  tap_is_int(resolve("1000", &id, &e), 0, "a listed uid alone");
  tap_ok(id.uid == 1000 && id.gid == 100, "its group from passwd");
  tap_is_int(resolve("4242", &id, &e), 0, "an unlisted uid alone");
  tap_ok(id.uid == 4242 && id.gid == 0 && id.home[0] == '\0', "gid 0 and no home, as Docker");
  tap_is_int(resolve("nobody", &id, &e), 0, "a name");
  tap_ok(id.uid == 65534 && id.gid == 65534 && strcmp(id.home, "/nonexistent") == 0, "nobody's ids and home");
  tap_is_int(resolve("app:staff", &id, &e), 0, "name:group");
  tap_ok(id.uid == 1000 && id.gid == 50, "app:staff");
  tap_is_int(resolve("nobody:0", &id, &e), 0, "name:gid");
  tap_ok(id.uid == 65534 && id.gid == 0, "nobody:0");
  tap_is_int(resolve("ghost", &id, &e), -1, "an unknown user");
  tap_is_int(e, ENOENT, "ENOENT");
  tap_is_int(resolve("app:ghosts", &id, &e), -1, "an unknown group");
  tap_is_int(e, ENOENT, "ENOENT");
  tap_is_int(resolve("broken", &id, &e), -1, "a line without a valid uid");
  tap_is_int(e, EINVAL, "EINVAL");
  tap_is_int(resolve("short", &id, &e), -1, "a line cut short");
  tap_is_int(resolve("app:bad", &id, &e), -1, "a group without a gid");
  tap_is_int(resolve("relhome", &id, &e), 0, "the last line without a newline");
  tap_ok(id.uid == 1001 && id.home[0] == '\0', "a relative home is no home");
  tap_is_int(resolve("a", &id, &e), -1, "a prefix of no name");
  tap_is_int(resolve("toor", &id, &e), -1, "a name other than root's that the image gives uid 0");
  tap_is_int(e, EPERM, "EPERM: it would be root all the same");
  tap_is_int(resolve("root:users", &id, &e), 0, "root by name, with a group");
  tap_ok(id.uid == 0 && id.gid == 100, "root:users");
  tap_is_int(resolve("0:0", &id, &e), 0, "uid 0 by number is asked for plainly");

  user_spec_parse("nobody", &s, NULL);
  tap_is_int(user_spec_resolve(&s, NULL, NULL, &id, &err), -1, "no /etc/passwd: a name cannot resolve");
  hutch_error_free(&err);
  user_spec_parse("7:8", &s, NULL);
  tap_is_int(user_spec_resolve(&s, NULL, NULL, &id, NULL), 0, "no /etc/passwd: numbers still do");
  tap_ok(id.uid == 7 && id.gid == 8, "7:8");
  return tap_done();
}
