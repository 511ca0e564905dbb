//! Client text in error messages: only a short prefix of it (see [`mcp_jsonrpc::echo`]).

pub(crate) use mcp_jsonrpc::echo;
