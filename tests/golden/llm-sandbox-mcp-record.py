# SPDX-License-Identifier: Apache-2.0
"""Records what llm-sandbox's MCP server offers, from its own code, into
llm-sandbox-mcp.json (tests/integration/mcp-llm-sandbox.sh compares hutch
mcp with it).

Run with llm-sandbox's source on PYTHONPATH, and a stand-in for the `mcp`
package ahead of it when that package cannot be installed: the stand-in's
FastMCP only collects the decorated functions.  Each tool's inputSchema is
then derived from the function's signature as FastMCP does it (a pydantic
model of the parameters, "<name>Arguments"); the tools that need no
container (get_supported_languages, get_language_details) and the resource
are called, and their text recorded.

    PYTHONPATH=STANDIN:LLM_SANDBOX_SRC python3 llm-sandbox-mcp-record.py > llm-sandbox-mcp.json
"""
import inspect
import json
import sys

from pydantic import Field, create_model

from llm_sandbox.mcp_server import server


def input_schema(fn):
    fields = {}
    for name, p in inspect.signature(fn).parameters.items():
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[name] = (p.annotation, Field(default))
    return create_model(f"{fn.__name__}Arguments", **fields).model_json_schema()


tools = []
for name, fn in server.mcp.tools.items():
    tools.append({"name": name, "description": inspect.cleandoc(fn.__doc__ or ""), "inputSchema": input_schema(fn)})

langs = json.loads(server.get_supported_languages().text)
out = {
    "recorded_from": "llm_sandbox.mcp_server.server",
    "tools": tools,
    "get_supported_languages": server.get_supported_languages().text,
    "get_language_details": {lang: server.get_language_details(lang).text for lang in langs + ["cobol"]},
    "resources": {uri: fn() for uri, fn in server.mcp.resources.items()},
}
json.dump(out, sys.stdout, indent=2)
sys.stdout.write("\n")
