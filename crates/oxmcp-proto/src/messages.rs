//! The messages of `proto/mcp.proto`, for prost (written out, so no code generator or
//! `protoc` is needed to build).
#![allow(missing_docs)]

/// A JSON-RPC 2.0 message.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Message {
    #[prost(message, optional, tag = "1")]
    pub id: Option<Id>,
    #[prost(string, tag = "2")]
    pub method: String,
    #[prost(message, optional, tag = "3")]
    pub params: Option<Value>,
    #[prost(message, optional, tag = "4")]
    pub result: Option<Value>,
    #[prost(message, optional, tag = "5")]
    pub error: Option<Error>,
}

/// A JSON-RPC batch.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Batch {
    #[prost(message, repeated, tag = "1")]
    pub messages: Vec<Message>,
}

/// A request id.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Id {
    #[prost(oneof = "id::Kind", tags = "1, 2, 3")]
    pub kind: Option<id::Kind>,
}

/// The kinds of [`Id`].
pub mod id {
    /// What an id is.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Kind {
        #[prost(sint64, tag = "1")]
        Number(i64),
        #[prost(string, tag = "2")]
        Text(String),
        #[prost(bool, tag = "3")]
        Null(bool),
    }
}

/// A JSON-RPC error.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Error {
    #[prost(sint64, tag = "1")]
    pub code: i64,
    #[prost(string, tag = "2")]
    pub message: String,
    #[prost(message, optional, tag = "3")]
    pub data: Option<Value>,
}

/// A JSON value.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Value {
    #[prost(oneof = "value::Kind", tags = "1, 2, 3, 4, 5, 6, 7, 8, 9")]
    pub kind: Option<value::Kind>,
}

/// The kinds of [`Value`].
pub mod value {
    /// What a value is.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Kind {
        #[prost(bool, tag = "1")]
        NullValue(bool),
        #[prost(bool, tag = "2")]
        BoolValue(bool),
        #[prost(sint64, tag = "3")]
        IntValue(i64),
        #[prost(uint64, tag = "4")]
        UintValue(u64),
        #[prost(double, tag = "5")]
        DoubleValue(f64),
        #[prost(string, tag = "6")]
        StringValue(String),
        #[prost(bytes = "vec", tag = "7")]
        BytesValue(Vec<u8>),
        #[prost(message, tag = "8")]
        ListValue(super::ListValue),
        #[prost(message, tag = "9")]
        StructValue(super::Struct),
    }
}

/// A JSON array.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ListValue {
    #[prost(message, repeated, tag = "1")]
    pub values: Vec<Value>,
}

/// A JSON object, its keys in order.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Struct {
    #[prost(message, repeated, tag = "1")]
    pub fields: Vec<Field>,
}

/// One key of a JSON object.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Field {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<Value>,
}

/// One JSON-RPC message in the gRPC transport: its JSON bytes, or its protobuf form.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Envelope {
    #[prost(oneof = "envelope::Body", tags = "1, 2")]
    pub body: Option<envelope::Body>,
}

/// The forms of an [`Envelope`].
pub mod envelope {
    /// How the message travels.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Body {
        /// The message as UTF-8 JSON.
        #[prost(bytes = "vec", tag = "1")]
        Json(Vec<u8>),
        /// The message in its protobuf form.
        #[prost(message, tag = "2")]
        Message(super::Message),
    }
}
