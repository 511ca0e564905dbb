//! The `mcp` command's output, human and `--json`, against the demo server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

const MCP: &str = env!("CARGO_BIN_EXE_oxmcp");

fn mcp(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(MCP)
        .args(args)
        .env("MCP_LOG", "off")
        .env_remove("MCP_BEARER")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// The first word of every line.
fn first_words(out: &str) -> Vec<&str> {
    out.lines()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect()
}

#[test]
fn tools_human_and_json() {
    let (ok, out, _) = mcp(&["tools", "--", MCP, "serve", "--stdio"]);
    assert!(ok);
    assert_eq!(first_words(&out), oxmcp_tests::DEMO_TOOLS);
    assert!(out.contains("Echoes the message back"));
    let (ok, out, _) = mcp(&["tools", "--json", "--", MCP, "serve", "--stdio"]);
    assert!(ok);
    let tools: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(tools[4]["name"], "echo");
    assert_eq!(
        tools[4]["inputSchema"]["required"],
        serde_json::json!(["message"])
    );
}

#[test]
fn call_outputs_and_errors() {
    let (ok, out, _) = mcp(&[
        "call",
        "echo",
        r#"{"message":"hi there"}"#,
        "--",
        MCP,
        "serve",
        "--stdio",
    ]);
    assert!(ok);
    assert_eq!(out, "hi there\n");
    let (ok, out, _) = mcp(&[
        "call", "add", "-a", "a=1", "-a", "b=2", "--json", "--", MCP, "serve", "--stdio",
    ]);
    assert!(ok);
    let r: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["structuredContent"]["sum"], 3.0);
    let (ok, _, err) = mcp(&[
        "call",
        "slow",
        "-a",
        "steps=2",
        "-a",
        "delay_ms=1",
        "--",
        MCP,
        "serve",
        "--stdio",
    ]);
    assert!(ok);
    assert!(
        err.contains("progress 1/2") && err.contains("progress 2/2"),
        "{err}"
    );
    // Failures are one clear line on stderr and a non-zero exit.
    let (ok, out, err) = mcp(&["call", "fail", "--", MCP, "serve", "--stdio"]);
    assert!(!ok);
    assert_eq!(out, "this tool always fails\n");
    assert_eq!(err.trim(), "error: tool fail reported an error");
    let (ok, _, err) = mcp(&["call", "nope", "--", MCP, "serve", "--stdio"]);
    assert!(!ok);
    assert!(
        err.starts_with("error: server error -32602: Unknown tool: nope"),
        "{err}"
    );
    let (ok, _, err) = mcp(&["call", "echo", "[1]", "--", MCP, "serve", "--stdio"]);
    assert!(!ok);
    assert!(err.contains("must be a JSON object"), "{err}");
    let (ok, _, err) = mcp(&["tools", "--", "/nonexistent/server"]);
    assert!(!ok);
    assert!(
        err.starts_with("error: cannot connect to `/nonexistent/server`"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn resources_read_prompts_prompt_ping() {
    let (ok, out, _) = mcp(&["resources", "--", MCP, "serve", "--stdio"]);
    assert!(ok);
    let uris = first_words(&out);
    assert_eq!(
        uris,
        [
            "demo://config.json",
            "demo://hello.md",
            "demo://readme",
            "demo://greeting/{name}",
            "demo://payload/{size}"
        ]
    );
    assert!(out.contains("(template)"));
    let (ok, out, _) = mcp(&["resources", "--json", "--", MCP, "serve", "--stdio"]);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["resources"][2]["uri"], "demo://readme");
    assert_eq!(
        v["resourceTemplates"][0]["uriTemplate"],
        "demo://greeting/{name}"
    );

    let (ok, out, _) = mcp(&["read", "demo://readme", "--", MCP, "serve", "--stdio"]);
    assert!(ok);
    assert!(out.starts_with("This is the mcp demo server."), "{out}");
    let (ok, out, _) = mcp(&[
        "read",
        "--json",
        "demo://greeting/Ada",
        "--",
        MCP,
        "serve",
        "--stdio",
    ]);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["contents"][0]["uri"], "demo://greeting/Ada");
    let (ok, out, err) = mcp(&["read", "demo://nope", "--", MCP, "serve", "--stdio"]);
    assert!(!ok && out.is_empty());
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    // The CLI speaks 2026-07-28 to a server that does (`--era auto`), where a missing
    // resource is -32602; the handshake era's -32002 with `--era legacy`.
    assert!(
        err.starts_with("error: server error -32602: Resource not found"),
        "{err}"
    );
    let (ok, _, err) = mcp(&[
        "read",
        "--era",
        "legacy",
        "demo://nope",
        "--",
        MCP,
        "serve",
        "--stdio",
    ]);
    assert!(!ok);
    assert!(
        err.starts_with("error: server error -32002: Resource not found"),
        "{err}"
    );

    let (ok, out, _) = mcp(&["prompts", "--", MCP, "serve", "--stdio"]);
    assert!(ok);
    assert!(
        out.lines()
            .any(|l| l.starts_with("greet") && l.contains("name"))
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("summarize") && l.contains("[style]"))
    );
    let (ok, out, _) = mcp(&[
        "prompt", "greet", "-a", "name=Ada", "--", MCP, "serve", "--stdio",
    ]);
    assert!(ok);
    assert!(out.contains("user: Please greet Ada"), "{out}");
    let (ok, out, _) = mcp(&[
        "prompt", "--json", "greet", "-a", "name=Ada", "--", MCP, "serve", "--stdio",
    ]);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["messages"][0]["role"], "user");

    let (ok, out, _) = mcp(&["ping", "--", MCP, "serve", "--stdio"]);
    assert!(ok);
    assert!(out.starts_with("pong from mcp-demo"), "{out}");
    let (ok, out, _) = mcp(&["ping", "--json", "--", MCP, "serve", "--stdio"]);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["ok"], true);
    assert!(v["ms"].as_f64().unwrap() >= 0.0);
    // Unreachable URL: one clear line.
    let (ok, _, err) = mcp(&["ping", "--bearer", "t0ken", "http://127.0.0.1:1/mcp"]);
    assert!(!ok);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: cannot connect to `http://127.0.0.1:1/mcp`"),
        "{err}"
    );
    assert!(!err.contains("t0ken"), "the token is never printed");
}

