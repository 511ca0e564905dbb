//! `#[server]` on an `impl` block: its `#[tool]`, `#[prompt]`, `#[resource]` and
//! `#[completion]` functions registered from an `Arc` of the value.

use std::collections::HashMap;

use proc_macro2::TokenStream;
use quote::quote;
use syn::{ImplItem, ItemImpl};

use crate::attrs::{AttrArgs, doc, lit, opt_str};
use crate::common::{ItemKind, Registration, Site};
use crate::paths::Paths;
use crate::sig::analyse;

const KINDS: [&str; 4] = ["tool", "prompt", "resource", "completion"];

/// Refuses what `#[server]` cannot go on: a trait impl, a generic impl, positional arguments.
fn check_shape(imp: &ItemImpl, args: &AttrArgs) -> syn::Result<()> {
    if let Some((_, path, _)) = &imp.trait_ {
        return Err(syn::Error::new_spanned(
            path,
            "#[server] goes on an inherent `impl T { ... }` block, not a trait impl",
        ));
    }
    if !imp.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &imp.generics,
            "#[server] does not support generic impl blocks",
        ));
    }
    if let Some(p) = &args.positional {
        return Err(syn::Error::new_spanned(
            p,
            "#[server] takes `name = \"...\"`, `version = \"...\"`, `instructions = \"...\"`",
        ));
    }
    Ok(())
}

/// Expands `#[server(...)] impl T { ... }`.
pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let mut args: AttrArgs = syn::parse2(attr)?;
    let mut imp: ItemImpl = syn::parse2(item)?;
    check_shape(&imp, &args)?;
    let name = args
        .str("name")?
        .map_or_else(|| quote!(::core::env!("CARGO_PKG_NAME")), |n| quote!(#n));
    let version = args
        .str("version")?
        .map_or_else(|| quote!(::core::env!("CARGO_PKG_VERSION")), |v| quote!(#v));
    let instructions = match args.str("instructions")? {
        Some(i) => Some(i),
        None => doc(&imp.attrs).map(|d| lit(&d, proc_macro2::Span::call_site())),
    };
    let instructions = opt_str(instructions.as_ref());
    args.finish("name, version, instructions")?;

    let paths = Paths::resolve();
    let (registrations, mut errors) = collect(&mut imp, &paths);
    if let Err(e) = check_unique(&registrations) {
        errors.push(e);
    }
    let regs = registrations.iter().map(|r| &r.tokens);
    let self_ty = &imp.self_ty;
    let p = &paths.private;
    let errors = errors.into_iter().map(|e| e.to_compile_error());
    Ok(quote! {
        #imp
        #(#errors)*
        impl #p::RegisterShared for #self_ty {
            fn register_shared(
                self: #p::Arc<Self>,
                builder: #p::ServerBuilder,
            ) -> #p::ServerBuilder {
                let mut __builder = builder;
                #(#regs)*
                __builder
            }
        }
        impl #p::Register for #self_ty {
            fn register(self, builder: #p::ServerBuilder) -> #p::ServerBuilder {
                #p::RegisterShared::register_shared(#p::Arc::new(self), builder)
            }
        }
        impl #self_ty {
            /// A server builder named and versioned by `#[server]` (the crate's name and
            /// version by default), with this value's tools, prompts, resources and
            /// completion registered: add settings or more items, then `build()`.
            #[allow(dead_code)]
            pub fn builder(self) -> #p::ServerBuilder {
                let builder = #p::new_builder(#name, #version, #instructions);
                #p::Register::register(self, builder)
            }

            /// The server with this value's tools, prompts, resources and completion.
            ///
            /// # Errors
            /// What `ServerBuilder::build` reports.
            #[allow(dead_code)]
            pub fn into_server(self) -> ::core::result::Result<#p::Server, #p::BuildError> {
                self.builder().build()
            }
        }
    })
}

/// The registrations of the marked functions (their markers taken off), and the errors.
fn collect(imp: &mut ItemImpl, paths: &Paths) -> (Vec<Registration>, Vec<syn::Error>) {
    let self_ty = (*imp.self_ty).clone();
    let mut registrations = Vec::new();
    let mut errors = Vec::new();
    for item in &mut imp.items {
        let ImplItem::Fn(f) = item else { continue };
        let Some(at) = f.attrs.iter().position(|a| {
            a.path()
                .segments
                .last()
                .is_some_and(|s| KINDS.iter().any(|k| s.ident == k))
        }) else {
            continue;
        };
        let attr = f.attrs.remove(at);
        let kind = attr
            .path()
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        let what = format!("#[{kind}]");
        let result = AttrArgs::of(&attr).and_then(|args| {
            let sig = analyse(&mut f.sig, true, &what)?;
            let site = Site::method(paths, &self_ty, &sig);
            match kind.as_str() {
                "tool" => crate::tool::expand(args, &f.attrs, &sig, &site),
                "prompt" => crate::prompt::expand(args, &f.attrs, &sig, &site),
                "resource" => crate::resource::expand(args, &f.attrs, &sig, &site),
                _ => crate::completion::expand(args, &sig, &site),
            }
        });
        crate::free::strip_param_attrs(&mut f.sig);
        match result {
            Ok(r) => registrations.push(r),
            Err(e) => errors.push(e),
        }
    }
    (registrations, errors)
}

/// Names unique per kind; one completion form.
fn check_unique(registrations: &[Registration]) -> syn::Result<()> {
    let mut seen: HashMap<(ItemKind, &str), ()> = HashMap::new();
    let mut errors: Option<syn::Error> = None;
    let mut push = |e: syn::Error| match &mut errors {
        Some(all) => all.combine(e),
        None => errors = Some(e),
    };
    for r in registrations {
        if seen.insert((r.kind, &r.key), ()).is_some() {
            let what = match r.kind {
                ItemKind::Tool => "tool name",
                ItemKind::Prompt => "prompt name",
                ItemKind::Resource => "resource URI",
                ItemKind::Completion => "#[completion] function (one per server)",
                ItemKind::Completer => "completer for",
            };
            push(syn::Error::new(
                r.span,
                format!("duplicate {what} `{}` in this #[server] block", r.key),
            ));
        }
    }
    let has = |k| registrations.iter().find(|r| r.kind == k);
    if let (Some(_), Some(second)) = (has(ItemKind::Completion), has(ItemKind::Completer)) {
        push(syn::Error::new(
            second.span,
            "a #[server] has either one `completion/complete` #[completion] function or \
             per-argument #[completion(prompt|resource = ..., argument = ...)] functions, not both",
        ));
    }
    errors.map_or(Ok(()), Err)
}
