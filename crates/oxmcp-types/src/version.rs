//! Protocol revisions and the per-version feature table.
//!
//! Every difference between revisions that the code needs to know about lives here, so call
//! sites ask `version.has(Feature::Batching)` instead of comparing dates.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A protocol revision this crate knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProtocolVersion {
    /// 2024-11-05: the first revision (HTTP+SSE transport).
    V2024_11_05,
    /// 2025-03-26: Streamable HTTP, JSON-RPC batching, tool annotations, audio.
    V2025_03_26,
    /// 2025-06-18: structured tool output, elicitation, no batching.
    V2025_06_18,
    /// 2025-11-25: URL elicitation, tasks, sampling with tools, icons.
    V2025_11_25,
    /// 2026-07-28: stateless core, no handshake, per-request `_meta`, MRTR.
    V2026_07_28,
}

/// A capability or behaviour that exists only in some revisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Feature {
    /// JSON-RPC batches (arrays of messages): only 2025-03-26.
    Batching,
    /// The `initialize` / `notifications/initialized` handshake and sessions.
    Handshake,
    /// `server/discover` and per-request `_meta` client info (2026-07-28).
    Discover,
    /// Tool annotations (`readOnlyHint`, ...).
    ToolAnnotations,
    /// Audio content blocks.
    AudioContent,
    /// The `completions` capability (2025-03-26 on). `completion/complete` itself is older:
    /// 2024-11-05 servers answer it without declaring anything.
    Completions,
    /// `structuredContent` and `outputSchema` on tools.
    StructuredOutput,
    /// `elicitation/create` (form mode).
    Elicitation,
    /// URL-mode elicitation.
    UrlElicitation,
    /// `resource_link` content blocks.
    ResourceLinks,
    /// `title` on tools, prompts, resources and implementations.
    Titles,
    /// Multi round-trip requests (`input_required` results).
    Mrtr,
    /// `resultType` on every result.
    ResultType,
    /// `subscriptions/listen`.
    SubscriptionsListen,
    /// `Mcp-Method` / `Mcp-Name` HTTP headers.
    MethodHeaders,
    /// `MCP-Protocol-Version` header required on HTTP requests after init.
    ProtocolVersionHeader,
    /// Requestor-driven tasks (`task` in params, `tasks/result`, `tasks/list`), 2025-11-25
    /// only: 2026-07-28 has the tasks extension instead.
    LegacyTasks,
}

impl ProtocolVersion {
    /// Every known revision, oldest first.
    pub const ALL: [ProtocolVersion; 5] = [
        Self::V2024_11_05,
        Self::V2025_03_26,
        Self::V2025_06_18,
        Self::V2025_11_25,
        Self::V2026_07_28,
    ];
    /// The names of every known revision, newest first (as error data lists them).
    pub fn names_newest_first() -> Vec<&'static str> {
        Self::ALL.iter().rev().map(|v| v.as_str()).collect()
    }

    /// The legacy (handshake) revisions, oldest first.
    pub const LEGACY: [ProtocolVersion; 4] = [
        Self::V2024_11_05,
        Self::V2025_03_26,
        Self::V2025_06_18,
        Self::V2025_11_25,
    ];
    /// The newest revision overall.
    pub const LATEST: ProtocolVersion = Self::V2026_07_28;
    /// The newest revision that uses the `initialize` handshake.
    pub const LATEST_LEGACY: ProtocolVersion = Self::V2025_11_25;

    /// The date string used on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::V2024_11_05 => "2024-11-05",
            Self::V2025_03_26 => "2025-03-26",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
        }
    }

    /// Parses a wire version string; `None` for an unknown one.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// Whether this revision has `feature`.
    pub const fn has(self, feature: Feature) -> bool {
        use ProtocolVersion::*;
        match feature {
            Feature::Batching => matches!(self, V2025_03_26),
            Feature::Handshake => !matches!(self, V2026_07_28),
            Feature::Discover
            | Feature::Mrtr
            | Feature::ResultType
            | Feature::SubscriptionsListen
            | Feature::MethodHeaders => matches!(self, V2026_07_28),
            Feature::ToolAnnotations | Feature::AudioContent | Feature::Completions => {
                !matches!(self, V2024_11_05)
            }
            Feature::StructuredOutput
            | Feature::Elicitation
            | Feature::ResourceLinks
            | Feature::Titles
            | Feature::ProtocolVersionHeader => !matches!(self, V2024_11_05 | V2025_03_26),
            Feature::UrlElicitation => matches!(self, V2025_11_25 | V2026_07_28),
            Feature::LegacyTasks => matches!(self, V2025_11_25),
        }
    }

    /// Whether this is a handshake (pre-2026) revision.
    pub const fn is_legacy(self) -> bool {
        self.has(Feature::Handshake)
    }

    /// The JSON-RPC error code for "resource not found": -32002 before 2026-07-28, -32602 from it.
    pub const fn resource_not_found_code(self) -> i32 {
        match self {
            Self::V2026_07_28 => -32602,
            _ => -32002,
        }
    }

    /// The version a server answers a legacy `initialize` with: the requested one if it is a
    /// supported legacy revision, otherwise our latest legacy revision.
    pub fn negotiate_legacy(requested: &str) -> ProtocolVersion {
        match Self::parse(requested) {
            Some(v) if v.is_legacy() => v,
            _ => Self::LATEST_LEGACY,
        }
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Error for an unknown version string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownVersion(pub String);

impl fmt::Display for UnknownVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown protocol version {:?}", self.0)
    }
}

