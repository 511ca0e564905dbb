//! SIGHUP reloads `oxmcp serve --config FILE`: upstreams added, removed and restarted while a
//! client keeps its session (and hears `list_changed`); a file that cannot be served is
//! refused with a clear line on stderr, and the old config serves on.

use std::path::Path;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::sync::mpsc;

use super::*;

/// `oxmcp serve --config CONFIG` on a free port: the process, its URL, and the lines it
/// writes on stderr from then on.
async fn serve_watched(
    config: &Path,
) -> (
    tokio::process::Child,
    String,
    mpsc::UnboundedReceiver<String>,
) {
    let config = config.to_str().unwrap();
    oxmcp_tests::serve_http_lines(&["--listen", "127.0.0.1:0", "--config", config], &[]).await
}

fn hang_up(gateway: &tokio::process::Child) {
    let pid = i32::try_from(gateway.id().expect("running")).unwrap();
    kill(Pid::from_raw(pid), Signal::SIGHUP).expect("SIGHUP");
}

/// The next line on stderr about a reload.
async fn reload_line(lines: &mut mpsc::UnboundedReceiver<String>) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = tokio::time::timeout(left, lines.recv())
            .await
            .expect("a line about the reload")
            .expect("the gateway runs");
        if line.starts_with("oxmcp: reload") {
            return line;
        }
    }
}

/// A stdio upstream of the demo server named `name`, with only `tools`.
fn upstream(name: &str, tools: &str) -> String {
    let bin = oxmcp();
    format!(
        "[[upstream]]\nname = \"{name}\"\ncommand = [\"{bin}\", \"serve\", \"--stdio\"]\nallow_tools = [{tools}]\n\n"
    )
}

async fn sum(c: &Client, tool: &str) -> Option<f64> {
    let r = c
        .call_tool(tool, args(json!({"a": 2, "b": 3})))
        .await
        .unwrap();
    serde_json::to_value(&r).unwrap()["structuredContent"]["sum"].as_f64()
}

