/* SPDX-License-Identifier: Apache-2.0 */
/* The prefix in front of libseccomp's program (seccomp_prefix.c): what it
 * answers for each class of numbers, what it leaves to the rest, that the
 * kernel's per-call cache can follow it; and the checks on sample calls
 * (seccomp_check.c): against libseccomp's whole program, and against the
 * profile's own rules. */
#include "config.h"

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <seccomp.h>

#include "seccomp_policy.h"
#include "tap.h"
#include "util.h"

#define REST_MARK 0x7ffd1234u /* what the stand-in for the rest returns */
#define DEFAULT_RET (SECCOMP_RET_ERRNO | 13)

/* What the kernel's seccomp_is_const_allow() (kernel/seccomp.c) decides for
 * a number when it builds the per-filter cache: only loads of the number
 * and the architecture, AND with a constant, constant jumps and returns
 * are followed; anything else, or a load of an argument or the instruction
 * pointer, means "run the filter at every call". */
static bool kernel_caches_allow(const struct sock_filter *f, size_t n, uint32_t arch, uint32_t nr) {
  uint32_t a = 0;
  for (size_t pc = 0; pc < n; pc++) {
    const struct sock_filter *i = &f[pc];
    switch (i->code) {
    case BPF_LD | BPF_W | BPF_ABS:
      if (i->k == offsetof(struct seccomp_data, nr))
        a = nr;
      else if (i->k == offsetof(struct seccomp_data, arch))
        a = arch;
      else
        return false;
      break;
    case BPF_RET | BPF_K:
      return i->k == SECCOMP_RET_ALLOW;
    case BPF_JMP | BPF_JA:
      pc += i->k;
      break;
    case BPF_JMP | BPF_JEQ | BPF_K:
      pc += a == i->k ? i->jt : i->jf;
      break;
    case BPF_JMP | BPF_JGE | BPF_K:
      pc += a >= i->k ? i->jt : i->jf;
      break;
    case BPF_JMP | BPF_JGT | BPF_K:
      pc += a > i->k ? i->jt : i->jf;
      break;
    case BPF_JMP | BPF_JSET | BPF_K:
      pc += (a & i->k) ? i->jt : i->jf;
      break;
    case BPF_ALU | BPF_AND | BPF_K:
      a &= i->k;
      break;
    default:
      return false;
    }
  }
  return false;
}

/* The prefix for cls with one return standing for the rest after it. */
static size_t with_rest(const uint8_t *cls, struct sock_filter *prog) {
  size_t n = seccomp_prefix_build(cls, seccomp_arch_native(), DEFAULT_RET, prog);
  if (n > 0)
    prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, REST_MARK);
  return n;
}

static uint32_t run(const struct sock_filter *prog, size_t n, uint32_t arch, int nr) {
  struct seccomp_data d;
  memset(&d, 0xa5, sizeof(d)); /* arguments the prefix must not look at */
  d.arch = arch;
  d.nr = nr;
  return seccomp_emulate(prog, n * sizeof(*prog), &d);
}

static void test_classes(void) {
  static uint8_t cls[SECCOMP_PREFIX_NRS];
  struct sock_filter prog[SECCOMP_PREFIX_MAX + 1];
  /* Runs of every class and length, in a fixed pseudo-random pattern. */
  uint32_t seed = 12345;
  for (int nr = 0; nr < SECCOMP_PREFIX_NRS;) {
    seed = seed * 1103515245 + 12345;
    int len = 1 + (int)((seed >> 16) % 40);
    uint8_t c = (uint8_t)((seed >> 8) % 3);
    for (int k = 0; k < len && nr < SECCOMP_PREFIX_NRS; k++)
      cls[nr++] = c;
  }
  size_t n = with_rest(cls, prog);
  tap_ok(n > 0 && n <= SECCOMP_PREFIX_MAX + 1, "a prefix is made for runs of all three classes (%zu instructions)", n);
  tap_ok(seccomp_program_valid(prog, n * sizeof(*prog)), "and with the rest after it, it is a valid program");
  uint32_t native = seccomp_arch_native();
  int wrong = -1;
  for (int nr = 0; nr < SECCOMP_PREFIX_NRS && wrong < 0; nr++) {
    uint32_t want = cls[nr] == SECCOMP_NR_ALLOW     ? SECCOMP_RET_ALLOW
                    : cls[nr] == SECCOMP_NR_DEFAULT ? DEFAULT_RET
                                                    : REST_MARK;
    if (run(prog, n, native, nr) != want)
      wrong = nr;
  }
  tap_is_int(wrong, -1, "each number below %d gets its class's answer: allowed, the default, or the rest",
             SECCOMP_PREFIX_NRS);
  static const int past[] = {SECCOMP_PREFIX_NRS, SECCOMP_PREFIX_NRS + 1, 0x40000000, 0x40000003, 0x7fffffff, -1};
  bool rest = true;
  for (size_t i = 0; i < ARRAY_SIZE(past); i++)
    rest = rest && run(prog, n, native, past[i]) == REST_MARK;
  tap_ok(rest, "numbers past the table (x32's, negative ones) go to the rest");
  rest = true;
  for (int nr = 0; nr < SECCOMP_PREFIX_NRS; nr++)
    rest = rest && run(prog, n, AUDIT_ARCH_I386, nr) == REST_MARK && run(prog, n, 0, nr) == REST_MARK;
  tap_ok(rest, "calls of another architecture go to the rest, whatever their number");
  int uncached = -1;
  for (int nr = 0; nr < SECCOMP_PREFIX_NRS && uncached < 0; nr++)
    if (cls[nr] == SECCOMP_NR_ALLOW && !kernel_caches_allow(prog, n, native, (uint32_t)nr))
      uncached = nr;
  tap_is_int(uncached, -1, "the kernel's cache can follow the prefix to every allowed number");

  /* Every number a run of its own: too many runs for jumps of 255. */
  for (int nr = 0; nr < SECCOMP_PREFIX_NRS; nr++)
    cls[nr] = (uint8_t)(nr % 2 ? SECCOMP_NR_ALLOW : SECCOMP_NR_REST);
  tap_is_int((long)seccomp_prefix_build(cls, native, DEFAULT_RET, prog), 0,
             "no prefix when the runs would not fit in its jumps");
  memset(cls, SECCOMP_NR_REST, sizeof(cls));
  tap_is_int((long)seccomp_prefix_build(cls, native, DEFAULT_RET, prog), 0, "no prefix when it would answer nothing");
}

