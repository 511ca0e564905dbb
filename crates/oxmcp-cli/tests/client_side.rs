//! The CLI as a complete client, over real transports: `oxmcp info`, `oxmcp complete`, `mcp
//! listen`, and what it offers the server (`--root`, `--sampling-cmd`, elicitation declined
//! without a terminal), in both protocol eras.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::process::Command;

use oxmcp_tests::mcp;

const MCP: &str = env!("CARGO_BIN_EXE_oxmcp");
const ERAS: [&str; 2] = ["legacy", "modern"];

/// `mcp ARGS -- oxmcp serve --stdio` (the demo server as a child).
async fn mcp_stdio(args: &[&str]) -> (bool, String, String) {
    let mut all = args.to_vec();
    all.extend(["--", MCP, "serve", "--stdio"]);
    mcp(&all).await
}

#[tokio::test]
async fn info_shows_the_server_in_both_eras() {
    let (_server, url) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    for era in ERAS {
        let (ok, out, err) = mcp(&["info", "--json", "--era", era, &url]).await;
        assert!(ok, "{err}");
        let info: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(info["serverInfo"]["name"], "mcp-demo");
        assert_eq!(info["era"], era);
        assert!(info["capabilities"]["tools"].is_object(), "{info}");
        assert!(
            info["instructions"]
                .as_str()
                .unwrap()
                .contains("demo server")
        );
        match era {
            "legacy" => {
                assert_eq!(info["protocolVersion"], "2025-11-25");
                assert!(info.get("supportedVersions").is_none(), "{info}");
            }
            _ => {
                assert_eq!(info["protocolVersion"], "2026-07-28");
                let versions = info["supportedVersions"].as_array().unwrap();
                assert!(versions.contains(&Value::from("2026-07-28")), "{info}");
                assert!(versions.contains(&Value::from("2024-11-05")), "{info}");
            }
        }
    }
    let (ok, out, _) = mcp_stdio(&["info", "--era", "legacy"]).await;
    assert!(ok);
    assert!(out.starts_with("server:       mcp-demo "), "{out}");
    assert!(out.contains("legacy era"), "{out}");
    assert!(out.contains("tools (listChanged)"), "{out}");
    assert!(out.contains("instructions:\n  A demo server"), "{out}");
}

#[tokio::test]
async fn complete_prompt_arguments_and_template_variables() {
    let (_server, url) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    for era in ERAS {
        let (ok, out, err) = mcp(&[
            "complete", "--era", era, &url, "--prompt", "greet", "name", "A",
        ])
        .await;
        assert!(ok, "{err}");
        assert_eq!(out, "Ada\nAlan\n");
        let template = "demo://greeting/{name}";
        let (ok, out, err) = mcp_stdio(&[
            "complete",
            "--era",
            era,
            "--json",
            "--resource",
            template,
            "name",
            "g",
        ])
        .await;
        assert!(ok, "{err}");
        let r: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(r["completion"]["values"], serde_json::json!(["Grace"]));
        let (ok, out, _) = mcp(&[
            "complete",
            "--era",
            era,
            &url,
            "--prompt",
            "summarize",
            "style",
            "b",
            "--context",
            "text=hello",
        ])
        .await;
        assert!(ok);
        assert_eq!(out, "brief\nbullet points\n");
    }
    // Exactly one of --prompt and --resource; a context that is not key=value.
    let (ok, _, _) = mcp(&["complete", &url, "name", "A"]).await;
    assert!(!ok);
    let (ok, _, err) = mcp(&[
        "complete",
        &url,
        "--prompt",
        "greet",
        "name",
        "A",
        "--context",
        "x",
    ])
    .await;
    assert!(!ok);
    assert!(err.contains("not key=value"), "{err}");
}

