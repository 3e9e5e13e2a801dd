/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "settings.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lis_compat.h"
#include "lis_package.h"
#include "options.h"
#include "util.h"
#include "yaml_map.h"

#define EXIT_USAGE 2

enum kind { K_STR, K_DOUBLE, K_LONG, K_SIZE, K_DURATION, K_BOOL };

/* One row per setting: its hutch option, its LLM-in-Sandbox spelling (also
 * accepted as a settings-file key), and where it goes. */
static const struct setting_def {
  const char *name;
  const char *alias;
  const char *alias2;
  enum kind kind;
  size_t offset;
  bool positive;
} defs[] = {
    {"query", NULL, NULL, K_STR, offsetof(struct settings, query), false},
    {"model", "llm_name", "llm-name", K_STR, offsetof(struct settings, model), false},
    {"base-url", "llm_base_url", "llm-base-url", K_STR, offsetof(struct settings, base_url), false},
    {"api-key", "api_key", NULL, K_STR, offsetof(struct settings, api_key), false},
    {"temperature", NULL, NULL, K_DOUBLE, offsetof(struct settings, temperature), false},
    {"max-steps", "max_steps", NULL, K_LONG, offsetof(struct settings, max_steps), true},
    {"max-tokens-per-call", "max_tokens_per_call", NULL, K_LONG, offsetof(struct settings, max_tokens_per_call), true},
    {"max-token-limit", "max_token_limit", NULL, K_LONG, offsetof(struct settings, max_token_limit), true},
    {"input-dir", "input_dir", NULL, K_STR, offsetof(struct settings, input_dir), false},
    {"output-dir", "output_dir", NULL, K_STR, offsetof(struct settings, output_dir), false},
    {"prompt-config", "prompt_config", NULL, K_STR, offsetof(struct settings, prompt_config), false},
    {"extra-body", "extra_body", NULL, K_STR, offsetof(struct settings, extra_body), false},
    {"tool-timeout", "tool_timeout", NULL, K_DURATION, offsetof(struct settings, tool_timeout), true},
    {"llm-timeout", "llm_timeout", NULL, K_DURATION, offsetof(struct settings, llm_timeout), true},
    {"max-tries", "max_tries", NULL, K_LONG, offsetof(struct settings, max_tries), true},
    {"retry-delay", "retry_delay", NULL, K_DURATION, offsetof(struct settings, retry_delay), true},
    {"max-reply-size", "max_reply_size", NULL, K_SIZE, offsetof(struct settings, max_reply_size), true},
    {"max-calls-per-reply", NULL, NULL, K_LONG, offsetof(struct settings, max_calls_per_reply), true},
    {"max-observation-size", NULL, NULL, K_SIZE, offsetof(struct settings, max_observation_size), true},
    {"max-conversation-size", NULL, NULL, K_SIZE, offsetof(struct settings, max_conversation_size), true},
    {"run-timeout", NULL, NULL, K_DURATION, offsetof(struct settings, run_timeout), true},
    {"copy-limit", "copy_limit", NULL, K_SIZE, offsetof(struct settings, copy_limit), true},
    {"shell", NULL, NULL, K_STR, offsetof(struct settings, shell), false},
    {"tools", NULL, NULL, K_STR, offsetof(struct settings, tools), false},
    {"tools-file", NULL, NULL, K_STR, offsetof(struct settings, tools_file), false},
    {"no-reasoning-echo", NULL, NULL, K_BOOL, offsetof(struct settings, no_reasoning_echo), false},
    {"quiet", NULL, NULL, K_BOOL, offsetof(struct settings, quiet), false},
    {"no-die-with-parent", NULL, NULL, K_BOOL, offsetof(struct settings, no_die_with_parent), false},
    {"rootfs", NULL, NULL, K_STR, offsetof(struct settings, rootfs), false},
    {"store", NULL, NULL, K_STR, offsetof(struct settings, store), false},
    {"state-dir", "state_dir", NULL, K_STR, offsetof(struct settings, state_dir), false},
    {"policy", NULL, NULL, K_STR, offsetof(struct settings, policy), false},
    {"hostname", NULL, NULL, K_STR, offsetof(struct settings, hostname), false},
    {"memory", NULL, NULL, K_SIZE, offsetof(struct settings, memory), true},
    {"memory-swap", NULL, NULL, K_SIZE, offsetof(struct settings, memory_swap), true},
    {"disk", NULL, NULL, K_SIZE, offsetof(struct settings, disk), true},
    {"cpus", NULL, NULL, K_DOUBLE, offsetof(struct settings, cpus), true},
    {"pids", NULL, NULL, K_LONG, offsetof(struct settings, pids), true},
    {"io-weight", NULL, NULL, K_LONG, offsetof(struct settings, io_weight), true},
    {"cgroup-parent", NULL, NULL, K_STR, offsetof(struct settings, cgroup_parent), false},
    {"no-cgroups", NULL, NULL, K_BOOL, offsetof(struct settings, no_cgroups), false},
    {"overlay", NULL, NULL, K_STR, offsetof(struct settings, overlay), false},
    {"proc", NULL, NULL, K_STR, offsetof(struct settings, proc), false},
    {"net", NULL, NULL, K_STR, offsetof(struct settings, net), false},
    {"net-policy", "net_policy", NULL, K_STR, offsetof(struct settings, net_policy), false},
    {"docker-image", "docker_image", NULL, K_STR, offsetof(struct settings, docker_image), false},
    {"save-litellm-response", "save_litellm_response", NULL, K_BOOL, offsetof(struct settings, save_litellm_response),
     false},
    {"verify", NULL, NULL, K_STR, offsetof(struct settings, verify), false},
    {"lis", NULL, NULL, K_STR, offsetof(struct settings, lis), false},
};

