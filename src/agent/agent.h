/* SPDX-License-Identifier: Apache-2.0 */
/* hutch-agent: one task, one sandbox, one model conversation. */
#ifndef HUTCH_AGENT_AGENT_H
#define HUTCH_AGENT_AGENT_H

#include <signal.h>

#include "settings.h"

/* Exit codes of hutch run (see hutch-run(1)). */
#define AGENT_EXIT_SUBMITTED 0
#define AGENT_EXIT_UNFINISHED 1
#define AGENT_EXIT_USAGE 2
#define AGENT_EXIT_LLM 3
#define AGENT_EXIT_TIMEOUT 124 /* --run-timeout */
#define AGENT_EXIT_RUNTIME 125

/* Set by the SIGINT/SIGTERM/SIGHUP handler to the signal's number. */
extern volatile sig_atomic_t agent_stop;

int agent_run(const struct settings *s);
/* hutch-agent's whole program (agent_main.c): the command line parsed, the
 * signal handlers set, the run; returns its exit status.  Called once per
 * process, from main() or in a fresh fork (hutch benchmark). */
int agent_main(int argc, char **argv);

#endif
