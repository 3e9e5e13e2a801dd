/* SPDX-License-Identifier: Apache-2.0 */
/* OCI `linux.seccomp` profiles, described for `hutch policy show` (text
 * and JSON): which syscalls are allowed, refused, conditional or not known
 * here.  The parsing is seccomp_profile.c. */
#include "config.h"

#include <seccomp.h>

#include "seccomp_policy.h"

#include <cJSON.h>
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "util.h"

/* ---- description ------------------------------------------------------ */

static const struct {
  const char *syscall;
  const char *args[6];
} arg_names[] = {
    {"clone", {"flags"}},
    {"socket", {"domain", "type", "protocol"}},
    {"socketpair", {"domain", "type", "protocol", "sv"}},
    {"ioctl", {"fd", "request", "arg"}},
    {"personality", {"persona"}},
    {"prctl", {"option", "arg2", "arg3", "arg4", "arg5"}},
    {"fcntl", {"fd", "cmd", "arg"}},
    {"mmap", {"addr", "length", "prot", "flags", "fd", "offset"}},
    {"mprotect", {"addr", "length", "prot"}},
    {"kill", {"pid", "sig"}},
    {"setsockopt", {"fd", "level", "optname", "optval", "optlen"}},
};

static const struct {
  const char *syscall;
  unsigned index;
  uint64_t value;
  const char *label;
} value_names[] = {
    {"socket", 0, 1, "AF_UNIX"},
    {"socket", 0, 2, "AF_INET"},
    {"socket", 0, 10, "AF_INET6"},
    {"socket", 0, 16, "AF_NETLINK"},
    {"socket", 0, 17, "AF_PACKET"},
    {"socket", 0, 38, "AF_ALG"},
    {"socket", 0, 40, "AF_VSOCK"},
    {"socket", 1, 1, "SOCK_STREAM"},
    {"socket", 1, 2, "SOCK_DGRAM"},
    {"socket", 1, 3, "SOCK_RAW"},
    {"socket", 1, 5, "SOCK_SEQPACKET"},
    {"socket", 2, 1, "IPPROTO_ICMP"},
    {"socket", 2, 6, "IPPROTO_TCP"},
    {"socket", 2, 17, "IPPROTO_UDP"},
    {"socket", 2, 58, "IPPROTO_ICMPV6"},
    {"socketpair", 0, 1, "AF_UNIX"},
    {"setsockopt", 1, 6, "SOL_TCP"},
    {"setsockopt", 2, 31, "TCP_ULP"},
    {"ioctl", 1, 0x5412, "TIOCSTI"},
    {"ioctl", 1, 0x541c, "TIOCLINUX"},
    {"personality", 0, 0, "PER_LINUX"},
    {"personality", 0, 8, "PER_LINUX32"},
    {"personality", 0, 0x20000, "UNAME26"},
    {"personality", 0, 0x20008, "UNAME26|PER_LINUX32"},
    {"personality", 0, 0xffffffff, "query"},
};

static const char *arg_name(const char *syscall, unsigned index) {
  static const char *generic[] = {"arg0", "arg1", "arg2", "arg3", "arg4", "arg5"};
  for (size_t i = 0; i < ARRAY_SIZE(arg_names); i++)
    if (strcmp(arg_names[i].syscall, syscall) == 0 && index < 6 && arg_names[i].args[index])
      return arg_names[i].args[index];
  return generic[index % 6];
}

static void append(char **buf, const char *fmt, ...) HUTCH_PRINTF(2, 3);
static void append(char **buf, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *add = xvasprintf(fmt, ap);
  va_end(ap);
  char *joined = xasprintf("%s%s", *buf ? *buf : "", add);
  free(add);
  free(*buf);
  *buf = joined;
}

static void append_value(char **buf, const char *syscall, unsigned index, uint64_t v) {
  if (v < 256)
    append(buf, "%" PRIu64, v);
  else
    append(buf, "0x%" PRIx64, v);
  for (size_t i = 0; i < ARRAY_SIZE(value_names); i++)
    if (value_names[i].index == index && value_names[i].value == v && strcmp(value_names[i].syscall, syscall) == 0)
      append(buf, " (%s)", value_names[i].label);
}