async fn echo(c: &Client, tool: &str) {
    let r = c
        .call_tool(tool, args(json!({"message": "still here"})))
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("still here"), "{tool}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_adds_an_upstream_and_the_session_stays() {
    let one = upstream("one", "\"echo\"");
    let (dir, config) = config_file("mcp-reload-add", &one);
    let (gateway, url, mut lines) = serve_watched(&config).await;
    let events = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = events.clone();
    let handlers = ClientHandlers::new().on_event(move |e| sink.lock().unwrap().push(e));
    let (c, handle) = connect(&url, handlers, EraChoice::Legacy).await;
    let session = handle.session_id().expect("a legacy session");
    assert_eq!(names(&c).await, ["one__echo"]);
    events.lock().unwrap().clear();

    std::fs::write(&config, format!("{one}{}", upstream("two", "\"add\""))).unwrap();
    hang_up(&gateway);
    let line = reload_line(&mut lines).await;
    assert!(
        line.contains("reloaded") && line.ends_with(": added two"),
        "{line}"
    );
    // The same session lists and calls the new upstream's tool at once, and the old one's.
    assert_eq!(names(&c).await, ["one__echo", "two__add"]);
    assert_eq!(sum(&c, "two__add").await, Some(5.0));
    echo(&c, "one__echo").await;
    assert_eq!(handle.session_id(), Some(session), "the session stayed");
    // Its GET stream heard that the tools changed.
    seen(&events, "tools/list_changed", |e| {
        matches!(e, ServerEvent::ToolsChanged)
    })
    .await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_with_a_bad_file_keeps_the_old_config() {
    let one = upstream("one", "\"echo\"");
    let (dir, config) = config_file("mcp-reload-bad", &one);
    let (gateway, url, mut lines) = serve_watched(&config).await;
    let c = client(&url, EraChoice::Legacy).await;
    assert_eq!(names(&c).await, ["one__echo"]);
    let missing = dir.join("no-such-server");
    let pid_file = dir.join("good.pid");
    let bin = oxmcp();
    // One that does not start, beside one that does: refused as a whole, and the good one
    // is stopped again.
    let bad_upstream = format!(
        "[[upstream]]\nname = \"bad\"\ncommand = [\"{}\"]\n\n\
         [[upstream]]\nname = \"good\"\ncommand = [\"sh\", \"-c\", \"echo $$ > '{}'; exec '{bin}' serve --stdio\"]\n",
        missing.display(),
        pid_file.display()
    );
    for (text, why) in [
        (
            "[[upstream]\nname = ".to_owned(),
            "TOML parse error at line 1",
        ),
        (format!("{one}surprise = 1\n"), "unknown field `surprise`"),
        (
            format!("{one}[[upstream]]\nname = \"one\"\ncommand = [\"x\"]\n"),
            "used twice",
        ),
        (
            format!("{one}{bad_upstream}"),
            "upstream \"bad\" did not start",
        ),
    ] {
        std::fs::write(&config, &text).unwrap();
        hang_up(&gateway);
        let line = reload_line(&mut lines).await;
        assert!(
            line.contains("refused, still serving the previous config") && line.contains(why),
            "{text}: {line}"
        );
        assert_eq!(names(&c).await, ["one__echo"], "{text}");
        echo(&c, "one__echo").await;
    }
    let pid = std::fs::read_to_string(&pid_file).expect("the good upstream was started");
    let pid = Pid::from_raw(pid.trim().parse().unwrap());
    assert_eq!(
        kill(pid, None),
        Err(nix::errno::Errno::ESRCH),
        "what the refused reload started is stopped"
    );
    // The refusals left the watcher working: a good file is served; its new [limits] are
    // said to wait for a restart.
    let good = upstream("one", "\"echo\", \"add\"");
    std::fs::write(&config, format!("{good}[limits]\nmax_sessions = 5\n")).unwrap();
    hang_up(&gateway);
    let line = reload_line(&mut lines).await;
    assert!(
        line.ends_with(": restarted one; not applied until a restart: limits"),
        "{line}"
    );
    assert_eq!(names(&c).await, ["one__add", "one__echo"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_removes_and_restarts_upstreams() {
    let (dir, config) = config_file("mcp-reload-remove", "");
    let pid_file = dir.join("two.pid");
    let _ = std::fs::remove_file(&pid_file);
    let bin = oxmcp();
    let two = format!(
        "[[upstream]]\nname = \"two\"\ncommand = [\"sh\", \"-c\", \"echo $$ > '{}'; exec '{bin}' serve --stdio\"]\nallow_tools = [\"add\"]\n",
        pid_file.display()
    );
    let one = upstream("one", "\"echo\"");
    let three = upstream("three", "\"echo\"");
    std::fs::write(&config, format!("{one}{two}{three}")).unwrap();
    let (gateway, url, mut lines) = serve_watched(&config).await;
    let c = client(&url, EraChoice::Legacy).await;
    assert_eq!(names(&c).await, ["one__echo", "three__echo", "two__add"]);
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let pid = Pid::from_raw(pid.trim().parse().unwrap());
    assert!(kill(pid, None).is_ok(), "two's process runs");

    // Two goes, one gets another tool (restarted), three stays as it is.
    let wider = upstream("one", "\"echo\", \"add\"");
    std::fs::write(&config, format!("{wider}{three}")).unwrap();
    hang_up(&gateway);
    let line = reload_line(&mut lines).await;
    assert!(line.ends_with(": removed two; restarted one"), "{line}");
    assert_eq!(names(&c).await, ["one__add", "one__echo", "three__echo"]);
    assert_eq!(
        kill(pid, None),
        Err(nix::errno::Errno::ESRCH),
        "two's process exited (and was reaped) before the reload's line"
    );
    assert_eq!(sum(&c, "one__add").await, Some(5.0));
    echo(&c, "three__echo").await;
    let e = c
        .call_tool("two__add", args(json!({"a": 1, "b": 1})))
        .await
        .expect_err("two is gone");
    assert!(e.to_string().contains("two__add"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
