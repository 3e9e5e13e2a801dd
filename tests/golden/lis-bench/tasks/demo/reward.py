# SPDX-License-Identifier: Apache-2.0
"""Reward of the LLM-in-Sandbox-shaped demo set: a case-insensitive match."""


def compute_score(agent_answer, ground_truth, **kwargs):
    if not agent_answer or not ground_truth:
        return 0.0
    return 1.0 if agent_answer.strip().lower() == ground_truth.strip().lower() else 0.0
