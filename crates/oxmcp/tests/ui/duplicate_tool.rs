use oxmcp::server::server;

struct S;

#[server]
impl S {
    /// One.
    #[tool(name = "same")]
    async fn one(&self) -> String {
        "1".to_owned()
    }

    /// Two.
    #[tool(name = "same")]
    async fn two(&self) -> String {
        "2".to_owned()
    }
}

fn main() {}
