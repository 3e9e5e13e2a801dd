/* SPDX-License-Identifier: Apache-2.0 */
/* What a model can make one run hold, bounded: the tool calls of a reply
 * that are run and those that go into the conversation, the steps (each
 * call run, each reply without one), the bytes of one observation and of
 * the whole conversation, and the run's wall-clock time.  Pure: the caller
 * passes the time. */
#ifndef HUTCH_AGENT_BUDGET_H
#define HUTCH_AGENT_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "llm_client.h"

enum budget_end { BUDGET_GOES_ON, BUDGET_CONVERSATION, BUDGET_TIME };

struct budget {
  long max_steps;
  long max_calls;    /* of one reply, run */
  size_t max_obs;    /* bytes of one observation */
  uint64_t max_conv; /* bytes of the replies and observations of the run */
  double deadline;   /* monotonic seconds */
  long steps;
  uint64_t conv;
  enum budget_end ended;
};

/* How many of a reply's n calls go into the conversation, each answered:
 * twice max_calls at most (the first max_calls run, the others answered
 * "not run"); the rest are left out of the reply as it goes back. */
size_t budget_calls_kept(const struct budget *b, size_t n);
/* Counts a reply's text: content, reasoning and its first n_calls calls;
 * past max_conv the run ends (its calls are then not run). */
void budget_add_reply(struct budget *b, const struct llm_reply *rep, size_t n_calls);
/* Call i (0-based) of a reply of n calls, at time now: NULL to run it (it
 * is counted as a step), else the answer saying why it is not run. */
char *budget_refuse(struct budget *b, size_t i, size_t n, double now);
/* A tool's timeout, so that it ends by the deadline. */
double budget_tool_timeout(const struct budget *b, double timeout, double now);
/* After a call: ends the run when its time is up; true then. */
bool budget_check_time(struct budget *b, double now);
/* The observation as it goes into the conversation, a new string: cut to
 * max_obs; a call's output (ran) that would take the conversation past
 * max_conv is replaced by a note, and the run ends. */
char *budget_observation(struct budget *b, const char *obs, bool ran);
/* The end reason of trajectory.json: "conversation_limit", "time_limit";
 * NULL while the run goes on. */
const char *budget_end_reason(const struct budget *b);

#endif
