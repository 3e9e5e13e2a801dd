/* SPDX-License-Identifier: Apache-2.0
 *
 * An installed LLM-in-Sandbox, for --lis and hutch benchmark without
 * TASKDIR: where its package is, and its tool schemas. */
#ifndef HUTCH_AGENT_LIS_PACKAGE_H
#define HUTCH_AGENT_LIS_PACKAGE_H

#include "hutch.h"

/* The package directory: given (a path; NULL, "" or "true": found as the
 * python3 on PATH finds llm_in_sandbox), checked to hold
 * config/general.yaml and tools.py; NULL with the error and the command
 * that installs it. */
char *lis_package_find(const char *given, hutch_error_t *err);
/* tools.py's [str_replace_editor_tool, execute_bash_tool, submit_tool] as
 * JSON text (python3 runs that file alone); NULL with the error. */
char *lis_package_tools(const char *pkg, hutch_error_t *err);

#endif
