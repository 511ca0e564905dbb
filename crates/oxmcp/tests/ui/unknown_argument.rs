use oxmcp::server::tool;

/// Echoes.
#[tool(readonly)]
async fn echo(message: String) -> String {
    message
}

fn main() {}
