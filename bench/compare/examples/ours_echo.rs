//! The echo server written with our SDK (`mcp` + `oxmcp-http`).

mod common;

use oxmcp::server::{Ctx, Server};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    /// The text to echo back.
    message: String,
}

fn main() {
    let mode = common::mode();
    common::runtime(&mode).block_on(async {
        let server = Server::builder("ours-echo", "1.0.0")
            .tool(
                "echo",
                "Echoes the message back",
                |_ctx: Ctx, a: Echo| async move { Ok::<_, String>(a.message) },
            )
            .build()
            .expect("server");
        match mode {
            common::Mode::Stdio => {
                let (io, writer) = oxmcp::transport::stdio(oxmcp::transport::DEFAULT_MAX_LINE);
                server.serve(io.incoming, io.outgoing).await;
                let _ = writer.await;
            }
            common::Mode::Http(addr) => {
                let listener = common::listen(&addr).await;
                let http = oxmcp_http::StreamableHttp::new(server, oxmcp_http::HttpConfig::default());
                axum::serve(listener, http.router()).await.expect("serve");
            }
        }
    });
}