bool settings_benchmark_order;

/* LLM-in-Sandbox's run command's parameters in its order: Python Fire
 * binds the words that are not options to those not given as options, in
 * this order (llm-in-sandbox run TASK MODEL ...). */
static const char *const fire_run[] = {"query",
                                       "model",
                                       "docker-image",
                                       "max-steps",
                                       "temperature",
                                       "max-token-limit",
                                       "max-tokens-per-call",
                                       "input-dir",
                                       "output-dir",
                                       "base-url",
                                       "api-key",
                                       "prompt-config",
                                       "save-litellm-response",
                                       "extra-body",
                                       "settings"};

/* Fire's short flags of that command: the first letter of each parameter
 * that no other parameter shares (llm-in-sandbox run --help lists them);
 * the letters two share, Fire refuses as ambiguous. */
static const struct {
  char letter;
  const char *name;      /* NULL: ambiguous */
  const char *ambiguous; /* Fire's list of the parameters it could be */
} fire_short[] = {
    {'q', "query", NULL},
    {'d', "docker-image", NULL},
    {'t', "temperature", NULL},
    {'i', "input-dir", NULL},
    {'o', "output-dir", NULL},
    {'a', "api-key", NULL},
    {'p', "prompt-config", NULL},
    {'e', "extra-body", NULL},
    {'l', NULL, "['llm_name', 'llm_base_url']"},
    {'m', NULL, "['max_steps', 'max_token_limit', 'max_tokens_per_call']"},
    {'s', NULL, "['save_litellm_response', 'settings']"},
};

/* LLM-in-Sandbox's environment: its benchmark command reads the four, between
 * the command line and the settings file (flag > variable > file); its run
 * command reads LLM_BASE_URL only, after the file (flag > file > variable),
 * and hutch run reads LLM_NAME there too, where LLM-in-Sandbox would have
 * no model at all. */
static const struct {
  const char *var;
  const char *setting;
} env_defs[] = {
    {"LLM_NAME", "model"},
    {"LLM_BASE_URL", "base-url"},
    {"LLM_API_KEY", "api-key"},
    {"LLM_TEMPERATURE", "temperature"},
};

enum { OPT_BASE = 1000, OPT_SETTINGS = 2000, OPT_ENV, OPT_BIND, OPT_HELP, OPT_ALLOW, OPT_RESOLVE, OPT_JSON };

