-- wrk script: POST tools/call (echo) into an existing session, a fresh request id each time.
-- Usage: SESSION=<id> wrk -c64 -t2 -d10s -s scripts/wrk-call.lua http://127.0.0.1:8080/mcp
local counter = 0
local thread_tag = 0

function setup(thread)
  thread_tag = thread_tag + 1
  thread:set("tag", thread_tag)
end

wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
wrk.headers["accept"] = "application/json, text/event-stream"
wrk.headers["mcp-protocol-version"] = "2025-11-25"
wrk.headers["mcp-session-id"] = os.getenv("SESSION") or ""

function request()
  counter = counter + 1
  local body = string.format(
    '{"jsonrpc":"2.0","id":"%s-%d","method":"tools/call","params":{"name":"echo","arguments":{"message":"hello"}}}',
    tostring(tag), counter)
  return wrk.format(nil, nil, nil, body)
end
