//! `#[prompt]`: a prompt registered with `ServerBuilder::prompt`; each parameter but the
//! `Ctx` is a prompt argument (`String` required, `Option<String>` optional).

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::Attribute;
use syn::spanned::Spanned;

use crate::attrs::{AttrArgs, lit, opt_str};
use crate::common::{ItemKind, Registration, Site, arg_ident, call_result, str_slice};
use crate::sig::{Kind, Sig, only};
use crate::tool::description;

/// The registration of a `#[prompt]` function.
pub(crate) fn expand(
    mut args: AttrArgs,
    attrs: &[Attribute],
    sig: &Sig,
    site: &Site<'_>,
) -> syn::Result<Registration> {
    let span = sig.ident.span();
    if let Some(p) = &args.positional {
        return Err(syn::Error::new_spanned(
            p,
            "#[prompt] takes no positional argument; use `name = \"...\"`",
        ));
    }
    let name = args
        .str("name")?
        .unwrap_or_else(|| lit(&syn::ext::IdentExt::unraw(&sig.ident).to_string(), span));
    let description = description(&mut args, attrs, "#[prompt]", span)?;
    let title = opt_str(args.str("title")?.as_ref());
    let icons = str_slice(&args.list("icons")?);
    args.finish("name, description, title, icons")?;
    only(sig, |p| match p.kind {
        Kind::Named { .. } if p.forwarded.is_empty() => None,
        Kind::Named { .. } => Some(
            "#[prompt] arguments take `#[arg(name = \"...\", description = \"...\")]`, \
             not serde or schemars attributes"
                .to_owned(),
        ),
        _ => Some("#[prompt] parameters are `Ctx`, `String` or `Option<String>`".to_owned()),
    })?;

    let p = &site.paths.private;
    let (arguments, bindings) = arguments(sig, site);
    let capture = &site.capture;
    let recapture = &site.recapture;
    let result = call_result(sig, site);
    let tokens = quote! {
        {
            #capture
            __builder = #p::prompt(
                __builder,
                #p::PromptMeta {
                    name: #name,
                    description: #description,
                    title: #title,
                    icons: #icons,
                    arguments: &[#(#arguments),*],
                },
                move |__ctx: #p::Ctx, __args: #p::BTreeMap<::std::string::String, ::std::string::String>| {
                    #recapture
                    async move {
                        #(#bindings)*
                        #p::prompt_out(#result)
                    }
                },
            );
        }
    };
    Ok(Registration {
        tokens,
        kind: ItemKind::Prompt,
        key: name.value(),
        span,
    })
}

/// The prompt's arguments (name, description, required) and the call's bindings.
fn arguments(sig: &Sig, site: &Site<'_>) -> (Vec<TokenStream>, Vec<TokenStream>) {
    let p = &site.paths.private;
    let mut arguments = Vec::new();
    let mut bindings = Vec::new();
    for (i, param) in sig.params.iter().enumerate() {
        let (Kind::Named { optional, .. }, Some(wire)) = (&param.kind, param.wire_name()) else {
            continue;
        };
        let wire = lit(&wire, param.ty.span());
        let desc = opt_str(param.description.as_ref());
        let required = !optional;
        arguments.push(quote!((#wire, #desc, #required)));
        let a = arg_ident(i);
        let ty = &param.ty;
        let getter = if *optional {
            quote!(opt_arg)
        } else {
            quote!(arg)
        };
        bindings.push(quote_spanned!(ty.span()=> let #a: #ty = #p::#getter(&__args, #wire);));
    }
    (arguments, bindings)
}
