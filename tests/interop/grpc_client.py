"""A Python gRPC client generated from our .proto with grpcio-tools, driving `oxmcp serve`.

Usage: grpc_client.py HOST:PORT PROTO_FILE

Generates mcp_pb2 / mcp_pb2_grpc into a temporary folder, then:
- Connect (legacy era, JSON envelopes): initialize, initialized, tools/list, and a `slow`
  call whose progress notifications arrive on the stream before its result; then ends its
  side and checks the stream ends cleanly;
- Connect in the protobuf form (`mcp-encoding: protobuf`): a 2026-07-28 `echo` whose answer
  is a protobuf Message, read field by field;
- Call (unary): a 2026-07-28 `echo`.
Prints one JSON line with what it saw.
"""

import faulthandler
import json
import os
import queue
import subprocess
import sys
import tempfile

import grpc

# A step that hangs shows where (on stderr), and ends the script before the test's timeout.
faulthandler.dump_traceback_later(40, exit=True)

TARGET, PROTO = sys.argv[1], sys.argv[2]

out = tempfile.mkdtemp()
proto_dir = os.path.dirname(os.path.abspath(PROTO))
subprocess.run(
    [sys.executable, "-m", "grpc_tools.protoc", f"-I{proto_dir}", f"--python_out={out}",
     f"--grpc_python_out={out}", os.path.basename(PROTO)],
    check=True,
)
sys.path.insert(0, out)
import mcp_pb2  # noqa: E402
import mcp_pb2_grpc  # noqa: E402

MODERN = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "py-grpc", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def env(message):
    return mcp_pb2.Envelope(json=json.dumps(message).encode())


def value(v):
    """A protobuf Value as a Python value."""
    kind = v.WhichOneof("kind")
    if kind == "struct_value":
        return {f.key: value(f.value) for f in v.struct_value.fields}
    if kind == "list_value":
        return [value(x) for x in v.list_value.values]
    if kind == "null_value":
        return None
    return getattr(v, kind)


channel = grpc.insecure_channel(TARGET)
stub = mcp_pb2_grpc.McpStub(channel)
seen = {}

# Connect, legacy era, JSON envelopes.
outbox = queue.Queue()


def requests():
    while True:
        item = outbox.get()
        if item is None:
            return
        yield item


answers = stub.Connect(requests())


def next_json():
    e = next(answers)
    assert e.WhichOneof("body") == "json", e
    return json.loads(e.json)


outbox.put(env({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "py-grpc", "version": "1"}}}))
seen["protocolVersion"] = next_json()["result"]["protocolVersion"]
outbox.put(env({"jsonrpc": "2.0", "method": "notifications/initialized"}))
outbox.put(env({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
seen["tools"] = sorted(t["name"] for t in next_json()["result"]["tools"])
outbox.put(env({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
    "name": "slow", "arguments": {"steps": 3, "delay_ms": 10},
    "_meta": {"progressToken": "p"}}}))
progress = []
while True:
    m = next_json()
    if m.get("method") == "notifications/progress":
        progress.append(m["params"]["progress"])
    elif m.get("id") == 3:
        seen["slow"] = m["result"]["content"][0]["text"]
        break
seen["progress"] = progress
outbox.put(None)  # our side ends; the server ends its side after answering
rest = list(answers)
seen["ended_cleanly"] = rest == []

# Connect, protobuf envelopes chosen by metadata; a 2026-07-28 request.
call = {"jsonrpc": "2.0", "id": "m", "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": "from python, protobuf"},
                   "_meta": MODERN}}
replies = stub.Connect(iter([env(call)]), metadata=[("mcp-encoding", "protobuf")])
first = next(replies)
assert first.WhichOneof("body") == "message", first
m = first.message
seen["proto_id"] = m.id.text
seen["proto_echo"] = value(m.result)["content"][0]["text"]

# The unary Call.
answer = stub.Call(env({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
    "name": "echo", "arguments": {"message": "unary from python"}, "_meta": MODERN}}))
seen["unary"] = json.loads(answer.json)["result"]["content"][0]["text"]

print(json.dumps(seen), flush=True)
# grpcio can deadlock at interpreter exit while a streaming call is still referenced (its
# `__del__` waits on a lock held by its channel's thread): end the calls and the channel, then
# leave without the interpreter's teardown.
replies.cancel()
channel.close()
os._exit(0)
