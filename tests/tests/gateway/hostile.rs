//! Upstreams that misbehave on purpose. Our own server cannot be made to misbehave, so these
//! are small real servers written as shell scripts (stdio, one JSON-RPC message a line).

use super::*;

/// A stdio server whose `tools/list` never ends: one tool on the first page, then empty pages,
/// each with a cursor to the next.
const ENDLESS_PAGES: &str = r#"while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  case "$line" in
    *'"method":"initialize"'*)
      echo '{"jsonrpc":"2.0","id":'"$id"',"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"endless","version":"0"}}}' ;;
    *'"method":"tools/list"'*'"cursor"'*)
      echo '{"jsonrpc":"2.0","id":'"$id"',"result":{"tools":[],"nextCursor":"more"}}' ;;
    *'"method":"tools/list"'*)
      echo '{"jsonrpc":"2.0","id":'"$id"',"result":{"tools":[{"name":"only","inputSchema":{"type":"object"}}],"nextCursor":"more"}}' ;;
    *'"method":"ping"'*)
      echo '{"jsonrpc":"2.0","id":'"$id"',"result":{}}' ;;
  esac
done
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endless_tool_pages_are_cut_off() {
    let (dir, config) = config_file("mcp-gateway-endless", "");
    let script = dir.join("endless.sh");
    std::fs::write(&script, ENDLESS_PAGES).unwrap();
    let bin = oxmcp();
    std::fs::write(
        &config,
        format!(
            r#"[[upstream]]
name = "endless"
command = ["sh", "{}"]
era = "legacy"

[[upstream]]
name = "local"
command = ["{bin}", "serve", "--stdio"]
allow_tools = ["echo"]
"#,
            script.display()
        ),
    )
    .unwrap();
    let (_gateway, url) = serve_gateway(&config).await;
    let c = client(&url, EraChoice::Legacy).await;
    // The pages stop at the gateway's page limit: what they held is listed.
    until(&c, "the endless upstream's tool", |n| {
        n.iter().any(|t| t == "endless__only")
    })
    .await;
    assert_eq!(names(&c).await, ["endless__only", "local__echo"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A legacy HTTP+SSE client of the gateway that stops reading while its call floods it with
/// log messages holds up nobody else's calls through the same upstream.
/// The bytes the gateway (listening on `gateway_port`) has written to its connection with the
/// client at 127.0.0.1:`client_port` that the client has not yet acknowledged
/// (`tx_queue` in /proc/net/tcp).
fn unsent(gateway_port: u16, client_port: u16) -> Option<u64> {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let (local, remote) = (
        format!("0100007F:{gateway_port:04X}"),
        format!("0100007F:{client_port:04X}"),
    );
    table.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.get(1) != Some(&local.as_str()) || f.get(2) != Some(&remote.as_str()) {
            return None;
        }
        let (tx, _rx) = f.get(4)?.split_once(':')?;
        u64::from_str_radix(tx, 16).ok()
    })
}

/// Waits until the gateway's send buffer to the client is full: over 1 MiB waits there, and
/// no more has been taken for 100 ms (the gateway's writes to that client block).
async fn send_buffer_full(gateway_port: u16, client_port: u16) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let (mut last, mut still) = (0, 0);
    while still < 10 {
        let queued = unsent(gateway_port, client_port).expect("the client's connection");
        (last, still) = match queued {
            q if q > 1 << 20 && q == last => (q, still + 1),
            q => (q, 0),
        };
        assert!(
            Instant::now() < deadline,
            "the gateway's send buffer never filled: {last}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_holds_up_nobody() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let bin = oxmcp();
    let (dir, config) = config_file(
        "mcp-gateway-stuck",
        &format!(
            "[[upstream]]\nname = \"demo\"\ncommand = [\"{bin}\", \"serve\", \"--stdio\"]\nmax_connections = 4\n"
        ),
    );
    // A long stall timeout: without the fix, the others would wait that long.
    let (_gateway, url) = oxmcp_tests::serve_http(&[
        "--config",
        config.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
        "--stall-timeout",
        "120s",
    ])
    .await;
    let base = url.trim_end_matches("/mcp").to_owned();
    let addr = base.trim_start_matches("http://").to_owned();
    // The stuck client: a tiny receive buffer, reads its endpoint, then nothing more.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let stuck = socket.connect(addr.parse().unwrap()).await.unwrap();
    let stuck_port = stuck.local_addr().unwrap().port();
    let gateway_port = stuck.peer_addr().unwrap().port();
    let (rd, mut wr) = stuck.into_split();
    wr.write_all(b"GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
        .await
        .unwrap();
    let mut rd = BufReader::new(rd);
    let endpoint = loop {
        let mut line = String::new();
        rd.read_line(&mut line).await.unwrap();
        if let Some(e) = line.strip_prefix("data: ") {
            break e.trim().to_owned();
        }
    };
    let post = |body: serde_json::Value| {
        reqwest::Client::new()
            .post(format!("{base}{endpoint}"))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
    };
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"stuck","version":"1"}}});
    assert!(post(init).await.unwrap().status().is_success());
    post(json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
        .await
        .unwrap();
    // Its call: 3,000 log messages of 8 KiB, far more than its buffers hold.
    let flood = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"demo__log","arguments":{"message":"x".repeat(8192),"repeat":3000}}});
    assert!(post(flood).await.unwrap().status().is_success());
    send_buffer_full(gateway_port, stuck_port).await;
    // Another client calls through the same upstream meanwhile.
    let other = client(&url, EraChoice::Legacy).await;
    let started = Instant::now();
    let answer = tokio::time::timeout(
        Duration::from_secs(20),
        other.call_tool("demo__echo", args(json!({"message": "still here"}))),
    )
    .await
    .expect("the other client's call is answered")
    .unwrap();
    assert_eq!(answer.content[0].as_text(), Some("still here"));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "held up for {:?}",
        started.elapsed()
    );
    drop(rd);
    let _ = std::fs::remove_dir_all(&dir);
}
