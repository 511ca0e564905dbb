//! TLS material for tests: a private CA (openssl), and a server certificate from it.

use std::path::PathBuf;

/// A private CA and a certificate for 127.0.0.1 from it: (dir, cert, key, ca).
pub fn certificates() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let openssl = |args: &[&str]| {
        let out = std::process::Command::new("openssl")
            .args(args)
            .current_dir(d)
            .output()
            .expect("openssl runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let ca_subject = "/CN=mcp-test-ca";
    openssl(&[
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
        "-days", "2", "-subj", ca_subject,
    ]);
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "srv.key",
        "-out",
        "srv.csr",
        "-subj",
        "/CN=localhost",
    ]);
    std::fs::write(d.join("ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost").unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "srv.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "srv.crt",
        "-days",
        "2",
        "-extfile",
        "ext",
    ]);
    let (cert, key, ca) = (d.join("srv.crt"), d.join("srv.key"), d.join("ca.crt"));
    (dir, cert, key, ca)
}
