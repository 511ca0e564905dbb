//! Reach any MCP server from a client: by URL, on the transport its scheme names, or by
//! command, as a stdio child process; once, or supervised (reconnected when the connection
//! dies). Imports oxmcp-client, oxmcp-grpc (feature `grpc`), oxmcp-http, oxmcp-transport and
//! oxmcp-ws (feature `ws`); the client sides only. Both features are on by default; without
//! one, its URLs are refused with [`OpenError::NotBuiltIn`].
//!
//! | scheme | transport |
//! |---|---|
//! | `http://`, `https://` | Streamable HTTP (falls back to the 2024-11-05 HTTP+SSE transport by itself) |
//! | `ws://`, `wss://` | WebSocket, subprotocol `mcp` |
//! | `grpc://`, `grpcs://` | gRPC (`mcp.v1.Mcp/Connect`) |
//!
//! - [`open`]: the transport's channels and link for a URL, to hand to
//!   [`oxmcp_client::Client::connect_over`] with handlers of your own.
//! - [`connect`] and [`supervise`]: a client of a URL after its handshake, once or kept
//!   connected.
//! - [`Target`]: "a URL or a command", as the `oxmcp` command, the gateway and the load
//!   generator take a server to talk to.
//!
//! ```
//! use oxmcp_remote::{Remote, Scheme};
//!
//! # #[derive(serde::Deserialize, schemars::JsonSchema)]
//! # struct Echo { message: String }
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let server = oxmcp_server::Server::builder("echo", "1.0.0")
//! #     .tool("echo", "Echoes", |_ctx, a: Echo| async move { Ok::<_, String>(a.message) })
//! #     .build()?;
//! # let http = oxmcp_http::StreamableHttp::new(server, oxmcp_http::HttpConfig::default());
//! # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! # let url = format!("http://{}/mcp", listener.local_addr()?);
//! # tokio::spawn(oxmcp_http::serve_router(listener, http.router()));
//! // `url` is a server's Streamable HTTP endpoint, http://127.0.0.1:PORT/mcp.
//! assert_eq!(Scheme::of(&url), Some(Scheme::Http));
//! let client = oxmcp_remote::connect(&url, Remote::default()).await?;
//! assert_eq!(client.list_tools().await?[0].name, "echo");
//! client.close().await;
//! # Ok(())
//! # }
//! ```

mod connect;
mod open;
mod target;

pub use connect::{Remote, connect, supervise};
pub use open::{OpenError, Scheme, open};
pub use target::{Target, TargetError};
