/* SPDX-License-Identifier: Apache-2.0 */
/* Image manifests (hutch-manifest(5)) and recipes (hutch-recipe(5)): the pure parsers. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "apt_sources.h"
#include "manifest.h"
#include "recipe.h"
#include "tap.h"
#include "util.h"

#define D64 "5b0ffb1e31d4b85f5a2214f105d1377ba616c453b38ff46c278dc6472b21e2d8"

static void manifest_refused(const char *text, const char *want_in_msg, const char *what) {
  struct manifest m = {0};
  hutch_error_t err = NULL;
  int r = manifest_parse(text, "t.manifest", &m, &err);
  tap_ok(r < 0 && err && strstr(err->msg, want_in_msg) != NULL, "manifest refused: %s", what);
  if (err && !strstr(err->msg, want_in_msg))
    printf("#   message: %s\n", err->msg);
  hutch_error_free(&err);
}

static void recipe_refused(const char *text, const char *want_in_msg, const char *what) {
  struct recipe r = {0};
  hutch_error_t err = NULL;
  int rc = recipe_parse(text, "t.recipe", &r, &err);
  tap_ok(rc < 0 && err && strstr(err->msg, want_in_msg) != NULL, "recipe refused: %s", what);
  if (err && !strstr(err->msg, want_in_msg))
    printf("#   message: %s\n", err->msg);
  hutch_error_free(&err);
}

static void test_manifest(void) {
  struct manifest m = {0};
  hutch_error_t err = NULL;
  const char *text = "# a comment\n"
                     "name ubuntu:24.04\r\n"
                     "description Ubuntu 24.04.1 LTS base  \n"
                     "\n"
                     "  arch amd64 https://example.invalid/a.tar.gz " D64 "\n"
                     "arch\tarm64\thttp://example.invalid/b.tar.gz sha256:" D64 "\n"
                     "fallback debian bookworm\n";
  tap_is_int(manifest_parse(text, "t.manifest", &m, &err), 0, "a full manifest parses");
  tap_is_str(m.name, "ubuntu:24.04", "name");
  tap_is_str(m.description, "Ubuntu 24.04.1 LTS base", "description keeps inner spaces, drops trailing ones");
  tap_is_int(m.n_sources, 2, "two architectures");
  const struct manifest_source *s = manifest_find_arch(&m, "arm64");
  tap_ok(s != NULL, "arm64 found");
  tap_is_str(s ? s->url : NULL, "http://example.invalid/b.tar.gz", "arm64 URL (tab-separated)");
  tap_is_str(s ? s->sha256 : NULL, D64, "a sha256: prefix is dropped");
  tap_ok(manifest_find_arch(&m, "riscv64") == NULL, "a missing architecture is NULL");
  tap_is_str(m.fallback_distro, "debian", "fallback distribution");
  tap_is_str(m.fallback_suite, "bookworm", "fallback suite");
  manifest_clear(&m);

  tap_is_int(manifest_parse("name x\narch amd64 https://h/x " D64, "t", &m, NULL), 0,
             "no trailing newline, no description");
  tap_ok(m.description == NULL && m.fallback_suite == NULL, "optional fields stay NULL");
  manifest_clear(&m);

  char upper[] = "name x\narch amd64 https://h/x 5B0FFB1E31D4B85F5A2214F105D1377BA616C453B38FF46C278DC6472B21E2D8\n";
  tap_is_int(manifest_parse(upper, "t", &m, NULL), 0, "upper-case hex accepted");
  tap_is_str(m.n_sources ? m.sources[0].sha256 : NULL, D64, "and stored lower-case");
  manifest_clear(&m);

  manifest_refused("arch amd64 https://h/x " D64 "\n", "no `name` line", "missing name");
  manifest_refused("name x\n", "no `arch", "no architecture");
  manifest_refused("name x\narch amd64 https://h/x " D64 "\narch amd64 https://h/y " D64 "\n",
                   "t.manifest:3: a second `arch amd64`", "duplicate architecture, with its line number");
  manifest_refused("name x\narch amd64 ftp://h/x " D64 "\n", "not http:// or https://", "ftp URL");
  manifest_refused("name x\narch amd64 https://h/x 1234\n", "not a sha256 digest", "short digest");
  manifest_refused("name x\narch amd64 https://h/x " D64 " extra\n", "got 4 words", "extra word");
  manifest_refused("name x\narch amd64 https://h/x\n", "got 2 words", "missing digest");
  manifest_refused("name x y\n", "`name` takes one", "two names on a line");
  manifest_refused("name a/b\n", "`name` takes one", "a slash in the name");
  manifest_refused("name x\nname y\n", "a second `name`", "two name lines");
  manifest_refused("name x\nfrom y\n", "t.manifest:2: unknown keyword \"from\"", "unknown keyword");
  manifest_refused("name x\nfallback alpine edge\n", "`fallback` takes `debian SUITE`", "unknown fallback");

  char *f = manifest_file_name("ubuntu:24.04");
  tap_is_str(f, "ubuntu-24.04.manifest", "file name of ubuntu:24.04");
  free(f);
  tap_ok(manifest_file_name("../etc/passwd") == NULL, "a path is not a reference");
  tap_ok(manifest_file_name("a..b") == NULL, "'..' refused");
  tap_ok(manifest_file_name("") == NULL, "empty refused");
  tap_ok(manifest_file_name(".hidden") == NULL, "leading dot refused");
  tap_ok(strlen(manifest_host_arch()) > 0, "host architecture: %s", manifest_host_arch());

  setenv("HUTCH_ROOTFS_DIR", "/nonexistent-dir", 1);
  tap_is_str(manifest_dir(), "/nonexistent-dir", "HUTCH_ROOTFS_DIR overrides the directory");
  err = NULL;
  tap_ok(manifest_load("ubuntu:24.04", &m, &err) < 0 && err && err->errnum == ENOENT, "a missing manifest is ENOENT");
  hutch_error_free(&err);
}

static void test_recipe(void) {
  struct recipe r = {0};
  hutch_error_t err = NULL;
  const char *text = "# the agent image\n"
                     "allow pypi.org files.pythonhosted.org:443\n"
                     "env LANG=C.UTF-8\n"
                     "apt python3 python3-pip  g++ libc6=2.36-9 ca-certificates/bookworm\n"
                     "pip numpy requests[socks]>=2,<3\n"
                     "run echo one \\\n"
                     "  && echo two\n"
                     "  # indented comment\n"
                     "apt git\n";
  tap_is_int(recipe_parse(text, "t.recipe", &r, &err), 0, "a full recipe parses");
  if (err)
    printf("#   %s\n", err->msg);
  tap_is_int(r.n_steps, 5, "five steps (allow is not a step)");
  tap_is_int(r.n_allow, 2, "two allowed hosts");
  tap_is_str(r.allow[1], "files.pythonhosted.org:443", "HOST:PORT kept");
  tap_ok(r.allow[2] == NULL, "allow list NULL-terminated");
  tap_is_int(r.steps[0].kind, RECIPE_ENV, "env step");
  tap_is_str(r.steps[0].args[0], "LANG=C.UTF-8", "env value");
  tap_is_int(r.steps[1].n_args, 5, "apt packages split on any whitespace");
  tap_is_int(r.steps[1].line, 4, "line number of the apt step");
  tap_is_int(r.steps[3].kind, RECIPE_RUN, "run step");
  tap_is_str(r.steps[3].args[0], "echo one \n  && echo two", "a trailing backslash continues the command");
  tap_is_int(r.steps[4].line, 9, "line numbers count continued lines");
  tap_ok(recipe_uses_apt(&r), "uses apt");

  char *s = recipe_step_script(&r.steps[1], true);
  tap_ok(s && strstr(s, "apt-get -o APT::Sandbox::User=root update && apt-get -o APT::Sandbox::User=root install") !=
                  NULL,
         "first apt step updates first");
  tap_ok(s && strstr(s, "rmdir \"$d\" && mkdir -m 0700 \"$d\"") != NULL,
         "and replaces download directories owned by _apt");
  tap_ok(s && strstr(s, "install -y --no-install-recommends 'python3' 'python3-pip'") != NULL,
         "apt installs without recommends, each name quoted");
  free(s);
  s = recipe_step_script(&r.steps[4], false);
  tap_ok(s && strstr(s, "update") == NULL, "later apt steps do not update again");
  free(s);
  s = recipe_step_script(&r.steps[2], false);
  tap_is_str(s, "python3 -m pip install --no-cache-dir 'numpy' 'requests[socks]>=2,<3'", "pip command");
  free(s);
  tap_ok(recipe_step_script(&r.steps[0], false) == NULL, "env has no command");
  s = recipe_step_describe(&r.steps[1]);
  tap_is_str(s, "apt python3 python3-pip g++ libc6=2.36-9 ca-certificates/bookworm", "step description");
  free(s);
  recipe_clear(&r);

  tap_is_int(recipe_parse("run true\n", "t", &r, NULL), 0, "a one-step recipe");
  tap_ok(!recipe_uses_apt(&r) && r.allow && r.allow[0] == NULL, "no apt, empty allow list");
  recipe_clear(&r);

  /* Bounds: steps and allowed hosts; continued lines joined in one pass. */
  for (int n = RECIPE_MAX_STEPS; n <= RECIPE_MAX_STEPS + 1; n++) {
    _cleanup_free_ char *many = xmalloc((size_t)n * 9 + 1);
    for (int i = 0; i < n; i++)
      memcpy(many + i * 9, "run true\n", 9);
    many[n * 9] = '\0';
    if (n == RECIPE_MAX_STEPS) {
      tap_is_int(recipe_parse(many, "t", &r, NULL), 0, "a recipe of %d steps", n);
      recipe_clear(&r);
    } else {
      recipe_refused(many, "t.recipe:1001: more than 1000 steps", "one step more than the bound");
    }
  }
  _cleanup_free_ char *hosts = xstrdup("allow");
  for (int i = 0; i <= RECIPE_MAX_ALLOW; i++) {
    char *t = xasprintf("%s h%d.example", hosts, i);
    free(hosts);
    hosts = t;
  }
  char *allow_text = xasprintf("%s\nrun true\n", hosts);
  recipe_refused(allow_text, "more than 256 `allow` hosts", "one allowed host more than the bound");
  free(allow_text);
  size_t lines = 200000;
  _cleanup_free_ char *cont = xmalloc(10 + lines * 4 + 3);
  memcpy(cont, "run true\\\n", 10);
  for (size_t i = 0; i < lines; i++)
    memcpy(cont + 10 + i * 4, " x\\\n", 4);
  memcpy(cont + 10 + lines * 4, "y\n", 3);
  tap_ok(recipe_parse(cont, "t", &r, NULL) == 0 && r.n_steps == 1 && strlen(r.steps[0].args[0]) == 3 * lines + 6,
         "200000 continued lines make one step, all of them joined");
  recipe_clear(&r);

  recipe_refused("# nothing\n\n", "has no steps", "empty recipe");
  recipe_refused("apt\n", "t.recipe:1: `apt` needs at least one", "apt without packages");
  recipe_refused("apt python3;rm\n", "\"python3;rm\" is not a Debian package name", "shell metacharacter in apt");
  recipe_refused("apt -y\n", "is not a Debian package name", "option as a package");
  recipe_refused("apt Python3\n", "is not a Debian package name", "upper case package");
  recipe_refused("pip --index-url=http://x y\n", "is not a Python requirement", "pip option injection");
  recipe_refused("pip $(id)\n", "is not a Python requirement", "command substitution in pip");
  recipe_refused("run\n", "`run` needs a shell command", "empty run");
  recipe_refused("env 1X=2\n", "`env` takes one NAME=VALUE", "bad env name");
  recipe_refused("env X\n", "`env` takes one NAME=VALUE", "env without '='");
  recipe_refused("allow\n", "`allow` needs at least one HOST", "allow without host");
  recipe_refused("allow a/b\n", "is not HOST", "allow with a path");
  recipe_refused("run true\nfrom ubuntu\n", "t.recipe:2: unknown step \"from\"", "unknown step with line");
}