void settings_usage(FILE *out) {
  fprintf(out, "Usage: hutch run [--query] TEXT [OPTIONS]\n\n"
               "Give an OpenAI-compatible model a sandboxed computer and let it work on TEXT\n"
               "(`--query -` reads it from stdin). Results go to OUTPUT-DIR/YYYYMMDD_HHMMSS/:\n"
               "files/ (the sandbox's output directory), trajectory.json and run.log.\n"
               "Exit status: 0 submitted, 1 ended without submit (steps, token budget or\n"
               "conversation size spent), 2 usage, 3 the model's API failed, 124 --run-timeout\n"
               "reached, 125 hutch failed, 130/143 interrupted.\n"
               "LLM-in-Sandbox's spellings, in parentheses, are accepted as options too, with\n"
               "Python Fire's forms (-q -t -a -p -e -i -d -o, \"no\" before a yes/no option's\n"
               "name, the model as the word after the task), and its run command's order:\n"
               "options, settings file, LLM_BASE_URL\n"
               "(and LLM_NAME), OPENAI_API_KEY; LLM_IN_SANDBOX_CONFIG names the settings file.\n\n"
               "Model:\n"
               "  --query TEXT               the task (- reads stdin); or TEXT alone\n"
               "  --model NAME               model name (llm_name); anthropic/ and azure/ refused\n"
               "  --base-url URL             API base (llm_base_url; default $LLM_BASE_URL,\n"
               "                             else http://localhost:8000/v1)\n"
               "  --api-key KEY              bearer key (api_key; default $OPENAI_API_KEY, else dummy)\n"
               "  --temperature T            sampling temperature (1.0; not sent to o3/o4 models)\n"
               "  --max-steps N              steps before giving up: each tool call run, and each\n"
               "                             reply without one (max_steps; 100)\n"
               "  --max-calls-per-reply N    tool calls of one reply that are run; as many more\n"
               "                             are answered \"not run\", the rest left out (16)\n"
               "  --max-tokens-per-call N    max_tokens of each request (max_tokens_per_call; 65536)\n"
               "  --max-token-limit N        token budget of the conversation (max_token_limit; 65536)\n"
               "  --extra-body JSON          merged into every request body (extra_body)\n"
               "  --llm-timeout SECONDS      timeout of one request (600)\n"
               "  --max-tries N              tries of one request on 429/5xx/network errors (5)\n"
               "  --retry-delay SECONDS      first backoff delay, doubled on each retry (1)\n"
               "  --max-reply-size BYTES     largest reply accepted (16M)\n"
               "  --max-observation-size BYTES\n"
               "                             one call's output, cut in the middle beyond (64K)\n"
               "  --max-conversation-size BYTES\n"
               "                             replies and tool output of the whole run; the run\n"
               "                             ends past it (16M)\n"
               "  --run-timeout SECONDS      wall-clock limit of the whole run (4h); the files are\n"
               "                             still copied back\n"
               "  --save-litellm-response    each request and reply as request_NNN.json and\n"
               "                             response_NNN.json in the run directory\n"
               "                             (save_litellm_response)\n"
               "Task:\n"
               "  --input-dir DIR            copied into the sandbox's input directory (input_dir)\n"
               "  --output-dir DIR           where run directories are made (output_dir; ./output)\n"
               "  --prompt-config FILE       prompt YAML (prompt_config; see hutch-prompt(5))\n"
               "  --settings FILE            settings YAML (default $LLM_IN_SANDBOX_CONFIG,\n"
               "                             ./hutch.yaml, ~/.config/hutch/config.yaml, then\n"
               "                             LLM-in-Sandbox's: see hutch-run(1))\n"
               "  --tool-timeout SECONDS     timeout of one execute_bash call (120)\n"
               "  --shell MODE               fresh: a new shell per command (default);\n"
               "                             persistent: one shell per task (cd, export carry over)\n"
               "  --tools PROFILE            lis: LLM-in-Sandbox 0.2.0's tool results byte for\n"
               "                             byte (default); hutch: hutch's editor (any text file,\n"
               "                             undo_edit, no overwriting create, exact bytes)\n"
               "  --tools-file FILE          JSON array of tool schemas sent instead of hutch's\n"
               "  --lis[=DIR]                the prompt config and tool schemas of the installed\n"
               "                             LLM-in-Sandbox (or of its package directory DIR)\n"
               "  --no-reasoning-echo        do not send the model's reasoning_content back\n"
               "  --copy-limit BYTES         most bytes copied back into files/ (1G)\n"
               "  --verify CMD               run CMD with /bin/sh -c in the sandbox once the model is\n"
               "                             done; its status and last line go to trajectory.json\n"
               "  --quiet                    only warnings and errors on stderr\n"
               "  --json                     one JSON object per event on stdout, the run\n"
               "                             directory in the last (see hutch-run(1)); stderr\n"
               "                             as with --quiet\n"
               "  --no-die-with-parent       go on when the program that started hutch run dies\n"
               "                             (by default the run stops and its sandbox goes)\n"
               "Sandbox (as for hutch exec):\n"
               "  --rootfs NAME              image (default: the image named default)\n"
               "  --docker-image REF         the store's image REF, else pulled from\n"
               "                             docker://REF first (docker_image)\n"
               "  --store DIR                rootfs store\n"
               "  --state-dir DIR            sandbox state directory\n"
               "  --policy FILE              sandbox policy\n"
               "  --env K=V                  environment variable for every command (repeatable)\n"
               "  --bind SRC:DST[:ro]        bind-mount a host path (repeatable)\n"
               "  --hostname NAME            hostname inside the sandbox\n"
               "  --memory SIZE              memory limit of the sandbox (default: the policy's)\n"
               "  --memory-swap SIZE         swap it may use besides (default 0)\n"
               "  --disk SIZE                writable layer, /tmp, /dev/shm (default: the policy's)\n"
               "  --cpus N                   CPUs' worth of time, fractional (default: the policy's)\n"
               "  --pids N                   processes at most (default: the policy's)\n"
               "  --io-weight N              io.weight, 1 to 10000\n"
               "  --cgroup-parent PATH       cgroup under which the sandbox's goes\n"
               "  --no-cgroups               rlimits only (see hutch-exec(1))\n"
               "  --overlay MODE             kernel (default) or fuse: degraded, see hutch-exec(1)\n"
               "  --proc MODE                fresh (default) or host-ro: degraded, see hutch-exec(1)\n"
               "  --net MODE                 proxy: through hutch's allowlist HTTP proxy (see\n"
               "                             hutch-exec(1)); none: loopback only (default: the\n"
               "                             policy's [network] run, proxy in the shipped one)\n"
               "  --allow HOST[:PORT]        with --net proxy: also allow this host (repeatable)\n"
               "  --net-policy FILE          with --net proxy: its [network] replaces the policy's\n"
               "  --resolve NAME=ADDR        with --net proxy: resolver override for tests (repeatable)\n"
               "  -h, --help                 show this help\n");
}

