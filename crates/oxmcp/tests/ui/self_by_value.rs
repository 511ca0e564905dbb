use oxmcp::server::server;

struct S;

#[server]
impl S {
    /// Consumes.
    #[tool]
    async fn take(self) -> String {
        String::new()
    }
}

fn main() {}
