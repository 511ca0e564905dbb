//! Serving skills: the extension's methods and the skill files as resources.

use std::collections::BTreeSet;
use std::sync::Arc;

use oxmcp_jsonrpc::{ErrorCode, ErrorObject};
use oxmcp_types::skills::{
    DIRECTORY_MIME, DIRECTORY_READ_SETTING, DirectoryReadParams, DirectoryReadResult, EXTENSION_ID,
    GetSkillParams, GetSkillResult, ListSkillsParams, ListSkillsResult, SKILL_MD, SKILL_MD_MIME,
};
use oxmcp_types::{JsonObject, ReadResourceResult, Resource, ResourceContents, ResourceTemplate};
use serde_json::Value;

use super::{Skill, SkillFile, Skills};
use crate::{Ctx, ServerBuilder};

/// The template every skill file other than `SKILL.md` is read through.
const FILE_TEMPLATE: &str = "skill://{skill}/{+path}";

pub(super) fn register(builder: ServerBuilder, skills: Arc<Skills>) -> ServerBuilder {
    let mut settings = JsonObject::new();
    settings.insert(DIRECTORY_READ_SETTING.into(), Value::Bool(true));
    let mut b = builder
        .declare_resources()
        .extension(EXTENSION_ID, settings);
    for skill in skills.iter() {
        let resource = Resource::default()
            .with_uri(skill.uri())
            .with_name(skill.name.clone())
            .with_description(
                skill
                    .frontmatter
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            )
            .with_mime_type(Some(SKILL_MD_MIME.into()))
            .with_size(skill.files.get(SKILL_MD).map(|f| f.bytes.len() as u64));
        let s = skills.clone();
        let name = skill.name.clone();
        b = b.resource(resource, move |ctx, uri| {
            let found = s.get(&name).and_then(|k| k.files.get(SKILL_MD)).cloned();
            async move { read(&ctx, uri, found) }
        });
    }
    let template = ResourceTemplate::default()
        .with_uri_template(FILE_TEMPLATE.into())
        .with_name("skill-file".into())
        .with_description(Some("A file of a skill (SEP-2640)".into()));
    let s = skills.clone();
    b = b.resource_template(template, move |ctx, uri, vars| {
        let found = vars
            .get("skill")
            .and_then(|k| s.get(k))
            .and_then(|k| k.files.get(vars.get("path")?.as_str()))
            .cloned();
        async move { read(&ctx, uri, found) }
    });
    let s = skills.clone();
    b = b.method("skills/list", move |_ctx: Ctx, p: ListSkillsParams| {
        let r = list(&s, p);
        async move { r }
    });
    let s = skills.clone();
    b = b.method("skills/get", move |_ctx: Ctx, p: GetSkillParams| {
        let r = get(&s, p);
        async move { r }
    });
    b.method(
        "resources/directory/read",
        move |_ctx: Ctx, p: DirectoryReadParams| {
            let r = directory(&skills, p);
            async move { r }
        },
    )
}

/// Whether a file is served as text: a textual MIME type and UTF-8 bytes.
fn textual(file: &SkillFile) -> Option<&str> {
    let m = file.mime_type.as_str();
    let text_type = m.starts_with("text/")
        || matches!(
            m,
            "application/json"
                | "application/yaml"
                | "application/xml"
                | "application/toml"
                | "image/svg+xml"
        );
    if text_type {
        std::str::from_utf8(&file.bytes).ok()
    } else {
        None
    }
}

fn read(
    ctx: &Ctx,
    uri: String,
    file: Option<SkillFile>,
) -> Result<ReadResourceResult, ErrorObject> {
    let Some(file) = file else {
        let code = ErrorCode(ctx.protocol_version().resource_not_found_code());
        return Err(ErrorObject::new(code, format!("no such skill file: {uri}")));
    };
    let contents = match textual(&file) {
        Some(text) => ResourceContents::text(uri, Some(&file.mime_type), text),
        None => ResourceContents::default()
            .with_uri(uri)
            .with_mime_type(Some(file.mime_type.clone()))
            .with_blob(Some(base64_simd::STANDARD.encode_to_string(&file.bytes))),
    };
    Ok(ReadResourceResult::default().with_contents(vec![contents]))
}

