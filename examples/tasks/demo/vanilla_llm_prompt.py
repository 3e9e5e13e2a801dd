# SPDX-License-Identifier: Apache-2.0
"""Prompt of the demo tasks for a model without a sandbox (LLM-in-Sandbox's --mode llm)."""


def create_prompt(problem_data):
    text = problem_data["problem_statement"]
    files = problem_data.get("input_files") or {}
    for name, content in files.items():
        text += "\n\n--- %s ---\n%s" % (name, content)
    return text
