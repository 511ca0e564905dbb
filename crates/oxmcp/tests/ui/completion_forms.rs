use oxmcp::server::server;
use oxmcp::types::{CompleteParams, CompleteResult};

struct S;

#[server]
impl S {
    #[completion]
    async fn all(&self, _params: CompleteParams) -> CompleteResult {
        CompleteResult::default()
    }

    #[completion(prompt = "greet", argument = "name")]
    async fn names(&self, _typed: String) -> Vec<String> {
        Vec::new()
    }
}

fn main() {}
