//! What the item macros share: where the function is called from ([`Site`]), the call's
//! arguments, and the registration each produces.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};

use crate::paths::Paths;
use crate::sig::{Kind, Sig};

/// How the generated handler reaches the user's function.
pub(crate) struct Site<'a> {
    pub(crate) paths: &'a Paths,
    /// The function, ready for `(args)`: `__this.name`, `<T>::name` or `name::call`.
    pub(crate) call: TokenStream,
    /// Statements before the handler closure (cloning the shared state).
    pub(crate) capture: TokenStream,
    /// Statements in the closure, before its `async move` block.
    pub(crate) recapture: TokenStream,
}

impl<'a> Site<'a> {
    /// A function of a `#[server]` impl block, on `&self` or not.
    pub(crate) fn method(paths: &'a Paths, self_ty: &syn::Type, sig: &Sig) -> Self {
        let ident = &sig.ident;
        if sig.has_self {
            Site {
                paths,
                call: quote!(__this.#ident),
                capture: quote!(let __this = ::std::clone::Clone::clone(&self);),
                recapture: quote!(let __this = ::std::clone::Clone::clone(&__this);),
            }
        } else {
            Site {
                paths,
                call: quote!(<#self_ty>::#ident),
                capture: TokenStream::new(),
                recapture: TokenStream::new(),
            }
        }
    }

    /// A free function turned into a unit struct with a `call` function.
    pub(crate) fn free(paths: &'a Paths, ident: &syn::Ident) -> Self {
        Site {
            paths,
            call: quote!(#ident::call),
            capture: TokenStream::new(),
            recapture: TokenStream::new(),
        }
    }
}

/// The kind of thing registered, for duplicate checks in a `#[server]` block.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) enum ItemKind {
    Tool,
    Prompt,
    Resource,
    /// A `completion/complete` function.
    Completion,
    /// A per-argument completer.
    Completer,
}

/// One registration: statements that update `__builder`.
pub(crate) struct Registration {
    pub(crate) tokens: TokenStream,
    pub(crate) kind: ItemKind,
    /// The name, URI or completer key (unique per kind).
    pub(crate) key: String,
    pub(crate) span: Span,
}

/// The name the i-th named argument is bound to in generated code.
pub(crate) fn arg_ident(i: usize) -> syn::Ident {
    format_ident!("__oxmcp_a{}", i)
}

/// The call's arguments in order: `__ctx`, `Args(__whole)`, or each named argument's binding.
pub(crate) fn call_args(sig: &Sig, paths: &Paths) -> Vec<TokenStream> {
    let p = &paths.private;
    sig.params
        .iter()
        .enumerate()
        .map(|(i, param)| match &param.kind {
            Kind::Ctx => quote!(__ctx),
            Kind::Args(_) => quote!(#p::Args(__whole)),
            Kind::Named { .. } => {
                let a = arg_ident(i);
                quote!(#a)
            }
        })
        .collect()
}

/// The call's awaited value as a `Result` (a non-`Result` value is `Ok`, never failing).
pub(crate) fn call_result(sig: &Sig, site: &Site<'_>) -> TokenStream {
    let call = &site.call;
    let args = call_args(sig, site.paths);
    let value = quote!(#call(#(#args),*).await);
    if sig.returns_result {
        value
    } else {
        let p = &site.paths.private;
        quote!(::core::result::Result::Ok::<_, #p::Infallible>(#value))
    }
}

/// `["a", "b"]` as a slice expression.
pub(crate) fn str_slice(items: &[syn::LitStr]) -> TokenStream {
    quote!(&[#(#items),*])
}