static char *underscored(const char *s) {
  char *u = xstrdup(s);
  for (char *p = u; *p; p++)
    if (*p == '-')
      *p = '_';
  return u;
}

static const struct setting_def *find_def(const char *key) {
  _cleanup_free_ char *u = underscored(key);
  for (size_t i = 0; i < ARRAY_SIZE(defs); i++) {
    _cleanup_free_ char *n = underscored(defs[i].name);
    if (strcmp(u, n) == 0 || (defs[i].alias && strcmp(u, defs[i].alias) == 0))
      return &defs[i];
  }
  return NULL;
}

/* Sets one value; returns false with a message in *why. */
static bool apply(struct settings *s, const struct setting_def *d, const char *value, char **why) {
  void *field = (char *)s + d->offset;
  char *end;
  errno = 0;
  switch (d->kind) {
  case K_STR:
    free(*(char **)field);
    *(char **)field = xstrdup(value);
    return true;
  case K_DOUBLE: {
    double v = strtod(value, &end);
    if (errno || end == value || *end) {
      *why = xasprintf("--%s wants a number, got '%s'", d->name, value);
      return false;
    }
    if (d->positive && !(v > 0)) {
      *why = xasprintf("--%s wants a positive number, got '%s'", d->name, value);
      return false;
    }
    *(double *)field = v;
    if (field == &s->temperature)
      s->has_temperature = true;
    return true;
  }
  case K_LONG: {
    long v = strtol(value, &end, 10);
    if (errno || end == value || *end || (d->positive && v <= 0)) {
      *why = xasprintf("--%s wants a positive integer, got '%s'", d->name, value);
      return false;
    }
    *(long *)field = v;
    return true;
  }
  case K_SIZE:
    if (!hutch_parse_size(value, (uint64_t *)field) || *(uint64_t *)field == 0) {
      *why = xasprintf("--%s wants a size such as 16M, got '%s'", d->name, value);
      return false;
    }
    return true;
  case K_DURATION:
    if (!parse_duration(value, (double *)field)) {
      *why = xasprintf("--%s wants a positive number of seconds, got '%s'", d->name, value);
      return false;
    }
    return true;
  case K_BOOL:
    if (strcmp(value, "true") == 0 || strcmp(value, "True") == 0 || strcmp(value, "yes") == 0 ||
        strcmp(value, "1") == 0)
      *(bool *)field = true;
    else if (strcmp(value, "false") == 0 || strcmp(value, "False") == 0 || strcmp(value, "no") == 0 ||
             strcmp(value, "0") == 0)
      *(bool *)field = false;
    else {
      *why = xasprintf("%s wants true or false, got '%s'", d->name, value);
      return false;
    }
    return true;
  }
  return false;
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "hutch run: ");
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\nTry `hutch run --help`.\n");
  return EXIT_USAGE;
}

static void add_env(struct settings *s, const char *kv) {
  s->env = xrealloc(s->env, (s->n_env + 2) * sizeof(char *));
  s->env[s->n_env++] = xstrdup(kv);
  s->env[s->n_env] = NULL;
}

static bool is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The settings file: --settings, else $LLM_IN_SANDBOX_CONFIG, else the
 * first regular file of hutch's own places, then LLM-in-Sandbox's. */
