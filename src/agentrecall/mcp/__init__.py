"""The MCP server: a memory manager's tools for any Model Context Protocol client.

Built on the official ``mcp`` SDK, an optional dependency (``pip install 'agentrecall[mcp]'``);
importing this package without it raises an ``ImportError`` that says so. ``import
agentrecall`` never imports it.

* :func:`memory_server` turns a :class:`~agentrecall.MemoryManager`'s tools into an SDK server;
* :func:`serve_stdio` serves one client over standard input and output, answering every line
  it cannot read with a JSON-RPC error;
* :func:`serve_http` serves streamable HTTP, every request checked for a bearer token
  (:func:`require_bearer`), its sessions kept within :class:`SessionLimits`.
"""

from __future__ import annotations

try:
    from agentrecall.mcp.auth import check_token, new_token, require_bearer
    from agentrecall.mcp.server import memory_server
    from agentrecall.mcp.sessions import SessionLimits
    from agentrecall.mcp.transports import is_loopback, serve_http, serve_stdio
except ImportError as error:
    raise ImportError(
        f"the MCP server needs the mcp package ({error}): pip install 'agentrecall[mcp]'"
    ) from error

__all__ = [
    "check_token",
    "is_loopback",
    "memory_server",
    "new_token",
    "require_bearer",
    "SessionLimits",
    "serve_http",
    "serve_stdio",
]
