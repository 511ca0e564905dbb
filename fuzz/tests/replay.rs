//! Every seed (`corpus/<target>/`) and every saved crash (`regressions/<target>/`) through the
//! fuzz targets' checks, on the stable toolchain, as part of the normal test run.

use std::path::Path;

fn replay(target: &str, check: fn(&[u8])) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut n = 0;
    for dir in ["corpus", "regressions"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir).join(target)) else {
            continue;
        };
        for e in entries.flatten() {
            let data = std::fs::read(e.path()).expect("readable");
            check(&data);
            n += 1;
        }
    }
    assert!(n > 0, "no inputs for {target}");
}

#[test]
fn jsonrpc_decode() {
    replay("jsonrpc_decode", mcp_fuzz::jsonrpc_decode);
}

#[test]
fn stdio_framing() {
    replay("stdio_framing", mcp_fuzz::stdio_framing);
}

#[test]
fn sse_parser() {
    replay("sse_parser", mcp_fuzz::sse_parser);
}

#[test]
fn uri_template() {
    replay("uri_template", mcp_fuzz::uri_template);
}

#[test]
fn http_service() {
    replay("http_service", mcp_fuzz::http_service);
}