#[test]
fn shell_completions() {
    for shell in ["bash", "zsh", "fish"] {
        let (ok, out, _) = mcp(&["completions", shell]);
        assert!(ok, "{shell}");
        for cmd in [
            "serve",
            "tools",
            "call",
            "resources",
            "read",
            "prompts",
            "prompt",
            "ping",
        ] {
            assert!(out.contains(cmd), "{shell} completes {cmd}");
        }
    }
    let (ok, _, err) = mcp(&["completions", "tcsh"]);
    assert!(!ok && err.contains("invalid value"));
}

/// The load generator is the workspace's `oxmcp-bench`, not a command of `oxmcp`.
#[test]
fn bench_is_no_command() {
    let (ok, _, err) = mcp(&["bench", "--requests", "1", "--", MCP, "serve", "--stdio"]);
    assert!(
        !ok && err.contains("unrecognized subcommand 'bench'"),
        "{err}"
    );
    let (ok, help, _) = mcp(&["--help"]);
    assert!(ok && !help.contains("bench"), "{help}");
}

/// Runs `mcp args...` with `env` against a listener that answers 503 (its URL replaces the
/// word `URL`, or comes last); the exit status, stderr, and the head of the first request
/// (lower-cased).
fn first_request(args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let seen = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = vec![0u8; 8192];
        let n = s.read(&mut buf).unwrap();
        let _ = s.write_all(
            b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        );
        String::from_utf8_lossy(&buf[..n]).to_lowercase()
    });
    let mut args: Vec<&str> = args.to_vec();
    match args.iter_mut().find(|a| **a == "URL") {
        Some(a) => *a = &url,
        None => args.push(&url),
    }
    let out = Command::new(MCP)
        .args(args)
        .env("MCP_LOG", "off")
        .env_remove("MCP_BEARER")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    (out.status.success(), err, seen.join().unwrap())
}

