# SPDX-License-Identifier: Apache-2.0
"""Reward of hutch's demo task set: compute_score(agent_answer, ground_truth, **row).

hutch benchmark runs this in a sandbox of its own (no network, bounded time
and memory): the agent's answer is data here, and the "code" tasks execute it
on purpose, which is safe only because of that sandbox.

Each row's "kind" chooses the check:
  exact   case-insensitive string match (as LLM-in-Sandbox's demo task)
  number  numeric match within 1e-6 (so 7.0 matches 7)
  code    the answer is Python source defining the function named by
          ground_truth; every [expression, expected] of the row's "tests" must
          hold; the score is the fraction that does
"""
import math


def _exact(answer, truth):
    return 1.0 if answer.strip().lower() == str(truth).strip().lower() else 0.0


def _number(answer, truth):
    try:
        return 1.0 if math.isclose(float(answer.strip()), float(truth), rel_tol=1e-6, abs_tol=1e-6) else 0.0
    except ValueError:
        return 0.0


def _code(answer, truth, tests):
    scope = {}
    try:
        exec(compile(answer, "answer.txt", "exec"), scope)
    except Exception:
        return 0.0
    if not callable(scope.get(truth)):
        return 0.0
    passed = 0
    for expr, expected in tests:
        try:
            passed += eval(expr, scope) == expected
        except Exception:
            pass
    return passed / len(tests) if tests else 0.0


def compute_score(agent_answer, ground_truth, **kwargs):
    if not agent_answer:
        return 0.0
    kind = kwargs.get("kind", "exact")
    if kind == "number":
        return _number(agent_answer, ground_truth)
    if kind == "code":
        return _code(agent_answer, ground_truth, kwargs.get("tests") or [])
    return _exact(agent_answer, ground_truth)
