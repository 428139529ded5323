"""A memory manager's tools as an MCP server: the tool definitions and their calls, nothing more.

The tools are the manager's own :class:`~agentrecall.memory.tools.MemoryTool` objects, so a
client lists exactly the names, descriptions and input schemas the manager gives any model
(each tool's :meth:`~agentrecall.memory.tools.MemoryTool.as_mcp`), and a call runs the same
checks and code as a model's tool call in an agent loop.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from agentrecall import __version__
from agentrecall.memory.manager import MemoryManager

SERVER_NAME = "agentrecall"


def memory_server(manager: MemoryManager, *, name: str = SERVER_NAME) -> Server[Any]:
    """Return an SDK server offering ``manager.tools``; it runs on any transport of the SDK.

    Guarantees:

    * ``tools/list`` lists each tool as its ``as_mcp()`` definition, in the manager's order.
    * ``tools/call`` answers with the tool's result as one JSON text block. Arguments that do
      not fit the schema, a request the store refuses and a failing store are a tool error
      (``isError: true``) whose text says what went wrong; the server keeps serving.
    * A name the server does not offer is a protocol error (invalid params) naming the tools
      it does offer, as the protocol asks; nothing runs.
    """
    tools = manager.tools
    by_name = {tool.name: tool for tool in tools}
    listing = types.ListToolsResult(
        tools=[types.Tool.model_validate(tool.as_mcp()) for tool in tools]
    )

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return listing

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = by_name.get(params.name)
        if tool is None:
            offered = ", ".join(by_name) or "none"
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"unknown tool '{params.name}'; this server offers: {offered}",
            )
        result = await tool.invoke(params.arguments)
        return types.CallToolResult(
            content=[types.TextContent(text=result.text)], is_error=result.is_error
        )

    return Server(name, version=__version__, on_list_tools=list_tools, on_call_tool=call_tool)
