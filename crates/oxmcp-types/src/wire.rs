//! Fast deserialization for hot-path structs that keep unknown fields.
//!
//! `#[serde(flatten)]` buffers every field of the object before dispatching it, which made
//! decoding a `tools/call` result the most expensive step of a round trip. The macro here
//! generates a single-pass visitor instead: known keys go straight to their fields, anything
//! else is kept in `extra`, and required keys are checked at the end.

/// Implements `Deserialize` for a `Default` struct with an `extra: JsonObject` field.
macro_rules! fast_deserialize {
    ($ty:ident { $($key:literal => $field:ident),* $(,)? } required [$($req:literal),* $(,)?]) => {
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> serde::de::Visitor<'de> for V {
                    type Value = $ty;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str(concat!("a ", stringify!($ty), " object"))
                    }
                    fn visit_map<A: serde::de::MapAccess<'de>>(
                        self,
                        mut map: A,
                    ) -> Result<$ty, A::Error> {
                        let mut out = $ty::default();
                        let required: &[&str] = &[$($req),*];
                        let mut seen = 0usize;
                        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                            if required.contains(&&*key) {
                                seen += 1;
                            }
                            match &*key {
                                $($key => out.$field = map.next_value()?,)*
                                _ => {
                                    let v: serde_json::Value = map.next_value()?;
                                    out.extra.insert(key.into_owned(), v);
                                }
                            }
                        }
                        if seen < required.len() {
                            return Err(serde::de::Error::custom(format_args!(
                                "missing field: {} requires {:?}",
                                stringify!($ty),
                                required
                            )));
                        }
                        Ok(out)
                    }
                }
                d.deserialize_map(V)
            }
        }
    };
}
pub(crate) use fast_deserialize;
