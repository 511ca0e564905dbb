//! The Python of the interop tests: `.venv-interop` at the repository root (scripts/test.sh
//! makes it), or where MCP_INTEROP_PYTHON points.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

/// The Python of the interop tests (a panic saying how to make the venv if there is none).
pub fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("MCP_INTEROP_PYTHON") {
        return p.into();
    }
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.venv-interop/bin/python");
    assert!(
        venv.exists(),
        "no Python for the interop tests at {}: run scripts/test.sh, or `python3 -m venv \
         .venv-interop && .venv-interop/bin/pip install mcp==1.30.0 websockets uvicorn grpcio-tools`",
        venv.display()
    );
    venv
}

/// The interop script `name` (in `tests/interop/`).
pub fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("interop")
        .join(name)
}

/// Runs a Python script with these arguments; the JSON line it printed last.
pub async fn run_script(name: &str, args: &[&str]) -> Value {
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::process::Command::new(python())
            .arg(script(name))
            .args(args)
            .output(),
    )
    .await
    .expect("the script finishes")
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{name} failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim().lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {stdout}"))
}
