//! Where the `oxmcp` binary under test is: named by `OXMCP_BIN`, given by cargo to the
//! `oxmcp-cli` crate's own tests, or built once per test process.

use std::process::Stdio;
use std::sync::OnceLock;

/// The path of the `oxmcp` binary (crate `oxmcp-cli`) the tests drive.
///
/// Cargo gives a test only its own package's binaries (`CARGO_BIN_EXE_*`), so the first call
/// of a test process finds it:
///
/// 1. `OXMCP_BIN=PATH` names one to use;
/// 2. in the `oxmcp-cli` crate's own tests, the one cargo built for them
///    (`CARGO_BIN_EXE_oxmcp`, which cargo also sets when it runs the test);
/// 3. otherwise `cargo build --workspace --bin oxmcp --test binary` in this test's profile and
///    target directory (the same `CARGO_TARGET_DIR` or config), which leaves it at
///    `target/PROFILE/oxmcp`; its path comes from cargo's JSON messages. Naming a test target
///    (this crate's `tests/binary.rs`) makes cargo resolve features as `cargo test --workspace`
///    does, so after such a run it is up to date and nothing is built twice.
pub fn oxmcp() -> &'static str {
    static PATH: OnceLock<String> = OnceLock::new();
    PATH.get_or_init(|| {
        ["OXMCP_BIN", "CARGO_BIN_EXE_oxmcp"]
            .into_iter()
            .find_map(std::env::var_os)
            .map(|path| path.into_string().expect("the path of oxmcp is UTF-8"))
            .unwrap_or_else(build)
    })
}

/// Builds `oxmcp` in the profile of the running test: the path of the executable.
///
/// `--test binary` asks for dev-dependencies, so cargo unifies the features of every member
/// with theirs, as `cargo test --workspace` and `cargo build --workspace --all-targets` do:
/// the `oxmcp` unit is theirs. (`cargo build -p oxmcp-cli` would resolve other features, tokio's
/// `test-util` among them, and build it all again.) After `cargo test -p oxmcp-tests` alone
/// it builds the binary once, with the workspace's features.
fn build() -> String {
    // A test runs as TARGET/PROFILE/deps/NAME-HASH.
    let exe = std::env::current_exe().unwrap();
    let profile = exe
        .parent()
        .and_then(|deps| deps.parent())
        .and_then(|dir| dir.file_name())
        .and_then(|name| name.to_str())
        .map_or("dev", |name| if name == "debug" { "dev" } else { name })
        .to_owned();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["build", "--workspace", "--bin", "oxmcp", "--test", "binary"])
        .args(["--profile", &profile])
        .args(["--message-format", "json-render-diagnostics"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stderr(Stdio::inherit())
        .output()
        .expect("cargo runs");
    assert!(out.status.success(), "cargo build of oxmcp failed");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "oxmcp")
        .filter(|m| m["target"]["kind"][0] == "bin")
        .find_map(|m| m["executable"].as_str().map(str::to_owned))
        .expect("cargo names the oxmcp executable")
}