/* "flags & 0x7e020000 == 0 and type == 1 (SOCK_STREAM)" */
static char *conditions_text(const char *syscall, const struct seccomp_rule *r) {
  static const char *ops[] = {
      [SECCOMP_OP_NE] = "!=", [SECCOMP_OP_LT] = "<", [SECCOMP_OP_LE] = "<=",        [SECCOMP_OP_EQ] = "==",
      [SECCOMP_OP_GE] = ">=", [SECCOMP_OP_GT] = ">", [SECCOMP_OP_MASKED_EQ] = "==",
  };
  char *buf = NULL;
  for (size_t i = 0; i < r->n_args; i++) {
    const struct seccomp_arg *a = &r->args[i];
    append(&buf, "%s%s ", i ? " and " : "", arg_name(syscall, a->index));
    if (a->op == SECCOMP_OP_MASKED_EQ) {
      append(&buf, "& 0x%" PRIx64 " == ", a->value);
      append_value(&buf, syscall, a->index, a->value_two);
    } else {
      append(&buf, "%s ", ops[a->op]);
      append_value(&buf, syscall, a->index, a->value);
    }
  }
  return buf ? buf : xstrdup("");
}

static char *action_text(const struct seccomp_action *a) {
  switch (a->kind) {
  case SECCOMP_ACT_ALLOW:
    return xstrdup("allow");
  case SECCOMP_ACT_ERRNO:
    return xasprintf("errno %s (%d)", seccomp_errno_name(a->errnum), a->errnum);
  case SECCOMP_ACT_KILL_THREAD:
    return xstrdup("kill the thread");
  case SECCOMP_ACT_KILL_PROCESS:
    return xstrdup("kill the process");
  case SECCOMP_ACT_TRAP:
    return xstrdup("SIGSYS");
  case SECCOMP_ACT_LOG:
    return xstrdup("allow and log");
  }
  return xstrdup("?");
}

/* A name's fate on this host, for the effective view. */
struct name_view {
  const char *name;
  enum seccomp_name_kind kind;
  int nr;
};

static int name_cmp(const void *a, const void *b) {
  return strcmp(((const struct name_view *)a)->name, ((const struct name_view *)b)->name);
}

/* Distinct names of the rules matching `allows` and `conditional`, sorted. */
static struct name_view *collect_names(const struct seccomp_profile *p, bool allows, bool conditional, size_t *n) {
  size_t cap = 16, count = 0;
  struct name_view *v = xcalloc(cap, sizeof(*v));
  for (size_t i = 0; i < p->n_rules; i++) {
    const struct seccomp_rule *r = &p->rules[i];
    if ((r->action.kind == SECCOMP_ACT_ALLOW) != allows || (r->n_args > 0) != conditional)
      continue;
    for (size_t k = 0; k < r->n_names; k++) {
      bool seen = false;
      for (size_t j = 0; j < count && !seen; j++)
        seen = strcmp(v[j].name, r->names[k]) == 0;
      if (seen)
        continue;
      if (count == cap)
        v = xrealloc(v, (cap *= 2) * sizeof(*v));
      v[count].name = r->names[k];
      v[count].nr = -1;
      v[count].kind = seccomp_resolve_name(r->names[k], &v[count].nr);
      count++;
    }
  }
  qsort(v, count, sizeof(*v), name_cmp);
  *n = count;
  return v;
}

static bool applies_here(const struct name_view *v) {
  return v->kind == SECCOMP_NAME_NATIVE;
}

bool seccomp_profile_covers_native(const struct seccomp_profile *p) {
  const char *native = seccomp_native_oci_arch();
  if (p->n_arches == 0)
    return true;
  for (size_t i = 0; native && i < p->n_arches; i++)
    if (strcmp(p->arches[i], native) == 0)
      return true;
  return false;
}

static void print_wrapped(FILE *out, const char *indent, const struct name_view *v, size_t n, bool effective) {
  size_t col = 0;
  for (size_t i = 0; i < n; i++) {
    if (effective && !applies_here(&v[i]))
      continue;
    char word[96];
    if (effective)
      snprintf(word, sizeof(word), "%s(%d)", v[i].name, v[i].nr);
    else
      snprintf(word, sizeof(word), "%s", v[i].name);
    size_t len = strlen(word);
    if (col > 0 && col + 1 + len > 76) {
      fputc('\n', out);
      col = 0;
    }
    if (col == 0) {
      fputs(indent, out);
      col = strlen(indent);
    } else {
      fputc(' ', out);
      col++;
    }
    fputs(word, out);
    col += len;
  }
  if (col > 0)
    fputc('\n', out);
}

