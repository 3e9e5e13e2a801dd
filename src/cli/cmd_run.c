/* SPDX-License-Identifier: Apache-2.0 */
/* hutch run: the agent loop lives in its own program, hutch-agent, so that
 * libcurl and libyaml never load into `hutch exec`.  This verb only finds
 * that program and hands it the command line. */
#include "config.h"

#include "cli.h"

int cmd_run(int argc, char **argv) {
  (void)argc;
  return cli_exec_program("run", "hutch-agent", argv);
}

/* hutch benchmark: hutch-benchmark runs hutch run per task, and scores the
 * answers in sandboxes of their own with hutch exec. */
int cmd_benchmark(int argc, char **argv) {
  (void)argc;
  return cli_exec_program("benchmark", "hutch-benchmark", argv);
}

/* hutch report: the page of hutch benchmark's report.html for one run. */
int cmd_report(int argc, char **argv) {
  (void)argc;
  return cli_exec_program("report", "hutch-benchmark", argv);
}
