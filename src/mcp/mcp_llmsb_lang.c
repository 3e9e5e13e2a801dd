/* SPDX-License-Identifier: Apache-2.0 */
/* The languages of llm-sandbox's MCP server as hutch mcp offers them
 * (mcp_llmsb.c's tools, the resource sandbox://languages): how each one
 * runs and installs libraries here, its details in the shape llm-sandbox's
 * server gives them (version, package_manager, preinstalled_libraries,
 * use_cases, visualization_support, examples), and the image of the store
 * it runs on.  A language runs on the image llm-sandbox-LANG when the store
 * has one holding its tool (rootfs/llm-sandbox-LANG.recipe builds them),
 * else on the server's default image when that holds the tool; else it is
 * not available here, and says how to make it so. */
#include "config.h"

#include "mcp.h"

#include <string.h>
#include <sys/stat.h>

#include "util.h"

/* Scripts run as /bin/sh -c SCRIPT "$0"...: run gets the code as "$0";
 * install gets the libraries as "$@" (never in the script's text: they are
 * the client's).  Compiled languages build in a fresh directory under /tmp;
 * JavaScript runs where npm installed its libraries. */
static const struct mcp_llmsb_lang langs[] = {
    {"python", "usr/bin/python3", NULL,
     "PIP_BREAK_SYSTEM_PACKAGES=1 exec python3 -m pip install --quiet --disable-pip-version-check \"$@\"",
     "3 (the image's distribution's python3)", "pip", "numpy, scipy, matplotlib",
     "pandas, pillow, seaborn, scikit-learn, scikit-image, plotly",
     "Data analysis, Scripting, Machine learning, Plotting", true, "print('hello from hutch')"},
    {"java", "usr/bin/javac",
     "d=$(mktemp -d) && printf %s \"$0\" >\"$d/Main.java\" && cd \"$d\" && javac Main.java && exec java -cp . Main",
     NULL, "the distribution's OpenJDK", "Maven (not offered here)", "", "", "Services, Enterprise code", false,
     "public class Main { public static void main(String[] a) { System.out.println(\"hello from hutch\"); } }"},
    {"javascript", "usr/bin/node", "mkdir -p /tmp/code && cd /tmp/code && exec node -e \"$0\"",
     "mkdir -p /tmp/code && cd /tmp/code && exec npm install --no-audit --no-fund --silent \"$@\"",
     "the distribution's Node.js", "npm", "", "", "Scripting, Web back ends, Data processing", false,
     "console.log('hello from hutch');"},
    {"cpp", "usr/bin/g++",
     "d=$(mktemp -d) && printf %s \"$0\" >\"$d/main.cpp\" && g++ -O1 -o \"$d/main\" \"$d/main.cpp\" && exec "
     "\"$d/main\"",
     NULL, "the distribution's GCC", "System packages (not offered here)", "STL", "", "Systems code, Performance",
     false, "#include <iostream>\nint main() { std::cout << \"hello from hutch\" << std::endl; }"},
    {"go", "usr/bin/go",
     "d=$(mktemp -d) && printf %s \"$0\" >\"$d/main.go\" && cd \"$d\" && export HOME=\"$d\" GOCACHE=\"$d/cache\" "
     "GOFLAGS=-mod=mod && exec go run main.go",
     NULL, "the distribution's Go", "go mod (not offered here)", "", "", "Services, Command-line tools, Concurrency",
     false, "package main\nimport \"fmt\"\nfunc main() { fmt.Println(\"hello from hutch\") }"},
    {"ruby", "usr/bin/ruby", "exec ruby -e \"$0\"", "exec gem install --no-document --silent \"$@\"",
     "the distribution's Ruby", "gem", "", "", "Scripting, Automation, Text processing", false,
     "puts 'hello from hutch'"},
    {"r", "usr/bin/Rscript", "exec Rscript -e \"$0\"",
     "exec Rscript -e 'for (p in commandArgs(TRUE)) { install.packages(p, repos = \"https://cloud.r-project.org\"); "
     "if (!requireNamespace(p, quietly = TRUE)) quit(status = 1) }' --args \"$@\"",
     "the distribution's R", "CRAN", "", "", "Statistics, Data analysis", false, "print('hello from hutch')"},
};

const struct mcp_llmsb_lang *mcp_llmsb_langs(size_t *n) {
  *n = ARRAY_SIZE(langs);
  return langs;
}

const struct mcp_llmsb_lang *mcp_llmsb_lang_named(const char *name) {
  for (size_t i = 0; i < ARRAY_SIZE(langs); i++)
    if (strcmp(langs[i].name, name) == 0)
      return &langs[i];
  return NULL;
}

/* Whether the image is in the store, allowed to clients, and has the tool
 * in one of its layers (lstat: a symlink there points into the image, not
 * the host). */
static bool image_has(const struct mcp_config *cfg, struct hutch_store *store, const char *name, const char *tool) {
  cJSON *refused = mcp_image_refused(cfg, name);
  if (refused) {
    cJSON_Delete(refused);
    return false;
  }
  hutch_error_t err = NULL;
  struct hutch_image image = {0};
  if (hutch_image_lookup(store, name, &image, &err) < 0) {
    hutch_error_free(&err);
    return false;
  }
  struct stat st;
  _cleanup_free_ char *top = xasprintf("%s/%s", image.rootfs, tool);
  bool found = lstat(top, &st) == 0;
  for (char **l = image.lowers; !found && l && *l; l++) {
    _cleanup_free_ char *p = xasprintf("%s/%s", *l, tool);
    found = lstat(p, &st) == 0;
  }
  hutch_image_clear(&image);
  return found;
}

