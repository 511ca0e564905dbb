//! What an upstream command gets from the gateway's environment: a small safe set and the
//! variables its config names, never the rest.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_commands_get_a_safe_environment() {
    let (dir, config) = config_file("mcp-gateway-env", "");
    let seen = dir.join("upstream.env");
    let bin = oxmcp();
    std::fs::write(
        &config,
        format!(
            r#"[[upstream]]
name = "local"
command = ["sh", "-c", "env > '{}'; exec '{bin}' serve --stdio"]
allow_tools = ["echo"]
env = {{ MCP_TEST_GIVEN = "from the config", TZ = "Europe/Paris" }}
"#,
            seen.display()
        ),
    )
    .unwrap();
    let (_gateway, url) = oxmcp_tests::serve_http_env(
        &[
            "--config",
            config.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ],
        &[
            ("MCP_TEST_SECRET", "hunter2"),
            ("LC_MESSAGES", "C"),
            ("TZ", "UTC"),
        ],
    )
    .await;
    let c = client(&url, EraChoice::Legacy).await;
    until(&c, "the upstream's tool", |n| n == ["local__echo"]).await;
    let env = std::fs::read_to_string(&seen).unwrap();
    let vars: Vec<&str> = env.lines().filter_map(|l| l.split('=').next()).collect();
    assert!(
        !env.contains("hunter2") && !vars.contains(&"MCP_TEST_SECRET"),
        "the gateway's secret reached the upstream:\n{env}"
    );
    for kept in ["PATH", "LC_MESSAGES"] {
        assert!(vars.contains(&kept), "{kept} is passed on:\n{env}");
    }
    // What the config names is set, and wins over the gateway's own value.
    let lines: Vec<&str> = env.lines().collect();
    assert!(lines.contains(&"MCP_TEST_GIVEN=from the config"), "{env}");
    assert!(lines.contains(&"TZ=Europe/Paris"), "{env}");
    let _ = std::fs::remove_dir_all(&dir);
}
