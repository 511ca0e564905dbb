//! Attribute arguments (`name = "..."`, flags, `icons = [...]`, a leading URI string) and
//! doc comments.

use proc_macro2::Span;
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Expr, ExprLit, Ident, Lit, LitBool, LitStr, Meta, Token};

/// One argument's value.
pub(crate) enum Value {
    /// `read_only` alone.
    Flag,
    /// `read_only = false`.
    Bool(LitBool),
    /// `name = "..."`.
    Str(LitStr),
    /// `icons = ["...", ...]`.
    List(Vec<LitStr>),
}

/// The arguments of one of the macros' attributes, consumed by key; what is left over is an
/// error ([`AttrArgs::finish`]).
pub(crate) struct AttrArgs {
    /// A leading string (`#[resource("file:///{path}")]`).
    pub(crate) positional: Option<LitStr>,
    items: Vec<(Ident, Value)>,
}

impl Parse for AttrArgs {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut positional = None;
        let mut items: Vec<(Ident, Value)> = Vec::new();
        if input.peek(LitStr) {
            positional = Some(input.parse()?);
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        while !input.is_empty() {
            let key: Ident = input.parse()?;
            let value = if input.peek(Token![=]) {
                input.parse::<Token![=]>()?;
                parse_value(input)?
            } else {
                Value::Flag
            };
            if items.iter().any(|(k, _)| *k == key) {
                return Err(syn::Error::new_spanned(
                    &key,
                    format!("`{key}` given twice"),
                ));
            }
            items.push((key, value));
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        Ok(Self { positional, items })
    }
}

fn parse_value(input: ParseStream<'_>) -> syn::Result<Value> {
    if input.peek(LitStr) {
        Ok(Value::Str(input.parse()?))
    } else if input.peek(LitBool) {
        Ok(Value::Bool(input.parse()?))
    } else if input.peek(syn::token::Bracket) {
        let content;
        syn::bracketed!(content in input);
        let list = content.parse_terminated(<LitStr as Parse>::parse, Token![,])?;
        Ok(Value::List(list.into_iter().collect()))
    } else {
        Err(input.error("expected a string, `true`, `false` or a list of strings"))
    }
}

impl AttrArgs {
    /// No arguments.
    pub(crate) fn empty() -> Self {
        Self {
            positional: None,
            items: Vec::new(),
        }
    }

    /// The arguments of `attr` (none for a bare `#[tool]`).
    pub(crate) fn of(attr: &Attribute) -> syn::Result<Self> {
        match &attr.meta {
            Meta::Path(_) => Ok(Self::empty()),
            _ => attr.parse_args(),
        }
    }

    fn take(&mut self, key: &str) -> Option<(Ident, Value)> {
        let at = self.items.iter().position(|(k, _)| k == key)?;
        Some(self.items.remove(at))
    }

    /// A string argument.
    pub(crate) fn str(&mut self, key: &str) -> syn::Result<Option<LitStr>> {
        match self.take(key) {
            None => Ok(None),
            Some((_, Value::Str(s))) => Ok(Some(s)),
            Some((k, _)) => Err(syn::Error::new_spanned(
                k,
                format!("`{key}` takes a string"),
            )),
        }
    }

    /// A flag: `key` (true) or `key = true|false`.
    pub(crate) fn flag(&mut self, key: &str) -> syn::Result<Option<bool>> {
        match self.take(key) {
            None => Ok(None),
            Some((_, Value::Flag)) => Ok(Some(true)),
            Some((_, Value::Bool(b))) => Ok(Some(b.value)),
            Some((k, _)) => Err(syn::Error::new_spanned(
                k,
                format!("`{key}` is a flag: `{key}` or `{key} = false`"),
            )),
        }
    }

    /// A list of strings.
    pub(crate) fn list(&mut self, key: &str) -> syn::Result<Vec<LitStr>> {
        match self.take(key) {
            None => Ok(Vec::new()),
            Some((_, Value::List(l))) => Ok(l),
            Some((k, _)) => Err(syn::Error::new_spanned(
                k,
                format!("`{key}` takes a list of strings: `{key} = [\"...\"]`"),
            )),
        }
    }

    /// An error for any argument not consumed.
    pub(crate) fn finish(self, expected: &str) -> syn::Result<()> {
        match self.items.into_iter().next() {
            None => Ok(()),
            Some((k, _)) => Err(syn::Error::new_spanned(
                &k,
                format!("unknown argument `{k}`; expected one of: {expected}"),
            )),
        }
    }
}

/// The doc comment in `attrs`, lines joined, trimmed; `None` when there is none.
pub(crate) fn doc(attrs: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(s), ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .map(|l| l.strip_prefix(' ').unwrap_or(&l).trim_end().to_owned())
        .collect();
    let text = lines.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// A string literal at `span`.
pub(crate) fn lit(value: &str, span: Span) -> LitStr {
    LitStr::new(value, span)
}

/// `Some("...")` / `None` tokens for an optional string.
pub(crate) fn opt_str(value: Option<&LitStr>) -> proc_macro2::TokenStream {
    match value {
        Some(s) => quote::quote!(::core::option::Option::Some(#s)),
        None => quote::quote!(::core::option::Option::None),
    }
}

/// `Some(b)` / `None` tokens for an optional flag.
pub(crate) fn opt_bool(value: Option<bool>) -> proc_macro2::TokenStream {
    match value {
        Some(b) => quote::quote!(::core::option::Option::Some(#b)),
        None => quote::quote!(::core::option::Option::None),
    }
}
