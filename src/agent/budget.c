/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "budget.h"

#include <string.h>

#include "observation.h"
#include "util.h"

size_t budget_calls_kept(const struct budget *b, size_t n) {
  size_t max = (size_t)b->max_calls;
  return max >= n / 2 + 1 ? n : 2 * max;
}

void budget_add_reply(struct budget *b, const struct llm_reply *rep, size_t n_calls) {
  uint64_t n = (rep->content ? strlen(rep->content) : 0) + (rep->reasoning ? strlen(rep->reasoning) : 0);
  for (size_t i = 0; i < n_calls; i++)
    n += strlen(rep->calls[i].id) + strlen(rep->calls[i].name) + strlen(rep->calls[i].arguments);
  b->conv += n;
  if (b->conv > b->max_conv && b->ended == BUDGET_GOES_ON)
    b->ended = BUDGET_CONVERSATION;
}

char *budget_refuse(struct budget *b, size_t i, size_t n, double now) {
  if (b->ended == BUDGET_TIME)
    return obs_not_run_time();
  if (b->ended == BUDGET_CONVERSATION)
    return obs_not_run_conversation((unsigned long long)b->max_conv);
  if (i >= (size_t)b->max_calls)
    return obs_not_run_cap(n, b->max_calls);
  if (b->steps >= b->max_steps)
    return obs_not_run_steps(b->max_steps);
  if (budget_check_time(b, now))
    return obs_not_run_time();
  b->steps++;
  return NULL;
}

double budget_tool_timeout(const struct budget *b, double timeout, double now) {
  double left = b->deadline - now;
  return left < timeout ? left : timeout;
}

bool budget_check_time(struct budget *b, double now) {
  if (now >= b->deadline && b->ended == BUDGET_GOES_ON)
    b->ended = BUDGET_TIME;
  return b->ended == BUDGET_TIME;
}

char *budget_observation(struct budget *b, const char *obs, bool ran) {
  char *r = text_cut_bytes(obs, b->max_obs);
  size_t len = strlen(r);
  if (ran && b->conv + len > b->max_conv) {
    free(r);
    r = obs_left_out_conversation(len, (unsigned long long)b->max_conv);
    if (b->ended == BUDGET_GOES_ON)
      b->ended = BUDGET_CONVERSATION;
  }
  b->conv += strlen(r);
  return r;
}

const char *budget_end_reason(const struct budget *b) {
  return b->ended == BUDGET_TIME ? "time_limit" : b->ended == BUDGET_CONVERSATION ? "conversation_limit" : NULL;
}
