"""The Python SDK's WebSocket client against a server: initialize, list tools, call echo.

Usage: python ws_client.py ws://HOST:PORT/ws
Prints one JSON line: {"server": ..., "tools": [...], "echo": "..."}.
"""

import asyncio
import json
import sys
import warnings

warnings.filterwarnings("ignore", category=DeprecationWarning)

from mcp import ClientSession  # noqa: E402
from mcp.client.websocket import websocket_client  # noqa: E402


async def main(url):
    async with websocket_client(url) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            tools = await session.list_tools()
            result = await session.call_tool("echo", {"message": "from python"})
            print(json.dumps({
                "server": init.serverInfo.name,
                "version": init.protocolVersion,
                "tools": sorted(t.name for t in tools.tools),
                "echo": result.content[0].text,
            }))


asyncio.run(main(sys.argv[1]))
