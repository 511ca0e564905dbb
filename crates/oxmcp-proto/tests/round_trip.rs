//! JSON → protobuf → JSON gives the same JSON: every example of the 2026-07-28 schema (as a
//! message, or as the params and the result of one), and the hard cases by hand.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use oxmcp_proto::{decode, decode_batch, encode, to_proto};
use prost::Message as _;
use serde_json::{Value, json};

fn examples() -> Vec<(PathBuf, Value)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../spec/2026-07-28/schema/examples");
    let mut out = Vec::new();
    let mut dirs = vec![root];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                let text = std::fs::read_to_string(&path).unwrap();
                out.push((path, serde_json::from_str(&text).unwrap()));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn round_trip(json: &Value) -> Value {
    decode(&encode(json).unwrap()).unwrap()
}

#[test]
fn every_spec_example_survives_the_round_trip() {
    let all = examples();
    assert!(
        all.len() >= 100,
        "the vendored examples are there: {}",
        all.len()
    );
    let mut messages = 0;
    for (path, example) in &all {
        let forms = if example.get("jsonrpc").is_some() {
            messages += 1;
            vec![example.clone()]
        } else {
            vec![
                json!({"jsonrpc": "2.0", "id": 1, "result": example}),
                json!({"jsonrpc": "2.0", "method": "x", "params": example}),
                json!({"jsonrpc": "2.0", "id": "e", "error": {"code": -32000, "message": "m", "data": example}}),
            ]
        };
        for form in forms {
            assert_eq!(round_trip(&form), form, "{}", path.display());
        }
    }
    eprintln!("{} examples, {messages} of them whole messages", all.len());
}

#[test]
fn numbers_nulls_nesting_unknown_fields_and_meta() {
    let m = json!({
        "jsonrpc": "2.0", "id": -9_223_372_036_854_775_807_i64, "method": "tools/call",
        "params": {
            "name": "t",
            "arguments": {
                "max_i64": i64::MAX, "min_i64": i64::MIN, "max_u64": u64::MAX,
                "zero": 0, "float": 0.1, "big": 1e300, "tiny": -2.5e-300, "whole_float": 2.0,
                "null": null, "t": true, "f": false, "empty_s": "", "empty_a": [], "empty_o": {},
                "nested": [[[{"a": [1, {"b": null}]}]]],
                "unicode": "héllo \u{1F600} \u{0}"
            },
            "x-unknown": {"kept": [1, 2]},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "progressToken": 7}
        }
    });
    assert_eq!(round_trip(&m), m);
    for id in [json!(0), json!("s"), json!(null), json!("")] {
        let r = json!({"jsonrpc": "2.0", "id": id, "result": {}});
        assert_eq!(round_trip(&r), r);
    }
    let e =
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}});
    assert_eq!(round_trip(&e), e);
    let n = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(round_trip(&n), n);
}

#[test]
fn binary_contents_travel_as_bytes() {
    let blob: Vec<u8> = (0..=255u8).cycle().take(64 * 1024).collect();
    let b64 = {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(&blob)
    };
    let m = json!({"jsonrpc": "2.0", "id": 1, "result": {
        "contents": [{"uri": "file:///x.bin", "mimeType": "application/octet-stream", "blob": b64}],
        "content": [{"type": "image", "mimeType": "image/png", "data": b64}]
    }});
    let bytes = encode(&m).unwrap();
    let json_len = m.to_string().len();
    // Two copies of 64 KiB: as bytes they take 128 KiB and change, as base64 175 KiB.
    assert!(bytes.len() < 2 * blob.len() + 1024, "{} bytes", bytes.len());
    assert!(
        json_len > bytes.len() * 13 / 10,
        "{json_len} vs {}",
        bytes.len()
    );
    assert_eq!(decode(&bytes).unwrap(), m);
    // Text that is not canonical base64, or a `blob` outside resource contents, stays text.
    for odd in [
        json!({"uri": "u", "blob": "not base64!"}),
        json!({"uri": "u", "blob": "YQ"}),
        json!({"blob": "YWJj"}),
        json!({"type": "text", "data": "YWJj"}),
    ] {
        let r = json!({"jsonrpc": "2.0", "id": 1, "result": odd});
        assert_eq!(round_trip(&r), r);
    }
}

#[test]
fn batches_and_refusals() {
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"}
    ]);
    assert_eq!(decode_batch(&encode(&batch).unwrap()).unwrap(), batch);
    for bad in [
        json!("text"),
        json!({"id": 1, "method": "no version"}),
        json!({"jsonrpc": "1.0", "id": 1, "method": "m"}),
        json!({"jsonrpc": "2.0", "id": 1.5, "method": "m"}),
        json!({"jsonrpc": "2.0", "id": [1], "method": "m"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "m", "extra": 1}),
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": "x", "message": "m"}}),
    ] {
        assert!(to_proto(&bad).is_err(), "{bad}");
    }
    assert!(decode(&[0xff, 0xff, 0xff]).is_err());
    // An empty message has neither method nor id.
    assert!(decode(&oxmcp_proto::Message::default().encode_to_vec()).is_err());
}
