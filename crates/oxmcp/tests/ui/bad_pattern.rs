use oxmcp::server::tool;

/// Sums a pair.
#[tool]
async fn sum((a, b): (i64, i64)) -> String {
    (a + b).to_string()
}

fn main() {}
