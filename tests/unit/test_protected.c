/* SPDX-License-Identifier: Apache-2.0 */
/* protected.c: a path that is, contains or lies inside a protected one is
 * refused, however it is spelled; write-only entries refuse read-write use
 * only; what does not exist yet protects what would become its parents. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "protected.h"
#include "tap.h"
#include "util.h"

static char *tmp;

static char *at(const char *rel) {
  return rel[0] == '/' ? xstrdup(rel) : xasprintf("%s/%s", tmp, rel);
}

/* 0: allowed; else the start of the refusal's "how" ("is", "contains"...). */
static void check(const struct protected_set *set, const char *rel, bool writable, const char *want, const char *desc) {
  _cleanup_free_ char *path = at(rel);
  hutch_error_t err = NULL;
  int r = protected_check(set, path, writable, "--bind", NULL, &err);
  if (want == NULL) {
    tap_ok(r == 0, "%s: allowed", desc);
    if (r < 0)
      printf("#   %s\n", err->msg);
  } else {
    _cleanup_free_ char *needle = xasprintf("%s: %s ", path, want);
    tap_ok(r < 0 && err && err->errnum == EPERM && strstr(err->msg, needle) && err->hint,
           "%s: refused (%s), with a hint", desc, want);
    if (r == 0 || !strstr(err->msg, needle))
      printf("#   %s\n", err ? err->msg : "(allowed)");
  }
  hutch_error_free(&err);
}

int main(void) {
  char tmpl[] = "/tmp/test-protected.XXXXXX";
  tmp = mkdtemp(tmpl);
  if (tmp == NULL)
    return 1;
  static const char *const dirs[] = {
      "home", "home/.cache", "home/.cache/hutch", "home/.cache/hutch/seccomp", "home/.local", "home/work", "state",
      "pol",  "other"};
  for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
    _cleanup_free_ char *d = at(dirs[i]);
    mkdir(d, 0700);
  }
  _cleanup_free_ char *policy = at("pol/default.policy"), *entry = at("home/.cache/hutch/seccomp/x.bpf");
  write_file_atomic(policy, "x", 1, 0644);
  write_file_atomic(entry, "x", 1, 0644);
  _cleanup_free_ char *alias = at("alias"), *alias_target = at("home/.cache");
  if (symlink(alias_target, alias) < 0)
    printf("# symlink: %s\n", strerror(errno));

  struct protected_set set = {0};
  _cleanup_free_ char *cache = at("home/.cache/hutch"), *state = at("state"), *store = at("home/.local/share/hutch");
  protected_set_add(&set, cache, "hutch's cache", false);
  protected_set_add(&set, state, "hutch's state directory", false);
  protected_set_add(&set, store, "hutch's image store", false); /* not made yet */
  protected_set_add(&set, policy, "the policy file", true);

  check(&set, "home/work", true, NULL, "an unrelated directory");
  check(&set, "other", true, NULL, "a sibling of the protected ones");
  check(&set, "home", true, "contains hutch's cache", "the home that holds the cache");
  check(&set, "home", false, "contains hutch's cache", "the same, read-only");
  check(&set, "home/.cache/hutch", false, "is hutch's cache", "the cache itself");
  check(&set, "home/.cache/hutch/seccomp", false, "lies inside hutch's cache", "a directory in the cache");
  check(&set, "home/.cache/hutch/seccomp/x.bpf", false, "lies inside hutch's cache", "a file in the cache");
  check(&set, "state", false, "is hutch's state directory", "the state directory");
  check(&set, "alias", false, "contains hutch's cache", "a symlink to the cache's parent");
  check(&set, "alias/hutch/seccomp", false, "lies inside hutch's cache", "a path through the symlink");
  check(&set, "other/../home/.cache", false, "contains hutch's cache", "a path with ..");
  check(&set, "home/.local", true, "would contain hutch's image store", "above a store not made yet");
  check(&set, "home/.local", false, "would contain hutch's image store", "the same, read-only");
  check(&set, "pol", true, "contains the policy file", "a read-write bind of the policy's directory");
  check(&set, "pol", false, NULL, "a read-only one");
  check(&set, "pol/default.policy", true, "is the policy file", "a read-write bind of the policy");
  check(&set, "/", true, "contains", "the root");
  /* A relative name, as --policy ./p.policy gives it. */
  struct protected_set rel = {0};
  _cleanup_free_ char *pol_dir = at("pol");
  if (chdir(pol_dir) == 0)
    protected_set_add(&rel, "default.policy", "the policy file", true);
  check(&rel, "pol", true, "contains the policy file", "a policy named relative to the current directory");
  protected_set_clear(&rel);
  _cleanup_free_ char *missing = at("no-such-dir");
  hutch_error_t err = NULL;
  tap_ok(protected_check(&set, missing, false, "--bind", NULL, &err) < 0 && err->errnum == ENOENT,
         "a missing source is an error of its own");
  hutch_error_free(&err);
  protected_set_clear(&set);

  _cleanup_free_ char *cmd = xasprintf("rm -rf '%s'", tmp);
  if (system(cmd) != 0)
    printf("# could not remove %s\n", tmp);
  return tap_done();
}
