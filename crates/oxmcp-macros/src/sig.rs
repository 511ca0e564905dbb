//! Signature analysis shared by the macros: the receiver, the parameters (the request
//! context, a whole-arguments struct, or one named argument each), the return type.

use syn::spanned::Spanned;
use syn::{
    Attribute, FnArg, GenericArgument, Ident, LitStr, Pat, PathArguments, ReturnType, Signature,
    Type,
};

use crate::attrs::AttrArgs;

/// What a parameter is.
pub(crate) enum Kind {
    /// `Ctx`: the request context, injected.
    Ctx,
    /// `Args<T>`: the whole arguments as `T`.
    Args(Type),
    /// One named argument.
    Named {
        /// The parameter's name.
        ident: Ident,
        /// Its type is `Option<_>`.
        optional: bool,
    },
}

/// A parameter, its attributes taken off the function.
pub(crate) struct Param {
    pub(crate) kind: Kind,
    pub(crate) ty: Type,
    /// `#[serde(...)]` and `#[schemars(...)]`, forwarded to a generated struct's field.
    pub(crate) forwarded: Vec<Attribute>,
    /// `#[arg(name = "...")]`.
    pub(crate) rename: Option<LitStr>,
    /// `#[arg(description = "...")]`.
    pub(crate) description: Option<LitStr>,
}

impl Param {
    /// The argument's name on the wire (for a named parameter).
    pub(crate) fn wire_name(&self) -> Option<String> {
        match (&self.kind, &self.rename) {
            (_, Some(r)) => Some(r.value()),
            (Kind::Named { ident, .. }, None) => Some(ident.unraw().to_string()),
            _ => None,
        }
    }
}

/// A function's signature as the macros see it.
pub(crate) struct Sig {
    pub(crate) ident: Ident,
    /// Takes `&self`.
    pub(crate) has_self: bool,
    pub(crate) params: Vec<Param>,
    /// The return type is a `Result` (by the name of its last path segment).
    pub(crate) returns_result: bool,
}

use syn::ext::IdentExt as _;

fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last(),
        _ => None,
    }
}

fn single_type_arg(seg: &syn::PathSegment) -> Option<&Type> {
    match &seg.arguments {
        PathArguments::AngleBracketed(a) if a.args.len() == 1 => match a.args.first() {
            Some(GenericArgument::Type(t)) => Some(t),
            _ => None,
        },
        _ => None,
    }
}

/// Whether `ty` is named `name` (its last path segment).
pub(crate) fn is_named(ty: &Type, name: &str) -> bool {
    last_segment(ty).is_some_and(|s| s.ident == name)
}

fn classify(pat: &Pat, ty: &Type, what: &str) -> syn::Result<Kind> {
    if let Some(seg) = last_segment(ty) {
        if seg.ident == "Ctx" && seg.arguments.is_empty() {
            return Ok(Kind::Ctx);
        }
        if seg.ident == "Args"
            && let Some(inner) = single_type_arg(seg)
        {
            return Ok(Kind::Args(inner.clone()));
        }
    }
    match pat {
        Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => Ok(Kind::Named {
            ident: p.ident.clone(),
            optional: is_named(ty, "Option"),
        }),
        _ => Err(syn::Error::new_spanned(
            pat,
            format!(
                "{what}: an argument parameter needs a plain name (`city: String`); \
                 patterns are only allowed for `Ctx` and `Args<T>` parameters"
            ),
        )),
    }
}

fn take_param_attrs(attrs: &mut Vec<Attribute>) -> syn::Result<(Vec<Attribute>, AttrArgs)> {
    let mut forwarded = Vec::new();
    let mut arg = AttrArgs::empty();
    let mut kept = Vec::new();
    for attr in attrs.drain(..) {
        if attr.path().is_ident("serde") || attr.path().is_ident("schemars") {
            forwarded.push(attr);
        } else if attr.path().is_ident("arg") {
            arg = attr.parse_args()?;
        } else {
            kept.push(attr);
        }
    }
    *attrs = kept;
    Ok((forwarded, arg))
}

fn check_receiver(sig: &Signature, in_server: bool, what: &str) -> syn::Result<bool> {
    let Some(FnArg::Receiver(r)) = sig.inputs.first() else {
        return Ok(false);
    };
    if !in_server {
        return Err(syn::Error::new_spanned(
            r,
            format!("{what} on a method needs `#[server]` on its `impl` block"),
        ));
    }
    if r.reference.is_none() || r.mutability.is_some() || r.colon_token.is_some() {
        return Err(syn::Error::new_spanned(
            r,
            format!(
                "{what}: the receiver must be `&self` (state is shared between calls: use interior mutability)"
            ),
        ));
    }
    Ok(true)
}

/// Analyses `sig` for `what` (`#[tool]`...), taking the parameters' attributes off it.
pub(crate) fn analyse(sig: &mut Signature, in_server: bool, what: &str) -> syn::Result<Sig> {
    if sig.asyncness.is_none() {
        return Err(syn::Error::new_spanned(
            sig.fn_token,
            format!("{what} functions must be `async fn`"),
        ));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return Err(syn::Error::new_spanned(
            &sig.generics,
            format!("{what} functions cannot be generic"),
        ));
    }
    if let Some(v) = &sig.variadic {
        return Err(syn::Error::new_spanned(v, format!("{what}: no variadics")));
    }
    let has_self = check_receiver(sig, in_server, what)?;
    let mut params = Vec::new();
    let mut ctx_seen = false;
    for input in sig.inputs.iter_mut() {
        let FnArg::Typed(pt) = input else { continue };
        let (forwarded, mut arg) = take_param_attrs(&mut pt.attrs)?;
        let kind = classify(&pt.pat, &pt.ty, what)?;
        if matches!(kind, Kind::Ctx) {
            if ctx_seen {
                return Err(syn::Error::new_spanned(
                    pt,
                    format!("{what}: one `Ctx` at most"),
                ));
            }
            ctx_seen = true;
        }
        let rename = arg.str("name")?;
        let description = arg.str("description")?;
        arg.finish("name, description")?;
        params.push(Param {
            kind,
            ty: (*pt.ty).clone(),
            forwarded,
            rename,
            description,
        });
    }
    let returns_result = match &sig.output {
        ReturnType::Type(_, ty) => is_named(ty, "Result"),
        ReturnType::Default => false,
    };
    Ok(Sig {
        ident: sig.ident.clone(),
        has_self,
        params,
        returns_result,
    })
}

/// An error unless every parameter is a `Ctx` or `allowed` says yes.
pub(crate) fn only<F: Fn(&Param) -> Option<String>>(sig: &Sig, check: F) -> syn::Result<()> {
    for p in &sig.params {
        if matches!(p.kind, Kind::Ctx) {
            continue;
        }
        if let Some(msg) = check(p) {
            return Err(syn::Error::new(p.ty.span(), msg));
        }
    }
    Ok(())
}