static void test_apt_sources(void) {
  struct apt_source *l = NULL;
  size_t n = 0;
  apt_sources_parse("# comment\n"
                    "deb http://mirror.example/debian bookworm main contrib\n"
                    "deb-src http://src.example/debian bookworm main\n"
                    "deb [arch=amd64 signed-by=/k.gpg] https://user:pw@secure.example:8443/ubuntu noble main # x\n"
                    "  deb http://mirror.example/debian-security bookworm-security main\n"
                    "not a source line\n",
                    false, &l, &n);
  tap_is_int(n, 4, "one-line format: four entries (comments and junk skipped)");
  tap_is_str(n > 2 ? l[2].uri : NULL, "https://user:pw@secure.example:8443/ubuntu", "options in [] skipped");
  tap_ok(n > 1 && !l[1].deb && l[0].deb, "deb-src is told from deb");
  char *h = apt_uri_host("https://user:pw@secure.example:8443/ubuntu");
  tap_is_str(h, "secure.example:8443", "host of a URI drops credentials, keeps the port");
  free(h);
  h = apt_uri_host("http://mirror.example");
  tap_is_str(h, "mirror.example", "host of a URI without a path");
  free(h);
  tap_ok(apt_uri_host("file:///srv/mirror") == NULL, "file: URIs have no host");
  tap_is_str(apt_sources_mirror(l, n, "bookworm"), "http://mirror.example/debian", "mirror for bookworm");
  tap_is_str(apt_sources_mirror(l, n, "bookworm-security"), "http://mirror.example/debian-security",
             "mirror for bookworm-security");
  tap_ok(apt_sources_mirror(l, n, "trixie") == NULL, "no mirror for trixie");
  apt_sources_free(l, n);

  l = NULL;
  n = 0;
  apt_sources_parse("Types: deb deb-src\n"
                    "URIs: http://a.example/debian http://b.example/debian\n"
                    "# a comment inside the stanza\n"
                    "Suites: bookworm bookworm-updates\n"
                    "Components: main\n"
                    "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
                    "\n"
                    "Types: deb\n"
                    "URIs: http://off.example/debian\n"
                    "Suites: sid\n"
                    "Enabled: no\n"
                    "\n"
                    "types: deb\n"
                    "uris: http://c.example/debian\n"
                    "suites: trixie\n",
                    true, &l, &n);
  tap_is_int(n, 5, "deb822: 2 types x 2 URIs, a disabled stanza skipped, lower-case keys");
  tap_is_str(apt_sources_mirror(l, n, "bookworm-updates"), "http://a.example/debian", "first URI of a stanza");
  tap_is_str(apt_sources_mirror(l, n, "trixie"), "http://c.example/debian", "last stanza without a blank line");
  tap_ok(apt_sources_mirror(l, n, "sid") == NULL, "Enabled: no is skipped");
  apt_sources_free(l, n);
}

int main(void) {
  test_manifest();
  test_recipe();
  test_apt_sources();
  return tap_done();
}
