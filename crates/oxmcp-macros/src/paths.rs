//! The path to the server crate in the user's crate: `::oxmcp::server` when it depends on
//! `oxmcp`, else `::oxmcp_server` (each under its renamed name, if renamed).

use proc_macro_crate::{FoundCrate, crate_name};
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::Ident;

/// The server crate's `__private` module's (as a string too, for
/// `#[serde(crate = "...")]`).
pub(crate) struct Paths {
    /// `<server>::__private`.
    pub(crate) private: TokenStream,
    /// `<server>::__private` as text.
    pub(crate) private_str: String,
}

fn name_of(found: FoundCrate, own: &str) -> String {
    match found {
        // The crate itself (its tests, examples and doctests name it as a dependency).
        FoundCrate::Itself => own.replace('-', "_"),
        FoundCrate::Name(name) => name,
    }
}

impl Paths {
    pub(crate) fn resolve() -> Self {
        let (root, suffix) = match crate_name("oxmcp") {
            Ok(found) => (name_of(found, "oxmcp"), "::server"),
            Err(_) => match crate_name("oxmcp-server") {
                Ok(found) => (name_of(found, "oxmcp-server"), ""),
                Err(_) => ("oxmcp".to_owned(), "::server"),
            },
        };
        let root_ident = Ident::new(&root, Span::call_site());
        let server = if suffix.is_empty() {
            quote!(::#root_ident)
        } else {
            quote!(::#root_ident::server)
        };
        let private = quote!(#server::__private);
        let private_str = format!("::{root}{suffix}::__private");
        Self {
            private,
            private_str,
        }
    }
}
