//! Icons (2025-11-25) are typed on tools, prompts, resources, templates and
//! implementations, and survive a round trip unchanged.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use oxmcp_types::{Icon, Implementation, Prompt, Resource, ResourceTemplate, Tool};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

fn icons() -> Value {
    json!([
        {"src": "https://example.com/icon.png", "mimeType": "image/png", "sizes": ["48x48", "96x96"], "theme": "light"},
        {"src": "data:image/svg+xml;base64,PHN2Zy8+", "sizes": ["any"]},
        {"src": "https://example.com/future.png", "theme": "high-contrast", "x-later": 1}
    ])
}

/// The value parses with typed icons, and serializes back to the same JSON.
fn round_trip<T: DeserializeOwned + Serialize>(
    v: Value,
    icons_of: impl Fn(&T) -> &Option<Vec<Icon>>,
) {
    let typed: T = serde_json::from_value(v.clone()).unwrap();
    let got = icons_of(&typed).as_ref().expect("typed icons");
    assert_eq!(got.len(), 3);
    assert_eq!(got[0].mime_type.as_deref(), Some("image/png"));
    assert_eq!(got[0].theme.as_deref(), Some("light"));
    assert_eq!(got[1].sizes.as_deref(), Some(&["any".to_owned()][..]));
    assert_eq!(got[2].extra["x-later"], 1, "unknown icon fields are kept");
    assert_eq!(serde_json::to_value(&typed).unwrap(), v);
}

#[test]
fn icons_everywhere_the_schema_has_them() {
    let i = icons();
    round_trip::<Tool>(
        json!({"name": "t", "inputSchema": {"type": "object"}, "icons": i}),
        |t| &t.icons,
    );
    round_trip::<Prompt>(json!({"name": "p", "icons": i}), |p| &p.icons);
    round_trip::<Resource>(json!({"uri": "a://b", "name": "r", "icons": i}), |r| {
        &r.icons
    });
    round_trip::<ResourceTemplate>(
        json!({"uriTemplate": "a://{x}", "name": "t", "icons": i}),
        |t| &t.icons,
    );
    round_trip::<Implementation>(json!({"name": "s", "version": "1", "icons": i}), |s| {
        &s.icons
    });
    // Without icons nothing is added.
    let plain = json!({"name": "s", "version": "1"});
    let s: Implementation = serde_json::from_value(plain.clone()).unwrap();
    assert_eq!(serde_json::to_value(&s).unwrap(), plain);
    assert_eq!(Icon::new("https://x/y.png").src, "https://x/y.png");
}
