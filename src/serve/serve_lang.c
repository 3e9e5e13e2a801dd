/* SPDX-License-Identifier: Apache-2.0 */
/* The languages of hutch serve: for each of SandboxFusion's language names
 * that hutch knows how to run, the file the code goes in, the compile step
 * (compiled languages) and the run step, as argv run in the request's
 * working directory (no shell: nothing of the code is ever parsed by one).
 * Whether a language is available depends on the image: its tool must be
 * there (serve_probe).  The rest of SandboxFusion's names are refused with
 * its error shape, naming the language (serve_run.c). */
#include "config.h"

#include "serve.h"

#include <string.h>

#include "util.h"

const char *const serve_sf_languages[] = {
    "python", "cpp",   "nodejs",        "go",   "go_test", "java",       "php",  "csharp", "bash",   "typescript",
    "sql",    "rust",  "cuda",          "lua",  "R",       "perl",       "D_ut", "ruby",   "scala",  "julia",
    "pytest", "junit", "kotlin_script", "jest", "verilog", "python_gpu", "lean", "swift",  "racket", NULL,
};

/* Compiled languages build into the working directory, as SandboxFusion's
 * runners do; the flags are those its runners use where it names them. */
static const struct serve_lang langs[] = {
    {"python", "python3", "main.py", {NULL}, {"python3", "main.py", NULL}},
    {"pytest", "pytest", "test_main.py", {NULL}, {"pytest", "-q", "test_main.py", NULL}},
    {"cpp", "g++", "main.cpp", {"g++", "-std=c++17", "main.cpp", "-o", "test", "-lpthread", NULL}, {"./test", NULL}},
    {"bash", "bash", "main.sh", {NULL}, {"bash", "main.sh", NULL}},
    {"perl", "perl", "main.pl", {NULL}, {"perl", "main.pl", NULL}},
    {"nodejs", "node", "main.js", {NULL}, {"node", "main.js", NULL}},
    {"typescript", "tsx", "main.ts", {NULL}, {"tsx", "main.ts", NULL}},
    {"go", "go", "main.go", {"go", "build", "-o", "out", "main.go", NULL}, {"./out", NULL}},
    {"java", "javac", "Main.java", {"javac", "Main.java", NULL}, {"java", "-ea", "Main", NULL}},
    {"php", "php", "main.php", {NULL}, {"php", "-f", "main.php", NULL}},
    {"rust", "rustc", "main.rs", {"rustc", "main.rs", "-o", "test", NULL}, {"./test", NULL}},
    {"lua", "lua", "main.lua", {NULL}, {"lua", "main.lua", NULL}},
    {"R", "Rscript", "main.R", {NULL}, {"Rscript", "main.R", NULL}},
    {"ruby", "ruby", "main.rb", {NULL}, {"ruby", "main.rb", NULL}},
    {"julia", "julia", "main.jl", {NULL}, {"julia", "main.jl", NULL}},
    {"racket", "racket", "main.rkt", {NULL}, {"racket", "main.rkt", NULL}},
    {"kotlin_script", "kotlin", "main.kts", {NULL}, {"kotlin", "main.kts", NULL}},
    {"swift", "swiftc", "main.swift", {"swiftc", "main.swift", "-o", "test.out", NULL}, {"./test.out", NULL}},
    {"D_ut", "dmd", "main.d", {"dmd", "main.d", "-unittest", "-of=test", NULL}, {"./test", NULL}},
};

const struct serve_lang *serve_lang_at(size_t i) {
  return i < ARRAY_SIZE(langs) ? &langs[i] : NULL;
}

const struct serve_lang *serve_lang_find(const char *name) {
  for (size_t i = 0; i < ARRAY_SIZE(langs); i++)
    if (strcmp(langs[i].name, name) == 0)
      return &langs[i];
  return NULL;
}

bool serve_sf_language(const char *name) {
  for (const char *const *l = serve_sf_languages; *l; l++)
    if (strcmp(*l, name) == 0)
      return true;
  return false;
}
