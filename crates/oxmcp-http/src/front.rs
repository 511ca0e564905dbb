//! The front door of a long-lived connection served beside `/mcp` (the WebSocket server of
//! oxmcp-ws, the gRPC server of oxmcp-grpc): the checks its opening request passes, the same
//! as a request to `/mcp` ([`host_checks`], [`authenticate`], [`version_checks`]), its count
//! against its client's limits ([`Held`]), its hold on its bearer token ([`Lease`]), and the
//! scope check of each message it carries ([`frame_refusals`]). All of it reads the endpoint's
//! [`crate::HttpConfig`]; a refused request is a [`Refusal`], the one type of every HTTP
//! refusal the server side makes.

pub use crate::auth::{authenticate, frame_refusals};
pub use crate::server::admission::{host_checks, version_checks};
pub use crate::server::clients::{Client, ClientTable, Held, Refused};
pub use crate::server::lease::{Lease, Watched, ended};
pub use crate::server::refusal::Refusal;