static struct seccomp_profile *parse(const char *json) {
  struct seccomp_profile *p = NULL;
  hutch_error_t err = NULL;
  if (seccomp_profile_parse(json, strlen(json), "t.json", &p, &err) < 0) {
    printf("#   %s\n", err->msg);
    hutch_error_free(&err);
  }
  return p;
}

static int nr_of(const char *name) {
  int nr = -1;
  seccomp_resolve_name(name, &nr);
  return nr;
}

static void test_split(void) {
  struct seccomp_profile *p =
      parse("{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": 1, \"syscalls\": ["
            "{\"names\": [\"getppid\", \"getpid\", \"ioctl\", \"socket\"], \"action\": \"SCMP_ACT_ALLOW\"},"
            "{\"names\": [\"getppid\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 33, \"args\": "
            "[{\"index\": 0, \"value\": 7, \"op\": \"SCMP_CMP_EQ\"}]},"
            "{\"names\": [\"ioctl\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 1},"
            "{\"names\": [\"clone\"], \"action\": \"SCMP_ACT_ALLOW\", \"args\": "
            "[{\"index\": 0, \"value\": 256, \"op\": \"SCMP_CMP_MASKED_EQ\", \"valueTwo\": 0}]},"
            "{\"names\": [\"mount\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 1},"
            "{\"names\": [\"clone3\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 38},"
            "{\"names\": [\"getuid\"], \"action\": \"SCMP_ACT_KILL_PROCESS\"}]}");
  tap_ok(p != NULL, "a profile with every kind of rule parses");
  if (p == NULL)
    return;
  static uint8_t cls[SECCOMP_PREFIX_NRS];
  seccomp_split_profile(p, cls);
  static const struct {
    const char *name;
    uint8_t want;
    const char *why;
  } cases[] = {
      {"getpid", SECCOMP_NR_ALLOW, "allowed unconditionally, refused by no rule: the prefix allows it"},
      {"socket", SECCOMP_NR_ALLOW, "the same for another one"},
      {"getppid", SECCOMP_NR_REST, "allowed, but refused with some arguments: the rest judges it"},
      {"ioctl", SECCOMP_NR_REST, "allowed and refused (refusals win in the rest)"},
      {"clone", SECCOMP_NR_REST, "allowed with some arguments only"},
      {"mount", SECCOMP_NR_DEFAULT, "refused with the default's own action: the default"},
      {"clone3", SECCOMP_NR_REST, "refused with another errno"},
      {"getuid", SECCOMP_NR_REST, "refused with another action"},
      {"gettid", SECCOMP_NR_DEFAULT, "named by no rule: the default"},
  };
  for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
    tap_is_int(cls[nr_of(cases[i].name)], cases[i].want, "%s: %s", cases[i].name, cases[i].why);
  seccomp_profile_free(p);

  p = parse("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": ["
            "{\"names\": [\"getpid\"], \"action\": \"SCMP_ACT_ALLOW\"},"
            "{\"names\": [\"mount\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 1}]}");
  if (p == NULL)
    return;
  seccomp_split_profile(p, cls);
  tap_is_int(cls[nr_of("getpid")], SECCOMP_NR_DEFAULT, "under an allowing default, an allowed call is the default's");
  tap_is_int(cls[nr_of("mount")], SECCOMP_NR_REST, "and a refused one is the rest's");
  seccomp_profile_free(p);
}

static char *read_text(const char *path, size_t *len) {
  size_t n = 0;
  char *text = read_file_at(AT_FDCWD, path, 1 << 22, &n);
  if (len)
    *len = n;
  return text;
}

/* The check of a program against the profile's own rules. */
static void test_meaning(void) {
  /* Three rules allowing fchmod with ranged comparisons, none of which
   * holds for fchmod(0, 0, 0, 1, 0, 0): libseccomp 2.5.4 compiles them
   * into a program that allows it. */
  const char *ranged = "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": 1, \"syscalls\": ["
                       "{\"names\": [\"fchmod\"], \"action\": \"SCMP_ACT_ALLOW\", \"args\": "
                       "[{\"index\": 3, \"value\": 1, \"op\": \"SCMP_CMP_LT\"}]},"
                       "{\"names\": [\"fchmod\"], \"action\": \"SCMP_ACT_ALLOW\", \"args\": "
                       "[{\"index\": 2, \"value\": 222, \"op\": \"SCMP_CMP_LT\"}, {\"index\": 4, \"value\": 2, "
                       "\"op\": \"SCMP_CMP_GE\"}, {\"index\": 0, \"value\": 7, \"op\": \"SCMP_CMP_LE\"}]},"
                       "{\"names\": [\"fchmod\"], \"action\": \"SCMP_ACT_ALLOW\", \"args\": "
                       "[{\"index\": 1, \"value\": 237, \"op\": \"SCMP_CMP_MASKED_EQ\", \"valueTwo\": 0}, "
                       "{\"index\": 0, \"value\": 0, \"op\": \"SCMP_CMP_LT\"}, {\"index\": 4, \"value\": "
                       "9007199254740991, \"op\": \"SCMP_CMP_NE\"}]}]}";
  struct seccomp_profile *p = parse(ranged);
  if (p == NULL)
    return;
  void *bpf = NULL;
  size_t len = 0;
  hutch_error_t err = NULL;
  int r = seccomp_profile_compile(p, &bpf, &len, &err);
  if (r < 0) {
    tap_ok(strstr(err->msg, "compiled the profile wrongly: fchmod") != NULL && strstr(err->msg, "is allowed") &&
               strstr(err->msg, "the rules say errno 1"),
           "a profile libseccomp %s compiles wrongly is refused, naming the call (%s)", seccomp_library_version(),
           err->msg);
    hutch_error_free(&err);
  } else {
    struct seccomp_data d = {.nr = nr_of("fchmod"), .arch = seccomp_arch_native(), .args = {0, 0, 0, 1, 0, 0}};
    tap_ok(seccomp_emulate(bpf, len, &d) == (SECCOMP_RET_ERRNO | EPERM),
           "libseccomp %s compiles the ranged rules right: fchmod(0, 0, 0, 1, 0, 0) is refused",
           seccomp_library_version());
  }
  free(bpf);
  seccomp_profile_free(p);

  /* One ranged rule alone is compiled right, and accepted. */
  p = parse("{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": [{\"names\": [\"fchmod\"], \"action\": "
            "\"SCMP_ACT_ALLOW\", \"args\": [{\"index\": 3, \"value\": 1, \"op\": \"SCMP_CMP_LT\"}]}]}");
  if (p == NULL)
    return;
  bpf = NULL;
  r = seccomp_profile_compile(p, &bpf, &len, &err);
  tap_ok(r == 0, "a single ranged rule compiles and passes the check");
  if (r < 0)
    hutch_error_free(&err);
  free(bpf);
  seccomp_profile_free(p);
}

/* The same check finds a program changed after compiling. */
static void test_meaning_changed(const struct seccomp_profile *p, const struct sock_filter *f, size_t n) {
  hutch_error_t err = NULL;
  tap_is_int(seccomp_program_means(p, f, n * sizeof(*f), &err), 0,
             "the installed profile's program says what its rules say");
  hutch_error_free(&err);
  _cleanup_free_ struct sock_filter *changed = xmalloc(n * sizeof(*f));
  memcpy(changed, f, n * sizeof(*f));
  size_t last_allow = 0;
  for (size_t i = 0; i < n; i++)
    if (changed[i].code == (BPF_RET | BPF_K) && changed[i].k == SECCOMP_RET_ALLOW)
      last_allow = i;
  changed[last_allow].k = SECCOMP_RET_ERRNO | EPERM;
  int r = seccomp_program_means(p, changed, n * sizeof(*f), &err);
  tap_ok(r < 0 && err && strstr(err->msg, "is errno 1, where the rules say allowed"),
         "and one with an allow turned into a refusal does not (%s)", err ? err->msg : "accepted");
  hutch_error_free(&err);
}

/* The installed profile: its program, what each number gets, and the
 * check against a changed copy. */
static void test_shipped(void) {
  const char *env = getenv("HUTCH_SRCDIR");
  _cleanup_free_ char *path = xasprintf("%s/policies/seccomp.json", env ? env : "..");
  size_t len = 0;
  _cleanup_free_ char *json = read_text(path, &len);
  tap_ok(json != NULL, "policies/seccomp.json is read");
  if (json == NULL)
    return;
  struct seccomp_profile *p = NULL;
  hutch_error_t err = NULL;
  void *bpf = NULL;
  size_t bpf_len = 0;
  int r = seccomp_profile_parse(json, len, path, &p, &err);
  if (r == 0)
    r = seccomp_profile_compile(p, &bpf, &bpf_len, &err);
  tap_ok(r == 0, "it compiles");
  if (r < 0) {
    printf("#   %s\n", err->msg);
    hutch_error_free(&err);
    seccomp_profile_free(p);
    return;
  }
  struct sock_filter *f = bpf;
  size_t n = bpf_len / sizeof(*f);
  uint32_t native = seccomp_arch_native();
  tap_ok(n >= 3 && f[0].code == (BPF_LD | BPF_W | BPF_ABS) && f[0].k == offsetof(struct seccomp_data, arch) &&
             f[1].code == (BPF_JMP | BPF_JEQ | BPF_K) && f[1].k == native,
         "the program starts with the prefix");
  /* 563 instructions from libseccomp alone for this profile. */
  tap_ok(n < 300, "and is shorter than libseccomp's whole program (%zu instructions)", n);

  static uint8_t cls[SECCOMP_PREFIX_NRS];
  seccomp_split_profile(p, cls);
  size_t allowed = 0, defaulted = 0;
  int uncached = -1, wrong = -1;
  for (int nr = 0; nr < SECCOMP_PREFIX_NRS; nr++) {
    if (cls[nr] == SECCOMP_NR_ALLOW) {
      allowed++;
      if (run(f, n, native, nr) != SECCOMP_RET_ALLOW && wrong < 0)
        wrong = nr;
      if (!kernel_caches_allow(f, n, native, (uint32_t)nr) && uncached < 0)
        uncached = nr;
    } else if (cls[nr] == SECCOMP_NR_DEFAULT) {
      defaulted++;
      if (run(f, n, native, nr) != (SECCOMP_RET_ERRNO | EPERM) && wrong < 0)
        wrong = nr;
    }
  }
  tap_ok(allowed > 250, "most calls are allowed by the prefix (%zu)", allowed);
  tap_ok(defaulted > 500, "and most other numbers get the default there (%zu)", defaulted);
  tap_is_int(wrong, -1, "each gets its answer, whatever its arguments");
  tap_is_int(uncached, -1, "and the kernel caches every one the prefix allows");

  test_meaning_changed(p, f, n);
  tap_ok(seccomp_programs_agree(p, bpf, bpf_len, bpf, bpf_len), "the check finds a program agrees with itself");
  _cleanup_free_ struct sock_filter *changed = xmalloc(bpf_len);
  /* One allowed number refused instead. */
  memcpy(changed, f, bpf_len);
  size_t ret_allow = 0;
  for (size_t i = 0; i < n && !ret_allow; i++)
    if (changed[i].code == (BPF_RET | BPF_K) && changed[i].k == SECCOMP_RET_ALLOW)
      ret_allow = i;
  changed[ret_allow].k = SECCOMP_RET_ERRNO | EPERM;
  tap_ok(ret_allow > 0 && !seccomp_programs_agree(p, bpf, bpf_len, changed, bpf_len),
         "the check finds the prefix's allow turned into a refusal");
  /* TIOCSTI (0x5412), a refusal that depends on an argument, let through. */
  memcpy(changed, f, bpf_len);
  size_t tiocsti = 0;
  for (size_t i = 0; i < n && !tiocsti; i++)
    if (BPF_CLASS(changed[i].code) == BPF_JMP && BPF_OP(changed[i].code) == BPF_JEQ && changed[i].k == 0x5412)
      tiocsti = i;
  if (tiocsti)
    changed[tiocsti].k = 0x5499;
  tap_ok(tiocsti > 0 && !seccomp_programs_agree(p, bpf, bpf_len, changed, bpf_len),
         "and an argument's comparison changed in the rest (ioctl TIOCSTI)");
  free(bpf);
  seccomp_profile_free(p);
}

int main(void) {
  test_classes();
  test_split();
  test_shipped();
  test_meaning();
  return tap_done();
}