#[tokio::test]
async fn listen_in_the_legacy_era_prints_updates_and_log_messages() {
    let (_server, url) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    // Legacy: resources/subscribe, logging/setLevel and the session's GET stream.
    let (child, mut lines) = oxmcp_tests::listen::listening(&[
        &url,
        "--era",
        "legacy",
        "--resource",
        "demo://readme",
        "--log-level",
        "info",
    ])
    .await;
    let (ok, _, err) = mcp(&["call", &url, "touch", "-a", "uri=demo://readme"]).await;
    assert!(ok, "{err}");
    oxmcp_tests::listen::until_line(&mut lines, "updated demo://readme").await;
    // A server-wide log message (the `log` tool's broadcast), at info: shown.
    let args = [
        "call",
        &url,
        "log",
        "-a",
        "message=hello",
        "-a",
        "broadcast=true",
    ];
    let (ok, _, err) = mcp(&args).await;
    assert!(ok, "{err}");
    oxmcp_tests::listen::until_line(&mut lines, "log info demo: hello").await;
    // Below the level asked for: not shown (the next line is the one after it).
    let (ok, _, _) = mcp(&[
        "call",
        &url,
        "log",
        "-a",
        "message=quiet",
        "-a",
        "level=debug",
        "-a",
        "broadcast=true",
    ])
    .await;
    assert!(ok);
    let (ok, _, _) = mcp(&[
        "call",
        &url,
        "log",
        "-a",
        "message=loud",
        "-a",
        "level=error",
        "-a",
        "broadcast=true",
    ])
    .await;
    assert!(ok);
    let skipped = oxmcp_tests::listen::until_line(&mut lines, "log error demo: loud").await;
    assert!(skipped.is_empty(), "{skipped:?}");
    oxmcp_tests::listen::interrupt(child).await;
}

#[tokio::test]
async fn listen_in_2026_07_28_prints_what_it_listens_to() {
    let (_server, url) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    // subscriptions/listen, printed as JSON lines.
    let (child, mut lines) = oxmcp_tests::listen::listening(&[
        &url,
        "--era",
        "modern",
        "--json",
        "--resource",
        "demo://hello.md",
    ])
    .await;
    let (ok, _, err) = mcp(&["call", &url, "touch", "-a", "uri=demo://readme"]).await;
    assert!(ok, "{err}");
    let (ok, _, err) = mcp(&["call", &url, "touch", "-a", "uri=demo://hello.md"]).await;
    assert!(ok, "{err}");
    let want = r#"{"method":"notifications/resources/updated","params":{"uri":"demo://hello.md"}}"#;
    let before = oxmcp_tests::listen::until_line(&mut lines, want).await;
    assert!(
        before.is_empty(),
        "only the resource listened to: {before:?}"
    );
    oxmcp_tests::listen::interrupt(child).await;
}

#[tokio::test]
async fn roots_are_answered_with_canonical_file_uris() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir(&project).unwrap();
    let given = project.join("..").join("project");
    let want = url::Url::from_directory_path(std::fs::canonicalize(&project).unwrap())
        .unwrap()
        .to_string();
    let want = format!("{} project", want.trim_end_matches('/'));
    for era in ERAS {
        let root = given.to_str().unwrap();
        let (ok, out, err) = mcp_stdio(&["call", "roots", "--era", era, "--root", root]).await;
        assert!(ok, "{era}: {err}");
        assert_eq!(out.trim(), want, "{era}");
        // Without --root the capability is not declared: the server cannot ask.
        let (ok, out, err) = mcp_stdio(&["call", "roots", "--era", era]).await;
        assert!(!ok);
        assert!(
            format!("{out}{err}").contains("does not support roots")
                || err.contains(r#"{"requiredCapabilities":{"roots":{}}}"#),
            "{era}: {out} {err}"
        );
    }
    let (ok, _, err) = mcp_stdio(&["call", "roots", "--root", "/no/such/dir"]).await;
    assert!(!ok);
    assert!(err.contains("--root /no/such/dir"), "{err}");
}