static int load_file(struct settings *s, const char *explicit_path) {
  static const char *const places[] = {
      "hutch.yaml",          "~/.config/hutch/config.yaml",   "llm-in-sandbox.yaml",
      "llm_in_sandbox.yaml", "~/.llm-in-sandbox/config.yaml", "~/.llm-in-sandbox.yaml",
  };
  _cleanup_free_ char *found = NULL;
  const char *path = explicit_path;
  const char *env = getenv("LLM_IN_SANDBOX_CONFIG");
  if (path == NULL && env && *env) {
    if (is_file(env))
      path = env;
    else
      fprintf(stderr, "hutch run: warning: LLM_IN_SANDBOX_CONFIG=%s is not a file; looking in the usual places\n", env);
  }
  const char *home = getenv("HOME");
  /* The current directory's files are not read inside a run or benchmark
   * directory: a sandbox wrote what is there, and a settings file names
   * the endpoint that gets the API key. */
  _cleanup_free_ char *marked = path == NULL ? hutch_output_marked(".") : NULL;
  for (size_t i = 0; path == NULL && i < ARRAY_SIZE(places); i++) {
    if (places[i][0] == '~' && !(home && *home))
      continue;
    if (places[i][0] != '~' && marked) {
      if (is_file(places[i])) {
        _cleanup_free_ char *shown = text_escape_cstr(marked);
        fprintf(stderr,
                "hutch run: warning: not reading ./%s: %s is a hutch output directory (it holds %s), whose files "
                "a sandbox may have written; give --settings FILE to use it\n",
                places[i], shown, HUTCH_OUTPUT_MARK);
      }
      continue;
    }
    free(found);
    found = places[i][0] == '~' ? xasprintf("%s%s", home, places[i] + 1) : xstrdup(places[i]);
    if (is_file(found))
      path = found;
  }
  if (path == NULL)
    return -1;
  struct yaml_map m;
  hutch_error_t err = NULL;
  if (yaml_map_load(path, &m, &err) < 0) {
    hutch_error_wrap(&err, "settings file");
    hutch_error_print(stderr, "hutch run", err);
    hutch_error_free(&err);
    return EXIT_USAGE;
  }
  s->settings_file = xstrdup(path);
  for (size_t i = 0; i < m.n; i++) {
    const struct setting_def *d = find_def(m.keys[i]);
    if (d == NULL) {
      fprintf(stderr, "hutch run: warning: %s: unknown key '%s' ignored\n", path, m.keys[i]);
      continue;
    }
    _cleanup_free_ char *why = NULL;
    if (!apply(s, d, m.values[i], &why)) {
      fprintf(stderr, "hutch run: %s: %s\n", path, why);
      yaml_map_clear(&m);
      return EXIT_USAGE;
    }
  }
  yaml_map_clear(&m);
  return -1;
}

/* LLM-in-Sandbox's rules that are checks rather than values. */
static int check_lis(struct settings *s) {
  const char *prefix = lis_refused_prefix(s->model);
  if (prefix) {
    fprintf(stderr,
            "hutch run: the model '%s' names LiteLLM's %s route, which is not the chat-completions protocol\n"
            "hint: hutch speaks only the OpenAI chat-completions protocol: serve the model behind an "
            "OpenAI-compatible endpoint (a LiteLLM proxy, vLLM, SGLang, or the provider's own compatible API) "
            "and give it with --base-url URL --model NAME\n",
            s->model, prefix);
    return EXIT_USAGE;
  }
  s->has_temperature = lis_sends_temperature(s->model);
  if (s->docker_image && s->rootfs)
    return usage_error("%s", "--docker-image and --rootfs both name the image: give one");
  if (s->docker_image && s->docker_image[0] == '\0')
    return usage_error("%s", "--docker-image wants an image reference");
  /* A missing input directory is skipped, as LLM-in-Sandbox does, but said. */
  struct stat st;
  if (s->input_dir && (stat(s->input_dir, &st) < 0 || !S_ISDIR(st.st_mode))) {
    fprintf(stderr, "hutch run: warning: --input-dir %s is not a directory; the task runs without input files\n",
            s->input_dir);
    free(s->input_dir);
    s->input_dir = NULL;
  }
  return -1;
}

static char *read_stdin_all(void) {
  size_t cap = 4096, len = 0;
  char *buf = xmalloc(cap);
  for (;;) {
    if (len + 1 >= cap)
      buf = xrealloc(buf, cap *= 2);
    ssize_t n = read(0, buf + len, cap - len - 1);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    len += (size_t)n;
  }
  buf[len] = '\0';
  return buf;
}

/* Python Fire's forms of LLM-in-Sandbox's command line as hutch's: -t X and
 * -t=X as --temperature, --noX of a yes/no option as --X=false.  What Fire
 * refuses (a short flag two parameters share) is refused with its reason,
 * and --noX of any other option, which Fire sets to False, with hutch's.
 * NULL with *rc set after a usage error. */
static char **fire_forms(int argc, char **argv, int *rc) {
  char **out = xcalloc((size_t)argc + 1, sizeof(char *));
  bool words = false;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    out[i] = NULL;
    if (i > 0 && !words && strcmp(a, "--") == 0)
      words = true;
    if (i > 0 && !words && a[0] == '-' && a[1] && a[1] != '-' && (a[2] == '\0' || a[2] == '=')) {
      for (size_t k = 0; k < ARRAY_SIZE(fire_short); k++) {
        if (fire_short[k].letter != a[1])
          continue;
        if (fire_short[k].name == NULL) {
          *rc = usage_error("The argument '-%c' is ambiguous as it could refer to any of the following arguments: %s "
                            "(LLM-in-Sandbox's Fire refuses it too): give the long option",
                            a[1], fire_short[k].ambiguous);
          goto fail;
        }
        out[i] = a[2] == '=' ? xasprintf("--%s=%s", fire_short[k].name, a + 3) : xasprintf("--%s", fire_short[k].name);
      }
    } else if (i > 0 && !words && strncmp(a, "--no", 4) == 0 && a[4]) {
      _cleanup_free_ char *whole = xstrndup(a + 2, strcspn(a + 2, "="));
      _cleanup_free_ char *name = xstrndup(a + 4, strcspn(a + 4, "="));
      const struct setting_def *d = find_def(name);
      if (settings_option_arg(whole) < 0 && d) {
        if (d->kind != K_BOOL || strchr(a, '=')) {
          *rc = usage_error("'%s': Python Fire sets %s to False with it, which hutch takes only for a yes/no option "
                            "(such as --nosave_litellm_response): leave it out",
                            a, name);
          goto fail;
        }
        out[i] = xasprintf("--%s=false", d->name);
      }
    }
    if (out[i] == NULL)
      out[i] = xstrdup(a);
  }
  return out;
