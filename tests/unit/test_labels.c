/* SPDX-License-Identifier: Apache-2.0 */
/* Sandbox names, labels and ps filters (labels.c): their syntax and the
 * matching of filters. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "labels.h"
#include "tap.h"

static bool name_ok(const char *name) {
  return labels_check_name(name, NULL) == 0;
}

static bool label_ok(const char *label) {
  return labels_check_label(label, NULL) == 0;
}

static bool filter_ok(const char *filter) {
  return hutch_sandbox_filter_check(filter, NULL) == 0;
}

static bool matches(const char *filter, const char *name, const char *const *labels, enum hutch_sandbox_state st) {
  return labels_filter_match(filter, name, labels, st);
}

int main(void) {
  char buf[512];

  /* names */
  tap_ok(name_ok("web"), "a plain name");
  tap_ok(name_ok("Web-1_a.b"), "letters, digits, '-', '_' and '.'");
  tap_ok(name_ok("7"), "one digit");
  memset(buf, 'n', 64);
  buf[64] = '\0';
  tap_ok(name_ok(buf), "64 characters");
  buf[64] = 'n';
  buf[65] = '\0';
  tap_ok(!name_ok(buf), "65 are too many");
  tap_ok(!name_ok(""), "empty");
  tap_ok(!name_ok(".web"), "a leading dot (it would be hidden like .names itself)");
  tap_ok(!name_ok("-web"), "a leading dash (an option)");
  tap_ok(!name_ok("a/b"), "a slash");
  tap_ok(!name_ok("a:b"), "a colon (cp's NAME:/PATH)");
  tap_ok(!name_ok("a b"), "a space");
  tap_ok(!name_ok("caf\xc3\xa9"), "non-ASCII");
  tap_ok(!name_ok("0123456789ab"), "id-like: 12 lowercase hex digits");
  tap_ok(name_ok("0123456789AB"), "uppercase hex is no id");
  tap_ok(name_ok("0123456789abc"), "13 hex digits are no id");
  tap_ok(name_ok("0123456789a"), "11 hex digits are no id");
  hutch_error_t err = NULL;
  tap_is_int(labels_check_name("0123456789ab", &err), -1, "an id-like name is refused");
  tap_ok(err && err->errnum == EINVAL && strstr(err->msg, "could be a sandbox's id"), "with EINVAL, saying why");
  hutch_error_free(&err);
  tap_ok(labels_id_like("deadbeef0123"), "an id is id-like");
  tap_ok(!labels_id_like("deadbeef012"), "11 digits are not");

  /* labels */
  tap_ok(label_ok("team=a"), "KEY=VALUE");
  tap_ok(label_ok("team="), "an empty value");
  tap_ok(label_ok("example.com/owner=x=y z"), "a key with '.' and '/', a value with '=' and a space");
  tap_ok(!label_ok("team"), "no '='");
  tap_ok(!label_ok("=a"), "no key");
  tap_ok(!label_ok("/team=a"), "a key starting with '/'");
  tap_ok(!label_ok("te am=a"), "a space in the key");
  tap_ok(!label_ok("team=a\tb"), "a tab in the value");
  tap_ok(!label_ok("team=a\nb"), "a newline in the value");
  tap_ok(!label_ok("team=\x7f"), "DEL in the value");
  tap_ok(!label_ok("team=caf\xc3\xa9"), "non-ASCII in the value");
  snprintf(buf, sizeof(buf), "k=%0256d", 0);
  tap_ok(label_ok(buf), "a value of 256 bytes");
  snprintf(buf, sizeof(buf), "k=%0257d", 0);
  tap_ok(!label_ok(buf), "a value of 257 bytes");
  memset(buf, 'k', 128);
  strcpy(buf + 128, "=v");
  tap_ok(label_ok(buf), "a key of 128 bytes");
  memset(buf, 'k', 129);
  strcpy(buf + 129, "=v");
  tap_ok(!label_ok(buf), "a key of 129 bytes");

  /* extras */
  const char *labels64[HUTCH_LABELS_MAX + 2];
  for (int i = 0; i <= HUTCH_LABELS_MAX; i++)
    labels64[i] = "k=v";
  labels64[HUTCH_LABELS_MAX] = NULL;
  struct hutch_sandbox_extras x = {.name = "web", .labels = labels64};
  tap_is_int(hutch_sandbox_extras_check(&x, NULL), 0, "64 labels");
  labels64[HUTCH_LABELS_MAX] = "k=v";
  labels64[HUTCH_LABELS_MAX + 1] = NULL;
  tap_is_int(hutch_sandbox_extras_check(&x, &err), -1, "65 labels are too many");
  tap_ok(err && err->errnum == EINVAL, "EINVAL");
  hutch_error_free(&err);
  tap_is_int(hutch_sandbox_extras_check(NULL, NULL), 0, "no extras");
  x = (struct hutch_sandbox_extras){.ttl = 5, .on_ttl = HUTCH_TTL_PAUSE};
  tap_is_int(hutch_sandbox_extras_check(&x, NULL), 0, "a ttl, with its action");
  x = (struct hutch_sandbox_extras){.ttl = -1};
  tap_is_int(hutch_sandbox_extras_check(&x, &err), -1, "a negative ttl");
  tap_ok(err && err->errnum == EINVAL, "EINVAL");
  hutch_error_free(&err);
  x = (struct hutch_sandbox_extras){.on_ttl = HUTCH_TTL_PAUSE};
  tap_is_int(hutch_sandbox_extras_check(&x, NULL), -1, "on_ttl without a ttl");
  x = (struct hutch_sandbox_extras){.n_ports = 1};
  tap_is_int(hutch_sandbox_extras_check(&x, &err), -1, "n_ports without ports");
  tap_ok(err && err->errnum == EINVAL, "EINVAL");
  hutch_error_free(&err);
  x = (struct hutch_sandbox_extras){.name = "a b"};
  tap_is_int(hutch_sandbox_extras_check(&x, NULL), -1, "a bad name");

  /* filters */
  tap_ok(filter_ok("name=web"), "name=NAME");
  tap_ok(filter_ok("label=team"), "label=KEY");
  tap_ok(filter_ok("label=team=a"), "label=KEY=VALUE");
  tap_ok(filter_ok("status=running") && filter_ok("status=paused") && filter_ok("status=dead"), "the statuses");
  tap_ok(!filter_ok("status=asleep"), "an unknown status");
  tap_ok(!filter_ok("colour=red"), "an unknown kind");
  tap_ok(!filter_ok("label="), "label= without a key");
  tap_ok(!filter_ok("name=a/b"), "name= with no valid name");
  tap_ok(!filter_ok("label"), "no '='");

  const char *const labels[] = {"team=a", "tier=front", "team=b", NULL};
  const char *const none[] = {NULL};
  tap_ok(matches("name=web", "web", labels, HUTCH_SANDBOX_RUNNING), "name matches");
  tap_ok(!matches("name=we", "web", labels, HUTCH_SANDBOX_RUNNING), "a prefix of the name does not");
  tap_ok(!matches("name=web", NULL, labels, HUTCH_SANDBOX_RUNNING), "a sandbox without a name does not");
  tap_ok(matches("label=tier", "web", labels, HUTCH_SANDBOX_RUNNING), "label=KEY: the key is there");
  tap_ok(!matches("label=tie", "web", labels, HUTCH_SANDBOX_RUNNING), "a prefix of a key is not it");
  tap_ok(matches("label=tier=front", "web", labels, HUTCH_SANDBOX_RUNNING), "label=KEY=VALUE");
  tap_ok(!matches("label=tier=fron", "web", labels, HUTCH_SANDBOX_RUNNING), "a prefix of the value is not it");
  tap_ok(matches("label=team=b", "web", labels, HUTCH_SANDBOX_RUNNING), "a key given twice: the last value counts");
  tap_ok(!matches("label=team=a", "web", labels, HUTCH_SANDBOX_RUNNING), "not the first");
  tap_ok(!matches("label=team", "web", none, HUTCH_SANDBOX_RUNNING), "no labels: no key");
  tap_ok(!matches("label=team", "web", NULL, HUTCH_SANDBOX_RUNNING), "NULL labels: no key");
  tap_ok(matches("status=dead", NULL, none, HUTCH_SANDBOX_DEAD), "status=dead");
  tap_ok(!matches("status=running", NULL, none, HUTCH_SANDBOX_DEAD), "a dead one is not running");
  tap_ok(!matches("colour=red", "web", labels, HUTCH_SANDBOX_RUNNING), "an invalid filter matches nothing");

  struct hutch_sandbox_status s = {.name = "web", .labels = (char **)labels, .state = HUTCH_SANDBOX_RUNNING};
  const char *const both[] = {"name=web", "label=tier=front", NULL};
  const char *const one_off[] = {"name=web", "label=tier=back", NULL};
  tap_ok(hutch_sandbox_status_matches(&s, both), "all filters match");
  tap_ok(!hutch_sandbox_status_matches(&s, one_off), "one that does not: no match");
  tap_ok(hutch_sandbox_status_matches(&s, NULL), "no filters: a match");
  return tap_done();
}
