# SPDX-License-Identifier: Apache-2.0
"""llm-sandbox's MCP server's data (the languages it describes).

The server itself is hutch's own: `hutch mcp` (hutch-mcp(1))."""
