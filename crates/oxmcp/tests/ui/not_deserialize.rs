use oxmcp::server::tool;

struct Opaque;

/// Takes something that is not an argument type.
#[tool]
async fn take(value: Opaque) -> String {
    let _ = value;
    String::new()
}

fn main() {}
