//! MCP over gRPC: our documented custom transport (`docs/transports/grpc.md`; the service
//! is `mcp.v1.Mcp` in `oxmcp-proto`'s `proto/mcp.proto`). This crate owns both sides of it
//! on tonic: the server (feature `server`, [`Grpc`], an axum router admitting its calls with
//! oxmcp-http's `front`, and [`serve_grpc`] for a listener of its own) and the client
//! (feature `client`, [`client`]), both on by default, and the envelope codec they share; a
//! client-only build has no axum, no hyper server and no tonic server. Imports
//! oxmcp-engine, oxmcp-http, oxmcp-jsonrpc, oxmcp-proto and oxmcp-transport; hosts any
//! [`oxmcp_engine::Serve`].
//!
//! - `Connect` is a bidirectional stream of [`Envelope`]s, each carrying exactly one
//!   JSON-RPC message: as its JSON bytes by default, or in its protobuf form. One stream is
//!   one legacy session (`initialize` first), or any number of 2026-07-28 requests.
//! - `Call` is one 2026-07-28 request and its answer.
//! - Call metadata carries `authorization` (the same bearer check as `/mcp`; a `Connect`
//!   stream ends `UNAUTHENTICATED` when its token expires or is refused when verified again,
//!   and an `oxmcp/authorize` envelope presents a fresh one, [`oxmcp_http::reauth`]),
//!   `mcp-protocol-version` (checked when present) and `mcp-encoding` (`json` or
//!   `protobuf`: the form of the server's envelopes; by default the form of the client's
//!   first envelope).
//! - `oxmcp serve` serves it on its HTTP port (HTTP/2, routed on `content-type:
//!   application/grpc`, see `split`) or on a listener of its own.
//!
//! The service beside the Streamable HTTP endpoint, on one port:
//!
//! ```no_run
//! # #[cfg(feature = "server")]
//! # async fn run(server: oxmcp_server::Server) -> std::io::Result<()> {
//! let config = oxmcp_http::HttpConfig::default();
//! let http = oxmcp_http::StreamableHttp::new(server.clone(), config.clone());
//! let grpc = oxmcp_grpc::Grpc::new(server, config);
//! let app = oxmcp_grpc::split(http.router(), grpc.router());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! oxmcp_http::serve_router(listener, app).await // grpc://127.0.0.1:8080
//! # }
//! ```

#![forbid(unsafe_code)]

#[cfg(feature = "client")]
pub mod client;
#[cfg(feature = "server")]
mod listen;
#[cfg(feature = "server")]
mod server;

use oxmcp_proto::{DecodeLimits, Envelope, envelope::Body};

#[cfg(feature = "server")]
pub use listen::{ListenError, TlsPem, serve_grpc};
#[cfg(feature = "server")]
pub use server::{Grpc, split};

/// The service's full name.
pub const SERVICE: &str = "mcp.v1.Mcp";
/// The path of the bidirectional `Connect` method.
pub const CONNECT_PATH: &str = "/mcp.v1.Mcp/Connect";
/// The path of the unary `Call` method.
pub const CALL_PATH: &str = "/mcp.v1.Mcp/Call";
/// The metadata key choosing the form of the server's envelopes.
pub const ENCODING_KEY: &str = "mcp-encoding";

/// The form of an envelope's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Form {
    /// UTF-8 JSON bytes (the default).
    #[default]
    Json,
    /// The protobuf `Message`.
    Protobuf,
}

impl Form {
    /// The form named by `mcp-encoding` metadata.
    pub fn parse(text: &str) -> Option<Form> {
        match text.trim().to_ascii_lowercase().as_str() {
            "json" => Some(Form::Json),
            "protobuf" | "proto" => Some(Form::Protobuf),
            _ => None,
        }
    }

    /// The metadata value naming this form.
    pub fn name(self) -> &'static str {
        match self {
            Form::Json => "json",
            Form::Protobuf => "protobuf",
        }
    }

    /// The form an envelope uses, if it has a body.
    pub fn of(envelope: &Envelope) -> Option<Form> {
        match envelope.body {
            Some(Body::Json(_)) => Some(Form::Json),
            Some(Body::Message(_)) => Some(Form::Protobuf),
            None => None,
        }
    }
}

/// Why an envelope carries no usable message.
#[derive(Debug, thiserror::Error)]
pub enum EnvelopeError {
    /// The envelope has neither `json` nor `message`.
    #[error("the envelope carries no message")]
    Empty,
    /// The protobuf message is not a JSON-RPC message.
    #[error("{0}")]
    Proto(#[from] oxmcp_proto::ProtoError),
}

/// The JSON bytes of an envelope's message (not parsed when it came as JSON: the engine
/// parses, and answers unparseable JSON with -32700).
///
/// # Errors
/// [`EnvelopeError`] for an empty envelope or a protobuf message that cannot be JSON-RPC.
pub fn to_json(envelope: Envelope) -> Result<Vec<u8>, EnvelopeError> {
    match envelope.body {
        Some(Body::Json(bytes)) => Ok(bytes),
        Some(Body::Message(m)) => Ok(oxmcp_proto::to_json_text(&m)?.into_bytes()),
        None => Err(EnvelopeError::Empty),
    }
}

/// The envelope of one JSON message in `form` (in protobuf, read from the text in one pass,
/// [`oxmcp_proto::to_proto_text`]). A message the protobuf form cannot carry (it never
/// happens for JSON-RPC) goes as JSON.
pub fn from_json(line: &str, form: Form) -> Envelope {
    if form == Form::Protobuf
        && let Ok(m) = oxmcp_proto::to_proto_text(line)
    {
        return Envelope {
            body: Some(Body::Message(m)),
        };
    }
    Envelope {
        body: Some(Body::Json(line.as_bytes().to_vec())),
    }
}

/// The codec of both methods: prost's encoder, and a decoder that refuses an envelope past
/// `limits` before decoding it.
pub(crate) fn codec(limits: DecodeLimits) -> EnvelopeCodec {
    EnvelopeCodec { limits }
}

/// Envelopes in, envelopes out; incoming ones checked against [`DecodeLimits`] on their wire
/// form first (`RESOURCE_EXHAUSTED` past them; malformed bytes are `INTERNAL`, as prost's
/// own codec has them).
#[derive(Debug, Clone, Copy)]
pub(crate) struct EnvelopeCodec {
    limits: DecodeLimits,
}

impl tonic::codec::Codec for EnvelopeCodec {
    type Encode = Envelope;
    type Decode = Envelope;
    type Encoder = tonic_prost::ProstEncoder<Envelope>;
    type Decoder = EnvelopeCodec;

    fn encoder(&mut self) -> Self::Encoder {
        tonic_prost::ProstEncoder::new(tonic::codec::BufferSettings::default())
    }

    fn decoder(&mut self) -> Self::Decoder {
        *self
    }
}

impl tonic::codec::Decoder for EnvelopeCodec {
    type Item = Envelope;
    type Error = tonic::Status;

    fn decode(
        &mut self,
        buf: &mut tonic::codec::DecodeBuf<'_>,
    ) -> Result<Option<Envelope>, tonic::Status> {
        use bytes::Buf as _;
        let bytes = buf.copy_to_bytes(buf.remaining());
        match oxmcp_proto::decode_envelope(&bytes, &self.limits) {
            Ok(envelope) => Ok(Some(envelope)),
            Err(oxmcp_proto::ProtoError::TooLarge(why)) => {
                Err(tonic::Status::resource_exhausted(why))
            }
            Err(e) => Err(tonic::Status::internal(e.to_string())),
        }
    }
}

/// An error with its causes, on one line.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
