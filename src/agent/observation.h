/* SPDX-License-Identifier: Apache-2.0 */
/* Every string the model sees from a tool, and the text clean-up applied to
 * tool output.  LLM-in-Sandbox's checkpoints were trained on these exact
 * bytes, so they live here, in one place, pinned by tests/unit/test_agent_text. */
#ifndef HUTCH_AGENT_OBSERVATION_H
#define HUTCH_AGENT_OBSERVATION_H

#include <stdbool.h>
#include <stddef.h>

#define OBS_SUBMIT "<<< Finished >>>"
/* The reference's CONTINUE_MSG, its blank lines and the space after
 * "response." included. */
#define OBS_REMINDER                                                                                                   \
  "\nYou forgot to use a function call in your response. \n"                                                           \
  "YOU MUST USE A FUNCTION CALL IN EACH RESPONSE.\n\n"                                                                 \
  "IMPORTANT: YOU SHOULD NEVER ASK FOR HUMAN HELP.\n"
#define OBS_CLIPPED                                                                                                    \
  "<response clipped><NOTE>To save on context only part of this file has been shown to you. You should retry this "    \
  "tool after you have searched inside the file with `grep -n` in order to find the line numbers of what you are "     \
  "looking for.</NOTE>"
#define OBS_EDITOR_MAX_CHARS 10000
#define OBS_KEEP_LINES 40

/* "Exit code: 0\nExecution output of \[execute_bash]:\n\[STDOUT]\n..." with
 * "\n\[STDERR]\n..." only when stderr is not empty; a stream of nothing but
 * white space counts as empty (Python's str.strip()).  exit_code < 0 means the
 * tool could not run (the reference's "-1"); timed_out replaces stdout with
 * the timeout sentence. */
char *obs_bash(int exit_code, bool timed_out, double timeout, const char *out, const char *err);
/* Appended when the persistent shell ended during a command: "\n[...]". */
char *obs_session_restarted(const char *working_dir);
/* The tool could not be run at all: "Error: WHY" in both streams, code -1. */
char *obs_bash_failure(const char *why);
/* "Execution output of \[str_replace_editor]:\n" + result. */
char *obs_editor(const char *result);
char *obs_unknown_action(const char *name);
/* A tool call whose arguments are not a JSON object. */
char *obs_bad_arguments(const char *name, const char *why);
/* --tools lis: arguments that parse as JSON but not as an object, answered
 * as the reference does ("Exit code: 0\nExecution output of \[NAME]:\n"
 * for execute_bash, "Execution output of \[NAME]:\n" for any other). */
char *obs_lis_not_object(const char *name);
/* "\nSteps Remaining: N" */
char *obs_steps_remaining(long n);

/* The answers to calls that were not run (budget.c): past the reply's
 * --max-calls-per-reply, the step budget, the time limit, the
 * conversation's size; and what replaces an observation that would take
 * the conversation past its size. */
char *obs_not_run_cap(size_t n_calls, long max_calls);
char *obs_not_run_steps(long max_steps);
char *obs_not_run_time(void);
char *obs_not_run_conversation(unsigned long long max);
char *obs_left_out_conversation(size_t len, unsigned long long max);
/* Appended to the last answer of a reply whose later calls were left out
 * of the conversation. */
char *obs_calls_left_out(size_t n);

/* Text clean-up for tool output, each returning a new string. */
/* Invalid UTF-8 becomes U+FFFD, one for each maximal invalid subpart (as
 * Python's decode(errors="replace")), and so does NUL. */
char *text_utf8_sanitize(const char *s, size_t len);
bool text_is_utf8(const char *s, size_t len);
/* Drops ANSI colour sequences (ESC [ digits/; m) and every '\r'. */
char *text_strip_ansi(const char *s);
/* More than 2*keep lines (Python's str.splitlines()): the first and last
 * `keep` lines, joined by '\n', around a marker. */
char *text_cut_middle(const char *s, int keep);
/* Longer than max characters: the first max and the clipped marker. */
char *text_clip(const char *s, size_t max);
/* Longer than max bytes: about its first and last max/2 bytes (whole
 * UTF-8 sequences) around a marker that says how many were left out. */
char *text_cut_bytes(const char *s, size_t max);
/* The whole pipeline for one captured stream. */
char *text_for_model(const char *s, size_t len, bool capped);

#endif
