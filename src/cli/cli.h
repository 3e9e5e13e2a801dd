/* SPDX-License-Identifier: Apache-2.0 */
/* The hutch command: one file per verb, all built on runtime/hutch.h. */
#ifndef HUTCH_CLI_H
#define HUTCH_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "hutch.h"

/* 1 when the musl front end is `hutch` (config.h, from configure
 * --with-musl-front-end); hutch-full's main then takes hand-overs. */
#ifndef HUTCH_BEHIND_FRONT_END
#define HUTCH_BEHIND_FRONT_END 0
#endif

/* Exit codes (see hutch(1)). */
#define EXIT_USAGE 2
#define EXIT_RUNTIME 125
#define EXIT_CANNOT_EXEC 126
#define EXIT_NOT_FOUND 127

/* Each verb gets argv starting at its own name (argv[0] = "exec", ...) and
 * returns the process exit code. */
int cmd_exec(int argc, char **argv);
int cmd_create(int argc, char **argv);
int cmd_ps(int argc, char **argv);
int cmd_rm(int argc, char **argv);
int cmd_rootfs(int argc, char **argv);
int cmd_build(int argc, char **argv);
int cmd_policy(int argc, char **argv);
/* Executes hutch-agent (src/agent/), which implements `hutch run`. */
int cmd_run(int argc, char **argv);
/* Executes hutch-benchmark (src/bench/), which implements `hutch benchmark`. */
int cmd_benchmark(int argc, char **argv);
int cmd_report(int argc, char **argv);
/* Execute PROGRAM beside the hutch binary, else in the libexec directory,
 * with HUTCH_SELF set to the hutch binary; returns an exit code on failure. */
int cli_exec_program(const char *verb, const char *program, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_cp(int argc, char **argv);
/* The Model Context Protocol server (src/mcp/). */
int cmd_mcp(int argc, char **argv);
/* The SandboxFusion-compatible HTTP service (src/serve/). */
int cmd_serve(int argc, char **argv);
int cmd_audit(int argc, char **argv);
/* hutch pause and hutch resume (cmd_pause.c). */
int cmd_pause(int argc, char **argv);
int cmd_resume(int argc, char **argv);
/* hutch ttl (cmd_ttl.c). */
int cmd_ttl(int argc, char **argv);
/* hutch reset (cmd_reset.c). */
int cmd_reset(int argc, char **argv);
/* hutch snapshot (cmd_snapshot.c). */
int cmd_snapshot(int argc, char **argv);
/* hutch fork (cmd_fork.c). */
int cmd_fork(int argc, char **argv);

/* Print a runtime error once, with its hint, and point at `hutch doctor`
 * when the failure is about the host. Returns EXIT_RUNTIME. */
int cli_fail(hutch_error_t *err);

/* getppid() as main() found it first: hutch_die_with_parent() compares. */
extern pid_t cli_parent_pid;
/* First thing of main: cli_parent_pid, and the runtime's log to stderr. */
void cli_start(void);
/* Set by the musl front end when it hands a command to hutch-full: the
 * pid of the front end's parent.  hutch-full (behind the front end only)
 * takes it as its caller, and takes HUTCH_SELF as the binary users run. */
#define HUTCH_HANDED_OVER_ENV "HUTCH_HANDED_OVER"
/* True in hutch-full when the front end handed it this command. */
extern bool cli_handed_over;
/* In the musl front end (front.c): hand the whole command line to
 * hutch-full, WHY being what the front end cannot do itself; returns only
 * when that failed, with an exit code.  In hutch-full: returns -1, and the
 * verb goes on. */
int cli_hand_over(const char *why);
/* The options of a verb on one live sandbox (pause, resume, ttl):
 * --state-dir, --json and -h (usage to stdout).  -1 to go on with the
 * arguments from optind, else an exit code. */
int cli_sandbox_verb_opts(const char *verb, int argc, char **argv, void (*usage)(FILE *out), const char **state_dir,
                          bool *json);
/* Print "hutch VERB: MESSAGE" and a pointer to --help; returns EXIT_USAGE. */
int cli_usage_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* --on-ttl remove|pause, as create and fork take it; a usage error (2) otherwise. */
int cli_parse_on_ttl(const char *verb, const char *arg, enum hutch_ttl_action *out);
/* The bearer tokens of an HTTP server (hutch mcp, hutch serve), one a line
 * of the file (blank lines and lines that start with # aside), each one
 * client's and at least CLI_MIN_TOKEN characters; without a file, the
 * variable env_name's value alone (NULL: none).  NULL with *err set, or
 * with nothing set when there is none. */
#define CLI_MIN_TOKEN 16
char **cli_read_tokens(const char *verb, const char *file, const char *env_name, hutch_error_t *err);
/* "ports": [{"host_addr", "host_port", "port"}...] of create --json and ps --json. */
struct cJSON;
void cli_add_ports_json(struct cJSON *parent, const struct hutch_published_port *ports, size_t n);

#endif
