/* SPDX-License-Identifier: Apache-2.0 */
/* A request policy shared by LLM clients across processes: a cap on
 * requests in flight and a shared backoff on HTTP 429 (llm_gate.c). */
#pragma once

#include <signal.h>
#include <stdbool.h>

#include "error.h"

struct llm_gate;

/* The gate in DIR ($HUTCH_LLM_GATE); NULL when DIR is unset or absent (no
 * sharing: the client acts alone). */
struct llm_gate *llm_gate_open(const char *dir);
void llm_gate_close(struct llm_gate *g);
/* Waits out the shared backoff, then for a free slot; false when *stop. */
bool llm_gate_enter(struct llm_gate *g, volatile sig_atomic_t *stop);
void llm_gate_leave(struct llm_gate *g);
/* After a 429 that told this client to wait WAIT seconds: every client
 * waits as long; returns the seconds left of the shared backoff. */
double llm_gate_throttled(struct llm_gate *g, double wait);
/* Makes the gate in DIR with SLOTS slots (hutch benchmark). */
int llm_gate_create(const char *dir, long slots, hutch_error_t *err);
