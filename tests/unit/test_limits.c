/* Resource limits: the pure parts (runtime/policy/limits.c) and the policy's
 * [limits] section. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "resource_limits.h"
#include "memwatch.h"
#include "policy.h"
#include "tap.h"
#include "util.h"

static void test_sizes(void) {
  uint64_t v = 0;
  tap_ok(limits_parse_size("64M", false, &v) && v == 64ull << 20, "64M");
  tap_ok(limits_parse_size("2G", false, &v) && v == 2ull << 30, "2G");
  tap_ok(limits_parse_size("1.5GiB", false, &v) && v == 3ull << 29, "1.5GiB");
  tap_ok(limits_parse_size("4096", false, &v) && v == 4096, "plain bytes");
  tap_ok(limits_parse_size("max", true, &v) && v == LIMITS_UNLIMITED, "max where allowed");
  tap_ok(!limits_parse_size("max", false, &v), "max refused elsewhere");
  tap_ok(!limits_parse_size("-1G", false, &v), "negative refused");
  tap_ok(!limits_parse_size("12Q", false, &v), "unknown unit refused");
  tap_ok(!limits_parse_size("", false, &v), "empty refused");
  tap_ok(!limits_parse_size("0", false, &v), "zero refused");

  char buf[32];
  hutch_format_size(1ull << 30, buf, sizeof(buf));
  tap_is_str(buf, "1 GiB", "format 1 GiB");
  hutch_format_size(64ull << 20, buf, sizeof(buf));
  tap_is_str(buf, "64 MiB", "format 64 MiB");
  hutch_format_size(3ull << 29, buf, sizeof(buf));
  tap_is_str(buf, "1.5 GiB", "format 1.5 GiB");
  hutch_format_size(100, buf, sizeof(buf));
  tap_is_str(buf, "100 B", "format bytes");
}

static void test_cpus(void) {
  uint64_t m = 0, q = 0, p = 0;
  tap_ok(limits_parse_cpus("0.5", &m) && m == 500, "0.5 CPUs");
  tap_ok(limits_parse_cpus("2", &m) && m == 2000, "2 CPUs");
  tap_ok(!limits_parse_cpus("0", &m), "0 refused");
  tap_ok(!limits_parse_cpus("1.5x", &m), "junk refused");
  tap_ok(!limits_parse_cpus("5000", &m), "more than 4096 refused");
  limits_cpu_max(0.5, &q, &p);
  tap_ok(q == 50000 && p == 100000, "cpu.max for 0.5: 50000 100000");
  limits_cpu_max(2.25, &q, &p);
  tap_ok(q == 225000 && p == 100000, "cpu.max for 2.25: 225000 100000");
  limits_cpu_max(0.001, &q, &p);
  tap_ok(q == 1000, "the quota is at least 1 ms");
}

static void test_plan(void) {
  struct policy_limits pol = {.memory = 2ull << 30, .cpus_milli = 1000, .pids = 1024};
  struct limits_plan plan;
  limits_plan_make(NULL, &pol, &plan);
  tap_ok(plan.memory == 2ull << 30 && plan.memory_src == LIMIT_POLICY, "policy memory");
  tap_ok(plan.cpu_quota_usec == 100000 && plan.cpus_src == LIMIT_POLICY, "policy cpus");
  tap_ok(plan.pids == 1024 && plan.pids_src == LIMIT_POLICY, "policy pids");
  tap_ok(!limits_plan_strict(&plan), "policy defaults with fallback = rlimits are not strict");
  char c[64];
  limits_plan_controllers(&plan, c, sizeof(c));
  tap_is_str(c, "cpu memory pids", "controllers needed");

  struct hutch_limits ex = {.memory = 64ull << 20};
  limits_plan_make(&ex, &pol, &plan);
  tap_ok(plan.memory == 64ull << 20 && plan.memory_src == LIMIT_EXPLICIT, "an option overrides the policy");
  tap_ok(limits_plan_strict(&plan), "an explicit limit is strict");
  char names[256];
  limits_plan_strict_names(&plan, names, sizeof(names));
  tap_is_str(names, "--memory", "and is named as its option");

  pol.required = 1;
  limits_plan_make(NULL, &pol, &plan);
  tap_ok(limits_plan_strict(&plan), "required = yes is strict");
  limits_plan_strict_names(&plan, names, sizeof(names));
  tap_ok(strstr(names, "[limits] memory (required = yes)") != NULL, "named by its key: %s", names);

  pol.required = 0;
  pol.fallback = LIMITS_FALLBACK_REFUSE;
  limits_plan_make(NULL, &pol, &plan);
  tap_ok(limits_plan_strict(&plan), "fallback = refuse is strict");

  struct policy_limits unlimited = {.memory = LIMITS_UNLIMITED, .pids = LIMITS_UNLIMITED};
  limits_plan_make(NULL, &unlimited, &plan);
  tap_ok(!limits_plan_any(&plan), "\"max\" sets no limit");

  pol.fallback = LIMITS_FALLBACK_RLIMITS;
  limits_plan_make(NULL, &pol, &plan);
  struct limits_rlimits rl;
  limits_plan_rlimits(&plan, 0, &rl);
  tap_ok(rl.n == 2 && rl.r[0].resource == RLIMIT_AS && rl.r[0].value == 2ull << 30 &&
             rl.r[1].resource == RLIMIT_NPROC && rl.r[1].value == 1024,
         "rlimits: RLIMIT_AS and RLIMIT_NPROC");
  limits_rlimits_gaps(&plan, 0, names, sizeof(names));
  tap_ok(strstr(names, "cpus") != NULL, "without a timeout the CPU rate is named as not limited");
  limits_plan_rlimits(&plan, 10, &rl);
  tap_ok(rl.n == 3 && rl.r[2].resource == RLIMIT_CPU && rl.r[2].value == 10, "with --timeout 10: RLIMIT_CPU 10 s");
}

static void test_kernel_text(void) {
  _cleanup_free_ char *p = limits_cgroup2_path("12:pids:/x\n0::/user.slice/user-1000.slice/session-2.scope\n");
  tap_is_str(p, "/user.slice/user-1000.slice/session-2.scope", "the cgroup v2 line of /proc/self/cgroup");
  _cleanup_free_ char *none = limits_cgroup2_path("4:memory:/a\n");
  tap_ok(none == NULL, "no v2 line: NULL");
  _cleanup_free_ char *del = limits_cgroup2_path("0::/gone (deleted)\n");
  tap_ok(del == NULL, "a deleted cgroup: NULL");
  uint64_t v = 0;
  const char *events = "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n";
  tap_ok(limits_keyed_value(events, "oom_kill", &v) && v == 1, "memory.events oom_kill");
  tap_ok(limits_keyed_value(events, "oom", &v) && v == 1, "a key that prefixes another");
  tap_ok(!limits_keyed_value(events, "nope", &v), "missing key");
  tap_ok(limits_has_word("cpuset cpu io memory pids", "cpu"), "cpu in the list");
  tap_ok(!limits_has_word("cpuset io memory pids", "cpu"), "cpuset is not cpu");
}

static void expect_policy(const char *text, const char *want_error, const char *what) {
  struct policy_settings s = {0};
  hutch_error_t err = NULL;
  int r = policy_parse(text, "t.policy", &s, &err);
  if (want_error == NULL) {
    tap_ok(r == 0, "%s", what);
    if (r < 0)
      printf("#   %s\n", err->msg);
  } else {
    tap_ok(r < 0 && strstr(err->msg, want_error) != NULL, "%s", what);
    if (r == 0 || strstr(err->msg, want_error) == NULL)
      printf("#   got \"%s\"\n", r < 0 ? err->msg : "(success)");
  }
  hutch_error_free(&err);
  policy_settings_clear(&s);
}

static void test_policy(void) {
  struct policy_settings s = {0};
  hutch_error_t err = NULL;
  int r = policy_parse("[sandbox]\nseccomp = s.json\n[limits]\nmemory = 2G\ncpus = 0.5\npids = 1024\n"
                       "io_weight = 50\nfallback = refuse\nrequired = yes\n",
                       "t.policy", &s, &err);
  tap_ok(r == 0, "[limits] parses");
  tap_ok(s.limits.memory == 2ull << 30 && s.limits.memory_line == 4, "memory = 2G, line 4");
  tap_ok(s.limits.cpus_milli == 500, "cpus = 0.5");
  tap_ok(s.limits.pids == 1024 && s.limits.io_weight == 50, "pids, io_weight");
  tap_ok(s.limits.fallback == LIMITS_FALLBACK_REFUSE && s.limits.required == 1, "fallback, required");
  hutch_error_free(&err);
  policy_settings_clear(&s);
  expect_policy("[sandbox]\nseccomp = s\n[limits]\nmemory = max\npids = max\ncpus = max\n", NULL, "max everywhere");
  expect_policy("[sandbox]\nseccomp = s\n[limits]\nmemory = lots\n", "t.policy:4: bad value for memory",
                "a bad size names file:line");
  expect_policy("[sandbox]\nseccomp = s\n[limits]\nmemory = 1M\n", "too small", "1M of memory is refused");
  expect_policy("[sandbox]\nseccomp = s\n[limits]\ncpus = 0\n", "bad value for cpus", "0 CPUs refused");
  expect_policy("[sandbox]\nseccomp = s\n[limits]\npids = 2\n", "bad value for pids", "2 pids refused");
  expect_policy("[sandbox]\nseccomp = s\n[limits]\nfallback = ignore\n", "bad value for fallback",
                "fallback only rlimits or refuse");
  expect_policy("[sandbox]\nseccomp = s\n[limits]\nrequired = maybe\n", "bad value for required", "required yes/no");
  expect_policy("[sandbox]\nseccomp = s\n[limits]\nswap = 1G\n", "unknown key \"swap\" in [limits]",
                "unknown [limits] key");
}

static void test_new_limits(void) {
  struct policy_settings s = {0};
  hutch_error_t err = NULL;
  int r = policy_parse("[sandbox]\nseccomp = s.json\n[limits]\ndisk = 512M\nimage_size = 100M\nimage_entries = 10\n",
                       "t.policy", &s, &err);
  tap_ok(r == 0 && s.limits.disk == 512ull << 20, "disk = 512M");
  struct import_budget b;
  limits_import_budget(&s.limits, "t.policy", &b);
  tap_ok(b.bytes == 100ull << 20 && b.entries == 10 && strcmp(b.policy, "t.policy") == 0, "the import budget");
  hutch_error_free(&err);
  policy_settings_clear(&s);
  struct policy_limits none = {0};
  limits_import_budget(&none, NULL, &b);
  tap_ok(b.bytes == LIMITS_DEFAULT_IMAGE_SIZE && b.entries == LIMITS_DEFAULT_IMAGE_ENTRIES, "left out: the defaults");
  tap_ok(limits_or_default(0, LIMITS_DEFAULT_DISK) == 4ull << 30, "disk left out: 4 GiB");
  expect_policy("[sandbox]\nseccomp = s\n[limits]\ndisk = 4K\n", "too small", "4K of disk is refused");
  expect_policy("[sandbox]\nseccomp = s\n[limits]\nimage_entries = 0\n", "bad value for image_entries",
                "0 image entries refused");

  uint64_t v = 0;
  tap_ok(memwatch_parse_status("Name:\tx\nVmRSS:\t  900 kB\nRssAnon:\t  700 kB\nRssFile:\t 150 kB\n"
                               "RssShmem:\t  50 kB\n",
                               &v) &&
             v == 750 * 1024,
         "memwatch: RssAnon + RssShmem, not RssFile");
  tap_ok(!memwatch_parse_status("Name:\tkthreadd\nState:\tS\n", &v), "memwatch: no Rss fields, no sum");
  tap_is_int(memwatch_next_ms(0, 1ull << 30, 1), MEMWATCH_INTERVAL_MS, "far from the limit: the full interval");
  tap_is_int(memwatch_next_ms((1ull << 30) - (16ull << 20), 1ull << 30, 1), 3, "16 MiB left at 4 GiB/s: 3 ms");
  tap_is_int(memwatch_next_ms(2ull << 30, 1ull << 30, 2), 1, "past the limit: 1 ms");
}

static void test_pools(void) {
  uint64_t cur, max;
  limits_pool_rlimit(1024, 96367, 96367, &cur, &max);
  tap_ok(cur == 1024 && max == 1024, "a pool's rlimit: lowered to the sandbox's share");
  limits_pool_rlimit(1024, 0, 0, &cur, &max);
  tap_ok(cur == 0 && max == 0, "a caller's lower limit is kept (RLIMIT_MSGQUEUE 0)");
  limits_pool_rlimit(1024, 10, RLIM_INFINITY, &cur, &max);
  tap_ok(cur == 10 && max == 1024, "a lower soft limit stays, the hard one is bounded");
  limits_pool_rlimit(1024, RLIM_INFINITY, RLIM_INFINITY, &cur, &max);
  tap_ok(cur == 1024 && max == 1024, "unlimited becomes the share");
  char text[256];
  limits_pools_text(text, sizeof(text));
  tap_is_str(text,
             "16 inotify instances, 8192 inotify watches, 16 fanotify groups, 8192 fanotify marks, 1024 pending "
             "signals, 128 KiB of POSIX message queues",
             "the pools, as policy show lists them");
  size_t sysctls = 0, rlimits = 0;
  for (size_t i = 0; i < limits_n_pools; i++) {
    sysctls += limits_pools[i].sysctl != NULL;
    rlimits += limits_pools[i].resource >= 0;
    tap_ok((limits_pools[i].sysctl != NULL) != (limits_pools[i].resource >= 0) && limits_pools[i].value > 0,
           "each pool is bounded one way: %s", limits_pools[i].what);
  }
  tap_ok(sysctls == 4 && rlimits == 2, "four /proc/sys/user limits and two rlimits");
}

int main(void) {
  test_new_limits();
  test_pools();
  test_sizes();
  test_cpus();
  test_plan();
  test_kernel_text();
  test_policy();
  return tap_done();
}
