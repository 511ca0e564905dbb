use oxmcp::server::server;

struct S;

#[server]
impl S {
    #[tool]
    async fn undocumented(&self) -> String {
        String::new()
    }
}

fn main() {}