static size_t count_here(const struct name_view *v, size_t n, bool effective) {
  size_t c = 0;
  for (size_t i = 0; i < n; i++)
    if (!effective || applies_here(&v[i]))
      c++;
  return c;
}

static bool rule_names(const struct seccomp_rule *r, const char *name) {
  for (size_t m = 0; m < r->n_names; m++)
    if (strcmp(r->names[m], name) == 0)
      return true;
  return false;
}

/* The conditional rules of one class for each syscall, one alternative per
 * line (rules are OR'd):
 *     socket: allowed only when domain == 1 (AF_UNIX)
 *       or when domain == 2 (AF_INET) and type & 0xfff7f7ff == 1 (SOCK_STREAM) */
static void print_conditional(FILE *out, const struct seccomp_profile *p, bool allows, bool effective) {
  size_t n;
  _cleanup_free_ struct name_view *v = collect_names(p, allows, true, &n);
  for (size_t i = 0; i < n; i++) {
    if (effective && !applies_here(&v[i]))
      continue;
    if (effective)
      fprintf(out, "    %s(%d): ", v[i].name, v[i].nr);
    else
      fprintf(out, "    %s: ", v[i].name);
    bool first = true;
    for (size_t k = 0; k < p->n_rules; k++) {
      const struct seccomp_rule *r = &p->rules[k];
      if ((r->action.kind == SECCOMP_ACT_ALLOW) != allows || r->n_args == 0 || !rule_names(r, v[i].name))
        continue;
      _cleanup_free_ char *cond = conditions_text(v[i].name, r);
      _cleanup_free_ char *act = action_text(&r->action);
      if (!first)
        fprintf(out, "\n      or ");
      if (allows)
        fprintf(out, "%s%s", first ? "allowed only when " : "when ", cond);
      else
        fprintf(out, "%s when %s", act, cond);
      first = false;
    }
    fputc('\n', out);
  }
}

/* Unconditional refusals, grouped by action:
 *     errno ENOSYS (38): clone3 fsconfig fsmount ... */
static void print_refused(FILE *out, const struct seccomp_profile *p, bool effective) {
  size_t n;
  _cleanup_free_ struct name_view *v = collect_names(p, false, false, &n);
  _cleanup_free_ struct name_view *group = xcalloc(n + 1, sizeof(*group));
  for (size_t k = 0; k < p->n_rules; k++) {
    const struct seccomp_rule *r = &p->rules[k];
    if (r->action.kind == SECCOMP_ACT_ALLOW || r->n_args > 0)
      continue;
    bool done = false; /* printed with an earlier rule of the same action */
    for (size_t j = 0; j < k && !done; j++)
      done = p->rules[j].action.kind != SECCOMP_ACT_ALLOW && p->rules[j].n_args == 0 &&
             seccomp_action_same(&p->rules[j].action, &r->action);
    if (done)
      continue;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
      for (size_t j = k; j < p->n_rules; j++) {
        const struct seccomp_rule *o = &p->rules[j];
        if (o->action.kind != SECCOMP_ACT_ALLOW && o->n_args == 0 && seccomp_action_same(&o->action, &r->action) &&
            rule_names(o, v[i].name)) {
          group[m++] = v[i];
          break;
        }
      }
    }
    if (count_here(group, m, effective) == 0)
      continue;
    _cleanup_free_ char *act = action_text(&r->action);
    fprintf(out, "    %s for %zu system calls:\n", act, count_here(group, m, effective));
    print_wrapped(out, "      ", group, m, effective);
  }
}