impl std::error::Error for UnknownVersion {}

impl FromStr for ProtocolVersion {
    type Err = UnknownVersion;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s).ok_or_else(|| UnknownVersion(s.to_owned()))
    }
}

impl Serialize for ProtocolVersion {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ProtocolVersion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::parse(&s).ok_or_else(|| serde::de::Error::custom(UnknownVersion(s)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feature_table_per_version() {
        use ProtocolVersion::*;
        let batching: Vec<_> = ProtocolVersion::ALL
            .into_iter()
            .filter(|v| v.has(Feature::Batching))
            .collect();
        assert_eq!(batching, vec![V2025_03_26]);
        for v in ProtocolVersion::LEGACY {
            assert!(v.has(Feature::Handshake), "{v}");
            assert!(!v.has(Feature::Mrtr), "{v}");
            assert_eq!(v.resource_not_found_code(), -32002, "{v}");
        }
        assert!(!V2026_07_28.has(Feature::Handshake));
        assert!(V2026_07_28.has(Feature::Discover));
        assert_eq!(V2026_07_28.resource_not_found_code(), -32602);
        assert!(!V2024_11_05.has(Feature::Completions));
        assert!(V2025_03_26.has(Feature::Completions));
        assert!(!V2025_03_26.has(Feature::Elicitation));
        assert!(V2025_06_18.has(Feature::Elicitation));
        assert!(!V2025_06_18.has(Feature::UrlElicitation));
        assert!(V2025_11_25.has(Feature::UrlElicitation));
    }

    #[test]
    fn parse_and_negotiate() {
        for v in ProtocolVersion::ALL {
            assert_eq!(ProtocolVersion::parse(v.as_str()), Some(v));
            assert_eq!(v.as_str().parse::<ProtocolVersion>(), Ok(v));
        }
        assert_eq!(ProtocolVersion::parse("1999-01-01"), None);
        assert_eq!(
            ProtocolVersion::negotiate_legacy("2025-03-26"),
            ProtocolVersion::V2025_03_26
        );
        assert_eq!(
            ProtocolVersion::negotiate_legacy("1999-01-01"),
            ProtocolVersion::V2025_11_25
        );
        // A legacy initialize cannot negotiate the handshake-free revision.
        assert_eq!(
            ProtocolVersion::negotiate_legacy("2026-07-28"),
            ProtocolVersion::V2025_11_25
        );
        assert!(ProtocolVersion::V2024_11_05 < ProtocolVersion::V2026_07_28);
    }
}