/// An offset cursor: the index of the first item of the page.
fn offset(cursor: Option<&str>, len: usize) -> Result<usize, ErrorObject> {
    match cursor {
        None => Ok(0),
        Some(c) => c
            .parse::<usize>()
            .ok()
            .filter(|&i| i > 0 && i < len)
            .ok_or_else(|| ErrorObject::invalid_params(format!("invalid cursor {c:?}"))),
    }
}

fn next_cursor(end: usize, len: usize) -> Option<String> {
    (end < len).then(|| end.to_string())
}

fn list(skills: &Skills, p: ListSkillsParams) -> Result<ListSkillsResult, ErrorObject> {
    let len = skills.len();
    let start = offset(p.cursor.as_deref(), len)?;
    let end = start
        .saturating_add(skills.config.page_size.max(1))
        .min(len);
    Ok(ListSkillsResult::default()
        .with_skills(
            skills
                .iter()
                .skip(start)
                .take(end - start)
                .map(Skill::entry)
                .collect(),
        )
        .with_next_cursor(next_cursor(end, len))
        .with_ttl_ms(Some(skills.config.ttl_ms))
        .with_cache_scope(Some(skills.config.cache_scope)))
}

fn get(skills: &Skills, p: GetSkillParams) -> Result<GetSkillResult, ErrorObject> {
    let skill = oxmcp_types::skills::name_of_uri(&p.uri)
        .and_then(|n| skills.get(n))
        .filter(|s| s.uri() == p.uri)
        .ok_or_else(|| ErrorObject::invalid_params(format!("no skill at {}", p.uri)))?;
    Ok(GetSkillResult {
        skill: skill.entry(),
        ttl_ms: Some(skills.config.ttl_ms),
        cache_scope: Some(skills.config.cache_scope),
    })
}

/// A directory of a served skill: its skill and its path under the skill's folder (`""` for
/// the root), or an error for a file or an unknown URI.
fn find_dir<'a>(skills: &'a Skills, uri: &str) -> Result<(&'a Skill, String), ErrorObject> {
    let rest = uri
        .strip_prefix("skill://")
        .ok_or_else(|| ErrorObject::invalid_params(format!("not a skill directory: {uri}")))?
        .trim_end_matches('/');
    let (name, path) = rest.split_once('/').unwrap_or((rest, ""));
    let skill = skills
        .get(name)
        .ok_or_else(|| ErrorObject::invalid_params(format!("no skill directory at {uri}")))?;
    if skill.files.contains_key(path) {
        return Err(ErrorObject::invalid_params(format!(
            "{uri} is a file, not a directory"
        )));
    }
    let prefix = if path.is_empty() {
        String::new()
    } else {
        format!("{path}/")
    };
    if !skill.files.keys().any(|k| k.starts_with(&prefix)) {
        return Err(ErrorObject::invalid_params(format!(
            "no skill directory at {uri}"
        )));
    }
    Ok((skill, prefix))
}

fn directory(skills: &Skills, p: DirectoryReadParams) -> Result<DirectoryReadResult, ErrorObject> {
    let (skill, prefix) = find_dir(skills, &p.uri)?;
    let mut dirs = BTreeSet::new();
    let mut children = Vec::new();
    for (path, file) in skill.files.range(prefix.clone()..) {
        let Some(rest) = path.strip_prefix(&prefix) else {
            break;
        };
        match rest.split_once('/') {
            Some((dir, _)) => {
                if dirs.insert(dir.to_owned()) {
                    children.push(
                        Resource::default()
                            .with_uri(skill.file_uri(&format!("{prefix}{dir}")))
                            .with_name(dir.to_owned())
                            .with_mime_type(Some(DIRECTORY_MIME.into())),
                    );
                }
            }
            None => children.push(
                Resource::default()
                    .with_uri(if path == SKILL_MD {
                        skill.uri()
                    } else {
                        skill.file_uri(path)
                    })
                    .with_name(rest.to_owned())
                    .with_mime_type(Some(file.mime_type.clone()))
                    .with_size(Some(file.bytes.len() as u64)),
            ),
        }
    }
    let len = children.len();
    let start = offset(p.cursor.as_deref(), len)?;
    let end = start
        .saturating_add(skills.config.directory_page_size.max(1))
        .min(len);
    Ok(DirectoryReadResult::default()
        .with_resources(children.drain(start..end).collect())
        .with_next_cursor(next_cursor(end, len)))
}