#[test]
fn bearer_and_headers_are_sent() {
    let (ok, err, head) = first_request(&["ping", "--bearer", "t0ken", "-H", "X-Trace: abc"], &[]);
    assert!(!ok);
    assert!(err.contains("503"), "{err}");
    assert!(head.contains("authorization: bearer t0ken"), "{head}");
    assert!(head.contains("x-trace: abc"), "{head}");
}

#[test]
fn bearer_from_the_environment_or_a_file() {
    // MCP_BEARER, when neither --bearer nor --bearer-file is given.
    let env = [("MCP_BEARER", "env-t0ken")];
    let (ok, err, head) = first_request(&["tools"], &env);
    assert!(!ok && err.contains("503"), "{err}");
    assert!(head.contains("authorization: bearer env-t0ken"), "{head}");
    assert!(!err.contains("t0ken"), "the token is never printed: {err}");
    // --bearer-file (whitespace around the token ignored) wins over MCP_BEARER.
    let dir = std::env::temp_dir().join(format!("oxmcp-cli-bearer-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("token");
    std::fs::write(&file, "file-t0ken\n").unwrap();
    let path = file.to_str().unwrap();
    let (ok, err, head) = first_request(&["tools", "--bearer-file", path], &env);
    assert!(!ok && err.contains("503"), "{err}");
    assert!(
        head.contains("authorization: bearer file-t0ken\r\n"),
        "{head}"
    );
    assert!(!head.contains("env-t0ken"), "{head}");
    // So does --bearer; and the other client commands take the same options.
    let (_, _, head) = first_request(&["ping", "--bearer", "flag-t0ken"], &env);
    assert!(
        head.contains("authorization: bearer flag-t0ken\r\n"),
        "{head}"
    );
    let (_, _, head) = first_request(&["call", "--bearer-file", path, "URL", "echo"], &[]);
    assert!(
        head.contains("authorization: bearer file-t0ken\r\n"),
        "{head}"
    );
    // An Authorization given with -H is not doubled by MCP_BEARER.
    let (_, _, head) = first_request(&["tools", "-H", "Authorization: Basic eA=="], &env);
    assert!(head.contains("authorization: basic ea=="), "{head}");
    assert!(!head.contains("env-t0ken"), "{head}");
    // Mistakes are reported without the token.
    let (ok, _, err) = mcp(&[
        "tools",
        "--bearer",
        "x",
        "--bearer-file",
        path,
        "http://127.0.0.1:1/",
    ]);
    assert!(!ok && err.contains("cannot be used with"), "{err}");
    std::fs::write(&file, "  \n").unwrap();
    let (ok, _, err) = mcp(&["tools", "--bearer-file", path, "http://127.0.0.1:1/"]);
    assert!(!ok && err.contains("is empty"), "{err}");
    let (ok, _, err) = mcp(&[
        "tools",
        "--bearer-file",
        "/nonexistent/token",
        "http://127.0.0.1:1/",
    ]);
    assert!(!ok && err.contains("/nonexistent/token"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
    // --help names the variable but never shows its value.
    for command in ["tools", "call", "ping", "resources"] {
        let out = Command::new(MCP)
            .args([command, "--help"])
            .env("MCP_BEARER", "env-t0ken")
            .output()
            .unwrap();
        let help = String::from_utf8(out.stdout).unwrap();
        assert!(
            help.contains("--bearer-file") && help.contains("MCP_BEARER"),
            "{help}"
        );
        assert!(!help.contains("env-t0ken"), "{help}");
    }
}

/// An MCP server over HTTP (on its own thread) whose lists never end: every page of
/// `prompts/list`, `resources/list` and `resources/templates/list` is empty, with the cursor
/// "again".
fn endless_lists() -> String {
    use serde_json::{Value, json};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let answer = |body: String| async move {
        use axum::response::IntoResponse;
        let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        let result = match v["method"].as_str().unwrap_or("") {
            "initialize" => json!({
                "protocolVersion": v["params"]["protocolVersion"],
                "capabilities": {"prompts": {}, "resources": {}},
                "serverInfo": {"name": "endless", "version": "1"}
            }),
            "prompts/list" => json!({"prompts": [], "nextCursor": "again"}),
            "resources/list" => json!({"resources": [], "nextCursor": "again"}),
            "resources/templates/list" => json!({"resourceTemplates": [], "nextCursor": "again"}),
            _ if v.get("id").is_some() => {
                let error = json!({"jsonrpc": "2.0", "id": v["id"],
                    "error": {"code": -32601, "message": "Method not found"}});
                return ([("content-type", "application/json")], error.to_string()).into_response();
            }
            _ => return axum::http::StatusCode::ACCEPTED.into_response(),
        };
        let body = json!({"jsonrpc": "2.0", "id": v["id"], "result": result});
        (
            [
                ("content-type", "application/json"),
                ("mcp-session-id", "s"),
            ],
            body.to_string(),
        )
            .into_response()
    };
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let app = axum::Router::new().fallback(answer);
            oxmcp_http::serve_router(listener, app).await
        })
    });
    url
}

