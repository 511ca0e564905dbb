//! The client's side of the protobuf encoding over Streamable HTTP: the messages of an
//! SSE stream that come as `event: mcp+protobuf` ([`oxmcp_proto::SSE_EVENT`]) back to JSON.

/// The JSON text of an [`oxmcp_proto::SSE_EVENT`] event's data (base64 of a protobuf message or batch).
///
/// # Errors
/// A description, when the data is not base64 of a protobuf message.
pub(crate) fn sse_data_to_json(data: &str) -> Result<String, String> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| format!("the event is not base64: {e}"))?;
    match oxmcp_proto::decode_json_text(&bytes, &oxmcp_proto::DecodeLimits::default()) {
        Ok(json) => Ok(json),
        Err(_) => oxmcp_proto::decode_batch(&bytes)
            .map(|json| json.to_string())
            .map_err(|e| e.to_string()),
    }
}

/// A successful answer's message, for the engine.
pub(crate) enum Answer {
    /// Its JSON text (the engine decodes it).
    Text(String),
    /// A plain result in protobuf, decoded here: its result written as raw JSON
    /// ([`oxmcp_proto::plain_result`]), so that the engine does not scan its text for the
    /// end of the result before the caller reads it (1.4 MB of base64 for a 1 MiB blob).
    Decoded(oxmcp_jsonrpc::Message),
}

/// The message of an answer body in protobuf: a plain result to one of our requests
/// decoded, anything else as its JSON text.
///
/// # Errors
/// When the bytes are not a protobuf message (within the default limits) JSON-RPC can have.
pub(crate) fn protobuf_answer(bytes: &[u8]) -> Result<Answer, oxmcp_proto::ProtoError> {
    let limits = oxmcp_proto::DecodeLimits::default();
    let m = oxmcp_proto::decode_message(bytes, &limits)?;
    if let Some(id) = plain_id(&m)
        && let Some(result) = oxmcp_proto::plain_result(&m)
    {
        return Ok(Answer::Decoded(oxmcp_jsonrpc::Message::Response(
            oxmcp_jsonrpc::Response {
                id: Some(id),
                outcome: Ok(result?),
            },
        )));
    }
    oxmcp_proto::to_json_text(&m).map(Answer::Text)
}

/// The id of a message as the engine would read it from its JSON text, when that is a
/// number or a string within [`oxmcp_jsonrpc::MAX_ID_LEN`] (else the text goes to the
/// engine, which says what is wrong).
fn plain_id(m: &oxmcp_proto::Message) -> Option<oxmcp_jsonrpc::RequestId> {
    use oxmcp_proto::id::Kind;
    match m.id.as_ref()?.kind.as_ref()? {
        Kind::Number(n) => Some(oxmcp_jsonrpc::RequestId::Number(*n)),
        Kind::Text(s) if s.len() <= oxmcp_jsonrpc::MAX_ID_LEN => {
            Some(oxmcp_jsonrpc::RequestId::String(s.clone()))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn wire(v: &serde_json::Value) -> Vec<u8> {
        oxmcp_proto::encode(v).unwrap()
    }

    #[test]
    fn plain_results_come_decoded_and_the_rest_as_text() {
        let plain = json!({"jsonrpc":"2.0","id":7,"result":{"a":[1,"b"],"c":null}});
        let Answer::Decoded(oxmcp_jsonrpc::Message::Response(r)) =
            protobuf_answer(&wire(&plain)).unwrap()
        else {
            panic!("a plain result comes decoded");
        };
        assert_eq!(r.id, Some(oxmcp_jsonrpc::RequestId::Number(7)));
        assert_eq!(r.outcome.unwrap().get(), r#"{"a":[1,"b"],"c":null}"#);
        let long_id = "i".repeat(oxmcp_jsonrpc::MAX_ID_LEN + 1);
        for other in [
            json!({"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no"}}),
            json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}),
            json!({"jsonrpc":"2.0","id":8,"method":"ping"}),
            json!({"jsonrpc":"2.0","method":"notifications/progress","params":{}}),
            json!({"jsonrpc":"2.0","id": long_id,"result":{}}),
        ] {
            match protobuf_answer(&wire(&other)).unwrap() {
                Answer::Text(text) => {
                    let back: serde_json::Value = serde_json::from_str(&text).unwrap();
                    assert_eq!(back, other);
                }
                Answer::Decoded(m) => panic!("{other} came decoded: {m:?}"),
            }
        }
    }
}
