//! The skills the fixture server publishes (SEP-2640): the folder `conformance/skills`, or
//! the one `MCP_CONFORMANCE_SKILLS` names. A subfolder in `pdf-processing` lets the suite's
//! `resources/directory/read` checks descend.

use oxmcp_server::ServerBuilder;

/// Publishes the fixture skills.
pub fn add(b: ServerBuilder) -> ServerBuilder {
    let dir = std::env::var("MCP_CONFORMANCE_SKILLS")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/skills").to_owned());
    b.skills_dir(dir)
}

/// The fixture client's part in the `sep-2640-client-*` scenarios: list the skills (no file
/// is read), and in the `verify-*` ones load the first, verified: the suite's tampered
/// skill must be refused after its `SKILL.md` is read, before any other file is.
///
/// # Errors
/// A failed listing, or the load's refusal ([`oxmcp_client::skills::SkillsError`]).
pub async fn client(
    client: &oxmcp_client::Client,
    scenario: &str,
) -> Result<(), oxmcp_client::skills::SkillsError> {
    let skills = client.skills();
    let entries = skills.list().await?;
    if scenario.starts_with("sep-2640-client-verify-")
        && let Some(entry) = entries.first()
    {
        skills.load(entry).await?;
    }
    Ok(())
}
