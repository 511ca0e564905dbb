//! The binary under test is found (`OXMCP_BIN`, or built by cargo) and runs: `oxmcp
//! --version` names it. Also the test target that the helpers' own build of `oxmcp` names (see
//! `oxmcp_tests::oxmcp`), so it is kept small.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[test]
fn the_binary_under_test_runs() {
    let out = std::process::Command::new(oxmcp_tests::oxmcp())
        .arg("--version")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let version = String::from_utf8(out.stdout).unwrap();
    assert!(version.starts_with("oxmcp "), "{version}");
}