fail:
  for (int i = 0; i < argc; i++)
    free(out[i]);
  free(out);
  return NULL;
}

static void free_argv(char **v, int n) {
  for (int i = 0; v && i < n; i++)
    free(v[i]);
  free(v);
}

/* --lis: the prompt config (unless one is given) and the tool schemas
 * (unless --tools-file is) of the installed LLM-in-Sandbox. */
static int resolve_lis(struct settings *s) {
  if (s->lis == NULL)
    return -1;
  if (strcmp(s->lis, "false") == 0) {
    free(s->lis);
    s->lis = NULL;
    return -1;
  }
  hutch_error_t err = NULL;
  char *pkg = lis_package_find(s->lis, &err);
  if (pkg == NULL) {
    hutch_error_print(stderr, "hutch run: --lis", err);
    hutch_error_free(&err);
    return EXIT_USAGE;
  }
  free(s->lis);
  s->lis = pkg;
  if (s->prompt_config == NULL)
    s->prompt_config = xasprintf("%s/config/general.yaml", pkg);
  if (s->tools_file == NULL && (s->tools_json = lis_package_tools(pkg, &err)) == NULL) {
    hutch_error_print(stderr, "hutch run: --lis", err);
    hutch_error_free(&err);
    return EXIT_USAGE;
  }
  return -1;
}

