//! `#[resource("uri")]`: a static resource (`ServerBuilder::resource`), or a template
//! (`ServerBuilder::resource_template`) when the URI has `{variables}`.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::Attribute;
use syn::spanned::Spanned;

use crate::attrs::{AttrArgs, doc, lit, opt_str};
use crate::common::{ItemKind, Registration, Site, arg_ident, call_result, str_slice};
use crate::sig::{Kind, Sig, only};

/// The variable names of an RFC 6570 template (`{path}`, `{+path}`, `{?a,b}`, `{x*}`,
/// `{x:3}`).
pub(crate) fn variables(template: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        let Some(end) = after.find('}') else { break };
        let expr = after[..end].trim_start_matches(['+', '#', '.', '/', ';', '?', '&']);
        for var in expr.split(',') {
            let var = var.split(':').next().unwrap_or(var).trim_end_matches('*');
            if !var.is_empty() {
                out.push(var.to_owned());
            }
        }
        rest = &after[end + 1..];
    }
    out
}

/// The registration of a `#[resource]` function.
pub(crate) fn expand(
    mut args: AttrArgs,
    attrs: &[Attribute],
    sig: &Sig,
    site: &Site<'_>,
) -> syn::Result<Registration> {
    let span = sig.ident.span();
    let Some(uri) = args.positional.take().or(args.str("uri")?) else {
        return Err(syn::Error::new(
            span,
            "#[resource] needs its URI: `#[resource(\"file:///{path}\")]`",
        ));
    };
    let name = args
        .str("name")?
        .unwrap_or_else(|| lit(&syn::ext::IdentExt::unraw(&sig.ident).to_string(), span));
    let description = match args.str("description")? {
        Some(d) => Some(d),
        None => doc(attrs).map(|d| lit(&d, span)),
    };
    let description = opt_str(description.as_ref());
    let title = opt_str(args.str("title")?.as_ref());
    let mime = opt_str(args.str("mime")?.as_ref());
    let icons = str_slice(&args.list("icons")?);
    args.finish("a URI string, name, description, title, mime, icons")?;

    let vars = variables(&uri.value());
    let template = !vars.is_empty();
    let bindings = bindings(sig, site, &vars)?;
    let p = &site.paths.private;
    let (register, vars_param) = if template {
        (
            quote!(resource_template),
            quote!(, __vars: #p::BTreeMap<::std::string::String, ::std::string::String>),
        )
    } else {
        (quote!(resource), quote!())
    };
    let capture = &site.capture;
    let recapture = &site.recapture;
    let result = call_result(sig, site);
    let tokens = quote! {
        {
            #capture
            __builder = #p::#register(
                __builder,
                #p::ResourceMeta {
                    uri: #uri,
                    name: #name,
                    title: #title,
                    description: #description,
                    mime: #mime,
                    icons: #icons,
                },
                move |__ctx: #p::Ctx, __uri: ::std::string::String #vars_param| {
                    #recapture
                    async move {
                        #(#bindings)*
                        let __value = #result;
                        #p::resource_out(__uri, #mime, __value)
                    }
                },
            );
        }
    };
    Ok(Registration {
        tokens,
        kind: ItemKind::Resource,
        key: uri.value(),
        span,
    })
}

/// Checks the parameters and binds each to its variable or the URI.
fn bindings(sig: &Sig, site: &Site<'_>, vars: &[String]) -> syn::Result<Vec<TokenStream>> {
    let template = !vars.is_empty();
    only(sig, |p| match p.wire_name() {
        Some(n) if matches!(p.kind, Kind::Named { .. }) && (vars.contains(&n) || n == "uri") => {
            None
        }
        _ if template => Some(format!(
            "#[resource] parameters are `Ctx`, a `String` per template variable ({}) or \
             `uri: String` (the URI read)",
            vars.join(", ")
        )),
        _ => Some(
            "a static #[resource] takes only `Ctx` and `uri: String` (a URI with \
             `{variables}` makes a template)"
                .to_owned(),
        ),
    })?;

    let p = &site.paths.private;
    let mut bindings = Vec::new();
    for (i, param) in sig.params.iter().enumerate() {
        let Some(wire) = param.wire_name() else {
            continue;
        };
        let a = arg_ident(i);
        let ty = &param.ty;
        bindings.push(if vars.contains(&wire) {
            let wire = lit(&wire, ty.span());
            quote_spanned!(ty.span()=> let #a: #ty = #p::arg(&__vars, #wire);)
        } else {
            quote_spanned!(ty.span()=> let #a: #ty = ::std::clone::Clone::clone(&__uri);)
        });
    }
    Ok(bindings)
}

#[cfg(test)]
mod tests {
    #[test]
    fn template_variables() {
        assert_eq!(super::variables("file:///{path}"), ["path"]);
        assert_eq!(
            super::variables("x://{+a}/{b*}{?c,d:3}"),
            ["a", "b", "c", "d"]
        );
        assert!(super::variables("file:///etc/hosts").is_empty());
    }
}
