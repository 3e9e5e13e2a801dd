/* SPDX-License-Identifier: Apache-2.0 */
/* Image recipes (hutch-recipe(5)): the steps that turn a base image into a
 * new one, one per line:
 *
 *   # comment
 *   allow pypi.org           network the build may reach (besides the archive)
 *   env LANG=C.UTF-8         set for the steps that follow
 *   apt python3 git          apt-get install -y --no-install-recommends
 *   pip requests             python3 -m pip install
 *   run make -C /src install one shell command (a trailing '\' continues it)
 *
 * The parser is pure (no I/O); recipe_step_script() gives each step's shell
 * command. */
#ifndef HUTCH_RECIPE_H
#define HUTCH_RECIPE_H

#include <stdbool.h>
#include <stddef.h>

#include "hutch.h"

/* Each step is a command run in the build's sandbox (up to its timeout),
 * each allowed host an entry of its proxy's allowlist. */
#define RECIPE_MAX_STEPS 1000
#define RECIPE_MAX_ALLOW 256

enum recipe_kind { RECIPE_APT, RECIPE_PIP, RECIPE_RUN, RECIPE_ENV };

struct recipe_step {
  enum recipe_kind kind;
  int line;    /* where it is in the recipe, for messages */
  char **args; /* apt/pip: package names; run: one command; env: one "K=V"; NULL-terminated */
  size_t n_args;
};

struct recipe {
  struct recipe_step *steps;
  size_t n_steps;
  char **allow; /* HOST[:PORT] the build may reach, NULL-terminated (never NULL after a parse) */
  size_t n_allow;
};

int recipe_parse(const char *text, const char *origin, struct recipe *out, hutch_error_t *err);
void recipe_clear(struct recipe *r);

const char *recipe_kind_name(enum recipe_kind kind);
/* Whether any step installs with apt (the build then needs the archive). */
bool recipe_uses_apt(const struct recipe *r);
/* Whether a build needs the network: apt or pip steps, or `allow` lines. */
bool recipe_needs_network(const struct recipe *r);

/* The shell command (for `sh -c`) that performs a step; `first_apt` adds
 * the `apt-get update` that must precede the first install.  Env steps
 * have no command (NULL). */
char *recipe_step_script(const struct recipe_step *step, bool first_apt);

/* A one-line description for progress output: "apt python3 git". */
char *recipe_step_describe(const struct recipe_step *step);

#endif
