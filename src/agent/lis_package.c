/* SPDX-License-Identifier: Apache-2.0
 *
 * An installed LLM-in-Sandbox (--lis): its package directory, found as
 * Python finds it (importlib's find_spec, which imports nothing of the
 * package), or given; and what hutch takes from it without shipping its
 * text: config/general.yaml (a prompt config hutch reads as any other),
 * tools.py's three tool schemas (built by Python code there, so python3
 * runs that one file alone, never the package, whose imports need Docker,
 * LiteLLM and Rich), and benchmark/ (its task folders). */
#include "config.h"

#include "lis_package.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

#define OUT_MAX (4u << 20)
#define INSTALL_HINT                                                                                                   \
  "install it for the python3 on PATH (pip install llm-in-sandbox), or give its package directory (the one holding "   \
  "config/general.yaml and tools.py) with --lis=DIR"

extern char **environ;

/* sys.path[0] is the current directory for python3 -c: a directory a
 * sandbox wrote (a run's files/) must not provide the package, nor
 * anything imported, so it goes first (sys is built in). */
#define NO_CWD "import sys\nsys.path[:] = [p for p in sys.path if p not in ('', '.')]\n"

static const char find_py[] =
    NO_CWD "import importlib.util\n"
           "s = importlib.util.find_spec('llm_in_sandbox')\n"
           "print(s.submodule_search_locations[0] if s and s.submodule_search_locations else '')\n";

static const char tools_py[] =
    NO_CWD "import importlib.util, json\n"
           "spec = importlib.util.spec_from_file_location('llm_in_sandbox_tools', sys.argv[1])\n"
           "m = importlib.util.module_from_spec(spec)\n"
           "spec.loader.exec_module(m)\n"
           "print(json.dumps([m.str_replace_editor_tool, m.execute_bash_tool, m.submit_tool]))\n";

/* python3 -c CODE ARG: its standard output (at most OUT_MAX bytes), NULL
 * when it could not run or did not exit 0; its stderr is ours. */
static char *python(const char *code, const char *arg, hutch_error_t *err) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0) {
    hutch_error_sys(err, "pipe");
    return NULL;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, p[1], 1);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  char *argv[] = {"python3", "-c", (char *)code, (char *)arg, NULL};
  pid_t pid;
  int rc = posix_spawnp(&pid, "python3", &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(p[1]);
  if (rc != 0) {
    close(p[0]);
    hutch_error_set(err, rc, "run python3 to find LLM-in-Sandbox");
    return NULL;
  }
  size_t len = 0, cap = 4096;
  char *out = xmalloc(cap);
  for (;;) {
    if (len + 1 >= cap && cap < OUT_MAX + 2)
      out = xrealloc(out, cap *= 2);
    ssize_t n = read(p[0], out + len, len + 1 < cap ? cap - len - 1 : 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    len += (size_t)n;
    if (len > OUT_MAX)
      break;
  }
  close(p[0]);
  out[len] = '\0';
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  if (len > OUT_MAX || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    free(out);
    hutch_error_set(err, EINVAL, "python3 failed%s", len > OUT_MAX ? " (its output is too long)" : "");
    return NULL;
  }
  return out;
}

static bool is_file(const char *dir, const char *name) {
  _cleanup_free_ char *p = xasprintf("%s/%s", dir, name);
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

char *lis_package_find(const char *given, hutch_error_t *err) {
  _cleanup_free_ char *dir = NULL;
  if (given && *given && strcmp(given, "true") != 0) {
    dir = xstrdup(given);
  } else {
    hutch_error_t perr = NULL;
    char *out = python(find_py, NULL, &perr);
    if (out == NULL) {
      hutch_error_wrap(&perr, "find LLM-in-Sandbox (python3 -c 'importlib.util.find_spec(\"llm_in_sandbox\")')");
      hutch_error_hint(&perr, INSTALL_HINT);
      *err = perr;
      return NULL;
    }
    out[strcspn(out, "\n")] = '\0';
    if (*out == '\0') {
      free(out);
      hutch_error_set(err, ENOENT, "LLM-in-Sandbox is not installed: python3 finds no package llm_in_sandbox");
      hutch_error_hint(err, INSTALL_HINT);
      return NULL;
    }
    dir = out;
  }
  static const char *const need[] = {"config/general.yaml", "tools.py"};
  for (size_t i = 0; i < ARRAY_SIZE(need); i++)
    if (!is_file(dir, need[i])) {
      hutch_error_set(err, ENOENT, "%s is not LLM-in-Sandbox's package directory: it has no %s", dir, need[i]);
      hutch_error_hint(err, INSTALL_HINT);
      return NULL;
    }
  char *abs = realpath(dir, NULL);
  return abs ? abs : xstrdup(dir);
}

char *lis_package_tools(const char *pkg, hutch_error_t *err) {
  _cleanup_free_ char *path = xasprintf("%s/tools.py", pkg);
  char *out = python(tools_py, path, err);
  if (out == NULL) {
    hutch_error_wrap(err, "read the tool schemas of %s", path);
    hutch_error_hint(err, "its str_replace_editor_tool, execute_bash_tool and submit_tool are the tools sent");
  }
  return out;
}