#[tokio::test]
async fn sampling_runs_the_command_and_checks_its_answer() {
    let dir = tempfile::tempdir().unwrap();
    let asked = dir.path().join("asked.json");
    let script = format!(
        "cat > '{}'; echo '{{\"role\":\"assistant\",\"content\":{{\"type\":\"text\",\"text\":\"from sh\"}},\"model\":\"sh\"}}'",
        asked.display()
    );
    let (_server, url) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    for era in ERAS {
        let args = [
            "call",
            &url,
            "sample",
            "-a",
            "prompt=hi there",
            "--era",
            era,
        ];
        let mut with = args.to_vec();
        with.extend(["--sampling-cmd", &script]);
        let (ok, out, err) = mcp(&with).await;
        assert!(ok, "{era}: {out} {err}");
        assert_eq!(out, "from sh\n");
        // The command got the request's params on its stdin.
        let params: Value =
            serde_json::from_str(&std::fs::read_to_string(&asked).unwrap()).unwrap();
        assert_eq!(params["messages"][0]["content"]["text"], "hi there");
        assert_eq!(params["maxTokens"], 200);
        std::fs::remove_file(&asked).unwrap();
        // Not offered without --sampling-cmd.
        // (The demo's tool says so in its result under 2025-11-25, the server in a JSON-RPC
        // error under 2026-07-28.)
        let (ok, out, err) = mcp(&args).await;
        assert!(!ok);
        assert!(
            format!("{out}{err}").contains("does not support sampling")
                || err.contains(r#"{"requiredCapabilities":{"sampling":{}}}"#),
            "{era}: {out} {err}"
        );
        // A failing command and a bad answer are errors the server hears of.
        for (cmd, says) in [
            ("cat >/dev/null; exit 3", "exited with exit status: 3"),
            (
                "cat >/dev/null; echo nope",
                "did not answer with a CreateMessageResult",
            ),
        ] {
            let mut bad = args.to_vec();
            bad.extend(["--sampling-cmd", cmd]);
            let (ok, out, err) = mcp(&bad).await;
            assert!(!ok);
            assert!(format!("{out}{err}").contains(says), "{era}: {out} {err}");
        }
    }
}

#[tokio::test]
async fn elicitation_is_declined_without_a_terminal() {
    let (_server, url) = oxmcp_tests::serve_http(&["--listen", "127.0.0.1:0"]).await;
    for era in ERAS {
        let (ok, out, err) = mcp(&["call", &url, "ask", "--era", era]).await;
        assert!(ok, "{era}: {err}");
        assert_eq!(out, "no name given (decline)\n", "{era}");
        assert!(
            err.contains("asked for input (What is your name?); declined: stdin is not a terminal"),
            "{era}: {err}"
        );
    }
}

/// On a terminal (a pseudo-terminal from util-linux `script`) the user is asked, and the
/// answer typed in is what the server gets, in both eras. Skipped where `script` is missing.
#[tokio::test]
async fn elicitation_asks_on_a_terminal() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: no `script` command for a pseudo-terminal");
        return;
    }
    for era in ERAS {
        let command = format!("{MCP} call ask --era {era} -- {MCP} serve --stdio");
        let mut child = Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .env("MCP_LOG", "off")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        // Typed ahead: the terminal keeps it until the prompts read it.
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"y\nAda\n").await.unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut seen = String::new();
        let mut buf = [0u8; 1024];
        while !seen.contains("Hello, Ada!") {
            let n = tokio::time::timeout(Duration::from_secs(30), stdout.read(&mut buf))
                .await
                .unwrap_or_else(|_| panic!("{era}: no greeting; saw {seen:?}"))
                .unwrap();
            assert!(n > 0, "{era}: ended without a greeting: {seen:?}");
            seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
        assert!(
            seen.contains("The server asks: What is your name?"),
            "{seen:?}"
        );
        assert!(seen.contains("name [string]: "), "{seen:?}");
        drop(stdin);
        let _ = child.wait().await;
    }
}
