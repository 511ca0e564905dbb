-- wrk script: stateless 2026-07-28 tools/call (echo); no session, a fresh id per request.
-- Usage: wrk -c64 -t2 -d10s -s scripts/wrk-call-modern.lua http://127.0.0.1:8080/mcp
local counter = 0
local thread_tag = 0

function setup(thread)
  thread_tag = thread_tag + 1
  thread:set("tag", thread_tag)
end

wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
wrk.headers["accept"] = "application/json, text/event-stream"
wrk.headers["mcp-protocol-version"] = "2026-07-28"
wrk.headers["mcp-method"] = "tools/call"
wrk.headers["mcp-name"] = "echo"

function request()
  counter = counter + 1
  local body = string.format(
    '{"jsonrpc":"2.0","id":"%s-%d","method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"echo","arguments":{"message":"hello"}}}',
    tostring(tag), counter)
  return wrk.format(nil, nil, nil, body)
end
