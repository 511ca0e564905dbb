//! Client text in error messages: only a short prefix of it (see [`oxmcp_jsonrpc::echo`]).

pub(crate) use oxmcp_jsonrpc::echo;
