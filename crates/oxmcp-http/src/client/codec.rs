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