char *mcp_llmsb_image(const struct mcp_config *cfg, const struct mcp_llmsb_lang *l) {
  hutch_error_t err = NULL;
  struct hutch_store *store = NULL;
  if (hutch_store_open(cfg->store, &store, &err) < 0) {
    hutch_error_free(&err);
    return NULL;
  }
  _cleanup_free_ char *own = xasprintf("llm-sandbox-%s", l->name);
  char *found = NULL;
  if (image_has(cfg, store, own, l->tool))
    found = xstrdup(own);
  else if (cfg->default_image && image_has(cfg, store, cfg->default_image, l->tool))
    found = xstrdup(cfg->default_image);
  hutch_store_close(store);
  return found;
}

char *mcp_llmsb_unavailable(const struct mcp_llmsb_lang *l) {
  return xasprintf("language %s is not available here: neither an image llm-sandbox-%s nor this server's default "
                   "image has /%s (build one: hutch rootfs build --from default --recipe "
                   "rootfs/llm-sandbox-%s.recipe --name llm-sandbox-%s, where that recipe exists; with --allow-image "
                   "the server must list it too)",
                   l->name, l->name, l->tool, l->name, l->name);
}

/* Appends a comma-separated list's items to a. */
static cJSON *split_list(cJSON *a, const char *text) {
  _cleanup_free_ char *copy = xstrdup(text);
  char *save = NULL;
  for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    while (*t == ' ')
      t++;
    cJSON_AddItemToArray(a, cJSON_CreateString(t));
  }
  return a;
}

cJSON *mcp_llmsb_details(const struct mcp_config *cfg, const struct mcp_llmsb_lang *l) {
  cJSON *o = cJSON_CreateObject();
  _cleanup_free_ char *image = mcp_llmsb_image(cfg, l), *own = xasprintf("llm-sandbox-%s", l->name);
  cJSON_AddStringToObject(o, "version", l->version);
  cJSON_AddStringToObject(o, "package_manager", l->package_manager);
  cJSON *pre = split_list(cJSON_AddArrayToObject(o, "preinstalled_libraries"), l->preinstalled);
  if (image && strcmp(image, own) == 0) /* its own image's, besides the default's */
    split_list(pre, l->preinstalled_own);
  split_list(cJSON_AddArrayToObject(o, "use_cases"), l->use_cases);
  cJSON_AddBoolToObject(o, "visualization_support", l->visualization);
  cJSON *ex = cJSON_AddArrayToObject(o, "examples"), *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "title", "Hello");
  cJSON_AddStringToObject(e, "description", "prints one line");
  cJSON_AddStringToObject(e, "code", l->example);
  cJSON_AddItemToArray(ex, e);
  cJSON_AddBoolToObject(o, "hutch_available", image != NULL);
  cJSON_AddStringToObject(o, "hutch_image", image ? image : "");
  _cleanup_free_ char *why = image ? NULL : mcp_llmsb_unavailable(l);
  _cleanup_free_ char *note =
      image ? xasprintf("runs on image %s, a fresh sandbox per call; libraries: %s", image,
                        l->install ? (cfg->net_proxy ? "installed through hutch's proxy (the policy's allowlist)"
                                                     : "refused: this server gives sandboxes no network")
                                   : "not offered for this language here")
            : NULL;
  cJSON_AddStringToObject(o, "hutch_note", image ? note : why);
  return o;
}

cJSON *mcp_llmsb_resource(const struct mcp_config *cfg) {
  /* In the order of llm-sandbox's resource, which is not its list's. */
  static const char *const order[] = {"python", "javascript", "java", "cpp", "go", "r", "ruby"};
  cJSON *all = cJSON_CreateObject();
  for (size_t i = 0; i < ARRAY_SIZE(order); i++)
    cJSON_AddItemToObject(all, order[i], mcp_llmsb_details(cfg, mcp_llmsb_lang_named(order[i])));
  cJSON *r = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(r, "contents"), *c = cJSON_CreateObject();
  _cleanup_free_ char *text = cJSON_Print(all);
  cJSON_Delete(all);
  cJSON_AddStringToObject(c, "uri", MCP_LLMSB_RESOURCE);
  cJSON_AddStringToObject(c, "mimeType", "application/json");
  cJSON_AddStringToObject(c, "text", text);
  cJSON_AddItemToArray(a, c);
  return r;
}

void mcp_llmsb_resource_entry(cJSON *resources) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "uri", MCP_LLMSB_RESOURCE);
  cJSON_AddStringToObject(o, "name", "language_details");
  cJSON_AddStringToObject(o, "title", "Languages (llm-sandbox)");
  cJSON_AddStringToObject(o, "description",
                          "llm-sandbox's languages with their details, and which of them this server runs");
  cJSON_AddStringToObject(o, "mimeType", "application/json");
  cJSON_AddItemToArray(resources, o);
}
