//! How the client commands authenticate to an HTTP server: extra headers and a bearer token.
//!
//! The token comes from `--bearer TOKEN` or `--bearer-file PATH` (not both), else from the
//! `MCP_BEARER` environment variable. A token on the command line is visible to other users
//! in `ps`; the file and the variable are not. An `Authorization` header given with `-H` is
//! used as it is: `MCP_BEARER` is then ignored, and `--bearer`/`--bearer-file` are an error.

use std::path::PathBuf;

use anyhow::{Context, bail};

/// The environment variable holding a bearer token.
const BEARER_ENV: &str = "MCP_BEARER";

/// `--header`, `--bearer` and `--bearer-file` of the client commands.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct Auth {
    /// Extra HTTP header, `Name: value` (repeatable).
    #[arg(long = "header", short = 'H')]
    pub(crate) headers: Vec<String>,
    /// Bearer token, sent as `Authorization: Bearer TOKEN` (HTTP targets). Other users can
    /// see it in `ps`: prefer --bearer-file or the MCP_BEARER environment variable, which is
    /// used when neither option is given.
    #[arg(long, value_name = "TOKEN", conflicts_with = "bearer_file")]
    pub(crate) bearer: Option<String>,
    /// Read the bearer token from this file (whitespace around it is ignored).
    #[arg(long, value_name = "PATH")]
    pub(crate) bearer_file: Option<PathBuf>,
    /// How messages go: json, or protobuf (application/mcp+protobuf bodies over HTTP, where
    /// a server without it gets JSON after its 415; the protobuf envelope form over gRPC).
    #[arg(long, value_enum, default_value_t = Encoding::Json)]
    pub(crate) encoding: Encoding,
    /// Protocol era: auto (2026-07-28 where the server speaks it, else the initialize
    /// handshake), legacy, or modern (also spelled 2026-07-28).
    #[arg(long, default_value = "auto")]
    pub(crate) era: oxmcp_client::EraChoice,
    /// What the client offers the server: sampling, roots, elicitation.
    #[command(flatten)]
    pub(crate) side: crate::client_side::ClientSide,
}

/// `--encoding`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    /// JSON text.
    Json,
    /// The protobuf form (application/mcp+protobuf).
    Protobuf,
}

impl From<Encoding> for oxmcp_http::BodyEncoding {
    fn from(e: Encoding) -> Self {
        match e {
            Encoding::Json => oxmcp_http::BodyEncoding::Json,
            Encoding::Protobuf => oxmcp_http::BodyEncoding::Protobuf,
        }
    }
}

impl Auth {
    /// The HTTP headers: `--header` values plus `Authorization: Bearer …` from the first of
    /// `--bearer`, `--bearer-file` and `MCP_BEARER` that is set.
    ///
    /// # Errors
    /// A malformed `--header`; an unreadable or empty token file; a token that cannot be a
    /// header value; a bearer option together with `-H Authorization`. Messages never show
    /// the token.
    pub(crate) fn headers(&self) -> anyhow::Result<Vec<(String, String)>> {
        let mut headers = parse_headers(&self.headers)?;
        let has_authorization = headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("authorization"));
        let explicit = match (&self.bearer, &self.bearer_file) {
            (Some(token), _) => Some((token.clone(), "--bearer".to_owned())),
            (None, Some(path)) => Some((read_token(path)?, path.display().to_string())),
            (None, None) => None,
        };
        let token = match explicit {
            Some(_) if has_authorization => {
                bail!("give the token with --bearer/--bearer-file or -H Authorization, not both")
            }
            Some(t) => Some(t),
            None if has_authorization => None,
            None => std::env::var(BEARER_ENV)
                .ok()
                .filter(|t| !t.trim().is_empty())
                .map(|t| (t.trim().to_owned(), BEARER_ENV.to_owned())),
        };
        if let Some((token, from)) = token {
            if !token
                .bytes()
                .all(|b| b == b'\t' || (0x20..0x7f).contains(&b))
            {
                bail!("the bearer token from {from} has characters an HTTP header cannot carry");
            }
            headers.push(("Authorization".to_owned(), format!("Bearer {token}")));
        }
        Ok(headers)
    }
}

/// The token in a `--bearer-file`.
fn read_token(path: &std::path::Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the bearer file {}", path.display()))?;
    let token = text.trim();
    if token.is_empty() {
        bail!("the bearer file {} is empty", path.display());
    }
    Ok(token.to_owned())
}

/// `Name: value` header arguments.
pub(crate) fn parse_headers(headers: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    headers
        .iter()
        .map(|h| {
            let (k, v) = h
                .split_once(':')
                .with_context(|| format!("header {h:?} is not `Name: value`"))?;
            Ok((k.trim().to_owned(), v.trim().to_owned()))
        })
        .collect()
}
