//! The attribute macros used with `oxmcp-server` alone (no `oxmcp` facade): the expansion
//! names `::oxmcp_server::__private`.
#![allow(clippy::unwrap_used)]

use oxmcp_server::{Ctx, Server, server, tool};

struct Echo;

#[server(name = "direct")]
impl Echo {
    /// Echoes the message.
    #[tool(read_only)]
    async fn echo(&self, _ctx: Ctx, message: String) -> String {
        message
    }
}

/// Shouts the message.
#[tool]
async fn shout(message: String) -> String {
    message.to_uppercase()
}

#[test]
fn macros_expand_against_oxmcp_server() {
    let server: Server = Echo.builder().add(shout).build().unwrap();
    let echo = server.tool("echo").unwrap();
    assert_eq!(echo.description.as_deref(), Some("Echoes the message."));
    assert_eq!(
        echo.input_schema["required"],
        serde_json::json!(["message"])
    );
    assert!(server.tool("shout").is_some());
}

#[tokio::test]
async fn free_functions_stay_callable() {
    assert_eq!(shout::call("hey".to_owned()).await, "HEY");
}
