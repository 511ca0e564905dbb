use oxmcp::server::{Args, Ctx, Json, Server, completion, prompt, resource, server, tool};

#[derive(oxmcp::serde::Deserialize, oxmcp::schemars::JsonSchema)]
#[serde(crate = "oxmcp::serde")]
#[schemars(crate = "oxmcp::schemars")]
struct Point {
    x: f64,
    y: f64,
}

#[derive(oxmcp::serde::Serialize, oxmcp::schemars::JsonSchema)]
#[serde(crate = "oxmcp::serde")]
#[schemars(crate = "oxmcp::schemars")]
struct Norm {
    norm: f64,
}

struct Geometry;

/// Geometry tools.
#[server]
impl Geometry {
    /// The norm of a point.
    #[tool(read_only, idempotent, title = "Norm")]
    async fn norm(&self, _ctx: Ctx, Args(p): Args<Point>) -> Json<Norm> {
        Json(Norm { norm: (p.x * p.x + p.y * p.y).sqrt() })
    }

    /// Scales a number.
    #[tool(destructive = false)]
    async fn scale(
        &self,
        #[schemars(description = "The number.")] value: f64,
        factor: Option<f64>,
    ) -> Result<String, std::io::Error> {
        Ok((value * factor.unwrap_or(2.0)).to_string())
    }

    /// A static helper, not a tool.
    fn helper() -> u8 {
        1
    }
}

/// Says hi.
#[prompt]
async fn hi(#[arg(description = "Who.")] who: String) -> Result<String, String> {
    Ok(format!("Say hi to {who}"))
}

/// Reads a note.
#[resource("notes:///{id}", mime = "text/markdown")]
async fn note(ctx: Ctx, id: String, uri: String) -> String {
    let _ = ctx.request_id();
    format!("{uri} {id}")
}

#[completion(resource = "notes:///{id}", argument = "id")]
async fn note_ids(_value: String) -> Vec<String> {
    vec!["1".to_owned()]
}

fn main() {
    let _ = Geometry::helper();
    let server: Server = Geometry
        .builder()
        .add(hi)
        .add(note)
        .add(note_ids)
        .build()
        .unwrap();
    drop(server);
}
