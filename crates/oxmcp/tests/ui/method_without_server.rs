use oxmcp::server::tool;

struct S;

impl S {
    /// Needs #[server] on the block.
    #[tool]
    async fn echo(&self, message: String) -> String {
        message
    }
}

fn main() {}
