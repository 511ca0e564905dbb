//! JSON-RPC 2.0 through the public API: what decodes, what is refused and with which
//! answerable id, batches, and round trips.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use oxmcp_jsonrpc::{ErrorCode, ErrorObject, Frame, Message, RequestId, echo, encode_batch};
use serde_json::{Value, json};

fn decode(v: &str) -> Result<Message, oxmcp_jsonrpc::DecodeError> {
    Message::decode(v.as_bytes())
}

#[test]
fn requests_notifications_and_responses() {
    let r = decode(r#"{"jsonrpc":"2.0","id":"a","method":"m","params":{"x":1}}"#).unwrap();
    assert!(matches!(&r, Message::Request(q) if q.id == RequestId::from("a") && q.method == "m"));
    let n = decode(r#"{"jsonrpc":"2.0","method":"n","params":[1]}"#).unwrap();
    assert!(matches!(n, Message::Notification(_)));
    let ok = decode(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#).unwrap();
    assert!(
        matches!(ok, Message::Response(r) if r.id == Some(RequestId::Number(7)) && r.outcome.is_ok())
    );
    let err =
        decode(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#).unwrap();
    assert!(matches!(err, Message::Response(r) if r.id.is_none() && r.outcome.is_err()));
}

#[test]
fn invalid_messages_say_what_and_keep_the_id_when_they_can() {
    let cases = [
        (
            r#"{"jsonrpc":"1.0","id":1,"method":"m"}"#,
            ErrorCode::INVALID_REQUEST,
            Some(1),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":5}"#,
            ErrorCode::INVALID_REQUEST,
            Some(1),
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":3}"#,
            ErrorCode::INVALID_REQUEST,
            Some(1),
        ),
        (
            r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#,
            ErrorCode::INVALID_REQUEST,
            None,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"m"}}"#,
            ErrorCode::INVALID_REQUEST,
            None,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1}"#,
            ErrorCode::INVALID_REQUEST,
            None,
        ),
        (r#"[1,2"#, ErrorCode::PARSE_ERROR, None),
        (r#"42"#, ErrorCode::INVALID_REQUEST, None),
    ];
    for (text, code, id) in cases {
        let e = decode(text).unwrap_err();
        assert_eq!(e.error.code, code, "{text}");
        assert_eq!(e.id, id.map(RequestId::Number), "{text}");
    }
    let bad_utf8 = Message::decode(b"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}").unwrap_err();
    assert_eq!(bad_utf8.error.code, ErrorCode::PARSE_ERROR);
}

#[test]
fn batches_keep_order_and_answer_every_bad_entry() {
    let frame = Frame::decode(
        br#"[{"jsonrpc":"2.0","id":1,"method":"a"},{"bad":true},{"jsonrpc":"2.0","method":"n"}]"#,
    );
    let Frame::Batch(items) = frame else {
        panic!("a batch")
    };
    assert_eq!(items.len(), 3);
    assert!(items[0].is_ok() && items[1].is_err() && items[2].is_ok());
    assert!(matches!(Frame::decode(b"[]"), Frame::Single(Err(_))));
    let encoded = encode_batch(&[
        Message::result(
            RequestId::Number(1),
            serde_json::value::to_raw_value(&1).unwrap(),
        ),
        Message::error(
            Some(RequestId::Number(2)),
            ErrorObject::method_not_found("x"),
        ),
    ]);
    let v: Value = serde_json::from_str(&encoded).unwrap();
    assert_eq!(v[0]["result"], 1);
    assert_eq!(v[1]["error"]["code"], -32601);
}

#[test]
fn encoding_round_trips_and_errors_echo_little() {
    let m = Message::request(RequestId::from("x"), "tools/call", &json!({"name":"é"})).unwrap();
    assert_eq!(decode(&m.encode()).unwrap().encode(), m.encode());
    let e = ErrorObject::unsupported_version(&"v".repeat(10_000), &["2025-11-25"]);
    assert_eq!(e.code, ErrorCode::UNSUPPORTED_PROTOCOL_VERSION);
    let requested = e.data.unwrap()["requested"].as_str().unwrap().to_owned();
    assert!(requested.chars().count() <= 65, "a short prefix only");
    assert_eq!(echo("short"), "short");
}
