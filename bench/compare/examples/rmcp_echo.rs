//! The same echo server written with the official Rust SDK (rmcp).

mod common;

use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    /// The text to echo back.
    message: String,
}

#[derive(Clone)]
struct EchoServer {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl EchoServer {
    fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    #[tool(description = "Echoes the message back")]
    fn echo(&self, Parameters(Echo { message }): Parameters<Echo>) -> String {
        message
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for EchoServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

fn main() {
    let mode = common::mode();
    common::runtime(&mode).block_on(async {
        match mode {
            common::Mode::Stdio => {
                let service = EchoServer::new()
                    .serve(rmcp::transport::stdio())
                    .await
                    .expect("serve");
                let _ = service.waiting().await;
            }
            common::Mode::Http(addr) => {
                let listener = common::listen(&addr).await;
                let service: StreamableHttpService<EchoServer, LocalSessionManager> =
                    StreamableHttpService::new(
                        || Ok(EchoServer::new()),
                        Default::default(),
                        StreamableHttpServerConfig::default(),
                    );
                let router = axum::Router::new().nest_service("/mcp", service);
                axum::serve(listener, router).await.expect("serve");
            }
        }
    });
}
