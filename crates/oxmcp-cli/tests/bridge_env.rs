//! What the command of a bridge (`oxmcp serve -- CMD`) gets from the environment: the safe set
//! by default, plus what `--env NAME` / `--env NAME=VALUE` name, or everything with
//! `--pass-env`; never an operator's secret by accident.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

const MCP: &str = env!("CARGO_BIN_EXE_oxmcp");

/// Starts `oxmcp serve --listen 127.0.0.1:0 FLAGS -- sh -c 'env > FILE; exec oxmcp serve
/// --stdio'` with a secret in its environment; the bridged command's environment, one
/// `NAME=VALUE` a line.
async fn bridged_env(dir: &Path, flags: &[&str]) -> Vec<String> {
    let seen = dir.join(format!("env-{}", flags.join("_").replace(['/', '='], "-")));
    let script = format!("env > '{}'; exec '{MCP}' serve --stdio", seen.display());
    let mut args = vec!["--listen", "127.0.0.1:0"];
    args.extend(flags);
    args.extend(["--", "sh", "-c", &script]);
    let (_bridge, url) = oxmcp_tests::serve_http_env(
        &args,
        &[
            ("MCP_TEST_SECRET", "hunter2"),
            ("MCP_TEST_OTHER", "other-secret"),
            ("LC_MESSAGES", "C"),
        ],
    )
    .await;
    // The bridge starts its command by the time it serves; a call makes sure it ran.
    let (ok, _, err) = oxmcp_tests::mcp(&["tools", &url]).await;
    assert!(ok, "{err}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !seen.exists() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    std::fs::read_to_string(&seen)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn names(env: &[String]) -> Vec<&str> {
    env.iter().filter_map(|l| l.split('=').next()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bridged_command_gets_the_safe_environment_unless_told() {
    let dir = tempfile::tempdir().unwrap();

    let env = bridged_env(dir.path(), &[]).await;
    let vars = names(&env);
    assert!(
        !vars.contains(&"MCP_TEST_SECRET") && !env.iter().any(|l| l.contains("hunter2")),
        "the operator's secret reached the bridged server:\n{env:#?}"
    );
    assert!(!vars.contains(&"MCP_TEST_OTHER"), "{env:#?}");
    for kept in ["PATH", "LC_MESSAGES"] {
        assert!(vars.contains(&kept), "{kept} is passed on: {env:#?}");
    }

    // --env NAME passes one variable on; --env NAME=VALUE sets one.
    let env = bridged_env(
        dir.path(),
        &["--env", "MCP_TEST_SECRET", "--env", "MCP_TEST_GIVEN=given"],
    )
    .await;
    assert!(
        env.contains(&"MCP_TEST_SECRET=hunter2".to_owned()),
        "{env:#?}"
    );
    assert!(env.contains(&"MCP_TEST_GIVEN=given".to_owned()), "{env:#?}");
    assert!(!names(&env).contains(&"MCP_TEST_OTHER"), "{env:#?}");

    // --pass-env: all of it, as a shell would.
    let env = bridged_env(dir.path(), &["--pass-env"]).await;
    assert!(
        env.contains(&"MCP_TEST_SECRET=hunter2".to_owned()),
        "{env:#?}"
    );
    assert!(
        env.contains(&"MCP_TEST_OTHER=other-secret".to_owned()),
        "{env:#?}"
    );
}

#[tokio::test]
async fn env_flags_need_a_bridged_command() {
    for flags in [&["--env", "A"][..], &["--pass-env"][..]] {
        let mut args = vec!["serve", "--listen", "127.0.0.1:0"];
        args.extend(flags);
        let (ok, _, err) = oxmcp_tests::mcp(&args).await;
        assert!(!ok, "{flags:?}");
        assert!(
            err.contains("required arguments were not provided") && err.contains("<CMD>"),
            "{flags:?}: {err}"
        );
        let mut with_config = args.clone();
        with_config.extend(["--config", "mcp.toml"]);
        let (ok, _, err) = oxmcp_tests::mcp(&with_config).await;
        assert!(!ok);
        assert!(err.contains("cannot be used with"), "{flags:?}: {err}");
    }
    let (ok, _, err) = oxmcp_tests::mcp(&["serve", "--env", "=x", "--", "true"]).await;
    assert!(!ok);
    assert!(err.contains("expected NAME or NAME=VALUE"), "{err}");
}
