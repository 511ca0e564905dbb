"""A plain `websockets` client sending raw and bad frames to an MCP WebSocket server.

Usage: python ws_raw.py ws://HOST:PORT/ws
Prints one JSON line with what came back for each case.
"""

import asyncio
import json
import sys

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed


async def exchange(url, frame):
    """Sends one frame on a new connection; the JSON answer, or the close code."""
    async with connect(url, subprotocols=["mcp"], max_size=None) as ws:
        try:
            await ws.send(frame)
            return json.loads(await asyncio.wait_for(ws.recv(), 10))
        except ConnectionClosed as e:
            return {"closed": e.rcvd.code if e.rcvd else None}


async def main(url):
    out = {}
    async with connect(url, subprotocols=["mcp"]) as ws:
        out["subprotocol"] = ws.subprotocol
    out["not_json"] = await exchange(url, "{not json")
    out["binary"] = await exchange(url, b"\x00\x01binary")
    out["too_big"] = await exchange(url, json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x" * (8 << 20)}}))
    out["ping"] = await exchange(url, json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
    try:
        async with connect(url, subprotocols=["graphql-ws"]):
            out["other_subprotocol"] = "accepted"
    except Exception as e:  # the server refuses the upgrade
        out["other_subprotocol"] = type(e).__name__
    print(json.dumps(out))


asyncio.run(main(sys.argv[1]))
