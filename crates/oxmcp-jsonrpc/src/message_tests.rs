//! Tests of [`super`]: decoding, encoding, and what each error answers.

use super::*;
use serde_json::json;

fn code(r: Result<Message, DecodeError>) -> i32 {
    r.err().map(|e| e.error.code.0).unwrap_or(0)
}

#[test]
fn over_long_string_ids_are_refused_unanswered() {
    let long = "i".repeat(MAX_ID_LEN + 1);
    let body = format!(r#"{{"jsonrpc":"2.0","id":"{long}","method":"ping"}}"#);
    let e = Message::decode(body.as_bytes()).unwrap_err();
    assert_eq!(e.id, None, "an over-long id is not echoed");
    assert_eq!(e.error.code, ErrorCode::INVALID_REQUEST);
    let ok = "i".repeat(MAX_ID_LEN);
    let body = format!(r#"{{"jsonrpc":"2.0","id":"{ok}","method":"ping"}}"#);
    assert!(Message::decode(body.as_bytes()).is_ok());
}

#[test]
fn decodes_the_three_kinds() {
    let m = Message::decode(br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#).unwrap();
    assert!(matches!(
        m,
        Message::Request(Request {
            id: RequestId::Number(7),
            ..
        })
    ));
    let m = Message::decode(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
    assert!(matches!(m, Message::Notification(_)));
    let m = Message::decode(br#"{"jsonrpc":"2.0","id":"a","result":{}}"#).unwrap();
    assert!(matches!(
        m,
        Message::Response(Response { outcome: Ok(_), .. })
    ));
    let m = Message::decode(br#"{"jsonrpc":"2.0","id":"a","result":null}"#).unwrap();
    assert!(matches!(
        m,
        Message::Response(Response { outcome: Ok(_), .. })
    ));
}

#[test]
fn strictness() {
    assert_eq!(code(Message::decode(b"{not json")), -32700);
    assert_eq!(code(Message::decode(b"\xff\xfe")), -32700);
    assert_eq!(
        code(Message::decode(br#"{"jsonrpc":"1.0","id":1,"method":"x"}"#)),
        -32600
    );
    assert_eq!(code(Message::decode(br#"{"id":1,"method":"x"}"#)), -32600);
    assert_eq!(
        code(Message::decode(
            br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#
        )),
        -32600
    );
    assert_eq!(
        code(Message::decode(
            br#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#
        )),
        -32600
    );
    assert_eq!(
        code(Message::decode(br#"{"jsonrpc":"2.0","id":1,"method":5}"#)),
        -32600
    );
    assert_eq!(
        code(Message::decode(
            br#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#
        )),
        -32600
    );
    assert_eq!(
        code(Message::decode(
            br#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}"#
        )),
        -32600
    );
    assert_eq!(
        code(Message::decode(br#"{"jsonrpc":"2.0","id":1}"#)),
        -32600
    );
    assert_eq!(code(Message::decode(b"42")), -32600);
    let deep = "[".repeat(10_000);
    assert_eq!(code(Message::decode(deep.as_bytes())), -32700);
    let deep_obj = format!("{{\"a\":{}", "[".repeat(10_000));
    assert_eq!(code(Message::decode(deep_obj.as_bytes())), -32700);
}

#[test]
fn lone_surrogates_in_raw_params_are_parse_errors() {
    let lone = br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"s":"\ud800"}}"#;
    assert_eq!(code(Message::decode(lone)), -32700);
    let pair = br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"s":"\ud83d\ude00"}}"#;
    assert!(Message::decode(pair).is_ok());
    let escaped = br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"s":"\\ud800"}}"#;
    assert!(
        Message::decode(escaped).is_ok(),
        "an escaped backslash, not an escape"
    );
}

#[test]
fn recovers_id_for_answerable_errors() {
    let e = Message::decode(br#"{"jsonrpc":"2.0","id":9,"method":"x","params":"s"}"#).unwrap_err();
    assert_eq!(e.id, Some(RequestId::Number(9)));
    assert!(e.answerable);
    let e = Message::decode(
        br#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}"#,
    )
    .unwrap_err();
    assert!(e.answerable);
    assert_eq!(e.id, None, "a broken response's id is ours: never echoed");
}

#[test]
fn encode_round_trip() {
    let m = Message::request(RequestId::Number(1), "tools/call", &json!({"name":"echo"})).unwrap();
    assert_eq!(
        m.encode(),
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#
    );
    let e = Message::error(None, ErrorObject::parse_error("x"));
    assert_eq!(
        serde_json::from_str::<Value>(&e.encode()).unwrap(),
        json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error","data":"x"}})
    );
}

/// A success response is written without serde (one buffer, sized once): the text is the
/// one serde writes, whatever the id and the result.
#[test]
fn success_responses_are_written_as_serde_writes_them() {
    let ids = [
        Some(RequestId::Number(0)),
        Some(RequestId::Number(-7)),
        Some(RequestId::Number(i64::MAX)),
        Some(RequestId::Number(i64::MIN)),
        Some(RequestId::String(
            "0f8fad5b-d9cb-469f-a165-70867728950e".to_owned(),
        )),
        Some(RequestId::String(String::new())),
        Some(RequestId::String("a\"b\\c\n\u{1}é😀\u{2028}".to_owned())),
        None,
    ];
    let results = [
        "{}",
        "null",
        r#"{"content":[{"type":"text","text":"x\"y"}]}"#,
        "[1,2,3]",
    ];
    for id in &ids {
        for result in results {
            let m = Message::Response(Response {
                id: id.clone(),
                outcome: Ok(RawValue::from_string(result.to_owned()).unwrap()),
            });
            let line = m.encode();
            assert_eq!(line, serde_json::to_string(&m).unwrap());
            assert_eq!(line.capacity(), line.len(), "sized once: {line}");
            let back = Message::decode_str(&line);
            assert!(id.is_none() || back.is_ok(), "{back:?}");
        }
    }
}

/// One check of a frame's UTF-8, then parsed as text: what is refused is refused the same
/// way, whether it comes as bytes or inside a batch.
#[test]
fn invalid_utf8_anywhere_is_a_parse_error() {
    let mut bytes =
        br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":"??"},"extra":"??"}"#.to_vec();
    let at = bytes.iter().position(|&b| b == b'?').unwrap();
    bytes[at] = 0xff;
    assert_eq!(code(Message::decode(&bytes)), -32700);
    let mut tail = br#"{"jsonrpc":"2.0","id":1,"method":"m","extra":"??"}"#.to_vec();
    let at = tail.iter().rposition(|&b| b == b'?').unwrap();
    tail[at] = 0xc3;
    assert_eq!(code(Message::decode(&tail)), -32700);
    let batch = [b"[".as_slice(), &tail, b"]"].concat();
    match crate::Frame::decode_limited(&batch, 10) {
        crate::Frame::Single(r) => assert_eq!(code(r), -32700),
        crate::Frame::Batch(_) => panic!("a batch with invalid UTF-8 was read"),
    }
}
