"""A FastMCP server of the Python SDK served over its WebSocket transport.

Usage: python ws_server.py PORT
Tools: echo(message) and add(a, b). Prints "ready" once it listens on 127.0.0.1:PORT/ws.
"""

import sys
import warnings

warnings.filterwarnings("ignore", category=DeprecationWarning)

import anyio  # noqa: E402
import uvicorn  # noqa: E402
from mcp.server.fastmcp import FastMCP  # noqa: E402
from mcp.server.websocket import websocket_server  # noqa: E402

mcp = FastMCP("python-ws")


@mcp.tool()
def echo(message: str) -> str:
    """Echoes the message back."""
    return message


@mcp.tool()
def add(a: int, b: int) -> int:
    """Adds a and b."""
    return a + b


async def app(scope, receive, send):
    """The ASGI app: the MCP WebSocket endpoint at /ws, 404 elsewhere."""
    if scope["type"] == "websocket" and scope["path"] == "/ws":
        async with websocket_server(scope, receive, send) as (read, write):
            server = mcp._mcp_server
            await server.run(read, write, server.create_initialization_options())
    elif scope["type"] == "http":
        await send({"type": "http.response.start", "status": 404, "headers": []})
        await send({"type": "http.response.body", "body": b""})


class Ready(uvicorn.Server):
    async def startup(self, sockets=None):
        await super().startup(sockets)
        print("ready", flush=True)


config = uvicorn.Config(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", lifespan="off")
anyio.run(Ready(config).serve)
