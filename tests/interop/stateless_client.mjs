// The TypeScript SDK's Streamable HTTP client against `oxmcp serve --stateless`.
//
// Usage: node stateless_client.mjs URL
//
// The SDK is the one the conformance suite installs, imported by its path from the
// repository root (conformance/node_modules/@modelcontextprotocol/sdk). Connects (initialize,
// initialized; the SDK then tries the GET stream, which a stateless server refuses with 405),
// lists the tools, calls `echo`, and calls `slow` with a progress callback. Every HTTP
// exchange is recorded through the transport's `fetch` option. Prints one JSON line: the
// tools, the echo's text, the progress count, the session id the transport holds, and each
// exchange's method, status and `Mcp-Session-Id` response header.
const root = new URL("../../", import.meta.url);
const sdk = new URL("conformance/node_modules/@modelcontextprotocol/sdk/dist/esm/", root);
const { Client } = await import(new URL("client/index.js", sdk).href);
const { StreamableHTTPClientTransport } = await import(new URL("client/streamableHttp.js", sdk).href);

const url = process.argv[2];
// A step that hangs ends the script before the test's timeout.
setTimeout(() => {
  console.error("stateless_client.mjs: timed out");
  process.exit(3);
}, 40000).unref();

const exchanges = [];
const recording = async (input, init) => {
  const response = await fetch(input, init);
  const sent = new Headers(init?.headers ?? {});
  exchanges.push({
    method: init?.method ?? "GET",
    status: response.status,
    session: response.headers.get("mcp-session-id"),
    sent_session: sent.get("mcp-session-id"),
  });
  return response;
};

const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: recording });
const client = new Client({ name: "ts-stateless", version: "1" }, { capabilities: {} });
await client.connect(transport);
const tools = await client.listTools();
const echo = await client.callTool({ name: "echo", arguments: { message: "hello stateless" } });
let progress = 0;
const slow = await client.callTool(
  { name: "slow", arguments: { steps: 3, delay_ms: 20 } },
  undefined,
  { onprogress: () => { progress += 1; } },
);
// The GET the SDK starts after `initialized` runs on its own; give it its answer.
for (let i = 0; i < 50 && !exchanges.some((e) => e.method === "GET"); i++) {
  await new Promise((r) => setTimeout(r, 100));
}
const held = transport.sessionId ?? null;
await client.close();
console.log(JSON.stringify({
  tools: tools.tools.map((t) => t.name).sort(),
  echo: echo.content[0].text,
  echo_error: Boolean(echo.isError),
  slow: slow.content[0].text,
  progress,
  session_id: held,
  exchanges,
}));