int settings_parse(int argc, char **argv_in, struct settings *s) {
  memset(s, 0, sizeof(*s));
  s->max_steps = 100;
  s->max_tokens_per_call = 65536;
  s->max_token_limit = 65536;
  s->tool_timeout = 120;
  s->llm_timeout = 600;
  s->max_tries = 5;
  s->retry_delay = 1;
  s->max_reply_size = 16u << 20;
  s->max_calls_per_reply = 16;
  s->max_observation_size = 64u << 10;
  s->max_conversation_size = 16u << 20;
  s->run_timeout = 4 * 3600;
  s->copy_limit = 1u << 30;
  s->temperature = 1.0; /* LLM-in-Sandbox's, sent unless the model refuses it */

  int r = -1;
  char **argv = fire_forms(argc, argv_in, &r);
  if (argv == NULL)
    return r;

  /* Every spelling of every setting as a long option. */
  size_t n_opts = 0;
  struct option *opts = xcalloc(ARRAY_SIZE(defs) * 3 + 8, sizeof(*opts));
  for (size_t i = 0; i < ARRAY_SIZE(defs); i++) {
    const char *names[3] = {defs[i].name, defs[i].alias, defs[i].alias2};
    /* A flag, or --flag=false as Python Fire takes it; --lis or --lis=DIR. */
    bool optional = defs[i].kind == K_BOOL || defs[i].offset == offsetof(struct settings, lis);
    for (int k = 0; k < 3; k++)
      if (names[k])
        opts[n_opts++] =
            (struct option){names[k], optional ? optional_argument : required_argument, NULL, OPT_BASE + (int)i};
  }
  opts[n_opts++] = (struct option){"settings", required_argument, NULL, OPT_SETTINGS};
  opts[n_opts++] = (struct option){"env", required_argument, NULL, OPT_ENV};
  opts[n_opts++] = (struct option){"bind", required_argument, NULL, OPT_BIND};
  opts[n_opts++] = (struct option){"help", no_argument, NULL, OPT_HELP};
  opts[n_opts++] = (struct option){"allow", required_argument, NULL, OPT_ALLOW};
  opts[n_opts++] = (struct option){"resolve", required_argument, NULL, OPT_RESOLVE};
  /* The command line's only, no setting: what hutch run writes on stdout
   * is for its caller to choose (hutch benchmark reads the run directory
   * there, and refuses it as an option it does not know). */
  opts[n_opts++] = (struct option){"json", no_argument, NULL, OPT_JSON};

  /* First pass: the settings file, -h, and which settings the command
   * line gives (the words are bound to the others); it wins later. */
  const char *settings_path = NULL;
  _cleanup_free_ bool *given = xcalloc(ARRAY_SIZE(defs), sizeof(bool));
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "hq:", opts, NULL)) != -1) {
    if (c == OPT_SETTINGS)
      settings_path = optarg;
    else if (c == 'q')
      given[0] = true;
    else if (c >= OPT_BASE && c < OPT_BASE + (int)ARRAY_SIZE(defs))
      given[c - OPT_BASE] = true;
    else if (c == 'h' || c == OPT_HELP) {
      settings_usage(stdout);
      r = 0;
      goto out;
    } else if (c == '?') {
      r = usage_error("unknown option or missing value: '%s'", argv[optind - 1]);
      goto out;
    }
  }
  /* The words, as Python Fire binds them: to LLM-in-Sandbox's parameters
   * not given as options, in its order (the task, then the model, ...). */
  const struct setting_def *pos_def[ARRAY_SIZE(fire_run)];
  const char *pos_val[ARRAY_SIZE(fire_run)];
  size_t n_pos = 0;
  {
    int w = optind;
    for (size_t j = 0; j < ARRAY_SIZE(fire_run) && w < argc; j++) {
      if (strcmp(fire_run[j], "settings") == 0) {
        if (settings_path == NULL)
          settings_path = argv[w++];
        continue;
      }
      const struct setting_def *d = find_def(fire_run[j]);
      if (given[d - defs])
        continue;
      pos_def[n_pos] = d;
      pos_val[n_pos++] = argv[w++];
    }
    if (w < argc) {
      r = usage_error("unexpected argument '%s': LLM-in-Sandbox's parameters are all given (quote the task: hutch run "
                      "\"TEXT\")",
                      argv[w]);
      goto out;
    }
  }
  r = load_file(s, settings_path);
  if (r >= 0)
    goto out;
  for (size_t i = 0; i < ARRAY_SIZE(env_defs); i++) {
    const char *v = getenv(env_defs[i].var);
    if (!(v && *v))
      continue;
    const struct setting_def *d = find_def(env_defs[i].setting);
    if (!settings_benchmark_order) {
      /* LLM-in-Sandbox's run command: the file first; LLM_API_KEY and
       * LLM_TEMPERATURE it does not read (its default key is
       * OPENAI_API_KEY's, its temperature 1.0). */
      if (d->offset == offsetof(struct settings, api_key) || d->offset == offsetof(struct settings, temperature)) {
        fprintf(stderr,
                "hutch run: warning: %s is not read by hutch run, as LLM-in-Sandbox's run command does not read it "
                "(its benchmark command and hutch benchmark do): give --%s\n",
                env_defs[i].var, d->name);
        continue;
      }
      if (*(char **)((char *)s + d->offset) != NULL)
        continue;
    }
    _cleanup_free_ char *why = NULL;
    if (!apply(s, d, v, &why)) {
      r = usage_error("%s: %s", env_defs[i].var, why);
      goto out;
    }
  }

  optind = 1;
  while ((c = getopt_long(argc, argv, "hq:", opts, NULL)) != -1) {
    _cleanup_free_ char *why = NULL;
    if (c == 'q') {
      free(s->query);
      s->query = xstrdup(optarg);
    } else if (c >= OPT_BASE && c < OPT_BASE + (int)ARRAY_SIZE(defs)) {
      const struct setting_def *d = &defs[c - OPT_BASE];
      const char *v = optarg ? optarg : d->kind == K_BOOL ? "true" : "";
      if (!apply(s, d, v, &why)) {
        r = usage_error("%s", why);
        goto out;
      }
      if (d->offset == offsetof(struct settings, temperature)) {
        free(s->temperature_text);
        s->temperature_text = xstrdup(v);
      }
    } else if (c == OPT_ENV) {
      if (!valid_env_assignment(optarg)) {
        r = usage_error("--env wants KEY=VALUE, got '%s'", optarg);
        goto out;
      }
      add_env(s, optarg);
    } else if (c == OPT_BIND) {
      s->binds = xrealloc(s->binds, (s->n_binds + 1) * sizeof(*s->binds));
      s->bind_storage = xrealloc(s->bind_storage, (s->n_binds + 1) * sizeof(char *));
      if (!parse_bind(optarg, &s->binds[s->n_binds], &s->bind_storage[s->n_binds])) {
        r = usage_error("--bind wants /SRC:/DST[:ro|:rw], got '%s'", optarg);
        goto out;
      }
      s->n_binds++;
    } else if (c == OPT_JSON) {
      s->json = true;
    } else if (c == OPT_ALLOW || c == OPT_RESOLVE) {
      char ***list = c == OPT_ALLOW ? &s->allow : &s->resolve;
      size_t *n = c == OPT_ALLOW ? &s->n_allow : &s->n_resolve;
      *list = xrealloc(*list, (*n + 2) * sizeof(char *));
      (*list)[(*n)++] = xstrdup(optarg);
      (*list)[*n] = NULL;
    }
  }
  for (size_t k = 0; k < n_pos; k++) {
    _cleanup_free_ char *why = NULL;
    if (!apply(s, pos_def[k], pos_val[k], &why)) {
      r = usage_error("%s", why);
      goto out;
    }
    if (pos_def[k]->offset == offsetof(struct settings, temperature)) {
      free(s->temperature_text);
      s->temperature_text = xstrdup(pos_val[k]);
    }
  }

  /* OPENAI_BASE_URL: LLM-in-Sandbox hands LiteLLM its own URL (or
   * http://localhost:8000/v1), so the variable never counts there. */
  const char *env_url = getenv("OPENAI_BASE_URL");
  s->base_url_given = s->base_url != NULL;
  if (s->base_url == NULL && env_url && *env_url)
    fprintf(stderr,
            "hutch %s: warning: OPENAI_BASE_URL is not read, as LLM-in-Sandbox does not read it: the model is asked "
            "at http://localhost:8000/v1 (give --base-url or LLM_BASE_URL)\n",
            settings_benchmark_order ? "benchmark" : "run");
  if (s->base_url == NULL)
    s->base_url = xstrdup("http://localhost:8000/v1");
  /* The key: LLM-in-Sandbox's run command leaves LiteLLM the
   * OPENAI_API_KEY of its environment, else "dummy"; its benchmark command
   * sets its own, "sk-placeholder" by default. */
  const char *env_key = getenv("OPENAI_API_KEY");
  if (s->api_key == NULL && !settings_benchmark_order && env_key && *env_key)
    s->api_key = xstrdup(env_key);
  if (s->api_key == NULL)
    s->api_key = xstrdup(settings_benchmark_order ? "sk-placeholder" : "dummy");
  if (s->output_dir == NULL)
    s->output_dir = xstrdup("./output");
  if (s->shell == NULL)
    s->shell = xstrdup("fresh");
  if (s->tools == NULL)
    s->tools = xstrdup("lis");
  if (strcmp(s->shell, "fresh") != 0 && strcmp(s->shell, "persistent") != 0) {
    r = usage_error("--shell wants fresh or persistent, got '%s'", s->shell);
    goto out;
  }
  if (s->overlay && strcmp(s->overlay, "kernel") != 0 && strcmp(s->overlay, "fuse") != 0) {
    r = usage_error("--overlay wants kernel or fuse, got '%s'", s->overlay);
    goto out;
  }
  if (s->proc && strcmp(s->proc, "fresh") != 0 && strcmp(s->proc, "host-ro") != 0) {
    r = usage_error("--proc wants fresh or host-ro, got '%s'", s->proc);
    goto out;
  }
  if (s->net && strcmp(s->net, "none") != 0 && strcmp(s->net, "proxy") != 0) {
    r = usage_error("--net wants none or proxy, got '%s'", s->net);
    goto out;
  }
  /* Without --net the policy's `run` decides, once it is loaded (agent.c). */
  if (s->net && strcmp(s->net, "none") == 0 && (s->n_allow || s->n_resolve || s->net_policy)) {
    r = usage_error("%s", "--allow, --net-policy and --resolve need --net proxy");
    goto out;
  }
  if (s->query == NULL) {
    r = usage_error("%s", "--query TEXT is required (--query - reads it from stdin)");
    goto out;
  }
  if (strcmp(s->query, "-") == 0) {
    free(s->query);
    s->query = read_stdin_all();
  }
  if (s->query[0] == '\0') {
    r = usage_error("%s", "the query is empty");
    goto out;
  }
  if (s->model == NULL) {
    r = usage_error("%s", "--model NAME is required (or model: in a settings file)");
    goto out;
  }
  r = check_lis(s);
  if (r >= 0)
    goto out;
  r = resolve_lis(s);
