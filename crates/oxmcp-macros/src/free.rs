//! The item macros on a free `async fn`: the function becomes a unit struct of the same
//! name implementing `Register`, the body its associated `call` function.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{FnArg, ItemFn, Signature};

use crate::attrs::AttrArgs;
use crate::common::Site;
use crate::paths::Paths;
use crate::sig::analyse;

/// Takes the macros' parameter attributes (`#[serde]`, `#[schemars]`, `#[arg]`) off `sig`.
pub(crate) fn strip_param_attrs(sig: &mut Signature) {
    for input in sig.inputs.iter_mut() {
        if let FnArg::Typed(pt) = input {
            pt.attrs.retain(|a| {
                !(a.path().is_ident("serde")
                    || a.path().is_ident("schemars")
                    || a.path().is_ident("arg"))
            });
        }
    }
}

/// Expands `#[kind(...)]` on a free function.
pub(crate) fn expand(kind: &str, attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut f: ItemFn = match syn::parse2(item) {
        Ok(f) => f,
        Err(e) => return e.to_compile_error(),
    };
    match expand_fn(kind, attr, &mut f) {
        Ok(tokens) => tokens,
        Err(e) => {
            strip_param_attrs(&mut f.sig);
            let e = e.to_compile_error();
            quote!(#e #f)
        }
    }
}

fn expand_fn(kind: &str, attr: TokenStream, f: &mut ItemFn) -> syn::Result<TokenStream> {
    let args: AttrArgs = syn::parse2(attr)?;
    let what = format!("#[{kind}]");
    let sig = analyse(&mut f.sig, false, &what)?;
    let paths = Paths::resolve();
    let ident = f.sig.ident.clone();
    let site = Site::free(&paths, &ident);
    let reg = match kind {
        "tool" => crate::tool::expand(args, &f.attrs, &sig, &site)?,
        "prompt" => crate::prompt::expand(args, &f.attrs, &sig, &site)?,
        "resource" => crate::resource::expand(args, &f.attrs, &sig, &site)?,
        _ => crate::completion::expand(args, &sig, &site)?,
    };
    let (docs, others): (Vec<_>, Vec<_>) = f.attrs.iter().partition(|a| a.path().is_ident("doc"));
    let vis = &f.vis;
    let mut call_sig = f.sig.clone();
    call_sig.ident = format_ident!("call", span = ident.span());
    let block = &f.block;
    let p = &paths.private;
    let tokens = &reg.tokens;
    Ok(quote! {
        #(#docs)*
        #[allow(non_camel_case_types)]
        #[derive(Debug, Clone, Copy, Default)]
        #vis struct #ident;

        impl #ident {
            /// The function as written, callable directly.
            #(#others)*
            #vis #call_sig #block
        }

        impl #p::Register for #ident {
            fn register(self, builder: #p::ServerBuilder) -> #p::ServerBuilder {
                let mut __builder = builder;
                #tokens
                __builder
            }
        }
    })
}
