//! `#[completion]`: the `completion/complete` provider (`ServerBuilder::completion`), or,
//! with `prompt = "..."`/`resource = "..."` and `argument = "..."`, the completer of one
//! argument (`ServerBuilder::complete_argument`).

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::LitStr;
use syn::spanned::Spanned;

use crate::attrs::AttrArgs;
use crate::common::{ItemKind, Registration, Site, arg_ident, call_result};
use crate::sig::{Kind, Sig};

/// The registration of a `#[completion]` function.
pub(crate) fn expand(mut args: AttrArgs, sig: &Sig, site: &Site<'_>) -> syn::Result<Registration> {
    let span = sig.ident.span();
    if let Some(p) = &args.positional {
        return Err(syn::Error::new_spanned(
            p,
            "#[completion] takes `prompt = \"...\"` or `resource = \"...\"`, and `argument = \"...\"`",
        ));
    }
    let prompt = args.str("prompt")?;
    let resource = args.str("resource")?;
    let argument = args.str("argument")?;
    args.finish("prompt, resource, argument")?;
    let inputs: Vec<usize> = (0..sig.params.len())
        .filter(|i| !matches!(sig.params[*i].kind, Kind::Ctx))
        .collect();
    let per_argument = prompt.is_some() || resource.is_some() || argument.is_some();
    let wanted = if per_argument {
        "a per-argument #[completion] takes `[Ctx,] value: String` (the text typed so far)"
    } else {
        "#[completion] takes `[Ctx,] params: CompleteParams`"
    };
    let [input] = inputs[..] else {
        return Err(syn::Error::new(span, wanted));
    };
    let param = &sig.params[input];
    if matches!(param.kind, Kind::Args(_)) {
        return Err(syn::Error::new(param.ty.span(), wanted));
    }
    let p = &site.paths.private;
    let a = arg_ident(input);
    let ty = &param.ty;
    let capture = &site.capture;
    let recapture = &site.recapture;
    let result = call_result(sig, site);
    let bind = quote_spanned!(ty.span()=> let #a: #ty = __input;);
    let handler = |out: proc_macro2::TokenStream, input_ty: proc_macro2::TokenStream| {
        quote! {
            move |__ctx: #p::Ctx, __input: #input_ty| {
                #recapture
                async move {
                    #bind
                    #p::#out(#result)
                }
            }
        }
    };
    if !per_argument {
        let h = handler(quote!(complete_out), quote!(#p::types::CompleteParams));
        return Ok(Registration {
            tokens: quote!({ #capture __builder = #p::completion(__builder, #h); }),
            kind: ItemKind::Completion,
            key: "completion/complete".to_owned(),
            span,
        });
    }
    let (target, key, argument) = target(p, span, prompt, resource, argument)?;
    let h = handler(quote!(values_out), quote!(::std::string::String));
    Ok(Registration {
        tokens: quote!({ #capture __builder = __builder.complete_argument(#target, #argument, #h); }),
        kind: ItemKind::Completer,
        key: format!("{key} argument {:?}", argument.value()),
        span,
    })
}

/// The completer's target and argument, and its key for duplicate checks.
fn target(
    p: &TokenStream,
    span: proc_macro2::Span,
    prompt: Option<LitStr>,
    resource: Option<LitStr>,
    argument: Option<LitStr>,
) -> syn::Result<(TokenStream, String, LitStr)> {
    let (target, key) = match (&prompt, &resource, &argument) {
        (Some(n), None, Some(_)) => (
            quote!(#p::CompletionTarget::Prompt(::std::string::String::from(#n))),
            format!("prompt {:?}", n.value()),
        ),
        (None, Some(u), Some(_)) => (
            quote!(#p::CompletionTarget::Resource(::std::string::String::from(#u))),
            format!("resource {:?}", u.value()),
        ),
        _ => {
            return Err(syn::Error::new(
                span,
                "a per-argument #[completion] names one `prompt = \"...\"` or \
                 `resource = \"...\"`, and its `argument = \"...\"`",
            ));
        }
    };
    let Some(argument) = argument else {
        return Err(syn::Error::new(span, "missing `argument = \"...\"`"));
    };
    Ok((target, key, argument))
}