static void print_skipped(FILE *out, const struct seccomp_profile *p, bool effective) {
  size_t n_a, n_b, n_c, n_d;
  struct name_view *lists[4];
  size_t counts[4];
  lists[0] = collect_names(p, true, false, &n_a);
  lists[1] = collect_names(p, true, true, &n_b);
  lists[2] = collect_names(p, false, false, &n_c);
  lists[3] = collect_names(p, false, true, &n_d);
  counts[0] = n_a;
  counts[1] = n_b;
  counts[2] = n_c;
  counts[3] = n_d;
  for (int pass = 0; pass < 2; pass++) {
    enum seccomp_name_kind want = pass == 0 ? SECCOMP_NAME_UNKNOWN : SECCOMP_NAME_ABSENT;
    if (want == SECCOMP_NAME_ABSENT && !effective)
      break;
    /* names may appear in several lists: print each once */
    struct name_view *merged = xcalloc(n_a + n_b + n_c + n_d + 1, sizeof(*merged));
    size_t m = 0;
    for (int l = 0; l < 4; l++) {
      for (size_t i = 0; i < counts[l]; i++) {
        if (lists[l][i].kind != want)
          continue;
        bool seen = false;
        for (size_t j = 0; j < m && !seen; j++)
          seen = strcmp(merged[j].name, lists[l][i].name) == 0;
        if (!seen)
          merged[m++] = lists[l][i];
      }
    }
    qsort(merged, m, sizeof(*merged), name_cmp);
    if (m > 0) {
      if (want == SECCOMP_NAME_UNKNOWN)
        fprintf(out, "  unknown to libseccomp %s and to hutch on %s, skipped (%zu):\n", seccomp_library_version(),
                seccomp_native_arch(), m);
      else
        fprintf(out, "  not system calls on %s, ignored here (%zu):\n", seccomp_native_arch(), m);
      print_wrapped(out, "    ", merged, m, false);
    }
    free(merged);
  }
  for (int l = 0; l < 4; l++)
    free(lists[l]);
}

int seccomp_profile_describe(const struct seccomp_profile *p, bool effective, FILE *out, hutch_error_t *err) {
  _cleanup_free_ char *def = action_text(&p->default_action);
  fprintf(out, "seccomp profile: %s\n", p->source);
  fprintf(out, "  default action: %s\n", def);
  fprintf(out, "  architectures:");
  for (size_t i = 0; i < p->n_arches; i++)
    fprintf(out, " %s", p->arches[i]);
  fprintf(out, "%s\n", p->n_arches ? "" : " (not listed: the host's)");
  if (effective) {
    fprintf(out, "  this host: %s, libseccomp %s; %s\n", seccomp_native_arch(), seccomp_library_version(),
            seccomp_profile_covers_native(p) ? "system calls of any other ABI kill the process"
                                             : "NOT covered by the profile: no sandbox can start here");
  }

  size_t n_allowed, n_filtered;
  _cleanup_free_ struct name_view *allowed = collect_names(p, true, false, &n_allowed);
  _cleanup_free_ struct name_view *filtered = collect_names(p, true, true, &n_filtered);
  size_t here = 0;
  for (size_t i = 0; i < n_allowed; i++)
    if (effective ? applies_here(&allowed[i]) : allowed[i].kind != SECCOMP_NAME_UNKNOWN)
      here++;
  fprintf(out, "  allowed: %zu system calls%s\n", here, effective ? " on this host" : "");
  print_wrapped(out, "    ", allowed, n_allowed, effective);
  if (count_here(filtered, n_filtered, effective) > 0) {
    fprintf(out, "  allowed with argument filters:\n");
    print_conditional(out, p, true, effective);
  }
  size_t n_ru, n_rc;
  _cleanup_free_ struct name_view *ru = collect_names(p, false, false, &n_ru);
  _cleanup_free_ struct name_view *rc = collect_names(p, false, true, &n_rc);
  if (count_here(ru, n_ru, effective) + count_here(rc, n_rc, effective) > 0) {
    fprintf(out, "  refused, whatever the allow rules say:\n");
    print_refused(out, p, effective);
    print_conditional(out, p, false, effective);
  }
  fprintf(out, "  everything else: %s\n", def);
  print_skipped(out, p, effective);
  return 0;
}

/* ---- JSON description --------------------------------------------------- */

static cJSON *action_json(const struct seccomp_action *a) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "action", seccomp_action_name(a));
  if (a->kind == SECCOMP_ACT_ERRNO) {
    cJSON_AddStringToObject(o, "errno", seccomp_errno_name(a->errnum));
    cJSON_AddNumberToObject(o, "errnoRet", a->errnum);
  }
  return o;
}

static cJSON *name_json(const struct name_view *v, bool effective) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "name", v->name);
  if (effective)
    cJSON_AddNumberToObject(o, "nr", v->nr);
  return o;
}

