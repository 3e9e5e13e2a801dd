/* SPDX-License-Identifier: Apache-2.0 */
/* The names a tree copied out of a sandbox may not take on the host
 * (outname.h).  The list is of files a host program reads without being
 * told to, from the directory it runs in or above it, and that can make it
 * run a command, send data somewhere or pick a program to run. */
#include "config.h"

#include "outname.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util.h"

/* A name, or a prefix ending in '*'.  Compared without regard to ASCII
 * case. */
static const char *const live[] = {
    /* Version control: a repository's config and hooks run commands on
     * `status`, `diff` or a shell prompt's query.  HEAD is what makes a
     * directory a (bare) git repository; .git may also be a file naming one
     * elsewhere. */
    ".git",
    "HEAD",
    ".gitattributes",
    ".gitmodules",
    ".hg",
    ".jj",
    ".sl",
    ".bzr",
    "_darcs",
    ".svn",
    ".pijul",
    ".fslckout",
    "_FOSSIL_",
    ".fossil-settings",
    /* Shells and environment managers: sourced on `cd`, or pick the
     * interpreter every later command of that directory runs. */
    ".envrc",
    ".env",
    ".env.*",
    ".flaskenv",
    ".mise.toml",
    "mise.toml",
    ".mise",
    ".rtx.toml",
    ".tool-versions",
    ".python-version",
    ".node-version",
    ".nvmrc",
    ".ruby-version",
    ".java-version",
    ".sdkmanrc",
    ".venv",
    /* Editors and IDEs: a folder's settings and tasks, run on opening it. */
    ".vscode",
    ".idea",
    ".devcontainer",
    ".devcontainer.json",
    ".zed",
    ".helix",
    ".fleet",
    ".theia",
    ".exrc",
    ".vimrc",
    ".nvimrc",
    ".nvim.lua",
    ".lvimrc",
    ".dir-locals.el",
    ".dir-locals-2.el",
    ".directory",
    "desktop.ini",
    "autorun.inf",
    /* Interpreters and debuggers that run a start-up file of the current
     * directory. */
    ".Rprofile",
    ".Renviron",
    ".irbrc",
    ".pryrc",
    ".octaverc",
    ".gdbinit",
    ".lldbinit",
    /* Package managers and build tools: registries, credentials' targets,
     * the shell or toolchain they run. */
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pnpmfile.cjs",
    ".pnpmfile.mjs",
    "bunfig.toml",
    ".bunfig.toml",
    ".pypirc",
    "pip.conf",
    "pip.ini",
    "uv.toml",
    ".condarc",
    ".cargo",
    "rust-toolchain",
    "rust-toolchain.toml",
    ".bundle",
    ".gemrc",
    ".mvn",
    /* hutch run's and LLM-in-Sandbox's settings, which name the endpoint
     * that gets the API key. */
    "hutch.yaml",
    "llm-in-sandbox.yaml",
    "llm_in_sandbox.yaml",
    ".llm-in-sandbox",
    ".llm-in-sandbox.yaml",
};

static bool matches(const char *pattern, const char *name, size_t len) {
  size_t plen = strlen(pattern);
  if (plen && pattern[plen - 1] == '*')
    return len >= plen - 1 && strncasecmp(pattern, name, plen - 1) == 0;
  return len == plen && strncasecmp(pattern, name, len) == 0;
}

bool outname_is_live(const char *name) {
  size_t len = strlen(name);
  const size_t slen = sizeof(OUTNAME_SUFFIX) - 1;
  /* The suffix stripped as often as it is there: a name that ends up on
   * the list is renamed too, so no mapped name can be taken by another. */
  for (;;) {
    for (size_t i = 0; i < ARRAY_SIZE(live); i++)
      if (matches(live[i], name, len))
        return true;
    if (len <= slen || strncasecmp(name + len - slen, OUTNAME_SUFFIX, slen) != 0)
      return false;
    len -= slen;
  }
}

char *outname_map(const char *name) {
  return outname_is_live(name) ? xasprintf("%s%s", name, OUTNAME_SUFFIX) : xstrdup(name);
}

const char *const *outname_list(size_t *n) {
  *n = ARRAY_SIZE(live);
  return live;
}
