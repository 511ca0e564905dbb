//! `#[tool]`: a typed tool registered with `ServerBuilder::typed_tool`.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Attribute, LitStr};

use crate::attrs::{AttrArgs, doc, lit, opt_bool, opt_str};
use crate::common::{ItemKind, Registration, Site, arg_ident, call_result, str_slice};
use crate::paths::Paths;
use crate::sig::{Kind, Sig};

const ARGS: &str =
    "name, description, title, read_only, destructive, idempotent, open_world, icons";

/// The description: `description = "..."` or the doc comment, required.
pub(crate) fn description(
    args: &mut AttrArgs,
    attrs: &[Attribute],
    what: &str,
    span: Span,
) -> syn::Result<LitStr> {
    if let Some(d) = args.str("description")? {
        return Ok(d);
    }
    match doc(attrs) {
        Some(d) => Ok(lit(&d, span)),
        None => Err(syn::Error::new(
            span,
            format!(
                "{what} needs a description: write a doc comment (`/// What it does.`) \
                 or `description = \"...\"`"
            ),
        )),
    }
}

/// The registration of a `#[tool]` function.
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
            "#[tool] takes no positional argument; use `name = \"...\"`",
        ));
    }
    let name = args
        .str("name")?
        .unwrap_or_else(|| lit(&syn::ext::IdentExt::unraw(&sig.ident).to_string(), span));
    let description = description(&mut args, attrs, "#[tool]", span)?;
    let title = opt_str(args.str("title")?.as_ref());
    let read_only = opt_bool(args.flag("read_only")?);
    let destructive = opt_bool(args.flag("destructive")?);
    let idempotent = opt_bool(args.flag("idempotent")?);
    let open_world = opt_bool(args.flag("open_world")?);
    let icons = str_slice(&args.list("icons")?);
    args.finish(ARGS)?;

    let p = &site.paths.private;
    let (input, arg_ty, unpack) = arguments(sig, site.paths)?;
    let capture = &site.capture;
    let recapture = &site.recapture;
    let result = call_result(sig, site);
    let tokens = quote! {
        {
            #input
            #capture
            __builder = #p::tool(
                __builder,
                #p::ToolMeta {
                    name: #name,
                    description: #description,
                    title: #title,
                    read_only: #read_only,
                    destructive: #destructive,
                    idempotent: #idempotent,
                    open_world: #open_world,
                    icons: #icons,
                },
                move |__ctx: #p::Ctx, #arg_ty| {
                    #recapture
                    async move {
                        #unpack
                        #result
                    }
                },
            );
        }
    };
    Ok(Registration {
        tokens,
        kind: ItemKind::Tool,
        key: name.value(),
        span,
    })
}

/// The input type's definition (a generated struct with one field per named argument,
/// destructured into the call's bindings), the closure's argument, and the destructuring.
fn arguments(sig: &Sig, paths: &Paths) -> syn::Result<(TokenStream, TokenStream, TokenStream)> {
    let p = &paths.private;
    let whole: Vec<&syn::Type> = sig
        .params
        .iter()
        .filter_map(|x| match &x.kind {
            Kind::Args(t) => Some(t),
            _ => None,
        })
        .collect();
    let named: Vec<usize> = (0..sig.params.len())
        .filter(|i| matches!(sig.params[*i].kind, Kind::Named { .. }))
        .collect();
    if let Some(t) = whole.first() {
        if whole.len() > 1 || !named.is_empty() {
            return Err(syn::Error::new(
                t.span(),
                "`Args<T>` takes the whole arguments: a #[tool] with it has no other \
                 argument parameter (only a `Ctx` besides)",
            ));
        }
        let check = quote_spanned!(t.span()=> #p::assert_args::<#t>(););
        return Ok((check, quote!(__whole: #t), TokenStream::new()));
    }
    let serde_crate = lit(&format!("{}::serde", paths.private_str), Span::call_site());
    let schemars_crate = lit(
        &format!("{}::schemars", paths.private_str),
        Span::call_site(),
    );
    let mut fields = Vec::new();
    let mut bindings = Vec::new();
    for i in named {
        let param = &sig.params[i];
        let Kind::Named { ident, .. } = &param.kind else {
            continue;
        };
        let forwarded = &param.forwarded;
        let ty = &param.ty;
        let doc = param.description.as_ref().map(|d| quote!(#[doc = #d]));
        let rename = param.rename.as_ref().map(|r| quote!(#[serde(rename = #r)]));
        fields.push(quote_spanned! {ty.span()=>
            #(#forwarded)* #doc #rename #ident: #ty
        });
        let a = arg_ident(i);
        bindings.push(quote!(#ident: #a));
    }
    let def = quote! {
        #[derive(#p::serde::Deserialize, #p::schemars::JsonSchema)]
        #[serde(crate = #serde_crate)]
        #[schemars(crate = #schemars_crate)]
        struct __OxmcpArgs { #(#fields,)* }
    };
    let unpack = quote!(let __OxmcpArgs { #(#bindings,)* } = __args;);
    Ok((def, quote!(__args: __OxmcpArgs), unpack))
}
