use oxmcp::server::server;

struct Counter {
    n: u64,
}

#[server]
impl Counter {
    /// Counts.
    #[tool]
    async fn count(&mut self) -> String {
        self.n += 1;
        self.n.to_string()
    }
}

fn main() {}