/// `mcp args...`, killed after `secs` seconds (`None` then).
fn mcp_within(args: &[&str], secs: u64) -> Option<(bool, String)> {
    let mut child = Command::new(MCP)
        .args(args)
        .env("MCP_LOG", "off")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
            return Some((status.success(), err));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

#[test]
fn endless_list_pages_end_with_an_error() {
    let url = endless_lists();
    for command in ["prompts", "resources"] {
        let outcome = mcp_within(&[command, &url], 20);
        let Some((ok, err)) = outcome else {
            panic!("mcp {command} never ended")
        };
        assert!(!ok);
        assert!(err.contains("repeated the cursor \"again\""), "{err}");
    }
}

/// `oxmcp serve --stdio` with stdin a pipe and stdout not one (a file here; a terminal is the
/// same case): requests that come apart are all answered. The server must not leave its stdin
/// non-blocking under the blocking reader it falls back to (that read failed with EAGAIN and
/// ended the session after the first request).
#[test]
fn stdio_with_stdin_a_pipe_and_stdout_a_file() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("answers");
    let mut child = Command::new(MCP)
        .args(["serve", "--stdio"])
        .env("MCP_LOG", "off")
        .stdin(std::process::Stdio::piped())
        .stdout(std::fs::File::create(&path).unwrap())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    writeln!(stdin, "{init}").unwrap();
    // The server answers and reads again before the next request is written.
    let answered = |id: &str| {
        (0..500).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            std::fs::read_to_string(&path).unwrap().contains(id)
        })
    };
    assert!(answered(r#""id":1,"#), "no answer to initialize");
    std::thread::sleep(std::time::Duration::from_millis(100));
    let rest = [
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
    ];
    // The server may be gone, and the write fail: the assertion says what matters.
    let _ = writeln!(stdin, "{}\n{}", rest[0], rest[1]);
    let pinged = answered(r#""id":2,"#);
    drop(stdin);
    let status = child.wait().unwrap();
    let out = std::fs::read_to_string(&path).unwrap();
    assert!(pinged, "the second request was not answered: {out}");
    assert!(status.success(), "{status}");
}

/// The allocator asks for no transparent huge pages (mimalloc's `no_thp`): none of the
/// server's mappings is advised into them (`hg` in its VmFlags). Where the system's setting
/// is `madvise` (Debian's default) that means none are used; with it set to `always` the
/// kernel may still use them. With them a stdio server held 3.3 MB more anonymous memory
/// after its first call.
#[cfg(all(target_os = "linux", feature = "mimalloc"))]
#[test]
fn no_mapping_is_advised_into_huge_pages() {
    use std::io::{BufRead, Write};
    let mut child = Command::new(MCP)
        .args(["serve", "--stdio"])
        .env("MCP_LOG", "off")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    writeln!(stdin, "{init}").unwrap();
    let mut answer = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut answer)
        .unwrap();
    assert!(answer.contains(r#""id":1,"result""#), "{answer}");
    let smaps = std::fs::read_to_string(format!("/proc/{}/smaps", child.id())).unwrap();
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let flags: Vec<&str> = smaps
        .lines()
        .filter(|l| l.starts_with("VmFlags:"))
        .collect();
    assert!(!flags.is_empty(), "no VmFlags lines in smaps");
    let advised: Vec<&&str> = flags
        .iter()
        .filter(|l| l.split_whitespace().any(|f| f == "hg"))
        .collect();
    assert!(
        advised.is_empty(),
        "mappings advised into huge pages: {advised:?}"
    );
}