out:
  free(opts);
  free_argv(argv, argc);
  return r;
}

const char *settings_canonical(const char *name) {
  const struct setting_def *d = find_def(name);
  return d ? d->name : NULL;
}

int settings_option_arg(const char *name) {
  static const char *const with_value[] = {"settings", "env", "bind", "allow", "resolve"};
  for (size_t i = 0; i < ARRAY_SIZE(with_value); i++)
    if (strcmp(name, with_value[i]) == 0)
      return 1;
  if (strcmp(name, "help") == 0)
    return 0;
  const struct setting_def *d = find_def(name);
  return d == NULL ? -1 : d->kind == K_BOOL ? 2 : 1;
}

void settings_free(struct settings *s) {
  for (size_t i = 0; i < ARRAY_SIZE(defs); i++)
    if (defs[i].kind == K_STR)
      free(*(char **)((char *)s + defs[i].offset));
  free(s->settings_file);
  free(s->tools_json);
  free(s->temperature_text);
  for (size_t i = 0; i < s->n_env; i++)
    free(s->env[i]);
  free(s->env);
  for (size_t i = 0; i < s->n_binds; i++)
    free(s->bind_storage[i]);
  free(s->bind_storage);
  free(s->binds);
  for (size_t i = 0; i < s->n_allow; i++)
    free(s->allow[i]);
  free(s->allow);
  for (size_t i = 0; i < s->n_resolve; i++)
    free(s->resolve[i]);
  free(s->resolve);
}