static cJSON *rule_entries_json(const struct seccomp_profile *p, bool allows, bool effective) {
  cJSON *arr = cJSON_CreateArray();
  for (size_t k = 0; k < p->n_rules; k++) {
    const struct seccomp_rule *r = &p->rules[k];
    if ((r->action.kind == SECCOMP_ACT_ALLOW) != allows || (allows && r->n_args == 0))
      continue;
    for (size_t m = 0; m < r->n_names; m++) {
      struct name_view v = {.name = r->names[m], .nr = -1};
      v.kind = seccomp_resolve_name(v.name, &v.nr);
      if (effective ? !applies_here(&v) : v.kind == SECCOMP_NAME_UNKNOWN)
        continue;
      cJSON *o = name_json(&v, effective);
      cJSON_AddItemToObject(o, "action", action_json(&r->action));
      if (r->n_args > 0) {
        _cleanup_free_ char *cond = conditions_text(v.name, r);
        cJSON_AddStringToObject(o, "when", cond);
        cJSON *args = cJSON_AddArrayToObject(o, "args");
        for (size_t i = 0; i < r->n_args; i++) {
          cJSON *a = cJSON_CreateObject();
          cJSON_AddNumberToObject(a, "index", r->args[i].index);
          cJSON_AddNumberToObject(a, "value", (double)r->args[i].value);
          if (r->args[i].op == SECCOMP_OP_MASKED_EQ)
            cJSON_AddNumberToObject(a, "valueTwo", (double)r->args[i].value_two);
          cJSON_AddStringToObject(a, "op", seccomp_op_name(r->args[i].op));
          cJSON_AddItemToArray(args, a);
        }
      }
      cJSON_AddNumberToObject(o, "rule", (double)r->index);
      if (r->comment)
        cJSON_AddStringToObject(o, "comment", r->comment);
      cJSON_AddItemToArray(arr, o);
    }
  }
  return arr;
}

int seccomp_profile_describe_json(const struct seccomp_profile *p, bool effective, cJSON *obj, hutch_error_t *err) {
  cJSON_AddStringToObject(obj, "profile", p->source);
  cJSON_AddItemToObject(obj, "default_action", action_json(&p->default_action));
  cJSON *arches = cJSON_AddArrayToObject(obj, "architectures");
  for (size_t i = 0; i < p->n_arches; i++)
    cJSON_AddItemToArray(arches, cJSON_CreateString(p->arches[i]));
  if (effective) {
    cJSON_AddStringToObject(obj, "native_architecture", seccomp_native_arch());
    cJSON_AddBoolToObject(obj, "covers_native_architecture", seccomp_profile_covers_native(p));
    cJSON_AddStringToObject(obj, "libseccomp", seccomp_library_version());
  }
  size_t n_allowed;
  _cleanup_free_ struct name_view *allowed = collect_names(p, true, false, &n_allowed);
  cJSON *list = cJSON_CreateArray();
  for (size_t i = 0; i < n_allowed; i++)
    if (effective ? applies_here(&allowed[i]) : allowed[i].kind != SECCOMP_NAME_UNKNOWN)
      cJSON_AddItemToArray(list, name_json(&allowed[i], effective));
  cJSON_AddNumberToObject(obj, "allowed_count", cJSON_GetArraySize(list));
  cJSON_AddItemToObject(obj, "allowed", list);
  cJSON_AddItemToObject(obj, "filtered", rule_entries_json(p, true, effective));
  cJSON_AddItemToObject(obj, "refused", rule_entries_json(p, false, effective));

  cJSON *skipped = cJSON_AddArrayToObject(obj, "skipped");
  for (int allows = 0; allows < 2; allows++) {
    for (int conditional = 0; conditional < 2; conditional++) {
      size_t n;
      _cleanup_free_ struct name_view *v = collect_names(p, allows, conditional, &n);
      for (size_t i = 0; i < n; i++) {
        if (v[i].kind != SECCOMP_NAME_UNKNOWN && !(effective && v[i].kind == SECCOMP_NAME_ABSENT))
          continue;
        bool seen = false;
        const cJSON *s;
        cJSON_ArrayForEach(s, skipped) {
          seen = seen || strcmp(cJSON_GetObjectItemCaseSensitive(s, "name")->valuestring, v[i].name) == 0;
        }
        if (seen)
          continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", v[i].name);
        cJSON_AddStringToObject(o, "reason",
                                v[i].kind == SECCOMP_NAME_UNKNOWN ? "unknown to libseccomp" : "not a system call here");
        cJSON_AddItemToArray(skipped, o);
      }
    }
  }
  return 0;
}
