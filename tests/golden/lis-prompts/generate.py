#!/usr/bin/python3
"""Expected system and user messages for hutch's prompt-config rendering,
made by LLM-in-Sandbox 0.2.0's own code (see README.md).

Usage: generate.py CLI_PY AGENT_PY [CASES_DIR]

CLI_PY and AGENT_PY are llm_in_sandbox/cli.py and llm_in_sandbox/agent.py
of LLM-in-Sandbox at tag v0.2.0.  Nothing of them is imported (their
imports need Docker, LiteLLM, Fire, Rich): the statements that load a
prompt config and render the two messages are cut out of their syntax
trees and executed as they are, on each CASES_DIR/NAME/prompt.yaml and
query.txt; the results go to CASES_DIR/NAME/system.txt and user.txt.
Needs PyYAML (LLM-in-Sandbox reads configs with yaml.safe_load).
"""
import ast
import os
import sys
import types
from pathlib import Path

import yaml


def function(tree, name, cls=None):
    scope = tree.body
    if cls:
        scope = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls).body
    return next(n for n in scope if isinstance(n, ast.FunctionDef) and n.name == name)


def module_of(nodes):
    return compile(ast.Module(body=list(nodes), type_ignores=[]), "<lis>", "exec")


def cut(cli_src, agent_src):
    cli = ast.parse(cli_src)
    agent = ast.parse(agent_src)
    # cli.py: load_prompt_config, and run_agent_query's branch that loads
    # the config and replaces the directory placeholders.
    load = function(cli, "load_prompt_config")
    run_q = function(cli, "run_agent_query")
    branch = next(n for n in ast.walk(run_q) if isinstance(n, ast.If)
                  and "config_path" in ast.unparse(n.test) and "exists" in ast.unparse(n.test))
    # agent.py: Agent.run's statements from the system prompt's format to
    # the user prompt's (the `if self.instance_prompt_template` branch).
    run_a = function(agent, "run", cls="Agent")
    body = run_a.body
    first = next(i for i, n in enumerate(body) if isinstance(n, ast.Assign)
                 and ast.unparse(n.targets[0]) == "system_prompt")
    last = next(i for i, n in enumerate(body) if isinstance(n, ast.If)
                and "instance_prompt_template" in ast.unparse(n.test))
    return module_of([load]), module_of(branch.body), module_of(body[first:last + 1])


def render(code, prompt_path, query):
    load, branch, agent = code
    quiet = types.SimpleNamespace(info=lambda *a, **k: None, warning=lambda *a, **k: None)
    ns = {"yaml": yaml, "Path": Path, "logger": quiet}
    exec(load, ns)
    ns["config_path"] = str(prompt_path)
    exec(branch, ns)
    ns["self"] = types.SimpleNamespace(system_prompt_template=ns["system_prompt"],
                                       instance_prompt_template=ns["instance_prompt"])
    ns["problem_statement"] = query
    exec(agent, ns)
    return ns["system_prompt"], ns["user_prompt"]


def main():
    cli_py, agent_py = sys.argv[1:3]
    cases = Path(sys.argv[3] if len(sys.argv) > 3 else Path(__file__).parent / "cases")
    code = cut(Path(cli_py).read_text(), Path(agent_py).read_text())
    for case in sorted(p for p in cases.iterdir() if p.is_dir()):
        query = (case / "query.txt").read_text(encoding="utf-8")
        system, user = render(code, case / "prompt.yaml", query)
        for name, text in (("system.txt", system), ("user.txt", user)):
            with open(case / name, "w", encoding="utf-8", newline="") as f:
                f.write(text)
        print(case.name, len(system), len(user))


if __name__ == "__main__":
    main()
