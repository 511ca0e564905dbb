use oxmcp::server::tool;

/// Echoes.
#[tool]
fn echo(message: String) -> String {
    message
}

fn main() {}
