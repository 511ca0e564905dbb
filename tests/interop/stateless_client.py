"""The Python SDK's Streamable HTTP client against `oxmcp serve --stateless`.

Usage: stateless_client.py URL

Connects (initialize, initialized), lists the tools, calls `echo`, and calls `slow` with a
progress callback (its progress comes on the POST's own SSE answer). Every HTTP exchange is
recorded through httpx's event hooks. Prints one JSON line: the tools, the echo's text, the
progress count, the session id the SDK holds, and each exchange's method, status and
`Mcp-Session-Id` response header.
"""

import asyncio
import faulthandler
import json
import sys
from datetime import timedelta

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

# A step that hangs shows where (on stderr), and ends the script before the test's timeout.
faulthandler.dump_traceback_later(40, exit=True)

URL = sys.argv[1]


async def main():
    exchanges = []

    async def record(response: httpx.Response):
        exchanges.append(
            {
                "method": response.request.method,
                "status": response.status_code,
                "session": response.headers.get("mcp-session-id"),
                "sent_session": response.request.headers.get("mcp-session-id"),
            }
        )

    http = httpx.AsyncClient(event_hooks={"response": [record]}, timeout=httpx.Timeout(30.0))
    progress = []

    async def on_progress(done, total, message):
        progress.append(done)

    async with http:
        async with streamable_http_client(URL, http_client=http) as (read, write, session_id):
            async with ClientSession(read, write, read_timeout_seconds=timedelta(seconds=20)) as s:
                await s.initialize()
                tools = await s.list_tools()
                echo = await s.call_tool("echo", {"message": "hello stateless"})
                slow = await s.call_tool(
                    "slow", {"steps": 3, "delay_ms": 20}, progress_callback=on_progress
                )
                held = session_id()
    print(
        json.dumps(
            {
                "tools": sorted(t.name for t in tools.tools),
                "echo": echo.content[0].text,
                "echo_error": bool(echo.isError),
                "slow": slow.content[0].text,
                "progress": len(progress),
                "session_id": held,
                "exchanges": exchanges,
            }
        )
    )


asyncio.run(main())
