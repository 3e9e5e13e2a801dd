/* SPDX-License-Identifier: Apache-2.0 */
/* The names a tree copied out of a sandbox takes on the host (outname.h):
 * the names host programs load by themselves get a suffix, every other
 * name is kept, and no two names map to one. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "outname.h"
#include "tap.h"

static void map(const char *in, const char *want, const char *what) {
  char *got = outname_map(in);
  tap_is_str(got, want, "%s", what);
  free(got);
}

int main(void) {
  map(".git", ".git.sandbox", "a repository's .git is renamed");
  map("HEAD", "HEAD.sandbox", "HEAD is renamed: no directory of the copy is a bare repository");
  map(".GIT", ".GIT.sandbox", "case does not matter (case-insensitive file systems)");
  map("head", "head.sandbox", "nor for HEAD");
  map(".envrc", ".envrc.sandbox", "direnv's .envrc");
  map(".env", ".env.sandbox", "a dotenv file");
  map(".env.local", ".env.local.sandbox", "a dotenv file by prefix");
  map(".vscode", ".vscode.sandbox", "an editor's folder settings");
  map("hutch.yaml", "hutch.yaml.sandbox", "hutch run's settings");
  map("llm-in-sandbox.yaml", "llm-in-sandbox.yaml.sandbox", "LLM-in-Sandbox's settings");
  map(".npmrc", ".npmrc.sandbox", "npm's configuration");
  map(".git.sandbox", ".git.sandbox.sandbox", "a name that is a renamed one is renamed again");
  map(".git.SANDBOX.sandbox", ".git.SANDBOX.sandbox.sandbox", "however often the suffix is there");
  map("answer.txt", "answer.txt", "an ordinary name is kept");
  map(".gitignore", ".gitignore", ".gitignore is kept (it runs nothing)");
  map("git", "git", "git without the dot is kept");
  map(".github", ".github", ".github is kept");
  map("x.sandbox", "x.sandbox", "a name with the suffix but nothing live under it is kept");
  map(".sandbox", ".sandbox", "the suffix alone is kept");
  map("HEADER", "HEADER", "a name that only starts like a listed one is kept");
  map(".environment", ".environment", "nor one that starts like a prefix without its dot");

  /* One-to-one over every listed name, with and without the suffix, and
   * over names around them: the mapped names are all distinct. */
  size_t n;
  const char *const *list = outname_list(&n);
  size_t cap = n * 6, k = 0;
  char **names = calloc(cap, sizeof(char *));
  for (size_t i = 0; i < n; i++) {
    char base[128];
    snprintf(base, sizeof(base), "%s", list[i]);
    char *star = strchr(base, '*');
    if (star)
      strcpy(star, "x");
    const char *before[] = {"", "", "", "a", "", ""};
    const char *after[] = {"", OUTNAME_SUFFIX, OUTNAME_SUFFIX OUTNAME_SUFFIX, "", "~", "x"};
    for (size_t f = 0; f < 6; f++) {
      char name[160];
      snprintf(name, sizeof(name), "%s%s%s", before[f], base, after[f]);
      names[k++] = strdup(name);
    }
  }
  size_t clashes = 0, live_kept = 0;
  char **mapped = calloc(k, sizeof(char *));
  for (size_t i = 0; i < k; i++) {
    mapped[i] = outname_map(names[i]);
    if (outname_is_live(mapped[i]) && strcmp(mapped[i], names[i]) == 0)
      live_kept++;
  }
  for (size_t i = 0; i < k; i++)
    for (size_t j = i + 1; j < k; j++)
      if (strcmp(names[i], names[j]) != 0 && strcmp(mapped[i], mapped[j]) == 0)
        clashes++;
  tap_is_int(clashes, 0, "no two of %zu names around the %zu listed ones map to one", k, n);
  tap_is_int(live_kept, 0, "no listed name is kept as it is");
  size_t unlisted = 0;
  for (size_t i = 0; i < n; i++) {
    char *m = outname_map(list[i][strlen(list[i]) - 1] == '*' ? ".env.x" : list[i]);
    /* What a listed name becomes is no listed name itself (without the
     * suffix rule): a host program loads it under no name it knows. */
    size_t ml = strlen(m);
    int still = 0;
    for (size_t j = 0; j < n; j++)
      if (list[j][strlen(list[j]) - 1] != '*' && strlen(list[j]) == ml && strcasecmp(list[j], m) == 0)
        still = 1;
    unlisted += !still;
    free(m);
  }
  tap_is_int(unlisted, n, "every listed name becomes a name that is not on the list");
  for (size_t i = 0; i < k; i++) {
    free(names[i]);
    free(mapped[i]);
  }
  free(names);
  free(mapped);
  return tap_done();
}
