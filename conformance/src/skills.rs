//! The skills the fixture server publishes (SEP-2640): the folder `conformance/skills`, or
//! the one `MCP_CONFORMANCE_SKILLS` names. A subfolder in `pdf-processing` lets the suite's
//! `resources/directory/read` checks descend.

use mcp_server::ServerBuilder;

/// Publishes the fixture skills.
pub fn add(b: ServerBuilder) -> ServerBuilder {
    let dir = std::env::var("MCP_CONFORMANCE_SKILLS")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/skills").to_owned());
    b.skills_dir(dir)
}
