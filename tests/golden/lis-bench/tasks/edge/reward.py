# SPDX-License-Identifier: Apache-2.0
"""Reward of the edge-case set: an exact match, and answers that make it
raise or return another type than float."""


def compute_score(agent_answer, ground_truth, **kwargs):
    if agent_answer == "boom":
        return 1 / 0
    if agent_answer == "int":
        return 1
    if agent_answer == "bool":
        return True
    return 1.0 if agent_answer == ground_truth else 0.0
